"""CRF quality: People's Daily (January 1998) word segmentation with the default Chinese pattern
(first 90% of lines train, last 10% dev; word F1, SIGHAN convention) and CoNLL-2000 chunking
(train.txt / test.txt; chunk F1 as conlleval). Prints JSON.

``python -m benchmarks.crf_quality [pd|conll ...] [--max-iterations N] [--backend cpu]``
"""
from __future__ import annotations

import argparse
import json
import resource
import time

from benchmarks.corpora import SHARED
from gpu_text.crf import CHINESE_SEGMENTATION_PATTERN, CRF, read_conll, read_segmented_bmes
from gpu_text.metrics import read_segmented, score_words

# the word window of the Chinese pattern (U00-U06), then the POS window, unigrams to trigrams
CONLL_PATTERN = "".join(CHINESE_SEGMENTATION_PATTERN.splitlines(True)[:7]) + """\
U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-2,1]/%x[-1,1]
U16:%x[-1,1]/%x[0,1]
U17:%x[0,1]/%x[1,1]
U18:%x[1,1]/%x[2,1]
U20:%x[-2,1]/%x[-1,1]/%x[0,1]
U21:%x[-1,1]/%x[0,1]/%x[1,1]
U22:%x[0,1]/%x[1,1]/%x[2,1]
B
"""


def chunks(tags: list[str]) -> set[tuple[int, int, str]]:
    """(start, end, type) of every chunk of a BIO sequence, conlleval's rules."""
    out, start, kind = set(), None, None
    for i, tag in enumerate(tags + ["O"]):
        prefix, _, label = tag.partition("-")
        if start is not None and (prefix in ("B", "O") or label != kind):
            out.add((start, i, kind))
            start = None
        if prefix == "B" or (prefix == "I" and start is None):
            start, kind = i, label
    return out


def chunk_f1(gold: list[list[str]], predicted: list[list[str]]) -> dict:
    correct = found = wanted = 0
    for g, p in zip(gold, predicted):
        gc, pc = chunks(g), chunks(p)
        correct, found, wanted = correct + len(gc & pc), found + len(pc), wanted + len(gc)
    precision, recall = correct / max(found, 1), correct / max(wanted, 1)
    return {"precision": precision, "recall": recall, "f1": 2 * precision * recall / max(precision + recall, 1e-12)}


def _summary(crf: CRF) -> dict:
    last = crf.history_[-1] if crf.history_ else {}
    return {"iterations": len(crf.history_), "unigram_observations": crf.n_unigram_,
            "bigram_observations": crf.n_bigram_, "weights": crf.unigram_weights_.size + crf.bigram_weights_.size,
            "active_features": last.get("active_features"), "extract_seconds": round(crf.extract_seconds_, 2),
            "train_seconds": round(crf.train_seconds_, 1),
            "median_iteration_seconds": round(sorted(h["seconds"] for h in crf.history_)[len(crf.history_) // 2], 3)}


def people_daily(max_iterations: int, backend: str | None) -> dict:
    lines = read_segmented(str(SHARED / "zh-people-daily-199801" / "199801_segmented_words.txt"))
    lines = [line for line in lines if line]
    cut = int(len(lines) * 0.9)
    train, dev = lines[:cut], lines[cut:]
    X, y = read_segmented_bmes(["  ".join(w) for w in train], "  ")
    crf = CRF(max_iterations=max_iterations, backend=backend, verbose=True).fit(X, y)
    start = time.perf_counter()
    predicted = crf.segment(["".join(w) for w in dev])
    seconds = time.perf_counter() - start
    score = score_words(dev, predicted, vocabulary={w for line in train for w in line})
    return {"task": "people-daily-199801 dev (last 10%)", "pattern": "CHINESE_SEGMENTATION_PATTERN (Wapic)",
            "rho1": crf.rho1, "rho2": crf.rho2, "train_characters": sum(map(len, X)), **_summary(crf),
            "segment_seconds": round(seconds, 2), **score.as_dict()}


def conll2000(max_iterations: int, backend: str | None) -> dict:
    X, y = read_conll(str(SHARED / "conll2000" / "train.txt"))
    X_test, y_test = read_conll(str(SHARED / "conll2000" / "test.txt"))
    crf = CRF(pattern=CONLL_PATTERN, max_iterations=max_iterations, backend=backend, verbose=True).fit(X, y)
    return {"task": "conll2000 test", "labels": len(crf.labels_), "rho1": crf.rho1, "rho2": crf.rho2,
            **_summary(crf), **chunk_f1(y_test, crf.predict(X_test))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tasks", nargs="*", default=["pd", "conll"], choices=["pd", "conll"])
    parser.add_argument("--max-iterations", type=int, default=100)
    parser.add_argument("--backend", default=None)
    args = parser.parse_args()
    for task in args.tasks:
        result = (people_daily if task == "pd" else conll2000)(args.max_iterations, args.backend)
        result["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
        print(json.dumps(result, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
