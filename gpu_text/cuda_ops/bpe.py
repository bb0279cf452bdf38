"""Launch wrappers of ``cuda/bpe.cu``; the Numba twins are in ``cpu_fallback/bpe.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.backend import KernelRuntime
from gpu_text.cuda_ops import BLOCK, blocks_for, i64, launch

# Pre-tokens longer than this many bytes are merged by a whole block each (bpe_merge_long) rather
# than by one thread. Not tuned on a GPU yet; the tests lower it to run both paths on small inputs.
LONG_BYTES = 512
_LONG_ARRAYS = 10  # LONG_ARRAYS in cuda/bpe.cu


def bpe_encode(rt: KernelRuntime, data: Any, token_starts: Any, token_ends: Any, state: Any, check: Any, label: Any,
               eow: Any, scores: Any, byte_ids: Any, unk_id: int, tables: Any) -> tuple[Any, Any, Any, Any]:
    """Ids (int32) of every pre-token, each id's byte span in ``data``, and per-pre-token offsets.

    Short pre-tokens get a thread each, which merges with a heap and trie lookups; long ones a
    block each, which merges in rounds with the model's ``MergeTables`` (``tables``). Both give
    the ids of the CPU twin."""
    xp = rt.xp
    n = token_starts.size
    size = data.size
    sym_len = xp.empty(size, xp.int32)
    sym_next = xp.empty(size, xp.int32)
    sym_prev = xp.empty(size, xp.int32)
    heap_score = xp.empty(3 * size, xp.float32)
    heap_left = xp.empty(3 * size, xp.int32)
    heap_size = xp.empty(3 * size, xp.int32)
    counts = xp.zeros(n, xp.int64)
    trie = (state, check, label, eow, np.int32(state.size))
    launch(rt.function("bpe", "bpe_merge"), blocks_for(n, BLOCK),
           (data, token_starts, token_ends, i64(n), *trie, scores, byte_ids, np.int32(unk_id), sym_len, sym_next,
            sym_prev, heap_score, heap_left, heap_size, i64(LONG_BYTES), counts))
    lengths = token_ends - token_starts
    long_tokens = xp.flatnonzero(lengths > LONG_BYTES).astype(xp.int64)
    if long_tokens.size:
        work_at = xp.zeros(long_tokens.size + 1, xp.int64)
        xp.cumsum(lengths[long_tokens], out=work_at[1:])
        work_size = int(work_at[-1])
        work = xp.empty(_LONG_ARRAYS * work_size, xp.int32)
        pair_score = xp.empty(work_size, xp.float32)
        char_keys, char_ids, merge_keys, merge_ids, join_keys = (xp.asarray(a) for a in (
            tables.char_keys, tables.char_ids, tables.merge_keys, tables.merge_ids, tables.join_keys))
        launch(rt.function("bpe", "bpe_merge_long"), long_tokens.size,
               (data, token_starts, token_ends, long_tokens, work_at, i64(work_size), work, pair_score,
                char_keys, char_ids, i64(char_keys.size), merge_keys, merge_ids, i64(merge_keys.size), join_keys,
                i64(join_keys.size), *trie, scores, byte_ids, np.int32(unk_id), sym_len, sym_next, sym_prev, counts))
        del work, pair_score  # freed before the output is allocated
    offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    ids = xp.empty(total, xp.int32)
    id_starts = xp.empty(total, xp.int64)
    id_ends = xp.empty(total, xp.int64)
    launch(rt.function("bpe", "bpe_emit"), blocks_for(n, BLOCK),
           (data, token_starts, token_ends, i64(n), *trie, byte_ids, np.int32(unk_id), sym_len, sym_next, offsets,
            i64(LONG_BYTES), ids, id_starts, id_ends))
    launch(rt.function("bpe", "bpe_emit_long"), long_tokens.size,
           (data, token_starts, token_ends, long_tokens, *trie, byte_ids, np.int32(unk_id), sym_len, sym_next,
            sym_prev, offsets, ids, id_starts, id_ends))
    return ids, id_starts, id_ends, offsets
