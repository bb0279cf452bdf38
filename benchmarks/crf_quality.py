"""CRF quality: People's Daily (January 1998) word segmentation (first 90% of lines train, last
10% dev; word F1, SIGHAN convention) and CoNLL-2000 chunking (train.txt / test.txt; chunk F1 as
conlleval). Prints one JSON object per trained model.

* ``pd``: Wapic's pattern on raw characters (``WAPIC_SEGMENTATION_PATTERN``) and the default
  segmentation features (folded characters + classes, ``SEGMENTATION_PATTERN``), same training
  settings, each scored on the dev split and on the dev split with its full-width digits and
  Latin letters written half-width (``dev_halfwidth``; the training month writes them full-width);
* ``grid``: the default features over a small grid of ρ1, ρ2 and stopping rules, scored on the
  dev split only (the split is the tuning set; no test set is read);
* ``conll``: chunking.

``python -m benchmarks.crf_quality [pd|grid|conll ...] [--max-iterations N] [--backend cpu]``
"""
from __future__ import annotations

import argparse
import json
import resource
import time

from benchmarks.corpora import SHARED
from gpu_text.crf import CHINESE_SEGMENTATION_PATTERN, CRF, read_conll
from gpu_text.crf.commands import SEGMENT_DEFAULTS
from gpu_text.crf.segmentation import SegmentationFeatures
from gpu_text.crf.segmenter import fit_segmenter
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


# full-width digits and Latin letters -> ASCII (only those: the acceptance's "digits and letters")
HALF_WIDTH = {c: c - 0xFEE0 for c in (*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B))}


def people_daily_split() -> tuple[list[list[str]], list[list[str]]]:
    """The month's non-empty lines as word lists: the first 90% (train), the last 10% (dev)."""
    lines = read_segmented(str(SHARED / "zh-people-daily-199801" / "199801_segmented_words.txt"))
    lines = [line for line in lines if line]
    cut = int(len(lines) * 0.9)
    return lines[:cut], lines[cut:]


def _score_dev(crf: CRF, train: list[list[str]], dev: list[list[str]]) -> dict:
    """Word scores on the dev split and on its half-width twin (same gold boundaries)."""
    vocabulary = {w for line in train for w in line}
    out = {}
    for name, gold in (("dev", dev), ("dev_halfwidth", [[w.translate(HALF_WIDTH) for w in line] for line in dev])):
        start = time.perf_counter()
        predicted = crf.segment(["".join(w) for w in gold])
        seconds = time.perf_counter() - start
        out[name] = {**score_words(gold, predicted, vocabulary=vocabulary).as_dict(),
                     "segment_seconds": round(seconds, 2)}
    out["f1_drop_halfwidth"] = round(out["dev"]["f1"] - out["dev_halfwidth"]["f1"], 5)
    return out


def _train(train: list[list[str]], features: SegmentationFeatures, dev: list[list[str]] | None = None,
           **params) -> CRF:
    joined = ["  ".join(w) for w in train]
    dev_lines = ["  ".join(w) for w in dev] if dev is not None else None
    return fit_segmenter(joined, features, dev_lines=dev_lines, separator="  ", verbose=True, **params)


def people_daily(max_iterations: int, backend: str | None) -> list[dict]:
    """Wapic's pattern vs the default segmentation features, same settings (the CLI's defaults)."""
    train, dev = people_daily_split()
    rows = []
    for label, features in (("WAPIC_SEGMENTATION_PATTERN (raw characters)", SegmentationFeatures(("char",))),
                            ("SEGMENTATION_PATTERN (folded characters + classes)", SegmentationFeatures())):
        crf = _train(train, features, max_iterations=max_iterations, backend=backend, **SEGMENT_DEFAULTS)
        rows.append({"task": "people-daily-199801 dev (last 10%)", "pattern": label, "columns": features.columns,
                     **SEGMENT_DEFAULTS, "train_characters": sum(map(len, map("".join, train))), **_summary(crf),
                     **_score_dev(crf, train, dev)})
    return rows


# the grid: (rho1, rho2, stopping rule); "train-window": Wapiti's window on the training error
# (stop_window 5, stop_eps 0.02), "dev-window": the same window on the dev error, "fixed": all
# max_iterations iterations
# max_iterations iterations; the CLI's setting (SEGMENT_DEFAULTS: rho1 0.1, rho2 1e-4, train-window)
# is the ``pd`` task's row
GRID = [(0.5, 1e-4, "train-window"), (1.0, 1e-4, "train-window"), (0.5, 1e-3, "train-window"),
        (0.5, 1e-4, "dev-window"), (0.5, 1e-4, "fixed")]


def people_daily_grid(max_iterations: int, backend: str | None) -> list[dict]:
    """The default features over :data:`GRID`, dev split only."""
    train, dev = people_daily_split()
    rows = []
    for rho1, rho2, stopping in GRID:
        extra = {"stop_window": 0} if stopping == "fixed" else {}
        crf = _train(train, SegmentationFeatures(), dev if stopping == "dev-window" else None, rho1=rho1, rho2=rho2,
                     max_iterations=max_iterations, backend=backend, **extra)
        score = _score_dev(crf, train, dev)
        row = {"task": "grid, people-daily-199801 dev", "rho1": rho1, "rho2": rho2, "stopping": stopping,
               **_summary(crf), "dev_f1": score["dev"]["f1"], "dev_halfwidth_f1": score["dev_halfwidth"]["f1"],
               "dev_oov_recall": score["dev"].get("oov_recall")}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def conll2000(max_iterations: int, backend: str | None) -> dict:
    X, y = read_conll(str(SHARED / "conll2000" / "train.txt"))
    X_test, y_test = read_conll(str(SHARED / "conll2000" / "test.txt"))
    crf = CRF(pattern=CONLL_PATTERN, max_iterations=max_iterations, backend=backend, verbose=True).fit(X, y)
    return {"task": "conll2000 test", "labels": len(crf.labels_), "rho1": crf.rho1, "rho2": crf.rho2,
            **_summary(crf), **chunk_f1(y_test, crf.predict(X_test))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tasks", nargs="*", default=["pd", "conll"], choices=["pd", "grid", "conll"])
    parser.add_argument("--max-iterations", type=int, default=100)
    parser.add_argument("--backend", default=None)
    args = parser.parse_args()
    run = {"pd": people_daily, "grid": people_daily_grid, "conll": lambda *a: [conll2000(*a)]}
    for task in args.tasks:
        for result in run[task](args.max_iterations, args.backend):
            result["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
            print(json.dumps(result, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
