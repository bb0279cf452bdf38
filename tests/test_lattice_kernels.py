"""Differential tests of cuda/lattice.cu: emulated CUDA (and the GPU when present) == Numba == reference."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.backend import cuda_unavailable_reason, get_backend
from gpu_text.trie import DoubleArrayTrie
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


def run(backend, trie, weights, data, starts, ends, fallback, cap):
    edges = trie.prefix_search_spans(data, starts, ends, backend)
    xp = backend.xp
    return backend.op("lattice", "lattice_viterbi")(backend.asarray(data), xp.asarray(starts), xp.asarray(ends),
                                                    *edges, xp.asarray(weights), fallback, cap)


@pytest.mark.parametrize("n_texts", [0, 1, 2, 300])
@pytest.mark.parametrize("fallback,cap", [(-10.0, 16), (-2.0, 0), (-1.0, 1)])
def test_twins_equal_reference(n_texts, fallback, cap):
    rng = np.random.default_rng(n_texts * 7 + cap)
    trie, weights, data, starts, ends = random_case(rng, n_texts, 40)
    edges = trie.prefix_search_spans(data, starts, ends, "cpu")
    want = reference.lattice_viterbi(data, starts, ends, *edges, weights, fallback, cap)
    for be in backends():
        got = run(be, trie, weights, data, starts, ends, fallback, cap)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(host(g), w, err_msg=be.name)


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


def test_long_span_is_linear():
    """A 1 MB span solves (one pass over its bytes and edges) and its path covers it exactly."""
    trie = DoubleArrayTrie.build(["ab", "a", "b", "abab"], np.arange(4, dtype=np.int32))
    data = np.frombuffer(b"ab" * (1 << 19), np.uint8).copy()
    s, e, v, o = run(get_backend("cpu"), trie, np.array([-1.0, -1.0, -1.0, -1.5]), data,
                     np.array([0], np.int64), np.array([data.size], np.int64), -10.0, 16)
    assert o.tolist() == [0, data.size // 4] and (v == 3).all()
    assert s[0] == 0 and e[-1] == data.size and (s[1:] == e[:-1]).all()
