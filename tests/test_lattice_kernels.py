"""Differential tests of cuda/lattice.cu: emulated CUDA (and the GPU when present) == Numba == reference."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.backend import cuda_unavailable_reason, get_backend
from gpu_text.trie import DoubleArrayTrie
from cpu_fallback.lattice import FALLBACK_IF_NO_CHAR, FLOAT32
from tests.reference import lattice as reference
from tests.test_utf8_kernels import host

ALPHABET = ["a", "b", "c", "你", "好", "世", "🙂", "é", "▁"]


def backends():
    from tests.emulated_backend import emulated_backend

    found = [get_backend("cpu"), emulated_backend()]
    if cuda_unavailable_reason() is None:
        found.append(get_backend("cuda"))
    return found


def random_case(rng: np.random.Generator, n_texts: int, n_words: int, malformed: bool = True):
    words = sorted({"".join(rng.choice(ALPHABET, int(rng.integers(1, 5)))) for _ in range(n_words)})
    trie = DoubleArrayTrie.build(words, np.arange(len(words), dtype=np.int32))
    # small integer weights make exact ties common, so the tie rule is exercised
    weights = -rng.integers(0, 6, len(words)).astype(np.float64)
    texts = []
    for _ in range(n_texts):
        raw = "".join(rng.choice(ALPHABET, int(rng.integers(0, 25)))).encode()
        if malformed and rng.random() < 0.2:
            cut = int(rng.integers(0, len(raw) + 1))
            raw = raw[:cut] + bytes([0xE4, 0xB8]) + raw[cut:]
        texts.append(raw)
    data = np.frombuffer(b"".join(texts) or b"\0", np.uint8)[: sum(map(len, texts))].copy()
    ends = np.cumsum([len(t) for t in texts]).astype(np.int64)
    starts = ends - np.array([len(t) for t in texts], np.int64)
    return trie, weights, data, starts, ends


def run(backend, trie, weights, data, starts, ends, fallback, cap, mode=0):
    edges = trie.prefix_search_spans(data, starts, ends, backend)
    xp = backend.xp
    return backend.op("lattice", "lattice_viterbi")(backend.asarray(data), xp.asarray(starts), xp.asarray(ends),
                                                    *edges, xp.asarray(weights), fallback, cap, mode)


UNIGRAM = FALLBACK_IF_NO_CHAR | FLOAT32  # SentencePiece Unigram's rule


@pytest.mark.parametrize("n_texts", [0, 1, 2, 300])
@pytest.mark.parametrize("fallback,cap,mode", [(-10.0, 16, 0), (-2.0, 0, 0), (-1.0, 1, 0), (-3.0, 0, UNIGRAM),
                                               (-2.0, 0, FALLBACK_IF_NO_CHAR), (-1.0, 2, FLOAT32)])
def test_twins_equal_reference(n_texts, fallback, cap, mode):
    rng = np.random.default_rng(n_texts * 7 + cap + 100 * mode)
    trie, weights, data, starts, ends = random_case(rng, n_texts, 40)
    if mode & FLOAT32:  # float32 scores with fractions, so rounding decides some comparisons
        weights = (weights - rng.random(weights.size) * 1e-6).astype(np.float32).astype(np.float64)
    edges = trie.prefix_search_spans(data, starts, ends, "cpu")
    want = reference.lattice_viterbi(data, starts, ends, *edges, weights, fallback, cap, mode)
    for be in backends():
        got = run(be, trie, weights, data, starts, ends, fallback, cap, mode)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(host(g), w, err_msg=be.name)


def test_unigram_fallback_only_where_no_character_piece():
    """Mode FALLBACK_IF_NO_CHAR: 'ab' has no piece 'a', so its fallback edge exists; 'b' has one,
    so the cheap fallback (-0.5) is no edge there and the dear piece 'b' (-9) must be taken."""
    trie = DoubleArrayTrie.build(["b", "ab"], np.arange(2, dtype=np.int32))
    data = np.frombuffer(b"abab", np.uint8).copy()
    starts, ends = np.array([0, 2], np.int64), np.array([2, 4], np.int64)
    for weights, want in (([-9.0, -20.0], [-1, 0, -1, 0]), ([-9.0, -9.4], [1, 1])):
        for be in backends():
            got = run(be, trie, np.array(weights), data, starts, ends, -0.5, 0, UNIGRAM)
            assert host(got[2]).tolist() == want, (be.name, weights)
            # BytePiece's rule: a fallback edge at every character, so 'a' and 'b' both fall back
            assert host(run(be, trie, np.array(weights), data, starts, ends, -0.5, 0)[2]).tolist() == [-1] * 4


def test_float32_scores_decide_ties_as_sentencepiece():
    """Path scores that differ in double but not in float32: into 'abc', a|bc (-1000.00001) is
    relaxed before ab|c (-1000.000005); both are the float -1000.0, so with FLOAT32 the first, a|bc,
    stays (as in SentencePiece, whose scores are floats); in double the higher ab|c wins."""
    trie = DoubleArrayTrie.build(["a", "ab", "bc", "c"], np.arange(4, dtype=np.int32))
    data = np.frombuffer(b"abc", np.uint8).copy()
    weights = np.array([-1000.0, -1000.0, -1e-5, -5e-6], np.float32).astype(np.float64)
    assert float(np.float32(weights[0] + weights[2])) == -1000.0 and weights[1] + weights[3] > weights[0] + weights[2]
    starts, ends = np.array([0], np.int64), np.array([3], np.int64)
    for be in backends():
        assert host(run(be, trie, weights, data, starts, ends, -1e9, 0, UNIGRAM)[2]).tolist() == [0, 2]
        assert host(run(be, trie, weights, data, starts, ends, -1e9, 0, FALLBACK_IF_NO_CHAR)[2]).tolist() == [1, 3]


def test_known_paths():
    """南京 vs 南|京 (the book's example as edge weights), ties keep the first, caps drop matches."""
    trie = DoubleArrayTrie.build(["南", "京", "南京", "ab", "a", "b"], np.arange(6, dtype=np.int32))
    text = "南京ab".encode()
    data = np.frombuffer(text, np.uint8).copy()
    starts, ends = np.array([0], np.int64), np.array([len(text)], np.int64)
    for weights, cap, want_values in (
            ([-1.4, -1.5, -1.8, -1.0, -1.0, -1.0], 16, [2, 3]),   # 南京 (-1.8) beats 南|京 (-2.9)
            ([-1.0, -1.0, -2.0, -2.0, -1.0, -1.0], 16, [2, 3]),  # ties: the edge relaxed first (earlier start) stays
            ([-1.4, -1.5, -1.8, -1.0, -1.0, -1.0], 1, [0, 1, 4, 5])):  # one match per start: 南 and a only
        for be in backends():
            got = run(be, trie, np.array(weights), data, starts, ends, -10.0, cap)
            assert host(got[2]).tolist() == want_values, (be.name, weights, cap)
            assert host(got[3]).tolist() == [0, len(want_values)]


def test_fallback_and_malformed_bytes():
    """No words: one fallback token per character; a malformed byte is a character of its own."""
    trie = DoubleArrayTrie.build(["zz"], np.zeros(1, np.int32))
    text = "a你".encode() + b"\xe4\xb8" + "🙂".encode()
    data = np.frombuffer(text, np.uint8).copy()
    for be in backends():
        s, e, v, o = run(be, trie, np.zeros(1), data, np.array([0], np.int64), np.array([len(text)], np.int64),
                         -10.0, 16)
        assert host(s).tolist() == [0, 1, 4, 5, 6] and host(e).tolist() == [1, 4, 5, 6, 10]
        assert host(v).tolist() == [-1] * 5


@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_long_span_is_linear(mode):
    """A 1 MB span solves (one pass over its bytes and edges) and its path covers it exactly."""
    trie = DoubleArrayTrie.build(["ab", "a", "b", "abab"], np.arange(4, dtype=np.int32))
    data = np.frombuffer(b"ab" * (1 << 19), np.uint8).copy()
    s, e, v, o = run(get_backend("cpu"), trie, np.array([-1.0, -1.0, -1.0, -1.5]), data,
                     np.array([0], np.int64), np.array([data.size], np.int64), -10.0, 16, mode)
    assert o.tolist() == [0, data.size // 4] and (v == 3).all()
    assert s[0] == 0 and e[-1] == data.size and (s[1:] == e[:-1]).all()


def test_emulated_steps_are_linear_in_the_span():
    """The longest thread's steps: one per character of its span (GT_STEP), in both modes."""
    from tests.emulated_backend import emulated_backend

    be = emulated_backend()
    kernel = be.runtime.module("lattice").get_function("lattice_route")
    trie = DoubleArrayTrie.build(["ab", "a", "b"], np.arange(3, dtype=np.int32))
    for n in (64, 4096):
        data = np.frombuffer(b"ab" * (n // 2), np.uint8).copy()
        starts, ends = np.array([0, 1], np.int64), np.array([n, 2], np.int64)
        for mode in (0, UNIGRAM):
            run(be, trie, np.array([-1.0, -1.0, -1.0]), data, starts, ends, -10.0, 0, mode)
            assert kernel.last_max_steps == n, (n, mode)
