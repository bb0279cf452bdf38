"""Numba twin of ``cuda/pre_tokenizer.cu``: the pre-tokenizer's leftmost-longest DFA split.

As on the GPU, every string is first cut where the DFA's ``joinable`` table says a pre-token must
begin whatever precedes it; the pieces are then scanned in parallel, so one long string still
uses every core.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .chunks import chunk_bounds, run_chunks
from .jit import INLINE, JIT, NOREF
from .utf8 import CLASS_SPACE, class_of, sequence_at

# Symbols: OTHER 0, SPACE (the space symbol) 1, DIGIT 2, ALPHA 3, HAN 4 as the character classes,
# APOSTROPHE 5; keep in sync with gpu_text.tokenizer.pre_tokenizer and PT_* in pre_tokenizer.cu.
N_SYMBOLS = 6
SYMBOL_SPACE, SYMBOL_APOSTROPHE = 1, 5


@njit(**INLINE)
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



def pretokenize_marks(data: np.ndarray, offsets: np.ndarray, dfa) -> np.ndarray:
    """Per byte (uint8): 0, or at every pre-token start 1 + the symbol of its first character.

    >>> from gpu_text.tokenizer.pre_tokenizer import PreTokenDFA
    >>> data = np.frombuffer("ab▁c1".encode(), np.uint8)
    >>> pretokenize_marks(data, np.array([0, 2, 7]), PreTokenDFA.compile("word")).tolist()
    [4, 0, 2, 0, 0, 0, 3]
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
    return marks
