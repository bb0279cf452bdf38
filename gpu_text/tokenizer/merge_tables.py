"""Tables that let the BPE encoders merge by symbol ids instead of walking the trie byte by byte.

Encoding starts from characters (a well-formed UTF-8 sequence, or one byte of a malformed one)
and only ever joins two adjacent symbols whose concatenation is a mergeable piece, so every
symbol is either such a piece or a single character. Each gets an id: its piece id, or, for a
character that is no piece but occurs inside one, an id past the last piece. The tables:

- ``chars``: a character (its bytes packed big-endian into a uint64) → its id;
- ``merges``: a pair of ids (left << 32 | right) → the id of the piece they join into;
- ``bmp_ids``: a plain array, the id of every codepoint below U+10000 (-1 if none): most text needs
  no hashing to find its characters' ids (:func:`char_id_at`);
- ``joins``: the pairs of character ids that sit next to each other inside some piece. BPE never
  merges across a boundary between characters whose pair is not in it, so the text on either side
  is encoded independently: the CPU encoder cuts long pre-tokens (a Chinese line is one) into short
  parts there, which repeat, and encodes each distinct part once; the GPU's block per long
  pre-token merges all its parts at once, each part taking its own best pair. A pair's value is
  the piece the two characters merge into, or :data:`JOINED` when they only sit next to each
  other inside longer pieces: the CPU encoder settles a part of two characters (a third of the
  parts of Chinese text at 32k pieces), and starts merging a longer one, from the lookups that
  found the part, without looking its pairs up again.

A hash table is a pair of arrays (keys uint64, values int32) with open addressing; the hashing
and the builders are Numba helpers of the CPU layer (``cpu_fallback/merge_tables.py``), and
``cuda/merge_tables.cuh`` looks the same slots up on the GPU.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpu_text.backend import get_backend

JOINED = -2
"""The ``joins`` value of two characters that are no piece together (-1 is "not in the table")."""


def _bmp_ids(keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The ids of the well-formed characters below U+10000 among packed ``keys``, by codepoint."""
    table = np.full(0x10000, -1, np.int32)
    for key, char_id in zip(keys.tolist(), ids.tolist()):
        raw = key.to_bytes(4, "big").rstrip(b"\0") or b"\0"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a malformed byte: found through the chars table
        if len(text) == 1 and ord(text) < 0x10000:
            table[ord(text)] = char_id
    return table


def _joined_pieces(joins: tuple[np.ndarray, np.ndarray], merges: tuple[np.ndarray, np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The ``joins`` table with each pair's value set: the piece it merges into (from ``merges``,
    whose pairs of two characters are all joins), else :data:`JOINED`. Same slots, so the CUDA
    twin, which reads the keys only, sees the same table."""
    join_keys, merge_keys = joins[0], merges[0]
    values = np.full(join_keys.size, -1, np.int32)
    used = join_keys != np.uint64(0xFFFFFFFFFFFFFFFF)  # the tables' EMPTY key
    order = np.argsort(merge_keys)  # a table has at least two slots; its EMPTY keys sort last
    at = np.minimum(np.searchsorted(merge_keys[order], join_keys[used]), merge_keys.size - 1)
    values[used] = np.where(merge_keys[order][at] == join_keys[used], merges[1][order][at], JOINED)
    return join_keys, values


class MergeTables(NamedTuple):
    """The tables (seven arrays) of a piece set; see the module's docstring."""

    char_keys: np.ndarray
    char_ids: np.ndarray
    merge_keys: np.ndarray
    merge_ids: np.ndarray
    join_keys: np.ndarray
    join_values: np.ndarray
    bmp_ids: np.ndarray

    @classmethod
    def build(cls, pieces: list[bytes], ids: np.ndarray, n_pieces: int, trie_arrays: tuple) -> "MergeTables":
        """Tables of the mergeable ``pieces`` (ids ``ids``, ``n_pieces`` pieces in the model) and their trie.

        >>> from gpu_text.trie import DoubleArrayTrie
        >>> words = ["a".encode(), "ab".encode()]
        >>> t = MergeTables.build(words, np.array([1, 2]), 3, DoubleArrayTrie.build(words, [1, 2]).arrays("cpu"))
        >>> lookup = get_backend("cpu").op("merge_tables", "lookup")
        >>> b = int(lookup(t.char_keys, t.char_ids, np.uint64(ord("b") << 24)))  # "b" is no piece: an id past them
        >>> b, int(lookup(t.merge_keys, t.merge_ids, np.uint64(1 << 32 | b)))
        (3, 2)
        """
        offsets = np.zeros(len(pieces) + 1, np.int64)
        np.cumsum([len(p) for p in pieces], out=offsets[1:])
        data = np.frombuffer(b"".join(pieces), np.uint8)
        ids = np.asarray(ids, np.int32)
        cpu = get_backend("cpu")  # the tables are built on the host, by the CPU layer's Numba helpers
        keys, firsts, single = cpu.op("merge_tables", "piece_chars")(data, offsets)
        single_keys, single_ids = firsts[single], ids[single]
        # each distinct character gets its piece's id, or the next id past the pieces (first seen, first numbered)
        unique, first = np.unique(keys, return_index=True)
        unique = unique[np.argsort(first)]
        char_ids = np.full(unique.size, -1, np.int32)
        order = np.argsort(single_keys)
        at = np.searchsorted(single_keys[order], unique)
        found = at < single_keys.size
        found[found] = single_keys[order][at[found]] == unique[found]
        char_ids[found] = single_ids[order][at[found]]
        char_ids[~found] = n_pieces + np.arange(int((~found).sum()), dtype=np.int32)
        chars = cpu.op("merge_tables", "table_of")(unique, char_ids)
        merges, joins = cpu.op("merge_tables", "pair_tables")(data, offsets, ids, chars, *trie_arrays)
        return cls(*chars, *merges, *_joined_pieces(joins, merges), _bmp_ids(unique, char_ids))
