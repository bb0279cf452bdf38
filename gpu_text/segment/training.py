"""DictCut's dictionary training: word frequencies from a candidate word list and raw text.

1. Cold start: forward longest match over the corpus; candidate words are counted.
2. While the dictionary is larger than the target: ``sub_iterations`` rounds of Hard EM (segment
   with the current frequencies, count the words on the best paths, use the counts), then prune:
   every word gets loss = best path score − best score with that word's edge removed, summed over
   its occurrences (one re-solve per occurrence, batched on the backend); a single character's
   loss is known − unknown weight. Rank = loss / sqrt(count) / characters; single characters are
   always kept, words seen fewer than ``min_count`` times dropped, and of the rest the best
   max(target − singles, ``keep_fraction`` of them) kept.
3. ``sub_iterations`` final rounds of Hard EM.

The corpus is streamed in chunks on every pass (only counts live in memory). Deterministic: ties
in the ranking are broken by the word itself. (DictCut's script counts the characters of a
non-ASCII word as bytes / 3; here they are counted exactly.)
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch
from gpu_text.documents import DEFAULT_CHUNK_BYTES, read_documents, total_bytes
from gpu_text.estimator import Estimator
from gpu_text.segment.dictionary import Dictionary
from gpu_text.segment.segmenter import Segmenter


@dataclass
class TrainingRound:
    """What one step did, for the progress log."""

    step: str
    dictionary_size: int
    tokens: int


class DictionaryTrainer(Estimator):
    """Train word frequencies by Hard EM with loss-based pruning (DictCut).

    An estimator (:mod:`gpu_text.estimator`): :meth:`fit` learns ``dictionary_`` (the trained
    :class:`Dictionary`) and ``history_`` (one :class:`TrainingRound` per step).

    >>> import tempfile, os
    >>> corpus = os.path.join(tempfile.mkdtemp(), "c.txt")
    >>> _ = open(corpus, "w").write("我们学习人工智能\\n我们学习\\n人工智能学习\\n" * 20)
    >>> trainer = DictionaryTrainer(target_size=6, min_count=2, progress=False)
    >>> trainer
    DictionaryTrainer(target_size=6, min_count=2, progress=False)
    >>> d = trainer.fit(["我们", "学习", "人工", "智能", "人工智能", "我", "们", "学", "习"], [corpus]).dictionary_
    >>> sorted(zip(d.words, d.freqs.tolist()))[:3]
    [('人工智能', 40), ('学习', 60), ('我们', 40)]
    """

    def __init__(self, target_size: int = 180_000, min_count: int = 15, sub_iterations: int = 2,
                 keep_fraction: float = 0.75, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 backend: str | Backend | None = None, progress: bool = True) -> None:
        self.target_size = target_size
        self.min_count = min_count
        self.sub_iterations = sub_iterations
        self.keep_fraction = keep_fraction
        self.chunk_bytes = chunk_bytes
        self.backend = backend
        self.progress = progress

    def fit(self, candidates: Iterable[str], corpus: Sequence[str | Path]) -> "DictionaryTrainer":
        """Learns frequencies for (a subset of) ``candidates`` from the ``corpus`` files; returns
        ``self`` (see the class example).

        >>> DictionaryTrainer(keep_fraction=2.0).fit(["我"], [])
        Traceback (most recent call last):
        ...
        ValueError: DictionaryTrainer: keep_fraction must be a number in [0, 1], got 2.0
        """
        self._validate_params()
        history: list[TrainingRound] = []
        words = list(dict.fromkeys(w for w in candidates if w))
        dictionary = self._count(Dictionary(words, np.ones(len(words), np.int64), len(words)), corpus, history,
                                 cold=True)
        while len(dictionary) > self.target_size:
            for _ in range(self.sub_iterations):
                dictionary = self._count(dictionary, corpus, history)
            pruned = self._prune(dictionary, corpus, history)
            if len(pruned) >= len(dictionary):
                break  # nothing more can go (every remaining word is a single character)
            dictionary = pruned
        for _ in range(self.sub_iterations):
            dictionary = self._count(dictionary, corpus, history)
        self.dictionary_, self.history_ = dictionary, history
        return self

    def _validate_params(self) -> None:
        self._require_int("target_size", 1)
        self._require_int("min_count", 0)
        self._require_int("sub_iterations", 0)
        self._require(isinstance(self.keep_fraction, numbers.Real) and 0.0 <= self.keep_fraction <= 1.0,
                      "keep_fraction", "a number in [0, 1]")
        self._require_int("chunk_bytes", 1)

    def _batches(self, corpus: Sequence[str | Path], description: str) -> Iterator[TextBatch]:
        from tqdm import tqdm

        with tqdm(total=total_bytes(corpus), unit="B", unit_scale=True, desc=description,
                  disable=not self.progress) as bar:
            yield from read_documents(corpus, chunk_bytes=self.chunk_bytes, progress=bar)

    def _count(self, dictionary: Dictionary, corpus: Sequence[str | Path], history: list[TrainingRound],
               cold: bool = False) -> Dictionary:
        """One E+M step: the dictionary words' counts on the best (or, cold, longest-match) paths."""
        be = get_backend(self.backend)
        segmenter = Segmenter(dictionary)
        counts = np.zeros(len(dictionary), np.int64)
        tokens = 0
        for batch in self._batches(corpus, "cold start" if cold else "hard EM"):
            lattice = segmenter.lattice(batch.to_device(be.xp), be)
            if cold:  # longest match is a CPU-only op: the lattice comes to the host for it
                host = [to_host(a) for a in (lattice.data, lattice.span_starts, lattice.span_ends, lattice.edge_starts,
                                             lattice.edge_ends, lattice.edge_values, lattice.edge_offsets)]
                values, _ = get_backend("cpu").op("segment", "forward_longest_match")(*host)
            else:
                _, values, _ = be.op("segment", "viterbi_segment")(*lattice.viterbi_args(segmenter))
                values = to_host(values)
            values = values[values >= 0]
            tokens += values.size
            counts += np.bincount(values, minlength=len(dictionary))
        keep = np.flatnonzero(counts > 0)
        result = Dictionary([dictionary.words[i] for i in keep], counts[keep], int(counts.sum()))
        history.append(TrainingRound("cold start" if cold else "hard EM", len(result), tokens))
        return result

    def _prune(self, dictionary: Dictionary, corpus: Sequence[str | Path], history: list[TrainingRound]
               ) -> Dictionary:
        be = get_backend(self.backend)
        segmenter = Segmenter(dictionary)
        n = len(dictionary)
        loss = np.zeros(n, np.float64)
        count = np.zeros(n, np.int64)
        lengths = np.array([len(w) for w in dictionary.words], np.int64)
        for batch in self._batches(corpus, "pruning loss"):
            lattice = segmenter.lattice(batch.to_device(be.xp), be)
            args = lattice.viterbi_args(segmenter)
            word_ends, values, offsets = (to_host(a) for a in be.op("segment", "viterbi_segment")(*args))
            spans = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
            word_starts = np.empty_like(word_ends)
            word_starts[1:] = word_ends[:-1]
            span_starts = to_host(lattice.span_starts)
            nonempty = np.flatnonzero(np.diff(offsets) > 0)
            word_starts[offsets[nonempty]] = span_starts[nonempty]
            known = values >= 0
            np.add.at(count, values[known], 1)
            multi = known & (lengths[np.maximum(values, 0)] > 1)
            jobs = np.flatnonzero(multi)
            if jobs.size:
                xp = be.xp
                losses = be.op("segment", "viterbi_loss")(
                    *args, xp.asarray(spans[jobs]), xp.asarray(word_starts[jobs]), xp.asarray(word_ends[jobs]))
                np.add.at(loss, values[jobs], to_host(losses))
        # a single character's loss per occurrence: its weight as a known word minus the unknown one
        single = lengths == 1
        loss[single] = count[single] * (segmenter.weights[single] - segmenter.unknown_weight)
        singles = np.flatnonzero(single)
        eligible = np.flatnonzero(~single & (count >= self.min_count))
        keep = max(self.target_size - singles.size, int(math.floor(self.keep_fraction * eligible.size)))
        rank = loss[eligible] / np.sqrt(np.maximum(count[eligible], 1)) / lengths[eligible]
        order = sorted(range(eligible.size), key=lambda k: (-rank[k], dictionary.words[eligible[k]]))
        kept = np.sort(np.concatenate([singles, eligible[order[:keep]]]))
        result = Dictionary([dictionary.words[i] for i in kept], dictionary.freqs[kept],
                            int(dictionary.freqs[kept].sum()))
        history.append(TrainingRound("prune", len(result), int(count.sum())))
        return result
