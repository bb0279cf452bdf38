"""Numba twins of ``cuda/word2vec.cu``: subsampling and one epoch of CBOW / skip-gram training.

The epoch's positions are cut into units of ``unit_words`` consecutive positions and threads
run the units round robin (thread ``t`` of ``T`` takes units ``t, t + T, ...``, so the threads move
through the corpus side by side, as gensim's workers take its jobs), updating
``syn0``/``syn1``/``syn1neg`` in place without locks (Hogwild, as word2vec.c's threads and
gensim's workers do). With one unit covering the whole epoch the run is sequential and
bit-for-bit reproducible on this backend. The operations are the CUDA kernel's, in the same order,
except the dot products: their sums are vectorised (reassociated into LLVM's vector accumulators,
multiply-adds fused) where a warp sums 32 lane partials with an xor butterfly, so the twins agree
to float32 rounding, not bit for bit.

Speed: every array is a borrowed view (``cpu_fallback/borrow.py``), so the rows the inlined
per-word helpers take are views without reference counts, and nothing is allocated per word.
Each helper has one call site (skip-gram and CBOW share the output loop, the tree's nodes and the
negative samples share the step): Numba types every inlined copy again, and the copies per mode
and per output kind took 3.7 s of CPU to compile, one copy 1.5 s (not inlining them at all cost
3-5% of the training speed).

>>> ids = np.array([0, 1, 0, 1], np.int32)
>>> keep = subsample(ids, np.array([0xFFFFFFFF, 0], np.uint32), 7)
>>> keep.tolist()
[1, 0, 1, 0]
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import get_num_threads, njit, prange

from .borrow import borrow
from .jit import JIT
from .prng import draw as _draw

MAX_EXP = np.float32(6.0)


@njit(parallel=True, **JIT)
def _subsample(ids, sample_int, key):
    keep = np.empty(ids.size, np.uint8)
    for i in prange(ids.size):
        keep[i] = 1 if np.uint64(sample_int[ids[i]]) >= (_draw(key, i, 0) >> np.uint64(32)) else 0
    return keep


def subsample(ids, sample_int, key):
    """uint8 keep flag of every position (gensim's ``sample_int >= random32``)."""
    return _subsample(ids, sample_int, np.uint64(key))


# Only the dot product may be reassociated (its sum vectorised with several accumulators) and
# contracted into fused multiply-adds; every other operation keeps IEEE order. Not inlined at
# Numba's level, where the caller's flags would replace these, but by LLVM, which keeps them.
@njit(fastmath={"reassoc", "contract"}, **JIT)
def _dot(a, b, dim):
    """<a[:dim], b[:dim]> in float32."""
    acc = np.float32(0.0)
    for d in range(dim):
        acc += a[d] * b[d]
    return acc


@njit(inline="always", **JIT)
def _axpy(g, x, y, dim):
    """y[:dim] += g * x[:dim]."""
    for d in range(dim):
        y[d] += g * x[d]


@njit(inline="always", **JIT)
def _sigmoid(f, table):
    """The logistic function, exact or (``table``) gensim's EXP_TABLE value (see ``cuda/word2vec.cu``)."""
    if not table:
        return np.float32(1.0) / (np.float32(1.0) + np.float32(math.exp(-f)))
    index = np.int64((f + MAX_EXP) * np.float32(83.0))
    x = (np.float32(index) / np.float32(1000.0) * np.float32(2.0) - np.float32(1.0)) * MAX_EXP
    e = np.float32(math.exp(x))
    return e / (e + np.float32(1.0))


@njit(inline="always", **JIT)
def _lower_bound(cum, r, lo, n):
    """First index in ``[lo, lo + n]`` whose cumulative weight is >= r (bisect_left on that span,
    which must hold the answer), without a branch per halving: a conditional move instead, as the
    target is random and a branch on it mispredicts half the time."""
    base = lo
    while n > 1:
        half = n >> 1
        base = base + half if np.uint64(cum[base + half - 1]) < r else base
        n -= half
    return base + (1 if np.uint64(cum[base]) < r else 0)


# Buckets of the negative-sampling search: 2**16 int64 starts (512 KB, within an L2), so a draw
# reads one start and bisects the few words of its bucket, not the whole vocabulary's cache lines.
SEARCH_BITS = 16


@njit(**JIT)
def _search_index(cum_table):
    """``start[b]`` = the answer for the first draw of bucket ``b`` (draws ``r >> shift == b``), and
    ``shift``; every draw of bucket ``b`` lands in ``[start[b], start[b + 1]]``, as lower_bound is
    monotone. Exact: the word found is bisect_left's on the whole table."""
    total = np.uint64(cum_table[cum_table.size - 1])
    shift = 0
    while (total - np.uint64(1)) >> np.uint64(shift) >= np.uint64(1 << SEARCH_BITS):
        shift += 1
    n_buckets = ((total - np.uint64(1)) >> np.uint64(shift)) + np.uint64(1)
    start = np.empty(n_buckets + np.uint64(1), np.int64)
    for b in range(n_buckets + 1):
        first = _lower_bound(cum_table, np.uint64(b) << np.uint64(shift), np.int64(0), cum_table.size)
        start[b] = min(first, cum_table.size - 1)
    return start, shift


@njit(inline="always", **JIT)
def _step(inp, out, neu1e, dim, label, alpha, compute_loss, table):
    """One output unit ``out`` (a row of syn1 / syn1neg) against the input ``inp``; returns its loss."""
    f = _dot(inp, out, dim)
    if f <= -MAX_EXP or f >= MAX_EXP:
        return 0.0
    g = (label - _sigmoid(f, table)) * alpha
    _axpy(g, out, neu1e, dim)
    _axpy(g, inp, out, dim)
    if not compute_loss:
        return 0.0
    return -math.log(np.float64(_sigmoid(f if label > np.float32(0.5) else -f, table)))


@njit(inline="always", **JIT)
def _outputs(inp, neu1e, word, syn1, syn1neg, codes, points, code_offsets, cum_table, search, shift, hs, negative, dim,
             alpha, key, i, pair, compute_loss, table):
    """The tree's nodes of ``word`` (``hs``), then ``word`` and its ``negative`` samples, against
    ``inp``: one loop with one call of the step, which Numba inlines once."""
    first = code_offsets[word] if hs else 0
    n_nodes = code_offsets[word + 1] - first if hs else 0
    n_units = n_nodes + (negative + 1 if negative > 0 else 0)
    total = np.uint64(cum_table[cum_table.size - 1])
    loss = 0.0
    for q in range(n_units):
        if q < n_nodes:
            out = syn1[points[first + q]]
            label = np.float32(1.0) - np.float32(codes[first + q])
        else:
            d = q - n_nodes
            target = word
            if d > 0:
                r = (_draw(key, i, 2 + pair * (negative + 1) + d) >> np.uint64(16)) % total
                b = r >> np.uint64(shift)
                target = _lower_bound(cum_table, r, search[b], search[b + 1] - search[b] + 1)
                if target == word:
                    continue
            out = syn1neg[target]
            label = np.float32(1.0) if d == 0 else np.float32(0.0)
        loss += _step(inp, out, neu1e, dim, label, alpha, compute_loss, table)
    return loss


@njit(**JIT)
def _train_units(thread, n_threads, loss, ids_owner, row_offsets_owner, syn0_owner, syn1_owner, syn1neg_owner,
                 codes_owner, points_owner, code_offsets_owner, cum_owner, search_owner, shift, sg, hs, negative, window,
                 cbow_mean, alpha_start, alpha_end, key, unit_words, compute_loss, table):
    # borrowed views (see cpu_fallback.borrow): the owners are arguments, alive to the end, and the
    # rows taken per word below are views without a reference count
    ids, row_offsets = borrow(ids_owner), borrow(row_offsets_owner)
    syn0, syn1, syn1neg = borrow(syn0_owner), borrow(syn1_owner), borrow(syn1neg_owner)
    codes, points = borrow(codes_owner), borrow(points_owner)
    code_offsets, cum_table, search = borrow(code_offsets_owner), borrow(cum_owner), borrow(search_owner)
    dim = syn0.shape[1]
    scratch_owner = np.empty((2, dim), np.float32)
    scratch = borrow(scratch_owner)
    neu1, neu1e = scratch[0], scratch[1]
    n_words = ids.size
    for u in range(thread, loss.size, n_threads):
        first = u * unit_words
        last = min(first + unit_words, n_words)
        row = np.searchsorted(row_offsets, first, side="right") - 1
        total = 0.0
        for i in range(first, last):
            while row_offsets[row + 1] <= i:
                row += 1
            start, end = row_offsets[row], row_offsets[row + 1]
            word = ids[i]
            alpha = np.float32(alpha_start + (alpha_end - alpha_start) * (np.float64(i) / np.float64(n_words)))
            b = np.int64((_draw(key, i, 1) >> np.uint64(32)) % np.uint64(window))
            lo = max(i - window + b, start)
            hi = min(i + window + 1 - b, end)
            if not sg:
                for d in range(dim):
                    neu1[d] = np.float32(0.0)
                count = 0
                for j in range(lo, hi):
                    if j != i:
                        _axpy(np.float32(1.0), syn0[ids[j]], neu1, dim)
                        count += 1
                if count == 0:
                    continue
                inv_count = np.float32(1.0) / np.float32(count)
                if cbow_mean:
                    for d in range(dim):
                        neu1[d] *= inv_count
            # skip-gram: every context word against the word; CBOW: their combination neu1, once
            # (one call site of the inlined outputs, not one per mode)
            for j in range(lo, hi) if sg else range(i, i + 1):
                if sg and j == i:
                    continue
                inp = syn0[ids[j]] if sg else neu1
                for d in range(dim):
                    neu1e[d] = np.float32(0.0)
                total += _outputs(inp, neu1e, word, syn1, syn1neg, codes, points, code_offsets, cum_table, search,
                                  shift, hs, negative, dim, alpha, key, i, j - i + window if sg else np.int64(0),
                                  compute_loss, table)
                if sg:
                    _axpy(np.float32(1.0), neu1e, inp, dim)
            if not sg:
                if not cbow_mean:
                    for d in range(dim):
                        neu1e[d] *= inv_count
                for j in range(lo, hi):
                    if j != i:
                        _axpy(np.float32(1.0), neu1e, syn0[ids[j]], dim)
        loss[u] = total


def train_epoch(ids, row_offsets, syn0, syn1, syn1neg, codes, points, code_offsets, cum_table, sg, hs, negative,
                window, cbow_mean, alpha_start, alpha_end, key, unit_words, compute_loss, sigmoid_table=0):
    """Trains one epoch in place (Hogwild); returns the loss of every unit of ``unit_words`` positions.
    ``sigmoid_table``: 1 for gensim's tabulated logistic function instead of the exact one.

    >>> syn0 = np.full((2, 4), 0.1, np.float32); syn1 = np.zeros((1, 4), np.float32)
    >>> tree = (np.array([0, 1], np.uint8), np.array([0, 0], np.int32), np.array([0, 1, 2]))
    >>> loss = train_epoch(np.array([0, 1], np.int32), np.array([0, 2]), syn0, syn1, syn1, *tree,
    ...                    np.ones(1, np.uint32), 0, 1, 0, 1, 1, 0.5, 0.5, 3, 10, 1)
    >>> loss.round(4).tolist(), bool(syn1.any())
    ([1.3913], True)
    """
    c = np.ascontiguousarray  # borrowed views need C order
    for weights in (syn0, syn1, syn1neg):  # trained in place: a copy would lose the updates
        if not weights.flags.c_contiguous or weights.dtype != np.float32:
            raise ValueError("word2vec weights must be C-contiguous float32 matrices")
    cum_table = c(cum_table)
    search, shift = _search_index(cum_table)
    loss = np.zeros((ids.size + unit_words - 1) // unit_words)
    n_threads = max(1, min(get_num_threads(), loss.size))
    args = (np.int64(n_threads), loss, c(ids), c(row_offsets), syn0, syn1, syn1neg, c(codes), c(points),
            c(code_offsets), cum_table, search, np.int64(shift), np.int64(sg), np.int64(hs), np.int64(negative),
            np.int64(window), np.int64(cbow_mean), np.float64(alpha_start), np.float64(alpha_end), np.uint64(key),
            np.int64(unit_words), np.int64(compute_loss), np.int64(sigmoid_table))
    # Round robin: thread t trains units t, t + T, t + 2T, ..., so the threads move through the
    # corpus side by side, in its order, as gensim's workers take its jobs. A contiguous split would
    # train the two halves of the corpus at once, which changes the order the model sees the text
    # in (and with it the vectors, measurably, on a corpus of concatenated books). Python threads
    # over a nogil function, not a prange: a parallel loop took seconds more to compile.
    if n_threads == 1:
        _train_units(np.int64(0), *args)
    else:
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(lambda t: _train_units(np.int64(t), *args), range(n_threads)))
    return loss


def unit_words(batch_words):
    """Positions per unit of parallel work: gensim's ``batch_words`` (a job of a worker thread).

    >>> unit_words(10000)
    10000
    """
    return batch_words
