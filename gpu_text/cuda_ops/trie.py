"""Launch wrappers of ``cuda/trie.cu``; the Numba twins are in ``cpu_fallback/trie.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch


def _trie_args(state: Any, check: Any, label: Any, eow: Any) -> tuple[Any, ...]:
    # The kernels take the array length as a C int: trie slots are int32 positions.
    return (state, check, label, eow, np.int32(state.size))


# Room for this many matches per byte of the spans (plus a constant) in the first launch of the
# one-pass prefix search; a batch with more is searched again with room for its exact total.
MATCHES_PER_BYTE = 2
MATCHES_SLACK = 4096


def trie_prefix_search(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, data: Any,
                       span_starts: Any, span_ends: Any) -> tuple[Any, Any, Any, Any]:
    """Every dictionary word at every character start of every span: edge starts and ends (int64
    positions in ``data``), values (int32) and each span's edge offsets (int64, n_spans + 1).
    One kernel (two when the matches outnumber ``MATCHES_PER_BYTE`` per byte); two reads (the
    bytes, the total)."""
    xp = rt.xp
    n_spans = span_starts.size
    span_bytes = xp.zeros(n_spans + 1, xp.int64)
    xp.cumsum(span_ends - span_starts, out=span_bytes[1:])
    n_bytes = int(span_bytes[-1])
    if n_bytes == 0:
        empty = xp.empty(0, xp.int64)
        return empty, empty.copy(), xp.empty(0, xp.int32), xp.zeros(n_spans + 1, xp.int64)
    n_blocks = blocks_for(n_bytes, BLOCK)
    capacity = MATCHES_PER_BYTE * n_bytes + MATCHES_SLACK
    while True:
        status = xp.zeros(n_blocks + 1, xp.uint64)
        edge_starts = xp.empty(capacity, xp.int64)
        edge_ends = xp.empty(capacity, xp.int64)
        edge_values = xp.empty(capacity, xp.int32)
        span_edge_offsets = xp.empty(n_spans + 1, xp.int64)
        launch(rt.function("trie", "trie_prefix_search"), n_blocks,
               (*_trie_args(state, check, label, eow), data, span_starts, span_ends, span_bytes, i64(n_spans),
                i64(n_bytes), status, i64(capacity), edge_starts, edge_ends, edge_values, span_edge_offsets))
        total = int(span_edge_offsets[-1])
        if total <= capacity:
            return edge_starts[:total], edge_ends[:total], edge_values[:total], span_edge_offsets
        capacity = total


def trie_lookup(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, data: Any, offsets: Any) -> Any:
    """The value (int32) of every string of a ragged batch, -1 when it is not a word."""
    xp = rt.xp
    n = offsets.size - 1
    values = xp.empty(n, xp.int32)
    launch(rt.function("trie", "trie_lookup"), blocks_for(n, BLOCK),
           (*_trie_args(state, check, label, eow), data, offsets, i64(n), values))
    return values


def trie_longest_prefix(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, data: Any,
                        offsets: Any) -> tuple[Any, Any]:
    """Per string, the byte length (int64) and value (int32) of its longest prefix word (0, -1 if none)."""
    xp = rt.xp
    n = offsets.size - 1
    lengths = xp.empty(n, xp.int64)
    values = xp.empty(n, xp.int32)
    launch(rt.function("trie", "trie_longest_prefix"), blocks_for(n, BLOCK),
           (*_trie_args(state, check, label, eow), data, offsets, i64(n), lengths, values))
    return lengths, values
