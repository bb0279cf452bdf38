"""BytePiece training: the Numba helpers == the Python reference (tests/reference/bytepiece.py), the
seed's pre-splitter, the keep/re-split loop and the vocabulary layout."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.tokenizer.bytepiece_split import split_text
from gpu_text.tokenizer.bytepiece_trainer import BytePieceTrainer
from tests.reference import bytepiece as reference

ALPHABET = ["南", "京", "市", "长", "江", "a", "b", "é", "🙂", "1", "▁"]


def random_words(rng: np.random.Generator, count: int) -> list[bytes]:
    return ["".join(rng.choice(ALPHABET, int(rng.integers(1, 12)))).encode() for _ in range(count)]


def packed(words: list[bytes]):
    lengths = np.array([len(w) for w in words], np.int64)
    ends = np.cumsum(lengths)
    return np.frombuffer(b"".join(words), np.uint8).copy(), ends - lengths, ends


def table_dicts(table) -> list[dict[bytes, float]]:
    """The trainer's packed table as the reference's dicts (key n << 8n | bytes)."""
    out: list[dict[bytes, float]] = [dict() for _ in range(7)]
    for key, value in zip(table[0].tolist(), table[1].tolist()):
        n = next(n for n in range(6, 0, -1) if key >> (8 * n) == n)
        out[n][(key & ((1 << (8 * n)) - 1)).to_bytes(n, "big")] = value
    return out


@pytest.mark.parametrize("seed,min_count", [(0, 1), (1, 3), (2, 8)])
def test_ngram_table_and_viterbi_equal_reference(seed, min_count):
    rng = np.random.default_rng(seed)
    words = random_words(rng, 400)
    data, starts, ends = packed(words)
    trainer = BytePieceTrainer(min_count=min_count)
    tables = trainer.count_ngrams(data, starts, ends)
    counts = reference.count_ngrams(words)
    assert int(tables[0][1][0]) == counts[0][b""]
    for n in range(1, 7):
        got = dict(zip((table_dicts((tables[n][0], tables[n][1].astype(float)))[n]).keys(), tables[n][1].tolist()))
        assert got == counts[n]
    table = trainer.prune_ngrams(tables)
    want = reference.prune_ngrams(counts, min_count)
    got = table_dicts(table)
    for n in range(1, 7):
        assert got[n].keys() == want[n].keys()
        assert all(got[n][k] == want[n][k] for k in want[n])  # bit for bit: same logs, same order of operations
    pieces = trainer.count_pieces(data, starts, ends, table)
    expected = {}
    for w in words:
        for p in reference.byte_viterbi(w, want):
            expected[p] = expected.get(p, 0) + 1
    assert dict(pieces) == expected


def test_counting_in_chunks_gives_the_same_counts(monkeypatch):
    from gpu_text.tokenizer import bytepiece_trainer

    words = random_words(np.random.default_rng(9), 300)
    data, starts, ends = packed(words)
    whole = BytePieceTrainer.count_ngrams(data, starts, ends)
    monkeypatch.setattr(bytepiece_trainer, "CHUNK_BYTES", 50)
    chunked = BytePieceTrainer.count_ngrams(data, starts, ends)
    for (k1, c1), (k2, c2) in zip(whole, chunked):
        assert k1.tolist() == k2.tolist() and c1.tolist() == c2.tolist()


def test_pieces_start_and_end_on_characters():
    rng = np.random.default_rng(5)
    words = random_words(rng, 300)
    data, starts, ends = packed(words)
    trainer = BytePieceTrainer(min_count=2)
    table = trainer.prune_ngrams(trainer.count_ngrams(data, starts, ends))
    for piece in trainer.count_pieces(data, starts, ends, table):
        piece.decode("utf-8")  # raises when a piece cuts a character


def test_seed_splitter():
    assert split_text("Hello,▁World!▁don't▁你好，世界。123abc") == \
        ["Hello", ",", "▁World", "!", "▁don", "'t", "▁", "你好", "，", "世界", "。123abc"]  # 。 joins the word run after it
    assert split_text("a▁▁▁b") == ["a", "▁", "▁", "▁b"]
    assert split_text("▁你好▁a", cut=1) == ["▁", "你好", "▁", "a"]
    assert split_text("") == []


def test_keep_and_resplit_book_example():
    """The book's pruning example: 南京市 and 京市 fall under min_count and are re-split over the kept set."""
    trainer = BytePieceTrainer(min_count=2)
    counts = {"南京".encode(): 8, "京".encode(): 4, "市".encode(): 5, "南京市".encode(): 1, "京市".encode(): 1}
    keep = trainer.prune_pieces(counts, 100)
    assert {k.decode(): v for k, v in keep.items()} == {"南京": 9, "京": 5, "市": 7}


def test_truncation_order():
    """Over the limit: single bytes first, then count, then length (longer first), then bytes."""
    trainer = BytePieceTrainer(min_count=1)
    counts = {b"ab": 5, b"cd": 5, b"abc": 5, b"x": 1, b"zz": 9}
    assert list(trainer.prune_pieces(counts, 3)) == [b"x", b"zz", b"abc"]


def test_train_layout_and_encode():
    lines = ["南京市长江大桥"] * 40 + ["南京市"] * 40 + ["", "hello world"] * 5
    tok = BytePieceTrainer(vocab_size=280, min_count=2, pad_id=3).train(lines)
    pieces, types = tok.model.pieces, tok.model.types.tolist()
    assert pieces[:4] == ["<unk>", "<s>", "</s>", "<pad>"] and types[:4] == [2, 3, 3, 3]
    assert pieces[4:260] == [f"<0x{b:02X}>" for b in range(256)] and types[4:260] == [6] * 256
    scores = tok.model.scores[260:]
    assert (np.diff(scores) <= 0).all() and types[260:] == [1] * (len(pieces) - 260)
    assert pieces[260] == "南京市" and scores[0] == 80
    assert tok.decode_batch(tok.encode(lines[:3] + ["未知 text"]).ids) == lines[:3] + ["未知 text"]


def test_model_file_keeps_the_training_options(tmp_path):
    tok = BytePieceTrainer(vocab_size=270, min_count=2, max_piece_size=9, cut=1).train(["hello world"] * 5)
    tok.save_model_file(tmp_path / "m.pt")
    text = (tmp_path / "m.pt").read_text()
    assert "min_count=2\n" in text and "max_piece_size=9\n" in text and "cut=1\n" in text
    from gpu_text.tokenizer.bytepiece_tokenizer import BytePiece
    again = BytePiece.from_model_file(tmp_path / "m.pt")
    again.save_model_file(tmp_path / "again.pt")
    assert (tmp_path / "again.pt").read_text() == text


def test_bad_options():
    with pytest.raises(ValueError, match="too small"):
        BytePieceTrainer(vocab_size=100).train(["a"])
    with pytest.raises(ValueError, match="cut"):
        BytePieceTrainer(cut=3).train(["a"])


@pytest.mark.parametrize("cut", [0, 1])
def test_batch_splitter_equals_split_text(cut):
    """The Numba splitter (every row at once) == split_text, on random mixes of every character kind."""
    from gpu_text.batch import TextBatch
    from gpu_text.tokenizer.bytepiece_split import split_batch

    chars = ["a", "Z", "7", "é", "中", "文", "，", "!", "'", "▁", "\t", "\x01", "😀", "ー", "１", "×", "¿"]
    rng = np.random.default_rng(cut)
    rows = ["".join(rng.choice(chars, int(rng.integers(0, 20)))) for _ in range(500)] + ["", "▁", "▁▁"]
    batch = TextBatch.from_strings(rows)
    starts, ends, offsets = split_batch(batch.data, batch.offsets, cut=cut)
    data = bytes(batch.data)
    for r, row in enumerate(rows):
        got = [data[a:b].decode() for a, b in zip(starts[offsets[r]:offsets[r + 1]], ends[offsets[r]:offsets[r + 1]])]
        assert got == split_text(row, cut=cut), row


def test_real_text_equals_reference():
    """Pre-split, n-gram table and byte-Viterbi pieces of real zh and en lines == the reference, bit for bit."""
    from tests.test_bytepiece import corpus_lines

    for name, lines in corpus_lines(150):
        trainer = BytePieceTrainer(min_count=3)
        data, starts, ends = trainer.pre_tokens(lines)
        words = [bytes(data[a:b]) for a, b in zip(starts, ends)]
        want_words = [w.encode() for line in lines if line for w in split_text(_normalized(line))]
        assert words == want_words, name
        table = trainer.prune_ngrams(trainer.count_ngrams(data, starts, ends))
        want = reference.prune_ngrams(reference.count_ngrams(words), 3)
        got = table_dicts(table)
        assert all(got[n] == want[n] for n in range(1, 7)), name
        expected: dict[bytes, int] = {}
        for w in words:
            for p in reference.byte_viterbi(w, want):
                expected[p] = expected.get(p, 0) + 1
        assert dict(trainer.count_pieces(data, starts, ends, table)) == expected, name


def _normalized(line: str) -> str:
    """The "no" normalizer's space rule: only U+0020 is a space; strip, collapse, then ▁."""
    return "▁".join(part for part in line.split(" ") if part)
