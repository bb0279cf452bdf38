"""cpu_fallback/segment_output.py: the joined output bytes of ``gpu-text segment`` equal the
obvious Python join of the words' bytes, on random ragged inputs and on real segmentations
(invalid UTF-8 included), and spans that do not fit their rows are errors, never a crash."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.backend import get_backend
from gpu_text.batch import TextBatch
from gpu_text.segment import Dictionary, Segmenter


def join_words(*args, **kwargs):
    return get_backend("cpu").op("segment_output", "join_words")(*args, **kwargs)


def reference_join(data: bytes, text_offsets, word_offsets, starts, ends, separator: bytes = b" ") -> bytes:
    """Every row's word bytes joined by ``separator``, a newline after each row: slow and obvious."""
    lines = []
    for row in range(len(text_offsets) - 1):
        base = int(text_offsets[row])
        words = [data[base + int(starts[w]):base + int(ends[w])]
                 for w in range(int(word_offsets[row]), int(word_offsets[row + 1]))]
        lines.append(separator.join(words) + b"\n")
    return b"".join(lines)


def random_rows(rng: np.random.Generator, rows: int):
    """Random bytes (newlines and invalid UTF-8 included) cut into rows, each row's words random
    disjoint ascending spans of it (gaps between them, like dropped spaces), offsets not from 0."""
    lead = int(rng.integers(0, 5))
    lengths = rng.integers(0, 30, rows)
    lengths[rng.random(rows) < 0.2] = 0  # empty rows
    text_offsets = lead + np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    data = rng.integers(0, 256, lead + int(lengths.sum()) + int(rng.integers(0, 5)), dtype=np.uint8)
    word_offsets, starts, ends = [0], [], []
    for length in lengths.tolist():
        cuts = np.sort(rng.choice(np.arange(length + 1), size=min(length + 1, 2 * int(rng.integers(0, 6))),
                                  replace=False)) if length else np.zeros(0, np.int64)
        pairs = cuts[:cuts.size // 2 * 2].reshape(-1, 2)
        pairs = pairs[pairs[:, 1] > pairs[:, 0]]
        starts += pairs[:, 0].tolist()
        ends += pairs[:, 1].tolist()
        word_offsets.append(len(starts))
    return data, text_offsets, np.array(word_offsets, np.int64), np.array(starts, np.int64), np.array(ends, np.int64)


@pytest.mark.parametrize("seed", range(8))
def test_random_rows_join_like_the_reference(seed):
    rng = np.random.default_rng(seed)
    data, text_offsets, word_offsets, starts, ends = random_rows(rng, int(rng.integers(1, 200)))
    out, newlines = join_words(data, text_offsets, word_offsets, starts, ends)
    expected = reference_join(data.tobytes(), text_offsets, word_offsets, starts, ends)
    assert out.dtype == np.uint8 and out.tobytes() == expected
    assert newlines == expected.count(b"\n")  # one per row and every newline byte inside a word
    tabbed, _ = join_words(data, text_offsets, word_offsets, starts, ends, separator=ord("\t"))
    assert tabbed.tobytes() == reference_join(data.tobytes(), text_offsets, word_offsets, starts, ends, b"\t")


def test_empty_inputs():
    empty = np.zeros(0, np.int64)
    out, newlines = join_words(np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(1, np.int64), empty, empty)
    assert out.tobytes() == b"" and newlines == 0
    out, newlines = join_words(np.zeros(0, np.uint8), np.zeros(4, np.int64), np.zeros(4, np.int64), empty, empty)
    assert out.tobytes() == b"\n\n\n" and newlines == 3


def test_real_segmentation_with_invalid_utf8_joins_its_raw_bytes():
    seg = Segmenter(Dictionary(["他", "是", "英国", "英国人"], np.array([50, 40, 80, 100]), 300), compat="jieba")
    texts = [b"\xe4\xbb\x96\xff\xe6\x98\xaf", "他是英国人Tom，123".encode(), b"", b"   ", b"\xe8\x8b\xb1\r\xe5"]
    batch = TextBatch.from_strings(texts)
    result = seg.segment(batch, backend="cpu")
    starts, ends = result.starts.to_numpy(), result.ends.to_numpy()
    out, newlines = join_words(batch.data, batch.offsets, starts.offsets, starts.values, ends.values)
    words = [[t[s:e] for s, e in zip(ss, ee)] for t, ss, ee in zip(texts, result.starts.to_pylist(),
                                                                     result.ends.to_pylist())]
    assert out.tobytes() == b"".join(b" ".join(w) + b"\n" for w in words)
    assert out.tobytes().split(b"\n")[:4] == [b"\xe4\xbb\x96 \xff \xe6\x98\xaf", "他 是 英国人 Tom ， 123".encode(), b"", b""]
    assert newlines == len(texts)


@pytest.mark.parametrize(("starts", "ends", "word_offsets", "row"), [
    ([0, 3], [2, 9], [0, 1, 2], 1),     # past its row's end
    ([1], [1], [0, 1, 1], 0),           # empty word
    ([0, 1], [3, 4], [0, 2, 2], 0),     # overlapping the previous word
    ([2, 0], [3, 1], [0, 2, 2], 0),     # not ascending
    ([-1], [1], [0, 1, 1], 0),          # before the row
    ([0], [1], [0, 2, 1], 0),           # word offsets out of range / descending
])
def test_spans_that_do_not_fit_name_the_row(starts, ends, word_offsets, row):
    data = np.frombuffer(b"abcdefg", np.uint8)
    with pytest.raises(ValueError, match=f"row {row}: a word span does not fit the row"):
        join_words(data, np.array([0, 4, 7]), np.array(word_offsets), np.array(starts), np.array(ends))


def test_malformed_arguments_are_errors():
    data = np.frombuffer(b"abc", np.uint8)
    one = np.array([0])
    with pytest.raises(ValueError, match="word offsets"):
        join_words(data, np.array([0, 3]), np.array([0]), one, np.array([1]))
    with pytest.raises(ValueError, match="one shape"):
        join_words(data, np.array([0, 3]), np.array([0, 1]), one, np.array([1, 2]))
    with pytest.raises(ValueError, match="text offsets"):
        join_words(data, np.array([0, 9]), np.array([0, 0]), one[:0], one[:0])
    with pytest.raises(ValueError, match="text offsets"):
        join_words(data, np.array([2, 1]), np.array([0, 0]), one[:0], one[:0])
    with pytest.raises(ValueError, match="separator"):
        join_words(data, np.array([0, 3]), np.array([0, 1]), one, np.array([1]), separator=256)
