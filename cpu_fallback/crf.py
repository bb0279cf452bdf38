"""Numba twins of ``cuda/crf.cu``: the linear-chain CRF's forward-backward, gradient reductions and
Viterbi, parallel over sequences (forward-backward, Viterbi) and over features (gradients).

Scaled forward-backward (Rabiner): per token, emissions ``e_t`` are shifted by their maximum
``m_t`` before ``exp`` and ``alpha`` is renormalised to sum 1, so ``logZ = Σ_t log s_t + m_t``.
The transition factor of token t is ``M_t = Π_f exp(B[f])`` over its bigram observations (the
exponentials are taken once per call, not per token, and a token's product is reused while the
next tokens have the same bigram observations). Outputs, per token and label: ``alpha``
(normalised forward), ``marginals`` = p(y_t = y), and ``omega`` with
p(y_{t-1} = a, y_t = b) = alpha[t-1, a] · M_t[a, b] · omega[t, b].

Each sequence first gathers the emissions of all its tokens (the gold path's score on the way):
the gathers are the random memory reads, and a loop of them alone keeps many in flight; the
forward and backward recursions then run on values already in cache. The CUDA twin splits that
gather into a token-parallel kernel, whose twin here is :func:`emissions` (for the differential
tests; training keeps the fused loop).

Training's unigram gradient is scattered token by token on one thread, as CRFsuite does (ids are
sorted by falling frequency, so the rows most tokens add to stay in cache); the other gradients
are gathered feature by feature from the transposed occurrence lists
(``gpu_text.crf.features.occurrences``) in the CUDA twin's chunked order: each chunk of a feature's
occurrences is summed from zero, then the feature's chunks in order. No atomics, and no sum
depends on the number of threads. Parallel work is handed out in small dynamic pieces
(``numba.set_parallel_chunksize``, set around each launch) so that a thread the machine slows
down does less of it, and a pass too small to pay for waking the other threads runs on one.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit, prange

from .jit import JIT
from .prefetch import prefetch

# Sequences per dynamically scheduled piece of the forward-backward loop.
SEQUENCES_PER_TASK = 4
# Occurrences per piece of the gradient loops (features are grouped into pieces of about this many).
OCCURRENCES_PER_TASK = 1 << 14
# Chunks (at most CHUNK occurrences each) per piece of the bigram gradient loop.
CHUNKS_PER_TASK = 8
# How far ahead the random reads are prefetched: unigram ids in the emission gather and the
# gradient's token-order scatter (about six tokens), occurrences in the transposed gather. Measured
# on People's Daily (385K characters, one thread, 7 runs, min): the emission gather 62 -> 23 ms,
# the scatter 50 -> 23 ms, the transposed gather 115 -> 85 ms; the values read are the same.
GATHER_AHEAD = 64
OCCURRENCE_AHEAD = 32


@contextmanager
def threads(count: int) -> Iterator[None]:
    """Runs the parallel kernels launched inside on at most ``count`` threads (``count`` >= 1).
    Their results do not depend on the thread count. Each parallel launch wakes the other
    threads, and on this project's shared 2-core machine under load that took 8-16 ms (a no-op
    ``prange``, median of 60), so small passes are faster on one thread.

    >>> with threads(1):
    ...     numba.get_num_threads()
    1
    """
    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(count), previous)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def threads_for(work: int, per_thread: int = 1 << 23) -> int:
    """Threads worth waking for ``work`` operations: one per ``per_thread`` (default 8M, a few
    milliseconds on one core, about what a launch cost the loaded machine), at least one.

    >>> threads_for(1000), threads_for(10**9) >= 1
    (1, True)
    """
    return max(1, work // per_thread)


@contextmanager
def _pieces(size: int) -> Iterator[None]:
    """Dynamic scheduling of the parallel loops launched inside: pieces of ``size`` iterations.
    (A ``with numba.parallel_chunksize`` block inside the kernel would stop Numba caching it.)"""
    previous = numba.set_parallel_chunksize(size)
    try:
        yield
    finally:
        numba.set_parallel_chunksize(previous)


@njit(inline="always", **JIT)
def _same_bigrams(b_offsets, b_ids, t, u):
    """Whether tokens t and u have the same bigram observation list."""
    if u < 0 or b_offsets[t + 1] - b_offsets[t] != b_offsets[u + 1] - b_offsets[u]:
        return False
    for k in range(b_offsets[t + 1] - b_offsets[t]):
        if b_ids[b_offsets[t] + k] != b_ids[b_offsets[u] + k]:
            return False
    return True


@njit(inline="always", **JIT)
def _transition_factors(exp_bigram, b_offsets, b_ids, t, out):
    n_labels = out.shape[0]
    for a in range(n_labels):
        for b in range(n_labels):
            out[a, b] = 1.0
    for k in range(b_offsets[t], b_offsets[t + 1]):
        f = b_ids[k]
        for a in range(n_labels):
            for b in range(n_labels):
                out[a, b] *= exp_bigram[f, a, b]


@njit(parallel=True, **JIT)
def _forward_backward(unigram, bigram, exp_bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, labels,
                      alpha, omega, marginals, log_z, gold):
    n_labels = unigram.shape[1]
    has_labels = labels.size > 0
    last_id = max(u_ids.size - 1, 0)
    for s in prange(seq_offsets.size - 1):
        start, end = seq_offsets[s], seq_offsets[s + 1]
        factors = np.empty((n_labels, n_labels))
        shifts = np.empty(max(end - start, 1))  # m_t, then s_t once the forward pass has it
        beta = np.empty(n_labels)
        # emissions: psi_t = exp(e_t - m_t) into omega (turned into omega by the backward pass)
        score = 0.0
        for t in range(start, end):
            label = labels[t] if has_labels else 0
            for y in range(n_labels):
                omega[t, y] = 0.0
            for k in range(u_offsets[t], u_offsets[t + 1]):
                prefetch(unigram, u_ids[min(k + GATHER_AHEAD, last_id)] * n_labels)
                f = u_ids[k]
                for y in range(n_labels):
                    omega[t, y] += unigram[f, y]
                if has_labels:
                    score += unigram[f, label]
            if has_labels and t > start:
                for k in range(b_offsets[t], b_offsets[t + 1]):
                    score += bigram[b_ids[k], labels[t - 1], label]
            shift = omega[t, 0]
            for y in range(1, n_labels):
                shift = max(shift, omega[t, y])
            for y in range(n_labels):
                omega[t, y] = np.exp(omega[t, y] - shift)
            shifts[t - start] = shift
        gold[s] = score
        cached = -1
        total = 0.0
        for t in range(start, end):
            if t > start and not _same_bigrams(b_offsets, b_ids, t, cached):
                _transition_factors(exp_bigram, b_offsets, b_ids, t, factors)
                cached = t
            norm = 0.0
            for y in range(n_labels):
                a = omega[t, y]
                if t > start:
                    acc = 0.0
                    for yp in range(n_labels):
                        acc += alpha[t - 1, yp] * factors[yp, y]
                    a *= acc
                alpha[t, y] = a
                norm += a
            for y in range(n_labels):
                alpha[t, y] /= norm
            total += np.log(norm) + shifts[t - start]
            shifts[t - start] = norm
        log_z[s] = total
        for y in range(n_labels):
            beta[y] = 1.0
        for t in range(end - 1, start - 1, -1):
            if t < end - 1:
                if not _same_bigrams(b_offsets, b_ids, t + 1, cached):
                    _transition_factors(exp_bigram, b_offsets, b_ids, t + 1, factors)
                    cached = t + 1
                for yp in range(n_labels):
                    acc = 0.0
                    for y in range(n_labels):
                        acc += factors[yp, y] * omega[t + 1, y]
                    beta[yp] = acc
            for y in range(n_labels):
                marginals[t, y] = alpha[t, y] * beta[y]
                omega[t, y] = omega[t, y] * beta[y] / shifts[t - start]


def forward_backward(unigram: np.ndarray, bigram: np.ndarray, seq_offsets: np.ndarray, u_offsets: np.ndarray,
                     u_ids: np.ndarray, b_offsets: np.ndarray, b_ids: np.ndarray, labels: np.ndarray,
                     exp_bigram: np.ndarray | None = None, order: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(alpha, omega, marginals, log_z, gold_score) of every sequence; ``labels`` may be empty
    (then gold_score is 0). ``exp_bigram`` is exp(bigram) when the caller has it; ``order``
    (:func:`sequence_order`) is the CUDA twin's and changes nothing here (the sequences are
    independent; dynamic scheduling balances the threads).

    >>> u_offsets, u_ids, none = np.array([0, 1, 2]), np.array([0, 1]), np.zeros(3, np.int64)
    >>> unigram, bigram = np.array([[1.0, 0.0], [0.0, 1.0]]), np.zeros((1, 2, 2))
    >>> _, _, marginals, log_z, gold = forward_backward(unigram, bigram, np.array([0, 2]), u_offsets, u_ids, none,
    ...                                                 none[:0], np.array([0, 1], np.int32))
    >>> marginals.round(3).tolist(), round(float(log_z[0] - gold[0]), 3)
    ([[0.731, 0.269], [0.269, 0.731]], 0.627)
    """
    n, n_labels = int(u_offsets.size - 1), unigram.shape[1]
    alpha = np.empty((n, n_labels))
    omega = np.empty((n, n_labels))
    marginals = np.empty((n, n_labels))
    log_z = np.empty(seq_offsets.size - 1)
    gold = np.empty(seq_offsets.size - 1)
    with _pieces(SEQUENCES_PER_TASK):
        _forward_backward(unigram, bigram, np.exp(bigram) if exp_bigram is None else exp_bigram, seq_offsets,
                          u_offsets, u_ids, b_offsets, b_ids, labels, alpha, omega, marginals, log_z, gold)
    return alpha, omega, marginals, log_z, gold


def sequence_order(seq_offsets: np.ndarray) -> np.ndarray:
    """The sequences longest first, equal lengths in index order (the CUDA twin's launch order).

    >>> sequence_order(np.array([0, 1, 4, 5, 7])).tolist()
    [1, 3, 0, 2]
    """
    return np.argsort(-np.diff(seq_offsets), kind="stable").astype(np.int64)


@njit(parallel=True, **JIT)
def _emissions(unigram, bigram, u_offsets, u_ids, b_offsets, b_ids, labels, psi, shift, gold_u, gold_b, repeat):
    n_labels = unigram.shape[1]
    has_labels = labels.size > 0
    for t in prange(u_offsets.size - 1):
        m = -np.inf
        for y in range(n_labels):
            e = 0.0
            for k in range(u_offsets[t], u_offsets[t + 1]):
                e += unigram[u_ids[k], y]
            psi[t, y] = e
            m = max(m, e)
        for y in range(n_labels):
            psi[t, y] = np.exp(psi[t, y] - m)
        shift[t] = m
        gu, gb = 0.0, 0.0
        if has_labels:
            for k in range(u_offsets[t], u_offsets[t + 1]):
                gu += unigram[u_ids[k], labels[t]]
            if t > 0:
                for k in range(b_offsets[t], b_offsets[t + 1]):
                    gb += bigram[b_ids[k], labels[t - 1], labels[t]]
        gold_u[t], gold_b[t] = gu, gb
        repeat[t] = t > 0 and _same_bigrams(b_offsets, b_ids, t, t - 1)


def emissions(unigram: np.ndarray, bigram: np.ndarray, u_offsets: np.ndarray, u_ids: np.ndarray,
              b_offsets: np.ndarray, b_ids: np.ndarray, labels: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The CUDA twin's token-parallel first pass of :func:`forward_backward` (which fuses it into
    its sequence loop here): (psi, shift, gold_u, gold_b, repeat), psi[t] = exp(e_t - shift[t])
    with shift[t] = max e_t, the gold path's unigram and transition terms of token t (0 without
    labels; the transition term with labels[t-1] for every t > 0) and whether token t's bigram id
    list is token t-1's.

    >>> psi, shift, gu, gb, repeat = emissions(np.array([[0.0, 1.0]]), np.ones((1, 2, 2)), np.array([0, 1, 1]),
    ...                                        np.array([0]), np.array([0, 1, 2]), np.array([0, 0]),
    ...                                        np.array([1, 0], np.int32))
    >>> psi.round(3).tolist(), shift.tolist(), gu.tolist(), gb.tolist(), repeat.tolist()
    ([[0.368, 1.0], [1.0, 1.0]], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0, 1])
    """
    n, n_labels = int(u_offsets.size - 1), unigram.shape[1]
    psi, shift, gold_u, gold_b = np.empty((n, n_labels)), np.empty(n), np.empty(n), np.empty(n)
    repeat = np.empty(n, np.uint8)
    _emissions(unigram, bigram, u_offsets, u_ids, b_offsets, b_ids, labels, psi, shift, gold_u, gold_b, repeat)
    return psi, shift, gold_u, gold_b, repeat


@njit(inline="always", **JIT)
def _feature_at(chunk_offsets, feature_chunks, position):
    """The first feature whose occurrences start at or after ``position`` (binary search)."""
    low, high = 0, feature_chunks.size - 1
    while low < high:
        middle = (low + high) // 2
        if chunk_offsets[feature_chunks[middle]] < position:
            low = middle + 1
        else:
            high = middle
    return low


@njit(inline="always", **JIT)
def _add_penalty(out, f, weights, l2):
    """``out[f] += l2 · weights[f]`` when weights are given (the L2 term's gradient, fused)."""
    if weights.shape[0]:
        for k in range(out.shape[1]):
            out[f, k] = out[f, k] + l2 * weights[f, k]


@njit(**JIT)
def _unigram_sums(marginals, labels, occ_tokens, chunk_offsets, feature_chunks, first, last, weights, l2, out):
    """Features ``first`` to ``last`` of :func:`unigram_gradient` (a plain function: Numba
    optimises it better than the same loops inlined into a parallel one)."""
    n_labels = marginals.shape[1]
    end = chunk_offsets[chunk_offsets.size - 1] - 1
    part = np.empty(n_labels)
    for f in range(first, last):
        for y in range(n_labels):
            out[f, y] = 0.0
        for c in range(feature_chunks[f], feature_chunks[f + 1]):
            for y in range(n_labels):
                part[y] = 0.0
            for o in range(chunk_offsets[c], chunk_offsets[c + 1]):
                prefetch(marginals, occ_tokens[min(o + OCCURRENCE_AHEAD, end)] * n_labels)
                t = occ_tokens[o]
                for y in range(n_labels):
                    part[y] += marginals[t, y]
                part[labels[t]] -= 1.0
            for y in range(n_labels):
                out[f, y] += part[y]
        _add_penalty(out, f, weights, l2)


@njit(parallel=True, **JIT)
def _unigram_gradient(marginals, labels, occ_tokens, chunk_offsets, feature_chunks, weights, l2, out):
    n_features = feature_chunks.size - 1
    total = chunk_offsets[chunk_offsets.size - 1]
    # features are sorted by falling frequency: pieces of equal occurrence counts, not of equal
    # feature counts, keep the threads equally busy
    n_tasks = min(n_features, total // OCCURRENCES_PER_TASK + 1)
    for i in prange(n_tasks):
        first = _feature_at(chunk_offsets, feature_chunks, i * total // n_tasks)
        last = n_features if i == n_tasks - 1 else _feature_at(chunk_offsets, feature_chunks,
                                                               (i + 1) * total // n_tasks)
        _unigram_sums(marginals, labels, occ_tokens, chunk_offsets, feature_chunks, first, last, weights, l2, out)


def _output(out: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    """``out`` as a (features, width) view (a new array when None); a copy would lose the result."""
    if out is None:
        return np.empty(shape)
    if not out.flags.c_contiguous or out.size != shape[0] * shape[1]:
        raise ValueError(f"CRF gradient: out must be a contiguous array of {shape[0] * shape[1]} values")
    return out.reshape(shape)


def _penalty(weights: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    """The weights as the kernels take them: (features, width), or (0, width) for none."""
    return np.zeros((0, shape[1])) if weights is None else weights.reshape(shape)


@njit(**JIT)
def _unigram_scatter(marginals, labels, u_offsets, u_ids, weights, l2, out):
    n_labels = marginals.shape[1]
    last = max(u_ids.size - 1, 0)
    # each row starts from the L2 term's gradient (or 0): one pass over the rows less than adding it
    # after the counts (the sums are in token order, not the transposed order, either way)
    flat = out.reshape(-1)
    if weights.shape[0]:
        penalty = weights.reshape(-1)
        for i in range(flat.size):
            flat[i] = l2 * penalty[i]
    else:
        flat[:] = 0.0
    for t in range(u_offsets.size - 1):
        label = labels[t]
        for k in range(u_offsets[t], u_offsets[t + 1]):
            prefetch(out, u_ids[min(k + GATHER_AHEAD, last)] * n_labels)
            f = u_ids[k]
            for y in range(n_labels):
                out[f, y] += marginals[t, y]
            out[f, label] -= 1.0


def unigram_gradient(marginals: np.ndarray, labels: np.ndarray, occ_tokens: np.ndarray, chunk_offsets: np.ndarray,
                     feature_chunks: np.ndarray, weights: np.ndarray | None = None, l2: float = 0.0,
                     out: np.ndarray | None = None, u_offsets: np.ndarray | None = None,
                     u_ids: np.ndarray | None = None) -> np.ndarray:
    """Expected minus empirical counts of every unigram weight, (n_features, n_labels), plus
    ``l2 · weights`` when ``weights`` are given; written into ``out`` when given (a view of the
    whole gradient vector saves a copy).

    With the tokens' own lists (``u_offsets``, ``u_ids``, as training passes them) the counts are
    scattered token by token on one thread, like CRFsuite: ids are sorted by falling frequency, so
    the rows most tokens add to stay in cache, where the transposed gather below reads every
    token's marginals from anywhere in memory (measured on People's Daily, 385K characters: 23 ms
    against 55 ms on one thread, and no parallel launch). Without them, each chunk of a feature's
    occurrences is summed apart, then each feature's chunks in order, in parallel, and ``l2 · w``
    is added last -- the CUDA twin's order, which always uses the transposed tables; the scatter
    starts each row from ``l2 · w`` instead (one pass over the rows less). The orders differ in
    rounding only.

    >>> m, labels = np.array([[0.75, 0.25], [0.5, 0.5]]), np.array([0, 1], np.int32)
    >>> u_offsets, u_ids = np.array([0, 2, 3]), np.array([1, 0, 1])
    >>> tables = (np.array([0, 0, 1]), np.array([0, 1, 3]), np.array([0, 1, 2]))  # occurrences(u_ids, u_offsets, 2)
    >>> unigram_gradient(m, labels, *tables).tolist()
    [[-0.25, 0.25], [0.25, -0.25]]
    >>> unigram_gradient(m, labels, *tables, u_offsets=u_offsets, u_ids=u_ids).tolist()  # token-order scatter
    [[-0.25, 0.25], [0.25, -0.25]]
    """
    shape = (int(feature_chunks.size - 1), int(marginals.shape[1]))
    out = _output(out, shape)
    if u_offsets is not None and u_ids is not None:
        _unigram_scatter(marginals, labels, u_offsets, u_ids, _penalty(weights, shape), float(l2), out)
        return out
    with _pieces(1):
        _unigram_gradient(marginals, labels, occ_tokens, chunk_offsets, feature_chunks, _penalty(weights, shape),
                          float(l2), out)
    return out


@njit(**JIT)
def _reduce_chunks(partial, feature_chunks, weights, l2, out):
    for f in range(feature_chunks.size - 1):  # one thread: a few values per feature, few features
        for k in range(partial.shape[1]):
            acc = 0.0
            for c in range(feature_chunks[f], feature_chunks[f + 1]):
                acc += partial[c, k]
            out[f, k] = acc
        _add_penalty(out, f, weights, l2)


@njit(parallel=True, **JIT)
def _bigram_partials(exp_bigram, alpha, omega, labels, b_offsets, b_ids, occ_tokens, chunk_offsets, partial):
    n_labels = alpha.shape[1]
    for c in prange(chunk_offsets.size - 1):
        factors = np.empty((n_labels, n_labels))
        cached = -1
        for k in range(n_labels * n_labels):
            partial[c, k] = 0.0
        for o in range(chunk_offsets[c], chunk_offsets[c + 1]):
            t = occ_tokens[o]
            if not _same_bigrams(b_offsets, b_ids, t, cached):  # a chunk's tokens mostly share them
                _transition_factors(exp_bigram, b_offsets, b_ids, t, factors)
                cached = t
            for yp in range(n_labels):
                for y in range(n_labels):
                    partial[c, yp * n_labels + y] += alpha[t - 1, yp] * factors[yp, y] * omega[t, y]
            partial[c, labels[t - 1] * n_labels + labels[t]] -= 1.0


def bigram_gradient(bigram: np.ndarray, alpha: np.ndarray, omega: np.ndarray, labels: np.ndarray,
                    b_offsets: np.ndarray, b_ids: np.ndarray, occ_tokens: np.ndarray, chunk_offsets: np.ndarray,
                    feature_chunks: np.ndarray, weights: np.ndarray | None = None, l2: float = 0.0,
                    out: np.ndarray | None = None, exp_bigram: np.ndarray | None = None) -> np.ndarray:
    """Expected minus empirical counts of every bigram weight, (n_features, n_labels, n_labels),
    plus ``l2 · weights`` when given, into ``out`` when given (as :func:`unigram_gradient`);
    ``exp_bigram`` is exp(bigram) when the caller has it. Always
    gathered from the transposed tables: the transition observation occurs at every token, and a
    token-order scatter into its one row is a chain of dependent additions (measured slower:
    42 ms against 28 ms an iteration on People's Daily, 385K characters)."""
    n_labels = alpha.shape[1]
    shape = (int(feature_chunks.size - 1), n_labels * n_labels)
    partial = np.empty((chunk_offsets.size - 1, shape[1]))
    with _pieces(CHUNKS_PER_TASK), threads(threads_for(int(occ_tokens.size) * shape[1])):
        _bigram_partials(np.exp(bigram) if exp_bigram is None else exp_bigram, alpha, omega, labels, b_offsets, b_ids,
                         occ_tokens, chunk_offsets, partial)
    out = _output(out, shape)
    _reduce_chunks(partial, feature_chunks, _penalty(weights, shape), float(l2), out)
    return out.reshape(-1, n_labels, n_labels)


@njit(**JIT)
def _posterior_errors(marginals, labels):
    n_labels = marginals.shape[1]
    errors = 0
    for t in range(labels.size):  # one thread: one light pass, not worth a parallel launch
        best = 0
        for y in range(1, n_labels):
            if marginals[t, y] > marginals[t, best]:
                best = y
        errors += best != labels[t]
    return errors


def posterior_errors(marginals: np.ndarray, labels: np.ndarray) -> int:
    """How many tokens' most probable label (the lowest of equals) is not ``labels``' (posterior
    decoding's errors, training's progress figure)."""
    return int(_posterior_errors(marginals, labels)) if labels.size else 0


@njit(parallel=True, **JIT)
def _viterbi(unigram, bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, out, scores):
    n_labels = unigram.shape[1]
    for s in prange(seq_offsets.size - 1):
        start, end = seq_offsets[s], seq_offsets[s + 1]
        if end == start:
            scores[s] = 0.0
            continue
        delta = np.empty((end - start, n_labels))
        back = np.empty((end - start, n_labels), np.int32)
        trans = np.zeros((n_labels, n_labels))
        cached = -1
        for t in range(start, end):
            emission = np.zeros(n_labels)
            for k in range(u_offsets[t], u_offsets[t + 1]):
                for y in range(n_labels):
                    emission[y] += unigram[u_ids[k], y]
            if t == start:
                delta[0] = emission
                continue
            if not _same_bigrams(b_offsets, b_ids, t, cached):
                trans[:, :] = 0.0
                for k in range(b_offsets[t], b_offsets[t + 1]):
                    trans += bigram[b_ids[k]]
                cached = t
            for y in range(n_labels):
                best, arg = delta[t - 1 - start, 0] + trans[0, y], 0
                for yp in range(1, n_labels):
                    v = delta[t - 1 - start, yp] + trans[yp, y]
                    if v > best:
                        best, arg = v, yp
                delta[t - start, y] = best + emission[y]
                back[t - start, y] = arg
        last = end - 1 - start
        y = 0
        for k in range(1, n_labels):
            if delta[last, k] > delta[last, y]:
                y = k
        scores[s] = delta[last, y]
        for t in range(last, -1, -1):
            out[start + t] = y
            y = back[t, y]


def viterbi(unigram: np.ndarray, bigram: np.ndarray, seq_offsets: np.ndarray, u_offsets: np.ndarray,
            u_ids: np.ndarray, b_offsets: np.ndarray, b_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best label of every token (int32) and best path score of every sequence; ties go to the
    lowest label."""
    out = np.empty(u_offsets.size - 1, np.int32)
    scores = np.empty(seq_offsets.size - 1)
    _viterbi(unigram, bigram, seq_offsets, u_offsets, u_ids, b_offsets, b_ids, out, scores)
    return out, scores
