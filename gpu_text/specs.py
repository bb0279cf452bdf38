"""Checked reading of the plain dicts that the stages' ``to_dict`` write and ``from_dict`` read.

A spec comes from a file someone may have damaged or written by hand, so every ``from_dict``
reads it through these helpers: a missing key, an unknown key or a value of the wrong JSON type
is a ``ValueError`` naming the stage and the key, never a ``KeyError`` or ``TypeError``.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
          dict: "an object", type(None): "null"}


def _matches(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # JSON true/false is no number
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return isinstance(value, kinds)


def spec_mapping(spec: Any, what: str, keys: Iterable[str]) -> Mapping[str, Any]:
    """``spec`` when it is a dict of only the known ``keys``.

    >>> spec_mapping({"a": 1, "b": 2}, "Thing", ["a"])
    Traceback (most recent call last):
    ...
    ValueError: Thing spec: unknown key 'b' (the keys are 'a')
    """
    if not isinstance(spec, Mapping):
        raise ValueError(f"{what} spec must be an object, not {_NAMES.get(type(spec), type(spec).__name__)}")
    known = list(keys)
    unknown = [key for key in spec if key not in known]
    if unknown:
        raise ValueError(f"{what} spec: unknown key {unknown[0]!r} (the keys are {', '.join(map(repr, known))})")
    return spec


def spec_value(spec: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], what: str) -> Any:
    """``spec[key]``, checked to be of one of ``kinds`` (``int`` is accepted where ``float`` is).

    >>> spec_value({"n": 3}, "n", int, "Thing")
    3
    >>> spec_value({"n": "3"}, "n", int, "Thing")
    Traceback (most recent call last):
    ...
    ValueError: Thing spec: 'n' must be an integer, not a string
    >>> spec_value({}, "n", int, "Thing")
    Traceback (most recent call last):
    ...
    ValueError: Thing spec: 'n' is missing
    """
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if key not in spec:
        raise ValueError(f"{what} spec: {key!r} is missing")
    value = spec[key]
    if not _matches(value, kinds):
        wanted = " or ".join(_NAMES.get(k, k.__name__) for k in kinds)
        raise ValueError(f"{what} spec: {key!r} must be {wanted}, not {_NAMES.get(type(value), type(value).__name__)}")
    return value


def spec_list(spec: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], what: str) -> list[Any]:
    """``spec[key]``, checked to be a list whose every item is of one of ``kinds``.

    >>> spec_list({"xs": [1, 2.5]}, "xs", float, "Thing")
    [1, 2.5]
    >>> spec_list({"xs": [1, None]}, "xs", float, "Thing")
    Traceback (most recent call last):
    ...
    ValueError: Thing spec: 'xs'[1] must be a number, not null
    """
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    values = spec_value(spec, key, list, what)
    for index, value in enumerate(values):
        if not _matches(value, kinds):
            wanted = " or ".join(_NAMES.get(k, k.__name__) for k in kinds)
            raise ValueError(f"{what} spec: {key!r}[{index}] must be {wanted}, "
                             f"not {_NAMES.get(type(value), type(value).__name__)}")
    return values


def bytes_to_spec(raw: bytes) -> str | dict[str, str]:
    """Bytes as JSON can hold them: a string when they are UTF-8 (readable), else ``{"base64": ...}``.

    >>> bytes_to_spec("▁a".encode()), bytes_to_spec(b"\\xff")
    ('▁a', {'base64': '/w=='})
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}


def bytes_from_spec(value: Any, what: str) -> bytes:
    """The bytes :func:`bytes_to_spec` wrote.

    >>> bytes_from_spec({"base64": "/w=="}, "piece 3"), bytes_from_spec("a", "piece 4")
    (b'\\xff', b'a')
    >>> bytes_from_spec({"base64": "%"}, "piece 5")
    Traceback (most recent call last):
    ...
    ValueError: piece 5: {'base64': '%'} is not valid base64
    """
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{what}: {value!r} holds a lone surrogate, which is no UTF-8") from None
    if isinstance(value, Mapping) and list(value) == ["base64"] and isinstance(value["base64"], str):
        try:
            return base64.b64decode(value["base64"], validate=True)
        except binascii.Error:
            raise ValueError(f"{what}: {dict(value)!r} is not valid base64") from None
    raise ValueError(f"{what}: expected a string or {{\"base64\": ...}}, not {value!r:.80}")


__all__ = ["bytes_from_spec", "bytes_to_spec", "spec_list", "spec_mapping", "spec_value"]
