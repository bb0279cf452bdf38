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
