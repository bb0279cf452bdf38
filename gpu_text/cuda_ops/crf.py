"""Launch wrappers of ``cuda/crf.cu``; the Numba twins are in ``cpu_fallback/crf.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

WARPS = BLOCK // 32
# Dynamic shared memory the per-warp transition matrices may take without an opt-in.
SHARED_LIMIT = 48 * 1024


def _matrix_space(xp: Any, n_seqs: int, n_labels: int) -> tuple[Any, np.int32, int]:
    """(global scratch, use_shared flag, shared bytes) for the per-warp Y×Y matrices."""
    shared = WARPS * n_labels * n_labels * 8
    if shared <= SHARED_LIMIT:
        return xp.zeros(1), np.int32(1), shared
    return xp.zeros(blocks_for(n_seqs, WARPS) * WARPS * n_labels * n_labels), np.int32(0), 0


def forward_backward(rt: KernelRuntime, unigram: Any, bigram: Any, seq_offsets: Any, u_offsets: Any, u_ids: Any,
                     b_offsets: Any, b_ids: Any, labels: Any) -> tuple[Any, Any, Any, Any, Any]:
    """(alpha, omega, marginals, log_z, gold_score) of every sequence; ``labels`` may be empty."""
    xp = rt.xp
    n, n_labels, n_seqs = int(u_offsets.size - 1), int(unigram.shape[1]), int(seq_offsets.size - 1)
    alpha, omega, marginals = (xp.empty((n, n_labels)) for _ in range(3))
    scale = xp.empty(n)
    log_z, gold = xp.empty(n_seqs), xp.empty(n_seqs)
    scratch, use_shared, shared = _matrix_space(xp, n_seqs, n_labels)
    has_labels = np.int32(labels.size > 0)
    labels = labels if labels.size else xp.zeros(1, xp.int32)
    launch(rt.function("crf", "crf_forward_backward"), blocks_for(n_seqs, WARPS),
           (xp.ascontiguousarray(unigram), xp.ascontiguousarray(bigram), xp.exp(bigram), seq_offsets, i64(n_seqs),
            u_offsets, u_ids, b_offsets, b_ids, labels, has_labels, i64(n_labels), alpha, omega, marginals, scale,
            log_z, gold, scratch, use_shared), shared_mem=shared)
    return alpha, omega, marginals, log_z, gold


def _reduce(rt: KernelRuntime, partial: Any, feature_chunks: Any, width: int) -> Any:
    xp = rt.xp
    n_features = int(feature_chunks.size - 1)
    out = xp.empty((n_features, width))
    launch(rt.function("crf", "crf_reduce_chunks"), blocks_for(n_features * width, BLOCK),
           (partial, feature_chunks, i64(n_features), i64(width), out))
    return out


def unigram_gradient(rt: KernelRuntime, marginals: Any, labels: Any, occ_tokens: Any, chunk_offsets: Any,
                     feature_chunks: Any) -> Any:
    """Expected minus empirical counts of every unigram weight, (n_features, n_labels)."""
    n_chunks, n_labels = int(chunk_offsets.size - 1), int(marginals.shape[1])
    partial = rt.xp.empty(max(n_chunks * n_labels, 1))
    launch(rt.function("crf", "crf_unigram_partials"), blocks_for(n_chunks * n_labels, BLOCK),
           (marginals, labels, occ_tokens, chunk_offsets, i64(n_chunks), i64(n_labels), partial))
    return _reduce(rt, partial, feature_chunks, n_labels)


def bigram_gradient(rt: KernelRuntime, bigram: Any, alpha: Any, omega: Any, labels: Any, b_offsets: Any, b_ids: Any,
                    occ_tokens: Any, chunk_offsets: Any, feature_chunks: Any) -> Any:
    """Expected minus empirical counts of every bigram weight, (n_features, n_labels, n_labels)."""
    xp = rt.xp
    n_chunks, n_labels = int(chunk_offsets.size - 1), int(alpha.shape[1])
    width = n_labels * n_labels
    partial = xp.empty(max(n_chunks * width, 1))
    launch(rt.function("crf", "crf_bigram_partials"), blocks_for(n_chunks * width, BLOCK),
           (xp.exp(bigram), alpha, omega, labels, b_offsets, b_ids, occ_tokens, chunk_offsets, i64(n_chunks),
            i64(n_labels), partial))
    return _reduce(rt, partial, feature_chunks, width).reshape(-1, n_labels, n_labels)


def viterbi(rt: KernelRuntime, unigram: Any, bigram: Any, seq_offsets: Any, u_offsets: Any, u_ids: Any,
            b_offsets: Any, b_ids: Any) -> tuple[Any, Any]:
    """Best label of every token (int32) and best path score of every sequence."""
    xp = rt.xp
    n, n_labels, n_seqs = int(u_offsets.size - 1), int(unigram.shape[1]), int(seq_offsets.size - 1)
    delta = xp.empty((n, n_labels))
    back = xp.empty((n, n_labels), xp.int32)
    out = xp.empty(n, xp.int32)
    scores = xp.empty(n_seqs)
    scratch, use_shared, shared = _matrix_space(xp, n_seqs, n_labels)
    launch(rt.function("crf", "crf_viterbi"), blocks_for(n_seqs, WARPS),
           (xp.ascontiguousarray(unigram), xp.ascontiguousarray(bigram), seq_offsets, i64(n_seqs), u_offsets, u_ids,
            b_offsets, b_ids, i64(n_labels), delta, back, out, scores, scratch, use_shared), shared_mem=shared)
    return out, scores
