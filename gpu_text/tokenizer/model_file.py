"""The seed PieceTokenizer's text model format: read and write it exactly.

A model file is UTF-8 text in three sections::

    [CounterSpec]
    method=bytepiece
    vocab_size=8000
    ...                      (key=value, one per line)

    [PreTokenizerSpec]
    name=no
    space=▁
    cut=0
    reconstruct=0
    split_digits=0

    [Pieces]
    size=N
    0<TAB><unk><TAB>0<TAB>2<TAB><TAB>
    ...                      (id, piece, score, type, u, v: u + v is the merge that made the piece)

Inside pieces (and ``u``, ``v``, ``space``) tab, newline, CR, backslash and bytes that are not
valid UTF-8 are written ``\\xHH`` (uppercase hex), so pieces are bytes here. Files written before
the seed renamed ``[PreTokenizerSpec]`` from ``[NormalizerSpec]`` (the two models bundled with
``piece-tokenizer``) use the old header, which is read as the new one.

Parsing is strict where the seed's loader is lenient, so that a damaged file fails loudly: every
section and ``size=`` must be present, ids run 0..N-1 in order, types are 1-6, every line of a
spec section is a known ``key=value``, and every error names the line. A file that parses is then
checked as a model (:func:`check_model`): pieces non-empty, distinct, at most
:data:`~gpu_text.tokenizer.bpe.MAX_PIECE_BYTES` bytes, BYTE pieces named ``<0x00>`` … ``<0xFF>``,
finite scores; ``unk_id`` an UNKNOWN piece and ``bos_id``, ``eos_id``, ``pad_id`` CONTROL pieces or
-1; a known normalizer name, a ``cut`` of the pre-tokenizer and a one-character ``space``. A UTF-8
byte order mark at the start of the file is skipped.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields

import numpy as np

PIECE_TYPES = {1: "NORMAL", 2: "UNKNOWN", 3: "CONTROL", 4: "USER_DEFINED", 5: "UNUSED", 6: "BYTE"}
_ESCAPED = frozenset(b"\t\n\r\\")
_HEX_ESCAPE = re.compile(rb"\\x([0-9A-Fa-f]{2})")


class ModelFileError(ValueError):
    """A model file that does not follow the format; the message names the line."""


@dataclass
class CounterSpec:
    """The ``[CounterSpec]`` section: how the vocabulary was trained and its special pieces.

    >>> CounterSpec().method, CounterSpec().unk_unicode, CounterSpec().pad_id
    ('bytepiece', 9605, -1)
    """

    method: str = "bytepiece"
    vocab_size: int = 8000
    character_coverage: float = 0.9995
    min_count: int = 32
    max_piece_size: int = 18
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_unicode: int = 0x2585  # ▅, what characters outside the coverage become
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"
    extra_tokens: list[str] = field(default_factory=list)


@dataclass
class PreTokenizerSpec:
    """The ``[PreTokenizerSpec]`` section: the normalizer name and the pre-tokenizer's axes.

    >>> PreTokenizerSpec().space, PreTokenizerSpec(cut=1).cut
    ('▁', 1)
    """

    name: str = "no"
    space: str = "\u2581"
    cut: int = 0
    reconstruct: bool = False
    split_digits: bool = False


@dataclass
class PieceTable:
    """The ``[Pieces]`` section: piece ``i`` is ``pieces[i]`` (bytes) with ``scores[i]`` (float32),
    ``types[i]`` (int8, 1-6: see :data:`PIECE_TYPES`) and merge parents ``u[i]`` + ``v[i]`` (bytes,
    both empty when the piece is not a merge).

    >>> t = PieceTable.from_lists([b"a", b"b", b"ab"], [0, -1, -2], [1, 1, 1], [b"", b"", b"a"], [b"", b"", b"b"])
    >>> len(t), t.scores.dtype.name, t.types.tolist()
    (3, 'float32', [1, 1, 1])
    """

    pieces: list[bytes]
    scores: np.ndarray
    types: np.ndarray
    u: list[bytes]
    v: list[bytes]

    @classmethod
    def from_lists(cls, pieces: list[bytes], scores: list[float], types: list[int],
                   u: list[bytes] | None = None, v: list[bytes] | None = None) -> "PieceTable":
        """A table from plain lists (``u`` and ``v`` default to empty parents).

        >>> PieceTable.from_lists([b"x"], [0.5], [4]).u
        [b'']
        """
        n = len(pieces)
        return cls(list(pieces), np.asarray(scores, np.float32), np.asarray(types, np.int8),
                   list(u) if u is not None else [b""] * n, list(v) if v is not None else [b""] * n)

    def __len__(self) -> int:
        return len(self.pieces)


@dataclass
class TokenizerModel:
    """A whole model file: the two specs and the piece table.

    >>> m = TokenizerModel(CounterSpec(), PreTokenizerSpec(), PieceTable.from_lists([b"<unk>"], [0], [2]))
    >>> len(m.pieces)
    1
    """

    counter: CounterSpec
    pretokenizer: PreTokenizerSpec
    pieces: PieceTable


# ------------------------------------------------------------------------------- escaping


def _valid_utf8_length(raw: bytes, i: int) -> int:
    """Length of the well-formed UTF-8 sequence at raw[i] (a non-ASCII lead), or 0."""
    for length in (2, 3, 4):
        try:
            raw[i:i + length].decode("utf-8")
            return length
        except UnicodeDecodeError:
            continue
    return 0


def escape_piece(raw: bytes) -> str:
    """``raw`` as written in a model file: tab, LF, CR, backslash and invalid UTF-8 bytes as ``\\xHH``.

    >>> escape_piece(b"a\\tb\\\\") , escape_piece("你".encode() + b"\\xe4")
    ('a\\\\x09b\\\\x5C', '你\\\\xE4')
    """
    out = []
    i = 0
    while i < len(raw):
        b = raw[i]
        if b in _ESCAPED:
            out.append(f"\\x{b:02X}")
            i += 1
        elif b < 0x80:
            out.append(chr(b))
            i += 1
        else:
            length = _valid_utf8_length(raw, i)
            if length:
                out.append(raw[i:i + length].decode("utf-8"))
                i += length
            else:
                out.append(f"\\x{b:02X}")
                i += 1
    return "".join(out)


def unescape_piece(text: str, where: str = "piece") -> bytes:
    """The bytes a model-file field stands for; a backslash that starts no ``\\xHH`` is an error.

    >>> unescape_piece("a\\\\x09\\\\xE4")
    b'a\\t\\xe4'
    >>> unescape_piece("a\\\\b", "line 9")
    Traceback (most recent call last):
    ...
    gpu_text.tokenizer.model_file.ModelFileError: line 9: a backslash that starts no \\xHH escape in 'a\\\\b'
    """
    raw = text.encode("utf-8", "surrogatepass")
    if raw.count(b"\\") != len(_HEX_ESCAPE.findall(raw)):
        raise ModelFileError(f"{where}: a backslash that starts no \\xHH escape in {text!r}")
    return _HEX_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), raw)


# -------------------------------------------------------------------------------- writing


def _format_float(value: float) -> str:
    """C++ ``ostream << float`` (``%g``) when that reads back exactly, else the shortest exact form."""
    value32 = np.float32(value)
    text = "%g" % value32
    if np.float32(text) == value32 or np.isnan(value32):
        return text
    return np.format_float_positional(value32, unique=True, trim="-") if 1e-4 <= abs(value32) < 1e16 \
        else np.format_float_scientific(value32, unique=True, trim="-")


def _int_flag(value: bool) -> str:
    return "1" if value else "0"


def format_model(model: TokenizerModel) -> str:
    """The text of ``model``'s file (what :func:`write_model_file` writes).

    >>> m = TokenizerModel(CounterSpec(), PreTokenizerSpec(), PieceTable.from_lists([b"a\\tb"], [-1.5], [1]))
    >>> format_model(m).splitlines()[-2:]
    ['size=1', '0\\ta\\\\x09b\\t-1.5\\t1\\t\\t']
    """
    c, p, t = model.counter, model.pretokenizer, model.pieces
    lines = ["[CounterSpec]", f"method={c.method}", f"vocab_size={c.vocab_size}",
             f"character_coverage={_format_float(c.character_coverage)}", f"min_count={c.min_count}",
             f"max_piece_size={c.max_piece_size}", f"unk_id={c.unk_id}", f"bos_id={c.bos_id}",
             f"eos_id={c.eos_id}", f"pad_id={c.pad_id}", f"unk_unicode={c.unk_unicode}",
             f"unk_piece={c.unk_piece}", f"bos_piece={c.bos_piece}", f"eos_piece={c.eos_piece}",
             f"pad_piece={c.pad_piece}"]
    if c.extra_tokens:
        lines.append("extra_tokens=" + ",".join(c.extra_tokens))
    lines += ["", "[PreTokenizerSpec]", f"name={p.name}",
              f"space={escape_piece(p.space.encode('utf-8', 'surrogatepass'))}", f"cut={p.cut}",
              f"reconstruct={_int_flag(p.reconstruct)}", f"split_digits={_int_flag(p.split_digits)}",
              "", "[Pieces]", f"size={len(t)}"]
    if not (len(t.scores) == len(t.types) == len(t.u) == len(t.v) == len(t)):
        raise ValueError("PieceTable columns differ in length")
    for i, (piece, score, kind, u, v) in enumerate(zip(t.pieces, t.scores.tolist(), t.types.tolist(), t.u, t.v)):
        if kind not in PIECE_TYPES:
            raise ValueError(f"piece {i} has type {kind}; types are 1-6")
        lines.append(f"{i}\t{escape_piece(piece)}\t{_format_float(score)}\t{kind}\t{escape_piece(u)}\t{escape_piece(v)}")
    return "\n".join(lines) + "\n"


def write_model_file(model: TokenizerModel, path: str | os.PathLike) -> None:
    """Writes ``model`` in the seed's format (UTF-8, ``\\n`` line ends).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.model"
    >>> pieces = PieceTable.from_lists([b"<unk>", b"\\\\"], [0, -1], [2, 1])
    >>> m = TokenizerModel(CounterSpec(bos_id=-1, eos_id=-1), PreTokenizerSpec(), pieces)
    >>> write_model_file(m, path)
    >>> read_model_file(path).pieces.pieces
    [b'<unk>', b'\\\\']
    """
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(format_model(model))


# -------------------------------------------------------------------------------- reading

_SECTIONS = {"CounterSpec": "counter", "PreTokenizerSpec": "pretokenizer", "NormalizerSpec": "pretokenizer",
             "Pieces": "pieces"}


def _convert(cls: type, key: str, value: str, where: str) -> object:
    kinds = {f.name: f.type for f in fields(cls)}
    if key not in kinds:
        raise ModelFileError(f"{where}: unknown key {key!r} in [{cls.__name__}]")
    kind = kinds[key]
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "bool":
            if value not in ("0", "1"):
                raise ValueError("expected 0 or 1")
            return value == "1"
    except ValueError as exc:
        raise ModelFileError(f"{where}: {key}={value!r} is not a valid {kind} ({exc})") from None
    if key == "extra_tokens":
        # the seed's own add-extra-tokens script writes the list in double quotes
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        return [token for token in value.split(",") if token]
    if key == "space":
        return unescape_piece(value, where).decode("utf-8", "surrogatepass")
    return value


def _parse_piece(line: str, where: str, expected_id: int) -> tuple[bytes, float, int, bytes, bytes]:
    parts = line.split("\t")
    if len(parts) != 6:
        raise ModelFileError(f"{where}: a piece line has 6 tab-separated fields (id, piece, score, type, u, v); "
                             f"found {len(parts)}")
    id_text, piece, score_text, type_text, u, v = parts
    if id_text != str(expected_id):
        raise ModelFileError(f"{where}: expected piece id {expected_id}, found {id_text!r} (ids run 0..N-1 in order)")
    try:
        with np.errstate(over="ignore"):  # beyond float32 is inf, which check_model refuses
            score = float(np.float32(score_text))
    except ValueError:
        raise ModelFileError(f"{where}: score {score_text!r} is not a number") from None
    if type_text not in {str(k) for k in PIECE_TYPES}:
        raise ModelFileError(f"{where}: piece type {type_text!r} is not one of 1-6")
    return unescape_piece(piece, where), score, int(type_text), unescape_piece(u, where), unescape_piece(v, where)


def parse_model(text: bytes | str, source: str = "model") -> TokenizerModel:
    """Parses the text of a model file (see the module docstring); :class:`ModelFileError` names the line.

    >>> parse_model("[CounterSpec]\\n[PreTokenizerSpec]\\n[Pieces]\\nsize=1\\n0\\ta\\t0\\t7\\t\\t\\n")
    Traceback (most recent call last):
    ...
    gpu_text.tokenizer.model_file.ModelFileError: model line 5: piece type '7' is not one of 1-6
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a BOM (an editor's) is no text; the line numbers stay
    specs: dict[str, dict[str, object]] = {"counter": {}, "pretokenizer": {}}
    lines: dict[str, int] = {}  # where each spec key and each piece was read, for check_model's messages
    seen: set[str] = set()
    section = None
    size = None
    rows: list[tuple[bytes, float, int, bytes, bytes]] = []
    for number, line_bytes in enumerate(raw.split(b"\n"), 1):
        where = f"{source} line {number}"
        if line_bytes.endswith(b"\r"):  # CRLF files; a CR inside a piece is always escaped
            line_bytes = line_bytes[:-1]
        try:
            line = line_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelFileError(f"{where}: not valid UTF-8 at byte {exc.start} (raw bytes are written \\xHH)") from None
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1]
            if name not in _SECTIONS:
                raise ModelFileError(f"{where}: unknown section [{name}]")
            section = _SECTIONS[name]
            if section in seen:
                raise ModelFileError(f"{where}: section [{name}] appears twice")
            seen.add(section)
            continue
        if section is None:
            raise ModelFileError(f"{where}: text before the first section: {line!r}")
        if section == "pieces":
            if size is None:
                if not line.startswith("size="):
                    raise ModelFileError(f"{where}: [Pieces] must start with size=N")
                try:
                    size = int(line[5:])
                    if size < 0:
                        raise ValueError
                except ValueError:
                    raise ModelFileError(f"{where}: size={line[5:]!r} is not a count") from None
                continue
            if len(rows) == size:
                raise ModelFileError(f"{where}: more pieces than size={size}")
            lines[f"piece {len(rows)}"] = number
            rows.append(_parse_piece(line, where, len(rows)))
            continue
        key, eq, value = line.partition("=")
        if not eq:
            raise ModelFileError(f"{where}: expected key=value, found {line!r}")
        cls = CounterSpec if section == "counter" else PreTokenizerSpec
        if key in specs[section]:
            raise ModelFileError(f"{where}: {key} is given twice")
        specs[section][key] = _convert(cls, key, value, where)
        lines[key] = number
    for part, header in (("counter", "[CounterSpec]"), ("pretokenizer", "[PreTokenizerSpec]"), ("pieces", "[Pieces]")):
        if part not in seen:
            raise ModelFileError(f"{source}: section {header} is missing")
    if size is None:
        raise ModelFileError(f"{source}: [Pieces] has no size= line")
    if len(rows) != size:
        raise ModelFileError(f"{source} line {number}: [Pieces] says size={size} but has {len(rows)} pieces")
    pieces, scores, types, u, v = (list(column) for column in zip(*rows)) if rows else ([], [], [], [], [])
    model = TokenizerModel(CounterSpec(**specs["counter"]), PreTokenizerSpec(**specs["pretokenizer"]),
                           PieceTable.from_lists(pieces, scores, types, u, v))
    check_model(model, source, lines)
    return model


def check_model(model: TokenizerModel, source: str = "model", lines: dict[str, int] | None = None) -> None:
    """:class:`ModelFileError` unless ``model`` is one a tokenizer can load (the module docstring's
    rules), naming the line of the piece or key at fault (``lines``: key or ``"piece N"`` → line;
    a key the file does not set is named as a default).

    >>> table = PieceTable.from_lists([b"<unk>", b"<s>", b"a"], [0, 0, -1], [2, 3, 1])
    >>> check_model(TokenizerModel(CounterSpec(bos_id=1, eos_id=-1), PreTokenizerSpec(), table))
    >>> check_model(TokenizerModel(CounterSpec(bos_id=1, eos_id=99999), PreTokenizerSpec(), table), "m.txt",
    ...             {"eos_id": 9})
    Traceback (most recent call last):
    ...
    gpu_text.tokenizer.model_file.ModelFileError: m.txt line 9: eos_id=99999 is not a piece id (the model \
has 3 pieces; -1 means none)
    """
    # imported here: the readers and writers of the format need none of the tokenizer's stages
    from gpu_text.tokenizer.bpe import piece_problem, special_id_problem
    from gpu_text.tokenizer.normalizer import canonical_rule_name
    from gpu_text.tokenizer.pre_tokenizer import SPLIT_MODES

    lines = lines or {}

    def where(key: str) -> str:
        return f"{source} line {lines[key]}" if key in lines else f"{source} ({key} not set: the default)"

    table, counter, pre = model.pieces, model.counter, model.pretokenizer
    problem = piece_problem(table.pieces, table.types, table.scores)
    if problem is not None:
        raise ModelFileError(f"{where(f'piece {problem[0]}')}: piece {problem[0]} {problem[1]}")
    for name in ("unk_id", "bos_id", "eos_id", "pad_id"):
        problem = special_id_problem(name, getattr(counter, name), table.pieces, table.types)
        if problem is not None:
            raise ModelFileError(f"{where(name)}: {problem}")
    try:
        canonical_rule_name(pre.name)
    except ValueError as exc:
        raise ModelFileError(f"{where('name')}: {exc}") from None
    if not 0 <= pre.cut < len(SPLIT_MODES):
        modes = ", ".join(f"{cut} {mode}" for cut, mode in enumerate(SPLIT_MODES))
        raise ModelFileError(f"{where('cut')}: unknown pre-tokenizer cut={pre.cut} ({modes})")
    if len(pre.space) != 1:
        raise ModelFileError(f"{where('space')}: space={pre.space!r} is not one character")


def read_model_file(path: str | os.PathLike) -> TokenizerModel:
    """Reads a model file written by the seed (or :func:`write_model_file`).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.model"
    >>> _ = path.write_text("[CounterSpec]\\nmethod=sentencepiece\\nbos_id=-1\\neos_id=-1\\n[NormalizerSpec]\\n"
    ...                     "name=no\\n[Pieces]\\nsize=1\\n0\\t<unk>\\t0\\t2\\t\\t\\n")
    >>> m = read_model_file(path)
    >>> m.counter.method, m.counter.vocab_size, len(m.pieces)
    ('sentencepiece', 8000, 1)
    >>> _ = path.write_text("[CounterSpec]\\nbos_id=3\\n[PreTokenizerSpec]\\n[Pieces]\\nsize=1\\n0\\t<unk>\\t0\\t2\\t\\t\\n")
    >>> read_model_file(path)
    Traceback (most recent call last):
    ...
    gpu_text.tokenizer.model_file.ModelFileError: ...m.model line 2: bos_id=3 is not a piece id (the model has \
1 pieces; -1 means none)
    """
    with open(path, "rb") as f:
        return parse_model(f.read(), os.fspath(path))


__all__ = ["PIECE_TYPES", "CounterSpec", "ModelFileError", "PieceTable", "PreTokenizerSpec", "TokenizerModel",
           "check_model", "escape_piece", "format_model", "parse_model", "read_model_file", "unescape_piece",
           "write_model_file"]
