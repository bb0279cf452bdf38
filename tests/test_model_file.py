"""The seed's text model format: round trips, the bundled piece-tokenizer models, one error per rule."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.tokenizer.model_file import (
    CounterSpec,
    ModelFileError,
    PieceTable,
    PreTokenizerSpec,
    TokenizerModel,
    format_model,
    parse_model,
    read_model_file,
    write_model_file,
)

AWKWARD = [b"<unk>", b"a\tb", b"\n", b"\r\n", b"\\", b"\\x41", b"\xff", b"\xe4\xbd", "你好".encode() + b"\x80",
           b"\x00", "\u2581the".encode(), b" ", b"=", b"[Pieces]", "😀".encode(), b"\xed\xa0\x80"]


def awkward_model() -> TokenizerModel:
    n = len(AWKWARD)
    table = PieceTable.from_lists(AWKWARD, [0.0, -1.5, -2.25, 1e-7, -123456789.0, 3.14159274, -0.0] + [-float(i) for i in range(n - 7)],
                                  [2, 1, 1, 4, 1, 1, 1, 1, 1, 5, 1, 1, 3, 1, 1, 1],
                                  [b""] * 8 + [b"\xe4\xbd", b""] + [b"\xe2\x96\x81t"] + [b""] * 5,
                                  [b""] * 8 + ["好".encode() + b"\x80", b""] + [b"he"] + [b""] * 5)
    counter = CounterSpec(method="sentencepiece", vocab_size=n, bos_id=12, eos_id=-1, pad_id=-1,
                          extra_tokens=["<user>", "<bot>"])
    return TokenizerModel(counter, PreTokenizerSpec(name="NMT_NFKC", space="\t", cut=1, split_digits=True), table)


def assert_same(a: TokenizerModel, b: TokenizerModel) -> None:
    assert a.counter == b.counter and a.pretokenizer == b.pretokenizer
    assert a.pieces.pieces == b.pieces.pieces and a.pieces.u == b.pieces.u and a.pieces.v == b.pieces.v
    np.testing.assert_array_equal(a.pieces.scores, b.pieces.scores)
    np.testing.assert_array_equal(a.pieces.types, b.pieces.types)


def test_round_trip_awkward_pieces(tmp_path):
    model = awkward_model()
    path = tmp_path / "awkward.model"
    write_model_file(model, path)
    text = path.read_bytes()
    text.decode("utf-8")  # raw invalid bytes never reach the file
    assert b"1\ta\\x09b\t-1.5\t1\t\t\n" in text and b"\\x5Cx41" in text and b"\\xFF" in text
    assert b"space=\\x09\n" in text and b"extra_tokens=<user>,<bot>\n" in text
    back = read_model_file(path)
    assert_same(back, model)
    assert format_model(back) == text.decode()


def test_defaults_and_layout():
    text = format_model(TokenizerModel(CounterSpec(), PreTokenizerSpec(), PieceTable.from_lists([], [], [])))
    assert text == ("[CounterSpec]\nmethod=bytepiece\nvocab_size=8000\ncharacter_coverage=0.9995\nmin_count=32\n"
                    "max_piece_size=18\nunk_id=0\nbos_id=1\neos_id=2\npad_id=-1\nunk_unicode=9605\nunk_piece=<unk>\n"
                    "bos_piece=<s>\neos_piece=</s>\npad_piece=<pad>\n\n[PreTokenizerSpec]\nname=no\nspace=▁\ncut=0\n"
                    "reconstruct=0\nsplit_digits=0\n\n[Pieces]\nsize=0\n")


@pytest.mark.parametrize("name", ["BERTc", "Summer"])
def test_bundled_piece_tokenizer_models(name):
    piece_tokenizer = pytest.importorskip("piece_tokenizer")
    path = piece_tokenizer.model_path(name)
    model = read_model_file(path)
    original = path.read_bytes()
    assert len(model.pieces) == model.counter.vocab_size
    assert model.pieces.pieces[:3] == [b"<unk>", b"<s>", b"</s>"] and model.pieces.types[:3].tolist() == [2, 3, 3]
    # written back: the same pieces section byte for byte; the header is the renamed one
    assert format_model(model).encode().split(b"[Pieces]")[1] == original.split(b"[Pieces]")[1]
    if name == "BERTc":
        assert format_model(model).encode() == original.replace(b"[NormalizerSpec]", b"[PreTokenizerSpec]")
        assert model.pretokenizer.split_digits and model.pretokenizer.cut == 1
    else:  # written by the seed's add-extra-tokens script, which quotes the list
        assert model.counter.extra_tokens == ["<pad>", "<user>", "<assistant>", "<system>"]
        assert model.pieces.pieces[131] == b"\x80" and model.pieces.u[1000] + model.pieces.v[1000] == model.pieces.pieces[1000]


GOOD = ("[CounterSpec]\nmethod=bytepiece\n\n[PreTokenizerSpec]\nname=no\n\n[Pieces]\nsize=4\n0\t<unk>\t0\t2\t\t\n"
        "1\t<s>\t0\t3\t\t\n2\t</s>\t0\t3\t\t\n3\ta\t-1\t1\t\t\n")


@pytest.mark.parametrize("text, message", [
    (GOOD.replace("[CounterSpec]\nmethod=bytepiece\n", ""), "section \\[CounterSpec\\] is missing"),
    (GOOD.replace("[PreTokenizerSpec]\nname=no\n", ""), "section \\[PreTokenizerSpec\\] is missing"),
    (GOOD.split("[Pieces]")[0], "section \\[Pieces\\] is missing"),
    (GOOD.replace("size=4\n", ""), "line 8: \\[Pieces\\] must start with size=N"),
    (GOOD.replace("size=4", "size=x"), "line 8: size='x' is not a count"),
    (GOOD.replace("size=4", "size=5"), "says size=5 but has 4 pieces"),
    (GOOD.replace("size=4", "size=1"), "line 10: more pieces than size=1"),
    (GOOD.replace("3\ta\t", "4\ta\t"), "line 12: expected piece id 3, found '4'"),
    (GOOD.replace("0\t<unk>", "1\t<unk>"), "line 9: expected piece id 0"),
    (GOOD.replace("\t1\t\t\n", "\t7\t\t\n"), "line 12: piece type '7' is not one of 1-6"),
    (GOOD.replace("\t1\t\t\n", "\t0\t\t\n"), "line 12: piece type '0' is not one of 1-6"),
    (GOOD.replace("\t-1\t", "\tx\t"), "line 12: score 'x' is not a number"),
    (GOOD.replace("3\ta\t-1\t1\t\t", "3\ta\t-1\t1"), "line 12: a piece line has 6 tab-separated fields"),
    (GOOD.replace("\ta\t", "\ta\\q\t"), "line 12: a backslash that starts no"),
    (GOOD.replace("method=bytepiece", "method"), "line 2: expected key=value"),
    (GOOD.replace("method=bytepiece", "colour=red"), "line 2: unknown key 'colour'"),
    (GOOD.replace("method=bytepiece", "vocab_size=lots"), "line 2: vocab_size='lots' is not a valid int"),
    (GOOD.replace("name=no", "reconstruct=2"), "line 5: reconstruct='2' is not a valid bool"),
    (GOOD.replace("name=no", "name=no\nname=x"), "line 6: name is given twice"),
    (GOOD.replace("[Pieces]", "[Pieces]\n[Pieces]"), "line 8: section \\[Pieces\\] appears twice"),
    (GOOD.replace("[Pieces]", "[Extra]\n[Pieces]"), "line 7: unknown section \\[Extra\\]"),
    ("stray\n" + GOOD, "line 1: text before the first section"),
    (GOOD.encode().replace(b"\ta\t", b"\ta\xff\t"), "line 12: not valid UTF-8"),
])
def test_every_rule_names_the_line(text, message):
    with pytest.raises(ModelFileError, match=message):
        parse_model(text)


def test_lenient_where_the_seed_is():
    crlf = parse_model(GOOD.replace("\n", "\r\n"))
    old_header = parse_model(GOOD.replace("[PreTokenizerSpec]", "[NormalizerSpec]"))
    assert crlf.pieces.pieces == old_header.pieces.pieces == [b"<unk>", b"<s>", b"</s>", b"a"]
    assert parse_model(GOOD.replace("\ta\t", "\ta\\xe4\t")).pieces.pieces[3] == b"a\xe4"  # either hex case


# ------------------------------------------------------------------- checked as a model


def with_piece(line: str) -> str:
    """GOOD with one more piece line (id 4, line 13)."""
    return GOOD.replace("size=4", "size=5") + line + "\n"


@pytest.mark.parametrize("text, message", [
    # special ids: -1 or a CONTROL piece (unk: the UNKNOWN piece); a default is named as one
    (GOOD.replace("method=bytepiece", "bos_id=99999"), "line 2: bos_id=99999 is not a piece id"),
    (GOOD.replace("method=bytepiece", "eos_id=3"), "line 2: eos_id=3 is piece 'a' of type NORMAL, not a CONTROL"),
    (GOOD.replace("method=bytepiece", "pad_id=0"), "line 2: pad_id=0 is piece '<unk>' of type UNKNOWN, not a CONTROL"),
    (GOOD.replace("method=bytepiece", "unk_id=1"), "line 2: unk_id=1 is piece '<s>' of type CONTROL, not a UNKNOWN"),
    (GOOD.replace("method=bytepiece", "unk_id=-1"), "line 2: unk_id=-1 is not a piece id"),
    (GOOD.replace("2\t</s>\t0\t3", "2\t</s>\t0\t1"), r"\(eos_id not set: the default\): eos_id=2 is piece '</s>'"),
    # pieces: byte names, duplicates, empty, too long, not finite
    (with_piece("4\t<0xZZ>\t0\t6\t\t"), "line 13: piece 4 '<0xZZ>' is a BYTE piece but not one of <0x00>"),
    (with_piece("4\t<0x0a>\t0\t6\t\t"), "line 13: piece 4 '<0x0a>' is a BYTE piece"),
    (with_piece("4\ta\t-2\t1\t\t"), "line 13: piece 4 'a' is piece 3 again"),
    (with_piece("4\t<s>\t0\t4\t\t"), "line 13: piece 4 '<s>' is piece 1 again"),
    (with_piece("4\t\t-2\t1\t\t"), "line 13: piece 4 is empty"),
    (with_piece(f"4\t{'x' * 8000}\t-2\t1\t\t"), "line 13: piece 4 is 8000 bytes long; a piece has at most 7999"),
    (with_piece("4\tb\tnan\t1\t\t"), "line 13: piece 4 'b' has score nan"),
    (with_piece("4\tb\t-inf\t1\t\t"), "line 13: piece 4 'b' has score -inf"),
    (with_piece("4\tb\t1e39\t1\t\t"), "line 13: piece 4 'b' has score inf"),
    # the pre-tokenizer's settings
    (GOOD.replace("name=no", "name=bogus"), "line 5: unknown normalization rule 'bogus'"),
    (GOOD.replace("name=no", "cut=7"), r"line 5: unknown pre-tokenizer cut=7 \(0 word, 1 isolate, 2 whitespace"),
    (GOOD.replace("name=no", "space=ab"), "line 5: space='ab' is not one character"),
])
def test_every_model_rule_names_the_line(text, message):
    with pytest.raises(ModelFileError, match=message):
        parse_model(text, "m.txt")


def test_longest_piece_loads():
    model = parse_model(with_piece(f"4\t{'x' * 7999}\t-2\t1\t\t"))
    assert len(model.pieces.pieces[4]) == 7999


def test_a_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "bom.model"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert read_model_file(path).pieces.pieces == parse_model(GOOD).pieces.pieces
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.replace("name=no", "cut=x").encode())
    with pytest.raises(ModelFileError, match="bom.model line 5: cut='x'"):  # the line numbers stay
        read_model_file(path)
