"""The PreTokenizer: the seed digest's test vectors, the API, and parity with the seed's own
pre-tokenizer (``piece_tokenizer.PreTokenizer``) on real and generated text."""
from __future__ import annotations

from itertools import islice
from pathlib import Path

import numpy as np
import pytest

from gpu_text.segment import Dictionary
from gpu_text.tokenizer.pre_tokenizer import PreTokenizer, PreTokens, pre_tokenize_strings
from tests.conftest import require, shared_data

hypothesis = require("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

S = "\u2581"


def cut(text: str, **options) -> list[str]:
    return PreTokenizer(**options).pre_tokenize_strings([text])[0]


def bars(text: str) -> list[str]:
    """A digest vector written with spaces between the pre-tokens."""
    return text.replace("▁", S).split(" ")


EXAMPLE = "Hello,▁World!▁don't▁你好，世界。123abc"
DIGEST = [  # (options, input, expected pre-tokens) from the seed digest
    ({}, EXAMPLE, bars("Hello , ▁World ! ▁don 't ▁ 你好 ， 世界 。 123 abc")),
    ({"split": "isolate"}, EXAMPLE, bars("Hello , ▁ World ! ▁ don't ▁ 你好 ， 世界 。 123 abc")),
    ({"digits": "split"}, EXAMPLE, bars("Hello , ▁World ! ▁don 't ▁ 你好 ， 世界 。 1 2 3 abc")),
    ({"cn": "char"}, EXAMPLE, bars("Hello , ▁World ! ▁don 't ▁ 你 好 ， 世 界 。 123 abc")),
    ({"split": "isolate", "digits": "split", "cn": "char"}, "你好123▁hi", ["你", "好", "1", "2", "3", "▁", "hi"]),
    ({}, "Hello,▁世界！123", ["Hello", ",", "▁", "世界", "！", "123"]),
    ({}, "Hello,▁world▁你好123", bars("Hello , ▁world ▁ 你好 123")),
    ({"split": "isolate", "digits": "split", "cn": "char"}, "Hello,▁world▁你好123", bars("Hello , ▁ world ▁ 你 好 1 2 3")),
    ({}, "hello▁world", ["hello", "▁world"]),
    ({}, "a▁▁b", ["a", "▁", "▁b"]),
    ({}, "a▁▁▁b", ["a", "▁", "▁", "▁b"]),
    ({}, "hello▁,", ["hello", "▁,"]),
    ({}, "hello,world", ["hello", ",world"]),
    ({}, "hello,,world", ["hello", ",,", "world"]),
    ({}, "▁,a", ["▁,", "a"]),
    ({}, "hello123world", ["hello", "123", "world"]),
    ({}, "year▁2024", ["year", "▁", "2024"]),
    ({}, "你好，世界", ["你好", "，", "世界"]),
    ({}, "▁你好", ["▁", "你好"]),
    ({}, "hi🙂bye", ["hi", "🙂bye"]),
    ({}, "$100", ["$", "100"]),
    ({}, "$hello", ["$hello"]),
    ({}, "▁$100", ["▁$", "100"]),
    ({}, "100%", ["100", "%"]),
    ({}, "▁24h", ["▁", "24", "h"]),
    ({}, "they'll", ["they", "'ll"]),
    ({}, "hello▁,world", ["hello", "▁,", "world"]),
    ({"split": "isolate"}, "▁Hello,▁World!", bars("▁ Hello , ▁ World !")),
    ({"split": "isolate"}, "▁don't", ["▁", "don't"]),
    ({"split": "isolate"}, "▁你好，世界。", bars("▁ 你好 ， 世界 。")),
    ({"cn": "char"}, "Tom▁他是英国人Bat", bars("Tom ▁ 他 是 英 国 人 Bat")),
    ({"cn": "char"}, "你好▁world", bars("你 好 ▁world")),
    ({"cn": "char"}, "a▁▁世界", bars("a ▁ ▁ 世 界")),
    ({}, "2024年8月,GPT-4▁model▁release▁苹果公司", "2024|年|8|月|,GPT|-|4|▁model|▁release|▁|苹果公司".split("|")),
    ({}, "I've▁she's", ["I", "'ve", "▁she", "'s"]),
    ({"split": "isolate"}, "I've▁she's", ["I've", "▁", "she's"]),
    ({}, "ＡＢＣ１２３", ["ＡＢＣ", "１２３"]),
    # the book's regex-2 vectors that the PreTokenizer patterns share (space → ▁)
    ({}, "Hello,▁World!", ["Hello", ",", "▁World", "!"]),
    ({}, "don't", ["don", "'t"]),
    ({}, "24h", ["24", "h"]),
    ({}, "hello▁▁world", ["hello", "▁", "▁world"]),
    ({}, "▁▁hello", ["▁", "▁hello"]),
    ({}, "你好，世界！", ["你好", "，", "世界", "！"]),
    ({}, "U.S.A.", ["U", ".S", ".A", "."]),
    ({}, "3.14", ["3", ".", "14"]),
    ({}, "C++", ["C", "++"]),
    ({}, "(test)", ["(test", ")"]),
    ({}, "a1b2c3", ["a", "1", "b", "2", "c", "3"]),
]


@pytest.mark.parametrize("options, text, expected", DIGEST, ids=[f"{o}-{t}" for o, t, _ in DIGEST])
def test_digest_vectors(options, text, expected):
    assert cut(text, **options) == expected


@pytest.mark.parametrize("options, text, expected", DIGEST[:8], ids=[f"{o}" for o, _, _ in DIGEST[:8]])
def test_digest_vectors_match_the_oracle(options, text, expected):
    assert oracle_for(**options)(text.replace(S, " ")) == expected


def test_tab_and_newline_are_punctuation():
    assert cut("a\tb\n▁c") == ["a", "\tb", "\n", "▁c"]
    assert cut("a\r\nb", split="isolate") == ["a", "\r", "\n", "b"]


def test_whitespace_split_starts_a_pre_token_at_every_space_symbol():
    assert cut("▁Hello,▁world!▁你好123", split="whitespace") == ["▁Hello,", "▁world!", "▁你好123"]
    assert cut("ab▁▁c▁", split="whitespace") == ["ab", "▁", "▁c", "▁"]
    assert cut("▁abc123d▁1", split="whitespace", digits="split") == ["▁abc", "1", "2", "3", "d", "▁", "1"]


def test_dictionary_cut():
    words = ["我们", "在", "学习", "人工智能", "人工", "智能", "我", "们", "学", "习", "人", "工", "智", "能"]
    freqs = np.array([8, 6, 7, 10, 3, 3] + [1] * 8, np.int64)
    pre = PreTokenizer(cn=Dictionary(words, freqs, int(freqs.sum())))
    assert pre.pre_tokenize_strings(["我们在学习人工智能", "未知𠀀▁ok", ""]) == [
        ["我们", "在", "学习", "人工智能"], ["未", "知", "𠀀", "▁ok"], []]


def test_dictionary_cut_matches_the_oracle_on_the_seed_vector(tmp_path):
    path = tmp_path / "cn.tsv"
    path.write_text("我们\t8\n在\t6\n学习\t7\n人工智能\t10\n人工\t3\n智能\t3\n" + "".join(f"{c}\t1\n" for c in "我们学习人工智能"))
    text = "我们在学习人工智能,AI未知𠀀▁2024年"
    assert cut(text, cn=str(path)) == oracle_for(cn=str(path))(text.replace(S, " "))


def test_pre_tokens_cover_every_byte_with_byte_offsets():
    texts = ["ab▁c", "", "\xff", "你好", "x\x00y"]
    result = PreTokenizer().pre_tokenize(texts + [b"\xe4\xbd"], backend="cpu")
    assert isinstance(result, PreTokens)
    for raw, starts, ends in zip(result.texts.to_bytes_list(), result.starts.to_pylist(), result.ends.to_pylist()):
        assert starts == ([0] + ends[:-1] if raw else []) and (ends[-1:] or [0]) == [len(raw)]
    assert result.starts.to_pylist()[-1] == [0]  # two malformed bytes: one OTHER each, one punctuation run


def test_options_are_checked():
    for bad in ({"split": "bpe"}, {"digits": "no"}, {"space": "ab"}, {"split": "whitespace", "cn": "char"}):
        with pytest.raises(ValueError):
            PreTokenizer(**bad)
    assert "isolate" in repr(PreTokenizer(split="isolate"))
    assert pre_tokenize_strings(["a▁▁b"], space="_") == [["a", "▁▁", "b"]]  # ▁ is then punctuation
    assert pre_tokenize_strings(["a_b▁"], space="_") == [["a", "_b", "▁"]]


@pytest.mark.parametrize("text, count", [("a" * (1 << 20), 1), ("你" * (1 << 18) + "a", 2), ("1" * (1 << 20), 1),
                                         (S * (1 << 18), 1 << 18)], ids=["letters", "han", "digits", "spaces"])
def test_a_one_megabyte_run_splits(text, count):
    """Correctness on 1 MB runs; their speed is measured in benchmarks/tokenize.py."""
    result = PreTokenizer().pre_tokenize([text], backend="cpu")
    assert result.ends.values[-1] == len(text.encode()) and result.starts.values.size == count


# --- parity with the seed's pre-tokenizer -----------------------------------------------------

MODES = [(split, digits, cn) for split in ("word", "isolate") for digits in ("keep", "split") for cn in (None, "char")]


def oracle_for(split: str = "word", digits: str = "keep", cn: str | None = None):
    """piece_tokenizer's pre-tokenizer with no character mapping; ``reconstruct`` turns every space
    into ``▁`` without collapsing or stripping, which is exactly our input's convention."""
    piece_tokenizer = require("piece_tokenizer")
    seed_cn = {None: "", "char": "no"}.get(cn, cn)
    return piece_tokenizer.PreTokenizer(normalize="no", split=split, num=digits, cn=seed_cn, reconstruct=True).tokenize


def assert_oracle_parity(lines: list[str], split: str, digits: str, cn: str | None) -> None:
    oracle = oracle_for(split, digits, cn)
    got = PreTokenizer(split, digits, cn).pre_tokenize_strings([line.replace(" ", S) for line in lines])
    mismatches = [(line, mine, oracle(line)) for line, mine in zip(lines, got) if mine != oracle(line)]
    assert not mismatches, f"{len(mismatches)} of {len(lines)} lines differ, first: {mismatches[0]}"


def corpus_lines(relative: str, count: int, glob: str = "*.txt") -> list[str]:
    lines: list[str] = []
    for path in sorted(shared_data(relative).glob(glob)):
        if path.name == "SOURCE.txt":
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines += [line.rstrip("\n") for line in islice(f, count - len(lines))]
        if len(lines) >= count:
            break
    return lines


CORPORA = {"zh-sogou-news": 3000, "en-kjv": 4000, "en-gutenberg": 4000, "zh-classic-novels": 2000}


@pytest.mark.parametrize("corpus", CORPORA)
def test_oracle_parity_on_corpora(corpus):
    lines = corpus_lines(corpus, CORPORA[corpus])
    for mode in MODES:
        assert_oracle_parity(lines, *mode)


ALPHABET = "ab Zé Ж ω ア 한 ल ＡＢ 你好世𠀀 19 ０９ ▁ ▁ ' ' , . ! ？ 。 $ - \t \n \r 🙂 😀 \u3000 \xa0 ① ²".split(" ") + [" ", " "]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join), min_size=1, max_size=6),
       st.sampled_from(MODES))
def test_oracle_parity_on_generated_text(lines, mode):
    assert_oracle_parity(lines, *mode)


def test_oracle_parity_with_a_large_dictionary():
    """The seed's own 350,000-word Cn dictionary on news text: DictCut's backward Viterbi against
    the seed's forward one (they may differ only on exactly tied paths)."""
    piece_tokenizer = require("piece_tokenizer")
    path = Path(piece_tokenizer.__file__).parent / "models" / "Summer-Tokenizer.dict.txt"
    if not path.exists():
        pytest.skip(f"the seed's dictionary {path} is not installed")
    lines = corpus_lines("zh-sogou-news", 1000)
    assert_oracle_parity(lines, "word", "keep", str(path))
