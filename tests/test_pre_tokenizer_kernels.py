"""Differential tests of cuda/pre_tokenizer.cu: emulated CUDA (and the GPU when present) == Numba ==
the pattern-matching reference, for every compiled configuration."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from gpu_text.batch import TextBatch
from gpu_text.segment import Dictionary
from gpu_text.tokenizer.pre_tokenizer import PreTokenDFA, PreTokenizer
from tests.conftest import require
from tests.reference import pre_tokenizer as reference
from tests.test_utf8_kernels import host

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CONFIGS = [(split, digits, han) for split in ("word", "isolate", "whitespace") for digits in ("keep", "split")
           for han in (False, True)] + [("none", "keep", False)]
PIECES = ["a", "b", "Ж", "'", "▁", "▁", "1", "２", "你", "好", ",", "。", "$", "\t", "\n", "🙂", "ｂ", " "]


def random_texts(rng: np.random.Generator, count: int, max_len: int = 30) -> list[bytes]:
    out = []
    for _ in range(count):
        n = int(rng.integers(0, max_len))
        text = "".join(PIECES[k] for k in rng.integers(0, len(PIECES), n)).encode()
        if rng.random() < 0.1:  # malformed bytes anywhere, including inside a multi-byte character
            cut = int(rng.integers(0, len(text) + 1))
            text = text[:cut] + (b"\xe4\xbd", b"\xff", b"\x80")[int(rng.integers(0, 3))] + text[cut:]
        out.append(text)
    return out


def long_texts(rng: np.random.Generator) -> list[bytes]:
    """Strings of 100 KB and more whose pieces and pre-tokens straddle thread and block boundaries:
    runs no cut divides (letters, Han, digits, a letter run behind a prefix) and mixed text."""
    mixed = b"".join(random_texts(rng, 3000, 40))
    runs = []
    for run in ("a" * 30000, "你" * 12000, "1" * 3000, "▁" * 3000, ",a" * 5000, "don't" * 3000):
        runs.append(run + "".join(PIECES[k] for k in rng.integers(0, len(PIECES), 50)))
    return [mixed, b"x", "".join(runs).encode(), b"", b"a" * 100_000, mixed[:4097]]


LONG = long_texts(np.random.default_rng(7))


@functools.lru_cache(maxsize=None)
def long_reference(config: tuple[str, str, bool]) -> tuple[np.ndarray, np.ndarray]:
    """The reference is slow on 500 KB of text, so every backend reuses one answer."""
    batch = TextBatch.from_strings(LONG)
    return reference.pretokenize(batch.data, batch.offsets, PreTokenDFA.compile(*config))


def assert_same_as_reference(backend, texts: list[bytes], config: tuple[str, str, bool], want=None) -> None:
    batch = TextBatch.from_strings(texts)
    dfa = PreTokenDFA.compile(*config)
    got = backend.op("pre_tokenizer", "pretokenize")(backend.asarray(batch.data), backend.asarray(batch.offsets), dfa)
    want = want or reference.pretokenize(batch.data, batch.offsets, dfa)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(host(g), w)


@pytest.mark.parametrize("config", CONFIGS, ids=["-".join(map(str, c)) for c in CONFIGS])
@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_random_batches(backend, size, config):
    assert_same_as_reference(backend, random_texts(np.random.default_rng(size), size), config)


@pytest.mark.parametrize("config", [("word", "keep", False), ("isolate", "split", True), ("whitespace", "keep", False)])
def test_long_strings(backend, config):
    assert max(map(len, LONG)) >= 100_000
    assert_same_as_reference(backend, LONG, config, long_reference(config))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(PIECES + ["\xff", "x\u2581"]), max_size=12).map("".join), max_size=6),
       st.sampled_from(CONFIGS))
def test_generated_text(backend, texts, config):
    assert_same_as_reference(backend, [t.encode() for t in texts], config)


def test_pre_tokenizer_on_every_backend(backend):
    """The whole stage (offsets, dictionary cut of Han pre-tokens) agrees with the CPU path."""
    rng = np.random.default_rng(3)
    texts = random_texts(rng, 300) + [b"", "我们在学习人工智能▁ok".encode()]
    cn = Dictionary(["我们", "学习", "人工智能", "你好", "好"], np.array([8, 7, 10, 5, 1]), 40)
    for pre in (PreTokenizer(), PreTokenizer(split="isolate", cn=cn), PreTokenizer(split="whitespace")):
        got, want = pre.pre_tokenize(texts, backend), pre.pre_tokenize(texts, "cpu")
        assert got.starts.to_pylist() == want.starts.to_pylist() and got.ends.to_pylist() == want.ends.to_pylist()
    assert PreTokenizer(cn=cn).pre_tokenize(texts[-1:], backend).to_pylist() == [["我们", "在", "学习", "人工智能", "▁ok"]]


SYMBOLS = ["<m>", "ab", "abc", "bcd", "你好", "▁x", "a"]


def greedy_symbols(raw: bytes, words: list[bytes]) -> list[tuple[int, int, int]]:
    """SentencePiece's scan, directly: the longest word at each character, then on after it."""
    out, at = [], 0
    chars = {offset for _, offset in reference.decode_string(raw)}
    while at < len(raw):
        if at in chars:
            found = [(len(w), k) for k, w in enumerate(words) if raw.startswith(w, at)]
            if found:
                length, k = max(found)
                out.append((at, at + length, k))
                at += length
                continue
        at += 1
    return out


def symbol_reference(texts: list[bytes], pre: PreTokenizer, words: list[bytes]) -> tuple[list, list]:
    """Pre-tokens (strings) and symbol ids: the symbols whole, each stretch between them split alone."""
    pieces, ids = [], []
    for raw in texts:
        row_pieces, row_ids, at = [], [], 0
        for start, end, k in greedy_symbols(raw, words) + [(len(raw), len(raw), -1)]:
            if start > at:
                stretch = pre.pre_tokenize([raw[at:start]], "cpu").to_pylist()[0]
                row_pieces += stretch
                row_ids += [-1] * len(stretch)
            if k >= 0:
                row_pieces.append(raw[start:end].decode("utf-8", "replace"))
                row_ids.append(k)
            at = end
        pieces.append(row_pieces)
        ids.append(row_ids)
    return pieces, ids


def test_user_symbols_on_every_backend(backend):
    from gpu_text.trie import DoubleArrayTrie

    words = [w.encode() for w in SYMBOLS]
    trie = DoubleArrayTrie.build(words)
    rng = np.random.default_rng(5)
    pieces = PIECES + SYMBOLS + ["b", "c", "d", "<", "m>"]
    texts = ["".join(pieces[k] for k in rng.integers(0, len(pieces), int(rng.integers(0, 25)))).encode()
             for _ in range(150)] + [b"", b"abcd" * 50, "你好你好▁x".encode()]
    cn = Dictionary(["你好", "好"], np.array([5, 1]), 10)
    for pre in (PreTokenizer(), PreTokenizer(split="isolate", cn=cn), PreTokenizer(split="whitespace"),
                PreTokenizer(split="none")):
        got = pre.pre_tokenize(texts, backend, trie)
        want_pieces, want_ids = symbol_reference(texts, pre, words)
        assert got.to_pylist() == want_pieces
        assert got.symbol_ids.to_pylist() == want_ids


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(st.sampled_from("abc<>d"), min_size=1, max_size=4), min_size=1, max_size=6, unique=True),
       st.lists(st.text(st.sampled_from("abc<>d你"), max_size=20), max_size=5))
def test_symbol_matches_are_sentencepiece_scan(words, texts):
    from gpu_text.tokenizer.pre_tokenizer import symbol_matches
    from gpu_text.trie import DoubleArrayTrie

    raw = [t.encode() for t in texts]
    batch = TextBatch.from_strings(raw)
    encoded = [w.encode() for w in words]
    starts, ends, values = symbol_matches(DoubleArrayTrie.build(encoded), batch.data, batch.offsets, "cpu")
    want = [(int(batch.offsets[r]) + a, int(batch.offsets[r]) + b, k)
            for r, t in enumerate(raw) for a, b, k in greedy_symbols(t, encoded)]
    assert list(zip(starts.tolist(), ends.tolist(), values.tolist())) == want


# ---------------------------------------------------------------- the chunked scan (issue 16)
CHUNK = 256  # gpu_text.cuda_ops.pre_tokenizer.CHUNK, spelled out so that a change is seen here
SUPER = 256  # gpu_text.cuda_ops.pre_tokenizer.SUPER
SCAN_KERNELS = ("pretokenize_cuts", "pretokenize_summary", "pretokenize_land_join", "pretokenize_resolve",
                "pretokenize_scan")


def test_chunk_size_is_the_kernels():
    from gpu_text.cuda_ops import pre_tokenizer as launcher
    from gpu_text.kernel_sources import kernel_source_path

    source = kernel_source_path("pre_tokenizer").read_text()
    assert launcher.CHUNK == CHUNK and f"#define PT_CHUNK {CHUNK}\n" in source
    assert launcher.SUPER == SUPER and f"#define PT_SUPER {SUPER}\n" in source
    assert f"#define PT_MAX_STATES {launcher.MAX_STATES}\n" in source
    assert max(PreTokenDFA.compile(*c).table.shape[0] for c in CONFIGS) <= launcher.MAX_STATES


def test_strings_across_chunk_boundaries(backend):
    """Pre-tokens and malformed or multi-byte characters straddling chunk ends, matches of every
    length up to many chunks, between empty strings."""
    rng = np.random.default_rng(16)
    texts = []
    for length in (CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 1, 7 * CHUNK + 3):
        for piece in ("a", "你", "1", "▁", "🙂", "don't", "a▁", "ab,", "\xff"):
            text = (piece * length).encode("utf-8", "surrogateescape") if piece != "\xff" else b"\xff" * length
            texts += [text[:length], b"", text[: length - 1] + "你".encode()]
        texts.append(b"".join(random_texts(rng, 40, 30))[: length])
    for config in CONFIGS:
        assert_same_as_reference(backend, texts, config)


def emulated_kernels():
    from tests.emulated_backend import emulated_backend

    module = emulated_backend().runtime.module("pre_tokenizer")
    return {name: module.get_function(name) for name in SCAN_KERNELS}


def megabyte_chinese_line() -> bytes:
    from gpu_text.demo import SAMPLES

    text = (SAMPLES / "zh-hongloumeng.txt").read_text(encoding="utf-8").replace("\n", "")
    raw = (text * (1 + (1 << 20) // len(text.encode()))).encode()[: 1 << 20]
    return raw[: len(raw.decode("utf-8", "ignore").encode())]


@pytest.mark.parametrize("config", [("whitespace", "keep", False), ("word", "keep", False), ("isolate", "keep", True)])
def test_one_megabyte_chinese_line_has_no_long_thread(config):
    """A 1 MB Chinese line (the sample novel without its newlines; under a whitespace split it is
    one pre-token) and a 1 MB run of one Han character: the same starts as the Numba twin, and no
    thread takes more than a chunk's characters plus 2 * SUPER summary lookups and one per
    SUPER chunks (64 KiB) of the longest match."""
    from cpu_fallback import pre_tokenizer as numba_twins
    from tests.emulated_backend import emulated_backend

    be = emulated_backend()
    dfa = PreTokenDFA.compile(*config)
    for raw in (megabyte_chinese_line(), "你".encode() * ((1 << 20) // 3)):
        batch = TextBatch.from_strings([b"a", raw, b"b"])
        got = be.op("pre_tokenizer", "pretokenize")(batch.data, batch.offsets, dfa)
        want = numba_twins.pretokenize(batch.data, batch.offsets, dfa)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        steps = {name: kernel.last_max_steps for name, kernel in emulated_kernels().items()}
        print(config, len(raw), "bytes: longest thread's steps", steps)
        assert max(steps.values()) <= CHUNK + 2 * SUPER + len(raw) // (SUPER * CHUNK) + 1, steps
        assert steps["pretokenize_resolve"] == 0


def test_chains_that_never_meet_fall_back_exactly():
    """A DFA whose only match is two letters: in a run of letters the chains from odd and from even
    positions never meet, so every chunk's join misses and the resolving pass redoes the string;
    the starts are still the Numba twin's (the oracle for a DFA no split configuration compiles)."""
    from cpu_fallback import pre_tokenizer as numba_twins
    from gpu_text.tokenizer.pre_tokenizer import ALPHA
    from tests.emulated_backend import emulated_backend

    table = np.zeros((4, 6), np.int32)
    table[1, ALPHA], table[2, ALPHA] = 2, 3
    joinable = np.zeros((6, 6), np.uint8)
    joinable[ALPHA, ALPHA] = 1
    dfa = PreTokenDFA("pairs", "keep", False, ord("▁"), table, np.array([0, 0, 0, 1], np.uint8), joinable)
    run = b"," + b"a" * (12 * CHUNK + 1)  # the chain starts at an odd position, chunks at even ones
    batch = TextBatch.from_strings([run, b"", b"a" * (6 * CHUNK), run[:-3] + b"ab,a", "你".encode() + run])
    be = emulated_backend()
    got = be.op("pre_tokenizer", "pretokenize")(batch.data, batch.offsets, dfa)
    want = numba_twins.pretokenize(batch.data, batch.offsets, dfa)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert emulated_kernels()["pretokenize_resolve"].last_max_steps >= 12


@pytest.mark.parametrize("config", CONFIGS[::3] + [CONFIGS[-1]], ids=lambda c: "-".join(map(str, c)))
def test_marks_are_the_starts(backend, config):
    """pretokenize_marks (the tokenizer's device path): 1 + the first symbol at every start the
    reference finds, 0 elsewhere, on random and chunk-straddling texts; no host read."""
    from cpu_fallback import pre_tokenizer as numba_twins
    from tests.cuda_emulator.device_counts import measure
    from tests.emulated_backend import counting_emulated_backend

    texts = random_texts(np.random.default_rng(5), 300) + [b"a" * (3 * CHUNK + 1), b"", "你".encode() * CHUNK]
    batch = TextBatch.from_strings(texts)
    dfa = PreTokenDFA.compile(*config)
    want = reference.pretokenize_marks(batch.data, batch.offsets, dfa)
    np.testing.assert_array_equal(numba_twins.pretokenize_marks(batch.data, batch.offsets, dfa), want)
    got = backend.op("pre_tokenizer", "pretokenize_marks")(backend.asarray(batch.data),
                                                            backend.asarray(batch.offsets), dfa)
    np.testing.assert_array_equal(host(got), want)
    if backend.name.startswith("cuda-emulated"):  # the same launches, counted: nothing read back
        counting = counting_emulated_backend()
        data, offsets = counting.asarray(batch.data), counting.asarray(batch.offsets)
        with measure() as counts:
            counting.op("pre_tokenizer", "pretokenize_marks")(data, offsets, dfa)
        assert counts.syncs == 0 and counts.launches == len(SCAN_KERNELS)


# ------------------------------------------------ user symbols on the device (issue 16)
SYMBOL_WORDS = ["<m>", "ab", "abc", "bcd", "你好", "▁x", "a", "aa", "好你"]


def test_symbol_mark_is_the_kernels():
    """The mark of a symbol's pre-token and the packing of symbol_at, alike in the three twins."""
    from cpu_fallback import pre_tokenizer as numba_twins
    from gpu_text.cuda_ops import pre_tokenizer as launcher
    from gpu_text.kernel_sources import kernel_source_path

    source = kernel_source_path("pre_tokenizer").read_text()
    assert launcher.SYMBOL_MARK == numba_twins.SYMBOL_MARK == reference.SYMBOL_MARK == 7
    assert "#define PT_SYMBOL_MARK (PT_SYMBOLS + 1)" in source and "#define PT_SYMBOLS 6\n" in source
    assert "#define PT_SYMBOL_BITS 8 " in source and numba_twins.SYMBOL_BITS == 8
    assert launcher.MAX_SYMBOL_BYTES == 255


def symbol_trie(words: list[str]):
    from gpu_text.tokenizer.pre_tokenizer import symbol_scan_width
    from gpu_text.trie import DoubleArrayTrie

    encoded = {w.encode(): k + 3 for k, w in enumerate(words)}
    return DoubleArrayTrie.build(list(encoded), list(encoded.values())), symbol_scan_width(encoded)


def symbol_texts(rng: np.random.Generator, count: int) -> list[bytes]:
    """Random text full of overlapping symbols (``ab``/``abc``/``bcd``, ``a``/``aa``, ``你好``/``好你``),
    malformed bytes among them."""
    pieces = PIECES + SYMBOL_WORDS + ["b", "c", "d", "<", "m>", "好"]
    texts = []
    for _ in range(count):
        text = "".join(pieces[k] for k in rng.integers(0, len(pieces), int(rng.integers(0, 25)))).encode()
        if rng.random() < 0.1:
            cut = int(rng.integers(0, len(text) + 1))
            text = text[:cut] + (b"\xe4\xbd", b"\xff", b"\x80")[int(rng.integers(0, 3))] + text[cut:]
        texts.append(text)
    return texts


def assert_symbol_marks(backend, texts: list[bytes], config, words=SYMBOL_WORDS, use_reference=True) -> None:
    from cpu_fallback import pre_tokenizer as numba_twins

    batch = TextBatch.from_strings(texts)
    dfa = PreTokenDFA.compile(*config)
    trie, width = symbol_trie(words)
    arrays = (trie.state, trie.check, trie.label, trie.eow)
    want = numba_twins.pretokenize_symbol_marks(batch.data, batch.offsets, dfa, *arrays, width)
    if use_reference:
        for n, w in zip(want, reference.pretokenize_symbol_marks(batch.data, batch.offsets, dfa, *arrays, width)):
            np.testing.assert_array_equal(n, w)
    got = backend.op("pre_tokenizer", "pretokenize_symbol_marks")(
        backend.asarray(batch.data), backend.asarray(batch.offsets), dfa, *trie.arrays(backend), width)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(host(g), w)


@pytest.mark.parametrize("config", CONFIGS, ids=["-".join(map(str, c)) for c in CONFIGS])
def test_symbol_marks_on_random_text(backend, config):
    """pretokenize_symbol_marks: SentencePiece's scan of the symbols (the longest at each character
    it reaches) and every stretch between them split alone, per byte: the reference's marks and
    longest symbols, on random batches of 0, 1, 2 and 300 texts."""
    for size in (0, 1, 2, 300):
        assert_symbol_marks(backend, symbol_texts(np.random.default_rng(size), size), config)


def test_symbol_marks_across_chunks(backend):
    """Symbols straddling chunk ends, overlapping chains that never meet (``aa`` over a run of
    ``a`` from odd and even starts, ``ab``/``bcd`` over ``abcd…``), long rows over many chunks and
    a row past a super chunk (SUPER * CHUNK bytes), between empty rows."""
    rng = np.random.default_rng(11)
    texts = []
    for length in (CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 1, 7 * CHUNK + 3):
        for piece in ("a", "abcd", "你好", "<m>", "▁x", "ab", "bcd"):
            text = (piece * length).encode()[:length]
            texts += [text, b"", b"," + text, text[:-1] + "你".encode()]
    texts.append(b"".join(symbol_texts(rng, 400))[:3 * CHUNK])
    texts += [b"ab"] + [b""] * 5000 + [b"cd<m>", b"", b"a"]  # many empty strings inside one chunk
    for config in (CONFIGS[0], CONFIGS[8], CONFIGS[-1]):
        assert_symbol_marks(backend, texts, config)
    long_rows = [b"," + b"a" * (SUPER * CHUNK + 3 * CHUNK + 1), b"", b"abcd" * (SUPER * CHUNK // 3),
                 b"".join(symbol_texts(rng, 12000))]
    assert_symbol_marks(backend, long_rows, CONFIGS[0], use_reference=False)


def test_symbol_marks_have_no_long_thread():
    """A 1 MB row of ``a`` under the symbols ``a``/``aa`` (the scan's chains from odd and even
    positions never meet) and a 1 MB mixed row: no thread takes more than a chunk's characters (a
    pass backwards over its chunk for the symbols' table), 2 * SUPER table lookups and one per
    SUPER chunks, and no string is redone (the chunks start where the symbol scan truly enters)."""
    from cpu_fallback import pre_tokenizer as numba_twins
    from tests.emulated_backend import emulated_backend

    be = emulated_backend()
    trie, width = symbol_trie(SYMBOL_WORDS)
    rng = np.random.default_rng(3)
    for raw in (b"," + b"a" * (1 << 20), b"".join(symbol_texts(rng, 80000))[: 1 << 20]):
        batch = TextBatch.from_strings([b"b", raw, b"a"])
        dfa = PreTokenDFA.compile("word")
        got = be.op("pre_tokenizer", "pretokenize_symbol_marks")(batch.data, batch.offsets, dfa, *trie.arrays(be),
                                                                 width)
        want = numba_twins.pretokenize_symbol_marks(batch.data, batch.offsets, dfa, trie.state, trie.check,
                                                    trie.label, trie.eow, width)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        steps = {name: kernel.last_max_steps for name, kernel in emulated_kernels().items()}
        print(len(raw), "bytes: longest thread's steps", steps)
        assert max(steps.values()) <= CHUNK + 2 * SUPER + len(raw) // (SUPER * CHUNK) + 1, steps
        assert steps["pretokenize_resolve"] == 0


def test_symbol_marks_read_nothing_back():
    """The same launches as without symbols, and no host read."""
    from tests.cuda_emulator.device_counts import measure
    from tests.emulated_backend import counting_emulated_backend

    counting = counting_emulated_backend()
    batch = TextBatch.from_strings(symbol_texts(np.random.default_rng(2), 200))
    trie, width = symbol_trie(SYMBOL_WORDS)
    data, offsets, arrays = counting.asarray(batch.data), counting.asarray(batch.offsets), trie.arrays(counting)
    dfa = PreTokenizer().device_dfa(counting)
    counting.op("pre_tokenizer", "pretokenize_symbol_marks")(data, offsets, dfa, *arrays, width)
    with measure() as counts:
        counting.op("pre_tokenizer", "pretokenize_symbol_marks")(data, offsets, dfa, *arrays, width)
    assert (counts.syncs, counts.uploads, counts.launches) == (0, 0, len(SCAN_KERNELS))


def test_symbol_marks_are_the_pre_tokens_of_the_staged_path(backend):
    """PreTokenizer.symbol_marks gives the pre-tokens and symbol ids of pre_tokenize with symbols."""
    trie, width = symbol_trie(SYMBOL_WORDS)
    texts = symbol_texts(np.random.default_rng(9), 200)
    batch = TextBatch.from_strings(texts)
    for pre in (PreTokenizer(), PreTokenizer(split="isolate", cn="char"), PreTokenizer(split="whitespace"),
                PreTokenizer(split="none")):
        staged = pre.pre_tokenize(texts, "cpu", trie)
        marks, symbol_at = (host(a) for a in pre.symbol_marks(batch.to_device(backend.xp), trie, width, backend))
        starts = np.flatnonzero(marks)
        ids = np.where(marks[starts] == 7, symbol_at[starts] >> 8, -1)
        base = batch.offsets[:-1][np.repeat(np.arange(len(texts)), np.diff(staged.starts.offsets))]
        np.testing.assert_array_equal(starts, staged.starts.values + base)
        np.testing.assert_array_equal(ids, staged.symbol_ids.values)


# ------------------------------------------------ a dictionary cutter's words as marks (issue 16)
CUT_WORDS = ["我们", "学习", "人工智能", "你好", "好", "人工", "智能", "你好你"]


def cutter_texts(rng: np.random.Generator, count: int) -> list[bytes]:
    pieces = PIECES + ["我们", "学习", "人工", "智能", "你", "好", "的", "𠀀", "龥"]
    return ["".join(pieces[k] for k in rng.integers(0, len(pieces), int(rng.integers(0, 30)))).encode()
            for _ in range(count)]


def test_word_marks_twins(backend):
    """pretokenize_marks with a Segmenter's word marks (Segmenter.word_marks, the backend's own: the
    device's marks only its Han runs' words): the words that start with a Han character become Han
    pre-token starts; reference (the words as lists) == Numba == the backend."""
    from cpu_fallback import pre_tokenizer as numba_twins
    from gpu_text.segment import Segmenter

    texts = cutter_texts(np.random.default_rng(4), 300) + [b"", "你好你好你好".encode() * 90, b"\xe4\xbd\xa0\xff"]
    batch = TextBatch.from_strings(texts)
    dfa = PreTokenDFA.compile("word")
    segmenter = Segmenter(Dictionary(CUT_WORDS, np.arange(1, len(CUT_WORDS) + 1), 60))
    words = segmenter.segment(texts, "cpu").starts
    word_marks = host(segmenter.word_marks(batch, "cpu"))
    np.testing.assert_array_equal(np.flatnonzero(word_marks),
                                  batch.offsets[:-1][np.repeat(np.arange(len(texts)), np.diff(words.offsets))]
                                  + words.values)
    device_words = segmenter.word_marks(batch.to_device(backend.xp), backend)
    plain = numba_twins.pretokenize_marks(batch.data, batch.offsets, dfa)
    want = reference.pretokenize_mark_words(batch.data, batch.offsets, words.values, words.offsets, dfa, plain.copy())
    assert (want != plain).any()
    np.testing.assert_array_equal(numba_twins.pretokenize_marks(batch.data, batch.offsets, dfa, word_marks), want)
    np.testing.assert_array_equal(numba_twins.pretokenize_marks(batch.data, batch.offsets, dfa, host(device_words)),
                                  want)
    got = backend.op("pre_tokenizer", "pretokenize_marks")(backend.asarray(batch.data), backend.asarray(batch.offsets),
                                                           dfa, device_words)
    np.testing.assert_array_equal(host(got), want)
    with pytest.raises(ValueError, match="one per byte"):
        backend.op("pre_tokenizer", "pretokenize_marks")(backend.asarray(batch.data), backend.asarray(batch.offsets),
                                                         dfa, device_words[:-1])
    # jieba's mode: every word marked on each backend (its joins of ASCII letters and digits applied)
    jieba = Segmenter(Dictionary(CUT_WORDS + ["a1"], np.arange(1, len(CUT_WORDS) + 2), 60), compat="jieba")
    texts = texts + [b"a1b2 c", "ab你好12".encode()]
    batch = TextBatch.from_strings(texts)
    words = jieba.segment(texts, "cpu").starts
    np.testing.assert_array_equal(np.flatnonzero(host(jieba.word_marks(batch.to_device(backend.xp), backend))),
                                  batch.offsets[:-1][np.repeat(np.arange(len(texts)), np.diff(words.offsets))]
                                  + words.values)


@pytest.mark.parametrize("split", ["word", "isolate"])
def test_dictionary_cutter_marks_are_the_staged_starts(backend, split):
    """PreTokenizer.marks with a dictionary cn (the Segmenter's words of the same texts marked in the
    Han pre-tokens) gives the starts of pre_tokenize's staged cutter (each Han pre-token solved as
    a span), on mixed text, bad bytes and Han runs longer than the segmenter's chunks."""
    cn = Dictionary(CUT_WORDS, np.arange(1, len(CUT_WORDS) + 1), 60)
    pre = PreTokenizer(split=split, digits="split", cn=cn)
    texts = cutter_texts(np.random.default_rng(8), 300) + [
        b"", "我们学习人工智能".encode() * 700, b"a" + "你好你".encode() * 1500 + b"\xff" + "好".encode() * 9]
    batch = TextBatch.from_strings(texts)
    staged = pre.pre_tokenize(texts, "cpu")
    base = batch.offsets[:-1][np.repeat(np.arange(len(texts)), np.diff(staged.starts.offsets))]
    marks = host(pre.marks(batch.to_device(backend.xp), backend))
    np.testing.assert_array_equal(np.flatnonzero(marks), staged.starts.values + base)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.sampled_from("abc<>d你▁"), min_size=1, max_size=6), min_size=1, max_size=6, unique=True),
       st.lists(st.text(st.sampled_from("abc<>d你▁1 "), max_size=40), max_size=6),
       st.sampled_from(CONFIGS))
def test_symbol_marks_property(words, texts, config):
    """Any symbols over a small alphabet (overlapping, nested, sharing prefixes) on any text: the
    emulated kernels' marks and longest symbols are the reference's."""
    from tests.emulated_backend import emulated_backend

    assert_symbol_marks(emulated_backend(), [t.encode() for t in texts], config, words)
