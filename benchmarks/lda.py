"""LDA: gpu_text against tomotopy, the ``lda`` package and gensim's LdaMulticore, same run, same tokens.

Corpus (Chinese news): the Sogou news files of ``../shared/data/zh-sogou-news`` (documents are
separated by a blank line there; a document's lines are joined with a space into one line),
segmented once by the project's segmenter with jieba's dictionary (``compat="jieba"``: jieba's
``HMM=False`` words). Rule for stop words and punctuation: a word is kept when it is at least two
characters long and every character is Han (U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF), so punctuation,
digits, Latin and the one-character function words (的, 了, 是 ...) go; then words seen fewer than 5
times and words in more than half of the documents are dropped (``min_count=5, max_df=0.5``), and
documents left empty are dropped. The tokens are cached under ``.cache/bench``. 10% of the
documents (a seeded permutation) are held out; every implementation trains on the same others,
given the same word ids (CSR for ``lda``, word lists for tomotopy, bag-of-words for gensim).

Settings: K = 20, 100, 1000; alpha = 0.1 (per topic), beta = 0.01, the same iterations for the
Gibbs samplers (tomotopy's alpha optimisation switched off, ``optim_interval = 0``); gensim's
LdaMulticore is variational, run for contrast with a few passes. Reported per run: training
seconds and tokens/s (training tokens x iterations / seconds; gensim: x passes), the final
log-likelihood per token (the joint log p(w, z) of the ``lda`` package computed by OUR function
from each sampler's counts: gpu_text, tomotopy (its per-token topics), lda (its counts); gensim
has no assignments, so its own per-word variational bound, labelled), held-out perplexity by
document completion (OUR function on each model's phi: fold in on the first half of every held-out
document with phi fixed, 50 sweeps, score the second half), and NPMI coherence of the 10 top words
(OUR function, window 10, the whole corpus as reference).

Reuters trace: the ``lda`` package's Reuters sample (``lda-reuters``), K = 20 and 100, 200
iterations, several seeds: the log-likelihood per token every 10 iterations, ours against the
``lda`` package, with each one's seed-to-seed spread of the final value (OUR function on both).

``python -m benchmarks lda`` (``--quick``: a sliver of the news, K = 20, 20 iterations, a short
Reuters trace; under a minute); ``python -m benchmarks.lda --ks 20 100 1000 --iterations 100
--threads 2`` prints the tables directly (``--skip lda gensim`` leaves peers out).
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.corpora import SHARED as DATA
from benchmarks.harness import Config, Measurement, training_curve

REPO = Path(__file__).resolve().parents[1]

CACHE = REPO / ".cache" / "bench"
HAN_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")
ALPHA, BETA = 0.1, 0.01
PEERS = ("gpu_text", "tomotopy-1", "tomotopy-2", "lda", "gensim")


# --------------------------------------------------------------------------------------- data

def prepare_news(fraction: float = 1.0) -> tuple[Any, dict[str, Any]]:
    """The filtered Chinese news corpus (see the module docstring) and figures about it."""
    from gpu_text.lda.corpus import TokenCorpus, as_corpus

    sources = sorted((DATA / "zh-sogou-news").glob("C*.txt"))
    if not sources:
        raise ImportError(f"needs the Chinese news corpus under {DATA / 'zh-sogou-news'}")
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = CACHE / f"lda-zh-news-{fraction:g}.npz"
    if cached.is_file():
        with np.load(cached, allow_pickle=False) as z:
            info = {"raw_bytes": int(z["raw_bytes"]), "raw_tokens": int(z["raw_tokens"]), "segment_s": 0.0,
                    "cached": True}
            return TokenCorpus(z["words"], z["doc_offsets"], z["vocabulary"].tolist()), info
    import jieba

    from gpu_text.segment import Segmenter, load_dictionary

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "news.txt"
        with open(raw, "w", encoding="utf-8") as sink:
            for source in sources:
                docs = [d for d in source.read_text(encoding="utf-8").split("\n\n") if d.strip()]
                for doc in docs[:max(1, int(len(docs) * fraction))]:
                    sink.write(" ".join(doc.split("\n")) + "\n")
        tick = time.perf_counter()
        segmenter = Segmenter(load_dictionary(jieba.get_dict_file().name), compat="jieba")
        tokens = as_corpus(str(raw), segment=segmenter, backend="cpu")
        segment_s = time.perf_counter() - tick
        raw_bytes = raw.stat().st_size
    dropped = {w for w in tokens.vocabulary if not HAN_WORD.fullmatch(w)}
    kept = as_corpus(tokens, stop_words=dropped, min_count=5, max_df=0.5)
    corpus = kept.documents(kept.doc_lengths > 0)
    np.savez(cached, words=corpus.words, doc_offsets=corpus.doc_offsets,
             vocabulary=np.array(corpus.vocabulary, dtype=np.str_), raw_bytes=raw_bytes, raw_tokens=tokens.n_tokens)
    return corpus, {"raw_bytes": raw_bytes, "raw_tokens": tokens.n_tokens, "segment_s": segment_s, "cached": False}


def split(corpus: Any, share: float = 0.1, seed: int = 0) -> tuple[Any, Any]:
    """(training documents, held-out documents), a seeded permutation; the held-out tokens of words
    that never occur in the training documents are dropped (a peer that builds its vocabulary
    from the training documents has no probability for them)."""
    from gpu_text.lda.corpus import TokenCorpus

    order = np.random.default_rng(seed).permutation(corpus.n_docs)
    n_out = max(1, int(round(corpus.n_docs * share)))
    train, heldout = corpus.documents(np.sort(order[n_out:])), corpus.documents(np.sort(order[:n_out]))
    keep = (train.word_counts() > 0)[heldout.words]
    before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    return train, TokenCorpus(heldout.words[keep], before[heldout.doc_offsets], heldout.vocabulary)


# ------------------------------------------------------------------------------ our measures

def our_loglikelihood(n_dk: np.ndarray, n_wk: np.ndarray, alpha: float, beta: float) -> float:
    """OUR joint log p(w, z) per token (the ``lda`` package's), from any sampler's counts."""
    from gpu_text.lda.likelihood import log_likelihood

    n_dk = np.ascontiguousarray(n_dk, dtype=np.int32)
    n_wk = np.ascontiguousarray(n_wk, dtype=np.int32)
    n_k = n_wk.sum(axis=0).astype(np.int32)
    lengths = n_dk.sum(axis=1).astype(np.int64)
    alphas = np.full(n_dk.shape[1], alpha, dtype=np.float64)
    return float(log_likelihood(n_dk, n_wk, n_k, lengths, alphas, beta)) / max(int(lengths.sum()), 1)


def our_perplexity(phi: np.ndarray, heldout: Any, alpha: float, seed: int = 1) -> float:
    """OUR held-out perplexity (document completion: fold in on the first half of every held-out
    document with ``phi`` fixed, score the second half) of any model's topic-word matrix."""
    from gpu_text.lda.model import heldout_perplexity

    return float(heldout_perplexity(np.asarray(phi, np.float64), heldout, alpha, n_iter=50, seed=seed, backend="cpu"))


def our_npmi(top: list[list[str]], reference: Any) -> float:
    from gpu_text.lda.coherence import coherence

    return coherence(top, reference, "c_npmi")


# ------------------------------------------------------------------------------------ the runs

def run_gpu_text(train: Any, k: int, iterations: int, seed: int, threads: int, backend: str) -> dict[str, Any]:
    import numba

    from gpu_text.lda.model import LDA

    numba.set_num_threads(threads)
    params = dict(n_topics=k, alpha=ALPHA, beta=BETA, seed=seed, backend=backend)
    LDA(**params, n_iter=2, eval_every=2).fit(train.documents(np.arange(min(50, train.n_docs))))  # compiles
    model = LDA(**params, n_iter=iterations, eval_every=iterations)
    tick = time.perf_counter()
    model.fit(train)
    seconds = time.perf_counter() - tick
    return {"seconds": seconds, "n_wk": np.asarray(model.n_wk_), "n_dk": np.asarray(model.n_dk_),
            "phi": np.asarray(model.topic_word_), "ll_source": "ours", "sampler": getattr(model, "sampler_", "")}


def run_tomotopy(train: Any, k: int, iterations: int, seed: int, threads: int) -> dict[str, Any]:
    import tomotopy as tp

    model = tp.LDAModel(k=k, alpha=ALPHA, eta=BETA, seed=seed, min_cf=0, rm_top=0)
    model.optim_interval = 0  # the same fixed alpha as everyone
    model.burn_in = 0
    vocab = train.vocabulary
    for d in range(train.n_docs):
        model.add_doc([vocab[w] for w in train.words[train.doc_offsets[d]:train.doc_offsets[d + 1]].tolist()])
    tick = time.perf_counter()
    model.train(iterations, workers=threads)
    seconds = time.perf_counter() - tick
    index = {w: i for i, w in enumerate(vocab)}
    to_ours = np.array([index[w] for w in model.used_vocabs], np.int64)
    words = np.concatenate([np.asarray(doc.words, np.int64) for doc in model.docs])
    topics = np.concatenate([np.asarray(doc.topics, np.int64) for doc in model.docs])
    lengths = np.array([len(doc.words) for doc in model.docs])
    n_wk = np.zeros((len(vocab), k), np.int32)
    np.add.at(n_wk, (to_ours[words], topics), 1)
    n_dk = np.zeros((len(lengths), k), np.int32)
    np.add.at(n_dk, (np.repeat(np.arange(len(lengths)), lengths), topics), 1)
    phi = np.zeros((k, len(vocab)))
    for t in range(k):
        phi[t, to_ours] = model.get_topic_word_dist(t)
    return {"seconds": seconds, "n_wk": n_wk, "n_dk": n_dk, "phi": phi, "ll_source": "ours",
            "own_ll": float(model.ll_per_word)}


def run_lda_package(train: Any, k: int, iterations: int, seed: int) -> dict[str, Any]:
    import lda

    X = train.to_csr().astype(np.int64)
    model = lda.LDA(n_topics=k, n_iter=iterations, alpha=ALPHA, eta=BETA, random_state=seed, refresh=iterations)
    tick = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - tick
    return {"seconds": seconds, "n_wk": model.nzw_.T, "n_dk": model.ndz_, "phi": model.topic_word_,
            "ll_source": "ours", "own_ll": float(model.loglikelihood()) / train.n_tokens}


def run_gensim(train: Any, k: int, passes: int, seed: int, threads: int) -> dict[str, Any]:
    from gensim.models import LdaMulticore

    X = train.to_csr()
    bow = [list(zip(X.indices[X.indptr[d]:X.indptr[d + 1]].tolist(), X.data[X.indptr[d]:X.indptr[d + 1]].tolist()))
           for d in range(X.shape[0])]
    id2word = dict(enumerate(train.vocabulary))
    tick = time.perf_counter()
    model = LdaMulticore(bow, num_topics=k, id2word=id2word, workers=threads, passes=passes, iterations=50,
                         alpha=np.full(k, ALPHA), eta=BETA, random_state=seed, chunksize=2000, eval_every=None)
    seconds = time.perf_counter() - tick
    return {"seconds": seconds, "n_wk": None, "n_dk": None,
            "phi": model.get_topics(), "ll_source": "gensim's own per-word bound",
            "own_ll": float(model.log_perplexity(bow))}


def compare(ks: list[int], iterations: int, passes: int, fraction: float, threads: int, backend: str, seed: int,
            skip: set[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A row per (K, implementation) on the news corpus, and the corpus figures."""
    from gpu_text.lda.coherence import top_words

    corpus, info = prepare_news(fraction)
    train, heldout = split(corpus)
    info.update(docs=corpus.n_docs, tokens=corpus.n_tokens, words=corpus.n_words, train_tokens=train.n_tokens,
                heldout_docs=heldout.n_docs)
    print(f"news: {info}", file=sys.stderr, flush=True)
    rows = []
    for k in ks:
        runs = {"gpu_text": lambda: run_gpu_text(train, k, iterations, seed, threads, backend),
                "tomotopy-1": lambda: run_tomotopy(train, k, iterations, seed, 1),
                "tomotopy-2": lambda: run_tomotopy(train, k, iterations, seed, threads),
                "lda": lambda: run_lda_package(train, k, iterations, seed),
                "gensim": lambda: run_gensim(train, k, passes, seed, threads)}
        for name, run in runs.items():
            if name in skip or name.split("-")[0] in skip:
                continue
            try:
                result = run()
            except ImportError as exc:
                print(f"{name}: skipped ({exc})", file=sys.stderr)
                continue
            sweeps = passes if name == "gensim" else iterations
            row = {"k": k, "implementation": f"gpu_text[{backend}]" if name == "gpu_text" else name,
                   "threads": 1 if name in ("tomotopy-1", "lda") else threads, "iterations": sweeps,
                   "seconds": result["seconds"], "tokens_per_s": train.n_tokens * sweeps / result["seconds"]}
            if result["n_dk"] is not None:
                row["ll_per_token"] = our_loglikelihood(result["n_dk"], result["n_wk"], ALPHA, BETA)
            else:
                row["ll_per_token"] = result["own_ll"]
            row["ll_source"] = result["ll_source"]
            row["own_ll"] = result.get("own_ll")
            row["perplexity"] = our_perplexity(result["phi"], heldout, ALPHA, seed)
            row["npmi"] = our_npmi(top_words(result["phi"], corpus.vocabulary, 10), corpus)
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
    return rows, info


def table(rows: list[dict[str, Any]], info: dict[str, Any]) -> str:
    """Markdown of the news runs."""
    head = (f"Chinese news: {info['docs']:,} documents, {info['tokens']:,} tokens kept of {info['raw_tokens']:,} "
            f"segmented, {info['words']:,} words; training {info['train_tokens']:,} tokens, "
            f"{info['heldout_docs']:,} held-out documents.\n\n"
            "| K | implementation | threads | iterations | train s | tokens/s | ll/token | held-out perplexity | "
            "NPMI | notes |\n|---|---|---|---|---|---|---|---|---|---|\n")
    body = ""
    for r in rows:
        note = "" if r["ll_source"] == "ours" else f"ll: {r['ll_source']}"
        if r.get("own_ll") is not None and r["ll_source"] == "ours":
            note += f"its own ll/token {r['own_ll']:.4f}"
        body += (f"| {r['k']} | {r['implementation']} | {r['threads']} | {r['iterations']} | {r['seconds']:.2f} | "
                 f"{r['tokens_per_s']:,.0f} | {r['ll_per_token']:.4f} | {r['perplexity']:.1f} | {r['npmi']:.4f} | "
                 f"{note} |\n")
    return head + body


# --------------------------------------------------------------------------------- Reuters trace

def reuters_trace(ks: list[int], iterations: int, seeds: list[int], threads: int, backend: str,
                  every: int = 10) -> list[dict[str, Any]]:
    """A row per (K, implementation, seed): the ll/token trace and the final value by OUR function."""
    import lda
    import numba

    from gpu_text.lda.corpus import as_corpus
    from gpu_text.lda.model import LDA

    folder = DATA / "lda-reuters"
    if not (folder / "reuters.ldac").is_file():
        raise ImportError(f"needs {folder}")
    corpus = as_corpus(str(folder / "reuters.ldac"), vocabulary=str(folder / "reuters.tokens"))
    X = corpus.to_csr().astype(np.int64)
    numba.set_num_threads(threads)
    rows = []
    for k in ks:
        for seed in seeds:
            ours = LDA(n_topics=k, alpha=ALPHA, beta=BETA, n_iter=iterations, seed=seed, backend=backend,
                       eval_every=every)
            tick = time.perf_counter()
            ours.fit(corpus)
            rows.append({"k": k, "implementation": f"gpu_text[{backend}]", "seed": seed,
                         "seconds": time.perf_counter() - tick,
                         "trace": [(int(i), float(v)) for i, v in ours.loglikelihood_],
                         "final": our_loglikelihood(ours.n_dk_, ours.n_wk_, ALPHA, BETA), "tokens": corpus.n_tokens})
            peer = lda.LDA(n_topics=k, n_iter=iterations, alpha=ALPHA, eta=BETA, random_state=seed, refresh=every)
            tick = time.perf_counter()
            peer.fit(X)
            seconds = time.perf_counter() - tick
            # lda records its ll every `refresh` iterations from 0 (before the first sweep's counts are final)
            trace = [(i * every, float(v) / corpus.n_tokens) for i, v in enumerate(peer.loglikelihoods_)]
            final = our_loglikelihood(peer.ndz_, peer.nzw_.T, ALPHA, BETA)
            rows.append({"k": k, "implementation": "lda", "seed": seed, "seconds": seconds,
                         "trace": trace + [(iterations, final)], "final": final, "tokens": corpus.n_tokens})
            print(rows[-2]["final"], rows[-1]["final"], file=sys.stderr, flush=True)
    return rows


def trace_table(rows: list[dict[str, Any]]) -> str:
    """Markdown: the final ll/token per seed and the spread, then the mean traces."""
    out = ("| K | implementation | seeds | final ll/token (each seed) | mean | spread (max-min) | "
           "ours within lda's spread |\n|---|---|---|---|---|---|---|\n")
    for k in sorted({r["k"] for r in rows}):
        lda_rows = [r for r in rows if r["k"] == k and r["implementation"] == "lda"]
        lda_mean = statistics.mean(r["final"] for r in lda_rows)
        lda_spread = max(r["final"] for r in lda_rows) - min(r["final"] for r in lda_rows)
        for impl in sorted({r["implementation"] for r in rows if r["k"] == k}):
            group = [r for r in rows if r["k"] == k and r["implementation"] == impl]
            finals = [r["final"] for r in group]
            mean = statistics.mean(finals)
            gap = mean - lda_mean
            within = "" if impl == "lda" else ("yes" if abs(gap) <= lda_spread else
                                               f"no: {'higher' if gap > 0 else 'lower'} by {abs(gap):.4f}")
            out += (f"| {k} | {impl} | {len(group)} | {', '.join(f'{v:.4f}' for v in finals)} | {mean:.4f} | "
                    f"{max(finals) - min(finals):.4f} | {within} |\n")
    out += "\nll/token trace (mean over seeds; each implementation's own evaluations):\n\n"
    for k in sorted({r["k"] for r in rows}):
        for impl in sorted({r["implementation"] for r in rows if r["k"] == k}):
            group = [r for r in rows if r["k"] == k and r["implementation"] == impl]
            points = sorted({i for r in group for i, _ in r["trace"]})
            means = [statistics.mean(dict(r["trace"])[i] for r in group if i in dict(r["trace"])) for i in points]
            out += f"- K={k} {impl}: " + ", ".join(f"{i}: {m:.4f}" for i, m in zip(points, means)) + "\n"
    return out


# --------------------------------------------------------------------------------------- entry

def run(config: Config) -> list[Measurement]:
    """The harness entry: a row per (K, implementation); the peer for speed is tomotopy on 2 threads."""
    import tomotopy  # noqa: F401  (ImportError: the benchmark is skipped)

    from gpu_text.backend import get_backend

    backend = get_backend().name
    if config.quick:
        ks, iterations, passes, fraction = [20], 20, 2, 0.03
        trace_ks, trace_iterations, seeds = [20], 30, [1, 2]
    else:
        ks, iterations, passes, fraction = [20, 100, 1000], 100, 5, 1.0
        trace_ks, trace_iterations, seeds = [20, 100], 200, [1, 2, 3]
    rows, info = compare(ks, iterations, passes, fraction, 2, backend, 1, set())
    print(table(rows, info))
    trace = reuters_trace(trace_ks, trace_iterations, seeds, 2, backend)
    print(trace_table(trace))
    out = []
    for r in rows:
        peer = None if r["implementation"].startswith("tomotopy") else "tomotopy-2"
        # input_bytes holds training tokens x sweeps: the report's "MB/s" column reads as M tokens/s
        out.append(Measurement("lda", f"zh-news K={r['k']}", r["implementation"], r["threads"], [r["seconds"]],
                               int(r["tokens_per_s"] * r["seconds"]), peer,
                               f"MB/s = M tokens/s; ll/token {r['ll_per_token']:.4f} ({r['ll_source']}), held-out "
                               f"perplexity {r['perplexity']:.1f}, NPMI {r['npmi']:.4f}"))
    for r in trace:
        single = r["implementation"] == "lda"
        out.append(Measurement("lda", f"reuters K={r['k']} seed {r['seed']}", r["implementation"], 1 if single else 2,
                               [r["seconds"]], r["tokens"] * trace_iterations, None if single else "lda",
                               f"final ll/token {r['final']:.4f}",
                               extra={"curves": [training_curve(f"{r['implementation']} K={r['k']} seed {r['seed']}",
                                                                "iteration", "log-likelihood per token", r["trace"])]}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ks", type=int, nargs="+", default=[20, 100, 1000])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--passes", type=int, default=5, help="gensim LdaMulticore passes")
    parser.add_argument("--fraction", type=float, default=1.0, help="share of every news file's documents used")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip", nargs="*", default=[], choices=PEERS + ("tomotopy",), help="peers left out")
    parser.add_argument("--trace", action="store_true", help="the Reuters ll trace instead")
    parser.add_argument("--trace-ks", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    if args.trace:
        print(trace_table(reuters_trace(args.trace_ks, args.iterations, args.seeds, args.threads, args.backend)))
        return
    print(table(*compare(args.ks, args.iterations, args.passes, args.fraction, args.threads, args.backend, args.seed,
                         set(args.skip))))


if __name__ == "__main__":
    main()
