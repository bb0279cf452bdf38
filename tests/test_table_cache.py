"""The model-table cache (gpu_text.table_cache): a .model loaded from its cached charsmap encodes
exactly as one built from scratch; damaged, unwritable and disabled caches only mean building."""
import os

import numpy as np
import pytest

from gpu_text.table_cache import CACHE_VAR, cached_arrays
from gpu_text.tokenizer import Tokenizer
from gpu_text.tokenizer.normalizer import PrecompiledCharsmap, decode_precompiled_charsmap

TEXTS = ["Hello  World ①②③ ＨＥＬＬＯ", "中华人民共和国 ＡＢＣ ｶﾀｶﾅ", "", "\u3000full\u3000width\u3000"]


@pytest.fixture
def sp_model(tmp_path_factory):
    spm = pytest.importorskip("sentencepiece")
    folder = tmp_path_factory.mktemp("sp")
    text = folder / "t.txt"
    text.write_text("\n".join(TEXTS * 50 + ["the quick brown fox jumps over the lazy dog"] * 50), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "m"), vocab_size=60, model_type="bpe",
                                   normalization_rule_name="nmt_nfkc", minloglevel=2)
    return str(folder / "m.model"), spm.SentencePieceProcessor(model_file=str(folder / "m.model"))


def test_a_cached_charsmap_encodes_as_a_built_one(sp_model, tmp_path, monkeypatch):
    path, sp = sp_model
    monkeypatch.setenv(CACHE_VAR, str(tmp_path / "cache"))
    first = Tokenizer.from_file(path)  # builds and stores
    entries = sorted(os.listdir(tmp_path / "cache"))
    assert len(entries) == 2 and entries[0].startswith("bpe-merges-") and entries[1].startswith("charsmap-")
    again = Tokenizer.from_file(path)  # from the cache: nothing decoded
    assert again.normalizer.charsmap_pairs._pairs is None
    monkeypatch.setenv(CACHE_VAR, "0")
    built = Tokenizer.from_file(path)
    for tok in (first, again, built):
        assert tok.encode(TEXTS, backend="cpu").ids.to_pylist() == sp.encode(TEXTS)
    # the pairs are still there to read (saving the tokenizer writes them)
    assert again.normalizer.charsmap_pairs == built.normalizer.charsmap_pairs
    assert list(again.normalizer.charsmap_pairs)[:3] == list(built.normalizer.charsmap_pairs)[:3]


def test_a_damaged_entry_is_rebuilt_and_replaced(sp_model, tmp_path, monkeypatch):
    path, sp = sp_model
    monkeypatch.setenv(CACHE_VAR, str(tmp_path))
    Tokenizer.from_file(path)
    (entry,) = [tmp_path / name for name in os.listdir(tmp_path) if name.startswith("charsmap-")]
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte inside a member: the zip CRC refuses it
    entry.write_bytes(bytes(data))
    tok = Tokenizer.from_file(path)
    assert tok.encode(TEXTS, backend="cpu").ids.to_pylist() == sp.encode(TEXTS)
    assert entry.read_bytes() != bytes(data)  # replaced by a good entry


def test_an_unwritable_cache_path_only_means_building(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"not a folder")
    monkeypatch.setenv(CACHE_VAR, str(blocker / "sub"))
    calls = []
    for _ in range(2):
        assert cached_arrays("t", b"x", lambda: calls.append(1) or {"a": np.arange(3)})["a"].tolist() == [0, 1, 2]
    assert len(calls) == 2


def test_entries_are_named_by_source_and_builder(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_VAR, str(cache))
    builder = tmp_path / "builder.py"
    builder.write_text("v1")
    for source in (b"a", b"b", b"a"):
        cached_arrays("t", source, lambda: {"a": np.zeros(1)}, str(builder))
    assert len(os.listdir(cache)) == 2
    monkeypatch.setattr("gpu_text.table_cache._DIGESTS", {})
    builder.write_text("v2")  # a changed builder never reads the old entries
    calls = []
    cached_arrays("t", b"a", lambda: calls.append(1) or {"a": np.zeros(1)}, str(builder))
    assert calls == [1] and len(os.listdir(cache)) == 3


def test_a_bad_blob_is_refused_as_before():
    with pytest.raises(ValueError):
        decode_precompiled_charsmap(b"\x05\x00\x00\x00xxxxx")
    with pytest.raises(ValueError):
        PrecompiledCharsmap(b"\x05\x00\x00\x00xxxxx").check()
