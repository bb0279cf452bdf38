"""DictCut: dictionary word segmentation by the most probable path through a word lattice.

Pipeline, each stage batched over the whole input on the chosen backend:
  pre-split (Han, letter and digit runs; punctuation alone; spaces dropped)
  → prefix search of every Han run in a double-array trie (lattice edges)
  → Viterbi over byte positions (one-character fallback edges keep a path to the end)
  → word spans, in input order.

``compat=None`` follows DictCut: weight ``log(freq / total)`` (unknown and frequency-0 words
``log(1 / total)``), a fallback edge at every character, the shortest word winning a tie.
``compat="jieba"`` reproduces ``jieba.cut(..., HMM=False)`` on Han text: weight
``log(freq) - log(total)``, frequency-0 words are no edges, a fallback edge only where no word
starts, the longest word winning a tie. Weights are computed once on the host, so every backend
adds the same float64 numbers in the same order and returns the same words.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch, as_text_batch
from gpu_text.ragged import RaggedArray, row_ids
from gpu_text.segment.dictionary import Dictionary, load_dictionary
from gpu_text.specs import spec_list, spec_mapping, spec_value
from gpu_text.trie import DoubleArrayTrie

COMPAT_MODES = (None, "dictcut", "jieba")


@dataclass(frozen=True)
class Lattice:
    """A pre-split batch and the trie edges of its Han runs (arrays on the backend's device)."""

    data: Any
    token_starts: Any
    token_ends: Any
    is_han: Any
    token_rows: Any
    han: Any  # indices of the Han tokens: the spans
    span_starts: Any
    span_ends: Any
    edge_starts: Any
    edge_ends: Any
    edge_values: Any
    edge_offsets: Any
    weights: Any

    def viterbi_args(self, segmenter: "Segmenter") -> tuple:
        """The arguments of the ``viterbi_segment`` kernel twin (``viterbi_loss`` adds the jobs)."""
        return (self.data, self.span_starts, self.span_ends, self.edge_starts, self.edge_ends, self.edge_values,
                self.edge_offsets, self.weights, segmenter.unknown_weight, segmenter.tail_score,
                segmenter.jieba_mode)


@dataclass(frozen=True)
class Segmentation:
    """Word spans of every input string: byte offsets ``[start, end)`` within that string.

    ``word_ids`` holds each word's dictionary index (-1 for words that are not dictionary entries:
    fallback characters and non-Han tokens).
    """

    texts: TextBatch
    starts: RaggedArray
    ends: RaggedArray
    word_ids: RaggedArray

    def words(self) -> list[list[str]]:
        """The words as strings (malformed bytes shown as U+FFFD).

        >>> Segmenter().segment(["你好ab"], backend="cpu").words()
        [['你', '好', 'ab']]
        """
        host = self.texts.to_numpy()
        raw = host.data.tobytes()
        starts, ends = self.starts.to_numpy(), self.ends.to_numpy()
        out = []
        for row in range(len(host)):
            base = int(host.offsets[row])
            a, b = int(starts.offsets[row]), int(starts.offsets[row + 1])
            out.append([raw[base + s:base + e].decode("utf-8", "replace")
                        for s, e in zip(starts.values[a:b].tolist(), ends.values[a:b].tolist())])
        return out


class Segmenter:
    """Dictionary word segmenter (DictCut); ``compat="jieba"`` matches jieba's ``HMM=False`` cut.

    Built, not learnt (no ``fit``): the constructor loads ``dictionary`` (a path is read into a
    :class:`Dictionary`), builds its trie and computes the word weights.

    >>> seg = Segmenter(Dictionary(["他", "是", "英国", "英国人", "人"], np.array([50, 40, 80, 100, 30]), 300))
    >>> seg.cut("他是英国人Tom")
    ['他', '是', '英国人', 'Tom']
    """

    def __init__(self, dictionary: Dictionary | str | Path | None = None, compat: str | None = None) -> None:
        if compat not in COMPAT_MODES:
            raise ValueError(f"compat must be one of {COMPAT_MODES}, got {compat!r}")
        self.compat = compat
        self.dictionary = load_dictionary(dictionary) if isinstance(dictionary, (str, Path)) else dictionary
        self.trie: DoubleArrayTrie | None = None
        self.weights, self.unknown_weight, self.tail_score = self._weights()
        if self.dictionary is not None and len(self.dictionary):
            self.trie = DoubleArrayTrie.build([w.encode() for w in self.dictionary.words])

    @property
    def jieba_mode(self) -> bool:
        return self.compat == "jieba"

    def _weights(self) -> tuple[np.ndarray, float, float]:
        d = self.dictionary
        if d is None or len(d) == 0:
            return np.zeros(1, np.float64), 0.0, 1.0
        total = float(max(d.total, 1))
        freqs = d.freqs.tolist()
        if self.jieba_mode:
            log_total = math.log(total)
            weights = [math.log(f) - log_total if f > 0 else -math.inf for f in freqs]
            return np.array(weights, np.float64), math.log(1) - log_total, 0.0
        unknown = math.log(1.0 / total)
        weights = [math.log(f / total) if f > 0 else unknown for f in freqs]
        return np.array(weights, np.float64), unknown, 1.0  # DictCut starts its route at 1.0

    def segment(self, texts: Any, backend: str | Backend | None = None) -> Segmentation:
        """Segment a batch (``TextBatch``, pyarrow strings, or a list of str/bytes).

        >>> Segmenter().segment(["你好，世界", ""], backend="cpu").ends.to_pylist()
        [[3, 6, 9, 12, 15], []]
        """
        be = get_backend(backend)
        batch = as_text_batch(texts).to_device(be.xp)
        lattice = self.lattice(batch, be)
        word_ends, word_values, word_offsets = be.op("segment", "viterbi_segment")(*lattice.viterbi_args(self))
        return self._assemble(batch, be.xp, lattice, word_ends, word_values, word_offsets)

    def word_ends(self, data: Any, span_starts: Any, span_ends: Any, backend: str | Backend | None = None
                  ) -> RaggedArray:
        """The best path's word ends (byte offsets into ``data``) in each span ``[start, end)`` of
        ``data``, every span taken as one Han run (no pre-split): what a caller that finds its own
        Han runs (the ``PreTokenizer``) cuts them with. Arrays on ``backend``'s device.

        >>> seg = Segmenter(Dictionary(["英国", "英国人"], np.array([80, 100]), 300))
        >>> data = np.frombuffer("他是英国人".encode(), np.uint8)
        >>> seg.word_ends(data, np.array([0, 6]), np.array([6, 15]), backend="cpu").to_pylist()
        [[3, 6], [15]]
        """
        be = get_backend(backend)
        edges = self._edges(data, span_starts, span_ends, be)
        word_ends, _, word_offsets = be.op("segment", "viterbi_segment")(
            data, span_starts, span_ends, *edges, be.xp.asarray(self.weights), self.unknown_weight, self.tail_score,
            self.jieba_mode)
        return RaggedArray(word_ends, word_offsets, check=False)

    def lattice(self, batch: TextBatch, be: Backend) -> "Lattice":
        """Pre-split ``batch`` (already on ``be``'s device) and search its Han runs in the trie."""
        xp = be.xp
        starts, ends, is_han, token_rows = be.op("segment", "presplit")(batch.data, batch.offsets)
        han = xp.flatnonzero(is_han)
        span_starts, span_ends = xp.ascontiguousarray(starts[han]), xp.ascontiguousarray(ends[han])
        return Lattice(batch.data, starts, ends, is_han, token_rows, han, span_starts, span_ends,
                       *self._edges(batch.data, span_starts, span_ends, be), xp.asarray(self.weights))

    def _edges(self, data: Any, span_starts: Any, span_ends: Any, be: Backend) -> tuple[Any, Any, Any, Any]:
        """The dictionary words found in each span: (starts, ends, word ids, per-span offsets)."""
        if self.trie is not None:
            return self.trie.prefix_search_spans(data, span_starts, span_ends, backend=be)
        xp = be.xp
        empty = xp.zeros(0, xp.int64)
        return empty, empty, xp.zeros(0, xp.int32), xp.zeros(span_starts.size + 1, xp.int64)

    @staticmethod
    def _assemble(batch: TextBatch, xp: Any, lattice: "Lattice", word_ends: Any, word_values: Any,
                  word_offsets: Any) -> Segmentation:
        """Merge the non-Han tokens and the Han runs' words into one ragged list per string."""
        starts, ends, is_han, han = lattice.token_starts, lattice.token_ends, lattice.is_han, lattice.han
        token_rows, span_starts = lattice.token_rows, lattice.span_starts
        per_token = xp.ones(starts.size, xp.int64)
        per_span = word_offsets[1:] - word_offsets[:-1]
        per_token[han] = per_span
        token_word_offsets = xp.zeros(starts.size + 1, xp.int64)
        xp.cumsum(per_token, out=token_word_offsets[1:])
        total = int(token_word_offsets[-1]) if starts.size else 0
        out_starts = xp.empty(total, xp.int64)
        out_ends = xp.empty(total, xp.int64)
        out_ids = xp.full(total, -1, xp.int32)
        other = xp.flatnonzero(is_han == 0)
        out_starts[token_word_offsets[other]] = starts[other]
        out_ends[token_word_offsets[other]] = ends[other]
        span_of_word = row_ids(word_offsets)
        word_starts = xp.empty(word_ends.size, xp.int64)
        word_starts[1:] = word_ends[:-1]
        nonempty = xp.flatnonzero(per_span > 0)
        word_starts[word_offsets[nonempty]] = span_starts[nonempty]
        where = token_word_offsets[han][span_of_word] + xp.arange(word_ends.size, dtype=xp.int64) - word_offsets[span_of_word]
        out_starts[where] = word_starts
        out_ends[where] = word_ends
        out_ids[where] = word_values
        rows = token_word_offsets[token_rows]
        row_of_word = row_ids(rows)
        base = batch.offsets[:-1][row_of_word]
        return Segmentation(batch, RaggedArray(out_starts - base, rows, check=False),
                            RaggedArray(out_ends - base, rows, check=False), RaggedArray(out_ids, rows, check=False))

    def cut(self, text: str, backend: str | Backend | None = "cpu") -> list[str]:
        """Segment one string (a convenience; batch with :meth:`segment`).

        >>> Segmenter().cut("你好")
        ['你', '好']
        """
        return self.segment([text], backend).words()[0]

    def to_dict(self) -> dict[str, Any]:
        """The dictionary (words, frequencies, total: what the weights come from) and the compat mode.

        >>> Segmenter(Dictionary(["你好"], np.array([3]), 5), compat="jieba").to_dict()
        {'dictionary': {'words': ['你好'], 'freqs': [3], 'total': 5}, 'compat': 'jieba'}
        """
        d = self.dictionary
        words = None if d is None else {"words": list(d.words), "freqs": d.freqs.tolist(), "total": int(d.total)}
        return {"dictionary": words, "compat": self.compat}

    @classmethod
    def from_dict(cls, spec: Any) -> "Segmenter":
        """The segmenter a :meth:`to_dict` spec describes (a malformed one is a ``ValueError`` saying why).

        >>> Segmenter.from_dict(Segmenter(Dictionary(["你好"], np.array([3]), 5)).to_dict()).cut("你好吗")
        ['你好', '吗']
        """
        return cls(*cls.arguments_from_dict(spec))

    @staticmethod
    def arguments_from_dict(spec: Any) -> tuple[Dictionary | None, str | None]:
        """The ``(dictionary, compat)`` a :meth:`to_dict` spec describes, checked (for owners that
        build their own segmenter from them, as :class:`~gpu_text.tokenizer.PreTokenizer` does).

        >>> Segmenter.arguments_from_dict({"dictionary": {"words": ["a", "a"], "freqs": [1, 2], "total": 3},
        ...                                "compat": None})
        Traceback (most recent call last):
        ...
        ValueError: Segmenter spec: dictionary word 1 ('a') is given twice
        """
        spec = spec_mapping(spec, "Segmenter", ("dictionary", "compat"))
        compat = spec_value(spec, "compat", (str, type(None)), "Segmenter")
        if compat not in COMPAT_MODES:
            raise ValueError(f"Segmenter spec: compat must be one of {COMPAT_MODES}, got {compat!r}")
        words = spec_value(spec, "dictionary", (dict, type(None)), "Segmenter")
        if words is None:
            return None, compat
        words = spec_mapping(words, "Segmenter dictionary", ("words", "freqs", "total"))
        names = spec_list(words, "words", str, "Segmenter dictionary")
        freqs = spec_list(words, "freqs", int, "Segmenter dictionary")
        total = spec_value(words, "total", int, "Segmenter dictionary")
        if len(freqs) != len(names):
            raise ValueError(f"Segmenter spec: {len(names)} dictionary words but {len(freqs)} frequencies")
        if min(freqs, default=0) < 0 or total < 0:
            raise ValueError("Segmenter spec: frequencies and the total must not be negative")
        seen: set[str] = set()
        for index, word in enumerate(names):
            # the trie is built from the words' UTF-8, with NUL as its terminator
            if not word or "\x00" in word or any("\ud800" <= c <= "\udfff" for c in word):
                raise ValueError(f"Segmenter spec: dictionary word {index} ({word!r}) is empty, holds a NUL "
                                 "or is not valid text")
            if word in seen:
                raise ValueError(f"Segmenter spec: dictionary word {index} ({word!r}) is given twice")
            seen.add(word)
        return Dictionary(list(names), np.array(freqs, np.int64), total), compat

def segment_words(texts: Any, dictionary: Dictionary | str | Path | None = None, compat: str | None = None,
                  backend: str | Backend | None = None) -> list[list[str]]:
    """One-call segmentation to lists of words.

    >>> segment_words(["你好世界"])
    [['你', '好', '世', '界']]
    """
    return Segmenter(dictionary, compat).segment(texts, backend).words()


__all__ = ["Segmentation", "Segmenter", "segment_words"]
