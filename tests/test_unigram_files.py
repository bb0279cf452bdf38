"""Tokenizer files name their model type: save -> load gives the same Tokenizer subclass and the
same ids for BPE, BytePiece and Unigram; BPE files written before types were named still load;
Unigram models load through Tokenizer.from_file and the real CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gpu_text.tokenizer import BPEModel, BytePiece, BytePieceModel, Normalizer, PreTokenizer, Tokenizer, \
    TokenizerFileError, Unigram
from gpu_text.tokenizer.bpe import byte_piece
from tests.conftest import require
from tests.test_unigram import CONFIGS, EXTRA, sample_lines

ROOT = Path(__file__).resolve().parents[1]
TEXTS = sample_lines()[::40] + EXTRA


@pytest.fixture(scope="module")
def unigram_path(tmp_path_factory) -> Path:
    spm = require("sentencepiece")
    folder = tmp_path_factory.mktemp("unigram-file")
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sample_lines()), model_prefix=str(folder / "u"),
                                   model_type="unigram", num_threads=2, minloglevel=2, hard_vocab_limit=False,
                                   **CONFIGS["v4000-nmt_nfkc-bytes"])
    return folder / "u.model"


def bytepiece() -> BytePiece:
    pieces = ["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)] + ["In", "the", "▁", "be", "gin"]
    model = BytePieceModel(pieces, [0.0] * 259 + [10.0, 30.0, 50.0, 7.0, 3.0], [2, 3, 3] + [6] * 256 + [1] * 5,
                           fallback_weight=-9.5, max_prefix_matches=8)
    return BytePiece(model, Normalizer("no"), PreTokenizer(), bos_id=1, eos_id=2)


def bpe() -> Tokenizer:
    pieces = ["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)] + ["▁t", "he", "▁the"]
    model = BPEModel(pieces, [0.0] * 259 + [-1.0, -2.0, 0.0], [2, 3, 3] + [6] * 256 + [1] * 3, byte_fallback=True)
    return Tokenizer(model, Normalizer("NFKC", add_dummy_prefix=True), PreTokenizer("whitespace"), 1, 2)


@pytest.mark.parametrize("kind", ["bpe", "bytepiece", "unigram"])
def test_save_load_same_class_and_ids(kind, unigram_path, tmp_path):
    tok = {"bpe": bpe, "bytepiece": bytepiece, "unigram": lambda: Tokenizer.from_file(unigram_path)}[kind]()
    path = tmp_path / "tok.json"
    tok.save(path)
    assert json.loads(path.read_text())["model"]["type"] == kind
    for loader in (Tokenizer.load, Tokenizer.from_file, type(tok).load):
        again = loader(path)
        assert type(again) is type(tok)
        assert again.encode(TEXTS, with_offsets=True).ends.to_pylist() == tok.encode(TEXTS, with_offsets=True
                                                                                     ).ends.to_pylist()
        assert again.encode(TEXTS, add_bos=True).ids.to_pylist() == tok.encode(TEXTS, add_bos=True).ids.to_pylist()
        ids = tok.encode(TEXTS).ids.to_pylist()
        assert again.decode_batch(ids) == tok.decode_batch(ids)
    if kind == "bytepiece":
        model = Tokenizer.load(path).model
        assert (model.fallback_weight, model.max_prefix_matches) == (-9.5, 8)


def test_old_bpe_files_without_a_type_load(tmp_path):
    tok = bpe()
    spec = tok.to_dict()
    del spec["model"]["type"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(spec))
    again = Tokenizer.load(path)
    assert type(again) is Tokenizer and again.encode(TEXTS).ids.to_pylist() == tok.encode(TEXTS).ids.to_pylist()


def test_unknown_or_mismatched_types_are_clear(unigram_path, tmp_path):
    spec = Tokenizer.from_file(unigram_path).to_dict()
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**spec, "model": {**spec["model"], "type": "wordpiece"}}))
    with pytest.raises(TokenizerFileError, match="model type 'wordpiece' is none of"):
        Tokenizer.load(path)
    path.write_text(json.dumps(spec))
    with pytest.raises(TokenizerFileError, match="a 'unigram' model, which BytePiece does not load"):
        BytePiece.load(path)
    path.write_text(json.dumps({**spec, "model": {**spec["model"], "scores": spec["model"]["scores"][:-1]}}))
    with pytest.raises(TokenizerFileError, match="pieces but"):
        Tokenizer.load(path)


def test_cli_tokenizes_with_a_unigram_model(unigram_path, tmp_path):
    spm = require("sentencepiece")
    source = tmp_path / "in.txt"
    texts = ["In the beginning God created", "宝玉笑道：你好", "  spaces  and ＦＵＬＬ width"]
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    env = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))}
    result = subprocess.run([sys.executable, "-m", "gpu_text.cli", "tokenize", "--model", str(unigram_path),
                             "--backend", "cpu", str(source), str(tmp_path / "out.parquet")], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    table = pq.read_table(tmp_path / "out.parquet")
    column = next(name for name in table.column_names if "id" in name)
    assert table.column(column).to_pylist() == spm.SentencePieceProcessor(model_file=str(unigram_path)).encode(texts)


def test_out_of_device_memory_halves_the_batch(monkeypatch):
    """On a GPU out of memory the Unigram encoder retries in halves of the rows (the emulated CUDA
    backend failing above 30 bytes): the same ids and spans; one text too big says so."""
    from gpu_text.tokenizer import UnigramModel
    from tests.emulated_backend import emulated_backend

    model = UnigramModel(["<unk>", "a", "b", "ab", "▁", "▁ab"], [0.0, -1.0, -2.0, -1.5, -3.0, -2.0],
                         [2, 1, 1, 1, 1, 1])
    tok = Unigram(model, Normalizer("no", add_dummy_prefix=True), PreTokenizer("none"))
    texts = ["ab ab", "", "a", "bbb abab", "ab" * 12, "b a"]
    be = emulated_backend()
    want = tok.encode(texts, backend=be, with_offsets=True)
    assert want.ids.to_pylist() == tok.encode(texts, backend="cpu").ids.to_pylist()

    class OutOfMemoryError(Exception):
        """Named as CuPy's."""

    fitting, calls = Tokenizer._encode_stages, []

    def small_device(self, batch, backend, with_offsets):
        calls.append(len(batch))
        if batch.nbytes > 30:
            raise OutOfMemoryError("out of memory allocating 1 GiB")
        return fitting(self, batch, backend, with_offsets)

    monkeypatch.setattr(Tokenizer, "_encode_stages", small_device)
    got = tok.encode(texts, backend=be, with_offsets=True)
    assert max(calls) == len(texts) and min(calls) == 1
    for g, w in zip((got.ids, got.starts, got.ends), (want.ids, want.starts, want.ends)):
        assert g.to_pylist() == w.to_pylist()
    with pytest.raises(MemoryError, match="40 bytes does not fit"):
        tok.encode(["ab" * 20], backend=be)
