"""Numba twin of ``cuda/pre_tokenizer.cu``: the pre-tokenizer's leftmost-longest DFA split.

As on the GPU, every string is first cut where the DFA's ``joinable`` table says a pre-token must
begin whatever precedes it; the pieces are then scanned in parallel, so one long string still
uses every core.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .chunks import chunk_bounds, run_chunks
from .double_array import walk_prefixes
from .jit import JIT, NOREF, inline
from .utf8 import CLASS_SPACE, class_of, sequence_at, starts_char

# Symbols: OTHER 0, SPACE (the space symbol) 1, DIGIT 2, ALPHA 3, HAN 4 as the character classes,
# APOSTROPHE 5; keep in sync with gpu_text.tokenizer.pre_tokenizer and PT_* in pre_tokenizer.cu.
N_SYMBOLS = 6
SYMBOL_SPACE, SYMBOL_APOSTROPHE = 1, 5
HAN_SYMBOL = 4
# The mark of a user symbol's pre-token; symbol_at packs a symbol's piece id above its byte length
# (PT_SYMBOL_MARK and PT_SYMBOL_BITS in pre_tokenizer.cu).
SYMBOL_MARK = N_SYMBOLS + 1
SYMBOL_BITS = 8


@inline
def _symbol_at(data, p, end, space):
    """(symbol, byte length) of the character at p; malformed bytes are one OTHER character."""
    n, cp = sequence_at(data, p, end)
    if cp == space:
        return SYMBOL_SPACE, max(n, 1)
    if cp == 0x27:
        return SYMBOL_APOSTROPHE, 1
    c = class_of(cp)
    return (0 if c == CLASS_SPACE else c), max(n, 1)


@njit(**JIT)
def _cuts(first, last, data, offsets, joinable, space, cuts):
    for s in range(first, last):
        begin, end = offsets[s], offsets[s + 1]
        p = begin
        prev = -1
        while p < end:
            sym, n = _symbol_at(data, p, end, space)
            if prev < 0 or joinable[prev, sym] == 0:
                cuts[p] = 1
            prev = sym
            p += n


@njit(**NOREF)
def next_pre_token(data, p, end, table, accepting, space):
    """(symbol of its first character, end) of the pre-token starting at data[p]: the longest
    accepted DFA match, or the first character alone."""
    first, n = _symbol_at(data, p, end, space)
    match_end = p + n  # an unmatched character stands alone
    state = 1
    q = p
    sym = first
    while True:
        state = table[state, sym]
        if state == 0:
            break
        q += n
        if accepting[state]:
            match_end = q
        if q >= end:
            break
        sym, n = _symbol_at(data, q, end, space)
    return first, match_end


@njit(**JIT)
def _scan(first, last, data, seg_starts, seg_ends, table, accepting, space, marks):
    for k in range(first, last):
        end = seg_ends[k]
        p = seg_starts[k]
        while p < end:
            first, match_end = next_pre_token(data, p, end, table, accepting, space)
            marks[p] = 1 + first
            p = match_end


def pretokenize(data: np.ndarray, offsets: np.ndarray, dfa) -> tuple[np.ndarray, np.ndarray]:
    """Pre-token starts (int64 positions in ``data``, ascending) and the symbol of each one's first
    character (uint8), for the compiled split ``dfa`` (a ``PreTokenDFA``).

    >>> from gpu_text.tokenizer.pre_tokenizer import PreTokenDFA
    >>> data = np.frombuffer("ab▁c1".encode(), np.uint8)
    >>> [a.tolist() for a in pretokenize(data, np.array([0, 2, 7]), PreTokenDFA.compile("word"))]
    [[0, 2, 6], [3, 1, 2]]
    """
    marks = pretokenize_marks(data, offsets, dfa)
    starts = np.flatnonzero(marks).astype(np.int64)
    return starts, (marks[starts] - 1).astype(np.uint8)



def pretokenize_marks(data: np.ndarray, offsets: np.ndarray, dfa, word_marks: np.ndarray | None = None) -> np.ndarray:
    """Per byte (uint8): 0, or at every pre-token start 1 + the symbol of its first character;
    ``word_marks`` (uint8 per byte, a dictionary cutter's word starts): every marked Han character
    starts a Han pre-token too.

    >>> from gpu_text.tokenizer.pre_tokenizer import PreTokenDFA
    >>> data = np.frombuffer("ab▁c1".encode(), np.uint8)
    >>> pretokenize_marks(data, np.array([0, 2, 7]), PreTokenDFA.compile("word")).tolist()
    [4, 0, 2, 0, 0, 0, 3]
    >>> data = np.frombuffer("a你好".encode(), np.uint8)
    >>> words = np.array([1, 1, 0, 0, 1, 0, 0], np.uint8)
    >>> pretokenize_marks(data, np.array([0, 7]), PreTokenDFA.compile("word"), words).tolist()
    [4, 5, 0, 0, 5, 0, 0]
    """
    space = np.uint32(dfa.space)
    cuts = np.zeros(data.size, np.uint8)
    run_chunks(_cuts, chunk_bounds(np.diff(offsets)), data, offsets, dfa.joinable, space, cuts)
    seg_starts = np.flatnonzero(cuts).astype(np.int64)
    # strings are adjacent and each non-empty one starts with a cut, so a piece ends at the next cut
    seg_ends = np.append(seg_starts[1:], data.size).astype(np.int64)
    marks = np.zeros(data.size, np.uint8)
    run_chunks(_scan, chunk_bounds(seg_ends - seg_starts), data, seg_starts, seg_ends, dfa.table, dfa.accepting,
               space, marks)
    if word_marks is not None:
        if word_marks.dtype != np.uint8 or word_marks.size != data.size:
            raise ValueError(f"word_marks must be uint8, one per byte ({data.size}), not {word_marks.dtype} "
                             f"x {word_marks.size}")
        run_chunks(_mark_words, chunk_bounds(np.diff(offsets)), data, offsets, word_marks, space, marks)
    return marks


@njit(**JIT)
def _symbol_scan(first, last, data, offsets, table, accepting, space, state, check, label, eow, marks, symbol_at):
    """Rows first..last-1: the longest user symbol at every character, then the scan: a symbol
    where one starts, else the DFA's pre-token, cut at the next character where a symbol starts."""
    none = np.zeros(0, np.int64)
    for r in range(first, last):
        begin, end = offsets[r], offsets[r + 1]
        for i in range(begin, end):
            if starts_char(data, i, begin, end):
                _, stop, value = walk_prefixes(state, check, label, eow, data, i, end, none, none, 0, False)
                if value >= 0:
                    symbol_at[i] = (value << SYMBOL_BITS) | (stop - i)
        p = begin
        q = begin  # the next character where a symbol starts, once past p
        while p < end:
            if symbol_at[p] != 0:
                marks[p] = SYMBOL_MARK
                p += symbol_at[p] & ((1 << SYMBOL_BITS) - 1)
                continue
            if q <= p:
                q = p + 1
                while q < end and symbol_at[q] == 0:
                    q += 1
            first_symbol, match_end = next_pre_token(data, p, q, table, accepting, space)
            marks[p] = 1 + first_symbol
            p = match_end


def pretokenize_symbol_marks(data: np.ndarray, offsets: np.ndarray, dfa, state, check, label, eow,
                             sym_width: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pretokenize_marks` with user-defined symbols (a trie of their piece ids) taken whole:
    the marks (``SYMBOL_MARK`` at a symbol's pre-token) and, per byte, the longest symbol at each
    character (int32: piece id << 8 | byte length, 0 for none). ``sym_width`` (the longest
    symbol's bytes, at least 4) bounds the CUDA scan's steps; here rows are scanned whole.

    >>> from gpu_text.tokenizer.pre_tokenizer import PreTokenDFA
    >>> from cpu_fallback.double_array import arrays_of
    >>> data = np.frombuffer("ab<m>c".encode(), np.uint8)
    >>> marks, at = pretokenize_symbol_marks(data, np.array([0, 6]), PreTokenDFA.compile("word"),
    ...                                      *arrays_of([b"<m>"], [9]), 4)
    >>> marks.tolist(), (int(at[2]) >> 8, int(at[2]) & 255)
    ([4, 0, 7, 0, 0, 4], (9, 3))
    """
    marks = np.zeros(data.size, np.uint8)
    symbol_at = np.zeros(data.size, np.int32)
    run_chunks(_symbol_scan, chunk_bounds(np.diff(offsets)), data, offsets, dfa.table, dfa.accepting,
               np.uint32(dfa.space), state, check, label, eow, marks, symbol_at)
    return marks, symbol_at


@njit(**JIT)
def _mark_words(first, last, data, offsets, word_marks, space, marks):
    for r in range(first, last):
        begin, end = offsets[r], offsets[r + 1]
        for p in range(begin, end):
            if word_marks[p] and starts_char(data, p, begin, end) and _symbol_at(data, p, end, space)[0] == HAN_SYMBOL:
                marks[p] = 1 + HAN_SYMBOL
