"""Launch wrapper of ``cuda/crf_decode.cu`` (exact n-best Viterbi); the Numba twin is
``cpu_fallback/crf_decode.py``, whose docstring defines the outputs and the order of paths."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

WARPS = BLOCK // 32
# Dynamic shared memory the per-warp lists may take without an opt-in.
SHARED_LIMIT = 48 * 1024
# Back pointers are int32 codes y' * k + r.
MAX_CODES = 2 ** 31 - 1


def _warp_space(xp: Any, n_seqs: int, n_labels: int, k: int) -> tuple[Any, np.int32, int]:
    """(global scratch, use_shared flag, shared bytes) for each warp's two lists, B_t and emissions."""
    area = 2 * n_labels * k + n_labels * n_labels + n_labels
    if WARPS * area * 8 <= SHARED_LIMIT:
        return xp.zeros(1), np.int32(1), WARPS * area * 8
    return xp.zeros(blocks_for(n_seqs, WARPS) * WARPS * area), np.int32(0), 0


def nbest_viterbi(rt: KernelRuntime, unigram: Any, bigram: Any, seq_offsets: Any, u_offsets: Any, u_ids: Any,
                  b_offsets: Any, b_ids: Any, k: int) -> tuple[Any, Any, Any]:
    """The ``k`` best label paths of every sentence: ``paths`` (k, n_tokens) int32, ``scores``
    (n_sentences, k) and ``counts`` (n_sentences,) int32, -1 / -inf past a sentence's count."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"nbest_viterbi: k must be an integer >= 1, got {k!r}")
    xp = rt.xp
    k = int(k)
    n, n_labels, n_seqs = int(u_offsets.size - 1), int(unigram.shape[1]), int(seq_offsets.size - 1)
    if n_labels < 1:
        raise ValueError("nbest_viterbi: the model needs at least one label")
    if n_labels * k > MAX_CODES:
        raise ValueError(f"nbest_viterbi: k * labels must stay below 2^31 (k={k}, {n_labels} labels)")
    paths = xp.full((k, n), -1, xp.int32)
    scores = xp.full((n_seqs, k), -np.inf)
    counts = xp.zeros(n_seqs, xp.int32)
    # zeros, so that even a NaN score (which breaks the ranking) backtracks through valid codes
    back = xp.zeros(max(n * n_labels * k, 1), xp.int32)
    scratch, use_shared, shared = _warp_space(xp, n_seqs, n_labels, k)
    launch(rt.function("crf_decode", "crf_nbest_viterbi"), blocks_for(n_seqs, WARPS),
           (xp.ascontiguousarray(unigram, xp.float64), xp.ascontiguousarray(bigram, xp.float64), seq_offsets,
            i64(n_seqs), i64(n), u_offsets, u_ids, b_offsets, b_ids, i64(n_labels), i64(k), back, paths, scores,
            counts, scratch, use_shared), shared_mem=shared)
    return paths, scores, counts
