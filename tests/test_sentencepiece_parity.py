"""An imported SentencePiece BPE model encodes every line of the shared corpora to the same ids
as sentencepiece itself, and decodes back as sentencepiece does."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.textio import lines_to_batch
from tests.conftest import require, shared_data

CORPORA = {"zh-sogou-news": "*.txt", "zh-classic-novels": "*.txt", "en-gutenberg": "*.txt", "en-kjv": "*.txt"}


def corpus_lines(name: str) -> list[bytes]:
    folder = shared_data(name)
    lines: list[bytes] = []
    for path in sorted(folder.glob(CORPORA[name])):
        if path.name != "SOURCE.txt":
            lines += path.read_bytes().split(b"\n")
    return lines


@pytest.fixture(scope="module", params=[
    {"byte_fallback": True},
    {"byte_fallback": False, "add_dummy_prefix": False},
    {"byte_fallback": True, "normalization_rule_name": "identity", "remove_extra_whitespaces": False},
], ids=["nmt_nfkc+bytes", "no-bytes,no-prefix", "identity"])
def sp_model(request, tmp_path_factory):
    spm = require("sentencepiece")
    training = b"\n".join(corpus_lines("zh-sogou-news")[:4000] + corpus_lines("en-kjv")[:8000])
    path = tmp_path_factory.mktemp(f"sp-variant-{request.param_index}-", numbered=True) / "train.txt"
    path.write_bytes(training)
    prefix = str(path.parent / "m")
    spm.SentencePieceTrainer.train(input=str(path), model_prefix=prefix, model_type="bpe", vocab_size=4000,
                                   character_coverage=0.9995, num_threads=2, minloglevel=2, **request.param)
    return prefix + ".model"


@pytest.mark.slow
@pytest.mark.parametrize("corpus", list(CORPORA))
def test_ids_equal_sentencepiece_on_every_line(sp_model, corpus):
    spm = require("sentencepiece")
    from gpu_text.tokenizer.tokenizer import Tokenizer

    lines = corpus_lines(corpus)
    if corpus == "zh-sogou-news" and "sp-variant-0-" not in sp_model:
        lines = lines[::3]  # the model variants see every third news line; the main model every line
    texts = [line.decode("utf-8", "replace") for line in lines]
    reference = spm.SentencePieceProcessor(model_file=sp_model)
    want = reference.encode(texts)
    ours = Tokenizer.from_sentencepiece(sp_model)
    got = ours.encode(lines_to_batch(b"\n".join(t.encode() for t in texts) + b"\n"), backend="cpu").ids.to_pylist()
    differing = [k for k, (g, w) in enumerate(zip(got, want)) if g != w]
    assert len(got) == len(want)
    assert not differing, (f"{len(differing)} of {len(lines)} lines differ; first: {texts[differing[0]][:80]!r} "
                           f"ours {got[differing[0]][:20]} sentencepiece {want[differing[0]][:20]}")
    # sentencepiece decodes an unknown id as " ⁇ "; PieceTokenizer's decoder drops it, so compare the rest
    unk = reference.unk_id()
    sample = [row for row in want[:3000] if unk not in row]
    assert ours.decode_batch(sample) == reference.decode(sample)


def test_long_news_lines_on_every_backend(sp_model, backend):
    """Lines of news long enough for the GPU's block-per-pre-token merge (and a few short ones)."""
    spm = require("sentencepiece")
    from gpu_text.cuda_ops.bpe import LONG_BYTES
    from gpu_text.tokenizer.tokenizer import Tokenizer

    lines = corpus_lines("zh-sogou-news")
    texts = [line.decode("utf-8", "replace") for line in lines if len(line) > LONG_BYTES][:150] + ["短句", "", "a b"]
    got = Tokenizer.from_sentencepiece(sp_model).encode(texts, backend=backend).ids.to_pylist()
    assert got == spm.SentencePieceProcessor(model_file=sp_model).encode(texts)


def test_small_model_parity_on_adversarial_text(sp_model, backend):
    spm = require("sentencepiece")
    from gpu_text.tokenizer.tokenizer import Tokenizer

    texts = ["", " ", "  leading and trailing  ", "ＡＢＣ１２３ ①②③", "e\u0301 combining", "emoji 🙂🙃 mixed 你好",
             "tabs\tand\nnewlines", "\ufffd replacement", "x" * 3000, "你" * 2000]
    reference = spm.SentencePieceProcessor(model_file=sp_model)
    got = Tokenizer.from_sentencepiece(sp_model).encode(texts, backend=backend).ids.to_pylist()
    assert got == reference.encode(texts)
    assert np.asarray(got, dtype=object).shape == (len(texts),)
