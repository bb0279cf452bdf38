"""BPETrainer: vocabulary layout, SentencePiece's selection rules, coverage, piece size, model file
round trip, streaming and the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gpu_text.cli import main
from gpu_text.tokenizer.bpe import BPEModel, PieceType, byte_piece
from gpu_text.tokenizer.model_file import read_model_file
from gpu_text.tokenizer.bpe_trainer import BPETrainer, PreTokenCounts

CORPUS = ("the quick brown fox jumps over the lazy dog\n"
          "the dog barks and the fox runs away from the dog\n"
          "我们在学习自然语言处理，我们喜欢学习。\n"
          "numbers 2024 and 1999 and 2024 again\n") * 20


def trainer(**kwargs) -> BPETrainer:
    kwargs.setdefault("progress", False)
    kwargs.setdefault("character_coverage", 1.0)
    return BPETrainer(**kwargs)


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("trainer") / "corpus.txt"
    path.write_text(CORPUS, encoding="utf-8")
    return path


def test_layout(corpus_file):
    model = trainer(vocab_size=259 + 120).fit(corpus_file).model_
    assert len(model) == 259 + 120
    assert model.pieces[:3] == ["<unk>", "<s>", "</s>"]
    assert model.types[:3].tolist() == [PieceType.UNKNOWN, PieceType.CONTROL, PieceType.CONTROL]
    assert model.pieces[3:259] == [byte_piece(b) for b in range(256)]
    assert set(model.types[3:259].tolist()) == {PieceType.BYTE}
    learnt = model.pieces[259:]
    assert model.scores[259:].tolist() == [-float(i) for i in range(len(learnt))]
    assert set(model.types[259:].tolist()) == {PieceType.NORMAL}
    n_merges = model.n_merges
    assert all(len(p) >= 2 for p in learnt[:n_merges])
    assert learnt[n_merges:] == model.required_chars  # required characters last
    # ... in order of their pre-token-weighted frequency
    freq = {c: CORPUS.replace(" ", "▁").count(c) for c in model.required_chars}
    assert [freq[c] for c in model.required_chars] == sorted(freq.values(), reverse=True)
    assert len(set(model.pieces)) == len(model.pieces)
    # merge parents are recorded and make the piece
    assert all(u + v == p for p, u, v in zip(learnt[:n_merges], model.u[259:], model.v[259:]))
    assert model.counter.method == "sentencepiece" and model.counter.vocab_size == 379


def test_deterministic(corpus_file):
    a = trainer(vocab_size=259 + 150).fit(corpus_file).model_
    b = trainer(vocab_size=259 + 150).fit(corpus_file).model_
    assert a.pieces == b.pieces and a.scores.tolist() == b.scores.tolist() and a.u == b.u


def test_best_symbol_rule():
    # low x5, lowest x2, newer x3: lo and ow tie at 7 (lo is lexically smaller), then low (7);
    # er, ew, ne, we tie at 3 with two characters: er first, then ew; then new (3 characters)
    # beats ewer (4 characters) at the same frequency.
    counts = PreTokenCounts.from_dict({"low": 5, "lowest": 2, "newer": 3})
    model = trainer(vocab_size=259 + 5 + 8).fit_counts(counts).model_
    assert model.pieces[259:259 + 5] == ["lo", "low", "er", "ew", "new"]
    assert model.required_chars == ["w", "e", "l", "o", "n", "r", "s", "t"]


def test_frequency_weighs_pre_token_counts():
    # "ba" appears in one pre-token seen 10 times, "ab" in two seen once each
    model = trainer(vocab_size=259 + 4).fit_counts(PreTokenCounts.from_dict({"ba": 10, "ab": 1, "xab": 1})).model_
    assert model.pieces[259] == "ba"


def test_coverage_unknown_characters_never_merge():
    counts = PreTokenCounts.from_dict({"ab": 100, "az": 1, "zz": 1})
    model = trainer(vocab_size=259 + 20, character_coverage=0.98).fit_counts(counts).model_
    assert model.required_chars == ["a", "b"]
    assert not any("z" in p for p in model.pieces)
    assert model.pieces[259:] == ["ab", "a", "b"]  # nothing else can merge
    # an uncovered character is byte fallback at encoding time
    bpe = model.bpe_model()
    assert bpe.encode_strings(["az"]) == [[bpe.piece_to_id["a"], bpe.piece_to_id[byte_piece(ord("z"))]]]


def test_max_piece_size_in_bytes():
    text = ["abcdefgh " * 40, "自然语言处理自然语言处理 " * 30]
    model = trainer(vocab_size=259 + 60, max_piece_size=6).fit_texts(text).model_
    merges = model.pieces[259:259 + model.n_merges]
    assert merges and max(len(p.encode()) for p in merges) <= 6
    han = [p for p in merges if "\u4e00" <= p[0] <= "\u9fff"]
    assert han and max(len(p) for p in han) == 2
    longer = trainer(vocab_size=259 + 60, max_piece_size=16).fit_texts(text).model_
    assert max(len(p.encode()) for p in longer.pieces[259:259 + longer.n_merges]) > 6


def test_model_file_round_trip_and_encoding(corpus_file, tmp_path):
    t = trainer(vocab_size=259 + 100)
    model = t.fit(corpus_file).model_
    path = tmp_path / "m.model"
    model.save(path)
    loaded = read_model_file(path)
    assert [p.decode() for p in loaded.pieces.pieces] == model.pieces
    assert loaded.pieces.scores.tolist() == model.scores.tolist()
    assert loaded.pieces.types.tolist() == model.types.tolist()
    assert loaded.counter == model.counter and loaded.pretokenizer == model.pretokenizer
    bpe = BPEModel(loaded.pieces.pieces, loaded.pieces.scores, loaded.pieces.types, unk_id=loaded.counter.unk_id)
    lines = CORPUS.splitlines()[:4]
    normalized = t.tokenizer_.normalizer.normalize_strings(lines)
    pre = t.tokenizer_.pre_tokenizer.pre_tokenize_strings(normalized)
    for tokens, text in zip(pre, normalized):
        ids = [i for row in bpe.encode_strings(tokens) for i in row]
        assert 0 not in ids  # nothing unknown: every character is a piece
        assert "".join(bpe.pieces[i] for i in ids) == text
        assert len(ids) < len(text)  # the merges are used


def test_streaming_matches_one_chunk(corpus_file):
    assert corpus_file.stat().st_size > 3 * 1000
    small = trainer(vocab_size=259 + 150, chunk_bytes=1000).fit(corpus_file).model_
    whole = trainer(vocab_size=259 + 150, chunk_bytes=1 << 24).fit(corpus_file).model_
    assert small.pieces == whole.pieces and small.scores.tolist() == whole.scores.tolist()


def test_count_pre_tokens_across_batches():
    t = trainer()
    one = t.count_pre_tokens([["a b a", "b a"]]).to_dict()
    two = t.count_pre_tokens([["a b a"], ["b a"]]).to_dict()
    assert one == two == {"a": 1, "▁b": 1, "▁a": 2, "b": 1}


def test_vocab_too_small_for_required_characters():
    with pytest.raises(ValueError, match="required"):
        trainer(vocab_size=259 + 2).fit_texts(["abcdef"])


def test_jsonl_input(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"body": line}) + "\n" for line in CORPUS.splitlines()), encoding="utf-8")
    from_jsonl = trainer(vocab_size=259 + 100).fit(path, field="body").model_
    txt = tmp_path / "docs.txt"
    txt.write_text(CORPUS, encoding="utf-8")
    assert from_jsonl.pieces == trainer(vocab_size=259 + 100).fit(txt).model_.pieces


def test_parquet_input(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"content": CORPUS.splitlines()}), path, row_group_size=7)
    txt = tmp_path / "docs.txt"
    txt.write_text(CORPUS, encoding="utf-8")
    from_parquet = trainer(vocab_size=259 + 100, chunk_bytes=500).fit(path, field="content").model_
    assert from_parquet.pieces == trainer(vocab_size=259 + 100).fit(txt).model_.pieces


def test_cli(corpus_file, tmp_path):
    out = tmp_path / "cli.model"
    assert main(["train-tokenizer", str(corpus_file), "--output", str(out), "--vocab-size", "349",
                 "--character-coverage", "1", "--split", "isolate", "--digits", "split"]) == 0
    loaded = read_model_file(out)
    assert len(loaded.pieces) == 259 + 90
    assert loaded.pretokenizer.cut == 1 and loaded.pretokenizer.split_digits
    assert not any(p.decode().isdigit() and len(p) > 1 for p in loaded.pieces.pieces)


def test_extra_tokens_are_user_defined():
    model = trainer(vocab_size=259 + 2 + 4, extra_tokens=["<mask>", "<sep>"]).fit_texts(["abab"]).model_
    assert model.pieces[259:261] == ["<mask>", "<sep>"]
    assert model.types[259:261].tolist() == [PieceType.USER_DEFINED] * 2
    assert model.counter.extra_tokens == ["<mask>", "<sep>"]
    assert np.all(model.scores[261:] == -np.arange(len(model) - 261))


def test_pair_table_matches_a_dict():
    """The merge loop's open-addressing pair table (insert, lookup, delete with backward shift,
    growth) against a dict, with keys that crowd a small table and wrap around its end."""
    from cpu_fallback.merge_tables import EMPTY, empty_table, grown_table, lookup, pair_key, remove, store

    rng = np.random.default_rng(3)
    keys, values = empty_table(8)
    want: dict[int, int] = {}
    for step in range(20_000):
        key = np.uint64(pair_key(*rng.integers(0, 12, 2)))  # the tables hash uint64 keys
        if rng.random() < 0.5 and int(key) not in want:
            if 2 * (len(want) + 1) > keys.size:
                keys, values = grown_table(keys, values, 2 * (len(want) + 1))
            store(keys, values, key, step)
            want[int(key)] = step
        elif int(key) in want and rng.random() < 0.7:
            remove(keys, values, key)
            del want[int(key)]
        for probe in [*list(want)[:5], int(key)]:
            assert lookup(keys, values, np.uint64(probe)) == want.get(probe, -1)
    assert sorted(int(k) for k in keys if k != EMPTY) == sorted(want)
