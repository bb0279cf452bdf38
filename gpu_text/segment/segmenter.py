"""DictCut: dictionary word segmentation by the most probable path through a word lattice.

Pipeline, each stage batched over the whole input on the chosen backend:
  pre-split (Han, letter and digit runs; punctuation alone; spaces dropped)
  → prefix search of every Han run in a double-array trie (lattice edges)
  → Viterbi over byte positions (one-character fallback edges keep a path to the end)
  → word spans, in input order.

``compat=None`` follows DictCut: weight ``log(freq / total)`` (unknown and frequency-0 words
``log(1 / total)``), a fallback edge at every character, the shortest word winning a tie.
``compat="jieba"`` reproduces ``jieba.cut(line, HMM=False)`` on whole lines: the pre-split is
jieba's (blocks of ``[\u4E00-\u9FD5a-zA-Z0-9+#&._%-]`` go to the lattice, every other character
stands alone, Python's whitespace is dropped: the words are jieba's tokens less its pure-whitespace
ones), weight ``log(freq) - log(total)``, frequency-0 words are no edges, a fallback edge only where
no word starts, the longest word winning a tie, and consecutive one-character ASCII letter/digit
words of a block joined into one word (word id -1 when more than one). Weights are computed once on
the host, so every backend adds the same float64 numbers in the same order and returns the same words.

On a kernel runtime (the GPU, or its emulator) ``segment`` is the ``segment_rows`` kernels of
``cuda/segment.cu``: seven kernels over the batch's bytes, one prefix sum and one read of the word
count, with the trie and the weights copied to the device once per segmenter and device. Runs
longer than a chunk (2 KB) are cut at cut points near every chunk's start into pieces solved on
their own threads; a piece's float route depends on the route after it only by rounding, which
the kernels bound (a piece whose values stay in one binade makes the whole run's choices from an
estimate of its tail), so the words are the CPU's, bit for bit, ties included.

On the CPU, a lattice run longer than ``window_bytes`` is solved in windows, last first, so its
working memory stays bounded. A window starts at a cut point (a character start no dictionary word
crosses, so every path passes there) and is solved with the route value of the window after it as
its tail score: each position gets the float the whole run would give it, and so the same words.
Where no cut point lies within a window's length the window grows (doubling) until one does.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch, as_text_batch
from gpu_text.ragged import RaggedArray, row_ids
from gpu_text.segment.dictionary import Dictionary, load_dictionary
from gpu_text.segment.segmenter_file import read_segmenter, write_segmenter
from gpu_text.specs import spec_list, spec_mapping, spec_value
from gpu_text.trie import DoubleArrayTrie

COMPAT_MODES = (None, "dictcut", "jieba")
# (state, check, label, eow) of a trie without words: the root alone, no edge out of it
_EMPTY_TRIE = (np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.uint8), np.zeros(1, np.uint8))
WINDOW_BYTES = 1 << 20


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

    ``window_bytes`` bounds the lattice of one run on the CPU (see the module notes); it never
    changes the words.
    """

    def __init__(self, dictionary: Dictionary | str | Path | None = None, compat: str | None = None, *,
                 window_bytes: int = WINDOW_BYTES) -> None:
        if compat not in COMPAT_MODES:
            raise ValueError(f"compat must be one of {COMPAT_MODES}, got {compat!r}")
        if isinstance(window_bytes, bool) or not isinstance(window_bytes, int) or window_bytes < 1:
            raise ValueError(f"window_bytes must be a positive integer, got {window_bytes!r}")
        self.compat = compat
        self.window_bytes = window_bytes
        self.dictionary = load_dictionary(dictionary) if isinstance(dictionary, (str, Path)) else dictionary
        self.trie: DoubleArrayTrie | None = None
        self._tables: dict[tuple[str, int], tuple[Any, Any, tuple[Any, ...]]] = {}
        self._bound: tuple[Any, float, float, float] | None = None
        self.weights, self.unknown_weight, self.tail_score = self._weights()
        self.max_word_bytes = 0
        if self.dictionary is not None and len(self.dictionary):
            encoded = [w.encode() for w in self.dictionary.words]
            self.trie = DoubleArrayTrie.build(encoded)
            self.max_word_bytes = max(map(len, encoded))

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
        xp = be.xp
        batch = as_text_batch(texts).to_device(xp)
        if be.runtime is not None and be.has_op("segment", "segment_rows"):
            # the device's fused kernels: any row length (their scratch is per byte, so no windows)
            *trie, weights = self._device_tables(be)
            starts, ends, ids, rows = be.op("segment", "segment_rows")(
                *trie, batch.data, batch.offsets, weights, self.unknown_weight, self.tail_score, self.jieba_mode,
                max_word_bytes=self.max_word_bytes, weight_bound=self._weight_bound())
            return Segmentation(batch, RaggedArray(starts, rows, check=False), RaggedArray(ends, rows, check=False),
                                RaggedArray(ids, rows, check=False))
        if self.trie is not None and be.has_op("segment", "segment_rows") and (
                len(batch) == 0 or int((batch.offsets[1:] - batch.offsets[:-1]).max()) <= self.window_bytes):
            # the CPU's fused pass: the same words, no intermediate arrays (longer rows take the
            # staged path below, whose windows bound a run's memory)
            starts, ends, ids, rows = be.op("segment", "segment_rows")(
                *self.trie.arrays(be), batch.data, batch.offsets, self.weights, self.unknown_weight,
                self.tail_score, self.jieba_mode)
            return Segmentation(batch, RaggedArray(starts, rows, check=False), RaggedArray(ends, rows, check=False),
                                RaggedArray(ids, rows, check=False))
        tokens = be.op("segment", "presplit")(batch.data, batch.offsets, self.jieba_mode)
        han = xp.flatnonzero(tokens[2])
        span_starts, span_ends = xp.ascontiguousarray(tokens[0][han]), xp.ascontiguousarray(tokens[1][han])
        words = self._solve(batch.data, span_starts, span_ends, be)
        if self.jieba_mode:
            words = _join_ascii_runs(batch.data, span_starts, *words, xp)
        return self._assemble(batch, xp, tokens, han, span_starts, *words)

    def word_marks(self, texts: TextBatch, backend: str | Backend | None = None) -> Any:
        """Per byte of ``texts.data`` (a batch on the backend's device; uint8): non-zero where a
        word of :meth:`segment`'s segmentation starts, at least every word whose first character is
        Han (what a ``PreTokenizer`` with this dictionary cuts its Han pre-tokens at); zero where
        no word starts. The device's fused kernels without a host read (outside jieba's mode, only
        the Han runs' words are marked).

        >>> seg = Segmenter(Dictionary(["英国", "英国人"], np.array([80, 100]), 300))
        >>> seg.word_marks(TextBatch.from_strings(["他是英国人"]), "cpu").nonzero()[0].tolist()
        [0, 3, 6]
        """
        be = get_backend(backend)
        xp = be.xp
        if be.runtime is not None and be.has_op("segment", "_segment_word_marks"):
            *trie, weights = self._device_tables(be)
            return be.op("segment", "_segment_word_marks")(
                *trie, texts.data, texts.offsets, weights, self.unknown_weight, self.tail_score, self.jieba_mode,
                max_word_bytes=self.max_word_bytes, weight_bound=self._weight_bound())
        words = self.segment(texts, be).starts
        marks = xp.zeros(texts.data.size, xp.uint8)
        marks[texts.offsets[:-1][row_ids(words.offsets)] + words.values] = 1
        return marks

    def _device_tables(self, be: Backend) -> tuple[Any, Any, Any, Any, Any]:
        """``(state, check, label, eow, weights)`` on ``be``'s device: copied there once per device
        and kept (again only when the trie or the weights are replaced). Without a dictionary, a
        one-slot trie that holds no word.

        >>> seg = Segmenter(Dictionary(["你好"], np.array([3]), 5))
        >>> seg._device_tables(get_backend("cpu"))[4] is seg._device_tables(get_backend("cpu"))[4]
        True
        """
        cuda = getattr(be.xp, "cuda", None)
        key = be.xp.__name__, (cuda.Device().id if cuda is not None else -1)
        cached = self._tables.get(key)
        if cached is None or cached[0] is not self.weights or cached[1] is not self.trie:
            trie = self.trie.arrays(be) if self.trie is not None else tuple(be.asarray(a) for a in _EMPTY_TRIE)
            cached = (self.weights, self.trie, (*trie, be.asarray(self.weights)))
            self._tables[key] = cached
        return cached[2]

    def _weight_bound(self) -> float:
        """At least every finite ``|weight|``, ``|unknown_weight|`` and ``|tail_score|``: what bounds
        the rounding of a route (the device kernels' certified pieces), computed once per weights."""
        cached = self._bound
        if cached is None or cached[0] is not self.weights or cached[1:3] != (self.unknown_weight, self.tail_score):
            finite = self.weights[np.isfinite(self.weights)]
            most = max(float(np.abs(finite).max()) if finite.size else 0.0, abs(self.unknown_weight),
                       abs(self.tail_score))
            cached = self._bound = (self.weights, self.unknown_weight, self.tail_score, most)
        return cached[3]

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
        xp = be.xp
        word_ends, _, word_offsets = self._solve(be.asarray(data), xp.ascontiguousarray(be.asarray(span_starts)),
                                                 xp.ascontiguousarray(be.asarray(span_ends)), be)
        return RaggedArray(word_ends, word_offsets, check=False)

    def lattice(self, batch: TextBatch, be: Backend) -> "Lattice":
        """Pre-split ``batch`` (already on ``be``'s device) and search its Han runs in the trie."""
        xp = be.xp
        starts, ends, is_han, token_rows = be.op("segment", "presplit")(batch.data, batch.offsets, self.jieba_mode)
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

    def _viterbi(self, data: Any, span_starts: Any, span_ends: Any, be: Backend, tail_score: float | None = None
                 ) -> tuple[Any, Any, Any]:
        """The best path of every span in one batch: (word ends, word values, span word offsets)."""
        tail = self.tail_score if tail_score is None else tail_score
        return be.op("segment", "viterbi_segment")(data, span_starts, span_ends,
                                                   *self._edges(data, span_starts, span_ends, be),
                                                   self._device_tables(be)[4], self.unknown_weight, tail,
                                                   self.jieba_mode)

    def _solve(self, data: Any, span_starts: Any, span_ends: Any, be: Backend) -> tuple[Any, Any, Any]:
        """:meth:`_viterbi` with every span longer than ``window_bytes`` solved in windows."""
        xp = be.xp
        long_spans = to_host(xp.flatnonzero(span_ends - span_starts > self.window_bytes)).tolist()
        if not long_spans:
            return self._viterbi(data, span_starts, span_ends, be)
        short = xp.flatnonzero(span_ends - span_starts <= self.window_bytes)
        short_ends, short_values, short_offsets = self._viterbi(data, xp.ascontiguousarray(span_starts[short]),
                                                                xp.ascontiguousarray(span_ends[short]), be)
        bounds = to_host(span_starts), to_host(span_ends)
        long_words = [self._solve_windows(data, int(bounds[0][k]), int(bounds[1][k]), be) for k in long_spans]
        counts = xp.zeros(span_starts.size, xp.int64)
        counts[short] = short_offsets[1:] - short_offsets[:-1]
        counts[xp.asarray(long_spans)] = xp.asarray([w[0].size for w in long_words], dtype=xp.int64)
        offsets = xp.zeros(span_starts.size + 1, xp.int64)
        xp.cumsum(counts, out=offsets[1:])
        word_ends = xp.empty(int(offsets[-1]), xp.int64)
        word_values = xp.empty(int(offsets[-1]), xp.int32)
        span_of_word = row_ids(short_offsets)
        where = offsets[short][span_of_word] + xp.arange(short_ends.size, dtype=xp.int64) - short_offsets[span_of_word]
        word_ends[where] = short_ends
        word_values[where] = short_values
        for k, (ends, values) in zip(long_spans, long_words):
            a, b = int(offsets[k]), int(offsets[k + 1])
            word_ends[a:b] = ends
            word_values[a:b] = values
        return word_ends, word_values, offsets

    def _solve_windows(self, data: Any, begin: int, end: int, be: Backend) -> tuple[Any, Any]:
        """Word ends and values of the run [begin, end), solved window by window from its end."""
        xp = be.xp
        pieces = []
        tail, stop = self.tail_score, end
        while stop > begin:
            start, edges = self._window(data, begin, stop, be)
            ends, values, _ = be.op("segment", "viterbi_segment")(
                data, xp.asarray([start], dtype=xp.int64), xp.asarray([stop], dtype=xp.int64), *edges,
                xp.asarray(self.weights), self.unknown_weight, tail, self.jieba_mode)
            pieces.append((ends, values))
            tail = self._route_value(to_host(values), tail)
            stop = start
        pieces.reverse()
        return xp.concatenate([p[0] for p in pieces]), xp.concatenate([p[1] for p in pieces])

    def _route_value(self, values: np.ndarray, tail: float) -> float:
        """The route value at a window's start: its path's weights added to ``tail`` last word first,
        one by one, exactly as the kernel adds them (``add.accumulate`` is sequential)."""
        weights = np.where(values >= 0, self.weights[np.maximum(values, 0)], self.unknown_weight)
        return float(np.add.accumulate(np.concatenate([[tail], weights[::-1]]))[-1])

    def _window(self, data: Any, begin: int, stop: int, be: Backend) -> tuple[int, tuple[Any, Any, Any, Any]]:
        """The start of the last window of [begin, stop) (a cut point as near ``stop - window_bytes``
        as can be, or ``begin``) and the dictionary edges of [start, stop), as one span's."""
        xp = be.xp
        size = self.window_bytes
        while True:
            low = stop - size
            if low <= begin:
                return begin, self._edges(data, xp.asarray([begin]), xp.asarray([stop]), be)
            # an edge crossing a position >= low starts after low - max_word_bytes
            head = max(begin, low - self.max_word_bytes)
            origin = begin
            if head - 3 > begin:  # the search must start at a character start: one of head-3..head
                lead = np.flatnonzero((to_host(data[head - 3:head + 1]) & 0xC0) != 0x80)
                origin = head - 3 + int(lead[-1]) if lead.size else head
            edge_starts, edge_ends, edge_values, _ = self._edges(data, xp.asarray([origin]), xp.asarray([stop]), be)
            starts_h, ends_h = to_host(edge_starts), to_host(edge_ends)
            candidates = origin + np.flatnonzero(_char_starts(to_host(data[origin:stop])))
            candidates = candidates[candidates >= low]
            before = np.searchsorted(starts_h, candidates, side="left")
            reach = np.maximum.accumulate(np.concatenate([[-1], ends_h]))
            cuts = candidates[reach[before] <= candidates]
            if cuts.size:
                start = int(cuts[0])
                first = int(np.searchsorted(starts_h, start, side="left"))
                return start, (edge_starts[first:], edge_ends[first:], edge_values[first:],
                               xp.asarray([0, starts_h.size - first], dtype=xp.int64))
            size *= 2

    @staticmethod
    def _assemble(batch: TextBatch, xp: Any, tokens: tuple[Any, Any, Any, Any], han: Any, span_starts: Any,
                  word_ends: Any, word_values: Any, word_offsets: Any) -> Segmentation:
        """Merge the non-lattice tokens and the runs' words into one ragged list per string."""
        starts, ends, is_han, token_rows = tokens
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
        # in place, one temporary at a time: a long line has as many words as bytes, nearly
        span_of_word = row_ids(word_offsets)
        where = token_word_offsets[han][span_of_word]
        where -= word_offsets[span_of_word]
        del span_of_word
        where += xp.arange(word_ends.size, dtype=xp.int64)
        out_starts[where[1:]] = word_ends[:-1]
        nonempty = xp.flatnonzero(per_span > 0)
        out_starts[where[word_offsets[nonempty]]] = span_starts[nonempty]
        out_ends[where] = word_ends
        out_ids[where] = word_values
        del where
        rows = token_word_offsets[token_rows]
        base = batch.offsets[:-1][row_ids(rows)]
        out_starts -= base
        out_ends -= base
        return Segmentation(batch, RaggedArray(out_starts, rows, check=False), RaggedArray(out_ends, rows, check=False),
                            RaggedArray(out_ids, rows, check=False))

    # ------------------------------------------------------------------------------ files

    def save(self, path: str | os.PathLike, tag: str = "") -> None:
        """Write the built segmenter (trie, weights, words, frequencies) to one uncompressed ``.npz``
        (no pickle) that :meth:`load` maps back without parsing or building anything. ``tag`` is
        stored for :meth:`load` to check (a cache's key). The file appears whole or not at all: it
        is written beside ``path`` and renamed.

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "seg.npz"
        >>> Segmenter(Dictionary(["英国", "英国人"], np.array([80, 100]), 300), compat="jieba").save(path)
        >>> Segmenter.load(path).cut("他是英国人")
        ['他', '是', '英国人']
        """
        write_segmenter(self, path, tag)

    @classmethod
    def load(cls, path: str | os.PathLike, tag: str | None = None, *, window_bytes: int = WINDOW_BYTES
             ) -> "Segmenter":
        """The segmenter :meth:`save` wrote to ``path``, its trie memory-mapped from the file.

        Every member is checked against the digest stored with them, and the trie's arrays against
        each other, so a truncated, corrupt or foreign file is a ``ValueError``, never a wrong
        segmenter; so is a ``tag`` other than the one saved (when ``tag`` is given).

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "seg.npz"
        >>> Segmenter(Dictionary(["你好"], np.array([3]), 5)).save(path, tag="v1")
        >>> Segmenter.load(path, tag="v2")
        Traceback (most recent call last):
        ...
        ValueError: ...seg.npz was saved with tag 'v1', not 'v2'
        """
        return read_segmenter(cls, path, tag, window_bytes)

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


def _char_starts(raw: np.ndarray) -> np.ndarray:
    """Bytes of ``raw`` (whose first byte starts a character) that surely start one under the
    one-byte rule: a non-continuation byte always does, and so does a continuation byte after three
    continuation bytes (no sequence is longer than four)."""
    lead = (raw & 0xC0) != 0x80
    out = lead.copy()
    if raw.size > 3:
        out[3:] |= ~lead[2:-1] & ~lead[1:-2] & ~lead[:-3]
    if raw.size:
        out[0] = True
    return out


def _join_ascii_runs(data: Any, span_starts: Any, word_ends: Any, word_values: Any, word_offsets: Any, xp: Any
                     ) -> tuple[Any, Any, Any]:
    """jieba's ``__cut_DAG_NO_HMM``: consecutive one-character ASCII letter/digit words of a run
    become one word (id -1 when it joins more than one)."""
    n = word_ends.size
    if n == 0:
        return word_ends, word_values, word_offsets
    span_of_word = row_ids(word_offsets)
    word_starts = xp.empty(n, xp.int64)
    word_starts[1:] = word_ends[:-1]
    nonempty = xp.flatnonzero(word_offsets[1:] > word_offsets[:-1])
    word_starts[word_offsets[nonempty]] = span_starts[nonempty]
    first = data[word_starts]
    folded = first | 0x20
    single = (word_ends - word_starts == 1) & (((first >= 0x30) & (first <= 0x39)) | ((folded >= 0x61) & (folded <= 0x7A)))
    joins = xp.zeros(n, bool)
    joins[1:] = single[1:] & single[:-1] & (span_of_word[1:] == span_of_word[:-1])
    kept = xp.flatnonzero(~joins)
    last = xp.empty(kept.size, xp.int64)
    last[:-1] = kept[1:] - 1
    last[-1] = n - 1
    values = xp.where(last > kept, -1, word_values[kept]).astype(xp.int32)
    kept_before = xp.zeros(n + 1, xp.int64)
    xp.cumsum(~joins, out=kept_before[1:])
    return xp.ascontiguousarray(word_ends[last]), values, kept_before[word_offsets]


__all__ = ["Segmentation", "Segmenter", "segment_words"]
