"""SentencePiece models with options the importer does not implement are refused with one clear
error naming the option (never loaded to encode differently), in the API and through the real CLI:
exit code 2, one stderr line naming the model file, the input untouched and no output left."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_text.tokenizer.sentencepiece_model import SentencePieceModelError, load_sentencepiece_model
from tests.conftest import require

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "gpu_text" / "data" / "samples" / "en-kjv.txt"


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes | int) -> bytes:
    """One protobuf field: a varint for an int, else length-delimited bytes."""
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def piece(text: str, kind: int) -> bytes:
    return field(1, field(1, text.encode()) + field(3, kind))


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A plain model sentencepiece trains, and the refused variants (trained or edited from it)."""
    spm = require("sentencepiece")
    folder = tmp_path_factory.mktemp("sp-refused")

    def train(name: str, **options) -> Path:
        spm.SentencePieceTrainer.train(input=str(SAMPLE), model_prefix=str(folder / name), model_type="bpe",
                                       vocab_size=600, num_threads=2, minloglevel=2, **options)
        return folder / f"{name}.model"

    plain = train("plain")
    out = {"plain": plain, "suffix": train("suffix", treat_whitespace_as_suffix=True),
           "normalized_symbol": train("normalized_symbol", user_defined_symbols=["ﬁ"])}
    # protobuf merges repeated fields and sub-messages, so appending fields edits a model
    for name, extra in (("unused", piece("zzq", 5)), ("denormalizer", field(5, field(2, b"\x00" * 8)))):
        out[name] = folder / f"{name}.model"
        out[name].write_bytes(plain.read_bytes() + extra)
    # a WORD model: neither BPE nor Unigram (both import), so refused naming model_type
    out["word"] = folder / "word.model"
    spm.SentencePieceTrainer.train(input=str(SAMPLE), model_prefix=str(folder / "word"), model_type="word",
                                   vocab_size=600, num_threads=2, minloglevel=2)
    return out


REFUSED = {"suffix": "treat_whitespace_as_suffix", "unused": "UNUSED", "denormalizer": "denormalizer_spec",
           "normalized_symbol": "user_defined_symbols", "word": "model_type"}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_with_the_option_named(models, name):
    from gpu_text.tokenizer.tokenizer import Tokenizer

    with pytest.raises(SentencePieceModelError) as error:
        Tokenizer.from_sentencepiece(models[name])
    message = str(error.value)
    assert REFUSED[name] in message and str(models[name]) in message and "\n" not in message


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))}
    env.pop("GPU_TEXT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "gpu_text.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("name", ["suffix", "unused", "normalized_symbol"])
def test_cli_refuses_the_model_in_one_line(models, tmp_path, name):
    source = tmp_path / "in.txt"
    source.write_text("In the beginning ﬁ\nsecond line\n", encoding="utf-8")
    before = source.read_bytes()
    output = tmp_path / "out.parquet"
    result = run_cli("tokenize", "--model", str(models[name]), "--backend", "cpu", str(source), str(output))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("gpu-text tokenize: error:"), result.stderr
    assert str(models[name]) in lines[0] and REFUSED[name] in lines[0]
    assert "Traceback" not in result.stderr
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_cli_tokenizes_with_the_plain_model(models, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("In the beginning\n", encoding="utf-8")
    result = run_cli("tokenize", "--model", str(models["plain"]), "--backend", "cpu", str(source),
                     str(tmp_path / "out.parquet"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.parquet").exists()


TRAINER_FLAGS = [22, 24, 26]  # split_by_whitespace, treat_whitespace_as_suffix, allow_whitespace_only_pieces


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(flags=st.lists(st.tuples(st.sampled_from(TRAINER_FLAGS), st.booleans()), max_size=3),
       dummy=st.sampled_from([None, True, False]),
       extra=st.lists(st.tuples(st.text(st.sampled_from("ab▁ <>ﬁｘ你"), min_size=1, max_size=4),
                                st.sampled_from([1, 3, 4, 5])), max_size=4))
def test_mutated_options_load_and_encode_in_vocabulary_or_refuse(models, tmp_path_factory, flags, dummy, extra):
    """Edited option fields and extra pieces: the model loads and encodes within its vocabulary,
    or it is refused with the project's error type."""
    from gpu_text.tokenizer.tokenizer import Tokenizer

    edits = b"".join(piece(text, kind) for text, kind in extra)
    edits += field(2, b"".join(field(number, int(value)) for number, value in flags))
    if dummy is not None:
        edits += field(3, field(3, int(dummy)))
    path = tmp_path_factory.mktemp("mutated") / "m.model"
    path.write_bytes(models["plain"].read_bytes() + edits)
    try:
        load_sentencepiece_model(path)
        tok = Tokenizer.from_sentencepiece(path)
    except ValueError:  # SentencePieceModelError, or the BPE model's own checks (a repeated piece)
        return
    ids = tok.encode(["ab ▁ <>ﬁ ｘ你 In the beginning", "", "  a  b  "], backend="cpu").ids
    assert ids.values.size == 0 or 0 <= int(ids.values.min()) <= int(ids.values.max()) < len(tok)
