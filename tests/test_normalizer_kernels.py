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


# ---------------------------------------------------------------- the chunked walk (issue 16)
CHUNK = 256  # gpu_text.cuda_ops.normalizer.CHUNK; spelled out so that a change is seen here
WALK_KERNELS = ("normalize_match", "normalize_chunk_land_join", "normalize_chunk_emit", "normalize_slots")


def test_chunk_size_is_the_kernels():
    from gpu_text.cuda_ops import normalizer as launcher
    from gpu_text.kernel_sources import kernel_source_path

    assert launcher.CHUNK == CHUNK
    assert f"#define NORMALIZE_CHUNK {CHUNK}\n" in kernel_source_path("normalizer").read_text()


def test_strings_across_chunk_boundaries(backend):
    """Strings ending just before, at and after chunk ends, runs of spaces and deletions across
    them (the space state must be carried), between empty strings."""
    rng = np.random.default_rng(16)
    alphabet = [b" ", b"  ", b"a", b"c", b"b", b"\xe2\x80\x8b", "①".encode(), b"q", b"\xff", b" z", b"d"]
    strings: list[bytes] = []
    for length in (CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK - 3, 3 * CHUNK + 7, 5 * CHUNK):
        for pick in ([0, 1], [5, 0, 3], [0, 2, 6, 7], list(range(len(alphabet)))):
            text = b""
            while len(text) < length:
                text += alphabet[pick[int(rng.integers(0, len(pick)))]]
            strings += [text[:length], b""]
    strings += [b" " * (4 * CHUNK) + b"x", "\u200b".encode() * (2 * CHUNK) + b" a", b"", b""]
    for normalizer in normalizers():
        assert_all_match(normalizer, strings, backend)


def test_space_state_carried_across_emission_tiles():
    """Deletions (U+200B) longer than an emission tile (a block of chunks) after a space and after a
    letter: no chunk of the deletions sets a space state, so each space after them is dropped or
    kept by the state that a look-back over earlier tiles carries in (entering_code)."""
    from tests.emulated_backend import emulated_backend

    tile_bytes = 256 * CHUNK  # a block of chunks
    deleted = "\u200b".encode() * (tile_bytes // 3 * 2 + 5)  # over two tiles: one tile sets nothing at all
    strings = [b"p", b"a " + deleted + b" b", b"c" + deleted + b"  d", b"e  " + deleted, b"", deleted + b" f"]
    assert_all_match(Normalizer("test", charsmap_pairs=PAIRS), strings, emulated_backend())


def emulated_kernels():
    from tests.emulated_backend import emulated_backend

    module = emulated_backend().runtime.module("normalizer")
    return {name: module.get_function(name) for name in WALK_KERNELS}


def test_walks_that_never_meet_fall_back_exactly():
    """With a key "qq", walks from odd and from even positions of a run of q never meet: every
    chunk's join misses and the resolving pass redoes the string serially, with the same output."""
    from tests.emulated_backend import emulated_backend

    normalizer = Normalizer("test", charsmap_pairs=PAIRS + [(b"qq", b"Q")], add_dummy_prefix=True)
    run = b"x" + b"q" * (12 * CHUNK + 1)
    strings = [run, b"", b"q" * (6 * CHUNK), run[:-2] + b" a  b", b"xq" + b" " * (3 * CHUNK) + b"q"]
    # over two tiles (blocks) of chunks: resolved once every tile up to its last chunk's has joined
    across_tiles = [b"a", b"x" + b"q" * (2 * 256 * CHUNK + 3) + b" b"]
    assert_all_match(normalizer, across_tiles, emulated_backend())
    assert_all_match(normalizer, strings, emulated_backend())
    steps = {name: kernel.last_max_steps for name, kernel in emulated_kernels().items()}
    # the last launch: "x" + q... resolved from its first chunk (by the thread of its last chunk),
    # one step per two bytes
    assert steps["normalize_chunk_land_join"] >= 5 * CHUNK, steps


def test_one_megabyte_row_has_no_long_thread():
    """A 1 MB string (text with the real charsmap's keys, spaces and deletions): the same output
    as the Numba twin, and no thread of any pass takes more than 2 chunks' worth of steps."""
    from tests.emulated_backend import emulated_backend

    rng = np.random.default_rng(1)
    words = ["The", "  ", "ｆｕｌｌ", "①", "\u3000", "naïve", "e\u0301", "你好", "\u200b", "!", " ", "Ⅻ", "ﬁ"]
    text = ""
    while len(text.encode()) < 1 << 20:
        text += "".join(words[k] for k in rng.integers(0, len(words), 4096))
    raw = text.encode()[: 1 << 20]
    raw = raw[: len(raw.decode("utf-8", "ignore").encode())]  # whole characters
    normalizer = Normalizer("NMT_NFKC_CF", add_dummy_prefix=True)
    batch = TextBatch.from_strings([b"a b", raw, b" c "])
    args = (*normalizer._charsmap.arrays("cpu"), batch.data, batch.offsets, np.frombuffer(normalizer.symbol, np.uint8),
            int(normalizer.remove_extra_whitespaces), int(normalizer.add_dummy_prefix))
    want = numba_twins.normalize_text(*args)
    got = normalizer.normalize(batch, emulated_backend())
    for g, w in zip((got.text.data, got.text.offsets, got.alignment.values), want):
        np.testing.assert_array_equal(host(g), w)
    steps = {name: kernel.last_max_steps for name, kernel in emulated_kernels().items()}
    print("longest thread's steps on a 1 MB row:", steps)
    # the walks met in every chunk: resolving the row would take a step per chunk (4096) and more
    assert max(steps.values()) <= 2 * CHUNK, steps
    assert steps["normalize_chunk_land_join"] >= CHUNK // 4  # it did walk the chunks


def test_trailing_symbols_stripped_before_the_scan(backend):
    """Trailing space symbols are taken off the counts before the scan (the rows come out packed,
    one host read); where a step's rest is a shorter tail of the symbol (a symbol or a target that
    is not whole characters), a copy may straddle two steps and the written rows are trimmed
    exactly instead. Both ways give the reference's bytes and alignment."""
    from tests.cuda_emulator.device_counts import measure
    from tests.emulated_backend import counting_emulated_backend

    pairs = [(b"x", b"_>"), (b"y", b"<"), (b"w", b"\xe2\x96"), (b"v", b"\x81"), (b"u", b"a  "), (b"t", b"<_")]
    texts = [b"ayx", b"a yx", b"yx ", b"x", b"yx  x", b"<_>", b"a<_><_>", b"awv", b"a wv ", b"wv", b"w v", b"qu",
             b"u u ", b"tx", b"ty_>", b"", b"  ", b"a \xe2\x96\x81 "]
    for options in (dict(space="<_>"), dict(), dict(space="<_>", add_dummy_prefix=True), dict(add_dummy_prefix=True)):
        normalizer = Normalizer("test", charsmap_pairs=pairs, **options)
        assert_all_match(normalizer, texts, backend)
    counting = counting_emulated_backend()
    strings = [b"a  b ", b"  c\xe2\x96\x81", b""]
    batch = TextBatch.from_strings(strings).to_device(counting.xp)
    normalizer = Normalizer("test", charsmap_pairs=PAIRS)
    normalizer.normalize(batch, counting)
    with measure() as counts:
        out = normalizer.normalize(batch, counting)
    assert counts.syncs == 1  # the output size
    assert not [site for site in counts.listing("uploads") if "normalizer" in site]  # the tables stay there
    assert out.text.to_pylist() == normalizer.normalize(strings, "cpu").text.to_pylist()
