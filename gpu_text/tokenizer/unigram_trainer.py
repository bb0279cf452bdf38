"""Training a SentencePiece Unigram model (SentencePiece's ``unigram_model_trainer``).

Pipeline, as SentencePiece's trainer with its defaults:

1. Count the distinct pre-tokens (:meth:`BPETrainer.count_pre_tokens
   <gpu_text.tokenizer.bpe_trainer.BPETrainer.count_pre_tokens>`: the same streamed reading,
   normalizer and pre-tokenizer options as the BPE trainer); pieces never cross a pre-token.
2. Required characters: by frequency until ``character_coverage`` is covered; the rest are
   unknown and no piece holds them.
3. Seed pieces: every required character, and the ``seed_size`` substrings of 2 to
   ``max_piece_length`` characters with the highest frequency × length among those seen at least
   twice that are a suffix tree's nodes (followed by different characters, or ending a pre-token),
   found on a suffix array of the pre-tokens sorted to ``max_piece_length + 1`` characters
   (``cpu_fallback/unigram_trainer.py``). Initial scores: log of those values, normalized.
4. EM rounds: ``num_sub_iterations`` times an E-step (forward-backward over every pre-token's
   lattice in float64 log space: expected piece counts) and the M-step SentencePiece uses (pieces
   expected fewer than 0.5 times dropped, the rest scored ``digamma(count) - digamma(total)``,
   a Bayesian EM with a sparse prior); then, until at most 1.1 × ``vocab_size`` pieces are left,
   pruning: each piece's loss (the likelihood lost if its Viterbi uses moved to the second-best
   segmentation of its own text) ranks it, and the best ``shrinking_factor`` of them stay (pieces
   on no best path, or split by their own best path, go first; single characters always stay).
5. The model: required characters first (a missing one scored just below the lowest piece), then
   the best-scored pieces up to ``vocab_size``, all sorted by score; scores are the final
   log-probabilities. A text too small for ``vocab_size`` gives fewer pieces, with a warning
   (where SentencePiece stops with an error).

The lattice's edges are found once, from the suffix array (every occurrence of every seed piece),
and filtered as pieces die: no EM step searches for pieces again. The E-step, the Viterbi counts
and the pruning losses run over fixed blocks of pre-tokens on threads (the Numba helpers release
the GIL); the block sums are added in block order, so the model is the same whatever the number
of threads. Nothing is random: the same input and options give the same model, bit for bit.

Layout (SentencePiece's; ``vocab_size`` counts every piece): ``<unk>`` ``<s>`` ``</s>`` (ids 0-2),
the ``extra_tokens`` (USER_DEFINED), with ``byte_fallback`` the 256 BYTE pieces, then the learnt
pieces by score. The result is a :class:`~gpu_text.tokenizer.unigram_tokenizer.Unigram` tokenizer
(``Tokenizer.save`` writes it; it encodes with one lattice per text, as SentencePiece does).
"""
from __future__ import annotations

import concurrent.futures
import math
import numbers
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch
from gpu_text.documents import DEFAULT_CHUNK_BYTES, read_documents, total_bytes
from gpu_text.estimator import Estimator
from gpu_text.tokenizer.bpe import PieceType, byte_piece
from gpu_text.tokenizer.bpe_trainer import BPETrainer, PreTokenCounts
from gpu_text.tokenizer.normalizer import Normalizer
from gpu_text.tokenizer.pre_tokenizer import PreTokenizer
from gpu_text.tokenizer.unigram import UNK_PENALTY, UnigramModel
from gpu_text.tokenizer.unigram_tokenizer import Unigram

SPECIAL_PIECES = ("<unk>", "<s>", "</s>")
DESIRED_VOCAB_FACTOR = 1.1  # EM stops pruning at this many times vocab_size (SentencePiece's)
MIN_EXPECTED_COUNT = 0.5  # the M-step drops pieces expected fewer times (SentencePiece's)
MISSING_CHAR_STEP = 1e-4  # required characters the EM dropped: scored this far apart below the lowest
BLOCKS = 8  # fixed pre-token blocks: their sums are added in one order whatever the threads


def digamma(x: np.ndarray) -> np.ndarray:
    """The digamma function by SentencePiece's series (recurrence up to 7, then the asymptotic
    expansion), elementwise.

    >>> digamma(np.array([1.0, 10.0])).round(6).tolist()   # -Euler's constant, psi(10)
    [-0.577216, 2.251753]
    """
    x = np.array(x, np.float64)
    result = np.zeros_like(x)
    small = x < 7
    while small.any():
        result[small] -= 1.0 / x[small]
        x[small] += 1.0
        small = x < 7
    x -= 0.5
    xx2 = 1.0 / (x * x)
    xx4 = xx2 * xx2
    return result + np.log(x) + xx2 / 24 - 7 / 960 * xx4 + 31 / 8064 * xx4 * xx2 - 127 / 30720 * xx4 * xx4


def suffix_array(chars: np.ndarray, run_end: np.ndarray, depth: int) -> np.ndarray:
    """The positions of ``chars`` sorted by their first ``depth`` characters, each suffix cut at
    its run's end (``run_end``; a cut suffix sorts before its extensions); equal prefixes keep
    position order. Prefix doubling, each round one stable NumPy sort of (rank, rank further on).

    >>> chars = np.array([1, 0, 1, 0], np.int32)                 # "baba" as one pre-token
    >>> suffix_array(chars, np.array([4, 4, 4, 4]), 8).tolist()  # a, aba, ba, baba
    [3, 1, 2, 0]
    """
    n = chars.size
    positions = np.arange(n, dtype=np.int64)
    rank = np.where(chars >= 0, chars.astype(np.int64) + 2, 1)  # 1: an empty suffix, 0: past a run's end
    order = np.argsort(rank, kind="stable")
    covered = 1
    while covered < depth and n:
        further = np.zeros(n, np.int64)
        inside = positions + covered < run_end
        further[inside] = rank[positions[inside] + covered]
        key = rank * (n + 3) + further
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        starts = np.empty(n, bool)
        starts[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
        rank = np.empty(n, np.int64)
        rank[order] = np.cumsum(starts)
        covered *= 2
        if int(rank[order[-1]]) == n:  # every prefix distinct: the order is final
            break
    return order


def _threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Lattice:
    """The flat pre-tokens, the live pieces and their edges (see the module docstring)."""

    def __init__(self, kernels: Any, tok_off: np.ndarray, weight: np.ndarray, chars: np.ndarray,
                 codepoints: np.ndarray, piece_pos: np.ndarray, piece_len: np.ndarray, edges: tuple[np.ndarray, ...],
                 values: np.ndarray) -> None:
        self.k = kernels
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None  # set while training (see _fit)
        self.tok_off, self.weight, self.chars, self.codepoints = tok_off, weight, chars, codepoints
        self.piece_pos, self.piece_len = piece_pos, piece_len
        self.edge_off, self.edge_len, self.edge_piece = edges
        self.score = np.log(values) - math.log(float(values.sum()))
        cut = np.searchsorted(tok_off, np.linspace(0, tok_off[-1], BLOCKS + 1)[1:-1])
        self.blocks = list(zip([0, *cut.tolist()], [*cut.tolist(), tok_off.size - 1]))

    def __len__(self) -> int:
        return int(self.score.size)

    def unk_score(self) -> float:
        return float(self.score.min()) - UNK_PENALTY

    def _per_block(self, run: Callable[[int, int, np.ndarray], float], size: int,
                   blocks: list[tuple[int, int]]) -> tuple[np.ndarray, float]:
        """``run(lo, hi, out)`` on every block, each with its own ``out``; the sums in block order."""
        outs = [np.zeros(size) for _ in blocks]
        results = list(self.pool.map(lambda b: run(*blocks[b], outs[b]), range(len(blocks))))
        total = outs[0]
        for out in outs[1:]:
            total += out
        return total, float(sum(results))

    def e_step(self) -> tuple[np.ndarray, float]:
        """Expected piece counts and the corpus log-likelihood."""
        unk = self.unk_score()
        return self._per_block(lambda lo, hi, out: self.k.e_step(
            self.tok_off, self.weight, self.edge_off, self.edge_len, self.edge_piece, self.score, unk, lo, hi, out),
            len(self), self.blocks)

    def m_step(self, expected: np.ndarray) -> None:
        """SentencePiece's Bayesian M-step; pieces expected fewer than 0.5 times go."""
        kept = expected >= MIN_EXPECTED_COUNT
        self.score = np.full(len(self), -np.inf)
        self.score[kept] = digamma(expected[kept]) - digamma(np.array([expected[kept].sum()]))[0]
        if not kept.all():
            self.keep(np.flatnonzero(kept))

    def prune(self, target: int, shrinking_factor: float) -> None:
        """Keeps max(target, shrinking_factor × pieces) pieces, those whose removal loses most."""
        unk = self.unk_score()
        freq, _ = self._per_block(lambda lo, hi, out: self.k.viterbi_counts(
            self.tok_off, self.weight, self.edge_off, self.edge_len, self.edge_piece, self.score, unk, lo, hi, out),
            len(self), self.blocks)
        loss = np.zeros(len(self))
        cut = np.linspace(0, len(self), BLOCKS + 1).astype(np.int64)
        vsum = float(self.weight.sum())
        list(self.pool.map(lambda b: self.k.prune_losses(
            self.piece_pos, self.piece_len, self.edge_off, self.edge_len, self.edge_piece, self.score, unk, freq,
            vsum, cut[b], cut[b + 1], loss), range(BLOCKS)))
        always = np.flatnonzero(loss == np.inf)
        candidates = np.flatnonzero(np.isfinite(loss))
        candidates = candidates[np.argsort(-loss[candidates], kind="stable")]
        size = max(target, int(shrinking_factor * len(self)))
        self.keep(np.sort(np.concatenate([always, candidates[:max(size - always.size, 0)]])))

    def keep(self, ids: np.ndarray) -> None:
        """Only the pieces ``ids`` live on (renumbered in that order)."""
        new_id = np.full(len(self), -1, np.int64)
        new_id[ids] = np.arange(ids.size)
        self.edge_off, self.edge_len, self.edge_piece = self.k.compact_edges(
            self.edge_off, self.edge_len, self.edge_piece, new_id)
        self.score, self.piece_pos, self.piece_len = self.score[ids], self.piece_pos[ids], self.piece_len[ids]

    def text(self, i: int) -> str:
        a = int(self.piece_pos[i])
        return "".join(map(chr, self.codepoints[a:a + int(self.piece_len[i])].tolist()))


def _progress(desc: str, enabled: bool, total: int | None = None, unit: str = "it") -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit == "B", unit_divisor=1024 if unit == "B" else 1000,
                disable=not enabled, file=sys.stderr, dynamic_ncols=True)


class UnigramTrainer(Estimator):
    """SentencePiece-style Unigram training (see the module docstring).

    ``vocab_size`` is the whole vocabulary (specials, extra tokens, byte pieces, learnt pieces);
    ``max_piece_length`` is in characters (SentencePiece's ``max_sentencepiece_length``);
    ``seed_size``, ``shrinking_factor`` and ``num_sub_iterations`` are SentencePiece's
    ``seed_sentencepiece_size``, ``shrinking_factor`` and ``num_sub_iterations``. ``split``,
    ``digits``, ``cn`` (the :class:`PreTokenizer`), ``normalizer`` and ``reconstruct`` (the
    :class:`Normalizer`) are the BPE trainer's options; the pre-tokenizer bounds the pieces while
    training, and the trained tokenizer encodes each text as one lattice (SentencePiece's way).

    An estimator: :meth:`fit` (files), :meth:`fit_texts` and :meth:`fit_counts` learn ``model_``
    (the :class:`UnigramModel`), ``tokenizer_`` (a :class:`Unigram`) and ``stats_``; :meth:`train`
    returns the tokenizer.

    >>> text = ["the cat sat on the mat with the hat", "that cat and that hat"] * 20
    >>> trainer = UnigramTrainer(vocab_size=27, byte_fallback=False, split="whitespace", progress=False)
    >>> tok = trainer.fit_texts(text).tokenizer_
    >>> tok.encode_as_pieces(["the cat sat on that mat"])
    [['the', '▁cat', '▁sat', '▁on', '▁that', '▁mat']]
    >>> tok.decode(tok.encode(["the hat"]).ids.to_pylist()[0])
    'the hat'
    """

    def __init__(self, vocab_size: int = 8000, character_coverage: float = 0.9995, max_piece_length: int = 16,
                 seed_size: int = 1_000_000, shrinking_factor: float = 0.75, num_sub_iterations: int = 2,
                 byte_fallback: bool = True, split: str = "word", digits: str = "keep", cn: Any = None,
                 normalizer: str = "no", reconstruct: bool = False, extra_tokens: Sequence[str] = (),
                 progress: bool = True, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 backend: str | Backend | None = None) -> None:
        self.vocab_size = vocab_size
        self.character_coverage = character_coverage
        self.max_piece_length = max_piece_length
        self.seed_size = seed_size
        self.shrinking_factor = shrinking_factor
        self.num_sub_iterations = num_sub_iterations
        self.byte_fallback = byte_fallback
        self.split = split
        self.digits = digits
        self.cn = cn
        self.normalizer = normalizer
        self.reconstruct = reconstruct
        self.extra_tokens = extra_tokens
        self.progress = progress
        self.chunk_bytes = chunk_bytes
        self.backend = backend

    def _fixed_pieces(self) -> list[str]:
        bytes_ = [byte_piece(b) for b in range(256)] if self.byte_fallback else []
        return [*SPECIAL_PIECES, *self.extra_tokens, *bytes_]

    def _counter(self) -> BPETrainer:
        """Validates the parameters; the BPE trainer that counts pre-tokens with these options."""
        self._require_int("vocab_size", 1)
        self._require(isinstance(self.character_coverage, numbers.Real) and 0.0 < self.character_coverage <= 1.0,
                      "character_coverage", "a number in (0, 1]")
        self._require_int("max_piece_length", 1)
        self._require(self.max_piece_length <= 1000, "max_piece_length", "at most 1000 characters")
        self._require_int("seed_size", 1)
        self._require(isinstance(self.shrinking_factor, numbers.Real) and 0.0 < self.shrinking_factor < 1.0,
                      "shrinking_factor", "a number in (0, 1)")
        self._require_int("num_sub_iterations", 1)
        self._require(isinstance(self.byte_fallback, bool), "byte_fallback", "a bool")
        extra = self.extra_tokens
        self._require(isinstance(extra, (list, tuple)) and all(isinstance(t, str) and t for t in extra),
                      "extra_tokens", "a list of non-empty strings")
        fixed = self._fixed_pieces()
        self._require(len(set(fixed)) == len(fixed), "extra_tokens",
                      "distinct tokens that are no special or byte piece")
        self._require(self.vocab_size > len(fixed), "vocab_size",
                      f"more than the {len(fixed)} special, extra and byte pieces")
        counter = BPETrainer(split=self.split, digits=self.digits, cn=self.cn, normalizer=self.normalizer,
                             reconstruct=self.reconstruct, progress=False, chunk_bytes=self.chunk_bytes,
                             backend=self.backend)
        try:
            counter.count_pre_tokens([])  # checks the normalizer and pre-tokenizer options
        except ValueError as error:
            raise ValueError(str(error).replace("BPETrainer", type(self).__name__)) from None
        return counter

    # --------------------------------------------------------------------------------- fitting
    def fit(self, files: str | os.PathLike | Sequence[str | os.PathLike], field: str = "text") -> "UnigramTrainer":
        """Trains on files (the formats of :func:`gpu_text.documents.read_documents`), streamed in
        chunks; returns ``self``.

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = p.write_text("abc abc abd\\n" * 5)
        >>> UnigramTrainer(vocab_size=10, byte_fallback=False, progress=False).fit(p).model_.pieces[3:]
        ['abc', '▁abd', 'a', 'b', 'c', '▁', 'd']
        """
        counter = self._counter()
        paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        total = total_bytes(paths)
        start = time.perf_counter()
        with _progress("count pre-tokens", self.progress, total, "B") as bar:
            counts = counter.count_pre_tokens(read_documents(paths, field, self.chunk_bytes, bar))
        return self._fit(counts, {"count_seconds": time.perf_counter() - start, "input_bytes": total})

    def fit_texts(self, texts: Iterable[str | bytes] | Iterable[Any]) -> "UnigramTrainer":
        """Trains on in-memory text: a list of documents, or an iterable of batches; returns ``self``.

        >>> UnigramTrainer(vocab_size=6, byte_fallback=False, progress=False).fit_texts(["aab aab"]).model_.pieces
        ['<unk>', '<s>', '</s>', '▁', 'a', 'b']
        """
        counter = self._counter()
        items = list(texts)
        batches = [items] if items and isinstance(items[0], (str, bytes)) else items
        return self._fit(counter.count_pre_tokens(batches), {})

    def fit_counts(self, counts: PreTokenCounts) -> "UnigramTrainer":
        """Trains on counted pre-tokens (already normalized and split); returns ``self``.

        >>> c = PreTokenCounts.from_dict({"low": 5, "lower": 2, "newest": 6, "widest": 3})
        >>> UnigramTrainer(vocab_size=16, byte_fallback=False, progress=False).fit_counts(c).model_.pieces[3:8]
        ['newest', 'low', 'widest', 'e', 'w']
        """
        self._counter()
        return self._fit(counts, {})

    def train(self, files: str | os.PathLike | Sequence[str | os.PathLike], field: str = "text") -> Unigram:
        """:meth:`fit` on files, returning the trained tokenizer.

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = p.write_text("数据 数据处理\\n" * 4)
        >>> UnigramTrainer(vocab_size=266, progress=False).train(p).encode_as_pieces(["数据处理数据"])
        [['数据处理', '数据']]
        """
        return self.fit(files, field).tokenizer_

    def _fit(self, counts: PreTokenCounts, stats: dict[str, Any]) -> "UnigramTrainer":
        t0 = time.perf_counter()
        lattice, required = self._seed(counts, stats)
        n_fixed = len(self._fixed_pieces())
        if required.size > self.vocab_size - n_fixed:
            raise ValueError(f"vocab_size {self.vocab_size} leaves no room for the {required.size} required "
                             f"characters after {n_fixed} special, extra and byte pieces; raise vocab_size or "
                             f"lower character_coverage")
        t1 = time.perf_counter()
        target = int(self.vocab_size * DESIRED_VOCAB_FACTOR)
        rounds = []
        with _progress("EM", self.progress, unit="round") as bar, \
                concurrent.futures.ThreadPoolExecutor(min(_threads(), BLOCKS)) as lattice.pool:
            while True:
                for _ in range(self.num_sub_iterations):
                    expected, likelihood = lattice.e_step()
                    lattice.m_step(expected)
                rounds.append({"pieces": len(lattice), "log_likelihood": likelihood})
                bar.set_postfix(pieces=len(lattice))
                bar.update(1)
                if len(lattice) <= target:
                    break
                lattice.prune(target, float(self.shrinking_factor))
        t2 = time.perf_counter()
        pieces, scores = self._finalize(lattice, required, n_fixed)
        if len(pieces) + n_fixed < self.vocab_size:  # SentencePiece refuses; a smaller model is more useful
            warnings.warn(f"{type(self).__name__}: the text supports {len(pieces) + n_fixed} pieces, fewer than "
                          f"vocab_size {self.vocab_size}; the model has {len(pieces) + n_fixed}", stacklevel=3)
        stats.update(pre_tokens=len(counts), characters=int(lattice.chars.size), required_chars=int(required.size),
                     seed_seconds=t1 - t0, em_seconds=t2 - t1, em_rounds=rounds)
        fixed = self._fixed_pieces()
        types = [PieceType.UNKNOWN, PieceType.CONTROL, PieceType.CONTROL] + \
            [PieceType.USER_DEFINED] * len(self.extra_tokens) + [PieceType.BYTE] * (256 if self.byte_fallback else 0)
        model = UnigramModel(fixed + pieces, [0.0] * n_fixed + scores, types + [PieceType.NORMAL] * len(pieces),
                             unk_id=0, byte_fallback=self.byte_fallback)
        normalizer = Normalizer(self.normalizer, reconstruct=self.reconstruct)
        self.model_ = model
        self.tokenizer_ = Unigram(model, normalizer, PreTokenizer("none"), bos_id=1, eos_id=2)
        self.stats_ = stats
        return self

    def _seed(self, counts: PreTokenCounts, stats: dict[str, Any]) -> tuple[_Lattice, np.ndarray]:
        """The flat corpus, the required characters and the seed pieces with their edges."""
        from gpu_text import utf8

        kernels = get_backend("cpu").ops("unigram_trainer")  # training runs on the host
        decoded = utf8.decode(TextBatch(counts.data, counts.offsets, check=False), backend="cpu").codepoints
        codepoints = np.asarray(decoded.values, np.int64)
        tok_off = np.asarray(decoded.offsets, np.int64)
        lengths = np.diff(tok_off)
        weight = np.asarray(counts.counts, np.float64)
        if not codepoints.size:
            raise ValueError(f"{type(self).__name__}: no text to train on")
        # characters by pre-token-weighted frequency (descending, then code point), kept until covered
        distinct, inverse = np.unique(codepoints, return_inverse=True)
        position_weight = np.repeat(weight, lengths)
        freq = np.bincount(inverse, weights=position_weight, minlength=distinct.size)
        order = np.lexsort((distinct, -freq))
        order = order[distinct[order] != 0]  # no piece may hold NUL (the trie's terminator): bytes cover it
        covered_before = np.cumsum(freq[order]) - freq[order]
        n_required = int(np.count_nonzero(covered_before / freq.sum() < self.character_coverage))
        char_id = np.full(distinct.size, -1, np.int64)
        char_id[order[:n_required]] = np.arange(n_required)
        chars = char_id[inverse].astype(np.int32)
        required = distinct[order[:n_required]]
        char_freq = freq[order[:n_required]]

        cap = int(self.max_piece_length) + 1
        run_end = kernels.run_ends(chars, tok_off)
        sa = suffix_array(chars, run_end, cap)
        lcp = kernels.lcp_capped(chars, run_end, sa, cap)
        prefix_weight = np.concatenate([[0.0], np.cumsum(position_weight[sa])])
        args = (sa, lcp, run_end, prefix_weight, int(self.max_piece_length), 2.0)
        empty = [np.zeros(0, np.int64)] * 3 + [np.zeros(0)]
        n = kernels.seed_nodes(*args, *empty)
        lb, count, depth, node_freq = (np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
                                       np.zeros(n))
        kernels.seed_nodes(*args, lb, count, depth, node_freq)
        value = node_freq * depth
        if n > self.seed_size:  # the best seed_size by frequency × length; equal values: suffix order
            chosen = np.argsort(-value, kind="stable")[:self.seed_size]
            chosen.sort()
            lb, count, depth, value = lb[chosen], count[chosen], depth[chosen], value[chosen]
        by_depth = np.argsort(depth, kind="stable")
        piece = np.arange(n_required, n_required + lb.size, dtype=np.int64)
        edges = kernels.build_edges(chars, sa, lb[by_depth], count[by_depth], depth[by_depth], piece[by_depth])
        first_seen = np.full(n_required, 0, np.int64)
        known = np.flatnonzero(chars >= 0)
        first_seen[chars[known[::-1]]] = known[::-1]  # the last write per character is its first position
        piece_pos = np.concatenate([first_seen, sa[lb]])
        piece_len = np.concatenate([np.ones(n_required, np.int64), depth])
        values = np.concatenate([char_freq, value])
        stats.update(seed_pieces=int(values.size), seed_candidates=int(n), edges=int(edges[0][-1]),
                     unknown_chars=int(distinct.size - n_required))
        lattice = _Lattice(kernels, tok_off, weight, chars, codepoints, piece_pos, piece_len, edges, values)
        return lattice, required

    def _finalize(self, lattice: _Lattice, required: np.ndarray, n_fixed: int) -> tuple[list[str], list[float]]:
        """Required characters, then the best-scored pieces up to vocab_size; sorted by score."""
        chosen: dict[str, float] = {}
        present = {lattice.text(i): float(s) for i, s in enumerate(lattice.score.tolist())}
        lowest = float(lattice.score.min())
        missing = 0
        for cp in required.tolist():
            ch = chr(cp)
            if ch in present:
                chosen[ch] = present[ch]
            else:
                missing += 1
                chosen[ch] = lowest - missing * MISSING_CHAR_STEP
        room = self.vocab_size - n_fixed
        taken = set(self._fixed_pieces())
        for text, score in sorted(present.items(), key=lambda item: (-item[1], item[0])):
            if len(chosen) >= room:
                break
            if text not in chosen and text not in taken:
                chosen[text] = score
        ordered = sorted((item for item in chosen.items() if item[0] not in taken), key=lambda item: (-item[1], item[0]))
        return [text for text, _ in ordered], [score for _, score in ordered]


__all__ = ["UnigramTrainer", "digamma", "suffix_array"]
