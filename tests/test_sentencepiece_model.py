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


def test_unigram_imports_and_word_char_are_refused():
    model = parse_sentencepiece_model(trained("unigram"))
    processor = spm.SentencePieceProcessor(model_proto=trained("unigram"))
    assert model.model_type == "UNIGRAM"
    assert model.pieces == [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    for kind in ("word", "char"):
        with pytest.raises(SentencePieceModelError, match=f"only UNIGRAM and BPE models .* this one is {kind.upper()}"):
            parse_sentencepiece_model(trained(kind))


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


# --------------------------------------------------------------- edited models, checked as sentencepiece does


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def field(number: int, payload: int | bytes) -> bytes:
    """A varint field (int payload) or a length-delimited one (bytes)."""
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def top_fields(blob: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited top-level fields of a ModelProto (all of its fields are)."""
    out, pos = [], 0
    while pos < len(blob):
        key, pos = _read_varint(blob, pos)
        size, pos = _read_varint(blob, pos)
        out.append((key >> 3, blob[pos:pos + size]))
        pos += size
    return out


def _read_varint(blob: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        value |= (blob[pos] & 0x7F) << shift
        pos += 1
        if blob[pos - 1] < 0x80:
            return value, pos
        shift += 7


def piece(text: str | bytes, kind: int = 1, score: float = 0.0) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return field(1, raw) + varint(2 << 3 | 5) + np.float32(score).tobytes() + (field(3, kind) if kind != 1 else b"")


def rebuilt(blob: bytes, extra_pieces: list[bytes] = (), keep=lambda i, p: True, trainer: bytes = b"") -> bytes:
    """``blob`` with pieces filtered and added, and ``trainer`` fields merged into its trainer spec
    (protobuf merges a repeated embedded message: a later scalar wins)."""
    fields = top_fields(blob)
    pieces = [p for i, (n, p) in enumerate((n, p) for n, p in fields if n == 1) if keep(i, p)] + list(extra_pieces)
    rest = b"".join(field(n, p) for n, p in fields if n != 1)
    return b"".join(field(1, p) for p in pieces) + rest + (field(2, trainer) if trainer else b"")


@pytest.fixture(scope="module")
def base() -> bytes:
    return trained(normalization_rule_name="nmt_nfkc")


def sp_ids(blob: bytes) -> tuple[int, int, int, int]:
    p = spm.SentencePieceProcessor(model_proto=blob)
    return p.unk_id(), p.bos_id(), p.eos_id(), p.pad_id()


@pytest.mark.parametrize("trainer", [
    field(41, 99999), field(42, -1), field(41, 5), field(40, 7), field(43, 1), field(43, 0),
    field(46, b"zzz"), field(46, b"</s>"), field(48, b"</s>"), field(48, b"<unk>"), field(46, "▁t".encode()),
], ids=["bos_id=99999", "eos_id=-1", "bos_id=5", "unk_id=7", "pad_id=1", "pad_id=0", "bos_piece=zzz",
        "bos_piece=eos", "pad_piece=eos", "pad_piece=unk", "bos_piece=normal"])
def test_special_ids_are_found_as_sentencepiece_finds_them(base, trainer, tmp_path):
    """The trainer spec's ids are ignored: the ids are those of the pieces the spec names, when CONTROL."""
    from gpu_text.tokenizer import Tokenizer

    blob = rebuilt(base, trainer=trainer)
    model = parse_sentencepiece_model(blob)
    assert (model.unk_id, model.bos_id, model.eos_id, model.pad_id) == sp_ids(blob)
    path = tmp_path / "m.model"
    path.write_bytes(blob)
    tok = Tokenizer.from_sentencepiece(path)
    processor = spm.SentencePieceProcessor(model_proto=blob)
    texts = ["In the beginning", "满纸荒唐言"]
    for flags in (dict(add_bos=True), dict(add_eos=True), dict(add_bos=True, add_eos=True)):
        if (flags.get("add_bos") and model.bos_id < 0) or (flags.get("add_eos") and model.eos_id < 0):
            with pytest.raises(ValueError, match="no (bos|eos) token"):
                tok.encode(texts, "cpu", **flags)
            with pytest.raises((RuntimeError, ValueError), match="not defined as a control symbol"):
                processor.encode(texts, **flags)
        else:
            assert tok.encode(texts, "cpu", **flags).ids.to_pylist() == processor.encode(texts, **flags)


def test_a_model_without_bos_and_eos(tmp_path):
    from gpu_text.tokenizer import Tokenizer

    blob = trained(normalization_rule_name="nmt_nfkc", bos_id=-1, eos_id=-1)
    path = tmp_path / "m.model"
    path.write_bytes(blob)
    tok = Tokenizer.from_sentencepiece(path)
    assert (tok.bos_id, tok.eos_id) == (-1, -1) == sp_ids(blob)[1:3]
    for flag in ("add_bos", "add_eos"):
        with pytest.raises(ValueError, match="this tokenizer has no"):
            tok.encode(["a"], "cpu", **{flag: True})


def unk_first(i: int, p: bytes) -> bool:
    return i != 0


@pytest.mark.parametrize("edit, message, sentencepiece_loads", [
    (dict(extra_pieces=[piece("")]), r"ModelProto.pieces\[\d+\]\): piece \d+ is empty", False),
    (dict(extra_pieces=[piece("", 3)]), "is empty", False),
    (dict(extra_pieces=[piece("<s>", 3)]), r"piece \d+ '<s>' is piece 1 again", False),
    (dict(extra_pieces=[piece("<0x41>", 6)]), "'<0x41>' is a BYTE piece, but the trainer spec says byte_fallback=false",
     False),
    (dict(extra_pieces=[piece("<0xZZ>", 6)], trainer=field(35, 1)), "'<0xZZ>' is a BYTE piece but not one of", False),
    (dict(extra_pieces=[piece("<0x0a>", 6)], trainer=field(35, 1)), "'<0x0a>' is a BYTE piece but not one of", False),
    (dict(trainer=field(35, 1)), "byte_fallback=true needs the 256 BYTE pieces", False),
    (dict(extra_pieces=[piece("<unk2>", 2)]), r"is a second UNKNOWN piece \(piece 0 is one\)", False),
    (dict(keep=unk_first), "no piece has type UNKNOWN", False),
    (dict(extra_pieces=[piece("a" * 8000)]), "is 8000 bytes long; a piece has at most 7999", False),
    (dict(extra_pieces=[piece("é" * 4000)]), "is 8000 bytes long", False),
    (dict(extra_pieces=[piece("▁the")]), r"'▁the' is piece 7 again", False),
    (dict(extra_pieces=[piece("▁the", 3)]), r"'▁the' is piece 7 again", False),
    # sentencepiece loads this one (NaN orders no merge): refused here
    (dict(extra_pieces=[piece("zq", 1, float("nan"))]), "'zq' has score nan", True),
])
def test_bad_pieces_are_refused_with_the_place(base, edit, message, sentencepiece_loads, tmp_path):
    blob = rebuilt(base, **edit)
    path = tmp_path / "bad.model"
    path.write_bytes(blob)
    with pytest.raises(SentencePieceModelError, match=r"bad.model: malformed SentencePiece model.*" + message):
        load_sentencepiece_model(path)
    try:
        spm.SentencePieceProcessor(model_proto=blob)
        loads = True
    except RuntimeError:
        loads = False
    assert loads == sentencepiece_loads


def test_the_longest_piece_sentencepiece_loads_loads(base):
    blob = rebuilt(base, extra_pieces=[piece("a" * 7999), piece("你" * 2666)])
    spm.SentencePieceProcessor(model_proto=blob)
    assert len(parse_sentencepiece_model(blob).pieces[-2]) == 7999


def test_a_file_cut_between_fields_says_truncated(base):
    """Cut after some pieces (a valid protobuf prefix): truncated, not "UNIGRAM" (the default type)."""
    fields = top_fields(base)
    ends = np.cumsum([len(field(n, p)) for n, p in fields])
    for cut in (ends[0], ends[len(ends) // 2], ends[[n for n, _ in fields].index(2) - 1]):
        with pytest.raises(SentencePieceModelError, match=rf"at byte {cut} .*without a trainer_spec .*truncated"):
            parse_sentencepiece_model(base[:cut])
