"""Importing SentencePiece .model files: models trained here by sentencepiece, damaged files, other types."""
from __future__ import annotations

import functools
import io
from pathlib import Path

import numpy as np
import pytest

from gpu_text.tokenizer.sentencepiece_model import (
    SentencePieceModelError,
    load_sentencepiece_model,
    parse_sentencepiece_model,
)
from tests.conftest import require

spm = require("sentencepiece")
SAMPLES = Path(__file__).resolve().parents[1] / "gpu_text" / "data" / "samples"


def sample_lines() -> list[str]:
    lines = []
    for name, count in (("en-kjv.txt", 400), ("zh-hongloumeng.txt", 30)):
        lines += [line for line in (SAMPLES / name).read_text().splitlines() if line.strip()][:count]
    return lines + ["①②③ ＨＥＬＬＯ Ｗｏｒｌｄ ﬁne", "tab\tand  spaces"]


@functools.lru_cache(maxsize=None)
def trained(model_type: str = "bpe", **options) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sample_lines()), model_writer=model, model_type=model_type,
                                   vocab_size=1000, character_coverage=0.98, hard_vocab_limit=False, minloglevel=2, num_threads=1, **options)
    return model.getvalue()


@pytest.mark.parametrize("options", [
    dict(normalization_rule_name="nmt_nfkc"),
    dict(normalization_rule_name="nfkc_cf", byte_fallback=True, add_dummy_prefix=False, pad_id=3, unk_id=0,
         bos_id=1, eos_id=2, unk_piece="[UNK]"),
    dict(normalization_rule_name="identity", remove_extra_whitespaces=False),
], ids=["nmt_nfkc", "nfkc_cf-byte_fallback", "identity"])
def test_trained_models_import(options, tmp_path):
    blob = trained(**options)
    path = tmp_path / "m.model"
    path.write_bytes(blob)
    model = load_sentencepiece_model(path)
    processor = spm.SentencePieceProcessor(model_proto=blob)
    assert model.pieces == [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    np.testing.assert_array_equal(model.scores, np.array([processor.get_score(i) for i in range(len(model.pieces))],
                                                         np.float32))
    kinds = [2 if processor.is_unknown(i) else 3 if processor.is_control(i) else 6 if processor.is_byte(i)
             else 5 if processor.is_unused(i) else None for i in range(len(model.pieces))]
    assert all(k is None or k == t for k, t in zip(kinds, model.types.tolist()))
    assert model.model_type == "BPE" and model.vocab_size == 1000
    assert model.byte_fallback == options.get("byte_fallback", False)
    assert model.byte_fallback == (6 in model.types.tolist())
    assert (model.unk_id, model.bos_id, model.eos_id, model.pad_id) == (
        processor.unk_id(), processor.bos_id(), processor.eos_id(), processor.pad_id())
    assert model.unk_piece == options.get("unk_piece", "<unk>")
    assert model.add_dummy_prefix == options.get("add_dummy_prefix", True)
    assert model.remove_extra_whitespaces == options.get("remove_extra_whitespaces", True)
    assert model.normalizer_name == options["normalization_rule_name"]
    # the imported charsmap normalizes exactly as sentencepiece does with this model
    texts = sample_lines()[::7] + ["  ①②③  ＨＥＬＬＯ  ", "a\u00a0\u00a0b ", "", "\t x \t"]
    reference = spm.SentencePieceNormalizer(model_proto=blob)
    assert model.normalizer().normalize_strings(texts, "cpu") == [reference.normalize(t) for t in texts]


def test_unigram_is_refused():
    with pytest.raises(SentencePieceModelError, match="only BPE models .* this one is UNIGRAM"):
        parse_sentencepiece_model(trained("unigram"))


def test_truncated_files_name_the_place():
    blob = trained(normalization_rule_name="nmt_nfkc")
    for cut in (1, 2, 7, 100, len(blob) // 2, len(blob) - 3, len(blob) - 1):
        with pytest.raises(SentencePieceModelError, match=r"at byte \d+"):
            parse_sentencepiece_model(blob[:cut])


def test_garbage_and_empty():
    with pytest.raises(SentencePieceModelError, match="no pieces"):
        parse_sentencepiece_model(b"")
    rng = np.random.default_rng(0)
    for _ in range(200):  # random bytes: a clear error, never a crash or a hang
        blob = rng.integers(0, 256, int(rng.integers(1, 300))).astype(np.uint8).tobytes()
        try:
            parse_sentencepiece_model(blob)
        except SentencePieceModelError as exc:
            assert "SentencePiece" in str(exc) or "BPE" in str(exc)


def test_bad_fields():
    with pytest.raises(SentencePieceModelError, match="wire type 0, expected 2"):
        parse_sentencepiece_model(b"\x08\x01")
    with pytest.raises(SentencePieceModelError, match="not valid UTF-8"):
        parse_sentencepiece_model(b"\x0a\x03\x0a\x01\xff")
    with pytest.raises(SentencePieceModelError, match="type 9, not 1-6"):
        parse_sentencepiece_model(b"\x0a\x05\x0a\x01a\x18\x09")
    bad_charsmap = b"\x0a\x03\x0a\x01a" + b"\x12\x02\x18\x02" + b"\x1a\x04\x12\x02\x01\x00"
    with pytest.raises(SentencePieceModelError, match="precompiled_charsmap at byte"):
        parse_sentencepiece_model(bad_charsmap)
