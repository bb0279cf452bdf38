"""The order in which the seed's C++ (GCC's libstdc++) visits equal counts, reproduced.

The seed ranks its final pieces with ``std::sort`` by count alone over the iteration order of a
``std::unordered_map``, so equal counts come out in an order fixed by the library: the hash of
``std::string``, the bucket a node goes to, the rehash schedule and introsort. The Numba helpers are
``cxx_*`` in :mod:`cpu_fallback.bytepiece_trainer`; tests/test_bytepiece_trainer.py checks them
against a compiled probe when a C++ compiler is present.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpu_text.backend import get_backend

# (elements already held, bucket count after the insert) for every growth of a default-constructed
# unordered_map in libstdc++ (GCC 12 and later; max load factor 1): observed with
# std::__detail::_Prime_rehash_policy::_M_need_rehash, one insert at a time.
_GROW_AT = np.array([0, 13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229, 172933, 351061, 712697, 1447153, 2938679, 5967347, 12117689, 24607243, 49969847, 101473717, 206062531, 418451333, 849749479, 1725587117], np.int64)
_BUCKETS = np.array([13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229, 172933, 351061, 712697, 1447153, 2938679, 5967347, 12117689, 24607243, 49969847, 101473717, 206062531, 418451333, 849749479, 1725587117, 3504151727], np.int64)


def _helpers():
    return get_backend("cpu").ops("bytepiece_trainer")


def string_hashes(keys: Sequence[bytes]) -> np.ndarray:
    """``std::hash<std::string>`` of each key (64-bit).

    >>> [hex(h) for h in string_hashes([b"", b"a"])]
    ['0x553e93901e462a6e', '0x454ddee488c1ed6b']
    """
    lengths = np.fromiter((len(k) for k in keys), np.int64, len(keys))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return _helpers().cxx_string_hashes(np.frombuffer(b"".join(keys), np.uint8), offsets)


def iteration_order(keys: Sequence[bytes]) -> list[bytes]:
    """The keys in the order an ``unordered_map<string, ...>`` iterates them after they were inserted
    in the order given (each once, into an empty map).

    >>> iteration_order([b"a", b"b", b"c"])
    [b'c', b'b', b'a']
    """
    keys = list(keys)
    if not keys:
        return []
    return [keys[i] for i in _helpers().cxx_iteration_order(string_hashes(keys), _GROW_AT, _BUCKETS).tolist()]


def sort_by_count(items: Sequence[tuple[bytes, int]]) -> list[tuple[bytes, int]]:
    """``std::sort(items, [](a, b) { return a.second > b.second; })``: by count, larger first, equal
    counts in introsort's (unstable) order.

    >>> sort_by_count([(b"a", 1), (b"b", 2), (b"c", 1)])
    [(b'b', 2), (b'a', 1), (b'c', 1)]
    """
    items = list(items)
    counts = np.fromiter((c for _, c in items), np.int64, len(items))
    return [items[i] for i in _helpers().cxx_sort_by_count(counts).tolist()]


__all__ = ["iteration_order", "sort_by_count", "string_hashes"]
