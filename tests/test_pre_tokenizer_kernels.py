"""Differential tests of cuda/pre_tokenizer.cu: emulated CUDA (and the GPU when present) == Numba ==
the pattern-matching reference, for every compiled configuration."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from gpu_text.batch import TextBatch
from gpu_text.segment import Dictionary
from gpu_text.tokenizer.pre_tokenizer import PreTokenDFA, PreTokenizer
from tests.conftest import require
from tests.reference import pre_tokenizer as reference
from tests.test_utf8_kernels import host

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CONFIGS = [(split, digits, han) for split in ("word", "isolate", "whitespace") for digits in ("keep", "split")
           for han in (False, True)]
PIECES = ["a", "b", "Ж", "'", "▁", "▁", "1", "２", "你", "好", ",", "。", "$", "\t", "\n", "🙂", "ｂ", " "]


def random_texts(rng: np.random.Generator, count: int, max_len: int = 30) -> list[bytes]:
    out = []
    for _ in range(count):
        n = int(rng.integers(0, max_len))
        text = "".join(PIECES[k] for k in rng.integers(0, len(PIECES), n)).encode()
        if rng.random() < 0.1:  # malformed bytes anywhere, including inside a multi-byte character
            cut = int(rng.integers(0, len(text) + 1))
            text = text[:cut] + (b"\xe4\xbd", b"\xff", b"\x80")[int(rng.integers(0, 3))] + text[cut:]
        out.append(text)
    return out


def long_texts(rng: np.random.Generator) -> list[bytes]:
    """Strings of 100 KB and more whose pieces and pre-tokens straddle thread and block boundaries:
    runs no cut divides (letters, Han, digits, a letter run behind a prefix) and mixed text."""
    mixed = b"".join(random_texts(rng, 3000, 40))
    runs = []
    for run in ("a" * 30000, "你" * 12000, "1" * 3000, "▁" * 3000, ",a" * 5000, "don't" * 3000):
        runs.append(run + "".join(PIECES[k] for k in rng.integers(0, len(PIECES), 50)))
    return [mixed, b"x", "".join(runs).encode(), b"", b"a" * 100_000, mixed[:4097]]


LONG = long_texts(np.random.default_rng(7))


@functools.lru_cache(maxsize=None)
def long_reference(config: tuple[str, str, bool]) -> tuple[np.ndarray, np.ndarray]:
    """The reference is slow on 500 KB of text, so every backend reuses one answer."""
    batch = TextBatch.from_strings(LONG)
    return reference.pretokenize(batch.data, batch.offsets, PreTokenDFA.compile(*config))


def assert_same_as_reference(backend, texts: list[bytes], config: tuple[str, str, bool], want=None) -> None:
    batch = TextBatch.from_strings(texts)
    dfa = PreTokenDFA.compile(*config)
    got = backend.op("pre_tokenizer", "pretokenize")(backend.asarray(batch.data), backend.asarray(batch.offsets), dfa)
    want = want or reference.pretokenize(batch.data, batch.offsets, dfa)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(host(g), w)


@pytest.mark.parametrize("config", CONFIGS, ids=["-".join(map(str, c)) for c in CONFIGS])
@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_random_batches(backend, size, config):
    assert_same_as_reference(backend, random_texts(np.random.default_rng(size), size), config)


@pytest.mark.parametrize("config", [("word", "keep", False), ("isolate", "split", True), ("whitespace", "keep", False)])
def test_long_strings(backend, config):
    assert max(map(len, LONG)) >= 100_000
    assert_same_as_reference(backend, LONG, config, long_reference(config))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(PIECES + ["\xff", "x\u2581"]), max_size=12).map("".join), max_size=6),
       st.sampled_from(CONFIGS))
def test_generated_text(backend, texts, config):
    assert_same_as_reference(backend, [t.encode() for t in texts], config)


def test_pre_tokenizer_on_every_backend(backend):
    """The whole stage (offsets, dictionary cut of Han pre-tokens) agrees with the CPU path."""
    rng = np.random.default_rng(3)
    texts = random_texts(rng, 300) + [b"", "我们在学习人工智能▁ok".encode()]
    cn = Dictionary(["我们", "学习", "人工智能", "你好", "好"], np.array([8, 7, 10, 5, 1]), 40)
    for pre in (PreTokenizer(), PreTokenizer(split="isolate", cn=cn), PreTokenizer(split="whitespace")):
        got, want = pre.pre_tokenize(texts, backend), pre.pre_tokenize(texts, "cpu")
        assert got.starts.to_pylist() == want.starts.to_pylist() and got.ends.to_pylist() == want.ends.to_pylist()
    assert PreTokenizer(cn=cn).pre_tokenize(texts[-1:], backend).to_pylist() == [["我们", "在", "学习", "人工智能", "▁ok"]]
