"""Slow, obvious reference of the ngram_count kernels (cuda/ngram_count.cu)."""
from __future__ import annotations

import numpy as np


def ngram_keys(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """Per byte, the key of the n-gram starting there inside its pre-token, else 0."""
    keys = [0] * len(data)
    raw = bytes(data)
    for start, end in zip(starts.tolist(), ends.tolist()):
        for i in range(start, end - n + 1):
            keys[i] = (n << (8 * n)) | int.from_bytes(raw[i:i + n], "big")
    return np.array(keys, np.uint64)


def byte_viterbi_starts(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, keys: np.ndarray,
                        values: np.ndarray) -> np.ndarray:
    """1 where each piece of every pre-token's best byte path starts (tests/reference/bytepiece.py's Viterbi)."""
    from tests.reference.bytepiece import byte_viterbi

    tables: list[dict[bytes, float]] = [dict() for _ in range(7)]
    for key, value in zip(keys.tolist(), values.tolist()):
        n = next(n for n in range(6, 0, -1) if key >> (8 * n) == n)
        tables[n][(key & ((1 << (8 * n)) - 1)).to_bytes(n, "big")] = value
    out = np.zeros(len(data), np.uint8)
    raw = bytes(data)
    for start, end in zip(starts.tolist(), ends.tolist()):
        at = start
        for piece in byte_viterbi(raw[start:end], tables):
            out[at] = 1
            at += len(piece)
    return out
