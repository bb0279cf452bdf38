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


# ---------------------------------------------------------------- the one-pass decode kernel

def tiled_batch(rng: np.random.Generator, pool: list[bytes], count: int) -> tuple[TextBatch, np.ndarray]:
    """`count` strings drawn from `pool`, and which one each is."""
    picks = rng.integers(0, len(pool), count)
    lengths = np.array([len(p) for p in pool], np.int64)[picks]
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    table = np.frombuffer(b"".join(pool), np.uint8)
    starts = np.concatenate([[0], np.cumsum([len(p) for p in pool])[:-1]]).astype(np.int64)
    # every byte of the batch: its string's pool entry, at its offset within the string
    rows = np.repeat(np.arange(count), lengths)
    within = np.arange(offsets[-1]) - offsets[:-1][rows]
    data = table[starts[picks][rows] + within] if count else np.zeros(0, np.uint8)
    return TextBatch(np.ascontiguousarray(data, np.uint8), offsets), picks


def tiled_reference(pool: list[bytes], picks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """reference.utf8_decode of a batch made by tiled_batch, from each pool string's own decode
    (sequences never cross strings, so a batch decodes string by string)."""
    decoded = [reference.decode_string(p) for p in pool]
    cps = [np.array([c for c, _ in d], np.uint32) for d in decoded]
    pos = [np.array([a for _, a in d], np.int64) for d in decoded]
    counts = np.array([len(d) for d in decoded], np.int64)[picks]
    rows = np.zeros(picks.size + 1, np.int64)
    np.cumsum(counts, out=rows[1:])
    order = np.repeat(picks, counts)
    within = np.arange(rows[-1]) - rows[:-1][np.repeat(np.arange(picks.size), counts)]
    flat_cps = np.concatenate(cps + [np.zeros(0, np.uint32)])
    flat_pos = np.concatenate(pos + [np.zeros(0, np.int64)])
    firsts = np.concatenate([[0], np.cumsum([len(d) for d in decoded])[:-1]]).astype(np.int64)
    return flat_cps[firsts[order] + within], flat_pos[firsts[order] + within], rows


TINY = [b"", b"a", b"\xe4\xbd\xa0", b"ab", b"\xe4", b"\xc3\xa9x", b"\xf0\x9f\x98\x80", b"\x80", b"\xbd\xa0",
        b"\xf0\x9f", b"\xed\xa0\x80", b"z\xe4\xbd", b"\xe5\xa5\xbd!", b" "]


def assert_decode(batch: TextBatch, expected, backend) -> None:
    cps, pos, rows = expected
    decoded = utf8.decode(batch, backend)
    np.testing.assert_array_equal(host(decoded.codepoints.offsets), rows)
    np.testing.assert_array_equal(host(decoded.codepoints.values), cps)
    np.testing.assert_array_equal(host(decoded.byte_offsets.values), pos)
    assert host(decoded.byte_offsets.values).dtype == np.int32  # under 2 GiB


def test_ten_million_tiny_strings():
    """10M strings of 0-4 bytes (4096-byte tiles holding ~1500 strings each): the Numba twin and
    the one-pass kernel on the emulator, against the reference decode of each distinct string."""
    from tests.emulated_backend import emulated_backend

    batch, picks = tiled_batch(np.random.default_rng(10), TINY, 10_000_000)
    expected = tiled_reference(TINY, picks)
    assert_decode(batch, expected, "cpu")
    assert_decode(batch, expected, emulated_backend())


def test_one_megabyte_row_has_no_long_thread():
    """One 1 MB string (Han, ASCII, emoji, malformed bytes): emulated == Numba == reference, and
    the longest thread of each decode kernel takes a handful of steps, not a row's worth."""
    from tests.emulated_backend import emulated_backend

    rng = np.random.default_rng(16)
    pieces = ["你好，世界。".encode(), b"hello ", "😀".encode(), b"\xe4\xbd", b"\x80", b"\xff", "é".encode()]
    row = b"".join(pieces[k] for k in rng.integers(0, len(pieces), 200_000))[:2**20]
    batch = batch_of([b"", row, b"x", b""])
    expected = reference.utf8_decode(batch.data, batch.offsets)
    assert_decode(batch, expected, "cpu")
    assert_decode(batch, expected, emulated_backend())
    module = emulated_backend().runtime.module("utf8")
    steps = {"utf8_decode": module.get_function("utf8_decode").last_max_steps}
    utf8.validate(batch, emulated_backend())
    steps["utf8_string_stats"] = module.get_function("utf8_string_stats").last_max_steps
    print("longest thread's steps on a 1 MB row:", steps)
    # one string-start step, one row-offset step, one look-back window, one step for the end
    assert max(steps.values()) <= 4, steps


def _decode_with(rt, data: np.ndarray, offsets: np.ndarray, wide: bool = False):
    from gpu_text.cuda_ops import utf8 as launchers

    if not wide:
        return launchers.utf8_decode(rt, data, offsets)
    saved = launchers.NARROW_POSITIONS_BELOW
    launchers.NARROW_POSITIONS_BELOW = 0  # the int64 kernel on a small batch
    try:
        return launchers.utf8_decode(rt, data, offsets)
    finally:
        launchers.NARROW_POSITIONS_BELOW = saved


class _WorkerRuntime:
    """Emulated kernels on several OS threads, with a random fiber schedule: tiles finish out of
    order and the look-back really waits on tiles of other workers."""

    xp = np

    def __init__(self, workers: int, seed: int, family: str = "utf8") -> None:
        from gpu_text.kernel_sources import kernel_source_dir, kernel_source_path
        from tests.cuda_emulator.emulator import EmulatedModule

        self.module = EmulatedModule(str(kernel_source_path(family)), include_dirs=[str(kernel_source_dir())],
                                     workers=workers)
        self.seed = seed

    def function(self, family: str, name: str):
        kernel = self.module.get_function(name)
        return lambda grid, block, args, shared_mem=0: kernel(grid, block, args, shared_mem, schedule_seed=self.seed)


@pytest.mark.parametrize("workers,seed", [(4, 0), (4, 7), (3, 12345)])
def test_look_back_across_parallel_workers(workers, seed):
    strings = random_strings(np.random.default_rng(seed), 6000) + straddling_strings()
    batch = batch_of(strings)
    expected = reference.utf8_decode(batch.data, batch.offsets)
    rt = _WorkerRuntime(workers, seed)
    for wide in (False, True):
        cps, pos, rows = _decode_with(rt, batch.data, batch.offsets, wide)
        np.testing.assert_array_equal(rows, expected[2])
        np.testing.assert_array_equal(cps, expected[0])
        np.testing.assert_array_equal(pos, expected[1])
        assert pos.dtype == (np.int64 if wide else np.int32)


def test_unaligned_data_and_wide_positions():
    """Data not 16-byte aligned takes byte loads; the int64 kernel gives the same positions."""
    from tests.emulated_backend import emulated_backend

    rt = emulated_backend().runtime
    strings = straddling_strings() + random_strings(np.random.default_rng(3), 500)
    batch = batch_of(strings)
    expected = reference.utf8_decode(batch.data, batch.offsets)
    room = np.zeros(batch.data.size + 32, np.uint8)
    for shift in (1, 3, 8, 15):
        data = room[shift:shift + batch.data.size]
        data[:] = batch.data
        for wide in (False, True):
            for got, want in zip(_decode_with(rt, data, batch.offsets, wide), expected):
                np.testing.assert_array_equal(got, want)


def test_decode_is_one_launch_and_one_read():
    from tests.cuda_emulator.device_counts import measure
    from tests.emulated_backend import counting_emulated_backend

    be = counting_emulated_backend()
    batch = batch_of(random_strings(np.random.default_rng(5), 3000))
    expected = reference.utf8_decode(batch.data, batch.offsets)
    calls = {"decode": lambda: utf8.decode(batch, be), "char_length": lambda: utf8.char_length(batch, be),
             "validate": lambda: utf8.validate(batch, be)}
    counts = {}
    for name, call in calls.items():
        call()
        with measure() as c:
            result = call()
        counts[name] = (c.launches, c.syncs)
        if name == "decode":
            np.testing.assert_array_equal(np.asarray(result.codepoints.values), expected[0])
    print("(launches, syncs) per call:", counts)
    assert counts == {"decode": (1, 1), "char_length": (1, 0), "validate": (1, 0)}


def test_a_million_empty_strings_in_one_tile():
    """Row offsets of strings starting at one byte are written by the whole block (one entry per
    thread and step), not by the one thread holding that byte."""
    from tests.emulated_backend import emulated_backend

    pool = [b"", "你好".encode(), b"\xe4\xbd"]
    picks = np.concatenate([np.zeros(1_000_000, np.int64), [1], np.zeros(1_000_000, np.int64), [2, 0]])
    lengths = np.array([len(p) for p in pool])[picks]
    offsets = np.zeros(picks.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    batch = TextBatch(np.frombuffer(b"".join(pool[k] for k in picks.tolist()), np.uint8), offsets)
    expected = tiled_reference(pool, picks)
    assert_decode(batch, expected, "cpu")
    assert_decode(batch, expected, emulated_backend())
    steps = emulated_backend().runtime.module("utf8").get_function("utf8_decode").last_max_steps
    assert steps <= 2 * -(-picks.size // 256) + 2, steps
