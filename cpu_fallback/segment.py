"""Numba twins of ``cuda/segment.cu``: DictCut's pre-split and Viterbi lattice, parallel over
strings (pre-split) and over Han runs (Viterbi); and ``segment_rows``, the whole segmentation of
each row in one fused pass (see the section at the end)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit, prange

from .chunks import chunk_bounds
from .double_array import trie_step, trie_value
from .jit import JIT
from .utf8 import CLASS_ALPHA, CLASS_HAN, CLASS_OTHER, CLASS_SPACE, class_of, sequence_at, starts_char

APOSTROPHE = 0x27


@njit(inline="always", **JIT)
def _char_at(data, i, end):
    """(codepoint, byte length) of the character at i under the one-byte U+FFFD rule."""
    n, cp = sequence_at(data, i, end)
    return cp, max(n, 1)


@njit(inline="always", **JIT)
def jieba_block_char(cp):
    """jieba's re_han_default characters: [\u4E00-\u9FD5a-zA-Z0-9+#&._%-] (jieba_block_char in segment.cu)."""
    return ((0x4E00 <= cp <= 0x9FD5) or (0x61 <= cp <= 0x7A) or (0x41 <= cp <= 0x5A) or (0x30 <= cp <= 0x39)
            or cp == 0x2B or cp == 0x23 or cp == 0x26 or cp == 0x2E or cp == 0x5F or cp == 0x25 or cp == 0x2D)


@njit(inline="always", **JIT)
def python_space(cp):
    """Python's str.isspace, what jieba's re_skip_default matches (python_space in segment.cu)."""
    return ((0x09 <= cp <= 0x0D) or (0x1C <= cp <= 0x20) or cp == 0x85 or cp == 0xA0 or cp == 0x1680
            or (0x2000 <= cp <= 0x200A) or cp == 0x2028 or cp == 0x2029 or cp == 0x202F or cp == 0x205F
            or cp == 0x3000)


@njit(**JIT)
def _jieba_tokens_of_string(data, begin, end, starts, ends, is_han, out):
    """jieba's split of data[begin:end]: block runs (to the lattice), whitespace dropped, any other
    character alone. Counts the tokens and writes them from ``out`` when ``starts`` is not empty."""
    count = 0
    i = begin
    prev_block = False
    while i < end:
        cp, n = _char_at(data, i, end)
        block = jieba_block_char(cp)
        if python_space(cp):
            block = False
        elif block and prev_block:
            if starts.size:
                ends[out + count - 1] = i + n
        else:
            if starts.size:
                starts[out + count] = i
                ends[out + count] = i + n
                is_han[out + count] = block
            count += 1
        prev_block = block
        i += n
    return count


@njit(**JIT)
def _tokens_of_string(data, begin, end, starts, ends, is_han, out, jieba_mode):
    """Counts the tokens of data[begin:end] and, when ``starts`` is not empty, writes them from
    index ``out``."""
    if jieba_mode:
        return _jieba_tokens_of_string(data, begin, end, starts, ends, is_han, out)
    count = 0
    i = begin
    prev_class = -1
    prev_cp = np.uint32(0)
    prev_prev_class = -1
    while i < end:
        cp, n = _char_at(data, i, end)
        c = class_of(cp)
        nxt = i + n
        if c == CLASS_SPACE:
            kind = 0
        elif prev_class == -1:
            kind = 1
        else:
            inner = False
            if cp == APOSTROPHE and prev_class == CLASS_ALPHA and nxt < end:  # look ahead only here
                ncp, _ = _char_at(data, nxt, end)
                inner = class_of(ncp) == CLASS_ALPHA
            after = c == CLASS_ALPHA and prev_cp == APOSTROPHE and prev_prev_class == CLASS_ALPHA
            if inner or after:
                kind = 2
            elif c == CLASS_OTHER:
                kind = 1
            else:
                kind = 2 if prev_class == c else 1
        if kind == 1:
            if starts.size:
                starts[out + count] = i
                ends[out + count] = nxt
                is_han[out + count] = c == CLASS_HAN
            count += 1
        elif kind == 2 and starts.size:
            ends[out + count - 1] = nxt
        prev_prev_class = prev_class
        prev_class = c
        prev_cp = cp
        i = nxt
    return count


@njit(parallel=True, **JIT)
def _count_tokens(data, offsets, jieba_mode):
    counts = np.zeros(offsets.size - 1, np.int64)
    empty_i = np.zeros(0, np.int64)
    empty_b = np.zeros(0, np.uint8)
    for s in prange(offsets.size - 1):
        # np.int64(0), not 0: a literal argument compiles the callee once more for its own type
        counts[s] = _tokens_of_string(data, offsets[s], offsets[s + 1], empty_i, empty_i, empty_b, np.int64(0),
                                      jieba_mode)
    return counts


@njit(parallel=True, **JIT)
def _fill_tokens(data, offsets, token_offsets, starts, ends, is_han, jieba_mode):
    for s in prange(offsets.size - 1):
        _tokens_of_string(data, offsets[s], offsets[s + 1], starts, ends, is_han, token_offsets[s], jieba_mode)


def presplit(data: np.ndarray, offsets: np.ndarray, jieba_mode: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tokens of every string: (starts, ends) byte positions in ``data``, lattice-run flags (Han
    runs; jieba's blocks in ``jieba_mode``), and row offsets."""
    jieba_mode = bool(jieba_mode)
    counts = _count_tokens(data, offsets, jieba_mode)
    token_offsets = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=token_offsets[1:])
    total = int(token_offsets[-1])
    starts = np.empty(total, np.int64)
    ends = np.empty(total, np.int64)
    is_han = np.empty(total, np.uint8)
    if total:
        _fill_tokens(data, offsets, token_offsets, starts, ends, is_han, jieba_mode)
    return starts, ends, is_han, token_offsets


@njit(inline="always", **JIT)
def _score_at(route, local, split, begin, q):
    """Best score from q: the re-solved row up to `split`, the original route after it."""
    return local[q - begin] if q <= split else route[q - begin]


@njit(**JIT)
def best_edge(char_end, begin, edge_ends, edge_values, first, last, weights, unknown_weight, jieba_mode,
              skip_end, route, local, split):
    """(score, end, value) of the best edge out of the character start whose character ends at
    char_end (best_edge in segment.cu)."""
    has_dict_edge = False
    covered = False
    for k in range(first, last + 1):
        if weights[edge_values[k]] == -np.inf or edge_ends[k] == skip_end:
            continue
        has_dict_edge = True
        if edge_ends[k] == char_end:
            covered = True
    best = -np.inf
    best_end = -1
    best_value = -1
    fallback = (not has_dict_edge) if jieba_mode else (not covered)
    if fallback and char_end != skip_end:
        best = unknown_weight + _score_at(route, local, split, begin, char_end)
        best_end = char_end
    for k in range(first, last + 1):
        w = weights[edge_values[k]]
        if w == -np.inf or edge_ends[k] == skip_end:
            continue
        sc = w + _score_at(route, local, split, begin, edge_ends[k])
        if best_end < 0 or (sc >= best if jieba_mode else sc > best):
            best = sc
            best_end = edge_ends[k]
            best_value = edge_values[k]
    return best, best_end, best_value


@njit(inline="always", **JIT)
def _first_edge_at(edge_starts, p, e_lo, e):
    first = e + 1
    while first - 1 >= e_lo and edge_starts[first - 1] == p:
        first -= 1
    return first


@njit(inline="always", **JIT)
def _character_ends(data, begin, end, nxt):
    """The forward pass of a span's Viterbi: where each character of ``[begin, end)`` ends, at
    ``nxt[start - begin]`` (-1 inside a character), so each is validated once."""
    nxt[:end - begin] = -1
    p = begin
    while p < end:
        n, _ = sequence_at(data, p, end)
        nxt[p - begin] = p + max(n, 1)
        p = nxt[p - begin]


@njit(**JIT)
def solve_span(data, begin, end, edge_starts, edge_ends, edge_values, e_lo, e_hi, weights, unknown_weight,
               tail_score, jieba_mode, score, nxt, value):
    """Backward Viterbi over span [begin, end) into the scratch rows; returns the word count."""
    _character_ends(data, begin, end, nxt)
    score[end - begin] = tail_score
    e = e_hi - 1
    for p in range(end - 1, begin - 1, -1):
        char_end = nxt[p - begin]
        score[p - begin] = -np.inf
        value[p - begin] = -1
        if char_end < 0:
            continue
        first = _first_edge_at(edge_starts, p, e_lo, e)
        best, best_end, best_value = best_edge(char_end, begin, edge_ends, edge_values, first, e, weights,
                                               unknown_weight, jieba_mode, -1, score, score, end)
        e = first - 1
        score[p - begin] = best
        nxt[p - begin] = best_end
        value[p - begin] = best_value
    words = 0
    p = begin
    while p < end:
        p = nxt[p - begin]
        words += 1
    return words


@njit(parallel=True, **JIT)
def _route(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
           unknown_weight, tail_score, jieba_mode, scratch_offsets, scores, nxt, values):
    counts = np.zeros(span_starts.size, np.int64)
    for s in prange(span_starts.size):
        a, b = scratch_offsets[s], scratch_offsets[s + 1]
        counts[s] = solve_span(data, span_starts[s], span_ends[s], edge_starts, edge_ends, edge_values,
                               span_edge_offsets[s], span_edge_offsets[s + 1], weights, unknown_weight, tail_score,
                               jieba_mode, scores[a:b], nxt[a:b], values[a:b])
    return counts


@njit(parallel=True, **JIT)
def _emit(span_starts, span_ends, scratch_offsets, nxt, values, word_offsets, word_ends, word_values):
    for s in prange(span_starts.size):
        begin, row, out = span_starts[s], scratch_offsets[s], word_offsets[s]
        p = begin
        while p < span_ends[s]:
            word_ends[out] = nxt[row + p - begin]
            word_values[out] = values[row + p - begin]
            out += 1
            p = nxt[row + p - begin]


def viterbi_segment(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
                    unknown_weight, tail_score, jieba_mode):
    """Best path of every span: (word_ends, word_values, span_word_offsets)."""
    scratch_offsets = np.zeros(span_starts.size + 1, np.int64)
    np.cumsum(span_ends - span_starts + 1, out=scratch_offsets[1:])
    scores = np.empty(scratch_offsets[-1], np.float64)
    nxt = np.empty(scratch_offsets[-1], np.int64)
    values = np.empty(scratch_offsets[-1], np.int32)
    counts = _route(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
                    float(unknown_weight), float(tail_score), bool(jieba_mode), scratch_offsets, scores, nxt, values)
    word_offsets = np.zeros(span_starts.size + 1, np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    word_ends = np.empty(word_offsets[-1], np.int64)
    word_values = np.empty(word_offsets[-1], np.int32)
    _emit(span_starts, span_ends, scratch_offsets, nxt, values, word_offsets, word_ends, word_values)
    return word_ends, word_values, word_offsets


@njit(parallel=True, **JIT)
def _losses(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
            unknown_weight, jieba_mode, scratch_offsets, scores, job_spans, job_starts, job_ends, job_scratch_offsets,
            job_scratch):
    losses = np.empty(job_spans.size, np.float64)
    for j in prange(job_spans.size):
        s, word_start, word_end = job_spans[j], job_starts[j], job_ends[j]
        begin, end, e_lo = span_starts[s], span_ends[s], span_edge_offsets[s]
        route = scores[scratch_offsets[s]:scratch_offsets[s + 1]]
        local = job_scratch[job_scratch_offsets[j]:job_scratch_offsets[j + 1]]
        e = span_edge_offsets[s + 1] - 1
        while e >= e_lo and edge_starts[e] > word_start:
            e -= 1
        for p in range(word_start, begin - 1, -1):
            local[p - begin] = -np.inf
            if not starts_char(data, p, begin, end):
                continue
            first = _first_edge_at(edge_starts, p, e_lo, e)
            char_end = p + 1
            while char_end < end and not starts_char(data, char_end, begin, end):
                char_end += 1
            best, _, _ = best_edge(char_end, begin, edge_ends, edge_values, first, e, weights, unknown_weight,
                                   jieba_mode, word_end if p == word_start else -1, route, local, word_start)
            e = first - 1
            local[p - begin] = best
        losses[j] = route[0] - local[0]
    return losses


def viterbi_loss(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
                 unknown_weight, tail_score, jieba_mode, job_spans, job_starts, job_ends):
    """DictCut's pruning loss of each job (a word occurrence [start, end) on its span's best path):
    best span score minus the best score without that edge."""
    scratch_offsets = np.zeros(span_starts.size + 1, np.int64)
    np.cumsum(span_ends - span_starts + 1, out=scratch_offsets[1:])
    scores = np.empty(scratch_offsets[-1], np.float64)
    nxt = np.empty(scratch_offsets[-1], np.int64)
    values = np.empty(scratch_offsets[-1], np.int32)
    _route(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
           float(unknown_weight), float(tail_score), bool(jieba_mode), scratch_offsets, scores, nxt, values)
    job_scratch_offsets = np.zeros(job_spans.size + 1, np.int64)
    np.cumsum(job_starts - span_starts[job_spans] + 1, out=job_scratch_offsets[1:])
    job_scratch = np.empty(job_scratch_offsets[-1], np.float64)
    return _losses(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
                   float(unknown_weight), bool(jieba_mode), scratch_offsets, scores, job_spans, job_starts, job_ends,
                   job_scratch_offsets, job_scratch)


@njit(parallel=True, **JIT)
def forward_longest_match(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets):
    """Forward longest match over every span (DictCut's cold start): the dictionary value of each
    word taken, -1 for a character no dictionary word starts with. Returns (values, span offsets)."""
    n = span_starts.size
    counts = np.zeros(n, np.int64)
    for s in prange(n):
        counts[s] = _longest_match_span(data, span_starts[s], span_ends[s], edge_starts, edge_ends, edge_values,
                                        span_edge_offsets[s], span_edge_offsets[s + 1], np.zeros(0, np.int32),
                                        np.int64(0))  # not 0: a literal compiles the callee once more
    offsets = np.zeros(n + 1, np.int64)
    for s in range(n):  # not offsets[1:] = np.cumsum(counts): the slice assignment compiles for seconds
        offsets[s + 1] = offsets[s] + counts[s]
    values = np.empty(offsets[-1], np.int32)
    for s in prange(n):
        _longest_match_span(data, span_starts[s], span_ends[s], edge_starts, edge_ends, edge_values,
                            span_edge_offsets[s], span_edge_offsets[s + 1], values, offsets[s])
    return values, offsets


@njit(**JIT)
def _longest_match_span(data, begin, end, edge_starts, edge_ends, edge_values, e_lo, e_hi, out, at):
    words = 0
    p = begin
    e = e_lo
    while p < end:
        while e < e_hi and edge_starts[e] < p:
            e += 1
        longest = -1
        value = -1
        while e < e_hi and edge_starts[e] == p:  # ends ascending: the last one is the longest
            longest = edge_ends[e]
            value = edge_values[e]
            e += 1
        if longest < 0:
            longest = p + 1
            while longest < end and not starts_char(data, longest, begin, end):
                longest += 1
        if out.size:
            out[at + words] = value
        words += 1
        p = longest
    return words


# ------------------------------------------------------- whole rows in one pass (CPU only)
# On the CPU one pass per row (pre-split, trie walk and Viterbi fused, words assembled) keeps no
# lattice, edge or per-token array in memory between stages. The CUDA twin (the segment_* kernels
# at the end of cuda/segment.cu) works over the batch's bytes instead and cuts long runs into
# pieces solved on separate threads; it gives the same words (its notes say why).


@njit(**JIT)
def _three_byte_slots(state, check, label):
    """The trie slot reached by each three-byte character's UTF-8 (indexed by codepoint; -1: none),
    so that a walk from a Han character starts past its first character in one read."""
    slots = np.full(0x10000, -1, np.int32)
    for cp in range(0x800, 0x10000):
        slot = trie_step(state, check, label, np.int64(0), np.uint8(0xE0 | (cp >> 12)))
        if slot >= 0:
            slot = trie_step(state, check, label, slot, np.uint8(0x80 | ((cp >> 6) & 0x3F)))
        if slot >= 0:
            slot = trie_step(state, check, label, slot, np.uint8(0x80 | (cp & 0x3F)))
        slots[cp] = slot
    return slots


@njit(**JIT)  # serial: a pass over memory, milliseconds; parallel=True would cost ~0.5 s to compile
def _packed_nodes(state, check, label, eow):
    """Per slot, (state, check, value of the word ending there or -1, 0) side by side: a step of
    the walk then reads one 16-byte record, not four arrays (the walk is bound by cache misses)."""
    nodes = np.zeros((state.size, 4), np.int32)
    for pos in range(state.size):
        nodes[pos, 0] = state[pos]
        nodes[pos, 1] = check[pos]
        nodes[pos, 2] = trie_value(state, check, label, eow, pos)
    return nodes


@njit(inline="always", **JIT)
def _packed_step(nodes, pos, byte):
    """:func:`trie_step` on the packed records: the slot reached from ``pos`` on ``byte``, or -1."""
    if byte == 0:
        return -1
    nxt = pos ^ np.int64(nodes[pos, 0]) ^ np.int64(byte)
    if nxt < 0 or nxt >= nodes.shape[0] or nodes[nxt, 1] != pos + 1:
        return -1
    return nxt


@njit(**JIT)
def _route_fused(nodes, first_slots, data, begin, end, weights, unknown_weight, tail_score, jieba_mode,
                 score, nxt, value):
    """:func:`solve_span` with the run's dictionary edges found by walking the trie from each
    character start as the backward pass reaches it (the edges ``trie_prefix_search`` would give,
    in the same order, so the same floats are added and compared: the same path)."""
    _character_ends(data, begin, end, nxt)
    score[end - begin] = tail_score
    for p in range(end - 1, begin - 1, -1):
        char_end = nxt[p - begin]
        score[p - begin] = -np.inf
        value[p - begin] = -1
        if char_end < 0:
            continue
        best = -np.inf
        best_end = -1
        best_value = -1
        covered = False
        # the edges out of p, shortest first (best_edge's loop); a three-byte character (the
        # sequence is well formed: its length says so) is stepped over by the table
        slot, q = 0, p
        if char_end - p == 3:
            slot = first_slots[((data[p] & 0x0F) << 12) | ((data[p + 1] & 0x3F) << 6) | (data[p + 2] & 0x3F)]
            q = char_end
        while slot >= 0:
            if q > p:
                v = nodes[slot, 2]
                if v >= 0 and weights[v] != -np.inf:
                    if q == char_end:
                        covered = True
                    sc = weights[v] + score[q - begin]
                    if best_end < 0 or (sc >= best if jieba_mode else sc > best):
                        best = sc
                        best_end = q
                        best_value = v
            if q == end:
                break
            slot = _packed_step(nodes, slot, data[q])
            q += 1
        # best_edge tries the fallback edge first: it stays unless an edge beats it (jieba: it is
        # only there when no edge is)
        if (best_end < 0) if jieba_mode else not covered:
            fallback = unknown_weight + score[char_end - begin]
            if best_end < 0 or not best > fallback:
                best = fallback
                best_end = char_end
                best_value = -1
        score[p - begin] = best
        nxt[p - begin] = best_end
        value[p - begin] = best_value


@njit(inline="always", **JIT)
def _ascii_alnum(byte):
    folded = byte | 0x20
    return (0x30 <= byte <= 0x39) or (0x61 <= folded <= 0x7A)


@njit(**JIT)
def _row_words(nodes, first_slots, data, begin, end, weights, unknown_weight, tail_score, jieba_mode, tok_starts,
               tok_ends, tok_han, score, nxt, value, out_starts, out_ends, out_ids, at):
    """The words of row data[begin:end) written from ``at`` (positions relative to ``begin``);
    returns their count. jieba mode joins consecutive one-byte ASCII letter/digit words of a run
    (``_join_ascii_runs`` of the segmenter)."""
    tokens = _tokens_of_string(data, begin, end, tok_starts, tok_ends, tok_han, 0, jieba_mode)
    w = at
    for t in range(tokens):
        a, b = tok_starts[t], tok_ends[t]
        if not tok_han[t]:
            out_starts[w], out_ends[w], out_ids[w] = a - begin, b - begin, -1
            w += 1
            continue
        _route_fused(nodes, first_slots, data, a, b, weights, unknown_weight, tail_score, jieba_mode, score, nxt,
                     value)
        joined = 0  # one-byte ASCII alnum words in the open run (jieba mode)
        p = a
        while p < b:
            q = nxt[p - a]
            if jieba_mode and q - p == 1 and _ascii_alnum(data[p]):
                if joined:
                    out_ends[w - 1] = q - begin
                    out_ids[w - 1] = -1
                    joined += 1
                    p = q
                    continue
                joined = 1
            else:
                joined = 0
            out_starts[w], out_ends[w], out_ids[w] = p - begin, q - begin, value[p - a]
            w += 1
            p = q
    return w - at


@njit(**JIT)
def _chunk_words(nodes, first_slots, data, offsets, first_row, last_row, weights, unknown_weight, tail_score,
                 jieba_mode, out_starts, out_ends, out_ids, counts):
    """The words of rows first_row..last_row-1, each written from its first byte's index (a row
    has no more words than bytes), and their counts. Chunks run on threads (see segment_rows)."""
    base = offsets[0]
    longest = 0
    for r in range(first_row, last_row):
        longest = max(longest, offsets[r + 1] - offsets[r])
    tok_starts = np.empty(longest, np.int64)
    tok_ends = np.empty(longest, np.int64)
    tok_han = np.empty(longest, np.uint8)
    score = np.empty(longest + 1, np.float64)
    nxt = np.empty(longest + 1, np.int64)
    value = np.empty(longest + 1, np.int32)
    for r in range(first_row, last_row):
        counts[r] = _row_words(nodes, first_slots, data, offsets[r], offsets[r + 1], weights, unknown_weight,
                               tail_score, jieba_mode, tok_starts, tok_ends, tok_han, score, nxt, value, out_starts,
                               out_ends, out_ids, offsets[r] - base)


def _rows_words(nodes, first_slots, data, offsets, chunks, weights, unknown_weight, tail_score, jieba_mode,
                out_starts, out_ends, out_ids):
    """Every row's word count, the words written by :func:`_chunk_words`, a chunk of rows per
    task on a pool of Numba's thread count (the jitted code releases the GIL). Threads, not
    ``prange``: the same parallelism, without compiling a parallel function (seconds at first use)."""
    counts = np.zeros(offsets.size - 1, np.int64)

    def chunk(c: int) -> None:
        _chunk_words(nodes, first_slots, data, offsets, int(chunks[c]), int(chunks[c + 1]), weights, unknown_weight,
                     tail_score, jieba_mode, out_starts, out_ends, out_ids, counts)

    n_chunks = chunks.size - 1
    if n_chunks <= 1 or numba.get_num_threads() == 1:
        for c in range(n_chunks):
            chunk(c)
    else:
        with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
            list(pool.map(chunk, range(n_chunks)))
    return counts


@njit(**JIT)  # serial: a copy bound by memory; parallel=True would cost ~0.5 s to compile
def _compact(offsets, chunks, word_offsets, tmp_starts, tmp_ends, tmp_ids, starts, ends, ids):
    base = offsets[0]
    for c in range(chunks.size - 1):
        for r in range(chunks[c], chunks[c + 1]):
            src = offsets[r] - base
            for k in range(word_offsets[r + 1] - word_offsets[r]):
                starts[word_offsets[r] + k] = tmp_starts[src + k]
                ends[word_offsets[r] + k] = tmp_ends[src + k]
                ids[word_offsets[r] + k] = tmp_ids[src + k]


def segment_rows(state, check, label, eow, data, offsets, weights, unknown_weight, tail_score, jieba_mode):
    """The whole segmentation of every row (pre-split, trie, Viterbi, jieba's ASCII joins) in one
    pass per row, parallel over chunks of rows of about equal bytes: word starts and ends (int64,
    relative to the row), word ids (int32, -1 off the dictionary) and row offsets (int64). Rows must
    be shorter than 2**31 bytes (the segmenter sends longer runs through its windows instead).

    >>> from cpu_fallback.double_array import arrays_of
    >>> trie = arrays_of(["英国".encode(), "英国人".encode()])
    >>> data = np.frombuffer("他是英国人Tom".encode(), np.uint8)
    >>> weights = np.log(np.array([80.0, 100.0]) / 300)
    >>> starts, ends, ids, rows = segment_rows(*trie, data, np.array([0, 18]), weights, np.log(1 / 300), 0.0, True)
    >>> ends.tolist(), ids.tolist(), rows.tolist()
    ([3, 6, 15, 18], [-1, -1, 1, -1], [0, 4])
    """
    offsets = np.ascontiguousarray(offsets, np.int64)
    rows = offsets.size - 1
    if rows and int(np.diff(offsets).max()) >= 1 << 31:
        raise ValueError("segment_rows takes rows shorter than 2**31 bytes (positions are int32 within a row)")
    chunks = chunk_bounds(np.diff(offsets), min_bytes=1 << 16, per_thread=8)
    size = int(offsets[-1] - offsets[0]) if rows else 0
    tmp_starts, tmp_ends, tmp_ids = np.empty(size, np.int32), np.empty(size, np.int32), np.empty(size, np.int32)
    counts = _rows_words(_packed_nodes(state, check, label, eow), _three_byte_slots(state, check, label), data,
                         offsets, chunks, weights, float(unknown_weight), float(tail_score), bool(jieba_mode),
                         tmp_starts, tmp_ends, tmp_ids)
    word_offsets = np.zeros(rows + 1, np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    total = int(word_offsets[-1])
    starts, ends, ids = np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int32)
    _compact(offsets, chunks, word_offsets, tmp_starts, tmp_ends, tmp_ids, starts, ends, ids)
    return starts, ends, ids, word_offsets
