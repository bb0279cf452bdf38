"""Launch wrappers of ``cuda/word2vec.cu``; the Numba twins are in ``cpu_fallback/word2vec.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

WARPS = BLOCK // 32
# Positions one w2v_train launch covers at most: millions of words per launch, and a launch
# short enough that a non-finite check between launches stops a diverging run early.
WORDS_PER_LAUNCH = 1 << 24
# neu1 and neu1e of every warp of a block must fit in the default dynamic shared memory.
SHARED_LIMIT = 48 * 1024
MAX_DIM = SHARED_LIMIT // (WARPS * 2 * 4)


def subsample(rt: KernelRuntime, ids: Any, sample_int: Any, key: int) -> Any:
    """uint8 keep flag of every position (gensim's ``sample_int >= random32``)."""
    xp = rt.xp
    keep = xp.empty(ids.size, xp.uint8)
    launch(rt.function("word2vec", "w2v_subsample"), blocks_for(ids.size, BLOCK),
           (ids, i64(ids.size), sample_int, np.uint64(key), keep))
    return keep


def train_epoch(rt: KernelRuntime, ids: Any, row_offsets: Any, syn0: Any, syn1: Any, syn1neg: Any, codes: Any,
                points: Any, code_offsets: Any, cum_table: Any, sg: int, hs: int, negative: int, window: int,
                cbow_mean: int, alpha_start: float, alpha_end: float, key: int, unit_words: int,
                compute_loss: int, sigmoid_table: int = 0) -> Any:
    """Trains one epoch in place (Hogwild); returns the loss of every unit of ``unit_words`` positions.
    ``sigmoid_table``: 1 for gensim's tabulated logistic function instead of the exact one."""
    xp = rt.xp
    dim = int(syn0.shape[1])
    if dim > MAX_DIM:
        raise ValueError(f"vector_size {dim} is more than the CUDA kernel's shared memory holds ({MAX_DIM})")
    n_words, n_rows = int(ids.size), int(row_offsets.size - 1)
    n_units = blocks_for(n_words, unit_words)
    loss = xp.zeros(n_units, xp.float64)
    kernel = rt.function("word2vec", "w2v_train")
    per_launch = max(1, WORDS_PER_LAUNCH // unit_words)
    for begin in range(0, n_units, per_launch):
        end = min(n_units, begin + per_launch)
        launch(kernel, blocks_for(end - begin, WARPS),
               (ids, row_offsets, i64(n_rows), i64(n_words), i64(unit_words), i64(begin), i64(end), syn0, syn1,
                syn1neg, codes, points, code_offsets, cum_table, i64(cum_table.size), np.int32(sg), np.int32(hs),
                np.int32(negative), np.int32(window), np.int32(cbow_mean), np.int32(dim), np.float64(alpha_start),
                np.float64(alpha_end), np.uint64(key), np.int32(compute_loss), np.int32(sigmoid_table),
                loss[begin:end]),
               shared_mem=WARPS * 2 * dim * 4)
    return loss


# A warp per unit: units this short give a GPU tens of thousands of warps on a corpus of millions.
GPU_UNIT_WORDS = 64


def unit_words(rt: KernelRuntime, batch_words: int) -> int:
    """Positions per warp: at most :data:`GPU_UNIT_WORDS` (``batch_words`` when smaller)."""
    return min(batch_words, GPU_UNIT_WORDS)
