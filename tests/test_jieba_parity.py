"""compat="jieba" equals jieba.cut(line, HMM=False) with jieba's own dictionary on whole lines of
every shared corpus (Chinese news, novels, People's Daily; English too), on every backend.

"Equals" is defined as: our words are jieba's tokens less its pure-whitespace ones (jieba yields
every whitespace character, or ``\\r\\n``, as a token of its own; gpu_text drops whitespace).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu_text.segment import Segmenter, load_dictionary
from tests.conftest import require, shared_data

# (corpus folder, lines taken from each file): every line of the smaller corpora; of Sogou news
# (28 MB, jieba alone needs about a minute for all of it) the first 4,000 lines of each of its
# five files, 20,000 lines.
CORPORA = [("zh-sogou-news", 4000), ("zh-classic-novels", None), ("zh-people-daily-199801", None),
           ("en-kjv", None), ("en-gutenberg", None)]
# mixed text: jieba's block characters, full-width digits, Han after U+9FD5, Python-only whitespace
MIXED = ["A股大涨，KL178次列车和C2C模式；６４１人 hello  world\r\n", "C++ 和 C# 的 3.5% 增长-率 a_b&c",
         "x\x1cy\u3000z\u1680w\x85v", "鿖鿗中国\u9fd5人", "don't stop 'til", "", "   ", "ＡＢＣ１２３abc123你好"]


def corpus_lines(corpus: str, per_file: int | None) -> list[str]:
    folder = shared_data(corpus)
    paths = sorted(p for p in folder.glob("*.txt") if p.name != "SOURCE.txt")
    if corpus == "zh-people-daily-199801":
        paths = [folder / "199801_segmented_words.txt"]  # the month's raw text once its spaces are removed
    lines: list[str] = []
    for path in paths:
        raw = path.read_bytes().split(b"\n")[:per_file]
        text = [line.decode("utf-8") for line in raw]  # every shared corpus is valid UTF-8
        lines += [line.replace(" ", "") for line in text] if corpus == "zh-people-daily-199801" else text
    return lines


@pytest.fixture(scope="module")
def jieba_pair():
    jieba = require("jieba")
    dict_path = Path(jieba.__file__).parent / "dict.txt"
    tokenizer = jieba.Tokenizer(str(dict_path))
    tokenizer.initialize()
    dictionary = load_dictionary(dict_path)
    return tokenizer, Segmenter(dictionary, compat="jieba"), Segmenter(dictionary, compat="jieba", window_bytes=5)


def jieba_words(tokenizer, line: str) -> list[str]:
    return [word for word in tokenizer.cut(line, HMM=False) if not word.isspace()]


def assert_parity(tokenizer, segmenter: Segmenter, lines: list[str], backend) -> None:
    ours = segmenter.segment(lines, backend=backend).words()
    differing = [(line, got) for line, got in zip(lines, ours) if got != jieba_words(tokenizer, line)]
    assert not differing, f"{len(differing)} of {len(lines)} lines differ, e.g. {differing[:2]}"


@pytest.mark.slow
@pytest.mark.parametrize(("corpus", "per_file"), CORPORA)
def test_jieba_parity_on_whole_lines(jieba_pair, corpus, per_file):
    tokenizer, segmenter, _ = jieba_pair
    assert_parity(tokenizer, segmenter, corpus_lines(corpus, per_file), "cpu")


def test_jieba_parity_on_mixed_text_on_every_backend(jieba_pair, backend):
    tokenizer, segmenter, windowed = jieba_pair
    assert_parity(tokenizer, segmenter, MIXED, backend)
    assert_parity(tokenizer, windowed, MIXED, backend)  # every run solved in windows of a few bytes


@pytest.mark.slow
def test_jieba_parity_on_corpus_lines_on_every_backend(jieba_pair, backend):
    """A sample of real lines through the kernels of every backend (the emulator is slow)."""
    tokenizer, segmenter, _ = jieba_pair
    lines = corpus_lines("zh-sogou-news", 40) + corpus_lines("en-kjv", 100)
    assert_parity(tokenizer, segmenter, lines, backend)
