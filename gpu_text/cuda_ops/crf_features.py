"""Launch wrappers of ``cuda/crf_features.cu``: CRF features from per-position value ids, and the
Viterbi over them; the Numba twins are ``cpu_fallback/crf_features.py``, whose docstring defines
the inputs and outputs. ``segment_viterbi`` is two launches here (the ids of every position, then
a warp per sequence), one fused pass on the CPU: the same labels and scores."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

ROW_WIDTH = 8
N_EDGES = 10
DENSE, HASHED = 1, 0
WARPS = BLOCK // 32


def _checked(seq_offsets: Any, values: Any, edges: Any, rows: Any, commands: Any, slots: Any, dense: Any) -> int:
    """The Numba twin's checks (a wrong shape or range would read out of bounds in a kernel)."""
    n = int(seq_offsets[-1]) if seq_offsets.size else 0
    if values.ndim != 2 or values.shape[1] != n or tuple(edges.shape) != (values.shape[0], N_EDGES):
        raise ValueError("crf_features: values must be (columns, positions) and edges (columns, 10)")
    if rows.ndim != 2 or rows.shape[1] != ROW_WIDTH or commands.ndim != 2 or commands.shape[1] != 3:
        raise ValueError(f"crf_features: rows must be (R, {ROW_WIDTH}) and commands (C, 3)")
    if slots.ndim != 2 or slots.shape[1] != 2:
        raise ValueError("crf_features: slots must be (S, 2)")
    rows_h, commands_h = to_host(rows).astype(np.int64), to_host(commands).astype(np.int64)
    if commands_h.size and (commands_h[:, 0].min() < 0 or commands_h[:, 0].max() >= values.shape[0]):
        raise ValueError("crf_features: a command reads a column that values lacks")
    if rows_h.size:
        bad = ((rows_h[:, 3] < 0) | (rows_h[:, 3] + rows_h[:, 4] > commands_h.shape[0]) | (rows_h[:, 6] < 0)
               | ((rows_h[:, 5] == DENSE) & ((rows_h[:, 4] != 1) | (rows_h[:, 6] + rows_h[:, 7] > dense.size)))
               | ((rows_h[:, 5] == HASHED) & ((rows_h[:, 7] < 1) | (rows_h[:, 7] > 62)
                                              | (rows_h[:, 6] + (np.int64(1) << np.clip(rows_h[:, 7], 0, 62))
                                                 > slots.shape[0]))))
        if bad.any():
            raise ValueError(f"crf_features: row {int(np.flatnonzero(bad)[0])} is out of range")
    return n


def feature_ids(rt: KernelRuntime, seq_offsets: Any, values: Any, edges: Any, rows: Any, commands: Any, slots: Any,
                dense: Any, n_values: int, n_namespaces: int) -> Any:
    """The feature id of every position and row, (n, R) int64, -1 for none."""
    xp = rt.xp
    n = _checked(seq_offsets, values, edges, rows, commands, slots, dense)
    n_rows = int(rows.shape[0])
    out = xp.empty((n, n_rows), xp.int64)
    launch(rt.function("crf_features", "crf_feature_ids"), blocks_for(n, BLOCK),
           (xp.ascontiguousarray(seq_offsets, xp.int64), i64(seq_offsets.size - 1),
            xp.ascontiguousarray(values, xp.int32), i64(n), xp.ascontiguousarray(edges, xp.int32),
            xp.ascontiguousarray(rows, xp.int64), i64(n_rows), xp.ascontiguousarray(commands, xp.int64),
            xp.ascontiguousarray(slots, xp.int64), xp.ascontiguousarray(dense, xp.int64), i64(n_values),
            i64(n_namespaces), out))
    return out


def segment_viterbi(rt: KernelRuntime, unigram: Any, bigram: Any, seq_offsets: Any, values: Any, edges: Any,
                    rows: Any, commands: Any, slots: Any, dense: Any, n_values: int,
                    n_namespaces: int) -> tuple[Any, Any]:
    """Best label of every position (int32) and best path score of every sequence."""
    xp = rt.xp
    kinds = to_host(rows[:, 0]) if rows.size else np.zeros(0, np.int64)
    n_u = int((kinds == 1).sum())
    if (kinds[:n_u] != 1).any() or (kinds[n_u:] != 2).any():
        raise ValueError("segment_viterbi: the unigram rows must come before the bigram rows")
    n_labels = int(unigram.shape[1])
    if n_labels < 1:
        raise ValueError("segment_viterbi: the model needs at least one label")
    ids = feature_ids(rt, seq_offsets, values, edges, rows, commands, slots, dense, n_values, n_namespaces)
    n, n_seqs = int(ids.shape[0]), int(seq_offsets.size - 1)
    delta = xp.empty(max(n * n_labels, 1))
    back = xp.empty(max(n * n_labels, 1), xp.int32)
    out = xp.empty(n, xp.int32)
    scores = xp.empty(n_seqs)
    launch(rt.function("crf_features", "crf_dense_viterbi"), blocks_for(n_seqs, WARPS),
           (xp.ascontiguousarray(unigram, xp.float64), xp.ascontiguousarray(bigram, xp.float64),
            xp.ascontiguousarray(seq_offsets, xp.int64), i64(n_seqs), ids, i64(ids.shape[1]), i64(n_u),
            i64(n_labels), delta, back, out, scores))
    return out, scores
