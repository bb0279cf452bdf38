"""BytePiece training, step by step as the seed's ``count --method bytepiece`` (BytePieceCounter);
the model file is the seed's byte for byte (tests/test_bytepiece_trainer.py runs the seed's CLI):

1. ``count_ngrams``: normalize each non-empty line, pre-tokenize it (the encoder's
   :class:`~gpu_text.tokenizer.pre_tokenizer.PreTokenizer`, the seed's splitter), count every 1- to
   6-byte n-gram inside the pre-tokens (keys made by cuda/ngram_count.cu or its Numba twin, sorted
   and run-length counted on the backend);
2. ``prune_ngrams``: unseen bytes count 1, n > 1 needs ``min_count``, conditional log-probabilities;
3. ``count_pieces``: the 6-state byte Viterbi over every pre-token (the same family's second
   kernel), its pieces counted;
4. ``prune_pieces``: keep length <= ``max_piece_size`` and count >= ``min_count``, re-split the
   rest with a unigram tokenizer over the kept set (the lattice kernels), re-split the kept set
   until its size stops changing, then sort (single bytes first, count, length, bytes) and truncate;
5. the layout: specials, 256 BYTE pieces, pieces by count with score = count.

The seed's C++ ranks equal counts in the order its ``unordered_map`` and ``std::sort`` leave them;
:mod:`~gpu_text.tokenizer.cxx_order` reproduces that order, so the model is the seed's piece for piece.
Without truncation that order also depends on how the seed split its second pass among its threads:
``cpu_count`` is the seed's worker count (its ``--cpu``, at most its machine's hardware threads;
by default min(4, this machine's), as the seed's default run here).

Streaming: both passes read the input in blocks of ``chunk_bytes`` (files twice, see
``train_files``); pass 1 merges each block's sorted n-gram tables into the totals, pass 2 counts
pieces per block. Memory is one block's working set (a few tens of bytes per byte of text) plus the
n-gram tables (16 bytes per distinct 1..6-gram; twice that while a merge copies them), never the
corpus: zh-sogou-news (28 MB) peaks at 0.50 GB RSS (0.22 GB of it the Python/Numba runtime;
4.5 M distinct n-grams, 68 MB of tables) where the seed takes 0.88 GB. The distinct n-grams grew
as size^0.85 over 6-28 MB of Sogou: about 100 M for 1 GB, so about 1.6 GB of tables and 3.5 GB
peak, estimated (the seed holds the same n-grams in hash maps of strings, several times that).
"""
from __future__ import annotations

import math
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch
from gpu_text.tokenizer.bpe import byte_piece
from gpu_text.tokenizer.bytepiece import FALLBACK_WEIGHT, MAX_PREFIX_MATCHES, BytePieceModel, piece_weights
from gpu_text.tokenizer.bytepiece_tokenizer import BytePiece
from gpu_text.tokenizer.cxx_order import iteration_order, sort_by_count
from gpu_text.tokenizer.normalizer import Normalizer
from gpu_text.tokenizer.pre_tokenizer import SPLIT_MODES, PreTokenizer
from gpu_text.trie import DoubleArrayTrie

STATES = 6
SEED_BATCH_LINES = 1_000_000
"""Lines the seed reads per batch (its kBatchLines); with its worker count they set the order of equal counts."""
CHUNK_BYTES = 1 << 22
"""Bytes of text per block: each pass holds one block's pre-tokens, n-gram keys and pieces at a time."""


def _merge_counts(keys: np.ndarray, counts: np.ndarray, more_keys: np.ndarray, more_counts: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted (key, count) tables as one, counts of equal keys added.

    >>> k, c = _merge_counts(np.array([1, 5], np.uint64), np.array([2, 1]), np.array([5, 7], np.uint64), np.array([3, 1]))
    >>> k.tolist(), c.tolist()
    ([1, 5, 7], [2, 4, 1])
    """
    if keys.size == 0:
        return more_keys, more_counts
    # in place of one sort of both: add the known keys' counts, insert the new keys where they sort
    # (memory: the output and a few arrays of the smaller table's size)
    at = np.searchsorted(keys, more_keys)
    found = at < keys.size
    found[found] = keys[at[found]] == more_keys[found]
    counts = counts.copy()
    counts[at[found]] += more_counts[found]
    new = ~found
    return np.insert(keys, at[new], more_keys[new]), np.insert(counts, at[new], more_counts[new])


def _progress(total: int | None, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, disable=not enabled,
                file=sys.stderr, dynamic_ncols=True)


class BytePieceTrainer:
    """Learns a BytePiece vocabulary (the seed's CounterSpec options; ``vocab_size`` counts the
    specials and the 256 byte pieces, as the seed's model does).

    >>> lines = ["南京市长江大桥"] * 40 + ["南京市"] * 40
    >>> tok = BytePieceTrainer(vocab_size=300, min_count=2).train(lines)
    >>> [(p, int(s)) for p, s in zip(tok.model.pieces[259:], tok.model.scores[259:])]  # ties: the seed's order
    [('南京市', 80), ('桥', 40), ('大', 40), ('江', 40), ('长', 40)]
    >>> tok.encode_as_pieces(["南京市长江大桥"])  # 21 bytes: longer than max_piece_size, so re-split
    [['南京市', '长', '江', '大', '桥']]
    """

    def __init__(self, vocab_size: int = 8259, min_count: int = 32, max_piece_size: int = 18,
                 normalizer: str = "no", space: str = "▁", cut: int = 0, split_digits: bool = False,
                 unk_id: int = 0, bos_id: int = 1, eos_id: int = 2, pad_id: int = -1, cpu_count: int | None = None,
                 chunk_bytes: int = CHUNK_BYTES, progress: bool = False, backend: str | Backend = "auto") -> None:
        if cpu_count is None:  # the seed's default: --cpu 4, at most the hardware threads
            cpu_count = min(4, os.cpu_count() or 1)
        if cpu_count < 1:
            raise ValueError(f"cpu_count must be at least 1, got {cpu_count!r}")
        if chunk_bytes < 1:
            raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes!r}")
        self.cpu_count, self.chunk_bytes, self.progress, self.backend = cpu_count, chunk_bytes, progress, backend
        self.vocab_size, self.min_count, self.max_piece_size = vocab_size, min_count, max_piece_size
        self.normalizer, self.space, self.cut, self.split_digits = normalizer, space, cut, split_digits
        self.unk_id, self.bos_id, self.eos_id, self.pad_id = unk_id, bos_id, eos_id, pad_id

    # ------------------------------------------------------------------------------ the steps
    def pre_tokens(self, lines: Iterable[str | bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pre-token of the normalized non-empty lines: (bytes, starts, ends); the pre-tokens
        tile the normalized text, so each one ends where the next starts.

        >>> data, starts, ends = BytePieceTrainer().pre_tokens(["hi  there,you 1823", "", "中文"])
        >>> [bytes(data[a:b]).decode() for a, b in zip(starts, ends)]
        ['hi', '▁there', ',you', '▁', '1823', '中文']
        """
        normalizer, pre = self._pipeline()
        texts = [line for line in lines if len(line)]
        parts, all_starts, base = [], [], 0
        for first in range(0, len(texts), 65536):
            text = normalizer.normalize(TextBatch.from_strings(texts[first:first + 65536]), "cpu").text
            tokens = pre.pre_tokenize(text, "cpu")
            data, offsets = np.asarray(text.data), np.asarray(text.offsets)
            rows = np.repeat(np.arange(offsets.size - 1), np.diff(tokens.starts.offsets))
            parts.append(data[int(offsets[0]):int(offsets[-1])])
            all_starts.append(tokens.starts.values + offsets[:-1][rows] - int(offsets[0]) + base)
            base += int(offsets[-1]) - int(offsets[0])
        if not parts:
            return np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
        starts = np.concatenate(all_starts).astype(np.int64)
        return np.concatenate(parts), starts, np.append(starts[1:], base)

    def _pipeline(self) -> tuple[Normalizer, PreTokenizer]:
        """The normalizer and pre-tokenizer of the options, built once (a block at a time reuses them)."""
        options = (self.normalizer, self.space, self.cut, self.split_digits)
        if getattr(self, "_built", (None,))[0] != options:
            self._built = (options, Normalizer(self.normalizer, space=self.space),
                           PreTokenizer(SPLIT_MODES[self.cut], "split" if self.split_digits else "keep",
                                        space=self.space))
        return self._built[1], self._built[2]

    @staticmethod
    def count_ngrams(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, backend: str | Backend = "cpu"
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(sorted keys, counts) of the n-grams of each length 1..6; entry 0 is the byte count. The
        keys are made (cuda/ngram_count.cu or its Numba twin), sorted and run-length counted on the
        backend; the tables come back to the host.

        >>> tables = BytePieceTrainer.count_ngrams(np.frombuffer(b"abab", np.uint8), np.array([0]), np.array([4]))
        >>> tables[0][1].tolist(), [hex(k) for k in tables[2][0]], tables[2][1].tolist()
        ([4], ['0x26162', '0x26261'], [2, 1])
        """
        be = get_backend(backend)
        xp = be.xp
        keys_of = be.op("ngram_count", "ngram_keys")
        tables = [(np.zeros(1, np.uint64), np.array([int((ends - starts).sum())], np.int64))]
        on_device = xp.asarray(data), xp.asarray(starts, dtype=xp.int64), xp.asarray(ends, dtype=xp.int64)
        for n in range(1, STATES + 1):
            keys = keys_of(*on_device, n)
            keys, counts = xp.unique(keys[keys != 0], return_counts=True)
            tables.append((to_host(keys).astype(np.uint64), to_host(counts).astype(np.int64)))
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
    def count_pieces(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, table: tuple[np.ndarray, np.ndarray],
                     backend: str | Backend = "cpu") -> dict[bytes, int]:
        """Pieces of every pre-token's best byte path (the 6-state byte Viterbi on the backend),
        counted (the dict in the order pieces are first met).

        >>> t = BytePieceTrainer(min_count=2)
        >>> data, starts, ends = t.pre_tokens(["南京 南京 南京"])  # a Han run never carries the space
        >>> table = t.prune_ngrams(t.count_ngrams(data, starts, ends))
        >>> {k.decode(): v for k, v in t.count_pieces(data, starts, ends, table).items()}
        {'南京': 3, '▁': 2}
        """
        be = get_backend(backend)
        xp = be.xp
        flags = to_host(be.op("ngram_count", "byte_viterbi_starts")(
            xp.asarray(data), xp.asarray(starts, dtype=xp.int64), xp.asarray(ends, dtype=xp.int64),
            xp.asarray(table[0]), xp.asarray(table[1])))
        cuts = np.flatnonzero(flags)
        stops = np.append(cuts[1:], data.size)  # pre-tokens are contiguous, so a piece ends where the next starts
        raw = data.tobytes()
        return dict(Counter(raw[a:b] for a, b in zip(cuts.tolist(), stops.tolist())))

    @staticmethod
    def split_pieces(keep: dict[bytes, int], drop: dict[bytes, int]) -> dict[bytes, int]:
        """The seed's SplitPieces: each dropped string tokenized over the kept pieces (weights
        ``log(count) - log(Σ count)``, fallback -10.0 per character), its count added to each token.
        The strings go in the seed's map order of ``drop`` (whose dict order is its insertion order);
        the result's dict order is the order its keys were first met.

        >>> dict(BytePieceTrainer.split_pieces({b"ab": 3, b"c": 1}, {b"abcd": 5}))
        {b'ab': 5, b'c': 5, b'd': 5}
        """
        counter: dict[bytes, int] = {}
        if not drop:
            return counter
        be = get_backend("cpu")
        pieces = [p for p in keep if 0 not in p]
        weights = piece_weights([keep[p] for p in pieces])
        strings = iteration_order(list(drop))
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
            piece = raw[a:b]
            counter[piece] = counter.get(piece, 0) + c
        return counter

    def prune_pieces(self, pieces: dict[bytes, int], limit: int) -> dict[bytes, int]:
        """The seed's PrunePieces: keep, re-split, repeat until stable, sort and truncate to ``limit``.
        Dict orders stand for the seed's map insertion orders (``pieces``' too).

        >>> BytePieceTrainer(min_count=2).prune_pieces({b"ab": 4, b"abc": 1, b"c": 3}, 10)
        {b'ab': 5, b'c': 4}
        """
        keep: dict[bytes, int] = {}
        drop: dict[bytes, int] = {}
        for p in iteration_order(list(pieces)):
            (keep if len(p) <= self.max_piece_size and pieces[p] >= self.min_count else drop)[p] = pieces[p]
        new = self.split_pieces(keep, drop)
        for p in iteration_order(list(new)):
            keep[p] = keep.get(p, 0) + new[p]
        while True:
            size = len(keep)
            keep = self.split_pieces(keep, keep)
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

    def _line_blocks(self, lines: Iterable[str | bytes], per_batch: list[int] | None, bar: Any
                     ) -> Iterator[tuple[Any, list[str | bytes]]]:
        """The non-empty lines in blocks of at most ``chunk_bytes`` (one line may be longer), each
        with its work unit: the seed's batch, and with ``per_batch`` (its non-empty lines per batch)
        the seed's worker too; a block never spans two units."""
        block: list[str | bytes] = []
        size = read = seen = 0
        unit: Any = None
        batch = -1
        for line in lines:
            if read // SEED_BATCH_LINES != batch:
                batch, seen = read // SEED_BATCH_LINES, 0
            read += 1
            if not isinstance(line, (str, bytes)):
                raise TypeError(f"lines must be str or bytes, got {type(line).__name__}")
            if not len(line):
                continue
            if per_batch is None:
                key: Any = batch
            else:
                key = (batch, seen // -(-per_batch[batch] // self.cpu_count))
            seen += 1
            if block and (key != unit or size + len(line) > self.chunk_bytes):
                yield unit, block
                block, size = [], 0
            unit = key
            block.append(line)
            size += len(line)
            if bar is not None:
                bar.update(len(line) + 1)
        if block:
            yield unit, block

    def _count_pass(self, lines: Iterable[str | bytes], bar: Any) -> tuple[list, list[int]]:
        """Pass 1: the n-gram tables of every block, merged; the non-empty lines of each seed batch."""
        runs: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(STATES + 1)]
        per_batch: list[int] = []
        total = 0
        be = get_backend(self.backend)
        for batch, block in self._line_blocks(lines, None, bar):
            per_batch.extend([0] * (batch + 1 - len(per_batch)))
            per_batch[batch] += len(block)
            data, starts, ends = self.pre_tokens(block)
            tables = self.count_ngrams(data, starts, ends, be)
            total += int(tables[0][1][0])
            for n in range(1, STATES + 1):
                runs[n].append(tables[n])
                # merge equal-sized runs only: each count is merged O(log blocks) times
                while len(runs[n]) > 1 and runs[n][-2][0].size <= 2 * runs[n][-1][0].size:
                    top = runs[n].pop()
                    runs[n][-1] = _merge_counts(*runs[n][-1], *top)
        out = [(np.zeros(1, np.uint64), np.array([total], np.int64))]
        for n in range(1, STATES + 1):
            keys, counts = np.zeros(0, np.uint64), np.zeros(0, np.int64)
            for more in runs[n]:
                keys, counts = _merge_counts(keys, counts, *more)
            out.append((keys, counts))
        return out, per_batch

    def _piece_pass(self, lines: Iterable[str | bytes], table: tuple[np.ndarray, np.ndarray], per_batch: list[int],
                    bar: Any) -> dict[bytes, int]:
        """Pass 2: the byte-Viterbi pieces of every block, counted per seed worker and merged into the
        total in the order the seed's maps give (see ``count_pieces``)."""
        total: dict[bytes, int] = {}
        local: dict[bytes, int] = {}
        unit: Any = None
        be = get_backend(self.backend)

        def flush() -> None:
            for piece in iteration_order(list(local)):
                total[piece] = total.get(piece, 0) + local[piece]
            local.clear()

        for key, block in self._line_blocks(lines, per_batch, bar):
            if key != unit:
                flush()
                unit = key
            data, starts, ends = self.pre_tokens(block)
            for piece, count in self.count_pieces(data, starts, ends, table, be).items():
                local[piece] = local.get(piece, 0) + count
        flush()
        return total

    def train(self, lines: Iterable[str | bytes] | Callable[[], Iterable[str | bytes]]) -> BytePiece:
        """Learn from lines of text and return the tokenizer. ``lines``: a list (or any iterable read
        twice), or a function giving a fresh iterable for each of the two passes (streaming: only a
        block of ``chunk_bytes`` and the n-gram counts are held); a one-shot iterator is kept in
        memory for the second pass. Empty lines count toward the seed's batches of lines.

        >>> tok = BytePieceTrainer(vocab_size=270, min_count=2).train(["hello world"] * 5)
        >>> tok.encode_as_pieces(["hello world"]), len(tok.model)
        ([['hello', '▁world']], 261)
        """
        if callable(lines):
            source = lines
        else:
            kept = list(lines) if iter(lines) is lines else lines
            source = lambda: kept  # noqa: E731
        return self._train(source, None)

    def train_files(self, paths: str | os.PathLike | Sequence[str | os.PathLike]) -> BytePiece:
        """Learn from text files, one line a document as the seed reads them (split at ``\\n`` only),
        each read twice in blocks, with a progress bar when ``progress``.

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = p.write_text("hello world\\n" * 5)
        >>> BytePieceTrainer(vocab_size=270, min_count=2).train_files(p).encode_as_pieces(["hello world"])
        [['hello', '▁world']]
        """
        files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        for path in files:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{path}: no such file")

        def source() -> Iterator[bytes]:
            for path in files:
                with open(path, "rb") as f:
                    for line in f:
                        yield line[:-1] if line.endswith(b"\n") else line

        return self._train(source, sum(os.path.getsize(p) for p in files))

    def _train(self, source: Callable[[], Iterable[str | bytes]], size: int | None) -> BytePiece:
        specials = self._specials()
        if len(specials) + 256 > self.vocab_size:
            raise ValueError(f"vocab_size={self.vocab_size} is too small: the specials and byte pieces "
                             f"need {len(specials) + 256}")
        if self.cut not in (0, 1):
            raise ValueError(f"cut must be 0 (word) or 1 (isolate), got {self.cut!r}")
        with _progress(size, "count n-grams", self.progress) as bar:
            tables, per_batch = self._count_pass(source(), bar)
        table = self.prune_ngrams(tables)
        del tables
        with _progress(size, "count pieces", self.progress) as bar:
            counted = self._piece_pass(source(), table, per_batch, bar)
        pieces = self.prune_pieces(counted, self.vocab_size - len(specials) - 256)
        ranked = sort_by_count([(p, pieces[p]) for p in iteration_order(list(pieces))])
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
        normalizer, pre = self._pipeline()
        tok = BytePiece(model, normalizer, pre, self.bos_id, self.eos_id,
                        self.pad_id)
        tok.counter_options = {"min_count": self.min_count, "max_piece_size": self.max_piece_size}
        return tok


__all__ = ["BytePieceTrainer"]
