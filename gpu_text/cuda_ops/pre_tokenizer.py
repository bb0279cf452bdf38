"""Launch wrappers of ``cuda/pre_tokenizer.cu``; the Numba twin is in ``cpu_fallback/pre_tokenizer.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch


def pretokenize(rt: KernelRuntime, data: Any, offsets: Any, dfa: Any) -> tuple[Any, Any]:
    """Pre-token starts (int64 positions in ``data``, ascending) and the symbol of each one's first
    character (uint8), for the compiled split ``dfa`` (a ``PreTokenDFA``)."""
    xp = rt.xp
    n_bytes = int(data.size)
    space = np.uint32(dfa.space)
    cuts = xp.empty(n_bytes, xp.uint8)
    launch(rt.function("pre_tokenizer", "pretokenize_cuts"), blocks_for(n_bytes, BLOCK),
           (data, offsets, i64(offsets.size - 1), i64(n_bytes), xp.asarray(dfa.joinable.ravel()), space, cuts))
    seg_starts = xp.flatnonzero(cuts).astype(xp.int64)
    # strings are adjacent and each non-empty one starts with a cut, so a piece ends at the next cut
    seg_ends = xp.empty_like(seg_starts)
    seg_ends[:-1] = seg_starts[1:]
    seg_ends[-1:] = n_bytes
    marks = xp.zeros(n_bytes, xp.uint8)
    launch(rt.function("pre_tokenizer", "pretokenize_scan"), blocks_for(int(seg_starts.size), BLOCK),
           (data, seg_starts, seg_ends, i64(seg_starts.size), xp.asarray(dfa.table.ravel()),
            xp.asarray(dfa.accepting), space, marks))
    starts = xp.flatnonzero(marks).astype(xp.int64)
    return starts, (marks[starts] - 1).astype(xp.uint8)
