"""The obvious Python of word2vec's training (gensim 4.4's word2vec_inner, exact sigmoid), one
position after another: the reference the CUDA kernel and its Numba twin are compared with.

Same draws as the kernels (the counter-based hash below); dot products are taken in float64 and
rounded once, so results agree with the kernels to float32 rounding, not bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

MASK = (1 << 64) - 1


def mix(z: int) -> int:
    """splitmix64's finaliser on a 64-bit integer."""
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def draw(key: int, position: int, sub: int) -> int:
    return mix(mix(key ^ position) ^ sub)


def subsample(ids, sample_int, key):
    key = int(key)
    keep = [1 if int(sample_int[w]) >= draw(key, i, 0) >> 32 else 0 for i, w in enumerate(ids.tolist())]
    return np.array(keep, np.uint8)


def _sigmoid(f: float, table: int = 0) -> float:
    if not table:
        return 1.0 / (1.0 + math.exp(-f))
    # gensim's EXP_TABLE entry, in its float32 arithmetic: index (int)((f + 6) * 83), value
    # sigma(-6 + 0.012 * index)
    index = int(np.float32(np.float32(f) + np.float32(6.0)) * np.float32(83.0))
    x = np.float32(np.float32(np.float32(index) / np.float32(1000.0)) * np.float32(2.0))
    x = np.float32(np.float32(x - np.float32(1.0)) * np.float32(6.0))
    e = np.float32(math.exp(float(x)))
    return float(np.float32(e / np.float32(e + np.float32(1.0))))


def _step(inp, out, neu1e, label, alpha, compute_loss, table):
    """One output unit: returns its loss; updates neu1e and the output row in place."""
    f = float(np.float32(np.dot(inp.astype(np.float64), out.astype(np.float64))))
    if f <= -6.0 or f >= 6.0:
        return 0.0
    g = np.float32((label - np.float32(_sigmoid(f, table))) * alpha)
    neu1e += g * out
    out += g * inp
    return -math.log(_sigmoid(f if label > 0.5 else -f, table)) if compute_loss else 0.0


def _outputs(inp, neu1e, word, syn1, syn1neg, codes, points, code_offsets, cum_table, hs, negative, alpha, key, i,
             pair, compute_loss, table):
    loss = 0.0
    if hs:
        for k in range(code_offsets[word], code_offsets[word + 1]):
            loss += _step(inp, syn1[points[k]], neu1e, 1.0 - float(codes[k]), alpha, compute_loss, table)
    for d in range(negative + 1 if negative else 0):
        target = word
        if d > 0:
            r = (draw(key, i, 2 + pair * (negative + 1) + d) >> 16) % int(cum_table[-1])
            target = int(np.searchsorted(cum_table, r, side="left"))
            if target == word:
                continue
        loss += _step(inp, syn1neg[target], neu1e, 1.0 if d == 0 else 0.0, alpha, compute_loss, table)
    return loss


def train_epoch(ids, row_offsets, syn0, syn1, syn1neg, codes, points, code_offsets, cum_table, sg, hs, negative,
                window, cbow_mean, alpha_start, alpha_end, key, unit_words, compute_loss, sigmoid_table=0):
    """One epoch, position by position (``unit_words`` only groups the returned losses)."""
    key, n = int(key), ids.size
    n_units = -(-n // unit_words)
    loss = np.zeros(n_units)
    for row in range(row_offsets.size - 1):
        start, end = int(row_offsets[row]), int(row_offsets[row + 1])
        for i in range(start, end):
            word = int(ids[i])
            alpha = np.float32(alpha_start + (alpha_end - alpha_start) * (i / n))
            b = (draw(key, i, 1) >> 32) % window
            context = [j for j in range(max(start, i - window + b), min(end, i + window + 1 - b)) if j != i]
            if sg:
                for j in context:
                    neu1e = np.zeros(syn0.shape[1], np.float32)
                    loss[i // unit_words] += _outputs(syn0[ids[j]], neu1e, word, syn1, syn1neg, codes, points,
                                                      code_offsets, cum_table, hs, negative, alpha, key, i,
                                                      j - i + window, compute_loss, sigmoid_table)
                    syn0[ids[j]] += neu1e
                continue
            if not context:
                continue
            neu1 = np.sum([syn0[ids[j]] for j in context], axis=0, dtype=np.float32)
            inv_count = np.float32(1.0) / np.float32(len(context))
            if cbow_mean:
                neu1 = neu1 * inv_count
            neu1e = np.zeros(syn0.shape[1], np.float32)
            loss[i // unit_words] += _outputs(neu1, neu1e, word, syn1, syn1neg, codes, points, code_offsets,
                                              cum_table, hs, negative, alpha, key, i, 0, compute_loss, sigmoid_table)
            if not cbow_mean:
                neu1e = neu1e * inv_count
            for j in context:
                syn0[ids[j]] += neu1e
    return loss


def unit_words(batch_words):
    return batch_words
