"""Training a BPE vocabulary the way SentencePiece's BPE trainer does (the seed's ``sentencepiece`` method).

Pipeline: stream the input files in chunks of whole lines (the corpus is never held), normalize
(:class:`~gpu_text.tokenizer.normalizer.Normalizer`), pre-tokenize
(:class:`~gpu_text.tokenizer.pre_tokenizer.PreTokenizer`), and count the distinct pre-tokens in a
byte-keyed hash table (``cpu_fallback/bpe_trainer.py``), so memory grows with the number of distinct
pre-tokens. Then the merge loop on those counts:

- characters are weighted by pre-token frequency; the most frequent ones, until
  ``character_coverage`` of all characters is covered, are the *required* characters; the rest
  become the unknown character (▅, U+2585) and never merge;
- every adjacent symbol pair is a candidate with its frequency and positions; the *active set* is
  the top max(1000, 5% of all symbols) candidates, refreshed every 100 merges, plus every pair a
  merge creates; each step merges the best active pair (highest frequency, then fewer characters,
  then the lexically smaller string) at all of its positions; pairs longer than ``max_piece_size``
  bytes are never made; a string already learnt along another path is skipped.

Layout of the result (what :class:`~gpu_text.tokenizer.bpe.BPEModel` loads and
:func:`~gpu_text.tokenizer.model_file.write_model_file` saves): ``<unk>`` ``<s>`` ``</s>`` (ids
0-2), the 256 BYTE pieces ``<0x00>``…``<0xFF>``, the ``extra_tokens`` (USER_DEFINED), the merges
scored 0, -1, -2, … in the order learnt, then the required characters by frequency (scores
continuing). ``vocab_size`` counts all of them.
"""
from __future__ import annotations

import numbers
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch, as_text_batch
from gpu_text.documents import DEFAULT_CHUNK_BYTES, read_documents, total_bytes
from gpu_text.estimator import Estimator
from gpu_text.ragged import row_ids
from gpu_text.tokenizer.bpe import BPEModel, PieceType, byte_piece
from gpu_text.tokenizer.model_file import CounterSpec, PieceTable, PreTokenizerSpec, TokenizerModel, write_model_file
from gpu_text.tokenizer.normalizer import Normalizer
from gpu_text.tokenizer.pre_tokenizer import SPLIT_MODES, PreTokenizer
from gpu_text.tokenizer.tokenizer import Tokenizer

SPECIAL_PIECES = ("<unk>", "<s>", "</s>")
UNK_CHAR = 0x2585  # ▅: what characters outside the coverage become (CounterSpec.unk_unicode)
ACTIVE_REFRESH = 100  # merges between active-set refreshes (SentencePiece's kUpdateActiveSymbolsInteval)
ACTIVE_MIN, ACTIVE_RATIO = 1000, 0.05


@dataclass
class PreTokenCounts:
    """Distinct pre-tokens (bytes, flat: ``data[offsets[i]:offsets[i + 1]]``) in order of first
    appearance, with how often each was seen.

    >>> c = BPETrainer(progress=False).count_pre_tokens([["a b a", "b"]])
    >>> c.to_dict()
    {'a': 1, '▁b': 1, '▁a': 1, 'b': 1}
    """

    data: np.ndarray
    offsets: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_dict(cls, counts: dict[str | bytes, int]) -> "PreTokenCounts":
        """Counts given directly (pre-tokens already normalized and split).

        >>> len(PreTokenCounts.from_dict({"ab": 2, "▁c": 1}))
        2
        """
        raw = [k.encode("utf-8", "surrogatepass") if isinstance(k, str) else bytes(k) for k in counts]
        offsets = np.zeros(len(raw) + 1, np.int64)
        np.cumsum([len(r) for r in raw], out=offsets[1:])
        return cls(np.frombuffer(b"".join(raw), np.uint8).copy(), offsets, np.array(list(counts.values()), np.int64))

    def __len__(self) -> int:
        return int(self.counts.size)

    def to_dict(self) -> dict[str, int]:
        """``{pre-token: count}`` (a convenience for small inputs).

        >>> PreTokenCounts(np.frombuffer(b"ab", np.uint8), np.array([0, 1, 2]), np.array([3, 1])).to_dict()
        {'a': 3, 'b': 1}
        """
        raw = self.data.tobytes()
        return {raw[a:b].decode("utf-8", "replace"): int(n)
                for a, b, n in zip(self.offsets[:-1].tolist(), self.offsets[1:].tolist(), self.counts.tolist())}


@dataclass
class TrainedModel:
    """A trained vocabulary: pieces (str), scores, types, merge parents and the two specs.

    >>> m = BPETrainer(vocab_size=262, character_coverage=1.0, progress=False).fit_texts(["abab"]).model_
    >>> m.pieces[259:], m.scores[259:].tolist(), m.types[259:].tolist()
    (['ab', 'a', 'b'], [0.0, -1.0, -2.0], [1, 1, 1])
    >>> m.bpe_model().encode_strings(["abab"])
    [[259, 259]]
    """

    pieces: list[str]
    scores: np.ndarray
    types: np.ndarray
    u: list[str]
    v: list[str]
    counter: CounterSpec
    pretokenizer: PreTokenizerSpec
    n_merges: int = 0
    required_chars: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.pieces)

    def bpe_model(self) -> BPEModel:
        """The vocabulary as a :class:`BPEModel` (byte fallback on).

        >>> trainer = BPETrainer(vocab_size=260, character_coverage=1.0, progress=False)
        >>> trainer.fit_texts(["x"]).model_.bpe_model().byte_fallback
        True
        """
        return BPEModel(self.pieces, self.scores, self.types, unk_id=self.counter.unk_id, byte_fallback=True)

    def to_model_file(self) -> TokenizerModel:
        """The seed's model file contents (:func:`~gpu_text.tokenizer.model_file.write_model_file` writes it).

        >>> m = BPETrainer(vocab_size=260, character_coverage=1.0, progress=False).fit_texts(["x"]).model_
        >>> f = m.to_model_file()
        >>> f.counter.method, len(f.pieces), f.pieces.pieces[-1]
        ('sentencepiece', 260, b'x')
        """
        def raw(items: list[str]) -> list[bytes]:
            return [s.encode("utf-8", "surrogatepass") for s in items]

        return TokenizerModel(self.counter, self.pretokenizer,
                              PieceTable.from_lists(raw(self.pieces), self.scores, self.types, raw(self.u), raw(self.v)))

    def save(self, path: str | os.PathLike) -> None:
        """Writes the seed's text model format.

        >>> import tempfile, pathlib
        >>> from gpu_text.tokenizer.model_file import read_model_file
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.model"
        >>> BPETrainer(vocab_size=260, character_coverage=1.0, progress=False).fit_texts(["x"]).model_.save(path)
        >>> read_model_file(path).pieces.pieces[:2]
        [b'<unk>', b'<s>']
        """
        write_model_file(self.to_model_file(), path)


def _progress(total: int | None, unit: str, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=unit == "B", unit_divisor=1024 if unit == "B" else 1000,
                desc=desc, disable=not enabled, file=sys.stderr, dynamic_ncols=True)


class BPETrainer(Estimator):
    """SentencePiece-style BPE training (see the module docstring).

    ``vocab_size`` is the size of the whole vocabulary (specials, 256 bytes, extra tokens, merges,
    required characters); ``min_count`` stops training when the best pair is seen fewer times.
    ``split``/``digits``/``cn`` configure the :class:`PreTokenizer`, ``normalizer`` (a rule name)
    and ``reconstruct`` the :class:`Normalizer`.

    An estimator (:mod:`gpu_text.estimator`): :meth:`fit` (files), :meth:`fit_texts` (in-memory
    text) and :meth:`fit_counts` (counted pre-tokens) learn ``model_`` (the :class:`TrainedModel`)
    and ``tokenizer_`` (a ready :class:`~gpu_text.tokenizer.tokenizer.Tokenizer`: this trainer's
    normalizer and pre-tokenizer with the trained vocabulary).

    >>> trainer = BPETrainer(vocab_size=273, character_coverage=1.0, progress=False)
    >>> trainer.fit_texts(["low low low low low lowest lowest newer newer newer"]).model_.pieces[259:]
    ['lo', 'low', '▁low', 'er', 'ew', 'w', '▁', 'e', 'l', 'o', 'n', 'r', 's', 't']
    >>> trainer.tokenizer_.encode_as_pieces(["lower newest"])
    [['low', 'er', '▁', 'n', 'ew', 'e', 's', 't']]
    """

    def __init__(self, vocab_size: int = 8000, character_coverage: float = 0.9995, max_piece_size: int = 18,
                 min_count: int = 1, split: str = "word", digits: str = "keep", cn: Any = None,
                 normalizer: str = "no", reconstruct: bool = False, extra_tokens: Sequence[str] = (),
                 progress: bool = True, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 backend: str | Backend | None = None) -> None:
        self.vocab_size = vocab_size
        self.character_coverage = character_coverage
        self.max_piece_size = max_piece_size
        self.min_count = min_count
        self.split = split
        self.digits = digits
        self.cn = cn
        self.normalizer = normalizer
        self.reconstruct = reconstruct
        self.extra_tokens = extra_tokens
        self.progress = progress
        self.chunk_bytes = chunk_bytes
        self.backend = backend

    def _pipeline(self) -> tuple[Normalizer, PreTokenizer]:
        """Validates the parameters and builds the normalizer and pre-tokenizer they describe."""
        self._require_int("vocab_size", 0)
        extra = self.extra_tokens
        self._require(isinstance(extra, (list, tuple)) and all(isinstance(t, str) and t for t in extra),
                      "extra_tokens", "a list of non-empty strings")
        fixed = [*SPECIAL_PIECES, *(byte_piece(b) for b in range(256))]
        clash = next((t for k, t in enumerate(extra) if t in fixed or t in extra[:k]), None)
        self._require(clash is None, "extra_tokens", f"distinct tokens that are no special or byte piece ({clash!r} "
                      "is repeated or taken)")
        n_fixed = len(SPECIAL_PIECES) + 256 + len(extra)
        self._require(self.vocab_size >= n_fixed, "vocab_size",
                      f"at least the {n_fixed} special, byte and extra pieces")
        self._require(isinstance(self.character_coverage, numbers.Real) and 0.0 < self.character_coverage <= 1.0,
                      "character_coverage", "a number in (0, 1]")
        self._require_int("max_piece_size", 1)
        self._require_int("min_count", 1)
        self._require_int("chunk_bytes", 1)
        # the components check their own settings; the messages get the trainer's (and parameter's) name
        try:
            normalizer = Normalizer(self.normalizer, reconstruct=self.reconstruct)
        except ValueError as error:
            raise ValueError(f"{type(self).__name__}: normalizer: {error}") from error
        try:
            return normalizer, PreTokenizer(self.split, self.digits, self.cn)
        except ValueError as error:
            raise ValueError(f"{type(self).__name__}: {error}") from error

    # --------------------------------------------------------------------------- counting

    def count_pre_tokens(self, batches: Iterable[Any]) -> PreTokenCounts:
        """Normalizes, pre-tokenizes and counts the distinct pre-tokens of every batch (a
        ``TextBatch``, pyarrow strings or a list of str/bytes); learns nothing.

        >>> BPETrainer(progress=False).count_pre_tokens([["你好，你好"]]).to_dict()
        {'你好': 2, '，': 1}
        """
        return self._count(batches, *self._pipeline())

    def _count(self, batches: Iterable[Any], normalizer: Normalizer, pre_tokenizer: PreTokenizer) -> PreTokenCounts:
        kernels = get_backend("cpu").ops("bpe_trainer")  # the counting table lives on the host
        be = get_backend(self.backend)
        counter = _SpanCounter()
        for texts in batches:
            normalized = normalizer.normalize(as_text_batch(texts), be, with_alignment=False).text
            pre = pre_tokenizer.pre_tokenize(normalized, be)
            host = normalized.to_numpy()
            starts, ends = pre.starts.to_numpy(), pre.ends.to_numpy()
            base = host.offsets[:-1][row_ids(starts.offsets)]
            counter.add(host.data, starts.values + base, ends.values + base, kernels)
        return counter.result()

    # --------------------------------------------------------------------------- training

    def fit(self, files: str | os.PathLike | Sequence[str | os.PathLike], field: str = "text") -> "BPETrainer":
        """Trains on files (see :func:`gpu_text.documents.read_documents` for the formats and
        ``field``), streamed in chunks;
        returns ``self``.

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = p.write_text("ab ab\\nab\\n")
        >>> BPETrainer(vocab_size=264, character_coverage=1.0, progress=False).fit(p).model_.pieces[259:]
        ['ab', '▁ab', 'a', 'b', '▁']
        """
        normalizer, pre_tokenizer = self._pipeline()
        paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        total = total_bytes(paths)
        start = time.perf_counter()
        with _progress(total, "B", "count pre-tokens", self.progress) as bar:
            counts = self._count(read_documents(paths, field, self.chunk_bytes, bar), normalizer, pre_tokenizer)
        stats = {"count_seconds": time.perf_counter() - start, "input_bytes": total}
        return self._fit(counts, normalizer, pre_tokenizer, stats)

    def fit_texts(self, texts: Iterable[str | bytes] | Iterable[Any]) -> "BPETrainer":
        """Trains on in-memory text: a list of documents, or an iterable of batches; returns ``self``.

        >>> BPETrainer(vocab_size=261, character_coverage=1.0, progress=False).fit_texts(["aa"]).model_.pieces[259:]
        ['aa', 'a']
        """
        normalizer, pre_tokenizer = self._pipeline()
        items = list(texts)
        batches = [items] if items and isinstance(items[0], (str, bytes)) else items
        return self._fit(self._count(batches, normalizer, pre_tokenizer), normalizer, pre_tokenizer, {})

    def fit_counts(self, counts: PreTokenCounts) -> "BPETrainer":
        """Trains on counted pre-tokens (the merge loop alone); returns ``self``.

        >>> c = PreTokenCounts(np.frombuffer(b"abc", np.uint8), np.array([0, 3]), np.array([5]))
        >>> BPETrainer(vocab_size=264, character_coverage=1.0, progress=False).fit_counts(c).model_.pieces[259:]
        ['ab', 'abc', 'a', 'b', 'c']
        """
        return self._fit(counts, *self._pipeline(), {})

    def _fit(self, counts: PreTokenCounts, normalizer: Normalizer, pre_tokenizer: PreTokenizer,
             stats: dict[str, Any]) -> "BPETrainer":
        t0 = time.perf_counter()
        state = _MergeState(counts, self.character_coverage, self.max_piece_size)
        n_fixed = len(SPECIAL_PIECES) + 256 + len(self.extra_tokens)
        n_merges = self.vocab_size - n_fixed - state.n_required
        if n_merges < 0:
            raise ValueError(f"vocab_size {self.vocab_size} leaves no room for the {state.n_required} required "
                             f"characters after {n_fixed} special, byte and extra pieces; raise vocab_size or "
                             f"lower character_coverage")
        t1 = time.perf_counter()
        with _progress(n_merges, "merge", "merges", self.progress) as bar:
            merged = state.run(n_merges, self.min_count, bar)
        t2 = time.perf_counter()
        model = self._assemble(state, merged, normalizer)
        model.stats.update(stats, pre_tokens=len(counts), characters=int(state.sym.size), setup_seconds=t1 - t0,
                           merge_seconds=t2 - t1, merges_per_second=len(merged) / max(t2 - t1, 1e-9),
                           pair_symbols=int(state.counts[0] - state.n_chars))
        counter = model.counter
        self.model_ = model
        self.tokenizer_ = Tokenizer(model.bpe_model(), normalizer, pre_tokenizer, counter.bos_id, counter.eos_id,
                                    counter.pad_id)
        return self

    def _assemble(self, state: "_MergeState", merged: list[int], normalizer: Normalizer) -> TrainedModel:
        extra = list(self.extra_tokens)
        fixed = list(SPECIAL_PIECES) + [byte_piece(b) for b in range(256)] + extra
        fixed_types = [PieceType.UNKNOWN, PieceType.CONTROL, PieceType.CONTROL] + [PieceType.BYTE] * 256 \
            + [PieceType.USER_DEFINED] * len(extra)
        taken = set(fixed)
        merges, u, v = [], [], []
        for x in merged:
            piece = state.text(x)
            if piece in taken:  # e.g. a corpus containing the text "<s>": the special piece wins
                continue
            taken.add(piece)
            merges.append(piece)
            u.append(state.text(int(state.s_left[x])))
            v.append(state.text(int(state.s_right[x])))
        # a required character that is already a piece (an extra token "a") is not added twice
        required = [ch for ch in (chr(c) for c in state.char_cp[:state.n_required].tolist()) if ch not in taken]
        learnt = merges + required
        pieces = fixed + learnt
        scores = np.concatenate([np.zeros(len(fixed), np.float32), 0.0 - np.arange(len(learnt), dtype=np.float32)])
        types = np.array(fixed_types + [PieceType.NORMAL] * len(learnt), np.int8)
        counter = CounterSpec(method="sentencepiece", vocab_size=int(self.vocab_size),
                              character_coverage=float(self.character_coverage), min_count=int(self.min_count),
                              max_piece_size=int(self.max_piece_size), unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                              unk_unicode=UNK_CHAR, extra_tokens=extra)
        spec = PreTokenizerSpec(name=normalizer.name, space=normalizer.space, cut=SPLIT_MODES.index(self.split),
                                reconstruct=normalizer.reconstruct, split_digits=self.digits == "split")
        return TrainedModel(pieces, scores, types, [""] * len(fixed) + u + [""] * len(required),
                            [""] * len(fixed) + v + [""] * len(required), counter, spec, len(merges), required)


class _SpanCounter:
    """The growing byte-keyed table behind :meth:`BPETrainer.count_pre_tokens`."""

    def __init__(self) -> None:
        self.slots = np.full(1 << 16, -1, np.int64)
        self.hash = np.zeros(1 << 14, np.uint64)
        self.start = np.zeros(1 << 14, np.int64)
        self.length = np.zeros(1 << 14, np.int64)
        self.count = np.zeros(1 << 14, np.int64)
        self.pool = np.zeros(1 << 16, np.uint8)
        self.sizes = np.zeros(2, np.int64)

    def add(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray, kernels: Any) -> None:
        n, used = int(self.sizes[0]), int(self.sizes[1])
        worst = n + starts.size  # room for every span being new: the table never fills mid-call
        if worst > self.hash.size:
            size = max(worst, 2 * self.hash.size)
            self.hash, self.start, self.length, self.count = (np.resize(a, size) for a in
                                                              (self.hash, self.start, self.length, self.count))
        pool_need = used + int((ends - starts).sum())
        if pool_need > self.pool.size:
            self.pool = np.resize(self.pool, max(pool_need, 2 * self.pool.size))
        if 2 * worst > self.slots.size:
            self.slots = np.full(1 << int(2 * worst - 1).bit_length(), -1, np.int64)
            kernels.rehash(self.slots, self.hash, n)
        hashes = kernels.hash_spans(data, starts, ends)
        kernels.count_spans(data, starts, ends, hashes, self.slots, self.hash, self.start, self.length, self.count,
                            self.pool, self.sizes)

    def result(self) -> PreTokenCounts:
        n, used = int(self.sizes[0]), int(self.sizes[1])
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(self.length[:n], out=offsets[1:])
        # entries were appended to the pool in order, so the pool is already flat
        return PreTokenCounts(self.pool[:used].copy(), offsets, self.count[:n].copy())


class _MergeState:
    """The flat corpus, symbol table, pair table and position lists of the merge loop."""

    def __init__(self, counts: PreTokenCounts, coverage: float, max_piece_size: int) -> None:
        from gpu_text import utf8

        self.k = kernels = get_backend("cpu").ops("bpe_trainer")  # the merge loop is CPU-only
        batch = TextBatch(counts.data, counts.offsets, check=False)
        decoded = utf8.decode(batch, backend="cpu").codepoints
        cps = np.asarray(decoded.values, np.int64)
        lengths = np.diff(np.asarray(decoded.offsets, np.int64))
        weight = np.repeat(np.asarray(counts.counts, np.int64), lengths)
        # characters weighted by pre-token frequency; required ones by frequency desc, codepoint asc
        # (codepoints are at most U+10FFFF: counted and numbered through a table, not a sort)
        chars = np.flatnonzero(np.bincount(cps, minlength=1))
        index = np.zeros(int(cps.max()) + 1 if cps.size else 1, np.int32)
        index[chars] = np.arange(chars.size, dtype=np.int32)
        inverse = index[cps]
        freq = np.bincount(inverse, weights=weight, minlength=chars.size).astype(np.int64)
        order = np.lexsort((chars, -freq))
        total = int(freq.sum())
        covered_before = np.cumsum(freq[order]) - freq[order]
        # add characters while the coverage so far is below the target (SentencePiece's rule)
        n_required = int(np.count_nonzero(covered_before / max(total, 1) < coverage)) if total else 0
        self.n_required = n_required
        self.unk = n_required  # the one unknown-character symbol, right after the required ones
        self.n_chars = n_required + 1
        char_id = np.full(chars.size, self.unk, np.int32)
        char_id[order[:n_required]] = np.arange(n_required, dtype=np.int32)
        self.char_cp = np.append(chars[order[:n_required]], UNK_CHAR).astype(np.int32)
        self.sym = char_id[inverse].astype(np.int32)
        n = self.sym.size
        self.nxt = np.arange(1, n + 1, dtype=np.int32)
        self.prv = np.arange(-1, n - 1, dtype=np.int32)
        word_ends = np.cumsum(lengths)[lengths > 0]
        self.nxt[word_ends - 1] = -1
        self.prv[word_ends[:-1]] = -1
        self.weight = weight
        self.max_bytes = max_piece_size
        self.stats_chars = int(chars.size)

        capacity = self.n_chars + n + 16
        self.s_left = np.full(capacity, -1, np.int32)
        self.s_right = np.full(capacity, -1, np.int32)
        self.s_nchars = np.zeros(capacity, np.int32)
        self.s_nbytes = np.zeros(capacity, np.int32)
        self.s_freq = np.zeros(capacity, np.int64)
        self.s_head = np.full(capacity, -1, np.int32)
        self.s_tail = np.full(capacity, -1, np.int32)
        self.s_alive = np.zeros(capacity, np.int8)
        self.s_active = np.zeros(capacity, np.int32)  # slot in the active set + 1, or 0
        cp = self.char_cp.astype(np.int64)
        self.s_nchars[:self.n_chars] = 1
        self.s_nbytes[:self.n_chars] = 1 + (cp >= 0x80) + (cp >= 0x800) + (cp >= 0x10000)
        self.node_pos = np.zeros(n + 16, np.int32)
        self.node_next = np.zeros(n + 16, np.int32)
        self.active = np.zeros(16, np.int32)
        self.active_freq = np.zeros(16, np.int64)  # the active symbols' frequencies, packed
        self.counts = np.array([self.n_chars, 0, 0, 0, 0], np.int64)
        self.seen = kernels.new_seen_table()
        self.pair_keys, self.pair_values = kernels.build_pairs(
            self.sym, self.nxt, self.weight, self.unk, self.max_bytes, *get_backend("cpu").op("merge_tables", "empty_table")(1 << 16), self.s_left,
            self.s_right, self.s_nchars, self.s_nbytes, self.s_freq, self.s_head, self.s_tail, self.s_alive,
            self.s_active, self.node_pos, self.node_next, self.counts)
        self.live_nodes_after_compaction = int(self.counts[1])
        width = max_piece_size + 2  # a piece has at most max_piece_size characters
        self.stack = np.zeros(width, np.int32)
        self.buf_a = np.zeros(width, np.int32)
        self.buf_b = np.zeros(width, np.int32)

    def refresh_active(self) -> None:
        """Top max(1000, 5% of all symbols) pairs by frequency (ties: the older pair) become the active set."""
        n_symbols = int(self.counts[0])
        ids = np.arange(self.n_chars, n_symbols, dtype=np.int32)
        live = ids[self.s_alive[self.n_chars:n_symbols] == 1]
        size = min(max(ACTIVE_MIN, int((self.n_chars + live.size) * ACTIVE_RATIO)), live.size)
        freq = self.s_freq[live]
        if size < live.size:
            threshold = -np.partition(-freq, size - 1)[size - 1]
            above = live[freq > threshold]
            chosen = np.concatenate([above, live[freq == threshold][:size - above.size]])
        else:
            chosen = live
        self.s_active[:n_symbols] = 0
        self.s_active[chosen] = np.arange(1, chosen.size + 1, dtype=np.int32)
        if self.active.size < chosen.size + 16:
            self.active = np.zeros(2 * chosen.size + 16, np.int32)
            self.active_freq = np.zeros(2 * chosen.size + 16, np.int64)
        self.active[:chosen.size] = chosen
        self.active_freq[:chosen.size] = self.s_freq[chosen]
        self.counts[2] = chosen.size

    def _make_room(self, room: int) -> None:
        n_symbols, n_nodes, n_active = (int(c) for c in self.counts[:3])
        if n_symbols + room > self.s_left.size:
            size = max(2 * self.s_left.size, n_symbols + room)
            for name in ("s_left", "s_right", "s_nchars", "s_nbytes", "s_freq", "s_head", "s_tail", "s_alive",
                         "s_active"):
                old = getattr(self, name)
                new = np.zeros(size, old.dtype)
                new[:old.size] = old
                setattr(self, name, new)
        if 2 * (int(self.counts[4]) + room) > self.pair_keys.size:
            self.pair_keys, self.pair_values = get_backend("cpu").op("merge_tables", "grown_table")(self.pair_keys, self.pair_values,
                                                           2 * (int(self.counts[4]) + room))
        if n_active + room > self.active.size:
            size = max(2 * self.active.size, n_active + room)
            self.active, self.active_freq = np.resize(self.active, size), np.resize(self.active_freq, size)
        if n_nodes + room > self.node_pos.size and self.node_pos.size < 2 * self.sym.size:
            # while position nodes take under 16 bytes per character, grow: compacting walks
            # every list in random order (seconds on a large corpus), and stale nodes cost only
            # when their pair is merged
            size = max(2 * self.node_pos.size, n_nodes + room)
            self.node_pos, self.node_next = np.resize(self.node_pos, size), np.resize(self.node_next, size)
        if n_nodes + room > self.node_pos.size:
            # drop stale positions first; grow only if the live ones still leave too little room
            new_pos = np.zeros(self.node_pos.size, np.int32)
            new_next = np.zeros(self.node_pos.size, np.int32)
            kept = self.k.compact_positions(n_symbols, self.n_chars, self.s_left, self.s_right, self.s_alive,
                                            self.s_head, self.s_tail, self.sym, self.nxt, self.node_pos,
                                            self.node_next, new_pos, new_next)
            self.counts[1] = kept
            if kept + room > new_pos.size * 3 // 4:  # under a quarter free after compaction: grow
                size = max(2 * new_pos.size, kept + room)
                new_pos, new_next = np.resize(new_pos, size), np.resize(new_next, size)
            self.node_pos, self.node_next = new_pos, new_next

    def run(self, n_merges: int, min_count: int, bar: Any) -> list[int]:
        merged = np.zeros(max(n_merges, 1), np.int32)
        while int(self.counts[3]) < n_merges:
            done_so_far = int(self.counts[3])
            if done_so_far % ACTIVE_REFRESH == 0:
                self.refresh_active()
            steps = min(ACTIVE_REFRESH - done_so_far % ACTIVE_REFRESH, n_merges - done_so_far)
            status, done, room = self.k.train_steps(
                steps, min_count, self.max_bytes, self.n_chars, self.unk, self.sym, self.nxt, self.prv, self.weight,
                self.char_cp, self.s_left, self.s_right, self.s_nchars, self.s_nbytes, self.s_freq, self.s_head,
                self.s_tail, self.s_alive, self.s_active, self.active, self.active_freq, self.node_pos, self.node_next,
                self.counts, self.pair_keys, self.pair_values, self.seen, merged, self.stack, self.buf_a, self.buf_b)
            bar.update(done)
            if status == self.k.NEED_ROOM:
                self._make_room(room)
            elif status == self.k.EXHAUSTED:
                break
        return merged[:int(self.counts[3])].tolist()

    def text(self, x: int) -> str:
        """The string of symbol ``x``."""
        out = np.zeros(max(int(self.s_nchars[x]), 1) + 2, np.int32)
        stack = np.zeros(out.size + 2, np.int32)
        n = self.k.expand(x, self.n_chars, self.s_left, self.s_right, self.char_cp, stack, out)
        return "".join(map(chr, out[:n].tolist()))


__all__ = ["BPETrainer", "PreTokenCounts", "TrainedModel"]
