"""Launch wrappers of ``cuda/utf8.cu``; the Numba twins are in ``cpu_fallback/utf8.py``."""
from __future__ import annotations

from typing import Any

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

# Bytes per block of the decode kernels: GT_BLOCK * UTF8_ITEMS in cuda/utf8.cu.
TILE_BYTES = BLOCK * 16
# Below this many bytes, positions within a string fit int32 (as in the Numba twin).
NARROW_POSITIONS_BELOW = 2**31


def _status(rt: KernelRuntime, n_bytes: int) -> tuple[Any, int]:
    """Zeroed look-back state of a one-pass decode (cuda/lookback.cuh) and its number of tiles."""
    n_tiles = blocks_for(n_bytes, TILE_BYTES)
    return rt.xp.zeros(n_tiles + 1, rt.xp.uint64), n_tiles


def utf8_string_stats(rt: KernelRuntime, data: Any, offsets: Any) -> tuple[Any, Any]:
    """Per string: number of characters and of malformed sequences (each one U+FFFD)."""
    xp = rt.xp
    n_strings = offsets.size - 1
    errors = xp.zeros(n_strings, xp.int64)
    if data.size == 0:
        return xp.zeros(n_strings, xp.int64), errors
    status, n_tiles = _status(rt, data.size)
    row_offsets = xp.empty(n_strings + 1, xp.int64)
    launch(rt.function("utf8", "utf8_string_stats"), n_tiles,
           (data, offsets, i64(n_strings), i64(data.size), status, row_offsets, errors))
    return row_offsets[1:] - row_offsets[:-1], errors


def utf8_decode(rt: KernelRuntime, data: Any, offsets: Any) -> tuple[Any, Any, Any]:
    """Codepoints (uint32), their byte offsets within their string (int32 below 2 GiB of data,
    else int64), and row offsets (int64). One kernel; one read of the total."""
    xp = rt.xp
    n_strings = offsets.size - 1
    narrow = data.size < NARROW_POSITIONS_BELOW
    position_type = xp.int32 if narrow else xp.int64
    if data.size == 0:
        return xp.empty(0, xp.uint32), xp.empty(0, position_type), xp.zeros(n_strings + 1, xp.int64)
    status, n_tiles = _status(rt, data.size)
    # Every character is at least one byte: room for n_bytes, the results are views of the front.
    codepoints = xp.empty(data.size, xp.uint32)
    positions = xp.empty(data.size, position_type)
    row_offsets = xp.empty(n_strings + 1, xp.int64)
    launch(rt.function("utf8", "utf8_decode" if narrow else "utf8_decode_wide"), n_tiles,
           (data, offsets, i64(n_strings), i64(data.size), status, codepoints, positions, row_offsets))
    total = int(row_offsets[-1])
    return codepoints[:total], positions[:total], row_offsets


def utf8_encode(rt: KernelRuntime, codepoints: Any, offsets: Any) -> tuple[Any, Any]:
    """UTF-8 bytes of ragged codepoints and the byte offsets of each row."""
    xp = rt.xp
    n = codepoints.size
    byte_ends = xp.empty(n, xp.int64)
    launch(rt.function("utf8", "utf8_encoded_lengths"), blocks_for(n, BLOCK), (codepoints, i64(n), byte_ends))
    xp.cumsum(byte_ends, out=byte_ends)
    data = xp.empty(int(byte_ends[-1]) if n else 0, xp.uint8)
    launch(rt.function("utf8", "utf8_encode"), blocks_for(n, BLOCK), (codepoints, i64(n), byte_ends, data))
    ends_with_zero = xp.concatenate([xp.zeros(1, xp.int64), byte_ends])
    return data, ends_with_zero[offsets]


def char_classify(rt: KernelRuntime, codepoints: Any) -> Any:
    """The :class:`gpu_text.utf8.CharClass` of every codepoint (uint8)."""
    xp = rt.xp
    n = codepoints.size
    classes = xp.empty(n, xp.uint8)
    launch(rt.function("utf8", "char_classify"), blocks_for(n, BLOCK), (codepoints, i64(n), classes))
    return classes
