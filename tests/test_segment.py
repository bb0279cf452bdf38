"""DictCut segmentation: seed vectors, dictionary parsing, jieba compatibility, batching."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_text.segment import Dictionary, DictionaryError, Segmenter, load_dictionary, parse_dictionary


def dictionary(pairs: dict[str, int]) -> Dictionary:
    return Dictionary(list(pairs), np.array(list(pairs.values()), np.int64), sum(pairs.values()))


def cut(seg: Segmenter, text: str, backend) -> list[str]:
    return seg.segment([text], backend).words()[0]


def test_seed_vectors(backend):
    assert cut(Segmenter(), "你好世界", backend) == ["你", "好", "世", "界"]
    seg = Segmenter(dictionary({"他": 50, "是": 40, "英国": 80, "英国人": 100, "人": 30}))
    assert cut(seg, "他是英国人Tom", backend) == ["他", "是", "英国人", "Tom"]
    seg = Segmenter(dictionary({"你好": 50, "世界": 50}))
    assert cut(seg, "你好，世界！", backend) == ["你好", "，", "世界", "！"]
    seg = Segmenter(dictionary({"我们": 8, "在": 6, "学习": 7, "人工智能": 10, "人工": 3, "智能": 3,
                                "我": 1, "们": 1, "学": 1, "习": 1, "人": 1, "工": 1, "智": 1, "能": 1}))
    assert cut(seg, "我们在学习人工智能", backend) == ["我们", "在", "学习", "人工智能"]
    assert cut(seg, "未知𠀀", backend) == ["未", "知", "𠀀"]
    assert seg.segment([""], backend).words() == [[]]


def test_book_nanjing_weights(backend):
    """The book's weights: 南京|市|长江|大桥 (-10.92) beats 南京|市长|江大桥 (-12.78)."""
    weights = {"南京": -2.59, "市": -2.30, "长江": -2.81, "大桥": -3.22, "市长": -4.20, "江大桥": -5.99}
    total = 10**9
    seg = Segmenter(Dictionary(list(weights), np.array([round(math.exp(w) * total) for w in weights.values()]), total))
    assert cut(seg, "南京市长江大桥", backend) == ["南京", "市", "长江", "大桥"]


def test_no_cap_on_prefix_matches(backend):
    word = "".join(chr(0x4E00 + k) for k in range(21))
    pairs = {word[:k]: 1 for k in range(1, 21)}
    pairs[word] = 10**6
    assert cut(Segmenter(dictionary(pairs)), word + "。", backend) == [word, "。"]


def test_presplit_of_mixed_text(backend):
    seg = Segmenter(dictionary({"编号": 10}))
    assert cut(seg, "他是英国人Tom，编号123", backend) == ["他", "是", "英", "国", "人", "Tom", "，", "编号", "123"]
    assert cut(seg, "  don't   stop 'til  ", backend) == ["don't", "stop", "'", "til"]


def test_ties_dictcut_shortest_jieba_longest(backend):
    # every log(f / total) is 0, so 一二 and 一 + 二 score the same: a tie
    d = Dictionary(["一", "二", "一二"], np.array([1, 1, 1]), 1)  # every log(f/total) == 0
    assert cut(Segmenter(d), "一二", backend) == ["一", "二"]
    assert cut(Segmenter(d, compat="jieba"), "一二", backend) == ["一二"]


def test_jieba_mode_frequency_zero_words_are_no_edges(backend):
    d = Dictionary(["一二", "一", "二"], np.array([0, 5, 5]), 10)
    assert cut(Segmenter(d, compat="jieba"), "一二", backend) == ["一", "二"]


def test_batches_give_the_same_words_as_one_by_one(backend):
    seg = Segmenter(dictionary({"中国": 30, "人民": 20, "中国人": 10, "民": 2, "人": 5}))
    texts = ["中国人民", "", "  ", "人民中国abc中国人", "x", "中国 人民\t中国人民共和国"] * 7
    together = seg.segment(texts, backend).words()
    assert together == [cut(seg, t, backend) for t in texts]


def test_dictionary_formats_and_errors(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("南京\t751\n市 1003 n\n\n长江 602\n", encoding="utf-8")
    d = load_dictionary(path)
    assert d.words == ["南京", "市", "长江"] and d.freqs.tolist() == [751, 1003, 602] and d.total == 2356
    path.write_text("好\t1\n坏\tx\n", encoding="utf-8")
    with pytest.raises(DictionaryError, match=r"d.txt:2: frequency 'x' is not an integer"):
        load_dictionary(path)
    assert load_dictionary(path, on_error="skip").skipped == [f"{path}:2: frequency 'x' is not an integer"]
    path.write_bytes(b"\xff\xfe\t3\n")
    with pytest.raises(DictionaryError, match=":1: word"):
        load_dictionary(path)
    with pytest.raises(DictionaryError, match="negative"):
        parse_dictionary(["a\t-1"])


@pytest.mark.parametrize("compat", [None, "jieba"])
def test_word_ends_matches_segment_on_han_runs(backend, compat):
    """The public lattice of given spans (what the PreTokenizer cuts Han runs with) ends the words
    where :meth:`Segmenter.segment` does."""
    from gpu_text.backend import get_backend

    seg = Segmenter(dictionary({"我们": 8, "在": 6, "学习": 7, "人工智能": 10, "人工": 3, "智能": 3, "南京": 5}),
                    compat=compat)
    runs = ["我们在学习人工智能", "南京", "未知的词", "学"]
    raw = "".join(runs).encode()
    bounds = np.cumsum([0] + [len(r.encode()) for r in runs])
    xp = get_backend(backend).xp
    ends = seg.word_ends(xp.asarray(np.frombuffer(raw, np.uint8)), xp.asarray(bounds[:-1]), xp.asarray(bounds[1:]),
                         backend).to_pylist()
    for run, start, run_ends in zip(runs, bounds[:-1].tolist(), ends):
        words = cut(seg, run, backend)
        assert [e - start for e in run_ends] == np.cumsum([len(w.encode()) for w in words]).tolist()


# -- windows: long runs solved piecewise give exactly the words of the whole run ---------------------

WINDOW_HAN = [chr(0x4E00 + k) for k in range(6)]


def tie_dictionary(rng: np.random.Generator) -> Dictionary:
    """Few characters, many overlapping words and small equal frequencies: many tied paths, and
    float sums whose rounding depends on the order they are added in."""
    words = sorted({"".join(rng.choice(WINDOW_HAN, int(rng.integers(1, 4)))) for _ in range(25)})
    freqs = rng.integers(0, 4, len(words)).astype(np.int64)
    return Dictionary(words, freqs, int(freqs.sum()) + int(rng.integers(0, 3)))


def window_texts(rng: np.random.Generator, count: int) -> list[bytes]:
    pieces = WINDOW_HAN * 4 + ["a", "1", " ", "，", "𠀀", "A"]
    texts = []
    for _ in range(count):
        text = "".join(pieces[k] for k in rng.integers(0, len(pieces), int(rng.integers(0, 60)))).encode()
        if rng.random() < 0.2:
            at = int(rng.integers(0, len(text) + 1))
            text = text[:at] + bytes(rng.choice([0x80, 0xBF, 0xE4, 0xB8], int(rng.integers(1, 6)))) + text[at:]
        texts.append(text)
    return texts


def assert_same_segmentation(a, b) -> None:
    for x, y in zip((a.starts, a.ends, a.word_ids), (b.starts, b.ends, b.word_ids)):
        assert x.to_pylist() == y.to_pylist()


@pytest.mark.parametrize("compat", [None, "jieba"])
@pytest.mark.parametrize("seed", range(4))
def test_windows_give_the_words_of_the_whole_run(backend, compat, seed):
    rng = np.random.default_rng(seed)
    d = tie_dictionary(rng)
    texts = window_texts(rng, 12) + ["一二" * 20, ("一" * 7 + "，") * 3]
    whole = Segmenter(d, compat=compat).segment(texts, backend)
    for window in (1, 4, 9) if backend.name == "cpu" else (5,):  # a launch per window: the emulator is slow
        assert_same_segmentation(Segmenter(d, compat=compat, window_bytes=window).segment(texts, backend), whole)


@pytest.mark.parametrize("compat", [None, "jieba"])
def test_windows_of_arbitrary_byte_spans(backend, compat):
    """``word_ends`` on spans of any bytes (stray continuation bytes, truncated sequences)."""
    rng = np.random.default_rng(7)
    d = tie_dictionary(rng)
    raw = b"".join(window_texts(rng, 6)) + bytes(rng.integers(0, 256, 120, dtype=np.uint8)) + b"\x80" * 9 + "一二".encode()
    xp = backend.xp
    data = xp.asarray(np.frombuffer(raw, np.uint8))
    cuts = np.sort(rng.integers(0, len(raw), 12))
    starts, ends = xp.asarray(np.concatenate([[0], cuts])), xp.asarray(np.concatenate([cuts, [len(raw)]]))
    whole = Segmenter(d, compat=compat).word_ends(data, starts, ends, backend).to_pylist()
    for window in (1, 3, 20) if backend.name == "cpu" else (6,):
        assert Segmenter(d, compat=compat, window_bytes=window).word_ends(data, starts, ends, backend).to_pylist() == whole


def test_a_run_without_cut_points_is_solved_whole():
    """Every boundary of 一二一二… is crossed by a word: the window grows to the whole run."""
    d = Dictionary(["一", "二", "一二", "二一"], np.array([1, 1, 1, 1]), 1)  # every weight 0: all paths tie
    text = "一二" * 50
    for compat in (None, "jieba"):
        want = Segmenter(d, compat=compat).cut(text)
        assert Segmenter(d, compat=compat, window_bytes=4).cut(text) == want


def test_window_bytes_is_validated():
    for bad in (0, -1, 1.5, True, "8"):
        with pytest.raises(ValueError, match="window_bytes"):
            Segmenter(window_bytes=bad)
