"""BytePiece training, step by step as the seed's ``count --method bytepiece`` (BytePieceCounter):

1. ``count_ngrams``: normalize each non-empty line, split it (:mod:`~gpu_text.tokenizer.bytepiece_split`),
   count every 1- to 6-byte n-gram inside the pre-tokens (packed keys, counted by sort);
2. ``prune_ngrams``: unseen bytes count 1, n > 1 needs ``min_count``, conditional log-probabilities;
3. ``count_pieces``: the 6-state byte Viterbi over every pre-token, its pieces counted;
4. ``prune_pieces``: keep length <= ``max_piece_size`` and count >= ``min_count``, re-split the
   rest with a unigram tokenizer over the kept set (the lattice kernels), re-split the kept set
   until its size stops changing, then sort (single bytes first, count, length, bytes) and truncate;
5. the layout: specials, 256 BYTE pieces, pieces by count (ties: longer first, then bytes) with score = count.

The seed orders equal counts by its hash map (unspecified); here ties are ordered as in step 5.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from gpu_text.backend import get_backend
from gpu_text.batch import TextBatch
from gpu_text.tokenizer.bpe import byte_piece
from gpu_text.tokenizer.bytepiece import FALLBACK_WEIGHT, MAX_PREFIX_MATCHES, BytePieceModel, piece_weights
from gpu_text.tokenizer.bytepiece_split import split_batch
from gpu_text.tokenizer.bytepiece_tokenizer import BytePiece
from gpu_text.tokenizer.normalizer import Normalizer
from gpu_text.tokenizer.pre_tokenizer import SPLIT_MODES, PreTokenizer
from gpu_text.trie import DoubleArrayTrie

STATES = 6
CHUNK_BYTES = 1 << 24
"""Bytes of pre-tokens whose n-grams are counted at once (then merged into the totals)."""


def _merge_counts(keys: np.ndarray, counts: np.ndarray, more_keys: np.ndarray, more_counts: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted (key, count) tables as one, counts of equal keys added.

    >>> k, c = _merge_counts(np.array([1, 5], np.uint64), np.array([2, 1]), np.array([5, 7], np.uint64), np.array([3, 1]))
    >>> k.tolist(), c.tolist()
    ([1, 5, 7], [2, 4, 1])
    """
    if keys.size == 0:
        return more_keys, more_counts
    merged, inverse = np.unique(np.concatenate([keys, more_keys]), return_inverse=True)
    # float64 sums are exact for counts below 2**53
    totals = np.bincount(inverse.ravel(), weights=np.concatenate([counts, more_counts]).astype(np.float64),
                         minlength=merged.size)
    return merged, totals.astype(np.int64)


class BytePieceTrainer:
    """Learns a BytePiece vocabulary (the seed's CounterSpec options; ``vocab_size`` counts the
    specials and the 256 byte pieces, as the seed's model does).

    >>> lines = ["南京市长江大桥"] * 40 + ["南京市"] * 40
    >>> tok = BytePieceTrainer(vocab_size=300, min_count=2).train(lines)
    >>> [(p, int(s)) for p, s in zip(tok.model.pieces[259:], tok.model.scores[259:])]
    [('南京市', 80), ('大', 40), ('桥', 40), ('江', 40), ('长', 40)]
    >>> tok.encode_as_pieces(["南京市长江大桥"])  # 21 bytes: longer than max_piece_size, so re-split
    [['南京市', '长', '江', '大', '桥']]
    """

    def __init__(self, vocab_size: int = 8259, min_count: int = 32, max_piece_size: int = 18,
                 normalizer: str = "no", space: str = "▁", cut: int = 0, split_digits: bool = False,
                 unk_id: int = 0, bos_id: int = 1, eos_id: int = 2, pad_id: int = -1) -> None:
        self.vocab_size, self.min_count, self.max_piece_size = vocab_size, min_count, max_piece_size
        self.normalizer, self.space, self.cut, self.split_digits = normalizer, space, cut, split_digits
        self.unk_id, self.bos_id, self.eos_id, self.pad_id = unk_id, bos_id, eos_id, pad_id

    # ------------------------------------------------------------------------------ the steps
    def pre_tokens(self, lines: Iterable[str | bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pre-token of the normalized non-empty lines: (bytes, starts, ends); the pre-tokens
        tile the normalized text, so each one ends where the next starts.

        >>> data, starts, ends = BytePieceTrainer().pre_tokens(["hi  there,you", "", "中文"])
        >>> [bytes(data[a:b]).decode() for a, b in zip(starts, ends)]
        ['hi', '▁there', ',you', '中文']
        """
        texts = [line for line in lines if len(line)]
        normalizer = Normalizer(self.normalizer, space=self.space)
        parts, all_starts, all_ends, base = [], [], [], 0
        for first in range(0, len(texts), 65536):
            text = normalizer.normalize(TextBatch.from_strings(texts[first:first + 65536]), "cpu").text
            data, offsets = np.asarray(text.data), np.asarray(text.offsets)
            starts, ends, _ = split_batch(data, offsets, self.space, self.cut)
            parts.append(data[int(offsets[0]):int(offsets[-1])])
            all_starts.append(starts - int(offsets[0]) + base)
            all_ends.append(ends - int(offsets[0]) + base)
            base += int(offsets[-1]) - int(offsets[0])
        if not parts:
            return np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(parts), np.concatenate(all_starts), np.concatenate(all_ends)

    @staticmethod
    def count_ngrams(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """(sorted keys, counts) of the n-grams of each length 1..6; entry 0 is the byte count.

        >>> tables = BytePieceTrainer.count_ngrams(np.frombuffer(b"abab", np.uint8), np.array([0]), np.array([4]))
        >>> tables[0][1].tolist(), [hex(k) for k in tables[2][0]], tables[2][1].tolist()
        ([4], ['0x26162', '0x26261'], [2, 1])
        """
        helpers = get_backend("cpu").ops("bytepiece_trainer")
        tables = [(np.zeros(1, np.uint64), np.array([int((ends - starts).sum())], np.int64))]
        # pre-tokens in chunks of about CHUNK_BYTES, so memory holds the distinct n-grams, not every position
        bounds = np.searchsorted(starts, np.arange(0, int(ends[-1]) if ends.size else 0, CHUNK_BYTES))
        bounds = np.unique(np.append(bounds, starts.size))
        for n in range(1, STATES + 1):
            keys, counts = np.zeros(0, np.uint64), np.zeros(0, np.int64)
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                chunk_keys, chunk_counts = np.unique(helpers.ngram_keys(data, starts[lo:hi], ends[lo:hi], n),
                                                     return_counts=True)
                keys, counts = _merge_counts(keys, counts, chunk_keys, chunk_counts.astype(np.int64))
            tables.append((keys, counts))
        return tables

    def prune_ngrams(self, tables: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """One sorted table of (key, conditional log-probability) over all lengths (the seed's PruneRaw).

        >>> t = BytePieceTrainer(min_count=2)
        >>> keys, logp = t.prune_ngrams(t.count_ngrams(np.frombuffer(b"abab", np.uint8), np.array([0]), np.array([4])))
        >>> keys.size, round(float(logp[keys == 0x161][0]), 4), float(logp[keys == 0x26162][0])  # log(2/258), log(2/2)
        (257, -4.8598, 0.0)
        """
        keys1, counts1 = tables[1]
        seen = set((keys1 & 0xFF).tolist())
        unseen = [b for b in range(256) if b not in seen]
        keys1 = np.concatenate([keys1, np.array([(1 << 8) | b for b in unseen], np.uint64)])
        counts1 = np.concatenate([counts1, np.ones(len(unseen), np.int64)])
        order = np.argsort(keys1)
        pruned = [(tables[0][0], np.array([math.log(int(tables[0][1][0]) + len(unseen))]))]
        pruned.append((keys1[order], np.array([math.log(c) for c in counts1[order].tolist()])))
        for n in range(2, STATES + 1):
            keys, counts = tables[n]
            kept = counts >= self.min_count
            pruned.append((keys[kept], np.array([math.log(c) for c in counts[kept].tolist()])))
        out_keys, out_values = [], []
        for n in range(1, STATES + 1):
            keys, logs = pruned[n]
            prefix_keys, prefix_logs = pruned[n - 1]
            grams = keys & np.uint64((1 << (8 * n)) - 1)
            prefixes = (np.uint64(n - 1) << np.uint64(8 * (n - 1))) | (grams >> np.uint64(8)) \
                if n > 1 else np.zeros(keys.size, np.uint64)
            at = np.minimum(np.searchsorted(prefix_keys, prefixes), prefix_keys.size - 1)
            found = prefix_keys[at] == prefixes
            # a missing prefix counts 0 (the seed's operator[]); a kept n-gram always has its prefix
            out_keys.append(keys)
            out_values.append(logs - np.where(found, prefix_logs[at], 0.0))
        return np.concatenate(out_keys), np.concatenate(out_values)

    @staticmethod
    def count_pieces(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, table: tuple[np.ndarray, np.ndarray]
                     ) -> Counter:
        """Pieces of every pre-token's best byte path, counted.

        >>> t = BytePieceTrainer(min_count=2)
        >>> data, starts, ends = t.pre_tokens(["南京 南京 南京"])  # a Han run never carries the space
        >>> table = t.prune_ngrams(t.count_ngrams(data, starts, ends))
        >>> {k.decode(): v for k, v in t.count_pieces(data, starts, ends, table).items()}
        {'南京': 3, '▁': 2}
        """
        flags = get_backend("cpu").op("bytepiece_trainer", "byte_viterbi_starts")(data, starts, ends, *table)
        cuts = np.flatnonzero(flags)
        stops = np.append(cuts[1:], data.size)  # pre-tokens are contiguous, so a piece ends where the next starts
        raw = data.tobytes()
        return Counter(raw[a:b] for a, b in zip(cuts.tolist(), stops.tolist()))

    @staticmethod
    def split_pieces(keep: dict[bytes, int], drop: dict[bytes, int]) -> Counter:
        """The seed's SplitPieces: each dropped string tokenized over the kept pieces (weights
        ``log(count) - log(Σ count)``, fallback -10.0 per character), its count added to each token.

        >>> dict(BytePieceTrainer.split_pieces({b"ab": 3, b"c": 1}, {b"abcd": 5}))
        {b'ab': 5, b'c': 5, b'd': 5}
        """
        counter: Counter = Counter()
        if not drop:
            return counter
        be = get_backend("cpu")
        pieces = [p for p in keep if 0 not in p]
        weights = piece_weights([keep[p] for p in pieces])
        strings = list(drop)
        lengths = np.array([len(s) for s in strings], np.int64)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        data = np.frombuffer(b"".join(strings), np.uint8)
        if pieces:
            edges = DoubleArrayTrie.build(pieces, np.arange(len(pieces), dtype=np.int32)).prefix_search_spans(
                data, starts, ends, be)
        else:
            none = np.zeros(0, np.int64)
            edges = (none, none, np.zeros(0, np.int32), np.zeros(len(strings) + 1, np.int64))
        tok_starts, tok_ends, _, offsets = be.op("lattice", "lattice_viterbi")(
            data, starts, ends, *edges, weights, FALLBACK_WEIGHT, MAX_PREFIX_MATCHES)
        raw = data.tobytes()
        counts = np.repeat(np.array([drop[s] for s in strings], np.int64), np.diff(offsets))
        for a, b, c in zip(tok_starts.tolist(), tok_ends.tolist(), counts.tolist()):
            counter[raw[a:b]] += c
        return counter

    def prune_pieces(self, pieces: Counter, limit: int) -> dict[bytes, int]:
        """The seed's PrunePieces: keep, re-split, repeat until stable, sort and truncate to ``limit``.

        >>> BytePieceTrainer(min_count=2).prune_pieces({b"ab": 4, b"abc": 1, b"c": 3}, 10)
        {b'ab': 5, b'c': 4}
        """
        keep = {p: c for p, c in pieces.items() if len(p) <= self.max_piece_size and c >= self.min_count}
        drop = {p: c for p, c in pieces.items() if p not in keep}
        for p, c in self.split_pieces(keep, drop).items():
            keep[p] = keep.get(p, 0) + c
        while True:
            size = len(keep)
            keep = dict(self.split_pieces(keep, dict(keep)))
            if len(keep) == size:
                break
        if len(keep) <= limit:
            return keep
        ranked = sorted(keep.items(), key=lambda pc: (len(pc[0]) > 1, -pc[1], -len(pc[0]), pc[0]))
        return dict(ranked[:limit])

    # ------------------------------------------------------------------------------ the whole
    def _specials(self) -> dict[int, tuple[str, int]]:
        specials = {}
        for value, piece, kind in ((self.unk_id, "<unk>", 2), (self.bos_id, "<s>", 3), (self.eos_id, "</s>", 3),
                                   (self.pad_id, "<pad>", 3)):
            if value >= 0:
                specials[value] = (piece, kind)
        return specials

    def train(self, lines: Iterable[str | bytes]) -> BytePiece:
        """Learn from lines of text (a list, or any iterable of str/bytes) and return the tokenizer.

        >>> tok = BytePieceTrainer(vocab_size=270, min_count=2).train(["hello world"] * 5)
        >>> tok.encode_as_pieces(["hello world"]), len(tok.model)
        ([['hello', '▁world']], 261)
        """
        specials = self._specials()
        if len(specials) + 256 > self.vocab_size:
            raise ValueError(f"vocab_size={self.vocab_size} is too small: the specials and byte pieces "
                             f"need {len(specials) + 256}")
        if self.cut not in (0, 1):
            raise ValueError(f"cut must be 0 (word) or 1 (isolate), got {self.cut!r}")
        data, starts, ends = self.pre_tokens(lines)
        table = self.prune_ngrams(self.count_ngrams(data, starts, ends))
        pieces = self.prune_pieces(self.count_pieces(data, starts, ends, table),
                                   self.vocab_size - len(specials) - 256)
        ranked = sorted(pieces.items(), key=lambda pc: (-pc[1], -len(pc[0]), pc[0]))
        meta = dict(specials)
        next_id = len(specials)
        for b in range(256):
            meta[next_id + b] = (byte_piece(b), 6)
        total = len(meta) + len(ranked)
        names: list[Any] = []
        scores: list[float] = []
        types: list[int] = []
        learned = iter(ranked)
        for i in range(total):
            if i in meta:
                names.append(meta[i][0])
                scores.append(0.0)
                types.append(meta[i][1])
            else:
                piece, count = next(learned)
                names.append(piece)
                scores.append(float(count))
                types.append(1)
        model = BytePieceModel(names, scores, types, unk_id=self.unk_id)
        pre = PreTokenizer(SPLIT_MODES[self.cut], "split" if self.split_digits else "keep", space=self.space)
        tok = BytePiece(model, Normalizer(self.normalizer, space=self.space), pre, self.bos_id, self.eos_id,
                        self.pad_id)
        tok.counter_options = {"min_count": self.min_count, "max_piece_size": self.max_piece_size}
        return tok


__all__ = ["BytePieceTrainer"]
