"""SparseLDA and the dense draw on the N-Queen document x word blocks: the CPU's parallel LDA
samplers. No CUDA twin (the GPU samples with the jacobi and MH kernels of ``cuda/lda.cu``); they
are part of the ``lda`` family's CPU ops (``cpu_fallback/lda.py`` re-exports them), and
``cpu_fallback/lda.py``'s module docstring describes the buckets and the schedule.

>>> from cpu_fallback.lda import count_topics, init_topics
>>> w = np.array([0, 1, 0, 1], np.int32); off = np.array([0, 2, 4])
>>> z = init_topics(4, 2, 3); n_dk, n_wk, n_k = count_topics(w, off, z, 2, 2)
>>> st = sparse_state(w, off, z, n_dk, n_wk, 1)
>>> sample_sparse(st, n_dk, n_wk, n_k, np.full(2, 0.1), 0.01, 5)
>>> int(n_k.sum())
4
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit

from .borrow import borrow
from .jit import JIT
from .lda_draw import pick as _pick, uniform as _uniform
from .prefetch import prefetch

# how many tokens ahead the sparse sampler prefetches a word's rows (its index 8 ahead, its
# entries 4 ahead): about the tokens it draws while a cache miss is served (4, 8 and 16 measured)
AHEAD = 8
# unsigned index constants: the sparse sampler indexes with uint64 only (Numba checks every signed
# index for a negative value, and an int literal would turn uint64 arithmetic into float64)
U0, U1, U2, U3 = np.uint64(0), np.uint64(1), np.uint64(2), np.uint64(3)


def n_partitions_for(n_tokens: int, n_docs: int, n_words: int) -> int:
    """The number ``P`` of document and word blocks of the N-Queen schedule, from the data alone
    (never from the thread count, so results do not depend on it): about one block per 16k tokens,
    at most 8, at most the number of documents or words, and at most the mean document length / 8
    but never below 2 for that reason (every document is entered once per block and sweep, and
    entering it costs O(its topics): with short documents more blocks cost more than the
    parallelism brings; measured on Sogou news paragraphs of 35 tokens on average, 2 threads: P = 4
    is 10-30% faster than P = 8; two blocks keep two threads busy on any corpus of short
    documents, such as one short text per line). No CUDA twin (CPU schedule).

    >>> n_partitions_for(1000, 10, 50), n_partitions_for(10**7, 10**4, 10**5), n_partitions_for(10**6, 3 * 10**4, 10**5)
    (1, 8, 4)
    >>> n_partitions_for(3 * 10**6, 6 * 10**5, 4 * 10**4)  # 5 tokens per document
    2
    """
    mean_length = n_tokens // max(1, n_docs)
    return int(max(1, min(8, n_tokens // 16384, max(2, mean_length // 8), n_docs, n_words)))


@dataclass
class SparseState:
    """The token layout and topic lists of :func:`sample_sparse`. No CUDA twin (CPU sampler).

    Tokens are re-ordered once, by cell (document block, word block), documents in order inside a
    cell; ``index[j]`` is the corpus position of layout slot ``j`` (its draws use that position, so
    they are the layout's own business). ``topics`` is in layout order: :meth:`corpus_topics`
    gives it in corpus order. The nonzero topics of every document and word live in lists of
    capacity ``min(K, length)`` (at most one entry per token in all), kept current by the sampler.
    """

    n_partitions: int
    cell_offsets: np.ndarray  # int64[P*P + 1]
    words: np.ndarray  # int32[N], layout order
    docs: np.ndarray  # int32[N]
    index: np.ndarray  # int64[N]: corpus position of every slot
    topics: np.ndarray  # int32[N], layout order
    doc_lists: np.ndarray
    doc_nnz: np.ndarray
    doc_list_offsets: np.ndarray
    word_entries: np.ndarray  # int32[capacity, 2]: (topic, n_wk) of every word's topics, decreasing counts
    word_index: np.ndarray  # int64[V, 2]: (first entry, number of entries) of every word
    lists_current: bool = True  # False once sample_blocks_dense has run (it does not keep the lists)

    @property
    def word_lists(self) -> np.ndarray:
        """The topic of every word entry."""
        return self.word_entries[:, 0]

    @property
    def word_list_counts(self) -> np.ndarray:
        """The count ``n_wk`` of every word entry."""
        return self.word_entries[:, 1]

    @property
    def word_list_offsets(self) -> np.ndarray:
        """Where every word's entries start (V + 1 values)."""
        return np.append(self.word_index[:, 0], self.word_entries.shape[0])

    @property
    def word_nnz(self) -> np.ndarray:
        """The number of nonzero topics of every word."""
        return self.word_index[:, 1]

    def corpus_topics(self) -> np.ndarray:
        """The assignments in corpus order.

        >>> w = np.array([1, 0, 1], np.int32); off = np.array([0, 3]); z = np.array([0, 1, 1], np.int32)
        >>> from cpu_fallback.lda import count_topics, init_topics
        >>> n_dk, n_wk, _ = count_topics(w, off, z, 2, 2)
        >>> sparse_state(w, off, z, n_dk, n_wk, 1).corpus_topics().tolist()
        [0, 1, 1]
        """
        out = np.empty_like(self.topics)
        out[self.index] = self.topics
        return out


@njit(inline="always", **JIT)
def _sift_down(keys, root, n):
    while 2 * root + 1 < n:
        child = 2 * root + 1
        if child + 1 < n and keys[child + 1] > keys[child]:
            child += 1
        if keys[root] >= keys[child]:
            return
        keys[root], keys[child] = keys[child], keys[root]
        root = child


@njit(**JIT)
def _heap_sort(keys, n):
    """``keys[:n]`` in increasing order (a heap sort: Numba's np.sort and argsort took 1-1.5 s of CPU
    to compile, and these keys are distinct, so any sort gives the same order)."""
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(keys, root, n)
    for end in range(n - 1, 0, -1):
        keys[0], keys[end] = keys[end], keys[0]
        _sift_down(keys, 0, end)


@njit(**JIT)
def _build_lists(counts, offsets, lists, list_counts, nnz, by_count):
    keys = np.empty(counts.shape[1], np.int64)
    for row in range(counts.shape[0]):  # once per state, one thread: not worth a parallel loop's compile
        base = offsets[row]
        m = base
        for k in range(counts.shape[1]):
            if counts[row, k] > 0:
                lists[m] = k
                list_counts[m] = counts[row, k]
                m += 1
        nnz[row] = m - base
        if by_count and m - base > 1:
            # decreasing counts, ties by topic: one distinct key per entry, (2**31 - count, topic)
            for e in range(m - base):
                keys[e] = ((np.int64(1 << 31) - list_counts[base + e]) << 32) | lists[base + e]
            _heap_sort(keys, m - base)
            for e in range(m - base):
                lists[base + e] = keys[e] & 0xFFFFFFFF
                list_counts[base + e] = np.int64(1 << 31) - (keys[e] >> 32)


def _topic_lists(counts: np.ndarray, lengths: np.ndarray,
                 by_count: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    capacity = np.minimum(lengths.astype(np.int64), counts.shape[1])
    offsets = np.zeros(len(capacity) + 1, np.int64)
    np.cumsum(capacity, out=offsets[1:])
    lists = np.zeros(max(1, int(offsets[-1])), np.int32)
    list_counts = np.zeros_like(lists)
    nnz = np.zeros(len(capacity), np.int32)
    _build_lists(counts, offsets, lists, list_counts, nnz, by_count)
    return lists, list_counts, nnz, offsets


def sparse_state(words: np.ndarray, doc_offsets: np.ndarray, topics: np.ndarray, n_dk: np.ndarray,
                 n_wk: np.ndarray, n_partitions: int) -> SparseState:
    """Lays the corpus out for :func:`sample_sparse` (``topics`` in corpus order, counts exact).
    No CUDA twin (CPU sampler).

    Documents and words are each cut into ``n_partitions`` runs of consecutive ids with about equal
    token counts: consecutive, so that the rows (counts, topic lists) two threads write at the same
    time are apart in memory, never on one cache line but at the runs' edges.

    >>> w = np.array([0, 1, 2, 3, 0, 1, 2, 3], np.int32); off = np.array([0, 4, 8])
    >>> from cpu_fallback.lda import count_topics, init_topics
    >>> z = np.zeros(8, np.int32); n_dk, n_wk, _ = count_topics(w, off, z, 4, 3)
    >>> s = sparse_state(w, off, z, n_dk, n_wk, 2)
    >>> s.cell_offsets.tolist(), sorted(s.index.tolist()) == list(range(8))
    ([0, 2, 4, 6, 8], True)
    """
    P = int(n_partitions)
    words = np.asarray(words, np.int32)
    doc_offsets = np.asarray(doc_offsets, np.int64)
    n_tokens, n_docs, n_words = len(words), len(doc_offsets) - 1, n_wk.shape[0]
    lengths = np.diff(doc_offsets)
    doc_block = np.minimum(doc_offsets[:-1] * P // max(1, n_tokens), P - 1).astype(np.int64)
    word_counts = np.bincount(words, minlength=n_words)
    before = np.cumsum(word_counts) - word_counts
    word_block = np.minimum(before * P // max(1, n_tokens), P - 1).astype(np.int64)
    docs = np.repeat(np.arange(n_docs, dtype=np.int32), lengths)
    cell = doc_block[docs] * P + word_block[words]
    # cell ids in 16 bits where they fit: numpy's stable sort is then a radix sort, O(N) (measured
    # ~8x faster than on int64 for 2.5M tokens)
    index = np.argsort(cell.astype(np.uint16) if P * P <= 1 << 16 else cell, kind="stable").astype(np.int64)
    cell_offsets = np.zeros(P * P + 1, np.int64)
    np.cumsum(np.bincount(cell, minlength=P * P), out=cell_offsets[1:])
    doc_lists, _, doc_nnz, doc_list_offsets = _topic_lists(n_dk, lengths, False)
    word_lists, word_list_counts, word_nnz, word_list_offsets = _topic_lists(n_wk, word_counts, True)
    word_entries = np.ascontiguousarray(np.stack([word_lists, word_list_counts], axis=1))
    word_index = np.ascontiguousarray(np.stack([word_list_offsets[:-1], word_nnz.astype(np.int64)], axis=1))
    return SparseState(P, cell_offsets, words[index], docs[index], index,
                       np.ascontiguousarray(np.asarray(topics, np.int32)[index]), doc_lists, doc_nnz,
                       doc_list_offsets, word_entries, word_index)


@njit(inline="always", error_model="numpy", **JIT)
def _list_remove(lists, base, nnz, row, k):
    n = np.uint64(nnz[row])
    m = base
    end = base + n
    while m < end:
        if lists[m] == k:
            lists[m] = lists[end - U1]
            break
        m += U1
    nnz[row] = n - U1


@njit(inline="always", error_model="numpy", **JIT)
def _list_add(lists, base, nnz, row, k):
    n = np.uint64(nnz[row])
    lists[base + n] = k
    nnz[row] = n + U1


@njit(inline="always", error_model="numpy", **JIT)
def _word_decrement(we, base, n, t):
    """Topic ``t``'s count in a word's entries (pairs topic, count at ``2 m``, ``2 m + 1``, sorted
    by decreasing count) minus one, order kept; returns the new number of entries (an entry
    leaves when its count reaches zero). Indices unsigned (no negative-index checks)."""
    m = base
    while we[U2 * m] != t:
        m += U1
    c = we[U2 * m + U1] - 1
    last = base + n - U1
    while m < last and we[U2 * m + U3] > c:
        we[U2 * m] = we[U2 * m + U2]
        we[U2 * m + U1] = we[U2 * m + U3]
        m += U1
    we[U2 * m] = t
    we[U2 * m + U1] = c
    return n - U1 if c == 0 else n


@njit(inline="always", error_model="numpy", **JIT)
def _word_increment(we, base, m, t):
    """Topic ``t`` at entry ``m`` (its count already there, or a new last entry of count 0) plus
    one, moved forward to keep the counts decreasing."""
    c = we[U2 * m + U1] + 1
    while m > base and we[U2 * m - U1] < c:
        we[U2 * m] = we[U2 * m - U2]
        we[U2 * m + U1] = we[U2 * m - U1]
        m -= U1
    we[U2 * m] = t
    we[U2 * m + U1] = c


@njit(inline="always", error_model="numpy", **JIT)
def _word_bucket(we, wbase, n_w, coef, products):
    """The q bucket ``sum coef[topic] * count`` over a word's ``n_w`` entries (pairs topic, count
    from ``wbase``), every product kept in ``products`` for the draw. Four running sums, so the
    loop is not one chain of ``n_w`` dependent additions, and unsigned indices, so Numba emits no
    negative-index check per load (measured: 5-10% of a sweep at K = 100, one thread)."""
    e = U2 * wbase
    end = U2 * (wbase + n_w)
    m = U0
    q0 = q1 = q2 = q3 = 0.0
    while e + np.uint64(8) <= end:
        a0 = coef[np.uint32(we[e])] * np.float64(we[e + U1])
        a1 = coef[np.uint32(we[e + U2])] * np.float64(we[e + U3])
        a2 = coef[np.uint32(we[e + np.uint64(4)])] * np.float64(we[e + np.uint64(5)])
        a3 = coef[np.uint32(we[e + np.uint64(6)])] * np.float64(we[e + np.uint64(7)])
        products[m] = a0
        products[m + U1] = a1
        products[m + U2] = a2
        products[m + U3] = a3
        q0 += a0
        q1 += a1
        q2 += a2
        q3 += a3
        e += np.uint64(8)
        m += np.uint64(4)
    while e < end:
        a0 = coef[np.uint32(we[e])] * np.float64(we[e + U1])
        products[m] = a0
        q0 += a0
        e += U2
        m += U1
    return (q0 + q1) + (q2 + q3)


@njit(error_model="numpy", **JIT)
def _sparse_cell(lo, hi, words_o, docs_o, index_o, z_o, n_dk_o, nk_o, inv_o, coef_o, qcum_o,
                 dl_o, dnnz_o, doff_o, we_o, wix_o, alpha_o, ab_o, beta, vbeta, key, adding):
    # borrowed views (see cpu_fallback.borrow): every owner is an argument, alive to the end
    words, docs, index, z = borrow(words_o), borrow(docs_o), borrow(index_o), borrow(z_o)
    n_dk, nk = borrow(n_dk_o), borrow(nk_o)
    inv, coef, qcum = borrow(inv_o), borrow(coef_o), borrow(qcum_o)
    dl, dnnz, doff = borrow(dl_o), borrow(dnnz_o), borrow(doff_o)
    # a word's entries (topic, count pairs) and its (first entry, number of entries) sit together:
    # one cache line or two per token for the word side, wherever the word is
    we, wix = borrow(we_o), borrow(wix_o)
    alpha, ab = borrow(alpha_o), borrow(ab_o)
    # every index below is unsigned: Numba then emits no negative-index wraparound per access
    n_topics = np.uint64(nk.size)
    s = 0.0
    k = U0
    while k < n_topics:
        inv[k] = 1.0 / (np.float64(nk[k]) + vbeta)
        coef[k] = alpha[k] * inv[k]
        s += ab[k] * inv[k]
        k += U1
    d = np.uint64(np.iinfo(np.uint64).max)
    r = 0.0
    dbase = U0
    dend = U0
    nd = n_dk[0]
    j = np.uint64(lo)
    hi = np.uint64(hi)
    ahead = np.uint64(AHEAD)
    half = np.uint64(AHEAD // 2)
    while j < hi:
        dj = np.uint64(docs[j])
        if dj != d:
            m = dbase
            while m < dend:
                k = np.uint64(dl[m])
                coef[k] = alpha[k] * inv[k]
                m += U1
            d = dj
            dbase = np.uint64(doff[d])
            dend = dbase + np.uint64(dnnz[d])
            nd = n_dk[d]
            r = 0.0
            m = dbase
            while m < dend:
                k = np.uint64(dl[m])
                c = np.float64(nd[k])
                coef[k] = (alpha[k] + c) * inv[k]
                r += c * beta * inv[k]
                m += U1
        # the word rows of the tokens ahead, in two steps: a word's entry index, then its entries
        if j + ahead < hi:
            prefetch(wix, U2 * np.uint64(words[j + ahead]))
        if j + half < hi:
            prefetch(we, U2 * np.uint64(wix[U2 * np.uint64(words[j + half])]))
        w = np.uint64(words[j])
        t = np.uint64(z[j])
        wbase = np.uint64(wix[U2 * w])
        n_w = np.uint64(wix[U2 * w + U1])
        if not adding:
            # remove the token: exact O(1) updates of s, r and the coefficient of topic t
            old = inv[t]
            cd = nd[t]
            s -= ab[t] * old
            r -= np.float64(cd) * beta * old
            cd -= 1
            nd[t] = cd
            nk[t] -= 1
            new_inv = 1.0 / (np.float64(nk[t]) + vbeta)
            inv[t] = new_inv
            s += ab[t] * new_inv
            r += np.float64(cd) * beta * new_inv
            coef[t] = (alpha[t] + np.float64(cd)) * new_inv
            if cd == 0:
                _list_remove(dl, dbase, dnnz, d, t)
                dend -= U1
            n_w = _word_decrement(we, wbase, n_w, t)
        # the word bucket over the word's nonzero topics (largest counts first)
        q = _word_bucket(we, wbase, n_w, coef, qcum)
        u = _uniform(key, index[j]) * (s + r + q)
        if u < q:
            # the entries hold the largest counts first: the walk mostly stops early
            m = U0
            acc = qcum[0]
            while acc <= u and m + U1 < n_w:
                m += U1
                acc += qcum[m]
            slot = wbase + m
            new = np.uint64(we[U2 * slot])
        else:
            if u < q + r and dend > dbase:
                u -= q
                new = np.uint64(dl[dend - U1])
                acc = 0.0
                m = dbase
                while m < dend:
                    k = np.uint64(dl[m])
                    acc += np.float64(nd[k]) * beta * inv[k]
                    if acc > u:
                        new = k
                        break
                    m += U1
            else:
                u -= q + r
                new = n_topics - U1
                acc = 0.0
                k = U0
                while k < n_topics:
                    acc += ab[k] * inv[k]
                    if acc > u:
                        new = k
                        break
                    k += U1
            slot = wbase
            while slot < wbase + n_w and np.uint64(we[U2 * slot]) != new:
                slot += U1
            if slot == wbase + n_w:
                n_w += U1
                we[U2 * slot] = new
                we[U2 * slot + U1] = 0
        _word_increment(we, wbase, slot, new)
        wix[U2 * w + U1] = n_w
        # add it back under the new topic
        old = inv[new]
        cd = nd[new]
        s -= ab[new] * old
        r -= np.float64(cd) * beta * old
        cd += 1
        nd[new] = cd
        if cd == 1:
            _list_add(dl, dbase, dnnz, d, new)
            dend += U1
        nk[new] += 1
        new_inv = 1.0 / (np.float64(nk[new]) + vbeta)
        inv[new] = new_inv
        s += ab[new] * new_inv
        r += np.float64(cd) * beta * new_inv
        coef[new] = (alpha[new] + np.float64(cd)) * new_inv
        z[j] = new
        j += U1


@njit(**JIT)
def _word_counts(entries, index, n_wk):
    # the sparse sampler keeps a word's counts in its entries only (one row fewer to reach per
    # token): the dense rows are written from them when they are read (evaluation, the end)
    for w in range(n_wk.shape[0]):
        for k in range(n_wk.shape[1]):
            n_wk[w, k] = 0
        for m in range(index[w, 0], index[w, 0] + index[w, 1]):
            n_wk[w, entries[m, 0]] = entries[m, 1]


@njit(**JIT)
def _dense_cell(lo, hi, words_o, docs_o, index_o, z_o, n_dk_o, n_wk_o, nk_o, inv_o, cum_o, alpha_o, beta, vbeta,
                key, adding):
    """The dense draw inside one N-Queen cell, against the cell's own topic totals."""
    words, docs, index, z = borrow(words_o), borrow(docs_o), borrow(index_o), borrow(z_o)
    n_dk, n_wk, nk = borrow(n_dk_o), borrow(n_wk_o), borrow(nk_o)
    inv, cum, alpha = borrow(inv_o), borrow(cum_o), borrow(alpha_o)
    n_topics = nk.size
    for k in range(n_topics):
        inv[k] = 1.0 / (np.float64(nk[k]) + vbeta)
    for j in range(lo, hi):
        nd, nw, t = n_dk[docs[j]], n_wk[words[j]], z[j]
        if not adding:
            nd[t] -= 1
            nw[t] -= 1
            nk[t] -= 1
            inv[t] = 1.0 / (np.float64(nk[t]) + vbeta)
        # the products first (a loop LLVM vectorises), then their running sum
        for k in range(n_topics):
            cum[k] = (np.float64(nd[k]) + alpha[k]) * (np.float64(nw[k]) + beta) * inv[k]
        total = 0.0
        for k in range(n_topics):
            total += cum[k]
            cum[k] = total
        new = _pick(cum, n_topics, _uniform(key, index[j]) * total)
        nd[new] += 1
        nw[new] += 1
        nk[new] += 1
        inv[new] = 1.0 / (np.float64(nk[new]) + vbeta)
        z[j] = new


def sample_sparse(state: SparseState, n_dk: np.ndarray, n_wk: np.ndarray, n_k: np.ndarray, alpha: np.ndarray,
                  beta: float, key: int, initial: bool = False, word_counts: bool = True) -> None:
    """One SparseLDA sweep over ``state`` (from :func:`sparse_state`), counts and
    ``state.topics`` updated in place. No CUDA twin: the GPU samples with :func:`sample_dense`.

    ``initial=True`` is the progressive initialisation: the counts (and ``state``'s lists) start
    empty and every token is drawn from the conditional given the tokens placed before it, then
    added (nothing is removed); the sweep leaves exact counts, like any other. It starts the
    chain far closer to the posterior than uniform topics do. The sampler keeps every word's counts
    in ``state``'s entries; ``word_counts=False`` skips writing the dense ``n_wk`` rows from them
    (a pass over all V x K counts) for a caller that reads ``n_wk`` only after a later sweep.

    >>> w = np.array([0, 1, 0, 1, 2, 2], np.int32); off = np.array([0, 3, 6])
    >>> from cpu_fallback.lda import count_topics, init_topics
    >>> z = init_topics(6, 3, 5); n_dk, n_wk, n_k = count_topics(w, off, z, 3, 3)
    >>> st = sparse_state(w, off, z, n_dk, n_wk, 1)
    >>> sample_sparse(st, n_dk, n_wk, n_k, np.full(3, 0.1), 0.01, 9)
    >>> counts = count_topics(w, off, st.corpus_topics(), 3, 3)
    >>> [a.tolist() for a in counts] == [n_dk.tolist(), n_wk.tolist(), n_k.tolist()]
    True
    """
    if not state.lists_current:
        raise ValueError("this SparseState's topic lists are stale (sample_blocks_dense ran on it); build a new one "
                         "with sparse_state")
    _sweep_blocks(state, n_dk, n_wk, n_k, alpha, beta, key, initial, False)
    if word_counts:
        _word_counts(state.word_entries, state.word_index, n_wk)


def sample_blocks_dense(state: SparseState, n_dk: np.ndarray, n_wk: np.ndarray, n_k: np.ndarray,
                        alpha: np.ndarray, beta: float, key: int, initial: bool = False) -> None:
    """One sweep of the dense O(K) draw on the N-Queen blocks of ``state``, in parallel like
    :func:`sample_sparse` (and deterministic for any thread count), for small K where a dense
    draw is cheaper than the buckets. It does not keep ``state``'s topic lists (no
    :func:`sample_sparse` on this state afterwards). ``initial`` as in :func:`sample_sparse`.
    No CUDA twin (the GPU's dense schedules are :func:`sample_dense`'s).

    >>> w = np.array([0, 1, 0, 1, 2, 2], np.int32); off = np.array([0, 3, 6])
    >>> from cpu_fallback.lda import count_topics, init_topics
    >>> z = init_topics(6, 3, 5); n_dk, n_wk, n_k = count_topics(w, off, z, 3, 3)
    >>> st = sparse_state(w, off, z, n_dk, n_wk, 2)
    >>> sample_blocks_dense(st, n_dk, n_wk, n_k, np.full(3, 0.1), 0.01, 9)
    >>> count_topics(w, off, st.corpus_topics(), 3, 3)[2].tolist() == n_k.tolist()
    True
    """
    state.lists_current = False
    _sweep_blocks(state, n_dk, n_wk, n_k, alpha, beta, key, initial, True)


def _sweep_blocks(state: SparseState, n_dk: np.ndarray, n_wk: np.ndarray, n_k: np.ndarray, alpha: np.ndarray,
                  beta: float, key: int, initial: bool, dense: bool) -> None:
    if len(state.words) == 0:
        return
    P, n_topics = state.n_partitions, n_k.size
    alpha = np.ascontiguousarray(alpha, np.float64)
    beta, vbeta, key = np.float64(beta), np.float64(n_wk.shape[0]) * np.float64(beta), np.uint64(key)
    # every cell's scratch rows padded to whole cache lines and one line apart: the cells' threads
    # write them per token, and rows sharing a line would bounce it between cores
    stride = (n_topics + 7) // 8 * 8 + 8
    scratch = np.empty((3, P, stride), np.float64)
    nk_local = np.empty((P, 2 * stride), np.int32)
    offsets = state.cell_offsets
    if dense:
        shared = (state.words, state.docs, state.index, state.topics, n_dk, n_wk)
    else:
        shared = (state.words, state.docs, state.index, state.topics, n_dk)
        lists = (state.doc_lists, state.doc_nnz, state.doc_list_offsets, state.word_entries.reshape(-1),
                 state.word_index.reshape(-1), alpha, alpha * beta, beta, vbeta, key, bool(initial))

    def run(b: int, p: int) -> None:
        # the cell (document block b, word block (b + p) % P), against its own copy of the topic totals
        c = b * P + (b + p) % P
        nk = nk_local[b, :n_topics]
        nk[:] = n_k
        if offsets[c + 1] > offsets[c] and dense:
            _dense_cell(offsets[c], offsets[c + 1], *shared, nk, scratch[0, b], scratch[1, b], alpha, beta, vbeta, key,
                        bool(initial))
        elif offsets[c + 1] > offsets[c]:
            _sparse_cell(offsets[c], offsets[c + 1], *shared, nk, scratch[0, b], scratch[1, b], scratch[2, b], *lists)

    # The cells of a sub-pass handed to threads one at a time, as they free up, largest first, so
    # that the last one a thread starts is a small one (the sub-pass ends when its slowest thread
    # does; a thread slowed down by another process then holds it up less). Cells of one sub-pass
    # share no document and no word, so neither their order nor their thread changes the result.
    # Python threads over the nogil cell functions, not a prange: the parallel loop took 1.7 s of
    # CPU to compile, and it compiled both cell samplers where a run uses one.
    blocks = np.arange(P)
    n_threads = min(numba.get_num_threads(), P)
    with ThreadPoolExecutor(n_threads) as pool:
        for p in range(P):
            cells = blocks * P + (blocks + p) % P
            order = np.argsort(offsets[cells] - offsets[cells + 1], kind="stable")
            if n_threads == 1:
                for b in order:
                    run(int(b), p)
            else:
                list(pool.map(run, order.tolist(), [p] * P))
            # the cells' topic-total deltas merged exactly (integers)
            n_k += (nk_local[:, :n_topics] - n_k).sum(axis=0, dtype=np.int32)
