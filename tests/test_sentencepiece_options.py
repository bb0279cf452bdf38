"""SentencePiece options the importer honours: models sentencepiece itself trains with each option
encode every line to sentencepiece's ids (and decode back as it does), on every backend; and the
project's own user-defined tokens (``BPETrainer(extra_tokens=...)``) come out whole in the same way."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.textio import lines_to_batch
from tests.conftest import require, shared_data

SAMPLES = __import__("pathlib").Path(__file__).resolve().parents[1] / "gpu_text" / "data" / "samples"
USER = ["<mask>", "<sep>", "ab", "abc", "bcd", "你好"]
# options that change what sentencepiece learns, each trained into its own tiny model
OPTIONS = {
    "user_defined_symbols": {"user_defined_symbols": USER},
    "split_by_whitespace=false": {"split_by_whitespace": False},
    "allow_whitespace_only_pieces": {"allow_whitespace_only_pieces": True, "remove_extra_whitespaces": False},
    "whitespace_only,no_split": {"allow_whitespace_only_pieces": True, "remove_extra_whitespaces": False,
                                 "split_by_whitespace": False},
    "treat_whitespace_as_suffix": {"treat_whitespace_as_suffix": True, "add_dummy_prefix": False},
    "suffix,whitespace_only": {"treat_whitespace_as_suffix": True, "add_dummy_prefix": False,
                               "allow_whitespace_only_pieces": True, "remove_extra_whitespaces": False},
    "split_digits,no_script,no_number": {"split_digits": True, "split_by_number": False,
                                          "split_by_unicode_script": False, "max_sentencepiece_length": 4},
    "control,bytes,required": {"control_symbols": ["<cls>"], "byte_fallback": True, "required_chars": "xyz"},
    "nfkc_cf,user": {"normalization_rule_name": "nfkc_cf", "user_defined_symbols": ["<mask>"]},
}
EXTRA = ["a <mask> b<sep>c", "<mask><mask>", "<mask", "  lots   of   space  ", "hello<mask>world ab abab abcd",
         "你好你好吗", "<cls> x", "", " ", "     ", "\t tab", "x" * 600, "abcdabcd " * 80]


def sample_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(SAMPLES.glob("*.txt")):
        if path.name != "SOURCE.txt":
            lines += path.read_text(encoding="utf-8").split("\n")
    # runs of spaces, so that whitespace-only pieces get learnt and used
    return lines + ["    " + line.replace(" ", "  ") for line in lines[:1500:2]]


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return sample_lines()


@pytest.fixture(scope="module")
def trained(tmp_path_factory, lines):
    """A function: option name -> path of the model sentencepiece trains with it (trained once)."""
    spm = require("sentencepiece")
    folder = tmp_path_factory.mktemp("sp-options")
    corpus = folder / "train.txt"
    corpus.write_text("\n".join(lines[::2]), encoding="utf-8")
    made: dict[str, str] = {}

    def model(name: str) -> str:
        if name not in made:
            prefix = str(folder / f"m{len(made)}")
            spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=prefix, model_type="bpe", vocab_size=3000,
                                           character_coverage=0.9995, num_threads=2, minloglevel=2, **OPTIONS[name])
            made[name] = prefix + ".model"
        return made[name]

    return model


def assert_same_as_sentencepiece(path: str, texts: list[str], backend="cpu") -> None:
    spm = require("sentencepiece")
    from gpu_text.tokenizer.tokenizer import Tokenizer

    reference = spm.SentencePieceProcessor(model_file=path)
    want = reference.encode(texts)
    ours = Tokenizer.from_sentencepiece(path)
    got = ours.encode(texts, backend=backend).ids.to_pylist()
    differing = [k for k, (g, w) in enumerate(zip(got, want)) if g != w]
    assert len(got) == len(want)
    assert not differing, (f"{len(differing)} of {len(texts)} lines differ; first: {texts[differing[0]][:80]!r} "
                           f"ours {got[differing[0]][:20]} sentencepiece {want[differing[0]][:20]}")
    unk = reference.unk_id()  # sentencepiece decodes an unknown id as " ⁇ "; ours drops it
    sample = [row for row in want if unk not in row]
    assert ours.decode_batch(sample) == reference.decode(sample)


@pytest.mark.parametrize("option", list(OPTIONS))
def test_every_sample_line_equals_sentencepiece(trained, lines, option):
    assert_same_as_sentencepiece(trained(option), lines + EXTRA)


@pytest.mark.parametrize("option", ["user_defined_symbols", "whitespace_only,no_split", "suffix,whitespace_only"])
def test_every_backend_equals_sentencepiece(trained, lines, option, backend):
    assert_same_as_sentencepiece(trained(option), lines[::40] + EXTRA, backend)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["en-kjv", "zh-sogou-news"])
@pytest.mark.parametrize("option", ["user_defined_symbols", "split_by_whitespace=false", "suffix,whitespace_only"])
def test_shared_corpora_equal_sentencepiece(trained, option, corpus):
    folder = shared_data(corpus)
    raw = b"\n".join(p.read_bytes() for p in sorted(folder.glob("*.txt")) if p.name != "SOURCE.txt")
    texts = raw.decode("utf-8", "replace").split("\n")[:40000]
    spm = require("sentencepiece")
    from gpu_text.tokenizer.tokenizer import Tokenizer

    path = trained(option)
    got = Tokenizer.from_sentencepiece(path).encode(lines_to_batch("\n".join(texts).encode() + b"\n"),
                                                    backend="cpu").ids.to_pylist()
    assert got == spm.SentencePieceProcessor(model_file=path).encode(texts)


def test_user_symbols_are_one_piece_with_offsets(trained, backend):
    spm = require("sentencepiece")
    from gpu_text.tokenizer.tokenizer import Tokenizer

    path = trained("user_defined_symbols")
    tok = Tokenizer.from_sentencepiece(path)
    texts = ["x<mask>y", "ａ <mask>  <sep>"]
    e = tok.encode(texts, backend=backend, with_offsets=True)
    mask = tok.piece_to_id("<mask>")
    assert mask == spm.SentencePieceProcessor(model_file=path).piece_to_id("<mask>")
    assert mask in e.ids.to_pylist()[0]
    for row, text, starts, ends in zip(e.ids.to_pylist(), texts, e.starts.to_pylist(), e.ends.to_pylist()):
        spans = [text.encode()[a:b].decode() for a, b in zip(starts, ends)]
        assert spans[row.index(mask)] == "<mask>"
    cpu = tok.encode(texts, backend="cpu", with_offsets=True)
    assert [cpu.starts.to_pylist(), cpu.ends.to_pylist()] == [e.starts.to_pylist(), e.ends.to_pylist()]


def test_save_load_keeps_user_symbols(trained, tmp_path):
    from gpu_text.tokenizer.tokenizer import Tokenizer

    tok = Tokenizer.from_sentencepiece(trained("whitespace_only,no_split"))
    tok.save(tmp_path / "tok.json")
    again = Tokenizer.load(tmp_path / "tok.json")
    assert again.pre_tokenizer.split == tok.pre_tokenizer.split == "none"
    texts = EXTRA + ["  two  spaces  "]
    assert again.encode(texts).ids.to_pylist() == tok.encode(texts).ids.to_pylist()


# ------------------------------------------------------------------- the trainer's extra tokens


@pytest.fixture(scope="module")
def extra_tokenizer(lines):
    from gpu_text.tokenizer.bpe_trainer import BPETrainer

    trainer = BPETrainer(vocab_size=4000, extra_tokens=["<mask>", "<sep>", "mask"], progress=False, backend="cpu")
    return trainer.fit_texts(lines[:3000] + ["a <mask> b <sep>"] * 5).tokenizer_


def test_extra_tokens_come_out_whole(extra_tokenizer, backend, tmp_path):
    from gpu_text.tokenizer.tokenizer import Tokenizer

    tok = extra_tokenizer
    texts = ["<mask>", "a <mask> b<sep>c <mask", "masked <mask>mask", "你好<sep>世界", ""]
    pieces = tok.encode_as_pieces(texts, backend=backend)
    assert pieces[0] == ["<mask>"]
    assert pieces[1].count("<mask>") == 1 and "<sep>" in pieces[1]
    assert pieces[2][0] == "mask" and pieces[2][-2:] == ["<mask>", "mask"]
    assert "<sep>" in pieces[3]
    e = tok.encode(texts, backend=backend, with_offsets=True)
    cpu = tok.encode(texts, backend="cpu", with_offsets=True)
    assert [e.ids.to_pylist(), e.starts.to_pylist(), e.ends.to_pylist()] == \
        [cpu.ids.to_pylist(), cpu.starts.to_pylist(), cpu.ends.to_pylist()]
    sep = tok.piece_to_id("<sep>")
    row = e.ids.to_pylist()[1]
    k = row.index(sep)
    assert texts[1].encode()[e.starts.to_pylist()[1][k]:e.ends.to_pylist()[1][k]] == b"<sep>"
    assert tok.decode_batch(e.ids) == texts
    for path, save, load in ((tmp_path / "t.json", tok.save, Tokenizer.load),
                             (tmp_path / "t.txt", tok.save_model_file, Tokenizer.from_model_file)):
        save(path)
        assert load(path).encode(texts).ids.to_pylist() == cpu.ids.to_pylist()


def test_extra_tokens_are_validated():
    from gpu_text.tokenizer.bpe_trainer import BPETrainer

    for bad in (["<mask>", "<mask>"], ["<s>"], ["<0x41>"], [""], "<mask>"):
        with pytest.raises(ValueError, match="extra_tokens"):
            BPETrainer(vocab_size=300, extra_tokens=bad, progress=False).fit_texts(["abc"])


def test_batched_and_row_paths_agree_on_random_text(extra_tokenizer):
    """The staged path (the GPU's) and the CPU row encoder on text dense with tokens and overlaps."""
    from gpu_text.backend import get_backend
    from gpu_text.batch import as_text_batch

    rng = np.random.default_rng(3)
    parts = ["<mask>", "<sep>", "mask", "<", ">", " ", "  ", "a", "你", "sep", "<mas", "k>"]
    texts = ["".join(parts[k] for k in rng.integers(0, len(parts), int(rng.integers(0, 30)))) for _ in range(400)]
    tok = extra_tokenizer
    rows = tok.encode(texts, backend="cpu", with_offsets=True)
    staged = tok._encode_stages(as_text_batch(texts), get_backend("cpu"), True)
    assert [rows.ids.to_pylist(), rows.starts.to_pylist(), rows.ends.to_pylist()] == [a.to_pylist() for a in staged]
