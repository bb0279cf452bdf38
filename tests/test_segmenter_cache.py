"""Segmenter.save / Segmenter.load and the segmenter cache of ``gpu-text segment``: a loaded
segmenter cuts exactly as the built one, and a stale, corrupt or unwritable cache is never used."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from gpu_text.cli import main
from gpu_text.segment import Dictionary, Segmenter, parse_dictionary
from gpu_text.segment.commands import segmenter_cache_path

LINES = ["他是英国人Tom，编号123", "", "  你好 世界！", "南京市长江大桥abc1 2x", "\ud800坏", "英国英国人" * 300]
DICTIONARY = "他\t50\n是\t40\n英国\t80\n英国人\t100\n人\t30\n南京\t10\n南京市\t5\n市长\t9\n长江\t20\n大桥\t8\n零\t0\n"


def dictionary() -> Dictionary:
    return parse_dictionary(DICTIONARY.splitlines() + ["bad line"], on_error="skip")


def same_segmentation(a: Segmenter, b: Segmenter) -> None:
    x, y = a.segment(LINES, backend="cpu"), b.segment(LINES, backend="cpu")
    assert x.starts.to_pylist() == y.starts.to_pylist()
    assert x.ends.to_pylist() == y.ends.to_pylist()
    assert x.word_ids.to_pylist() == y.word_ids.to_pylist()


@pytest.mark.parametrize("compat", [None, "dictcut", "jieba"])
def test_save_load_round_trip(tmp_path, compat):
    built = Segmenter(dictionary(), compat=compat)
    built.save(tmp_path / "s.npz", tag="key")
    loaded = Segmenter.load(tmp_path / "s.npz", tag="key")
    same_segmentation(built, loaded)
    assert loaded.compat == compat and loaded.to_dict() == built.to_dict()
    assert loaded.dictionary.skipped == built.dictionary.skipped and len(loaded.dictionary.skipped) == 1
    assert np.array_equal(loaded.weights, built.weights) and loaded.max_word_bytes == built.max_word_bytes
    assert (loaded.unknown_weight, loaded.tail_score) == (built.unknown_weight, built.tail_score)
    assert loaded.trie.state.flags.writeable  # one Numba specialisation for built and loaded tries
    assert not list(tmp_path.glob(".segmenter-*"))  # no temporary left behind


@pytest.mark.parametrize("words", [None, Dictionary([], np.zeros(0, np.int64), 0)])
def test_save_load_without_words(tmp_path, words):
    built = Segmenter(words, compat="jieba")
    built.save(tmp_path / "s.npz")
    loaded = Segmenter.load(tmp_path / "s.npz")
    same_segmentation(built, loaded)
    assert loaded.trie is None and loaded.to_dict() == built.to_dict()


def test_load_rejects_corrupt_foreign_and_mistagged_files(tmp_path):
    path = tmp_path / "s.npz"
    Segmenter(dictionary(), compat="jieba").save(path, tag="a")
    raw = bytearray(path.read_bytes())
    with pytest.raises(ValueError, match="saved with tag 'a', not 'b'"):
        Segmenter.load(path, tag="b")
    # one flipped byte in every 4096 in turn: the digest (or the zip, or the trie check) catches it
    for at in range(100, len(raw), 4096):
        bad = bytearray(raw)
        bad[at] ^= 0x10
        (tmp_path / "bad.npz").write_bytes(bytes(bad))
        with pytest.raises(ValueError, match="is not a saved Segmenter"):
            Segmenter.load(tmp_path / "bad.npz")
    (tmp_path / "short.npz").write_bytes(bytes(raw[:len(raw) // 2]))
    with pytest.raises(ValueError, match="is not a saved Segmenter"):
        Segmenter.load(tmp_path / "short.npz")
    from gpu_text.trie import DoubleArrayTrie
    DoubleArrayTrie.build(["a"]).save(tmp_path / "trie.npz")  # a trie file is not a segmenter
    with pytest.raises(ValueError, match="expected 'gpu_text.Segmenter/1'"):
        Segmenter.load(tmp_path / "trie.npz")
    with pytest.raises(FileNotFoundError):
        Segmenter.load(tmp_path / "missing.npz")


def run_cli(tmp_path: Path, capsys, dict_path: Path, compat: str = "jieba") -> tuple[str, str]:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES).replace("\ud800", "?"), encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["segment", "--dict", str(dict_path), "--compat", compat, "--on-error", "skip", "--backend", "cpu",
                 "--verbose", str(source), str(out)]) == 0
    err = capsys.readouterr().err
    return out.read_text(encoding="utf-8"), err.split("segmenter cache: ")[1].split(")")[0]


def test_cli_caches_the_segmenter_and_rebuilds_a_bad_entry(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    dict_path = tmp_path / "d.txt"
    dict_path.write_text(DICTIONARY + "bad line\n", encoding="utf-8")
    expected, state = run_cli(tmp_path, capsys, dict_path)
    assert state == "miss, written"
    entry = segmenter_cache_path(str(dict_path), "jieba", "skip")
    assert entry.parent == tmp_path / "cache" / "gpu_text" and entry.is_file()
    assert run_cli(tmp_path, capsys, dict_path) == (expected, "hit")

    # corrupt: rebuilt, replaced, same output
    entry.write_bytes(entry.read_bytes()[:-100])
    assert run_cli(tmp_path, capsys, dict_path) == (expected, "miss, written")
    assert run_cli(tmp_path, capsys, dict_path) == (expected, "hit")

    # stale: a segmenter of another dictionary under this entry's name is not used
    other = Segmenter(parse_dictionary(["英国人\t1", "英国\t1000"]), compat="jieba")
    other.save(entry, tag="someone else's key")
    assert run_cli(tmp_path, capsys, dict_path) == (expected, "miss, written")

    # another compat mode or another dictionary is another entry
    dictcut, state = run_cli(tmp_path, capsys, dict_path, compat="dictcut")
    assert state == "miss, written" and dictcut != expected
    dict_path.write_text(DICTIONARY.replace("英国人\t100", "英国人\t1"), encoding="utf-8")
    changed, state = run_cli(tmp_path, capsys, dict_path)
    assert state == "miss, written" and changed != expected
    assert changed == "".join(" ".join(w) + "\n" for w in Segmenter(
        parse_dictionary(DICTIONARY.replace("英国人\t100", "英国人\t1").splitlines()), compat="jieba").segment(
        [line.replace("\ud800", "?") for line in LINES], backend="cpu").words())
    assert len(list(entry.parent.glob("segmenter-*.npz"))) == 3


def test_cli_cached_skipped_lines_name_the_file_given(tmp_path, capsys, monkeypatch):
    """The same dictionary bytes under another name: its skipped lines are reported under that name."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("a.txt", "b.txt", "a.txt"):
        (tmp_path / name).write_text(DICTIONARY + "bad line\n", encoding="utf-8")
        _, state = run_cli(tmp_path, capsys, tmp_path / name)
    source = tmp_path / "in.txt"
    assert main(["segment", "--dict", str(tmp_path / "b.txt"), "--on-error", "skip", "--compat", "jieba",
                 str(source), str(tmp_path / "out.txt")]) == 0
    err = capsys.readouterr().err
    assert f"{tmp_path / 'b.txt'}:12:" in err and "a.txt" not in err and state == "hit"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_cli_runs_without_a_writable_cache(tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    monkeypatch.setenv("XDG_CACHE_HOME", str(locked))
    dict_path = tmp_path / "d.txt"
    dict_path.write_text(DICTIONARY, encoding="utf-8")
    try:
        text, state = run_cli(tmp_path, capsys, dict_path)
    finally:
        locked.chmod(0o700)
    assert state == "miss, not writable" and text.startswith("他 是 英国人 Tom")


def test_cli_cache_folder_is_a_file(tmp_path, capsys, monkeypatch):
    """An unusable cache location (here a file where the folder should be) means no cache."""
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    dict_path = tmp_path / "d.txt"
    dict_path.write_text(DICTIONARY, encoding="utf-8")
    text, state = run_cli(tmp_path, capsys, dict_path)
    assert state == "miss, not writable" and text.startswith("他 是 英国人 Tom")


# ------------------------------------------- the CPU's fused pass (segment_rows) == staged path

def random_case(rng: np.random.Generator) -> tuple[list[bytes], Dictionary]:
    """Rows mixing Han, ASCII letters/digits, spaces, punctuation and malformed bytes, and a
    dictionary with ties, frequency-0 words and ASCII words."""
    alphabet = ["中", "国", "人", "民", "大", "学", "生", "a", "b", "1", "2", " ", "，", "\t", "😀", "-", "."]
    pieces = [c.encode() for c in alphabet] + [b"\xe4\xbd", b"\xff", b"\x80"]
    rows = [b"".join(pieces[i] for i in rng.integers(0, len(pieces), rng.integers(0, 40))) for _ in range(60)]
    words = sorted({"".join(rng.choice(alphabet[:10], rng.integers(1, 4))).strip() or "中" for _ in range(40)})
    freqs = rng.choice([0, 1, 2, 2, 5, 50], len(words))
    return rows, Dictionary(words, freqs.astype(np.int64), int(freqs.sum()) + 3)


@pytest.mark.parametrize("seed", range(6))
def test_fused_rows_equal_the_staged_path(monkeypatch, seed):
    import cpu_fallback.segment as twins

    rng = np.random.default_rng(seed)
    rows, words = random_case(rng)
    for compat in (None, "jieba"):
        segmenter = Segmenter(words, compat=compat)
        fused = segmenter.segment(rows, backend="cpu")
        with monkeypatch.context() as patch:
            patch.delattr(twins, "segment_rows")  # has_op is now False: the staged kernels run
            staged = segmenter.segment(rows, backend="cpu")
        for name in ("starts", "ends", "word_ids"):
            assert getattr(fused, name).to_pylist() == getattr(staged, name).to_pylist(), (compat, name)
        assert fused.starts.offsets.tolist() == staged.starts.offsets.tolist()


def test_fused_rows_keep_dictcuts_tie_rule(monkeypatch):
    """DictCut tries the one-character fallback first and keeps it on a tie: here "中" + "国"
    (weights log(1/10) + log(10/10)) ties "中国" (log(1/10)) exactly."""
    import cpu_fallback.segment as twins

    segmenter = Segmenter(Dictionary(["中国", "国"], np.array([1, 10]), 10))
    assert segmenter.segment(["中国"], backend="cpu").words() == [["中", "国"]]
    monkeypatch.delattr(twins, "segment_rows")
    assert segmenter.segment(["中国"], backend="cpu").words() == [["中", "国"]]


def test_rows_longer_than_the_window_take_the_staged_path(monkeypatch):
    """A row over ``window_bytes`` is solved in windows (bounded memory), with the same words."""
    import cpu_fallback.segment as twins

    calls = []
    fused = twins.segment_rows
    monkeypatch.setattr(twins, "segment_rows", lambda *a: calls.append(1) or fused(*a))
    rows = ["他是英国人" * 50, "英国人"]
    small = Segmenter(parse_dictionary(DICTIONARY.splitlines()), compat="jieba", window_bytes=64)
    big = Segmenter(parse_dictionary(DICTIONARY.splitlines()), compat="jieba")
    assert small.segment(rows, backend="cpu").words() == big.segment(rows, backend="cpu").words()
    assert len(calls) == 1  # only the big segmenter's batch went through the fused pass
