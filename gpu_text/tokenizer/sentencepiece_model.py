"""Import a SentencePiece ``.model`` file (a serialized ``ModelProto``) without protobuf.

Only the fields a BPE tokenizer needs are read (field numbers from sentencepiece_model.proto):

- ``ModelProto``: 1 pieces (repeated ``SentencePiece``: 1 piece, 2 score, 3 type), 2 trainer_spec,
  3 normalizer_spec; 5 denormalizer_spec and everything else is skipped.
- ``TrainerSpec``: 3 model_type (1 UNIGRAM, 2 BPE, 3 WORD, 4 CHAR), 4 vocab_size, 35 byte_fallback,
  40-43 unk/bos/eos/pad ids, 45-48 their pieces.
- ``NormalizerSpec``: 1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
  5 escape_whitespaces.

Unset fields take the proto's defaults. The wire format is read by hand: a malformed or truncated
file raises ``ValueError`` naming the byte offset and the field being read.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.tokenizer.normalizer import Normalizer, decode_precompiled_charsmap

MODEL_TYPES = {1: "UNIGRAM", 2: "BPE", 3: "WORD", 4: "CHAR"}
_VARINT, _FIXED64, _LENGTH, _START_GROUP, _END_GROUP, _FIXED32 = range(6)


class SentencePieceModelError(ValueError):
    """A ``.model`` file that cannot be imported; the message says where and why."""


@dataclass
class SentencePieceModel:
    """What a BPE tokenizer needs from a SentencePiece model.

    ``types`` are SentencePiece's piece types (1 NORMAL, 2 UNKNOWN, 3 CONTROL, 4 USER_DEFINED,
    5 UNUSED, 6 BYTE); ``charsmap_pairs`` are the (source bytes, replacement bytes) pairs of the
    model's precompiled charsmap (empty when it has none).

    >>> m = SentencePieceModel(["<unk>"], np.zeros(1, np.float32), np.array([2], np.int8))
    >>> m.normalizer().normalize_strings([" a  b "])
    ['▁a▁b']
    """

    pieces: list[str]
    scores: np.ndarray
    types: np.ndarray
    model_type: str = "BPE"
    vocab_size: int = 8000
    byte_fallback: bool = False
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    normalizer_name: str = ""
    charsmap_pairs: tuple[tuple[bytes, bytes], ...] = ()
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"

    def normalizer(self) -> Normalizer:
        """The :class:`Normalizer` that normalizes as SentencePiece does with this model.

        >>> m = SentencePieceModel([], np.zeros(0, np.float32), np.zeros(0, np.int8), add_dummy_prefix=False)
        >>> m.normalizer().normalize_strings(["x y"])
        ['x▁y']
        """
        return Normalizer(self.normalizer_name or "no", charsmap_pairs=self.charsmap_pairs,
                          add_dummy_prefix=self.add_dummy_prefix,
                          remove_extra_whitespaces=self.remove_extra_whitespaces,
                          escape_whitespaces=self.escape_whitespaces)


# --------------------------------------------------------------------------- wire format


class _Reader:
    """Walks the fields of one message in ``buf[start:end]``; offsets in errors are file offsets."""

    def __init__(self, buf: bytes, start: int, end: int, message: str) -> None:
        self.buf, self.pos, self.end, self.message = buf, start, end, message

    def fail(self, what: str, at: int | None = None) -> SentencePieceModelError:
        return SentencePieceModelError(f"malformed SentencePiece model at byte {self.pos if at is None else at} "
                                       f"({self.message}): {what}")

    def varint(self, what: str) -> int:
        start, value, shift = self.pos, 0, 0
        while True:
            if self.pos >= self.end:
                raise self.fail(f"truncated varint in {what}", start)
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
            if shift >= 70:
                raise self.fail(f"varint longer than 10 bytes in {what}", start)

    def fields(self):
        """Yields (field number, wire type, value): an int for varints, else (start, end) of the payload."""
        while self.pos < self.end:
            at = self.pos
            key = self.varint("a field key")
            number, wire = key >> 3, key & 7
            if number == 0:
                raise self.fail("field number 0", at)
            if wire == _VARINT:
                yield number, wire, self.varint(f"field {number}")
            elif wire in (_FIXED64, _FIXED32, _LENGTH):
                size = 8 if wire == _FIXED64 else 4 if wire == _FIXED32 else self.varint(f"the length of field {number}")
                if self.pos + size > self.end:
                    raise self.fail(f"field {number} needs {size} bytes but only {self.end - self.pos} remain "
                                    "(truncated file?)", at)
                yield number, wire, (self.pos, self.pos + size)
                self.pos += size
            else:
                raise self.fail(f"field {number} has wire type {wire}, which this reader does not accept", at)


def _signed32(value: int) -> int:
    """An int32 field: negative values are sent as 10-byte two's complement varints."""
    value &= (1 << 64) - 1
    value = value - (1 << 64) if value >= 1 << 63 else value
    return value if -(1 << 31) <= value < (1 << 31) else ((value + (1 << 31)) % (1 << 32)) - (1 << 31)


def _message(buf: bytes, span: tuple[int, int], message: str,
             handlers: dict[int, tuple[int, Callable[[object], None]]]) -> None:
    """Reads a message, passing each known field's value to its handler (checking its wire type)."""
    reader = _Reader(buf, span[0], span[1], message)
    for number, wire, value in reader.fields():
        if number not in handlers:
            continue
        expected, handle = handlers[number]
        if wire != expected:
            raise reader.fail(f"field {number} has wire type {wire}, expected {expected}")
        try:
            handle(value)
        except UnicodeDecodeError as exc:
            raise reader.fail(f"field {number} is not valid UTF-8 ({exc.reason})", value[0] + exc.start) from None


def _normalizer_fields(buf: bytes, span: tuple[int, int], message: str) -> dict[str, Any]:
    found: dict[str, Any] = {"name": "", "precompiled_charsmap": b"", "charsmap_at": span[0],
                             "add_dummy_prefix": True, "remove_extra_whitespaces": True, "escape_whitespaces": True}

    def charsmap(s: tuple[int, int]) -> None:
        found["precompiled_charsmap"], found["charsmap_at"] = buf[s[0]:s[1]], s[0]

    _message(buf, span, message, {
        1: (_LENGTH, lambda s: found.__setitem__("name", buf[s[0]:s[1]].decode("utf-8"))),
        2: (_LENGTH, charsmap),
        3: (_VARINT, lambda v: found.__setitem__("add_dummy_prefix", bool(v))),
        4: (_VARINT, lambda v: found.__setitem__("remove_extra_whitespaces", bool(v))),
        5: (_VARINT, lambda v: found.__setitem__("escape_whitespaces", bool(v))),
    })
    return found


def read_normalizer_spec(data: bytes) -> dict[str, Any]:
    """The fields of a serialized ``NormalizerSpec``: ``name``, ``precompiled_charsmap`` (bytes) and the
    three flags, with the proto's defaults for unset ones.

    >>> spec = read_normalizer_spec(b"\\x0a\\x04nfkc\\x18\\x00")
    >>> spec["name"], spec["add_dummy_prefix"], spec["escape_whitespaces"]
    ('nfkc', False, True)
    """
    data = bytes(data)
    found = _normalizer_fields(data, (0, len(data)), "NormalizerSpec")
    del found["charsmap_at"]
    return found


def _parse(buf: bytes) -> SentencePieceModel:
    def text(span):
        return buf[span[0]:span[1]].decode("utf-8")

    pieces: list[str] = []
    scores: list[float] = []
    types: list[int] = []
    spec: dict[str, object] = {}

    def piece(span):
        entry = {"piece": None, "score": 0.0, "type": 1}
        _message(buf, span, f"ModelProto.pieces[{len(pieces)}]", {
            1: (_LENGTH, lambda s: entry.__setitem__("piece", text(s))),
            2: (_FIXED32, lambda s: entry.__setitem__("score", struct.unpack_from("<f", buf, s[0])[0])),
            3: (_VARINT, lambda v: entry.__setitem__("type", _signed32(v))),
        })
        if entry["piece"] is None:
            raise SentencePieceModelError(f"malformed SentencePiece model at byte {span[0]}: "
                                          f"ModelProto.pieces[{len(pieces)}] has no piece string")
        if entry["type"] not in (1, 2, 3, 4, 5, 6):
            raise SentencePieceModelError(f"malformed SentencePiece model at byte {span[0]}: "
                                          f"ModelProto.pieces[{len(pieces)}] has type {entry['type']}, not 1-6")
        pieces.append(entry["piece"])
        scores.append(entry["score"])
        types.append(entry["type"])

    def setter(key, convert):
        return lambda value: spec.__setitem__(key, convert(value))

    def trainer(span):
        ints = {4: "vocab_size", 40: "unk_id", 41: "bos_id", 42: "eos_id", 43: "pad_id"}
        strings = {45: "unk_piece", 46: "bos_piece", 47: "eos_piece", 48: "pad_piece"}
        handlers = {3: (_VARINT, setter("model_type", _signed32)), 35: (_VARINT, setter("byte_fallback", bool))}
        handlers.update({n: (_VARINT, setter(k, _signed32)) for n, k in ints.items()})
        handlers.update({n: (_LENGTH, setter(k, text)) for n, k in strings.items()})
        _message(buf, span, "ModelProto.trainer_spec", handlers)

    def normalizer(span):
        found = _normalizer_fields(buf, span, "ModelProto.normalizer_spec")
        spec["charsmap"] = (found.pop("charsmap_at"), found.pop("precompiled_charsmap"))
        spec["normalizer_name"] = found.pop("name")
        spec.update(found)

    _message(buf, (0, len(buf)), "ModelProto", {1: (_LENGTH, piece), 2: (_LENGTH, trainer), 3: (_LENGTH, normalizer)})
    if not pieces:
        raise SentencePieceModelError("not a SentencePiece model: it has no pieces (ModelProto field 1)")
    model_type = spec.pop("model_type", 1)
    name = MODEL_TYPES.get(model_type, str(model_type))
    if model_type != 2:
        raise SentencePieceModelError(f"only BPE models (model_type=2) can be imported; this one is {name} "
                                      f"(model_type={model_type})")
    pairs: tuple[tuple[bytes, bytes], ...] = ()
    at, blob = spec.pop("charsmap", (0, b""))
    if blob:
        try:
            pairs = tuple(decode_precompiled_charsmap(blob))
        except ValueError as exc:
            raise SentencePieceModelError(f"malformed SentencePiece model: the precompiled_charsmap at byte {at} "
                                          f"(ModelProto.normalizer_spec field 2) is bad: {exc}") from None
    return SentencePieceModel(pieces, np.asarray(scores, np.float32), np.asarray(types, np.int8), model_type=name,
                              charsmap_pairs=pairs, **spec)


def parse_sentencepiece_model(data: bytes) -> SentencePieceModel:
    """Imports a serialized ``ModelProto`` (the bytes of a ``.model`` file).

    >>> parse_sentencepiece_model(b"\\x0a\\x02\\x0a\\x03")
    Traceback (most recent call last):
    ...
    gpu_text.tokenizer.sentencepiece_model.SentencePieceModelError: malformed SentencePiece model at byte 2 \
(ModelProto.pieces[0]): field 1 needs 3 bytes but only 0 remain (truncated file?)
    """
    return _parse(bytes(data))


def load_sentencepiece_model(path: str | os.PathLike) -> SentencePieceModel:
    """Imports a SentencePiece ``.model`` file (BPE only; other model types are a clear error).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "garbage.model"
    >>> _ = path.write_bytes(b"\\xff\\xff")
    >>> load_sentencepiece_model(path)
    Traceback (most recent call last):
    ...
    gpu_text.tokenizer.sentencepiece_model.SentencePieceModelError: ...garbage.model: malformed SentencePiece \
model at byte 0 (ModelProto): truncated varint in a field key
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        return _parse(data)
    except SentencePieceModelError as exc:
        raise SentencePieceModelError(f"{os.fspath(path)}: {exc}") from None
