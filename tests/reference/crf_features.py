"""Slow, obvious references for cuda/crf_features.cu and cpu_fallback/crf_features.py: every key
with Python integers, every lookup in a dict read off the tables (not by probing), Viterbi by
plain dynamic programming, adding the weights in the twins' order."""
from __future__ import annotations

import numpy as np

MASK = (1 << 64) - 1
HASH_MULTIPLIER = 0x9E3779B97F4A7C15
DENSE = 1


def _value(values, edges, command, start, length, local):
    column, offset, absolute = (int(x) for x in command)
    pos = (offset if offset >= 0 else length + offset) if absolute else local + offset
    if pos < 0:
        return int(edges[column, min(-pos - 1, 4)])
    if pos >= length:
        return int(edges[column, 5 + min(pos - length, 4)])
    return int(values[column, start + pos])


def _key(parts, namespace, exact, n_values, n_namespaces):
    """gpu_text.crf.patterns.combine_keys of one row, in Python integers."""
    if exact:
        key = 0
        for v in parts:
            key = key * n_values + v
        return key * n_namespaces + namespace
    hashed = namespace + 1
    for v in parts:
        hashed = (hashed * HASH_MULTIPLIER + v + 1) & MASK
        hashed ^= hashed >> 29
    return hashed >> 1


def _tables(rows, slots):
    """Per row, a dict key -> id of its region's occupied slots."""
    out = []
    for row in rows.tolist():
        if row[5] == DENSE:
            out.append(None)
            continue
        region = slots[row[6]:row[6] + (1 << row[7])].tolist()
        out.append({key: fid for key, fid in region if key != -1})
    return out


def feature_ids(seq_offsets, values, edges, rows, commands, slots, dense, n_values, n_namespaces):
    n = int(seq_offsets[-1]) if seq_offsets.size else 0
    tables = _tables(rows, slots)
    out = np.full((n, rows.shape[0]), -1, np.int64)
    for s in range(seq_offsets.size - 1):
        start, end = int(seq_offsets[s]), int(seq_offsets[s + 1])
        for local in range(end - start):
            for r, row in enumerate(rows.tolist()):
                kind, namespace, exact, first, count, mode, base, size = row
                if kind == 2 and local == 0:
                    continue
                parts = [_value(values, edges, commands[c], start, end - start, local) for c in range(first, first + count)]
                if any(v < 0 for v in parts):
                    continue
                if mode == DENSE:
                    out[start + local, r] = dense[base + parts[0]] if parts[0] < size else -1
                else:
                    out[start + local, r] = tables[r].get(_key(parts, namespace, exact, n_values, n_namespaces), -1)
    return out


def segment_viterbi(unigram, bigram, seq_offsets, values, edges, rows, commands, slots, dense, n_values, n_namespaces):
    ids = feature_ids(seq_offsets, values, edges, rows, commands, slots, dense, n_values, n_namespaces)
    n_u = int((rows[:, 0] == 1).sum()) if rows.size else 0
    n_labels = unigram.shape[1]
    labels = np.zeros(ids.shape[0], np.int32)
    scores = np.zeros(seq_offsets.size - 1)
    for s in range(seq_offsets.size - 1):
        start, end = int(seq_offsets[s]), int(seq_offsets[s + 1])
        if end == start:
            continue
        delta, back = [], []
        for t in range(start, end):
            emission = [0.0] * n_labels
            for f in ids[t, :n_u].tolist():
                if f >= 0:
                    emission = [e + float(unigram[f, y]) for y, e in enumerate(emission)]
            if t == start:
                delta.append(emission)
                back.append([0] * n_labels)
                continue
            trans = np.zeros((n_labels, n_labels))
            for f in ids[t, n_u:].tolist():
                if f >= 0:
                    trans = trans + bigram[f]
            row, pointers = [], []
            for y in range(n_labels):
                candidates = [delta[-1][yp] + trans[yp, y] for yp in range(n_labels)]
                best = max(range(n_labels), key=lambda yp: (candidates[yp], -yp))  # the lowest of equals
                row.append(candidates[best] + emission[y])
                pointers.append(best)
            delta.append(row)
            back.append(pointers)
        y = max(range(n_labels), key=lambda k: (delta[-1][k], -k))
        scores[s] = delta[-1][y]
        for t in range(end - start - 1, -1, -1):
            labels[start + t] = y
            y = back[t][y]
    return labels, scores
