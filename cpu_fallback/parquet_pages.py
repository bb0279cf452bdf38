"""The data pages of a Parquet ``list<int32>`` column: repetition and definition levels and the
values, in Parquet's RLE / bit-packed hybrid encoding. No CUDA twin: host output
(:mod:`gpu_text.outputs.parquet_ids` writes the page headers and the file around them).

Why not pyarrow: its writer derives the levels of a list column value by value (about 8 ns an
id even without compression or dictionary, 13 ns with its defaults), which on a 2-core machine
is a sixth of the encoder's own time; here the levels come from the row lengths as runs, and the
values are bit-packed dictionary indices (the ids themselves, the dictionary being 0..V-1), eight
at a time in two registers (:func:`_pack_eight`), about 2 ns an id with the levels (page and all),
and files of the same size as pyarrow's default (1.8 bytes an id at 16k pieces).

Levels of the column ``ids: list<element: int32>`` (optional list, optional element): a row of
``n > 0`` ids is ``n`` entries, repetition levels ``0, 1, ..., 1`` and definition levels 3; an
empty row is one entry, repetition 0, definition 1 (a present, empty list).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jit import INLINE, JIT, NOREF

# the encoder's state, one int64 array: the output position, the values waiting for their group of
# eight, where the open bit-packed run's header byte is (-1: none), its groups, the pending run
POS, WAITING, HEADER, GROUPS, RUN_VALUE, RUN_COUNT, PENDING = 0, 1, 2, 3, 4, 5, 6
STATE_SIZE = PENDING + 8
MAX_GROUPS = 63  # groups of a bit-packed run: its header, (63 << 1) | 1, stays one byte


@njit(**INLINE)
def _varint(out, pos, value):
    while value >= 0x80:
        out[pos] = (value & 0x7F) | 0x80
        value >>= 7
        pos += 1
    out[pos] = value
    return pos + 1


@njit(**INLINE)
def _flush_group(out, state, width):
    """Bit-pack the eight waiting values into the open bit-packed run (opening one if needed)."""
    pos = state[POS]
    if state[HEADER] < 0 or state[GROUPS] == MAX_GROUPS:
        state[HEADER] = pos
        state[GROUPS] = 0
        pos += 1
    bits = np.uint64(0)
    filled = 0
    for k in range(8):
        bits |= np.uint64(state[PENDING + k]) << np.uint64(filled)
        filled += width
        while filled >= 8:
            out[pos] = np.uint8(bits & np.uint64(0xFF))
            bits >>= np.uint64(8)
            filled -= 8
            pos += 1
    state[GROUPS] += 1
    out[state[HEADER]] = (state[GROUPS] << 1) | 1
    state[WAITING] = 0
    state[POS] = pos


@njit(**INLINE)
def _literal(out, state, value, width):
    state[PENDING + state[WAITING]] = value
    state[WAITING] += 1
    if state[WAITING] == 8:
        _flush_group(out, state, width)


@njit(**NOREF)
def _emit_run(out, state, value, count, width):
    """``count`` copies of ``value``: into the waiting group until it is full, then as one RLE run
    when eight or more are left (closing the bit-packed run), else as single values."""
    while count > 0 and state[WAITING] != 0:
        _literal(out, state, value, width)
        count -= 1
    if count >= 8:
        state[HEADER] = -1
        pos = _varint(out, state[POS], count << 1)
        for b in range((width + 7) // 8):
            out[pos] = (value >> (8 * b)) & 0xFF
            pos += 1
        state[POS] = pos
        count = 0
    for _ in range(count):
        _literal(out, state, value, width)


@njit(**INLINE)
def _run(out, state, value, count, width):
    """Add ``count`` copies of ``value``, joined with the pending run while the value repeats."""
    if state[RUN_COUNT] > 0 and state[RUN_VALUE] != value:
        _emit_run(out, state, state[RUN_VALUE], state[RUN_COUNT], width)
        state[RUN_COUNT] = 0
    state[RUN_VALUE] = value
    state[RUN_COUNT] += count


@njit(**NOREF)
def _start(out, state, pos):
    state[POS] = pos
    state[WAITING] = 0
    state[HEADER] = -1
    state[GROUPS] = 0
    state[RUN_COUNT] = 0


@njit(**NOREF)
def _finish(out, state, width):
    """Emit the pending run and the last group (padded with zeros: the page's entry count tells a
    reader where the values end); returns the end position."""
    if state[RUN_COUNT] > 0:
        _emit_run(out, state, state[RUN_VALUE], state[RUN_COUNT], width)
        state[RUN_COUNT] = 0
    if state[WAITING] > 0:
        for k in range(state[WAITING], 8):
            state[PENDING + k] = 0
        _flush_group(out, state, width)
    return state[POS]


@njit(**INLINE)
def _put_u32(out, pos, value):
    for b in range(4):
        out[pos + b] = (value >> (8 * b)) & 0xFF


@njit(**INLINE)
def _pack_eight(values, k, width, out, pos):
    """``values[k:k + 8]`` (at most 16 bits each) bit-packed into ``width`` bytes at ``pos``;
    returns the end position. The group is two registers of four values and leaves as sixteen
    bytes, a constant count of byte stores that LLVM merges into two words; the next group
    overwrites all but this one's ``width``, so ``out`` needs 16 bytes of room after the group
    (:func:`page_bytes_bound` has them). 3.5 times faster than a value at a time with its bytes
    counted out (:func:`_pack_tail`), and the ids are most of a page."""
    shift = np.uint64(width)
    low = np.uint64(0)
    high = np.uint64(0)
    for j in range(4):
        low |= np.uint64(values[k + j]) << (shift * np.uint64(j))
        high |= np.uint64(values[k + 4 + j]) << (shift * np.uint64(j))
    # the group's bits: low's 4 * width, then high's; two shifts by 2 * width, as one by 64 (width
    # 16) would be undefined
    half = shift * np.uint64(2)
    first = low | ((high << half) << half)
    second = high >> (np.uint64(64) - shift * np.uint64(4))
    target = out[pos:pos + 16]
    for b in range(8):  # one word's bytes, then the other's: interleaved, LLVM does not merge them
        target[b] = np.uint8((first >> np.uint64(8 * b)) & np.uint64(0xFF))
    for b in range(8):
        target[8 + b] = np.uint8((second >> np.uint64(8 * b)) & np.uint64(0xFF))
    return pos + width


@njit(**INLINE)
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
    """``groups`` whole groups from ``values[k]`` by :func:`_pack_eight`. The groups are indexed
    from 0 in a view: ``k + 8 * group``, of unknown sign to LLVM, cost every load a negative-index
    check, 2.5 times the loop's time."""
    whole = values[k:k + 8 * groups]
    for group in range(groups):
        pos = _pack_eight(whole, 8 * group, width, out, pos)
    return pos


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
    state = np.zeros(STATE_SIZE, np.int64)
    pos = 0
    for p in range(page_rows.size - 1):
        first, last = page_rows[p], page_rows[p + 1]
        _start(out, state, pos + 4)  # the repetition levels, after their 4-byte length
        for r in range(first, last):
            n = offsets[r + 1] - offsets[r]
            _run(out, state, 0, 1, 1)
            if n > 1:
                _run(out, state, 1, n - 1, 1)
        end = _finish(out, state, 1)
        _put_u32(out, pos, end - pos - 4)
        pos = end
        _start(out, state, pos + 4)  # the definition levels
        for r in range(first, last):
            n = offsets[r + 1] - offsets[r]
            if n == 0:
                _run(out, state, 1, 1, 2)
            else:
                _run(out, state, 3, n, 2)
        end = _finish(out, state, 2)
        _put_u32(out, pos, end - pos - 4)
        pos = end
        if width > 0:
            out[pos] = width
            pos = _pack_values(values, offsets[first], offsets[last], width, out, pos + 1)
        else:
            for k in range(offsets[first], offsets[last]):
                _put_u32(out, pos, values[k])
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
