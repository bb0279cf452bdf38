"""The Tokenizer pipeline: specials, padding, offsets into the original text, lossless round trip."""
from __future__ import annotations

import pytest

from gpu_text.demo import MODEL
from gpu_text.tokenizer import BPEModel, Normalizer, PreTokenizer, Tokenizer
from gpu_text.tokenizer.bpe import byte_piece
from tests.conftest import require


def test_bos_eos_and_padding():
    tok = Tokenizer.from_model_file(MODEL)
    plain = tok.encode(["ab cd", ""]).ids.to_pylist()
    enc = tok.encode(["ab cd", ""], add_bos=True, add_eos=True, with_offsets=True)
    assert enc.ids.to_pylist() == [[tok.bos_id] + plain[0] + [tok.eos_id], [tok.bos_id, tok.eos_id]]
    assert enc.starts.to_pylist()[0][0] == 0 and enc.ends.to_pylist()[0][-1] == 5
    padded, lengths = tok.encode_padded(["ab cd", ""], max_length=3)
    assert lengths.tolist() == [min(3, len(plain[0])), 0] and padded.shape == (2, 3)


def test_offsets_point_into_the_original_text():
    tok = Tokenizer.from_model_file(MODEL)
    texts = ["  In the   beginning ", "满纸荒唐言，一把辛酸泪。"]
    enc = tok.encode(texts, with_offsets=True)
    for text, ids, starts, ends in zip(texts, enc.ids.to_pylist(), enc.starts.to_pylist(), enc.ends.to_pylist()):
        raw = text.encode()
        assert len(ids) == len(starts) and all(0 <= a <= b <= len(raw) for a, b in zip(starts, ends))
        assert starts == sorted(starts)


def test_lossless_round_trip_with_reconstruct():
    """Any text without the space symbol itself: a literal U+2581 in the input decodes to a space, as
    in the seed and SentencePiece (both are spelled ▁ after normalization), so it is the one
    character reconstruct cannot give back; the next test pins that down."""
    hypothesis = require("hypothesis")
    strategies = hypothesis.strategies
    pieces = ["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)] + ["▁", "a", "ab"]
    types = [2, 3, 3] + [6] * 256 + [1, 1, 1]
    tok = Tokenizer(BPEModel(pieces, [0.0] * 259 + [-1.0, -2.0, 0.0], types), Normalizer("no", reconstruct=True),
                    PreTokenizer())

    @hypothesis.settings(max_examples=200, deadline=None)
    # valid text only: a lone surrogate (category Cs, which characters() yields once it is given
    # any exclusion) is malformed UTF-8, which the normalizer turns into U+FFFD
    @hypothesis.given(strategies.lists(strategies.text(strategies.characters(
        exclude_characters="\u2581", exclude_categories=("Cs",))), max_size=5))
    def round_trip(texts):
        assert tok.decode_batch(tok.encode(texts, backend="cpu").ids) == texts

    round_trip()


def test_a_literal_space_symbol_decodes_to_a_space():
    tok = Tokenizer(BPEModel(["<unk>", "▁", "a"], [0.0, -1.0, -2.0], [2, 1, 1]), Normalizer("no", reconstruct=True),
                    PreTokenizer())
    assert tok.decode_batch(tok.encode(["a▁a", "a a"]).ids) == ["a a", "a a"]


def _staged_and_by_rows(tok, texts):
    from gpu_text.backend import get_backend
    from gpu_text.batch import as_text_batch

    batch, cpu = as_text_batch(texts), get_backend("cpu")
    return tok._encode_stages(batch, cpu, True), tok._encode_rows(batch, cpu, True)


def test_row_by_row_encoder_equals_the_stages():
    """The CPU encodes a row at a time (cpu_fallback/tokenizer.py); the GPU runs each stage over the
    whole batch. Same ids and original spans, for every pre-tokenizer split, normalization rule and
    byte fallback, on text that repeats (the CPU's memo), adversarial Unicode and malformed bytes."""
    import numpy as np

    from tests.test_normalizer import ADVERSARIAL

    rng = np.random.default_rng(3)
    words = ["the", "▁", "ｆｕｌｌ", "①②", "  ", "你好世界", "。", "1234", "don't", "\u0301", "ﷺ", "aaaa" * 20, "😀"]
    texts = ["".join(rng.choice(words, int(rng.integers(0, 12)))) for _ in range(300)] + ADVERSARIAL
    texts = [t.encode() for t in texts] + [b"\xff\xfe bad \xe4\xbd", b"\xc3", b""]
    base = Tokenizer.from_model_file(MODEL).model
    no_fallback = BPEModel(base.piece_bytes, base.scores, base.types, base.unk_id, byte_fallback=False)
    for model in (base, no_fallback):
        for split, cn in (("word", "char"), ("isolate", None), ("whitespace", None)):
            for rule, flags in (("NMT_NFKC", {"add_dummy_prefix": True}), ("no", {"reconstruct": True}),
                                ("NFKC_CF", {"remove_extra_whitespaces": False})):
                tok = Tokenizer(model, Normalizer(rule, **flags), PreTokenizer(split=split, cn=cn))
                staged, by_rows = _staged_and_by_rows(tok, texts)
                for a, b in zip(staged, by_rows):
                    assert a.to_pylist() == b.to_pylist(), (split, rule)


def test_out_of_device_memory_halves_the_batch(monkeypatch):
    """When a batch does not fit in GPU memory the encoder retries in halves of the rows (the
    emulated CUDA backend with an out-of-memory error above 30 bytes): the same ids and spans."""
    from tests.emulated_backend import emulated_backend

    tok = Tokenizer(BPEModel(["<unk>", "a", "b", "ab", "▁"], [0.0, -1.0, -2.0, 0.0, -3.0], [2, 1, 1, 1, 1]),
                    Normalizer("no"), PreTokenizer())
    texts = ["ab ab", "", "a", "bbb abab", "ab" * 12, "b a"]
    be = emulated_backend()
    want = tok.encode(texts, backend=be, with_offsets=True)

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
