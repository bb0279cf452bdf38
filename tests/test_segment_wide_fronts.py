"""The fused segmentation's hard runs stay bounded (issue 16): a run whose anchors only find forced
cuts with wide frontiers, and a run whose pieces hold dictionary words of more than 128 bytes.
The first two run a line of 256 KB and one of 1 MB through the emulated kernels, check the Numba
twin's words, and check that no kernel's longest thread grows with the line beyond the run's walk
(a step per segment of composed tables): before, one thread solved the whole run or every piece in
turn. The
last checks which frontiers now cut (up to GT_FRONT_MAX = 8 positions) and which still do not."""
from __future__ import annotations

import numpy as np

from gpu_text.backend import get_backend
from gpu_text.batch import TextBatch
from gpu_text.segment import Dictionary, Segmenter
from tests.test_segment_kernels import ROW_KERNELS, assert_arrays_equal, run_segment_rows, segment_rows_args
from tests.test_utf8_kernels import host


def longest_threads(segmenter: Segmenter, line: str) -> dict[str, int]:
    """Every segment_* kernel's longest thread on ``line`` (one row), after checking the emulated
    kernels' words against the Numba twin's."""
    from tests.emulated_backend import emulated_backend

    batch = TextBatch.from_strings([line])
    cpu = get_backend("cpu")
    want = cpu.op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, cpu))
    be = emulated_backend()
    assert_arrays_equal(run_segment_rows(segmenter, segment_rows_args(segmenter, batch, be), be), want)
    module = be.runtime.module("segment")
    return {name: module.get_function(name).last_max_steps for name in ROW_KERNELS}


def steps_at_two_sizes(segmenter: Segmenter, unit: str) -> tuple[dict[str, int], dict[str, int]]:
    """Longest threads on ``unit`` repeated to 256 KB and to 1 MB."""
    sizes = []
    for kib in (256, 1024):
        chars = (kib << 10) // 3
        line = (unit * (chars // len(unit) + 1))[:chars]
        sizes.append(longest_threads(segmenter, line))
    return sizes[0], sizes[1]


def assert_bounded(small: dict[str, int], large: dict[str, int], piece_work: float) -> None:
    """Four times the line: no kernel's longest thread beyond a piece's work, and none grown by more
    than the walk's extra steps (a walk of a step per piece would add 3 x 384 pieces' worth)."""
    import gpu_text.cuda_ops.segment as launchers

    pieces = (1 << 20) // launchers.CHUNK_BYTES
    for name in ROW_KERNELS:
        assert large[name] <= piece_work, (name, small, large)
        assert large[name] <= small[name] + 2 * pieces, (name, small, large)


def test_long_dictionary_words_on_a_megabyte_line():
    """A 50-character word (150 bytes) of 一 and 丁 repeated with runs of 一 between, under 一一,
    一一一 and 丁一: words cross most boundaries, so anchors cut at forced cuts, and every piece
    holds the long word. While a values-only solve kept 128 values, no piece got a class table and
    segment_resolve solved each in turn: 1,403,313 steps at 256 KB, 5,663,110 at 1 MB; now 22,614
    and 22,814 (an exact solve next to the run's end)."""
    import gpu_text.cuda_ops.segment as launchers

    rng = np.random.default_rng(3)
    long_word = "".join(rng.choice(["一", "丁"], 50, p=[0.8, 0.2]))
    words = sorted(["一一", "一一一", "丁一", long_word])
    segmenter = Segmenter(Dictionary(words, np.array([5, 3, 2, 4], np.int64), 20))
    assert segmenter.max_word_bytes == 150
    small, large = steps_at_two_sizes(segmenter, long_word + "一" * 7)
    print("longest threads, 150-byte words: 256 KB", small, "1 MB", large)
    # a piece (up to a chunk and a half) solved with a trie walk of up to the longest word per character
    piece_work = 1.5 * launchers.CHUNK_BYTES / 3 * segmenter.max_word_bytes
    assert_bounded(small, large, piece_work)


def test_wide_frontiers_on_a_megabyte_line():
    """A run of 一 under the words 一 to 一一一一一一 (1 to 6 characters): five word ends cross every
    character boundary, so every forced cut has a frontier of six positions. While a frontier held
    at most four (GT_FRONT_MAX), no anchor cut the run and segment_pieces solved it on one thread:
    2,024,276 steps at 256 KB, 8,097,279 at 1 MB; now a piece's solve per frontier position, 136,187
    at both sizes."""
    import gpu_text.cuda_ops.segment as launchers

    words = ["一" * k for k in range(1, 7)]
    segmenter = Segmenter(Dictionary(words, np.array([9, 7, 5, 4, 3, 2], np.int64), 40))
    small, large = steps_at_two_sizes(segmenter, "一")
    print("longest threads, frontiers of 6: 256 KB", small, "1 MB", large)
    frontier = len(words)
    # a piece (under two chunks of characters) solved once per frontier position, each character
    # start walking up to the longest word's bytes, each byte a step
    piece_work = frontier * 2 * launchers.CHUNK_BYTES / 3 * (segmenter.max_word_bytes + 3)
    assert_bounded(small, large, piece_work)
    assert large["segment_paths"] > 0  # pieces start at forced cuts


def test_frontiers_wider_than_the_most(monkeypatch):
    """Cut every 256 bytes: a run of 丁 under 丁 to 丁 x 6 cuts at forced cuts with frontiers of six
    positions (before, wider than the most, GT_FRONT_MAX: then 4); a run of 一 under 一 to 一 x 12 has
    frontiers of 12, wider than GT_FRONT_MAX (8) at every try, so its anchors leave their windows
    uncut (the piece goes on to the run's end: what is left unbounded); mixed runs beside them.
    The reference's words, in both modes."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend
    from tests.test_segment_kernels import assert_segment_rows_like_reference

    chunk = 256
    monkeypatch.setattr(launchers, "CHUNK_BYTES", chunk)
    marks = []
    launch = launchers.launch

    def reading_launch(function, grid, args):  # segment_marks' cuts and frontiers
        launch(function, grid, args)
        if "segment_marks" in repr(function):
            marks.append((host(args[-4]).copy(), host(args[-2]).copy()))

    monkeypatch.setattr(launchers, "launch", reading_launch)
    be = emulated_backend()
    rng = np.random.default_rng(12)
    for trial in range(4):
        words = {"一" * k for k in range(1, 13)} | {"丁" * k for k in range(1, 7)}
        words = sorted(words | {"".join(rng.choice(["一", "丁"], int(rng.integers(2, 12)))) for _ in range(20)})
        freqs = rng.integers(1, 9, len(words)).astype(np.int64)
        segmenter = Segmenter(Dictionary(words, freqs, int(freqs.sum()) + 3), compat=None if trial % 2 else "jieba")
        texts = ["一" * int(rng.integers(500, 2000)), "丁" * int(rng.integers(500, 2000))]
        texts += ["".join(rng.choice(["一", "丁"], int(rng.integers(500, 2000)), p=[0.9, 0.1])) for _ in range(2)]
        batch = TextBatch.from_strings(texts)
        assert_segment_rows_like_reference(segmenter, batch, be)
        cuts, front_n = marks[-1]
        anchors = np.arange(cuts.size) * chunk
        for row, want in ((0, None), (1, 6)):  # the anchors whose window lies inside the row
            begin, end = batch.offsets[row], batch.offsets[row + 1]
            inside = (anchors > begin) & (anchors + chunk <= end)
            assert inside.sum() >= 2, (row, inside)
            if want is None:
                assert (cuts[inside] == -1).all(), cuts[inside]
            else:
                assert (front_n[inside] == want).all(), front_n[inside]
