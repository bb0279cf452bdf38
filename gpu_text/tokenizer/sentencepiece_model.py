"""Import a SentencePiece ``.model`` file (a serialized ``ModelProto``) without protobuf.

Only the fields a BPE or Unigram tokenizer needs are read (field numbers from sentencepiece_model.proto):

- ``ModelProto``: 1 pieces (repeated ``SentencePiece``: 1 piece, 2 score, 3 type), 2 trainer_spec,
  3 normalizer_spec, 5 denormalizer_spec; everything else is skipped.
- ``TrainerSpec``: 3 model_type (1 UNIGRAM, 2 BPE, 3 WORD, 4 CHAR), 4 vocab_size,
  22 split_by_whitespace, 24 treat_whitespace_as_suffix, 26 allow_whitespace_only_pieces,
  31 user_defined_symbols, 35 byte_fallback, 40-43 unk/bos/eos/pad ids, 45-48 their pieces.
- ``NormalizerSpec``: 1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
  5 escape_whitespaces.

Unset fields take the proto's defaults. The wire format is read by hand: a malformed or truncated
file raises ``ValueError`` naming the byte offset and the field being read.

The pieces are checked as SentencePiece's loader checks them (each error names the piece and its
byte offset): non-empty, distinct, shorter than 8,000 bytes, one UNKNOWN piece, BYTE pieces named
``<0x00>`` … ``<0xFF>`` and only with byte_fallback (then all 256); and, where SentencePiece is more
lenient, finite scores (no merge order follows from NaN). A file that ends before its trainer_spec
is reported as truncated. The special ids are found as SentencePiece finds
them, from the pieces: the UNKNOWN piece, and the CONTROL piece named ``bos_piece`` (``eos_piece``,
``pad_piece``) or none (-1); the trainer spec's ids 40-43 are ignored, as SentencePiece ignores them.

Every option that changes how SentencePiece encodes a BPE or Unigram model is honoured or the model is
refused (:class:`SentencePieceModelError` naming the option), never loaded to encode differently:

- honoured: the normalizer spec (rule, charsmap, the three whitespace flags), byte_fallback, the
  piece types (CONTROL and UNKNOWN reached by id only; USER_DEFINED pieces, which are the
  ``user_defined_symbols``, matched whole before the merges), and pieces holding ``▁`` inside
  (``split_by_whitespace=false``, ``allow_whitespace_only_pieces``, ``treat_whitespace_as_suffix``
  without a dummy prefix): the tokenizer then merges over the whole text, as SentencePiece does.
- refused: ``treat_whitespace_as_suffix`` with ``add_dummy_prefix`` (a dummy space at the end of
  every text), UNUSED pieces in a BPE model (which SentencePiece merges and then splits again; a
  Unigram model's lattice simply skips them, as here), a
  ``denormalizer_spec`` with a rule (decoding through a charsmap), and user-defined symbols that
  the normalization rule would change (SentencePiece leaves them unnormalized).
- training only, so nothing to do when encoding: split_by_unicode_script, split_by_number,
  split_digits, max_sentencepiece_length, required_chars, control_symbols (their pieces are
  CONTROL), character_coverage, vocab_size and the other trainer settings.
- ``unk_surface`` concerns decoding: the decoder drops unknown pieces (PieceTokenizer's rule).
"""
from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.tokenizer.bpe import PieceType, piece_problem
from gpu_text.tokenizer.normalizer import Normalizer, PrecompiledCharsmap

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
    charsmap_pairs: Sequence[tuple[bytes, bytes]] = ()
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"
    split_by_whitespace: bool = True
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    user_defined_symbols: tuple[str, ...] = ()
    denormalizer_rule: bool = False

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
    piece_at: list[int] = []  # each piece's byte offset, for the checks' messages
    spec: dict[str, object] = {}
    seen: set[str] = set()  # the ModelProto fields found

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
        piece_at.append(span[0])

    def setter(key, convert):
        return lambda value: spec.__setitem__(key, convert(value))

    def trainer(span):
        ints = {4: "vocab_size", 40: "unk_id", 41: "bos_id", 42: "eos_id", 43: "pad_id"}
        strings = {45: "unk_piece", 46: "bos_piece", 47: "eos_piece", 48: "pad_piece"}
        flags = {35: "byte_fallback", 22: "split_by_whitespace", 24: "treat_whitespace_as_suffix",
                 26: "allow_whitespace_only_pieces"}
        handlers = {3: (_VARINT, setter("model_type", _signed32)),
                    31: (_LENGTH, lambda s: spec.__setitem__(
                        "user_defined_symbols", (*spec.get("user_defined_symbols", ()), text(s))))}
        handlers.update({n: (_VARINT, setter(k, bool)) for n, k in flags.items()})
        handlers.update({n: (_VARINT, setter(k, _signed32)) for n, k in ints.items()})
        handlers.update({n: (_LENGTH, setter(k, text)) for n, k in strings.items()})
        _message(buf, span, "ModelProto.trainer_spec", handlers)
        seen.add("trainer_spec")

    def denormalizer(span):
        found = _normalizer_fields(buf, span, "ModelProto.denormalizer_spec")
        spec["denormalizer_rule"] = bool(found["precompiled_charsmap"])

    def normalizer(span):
        found = _normalizer_fields(buf, span, "ModelProto.normalizer_spec")
        spec["charsmap"] = (found.pop("charsmap_at"), found.pop("precompiled_charsmap"))
        spec["normalizer_name"] = found.pop("name")
        spec.update(found)

    _message(buf, (0, len(buf)), "ModelProto", {1: (_LENGTH, piece), 2: (_LENGTH, trainer), 3: (_LENGTH, normalizer),
                                                 5: (_LENGTH, denormalizer)})
    if not pieces:
        raise SentencePieceModelError("not a SentencePiece model: it has no pieces (ModelProto field 1)")
    if "trainer_spec" not in seen:  # which is written right after the pieces: not guessed as the default UNIGRAM
        raise SentencePieceModelError(f"malformed SentencePiece model at byte {len(buf)} (ModelProto): the file ends "
                                      f"after {len(pieces)} pieces without a trainer_spec (field 2): truncated?")
    model_type = spec.pop("model_type", 1)
    name = MODEL_TYPES.get(model_type, str(model_type))
    if model_type not in (1, 2):
        raise SentencePieceModelError(f"only UNIGRAM and BPE models (model_type=1, 2) can be imported; this one is "
                                      f"{name} (model_type={model_type})")
    pairs: Sequence[tuple[bytes, bytes]] = ()
    at, blob = spec.pop("charsmap", (0, b""))
    if blob:
        try:
            pairs = PrecompiledCharsmap(blob).check()
        except ValueError as exc:
            raise SentencePieceModelError(f"malformed SentencePiece model: the precompiled_charsmap at byte {at} "
                                          f"(ModelProto.normalizer_spec field 2) is bad: {exc}") from None
    model = SentencePieceModel(pieces, np.asarray(scores, np.float32), np.asarray(types, np.int8), model_type=name,
                               charsmap_pairs=pairs, **spec)
    _check_pieces(model, piece_at)
    _refuse_unsupported(model)
    return model


def model_type_of(buf: bytes) -> str | None:
    """The ``model_type`` of a serialized ``ModelProto`` ("UNIGRAM", "BPE", ...) without reading
    its pieces; None when ``buf`` is not one (the full reader says what is wrong).

    >>> model_type_of(b"\\x12\\x02\\x18\\x02"), model_type_of(b"\\x12\\x00"), model_type_of(b"\\xff")
    ('BPE', 'UNIGRAM', None)
    """
    try:
        for number, _, span in _Reader(buf, 0, len(buf), "ModelProto").fields():
            if number == 2:
                for inner, wire, value in _Reader(buf, span[0], span[1], "ModelProto.trainer_spec").fields():
                    if inner == 3 and wire == _VARINT:
                        return MODEL_TYPES.get(_signed32(value), str(value))
                return MODEL_TYPES.get(1)
    except (SentencePieceModelError, TypeError):
        return None
    return None


def _check_pieces(model: SentencePieceModel, piece_at: list[int]) -> None:
    """SentencePiece's loader's rules (and this package's, :func:`~gpu_text.tokenizer.bpe.piece_problem`),
    each a :class:`SentencePieceModelError` naming the piece and its byte offset; then the special
    ids are set as SentencePiece's ``unk_id()``, ``bos_id()``... find them: the UNKNOWN piece, and
    the piece named ``bos_piece`` (``eos_piece``, ``pad_piece``) when it is a CONTROL piece, else
    none (-1). The trainer spec's ids are ignored, as SentencePiece ignores them."""
    def fail(index: int, why: str) -> SentencePieceModelError:
        return SentencePieceModelError(f"malformed SentencePiece model at byte {piece_at[index]} "
                                       f"(ModelProto.pieces[{index}]): piece {index} {why}")

    raw = [piece.encode("utf-8", "surrogatepass") for piece in model.pieces]
    problem = piece_problem(raw, model.types, model.scores)
    if problem is not None:
        raise fail(*problem)
    unknown = np.flatnonzero(model.types == PieceType.UNKNOWN)
    if unknown.size != 1:
        if unknown.size:
            raise fail(int(unknown[1]), f"is a second UNKNOWN piece (piece {int(unknown[0])} is one)")
        raise SentencePieceModelError("malformed SentencePiece model: no piece has type UNKNOWN (the unknown piece)")
    byte_pieces = np.flatnonzero(model.types == PieceType.BYTE)
    if byte_pieces.size and not model.byte_fallback:
        raise fail(int(byte_pieces[0]), f"{model.pieces[byte_pieces[0]]!r} is a BYTE piece, but the trainer spec "
                                        "says byte_fallback=false")
    if model.byte_fallback and byte_pieces.size != 256:
        raise SentencePieceModelError(f"malformed SentencePiece model: byte_fallback=true needs the 256 BYTE pieces "
                                      f"<0x00> ... <0xFF>; it has {byte_pieces.size}")
    model.unk_id = int(unknown[0])
    index = {piece: i for i, piece in enumerate(model.pieces)}
    for name in ("bos", "eos", "pad"):
        found = index.get(getattr(model, f"{name}_piece"), -1)
        setattr(model, f"{name}_id", found if found >= 0 and model.types[found] == PieceType.CONTROL else -1)


def _refuse_unsupported(model: SentencePieceModel) -> None:
    """Raises for an option this importer would otherwise silently encode differently (module docstring)."""
    def refuse(what: str) -> SentencePieceModelError:
        return SentencePieceModelError(f"unsupported SentencePiece option: {what}; this model would encode "
                                       "differently here, so it is not imported")

    if model.treat_whitespace_as_suffix and model.add_dummy_prefix:
        raise refuse("treat_whitespace_as_suffix=true with add_dummy_prefix=true (a dummy space at the end of "
                     "every text)")
    unused = np.flatnonzero(model.types == 5)
    if unused.size and model.model_type == "BPE":  # a Unigram lattice skips UNUSED pieces, as SentencePiece does
        raise refuse(f"piece {int(unused[0])} {model.pieces[unused[0]]!r} has type UNUSED (SentencePiece merges "
                     "through it and splits it again)")
    if model.denormalizer_rule:
        raise refuse("denormalizer_spec with a precompiled_charsmap (decoding through a normalization rule)")
    user = [model.pieces[i] for i in np.flatnonzero(model.types == 4)]
    if user:
        plain = Normalizer(model.normalizer_name or "no", charsmap_pairs=model.charsmap_pairs, add_dummy_prefix=False,
                           remove_extra_whitespaces=False, escape_whitespaces=model.escape_whitespaces)
        changed = [(a, b) for a, b in zip(user, plain.normalize_strings(user, backend="cpu")) if a != b]
        if changed:
            raise refuse(f"user_defined_symbols entry {changed[0][0]!r} is changed by the normalization rule (to "
                         f"{changed[0][1]!r}), but SentencePiece matches it unnormalized")


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
    """Imports a SentencePiece ``.model`` file (BPE and UNIGRAM; WORD and CHAR models are a clear error).

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
