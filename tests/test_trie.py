"""DoubleArrayTrie: building, single-string queries, files, and the Numba helpers, against Python dicts."""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from cpu_fallback.double_array import trie_step, trie_value
from gpu_text.trie import DoubleArrayTrie

JIEBA_DICT = Path(__import__("jieba").__file__).with_name("dict.txt")


def random_dictionary(rng: np.random.Generator, count: int) -> dict[bytes, int]:
    """Words over a tiny ASCII alphabet (so many are prefixes of others), Chinese words and raw
    bytes, with random values."""
    han = [c.encode() for c in "中华人民共和国的一是不了在有我他这为之大来以个"]
    words: set[bytes] = set()
    while len(words) < count:
        kind = rng.integers(3)
        n = int(rng.integers(1, 7))
        if kind == 0:
            words.add(bytes(rng.choice(list(b"abc"), n).tolist()))
        elif kind == 1:
            words.add(b"".join(han[k] for k in rng.integers(0, len(han), n)))
        else:
            words.add(rng.integers(1, 256, n, dtype=np.uint8).tobytes())
    values = rng.permutation(10 * count)[:count]
    return dict(zip(sorted(words), values.tolist()))


def brute_prefixes(words: dict[bytes, int], text: bytes) -> list[tuple[int, int]]:
    return [(n, words[text[:n]]) for n in range(1, len(text) + 1) if text[:n] in words]


def test_seed_he_she_his():
    t = DoubleArrayTrie.build(["he", "she", "his"])
    assert (len(t), t.lookup("he"), t.lookup("she"), t.lookup("his")) == (3, 0, 1, 2)
    assert t.lookup("h") is None and t.lookup("hers") is None and "sh" not in t
    assert t.common_prefixes("hers") == [(2, 0)]
    assert t.predictive("h") == [(b"he", 0), (b"his", 2)]


def test_seed_cat_car_card_care_can():
    t = DoubleArrayTrie.build(["cat", "car", "card", "care", "can"])
    assert t.common_prefixes("card") == [(3, 1), (4, 2)]
    assert t.longest_prefix("cardigan") == (4, 2)
    assert [w for w, _ in t.predictive("ca")] == [b"can", b"car", b"card", b"care", b"cat"]
    assert t.predictive("car") == [(b"car", 1), (b"card", 2), (b"care", 3)]
    assert t.predictive("cb") == [] and t.predictive("cart") == []


@pytest.mark.parametrize("seed", range(4))
def test_random_dictionaries_match_a_dict(seed):
    rng = np.random.default_rng(seed)
    words = random_dictionary(rng, [1, 2, 300, 3000][seed])
    items = list(words.items())
    order = rng.permutation(len(items))  # build takes the words in any order
    t = DoubleArrayTrie.build([items[i][0] for i in order], [items[i][1] for i in order])
    assert len(t) == len(words)
    assert all(t.lookup(w) == v for w, v in words.items())
    assert all(w in t for w in words)
    probes = [bytes(rng.choice(list(b"abcd"), int(rng.integers(0, 9))).tolist()) for _ in range(300)]
    probes += [w + b"c" for w in list(words)[:100]] + [w[:-1] for w in list(words)[:100]]
    for text in probes:
        expected = brute_prefixes(words, text)
        assert t.lookup(text) == words.get(text)
        assert t.common_prefixes(text) == expected
        assert t.longest_prefix(text) == (expected[-1] if expected else None)
    for prefix in [b"", b"a", b"ab", "中".encode(), "中华".encode()[:4], b"\xff"]:
        assert t.predictive(prefix) == sorted((w, v) for w, v in words.items() if w.startswith(prefix))


def test_default_values_are_input_positions_and_str_is_utf8():
    t = DoubleArrayTrie.build(["中国", b"\xe4\xb8\xad", "a"])
    assert t.lookup("中") == 1 and t.lookup("中国".encode()) == 0 and t.lookup(b"a") == 2
    assert t.longest_prefix("中国人") == (6, 0)


def test_empty_dictionary():
    t = DoubleArrayTrie.build([])
    assert len(t) == 0 and t.lookup("a") is None and t.predictive("") == [] and t.common_prefixes("abc") == []
    assert t.lookup_batch(["a", ""], "cpu").tolist() == [-1, -1]


def test_queries_never_match_nul_or_empty_text():
    t = DoubleArrayTrie.build(["a", "ab"])
    assert t.lookup("") is None and t.lookup("a\0") is None and t.common_prefixes("a\0b") == [(1, 0)]
    assert t.predictive("a\0") == [] and t.longest_prefix("") is None


@pytest.mark.parametrize("words, message", [
    (["ok", ""], "word 1 is empty"),
    (["ok", "a\0b"], r"word 1 \('a\\x00b'\) contains a NUL byte"),
    (["b", "a", "中文", "b"], "duplicate word 'b' \\(words 0 and 3\\)"),
    ([b"x", "x"], "duplicate word"),
])
def test_bad_words(words, message):
    with pytest.raises(ValueError, match=message):
        DoubleArrayTrie.build(words)


@pytest.mark.parametrize("values", [[1], [1, -1], [0, 2**31], [0.5, 1.5]])
def test_bad_values(values):
    with pytest.raises(ValueError, match="values"):
        DoubleArrayTrie.build(["a", "b"], values)


def test_values_keep_their_full_range():
    t = DoubleArrayTrie.build(["a", "b"], np.array([2**31 - 1, 0], np.int64))
    assert (t.lookup("a"), t.lookup("b")) == (2**31 - 1, 0)


@pytest.mark.parametrize("mmap", [False, True])
def test_save_load_round_trip(tmp_path, mmap):
    words = random_dictionary(np.random.default_rng(5), 2000)
    t = DoubleArrayTrie.build(list(words), list(words.values()))
    path = tmp_path / "words.npz"
    t.save(path)
    loaded = DoubleArrayTrie.load(path, mmap=mmap)
    for name in ("state", "check", "label", "eow"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(t, name))
        assert isinstance(getattr(loaded, name).base, np.memmap) is mmap
    assert len(loaded) == len(words) and all(loaded.lookup(w) == v for w, v in words.items())
    assert loaded.lookup_batch(list(words)[:50], "cpu").tolist() == list(words.values())[:50]
    with np.load(path, allow_pickle=False) as npz:  # a plain .npz to numpy too
        np.testing.assert_array_equal(npz["state"], t.state)


def test_mmap_is_read_only_aligned_and_shares_the_file(tmp_path):
    path = tmp_path / "w.npz"
    DoubleArrayTrie.build(["a", "ab", "中"]).save(path)
    t = DoubleArrayTrie.load(path, mmap=True)
    for array in (t.state, t.check, t.label, t.eow):
        assert not array.flags.writeable and array.ctypes.data % 64 == 0
        assert Path(array.base.filename) == path
    assert t.predictive("a") == [(b"a", 0), (b"ab", 1)]


def corrupt(path: Path, **replace: np.ndarray) -> None:
    with np.load(path, allow_pickle=False) as npz:
        members = {k: npz[k] for k in npz.files}
    members.update(replace)
    np.savez(path, **members)


@pytest.mark.parametrize("mmap", [False, True])
def test_malformed_files_are_value_errors(tmp_path, mmap):
    good = tmp_path / "good.npz"
    t = DoubleArrayTrie.build(["he", "she", "his"])
    t.save(good)
    raw = good.read_bytes()
    cases = {}
    cases["not_zip.npz"] = b"hello"
    cases["truncated.npz"] = raw[: len(raw) // 2]
    cases["empty.npz"] = b""
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
    shuffled_check = t.check.copy()
    shuffled_check[np.flatnonzero(shuffled_check)[0]] += 1
    edits = {
        "format.npz": {"format": np.array("something else")},
        "dtype.npz": {"state": t.state.astype(np.int64)},
        "length.npz": {"eow": t.eow[:-1]},
        "out_of_range.npz": {"check": np.full_like(t.check, t.check.size + 5)},
        "misplaced.npz": {"check": shuffled_check},
        "pickled.npz": {"label": np.array([object()], dtype=object)},
    }
    for name, replace in edits.items():
        (tmp_path / name).write_bytes(raw)
        corrupt(tmp_path / name, **replace)
    with zipfile.ZipFile(tmp_path / "missing.npz", "w") as archive:
        archive.writestr("format.npy", zipfile.ZipFile(good).read("format.npy"))
    for name in [*cases, *edits, "missing.npz"]:
        with pytest.raises(ValueError, match="is not a saved DoubleArrayTrie"):
            DoubleArrayTrie.load(tmp_path / name, mmap=mmap)
    with pytest.raises(FileNotFoundError):
        DoubleArrayTrie.load(tmp_path / "absent.npz", mmap=mmap)


def test_compressed_files_load_but_cannot_be_mapped(tmp_path):
    t = DoubleArrayTrie.build(["a", "b"])
    path = tmp_path / "c.npz"
    np.savez_compressed(path, format=np.array("gpu_text.DoubleArrayTrie/1"), state=t.state, check=t.check,
                        label=t.label, eow=t.eow)
    assert DoubleArrayTrie.load(path).lookup("b") == 1
    with pytest.raises(ValueError, match="compressed"):
        DoubleArrayTrie.load(path, mmap=True)


@njit(cache=False)
def _count_words_in(state, check, label, eow, text):
    """Other Numba code walking the trie with the public helpers: all (start, value) matches."""
    total = 0
    for start in range(text.size):
        pos = 0
        for i in range(start, text.size):
            pos = trie_step(state, check, label, pos, text[i])
            if pos < 0:
                break
            if trie_value(state, check, label, eow, pos) >= 0:
                total += 1
    return total


def test_numba_helpers_work_from_other_numba_code():
    t = DoubleArrayTrie.build(["a", "ab", "b", "中"])
    text = np.frombuffer("abab中\0a".encode(), np.uint8)
    assert _count_words_in(t.state, t.check, t.label, t.eow, text) == 8
    assert trie_step(t.state, t.check, t.label, 0, np.uint8(0)) == -1  # NUL never steps


def jieba_words() -> list[str]:
    with open(JIEBA_DICT, encoding="utf-8") as f:
        words = [line.split(" ", 1)[0] for line in f]
    return list(dict.fromkeys(words))  # the file lists "B超" twice


def test_jieba_dictionary():
    words = jieba_words()
    t = DoubleArrayTrie.build(words)  # its build time is measured in benchmarks/segment.py
    assert len(t) == len(words) == 349_045
    rng = np.random.default_rng(0)
    for i in rng.integers(0, len(words), 2000).tolist() + [0, len(words) - 1]:
        assert t.lookup(words[i]) == i
    values = {w: i for i, w in enumerate(words)}
    assert t.common_prefixes("中华人民共和国万岁") == [
        (len(w.encode()), values[w]) for w in ["中", "中华", "中华人民", "中华人民共和国"]]
    expected = sorted((w.encode(), i) for w, i in values.items() if w.startswith("中华人民"))
    assert t.predictive("中华人民") == expected and len(expected) > 10
    assert t.lookup("中华人民共和") is None and t.lookup("B超") == values["B超"]
    assert t.nbytes < 10 * sum(len(w.encode()) + 1 for w in words)
