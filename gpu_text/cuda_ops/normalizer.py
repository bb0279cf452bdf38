"""Launch wrappers of ``cuda/normalizer.cu``; the Numba twin is in ``cpu_fallback/normalizer.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch
from gpu_text.ragged import row_ids

# Bytes per thread of the chunked walk; must equal NORMALIZE_CHUNK in cuda/normalizer.cu.
CHUNK = 256


def _walk(rt: KernelRuntime, step_args: tuple, n_rows: int, n_bytes: int, symbol_length: np.int32,
          flags: tuple[np.int32, np.int32], counts: Any, drops: Any) -> None:
    """The steps every string takes and what each emits (``counts``, ``drops``), chunk-parallel:
    speculative walks per chunk, joined, the strings whose walks did not meet redone exactly,
    then the emission with the space state carried across chunks (``cuda/normalizer.cu``)."""
    xp = rt.xp
    n_chunks = -(-n_bytes // CHUNK)
    grid = blocks_for(n_chunks, BLOCK)
    # per chunk: land, exits, entries, states, whether it sets a state and how many up to it do
    land, exits, entries, states, sets, set_count = xp.empty((6, n_chunks), xp.int64)
    first_marked = xp.empty(n_rows, xp.int64)
    steps, _, _, _, _, offsets, rows = step_args
    sizes = (i64(n_bytes), i64(n_chunks))
    launch(rt.function("normalizer", "normalize_chunk_land"), grid, (steps, offsets, rows, *sizes, land, first_marked))
    launch(rt.function("normalizer", "normalize_chunk_join"), grid,
           (*step_args, *sizes, flags[0], land, exits, entries, states, sets, first_marked))
    launch(rt.function("normalizer", "normalize_chunk_resolve"), blocks_for(n_rows, BLOCK),
           (*step_args, i64(n_bytes), flags[0], land, exits, entries, states, sets, first_marked))
    xp.cumsum(sets, out=set_count)
    launch(rt.function("normalizer", "normalize_chunk_emit"), grid,
           (*step_args, *sizes, symbol_length, *flags, entries, states, set_count, counts, drops))


def normalize_text(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, targets: Any,
                   target_offsets: Any, data: Any, offsets: Any, symbol: Any, collapse: int,
                   dummy: int, aligned: int = 1) -> tuple[Any, Any, Any]:
    """Normalized bytes (uint8), their row offsets (int64, n + 1) and, when ``aligned``, the
    alignment (int64: per string, the original offset of every normalized byte and then the
    string's original length; None otherwise)."""
    xp = rt.xp
    n_rows, n_bytes = offsets.size - 1, data.size
    flags = (np.int32(bool(collapse)), np.int32(bool(dummy)))
    steps = xp.empty(n_bytes, xp.int32)
    sources = xp.empty(n_bytes, xp.int32)
    launch(rt.function("normalizer", "normalize_match"), blocks_for(n_bytes, BLOCK),
           (state, check, label, eow, np.int32(state.size), data, offsets, i64(n_rows), i64(n_bytes), steps, sources))
    counts = xp.zeros(n_bytes + n_rows, xp.int64)
    drops = xp.zeros(n_bytes, xp.int32)
    step_args = (steps, sources, targets, target_offsets, data, offsets, i64(n_rows))
    _walk(rt, step_args, n_rows, n_bytes, np.int32(symbol.size), flags, counts, drops)
    slot_offsets = xp.zeros(counts.size + 1, xp.int64)
    xp.cumsum(counts, out=slot_offsets[1:])
    total = int(slot_offsets[-1])
    out = xp.empty(total, xp.uint8)
    align = xp.empty(total, xp.int64)
    launch(rt.function("normalizer", "normalize_write"), blocks_for(n_bytes, BLOCK),
           (*step_args, i64(n_bytes), symbol, np.int32(symbol.size), counts, slot_offsets, drops, out, align))
    lengths = xp.empty(n_rows, xp.int64)
    launch(rt.function("normalizer", "normalize_trim"), blocks_for(n_rows, BLOCK),
           (out, slot_offsets, offsets, i64(n_rows), symbol, np.int32(symbol.size), flags[0], lengths))
    # Pack the trimmed rows, and give every row of the alignment its end entry (the original length).
    rows = xp.arange(n_rows + 1, dtype=xp.int64)
    row_starts = slot_offsets[offsets + rows]
    row_of = row_ids(row_starts)
    keep = (xp.arange(total, dtype=xp.int64) - row_starts[row_of]) < lengths[row_of]
    new_offsets = xp.zeros(n_rows + 1, xp.int64)
    xp.cumsum(lengths, out=new_offsets[1:])
    if not aligned:
        return out[keep], new_offsets, None
    kept = int(new_offsets[-1])
    alignment = xp.empty(kept + n_rows, xp.int64)
    alignment[xp.arange(kept, dtype=xp.int64) + row_of[keep]] = align[keep]
    alignment[new_offsets[1:] + rows[:-1]] = offsets[1:] - offsets[:-1]
    return out[keep], new_offsets, alignment
