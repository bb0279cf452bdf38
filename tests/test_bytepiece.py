"""BytePiece encoding: the seed's test vectors and ids identical to piece-tokenizer (the oracle) on corpus lines."""
from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest

from gpu_text.tokenizer import Normalizer, PreTokenizer
from gpu_text.tokenizer.bpe import byte_piece
from gpu_text.tokenizer.bytepiece import BytePieceModel, piece_weights
from gpu_text.tokenizer.bytepiece_tokenizer import BytePiece
from gpu_text.tokenizer.pre_tokenizer import SPLIT_MODES

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
SAMPLES = REPO / "gpu_text" / "data" / "samples"
HEAD = ["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)]


def tokenizer(normal: list[tuple[str, float]], cut: int = 0, split_digits: bool = False) -> BytePiece:
    pieces = HEAD + [p for p, _ in normal]
    scores = [0.0] * len(HEAD) + [c for _, c in normal]
    model = BytePieceModel(pieces, scores, [2, 3, 3] + [6] * 256 + [1] * len(normal))
    return BytePiece(model, Normalizer("no"), PreTokenizer(SPLIT_MODES[cut], "split" if split_digits else "keep"),
                     bos_id=1, eos_id=2)


def pieces_of(tok: BytePiece, text: str) -> list[str]:
    return tok.encode_as_pieces([text])[0]


# the seed's test vectors; the expected pieces are what piece-tokenizer 0.1.0 gives for these models
def test_english_dictionary():
    tok = tokenizer([("hello", 10), ("world", 10), ("▁", 5), ("▁world", 1), ("h", 1), ("e", 1)])
    assert pieces_of(tok, "hello world") == ["hello", "▁", "world"]
    assert pieces_of(tok, "héllo") == ["h", "<0xC3>", "<0xA9>", "<0x6C>", "<0x6C>", "<0x6F>"]
    assert tok.decode_batch(tok.encode(["hello  world ", "héllo"]).ids) == ["hello world", "héllo"]


def test_chinese_dictionary():
    tok = tokenizer([("我们", 8), ("在", 6), ("学习", 7), ("人工智能", 10), ("人工", 3), ("智能", 3), ("我", 1), ("们", 1)])
    assert pieces_of(tok, "我们在学习未知") == ["我们", "在", "学习"] + [byte_piece(b) for b in "未知".encode()]
    assert pieces_of(tok, "我们在学习人工智能") == ["我们", "在", "学习", "人工智能"]


def test_pre_token_boundaries_are_never_crossed():
    tok = tokenizer([("a", 3), (",", 4), ("b", 5), ("a,", 100)], cut=1)
    assert pieces_of(tok, "a,b") == ["a", ",", "b"]


def test_book_example_longer_piece_wins():
    """The book's 南京: one piece beats two when its weight is higher (and loses when lower)."""
    assert pieces_of(tokenizer([("南", 10), ("京", 10), ("南京", 30)]), "南京") == ["南京"]
    assert pieces_of(tokenizer([("南", 10), ("京", 10), ("南京", 1)]), "南京") == ["南", "京"]


def test_weights_are_log_probabilities():
    np.testing.assert_array_equal(piece_weights([1.0, 1.0, 2.0]), np.log([0.25, 0.25, 0.5]))
    assert piece_weights([0.0, 5.0])[0] == -np.inf


def test_bad_models_are_refused():
    with pytest.raises(ValueError, match="NUL"):
        BytePieceModel(["<unk>", "a\0"], [0.0, 1.0], [2, 1])
    with pytest.raises(ValueError, match="finite"):
        BytePieceModel(["<unk>", "a"], [0.0, float("nan")], [2, 1])
    with pytest.raises(ValueError, match="unk_id"):
        BytePieceModel(["<unk>", "a"], [0.0, 1.0], [1, 1])


def test_model_file_round_trip(tmp_path):
    tok = tokenizer([("ab", 7), ("a", 3), ("▁", 2)], cut=1, split_digits=True)
    tok.save_model_file(tmp_path / "m.pt")
    again = BytePiece.from_model_file(tmp_path / "m.pt")
    assert again.model.pieces == tok.model.pieces and again.model.scores.tolist() == tok.model.scores.tolist()
    assert (again.pre_tokenizer.split, again.pre_tokenizer.digits) == ("isolate", "split")
    texts = ["ab ab a1 2", "", "中文"]
    assert again.encode(texts).ids.to_pylist() == tok.encode(texts).ids.to_pylist()


def test_offsets_cover_the_original_text():
    tok = tokenizer([("ab", 7), ("a", 3), ("▁", 2)])
    e = tok.encode(["ab  a你"], with_offsets=True)
    assert e.starts.to_pylist()[0][0] == 0 and e.ends.to_pylist()[0][-1] == len("ab  a你".encode())


def corpus_lines(limit: int) -> list[tuple[str, list[str]]]:
    found = []
    for name, pattern in (("zh-sogou-news", "C000008.txt"), ("en-gutenberg", "pg1*.txt")):
        files = sorted((SHARED / name).glob(pattern))
        if files:
            found.append((name, files[0]))
    if not found:
        found = [(p.stem, p) for p in sorted(SAMPLES.glob("*.txt"))]
    out = []
    for name, path in found:
        lines = path.read_bytes().decode("utf-8", "replace").splitlines()[:limit]
        out.append((name, lines))
    return out


def counted_model(lines: list[str], size: int) -> list[tuple[str, float]]:
    """A vocabulary of frequent character n-grams with their counts (a stand-in for a trained model)."""
    counts = collections.Counter()
    for line in lines:
        line = line.replace(" ", "▁")
        for i in range(len(line)):
            for n in range(1, 7):
                if i + n <= len(line):
                    counts[line[i:i + n]] += 1
    return [(p, float(c)) for p, c in counts.most_common(size) if "\0" not in p]


@pytest.mark.parametrize("cut,split_digits", [(0, False), (1, True)])
def test_ids_identical_to_piece_tokenizer(tmp_path, cut, split_digits):
    pt = pytest.importorskip("piece_tokenizer")
    for name, lines in corpus_lines(600):
        tok = tokenizer(counted_model(lines, 3000), cut, split_digits)
        tok.save_model_file(tmp_path / "m.pt")
        oracle = pt.Tokenizer(str(tmp_path / "m.pt"))
        got = tok.encode(lines).ids.to_pylist()
        differ = [i for i, line in enumerate(lines) if got[i] != oracle.encode_as_ids(line)]
        assert not differ, f"{name}: {len(differ)} of {len(lines)} lines differ, first {lines[differ[0]][:80]!r}"
        assert tok.decode_batch(got[:50]) == [oracle.decode(ids) for ids in got[:50]]


def test_emulated_cuda_equals_cpu():
    """The whole pipeline on the emulated CUDA kernels (the GPU too when present) gives the CPU's ids and spans."""
    from tests.test_lattice_kernels import backends

    name, lines = corpus_lines(80)[0]
    tok = tokenizer(counted_model(lines, 2000), 1, True)
    texts = lines + ["", "a\xe4b", "  x  ", "🙂" * 40]
    want = tok.encode(texts, backend="cpu", with_offsets=True)
    for be in backends()[1:]:
        got = tok.encode(texts, backend=be, with_offsets=True)
        for g, w in zip((got.ids, got.starts, got.ends), (want.ids, want.starts, want.ends)):
            assert g.to_pylist() == w.to_pylist(), be.name


def test_at_most_16_prefix_matches_per_character():
    """The seed reads 16 prefix matches at a character: 17 and 18 dashes are never one piece
    (piece-tokenizer 0.1.0 gives these lengths too)."""
    tok = tokenizer([("-" * k, 1000.0 * k) for k in range(1, 19)])
    lengths = [[len(p) for p in row] for row in tok.encode_as_pieces(["-" * 18, "-" * 17, "-" * 16, "-" * 40])]
    assert lengths == [[9, 9], [8, 9], [16], [13, 13, 14]]


def test_decode_replaces_spelled_spaces_like_the_seed(tmp_path):
    """A space symbol spelled by byte pieces decodes to a space (the seed replaces it in the whole text)."""
    tok = tokenizer([("text", 10.0)])
    ids = tok.encode(["未知 text"]).ids.to_pylist()[0]
    assert [tok.model.pieces[i] for i in ids][6:] == ["<0xE2>", "<0x96>", "<0x81>", "text"]
    assert tok.decode(ids) == "未知 text"
    pt = pytest.importorskip("piece_tokenizer")
    tok.save_model_file(tmp_path / "m.pt")
    oracle = pt.Tokenizer(str(tmp_path / "m.pt"))
    assert oracle.encode_as_ids("未知 text") == ids and oracle.decode(ids) == "未知 text"


def test_cli_trains_a_bytepiece_model_that_tokenize_and_the_oracle_read(tmp_path):
    """``train-tokenizer --method bytepiece`` writes a ``method=bytepiece`` model that
    ``Tokenizer.from_model_file`` (and so ``gpu-text tokenize``) loads as BytePiece, encoding as
    the trainer's own tokenizer and as piece-tokenizer do."""
    from gpu_text.cli import main
    from gpu_text.tokenizer import BytePieceTrainer, Tokenizer

    lines = ["南京市长江大桥", "hello world, hello there", "我们在学习未知的知识"] * 30
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = tmp_path / "bp.txt"
    assert main(["train-tokenizer", str(corpus), "-o", str(model), "--method", "bytepiece", "--vocab-size", "320",
                 "--min-count", "2"]) == 0
    assert "method=bytepiece" in model.read_text(encoding="utf-8")
    loaded = Tokenizer.from_model_file(model)
    assert type(loaded).__name__ == "BytePiece"
    expected = BytePieceTrainer(vocab_size=320, min_count=2).train(lines)
    assert loaded.encode(lines[:3]).ids.to_pylist() == expected.encode(lines[:3]).ids.to_pylist()
    assert max(len(ids) for ids in loaded.encode(lines[:3]).ids.to_pylist()) < len(lines[1])  # pieces, not bytes
    pt = pytest.importorskip("piece_tokenizer")
    oracle = pt.Tokenizer(str(model))
    assert loaded.encode(lines[:3]).ids.to_pylist() == [oracle.encode_as_ids(line) for line in lines[:3]]
    out = tmp_path / "ids.parquet"
    assert main(["tokenize", "--model", str(model), "--backend", "cpu", str(corpus), str(out), "--no-stats"]) == 0
    import pyarrow.parquet as pq

    assert pq.read_table(out).column(0).to_pylist()[:3] == loaded.encode(lines[:3]).ids.to_pylist()


def test_cli_refuses_bpe_only_options_for_bytepiece(tmp_path):
    from gpu_text.cli import main

    corpus = tmp_path / "c.txt"
    corpus.write_text("ab ab\n", encoding="utf-8")
    assert main(["train-tokenizer", str(corpus), "-o", str(tmp_path / "m.txt"), "--method", "bytepiece",
                 "--reconstruct"]) == 2
    assert not (tmp_path / "m.txt").exists()
