"""Launch wrappers of ``cuda/bpe.cu``; the Numba twins are in ``cpu_fallback/bpe.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

# Pre-tokens longer than this many bytes are merged by a whole block each (bpe_merge_long) rather
# than by one thread. Not tuned on a GPU yet; the tests lower it to run both paths on small inputs.
LONG_BYTES = 512
_LONG_ARRAYS = 10  # LONG_ARRAYS in cuda/bpe.cu


def bpe_encode(rt: KernelRuntime, data: Any, token_starts: Any, token_ends: Any, state: Any, check: Any, label: Any,
               eow: Any, scores: Any, byte_ids: Any, unk_id: int, tables: Any) -> tuple[Any, Any, Any, Any]:
    """Ids (int32) of every pre-token, each id's byte span in ``data``, and per-pre-token offsets.

    Short pre-tokens get a thread each (a heap of candidate pairs), long ones a block each (rounds
    over all parts at once); both merge symbol ids through the model's ``MergeTables``
    (``tables``) and give the ids of the CPU twin. The trie arrays (``state`` … ``eow``) are the
    reference twin's way to find pieces and are not needed here."""
    xp = rt.xp
    n = token_starts.size
    size = data.size
    t = {name: xp.asarray(getattr(tables, name)) for name in tables._fields}
    model = (t["char_keys"], t["char_ids"], i64(t["char_keys"].size), t["bmp_ids"], t["merge_keys"], t["merge_ids"],
             i64(t["merge_keys"].size), t["join_keys"], i64(t["join_keys"].size), np.int32(scores.size), scores,
             byte_ids, np.int32(unk_id))
    sym_len, sym_next, sym_prev, sym_id = (xp.empty(size, xp.int32) for _ in range(4))
    heap_score = xp.empty(3 * size, xp.float32)
    heap_left = xp.empty(3 * size, xp.int32)
    heap_size = xp.empty(3 * size, xp.int32)
    counts = xp.zeros(n, xp.int64)
    launch(rt.function("bpe", "bpe_merge"), blocks_for(n, BLOCK),
           (data, token_starts, token_ends, i64(n), *model, sym_len, sym_next, sym_prev, sym_id, heap_score,
            heap_left, heap_size, i64(LONG_BYTES), counts))
    del heap_score, heap_left, heap_size  # freed before the long pre-tokens' scratch and the output
    lengths = token_ends - token_starts
    long_tokens = xp.flatnonzero(lengths > LONG_BYTES).astype(xp.int64)
    if long_tokens.size:
        work_at = xp.zeros(long_tokens.size + 1, xp.int64)
        xp.cumsum(lengths[long_tokens], out=work_at[1:])
        work_size = int(work_at[-1])
        work = xp.empty(_LONG_ARRAYS * work_size, xp.int32)
        pair_score = xp.empty(work_size, xp.float32)
        launch(rt.function("bpe", "bpe_merge_long"), long_tokens.size,
               (data, token_starts, token_ends, long_tokens, work_at, i64(work_size), work, pair_score, *model,
                sym_len, sym_next, sym_prev, sym_id, counts))
        del work, pair_score  # freed before the output is allocated
    offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    ids = xp.empty(total, xp.int32)
    id_starts = xp.empty(total, xp.int64)
    id_ends = xp.empty(total, xp.int64)
    launch(rt.function("bpe", "bpe_emit"), blocks_for(n, BLOCK),
           (data, token_starts, token_ends, i64(n), *model, sym_len, sym_next, sym_id, offsets, i64(LONG_BYTES),
            ids, id_starts, id_ends))
    launch(rt.function("bpe", "bpe_emit_long"), long_tokens.size,
           (data, token_starts, token_ends, long_tokens, *model, sym_len, sym_next, sym_prev, sym_id, offsets, ids,
            id_starts, id_ends))
    return ids, id_starts, id_ends, offsets
