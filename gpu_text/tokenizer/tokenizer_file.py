"""The tokenizer file: one self-describing JSON document holding every stage's configuration.

Layout (each stage's part is that stage's ``to_dict``; see their docstrings)::

    {"format": "gpu_text.Tokenizer/1",
     "normalizer": {"name", "space", "remove_extra_whitespaces", "escape_whitespaces",
                    "add_dummy_prefix", "reconstruct",
                    "charsmap": null (a shipped rule, by name) | [[source, target], ...]},
     "pre_tokenizer": {"split", "digits", "space",
                       "cn": null | "char" | {"dictionary": {"words", "freqs", "total"}, "compat"}},
     "model": {"type": "bpe" | "unigram" | "bytepiece" | ... (absent: "bpe"),
               "pieces", "scores", "types", "unk_id", and the type's options: "byte_fallback" (bpe,
               unigram), "fallback_weight", "max_prefix_matches" (bytepiece)},
     "decoder": {"space", "strip_leading_space"},
     "special_tokens": {"bos_id", "eos_id", "pad_id"}}

Bytes that are not UTF-8 (a piece, a charsmap entry) are written ``{"base64": ...}``; scores are
the float32 values as exact JSON numbers. The file is UTF-8 JSON with no NaN or infinity. It is
told from the two formats this package also reads by its content, not its name
(:func:`model_file_kind`): SentencePiece's ``.model`` (a protobuf) and the seed's text format.
"""
from __future__ import annotations

import inspect
import json
import os
from typing import Any

from gpu_text.specs import bytes_from_spec, bytes_to_spec, spec_list, spec_mapping, spec_value

FORMAT = "gpu_text.Tokenizer/1"
FORMAT_PREFIX = "gpu_text.Tokenizer/"


class TokenizerFileError(ValueError):
    """A tokenizer file that cannot be read; the message names the file and the problem."""


def write_tokenizer_file(spec: dict[str, Any], path: str | os.PathLike) -> None:
    """Writes a tokenizer spec (``Tokenizer.to_dict()``) as compact UTF-8 JSON.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.json"
    >>> write_tokenizer_file({"format": FORMAT}, path)
    >>> path.read_text()
    '{"format":"gpu_text.Tokenizer/1"}\\n'
    """
    text = json.dumps(spec, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text + "\n")


def read_tokenizer_file(path: str | os.PathLike) -> dict[str, Any]:
    """The spec in a tokenizer file, once it is known to be JSON of this format and version
    (the stages check their own parts).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.json"
    >>> _ = path.write_text('{"format": "gpu_text.Tokenizer/1", "model": ')
    >>> read_tokenizer_file(path)
    Traceback (most recent call last):
    ...
    gpu_text.tokenizer.tokenizer_file.TokenizerFileError: ...t.json: not valid JSON (truncated?): \
Expecting value: line 1 column 45 (char 44)
    """
    name = os.fspath(path)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        # a byte order mark (an editor's) is no JSON; model_file_kind skips it too
        spec = json.loads(raw.decode("utf-8").removeprefix("\ufeff"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise TokenizerFileError(f"{name}: not UTF-8 text (byte {exc.start}): not a tokenizer file") from None
    except ValueError as exc:  # json.JSONDecodeError, or a NaN / Infinity
        raise TokenizerFileError(f"{name}: not valid JSON (truncated?): {exc}") from None
    if not isinstance(spec, dict) or "format" not in spec:
        raise TokenizerFileError(f"{name}: a tokenizer file is a JSON object with a \"format\" key; this is not one")
    found = spec["format"]
    if found != FORMAT:
        newer = isinstance(found, str) and found.startswith(FORMAT_PREFIX)
        raise TokenizerFileError(f"{name}: format {found!r} is not {FORMAT!r}"
                                 + (" (written by another version of gpu_text)" if newer else ""))
    return spec


_TABLE = ("pieces", "scores", "types")


def _options(model_class: Any) -> dict[str, Any]:
    """A model class's constructor options after its piece table, with their defaults."""
    parameters = list(inspect.signature(model_class.__init__).parameters.values())[1:]
    return {p.name: p.default for p in parameters if p.name not in _TABLE}


def model_to_spec(model: Any, kind: str) -> dict[str, Any]:
    """A model's part of a tokenizer file: ``{"type": kind, ...}`` and the model's ``to_dict()``,
    or, for a class without one, its piece table and the constructor options it keeps as
    attributes of the same names.

    >>> from gpu_text.tokenizer.bytepiece import BytePieceModel
    >>> model_to_spec(BytePieceModel(["<unk>", "a"], [0.0, 2.0], [2, 1]), "bytepiece")
    {'type': 'bytepiece', 'pieces': ['<unk>', 'a'], 'scores': [0.0, 2.0], 'types': [2, 1], 'unk_id': 0, \
'fallback_weight': -10.0, 'max_prefix_matches': 16}
    """
    if hasattr(model, "to_dict"):
        return {"type": kind, **model.to_dict()}
    return {"type": kind, "pieces": [bytes_to_spec(p) for p in model.piece_bytes],
            "scores": [float(x) for x in model.scores], "types": [int(t) for t in model.types],
            **{name: getattr(model, name) for name in _options(type(model))}}


def model_from_spec(model_class: Any, spec: Any) -> Any:
    """The model :func:`model_to_spec` wrote (without its ``type``); a malformed spec is a
    ``ValueError`` saying which key.

    >>> from gpu_text.tokenizer.bytepiece import BytePieceModel
    >>> spec = model_to_spec(BytePieceModel(["<unk>", "a"], [0.0, 2.0], [2, 1]), "bytepiece")
    >>> model_from_spec(BytePieceModel, {**spec, "max_prefix_matches": 1.5})
    Traceback (most recent call last):
    ...
    ValueError: BytePieceModel spec: 'max_prefix_matches' must be an integer, not a number
    """
    spec = {k: v for k, v in spec.items() if k != "type"} if isinstance(spec, dict) else spec
    if hasattr(model_class, "from_dict"):
        return model_class.from_dict(spec)
    what = model_class.__name__
    options = _options(model_class)
    spec = spec_mapping(spec, what, _TABLE + tuple(options))
    pieces = [bytes_from_spec(piece, f"{what} spec: piece {i}")
              for i, piece in enumerate(spec_list(spec, "pieces", (str, dict), what))]
    types = spec_list(spec, "types", int, what)
    if any(not 1 <= kind <= 6 for kind in types):
        bad = next(i for i, kind in enumerate(types) if not 1 <= kind <= 6)
        raise ValueError(f"{what} spec: piece {bad} has type {types[bad]}; types are 1-6")
    kwargs = {name: spec_value(spec, name, float if isinstance(default, float) else type(default), what)
              for name, default in options.items()}
    return model_class(pieces, spec_list(spec, "scores", float, what), types, **kwargs)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def model_file_kind(path: str | os.PathLike) -> str:
    """What a model file is, from its first bytes: ``"tokenizer"`` (this JSON format),
    ``"model_file"`` (the seed's text format, which starts with a ``[section]``) or
    ``"sentencepiece"`` (anything else: a protobuf ``ModelProto``, whose reader says what is wrong).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a").write_text(' {"format": "gpu_text.Tokenizer/1"}')
    >>> _ = (folder / "b").write_text("[CounterSpec]\\n")
    >>> _ = (folder / "c").write_bytes(b"\\n{\\n\\x05<unk>")
    >>> [model_file_kind(folder / n) for n in "abc"]
    ['tokenizer', 'model_file', 'sentencepiece']
    """
    with open(path, "rb") as f:
        head = f.read(64)
    # a BOM, spaces, tabs and CRs are no content; not LF, which begins every ModelProto (its
    # field 1), followed by a length byte that may well be "{" or "["
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r")
    if head.startswith(b"{"):
        return "tokenizer"
    if head.startswith(b"["):
        return "model_file"
    return "sentencepiece"


def model_method(path: str | os.PathLike) -> str | None:
    """The model a model file holds, ``"bpe"``, ``"unigram"`` or ``"bytepiece"``, read cheaply (no
    pieces are decoded, no table is built: the command line asks before loading, to choose what
    to compile ahead, :mod:`gpu_text.warmup`); None when the file does not say or cannot be read.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a").write_text('{"format": "gpu_text.Tokenizer/1", "model": {"type": "unigram"}}')
    >>> _ = (folder / "b").write_text("[CounterSpec]\\nmethod=bytepiece\\n")
    >>> _ = (folder / "c").write_bytes(b"\\x12\\x02\\x18\\x02")
    >>> [model_method(folder / n) for n in "abc"]
    ['unigram', 'bytepiece', 'bpe']
    """
    try:
        kind = model_file_kind(path)
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if kind == "tokenizer":
        try:
            model = json.loads(data).get("model", {})
        except (ValueError, AttributeError):
            return None
        return model.get("type", "bpe") if isinstance(model, dict) else None
    if kind == "model_file":  # the seed's [CounterSpec] says method=bytepiece; BPE files say sentencepiece
        for line in data[:4096].decode("utf-8", "replace").splitlines():
            if line.strip().startswith("method="):
                return "bytepiece" if line.split("=", 1)[1].strip() == "bytepiece" else "bpe"
        return "bpe"
    from gpu_text.tokenizer.sentencepiece_model import model_type_of

    return {"BPE": "bpe", "UNIGRAM": "unigram"}.get(model_type_of(data) or "")


__all__ = ["FORMAT", "TokenizerFileError", "model_file_kind", "model_method", "model_from_spec", "model_to_spec",
           "read_tokenizer_file", "write_tokenizer_file"]
