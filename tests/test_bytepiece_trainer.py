"""BytePiece training: the model file == the seed's (``piece-tokenizer count --method bytepiece``
built from its sdist, tests/piece_tokenizer_oracle.py) byte for byte; the Numba helpers == the Python
reference (tests/reference/bytepiece.py); libstdc++'s order of equal counts == a compiled probe; the
keep/re-split loop and the vocabulary layout."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests import piece_tokenizer_oracle as oracle

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


def test_pieces_start_and_end_on_characters():
    rng = np.random.default_rng(5)
    words = random_words(rng, 300)
    data, starts, ends = packed(words)
    trainer = BytePieceTrainer(min_count=2)
    table = trainer.prune_ngrams(trainer.count_ngrams(data, starts, ends))
    for piece in trainer.count_pieces(data, starts, ends, table):
        piece.decode("utf-8")  # raises when a piece cuts a character


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


def test_real_text_equals_reference():
    """Pre-tokens (== the seed wheel's PreTokenizer), n-gram table and byte-Viterbi pieces of real zh and
    en lines == the reference, bit for bit."""
    from tests.test_bytepiece import corpus_lines

    pt = pytest.importorskip("piece_tokenizer")
    seed_split = pt.PreTokenizer()
    for name, lines in corpus_lines(150):
        trainer = BytePieceTrainer(min_count=3)
        data, starts, ends = trainer.pre_tokens(lines)
        words = [bytes(data[a:b]) for a, b in zip(starts, ends)]
        want_words = [w.encode() for line in lines if line for w in seed_split.tokenize(line)]
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


SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def _lines(path: Path, limit: int | None) -> list[bytes]:
    lines = path.read_bytes().split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # getline yields no line after the last newline
    return lines[:limit]


def _synthetic(seed: int) -> list[bytes]:
    """Lines of a few short words: many equal counts, so the order of ties is put to the test."""
    rng = np.random.default_rng(seed)
    words = ["南京", "市长", "江", "大桥", "the", "cat", "1998", "é", "🙂", "a,b", "don't"]
    return [" ".join(rng.choice(words, int(rng.integers(0, 9)))).encode() for _ in range(3000)]


ORACLE_CASES = [  # (corpus, file, lines, learned pieces, options, the seed's --cpu)
    ("synthetic", "0", None, 150, dict(min_count=2), 1),
    ("synthetic", "1", None, 40, dict(min_count=3, cut=1, split_digits=True), 3),
    ("zh-sogou-news", "C000008.txt", 3000, 3000, dict(min_count=16), 1),
    ("zh-sogou-news", "C000010.txt", 2000, 500, dict(min_count=8, max_piece_size=9), 3),  # truncated
    ("en-gutenberg", "pg13272.txt", None, 2000, dict(min_count=8), 3),
    ("en-kjv", "kjv_verses.txt", 8000, 800, dict(min_count=4, cut=1, split_digits=True), 1),
]


@pytest.mark.parametrize("corpus,name,limit,learned,options,cpu", ORACLE_CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in ORACLE_CASES])
def test_model_file_identical_to_piece_tokenizer(tmp_path, corpus, name, limit, learned, options, cpu):
    """Same corpus, same options: the model file is the seed's, byte for byte (pieces, order of equal
    counts, scores, specs)."""
    cli = oracle.cli_path()
    if cli is None:
        pytest.skip(f"the piece-tokenizer CLI (the seed's trainer) is not built: {oracle.HOW}")
    if corpus == "synthetic":
        lines = _synthetic(int(name))
    else:
        if not (SHARED / corpus / name).is_file():
            pytest.skip(f"{SHARED / corpus / name} is absent (../shared/data holds the shared corpora)")
        lines = _lines(SHARED / corpus / name, limit)
    (tmp_path / "corpus.txt").write_bytes(b"".join(line + b"\n" for line in lines))
    args = [str(cli), "count", "--method", "bytepiece", "--input", str(tmp_path / "corpus.txt"), "--model",
            str(tmp_path / "seed"), "--vocab-size", str(learned), "--cpu", str(cpu),
            "--min-count", str(options["min_count"]), "--cut", str(options.get("cut", 0)),
            "--num", "split" if options.get("split_digits") else "keep"]
    if "max_piece_size" in options:
        args += ["--max-piece-size", str(options["max_piece_size"])]
    subprocess.run(args, check=True, capture_output=True)
    # the seed's --vocab-size counts learned pieces; it runs min(--cpu, hardware threads) workers
    workers = 1 if cpu <= 1 else min(cpu, os.cpu_count() or 1)
    tok = BytePieceTrainer(vocab_size=learned + 259, cpu_count=workers, **options).train(lines)
    tok.save_model_file(tmp_path / "ours.model")
    want = (tmp_path / "seed.model").read_text().splitlines()
    got = (tmp_path / "ours.model").read_text().splitlines()
    differ = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
    assert not differ and len(got) == len(want), \
        f"{len(differ)} lines differ ({len(got)} vs {len(want)}), first: ours {got[differ[0]]!r} seed {want[differ[0]]!r}" \
        if differ else f"{len(got)} lines vs the seed's {len(want)}"


@pytest.mark.parametrize("seed,count,top", [(0, 30, 3), (1, 3000, 3), (2, 40000, 40)])
def test_cxx_order_equals_libstdcxx(seed, count, top):
    """std::hash<std::string>, unordered_map iteration and std::sort by count, reproduced exactly."""
    from gpu_text.tokenizer.cxx_order import iteration_order, sort_by_count, string_hashes

    probe = oracle.probe_path()
    if probe is None:
        pytest.skip("no C++ compiler (g++) to build the libstdc++ probe")
    rng = np.random.default_rng(seed)
    alphabet = list("abcdefgh") + ["é", "中", "文"]
    keys = list(dict.fromkeys("".join(rng.choice(alphabet, int(rng.integers(1, 20)))) for _ in range(count)))
    counts = rng.integers(1, top, len(keys)).tolist()
    text = "".join(f"{k}\t{c}\n" for k, c in zip(keys, counts))
    hashes, order, ranked = subprocess.run([str(probe)], input=text.encode(), capture_output=True,
                                           check=True).stdout.decode().split("--\n")
    raw = [k.encode() for k in keys]
    assert string_hashes(raw).tolist() == [int(h) for h in hashes.split()]
    iterated = iteration_order(raw)
    assert [k.decode() for k in iterated] == order.splitlines()
    by_key = dict(zip(raw, counts))
    assert [k.decode() for k, _ in sort_by_count([(k, by_key[k]) for k in iterated])] == ranked.splitlines()


@pytest.mark.parametrize("chunk_bytes", [1500, 1 << 20])
def test_same_model_whatever_the_chunk_size(tmp_path, chunk_bytes, monkeypatch):
    """Blocks of any size (a few lines, everything), several seed batches, files, a list or a one-shot
    iterator: the same model file."""
    from gpu_text.tokenizer import bytepiece_trainer

    monkeypatch.setattr(bytepiece_trainer, "SEED_BATCH_LINES", 500)  # three batches of lines
    lines = _synthetic(3)[:1200]
    (tmp_path / "a.txt").write_bytes(b"".join(line + b"\n" for line in lines[:700]))
    (tmp_path / "b.txt").write_bytes(b"\n".join(lines[700:]))  # no newline at the end
    options = dict(vocab_size=300, min_count=2, cpu_count=3)
    BytePieceTrainer(**options).train(lines).save_model_file(tmp_path / "whole.model")
    BytePieceTrainer(chunk_bytes=chunk_bytes, progress=True, **options).train_files(
        [tmp_path / "a.txt", tmp_path / "b.txt"]).save_model_file(tmp_path / "chunked.model")
    assert (tmp_path / "chunked.model").read_bytes() == (tmp_path / "whole.model").read_bytes()
    generated = BytePieceTrainer(chunk_bytes=chunk_bytes, **options).train(line for line in lines)
    generated.save_model_file(tmp_path / "generated.model")
    assert (tmp_path / "generated.model").read_bytes() == (tmp_path / "whole.model").read_bytes()


def test_cli_model_identical_to_piece_tokenizer(tmp_path):
    """``gpu-text train-tokenizer --method bytepiece`` == ``piece-tokenizer count`` with its defaults
    (our --vocab-size counts the specials and bytes too)."""
    from gpu_text.cli import main

    cli = oracle.cli_path()
    if cli is None:
        pytest.skip(f"the piece-tokenizer CLI (the seed's trainer) is not built: {oracle.HOW}")
    (tmp_path / "c.txt").write_bytes(b"\n".join(_synthetic(4)) + b"\n")
    subprocess.run([str(cli), "count", "--input", str(tmp_path / "c.txt"), "--model", str(tmp_path / "seed"),
                    "--vocab-size", "100", "--min-count", "2"], check=True, capture_output=True)
    assert main(["train-tokenizer", "--method", "bytepiece", "--vocab-size", "359", "--min-count", "2",
                 str(tmp_path / "c.txt"), "--output", str(tmp_path / "ours.model")]) == 0
    assert (tmp_path / "ours.model").read_bytes() == (tmp_path / "seed.model").read_bytes()
