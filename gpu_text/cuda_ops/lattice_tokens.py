"""Launch wrappers of ``cuda/lattice_tokens.cu``; the Numba twin is in ``cpu_fallback/lattice_tokens.py``.

:func:`lattice_encode` runs a lattice model's whole encoding after the normalizer (and the
pre-tokenizer's marks) with two host reads: the number of edges with the longest span, and the
number of ids."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch
from gpu_text.cuda_ops import lattice as lattice_ops
from gpu_text.cuda_ops import trie as trie_ops

# cuda/lattice_tokens.cu's finish modes: how a fallback character (a token that is no edge) becomes ids.
LOOKUP, MERGE, BYTE_FALLBACK = 0, 1, 2


def lattice_encode(rt: KernelRuntime, data: Any, offsets: Any, marks: Any, trie: tuple[Any, Any, Any, Any],
                   weights: Any, fallback_weight: float, max_edges_per_start: int, mode: int, finish: int,
                   unk_id: int, byte_ids: Any, lookup: tuple[Any, Any, Any, Any]) -> tuple[Any, Any, Any, Any]:
    """Ids (int32), their byte spans in ``data`` (int64 starts and ends) and each row's first id
    (int64, n_rows + 1) of the normalized rows ``data``/``offsets``, each row one span or, with
    ``marks`` (the pre-tokenizer's per-byte marks), one span per pre-token: the edges of ``trie``
    (its four arrays) weighted by ``weights``, the best path as ``lattice_viterbi`` solves it
    (``fallback_weight``, ``max_edges_per_start``, ``mode``), then each fallback character as
    ``finish`` says: :data:`LOOKUP` the piece of ``lookup`` it spells else its bytes' ids
    (``byte_ids``), :data:`MERGE` each run of them one ``unk_id``, :data:`BYTE_FALLBACK` its bytes' ids.
    A pre-token marked ``SYMBOL_MARK`` (a user symbol's, ``PreTokenizer.symbol_marks``) is one id,
    the piece of ``lookup`` it spells (its bytes' ids when none does).
    The rows tile ``data`` (``offsets[0] == 0``, ``offsets[-1] == data.size``), as the normalizer
    writes them, and ``marks`` is non-zero at every non-empty row's first byte.

    Launches: lattice_spans, trie_prefix_search, lattice_route, lattice_emit (and the long-span
    kernels when a span has ``LONG_BYTES`` bytes), lattice_id_counts, lattice_ids; array ops: one
    zero fill, the marks' span bounds, the token counts' scan."""
    xp = rt.xp
    n_rows, n_bytes = int(offsets.size) - 1, int(data.size)
    if n_bytes == 0:
        empty = xp.empty(0, xp.int64)
        return xp.empty(0, xp.int32), empty, empty.copy(), xp.zeros(n_rows + 1, xp.int64)
    by_rows = marks is None
    n_spans = n_rows if by_rows else n_bytes
    span_grid = blocks_for(n_rows + 1 if by_rows else n_bytes, BLOCK)
    long_bytes = max(int(lattice_ops.LONG_BYTES), 1)
    search_grid = capacity_grid = blocks_for(n_bytes, BLOCK)
    # Everything that starts at zero, in one fill: three look-back statuses, the spans' edge
    # offsets with the longest span right after them (read back together), the token offsets, the
    # flag of a user symbol's mark.
    sizes = (1 + span_grid, 1 + search_grid, 1 + capacity_grid, n_spans + 2, n_spans + 1, 1)
    zeros = xp.zeros(sum(sizes), xp.uint64)
    parts, at = [], 0
    for size in sizes:
        parts.append(zeros[at:at + size])
        at += size
    span_status, search_status, id_status = parts[:3]
    edge_tail, token_offsets, symbols = parts[3].view(xp.int64), parts[4].view(xp.int64), parts[5]
    span_edge_offsets = edge_tail[:n_spans + 1]
    # bounds, then scratch offsets; with marks, the spans past the packed ones are empty at the end
    fill = xp.empty if by_rows else (lambda n, dt: xp.full(n, n_bytes, dt))
    bounds_scratch = fill(2 * (n_spans + 1), xp.int64)
    bounds, scratch_offsets = bounds_scratch[:n_spans + 1], bounds_scratch[n_spans + 1:]
    launch(rt.function("lattice_tokens", "lattice_spans"), span_grid,
           (data if by_rows else marks, offsets, i64(n_rows), i64(n_bytes), i64(by_rows), i64(long_bytes), span_status,
            bounds, scratch_offsets, parts[3][n_spans + 1:], symbols))
    span_starts, span_ends = bounds[:-1], bounds[1:]
    trie_args = (*trie, np.int32(trie[0].size))
    capacity = trie_ops.MATCHES_PER_BYTE * n_bytes + trie_ops.MATCHES_SLACK  # as trie_prefix_search
    while True:
        edges = xp.empty(capacity, xp.int64), xp.empty(capacity, xp.int64), xp.empty(capacity, xp.int32)
        launch(rt.function("trie", "trie_prefix_search"), search_grid,
               (*trie_args, data, span_starts, span_ends, bounds, i64(n_spans), i64(n_bytes), search_status,
                i64(capacity), *edges, span_edge_offsets))
        n_edges, longest = (int(v) for v in to_host(edge_tail[n_spans:]))
        if n_edges <= capacity:
            break
        capacity, search_status = n_edges, xp.zeros(1 + search_grid, xp.uint64)
    scratch_size = (n_bytes + n_spans) if by_rows else (2 * n_bytes + 1 + n_bytes)
    # the tokens straight into arrays of n_bytes (each token holds a byte at least): no read of their count
    long_spans = longest >= long_bytes
    starts, ends, values = lattice_ops._solve_paths(rt, data, span_starts, span_ends, *(e[:n_edges] for e in edges),
                                                    span_edge_offsets, weights, fallback_weight, max_edges_per_start,
                                                    mode, scratch_offsets, scratch_size, long_spans, token_offsets,
                                                    n_bytes)
    kinds, id_offsets = xp.empty(n_bytes, xp.int32), xp.empty(n_bytes + 1, xp.int64)
    launch(rt.function("lattice_tokens", "lattice_id_counts"), capacity_grid,
           (data, token_offsets, i64(n_spans), starts, ends, values, i64(n_bytes), i64(finish), np.int32(unk_id),
            *(lookup + (np.int32(lookup[0].size),)), id_status, kinds, id_offsets, data if by_rows else marks, bounds,
            symbols))
    total = int(id_offsets[n_bytes])
    ids, id_starts, id_ends = xp.empty(total, xp.int32), xp.empty(total, xp.int64), xp.empty(total, xp.int64)
    row_offsets = xp.empty(n_rows + 1, xp.int64)
    launch(rt.function("lattice_tokens", "lattice_ids"), blocks_for(max(n_bytes, n_rows + 1), BLOCK),
           (data, token_offsets, i64(n_spans), starts, ends, kinds, id_offsets, byte_ids, offsets, i64(n_rows), bounds,
            i64(by_rows), ids, id_starts, id_ends, row_offsets))
    return ids, id_starts, id_ends, row_offsets
