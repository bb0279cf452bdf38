"""The BytePiece model (PieceTokenizer's default method): pieces scored by count, encoded by a
unigram Viterbi over the pieces that match at each character.

Encoding one pre-token (the seed's BytePieceTokenizer): every NORMAL piece is an edge weighted
``log(count) - log(Σ count)`` (the sum over NORMAL pieces), every character also has a fallback
edge of weight -10.0; the best path is solved forward with the seed's tie rule
(:mod:`cpu_fallback.lattice`). Each token of the path becomes its piece's id (a fallback character
that is a piece of any type takes that piece's id), else its bytes' ``<0xXX>`` BYTE pieces (the
unknown id where a BYTE piece is missing). The seed reads at most 16 prefix matches at a character
(``kMaxNumResults``); so does this model (``max_edges_per_start``).

Kernels: the trie's prefix search (``cuda/trie.cu``) finds the edges, ``cuda/lattice.cu`` (one
thread per pre-token, linear in its bytes and edges) and its Numba twin solve the paths;
:meth:`BytePieceModel.encode_rows` runs them with the fallback characters' ids
(``cuda/lattice_tokens.cu``) as one op from the pre-tokenizer's per-byte marks, without a host
read between them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpu_text.backend import Backend, get_backend
from gpu_text.ragged import row_ids
from gpu_text.tokenizer.bpe import BPEModel, EncodedPreTokens, PieceType, byte_piece, piece_problem, shown_piece, \
    special_id_problem
from gpu_text.trie import DoubleArrayTrie
from gpu_text.trie.double_array import _device_key

FALLBACK_WEIGHT = -10.0
"""The seed's weight of a character's fallback edge (BytePieceTokenizer's ``fallback_weight``)."""

MAX_PREFIX_MATCHES = 16
"""Prefix matches the seed reads at one character (``kMaxNumResults`` of its trie search)."""


# How :meth:`encode_rows` turns a fallback character (a path token that is no edge) into ids, as
# ``lattice_encode`` takes it: the piece it spells else its bytes (BytePiece), one unknown id per
# run of them (Unigram), its bytes (Unigram with byte fallback).
FINISH_LOOKUP, FINISH_MERGE, FINISH_BYTES = 0, 1, 2

# a trie without words (one slot, no edges), for a model without edge pieces
EMPTY_TRIE = (np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.uint8), np.zeros(1, np.uint8))


def device_tables(model: Any, backend: Backend, lookup: DoubleArrayTrie | None) -> tuple[Any, Any, Any, Any]:
    """``model``'s edge trie (its four arrays), edge weights, byte ids and the ``lookup`` trie's
    arrays (the edge trie's when None) on ``backend``'s device: copied there once per device and
    kept on the model, so that encoding uploads no table after its first call.

    >>> m = BytePieceModel(["<unk>", "a"], [0.0, 1.0], [2, 1])
    >>> device_tables(m, get_backend("cpu"), None)[1].tolist()
    [-inf, 0.0]
    """
    cache = model.__dict__.setdefault("_tables_on_device", {})
    key = _device_key(backend.xp)
    if key not in cache:
        trie = model.trie.arrays(backend) if model.trie is not None else tuple(backend.asarray(a) for a in EMPTY_TRIE)
        cache[key] = (trie, backend.asarray(model.weights), backend.asarray(model.byte_ids),
                      lookup.arrays(backend) if lookup is not None else trie)
    return cache[key]


def piece_weights(counts: Sequence[float]) -> np.ndarray:
    """``log(count) - log(Σ count)`` of every count, as the seed computes it in double precision
    (C's ``log``: ``math.log``); a count that is not positive gets ``-inf`` (an edge never taken,
    as the seed's ``log(0)`` and NaN are).

    >>> piece_weights([1.0, 3.0, 0.0]).round(4).tolist()
    [-1.3863, -0.2877, -inf]
    """
    total = 0.0
    for count in counts:  # in order, one double at a time, as the seed sums
        total += float(count)
    log_total = math.log(total) if total > 0 else math.inf
    return np.array([math.log(c) - log_total if c > 0 else -math.inf for c in map(float, counts)], np.float64)


def lattice_spans(data: Any, starts: Any, ends: Any, be: Backend) -> tuple[Any, Any, Any]:
    """The bytes and span bounds as the lattice kernels take them (C order, uint8 / int64, on ``be``).

    >>> [a.dtype.name for a in lattice_spans(np.frombuffer(b"ab", np.uint8), [0], [2], get_backend("cpu"))]
    ['uint8', 'int64', 'int64']
    """
    xp = be.xp
    return (xp.ascontiguousarray(be.asarray(data), dtype=xp.uint8),
            xp.ascontiguousarray(be.asarray(starts), dtype=xp.int64),
            xp.ascontiguousarray(be.asarray(ends), dtype=xp.int64))


def lattice_edges(trie: DoubleArrayTrie | None, data: Any, starts: Any, ends: Any, be: Backend
                  ) -> tuple[Any, Any, Any, Any]:
    """The pieces found in each span (``trie.prefix_search_spans``); none without a trie.

    >>> [a.tolist() for a in lattice_edges(None, None, np.array([0]), np.array([1]), get_backend("cpu"))]
    [[], [], [], [0, 0]]
    """
    if trie is not None:
        return trie.prefix_search_spans(data, starts, ends, be)
    xp = be.xp
    none = xp.zeros(0, xp.int64)
    return none, none, xp.zeros(0, xp.int32), xp.zeros(starts.size + 1, xp.int64)


class BytePieceModel:
    """Pieces (str or bytes), scores (a NORMAL piece's count), types and ``unk_id``.

    >>> pieces = ["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)] + ["hello", "world", "▁"]
    >>> model = BytePieceModel(pieces, [0.0] * 259 + [10.0, 10.0, 5.0], [2, 3, 3] + [6] * 256 + [1, 1, 1])
    >>> [[model.pieces[i] for i in row] for row in model.encode_strings(["hello", "▁world", "hé"])]
    [['hello'], ['▁', 'world'], ['<0x68>', '<0xC3>', '<0xA9>']]
    """

    def __init__(self, pieces: Sequence[str | bytes], scores: Sequence[float], types: Sequence[int],
                 unk_id: int = 0, fallback_weight: float = FALLBACK_WEIGHT,
                 max_prefix_matches: int = MAX_PREFIX_MATCHES) -> None:
        if not len(pieces) == len(scores) == len(types):
            raise ValueError(f"{len(pieces)} pieces but {len(scores)} scores and {len(types)} types")
        self.piece_bytes = [p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass") for p in pieces]
        scores64 = np.asarray(scores, np.float64)
        problem = piece_problem(self.piece_bytes, types, np.zeros(len(scores64)))
        if problem is None and not np.isfinite(scores64).all():
            bad = int(np.flatnonzero(~np.isfinite(scores64))[0])
            problem = (bad, f"{shown_piece(self.piece_bytes[bad])} has score {scores64[bad]}; counts are finite")
        if problem is not None:
            raise ValueError(f"piece {problem[0]} {problem[1]}")
        self.types = np.asarray(types, np.int8)
        normal = np.flatnonzero(self.types == PieceType.NORMAL)
        nul = next((int(i) for i in normal if 0 in self.piece_bytes[i]), None)
        if nul is not None:  # the trie's byte 0 leads to its values; the seed's C strings cut such a piece
            raise ValueError(f"piece {nul} {shown_piece(self.piece_bytes[nul])} holds a NUL byte, which no "
                             "NORMAL piece may hold here")
        problem_text = special_id_problem("unk_id", unk_id, self.piece_bytes, self.types)
        if problem_text is not None:
            raise ValueError(problem_text)
        self.pieces = [p.decode("utf-8", "surrogateescape") for p in self.piece_bytes]
        self.scores = scores64
        self.unk_id = unk_id
        self.fallback_weight = float(fallback_weight)
        self.max_prefix_matches = int(max_prefix_matches)
        self.piece_to_id = {p: i for i, p in enumerate(self.pieces)}
        # the weight of every edge value (a piece id); only NORMAL pieces are edges
        self.weights = np.full(len(self.pieces), -math.inf, np.float64)
        self.weights[normal] = piece_weights(scores64[normal])
        self.trie = DoubleArrayTrie.build([self.piece_bytes[i] for i in normal], normal.astype(np.int32)) \
            if normal.size else None
        # every piece, for the id of a fallback character (the seed looks tokens up among all pieces)
        named = [i for i, p in enumerate(self.piece_bytes) if 0 not in p]
        self.lookup_trie = DoubleArrayTrie.build([self.piece_bytes[i] for i in named], np.array(named, np.int32))
        self.byte_ids = np.array([self.piece_to_id.get(byte_piece(b), unk_id) for b in range(256)], np.int32)
        byte_ids = [self.piece_to_id.get(byte_piece(b), -1) for b in range(256)]
        self.has_byte_pieces = all(i >= 0 and self.types[i] == PieceType.BYTE for i in byte_ids)
        self.byte_fallback = True  # the seed always falls back to bytes (the unknown id where one is missing)

    def __len__(self) -> int:
        return len(self.pieces)

    # a ValueError unless each special id names a piece of the right type, as for BPE models
    check_special_ids = BPEModel.check_special_ids

    def encode_pre_tokens(self, data: Any, starts: Any, ends: Any, backend: str | Backend | None = None
                          ) -> EncodedPreTokens:
        """Encode the pre-tokens ``data[starts[k]:ends[k]]`` (absolute byte positions).

        >>> m = BytePieceModel(["<unk>", "a", "b", "ab"], [0.0, 1.0, 1.0, 1.0], [2, 1, 1, 1])
        >>> e = m.encode_pre_tokens(np.frombuffer(b"abab", np.uint8), np.array([0, 2]), np.array([2, 4]), "cpu")
        >>> e.ids.tolist(), e.offsets.tolist()
        ([3, 3], [0, 1, 2])
        """
        be = get_backend(backend)
        data, starts, ends = lattice_spans(data, starts, ends, be)
        tok_starts, tok_ends, values, token_offsets = be.op("lattice", "lattice_viterbi")(
            data, starts, ends, *lattice_edges(self.trie, data, starts, ends, be), be.asarray(self.weights),
            self.fallback_weight, self.max_prefix_matches)
        ids = self._fallback_ids(data, tok_starts, tok_ends, values, be)
        return self._byte_fallback(data, tok_starts, tok_ends, ids, token_offsets, be)

    def encode_rows(self, data: Any, offsets: Any, marks: Any, backend: str | Backend | None = None
                    ) -> tuple[Any, Any, Any, Any]:
        """Encode normalized rows (``data``, ``offsets``) whose pre-tokens start at the marked bytes
        of ``marks`` (``PreTokenizer.marks``; None: each row whole): ids, their byte spans in
        ``data`` and each row's first id (n_rows + 1), all on the backend's device in one op
        (``lattice_encode``: on a GPU two host reads, no table upload after the first call).

        >>> m = BytePieceModel(["<unk>", "a", "ab"], [0.0, 1.0, 1.0], [2, 1, 1])
        >>> ids, starts, ends, rows = m.encode_rows(np.frombuffer(b"abab", np.uint8), np.array([0, 4]),
        ...                                         np.array([1, 0, 1, 0], np.uint8), "cpu")
        >>> ids.tolist(), ends.tolist(), rows.tolist()
        ([2, 2], [2, 4], [0, 2])
        """
        be = get_backend(backend)
        trie, weights, byte_ids, lookup = device_tables(self, be, self.lookup_trie)
        return be.op("lattice_tokens", "lattice_encode")(data, offsets, marks, trie, weights, self.fallback_weight,
                                                         self.max_prefix_matches, 0, FINISH_LOOKUP, self.unk_id,
                                                         byte_ids, lookup)

    def _fallback_ids(self, data: Any, starts: Any, ends: Any, values: Any, be: Backend) -> Any:
        """Ids of the path's tokens: an edge's piece, or the piece a fallback character spells (-1: none)."""
        xp = be.xp
        ids = values.astype(xp.int32, copy=True)
        fallback = xp.flatnonzero(values < 0)
        if fallback.size == 0:
            return ids
        lengths = ends[fallback] - starts[fallback]
        offsets = xp.zeros(fallback.size + 1, xp.int64)
        xp.cumsum(lengths, out=offsets[1:])
        rows = row_ids(offsets)
        chars = data[starts[fallback][rows] + xp.arange(int(offsets[-1]), dtype=xp.int64) - offsets[:-1][rows]]
        ids[fallback] = be.op("trie", "trie_lookup")(*self.lookup_trie.arrays(be), xp.ascontiguousarray(chars),
                                                      offsets)
        return ids

    def _byte_fallback(self, data: Any, starts: Any, ends: Any, ids: Any, token_offsets: Any, be: Backend
                       ) -> EncodedPreTokens:
        """Each token that is no piece becomes one ``<0xXX>`` id per byte."""
        xp = be.xp
        missing = ids < 0
        if not bool(missing.any()):
            return EncodedPreTokens(ids, starts, ends, token_offsets)
        counts = xp.where(missing, ends - starts, 1)
        out_offsets = xp.zeros(ids.size + 1, xp.int64)
        xp.cumsum(counts, out=out_offsets[1:])
        rows = row_ids(out_offsets)
        rank = xp.arange(int(out_offsets[-1]), dtype=xp.int64) - out_offsets[:-1][rows]
        split = missing[rows]
        out_starts = xp.where(split, starts[rows] + rank, starts[rows])
        out_ends = xp.where(split, out_starts + 1, ends[rows])
        byte_ids = be.asarray(self.byte_ids)
        out_ids = xp.where(split, byte_ids[data[xp.minimum(out_starts, max(data.size - 1, 0))].astype(xp.int64)],
                           ids[rows]).astype(xp.int32)
        return EncodedPreTokens(out_ids, out_starts, out_ends, out_offsets[token_offsets])

    # each string encoded as one pre-token (for tests and examples), exactly as the BPE model does
    encode_strings = BPEModel.encode_strings

