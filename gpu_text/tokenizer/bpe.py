"""The BPE model: pieces with scores, encoded by replaying merges in score order.

Encoding one pre-token (SentencePiece's BPE rule, the seed's PieceTokenizer): start from one
symbol per character, repeatedly merge the adjacent pair whose concatenation is a piece with the
highest score (ties: the leftmost), then turn each symbol into its piece id, or into ``<0xXX>``
byte pieces (byte fallback), or the unknown id. Pre-token boundaries are never crossed.

Only NORMAL, USER_DEFINED and UNUSED pieces take part in merging (as in SentencePiece);
UNKNOWN, CONTROL and BYTE pieces are reached by id only. Kernels: ``cuda/bpe.cu`` (one thread per
short pre-token, O(n log n) heap; a warp per pre-token of 49-512 bytes; a block per longer one),
``cpu_fallback/bpe.py`` (the same merges by piece id on the parts of each pre-token that no piece
spans, each distinct part once: :mod:`gpu_text.tokenizer.merge_tables`).
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.specs import bytes_from_spec, bytes_to_spec, spec_list, spec_mapping, spec_value
from gpu_text.tokenizer.merge_tables import MergeTables
from gpu_text.trie import DoubleArrayTrie
from gpu_text.trie.double_array import _device_key


class PieceType(enum.IntEnum):
    """Piece types of the model file and of SentencePiece (same numbers)."""

    NORMAL = 1
    UNKNOWN = 2
    CONTROL = 3
    USER_DEFINED = 4
    UNUSED = 5
    BYTE = 6


MERGEABLE = (PieceType.NORMAL, PieceType.USER_DEFINED, PieceType.UNUSED)


MAX_PIECE_BYTES = 7999
"""The longest piece, in bytes, in every model format: SentencePiece's loader refuses a piece of
8,000 bytes or more ("piece is too long"), and so does every loader here."""


def byte_piece(byte: int) -> str:
    """The name of a byte piece.

    >>> byte_piece(0xE4)
    '<0xE4>'
    """
    return f"<0x{byte:02X}>"


BYTE_VALUES = {byte_piece(b).encode(): b for b in range(256)}
"""A BYTE piece's name (bytes) → its byte: only these 256 names, uppercase, as in SentencePiece."""


def shown_piece(piece: bytes) -> str:
    """A piece as an error message shows it: a quoted string, bytes when it is not UTF-8, shortened.

    >>> print(shown_piece("你".encode()), shown_piece(b"a\\xff"), shown_piece(b"x" * 100)[-15:])
    '你' b'a\\xff' ...(100 bytes)
    """
    try:
        text = repr(piece.decode("utf-8"))
    except UnicodeDecodeError:
        text = repr(piece)
    return text if len(text) <= 60 else f"{text[:50]}...({len(piece)} bytes)"


def piece_problem(pieces: Sequence[bytes], types: Sequence[int], scores: Sequence[float]) -> tuple[int, str] | None:
    """The first piece that no model may hold and why, or ``None``: a type outside 1-6, an empty
    piece, one longer than :data:`MAX_PIECE_BYTES`, a BYTE piece that is not ``<0x00>`` … ``<0xFF>``,
    a score that is not finite (no merge order follows from NaN; a tokenizer file cannot hold
    infinity) or a piece seen before.
    Every loader checks its pieces with it and names the place in its own terms (line, byte).

    >>> piece_problem([b"<unk>", b"a", b"<0xZZ>"], [2, 1, 6], [0.0, 0.0, 0.0])
    (2, "'<0xZZ>' is a BYTE piece but not one of <0x00> ... <0xFF>")
    >>> piece_problem([b"<unk>", b"a", b"a"], [2, 1, 3], [0.0, 0.0, 0.0])
    (2, "'a' is piece 1 again (every piece appears once)")
    >>> piece_problem([b"<unk>"], [2], [0.0]) is None
    True
    """
    with np.errstate(over="ignore", invalid="ignore"):  # a float64 beyond float32 becomes inf: refused below
        scores32 = np.asarray(scores, np.float32)
    finite = np.isfinite(scores32)
    seen: dict[bytes, int] = {}
    for index, (piece, kind) in enumerate(zip(pieces, types)):
        kind = int(kind)
        if kind not in PieceType._value2member_map_:
            return index, f"has type {kind}; types are 1-6"
        if not piece:
            return index, "is empty"
        if len(piece) > MAX_PIECE_BYTES:
            return index, (f"is {len(piece)} bytes long; a piece has at most {MAX_PIECE_BYTES} bytes "
                           "(SentencePiece's limit too)")
        if kind == PieceType.BYTE and piece not in BYTE_VALUES:
            return index, f"{shown_piece(piece)} is a BYTE piece but not one of <0x00> ... <0xFF>"
        if not finite[index]:
            return index, f"{shown_piece(piece)} has score {float(scores32[index])}; scores are finite float32 numbers"
        first = seen.setdefault(piece, index)
        if first != index:
            return index, f"{shown_piece(piece)} is piece {first} again (every piece appears once)"
    return None


def special_id_problem(name: str, value: int, pieces: Sequence[bytes], types: Sequence[int]) -> str | None:
    """Why ``value`` cannot be the special id ``name``, or ``None``: ``unk_id`` is an UNKNOWN piece,
    ``bos_id``, ``eos_id`` and ``pad_id`` a CONTROL piece or -1 (none), as in SentencePiece.

    >>> pieces, types = [b"<unk>", b"<s>", b"a"], [2, 3, 1]
    >>> special_id_problem("bos_id", 1, pieces, types) is None, special_id_problem("eos_id", -1, pieces, types)
    (True, None)
    >>> special_id_problem("bos_id", 99999, pieces, types)
    'bos_id=99999 is not a piece id (the model has 3 pieces; -1 means none)'
    >>> special_id_problem("pad_id", 2, pieces, types)
    "pad_id=2 is piece 'a' of type NORMAL, not a CONTROL piece"
    """
    wanted = PieceType.UNKNOWN if name == "unk_id" else PieceType.CONTROL
    if value == -1 and wanted == PieceType.CONTROL:
        return None
    if not 0 <= value < len(pieces):
        none = "" if wanted == PieceType.UNKNOWN else "; -1 means none"
        return f"{name}={value} is not a piece id (the model has {len(pieces)} pieces{none})"
    kind = int(types[value])
    if kind != wanted:
        kind_name = PieceType(kind).name if kind in PieceType._value2member_map_ else str(kind)
        return f"{name}={value} is piece {shown_piece(pieces[value])} of type {kind_name}, not a {wanted.name} piece"
    return None


@dataclass
class EncodedPreTokens:
    """Ids of a batch of pre-tokens: ragged by pre-token, with each id's byte span in the text."""

    ids: Any
    starts: Any
    ends: Any
    offsets: Any


_TRIE_FIELDS = ("state", "check", "label", "eow")


def _merge_structures(words: list[bytes], ids: np.ndarray, n_pieces: int
                      ) -> tuple[DoubleArrayTrie | None, MergeTables]:
    """The trie of the mergeable pieces and their :class:`MergeTables`, from the table cache
    (:mod:`gpu_text.table_cache`, by the pieces, their ids and the piece count) or built: a model
    loaded again builds nothing and loads none of the builders' compiled code (a 16k model's load
    and first encode in a fresh process: 0.74 -> 0.55 s).

    >>> trie, tables = _merge_structures([b"a", b"ab"], np.array([1, 2], np.int32), 3)
    >>> trie.lookup("ab"), len(tables)
    (2, 7)
    """
    import importlib.util

    from gpu_text.kernel_sources import cpu_twin_package
    from gpu_text.table_cache import cached_arrays

    def build() -> dict[str, np.ndarray]:
        trie = DoubleArrayTrie.build(words, ids) if words else None
        arrays = trie.arrays("cpu") if trie is not None else tuple(np.zeros(1, dt) for dt in
                                                                    (np.int32, np.int32, np.uint8, np.uint8))
        tables = MergeTables.build(words, ids, n_pieces, arrays)
        built = {f"trie_{name}": np.asarray(a) for name, a in zip(_TRIE_FIELDS, arrays)}
        return {**built, "has_trie": np.array(trie is not None), **tables._asdict()}

    source = b"".join(len(w).to_bytes(4, "little") + w for w in words) + ids.astype("<i4").tobytes() \
        + n_pieces.to_bytes(8, "little")
    modules = [MergeTables.__module__, DoubleArrayTrie.__module__, f"{cpu_twin_package()}.merge_tables",
               f"{cpu_twin_package()}.double_array"]
    arrays = cached_arrays("bpe-merges", source, build, *(importlib.util.find_spec(m).origin for m in modules))
    trie = DoubleArrayTrie(*(arrays[f"trie_{name}"] for name in _TRIE_FIELDS)) if bool(arrays["has_trie"]) else None
    return trie, MergeTables(*(arrays[name] for name in MergeTables._fields))


class BPEModel:
    """Pieces (str), scores (higher merges first), types; ``unk_id`` and optional byte fallback.

    >>> model = BPEModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -2.0, 0.0], [2, 1, 1, 1])
    >>> model.encode_strings(["abba"])
    [[3, 2, 1]]
    """

    def __init__(self, pieces: Sequence[str | bytes], scores: Sequence[float], types: Sequence[int], unk_id: int = 0,
                 byte_fallback: bool | None = None) -> None:
        if not len(pieces) == len(scores) == len(types):
            raise ValueError(f"{len(pieces)} pieces but {len(scores)} scores and {len(types)} types")
        # pieces are bytes (a model file may hold pieces that are not UTF-8); `pieces` shows them as str
        self.piece_bytes = [p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass") for p in pieces]
        problem = piece_problem(self.piece_bytes, types, scores)
        if problem is not None:
            raise ValueError(f"piece {problem[0]} {problem[1]}")
        # the piece types as a numpy mask: enum members compared per piece cost ~0.1 s per 16k pieces at every load
        merges = np.isin(np.asarray(types, np.int64), np.array(MERGEABLE, np.int64))
        nul = next((int(i) for i in np.flatnonzero(merges) if 0 in self.piece_bytes[i]), None)
        if nul is not None:  # the trie's byte 0 leads to its values (the seed's Summer model has such a piece)
            raise ValueError(f"piece {nul} {shown_piece(self.piece_bytes[nul])} holds a NUL byte, which no piece "
                             "that merges may hold here")
        self.pieces = [p.decode("utf-8", "surrogateescape") for p in self.piece_bytes]
        self.scores = np.asarray(scores, np.float32)
        self.types = np.asarray(types, np.int8)
        self.check_special_ids(unk_id=unk_id)
        self.unk_id = unk_id
        self.piece_to_id = {p: i for i, p in enumerate(self.pieces)}
        byte_ids = np.array([self.piece_to_id.get(byte_piece(b), -1) for b in range(256)], np.int32)
        # whether the 256 BYTE pieces are all there: byte_fallback's default
        self.has_byte_pieces = bool((byte_ids >= 0).all()) and all(self.types[i] == PieceType.BYTE for i in byte_ids)
        if byte_fallback is None:
            byte_fallback = self.has_byte_pieces
        if byte_fallback and not self.has_byte_pieces:
            raise ValueError("byte_fallback needs the 256 BYTE pieces <0x00> ... <0xFF>")
        self.byte_fallback = byte_fallback
        self.byte_ids = byte_ids if byte_fallback else np.full(256, -1, np.int32)
        mergeable = np.flatnonzero(merges).tolist()
        words = [self.piece_bytes[i] for i in mergeable]
        self._on_device: dict[tuple[str, int], tuple[Any, ...]] = {}
        self.trie, self.merge_tables = _merge_structures(words, np.array(mergeable, np.int32), len(self.pieces))

    def __len__(self) -> int:
        return len(self.pieces)

    def check_special_ids(self, **ids: int) -> None:
        """A ``ValueError`` unless each special id (``unk_id``, ``bos_id``, ``eos_id``, ``pad_id``)
        names a piece of the right type (:func:`special_id_problem`).

        >>> BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]).check_special_ids(bos_id=1)
        Traceback (most recent call last):
        ...
        ValueError: bos_id=1 is piece 'a' of type NORMAL, not a CONTROL piece
        """
        for name, value in ids.items():
            problem = special_id_problem(name, value, self.piece_bytes, self.types)
            if problem is not None:
                raise ValueError(problem)

    def _trie_arrays(self, backend: str | Backend) -> tuple[Any, ...]:
        if self.trie is not None:
            return self.trie.arrays(backend)
        xp = get_backend(backend).xp
        return tuple(xp.zeros(1, dt) for dt in (xp.int32, xp.int32, xp.uint8, xp.uint8))

    def encode_pre_tokens(self, data: Any, starts: Any, ends: Any, backend: str | Backend | None = None
                          ) -> EncodedPreTokens:
        """Encode the pre-tokens ``data[starts[k]:ends[k]]`` (absolute byte positions).

        >>> m = BPEModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -2.0, 0.0], [2, 1, 1, 1])
        >>> e = m.encode_pre_tokens(np.frombuffer(b"abab", np.uint8), np.array([0, 2]), np.array([2, 4]), "cpu")
        >>> e.ids.tolist(), e.offsets.tolist()
        ([3, 3], [0, 1, 2])
        """
        be = get_backend(backend)
        xp = be.xp
        ids, id_starts, id_ends, offsets = be.op("bpe", "bpe_encode")(
            be.asarray(data), xp.ascontiguousarray(be.asarray(starts), dtype=xp.int64),
            xp.ascontiguousarray(be.asarray(ends), dtype=xp.int64), *self.device_tables(be))
        return EncodedPreTokens(ids, id_starts, id_ends, offsets)

    def encode_marked(self, data: Any, offsets: Any, marks: Any, backend: str | Backend | None = None,
                      symbol_at: Any = None) -> tuple[Any, Any, Any, Any]:
        """Encode the texts ``data[offsets[r]:offsets[r + 1]]`` (on the backend's device) cut into
        pre-tokens at every non-zero byte of ``marks`` (:meth:`PreTokenizer.marks
        <gpu_text.tokenizer.pre_tokenizer.PreTokenizer.marks>`): ids, each id's byte span in
        ``data`` and the ids' row offsets. The pre-tokens never leave the device. ``symbol_at``
        (:meth:`PreTokenizer.symbol_marks <gpu_text.tokenizer.pre_tokenizer.PreTokenizer.symbol_marks>`):
        a pre-token starting where it is non-zero is a user symbol, its one id ``symbol_at[start] >> 8``.

        >>> m = BPEModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -2.0, 0.0], [2, 1, 1, 1])
        >>> data, marks = np.frombuffer(b"ababb", np.uint8), np.array([1, 0, 1, 0, 1], np.uint8)
        >>> ids, _, _, rows = m.encode_marked(data, np.array([0, 4, 5]), marks, "cpu")
        >>> ids.tolist(), rows.tolist()
        ([3, 3, 2], [0, 2, 3])
        """
        be = get_backend(backend)
        return be.op("bpe", "bpe_encode_rows")(data, offsets, marks, *self.device_tables(be), symbol_at)

    def device_tables(self, backend: str | Backend | None = None) -> tuple[Any, ...]:
        """What the BPE kernels take after the pre-tokens: the trie arrays, scores, byte ids, the
        unknown id and the merge tables, on the backend's device: copied there once and kept.

        >>> tables = BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]).device_tables("cpu")
        >>> len(tables), tables[-2]
        (8, 0)
        """
        be = get_backend(backend)
        key = _device_key(be.xp)
        if key not in self._on_device:
            tables = MergeTables(*(be.asarray(a) for a in self.merge_tables))
            self._on_device[key] = (*self._trie_arrays(be), be.asarray(self.scores), be.asarray(self.byte_ids),
                                    self.unk_id, tables)
        return self._on_device[key]

    def encode_strings(self, pre_tokens: Sequence[str], backend: str | Backend | None = "cpu") -> list[list[int]]:
        """Each string encoded as one pre-token (a convenience for tests and examples).

        >>> BPEModel(["<unk>", "x"], [0.0, 0.0], [2, 1]).encode_strings(["xy"])
        [[1, 0]]
        """
        raw = [s.encode("utf-8", "surrogatepass") for s in pre_tokens]
        ends = np.cumsum([len(r) for r in raw], dtype=np.int64)
        starts = ends - np.array([len(r) for r in raw], np.int64)
        encoded = self.encode_pre_tokens(np.frombuffer(b"".join(raw), np.uint8), starts, ends, backend)
        ids, offsets = to_host(encoded.ids), to_host(encoded.offsets)
        return [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]

    def to_dict(self) -> dict[str, Any]:
        """Pieces (strings, or ``{"base64": ...}`` for pieces that are not UTF-8), scores (exact: the
        float32 values as JSON numbers), types, ``unk_id`` and ``byte_fallback``.

        >>> BPEModel(["<unk>", "a"], [0.0, -0.5], [2, 1]).to_dict()
        {'pieces': ['<unk>', 'a'], 'scores': [0.0, -0.5], 'types': [2, 1], 'unk_id': 0, 'byte_fallback': False}
        """
        return {"pieces": [bytes_to_spec(p) for p in self.piece_bytes], "scores": self.scores.tolist(),
                "types": self.types.tolist(), "unk_id": self.unk_id, "byte_fallback": self.byte_fallback}

    @classmethod
    def from_dict(cls, spec: Any) -> "BPEModel":
        """The model :meth:`to_dict` describes (a malformed spec is a ``ValueError`` saying why).

        >>> m = BPEModel.from_dict({"pieces": ["<unk>", "a", {"base64": "/w=="}], "scores": [0, -1, -2],
        ...                         "types": [2, 1, 1], "unk_id": 0, "byte_fallback": False})
        >>> m.piece_bytes, m.encode_strings(["aa"])
        ([b'<unk>', b'a', b'\\xff'], [[1, 1]])
        """
        what = "BPEModel"
        spec = spec_mapping(spec, what, ("pieces", "scores", "types", "unk_id", "byte_fallback"))
        pieces = [bytes_from_spec(piece, f"{what} spec: piece {i}")
                  for i, piece in enumerate(spec_list(spec, "pieces", (str, dict), what))]
        types = spec_list(spec, "types", int, what)
        bad = next((i for i, kind in enumerate(types) if kind not in PieceType._value2member_map_), None)
        if bad is not None:  # before int8 conversion, which overflows rather than saying which piece
            raise ValueError(f"{what} spec: piece {bad} has type {types[bad]}; types are 1-6")
        return cls(pieces, spec_list(spec, "scores", float, what), types, unk_id=spec_value(spec, "unk_id", int, what),
                   byte_fallback=spec_value(spec, "byte_fallback", bool, what))
