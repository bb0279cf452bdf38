"""word2vec: gpu_text against gensim 4.4 in the same run, same corpus, same settings.

Corpus: the Project Gutenberg books of ``../shared/data/en-gutenberg`` plus the King James Bible of
``en-kjv`` (verse references dropped), lower-cased, word tokens ``[a-z0-9']+`` (apostrophes kept
inside words), a line per input line, written once to a temporary file that both read (gensim
through ``LineSentence``, gpu_text through its document reader). Settings: CBOW-HS (the seed's:
dim 100, window 5, min_count 5, sample 1e-3, 5 epochs) and SG-NS (negative 5, hs 0), 2 threads /
2 workers. Reported per seed: vocabulary seconds, training seconds, words/s (corpus words x
epochs / training seconds, and including the vocabulary pass), WS-353 and SimLex-999 Spearman,
Google analogy accuracy (restrict_vocab 300000, gensim's rules).

``python -m benchmarks word2vec`` (``--quick``: one seed, a fifth of the corpus, 2 epochs);
``python -m benchmarks.word2vec --seeds 1 2 3 --backend cpu`` prints the table directly.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
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


def run_gensim(path: Path, settings: dict, seed: int, epochs: int, threads: int) -> dict[str, Any]:
    from gensim.models import Word2Vec as GensimWord2Vec
    from gensim.models.word2vec import LineSentence

    model = GensimWord2Vec(**COMMON, **settings, epochs=epochs, seed=seed, workers=threads)
    tick = time.perf_counter()
    model.build_vocab(LineSentence(str(path)))
    vocab_s = time.perf_counter() - tick
    tick = time.perf_counter()
    model.train(LineSentence(str(path)), total_examples=model.corpus_count, epochs=epochs)
    return {"vocab_s": vocab_s, "train_s": time.perf_counter() - tick, "vocab": len(model.wv),
            **_scores(model.wv)}


def run_gpu_text(path: Path, settings: dict, seed: int, epochs: int, threads: int, backend: str) -> dict[str, Any]:
    import numba

    from gpu_text.word2vec import Word2Vec

    numba.set_num_threads(threads)
    model = Word2Vec(**COMMON, **settings, epochs=epochs, seed=seed, backend=backend)
    tick = time.perf_counter()
    model.fit(str(path))
    total = time.perf_counter() - tick
    return {"vocab_s": model.vocab_seconds_, "train_s": total - model.vocab_seconds_, "vocab": len(model.wv_),
            **_scores(model.wv_)}


def _scores(wv: Any) -> dict[str, float]:
    return {"ws353": _spearman(wv, EVAL / "wordsim353.tsv"), "simlex": _spearman(wv, EVAL / "simlex999.txt"),
            "analogy": float(wv.evaluate_word_analogies(str(EVAL / "questions-words.txt"))[0])}


def compare(seeds: list[int], epochs: int, fraction: float, threads: int, backend: str) -> list[dict[str, Any]]:
    """One row per (setting, implementation, seed)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path, tokens = prepare_corpus(Path(tmp) / "corpus.txt", fraction)
        for name, settings in SETTINGS.items():
            for seed in seeds:
                for impl in ("gensim", f"gpu_text[{backend}]"):
                    if impl == "gensim":
                        result = run_gensim(path, settings, seed, epochs, threads)
                    else:
                        result = run_gpu_text(path, settings, seed, epochs, threads, backend)
                    result.update(setting=name, implementation=impl, seed=seed, tokens=tokens,
                                  words_per_s=tokens * epochs / result["train_s"],
                                  words_per_s_with_vocab=tokens * epochs / (result["train_s"] + result["vocab_s"]))
                    rows.append(result)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--fraction", type=float, default=1.0, help="share of every file's lines used")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS))
    args = parser.parse_args()
    for name in list(SETTINGS):
        if name not in args.settings:
            del SETTINGS[name]
    print(table(compare(args.seeds, args.epochs, args.fraction, args.threads, args.backend)))


if __name__ == "__main__":
    main()
