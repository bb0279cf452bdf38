"""``lattice_encode`` (cuda/lattice_tokens.cu, its Numba twin and the Python reference): the ids of
normalized rows through the lattice, every finish mode (BytePiece's lookup, Unigram's unknown runs
and byte fallback), rows whole or cut at pre-token marks, empty rows, malformed bytes, long rows
cut into pieces and a batch with more edges than the first search has room for."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.trie import DoubleArrayTrie
from tests.reference import lattice_tokens as reference
from tests.test_lattice_kernels import UNIGRAM, backends, random_case
from tests.test_utf8_kernels import host

# finish mode -> (lattice mode, fallback weight, edges read per start)
FINISHES = {0: (0, -10.0, 16), 1: (UNIGRAM, -7.0, 0), 2: (UNIGRAM, -7.0, 0)}


def case(seed: int, n_texts: int, with_marks: bool):
    rng = np.random.default_rng(seed)
    trie, weights, data, starts, ends = random_case(rng, n_texts, 30)
    offsets = np.append(starts, ends[-1:] if n_texts else [0]).astype(np.int64)
    marks = None
    if with_marks:  # every row's first byte and about one byte in five start a pre-token
        marks = (rng.random(data.size) < 0.2).astype(np.uint8) * rng.integers(1, 6, data.size).astype(np.uint8)
        marks[offsets[:-1][offsets[:-1] < offsets[1:]]] = 1
    # the lookup trie: a few of the edge words and some single characters (BytePiece's fallback ids)
    lookup = DoubleArrayTrie.build(["a", "你", "é", "🙂"], [40, 41, 42, 43])
    byte_ids = (np.arange(256, dtype=np.int32) % 50) + 100
    return trie, weights, lookup, byte_ids, data, offsets, marks


def encode(backend, trie, weights, lookup, byte_ids, data, offsets, marks, finish):
    xp = backend.xp
    mode, fallback, cap = FINISHES[finish]
    return backend.op("lattice_tokens", "lattice_encode")(
        backend.asarray(data), xp.asarray(offsets), None if marks is None else backend.asarray(marks),
        trie.arrays(backend), xp.asarray(weights.astype(np.float64)), fallback, cap, mode, finish, 3,
        xp.asarray(byte_ids), lookup.arrays(backend))


@pytest.mark.parametrize("n_texts", [0, 1, 2, 200])
@pytest.mark.parametrize("finish", [0, 1, 2])
@pytest.mark.parametrize("with_marks", [False, True])
def test_twins_equal_reference(n_texts, finish, with_marks):
    trie, weights, lookup, byte_ids, data, offsets, marks = case(n_texts * 7 + finish, n_texts, with_marks)
    mode, fallback, cap = FINISHES[finish]
    want = reference.lattice_encode(data, offsets, marks, trie.arrays("cpu"), weights, fallback, cap, mode, finish, 3,
                                    byte_ids, lookup.arrays("cpu"))
    for be in backends():
        got = encode(be, trie, weights, lookup, byte_ids, data, offsets, marks, finish)
        for name, g, w in zip(("ids", "starts", "ends", "row offsets"), got, want):
            assert host(g).tolist() == w.tolist(), f"{be.name}: {name}"


def test_empty_rows_and_unknown_runs():
    """Unknown characters in a run are one unknown id spanning the run, never across spans."""
    trie = DoubleArrayTrie.build(["ab"], [5])
    data = np.frombuffer(b"xyabzz" + b"qq", np.uint8).copy()
    offsets = np.array([0, 0, 6, 6, 8], np.int64)
    marks = np.array([1, 0, 1, 0, 0, 0, 1, 1], np.uint8)
    weights = np.full(6, -1.0)
    for be in backends():
        ids, starts, ends, rows = encode(be, trie, weights, trie, np.zeros(256, np.int32), data, offsets, marks, 1)
        assert host(ids).tolist() == [3, 5, 3, 3, 3]
        assert host(starts).tolist() == [0, 2, 4, 6, 7] and host(ends).tolist() == [2, 4, 6, 7, 8]
        assert host(rows).tolist() == [0, 0, 3, 3, 5]


@pytest.mark.parametrize("finish", [0, 1])
def test_long_rows_in_pieces_and_a_second_search(monkeypatch, finish):
    """Rows past LONG_BYTES take the lattice's pieces, and more edges than the first search's
    room take a second search: the same ids as the twin."""
    from gpu_text.cuda_ops import lattice as launchers
    from gpu_text.cuda_ops import trie as trie_launchers

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 64)
    monkeypatch.setattr(launchers, "LONG_BYTES", 128)
    monkeypatch.setattr(trie_launchers, "MATCHES_PER_BYTE", 0)
    monkeypatch.setattr(trie_launchers, "MATCHES_SLACK", 1)
    trie, weights, lookup, byte_ids, data, offsets, marks = case(11, 40, finish == 0)
    data = np.concatenate([data, np.frombuffer("ab你好abc🙂".encode() * 40, np.uint8)])
    offsets = np.append(offsets, data.size)
    if marks is not None:
        marks = np.append(marks, np.zeros(data.size - marks.size, np.uint8))
        marks[offsets[-2]] = 1
    want, *others = (encode(be, trie, weights, lookup, byte_ids, data, offsets, marks, finish) for be in backends())
    for got in others:
        for g, w in zip(got, want):
            assert host(g).tolist() == host(w).tolist()


@pytest.mark.parametrize("split", ["whitespace", "isolate"])
def test_unigram_with_a_split_cuts_pre_tokens_on_every_backend(split):
    """A Unigram tokenizer with a split pre-tokenizer solves one lattice per pre-token on every
    backend (the CPU's fused row encoder, which takes rows whole, is for ``split="none"``)."""
    from gpu_text.tokenizer import Normalizer, PreTokenizer, Unigram
    from gpu_text.tokenizer.unigram import UnigramModel

    model = UnigramModel(["<unk>", "▁", "a", "b", "a▁b", "▁b"], [0.0, -2, -1, -1, -0.5, -1.5], [2, 1, 1, 1, 1, 1])
    tok = Unigram(model, Normalizer("no"), PreTokenizer(split))
    texts = ["a▁b", "a▁bxa", "", "x▁▁b"]
    pre_tokens = PreTokenizer(split).pre_tokenize_strings(texts)
    want = [[i for ids in model.encode_strings(row) for i in ids] if row else [] for row in pre_tokens]
    assert want[0] != [4]  # the whole text's best path is the one piece "a▁b"
    for be in backends():
        assert tok.encode(texts, backend=be).ids.to_pylist() == want, be.name


def test_a_long_row_of_short_pre_tokens_skips_the_long_span_kernels(monkeypatch):
    """The long-span kernels run for a long pre-token, not for a long row of short ones."""
    from gpu_text.cuda_ops import lattice as launchers
    from tests.cuda_emulator.device_counts import measure
    from tests.emulated_backend import counting_emulated_backend

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 64)
    monkeypatch.setattr(launchers, "LONG_BYTES", 128)
    trie = DoubleArrayTrie.build(["ab", "a"], [5, 6])
    data = np.frombuffer(b"ab a" * 100, np.uint8).copy()
    marks = np.tile(np.array([1, 0, 1, 1], np.uint8), 100)
    be = counting_emulated_backend()
    for long_pre_token in (False, True):
        if long_pre_token:
            marks[200:] = 0
        with measure() as counts:
            got = encode(be, trie, np.full(7, -1.0), trie, np.zeros(256, np.int32), data,
                         np.array([0, data.size], np.int64), marks, 0)
        want = encode(backends()[0], trie, np.full(7, -1.0), trie, np.zeros(256, np.int32), data,
                      np.array([0, data.size], np.int64), marks, 0)
        assert [host(a).tolist() for a in got] == [host(a).tolist() for a in want]
        assert counts.launches == (6 + 12 if long_pre_token else 6), counts.summary()  # the pieces: 12 kernels


@pytest.mark.parametrize("split", ["word", "isolate"])
def test_lattice_models_with_a_dictionary_cutter_equal_the_staged_path(monkeypatch, split):
    """Unigram and BytePiece with a dictionary ``cn`` take the marks path (the segmenter's words marked
    in the Han pre-tokens, one lattice per pre-token) on every backend: the ids and spans of the
    staged path (pre-token lists, each Han pre-token cut on its own), on mixed text, bad bytes and a
    Han run longer than the segmenter's chunks (lowered here)."""
    from gpu_text.backend import get_backend
    from gpu_text.batch import TextBatch
    from gpu_text.cuda_ops import segment as segment_launchers
    from gpu_text.segment import Dictionary
    from gpu_text.tokenizer import BytePiece, Normalizer, PreTokenizer, Unigram
    from gpu_text.tokenizer.bpe import byte_piece
    from gpu_text.tokenizer.bytepiece import BytePieceModel
    from gpu_text.tokenizer.unigram import UnigramModel

    monkeypatch.setattr(segment_launchers, "CHUNK_BYTES", 64)
    words = ["宝玉", "黛玉", "说道", "笑道", "一个", "什么", "宝玉笑", "夫人", "王夫人"]
    cn = Dictionary(words, np.arange(3, 3 + len(words)), 100)
    pieces = ["宝", "玉", "宝玉", "笑道", "一", "个", "一个", "什么", "夫人", "王", "a", "b", "ab", "▁", "▁a", "1"]
    unigram = UnigramModel(["<unk>"] + pieces, [0.0] + [-1.0 - 0.1 * k for k in range(len(pieces))],
                           [2] + [1] * len(pieces))
    bytepiece = BytePieceModel(["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)] + pieces,
                               [0.0] * 259 + [1.0 + k for k in range(len(pieces))],
                               [2, 3, 3] + [6] * 256 + [1] * len(pieces))
    rng = np.random.default_rng(3)
    parts = words + ["宝", "玉", "了", "a", "ab", "▁", "12", "。", "x"]
    texts = ["".join(rng.choice(parts, int(rng.integers(0, 14)))) for _ in range(60)]
    texts = [t.encode() for t in texts] + [b"", b"\xff\xe4\xbd", "宝玉笑道一个什么王夫人".encode() * 30]
    batch = TextBatch.from_strings(texts)
    for tok in (Unigram(unigram, Normalizer("no"), PreTokenizer(split, cn=cn)),
                BytePiece(bytepiece, Normalizer("no"), PreTokenizer(split, cn=cn))):
        want = tok._encode_stages(batch, get_backend("cpu"), True, lists=True)
        for be in backends():
            got = tok.encode(texts, backend=be, with_offsets=True)
            for name, g, w in zip(("ids", "starts", "ends"), (got.ids, got.starts, got.ends), want):
                assert g.to_pylist() == w.to_pylist(), (type(tok).__name__, be.name, name)


def with_symbols_replaced(want, data, offsets, marks, lookup_words, byte_ids):
    """The reference's ids with every span marked 7 (a user symbol's, ``SYMBOL_MARK``) made one id:
    the piece it spells in the lookup trie (``lookup_words``: bytes → id), else its bytes' ids."""
    ids, starts, ends, rows = (a.tolist() for a in want)
    raw = bytes(data)
    out_ids, out_starts, out_ends, out_rows = [], [], [], [0]
    for r in range(len(offsets) - 1):
        cuts = [p for p in range(offsets[r], offsets[r + 1]) if marks[p]] + [int(offsets[r + 1])]
        symbols = {a: b for a, b in zip(cuts, cuts[1:]) if marks[a] == 7}
        k = rows[r]
        while k < rows[r + 1]:
            if starts[k] in symbols:
                a, b = starts[k], symbols[starts[k]]
                word = raw[a:b]
                if word in lookup_words:
                    out_ids.append(lookup_words[word]), out_starts.append(a), out_ends.append(b)
                else:
                    out_ids += [int(byte_ids[c]) for c in word]
                    out_starts += list(range(a, b))
                    out_ends += list(range(a + 1, b + 1))
                while k < rows[r + 1] and starts[k] < b:
                    k += 1
                continue
            out_ids.append(ids[k]), out_starts.append(starts[k]), out_ends.append(ends[k])
            k += 1
        out_rows.append(len(out_ids))
    return out_ids, out_starts, out_ends, out_rows


@pytest.mark.parametrize("finish", [0, 1])
def test_user_symbol_spans_are_one_id(finish):
    """Spans marked 7 (``PreTokenizer.symbol_marks``' user symbols) are one id each, the piece they
    spell in the lookup trie (their bytes' ids when none): the reference's ids with those spans
    replaced == Numba == emulated, across chunks and with symbols the lattice would cut."""
    rng = np.random.default_rng(5 + finish)
    symbols = {b"<m>": 40, b"<sep>": 41, "你好".encode(): 42}
    pieces = [b"a", b"b", b"ab", b"x", "你".encode(), "好".encode(), "é".encode(), b"<m>", b"<sep>", "你好".encode(),
              b"<z>"]
    texts = [[pieces[k] for k in rng.integers(0, len(pieces), int(rng.integers(0, 12)))] for _ in range(150)]
    texts += [[b"<m>"] * 300, [], [b"<z>", b"ab"]]
    data = np.frombuffer(b"".join(b"".join(t) for t in texts), np.uint8).copy()
    offsets = np.cumsum([0] + [sum(map(len, t)) for t in texts]).astype(np.int64)
    marks = np.zeros(data.size, np.uint8)
    for text, begin in zip(texts, offsets):
        at = int(begin)
        for k, piece in enumerate(text):
            symbol = piece in symbols or piece == b"<z>"
            if k == 0 or symbol or rng.random() < 0.3 or (k and (text[k - 1] in symbols or text[k - 1] == b"<z>")):
                marks[at] = 7 if symbol else int(rng.integers(1, 6))
            at += len(piece)
    trie = DoubleArrayTrie.build(["a", "b", "ab", "你", "<", "m", ">", "你好"], [5, 6, 7, 8, 9, 10, 11, 12])
    lookup = DoubleArrayTrie.build([w.decode() for w in symbols] + ["é"], list(symbols.values()) + [43])
    byte_ids = (np.arange(256, dtype=np.int32) % 50) + 100
    weights = np.linspace(-3.0, -1.0, 13)
    mode, fallback, cap = FINISHES[finish]
    plain = reference.lattice_encode(data, offsets, marks, trie.arrays("cpu"), weights, fallback, cap, mode, finish,
                                     3, byte_ids, lookup.arrays("cpu"))
    want = with_symbols_replaced(plain, data, offsets, marks, {**symbols, "é".encode(): 43}, byte_ids)
    assert want[0] != plain[0].tolist()  # the lattice alone would cut some symbols
    for be in backends():
        got = encode(be, trie, weights, lookup, byte_ids, data, offsets, marks, finish)
        for name, g, w in zip(("ids", "starts", "ends", "row offsets"), got, want):
            assert host(g).tolist() == w, f"{be.name}: {name}"


@pytest.mark.parametrize("split", ["isolate", "none"])
def test_bytepiece_with_user_symbols_takes_the_marks_path(split):
    """BytePiece with USER_DEFINED pieces: the symbols marked by ``PreTokenizer.symbol_marks`` and
    each one id in ``lattice_encode`` on every backend, the ids and spans of the staged path (the
    symbol matches as lists, each symbol pre-token its one id)."""
    from gpu_text.backend import get_backend
    from gpu_text.batch import TextBatch
    from gpu_text.tokenizer import BytePiece, Normalizer, PreTokenizer
    from gpu_text.tokenizer.bpe import PieceType, byte_piece
    from gpu_text.tokenizer.bytepiece import BytePieceModel

    pieces = ["a", "b", "ab", "▁", "▁a", "<", "m", ">", "你", "你好"]
    user = ["<m>", "<sep>", "好你", "b▁a"]
    model = BytePieceModel(["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)] + pieces + user,
                           [0.0] * 259 + [1.0 + k for k in range(len(pieces))] + [0.0] * len(user),
                           [2, 3, 3] + [6] * 256 + [1] * len(pieces) + [PieceType.USER_DEFINED] * len(user))
    tok = BytePiece(model, Normalizer("no"), PreTokenizer(split))
    assert tok.user_symbols is not None
    rng = np.random.default_rng(9)
    parts = pieces + user + ["x", "é", "<", "sep>", "好", " "]
    texts = ["".join(rng.choice(parts, int(rng.integers(0, 14)))) for _ in range(80)] + ["", "<m>" * 200]
    batch = TextBatch.from_strings(texts)
    want = tok._encode_stages(batch, get_backend("cpu"), True, lists=True)
    user_ids = {259 + len(pieces) + k for k in range(len(user))}
    assert user_ids <= {i for row in want[0].to_pylist() for i in row}
    for be in backends():
        got = tok.encode(texts, backend=be, with_offsets=True)
        for name, g, w in zip(("ids", "starts", "ends"), (got.ids, got.starts, got.ends), want):
            assert g.to_pylist() == w.to_pylist(), (be.name, name)
