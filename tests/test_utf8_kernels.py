"""Differential tests of cuda/utf8.cu: emulated CUDA (and the GPU when present) == Numba == reference."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text import utf8
from gpu_text.batch import TextBatch
from gpu_text.ragged import RaggedArray
from tests.conftest import shared_data
from tests.reference import utf8 as reference
from tests.utf8_inputs import ADVERSARIAL, batch_of, random_strings, straddling_strings


def host(a):
    return a if isinstance(a, np.ndarray) else a.get()


def assert_same_as_reference(batch: TextBatch, backend) -> None:
    decoded = utf8.decode(batch, backend)
    ref_cps, ref_pos, ref_rows = reference.utf8_decode(batch.data, batch.offsets)
    np.testing.assert_array_equal(host(decoded.codepoints.offsets), ref_rows)
    np.testing.assert_array_equal(host(decoded.codepoints.values), ref_cps)
    np.testing.assert_array_equal(host(decoded.byte_offsets.values), ref_pos)

    ref_chars, ref_errors = reference.utf8_string_stats(batch.data, batch.offsets)
    np.testing.assert_array_equal(host(utf8.char_length(batch, backend)), ref_chars)
    np.testing.assert_array_equal(host(utf8.validate(batch, backend)), ref_errors == 0)

    classes = utf8.char_classes(decoded.codepoints, backend)
    np.testing.assert_array_equal(host(classes.values), reference.char_classify(ref_cps))

    encoded = utf8.encode(decoded.codepoints, backend)
    ref_bytes, ref_byte_rows = reference.utf8_encode(ref_cps, ref_rows)
    np.testing.assert_array_equal(host(encoded.offsets), ref_byte_rows)
    np.testing.assert_array_equal(host(encoded.data), ref_bytes)


@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_batch_sizes(backend, size):
    strings = random_strings(np.random.default_rng(size), size)
    assert_same_as_reference(batch_of(strings), backend)


def test_ten_thousand_random_strings(backend):
    strings = random_strings(np.random.default_rng(2026), 10_000)
    assert_same_as_reference(batch_of(strings), backend)


def test_adversarial_sequences(backend):
    glued = b"".join(ADVERSARIAL)
    assert_same_as_reference(batch_of(ADVERSARIAL + [glued, glued * 7]), backend)


def test_sequences_never_cross_string_boundaries(backend):
    batch = batch_of([b"\xe4", b"\xbd\xa0", b"\xf0\x9f", b"\x98\x80", b"ok"])
    decoded = utf8.decode(batch, backend).codepoints.to_pylist()
    assert decoded == [[0xFFFD], [0xFFFD, 0xFFFD], [0xFFFD, 0xFFFD], [0xFFFD, 0xFFFD], [0x6F, 0x6B]]
    assert_same_as_reference(batch, backend)


def test_strings_straddling_thread_and_tile_boundaries(backend):
    assert_same_as_reference(batch_of(straddling_strings()), backend)


def test_many_empty_strings_between_long_ones(backend):
    strings = [b""] * 300 + ["你好".encode() * 1500] + [b""] * 5 + [b"\xe4\xbd" * 2100] + [b""] * 7
    assert_same_as_reference(batch_of(strings), backend)


def test_seed_vectors(backend):
    decoded = utf8.decode(["A你😀"], backend)
    assert decoded.codepoints.to_pylist() == [[0x41, 0x4F60, 0x1F600]]
    assert decoded.byte_offsets.to_pylist() == [[0, 1, 4]]
    assert host(utf8.validate([b"\xc0\x80", b"\xe4\xbd", "A你😀"], backend)).tolist() == [False, False, True]
    assert host(utf8.char_length(["A", "你", "😀"], backend)).tolist() == [1, 1, 1]


def test_encode_replaces_invalid_codepoints(backend):
    cps = RaggedArray(np.array([0x41, 0xD800, 0xDFFF, 0x110000, 0xFFFFFFFF, 0x10FFFF], np.uint32), np.array([0, 3, 6]))
    assert utf8.encode(cps, backend).to_bytes_list() == [b"A" + b"\xef\xbf\xbd" * 2, b"\xef\xbf\xbd" * 2 + "\U0010ffff".encode()]


@pytest.mark.parametrize("corpus", ["zh-sogou-news", "en-kjv", "zh-classic-novels", "en-gutenberg"])
def test_real_text_with_random_cuts(backend, corpus):
    folder = shared_data(corpus)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".txt", ""))
    raw = files[0].read_bytes()[:300_000]
    lines = raw.split(b"\n")
    rng = np.random.default_rng(7)
    # cutting lines at random byte positions leaves truncated characters at both ends
    cut = [line[rng.integers(0, 3):] if rng.random() < 0.5 else line for line in lines]
    assert_same_as_reference(batch_of(cut), backend)


def test_every_codepoint_round_trips(backend):
    cps = np.arange(0x110000, dtype=np.uint32)
    cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]
    ragged = RaggedArray(cps, np.array([0, cps.size]))
    encoded = utf8.encode(ragged, backend)
    assert encoded.to_bytes_list()[0] == "".join(map(chr, cps.tolist())).encode()
    np.testing.assert_array_equal(host(utf8.decode(encoded, backend).codepoints.values), cps)
