"""Launch wrappers of ``cuda/bpe.cu``; the Numba twins are in ``cpu_fallback/bpe.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

# Pre-tokens longer than this many bytes are merged by a whole block each (bpe_merge_long) rather
# than by a warp or a thread; at most WARP_MAX_BYTES (longer ones have no other path). Not tuned on
# a GPU yet; the tests lower it to run both paths on small inputs.
LONG_BYTES = 512
_LONG_ARRAYS = 6  # LONG_ARRAYS in cuda/bpe.cu
# Pre-tokens longer than this many bytes and at most LONG_BYTES are merged by a warp each
# (bpe_merge_warp), shorter ones by a thread (bpe_merge, its state in local arrays of
# THREAD_MAX_BYTES entries, so at most that). Not tuned on a GPU yet; the tests move it.
WARP_BYTES = 48
THREAD_MAX_BYTES = 48  # THREAD_MAX_BYTES in cuda/bpe.cu
WARP_MAX_BYTES = 512  # WARP_MAX_BYTES in cuda/bpe.cu
WARP_BLOCK = 128  # WARP_BLOCK in cuda/bpe.cu: four warps, each with its pre-token's symbols in shared memory
# Blocks of the grid-stride launches over long and medium pre-tokens (the host does not know how
# many there are).
LONG_GRID = 256
WARP_GRID = 1024


def _model(rt: KernelRuntime, scores: Any, byte_ids: Any, unk_id: int, tables: Any) -> tuple:
    """The model's run of kernel arguments (``GT_MODEL_PARAMS``); ``tables`` may already be on the
    device (the model keeps them there), when ``xp.asarray`` copies nothing."""
    xp = rt.xp
    t = {name: xp.asarray(getattr(tables, name)) for name in tables._fields}
    return (t["char_keys"], t["char_ids"], i64(t["char_keys"].size), t["bmp_ids"], t["merge_keys"], t["merge_ids"],
            i64(t["merge_keys"].size), t["join_keys"], i64(t["join_keys"].size), np.int32(scores.size), scores,
            byte_ids, np.int32(unk_id))


def _merge_and_emit(rt: KernelRuntime, data: Any, token_starts: Any, token_ends: Any, n_tokens: int, found: tuple,
                    model: tuple, n_long: Any, rows: Any = None, symbol_at: Any = None
                    ) -> tuple[Any, Any, Any, Any, Any]:
    """Merges (a thread per short pre-token, a warp per medium one, a block per long one) and
    emits the pre-tokens ``[token_starts[k], token_ends[k])``: at most ``n_tokens`` of them;
    ``found`` = (device count, 1) when the device holds their number, else (any array, 0).
    ``n_long`` (two uint64: the long and the medium pre-tokens' counts) is zeroed. ``rows``: the
    texts' byte offsets, to give the first id of every row too (the pre-tokens ascend). ``symbol_at``: per byte, non-zero where a pre-token is a user symbol (its piece id << 8
    | its length, ``pretokenize_symbol_marks``), which gives that one id. One host read: the number
    of ids. Returns ids, their spans, the per-pre-token offsets and the row offsets (or None)."""
    xp = rt.xp
    symbols = (xp.empty(1, xp.int32), np.int32(0)) if symbol_at is None else (symbol_at, np.int32(1))
    size = data.size
    # the paths' limits as the kernels apply them (merge_path in cuda/bpe.cu)
    long_bytes = min(LONG_BYTES, WARP_MAX_BYTES)
    warp_bytes = min(WARP_BYTES, THREAD_MAX_BYTES, long_bytes)
    # bounds on the long and medium pre-tokens: each has more than long_bytes (warp_bytes) bytes
    most_long = min(n_tokens, size // (long_bytes + 1))
    most_medium = min(n_tokens, size // (warp_bytes + 1)) if warp_bytes < long_bytes else 0
    # every pre-token's final symbols at its byte positions (the short ones' merge state is local
    # to their threads, the medium ones' in shared memory); the long ones' scratch (LONG_ARRAYS
    # arrays and pair scores at their byte positions, four more arrays in the symbol arrays) only
    # when there may be one: 44 bytes per byte in all (the symbols' 16 and 28), 60 before
    sym_len, sym_next, sym_prev, sym_id = (xp.empty(size, xp.int32) for _ in range(4))
    scratch = xp.empty((_LONG_ARRAYS + 1) * size if most_long else 1, xp.int32)
    long_list = xp.empty(max(most_long, 1), xp.int64)
    medium_list = xp.empty(max(most_medium, 1), xp.int64)
    counts = xp.empty(max(n_tokens, 1), xp.int64)
    offsets = xp.empty(n_tokens + 1, xp.int64)
    launch(rt.function("bpe", "bpe_merge"), blocks_for(max(n_tokens, 1), BLOCK),
           (data, token_starts, token_ends, i64(n_tokens), *found, *model, sym_len, sym_next, sym_id,
            i64(long_bytes), counts, n_long, long_list, offsets, i64(warp_bytes), medium_list, *symbols))
    warp_grid = min(WARP_GRID, blocks_for(most_medium, WARP_BLOCK // 32))
    if warp_grid:
        rt.function("bpe", "bpe_merge_warp")((warp_grid, 1, 1), (WARP_BLOCK, 1, 1), (
            data, token_starts, token_ends, medium_list, n_long[1:], *model, sym_len, sym_next, sym_prev, sym_id,
            counts))
    long_grid = min(LONG_GRID, most_long)
    launch(rt.function("bpe", "bpe_merge_long"), long_grid,
           (data, token_starts, token_ends, long_list, n_long, i64(size), scratch[:_LONG_ARRAYS * size],
            scratch[_LONG_ARRAYS * size:].view(xp.float32), *model, sym_len, sym_next, sym_prev, sym_id, counts))
    del scratch  # freed before the output is allocated
    if n_tokens:
        xp.cumsum(counts[:n_tokens], out=offsets[1:])
    total = int(offsets[-1])
    ids = xp.empty(total, xp.int32)
    id_starts = xp.empty(total, xp.int64)
    id_ends = xp.empty(total, xp.int64)
    n_rows = -1 if rows is None else rows.size - 1
    row_offsets = offsets if rows is None else xp.empty(n_rows + 1, xp.int64)
    short_blocks = blocks_for(max(n_tokens, n_rows + 1), BLOCK)  # then long_grid blocks for the long ones
    launch(rt.function("bpe", "bpe_emit"), short_blocks + long_grid,
           (data, token_starts, token_ends, i64(n_tokens), *found, *model, sym_len, sym_next, sym_id, offsets,
            i64(long_bytes), ids, id_starts, id_ends, offsets if rows is None else rows, i64(n_rows), row_offsets,
            i64(short_blocks), long_list, n_long, sym_prev, *symbols))
    return ids, id_starts, id_ends, offsets, None if rows is None else row_offsets


def bpe_encode(rt: KernelRuntime, data: Any, token_starts: Any, token_ends: Any, state: Any, check: Any, label: Any,
               eow: Any, scores: Any, byte_ids: Any, unk_id: int, tables: Any) -> tuple[Any, Any, Any, Any]:
    """Ids (int32) of every pre-token, each id's byte span in ``data``, and per-pre-token offsets.

    Short pre-tokens (at most ``WARP_BYTES``, at most ``THREAD_MAX_BYTES``) get a thread each (its
    symbols in local arrays, the best pair by a scan), medium ones (at most ``LONG_BYTES``, at most
    ``WARP_MAX_BYTES``) a warp each (the best pair by a warp max-reduce), long ones a block each
    (rounds over all parts at once); all merge symbol ids through the
    model's ``MergeTables`` (``tables``) and give the ids of the CPU twin. The trie arrays
    (``state`` … ``eow``) are the reference twin's way to find pieces and are not needed here. One
    host read (the number of ids)."""
    xp = rt.xp
    n = token_starts.size
    n_long = xp.zeros(2, xp.uint64)
    ids, id_starts, id_ends, offsets, _ = _merge_and_emit(rt, data, token_starts, token_ends, n,
                                                          (token_starts, np.int32(0)),
                                                          _model(rt, scores, byte_ids, unk_id, tables), n_long)
    return ids, id_starts, id_ends, offsets


def bpe_encode_rows(rt: KernelRuntime, data: Any, offsets: Any, marks: Any, state: Any, check: Any, label: Any,
                    eow: Any, scores: Any, byte_ids: Any, unk_id: int, tables: Any, symbol_at: Any = None
                    ) -> tuple[Any, Any, Any, Any]:
    """Ids (int32) of the texts ``data[offsets[r]:offsets[r + 1]]`` cut into pre-tokens where
    ``marks`` (one per byte, ``pretokenize_marks``) is non-zero, each id's byte span in ``data``,
    and the ids' row offsets (int64, one per text and the end). ``symbol_at`` (with
    ``pretokenize_symbol_marks``' marks): a pre-token starting where it is non-zero is a user
    symbol, the one id ``symbol_at[start] >> 8``.

    The pre-tokens are found on the device (packed by ``bpe_pre_tokens``' look-back scan) and their
    number stays there (the grids are sized by the byte count, which bounds it): one host read, the
    number of ids."""
    xp = rt.xp
    n_bytes = int(data.size)
    token_starts = xp.empty(n_bytes, xp.int64)
    token_ends = xp.empty(n_bytes, xp.int64)
    grid = blocks_for(n_bytes + 1, BLOCK)
    # one zero fill: the look-back status, the long and medium pre-tokens' counts
    zeroed = xp.zeros(1 + grid + 2, xp.uint64)
    status, n_long = zeroed[:1 + grid], zeroed[1 + grid:]
    count = xp.empty(1, xp.int64)
    launch(rt.function("bpe", "bpe_pre_tokens"), grid, (marks, i64(n_bytes), status, token_starts, token_ends, count))
    ids, id_starts, id_ends, _, row_offsets = _merge_and_emit(
        rt, data, token_starts, token_ends, n_bytes, (count, np.int32(1)), _model(rt, scores, byte_ids, unk_id, tables),
        n_long, offsets, symbol_at)
    return ids, id_starts, id_ends, row_offsets
