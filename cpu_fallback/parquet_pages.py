"""The data pages of a Parquet ``list<int32>`` column: repetition and definition levels and the
values, in Parquet's RLE / bit-packed hybrid encoding. No CUDA twin: host output
(:mod:`gpu_text.outputs.parquet_ids` writes the page headers and the file around them).

Why not pyarrow: its writer derives the levels of a list column value by value (about 8 ns an
id even without compression or dictionary, 13 ns with its defaults), which on a 2-core machine
is a sixth of the encoder's own time; here the levels come from the row lengths as runs, and the
values are bit-packed dictionary indices (the ids themselves, the dictionary being 0..V-1), eight
at a time in two registers (:func:`_pack_eight`), about 1 ns an id with the levels (page and all),
and files of the same size as pyarrow's default (1.8 bytes an id at 16k pieces).

Levels of the column ``ids: list<element: int32>`` (optional list, optional element): a row of
``n > 0`` ids is ``n`` entries, repetition levels ``0, 1, ..., 1`` and definition levels 3; an
empty row is one entry, repetition 0, definition 1 (a present, empty list).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jit import JIT, NOREF, inline

MAX_GROUPS = 63  # groups of a bit-packed run: its header, (63 << 1) | 1, stays one byte


@inline
def _varint(out, pos, value):
    while value >= 0x80:
        out[pos] = (value & 0x7F) | 0x80
        value >>= 7
        pos += 1
    out[pos] = value
    return pos + 1


@inline
def _put_u32(out, pos, value):
    for b in range(4):
        out[pos + b] = (value >> (8 * b)) & 0xFF


# The level streams' encoder keeps its state in local variables, passed in and returned as tuples
# by the inlined steps below (LLVM keeps them in registers): in an int64 array, every byte stored
# to ``out`` made it reload the state (the levels took 1.4 times as long). The state: the
# output position, the open bit-packed run's header byte (-1: none) and its groups, the values
# waiting for their group of eight (their count and their bits).


@inline
def _put_group(out, pos, header, groups, bits, width):
    """The eight waiting values (``bits``) as a group of the open bit-packed run (opening one if
    needed); returns the new position, header and groups."""
    if header < 0 or groups == MAX_GROUPS:
        header = pos
        groups = 0
        pos += 1
    for b in range(width):  # eight values of ``width`` bits: ``width`` bytes
        out[pos] = (bits >> (8 * b)) & 0xFF
        pos += 1
    groups += 1
    out[header] = (groups << 1) | 1
    return pos, header, groups


@inline
def _emit_run(out, pos, header, groups, waiting, bits, value, count, width):
    """``count`` copies of ``value`` (a level: one byte): into the waiting group until it is
    full, then as one RLE run when eight or more are left (closing the bit-packed run), else as
    waiting values; returns the new state."""
    while count > 0 and waiting != 0:
        bits |= value << (waiting * width)
        waiting += 1
        count -= 1
        if waiting == 8:
            pos, header, groups = _put_group(out, pos, header, groups, bits, width)
            waiting = 0
            bits = 0
    if count >= 8:
        header = -1
        pos = _varint(out, pos, count << 1)
        out[pos] = value
        pos += 1
        count = 0
    for _ in range(count):  # fewer than eight, and no value waiting before them
        bits |= value << (waiting * width)
        waiting += 1
    return pos, header, groups, waiting, bits


@njit(**NOREF)
def _levels(offsets, first, last, out, pos, width):
    """The repetition levels (``width`` 1) or the definition levels (``width`` 2) of rows
    ``first:last``, after their 4-byte length at ``pos``; returns the end position. Equal levels
    are joined into one pending run before they are emitted (a run of rows of one token is one
    run of definition levels 3). The last group is padded with zeros: the page's entry count
    tells a reader where the levels end."""
    start = pos
    pos += 4
    # typed, not literal, constants: Numba compiles a callee once more for every literal argument
    zero = np.int64(0)
    header, groups, waiting, bits = np.int64(-1), zero, zero, zero
    pending, count = zero, zero  # the pending run: its level and length
    for r in range(first, last):
        n = offsets[r + 1] - offsets[r]
        if width == 1:  # 0 starts a row, 1 continues it
            if count > 0 and pending != 0:
                pos, header, groups, waiting, bits = _emit_run(out, pos, header, groups, waiting, bits, pending,
                                                               count, width)
                count = 0
            pending = 0
            count += 1
            if n > 1:
                pos, header, groups, waiting, bits = _emit_run(out, pos, header, groups, waiting, bits, zero, count,
                                                               width)
                pending = 1
                count = n - 1
        else:  # 3 for a token, 1 for an empty (present) list
            level, length = (1, 1) if n == 0 else (3, n)
            if count > 0 and pending != level:
                pos, header, groups, waiting, bits = _emit_run(out, pos, header, groups, waiting, bits, pending,
                                                               count, width)
                count = 0
            pending = level
            count += length
    if count > 0:
        pos, header, groups, waiting, bits = _emit_run(out, pos, header, groups, waiting, bits, pending, count,
                                                       width)
    if waiting > 0:
        pos, header, groups = _put_group(out, pos, header, groups, bits, width)
    _put_u32(out, start, pos - start - 4)
    return pos


@inline
def _pack_eight(values, k, width, out, pos):
    """``values[k:k + 8]`` (at most 16 bits each) bit-packed into ``width`` bytes at ``pos``;
    returns the end position. The group is two registers of four values and leaves as sixteen
    bytes, a constant count of byte stores that LLVM merges into two words; the next group
    overwrites all but this one's ``width``, so ``out`` needs 16 bytes of room after the group
    (:func:`page_bytes_bound` has them). 3.5 times faster than a value at a time with its bytes
    counted out (:func:`_pack_tail`), and the ids are most of a page. ``k`` and ``pos`` are
    unsigned (``np.uint64``): a signed index costs each load and store Numba's negative-index
    check, which also keeps LLVM from merging the stores (twice the time of the whole loop)."""
    shift = np.uint64(width)
    low = np.uint64(0)
    high = np.uint64(0)
    for j in range(4):
        low |= np.uint64(values[k + np.uint64(j)]) << (shift * np.uint64(j))
        high |= np.uint64(values[k + np.uint64(4 + j)]) << (shift * np.uint64(j))
    # the group's bits: low's 4 * width, then high's; two shifts by 2 * width, as one by 64 (width
    # 16) would be undefined
    half = shift * np.uint64(2)
    first = low | ((high << half) << half)
    second = high >> (np.uint64(64) - shift * np.uint64(4))
    for b in range(8):  # one word's bytes, then the other's: interleaved, LLVM does not merge them
        out[pos + np.uint64(b)] = np.uint8((first >> np.uint64(8 * b)) & np.uint64(0xFF))
    for b in range(8):
        out[pos + np.uint64(8 + b)] = np.uint8((second >> np.uint64(8 * b)) & np.uint64(0xFF))
    return pos + shift


@inline
def _pack_tail(values, k, last, width, out, pos):
    """The eight values from ``values[k]`` (zeros from ``last`` on) bit-packed into ``width``
    bytes at ``pos``, a value at a time: a page's last group, or values wider than 16 bits."""
    bits = np.uint64(0)
    filled = 0
    for j in range(8):
        value = np.uint64(values[k + j]) if k + j < last else np.uint64(0)
        bits |= value << np.uint64(filled)
        filled += width
        if filled >= 32:  # at most one flush a value: width <= 32 and filled < 32 before
            for b in range(4):
                out[pos + b] = np.uint8((bits >> np.uint64(8 * b)) & np.uint64(0xFF))
            bits >>= np.uint64(32)
            filled -= 32
            pos += 4
    while filled > 0:  # a group is 8 * width bits: whole bytes
        out[pos] = np.uint8(bits & np.uint64(0xFF))
        bits >>= np.uint64(8)
        filled -= 8
        pos += 1
    return pos


@njit(**NOREF)
def _pack_groups(values, k, groups, width, out, pos):
    """``groups`` whole groups from ``values[k]`` by :func:`_pack_eight`; returns the end position."""
    at = np.uint64(pos)
    start = np.uint64(k)
    for group in range(groups):
        at = _pack_eight(values, start + np.uint64(8 * group), width, out, at)
    return np.int64(at)


@njit(**NOREF)
def _pack_values(values, first, last, width, out, pos):
    """``values[first:last]`` bit-packed at ``width`` bits in runs of :data:`MAX_GROUPS` groups of
    eight (the last group padded with zeros); returns the end position. The hot loop of a page."""
    groups = (last - first + 7) // 8
    whole = (last - first) // 8 if width <= 16 else 0  # the groups _pack_eight takes
    done = 0
    while done < groups:
        run = min(MAX_GROUPS, groups - done)
        out[pos] = (run << 1) | 1
        fast = max(0, min(run, whole - done))
        pos = _pack_groups(values, first + 8 * done, fast, width, out, pos + 1)
        for group in range(done + fast, done + run):
            pos = _pack_tail(values, first + 8 * group, last, width, out, pos)
        done += run
    return pos


@njit(**JIT)
def encode_pages(values, offsets, page_rows, width, out, page_ends):
    """Encode the rows ``offsets`` cuts ``values`` into (int64 offsets, int32 values), a data page
    per row range ``page_rows[p]:page_rows[p + 1]``, one after another into ``out``; the end of
    page ``p`` in ``out`` goes to ``page_ends[p]``. Each page is the repetition levels and the
    definition levels (each a 4-byte length and the hybrid encoding, widths 1 and 2), then the
    values: with ``width > 0`` one byte ``width`` and the values bit-packed (dictionary indices),
    with ``width == 0`` the values PLAIN (4 bytes each). ``out`` must hold :func:`page_bytes_bound`.

    >>> import numpy as np
    >>> out, ends = np.zeros(64, np.uint8), np.zeros(1, np.int64)
    >>> encode_pages(np.array([5, 6, 7], np.int32), np.array([0, 2, 2, 3]), np.array([0, 3]), 3, out, ends)
    >>> out[:int(ends[0])].tolist()  # levels 0,1,0,0 and 3,3,1,3, values 5,6,7: a padded group each
    [2, 0, 0, 0, 3, 2, 3, 0, 0, 0, 3, 223, 0, 3, 3, 245, 1, 0]
    """
    pos = np.int64(0)  # typed constants: one compile of each callee (see _levels)
    for p in range(page_rows.size - 1):
        first, last = page_rows[p], page_rows[p + 1]
        pos = _levels(offsets, first, last, out, pos, np.int64(1))
        pos = _levels(offsets, first, last, out, pos, np.int64(2))
        if width > 0:
            out[pos] = width
            pos = _pack_values(values, offsets[first], offsets[last], width, out, pos + 1)
        else:
            for k in range(offsets[first], offsets[last]):
                _put_u32(out, pos, np.int64(values[k]))
                pos += 4
        page_ends[p] = pos


def page_bytes_bound(entries: int, values: int, pages: int, width: int) -> int:
    """Bytes :func:`encode_pages` may write at most for ``pages`` pages holding ``entries`` level
    entries and ``values`` ids at ``width`` bits (0: PLAIN). A stream of levels at ``w`` bits is
    at worst a bit-packed group of eight entries with a run header of its own, ``1 + w`` bytes
    (an RLE run is at most 2 bytes per 8 entries it covers), so ``1 + w`` bytes per eight entries
    and one more group per page; the values are ``width`` bytes per eight and a run header per 63
    groups, with 16 bytes of room for :func:`_pack_eight`'s whole store past the last group.
    Tight, because the writer's buffer is reused and so stays in the cache: a page of 2**20 ids at
    14 bits needs 2.4 MB.

    >>> page_bytes_bound(4, 3, 1, 3)  # the doctest of encode_pages writes 18
    34
    """
    groups = entries // 8 + pages  # every page's last group may be padded
    levels = 8 * pages + (2 + 3) * groups  # the two lengths, repetition (1 bit) and definition (2 bits)
    if width == 0:
        return levels + 4 * values
    value_groups = values // 8 + pages
    return levels + value_groups * width + value_groups // 63 + 2 * pages + 16 * pages
