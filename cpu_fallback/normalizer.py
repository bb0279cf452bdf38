"""Numba twin of ``cuda/normalizer.cu``: SentencePiece normalization, one string per parallel task.

Each string is walked left to right once to count its output and once to write it (then its
trailing space symbols are trimmed and the rows are packed). The rules are in
:mod:`gpu_text.tokenizer.normalizer`.
"""
from __future__ import annotations

import weakref

import numpy as np
from numba import njit

from .chunks import chunk_bounds, run_chunks
from .double_array import trie_step, trie_value, walk_prefixes
from .jit import JIT, NOREF, inline
from .utf8 import sequence_at

_SPACE = 0x20
REPLACEMENT_BYTES = np.frombuffer("\ufffd".encode(), np.uint8).copy()


_FROM_TARGETS, _FROM_DATA, _FROM_REPLACEMENT = 0, 1, 2


@njit(**JIT)
def _step(state, check, label, eow, target_offsets, data, i, end, none, match_starts):
    """The step at data[i]: (bytes consumed, where its output is, output start, output end).
    ``none``: an empty array for walk_prefixes' unused outputs (allocated once per string, not per step).
    ``match_starts[b]`` (its first 256 entries): whether any charsmap source starts with byte b."""
    if not match_starts[data[i]] and data[i] < 0x80:
        return 1, _FROM_DATA, i, i + 1
    _, stop, value = walk_prefixes(state, check, label, eow, data, i, end, none, none, 0, False)
    if value >= 0:
        return stop - i, _FROM_TARGETS, target_offsets[value], target_offsets[value + 1]
    length, _ = sequence_at(data, i, end)
    if length > 0:
        return length, _FROM_DATA, i, i + length
    return 1, _FROM_REPLACEMENT, 0, 3


@inline
def _char_step(state, check, label, eow, target_offsets, data, i, end, none, match_starts):
    """:func:`_step` at a character of 2 or 3 bytes, from the code point table when it decides
    (no trie walk: the charsmap's trie is megabytes, and every step of a walk may miss the cache)."""
    width, cp = sequence_at(data, i, end)
    if width > 1:
        found = match_starts[_CP_TABLE + cp]
        if found == _CP_NONE:
            return width, _FROM_DATA, i, i + width
        if found >= 0:
            return width, _FROM_TARGETS, target_offsets[found], target_offsets[found + 1]
    return _step(state, check, label, eow, target_offsets, data, i, end, none, match_starts)


@inline
def _byte(source, p, targets, data, replacement):
    # the buffers may differ in type (read-only input), so they are not returned from _step
    if source == _FROM_TARGETS:
        return targets[p]
    if source == _FROM_DATA:
        return data[p]
    return replacement[p]


@inline
def _put_symbol(symbol, origin, out, align, at, n, write, aligned):
    """The space symbol at out[at + n:] (when ``write``; its origin in ``align`` when ``aligned``)."""
    for k in range(symbol.size):
        if write:
            out[at + n] = symbol[k]
            if aligned:
                align[at + n] = origin
        n += 1
    return n


@inline
def _copy_char(data, i, width, begin, out, align, at, n, write, aligned):
    """The character data[i:i + width] at out[at + n:] as it is (when ``write``; its origin when
    ``aligned`` too); returns the new length."""
    for k in range(width):
        if write:
            out[at + n] = data[i + k]
            if aligned:
                align[at + n] = i - begin
        n += 1
    return n


@njit(**NOREF)
def normalize_row(state, check, label, eow, targets, target_offsets, data, begin, end, symbol, collapse, dummy,
                  replacement, out, align, at, write, aligned, match_starts, none):
    """Untrimmed output of one string (written at ``out[at:]`` when ``write``, each byte's origin at
    ``align[at:]`` when ``aligned`` too); returns its length. ``none``: an empty int64 array."""
    i = begin
    if collapse:  # steps that give exactly one space are skipped at the start
        while i < end:
            step, src, a, b = _step(state, check, label, eow, target_offsets, data, i, end, none, match_starts)
            if b - a != 1 or _byte(src, a, targets, data, replacement) != _SPACE:
                break
            i += step
    if i == end:
        return 0
    n = np.int64(0)  # typed, not literals: a literal argument compiles the callee once more for it
    if dummy:
        n = _put_symbol(symbol, n, out, align, at, n, write, aligned)
    prev_space = collapse
    while i < end:
        first = data[i]
        if first == _SPACE and _no_match_at(match_starts, data, i, end):
            if not prev_space:  # a space after a space is dropped when collapsing (prev_space is False otherwise)
                n = _put_symbol(symbol, i - begin, out, align, at, n, write, aligned)
            prev_space = collapse
            i += 1
            continue
        if first != _SPACE and _no_match_at(match_starts, data, i, end):
            width = 1 if first < 0x80 else sequence_at(data, i, end)[0]
            if width > 0:  # a well-formed character: copied as it is
                n = _copy_char(data, i, width, begin, out, align, at, n, write, aligned)
                prev_space = False
                i += width
                continue
        if 0xC2 <= first < 0xF0:
            step, src, a, b = _char_step(state, check, label, eow, target_offsets, data, i, end, none, match_starts)
            if src == _FROM_DATA:  # the character as it is (no space in it)
                n = _copy_char(data, i, step, begin, out, align, at, n, write, aligned)
                prev_space = False
                i += step
                continue
        else:
            step, src, a, b = _step(state, check, label, eow, target_offsets, data, i, end, none, match_starts)
        if prev_space:
            while a < b and _byte(src, a, targets, data, replacement) == _SPACE:
                a += 1
        if a < b:
            for p in range(a, b):
                byte = _byte(src, p, targets, data, replacement)
                if byte == _SPACE:
                    n = _put_symbol(symbol, i - begin, out, align, at, n, write, aligned)
                else:
                    if write:
                        out[at + n] = byte
                        if aligned:
                            align[at + n] = i - begin
                    n += 1
            prev_space = collapse and _byte(src, b - 1, targets, data, replacement) == _SPACE
        i += step
    return n


@inline
def trim_symbols(out, at, n, symbol):
    """The length of out[at:at + n] without its trailing space symbols."""
    m = symbol.size
    while n >= m:
        for k in range(m):
            if out[at + n - m + k] != symbol[k]:
                return n
        n -= m
    return n


@njit(**JIT)
def _rows(first, last, state, check, label, eow, targets, target_offsets, data, offsets, symbol, collapse, dummy,
          row_offsets, out, align, write, aligned, match_starts, lengths):
    """The lengths of rows first..last-1 (written from ``row_offsets`` on when ``write``)."""
    none = np.zeros(0, np.int64)
    for r in range(first, last):
        at = row_offsets[r]
        n = normalize_row(state, check, label, eow, targets, target_offsets, data, offsets[r], offsets[r + 1],
                          symbol, collapse, dummy, REPLACEMENT_BYTES, out, align, at, write, aligned, match_starts,
                          none)
        if write and collapse:
            n = trim_symbols(out, at, n, symbol)
        lengths[r] = n


@inline
def _no_match_at(starts, data, i, end):
    """True when no map entry matches at data[i] (the common case, decided by table lookups).

    ``starts[b]``: 0 when no entry starts with byte b; 1 when one does. Then
    ``starts[256 * (b + 1) + c]`` says whether an entry is b itself or continues with byte c: ASCII
    letters begin letter + combining-mark entries but are rarely followed by the mark, and most
    CJK lead bytes begin some entry but few of their second bytes do."""
    first = data[i]
    if starts[first] == 0:
        return True
    if i + 1 >= end:
        return False
    return starts[256 * (first + 1) + data[i + 1]] == 0


_CP_TABLE = 256 * 257  # where match_starts' code point section begins (see match_starts_table)
_CP_WALK, _CP_NONE = -2, -1


@njit(**JIT)
def _build_match_starts(state, check, label, eow):
    starts = np.zeros(_CP_TABLE + 0x10000, np.int32)
    for b in range(1, 256):
        node = trie_step(state, check, label, np.int64(0), np.uint8(b))
        if node < 0:
            continue
        starts[b] = 1
        whole = trie_value(state, check, label, eow, node) >= 0
        for c in range(256):
            if whole or trie_step(state, check, label, node, np.uint8(c)) >= 0:
                starts[256 * (b + 1) + c] = 1
    # the code points of 2 and 3 bytes: what the longest match at one of them is, when it is
    # decided by the character alone (the trie node its bytes reach has no child)
    utf8 = np.zeros(3, np.uint8)
    for cp in range(0x80, 0x10000):
        if cp < 0x800:
            utf8[0], utf8[1], width = 0xC0 | (cp >> 6), 0x80 | (cp & 0x3F), 2
        else:
            utf8[0], utf8[1], utf8[2], width = 0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F), 3
        node = np.int64(0)
        for k in range(width):
            node = trie_step(state, check, label, node, utf8[k])
            if node < 0:
                break
        if node < 0:
            starts[_CP_TABLE + cp] = _CP_NONE
            continue
        result = trie_value(state, check, label, eow, node)
        for c in range(1, 256):
            if trie_step(state, check, label, node, np.uint8(c)) >= 0:
                result = _CP_WALK  # a longer source may match: the walk decides
                break
        starts[_CP_TABLE + cp] = _CP_NONE if result == -1 else result
    return starts


_MATCH_STARTS: dict[int, np.ndarray] = {}  # id of a trie's state array -> its table, while the array lives


def match_starts_table(state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray) -> np.ndarray:
    """The table :func:`_no_match_at` and :func:`_char_step` read (int32): 256 first-byte flags,
    256 rows of 256 second-byte flags, then per code point below U+10000 of 2 or 3 bytes the
    longest match at it when the character decides it (-1: none; a target number: the character
    is a source and begins no longer one), or -2 (walk the trie). Built once per trie (it walks
    every such code point: ~10 ms) and kept while the trie's arrays live."""
    key = id(state)
    table = _MATCH_STARTS.get(key)
    if table is None:
        table = _build_match_starts(state, check, label, eow)
        _MATCH_STARTS[key] = table
        weakref.finalize(state, _MATCH_STARTS.pop, key, None)  # before the id can be reused
    return table


@njit(**JIT)
def _pack(first, last, out, align, row_offsets, offsets, lengths, new_offsets, packed, packed_align, aligned):
    for r in range(first, last):
        src, dst = row_offsets[r], new_offsets[r]
        # element loops, not slice assignments: those compile Numba's shape-mismatch message (seconds)
        for k in range(lengths[r]):
            packed[dst + k] = out[src + k]
        if aligned:
            for k in range(lengths[r]):
                packed_align[dst + r + k] = align[src + k]
            packed_align[new_offsets[r + 1] + r] = offsets[r + 1] - offsets[r]


def normalize_text(state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray, targets: np.ndarray,
                   target_offsets: np.ndarray, data: np.ndarray, offsets: np.ndarray, symbol: np.ndarray,
                   collapse: int, dummy: int, aligned: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Normalized bytes (uint8), their row offsets (int64, n + 1) and, when ``aligned``, the
    alignment (int64: per string, the original offset of every normalized byte and then the
    string's original length; None otherwise).

    The trie maps charsmap sources to target numbers; target ``t`` is
    ``targets[target_offsets[t]:target_offsets[t + 1]]``. ``symbol``: what a space becomes.
    ``collapse``: remove extra whitespace; ``dummy``: add the dummy prefix."""
    none8, none64 = np.zeros(0, np.uint8), np.zeros(0, np.int64)
    match_starts = match_starts_table(state, check, label, eow)
    bounds = chunk_bounds(np.diff(offsets), min_bytes=1 << 16)
    row_offsets = np.zeros(offsets.size, np.int64)
    lengths = np.zeros(offsets.size - 1, np.int64)
    common = (state, check, label, eow, targets, target_offsets, data, offsets, symbol, collapse, dummy, row_offsets)
    run_chunks(_rows, bounds, *common, none8, none64, False, False, match_starts, lengths)
    np.cumsum(lengths, out=row_offsets[1:])
    total = int(row_offsets[-1])
    out, align = np.empty(total, np.uint8), (np.empty(total, np.int64) if aligned else none64)
    run_chunks(_rows, bounds, *common, out, align, True, bool(aligned), match_starts, lengths)
    new_offsets = np.zeros(offsets.size, np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    packed = np.empty(int(new_offsets[-1]), np.uint8)
    packed_align = np.empty(packed.size + lengths.size, np.int64) if aligned else none64
    run_chunks(_pack, bounds, out, align, row_offsets, offsets, lengths, new_offsets, packed, packed_align,
               bool(aligned))
    return packed, new_offsets, (packed_align if aligned else None)
