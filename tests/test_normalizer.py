"""The normalizer: PieceTokenizer's examples, the options, the alignment, and parity with sentencepiece
(its own normalizer is the oracle) on real and adversarial text."""
from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_text.tokenizer.normalizer import (
    CHARSMAP_DIR,
    RULE_NAMES,
    Normalizer,
    decode_precompiled_charsmap,
    load_charsmap,
)
from gpu_text.tokenizer.sentencepiece_model import read_normalizer_spec
from tests.conftest import require, shared_data

spm = require("sentencepiece")
require("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SPM_RULES = {"NFKC": "nfkc", "NMT_NFKC": "nmt_nfkc", "NFKC_CF": "nfkc_cf", "NMT_NFKC_CF": "nmt_nfkc_cf"}
ADVERSARIAL = [
    "", " ", "   ", "\t\n", "①②③", "ＨＥＬＬＯ　ｗｏｒｌｄ", "HELLO", "ß ẞ ǅ ﬁ ﬀ", "e\u0301 a\u0308\u0304 ḁ\u0323",
    "\u1100\u1161\u11a8 한국어", "😀👍🏽👨‍👩‍👧 🇨🇳", "\u200b\u200c\u200d\ufeff x", "a\u00a0\u00a0b\u3000c", "x\u00a8 \u00b4",
    "\ufdfa\ufdfb", "㍿ ㌀ ℡ ㈱", "½ ⁴ ₂ Ⅻ ⅻ", "Ｉｎｔｅｒｎｅｔ１２３", "ℌ ℍ ℝ 𝔸 𝕒", "ﾊﾝｶｸ ｶﾀｶﾅ", "a▁b ▁ ▁▁",
    "\u0000\u0001\u007f\u0085\u2028\u2029", "  lead and trail  ", "İstanbul ΣΑΣ ς", "\U0010ffff \U000e0001",
]
INVALID = [b"\xff", b"a\xffb", b"\xe4\xbd", b"\xe4\xbd a", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
           "a\ud800b\udfff".encode("utf-8", "surrogatepass"), b"\x80\x80 \xbf", b" \xff "]


@functools.lru_cache(maxsize=None)
def oracle(rule: str, **flags) -> object:
    return spm.SentencePieceNormalizer(rule_name=SPM_RULES.get(rule, "identity"), **flags)


def oracle_outputs(rule: str, texts: list[bytes], **flags) -> list[bytes]:
    normalizer = oracle(rule, **flags)
    return [normalizer.normalize(t) for t in texts]


@functools.lru_cache(maxsize=None)
def normalizer(rule: str, **flags) -> Normalizer:
    return Normalizer(rule, **({"add_dummy_prefix": True} | flags))  # sentencepiece's defaults


def ours(rule: str, texts: list[bytes], **flags) -> list[bytes]:
    return normalizer(rule, **flags).normalize(texts, "cpu").text.to_bytes_list()


def assert_parity(rule: str, texts: list[bytes], **flags) -> None:
    want = oracle_outputs(rule, texts, **flags)
    got = ours(rule, texts, **flags)
    differing = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not differing, f"{len(differing)} of {len(texts)} differ from sentencepiece, e.g. {differing[:3]}"


# ------------------------------------------------------------------------- seed examples


def test_seed_examples():
    assert Normalizer("NMT_NFKC").normalize_strings(["①②③"]) == ["123"]
    assert Normalizer("NFKC_CF").normalize_strings(["HELLO"]) == ["hello"]
    assert Normalizer(reconstruct=True).normalize_strings(["  Hello   World  "]) == ["▁▁Hello▁▁▁World▁▁"]
    assert Normalizer().normalize_strings(["  Hello   World  ", b"\xff"]) == ["Hello▁World", "\ufffd"]


def test_options():
    text = ["  a  b  "]
    assert Normalizer(escape_whitespaces=False).normalize_strings(text) == ["a b"]
    assert Normalizer(remove_extra_whitespaces=False).normalize_strings(text) == ["▁▁a▁▁b▁▁"]
    assert Normalizer(add_dummy_prefix=True).normalize_strings(text + ["   ", ""]) == ["▁a▁b", "", ""]
    assert Normalizer(space="_").normalize_strings(text) == ["a_b"]
    assert Normalizer(space="<>", add_dummy_prefix=True).normalize_strings(["x  y <>"]) == ["<>x<>y<><>"[:-4]]


def test_names_and_errors():
    assert [Normalizer(n).name for n in ("no", "identity", "nfkc", "NMT_NFKC_CF")] == ["no", "no", "NFKC", "NMT_NFKC_CF"]
    with pytest.raises(ValueError, match="unknown normalization rule 'nfd'"):
        Normalizer("nfd")
    with pytest.raises(ValueError, match="space must be"):
        Normalizer(space="")


def test_alignment_maps_spans_back():
    texts = ["  ①x  ｙ ", "", "\ufdfa!", b"a\xff"]
    out = Normalizer("NMT_NFKC", add_dummy_prefix=True).normalize(texts, "cpu")
    assert out.alignment.to_pylist()[0] == [0, 0, 0, 2, 5, 6, 6, 6, 8, 12]
    originals = [t.encode() if isinstance(t, str) else t for t in texts]
    for normalized, align, original in zip(out.text.to_bytes_list(), out.alignment.to_pylist(), originals):
        assert len(align) == len(normalized) + 1 and align[-1] == len(original)
        assert align == sorted(align) and all(0 <= a <= len(original) for a in align)


# --------------------------------------------------------------------------- charsmaps


def normalizer_blob(rule: str) -> bytes:
    return read_normalizer_spec(oracle(rule).serialized_normalizer_spec())["precompiled_charsmap"]


@pytest.mark.parametrize("rule", ["NMT_NFKC"] + [pytest.param(r, marks=pytest.mark.slow) for r in SPM_RULES
                                                 if r != "NMT_NFKC"])
def test_shipped_charsmaps_are_sentencepiece_s(rule):
    pairs = decode_precompiled_charsmap(normalizer_blob(rule))
    assert pairs == sorted((a.encode(), b.encode()) for a, b in oracle(rule).Decompile())
    assert load_charsmap(rule) == pairs


@pytest.mark.slow
def test_build_script_check_mode():
    script = CHARSMAP_DIR / "build_charsmaps.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=120,
                            cwd=Path(__file__).resolve().parents[1])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("same as") == 4


@pytest.mark.parametrize("blob, message", [
    (b"\x01", "4-byte size"),
    (b"\x08\x00\x00\x00\x00", "not a positive multiple of 4"),
    (b"\x08\x00\x00\x00" + bytes([0, 0, 0, 0, 1, 4, 0, 0]), "paths do not end"),  # unit 1 is its own child
])
def test_bad_charsmaps(blob, message):
    with pytest.raises(ValueError, match=message):
        decode_precompiled_charsmap(blob)


# ------------------------------------------------------------------------------- parity


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_parity_adversarial(rule):
    texts = [t.encode("utf-8", "surrogatepass") for t in ADVERSARIAL] + INVALID
    texts += [a + b for a in texts[:12] for b in texts[-8:]]
    assert_parity(rule, texts)
    for flags in ({"add_dummy_prefix": False}, {"remove_extra_whitespaces": False}, {"escape_whitespaces": False},
                  {"add_dummy_prefix": True, "remove_extra_whitespaces": False, "escape_whitespaces": False}):
        assert_parity(rule, texts, **flags)


def corpus_lines(name: str, limit: int = 3000) -> list[bytes]:
    folder = shared_data(name)
    lines: list[bytes] = []
    for path in sorted(p for p in folder.glob("*.txt") if p.name != "SOURCE.txt"):
        lines += path.read_bytes().splitlines()[:limit]
    rng = np.random.default_rng(0)
    picked = rng.choice(len(lines), min(limit, len(lines)), replace=False)
    return [lines[i] for i in sorted(picked)]


@pytest.mark.parametrize("corpus", ["zh-sogou-news", "zh-classic-novels", "en-gutenberg", "en-kjv"])
@pytest.mark.parametrize("rule", RULE_NAMES)
def test_parity_on_corpora(corpus, rule):
    assert_parity(rule, corpus_lines(corpus))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), st.binary(max_size=12),
                          st.text(alphabet="  \u00a0\u3000①Ａa\u0301\ufdfa\u2581", max_size=12)), max_size=8))
def test_parity_hypothesis(texts):
    raw = [t.encode("utf-8", "surrogatepass") if isinstance(t, str) else t for t in texts]
    assert_parity("NMT_NFKC_CF", raw)
    assert_parity("NFKC", raw, remove_extra_whitespaces=False)
