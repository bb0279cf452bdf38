"""Launch wrappers of ``cuda/normalizer.cu``; the Numba twin is in ``cpu_fallback/normalizer.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch
from gpu_text.ragged import row_ids

# Bytes per thread of the chunked walk; must equal NORMALIZE_CHUNK in cuda/normalizer.cu.
CHUNK = 256


def _walk(rt: KernelRuntime, step_args: tuple, n_rows: int, n_bytes: int, symbol: Any,
          flags: tuple[np.int32, np.int32], counts: Any, drops: Any, row_last: Any, order: Any, status: Any) -> None:
    """The steps every string takes and what each emits (``counts``, ``drops``, ``row_last``),
    chunk-parallel: speculative walks per chunk landed and joined, the strings whose walks did not
    meet redone exactly (one launch, its tiles in order by ``order``: ``1 + 2 blocks_for(chunks)``
    words), then the emission with the space state carried across chunks by a look-back
    (``status``: ``1 + blocks_for(chunks)`` words) (``cuda/normalizer.cu``; both zeroed)."""
    xp = rt.xp
    n_chunks = -(-n_bytes // CHUNK)
    grid = blocks_for(n_chunks, BLOCK)
    # per chunk: land, exits, entries and the space state it leaves
    land, exits, entries, states = xp.empty((4, n_chunks), xp.int64)
    first_marked = xp.empty(n_rows, xp.int64)
    sizes = (i64(n_bytes), i64(n_chunks))
    launch(rt.function("normalizer", "normalize_chunk_land_join"), grid,
           (*step_args, *sizes, flags[0], order, land, exits, entries, states, first_marked))
    launch(rt.function("normalizer", "normalize_chunk_emit"), grid,
           (*step_args, *sizes, symbol, np.int32(symbol.size), *flags, entries, states, status, counts, drops,
            row_last))


def normalize_text(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, targets: Any,
                   target_offsets: Any, data: Any, offsets: Any, symbol: Any, collapse: int,
                   dummy: int, aligned: int = 1) -> tuple[Any, Any, Any]:
    """Normalized bytes (uint8), their row offsets (int64, n + 1) and, when ``aligned``, the
    alignment (int64: per string, the original offset of every normalized byte and then the
    string's original length; None otherwise).

    One host read: the output size (with a flag saying whether the trailing symbols could be
    stripped on the counts, which holds unless the symbol or a target is not whole characters;
    then the written rows are trimmed and packed, two reads more)."""
    xp = rt.xp
    n_rows, n_bytes = offsets.size - 1, data.size
    flags = (np.int32(bool(collapse)), np.int32(bool(dummy)))
    steps = xp.empty(n_bytes, xp.int32)
    sources = xp.empty(n_bytes, xp.int32)
    row_last = xp.empty(n_rows, xp.int64)
    n_slots = n_bytes + n_rows
    counts = xp.empty(n_slots, xp.int64)
    drops = xp.empty(n_bytes, xp.int32)
    walk_tiles, slot_tiles = blocks_for(-(-n_bytes // CHUNK), BLOCK), max(blocks_for(n_slots, BLOCK), 1)
    # the slot offsets, then what normalize_match zeroes: the straddle flag (read with the total),
    # the land-join tiles' order, the emission's and normalize_slots' look-back status
    words = xp.empty(n_slots + 5 + 3 * walk_tiles + slot_tiles, xp.int64)
    slot_offsets, zeroed = words[:n_slots + 2], words[n_slots + 1:].view(xp.uint64)
    order, emit_status = zeroed[1:2 + 2 * walk_tiles], zeroed[2 + 2 * walk_tiles:3 + 3 * walk_tiles]
    status = zeroed[3 + 3 * walk_tiles:]
    launch(rt.function("normalizer", "normalize_match"), blocks_for(max(n_bytes, n_rows + 1, zeroed.size), BLOCK),
           (state, check, label, eow, np.int32(state.size), data, offsets, i64(n_rows), i64(n_bytes), steps, sources,
            row_last, counts, drops, zeroed, i64(zeroed.size)))
    step_args = (steps, sources, targets, target_offsets, data, offsets, i64(n_rows))
    _walk(rt, step_args, n_rows, n_bytes, symbol, flags, counts, drops, row_last, order, emit_status)
    launch(rt.function("normalizer", "normalize_slots"), slot_tiles,
           (*step_args, i64(n_bytes), symbol, np.int32(symbol.size), flags[0], drops, row_last, counts, status,
            slot_offsets))
    total, flagged = (int(v) for v in to_host(slot_offsets[-2:]))
    out = xp.empty(total, xp.uint8)
    write = rt.function("normalizer", "normalize_write")
    write_args = (*step_args, i64(n_bytes), symbol, np.int32(symbol.size), counts, slot_offsets, drops)
    if not flagged:
        new_offsets = xp.empty(n_rows + 1, xp.int64)
        alignment = xp.empty(total + n_rows if aligned else 1, xp.int64)
        launch(write, blocks_for(max(n_bytes, n_rows + 1), BLOCK),
               (*write_args, np.int32(1), np.int32(bool(aligned)), out, alignment, new_offsets))
        return out, new_offsets, (alignment if aligned else None)
    align = xp.empty(total, xp.int64)
    launch(write, blocks_for(n_bytes, BLOCK), (*write_args, np.int32(0), np.int32(1), out, align, slot_offsets))
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
