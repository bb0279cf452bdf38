"""Differential tests of cuda/segment.cu: emulated CUDA (and the GPU when present) == Numba == reference,
for the staged kernels (pre-split, Viterbi, loss) and the fused batch segmentation (segment_rows:
pieces of long runs, certified or solved again, and the longest thread's steps on a 1 MB row)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.backend import get_backend
from gpu_text.batch import TextBatch
from gpu_text.segment import Dictionary, Segmenter
from tests.reference import segment as reference
from tests.test_utf8_kernels import host

HAN = [chr(c) for c in range(0x4E00, 0x4E00 + 12)]


def random_texts(rng: np.random.Generator, count: int) -> list[bytes]:
    # jieba's block characters beside Han, Python-only whitespace (\x1c, U+1680) and Han after U+9FD5
    pieces = HAN * 3 + ["a", "b", "'", " ", "1", "2", "，", "。", "\t", "🙂", "Ж", "+", "-", ".", "%", "\x1c",
                        "\u1680", "\u3000", "\u9fd6", "Ａ", "６"]
    out = []
    for _ in range(count):
        n = int(rng.integers(0, 30))
        text = "".join(pieces[k] for k in rng.integers(0, len(pieces), n)).encode()
        if rng.random() < 0.1:  # malformed bytes inside Han runs and at the ends
            cut = int(rng.integers(0, len(text) + 1))
            text = text[:cut] + b"\xe4\xb8" + text[cut:]
        out.append(text)
    return out


def random_dictionary(rng: np.random.Generator, size: int) -> Dictionary:
    words = sorted({"".join(rng.choice(HAN, int(rng.integers(1, 5)))) for _ in range(size)})
    freqs = rng.integers(0, 50, len(words))
    return Dictionary(words, freqs.astype(np.int64), int(freqs.sum()) + 1)


def assert_arrays_equal(got, want):
    for g, w in zip(got, want):
        np.testing.assert_array_equal(host(g), w)


@pytest.mark.parametrize("jieba_mode", [False, True])
@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_presplit(backend, size, jieba_mode):
    batch = TextBatch.from_strings(random_texts(np.random.default_rng(size), size))
    got = backend.op("segment", "presplit")(backend.asarray(batch.data), backend.asarray(batch.offsets), jieba_mode)
    assert_arrays_equal(got, reference.presplit(batch.data, batch.offsets, jieba_mode))


@pytest.mark.parametrize("compat", [None, "jieba"])
@pytest.mark.parametrize("size", [0, 1, 2, 400])
def test_viterbi_and_loss(backend, compat, size):
    rng = np.random.default_rng(100 + size)
    segmenter = Segmenter(random_dictionary(rng, 60), compat=compat)
    batch = TextBatch.from_strings(random_texts(rng, size))
    lattice = segmenter.lattice(batch.to_device(backend.xp), backend)
    args = lattice.viterbi_args(segmenter)
    host_args = tuple(host(a) if hasattr(a, "dtype") and getattr(a, "ndim", 0) else a for a in args)
    want = reference.viterbi_segment(*host_args)
    got = backend.op("segment", "viterbi_segment")(*args)
    assert_arrays_equal(got, want)
    # loss jobs: every word of the best paths that is a dictionary edge
    word_ends, values, offsets = want
    spans = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    starts = np.empty_like(word_ends)
    starts[1:] = word_ends[:-1]
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    starts[offsets[nonempty]] = host(lattice.span_starts)[nonempty]
    jobs = np.flatnonzero(values >= 0)
    job_args = (spans[jobs], starts[jobs], word_ends[jobs])
    want_loss = reference.viterbi_loss(*host_args, *job_args)
    got_loss = backend.op("segment", "viterbi_loss")(*args, *(backend.asarray(a) for a in job_args))
    np.testing.assert_array_equal(host(got_loss), want_loss)
    if compat is None:  # removing an edge of the best path never helps (jieba's lattice may gain a fallback)
        assert (want_loss >= 0).all()


def test_forward_longest_match_cold_start():
    from cpu_fallback.segment import forward_longest_match

    segmenter = Segmenter(Dictionary(["南京", "南京市", "市长", "长江", "大桥"], np.ones(5, np.int64), 5))
    batch = TextBatch.from_strings(["南京市长江大桥"])
    lattice = segmenter.lattice(batch, get_backend("cpu"))
    values, offsets = forward_longest_match(lattice.data, lattice.span_starts, lattice.span_ends, lattice.edge_starts,
                                            lattice.edge_ends, lattice.edge_values, lattice.edge_offsets)
    words = segmenter.dictionary.words
    assert [words[v] if v >= 0 else None for v in values] == ["南京市", "长江", "大桥"]
    assert offsets.tolist() == [0, 3]


def segment_rows_args(segmenter: Segmenter, batch: TextBatch, backend) -> tuple:
    """The arguments of the ``segment_rows`` twin on ``backend`` (a trie without words when the
    segmenter has no dictionary)."""
    *trie, weights = segmenter._device_tables(backend)
    return (*trie, backend.asarray(batch.data), backend.asarray(batch.offsets), weights, segmenter.unknown_weight,
            segmenter.tail_score, segmenter.jieba_mode)


def run_segment_rows(segmenter: Segmenter, args: tuple, backend) -> tuple:
    """The ``segment_rows`` twin of ``backend``; the CUDA one with the segmenter's limits, which
    let it cut long runs into pieces (what ``Segmenter.segment`` passes)."""
    limits = {} if backend.runtime is None else {"max_word_bytes": segmenter.max_word_bytes,
                                                  "weight_bound": segmenter._weight_bound()}
    return backend.op("segment", "segment_rows")(*args, **limits)


def assert_segment_rows_like_reference(segmenter: Segmenter, batch: TextBatch, backend) -> None:
    args = segment_rows_args(segmenter, batch, backend)
    want = reference.segment_rows(*(host(a) if hasattr(a, "dtype") and getattr(a, "ndim", 0) else a for a in args))
    got = run_segment_rows(segmenter, args, backend)
    assert [g.dtype for g in got] == [np.int64, np.int64, np.int32, np.int64]
    assert_arrays_equal(got, want)


@pytest.mark.parametrize("compat", [None, "jieba"])
@pytest.mark.parametrize("size", [0, 1, 2, 300])
def test_segment_rows(backend, compat, size):
    """The fused segmentation (random text: malformed bytes, Python-only spaces, empty rows) == reference."""
    rng = np.random.default_rng(300 + size)
    segmenter = Segmenter(random_dictionary(rng, 60), compat=compat)
    assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(random_texts(rng, size)), backend)


@pytest.mark.parametrize("compat", [None, "jieba"])
def test_segment_rows_ties_and_no_dictionary(backend, compat):
    """Equal scores everywhere (every word once: DictCut keeps the shortest, jieba the longest),
    frequency-0 words, ASCII joins inside jieba's blocks, and no dictionary at all."""
    words = ["一二", "二三", "一二三", "三四", "四", "a一", "1a"]
    d = Dictionary(words, np.array([1, 1, 1, 1, 1, 0, 1]), 8)
    texts = ["一二三四一二三四", "a一二ab1a2三", "一 二\u3000三", "", "四" * 40, "一二三" * 7 + "a1b2c3"]
    for segmenter in (Segmenter(d, compat=compat), Segmenter(compat=compat)):
        assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(texts), backend)


def test_segment_rows_rows_off_the_buffer_start(backend):
    """Rows that do not start at byte 0 of the buffer, bytes outside every row, truncated
    sequences at row ends (never decoded across into the next row)."""
    segmenter = Segmenter(Dictionary(["一二", "二三"], np.array([3, 4]), 9), compat=None)
    raw = "x一二三".encode() + b"\xe4\xb8" + "二三 y".encode() + b"\xe4" + "\xe4一二".encode() + b"zz"
    data = np.frombuffer(raw, np.uint8)
    offsets = np.array([1, 10, 12, 12, len(raw) - 2], np.int64)
    args = segment_rows_args(segmenter, TextBatch.from_strings([""]), backend)
    args = (*args[:4], backend.asarray(data), backend.asarray(offsets), *args[6:])
    want = reference.segment_rows(*(host(a) if hasattr(a, "dtype") and getattr(a, "ndim", 0) else a for a in args))
    assert_arrays_equal(run_segment_rows(segmenter, args, backend), want)


ROW_KERNELS = ("segment_marks", "segment_pieces", "segment_settle", "segment_resolve",
               "segment_finish", "segment_paths", "segment_words", "segment_compact")


@pytest.mark.parametrize("ties", [False, True])
def test_segment_rows_one_megabyte_line(ties):
    """One unpunctuated Han line of 1 MB (and a short one after it): the emulated kernels give the
    Numba twin's words, and no thread's work grows with the line: every kernel's longest thread
    stays within a few chunks of steps (a piece's solve, one class solve, the run's walk of one
    step per piece plus an exact solve of the pieces next to the line's end that have no class
    table). Before the class tables, segment_resolve solved every uncertain piece (near binade
    edges and halfway roundings) in turn on one thread: 75,700 steps."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend

    rng = np.random.default_rng(7)
    d = random_dictionary(rng, 400)
    if ties:  # every frequency 1 or 2: exact ties all along the line
        d = Dictionary(d.words, rng.integers(1, 3, len(d)).astype(np.int64), 2 * len(d))
    segmenter = Segmenter(d, compat="jieba")
    line = "".join(rng.choice(HAN, (1 << 20) // 3))
    batch = TextBatch.from_strings([line, "", line[:5000]])
    cpu = get_backend("cpu").op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, get_backend("cpu")))
    be = emulated_backend()
    got = run_segment_rows(segmenter, segment_rows_args(segmenter, batch, be), be)
    assert_arrays_equal(got, cpu)
    assert cpu[3].tolist()[1:] == [cpu[3][1], cpu[3][1], cpu[0].size] and cpu[0].size > 1000
    module = be.runtime.module("segment")
    steps = {name: module.get_function(name).last_max_steps for name in ROW_KERNELS}
    print("longest thread's steps on a 1 MB row:", steps)
    chunk = launchers.CHUNK_BYTES
    piece_work = 6 * chunk  # forward, backward and trie steps of about a chunk of 3-byte characters
    assert max(steps[k] for k in ("segment_marks", "segment_pieces", "segment_settle", "segment_finish")) <= piece_work
    walk = 2 * ((1 << 20) // chunk + 1)  # segment_resolve: the line's pieces, twice
    assert 0 < steps["segment_resolve"] <= walk + piece_work, steps  # at most one exact solve
    assert steps["segment_pieces"] >= chunk  # it did solve pieces of about a chunk
    assert steps["segment_paths"] == steps["segment_words"] == steps["segment_compact"] == 0  # no forced cut


def test_segment_rows_on_news_lines(backend):
    """Real lines (zh-sogou-news) in jieba mode with a dictionary of their own pieces == reference."""
    from tests.conftest import shared_data

    folder = shared_data("zh-sogou-news")
    lines = []
    for path in sorted(folder.glob("*.txt"))[:3]:
        lines += [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line][:40]
    from tests.test_launch_counts import sample_dictionary

    for compat in (None, "jieba"):
        segmenter = Segmenter(sample_dictionary(lines), compat=compat)
        assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(lines[:80]), backend)


def test_segment_rows_on_a_long_news_line(monkeypatch):
    """The Han of many news lines as one unpunctuated line, cut into pieces every 256 bytes: the
    emulated kernels give the Numba twin's words (real frequencies, so real near ties)."""
    import re

    import gpu_text.cuda_ops.segment as launchers
    from tests.conftest import shared_data
    from tests.emulated_backend import emulated_backend
    from tests.test_launch_counts import sample_dictionary

    folder = shared_data("zh-sogou-news")
    lines = []
    for path in sorted(folder.glob("*.txt"))[:20]:
        lines += [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line]
    line = "".join(re.findall("[\u4e00-\u9fff]+", "".join(lines)))[:40000]
    monkeypatch.setattr(launchers, "CHUNK_BYTES", 256)
    be, cpu = emulated_backend(), get_backend("cpu")
    for compat in (None, "jieba"):
        segmenter = Segmenter(sample_dictionary(lines[:400]), compat=compat)
        batch = TextBatch.from_strings([line, line[:3000], line[7:1000]])
        want = cpu.op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, cpu))
        assert_arrays_equal(run_segment_rows(segmenter, segment_rows_args(segmenter, batch, be), be), want)


@pytest.mark.parametrize("compat", [None, "jieba"])
@pytest.mark.parametrize("chunk", [16, 23, 64])
def test_segment_rows_in_pieces(monkeypatch, compat, chunk):
    """Runs cut at anchors every few bytes (pieces solved apart, certified or solved again with the
    exact tail): the reference's words, with ties everywhere (every frequency 1 or 2), runs without
    any cut point ("一一..." with the word "一一"), mixed rows and rows starting inside a chunk."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend

    monkeypatch.setattr(launchers, "CHUNK_BYTES", chunk)
    be = emulated_backend()
    rng = np.random.default_rng(chunk)
    for size in (60, 200):
        d = random_dictionary(rng, size)
        for freqs in (d.freqs, rng.integers(1, 3, len(d)), 1 + rng.permutation(len(d)) * 7919):
            segmenter = Segmenter(Dictionary(d.words, np.asarray(freqs, np.int64), int(np.sum(freqs)) + 1),
                                  compat=compat)
            texts = ["".join(rng.choice(HAN, int(rng.integers(0, 120)))) for _ in range(12)]
            texts += random_texts(rng, 20) + ["一" * 90, "a1" * 30 + "一" * 20]
            assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(texts), be)
    segmenter = Segmenter(Dictionary(["一一", "一二"], np.array([5, 5]), 11), compat=compat)
    assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(["一" * 99, "一二" * 50 + "一"]), be)


@pytest.mark.parametrize("compat", [None, "jieba"])
@pytest.mark.parametrize("words", [("一一",), ("一一", "一一一")])
def test_segment_rows_one_megabyte_line_without_cut_points(compat, words):
    """1 MB of 一 under the word 一一 (and 一一一): a word crosses every character boundary, so no
    anchor finds a cut point and each cuts at a forced cut with a frontier of two (three) positions.
    The emulated kernels give the Numba twin's words and no thread's work grows with the line
    (before forced cuts the line was one piece: a million steps on one thread)."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend

    freqs = np.array([5, 3][:len(words)], np.int64)
    segmenter = Segmenter(Dictionary(list(words), freqs, 11), compat=compat)
    line = "一" * ((1 << 20) // 3)
    batch = TextBatch.from_strings([line, "一二" * 500, line[:4001]])
    cpu = get_backend("cpu").op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, get_backend("cpu")))
    be = emulated_backend()
    got = run_segment_rows(segmenter, segment_rows_args(segmenter, batch, be), be)
    assert_arrays_equal(got, cpu)
    module = be.runtime.module("segment")
    steps = {name: module.get_function(name).last_max_steps for name in ROW_KERNELS}
    print("longest thread's steps on a 1 MB row without cut points:", steps)
    chunk = launchers.CHUNK_BYTES
    piece_work = 6 * chunk
    pieces = (1 << 20) // chunk + 1
    frontier = len(words) + 1  # the cut and the ends of the words crossing it
    # a piece (the run's first: up to a chunk and a half) solved once per frontier position
    assert steps["segment_pieces"] <= frontier * 1.5 * piece_work, steps
    for name in ("segment_marks", "segment_settle", "segment_finish", "segment_paths"):  # a solve and/or the walk
        assert steps[name] <= 1.5 * piece_work + frontier ** 2 * pieces, steps
    assert 0 < steps["segment_resolve"] <= 3 * frontier ** 2 * pieces + piece_work, steps  # 3 walks, <= 1 solve
    assert steps["segment_pieces"] >= chunk // 2


@pytest.mark.parametrize("compat", [None, "jieba"])
@pytest.mark.parametrize("chunk", [32, 48, 96])
def test_segment_rows_forced_cuts(monkeypatch, compat, chunk):
    """Lines where cut points are rare (a few characters, dictionaries of their runs, so words
    cross most boundaries): anchors cut at forced cuts with frontiers, pieces are settled by class
    tables or solved exactly, paths cross pieces through their frontiers; equal frequencies give
    exact ties between the frontier positions. The reference's words."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend

    monkeypatch.setattr(launchers, "CHUNK_BYTES", chunk)
    seen = {"forced": 0, "certain": 0, "exact": 0}
    launch = launchers.launch

    def counting_launch(function, grid, args):  # what segment_paths sees: the cuts' frontiers, the pieces' states
        launch(function, grid, args)
        if "segment_paths" in repr(function):
            front_n, slot_i = host(args[1]), host(args[2]).reshape(-1, 5)
            states = slot_i[:front_n.size, 4]
            seen["forced"] += int((front_n > 1).sum())
            seen["certain"] += int(((front_n > 1) & (states == 3)).sum())
            seen["exact"] += int(((front_n > 1) & (states == 1)).sum())

    monkeypatch.setattr(launchers, "launch", counting_launch)
    be = emulated_backend()
    rng = np.random.default_rng(1000 + chunk)
    alphabet = HAN[:3]
    for trial in range(6):
        words = sorted({"".join(rng.choice(alphabet, int(rng.integers(2, 4)))) for _ in range(6)})
        if trial % 3 == 0:
            freqs = np.ones(len(words), np.int64)
        else:
            freqs = rng.integers(1, 9, len(words)).astype(np.int64)
        d = Dictionary(words, freqs, int(freqs.sum()) + int(rng.integers(1, 5)))
        segmenter = Segmenter(d, compat=compat)
        texts = ["".join(rng.choice(alphabet, int(rng.integers(100, 700)))) for _ in range(4)]
        texts += ["一" * int(rng.integers(50, 400)), "一二" * 150 + "三", "ab1" * 40 + "一" * 60]
        assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(texts), be)
    assert seen["forced"] >= 10 and seen["certain"] > 0 and seen["exact"] > 0, seen


@pytest.mark.parametrize("compat", [None, "jieba"])
def test_segment_rows_forced_cuts_with_long_words(monkeypatch, compat):
    """Dictionary words of 129 to 270 bytes beside 一一 on runs of 一: anchors still cut at forced
    cuts (they did not while the longest word had 128 bytes or more: a run without cut points was
    one piece), pieces where such a word sits get class tables (they did not while a values-only
    solve kept 128 values: each was solved exactly in the run's walk). The reference's words."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 600)
    seen = {"forced": 0}
    launch = launchers.launch

    def counting_launch(function, grid, args):
        launch(function, grid, args)
        if "segment_paths" in repr(function):
            seen["forced"] += int((host(args[1]) > 1).sum())

    monkeypatch.setattr(launchers, "launch", counting_launch)
    be = emulated_backend()
    rng = np.random.default_rng(7 if compat else 8)
    for _ in range(3):
        long_word = "".join(rng.choice(["一", "丁"], int(rng.integers(43, 90)), p=[0.8, 0.2]))
        words = sorted(["一一", "一一一", "丁一", long_word])
        freqs = rng.integers(1, 9, len(words)).astype(np.int64)
        segmenter = Segmenter(Dictionary(words, freqs, int(freqs.sum()) + 7), compat=compat)
        assert segmenter.max_word_bytes >= 129
        texts = []
        for _ in range(3):
            parts = []
            for _ in range(int(rng.integers(2, 6))):
                parts.append("一" * int(rng.integers(50, 1500)))
                parts += [long_word] * (rng.random() < 0.6) + ["丁"] * (rng.random() < 0.3)
            texts.append("".join(parts))
        assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(texts), be)
    assert seen["forced"] >= 10, seen


def test_segment_rows_forced_cuts_past_wide_frontiers(monkeypatch):
    """Random runs of 一 and 丁 under up to 40 words of 2 to 7 of them: words cross nearly every
    boundary and a forced cut's frontier has up to 7 positions (within GT_FRONT_MAX = 8; while it
    was 4, many anchors tried the next character starts, GT_CUT_TRIES, instead of leaving their
    window uncut). The reference's words; 401 of the 433 anchors cut at a forced cut (399 with
    frontiers of at most 4 positions)."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 256)
    seen = {"forced": 0, "anchors": 0}
    launch = launchers.launch

    def counting_launch(function, grid, args):
        launch(function, grid, args)
        if "segment_paths" in repr(function):
            seen["forced"] += int((host(args[1]) > 1).sum())
            seen["anchors"] += host(args[1]).size

    monkeypatch.setattr(launchers, "launch", counting_launch)
    be = emulated_backend()
    rng = np.random.default_rng(5)
    for trial in range(8):
        alphabet = ["一", "丁"]
        words = {"".join(rng.choice(alphabet, int(rng.integers(2, 8)))) for _ in range(40)}
        words = sorted(words | {"一一", "丁丁", "一丁", "丁一"})
        freqs = rng.integers(1, 9, len(words)).astype(np.int64)
        segmenter = Segmenter(Dictionary(words, freqs, int(freqs.sum()) + 3), compat=None if trial % 2 else "jieba")
        texts = ["".join(rng.choice(alphabet, int(rng.integers(500, 3000)))) for _ in range(3)]
        assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(texts), be)
    assert seen["anchors"] == 433 and seen["forced"] >= 390, seen


@pytest.mark.parametrize("compat", [None, "jieba"])
def test_segment_rows_one_megabyte_news_line(compat):
    """The Han of zh-sogou-news as one unpunctuated 1 MB line, with a dictionary of its two- and
    three-character pieces (real frequencies: near ties, binade edges): the Numba twin's words,
    and every kernel's longest thread within a few chunks of steps (the run's walk of one step
    per piece, the zones of no piece solved exactly beyond one)."""
    import re

    import gpu_text.cuda_ops.segment as launchers
    from tests.conftest import shared_data
    from tests.emulated_backend import emulated_backend
    from tests.test_launch_counts import sample_dictionary

    folder = shared_data("zh-sogou-news")
    text, lines = [], []
    for path in sorted(folder.glob("*.txt")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            lines.append(line)
            text += re.findall("[\u4e00-\u9fff]+", line)
        if sum(map(len, text)) * 3 > (1 << 20):
            break
    line = "".join(text)[:(1 << 20) // 3]
    segmenter = Segmenter(sample_dictionary(lines[:2000]), compat=compat)
    batch = TextBatch.from_strings([line])
    cpu = get_backend("cpu").op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, get_backend("cpu")))
    be = emulated_backend()
    assert_arrays_equal(run_segment_rows(segmenter, segment_rows_args(segmenter, batch, be), be), cpu)
    module = be.runtime.module("segment")
    steps = {name: module.get_function(name).last_max_steps for name in ROW_KERNELS}
    print("longest thread's steps on a 1 MB news line:", steps)
    chunk = launchers.CHUNK_BYTES
    piece_work = 6 * chunk
    walk = 2 * ((1 << 20) // chunk + 1)
    assert max(steps.values()) <= walk + piece_work, steps


def news_han(megabytes: int) -> tuple[str, list[str]]:
    """The Han of zh-sogou-news as one unpunctuated line of about ``megabytes`` MB, and the lines read."""
    import re

    from tests.conftest import shared_data

    text, lines = [], []
    for path in sorted(shared_data("zh-sogou-news").glob("*.txt")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            lines.append(line)
            text += re.findall("[\u4e00-\u9fff]+", line)
        if sum(map(len, text)) * 3 > megabytes << 20:
            break
    return "".join(text)[:(megabytes << 20) // 3], lines


def resolve_walk(monkeypatch, kind: str, megabytes: int) -> dict:
    """One line of about ``megabytes`` MB (``kind``: 一 under 一一, every cut forced with a frontier of
    two positions; or the Han of zh-sogou-news with its own two- and three-character words) through
    the emulated kernels, checked against the Numba twin: segment_resolve's and segment_pieces' longest
    thread, the pieces solved exactly in the run's walk, the anchors and their group."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend
    from tests.test_launch_counts import sample_dictionary

    if kind == "news":
        line, lines = news_han(megabytes)
        segmenter = Segmenter(sample_dictionary(lines[:2000]), compat="jieba")
    else:
        line = "一" * ((megabytes << 20) // 3)
        segmenter = Segmenter(Dictionary(["一一"], np.array([5]), 11), compat=None)
    states = {}
    launch = launchers.launch

    def reading_launch(function, grid, args):  # the pieces' states after segment_resolve
        if "segment_finish" in repr(function):
            states["slot"] = host(args[13]).reshape(-1, 5)[:, 4].copy()
        launch(function, grid, args)

    monkeypatch.setattr(launchers, "launch", reading_launch)
    batch = TextBatch.from_strings([line])
    cpu = get_backend("cpu").op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, get_backend("cpu")))
    be = emulated_backend()
    assert_arrays_equal(run_segment_rows(segmenter, segment_rows_args(segmenter, batch, be), be), cpu)
    module = be.runtime.module("segment")
    pieces = -(-len(line.encode()) // launchers.CHUNK_BYTES)  # the anchors
    return {"steps": module.get_function("segment_resolve").last_max_steps,
            "pieces_steps": module.get_function("segment_pieces").last_max_steps,
            "solved": int((states["slot"] == 1).sum()) - 1,  # in the walk (beside the run's last piece)
            "pieces": pieces, "group": launchers._group_anchors(pieces)}


@pytest.mark.parametrize("kind", ["forced cuts", "news"])
def test_segment_resolve_walk_without_a_step_per_piece(monkeypatch, kind):
    """Lines of 2 and 8 MB (1,024 and 4,096 pieces): the Numba twin's words, and segment_resolve's
    longest thread no longer steps through every piece: its blocks scan the pieces' table steps as
    max-plus matrices (GT_SEG_FRONT square, 64 steps a product, at most 2 log2(tiles) + 16 products
    a thread) and the run's walk takes a step per segment (about a binade each). No piece is solved
    exactly in the walk. Measured: 1,111 -> 1,371 steps (forced cuts) and 1,174 -> 1,562 (news) from
    2 to 8 MB, mostly the scan's products; the guess walks of about sqrt(pieces) a segment took 352 ->
    704 and 160 -> 320 (4,385 on 32 MB of 一), the walk of a step per piece 24,562 at 8 MB and the
    exact solves 15,102 on the news line. segment_pieces' longest thread is a piece's solve (21,503
    and 9,905 steps; its walk of a step per piece took 24,562 and 12,285)."""
    import gpu_text.cuda_ops.segment as launchers

    frontier = 1 if kind == "news" else 2
    small, large = resolve_walk(monkeypatch, kind, 2), resolve_walk(monkeypatch, kind, 8)
    print(f"segment_resolve's longest thread ({kind}): 2 MB {small}, 8 MB {large}")
    assert small["solved"] == large["solved"] == 0, (small, large)
    products = launchers.SEG_FRONT ** 2 * (16 + 2 * (large["pieces"] // launchers.BLOCK).bit_length())
    for walk in (small, large):  # the scan's products and a step per segment, far below a step per piece
        assert 0 < walk["steps"] <= products + 256 < walk["pieces"] * 2, walk
    # four times the pieces: two more levels of tiles (up to 2 x 64 steps each) and a few binades
    assert large["steps"] <= small["steps"] + 8 * launchers.SEG_FRONT ** 2, (small, large)
    # a piece's solve (per frontier position), below the walk of a step per piece it replaced
    chunk = launchers.CHUNK_BYTES
    assert large["pieces_steps"] <= frontier * 1.5 * 6 * chunk
    assert large["pieces_steps"] < {"forced cuts": 24562, "news": 12285}[kind]


@pytest.mark.parametrize("compat", [None, "jieba"])
@pytest.mark.parametrize("long_chars", [30, 45])
def test_segment_rows_long_dictionary_words(monkeypatch, compat, long_chars):
    """A dictionary word of 90 or 135 bytes (class solves keep the last GT_RING values; while they kept
    128, a piece with the 135-byte word got no class table and was solved exactly in turn): the
    reference's words."""
    import gpu_text.cuda_ops.segment as launchers
    from tests.emulated_backend import emulated_backend

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 256)
    rng = np.random.default_rng(long_chars)
    d = random_dictionary(rng, 80)
    long_word = "".join(rng.choice(HAN, long_chars))
    words = sorted(set(d.words) | {long_word})
    freqs = rng.integers(1, 30, len(words)).astype(np.int64)
    segmenter = Segmenter(Dictionary(words, freqs, int(freqs.sum()) + 3), compat=compat)
    texts = ["".join(rng.choice(HAN, 3000)) + long_word + "".join(rng.choice(HAN, 2000)) for _ in range(2)]
    assert_segment_rows_like_reference(segmenter, TextBatch.from_strings(texts), emulated_backend())
