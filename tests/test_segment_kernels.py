"""Differential tests of cuda/segment.cu: emulated CUDA (and the GPU when present) == Numba == reference."""
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
