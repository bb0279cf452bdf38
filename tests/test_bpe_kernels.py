"""Differential tests of cuda/bpe.cu: emulated CUDA (and the GPU when present) == Numba == reference."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.cuda_ops import bpe as cuda_bpe
from gpu_text.tokenizer.bpe import BPEModel, PieceType, byte_piece
from tests.conftest import kernel_backends, require, resolve
from cpu_fallback import bpe as numba_bpe
from tests.reference import bpe as reference
from tests.test_utf8_kernels import host

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ALPHABET = ["a", "b", "c", "▁", "你", "好", "é", "1"]


def random_model(rng: np.random.Generator, size: int, byte_fallback: bool) -> BPEModel:
    pieces = {"".join(rng.choice(ALPHABET, int(rng.integers(1, 5)))) for _ in range(size)}
    pieces |= {c for c in ALPHABET[:-2]}  # most single characters, not all: some need fallback
    pieces = sorted(pieces)
    names = ["<unk>"] + ([byte_piece(b) for b in range(256)] if byte_fallback else []) + pieces
    types = [PieceType.UNKNOWN] + [PieceType.BYTE] * (256 if byte_fallback else 0) + [PieceType.NORMAL] * len(pieces)
    # few distinct scores, so that ties (leftmost wins) happen
    scores = [0.0] * (len(names) - len(pieces)) + rng.integers(-5, 1, len(pieces)).astype(float).tolist()
    return BPEModel(names, scores, types)


def random_pre_tokens(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    raw = []
    for _ in range(count):
        text = "".join(rng.choice(ALPHABET + ["z"], int(rng.integers(1, 12)))).encode()
        if rng.random() < 0.1:
            text += b"\xe4\xbd"
        raw.append(text)
    lengths = np.array([len(r) for r in raw], np.int64)
    ends = np.cumsum(lengths)
    return np.frombuffer(b"".join(raw), np.uint8), ends - lengths, ends


def assert_encodes_like_reference(model: BPEModel, raw: list[bytes], backend) -> None:
    lengths = np.array([len(r) for r in raw], np.int64)
    ends = np.cumsum(lengths)
    data, starts = np.frombuffer(b"".join(raw), np.uint8), ends - lengths
    got = model.encode_pre_tokens(data, starts, ends, backend)
    want = reference.bpe_encode(data, starts, ends, *model.trie.arrays("cpu"), model.scores, model.byte_ids,
                                model.unk_id)
    for g, w in zip((got.ids, got.starts, got.ends, got.offsets), want):
        np.testing.assert_array_equal(host(g), w)


@pytest.mark.parametrize("byte_fallback", [True, False])
@pytest.mark.parametrize("count", [0, 1, 2, 1000])
def test_bpe_encode(backend, count, byte_fallback):
    rng = np.random.default_rng(count + byte_fallback)
    model = random_model(rng, 80, byte_fallback)
    data, starts, ends = random_pre_tokens(rng, count)
    got = model.encode_pre_tokens(data, starts, ends, backend)
    want = reference.bpe_encode(data, starts, ends, *model.trie.arrays("cpu"), model.scores, model.byte_ids,
                                model.unk_id)
    for g, w in zip((got.ids, got.starts, got.ends, got.offsets), want):
        np.testing.assert_array_equal(host(g), w)


def test_seed_vectors():
    # pre-token boundaries are never crossed: "a," is a piece, but "a" and "," are separate pre-tokens
    model = BPEModel(["<unk>", "a,", "a", ",", "b"], [0.0, 0.0, -3.0, -4.0, -5.0], [2, 1, 1, 1, 1])
    assert model.encode_strings(["a", ",", "b"]) == [[2], [3], [4]]
    assert model.encode_strings(["a,b"]) == [[1, 4]]
    # split digits: pieces 1(-1) 2(-2) 12(0); "1" and "2" as separate pre-tokens stay apart
    digits = BPEModel(["<unk>", "1", "2", "12"], [0.0, -1.0, -2.0, 0.0], [2, 1, 1, 1])
    assert digits.encode_strings(["1", "2"]) == [[1], [2]] and digits.encode_strings(["12"]) == [[3]]


def test_ties_go_to_the_leftmost_pair():
    model = BPEModel(["<unk>", "a", "aa"], [0.0, -1.0, 0.0], [2, 1, 1])
    assert model.encode_strings(["aaa"]) == [[2, 1]]


def test_megabyte_pre_tokens(backend):
    """One 1 MB pre-token (its timing is in benchmarks/tokenize.py; a quadratic merge would not end)."""
    model = BPEModel(["<unk>", "a", "aa", "aaaa", "你", "你你"], [0.0, -1.0, -2.0, -3.0, -1.0, -2.0], [2, 1, 1, 1, 1, 1])
    assert model.encode_strings(["a" * 1_000_000], backend)[0] == [3] * 250_000
    assert model.encode_strings(["你" * 350_001], backend)[0] == [5] * 175_000 + [4]


def test_parts_repeat_and_long_parts(backend):
    """Text that repeats (the CPU twin merges each distinct part once) with parts longer than its
    short-part limit (merged with the heap) and characters that no piece contains."""
    rng = np.random.default_rng(7)
    model = random_model(rng, 200, byte_fallback=False)
    words = ["".join(rng.choice(ALPHABET + ["z", "。"], int(rng.integers(1, 30)))) for _ in range(40)]
    words += ["ab" * 50, "你好" * 40 + "z" + "ab" * 40]
    raw = [rng.choice(words).encode() + (b"\xe4" if rng.random() < 0.05 else b"") for _ in range(3000)]
    assert_encodes_like_reference(model, raw, backend)


@pytest.mark.parametrize("unit", ["ab", "你好", "a你"])
def test_parts_around_the_short_limit(backend, unit):
    """One part (every neighbour pair joined) of 1 ... 80 bytes, repeated and alone: the CPU twin
    merges parts of at most 64 bytes (SHORT) from the pairs its cutting scan looked up, and longer
    ones with rounds and a heap; both sides of the limit agree with the reference, with and
    without the memo (a repeat of a part is copied, its first copy is merged)."""
    pieces = sorted({unit[0], unit[1], unit, unit + unit, unit[1] + unit[0], unit * 3})
    scores = [0.0] + [-float(len(p)) * (1 if i % 2 else 1.5) for i, p in enumerate(pieces)]
    model = BPEModel(["<unk>"] + pieces, scores, [2] + [1] * len(pieces))
    raw = []
    for n_bytes in range(1, 81):
        text = (unit * 80).encode()[:n_bytes]
        text = text[:len(text.decode("utf-8", "ignore").encode())]  # whole characters only
        raw += [text, text + " ".encode() + text, text]  # " " joins nothing: two parts
    assert_encodes_like_reference(model, raw, backend)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.binary(min_size=1, max_size=4).filter(lambda b: 0 not in b), min_size=1, max_size=30),
       texts=st.lists(st.binary(max_size=40), max_size=20), seed=st.integers(0, 2**16))
def test_byte_level_pieces(pieces, texts, seed):
    """Pieces and text of arbitrary bytes (malformed UTF-8 included): the CPU twin's cuts between
    characters that no piece joins must agree with merging whole pre-tokens."""
    pieces = sorted(set(pieces))
    rng = np.random.default_rng(seed)
    model = BPEModel([b"<unk>"] + pieces, [0.0] + rng.integers(-4, 1, len(pieces)).astype(float).tolist(),
                     [PieceType.UNKNOWN] + [PieceType.NORMAL] * len(pieces))
    texts = [t.replace(b"\0", b"") for t in texts] + [pieces[0] * 3]
    lengths = np.array([len(t) for t in texts], np.int64)
    ends = np.cumsum(lengths)
    data, starts = np.frombuffer(b"".join(texts), np.uint8), ends - lengths
    got = model.encode_pre_tokens(data, starts, ends, "cpu")
    want = reference.bpe_encode(data, starts, ends, *model.trie.arrays("cpu"), model.scores, model.byte_ids,
                                model.unk_id)
    for g, w in zip((got.ids, got.starts, got.ends, got.offsets), want):
        np.testing.assert_array_equal(g, w)



CUDA_BACKENDS = [name for name in kernel_backends() if name != "cpu"]


@pytest.mark.parametrize("name", CUDA_BACKENDS)
@pytest.mark.parametrize("long_bytes", [0, 6, 60])
@pytest.mark.parametrize("byte_fallback", [True, False])
def test_block_merges_long_pre_tokens(name, long_bytes, byte_fallback, monkeypatch):
    """Pre-tokens above the threshold are merged by a block in rounds: same ids as the reference,
    with ties, chains of equal pairs (ababab, aaaa), unknown runs and malformed bytes."""
    monkeypatch.setattr(cuda_bpe, "LONG_BYTES", long_bytes)
    rng = np.random.default_rng(long_bytes + byte_fallback)
    model = random_model(rng, 120, byte_fallback)
    words = ["".join(rng.choice(ALPHABET + ["z", "。"], int(rng.integers(1, 40)))) for _ in range(60)]
    words += ["a" * 300, "ab" * 70, "你好" * 40 + "z" * 9 + "ab" * 40, "zz。" * 30, "▁aa▁ab▁" * 20]
    raw = [rng.choice(words).encode() + (b"\xe4\xbd" if rng.random() < 0.05 else b"") for _ in range(300)]
    assert_encodes_like_reference(model, raw + [b""], resolve(name))


def test_rounds_stop_where_a_new_pair_outscores(backend, monkeypatch):
    """Merged pieces that score above their parts force a round to stop early (the sequential
    order interleaves them), and equal scores across different pieces tie to the leftmost. The
    text is long single parts, which the CPU twin merges in rounds too (and the GPU by blocks)."""
    monkeypatch.setattr(cuda_bpe, "LONG_BYTES", 0)
    # "bx" (rarely merged) joins b and x, so xababxabab... is one part
    names = ["<unk>", "a", "b", "c", "x", "ab", "bc", "abab", "abc", "ca", "cab", "xab", "xaba", "bx"]
    scores = [0.0, -1.0, -1.0, -1.0, -1.0, -5.0, -5.0, 0.0, -2.0, -5.0, -3.0, 0.0, 0.0, -9.0]
    model = BPEModel(names, scores, [PieceType.UNKNOWN] + [PieceType.NORMAL] * (len(names) - 1))
    # xabab: after x + ab -> xab pops (left of the merge), xab + a -> xaba takes the second ab's a
    raw = [b"ab" * 50, b"abc" * 40, b"cabcab" * 19 + b"c", b"bcabca" * 21, b"a", b"abcabcz" * 17, b"xabab" * 25]
    assert_encodes_like_reference(model, raw, backend)
    # a new pair that only ties the round's score still pops first when it lies further left
    model = BPEModel(["<unk>", "a", "b", "x", "ab", "xab", "xaba", "bx"],
                     [0.0, -1.0, -1.0, -1.0, -5.0, -5.0, 0.0, -9.0], [PieceType.UNKNOWN] + [PieceType.NORMAL] * 7)
    assert model.encode_strings(["xabab"], backend) == [[6, 2]]
    assert model.encode_strings(["xabab" * 30], backend) == [[6, 2] * 30]
    assert_encodes_like_reference(model, [b"xabab" * 25, b"abxabab" * 20], backend)


@pytest.mark.parametrize("name", CUDA_BACKENDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.text("ab▁你", min_size=1, max_size=5), min_size=1, max_size=20),
       texts=st.lists(st.text("ab▁你z", max_size=60), min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_block_merge_property(name, pieces, texts, seed):
    """Random pieces, scores with many ties and text over a small alphabet: every pre-token goes
    through the block path and encodes like the reference."""
    pieces = sorted(set(pieces))
    rng = np.random.default_rng(seed)
    model = BPEModel(["<unk>"] + pieces, [0.0] + rng.integers(-3, 1, len(pieces)).astype(float).tolist(),
                     [PieceType.UNKNOWN] + [PieceType.NORMAL] * len(pieces))
    original = cuda_bpe.LONG_BYTES
    cuda_bpe.LONG_BYTES = 0
    try:
        assert_encodes_like_reference(model, [t.encode() for t in texts], resolve(name))
    finally:
        cuda_bpe.LONG_BYTES = original



# ------------------------------------------------------------- a thread per short pre-token

def exact_length_pre_tokens(rng: np.random.Generator, lengths, alphabet: list[str]) -> list[bytes]:
    """One pre-token of each byte length, from random characters cut at that length (a character
    cut in two is malformed UTF-8, a byte fallback or unknown symbol of its own)."""
    raw = []
    for length in lengths:
        text = "".join(rng.choice(alphabet, length)).encode()[:length]
        if rng.random() < 0.1:
            at = int(rng.integers(0, length))
            text = text[:at] + b"\xff" + text[at + 1:]
        raw.append(text)
    return raw


def tied_model(rng: np.random.Generator, byte_fallback: bool, alphabet: list[str]) -> BPEModel:
    """Pieces of 1-6 characters over ``alphabet`` with scores from three values: ties everywhere."""
    pieces = {"".join(rng.choice(alphabet, int(rng.integers(2, 7)))) for _ in range(120)}
    pieces |= set(alphabet[:-1])  # the last character only inside pieces (or in none)
    pieces = sorted(pieces)
    names = ["<unk>"] + ([byte_piece(b) for b in range(256)] if byte_fallback else []) + pieces
    types = [PieceType.UNKNOWN] + [PieceType.BYTE] * (256 if byte_fallback else 0) + [PieceType.NORMAL] * len(pieces)
    scores = [0.0] * (len(names) - len(pieces)) + rng.integers(-2, 1, len(pieces)).astype(float).tolist()
    return BPEModel(names, scores, types)


@pytest.mark.parametrize("byte_fallback", [True, False])
def test_thread_path_up_to_and_past_its_limit(backend, byte_fallback):
    """Pre-tokens of every length from 1 to 48 bytes (a thread each, its symbols in local arrays)
    and right past the limit (49, 50: a warp each), many of each, over ASCII and 2-3 byte
    characters with tied scores: the emulated kernel, the Numba twin and the reference agree."""
    rng = np.random.default_rng(48 + byte_fallback)
    alphabet = ["a", "b", "ab"[::-1], "▁", "你", "é", "z"]
    for trial in range(3):
        model = tied_model(rng, byte_fallback, alphabet)
        lengths = [n for n in range(1, 51) for _ in range(4)] + [47, 48, 49] * 20
        raw = exact_length_pre_tokens(rng, lengths, alphabet)
        raw += [b"a" * 48, b"a" * 49, b"ab" * 24, b"ab" * 24 + b"a", "你".encode() * 16, "你".encode() * 16 + b"a",
                b"z" * 48, b"z" * 49, b"\xe4\xbd" * 24, b""]
        rng.shuffle(raw)
        assert_encodes_like_reference(model, raw, backend)


@pytest.mark.parametrize("name", CUDA_BACKENDS)
@pytest.mark.parametrize("warp_bytes, long_bytes", [(100, 512), (48, 2048), (20, 30), (512, 40)])
def test_thresholds_past_the_array_limits(name, warp_bytes, long_bytes, monkeypatch):
    """WARP_BYTES above THREAD_MAX_BYTES (48) and LONG_BYTES above WARP_MAX_BYTES (512) are clamped
    to what the thread's local arrays and the warp's shared list hold (merge_path); lower ones
    still move the limits: the same ids every way."""
    monkeypatch.setattr(cuda_bpe, "WARP_BYTES", warp_bytes)
    monkeypatch.setattr(cuda_bpe, "LONG_BYTES", long_bytes)
    rng = np.random.default_rng(warp_bytes + long_bytes)
    alphabet = ["a", "b", "▁", "你", "é", "z"]
    model = tied_model(rng, True, alphabet)
    lengths = list(range(1, 60)) + [99, 100, 101, 511, 512, 513, 600, 1500]
    raw = exact_length_pre_tokens(rng, lengths, alphabet) + [b"a" * 100, b"ab" * 300]
    assert_encodes_like_reference(model, raw, resolve(name))


@pytest.mark.parametrize("name", CUDA_BACKENDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.text("ab▁你é", min_size=1, max_size=6), min_size=1, max_size=30),
       texts=st.lists(st.text("ab▁你éz", max_size=20), min_size=1, max_size=12),
       cut=st.lists(st.integers(44, 52), max_size=4), byte_fallback=st.booleans(), seed=st.integers(0, 2**16))
def test_thread_path_property(name, pieces, texts, cut, byte_fallback, seed):
    """Random pieces with tied scores, with and without byte fallback, on pre-tokens of up to 60
    bytes and some cut to 44-52 bytes (across the thread/warp limit, characters cut in two):
    the emulated kernel's ids are the reference's and the Numba twin's."""
    pieces = sorted(set(pieces))
    rng = np.random.default_rng(seed)
    names = ["<unk>"] + ([byte_piece(b) for b in range(256)] if byte_fallback else []) + pieces
    types = [PieceType.UNKNOWN] + [PieceType.BYTE] * (256 if byte_fallback else 0) + [PieceType.NORMAL] * len(pieces)
    scores = [0.0] * (len(names) - len(pieces)) + rng.integers(-2, 1, len(pieces)).astype(float).tolist()
    model = BPEModel(names, scores, types)
    raw = [t.encode() for t in texts]
    long_text = "".join(texts).encode() * 8
    raw += [long_text[:n] for n in cut if len(long_text) >= n]
    for be in (resolve(name), "cpu"):
        assert_encodes_like_reference(model, raw, be)


# ------------------------------------------------------------------------------ merge tables

from numba import njit  # noqa: E402

from cpu_fallback.double_array import trie_step, trie_value  # noqa: E402
from cpu_fallback.merge_tables import char_at, lookup, pair_key, table_of  # noqa: E402
from gpu_text.tokenizer.merge_tables import JOINED, MergeTables  # noqa: E402
from gpu_text.trie import DoubleArrayTrie  # noqa: E402


@njit
def _slow_symbol_id(chars, state, check, label, eow, data, begin, end):
    """The quadratic builder's symbol lookup: every split walks its whole left and right part."""
    width, key = char_at(data, begin, end)
    if begin + width == end:
        return lookup(chars[0], chars[1], key)
    node = 0
    for i in range(begin, end):
        node = trie_step(state, check, label, node, data[i])
        if node < 0:
            return -1
    return trie_value(state, check, label, eow, node)


@njit
def slow_pair_tables(data, offsets, ids, chars, state, check, label, eow):
    """The merge tables' pair enumeration before it was made linear: the reference it must equal."""
    merge_keys, merge_ids = np.empty(data.size, np.uint64), np.empty(data.size, np.int32)
    join_keys = np.empty(data.size, np.uint64)
    n_merges = n_joins = 0
    for p in range(offsets.size - 1):
        begin, end = offsets[p], offsets[p + 1]
        width, key = char_at(data, begin, end)
        left_char = lookup(chars[0], chars[1], key)
        split = begin + width
        while split < end:
            width, key = char_at(data, split, end)
            right_char = lookup(chars[0], chars[1], key)
            join_keys[n_joins] = pair_key(left_char, right_char)
            n_joins += 1
            left = _slow_symbol_id(chars, state, check, label, eow, data, begin, split)
            right = _slow_symbol_id(chars, state, check, label, eow, data, split, end)
            if left >= 0 and right >= 0:
                merge_keys[n_merges], merge_ids[n_merges] = pair_key(left, right), ids[p]
                n_merges += 1
            left_char = right_char
            split += width
    joins = np.unique(join_keys[:n_joins])
    return table_of(merge_keys[:n_merges], merge_ids[:n_merges]), table_of(joins, np.zeros(joins.size, np.int32))


def merge_tables_of(pieces: list[bytes]) -> MergeTables:
    ids = np.arange(3, 3 + len(pieces), dtype=np.int32)
    return MergeTables.build(pieces, ids, 3 + len(pieces), DoubleArrayTrie.build(pieces, ids).arrays("cpu"))


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.one_of(st.text("ab▁你😀", min_size=1, max_size=12).map(str.encode),
                                 st.binary(min_size=1, max_size=8).filter(lambda b: 0 not in b)),
                       min_size=1, max_size=40, unique=True))
def test_merge_tables_equal_the_quadratic_builder(pieces):
    """Random piece sets (characters of 1-4 bytes, malformed bytes): the linear builder's merges and
    joins tables are the quadratic one's, array for array."""
    tables = merge_tables_of(pieces)
    offsets = np.zeros(len(pieces) + 1, np.int64)
    np.cumsum([len(p) for p in pieces], out=offsets[1:])
    data = np.frombuffer(b"".join(pieces), np.uint8)
    ids = np.arange(3, 3 + len(pieces), dtype=np.int32)
    trie = DoubleArrayTrie.build(pieces, ids).arrays("cpu")
    (merge_keys, merge_ids), (join_keys, _) = slow_pair_tables(
        data, offsets, ids, (tables.char_keys, tables.char_ids), *trie)
    for got, want in ((tables.merge_keys, merge_keys), (tables.merge_ids, merge_ids), (tables.join_keys, join_keys)):
        np.testing.assert_array_equal(got, want)
    # each joined pair of characters holds the piece that is the two of them, else JOINED (-2)
    char_bytes = {int(i): int(k).to_bytes(4, "big").rstrip(b"\0") or b"\0"
                  for k, i in zip(tables.char_keys.tolist(), tables.char_ids.tolist()) if i >= 0}
    piece_ids = {piece: 3 + i for i, piece in enumerate(pieces)}
    want_values = [-1 if key == 2**64 - 1 else
                   piece_ids.get(char_bytes[key >> 32] + char_bytes[key & 0xFFFFFFFF], JOINED)
                   for key in tables.join_keys.tolist()]
    assert tables.join_values.tolist() == want_values


def test_merge_tables_build_in_linear_time():
    """A 300,000-character piece (the merge of two equal halves) builds in about a second once
    compiled; the quadratic builder took minutes at 100,000 characters."""
    import time

    merge_tables_of([b"ab"])  # compiled
    half = ("ab你" * 50_000).encode()
    pieces = [half + half, half, b"a", b"b", "你".encode(), b"ab"]
    started = time.process_time()  # CPU seconds: a loaded machine's waits for a core do not count
    tables = merge_tables_of(pieces)
    assert time.process_time() - started < 5
    ids = {piece: 3 + i for i, piece in enumerate(pieces)}
    for left, right, joined in ((half, half, half + half), (b"a", b"b", b"ab")):
        key = np.uint64(ids[left] << 32 | ids[right])
        assert int(lookup(tables.merge_keys, tables.merge_ids, key)) == ids[joined]


# ------------------------------------------------------------------ texts cut by per-byte marks

def marked_texts(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Texts (some empty, some long runs) and marks: every non-empty text's first byte and random
    bytes after it, characters cut in two included."""
    raw = [b"" if rng.random() < 0.1 else "".join(rng.choice(ALPHABET + ["z"], int(rng.integers(1, 40)))).encode()
           for _ in range(count)]
    if count > 2:
        raw[1], raw[2] = b"ab" * 200, "你好".encode() * 90
    lengths = np.array([len(r) for r in raw], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    data = np.frombuffer(b"".join(raw), np.uint8)
    marks = (rng.random(data.size) < 0.15).astype(np.uint8) * rng.integers(1, 7, data.size).astype(np.uint8)
    marks[offsets[:-1][lengths > 0]] = 3
    return data, offsets, marks


@pytest.mark.parametrize("count", [0, 1, 3, 400])
@pytest.mark.parametrize("long_bytes, long_grid", [(512, 256), (6, 256), (0, 3)])
def test_bpe_encode_rows(backend, count, long_bytes, long_grid, monkeypatch):
    """Texts cut at their marks: the pre-tokens found on the device (their number never read),
    long ones (above LONG_BYTES) taken by a grid-stride loop of LONG_GRID blocks; same ids, spans
    and row offsets as the Numba twin and the reference."""
    monkeypatch.setattr(cuda_bpe, "LONG_BYTES", long_bytes)
    monkeypatch.setattr(cuda_bpe, "LONG_GRID", long_grid)
    rng = np.random.default_rng(count + long_bytes)
    model = random_model(rng, 80, byte_fallback=bool(count % 2))
    data, offsets, marks = marked_texts(rng, count)
    tables = model.device_tables("cpu")
    want = reference.bpe_encode_rows(data, offsets, marks, *tables)
    numba = numba_bpe.bpe_encode_rows(data, offsets, marks, *tables)
    got = model.encode_marked(backend.asarray(data), backend.asarray(offsets), backend.asarray(marks), backend)
    for g, n, w in zip(got, numba, want):
        assert host(g).dtype == n.dtype == w.dtype
        np.testing.assert_array_equal(n, w)
        np.testing.assert_array_equal(host(g), w)


def test_encode_rows_reads_the_device_once():
    """One host read per call (the number of ids), and no table copied after the first call."""
    from tests.cuda_emulator.device_counts import measure
    from tests.emulated_backend import counting_emulated_backend

    be = counting_emulated_backend()
    rng = np.random.default_rng(3)
    model = random_model(rng, 80, byte_fallback=True)
    data, offsets, marks = (be.asarray(a) for a in marked_texts(rng, 50))
    model.encode_marked(data, offsets, marks, be)
    with measure() as counts:
        ids = model.encode_marked(data, offsets, marks, be)[0]
    assert (counts.syncs, counts.uploads) == (1, 0)
    assert host(ids).size > 0


@pytest.mark.parametrize("name", CUDA_BACKENDS)
@pytest.mark.parametrize("warp_bytes", [0, 48])
def test_warp_merges_medium_pre_tokens(name, warp_bytes, monkeypatch):
    """Pre-tokens above WARP_BYTES and up to WARP_MAX_BYTES (512) get a warp each (the best pair by
    a max-reduce over the warp, ties to the leftmost): the reference's ids around both limits, with
    chains of equal pairs, unknown runs, byte fallback and characters cut in two."""
    monkeypatch.setattr(cuda_bpe, "WARP_BYTES", warp_bytes)
    monkeypatch.setattr(cuda_bpe, "WARP_GRID", 2)  # a warp takes several pre-tokens in turn
    rng = np.random.default_rng(warp_bytes)
    for byte_fallback in (True, False):
        model = random_model(rng, 150, byte_fallback)
        raw = [("".join(rng.choice(ALPHABET + ["z"], int(rng.integers(1, 200))))).encode()[:int(rng.integers(1, 520))]
               for _ in range(40)]
        raw += [b"a" * 512, b"ab" * 256, b"a" * 513, "你好".encode() * 85 + b"ab", b"z" * 49, b"\xe4\xbd" * 30, b"a"]
        assert_encodes_like_reference(model, raw, resolve(name))


@pytest.mark.parametrize("name", CUDA_BACKENDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.text("ab▁你", min_size=1, max_size=5), min_size=1, max_size=20),
       texts=st.lists(st.text("ab▁你z", max_size=60), min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_warp_merge_property(name, pieces, texts, seed):
    """Random pieces with many tied scores: every pre-token through the warp path, like the reference."""
    pieces = sorted(set(pieces))
    rng = np.random.default_rng(seed)
    model = BPEModel(["<unk>"] + pieces, [0.0] + rng.integers(-3, 1, len(pieces)).astype(float).tolist(),
                     [PieceType.UNKNOWN] + [PieceType.NORMAL] * len(pieces))
    original = cuda_bpe.WARP_BYTES
    cuda_bpe.WARP_BYTES = 0
    try:
        assert_encodes_like_reference(model, [t.encode() for t in texts], resolve(name))
    finally:
        cuda_bpe.WARP_BYTES = original


@pytest.mark.parametrize("name", CUDA_BACKENDS)
def test_tokenizer_device_path_equals_the_rows(name):
    """Tokenizer.encode on a CUDA backend (normalizer, pre-token marks and BPE by rows, spans
    through the alignment) gives the CPU row encoder's ids and original spans, for each split,
    rule and byte fallback, with bos/eos, on text that repeats, adversarial Unicode and bad bytes."""
    from gpu_text.demo import MODEL
    from gpu_text.tokenizer import Normalizer, PreTokenizer, Tokenizer
    from tests.test_normalizer import ADVERSARIAL

    rng = np.random.default_rng(16)
    words = ["the", "▁", "ｆｕｌｌ", "①②", "  ", "你好世界", "。", "1234", "don't", "\u0301", "ﷺ", "aaaa" * 20, "😀", " "]
    texts = ["".join(rng.choice(words, int(rng.integers(0, 12)))) for _ in range(60)] + ADVERSARIAL[:20]
    texts = [t.encode() for t in texts] + [b"\xff\xfe bad \xe4\xbd", b"\xc3", b"", b"   "]
    base = Tokenizer.from_model_file(MODEL)
    no_fallback = BPEModel(base.model.piece_bytes, base.model.scores, base.model.types, base.model.unk_id,
                           byte_fallback=False)
    be = resolve(name)
    for model in (base.model, no_fallback):
        for split, cn in (("word", "char"), ("whitespace", None)):
            for rule, flags in (("NMT_NFKC", {"add_dummy_prefix": True}), ("no", {"reconstruct": True}),
                                ("NFKC_CF", {})):
                tok = Tokenizer(model, Normalizer(rule, **flags), PreTokenizer(split=split, cn=cn), bos_id=1, eos_id=2)
                want = tok.encode(texts, backend="cpu", with_offsets=True, add_bos=True, add_eos=True)
                got = tok.encode(texts, backend=be, with_offsets=True, add_bos=True, add_eos=True)
                for g, w in zip((got.ids, got.starts, got.ends), (want.ids, want.starts, want.ends)):
                    assert g.to_pylist() == w.to_pylist(), (split, rule)


# ------------------------------------------------ user symbols on the device path (issue 16)
@pytest.mark.parametrize("count", [0, 1, 3, 400])
@pytest.mark.parametrize("long_bytes, warp_bytes", [(512, 48), (6, 2), (0, 0)])
def test_bpe_encode_rows_with_symbols(backend, count, long_bytes, warp_bytes, monkeypatch):
    """A pre-token starting where ``symbol_at`` is non-zero (a user symbol, as
    ``pretokenize_symbol_marks`` marks it) is its one id ``symbol_at >> 8``, whatever its length
    and the path its length would take; the others merge as before: the reference's ids, spans and
    row offsets."""
    monkeypatch.setattr(cuda_bpe, "LONG_BYTES", long_bytes)
    monkeypatch.setattr(cuda_bpe, "WARP_BYTES", warp_bytes)
    rng = np.random.default_rng(count + 7 * long_bytes)
    model = random_model(rng, 80, byte_fallback=bool(count % 2))
    data, offsets, marks = marked_texts(rng, count)
    starts = np.flatnonzero(marks)
    taken = starts[rng.random(starts.size) < 0.3]
    symbol_at = np.zeros(data.size, np.int32)
    symbol_at[taken] = rng.integers(0, len(model), taken.size).astype(np.int32) << 8 | 1
    tables = model.device_tables("cpu")
    want = reference.bpe_encode_rows(data, offsets, marks, *tables, symbol_at)
    numba = numba_bpe.bpe_encode_rows(data, offsets, marks, *tables, symbol_at)
    got = model.encode_marked(backend.asarray(data), backend.asarray(offsets), backend.asarray(marks), backend,
                              symbol_at=backend.asarray(symbol_at))
    for g, n, w in zip(got, numba, want):
        assert host(g).dtype == n.dtype == w.dtype
        np.testing.assert_array_equal(n, w)
        np.testing.assert_array_equal(host(g), w)
    if count:
        assert np.isin(symbol_at[taken] >> 8, host(got[0])).all()


def symbol_tokenizers():
    """The sample model with user-defined pieces (overlapping ones, a Han one, one holding the
    space symbol) under each split, and the same pieces under a SentencePiece-style whitespace
    split with a dummy prefix."""
    from gpu_text.demo import MODEL
    from gpu_text.tokenizer import Normalizer, PreTokenizer, Tokenizer

    base = Tokenizer.from_model_file(MODEL)
    m = base.model
    extra = [e for e in ("<mask>", "<sep>", "[宝玉]", "<m", "k><s", "宝玉]", "▁<", "ep>x", "<<", "<<<")
             if e not in m.piece_to_id]
    model = BPEModel(m.piece_bytes + [e.encode() for e in extra], list(m.scores) + [0.0] * len(extra),
                     list(m.types) + [PieceType.USER_DEFINED] * len(extra), unk_id=m.unk_id)
    for split, cn in (("word", None), ("isolate", "char"), ("whitespace", None), ("none", None)):
        yield Tokenizer(model, base.normalizer, PreTokenizer(split=split, cn=cn), base.bos_id, base.eos_id)
    yield Tokenizer(model, Normalizer("NMT_NFKC", add_dummy_prefix=True), PreTokenizer("whitespace"), 1, 2)


@pytest.mark.parametrize("name", CUDA_BACKENDS)
def test_tokenizer_device_path_with_user_symbols(name):
    """Tokenizer.encode with USER_DEFINED pieces on a CUDA backend (the symbols marked on the
    device, each its one id) gives the CPU row encoder's ids and original spans, on text full of
    overlapping symbols, symbols straddling the scan's chunks, long rows and bad bytes."""
    from tests.test_normalizer import ADVERSARIAL

    rng = np.random.default_rng(6)
    words = ["the", "▁", "<mask>", "<sep>", "[宝玉]", "宝玉", "]", "<m", "ask>", "<", "sep>", "你好", "don't",
             "ｆｕｌｌ", " ", "x", "😀"]
    texts = ["".join(rng.choice(words, int(rng.integers(0, 14)))) for _ in range(80)] + ADVERSARIAL[:10]
    texts = [t.encode() for t in texts] + [b"\xff<mask>\xe4\xbd<sep", b"", b"<" * 1001, b"x" + b"<mask>" * 200,
                                           "[宝玉]宝玉]".encode() * 100, b"<mask><sep>x" * 50]
    be = resolve(name)
    for tok in symbol_tokenizers():
        assert tok.symbol_width == len("[宝玉]".encode())
        want = tok.encode(texts, backend="cpu", with_offsets=True, add_bos=True)
        got = tok.encode(texts, backend=be, with_offsets=True, add_bos=True)
        for g, w in zip((got.ids, got.starts, got.ends), (want.ids, want.starts, want.ends)):
            assert g.to_pylist() == w.to_pylist(), tok.pre_tokenizer


@pytest.mark.parametrize("name", CUDA_BACKENDS)
def test_symbols_the_marks_cannot_hold_take_the_staged_path(name):
    """A user piece that is not well-formed UTF-8 (the device scan steps by characters) keeps the
    staged path, with the CPU's ids."""
    from gpu_text.demo import MODEL
    from gpu_text.tokenizer import Tokenizer

    base = Tokenizer.from_model_file(MODEL)
    m = base.model
    model = BPEModel(m.piece_bytes + [b"<m>", b"\xe4\xbd"], list(m.scores) + [0.0, 0.0],
                     list(m.types) + [PieceType.USER_DEFINED] * 2, unk_id=m.unk_id)
    tok = Tokenizer(model, base.normalizer, base.pre_tokenizer)
    assert tok.user_symbols is not None and tok.symbol_width is None
    texts = ["你<m>好".encode(), b"a<m>\xe4\xbd\xe4\xbdb", b""]
    assert tok.encode(texts, backend=resolve(name)).ids.to_pylist() == tok.encode(texts, backend="cpu").ids.to_pylist()


@pytest.mark.parametrize("name", ["cpu"] + CUDA_BACKENDS)
def test_tokenizer_with_a_dictionary_cutter_equals_the_staged_path(name):
    """Tokenizer.encode with a dictionary ``cn`` (the cutter's words marked on the device) gives the
    ids and original spans of the staged path (pre-token lists, each Han pre-token cut alone), with
    and without user symbols (which keep the staged path), on mixed text, bad bytes and long Han runs."""
    from gpu_text.batch import TextBatch
    from gpu_text.demo import MODEL
    from gpu_text.segment import Dictionary
    from gpu_text.tokenizer import Normalizer, PreTokenizer, Tokenizer

    base = Tokenizer.from_model_file(MODEL)
    words = ["宝玉", "黛玉", "贾母", "说道", "笑道", "一个", "什么", "宝玉笑", "王夫人", "夫人"]
    cn = Dictionary(words, np.arange(3, 3 + len(words)), 100)
    rng = np.random.default_rng(2)
    pieces = words + ["the", "▁", "你", "好", "。", "1234", "don't", "ｆｕｌｌ", " ", "<mask>", "了"]
    texts = ["".join(rng.choice(pieces, int(rng.integers(0, 16)))) for _ in range(80)]
    texts = [t.encode() for t in texts] + [b"\xff\xfe \xe4\xbd", b"", "宝玉笑道一个什么".encode() * 600]
    be = resolve(name)
    for split in ("word", "isolate"):
        for rule in ("NMT_NFKC", "no"):
            tok = Tokenizer(base.model, Normalizer(rule), PreTokenizer(split=split, cn=cn), 1, 2)
            batch = TextBatch.from_strings(texts)
            want = tok._encode_stages(batch, resolve("cpu"), True, lists=True)
            got = tok.encode(texts, backend=be, with_offsets=True)
            for g, w in zip((got.ids, got.starts, got.ends), want):
                assert g.to_pylist() == w.to_pylist(), (split, rule)
    m = base.model
    model = BPEModel(m.piece_bytes + [b"<mask>"], list(m.scores) + [0.0], list(m.types) + [PieceType.USER_DEFINED],
                     unk_id=m.unk_id)
    tok = Tokenizer(model, base.normalizer, PreTokenizer(cn=cn))
    assert tok.encode(texts, backend=be).ids.to_pylist() == tok.encode(texts, backend="cpu").ids.to_pylist()
