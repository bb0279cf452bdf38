"""Segmentation quality on People's Daily (January 1998, PKU standard).

The first 90% of the lines give the dictionary (word counts); the last 10% are the dev set: their
words are joined back into raw text, segmented, and scored (word P/R/F1, IV/OOV recall against the
training words). ``python -m benchmarks.segment_quality [--compat jieba]``.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np

from benchmarks.corpora import SHARED
from gpu_text.metrics import read_segmented, score_words
from gpu_text.segment import Dictionary, Segmenter


def evaluate(compat: str | None = None, backend: str | None = None) -> dict:
    path = SHARED / "zh-people-daily-199801" / "199801_segmented_words.txt"
    lines = read_segmented(str(path))
    cut = int(len(lines) * 0.9)
    train, dev = lines[:cut], lines[cut:]
    counts = Counter(w for line in train for w in line)
    words = sorted(counts)
    dictionary = Dictionary(words, np.array([counts[w] for w in words], np.int64), sum(counts.values()))
    segmenter = Segmenter(dictionary, compat=compat)
    start = time.perf_counter()
    predicted = segmenter.segment(["".join(line) for line in dev], backend).words()
    seconds = time.perf_counter() - start
    score = score_words(dev, predicted, vocabulary=counts)
    return {"compat": compat or "dictcut", "train_lines": len(train), "dev_lines": len(dev),
            "dictionary_words": len(words), "segment_seconds": round(seconds, 3), **score.as_dict()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--compat", choices=["dictcut", "jieba"], default=None)
    parser.add_argument("--backend", default=None)
    args = parser.parse_args()
    print(json.dumps(evaluate(args.compat, args.backend), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
