"""SentencePiece Unigram models: ids identical to sentencepiece's for models it trains here (several
vocabulary sizes, with and without byte fallback, nmt_nfkc and identity), on the bundled samples,
adversarial strings and the shared corpora; the float32 tie rule against a hand-built model;
offsets, decoding, special tokens and every backend."""
from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest

from gpu_text.textio import lines_to_batch
from tests.conftest import require, shared_data

spm = require("sentencepiece")

from gpu_text.tokenizer import Tokenizer, Unigram  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "gpu_text" / "data" / "samples"
# the trained models: name -> trainer options (vocabulary, normalization, byte fallback)
CONFIGS = {
    "v1000-nmt_nfkc": dict(vocab_size=1000, normalization_rule_name="nmt_nfkc", character_coverage=0.98),
    "v4000-nmt_nfkc-bytes": dict(vocab_size=4000, normalization_rule_name="nmt_nfkc", byte_fallback=True),
    "v2000-identity": dict(vocab_size=2000, normalization_rule_name="identity", character_coverage=0.99),
    "v4000-identity-bytes": dict(vocab_size=4000, normalization_rule_name="identity", byte_fallback=True,
                                 remove_extra_whitespaces=False),
    "v1000-user-control": dict(vocab_size=1000, normalization_rule_name="nmt_nfkc", character_coverage=0.98,
                               user_defined_symbols=["<mask>", "ab", "你好", "the"], control_symbols=["<cls>"]),
}
EXTRA = ["", " ", "   ", "a", "\t tab  and   spaces \n", "①②③ ＨＥＬＬＯ Ｗｏｒｌｄ ﬁne", "ǅǅǅ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🙂🙂 x",
         "你好你好吗 <mask><mask> <cls> the thethe", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "0000000000 000 00",
         "http://www.example.org/a//b", "一" * 300, "And God said, Let there be light: and there was light.",
         "甄士隐梦幻识通灵　贾雨村风尘怀闺秀", "ab" * 200, "x\u0301y\u0308 e\u0301", "Ω≈ç√∫˜µ≤≥÷"]


def sample_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(SAMPLES.glob("*.txt")):
        if path.name != "SOURCE.txt":
            lines += path.read_text(encoding="utf-8").split("\n")
    return lines


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return sample_lines()


@pytest.fixture(scope="module")
def trained(tmp_path_factory, lines):
    """A function: config name -> path of the model sentencepiece trains with it (once per session)."""
    folder = tmp_path_factory.mktemp("unigram-models")
    paths: dict[str, str] = {}

    def get(name: str) -> str:
        if name not in paths:
            blob = io.BytesIO()
            spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=blob, model_type="unigram",
                                           num_threads=2, minloglevel=2, hard_vocab_limit=False, **CONFIGS[name])
            path = folder / f"{name}.model"
            path.write_bytes(blob.getvalue())
            paths[name] = str(path)
        return paths[name]

    return get


def same_ids(path: str, texts: list[str], backend: str = "cpu") -> None:
    tok = Tokenizer.from_file(path)
    assert isinstance(tok, Unigram)
    got = tok.encode(texts, backend=backend).ids.to_pylist()
    want = spm.SentencePieceProcessor(model_file=path).encode(texts)
    bad = [i for i in range(len(texts)) if got[i] != want[i]]
    assert not bad, (len(bad), texts[bad[0]][:200], got[bad[0]][:50], want[bad[0]][:50])


@pytest.mark.parametrize("config", list(CONFIGS))
def test_sample_lines_equal_sentencepiece(trained, lines, config):
    same_ids(trained(config), lines + EXTRA)


@pytest.mark.parametrize("config", ["v1000-nmt_nfkc", "v4000-identity-bytes", "v1000-user-control"])
def test_emulated_cuda_equals_cpu_with_offsets(trained, lines, config):
    from tests.emulated_backend import emulated_backend

    tok = Tokenizer.from_file(trained(config))
    texts = lines[::60] + EXTRA
    cpu = tok.encode(texts, backend="cpu", with_offsets=True, add_bos=True, add_eos=True)
    emulated = tok.encode(texts, backend=emulated_backend(), with_offsets=True, add_bos=True, add_eos=True)
    for a, b in zip((cpu.ids, cpu.starts, cpu.ends), (emulated.ids, emulated.starts, emulated.ends)):
        assert a.to_pylist() == b.to_pylist()
    sp = spm.SentencePieceProcessor(model_file=trained(config))
    assert cpu.ids.to_pylist() == [[sp.bos_id()] + row + [sp.eos_id()] for row in sp.encode(texts)]


def test_offsets_point_into_the_original_text(trained):
    """Each id's span is the original text it came from (identity: the piece itself, spaces as ▁)."""
    tok = Tokenizer.from_file(trained("v4000-identity-bytes"))
    texts = ["In the beginning  God", "你好 世界", "x🙂y"]
    e = tok.encode(texts, with_offsets=True)
    for text, ids, starts, ends in zip(texts, e.ids.to_pylist(), e.starts.to_pylist(), e.ends.to_pylist()):
        raw = text.encode()
        assert starts[0] == 0 and ends[-1] == len(raw) and starts[1:] <= ends[:-1]
        for i, a, b in zip(ids, starts, ends):
            piece = tok.id_to_piece(i)
            if not piece.startswith("<0x"):
                assert raw[a:b].decode().replace(" ", "▁") == piece.lstrip("▁") or piece.startswith("▁"), (piece,)


def test_decode_is_sentencepiece_decode(trained, lines):
    path = trained("v4000-nmt_nfkc-bytes")
    tok, sp = Tokenizer.from_file(path), spm.SentencePieceProcessor(model_file=path)
    ids = sp.encode(lines[::20] + EXTRA)
    assert [tok.decode(row) for row in ids] == [sp.decode(row) for row in ids]


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def hand_model(pieces: list[tuple[str, float, int]], byte_fallback: bool = False) -> bytes:
    """A UNIGRAM ModelProto: the pieces, identity normalization, no dummy prefix."""
    body = b"".join(field(1, field(1, p.encode()) + varint(2 << 3 | 5) + struct.pack("<f", s) + field(3, k))
                    for p, s, k in pieces)
    trainer = field(3, 1) + (field(35, 1) if byte_fallback else b"")
    return body + field(2, trainer) + field(3, field(1, b"identity") + field(3, 0))


@pytest.mark.parametrize("weights,want", [
    # a|bc (-1000.00001) is relaxed before ab|c (-1000.000005): equal as floats, so the first stays
    ((-1000.0, -1000.0, -1e-5, -5e-6), ["a", "bc"]),
    ((-1000.0, -1000.0, -5e-6, -1e-5), ["a", "bc"]),
    ((-1000.0, -999.0, -1e-5, -5e-6), ["ab", "c"]),
    # exact ties: the edge relaxed first (its start is earlier) wins
    ((-1.0, -2.0, -2.0, -1.0), ["a", "bc"]),
])
def test_ties_in_float32_as_sentencepiece(tmp_path, weights, want):
    blob = hand_model([("<unk>", 0.0, 2)] + [(p, w, 1) for p, w in zip(("a", "ab", "bc", "c"), weights)])
    path = tmp_path / "tie.model"
    path.write_bytes(blob)
    sp = spm.SentencePieceProcessor(model_proto=blob)
    assert sp.encode("abc", out_type=str) == want
    assert Tokenizer.from_file(path).encode_as_pieces(["abc"]) == [want]


def test_unknown_runs_and_user_defined_pieces(tmp_path):
    """Runs of unknown characters are one unknown id (no byte fallback) or their bytes (with it);
    a user-defined piece scores 0.1 per byte less 0.1 (here 'xy' beats x|y) and a single-character
    piece keeps the unknown edge away."""
    pieces = [("<unk>", 0.0, 2), ("a", -1.0, 1), ("b", -20.0, 1), ("xy", 0.0, 4), ("x", -0.5, 1), ("y", -0.5, 1)]
    for byte_fallback in (False, True):
        table = pieces + ([(f"<0x{b:02X}>", 0.0, 6) for b in range(256)] if byte_fallback else [])
        blob = hand_model(table, byte_fallback)
        path = tmp_path / f"u{byte_fallback}.model"
        path.write_bytes(blob)
        sp = spm.SentencePieceProcessor(model_proto=blob)
        tok = Tokenizer.from_file(path)
        texts = ["a你好b", "你好", "ab", "xy", "axyb", "zzaz", "éé"]
        assert tok.encode(texts).ids.to_pylist() == sp.encode(texts), byte_fallback
        e = tok.encode(["a你好b"], with_offsets=True)
        if not byte_fallback:
            assert e.ids.to_pylist() == [[1, 0, 2]] and e.starts.to_pylist() == [[0, 1, 7]]


@pytest.mark.parametrize("corpus", ["zh-sogou-news", "en-gutenberg", "zh-people-daily-199801", "en-kjv"])
def test_shared_corpora_sample_equal_sentencepiece(trained, corpus):
    """Every 25th line of each corpus file (the full corpora: the slow test below)."""
    texts = corpus_lines(corpus)[::25]
    for config in ("v1000-nmt_nfkc", "v4000-identity-bytes"):
        same_ids(trained(config), texts)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["zh-sogou-news", "en-gutenberg", "zh-people-daily-199801", "en-kjv"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_shared_corpora_every_line_equals_sentencepiece(trained, corpus, config):
    path = trained(config)
    texts = corpus_lines(corpus)
    tok = Tokenizer.from_file(path)
    got = tok.encode(lines_to_batch("\n".join(texts).encode() + b"\n"), backend="cpu").ids.to_pylist()
    assert got == spm.SentencePieceProcessor(model_file=path).encode(texts)


def corpus_lines(corpus: str) -> list[str]:
    folder = shared_data(corpus)
    names = ["199801_segmented_words.txt"] if corpus == "zh-people-daily-199801" else \
        sorted(p.name for p in folder.glob("*.txt") if p.name != "SOURCE.txt")
    texts: list[str] = []
    for name in names:
        texts += (folder / name).read_text(encoding="utf-8").split("\n")
    return texts


@pytest.mark.parametrize("config", ["v4000-nmt_nfkc-bytes", "v2000-identity"])
def test_malformed_utf8_and_nul_bytes_as_sentencepiece(trained, config):
    """sentencepiece's normalizer makes each malformed byte U+FFFD (then its bytes or one unknown id)."""
    from tests.emulated_backend import emulated_backend

    path = trained(config)
    raw = [b"ab\xffcd", b"\xe4\xb8 x", "你好".encode()[:4], b"\xc0\xaf", b"a\x00b", b"\xf0\x9f\x99", b"\xed\xa0\x80z"]
    want = [spm.SentencePieceProcessor(model_file=path).encode(r) for r in raw]
    tok = Tokenizer.from_file(path)
    assert tok.encode(raw).ids.to_pylist() == want
    assert tok.encode(raw, backend=emulated_backend()).ids.to_pylist() == want


def test_one_megabyte_line_equals_sentencepiece(trained):
    """A 1 MB line (one lattice of a million bytes) on both CPU paths: the fused row encoder and
    the staged kernels (prefix search, lattice_viterbi). That the lattice's work is linear in the
    line is asserted by its step count in tests/test_lattice_kernels.py, not by a clock here."""
    from gpu_text.backend import get_backend

    path = trained("v4000-nmt_nfkc-bytes")
    tok = Tokenizer.from_file(path)
    big = "你好世界 hello, world " * 40000
    want = spm.SentencePieceProcessor(model_file=path).encode([big])
    cpu = get_backend("cpu")
    assert tok.encode([big]).ids.to_pylist() == want
    assert tok._encode_stages_fitting(lines_to_batch(big.encode() + b"\n"), cpu, False)[0].to_pylist() == want


@pytest.mark.parametrize("user_score,normal_score", [(0.0, -10.0), (-3.0, -9.95), (5.0, -9.85)])
def test_user_defined_score_is_a_tenth_per_byte(tmp_path, user_score, normal_score):
    """'uu' (user-defined) + 'z' (-10) against the NORMAL 'uuz': the user piece scores 0.1, so
    'uuz' wins only above -9.9, whatever the user piece's own score, as in sentencepiece 0.2."""
    pieces = [("<unk>", 0.0, 2), ("uu", user_score, 4), ("z", -10.0, 1), ("uuz", normal_score, 1)]
    blob = hand_model(pieces)
    path = tmp_path / "user.model"
    path.write_bytes(blob)
    want = spm.SentencePieceProcessor(model_proto=blob).encode(["uuz", "uuzuu"])
    assert Tokenizer.from_file(path).encode(["uuz", "uuzuu"]).ids.to_pylist() == want
    assert (want[0] == [3]) == (normal_score > -9.9)


def test_unused_and_control_pieces_are_no_edges(tmp_path):
    """UNUSED and CONTROL pieces never match (and an UNUSED one-character piece does not keep the
    unknown edge away), as in SentencePiece's lattice."""
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("a", -1.0, 1), ("b", -1.0, 1), ("ab", -0.1, 5), ("c", -0.1, 5),
              ("<s>x", -0.1, 1)]
    blob = hand_model(pieces)
    path = tmp_path / "unused.model"
    path.write_bytes(blob)
    texts = ["ab", "abc", "cc", "<s>x", "<s>"]
    want = spm.SentencePieceProcessor(model_proto=blob).encode(texts)
    assert Tokenizer.from_file(path).encode(texts).ids.to_pylist() == want
    assert want[0] == [2, 3] and want[2] == [0]


@pytest.mark.parametrize("seed", range(30))
def test_random_models_fused_staged_and_sentencepiece_agree(tmp_path, seed):
    """Random small vocabularies over a tiny alphabet (ties common: scores on a coarse grid, some
    float32 roundings), with user-defined, unused and byte pieces: the CPU's fused row encoder,
    the staged kernels (Numba and emulated CUDA) and sentencepiece give the same ids."""
    from gpu_text.backend import get_backend
    from tests.emulated_backend import emulated_backend

    rng = np.random.default_rng(seed)
    alphabet = ["a", "b", "c", "你", "好", "🙂", "é", " "]
    words = sorted({"".join(rng.choice(alphabet[:-1], int(rng.integers(1, 4)))) for _ in range(30)})
    kinds = rng.choice([1, 1, 1, 1, 4, 5], len(words))
    scores = -rng.integers(1, 8, len(words)) / 2 - (rng.random(len(words)) < 0.3) * 1e-6
    byte_fallback = bool(seed % 2)
    pieces = [("<unk>", 0.0, 2)] + [(w, float(s), int(k)) for w, s, k in zip(words, scores, kinds)]
    if byte_fallback:
        pieces += [(f"<0x{b:02X}>", 0.0, 6) for b in range(256)]
    blob = hand_model(pieces, byte_fallback)
    path = tmp_path / "r.model"
    path.write_bytes(blob)
    texts = ["".join(rng.choice(alphabet, int(rng.integers(0, 30)))) for _ in range(60)]
    want = spm.SentencePieceProcessor(model_proto=blob).encode(texts)
    tok = Tokenizer.from_file(path)
    assert tok.encode(texts).ids.to_pylist() == want
    batch = lines_to_batch("\n".join(texts).encode() + b"\n")
    for be in (get_backend("cpu"), emulated_backend()):
        assert tok._encode_stages_fitting(batch, be, False)[0].to_pylist() == want, be.name


def test_malformed_charsmap_targets_fused_as_staged():
    """A charsmap whose targets are not UTF-8 makes the normalizer write malformed text: the fused
    row encoder then reads characters with the staged kernels' checks, not from lead bytes alone."""
    from gpu_text.backend import get_backend
    from gpu_text.tokenizer import Normalizer, PreTokenizer, UnigramModel

    pieces = ["<unk>", b"a", b"\xe4\xbd", "你", b"\x80a", "▁"]
    model = UnigramModel(pieces, [0.0, -1.0, -1.0, -2.0, -1.5, -3.0], [2, 1, 1, 1, 1, 1])
    normalizer = Normalizer("mine", charsmap_pairs=[(b"x", b"\xe4\xbda"), (b"y", b"\x80"), (b"z", b"\xe4")])
    tok = Unigram(model, normalizer, PreTokenizer("none"))
    texts = ["xay你x", "yaz你", "zzz", "x y", "你xa"]
    batch = lines_to_batch("\n".join(texts).encode() + b"\n")
    fused = tok.encode(batch, backend="cpu", with_offsets=True)
    staged = tok._encode_stages_fitting(batch, get_backend("cpu"), True)
    assert [r.to_pylist() for r in staged] == [fused.ids.to_pylist(), fused.starts.to_pylist(), fused.ends.to_pylist()]
