"""Launch wrappers of ``cuda/bpe.cu``; the Numba twins are in ``cpu_fallback/bpe.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.backend import KernelRuntime
from gpu_text.cuda_ops import BLOCK, blocks_for, i64, launch


def bpe_encode(rt: KernelRuntime, data: Any, token_starts: Any, token_ends: Any, state: Any, check: Any, label: Any,
               eow: Any, scores: Any, byte_ids: Any, unk_id: int, tables: Any) -> tuple[Any, Any, Any, Any]:
    """Ids (int32) of every pre-token, each id's byte span in ``data``, and per-pre-token offsets.

    ``tables`` (the model's ``MergeTables``) are what the CPU twin merges with; here one thread
    merges each pre-token whole by walking the trie, which gives the same ids."""
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
            sym_prev, heap_score, heap_left, heap_size, counts))
    offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    ids = xp.empty(total, xp.int32)
    id_starts = xp.empty(total, xp.int64)
    id_ends = xp.empty(total, xp.int64)
    launch(rt.function("bpe", "bpe_emit"), blocks_for(n, BLOCK),
           (data, token_starts, token_ends, i64(n), *trie, byte_ids, np.int32(unk_id), sym_len, sym_next, offsets,
            ids, id_starts, id_ends))
    return ids, id_starts, id_ends, offsets
