"""Launch wrappers of ``cuda/utf8.cu``; the Numba twins are in ``cpu_fallback/utf8.py``."""
from __future__ import annotations

from typing import Any

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

# Bytes per block of the tiled kernels: GT_BLOCK * UTF8_ITEMS in cuda/utf8.cu.
TILE_BYTES = BLOCK * 16


def _stats(rt: KernelRuntime, data: Any, offsets: Any) -> tuple[Any, Any, Any]:
    xp = rt.xp
    n_strings = offsets.size - 1
    chars = xp.zeros(n_strings, xp.int64)
    errors = xp.zeros(n_strings, xp.int64)
    n_tiles = blocks_for(data.size, TILE_BYTES)
    tiles = xp.zeros(n_tiles, xp.int64)
    launch(rt.function("utf8", "utf8_string_stats"), n_tiles,
           (data, offsets, i64(n_strings), i64(data.size), chars, errors, tiles))
    return chars, errors, tiles


def utf8_string_stats(rt: KernelRuntime, data: Any, offsets: Any) -> tuple[Any, Any]:
    """Per string: number of characters and of malformed sequences (each one U+FFFD)."""
    chars, errors, _ = _stats(rt, data, offsets)
    return chars, errors


def utf8_decode(rt: KernelRuntime, data: Any, offsets: Any) -> tuple[Any, Any, Any]:
    """Codepoints (uint32), their byte offsets within their string (int64), and row offsets."""
    xp = rt.xp
    chars, _, tiles = _stats(rt, data, offsets)
    row_offsets = xp.zeros(chars.size + 1, xp.int64)
    xp.cumsum(chars, out=row_offsets[1:])
    total = int(row_offsets[-1])
    tile_offsets = xp.cumsum(tiles) - tiles
    codepoints = xp.empty(total, xp.uint32)
    positions = xp.empty(total, xp.int64)
    launch(rt.function("utf8", "utf8_decode"), tiles.size,
           (data, offsets, i64(offsets.size - 1), i64(data.size), tile_offsets, codepoints, positions))
    return codepoints, positions, row_offsets


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
