"""Tokenizer.save / Tokenizer.load: one file holding every stage, read back to the same tokenizer
(same ids, offsets and decode as the original, and as sentencepiece for an imported model); every
damaged file is a ValueError naming the file."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

import gpu_text
from gpu_text.demo import MODEL
from gpu_text.segment import Dictionary, Segmenter
from gpu_text.tokenizer import BPEModel, Normalizer, PreTokenizer, Tokenizer, TokenizerFileError
from gpu_text.tokenizer.bulk import load_tokenizer
from gpu_text.tokenizer.model_file import read_model_file
from gpu_text.tokenizer.tokenizer_file import FORMAT
from tests.conftest import require

SAMPLES = Path(gpu_text.__file__).parent / "data" / "samples"
TEXTS = ["", " ", "  In the beginning God created the heaven and the earth.  ", "ＡＢＣ１２３ ①②③ Ｈｅｌｌｏ",
         "满纸荒唐言，一把辛酸泪！都云作者痴，谁解其中味？", "e\u0301 combining, tabs\tand spaces   inside",
         "emoji 🙂🙃 mixed 你好 world 2024", "ﷺ ß ǅ İ", "x" * 300,
         "Don't panic: 3.14159 is π."]

SP_VARIANTS = {
    "nmt_nfkc+bytes": {"byte_fallback": True},
    "nmt_nfkc_cf,no-bytes": {"byte_fallback": False, "normalization_rule_name": "nmt_nfkc_cf"},
    "identity,no-prefix": {"byte_fallback": True, "normalization_rule_name": "identity", "add_dummy_prefix": False,
                           "remove_extra_whitespaces": False},
    "user-charsmap": {"byte_fallback": True, "normalization_rule_tsv": "rules.tsv"},
}


def assert_same_tokenizer(a: Tokenizer, b: Tokenizer, texts: list) -> None:
    """Same ids, original byte spans and decode, and the same spec."""
    ea, eb = a.encode(texts, backend="cpu", with_offsets=True), b.encode(texts, backend="cpu", with_offsets=True)
    for field in ("ids", "starts", "ends"):
        assert getattr(ea, field).to_pylist() == getattr(eb, field).to_pylist(), field
    assert a.decode_batch(ea.ids) == b.decode_batch(eb.ids)
    assert (a.bos_id, a.eos_id, a.pad_id) == (b.bos_id, b.eos_id, b.pad_id)
    assert a.to_dict() == b.to_dict()


def reloaded(tok: Tokenizer, path: Path) -> Tokenizer:
    tok.save(path)
    json.loads(path.read_text(encoding="utf-8"))  # plain JSON: any reader can open it
    return Tokenizer.load(path)


# --------------------------------------------------------------------- SentencePiece imports


@pytest.fixture(scope="module", params=list(SP_VARIANTS))
def sp_model(request, tmp_path_factory) -> str:
    spm = require("sentencepiece")
    folder = tmp_path_factory.mktemp(f"sp-{request.param_index}-")  # no commas: they separate input files
    lines = [line for path, count in (("en-kjv.txt", 400), ("zh-hongloumeng.txt", 30))
             for line in (SAMPLES / path).read_text(encoding="utf-8").splitlines()[:count]]
    (folder / "train.txt").write_text("\n".join(lines), encoding="utf-8")
    options = dict(SP_VARIANTS[request.param])
    if "normalization_rule_tsv" in options:
        # a user-defined charsmap: A -> a, full-width Ａ -> "AA", ① -> "(1)"
        (folder / "rules.tsv").write_text("41\t61\nFF21\t41 41\n2460\t28 31 29\n", encoding="utf-8")
        options["normalization_rule_tsv"] = str(folder / "rules.tsv")
    spm.SentencePieceTrainer.train(input=str(folder / "train.txt"), model_prefix=str(folder / "m"),
                                   model_type="bpe", vocab_size=1500, character_coverage=0.995, num_threads=1,
                                   minloglevel=2, **options)
    return str(folder / "m.model")


def test_imported_sentencepiece_model_round_trips(sp_model, tmp_path):
    spm = require("sentencepiece")
    original = Tokenizer.from_sentencepiece(sp_model)
    again = reloaded(original, tmp_path / "tok.json")
    assert_same_tokenizer(original, again, TEXTS)
    reference = spm.SentencePieceProcessor(model_file=sp_model)
    want = reference.encode(TEXTS)
    assert again.encode(TEXTS, backend="cpu").ids.to_pylist() == want
    # sentencepiece decodes an unknown id as " ⁇ "; ours drops it, so compare the rows without one
    rows = [row for row in want if reference.unk_id() not in row]
    assert again.decode_batch(rows) == reference.decode(rows)
    assert original.normalizer.charsmap_pairs is not None  # the model's own map went into the file
    assert again.normalizer.charsmap_pairs == original.normalizer.charsmap_pairs
    if (Path(sp_model).parent / "rules.tsv").exists():
        assert {(b"A", b"a"), ("①".encode(), b"(1)")} <= set(again.normalizer.charsmap_pairs)


# ---------------------------------------------------------------- the seed's text model format


def test_bundled_model_round_trips(tmp_path):
    original = Tokenizer.from_model_file(MODEL)
    again = reloaded(original, tmp_path / "sample.json")
    assert_same_tokenizer(original, again, TEXTS)
    assert load_tokenizer(tmp_path / "sample.json").to_dict() == original.to_dict()


def test_the_seed_format_writer_round_trips(tmp_path):
    original = Tokenizer.from_model_file(MODEL)
    original.save_model_file(tmp_path / "again.txt")
    again = Tokenizer.from_model_file(tmp_path / "again.txt")
    assert_same_tokenizer(original, again, TEXTS)
    written, bundled = read_model_file(tmp_path / "again.txt"), read_model_file(MODEL)
    assert written.pretokenizer == bundled.pretokenizer
    assert written.pieces.pieces == bundled.pieces.pieces
    np.testing.assert_array_equal(written.pieces.scores, bundled.pieces.scores)
    np.testing.assert_array_equal(written.pieces.types, bundled.pieces.types)
    for cut, split in enumerate(("word", "isolate", "whitespace")):
        tok = Tokenizer(original.model, Normalizer("NMT_NFKC", reconstruct=True), PreTokenizer(split, "split"))
        tok.save_model_file(tmp_path / f"{split}.txt")
        assert read_model_file(tmp_path / f"{split}.txt").pretokenizer.cut == cut
        assert_same_tokenizer(tok, Tokenizer.from_model_file(tmp_path / f"{split}.txt"), TEXTS)


def test_the_seed_format_writer_refuses_what_it_cannot_hold(tmp_path):
    model = Tokenizer.from_model_file(MODEL).model
    for normalizer, pre in ((Normalizer(add_dummy_prefix=True), PreTokenizer()),
                            (Normalizer("x", charsmap_pairs=[(b"a", b"b")]), PreTokenizer()),
                            (Normalizer(escape_whitespaces=False), PreTokenizer()),
                            (Normalizer(), PreTokenizer(cn="char"))):
        with pytest.raises(ValueError, match="cannot hold"):
            Tokenizer(model, normalizer, pre).save_model_file(tmp_path / "m.txt")
    no_fallback = BPEModel(model.piece_bytes, model.scores, model.types, byte_fallback=False)
    with pytest.raises(ValueError, match="byte_fallback=False"):  # the reader turns it on for these pieces
        Tokenizer(no_fallback, Normalizer(), PreTokenizer()).save_model_file(tmp_path / "m.txt")


def test_files_are_told_apart_by_content(tmp_path):
    original = Tokenizer.from_model_file(MODEL)
    original.save(tmp_path / "looks-like.model")
    (tmp_path / "seed.json").write_bytes(MODEL.read_bytes())
    assert load_tokenizer(tmp_path / "looks-like.model").to_dict() == original.to_dict()
    assert load_tokenizer(tmp_path / "seed.json").to_dict() == original.to_dict()


# ------------------------------------------------------------------ pre-tokenizer configurations

DICTIONARY = Dictionary(["满纸", "荒唐", "荒唐言", "辛酸", "辛酸泪", "作者", "其中", "你好"],
                        np.array([30, 20, 40, 25, 35, 60, 50, 0]), 400)


@pytest.mark.parametrize("split,digits,cn", [
    (split, digits, cn) for split in ("word", "isolate", "whitespace") for digits in ("keep", "split")
    for cn in (None, "char", "dictionary") if split != "whitespace" or cn is None])  # whitespace takes no cn
def test_every_pre_tokenizer_configuration_round_trips(split, digits, cn, tmp_path):
    model = Tokenizer.from_model_file(MODEL).model
    pre = PreTokenizer(split, digits, DICTIONARY if cn == "dictionary" else cn)
    original = Tokenizer(model, Normalizer("NFKC"), pre, bos_id=1, eos_id=2, pad_id=2)
    again = reloaded(original, tmp_path / "tok.json")
    assert_same_tokenizer(original, again, TEXTS)
    assert PreTokenizer.from_dict(pre.to_dict()).pre_tokenize_strings(["满纸荒唐言▁12▁ab"]) == \
        pre.pre_tokenize_strings(["满纸荒唐言▁12▁ab"])


def test_a_dictionary_from_a_file_is_saved_as_its_words(tmp_path):
    DICTIONARY.save(tmp_path / "dict.tsv")
    pre = PreTokenizer(cn=str(tmp_path / "dict.tsv"))
    spec = pre.to_dict()
    assert spec["cn"]["dictionary"]["words"] == DICTIONARY.words and spec["cn"]["compat"] is None
    (tmp_path / "dict.tsv").unlink()  # the file need not outlive the spec
    assert PreTokenizer.from_dict(spec).pre_tokenize_strings(["荒唐言"]) == [["荒唐言"]]


@pytest.mark.parametrize("compat", [None, "jieba"])
def test_segmenter_spec_round_trips(compat):
    seg = Segmenter(DICTIONARY, compat=compat)
    again = Segmenter.from_dict(json.loads(json.dumps(seg.to_dict())))
    text = "满纸荒唐言，一把辛酸泪！都云作者痴，谁解其中味？你好"
    assert again.cut(text) == seg.cut(text) and again.compat == compat
    assert again.dictionary.total == DICTIONARY.total


# ------------------------------------------------------------------------------ damaged files


def small_spec() -> dict:
    pieces = ["<unk>", "<s>", "</s>", "▁a", "b", {"base64": "/w=="}]
    tok = Tokenizer(BPEModel([p if isinstance(p, str) else b"\xff" for p in pieces], [0, 0, 0, -1, -2, -3],
                             [2, 3, 3, 1, 1, 1]), Normalizer("x", charsmap_pairs=[(b"c", b"b")]),
                    PreTokenizer(cn=Dictionary(["你好"], np.array([2]), 2)), bos_id=1, eos_id=2)
    return tok.to_dict()


def leaves(spec, path=()):
    """Every (path, value) of a nested spec, lists included (only their first item)."""
    yield path, spec
    if isinstance(spec, dict):
        for key, value in spec.items():
            yield from leaves(value, path + (key,))
    elif isinstance(spec, list) and spec:
        yield from leaves(spec[0], path + (0,))


def mutated(spec: dict, path: tuple, how: str) -> dict:
    spec = copy.deepcopy(spec)
    parent = spec
    for key in path[:-1]:
        parent = parent[key]
    if how == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = {"wrong type": [], "null": None, "number": 12345, "text": "?"}[how]
    return spec


def test_every_damaged_spec_is_a_value_error_naming_the_file(tmp_path):
    spec = small_spec()
    path = tmp_path / "bad.json"
    Tokenizer.from_dict(spec)
    checked = 0
    for where, _ in leaves(spec):
        if not where:
            continue
        for how in ("delete", "wrong type", "null", "number", "text"):
            if how == "delete" and isinstance(where[-1], int):
                continue
            bad = mutated(spec, where, how)
            path.write_text(json.dumps(bad), encoding="utf-8")
            try:
                Tokenizer.load(path)
            except ValueError as exc:
                assert str(path) in str(exc)
                checked += 1
            # some changes are valid specs: an optional value set to null, a string set to another
    assert checked > 60


def test_truncated_and_foreign_files_are_value_errors(tmp_path):
    path = tmp_path / "tok.json"
    Tokenizer.from_dict(small_spec()).save(path)
    whole = path.read_bytes()
    for cut in sorted({*range(0, len(whole), max(1, len(whole) // 97)), len(whole) - 2}):
        path.write_bytes(whole[:cut])
        with pytest.raises(ValueError, match=str(path)):
            Tokenizer.load(path)
    for content, problem in ((b"\xff\xfe\x00", "not UTF-8"), (b"[1, 2]", "format"), (b'{"format": 1}', "format"),
                             (b'{"format": "gpu_text.Tokenizer/2"}', "another version"),
                             (b'{"format": "sentencepiece"}', "format"), (b"", "not valid JSON"),
                             (b'{"format": NaN}', "NaN")):
        path.write_bytes(content)
        with pytest.raises(ValueError, match=problem):
            Tokenizer.load(path)
    with pytest.raises(TokenizerFileError, match="unknown key 'extra'"):
        path.write_text(json.dumps({**small_spec(), "extra": 1}))
        Tokenizer.load(path)
    assert small_spec()["format"] == FORMAT


def test_a_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(small_spec()).encode())
    assert Tokenizer.from_file(path).encode(["b"]).ids.to_pylist() == [[4]]


@pytest.mark.parametrize("edit, message", [
    (lambda s: s["special_tokens"].update(bos_id=3), r"bos_id=3 is piece '▁a' of type NORMAL, not a CONTROL piece"),
    (lambda s: s["special_tokens"].update(pad_id=0), "pad_id=0 is piece '<unk>' of type UNKNOWN"),
    (lambda s: s["special_tokens"].update(eos_id=99999), "eos_id 99999 is neither -1 nor one of the 6 ids"),
    (lambda s: s["model"].update(unk_id=1), "unk_id=1 is piece '<s>' of type CONTROL, not a UNKNOWN piece"),
    (lambda s: s["model"]["pieces"].__setitem__(4, "▁a"), r"piece 4 '▁a' is piece 3 again"),
    (lambda s: s["model"]["pieces"].__setitem__(4, ""), "piece 4 is empty"),
    (lambda s: s["model"]["pieces"].__setitem__(4, "x" * 8000), "piece 4 is 8000 bytes long"),
    (lambda s: (s["model"]["pieces"].__setitem__(4, "<0xZZ>"), s["model"]["types"].__setitem__(4, 6)),
     "piece 4 '<0xZZ>' is a BYTE piece but not one of <0x00> ... <0xFF>"),
    (lambda s: s["model"]["scores"].__setitem__(4, 1e39), "piece 4 'b' has score inf"),
])
def test_bad_pieces_and_special_ids_name_the_file(edit, message, tmp_path):
    spec = small_spec()
    edit(spec)
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(TokenizerFileError, match=r"tok\.json: .*" + message):
        Tokenizer.load(path)


def test_the_constructor_checks_special_ids():
    model = BPEModel(["<unk>", "<s>", "a"], [0.0, 0.0, 0.0], [2, 3, 1])
    for ids, message in ((dict(bos_id=99999), "bos_id=99999 is not a piece id"),
                         (dict(eos_id=2), "eos_id=2 is piece 'a' of type NORMAL"),
                         (dict(pad_id=-2), "pad_id=-2 is not a piece id")):
        with pytest.raises(ValueError, match=message):
            Tokenizer(model, Normalizer(), PreTokenizer(), **ids)
    tok = Tokenizer(model, Normalizer(), PreTokenizer(), bos_id=1, eos_id=1)
    assert tok.encode(["a"], "cpu", add_bos=True, add_eos=True).ids.to_pylist() == [[1, 2, 1]]
    with pytest.raises(ValueError, match="this tokenizer has no bos token"):
        Tokenizer(model, Normalizer(), PreTokenizer()).encode(["a"], "cpu", add_bos=True)
