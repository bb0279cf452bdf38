"""Numba twins of ``cuda/segment.cu``: DictCut's pre-split and Viterbi lattice, parallel over
strings (pre-split) and over Han runs (Viterbi)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

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
        counts[s] = _tokens_of_string(data, offsets[s], offsets[s + 1], empty_i, empty_i, empty_b, 0, jieba_mode)
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


@njit(**JIT)
def solve_span(data, begin, end, edge_starts, edge_ends, edge_values, e_lo, e_hi, weights, unknown_weight,
               tail_score, jieba_mode, score, nxt, value):
    """Backward Viterbi over span [begin, end) into the scratch rows; returns the word count."""
    # forward pass: where each character ends (-1 inside one), so each is validated once
    nxt[:end - begin] = -1
    p = begin
    while p < end:
        n, _ = sequence_at(data, p, end)
        nxt[p - begin] = p + max(n, 1)
        p = nxt[p - begin]
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
                                        span_edge_offsets[s], span_edge_offsets[s + 1], np.zeros(0, np.int32), 0)
    offsets = np.zeros(n + 1, np.int64)
    offsets[1:] = np.cumsum(counts)
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
