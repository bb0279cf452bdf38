"""Differential tests of cuda/normalizer.cu: emulated CUDA (and the GPU when present) == Numba == reference."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from cpu_fallback import normalizer as numba_twins
from gpu_text.batch import TextBatch
from gpu_text.tokenizer.normalizer import Normalizer
from tests.reference import normalizer as reference
from tests.test_normalizer import ADVERSARIAL, INVALID
from tests.utf8_inputs import random_strings

# A small charsmap with what makes the rules hard: targets with leading, inner, trailing and only
# spaces, deletions, keys that are prefixes of other keys, multi-character keys, a key starting
# with a space.
PAIRS = [(b"a", b"  x "), (b"ab", b"Y"), (b"abc", b""), (b"b", b""), (b"c", b" "), (b"d", b"d  d"),
         ("①".encode(), b"1"), ("Ａ".encode(), b"A"), ("\u00a0".encode(), b" "), (b" z", b"Z"),
         ("e\u0301".encode(), "é".encode()), ("\u200b".encode(), b"")]
OPTIONS = [dict(), dict(add_dummy_prefix=True), dict(remove_extra_whitespaces=False), dict(escape_whitespaces=False),
           dict(reconstruct=True), dict(space="<_>", add_dummy_prefix=True), dict(space="_", escape_whitespaces=False,
                                                                                 add_dummy_prefix=True)]


def host(a):
    return a if isinstance(a, np.ndarray) else a.get()


@functools.lru_cache(maxsize=None)
def normalizers() -> list[Normalizer]:
    return [Normalizer("test", charsmap_pairs=PAIRS, **o) for o in OPTIONS]


def texts_for(rng: np.random.Generator, count: int) -> list[bytes]:
    alphabet = [k for k, _ in PAIRS] + [b" ", b" ", b"  ", b"\xe2\x96\x81", b"q", b"\xff", b"<_>", b"_"]
    noise = random_strings(rng, count)
    out = []
    for k in range(count):
        glued = b"".join(alphabet[i] for i in rng.integers(0, len(alphabet), int(rng.integers(0, 14))))
        mixed = noise[k][: int(rng.integers(0, 5))] + glued
        out.append(mixed if rng.random() < 0.9 else b"")
    return out


def assert_all_match(normalizer: Normalizer, strings: list[bytes], backend) -> None:
    batch = TextBatch.from_strings(strings)
    args = (*normalizer._charsmap.arrays("cpu"), batch.data, batch.offsets, np.frombuffer(normalizer.symbol, np.uint8),
            int(normalizer.remove_extra_whitespaces), int(normalizer.add_dummy_prefix))
    expected = reference.normalize_text(*args)
    numba = numba_twins.normalize_text(*args)
    out = normalizer.normalize(batch, backend)
    got = (out.text.data, out.text.offsets, out.alignment.values)
    for g, n, e in zip(got, numba, expected):
        assert host(g).dtype == e.dtype == n.dtype
        np.testing.assert_array_equal(n, e)
        np.testing.assert_array_equal(host(g), e)
    np.testing.assert_array_equal(host(out.alignment.offsets), expected[1] + np.arange(len(strings) + 1))
    unaligned = normalizer.normalize(batch, backend, with_alignment=False)
    assert unaligned.alignment is None
    np.testing.assert_array_equal(host(unaligned.text.data), expected[0])
    np.testing.assert_array_equal(host(unaligned.text.offsets), expected[1])


@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_batch_sizes(backend, size):
    strings = texts_for(np.random.default_rng(size), size)
    for normalizer in normalizers():
        assert_all_match(normalizer, strings, backend)


def test_adversarial(backend):
    strings = [t.encode("utf-8", "surrogatepass") for t in ADVERSARIAL] + INVALID
    for normalizer in normalizers():
        assert_all_match(normalizer, strings, backend)


def test_real_charsmap_and_long_strings(backend):
    strings = [t.encode("utf-8", "surrogatepass") for t in ADVERSARIAL[:12]] + INVALID[:4]
    strings += [b"".join(strings) * 3, b" " * 600, ("\u3000①" * 300).encode()]  # across many blocks
    assert_all_match(Normalizer("NMT_NFKC_CF", add_dummy_prefix=True), strings, backend)
