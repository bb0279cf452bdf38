"""Batched UTF-8: decode, encode, validate, character length and character classes.

The first stage of every text pipeline. The rule is Ustr's: a well-formed sequence
decodes to its codepoint; any malformed sequence (bad lead byte, bad or missing continuation,
overlong form, surrogate, above U+10FFFF) becomes U+FFFD and consumes exactly **one** byte, and
sequences never cross a string boundary. (CPython's ``errors="replace"`` differs: it replaces a
maximal malformed prefix by one U+FFFD.)

Kernels: ``cuda/utf8.cu`` (byte-parallel), ``cpu_fallback/utf8.py`` (Numba, parallel over strings).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch, as_text_batch
from gpu_text.char_class import CharClass
from gpu_text.ragged import RaggedArray

REPLACEMENT_CHARACTER = 0xFFFD


@dataclass(frozen=True)
class DecodedBatch:
    """Decoded text: codepoints (uint32) and each one's byte offset within its own string.

    Both are ragged with the same row offsets (one row per input string).
    """

    codepoints: RaggedArray
    byte_offsets: RaggedArray


def _prepare(texts: Any, backend: str | Backend | None) -> tuple[TextBatch, Backend]:
    resolved = get_backend(backend)
    return as_text_batch(texts).to_device(resolved.xp), resolved


def decode(texts: Any, backend: str | Backend | None = None) -> DecodedBatch:
    """Decode every string to codepoints, with each codepoint's byte offset in its string.

    ``texts`` is a :class:`TextBatch`, a pyarrow string/binary array, or a list of str/bytes.

    >>> d = decode([b"A\\xe4\\xbd\\xa0\\xf0\\x9f\\x98\\x80", b"\\xe4\\xbd"], backend="cpu")
    >>> [[hex(c) for c in row] for row in d.codepoints.to_pylist()]
    [['0x41', '0x4f60', '0x1f600'], ['0xfffd', '0xfffd']]
    >>> d.byte_offsets.to_pylist()
    [[0, 1, 4], [0, 1]]
    """
    batch, be = _prepare(texts, backend)
    codepoints, positions, row_offsets = be.op("utf8", "utf8_decode")(batch.data, batch.offsets)
    return DecodedBatch(RaggedArray(codepoints, row_offsets, check=False),
                        RaggedArray(positions, row_offsets, check=False))


def encode(codepoints: RaggedArray, backend: str | Backend | None = None) -> TextBatch:
    """Encode ragged codepoints to UTF-8; surrogates and values above U+10FFFF become U+FFFD.

    >>> import numpy as np
    >>> encode(RaggedArray(np.array([0x41, 0x4F60, 0xD800], np.uint32), np.array([0, 2, 3])), "cpu").to_pylist()
    ['A你', '�']
    """
    be = get_backend(backend)
    xp = be.xp
    values = be.asarray(codepoints.values).astype(xp.uint32, copy=False)
    offsets = be.asarray(codepoints.offsets)
    data, row_offsets = be.op("utf8", "utf8_encode")(xp.ascontiguousarray(values), xp.ascontiguousarray(offsets))
    return TextBatch(data, row_offsets, check=False)


def validate(texts: Any, backend: str | Backend | None = None) -> Any:
    """Per string: ``True`` when it is well-formed UTF-8.

    >>> validate([b"ok", b"\\xc0\\x80", b"\\xe4\\xbd", b""], backend="cpu").tolist()
    [True, False, False, True]
    """
    batch, be = _prepare(texts, backend)
    _, errors = be.op("utf8", "utf8_string_stats")(batch.data, batch.offsets)
    return errors == 0


def char_length(texts: Any, backend: str | Backend | None = None) -> Any:
    """Per string: number of characters (each malformed byte counts as one U+FFFD).

    >>> char_length(["A你😀", "", b"\\xe4\\xbd"], backend="cpu").tolist()
    [3, 0, 2]
    """
    batch, be = _prepare(texts, backend)
    chars, _ = be.op("utf8", "utf8_string_stats")(batch.data, batch.offsets)
    return chars


def char_classes(texts: Any, backend: str | Backend | None = None) -> RaggedArray:
    """The :class:`CharClass` of every character of every string (ragged uint8).

    Accepts text (decoded first) or an already decoded ``RaggedArray`` of codepoints.

    >>> [[CharClass(c).name for c in row] for row in char_classes(["a1 你,"], backend="cpu").to_pylist()]
    [['ALPHA', 'DIGIT', 'SPACE', 'HAN', 'OTHER']]
    """
    be = get_backend(backend)
    if isinstance(texts, RaggedArray) and not isinstance(texts, TextBatch):
        codepoints = RaggedArray(be.asarray(texts.values).astype(be.xp.uint32, copy=False), be.asarray(texts.offsets))
    else:
        codepoints = decode(texts, be).codepoints
    classes = be.op("utf8", "char_classify")(be.xp.ascontiguousarray(codepoints.values))
    return RaggedArray(classes, codepoints.offsets, check=False)


__all__ = ["REPLACEMENT_CHARACTER", "CharClass", "DecodedBatch", "char_classes", "char_length", "decode", "encode",
           "validate"]
