"""Damaged tokenizer model files: hypothesis-driven mutation (byte flips, truncation, insertion,
line duplication and deletion) of a SentencePiece ``.model``, of the seed's text format (the
bundled 4k model and a small one) and of a ``Tokenizer.save`` JSON file. Every mutant either loads
and encodes a fixed set of texts with every id inside the vocabulary (with bos/eos too when the
model has them), or raises a ``ValueError`` of the loaders (SentencePieceModelError,
ModelFileError, TokenizerFileError, or BPEModel's own) — never another exception, never a crash.
Then the model-file failures through the real command line: one stderr line naming the file (and
line or byte), exit code 2, the input untouched and no output left."""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpu_text
from gpu_text.tokenizer import BPEModel, Normalizer, PreTokenizer, Tokenizer
from tests.conftest import require

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLE_MODEL = Path(gpu_text.__file__).parent / "data" / "models" / "sample-bpe-4k.txt"
TEXTS = ["In the beginning God created the heaven and the earth.", "满纸荒唐言，一把辛酸泪！", "", "  a  b  ",
         "ｈｅｌｌｏ 😀 \u2581 <s> </s> <unk> <0x41>", "x\u0000y\tz\r\n", "١٢٣ 12345 café"]
ENV = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".cache" / "numba")),
       "GPU_TEXT_BACKEND": "cpu"}
for _name in ("GPU_TEXT_PROGRESS", "GPU_TEXT_DEBUG"):
    ENV.pop(_name, None)

SMALL_TEXT_MODEL = ("[CounterSpec]\nmethod=sentencepiece\nvocab_size=9\nunk_id=0\nbos_id=1\neos_id=2\npad_id=-1\n\n"
                    "[PreTokenizerSpec]\nname=NFKC\nspace=▁\ncut=1\nreconstruct=0\nsplit_digits=1\n\n"
                    "[Pieces]\nsize=9\n0\t<unk>\t0\t2\t\t\n1\t<s>\t0\t3\t\t\n2\t</s>\t0\t3\t\t\n3\t▁\t-1\t1\t\t\n"
                    "4\ta\t-2\t1\t\t\n5\tb\t-3\t1\t\t\n6\t▁a\t-1\t1\t▁\ta\n7\tab\t-2\t1\ta\tb\n8\t你\t-4\t1\t\t\n")


# ------------------------------------------------------------------------------- the seeds


def sentencepiece_model() -> bytes:
    spm = require("sentencepiece")
    lines = [line for line in (Path(gpu_text.__file__).parent / "data" / "samples" / "en-kjv.txt")
             .read_text().splitlines() if line.strip()][:200] + ["满纸荒唐言，一把辛酸泪！"] * 3
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, model_type="bpe",
                                   vocab_size=300, character_coverage=0.98, hard_vocab_limit=False, minloglevel=2,
                                   num_threads=1, byte_fallback=True)
    return model.getvalue()


def json_model(tmp_path: Path) -> bytes:
    tok = Tokenizer.from_model_file(tmp_path / "small.txt")
    tok.save(tmp_path / "small.json")
    return (tmp_path / "small.json").read_bytes()


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("seeds")
    (folder / "small.txt").write_text(SMALL_TEXT_MODEL, encoding="utf-8")
    return {"sentencepiece": sentencepiece_model(), "sample-4k": SAMPLE_MODEL.read_bytes(),
            "small-text": SMALL_TEXT_MODEL.encode(), "json": json_model(folder)}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mutants") / "mutant.model"


def test_the_seeds_load(seeds, scratch):
    for blob in seeds.values():
        assert_loads_in_vocabulary_or_refuses(blob, scratch, must_load=True)


# ------------------------------------------------------------------------------- mutation

POSITION = st.integers(0, 2**31)  # taken modulo the length: spread over the file, not drawn to its start
EDITS = st.one_of(
    st.tuples(st.just("flip"), POSITION, st.integers(0, 255)),
    st.tuples(st.just("flip"), POSITION, st.sampled_from(b"0123456789-\t\n=.e<>x\\")),
    st.tuples(st.just("truncate"), POSITION, st.just(0)),
    st.tuples(st.just("insert"), POSITION, st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("duplicate_line"), POSITION, st.just(0)),
    st.tuples(st.just("delete_line"), POSITION, st.just(0)),
)


def mutate(blob: bytes, edits: list[tuple]) -> bytes:
    """``blob`` after each edit (a position is taken modulo the current length, so that it fits)."""
    for kind, where, what in edits:
        at = where % (len(blob) + 1)
        if kind == "flip" and at < len(blob):
            blob = blob[:at] + bytes([what]) + blob[at + 1:]
        elif kind == "truncate":
            blob = blob[:at]
        elif kind == "insert":
            blob = blob[:at] + what + blob[at:]
        elif kind in ("duplicate_line", "delete_line"):
            lines = blob.split(b"\n")
            line = where % len(lines)
            lines[line:line + 1] = [lines[line]] * (2 if kind == "duplicate_line" else 0)
            blob = b"\n".join(lines)
    return blob


def assert_loads_in_vocabulary_or_refuses(blob: bytes, path: Path, must_load: bool = False) -> None:
    path.write_bytes(blob)
    try:
        tok = Tokenizer.from_file(path)
    except ValueError as exc:
        # a loader's error, never a raw decoding error, and always saying what is wrong
        assert not must_load, exc
        assert not isinstance(exc, UnicodeError), repr(exc)
        assert str(exc).strip(), repr(exc)
        return
    n = len(tok)
    flags = [{}] + [{"add_bos": True}] * (tok.bos_id >= 0) + [{"add_eos": True}] * (tok.eos_id >= 0)
    for flag in flags:
        ids = np.asarray(tok.encode(TEXTS, "cpu", **flag).ids.values)
        assert ids.size == 0 or (0 <= ids.min() and ids.max() < n), (flag, ids.min(), ids.max(), n)
    assert len(tok.decode_batch(tok.encode(TEXTS, "cpu").ids, "cpu")) == len(TEXTS)
    for name in ("bos_id", "eos_id", "pad_id"):
        assert -1 <= getattr(tok, name) < n


@pytest.mark.parametrize("seed", ["sentencepiece", "sample-4k", "small-text", "json"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(EDITS, min_size=1, max_size=3))
def test_mutated_model_files_load_within_the_vocabulary_or_raise_a_loader_error(seeds, scratch, seed, edits):
    assert_loads_in_vocabulary_or_refuses(mutate(seeds[seed], edits), scratch)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.integers(0, 25), text=st.sampled_from(["-1", "0", "1", "3", "99999", "-7", "2147483648", "x", "",
                                                       "<0xZZ>", "<0x41>", "nan", "inf", "6", "4", "▁a", "\\x00"]),
       column=st.integers(0, 5))
def test_edited_fields_of_the_small_text_model(scratch, line, text, column):
    """One field of the small text model replaced (a key's value, or a column of a piece line)."""
    lines = SMALL_TEXT_MODEL.split("\n")
    line %= len(lines)
    if "=" in lines[line]:
        lines[line] = lines[line].split("=")[0] + "=" + text
    elif "\t" in lines[line]:
        cells = lines[line].split("\t")
        cells[column] = text
        lines[line] = "\t".join(cells)
    assert_loads_in_vocabulary_or_refuses("\n".join(lines).encode(), scratch)


def test_special_ids_and_byte_pieces_are_checked_in_every_constructor():
    model = BPEModel(["<unk>", "<s>", "a"], [0.0, 0.0, 0.0], [2, 3, 1])
    with pytest.raises(ValueError, match="bos_id=99999 is not a piece id"):
        Tokenizer(model, Normalizer(), PreTokenizer(), bos_id=99999)
    with pytest.raises(ValueError, match="piece 1 '<0xZZ>' is a BYTE piece"):
        BPEModel(["<unk>", "<0xZZ>"], [0.0, 0.0], [2, 6])
    with pytest.raises(ValueError, match="piece 1 is 8000 bytes long"):
        BPEModel(["<unk>", "a" * 8000], [0.0, 0.0], [2, 1])


# ------------------------------------------------------------------------------- the CLI


def gpu_text_cli(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_text.cli", *map(str, args)], capture_output=True, env=ENV,
                          cwd=REPO, timeout=300)


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def edited_sample(old: str, new: str) -> bytes:
    text = SAMPLE_MODEL.read_text(encoding="utf-8")
    assert old in text
    return text.replace(old, new, 1).encode()


def emptied_piece(index: int) -> bytes:
    """The bundled model with piece ``index`` (line 26 + index) made empty."""
    lines = SAMPLE_MODEL.read_text(encoding="utf-8").split("\n")
    cells = lines[25 + index].split("\t")
    assert cells[0] == str(index)
    lines[25 + index] = "\t".join([cells[0], ""] + cells[2:])
    return "\n".join(lines).encode()


def truncated_after_pieces(blob: bytes) -> bytes:
    """``blob`` cut right after its pieces (ModelProto field 1 entries come first)."""
    pos = 0
    while blob[pos] == 0x0A:  # field 1, length-delimited
        pos += 1
        size = shift = 0
        while True:
            size |= (blob[pos] & 0x7F) << shift
            pos += 1
            if blob[pos - 1] < 0x80:
                break
            shift += 7
        pos += size
    return blob[:pos]


CLI_CASES = {  # name: (model file bytes or a callable of the seeds, extra flags, fragments of the message)
    "bos_id=99999": (lambda s: edited_sample("bos_id=1\n", "bos_id=99999\n"), [],
                     ["bad.model line 8: bos_id=99999 is not a piece id"]),
    "eos_id on a normal piece": (lambda s: edited_sample("eos_id=2\n", "eos_id=300\n"), [],
                                 ["bad.model line 9: eos_id=300 is piece", "not a CONTROL piece"]),
    "bad byte piece": (lambda s: edited_sample("3\t<0x00>\t0\t6", "3\t<0xZZ>\t0\t6"), [],
                       ["bad.model line 29: piece 3 '<0xZZ>' is a BYTE piece"]),
    "duplicate piece": (lambda s: edited_sample("4\t<0x01>\t0\t6", "4\t<0x00>\t0\t6"), [],
                        ["bad.model line 30: piece 4 '<0x00>' is piece 3 again"]),
    "empty piece": (lambda s: emptied_piece(300), [], ["bad.model line 326: piece 300 is empty"]),
    "truncated .model": (lambda s: truncated_after_pieces(s["sentencepiece"]), [],
                         ["bad.model: malformed SentencePiece model at byte", "truncated"]),
    # one more piece: field 1 of 8,006 bytes (varint C6 3E) holding its field 1 of 8,003 (C3 3E)
    "long piece .model": (lambda s: s["sentencepiece"] + b"\x0a\xc6\x3e\x0a\xc3\x3e" + b"a" * 8003, [],
                          ["bad.model: malformed SentencePiece model at byte", "is 8003 bytes long"]),
    "add-bos without bos": ("nobos", ["--add-bos"], ["bos"]),
}


@pytest.fixture(scope="module")
def nobos_model() -> bytes:
    spm = require("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["hello world"] * 20 + ["the quick brown fox"] * 20),
                                   model_writer=model, model_type="bpe", vocab_size=40, hard_vocab_limit=False,
                                   minloglevel=2, num_threads=1, bos_id=-1, eos_id=-1)
    return model.getvalue()


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_model_file_failures_through_the_cli(case, seeds, nobos_model, tmp_path):
    make, flags, fragments = CLI_CASES[case]
    blob = nobos_model if make == "nobos" else make(seeds)
    (tmp_path / "bad.model").write_bytes(blob)
    (tmp_path / "in.txt").write_text("In the beginning\n满纸荒唐言\n", encoding="utf-8")
    before = digests(tmp_path)
    result = gpu_text_cli("tokenize", "--model", tmp_path / "bad.model", *flags, tmp_path / "in.txt",
                          tmp_path / "out.parquet")
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("gpu-text tokenize: error: "), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert digests(tmp_path) == before  # inputs untouched, no output (partial or empty) left


def test_a_model_file_with_a_byte_order_mark_tokenizes(tmp_path):
    (tmp_path / "bom.model").write_bytes(b"\xef\xbb\xbf" + SAMPLE_MODEL.read_bytes())
    (tmp_path / "in.txt").write_text("In the beginning\n", encoding="utf-8")
    result = gpu_text_cli("tokenize", "--model", tmp_path / "bom.model", tmp_path / "in.txt", tmp_path / "out.parquet")
    assert result.returncode == 0, result.stderr.decode()
    pq = require("pyarrow.parquet")
    assert pq.read_table(tmp_path / "out.parquet").column(0).to_pylist() == \
        Tokenizer.from_file(SAMPLE_MODEL).encode(["In the beginning"]).ids.to_pylist()
