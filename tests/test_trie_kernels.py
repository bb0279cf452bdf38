"""Differential tests of cuda/trie.cu: emulated CUDA (and the GPU when present) == Numba == reference."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from cpu_fallback import trie as numba_twins
from gpu_text.batch import TextBatch
from gpu_text.trie import DoubleArrayTrie
from tests.reference import trie as reference
from tests.test_trie import random_dictionary
from tests.utf8_inputs import ADVERSARIAL, random_strings

# A word of 21 characters whose 20 proper prefixes are words too: 21 matches at one start.
LADDER = "天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋"


def host(a):
    return a if isinstance(a, np.ndarray) else a.get()


def assert_equal_arrays(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = host(g)
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)


def dictionary(seed: int, count: int) -> DoubleArrayTrie:
    words = random_dictionary(np.random.default_rng(seed), count)
    words.update({LADDER[:n].encode(): 10**6 + n for n in range(1, len(LADDER) + 1)})
    return DoubleArrayTrie.build(list(words), list(words.values()))


def texts_for(trie: DoubleArrayTrie, rng: np.random.Generator, count: int) -> list[bytes]:
    """Random strings (malformed UTF-8 included) mixed with dictionary words glued together, cut
    at random bytes (leaving partial characters at both ends)."""
    words = [w for w, _ in trie.predictive("")]
    noise = random_strings(rng, count)
    out = []
    for k in range(count):
        glued = b"".join(words[i] for i in rng.integers(0, len(words), int(rng.integers(0, 12))))
        mixed = noise[k][: int(rng.integers(0, 6))] + glued + noise[k][:3]
        cut = mixed[int(rng.integers(0, 3)):] if rng.random() < 0.3 else mixed
        out.append(cut if rng.random() < 0.9 else b"")
    return out


def assert_all_match(trie: DoubleArrayTrie, strings: list[bytes], backend) -> None:
    batch = TextBatch.from_strings(strings)
    arrays = (trie.state, trie.check, trie.label, trie.eow)
    expected_lookup = reference.trie_lookup(*arrays, batch.data, batch.offsets)
    assert_equal_arrays([trie.lookup_batch(batch, backend)], [expected_lookup])
    assert_equal_arrays([numba_twins.trie_lookup(*arrays, batch.data, batch.offsets)], [expected_lookup])

    expected_longest = reference.trie_longest_prefix(*arrays, batch.data, batch.offsets)
    assert_equal_arrays(trie.longest_prefix_batch(batch, backend), expected_longest)
    assert_equal_arrays(numba_twins.trie_longest_prefix(*arrays, batch.data, batch.offsets), expected_longest)

    starts, ends = batch.offsets[:-1], batch.offsets[1:]
    expected_edges = reference.trie_prefix_search(*arrays, batch.data, starts, ends)
    assert_equal_arrays(trie.prefix_search_spans(batch.data, starts, ends, backend), expected_edges)
    assert_equal_arrays(numba_twins.trie_prefix_search(*arrays, batch.data, starts, ends), expected_edges)


@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_batch_sizes(backend, size):
    trie = dictionary(size, 400)
    assert_all_match(trie, texts_for(trie, np.random.default_rng(size), size), backend)


def test_adversarial_utf8_and_byte_words(backend):
    words = [w for w in ADVERSARIAL if w and 0 not in w]
    trie = DoubleArrayTrie.build(list(dict.fromkeys(words + [b"\x80", b"\xbd", b"\xbd\xa0", "你".encode()])))
    glued = b"".join(ADVERSARIAL)
    assert_all_match(trie, ADVERSARIAL + [glued, glued * 5], backend)


def test_no_cap_on_matches(backend):
    trie = dictionary(7, 50)
    text = ("x" + LADDER + LADDER[:5]).encode()
    matches = trie.prefix_search([text], backend).to_pylist()[0]
    assert [(s, e) for s, e, _ in matches if s == 1] == [(1, 1 + 3 * n) for n in range(1, 22)]
    assert_all_match(trie, [text, LADDER.encode() * 40], backend)


def test_public_prefix_search_is_per_string(backend):
    trie = DoubleArrayTrie.build(["中国", "国", "国人", "人", "a"])
    result = trie.prefix_search(["中国人", "", b"\xe4\xb8a", "a人"], backend)
    assert result.to_pylist() == [[(0, 6, 0), (3, 6, 1), (3, 9, 2), (6, 9, 3)], [], [(2, 3, 4)], [(0, 1, 4), (1, 4, 3)]]
    assert host(result.starts.offsets).tolist() == [0, 4, 4, 5, 7]


def random_spans(rng: np.random.Generator, size: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Spans of every length class (empty, short, across 256-byte blocks, long), anywhere in the
    buffer: overlapping, out of order, nested."""
    lengths = rng.choice([0, 1, 3, 17, 255, 256, 257, 600, 3000], count)
    starts = rng.integers(0, size, count)
    ends = np.minimum(starts + lengths, size)
    return starts.astype(np.int64), ends.astype(np.int64)


@functools.lru_cache(maxsize=None)
def spans_case(seed: int):
    """A trie, a buffer, spans and the reference edges; made once and shared by every backend."""
    rng = np.random.default_rng(seed)
    trie = dictionary(seed, 600)
    data = np.frombuffer(b"".join(texts_for(trie, rng, 600)), np.uint8)
    span_starts, span_ends = random_spans(rng, data.size, 200)
    # empty spans first, last and in runs, where the kernel writes their offsets specially
    span_starts = np.concatenate([[0, 5, 5], span_starts, [data.size, 7, 7, data.size]])
    span_ends = np.concatenate([[0, 5, 5], span_ends, [data.size, 7, 7, data.size]])
    expected = reference.trie_prefix_search(trie.state, trie.check, trie.label, trie.eow, data, span_starts, span_ends)
    return trie, data, span_starts, span_ends, expected


@pytest.mark.parametrize("seed", range(3))
def test_spans_anywhere_in_a_buffer(backend, seed):
    trie, data, span_starts, span_ends, expected = spans_case(seed)
    assert_equal_arrays(trie.prefix_search_spans(data, span_starts, span_ends, backend), expected)
    arrays = (trie.state, trie.check, trie.label, trie.eow)
    assert_equal_arrays(numba_twins.trie_prefix_search(*arrays, data, span_starts, span_ends), expected)


def test_spans_straddling_block_boundaries(backend):
    trie = dictionary(11, 200)
    data = np.frombuffer(("你好" + LADDER * 40).encode(), np.uint8)
    edges = [0]
    for cut in (250, 255, 256, 257, 511, 512, 513, 1000, 1024, 1025, data.size):
        edges.append(cut)
    starts, ends = np.array(edges[:-1], np.int64), np.array(edges[1:], np.int64)
    arrays = (trie.state, trie.check, trie.label, trie.eow)
    assert_equal_arrays(trie.prefix_search_spans(data, starts, ends, backend),
                        reference.trie_prefix_search(*arrays, data, starts, ends))


def test_empty_dictionary_and_empty_data(backend):
    trie = DoubleArrayTrie.build([])
    assert_all_match(trie, [b"", b"abc", "中".encode()], backend)
    empty = np.zeros(0, np.int64)
    out = DoubleArrayTrie.build(["a"]).prefix_search_spans(np.zeros(0, np.uint8), empty, empty, backend)
    assert [host(a).tolist() for a in out] == [[], [], [], [0]]


def test_bad_spans_are_rejected():
    trie = DoubleArrayTrie.build(["a"])
    data = np.frombuffer(b"abc", np.uint8)
    for starts, ends in [([0], [4]), ([2], [1]), ([-1], [1]), ([0, 1], [1])]:
        with pytest.raises(ValueError):
            trie.prefix_search_spans(data, np.array(starts), np.array(ends), "cpu")


# ---------------------------------------------------------------- the one-pass prefix search

def emulated_prefix_kernel():
    from tests.emulated_backend import emulated_backend

    return emulated_backend().runtime.module("trie").get_function("trie_prefix_search")


def test_one_megabyte_span_has_no_long_thread():
    """One 1 MB span of dictionary words and noise: emulated == Numba == reference, and the
    longest thread walks at most the longest word (plus its span and look-back steps)."""
    from tests.emulated_backend import emulated_backend

    trie = dictionary(16, 800)
    rng = np.random.default_rng(16)
    pieces = [w for w, _ in trie.predictive("")] + [b"\x80", b"\xff", "你".encode()[:2], b" ", b"x"] * 20
    text = b"".join(pieces[k] for k in rng.integers(0, len(pieces), 2**20 // 4))
    assert len(text) >= 2**20
    data = np.frombuffer(text[:2**20], np.uint8)
    starts, ends = np.array([0, 5, 5, 0], np.int64), np.array([data.size, 5, 9, 0], np.int64)
    arrays = (trie.state, trie.check, trie.label, trie.eow)
    expected = reference.trie_prefix_search(*arrays, data, starts, ends)
    assert_equal_arrays(numba_twins.trie_prefix_search(*arrays, data, starts, ends), expected)
    assert_equal_arrays(trie.prefix_search_spans(data, starts, ends, emulated_backend()), expected)
    steps = emulated_prefix_kernel().last_max_steps
    longest = max(len(w) for w, _ in trie.predictive(""))
    print("longest thread's steps on a 1 MB span:", steps, "longest word:", longest, "bytes")
    assert steps <= 2 * longest + 4, steps  # a second walk only above TRIE_KEPT matches at one start


def tiled_spans(rng: np.random.Generator, pool: list[bytes], count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`count` consecutive spans, each a copy of a pool string; returns data, starts, ends, picks."""
    picks = rng.integers(0, len(pool), count)
    lengths = np.array([len(p) for p in pool], np.int64)[picks]
    ends = np.cumsum(lengths)
    table = np.frombuffer(b"".join(pool), np.uint8)
    firsts = np.concatenate([[0], np.cumsum([len(p) for p in pool])[:-1]]).astype(np.int64)
    rows = np.repeat(np.arange(count), lengths)
    within = np.arange(ends[-1]) - (ends - lengths)[rows]
    data = np.ascontiguousarray(table[firsts[picks][rows] + within])
    return data, ends - lengths, ends, picks


def tiled_prefix_reference(arrays, pool: list[bytes], starts: np.ndarray, picks: np.ndarray):
    """reference.trie_prefix_search of tiled spans, from each pool string searched alone."""
    data = np.frombuffer(b"".join(pool), np.uint8)
    lengths = np.array([len(p) for p in pool], np.int64)
    pool_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    e_starts, e_ends, e_values, e_offsets = reference.trie_prefix_search(*arrays, data, pool_starts,
                                                                          pool_starts + lengths)
    counts = np.diff(e_offsets)[picks]
    offsets = np.zeros(picks.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    span = np.repeat(np.arange(picks.size), counts)
    edge = e_offsets[picks][span] + (np.arange(offsets[-1]) - offsets[:-1][span])
    shift = starts[span] - pool_starts[picks][span]
    return e_starts[edge] + shift, e_ends[edge] + shift, e_values[edge], offsets


@pytest.mark.parametrize("count", [1_000_000, 10_000_000])
def test_millions_of_tiny_spans(count):
    """Spans of 0-12 bytes (short words, partial characters, noise) against the reference search
    of each distinct span: 10M on the Numba twin, 1M also on the emulated one-pass kernel (one
    emulated thread per byte: 10M spans, 27 MB, would take ~30 CPU seconds)."""
    from tests.emulated_backend import emulated_backend

    trie = DoubleArrayTrie.build(["你", "你好", "好", "a", "ab", "abc", "b", "\x80".encode("latin-1"), "😀"])
    pool = [b"", b"a", b"ab", b"abc", "你好".encode(), "你".encode()[:2], "好".encode()[1:], b"\x80", b"xb",
            "😀".encode(), "a你好b".encode(), b"zz"]
    data, starts, ends, picks = tiled_spans(np.random.default_rng(count), pool, count)
    arrays = (trie.state, trie.check, trie.label, trie.eow)
    expected = tiled_prefix_reference(arrays, pool, starts, picks)
    assert_equal_arrays(numba_twins.trie_prefix_search(*arrays, data, starts, ends), expected)
    if count <= 1_000_000:
        assert_equal_arrays(trie.prefix_search_spans(data, starts, ends, emulated_backend()), expected)


def test_more_matches_than_room_searches_again(monkeypatch):
    """When the first launch's room (an upper bound per byte) is too small, the wrapper launches
    once more with room for the exact total: the same edges."""
    from gpu_text.cuda_ops import trie as launchers
    from tests.cuda_emulator.device_counts import measure
    from tests.emulated_backend import counting_emulated_backend

    trie, data, span_starts, span_ends, expected = spans_case(1)
    be = counting_emulated_backend()
    for per_byte, slack, launches in [(launchers.MATCHES_PER_BYTE, launchers.MATCHES_SLACK, 1), (0, 7, 2)]:
        monkeypatch.setattr(launchers, "MATCHES_PER_BYTE", per_byte)
        monkeypatch.setattr(launchers, "MATCHES_SLACK", slack)
        trie.prefix_search_spans(data, span_starts, span_ends, be)
        with measure() as counts:
            got = trie.prefix_search_spans(data, span_starts, span_ends, be)
        assert_equal_arrays([np.asarray(g) for g in got], expected)
        # the span check reads one flag; the wrapper reads the byte count and the total
        assert (counts.launches, counts.syncs) == (launches, 2 + launches), counts


@pytest.mark.parametrize("workers,seed", [(4, 0), (3, 99)])
def test_look_back_across_parallel_workers(workers, seed):
    from gpu_text.cuda_ops import trie as launchers
    from tests.test_utf8_kernels import _WorkerRuntime

    trie, data, span_starts, span_ends, expected = spans_case(seed % 3)
    rt = _WorkerRuntime(workers, seed, "trie")
    arrays = (trie.state, trie.check, trie.label, trie.eow)
    assert_equal_arrays(launchers.trie_prefix_search(rt, *arrays, data, span_starts, span_ends), expected)
