"""Launch wrappers of ``cuda/trie.cu``; the Numba twins are in ``cpu_fallback/trie.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch


def _trie_args(state: Any, check: Any, label: Any, eow: Any) -> tuple[Any, ...]:
    # The kernels take the array length as a C int: trie slots are int32 positions.
    return (state, check, label, eow, np.int32(state.size))


def trie_prefix_search(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, data: Any,
                       span_starts: Any, span_ends: Any) -> tuple[Any, Any, Any, Any]:
    """Every dictionary word at every character start of every span: edge starts and ends (int64
    positions in ``data``), values (int32) and each span's edge offsets (int64, n_spans + 1)."""
    xp = rt.xp
    n_spans = span_starts.size
    span_bytes = xp.zeros(n_spans + 1, xp.int64)
    xp.cumsum(span_ends - span_starts, out=span_bytes[1:])
    n_bytes = int(span_bytes[-1])
    n_blocks = blocks_for(n_bytes, BLOCK)
    block_counts = xp.zeros(n_blocks, xp.int64)
    common = (*_trie_args(state, check, label, eow), data, span_starts, span_ends, span_bytes,
              i64(n_spans), i64(n_bytes))
    launch(rt.function("trie", "trie_count_matches"), n_blocks, (*common, block_counts))
    block_offsets = xp.cumsum(block_counts) - block_counts
    total = int(block_counts.sum())
    edge_starts = xp.empty(total, xp.int64)
    edge_ends = xp.empty(total, xp.int64)
    edge_values = xp.empty(total, xp.int32)
    # The kernel writes the offsets of spans that start inside the bytes; the rest (empty spans at
    # the very end, and the final entry) are the total.
    span_edge_offsets = xp.full(n_spans + 1, total, xp.int64)
    launch(rt.function("trie", "trie_prefix_search"), n_blocks,
           (*common, block_offsets, edge_starts, edge_ends, edge_values, span_edge_offsets))
    return edge_starts, edge_ends, edge_values, span_edge_offsets


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
