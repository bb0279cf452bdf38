"""CritbitTrie against the Trie library's examples (the seed) and a Python dict."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.trie import CritbitTrie
from tests.test_trie import random_dictionary


def test_seed_examples():
    t = CritbitTrie()
    assert [t.insert(w) for w in ["app", "apple", "application"]] == [0, 1, 2]
    assert sorted(t.values_with_prefix("app")) == [0, 1, 2]
    t = CritbitTrie()
    for w in ["a", "app", "apple"]:
        t.insert(w)
    assert t.common_prefix_values("applejack") == [t.get("apple"), t.get("app"), t.get("a")] == [2, 1, 0]


def test_seed_abcd_words():
    t = CritbitTrie()
    for w in ["a", "b", "c", "d", "aa", "ab", "abc"]:
        t.insert(w)
    assert t.values_with_prefix("") == [0, 4, 5, 6, 1, 2, 3]  # byte order: a aa ab abc b c d
    assert t.values_with_prefix("ab") == [5, 6] and t.common_prefix_values("abcd") == [6, 5, 0]


def test_empty_trie():
    t = CritbitTrie()
    assert len(t) == 0 and t.get("a") is None and "a" not in t
    assert t.values_with_prefix("") == [] and t.common_prefix_values("a") == []


def test_reinsert_keeps_or_replaces_the_value():
    t = CritbitTrie()
    assert t.insert("x") == 0 and t.insert("x") == 0 and t.insert("x", 9) == 9 and len(t) == 1
    assert t.insert("y") == 1  # auto-numbering counts words


@pytest.mark.parametrize("word", ["", "a\0", b"\0"])
def test_bad_words(word):
    with pytest.raises(ValueError):
        CritbitTrie().insert(word)


@pytest.mark.parametrize("seed", range(3))
def test_random_dictionaries_match_a_dict(seed):
    rng = np.random.default_rng(seed)
    words = random_dictionary(rng, 1500)
    items = list(words.items())
    t = CritbitTrie()
    for i in rng.permutation(len(items)):
        word, value = items[i]
        assert t.insert(word, value) == value
    assert len(t) == len(words) and all(t.get(w) == v for w, v in words.items())
    probes = [bytes(rng.choice(list(b"abcd"), int(rng.integers(0, 9))).tolist()) for _ in range(300)]
    probes += [w + b"c" for w in list(words)[:200]] + [w[:-1] for w in list(words)[:200]]
    for text in probes:
        assert t.get(text) == words.get(text) and (text in t) == (text in words)
        assert t.common_prefix_values(text) == [words[text[:n]] for n in range(len(text), 0, -1) if text[:n] in words]
    for prefix in [b"", b"a", b"ab", b"abc", "中".encode(), "中华".encode()[:4], b"\xff", b"zz"]:
        assert t.values_with_prefix(prefix) == [v for w, v in sorted(words.items()) if w.startswith(prefix)]


def test_shape_does_not_depend_on_insertion_order():
    words = [b"a", b"ab", b"abc", b"b", b"ba", "中".encode(), b"\x01", b"\xff\xff"]

    def shape(t):
        def walk(node):
            if hasattr(node, "key"):
                return node.key
            return (node.byte, node.mask, walk(node.child[0]), walk(node.child[1]))
        return walk(t._root)

    shapes = set()
    for seed in range(5):
        t = CritbitTrie()
        for i in np.random.default_rng(seed).permutation(len(words)):
            t.insert(words[i])
        shapes.add(shape(t))
    assert len(shapes) == 1
