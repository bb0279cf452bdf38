"""Slow, obvious reference for cuda/crf_decode.cu and cpu_fallback/crf_decode.py: list Viterbi that
builds every candidate of every (token, label) and sorts them by the order in the Numba twin's
docstring (no merge, no ranks); the brute-force check over all paths is in tests/test_crf_decode.py."""
from __future__ import annotations

import numpy as np


def _emission(unigram, u_offsets, u_ids, t):
    e = np.zeros(unigram.shape[1])
    for j in range(u_offsets[t], u_offsets[t + 1]):
        e = e + unigram[u_ids[j]]  # row by row, as the twins add them
    return e


def _transitions(bigram, b_offsets, b_ids, t):
    trans = np.zeros(bigram.shape[1:])
    for j in range(b_offsets[t], b_offsets[t + 1]):
        trans = trans + bigram[b_ids[j]]
    return trans


def nbest_viterbi(unigram, bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, k):
    n_labels, n_seqs = unigram.shape[1], seq_offsets.size - 1
    paths = np.full((k, u_offsets.size - 1), -1, np.int32)
    scores = np.full((n_seqs, k), -np.inf)
    counts = np.zeros(n_seqs, np.int32)
    for s in range(n_seqs):
        start, end = int(seq_offsets[s]), int(seq_offsets[s + 1])
        if end == start:
            counts[s], scores[s, 0] = 1, 0.0
            continue
        e = _emission(unigram, u_offsets, u_ids, start)
        # lists[y] = the kept partial paths ending in y, best first: (score, labels)
        lists = [[(float(e[y]), [y])] for y in range(n_labels)]
        for t in range(start + 1, end):
            e = _emission(unigram, u_offsets, u_ids, t)
            trans = _transitions(bigram, b_offsets, b_ids, t)
            new_lists = []
            for y in range(n_labels):
                candidates = [(score + trans[yp, y], yp, r, labels)
                              for yp in range(n_labels) for r, (score, labels) in enumerate(lists[yp])]
                candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
                new_lists.append([(float(v + e[y]), labels + [y]) for v, _, _, labels in candidates[:k]])
            lists = new_lists
        final = [(score, y, r, labels) for y in range(n_labels) for r, (score, labels) in enumerate(lists[y])]
        final.sort(key=lambda c: (-c[0], c[1], c[2]))
        final = final[:k]
        counts[s] = len(final)
        for j, (score, _, _, labels) in enumerate(final):
            scores[s, j] = score
            paths[j, start:end] = labels
    return paths, scores, counts
