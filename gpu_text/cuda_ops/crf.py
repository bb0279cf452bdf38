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


# The group kernels of cuda/crf.cu by label count (a group of lanes a sequence, values in
# registers); more labels take crf_forward_backward (a warp a sequence).
GROUP_KERNELS = {1: "crf_forward_backward_y1", 2: "crf_forward_backward_y2", 3: "crf_forward_backward_y3",
                 4: "crf_forward_backward_y4", 5: "crf_forward_backward_y5", 6: "crf_forward_backward_y6"}
GROUP_LANES = {1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 6: 8}


def sequence_order(rt: KernelRuntime, seq_offsets: Any) -> Any:
    """The sequences longest first (int64; equal lengths in index order): the order the
    recursion takes them in, so that a warp's sequences end together and the long ones start
    first. Training computes it once; a stable sort, so every twin gives the same order."""
    xp = rt.xp
    lengths = seq_offsets[1:] - seq_offsets[:-1]
    return xp.argsort(-lengths, kind="stable").astype(xp.int64)


def emissions(rt: KernelRuntime, unigram: Any, bigram: Any, u_offsets: Any, u_ids: Any, b_offsets: Any, b_ids: Any,
              labels: Any) -> tuple[Any, Any, Any, Any, Any]:
    """Token-parallel (one thread a token): (psi, shift, gold_u, gold_b, repeat) with
    psi[t] = exp(e_t - shift[t]), shift[t] = max e_t, the gold path's unigram and transition
    terms of every token (0 without labels) and whether token t's bigram id list is token t-1's."""
    xp = rt.xp
    n, n_labels = int(u_offsets.size - 1), int(unigram.shape[1])
    psi, shift = xp.empty((n, n_labels)), xp.empty(n)
    gold_u, gold_b, repeat = xp.empty(n), xp.empty(n), xp.empty(n, xp.uint8)
    _emissions_into(rt, unigram, bigram, u_offsets, u_ids, b_offsets, b_ids, labels, psi, shift, gold_u, gold_b,
                    repeat)
    return psi, shift, gold_u, gold_b, repeat


def _emissions_into(rt: KernelRuntime, unigram: Any, bigram: Any, u_offsets: Any, u_ids: Any, b_offsets: Any,
                    b_ids: Any, labels: Any, psi: Any, shift: Any, gold_u: Any, gold_b: Any, repeat: Any) -> None:
    xp = rt.xp
    n, n_labels = int(u_offsets.size - 1), int(unigram.shape[1])
    has_labels = np.int32(labels.size > 0)
    labels = labels if labels.size else xp.zeros(1, xp.int32)
    launch(rt.function("crf", "crf_emissions"), blocks_for(n, BLOCK),
           (xp.ascontiguousarray(unigram), xp.ascontiguousarray(bigram), u_offsets, u_ids, b_offsets, b_ids, labels,
            has_labels, i64(n), i64(n_labels), psi, shift, gold_u, gold_b, repeat))


def forward_backward(rt: KernelRuntime, unigram: Any, bigram: Any, seq_offsets: Any, u_offsets: Any, u_ids: Any,
                     b_offsets: Any, b_ids: Any, labels: Any, exp_bigram: Any = None, order: Any = None
                     ) -> tuple[Any, Any, Any, Any, Any]:
    """(alpha, omega, marginals, log_z, gold_score) of every sequence; ``labels`` may be empty.
    Two launches: :func:`emissions` (psi into omega, the shifts into the normalisers' array),
    then the recursion, a group of lanes (Y <= 6) or a warp a sequence. ``exp_bigram``
    (= exp(bigram), shared with :func:`bigram_gradient`) and ``order`` (:func:`sequence_order`)
    are computed when not given; training passes both."""
    xp = rt.xp
    n, n_labels, n_seqs = int(u_offsets.size - 1), int(unigram.shape[1]), int(seq_offsets.size - 1)
    alpha, omega, marginals = (xp.empty((n, n_labels)) for _ in range(3))
    scale, gold_u, gold_b, repeat = xp.empty(n), xp.empty(n), xp.empty(n), xp.empty(n, xp.uint8)
    log_z, gold = xp.empty(n_seqs), xp.empty(n_seqs)
    _emissions_into(rt, unigram, bigram, u_offsets, u_ids, b_offsets, b_ids, labels, omega, scale, gold_u, gold_b,
                    repeat)
    exp_bigram = xp.exp(bigram) if exp_bigram is None else exp_bigram
    order = sequence_order(rt, seq_offsets) if order is None else order
    common = (exp_bigram, seq_offsets, order, i64(n_seqs), b_offsets, b_ids)
    if n_labels in GROUP_KERNELS:
        launch(rt.function("crf", GROUP_KERNELS[n_labels]), blocks_for(n_seqs * GROUP_LANES[n_labels], BLOCK),
               (*common, repeat, gold_u, gold_b, alpha, omega, marginals, scale, log_z, gold))
    else:
        scratch, use_shared, shared = _matrix_space(xp, n_seqs, n_labels)
        launch(rt.function("crf", "crf_forward_backward"), blocks_for(n_seqs, WARPS),
               (*common, gold_u, gold_b, i64(n_labels), alpha, omega, marginals, scale, log_z, gold, scratch,
                use_shared), shared_mem=shared)
    return alpha, omega, marginals, log_z, gold


def _reduce(rt: KernelRuntime, partial: Any, feature_chunks: Any, width: int, weights: Any, l2: float,
            out: Any) -> Any:
    """Each feature's chunk sums added in order (+ ``l2 · weights``), into ``out`` (features, width)."""
    xp = rt.xp
    n_features = int(feature_chunks.size - 1)
    if out is None:
        out = xp.empty((n_features, width))
    elif not out.flags.c_contiguous or out.size != n_features * width:
        raise ValueError(f"CRF gradient: out must be a contiguous array of {n_features * width} values")
    has_weights = np.int32(weights is not None)
    weights = xp.ascontiguousarray(weights) if weights is not None else xp.zeros(1)
    launch(rt.function("crf", "crf_reduce_chunks"), blocks_for(n_features * width, BLOCK),
           (partial, feature_chunks, i64(n_features), i64(width), weights, has_weights, np.float64(l2), out))
    return out.reshape(n_features, width)


def unigram_gradient(rt: KernelRuntime, marginals: Any, labels: Any, occ_tokens: Any, chunk_offsets: Any,
                     feature_chunks: Any, weights: Any = None, l2: float = 0.0, out: Any = None,
                     u_offsets: Any = None, u_ids: Any = None) -> Any:
    """Expected minus empirical counts of every unigram weight, (n_features, n_labels), plus
    ``l2 · weights`` when given, into ``out`` when given. The tokens' own lists (``u_offsets``,
    ``u_ids``) are not used: a scatter would need atomics, the transposed tables give a
    deterministic segmented reduction."""
    n_chunks, n_labels = int(chunk_offsets.size - 1), int(marginals.shape[1])
    partial = rt.xp.empty(max(n_chunks * n_labels, 1))
    launch(rt.function("crf", "crf_unigram_partials"), blocks_for(n_chunks * n_labels, BLOCK),
           (marginals, labels, occ_tokens, chunk_offsets, i64(n_chunks), i64(n_labels), partial))
    return _reduce(rt, partial, feature_chunks, n_labels, weights, l2, out)


def bigram_gradient(rt: KernelRuntime, bigram: Any, alpha: Any, omega: Any, labels: Any, b_offsets: Any, b_ids: Any,
                    occ_tokens: Any, chunk_offsets: Any, feature_chunks: Any, weights: Any = None, l2: float = 0.0,
                    out: Any = None, exp_bigram: Any = None) -> Any:
    """Expected minus empirical counts of every bigram weight, (n_features, n_labels, n_labels),
    plus ``l2 · weights`` when given, into ``out`` when given; ``exp_bigram`` = exp(bigram) when
    the caller has it (training: once an evaluation)."""
    xp = rt.xp
    n_chunks, n_labels = int(chunk_offsets.size - 1), int(alpha.shape[1])
    width = n_labels * n_labels
    partial = xp.empty(max(n_chunks * width, 1))
    launch(rt.function("crf", "crf_bigram_partials"), blocks_for(n_chunks * width, BLOCK),
           (xp.exp(bigram) if exp_bigram is None else exp_bigram, alpha, omega, labels, b_offsets, b_ids, occ_tokens,
            chunk_offsets, i64(n_chunks), i64(n_labels), partial))
    return _reduce(rt, partial, feature_chunks, width, weights, l2, out).reshape(-1, n_labels, n_labels)


def posterior_errors(rt: KernelRuntime, marginals: Any, labels: Any) -> int:
    """How many tokens' most probable label (the lowest of equals) is not ``labels``' (one CuPy
    reduction; the only host transfer is the count)."""
    return int((marginals.argmax(axis=1) != labels).sum()) if labels.size else 0


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
