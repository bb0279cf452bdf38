"""word2vec: gpu_text against gensim 4.4 in the same run, same corpus, same settings.

Corpus: the Project Gutenberg books of ``../shared/data/en-gutenberg`` plus the King James Bible of
``en-kjv`` (verse references dropped), lower-cased, word tokens ``[a-z0-9']+`` (apostrophes kept
inside words), a line per input line, written once to a temporary file that both read (gensim
through ``LineSentence``, gpu_text through its document reader). Settings: CBOW-HS (the seed's:
dim 100, window 5, min_count 5, sample 1e-3, 5 epochs) and SG-NS (negative 5, hs 0), 2 threads /
2 workers; gpu_text a second time with ``compat="gensim"`` (gensim's Huffman tie order, initial
vectors and logistic table). Reported per seed: vocabulary seconds, training seconds, words/s (corpus words x
epochs / training seconds, and including the vocabulary pass), WS-353 and SimLex-999 Spearman,
Google analogy accuracy (restrict_vocab 300000, gensim's rules).

Chinese (``--chinese``): Sogou news (``zh-sogou-news``, an article per line) and People's Daily
January 1998 (``zh-people-daily-199801``, its word spaces removed to give raw text), segmented once
by the project's segmenter with jieba's dictionary (``compat="jieba"``: jieba's ``HMM=False``
words) into a file of space-separated words that both read, so both train on the same tokens.
There being no Chinese similarity or analogy set here, the measure is nearest-neighbour overlap:
for the 1,000 most frequent words with a Han character, the share of their 10 nearest neighbours
(cosine, whole vocabulary) that two models have in common, averaged; ours against gensim (every
seed pair) set beside gensim against gensim with another seed (the yardstick: how much two equally
good models differ) and ours against ours. The on-the-fly path (``Word2Vec(segment=...)`` on the raw
text) is timed once for its vocabulary pass, which includes the segmentation.

``python -m benchmarks word2vec`` (``--quick``: one seed, a fifth of the corpus, 2 epochs);
``python -m benchmarks.word2vec --seeds 1 2 3 --backend cpu`` prints the table directly;
``python -m benchmarks.word2vec --chinese --seeds 1 2 --zh-fraction 0.3`` the Chinese comparison.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import Config, Measurement

DATA = Path(os.environ.get("GPU_TEXT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
EVAL = DATA / "eval-word-similarity"
WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
SETTINGS = {"cbow-hs": dict(sg=0, hs=1, negative=0), "sg-ns": dict(sg=1, hs=0, negative=5)}
COMMON = dict(vector_size=100, window=5, min_count=5, sample=1e-3)


def prepare_corpus(out: Path, fraction: float = 1.0) -> tuple[Path, int]:
    """Writes the lower-cased tokens a line per line; returns (path, number of tokens)."""
    sources = sorted((DATA / "en-gutenberg").glob("pg*.txt")) + [DATA / "en-kjv" / "kjv_verses.txt"]
    if not all(p.is_file() for p in sources):
        raise ImportError(f"needs the research corpora under {DATA}")
    tokens = 0
    with open(out, "w", encoding="utf-8") as sink:
        for source in sources:
            lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
            lines = lines[:int(len(lines) * fraction)]
            for line in lines:
                if source.parent.name == "en-kjv":
                    line = line.split(" ", 1)[1] if " " in line else ""
                words = WORD.findall(line.lower())
                if words:
                    sink.write(" ".join(words) + "\n")
                    tokens += len(words)
    return out, tokens


def _spearman(wv: Any, path: Path) -> float:
    value = wv.evaluate_word_pairs(str(path))[1]
    return float(value[0] if isinstance(value, tuple) else getattr(value, "statistic", value))


def run_gensim(path: Path, settings: dict, seed: int, epochs: int, threads: int, scores: bool = True) -> Any:
    """gensim's run: its row (with the English scores), or with ``scores=False`` (row, keys, vectors)."""
    from gensim.models import Word2Vec as GensimWord2Vec
    from gensim.models.word2vec import LineSentence

    model = GensimWord2Vec(**COMMON, **settings, epochs=epochs, seed=seed, workers=threads)
    tick = time.perf_counter()
    model.build_vocab(LineSentence(str(path)))
    vocab_s = time.perf_counter() - tick
    tick = time.perf_counter()
    model.train(LineSentence(str(path)), total_examples=model.corpus_count, epochs=epochs)
    row = {"vocab_s": vocab_s, "train_s": time.perf_counter() - tick, "vocab": len(model.wv)}
    if not scores:
        return row, list(model.wv.index_to_key), model.wv.vectors
    return {**row, **_scores(model.wv)}


def run_gpu_text(path: Path, settings: dict, seed: int, epochs: int, threads: int, backend: str,
                 scores: bool = True, **options: Any) -> Any:
    """gpu_text's run, as :func:`run_gensim`; ``options`` go to ``Word2Vec``."""
    import numba

    from gpu_text.word2vec import Word2Vec

    numba.set_num_threads(threads)
    model = Word2Vec(**COMMON, **settings, epochs=epochs, seed=seed, backend=backend, **options)
    tick = time.perf_counter()
    model.fit(str(path))
    total = time.perf_counter() - tick
    row = {"vocab_s": model.vocab_seconds_, "train_s": total - model.vocab_seconds_, "vocab": len(model.wv_)}
    if not scores:
        return row, list(model.wv_.index_to_key), model.wv_.vectors
    return {**row, **_scores(model.wv_)}


def _scores(wv: Any) -> dict[str, float]:
    return {"ws353": _spearman(wv, EVAL / "wordsim353.tsv"), "simlex": _spearman(wv, EVAL / "simlex999.txt"),
            "analogy": float(wv.evaluate_word_analogies(str(EVAL / "questions-words.txt"))[0])}


def compare(seeds: list[int], epochs: int, fraction: float, threads: int, backend: str) -> list[dict[str, Any]]:
    """One row per (setting, implementation, seed)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path, tokens = prepare_corpus(Path(tmp) / "corpus.txt", fraction)
        for name, settings in SETTINGS.items():
            # also with gensim's tree, initial vectors and logistic table (compat="gensim")
            variants = {"gensim": None, f"gpu_text[{backend}]": {}, f"gpu_text[{backend}] compat=gensim":
                        {"compat": "gensim"}}
            for seed in seeds:
                for impl, options in variants.items():
                    if options is None:
                        result = run_gensim(path, settings, seed, epochs, threads)
                    else:
                        result = run_gpu_text(path, settings, seed, epochs, threads, backend, **options)
                    result.update(setting=name, implementation=impl, seed=seed, tokens=tokens,
                                  words_per_s=tokens * epochs / result["train_s"],
                                  words_per_s_with_vocab=tokens * epochs / (result["train_s"] + result["vocab_s"]))
                    rows.append(result)
                    print(result, file=sys.stderr, flush=True)  # a long run shows its progress
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: every run, then the means over seeds."""
    head = ("| setting | implementation | seed | vocab | vocab s | train s | words/s | words/s incl. vocab | "
            "WS-353 | SimLex | analogy |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(f"| {r['setting']} | {r['implementation']} | {r['seed']} | {r['vocab']} | {r['vocab_s']:.2f} | "
                   f"{r['train_s']:.2f} | {r['words_per_s']:,.0f} | {r['words_per_s_with_vocab']:,.0f} | "
                   f"{r['ws353']:.4f} | {r['simlex']:.4f} | {100 * r['analogy']:.2f}% |\n" for r in rows)
    means = []
    for key in sorted({(r["setting"], r["implementation"]) for r in rows}):
        group = [r for r in rows if (r["setting"], r["implementation"]) == key]
        means.append(f"| {key[0]} | {key[1]} | mean of {len(group)} | {group[0]['vocab']} | "
                     f"{statistics.mean(r['vocab_s'] for r in group):.2f} | "
                     f"{statistics.mean(r['train_s'] for r in group):.2f} | "
                     f"{statistics.mean(r['words_per_s'] for r in group):,.0f} | "
                     f"{statistics.mean(r['words_per_s_with_vocab'] for r in group):,.0f} | "
                     f"{statistics.mean(r['ws353'] for r in group):.4f} | "
                     f"{statistics.mean(r['simlex'] for r in group):.4f} | "
                     f"{100 * statistics.mean(r['analogy'] for r in group):.2f}% |\n")
    return head + body + "".join(means)


def run(config: Config) -> list[Measurement]:
    """The harness entry: training time rows (gpu_text's peer is gensim); quality in the notes."""
    import gensim  # noqa: F401  (ImportError: the benchmark is skipped)

    from gpu_text.backend import get_backend

    backend = get_backend().name
    seeds, epochs, fraction = ([1], 2, 0.2) if config.quick else ([1, 2, 3], 5, 1.0)
    rows = compare(seeds, epochs, fraction, 2, backend)
    print(table(rows))
    out = []
    for r in rows:
        peer = None if r["implementation"] == "gensim" else "gensim"
        out.append(Measurement("word2vec", f"{r['setting']} seed {r['seed']}", r["implementation"], 2,
                               [r["train_s"]], r["tokens"] * epochs, peer,
                               f"vocab {r['vocab_s']:.2f}s, WS353 {r['ws353']:.3f}, SimLex {r['simlex']:.3f}, "
                               f"analogy {100 * r['analogy']:.1f}%"))
    return out


HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
ZH_SOURCES = ("zh-sogou-news", "zh-people-daily-199801")


def prepare_chinese(folder: Path, fraction: float = 1.0) -> tuple[Path, Path, int]:
    """Writes the raw text (a document per line) and its words (space-separated, a line per
    document) under ``folder``; returns (raw path, words path, number of words)."""
    import jieba

    from gpu_text.documents import read_documents
    from gpu_text.segment import Segmenter, load_dictionary

    sources = sorted((DATA / ZH_SOURCES[0]).glob("C*.txt")) + [DATA / ZH_SOURCES[1] / "199801_segmented_words.txt"]
    if not all(p.is_file() for p in sources):
        raise ImportError(f"needs the Chinese corpora under {DATA}")
    raw, words = folder / "zh-raw.txt", folder / "zh-words.txt"
    with open(raw, "w", encoding="utf-8") as sink:
        for source in sources:
            lines = [line.replace(" ", "") for line in source.read_text(encoding="utf-8").split("\n")]
            lines = [line for line in lines[:int(len(lines) * fraction)] if line.strip()]
            sink.write("".join(line + "\n" for line in lines))
    segmenter = Segmenter(load_dictionary(jieba.get_dict_file().name), compat="jieba")
    tokens = 0
    with open(words, "w", encoding="utf-8") as sink:
        for batch in read_documents([raw]):
            for line in segmenter.segment(batch, backend="cpu").words():
                sink.write(" ".join(line) + "\n")
                tokens += len(line)
    return raw, words, tokens


def neighbours(keys: list[str], vectors: Any, queries: list[str], topn: int = 10) -> dict[str, set[str]]:
    """The ``topn`` nearest keys (cosine, the query itself left out) of every query."""
    import numpy as np

    from gpu_text.arrays import to_host

    unit = np.asarray(to_host(vectors), np.float32)
    unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    index = {k: i for i, k in enumerate(keys)}
    rows = np.array([index[q] for q in queries])
    sims = unit[rows] @ unit.T
    sims[np.arange(rows.size), rows] = -np.inf
    top = np.argpartition(-sims, topn, axis=1)[:, :topn]
    return {q: {keys[j] for j in top[i]} for i, q in enumerate(queries)}


def overlap(a: dict[str, set[str]], b: dict[str, set[str]]) -> float:
    """Mean share of common neighbours."""
    return statistics.mean(len(a[q] & b[q]) / len(a[q]) for q in a)


def compare_chinese(seeds: list[int], epochs: int, fraction: float, threads: int, backend: str,
                    n_queries: int = 1000) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(timing rows, overlap rows, the on-the-fly segmentation run) on the Chinese corpus."""
    import numba

    from gpu_text.segment import Segmenter, load_dictionary
    from gpu_text.word2vec.vocabulary import build_vocabulary

    rows, overlaps = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tick = time.perf_counter()
        raw, path, tokens = prepare_chinese(Path(tmp), fraction)
        prepare_s = time.perf_counter() - tick
        import jieba

        numba.set_num_threads(threads)
        tick = time.perf_counter()
        segmenter = Segmenter(load_dictionary(jieba.get_dict_file().name), compat="jieba")
        dictionary_s = time.perf_counter() - tick
        tick = time.perf_counter()
        vocab_raw, _ = build_vocabulary(str(raw), COMMON["min_count"], segment=segmenter, backend=backend)
        on_the_fly = {"dictionary_s": dictionary_s, "vocab_with_segmentation_s": time.perf_counter() - tick,
                      "prepare_s": prepare_s, "tokens": tokens, "raw_bytes": raw.stat().st_size}
        vocab_words, _ = build_vocabulary(str(path), COMMON["min_count"])
        on_the_fly["same_vocabulary"] = vocab_raw.index_to_key == vocab_words.index_to_key
        queries = [k for k in vocab_words.index_to_key if HAN.search(k)][:n_queries]
        for name, settings in SETTINGS.items():
            found: dict[tuple[str, int], dict[str, set[str]]] = {}
            for seed in seeds:
                for impl in ("gensim", "gpu_text", "gpu_text compat=gensim"):
                    if impl == "gensim":
                        result, keys, vectors = run_gensim(path, settings, seed, epochs, threads, scores=False)
                    else:
                        options = {"compat": "gensim"} if "compat" in impl else {}
                        result, keys, vectors = run_gpu_text(path, settings, seed, epochs, threads, backend,
                                                             scores=False, **options)
                    found[impl, seed] = neighbours(keys, vectors, queries)
                    result.update(setting=name, implementation=impl.replace("gpu_text", f"gpu_text[{backend}]"),
                                  seed=seed, tokens=tokens, words_per_s=tokens * epochs / result["train_s"],
                                  words_per_s_with_vocab=tokens * epochs / (result["train_s"] + result["vocab_s"]))
                    rows.append(result)
                    print(result, file=sys.stderr, flush=True)
            pairs = {"gpu_text vs gensim": [(("gpu_text", a), ("gensim", b)) for a in seeds for b in seeds],
                     "gpu_text compat=gensim vs gensim": [(("gpu_text compat=gensim", a), ("gensim", b))
                                                          for a in seeds for b in seeds],
                     "gensim vs gensim (other seed)": [(("gensim", a), ("gensim", b)) for a in seeds for b in seeds
                                                       if a < b],
                     "gpu_text vs gpu_text (other seed)": [(("gpu_text", a), ("gpu_text", b)) for a in seeds
                                                           for b in seeds if a < b]}
            for label, members in pairs.items():
                if members:
                    values = [overlap(found[x], found[y]) for x, y in members]
                    overlaps.append({"setting": name, "pair": label, "n": len(values),
                                     "overlap": statistics.mean(values)})
    return rows, overlaps, on_the_fly


def chinese_table(rows: list[dict[str, Any]], overlaps: list[dict[str, Any]], on_the_fly: dict[str, Any]) -> str:
    """Markdown: speed per run, the neighbour overlaps, the on-the-fly segmentation figures."""
    head = ("| setting | implementation | seed | vocab | vocab s | train s | words/s | words/s incl. vocab |\n"
            "|---|---|---|---|---|---|---|---|\n")
    body = "".join(f"| {r['setting']} | {r['implementation']} | {r['seed']} | {r['vocab']} | {r['vocab_s']:.2f} | "
                   f"{r['train_s']:.2f} | {r['words_per_s']:,.0f} | {r['words_per_s_with_vocab']:,.0f} |\n"
                   for r in rows)
    pairs = ("\n| setting | models compared | pairs | mean top-10 overlap (1,000 most frequent Han words) |\n"
             "|---|---|---|---|\n" + "".join(f"| {o['setting']} | {o['pair']} | {o['n']} | {o['overlap']:.4f} |\n"
                                              for o in overlaps))
    fly = (f"\n{on_the_fly['tokens']:,} words from {on_the_fly['raw_bytes']:,} bytes of raw text; "
           f"segmenter built in {on_the_fly['dictionary_s']:.2f}s (jieba's dictionary), vocabulary pass with "
           f"segmentation on the fly {on_the_fly['vocab_with_segmentation_s']:.2f}s, same vocabulary as from the "
           f"pre-segmented file: {on_the_fly['same_vocabulary']}\n")
    return head + body + pairs + fly


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--fraction", type=float, default=1.0, help="share of every file's lines used")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS))
    parser.add_argument("--chinese", action="store_true", help="the Chinese neighbour-overlap comparison instead")
    parser.add_argument("--zh-fraction", type=float, default=1.0, help="share of every Chinese file's lines used")
    args = parser.parse_args()
    for name in list(SETTINGS):
        if name not in args.settings:
            del SETTINGS[name]
    if args.chinese:
        print(chinese_table(*compare_chinese(args.seeds, args.epochs, args.zh_fraction, args.threads, args.backend)))
        return
    print(table(compare(args.seeds, args.epochs, args.fraction, args.threads, args.backend)))


if __name__ == "__main__":
    main()
