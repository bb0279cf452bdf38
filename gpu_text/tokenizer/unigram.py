"""The SentencePiece Unigram model: pieces scored by log-probability, encoded by the best path
through the lattice of the pieces that match at each character (SentencePiece's ``EncodeOptimized``).

SentencePiece's rules, followed exactly so that the ids are its ids:

- The lattice covers the whole normalized text (one span per text: the best score is kept in
  float32 along the whole text, so cutting it at spaces could round differently).
- Edges: every NORMAL piece (its float32 score) and every USER_DEFINED piece (score
  ``bytes * 0.1 - 0.1`` whatever its own score: sentencepiece 0.2's ``length * max_score_ - 0.1``
  with ``max_score_`` 0.1, as measured against it, :data:`USER_DEFINED_SCALE`); UNUSED, CONTROL,
  UNKNOWN and BYTE pieces are no edges.
- An unknown edge of one character, score ``float32(min_score - 10)``, only at a character where
  no piece of exactly that character starts.
- Each position keeps the first path of the best score relaxed into it, in the order (start, end),
  the float32 best score compared in double against each piece's candidate
  (:mod:`cpu_fallback.lattice`, mode 3).
- An unknown token becomes its bytes' ``<0xXX>`` pieces with ``byte_fallback``; without it, runs
  of unknown tokens are one unknown id (SentencePiece merges them).

Sampling (:meth:`UnigramModel.sample_spans`) and n-best (:meth:`UnigramModel.nbest_spans`) work
on the same lattice on the host, one text at a time: forward filtering and backward sampling
with ``alpha`` as inverse temperature, or the ``n`` best paths (exact, by keeping the n best
prefixes at every position).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.specs import bytes_from_spec, bytes_to_spec, spec_list, spec_mapping, spec_value
from gpu_text.tokenizer.bpe import BPEModel, EncodedPreTokens, PieceType, byte_piece, piece_problem, shown_piece, \
    special_id_problem
from gpu_text.tokenizer.bytepiece import FINISH_BYTES, FINISH_MERGE, BytePieceModel, device_tables, \
    lattice_edges, lattice_spans
from gpu_text.trie import DoubleArrayTrie

UNK_PENALTY = 10.0
"""SentencePiece's ``kUnkPenalty``: the unknown edge scores this much below the lowest piece."""

LATTICE_MODE = 3
"""``lattice_viterbi``'s mode for Unigram: fallback only where no one-character edge starts (1),
float32 best scores (2)."""

_FLT_MAX = float(np.finfo(np.float32).max)
USER_DEFINED_SCALE = 0.1
"""A USER_DEFINED piece of n bytes scores ``n * USER_DEFINED_SCALE - 0.1`` (sentencepiece 0.2, measured:
independent of the piece's own score and of the NORMAL scores)."""


def _f32(x: float) -> float:
    return float(np.float32(x))


class UnigramModel:
    """Pieces (str or bytes), float32 scores (log-probabilities), types, ``unk_id``, ``byte_fallback``.

    >>> model = UnigramModel(["<unk>", "▁", "a", "b", "ab", "▁ab"], [0, -2, -3, -3, -4, -5], [2, 1, 1, 1, 1, 1])
    >>> [[model.pieces[i] for i in row] for row in model.encode_strings(["▁ab", "▁abc", "ba"])]
    [['▁ab'], ['▁ab', '<unk>'], ['b', 'a']]
    """

    def __init__(self, pieces: Sequence[str | bytes], scores: Sequence[float], types: Sequence[int],
                 unk_id: int = 0, byte_fallback: bool = False) -> None:
        if not len(pieces) == len(scores) == len(types):
            raise ValueError(f"{len(pieces)} pieces but {len(scores)} scores and {len(types)} types")
        self.piece_bytes = [p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass") for p in pieces]
        scores32 = np.asarray(scores, np.float64).astype(np.float32)
        problem = piece_problem(self.piece_bytes, types, scores32)
        if problem is not None:
            raise ValueError(f"piece {problem[0]} {problem[1]}")
        self.types = np.asarray(types, np.int8)
        problem_text = special_id_problem("unk_id", unk_id, self.piece_bytes, self.types)
        if problem_text is not None:
            raise ValueError(problem_text)
        edges = np.flatnonzero((self.types == PieceType.NORMAL) | (self.types == PieceType.USER_DEFINED))
        nul = next((int(i) for i in edges if 0 in self.piece_bytes[i]), None)
        if nul is not None:  # the trie's byte 0 leads to its values
            raise ValueError(f"piece {nul} {shown_piece(self.piece_bytes[nul])} holds a NUL byte, which no "
                             "NORMAL or USER_DEFINED piece may hold here")
        self.pieces = [p.decode("utf-8", "surrogateescape") for p in self.piece_bytes]
        self.scores = scores32.astype(np.float64)
        self.unk_id = int(unk_id)
        self.byte_fallback = bool(byte_fallback)
        self.piece_to_id = {p: i for i, p in enumerate(self.pieces)}
        normal = self.types == PieceType.NORMAL
        self.min_score = _f32(self.scores[normal].min()) if normal.any() else _FLT_MAX
        self.max_score = _f32(USER_DEFINED_SCALE)
        self.unk_score = _f32(np.float32(self.min_score) - np.float32(UNK_PENALTY))
        # each edge value's (piece id's) score, in double as SentencePiece compares it
        self.weights = np.full(len(self.pieces), -math.inf, np.float64)
        self.weights[normal] = self.scores[normal]
        for i in np.flatnonzero(self.types == PieceType.USER_DEFINED):
            self.weights[i] = _f32(np.float32(len(self.piece_bytes[i])) * np.float32(self.max_score)) - 0.1
        self.trie = DoubleArrayTrie.build([self.piece_bytes[i] for i in edges], edges.astype(np.int32)) \
            if edges.size else None
        byte_ids = [self.piece_to_id.get(byte_piece(b), -1) for b in range(256)]
        self.has_byte_pieces = all(i >= 0 and self.types[i] == PieceType.BYTE for i in byte_ids)
        if self.byte_fallback and not self.has_byte_pieces:
            raise ValueError("byte_fallback=True needs the 256 BYTE pieces <0x00> ... <0xFF>")
        self.byte_ids = np.array([i if i >= 0 else self.unk_id for i in byte_ids], np.int32)

    def __len__(self) -> int:
        return len(self.pieces)

    # a ValueError unless each special id names a piece of the right type, as for BPE models
    check_special_ids = BPEModel.check_special_ids

    # --------------------------------------------------------------------------------- encoding
    def encode_pre_tokens(self, data: Any, starts: Any, ends: Any, backend: str | Backend | None = None
                          ) -> EncodedPreTokens:
        """Encode the spans ``data[starts[k]:ends[k]]`` (absolute byte positions; for SentencePiece's
        ids, each is a whole normalized text).

        >>> m = UnigramModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -1.0, -1.5], [2, 1, 1, 1])
        >>> e = m.encode_pre_tokens(np.frombuffer(b"abab", np.uint8), np.array([0, 2]), np.array([2, 4]), "cpu")
        >>> e.ids.tolist(), e.offsets.tolist()
        ([3, 3], [0, 1, 2])
        """
        be = get_backend(backend)
        data, starts, ends = lattice_spans(data, starts, ends, be)
        tok_starts, tok_ends, values, token_offsets = be.op("lattice", "lattice_viterbi")(
            data, starts, ends, *lattice_edges(self.trie, data, starts, ends, be), be.asarray(self.weights),
            self.unk_score, 0, LATTICE_MODE)
        return self.finish_paths(data, tok_starts, tok_ends, values, token_offsets, be)

    def encode_rows(self, data: Any, offsets: Any, marks: Any, backend: str | Backend | None = None
                    ) -> tuple[Any, Any, Any, Any]:
        """Encode normalized rows (``data``, ``offsets``), each whole (``marks`` None, SentencePiece's
        way) or cut at the marked bytes of ``marks`` (``PreTokenizer.marks``): ids, their byte spans
        in ``data`` and each row's first id (n_rows + 1), on the backend's device in one op
        (``lattice_encode``: on a GPU two host reads, no table upload after the first call).

        >>> m = UnigramModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -1.0, -1.5], [2, 1, 1, 1])
        >>> ids, starts, ends, rows = m.encode_rows(np.frombuffer(b"abxyab", np.uint8), np.array([0, 6]), None, "cpu")
        >>> ids.tolist(), starts.tolist(), ends.tolist(), rows.tolist()
        ([3, 0, 3], [0, 2, 4], [2, 4, 6], [0, 3])
        """
        be = get_backend(backend)
        trie, weights, byte_ids, lookup = device_tables(self, be, None)
        finish = FINISH_BYTES if self.byte_fallback else FINISH_MERGE
        return be.op("lattice_tokens", "lattice_encode")(data, offsets, marks, trie, weights, self.unk_score, 0,
                                                         LATTICE_MODE, finish, self.unk_id, byte_ids, lookup)

    def finish_paths(self, data: Any, starts: Any, ends: Any, values: Any, offsets: Any, backend: Backend
                     ) -> EncodedPreTokens:
        """Ids of lattice paths (``values``: piece ids, -1 an unknown character) as SentencePiece
        writes them: unknown tokens as their bytes' pieces with byte fallback, else each run of
        them as one unknown id spanning the run."""
        be = get_backend(backend)
        xp = be.xp
        if self.byte_fallback:
            return self._byte_fallback(data, starts, ends, values.astype(xp.int32), offsets, be)
        unknown = values < 0
        if not bool(unknown.any()):
            return EncodedPreTokens(values.astype(xp.int32), starts, ends, offsets)
        n = values.size
        previous_unknown = xp.zeros(n, dtype=bool)
        previous_unknown[1:] = unknown[:-1]
        first = xp.zeros(n, dtype=bool)  # each span's first token begins a run, whatever precedes it
        first[offsets[:-1][offsets[:-1] < offsets[1:]]] = True
        keep = ~(unknown & previous_unknown & ~first)
        kept = xp.flatnonzero(keep)
        # a kept token ends where the token before the next kept one ends (its run's last)
        next_kept = xp.empty(kept.size, xp.int64)
        next_kept[:-1] = kept[1:]
        next_kept[-1:] = n
        cumulative = xp.zeros(n + 1, xp.int64)
        xp.cumsum(keep, out=cumulative[1:])
        ids = xp.where(unknown[kept], self.unk_id, values[kept]).astype(xp.int32)
        return EncodedPreTokens(ids, starts[kept], ends[next_kept - 1], cumulative[offsets])

    # each unknown token as one <0xXX> id per byte, exactly as BytePiece models fall back
    _byte_fallback = BytePieceModel._byte_fallback

    # each string encoded as one span (for tests and examples), exactly as the BPE model does
    encode_strings = BPEModel.encode_strings

    # ------------------------------------------------------------------------ sampling, n-best
    def lattice_nodes(self, raw: bytes) -> list[tuple[int, int, int, float]]:
        """The lattice of one normalized text as SentencePiece's ``PopulateNodes`` builds it:
        ``(start, end, piece id or -1 for unknown, float32 score)`` by start, then end.

        >>> m = UnigramModel(["<unk>", "a", "ab"], [0.0, -1.0, -1.5], [2, 1, 1])
        >>> m.lattice_nodes(b"abc")
        [(0, 1, 1, -1.0), (0, 2, 2, -1.5), (1, 2, -1, -11.5), (2, 3, -1, -11.5)]
        """
        return self.lattices(np.frombuffer(raw, np.uint8), np.array([0]), np.array([len(raw)]))[0]

    def lattices(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray
                 ) -> list[list[tuple[int, int, int, float]]]:
        """:meth:`lattice_nodes` of every span ``data[starts[k]:ends[k]]`` (positions relative to
        the span), from one prefix search over them all."""
        data = np.ascontiguousarray(data, np.uint8)
        starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
        es, ee, ev, eo = (to_host(a) for a in lattice_edges(self.trie, data, starts, ends, get_backend("cpu")))
        user = self.types == PieceType.USER_DEFINED
        out = []
        for k, (begin, end) in enumerate(zip(starts.tolist(), ends.tolist())):
            by_start: dict[int, list[tuple[int, int]]] = {}
            lo, hi = int(eo[k]), int(eo[k + 1])
            for a, b, v in zip(es[lo:hi].tolist(), ee[lo:hi].tolist(), ev[lo:hi].tolist()):
                by_start.setdefault(a - begin, []).append((b - begin, v))
            raw = data[begin:end].tobytes()
            nodes = []
            p = 0
            for char in raw.decode("utf-8", "surrogateescape"):
                length = len(char.encode("utf-8", "surrogateescape"))
                found = by_start.get(p, [])
                for b, v in found:
                    if user[v]:  # PopulateNodes: its length in characters
                        chars = len(raw[p:b].decode("utf-8", "surrogateescape"))
                        score = _f32(_f32(np.float32(chars) * np.float32(self.max_score)) - 0.1)
                    else:
                        score = float(self.scores[v])
                    nodes.append((p, b, v, score))
                if not any(b == p + length for b, _ in found):
                    nodes.append((p, p + length, -1, self.unk_score))
                p += length
            out.append(nodes)
        return out

    def nbest_spans(self, raw: bytes, n: int, nodes: list[tuple[int, int, int, float]] | None = None
                    ) -> list[tuple[list[tuple[int, int, int]], float]]:
        """The ``n`` best paths of one normalized text, best first (equal scores: the path whose
        tokens were relaxed first), each ``([(start, end, value), ...], score)``; ``nodes``: its
        :meth:`lattice_nodes` when known.

        >>> m = UnigramModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -2.0, -2.5], [2, 1, 1, 1])
        >>> [(path, score) for path, score in m.nbest_spans(b"ab", 3)]
        [([(0, 2, 3)], -2.5), ([(0, 1, 1), (1, 2, 2)], -3.0)]
        """
        if n < 1:
            raise ValueError(f"n must be at least 1, not {n}")
        nodes = self.lattice_nodes(raw) if nodes is None else nodes
        best: dict[int, list[tuple[float, int, int]]] = {0: [(0.0, -1, -1)]}  # (score, node, rank there)
        for k, (a, b, _, score) in enumerate(nodes):
            found = best.setdefault(b, [])
            found.extend((prefix + score, k, rank) for rank, (prefix, _, _) in enumerate(best.get(a, [])))
            found.sort(key=lambda entry: -entry[0])  # stable: earlier relaxations first among equals
            del found[n:]
        out = []
        for score, k, rank in best.get(len(raw), [(0.0, -1, -1)] if not raw else []):
            path = []
            while k >= 0:
                a, b, v, _ = nodes[k]
                path.append((a, b, v))
                score_k, k, rank = best[a][rank]
            out.append((path[::-1], score))
        return out

    def sample_spans(self, raw: bytes, alpha: float, nbest_size: int, rng: np.random.Generator,
                     nodes: list[tuple[int, int, int, float]] | None = None) -> list[tuple[int, int, int]]:
        """One sampled path of a normalized text, as SentencePiece's ``SampleEncode``: with
        ``nbest_size`` < 0 from every path (probability ∝ exp(alpha · score), by forward filtering
        and backward sampling), with ``nbest_size`` > 1 from the ``nbest_size`` best paths
        (probability ∝ exp(alpha · score)), and with 0 or 1 the best path. ``nodes``: its
        :meth:`lattice_nodes` when known.

        >>> m = UnigramModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -1.0, -2.0], [2, 1, 1, 1])
        >>> rng = np.random.default_rng(0)
        >>> sorted({tuple(v for _, _, v in m.sample_spans(b"ab", 1.0, -1, rng)) for _ in range(50)})
        [(1, 2), (3,)]
        """
        if not raw:
            return []
        nodes = self.lattice_nodes(raw) if nodes is None else nodes
        if nbest_size in (0, 1):
            return self.nbest_spans(raw, 1, nodes)[0][0]
        if nbest_size > 1:
            paths = self.nbest_spans(raw, min(nbest_size, 1024), nodes)
            logits = np.array([alpha * score for _, score in paths], np.float64)
            probs = np.exp(logits - logits.max())
            return paths[int(rng.choice(len(paths), p=probs / probs.sum()))][0]
        forward: dict[int, float] = {0: 0.0}
        ending: dict[int, list[int]] = {}
        for k, (a, b, _, score) in sorted(enumerate(nodes), key=lambda item: item[1][1]):
            ending.setdefault(b, []).append(k)
        for b in sorted(ending):  # every node ends after it starts, so its start is done
            terms = np.array([forward[nodes[k][0]] + alpha * nodes[k][3] for k in ending[b]])
            top = terms.max()
            forward[b] = float(top + np.log(np.exp(terms - top).sum()))
        path = []
        position = len(raw)
        while position > 0:
            choices = ending[position]
            terms = np.array([forward[nodes[k][0]] + alpha * nodes[k][3] for k in choices]) - forward[position]
            probs = np.exp(terms - terms.max())
            a, b, v, _ = nodes[choices[int(rng.choice(len(choices), p=probs / probs.sum()))]]
            path.append((a, b, v))
            position = a
        return path[::-1]

    # ------------------------------------------------------------------------------ model files
    def to_dict(self) -> dict[str, Any]:
        """Pieces (strings, or ``{"base64": ...}``), float32 scores (exact as JSON numbers), types,
        ``unk_id`` and ``byte_fallback``.

        >>> UnigramModel(["<unk>", "a"], [0.0, -0.5], [2, 1]).to_dict()
        {'pieces': ['<unk>', 'a'], 'scores': [0.0, -0.5], 'types': [2, 1], 'unk_id': 0, 'byte_fallback': False}
        """
        return {"pieces": [bytes_to_spec(p) for p in self.piece_bytes], "scores": self.scores.tolist(),
                "types": self.types.tolist(), "unk_id": self.unk_id, "byte_fallback": self.byte_fallback}

    @classmethod
    def from_dict(cls, spec: Any) -> "UnigramModel":
        """The model :meth:`to_dict` describes (a malformed spec is a ``ValueError`` saying why).

        >>> UnigramModel.from_dict(UnigramModel(["<unk>", "a"], [0.0, -0.5], [2, 1]).to_dict()).encode_strings(["aa"])
        [[1, 1]]
        """
        what = "UnigramModel"
        spec = spec_mapping(spec, what, ("pieces", "scores", "types", "unk_id", "byte_fallback"))
        pieces = [bytes_from_spec(piece, f"{what} spec: piece {i}")
                  for i, piece in enumerate(spec_list(spec, "pieces", (str, dict), what))]
        types = spec_list(spec, "types", int, what)
        bad = next((i for i, kind in enumerate(types) if kind not in PieceType._value2member_map_), None)
        if bad is not None:
            raise ValueError(f"{what} spec: piece {bad} has type {types[bad]}; types are 1-6")
        return cls(pieces, spec_list(spec, "scores", float, what), types, unk_id=spec_value(spec, "unk_id", int, what),
                   byte_fallback=spec_value(spec, "byte_fallback", bool, what))


__all__ = ["UnigramModel"]
