"""cuda/lattice.cu's long spans in pieces (lattice_cuts ... lattice_emit_pieces): emulated CUDA ==
Numba == reference with spans cut every few bytes (ties, float32 scores, fallbacks, malformed
bytes, long edges), and the longest thread's steps on a 1 MB span bounded by a chunk's work."""
from __future__ import annotations

import numpy as np
import pytest

from cpu_fallback.lattice import FALLBACK_IF_NO_CHAR, FLOAT32
from gpu_text.backend import get_backend
from gpu_text.trie import DoubleArrayTrie
from tests.test_lattice_kernels import ALPHABET, run
from tests.test_utf8_kernels import host

UNIGRAM = FALLBACK_IF_NO_CHAR | FLOAT32
PIECE_KERNELS = ("lattice_long_edges", "lattice_cuts", "lattice_pieces", "lattice_estimate", "lattice_settle",
                 "lattice_settle_front", "lattice_zone_split", "lattice_settle_zone", "lattice_resolve",
                 "lattice_finish", "lattice_route", "lattice_emit", "lattice_emit_pieces")


def assert_same(got, want):
    for g, w in zip(got, want):
        np.testing.assert_array_equal(host(g), host(w))


@pytest.mark.parametrize("chunk", [16, 40, 96])
@pytest.mark.parametrize("fallback,cap,mode", [(-10.0, 16, 0), (-2.0, 0, 0), (-1.0, 1, 0), (-3.0, 0, UNIGRAM),
                                               (-2.0, 0, FALLBACK_IF_NO_CHAR), (-1.0, 2, FLOAT32)])
def test_pieces_equal_the_numba_twin(monkeypatch, chunk, fallback, cap, mode):
    import gpu_text.cuda_ops.lattice as launchers
    from tests.emulated_backend import emulated_backend

    monkeypatch.setattr(launchers, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(launchers, "LONG_BYTES", 2 * chunk)
    be, cpu = emulated_backend(), get_backend("cpu")
    rng = np.random.default_rng(chunk + cap + 100 * mode)
    for trial in range(4):
        alphabet = ALPHABET if trial % 2 else ALPHABET[:3]
        words = sorted({"".join(rng.choice(alphabet, int(rng.integers(1, 5)))) for _ in range(30)})
        if trial == 3:
            words.append("a" * 70)  # an edge of 64 bytes or more: its span is not cut
        trie = DoubleArrayTrie.build(words, np.arange(len(words), dtype=np.int32))
        weights = -rng.integers(0, 6, len(words)).astype(np.float64)  # small integers: exact ties
        if mode & FLOAT32 or trial == 2:
            weights = (weights - rng.random(weights.size) * 1e-3).astype(np.float32).astype(np.float64)
        texts = []
        for _ in range(6):
            raw = "".join(rng.choice(alphabet, int(rng.integers(0, 600)))).encode()
            if rng.random() < 0.3:
                cut = int(rng.integers(0, len(raw) + 1))
                raw = raw[:cut] + bytes([0xE4, 0xB8]) + raw[cut:]
            texts.append(raw)
        if trial == 3:
            texts.append(b"a" * 300)
        data = np.frombuffer(b"".join(texts) + b"\0", np.uint8)[:-1].copy()
        ends = np.cumsum([len(t) for t in texts]).astype(np.int64)
        starts = ends - np.array([len(t) for t in texts], np.int64)
        want = run(cpu, trie, weights, data, starts, ends, fallback, cap, mode)
        assert_same(run(be, trie, weights, data, starts, ends, fallback, cap, mode), want)


def han_span(megabytes: int, mode: int):
    """A span of ``megabytes`` MB of Chinese-like text (a pre-token without spaces; 8 characters under
    120 words of 1-3 of them) and a short one after it: trie, weights, data, span starts and ends."""
    rng = np.random.default_rng(5)
    han = ["你", "好", "世", "界", "中", "文", "分", "词"]
    words = sorted({"".join(rng.choice(han, int(rng.integers(1, 4)))) for _ in range(120)})
    trie = DoubleArrayTrie.build(words, np.arange(len(words), dtype=np.int32))
    weights = -(rng.random(len(words)) * 12 + 1)
    if mode & FLOAT32:
        weights = weights.astype(np.float32).astype(np.float64)
    text = "".join(rng.choice(han, (megabytes << 20) // 3)).encode()
    data = np.frombuffer(text + "分词".encode(), np.uint8).copy()
    return trie, weights, data, np.array([0, len(text)], np.int64), np.array([len(text), data.size], np.int64)


@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_one_megabyte_span(mode):
    """A 1 MB span of Chinese-like text (a pre-token without spaces): the Numba twin's tokens, and
    no thread's work grows with the span: each piece kernel's longest thread within a few chunks
    (a piece's solve, a class solve, a step per piece of the span). One thread per span walked the
    whole megabyte before (about 1 M steps)."""
    import gpu_text.cuda_ops.lattice as launchers
    from tests.emulated_backend import emulated_backend

    trie, weights, data, starts, ends = han_span(1, mode)
    want = run(get_backend("cpu"), trie, weights, data, starts, ends, -20.0, 0, mode)
    be = emulated_backend()
    assert_same(run(be, trie, weights, data, starts, ends, -20.0, 0, mode), want)
    module = be.runtime.module("lattice")
    steps = {name: module.get_function(name).last_max_steps for name in PIECE_KERNELS}
    print("longest thread's steps on a 1 MB span:", steps)
    chunk = launchers.CHUNK_BYTES
    piece_work = 3 * chunk  # a piece's characters and edges, about a chunk and a half of bytes at most
    pieces = (1 << 20) // chunk + 1
    assert max(steps[k] for k in ("lattice_cuts", "lattice_pieces", "lattice_settle", "lattice_finish")) <= \
        piece_work + pieces, steps
    assert 0 < steps["lattice_resolve"] <= pieces + piece_work, steps  # at most one exact solve
    assert steps["lattice_emit_pieces"] <= pieces + chunk and steps["lattice_pieces"] >= chunk // 3, steps


@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_span_without_cut_points_is_cut_anyway(monkeypatch, mode):
    """Where an edge crosses every character boundary ("abab..." under "aba" and "bab") no anchor
    finds a cut point: forced cuts with frontiers (the starts of the edges crossing the cut) give the
    reference's tokens, and no piece kernel's thread walks the span."""
    import gpu_text.cuda_ops.lattice as launchers
    from tests.emulated_backend import emulated_backend
    from tests.reference import lattice as reference

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 64)
    monkeypatch.setattr(launchers, "LONG_BYTES", 128)
    trie = DoubleArrayTrie.build(["ab", "aba", "b", "bab"], np.arange(4, dtype=np.int32))
    data = np.frombuffer(b"ab" * 3000, np.uint8).copy()
    starts, ends = np.array([0], np.int64), np.array([data.size], np.int64)
    weights = np.array([-1.0, -1.25, -3.0, -1.5])
    be = emulated_backend()
    want = run(get_backend("cpu"), trie, weights, data, starts, ends, -10.0, 0, mode)
    edges = trie.prefix_search_spans(data, starts, ends, "cpu")
    assert_same(want, reference.lattice_viterbi(data, starts, ends, *edges, weights, -10.0, 0, mode))
    assert_same(run(be, trie, weights, data, starts, ends, -10.0, 0, mode), want)
    module = be.runtime.module("lattice")
    assert max(module.get_function(k).last_max_steps for k in PIECE_KERNELS) < data.size


@pytest.mark.parametrize("text", ["a", "一"])
@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_one_megabyte_span_without_cut_points(mode, text):
    """'a' * 2^20 under 'a', 'aa', 'aaa' (and a 1 MB run of 一 under 一, 一一, 一一一): every character
    boundary is crossed, so every piece starts at a forced cut with a frontier of 3 positions. The
    Numba twin's tokens (the reference's too: checked once, 8 s a case), and each piece kernel's
    longest thread bounded by a few pieces' solves (about 5 steps a byte each: the byte, its 3 edges,
    its scratch row) plus a step per piece, not by the span (one thread walked the whole megabyte
    before: about 5.2 M steps for 'a', 2.4 M for 一); lattice_resolve by a step per segment and an
    exact solve of a few hundred bytes per binade edge the scores cross."""
    import gpu_text.cuda_ops.lattice as launchers
    from tests.emulated_backend import emulated_backend

    rng = np.random.default_rng(11 + mode)
    trie = DoubleArrayTrie.build([text, text * 2, text * 3], np.arange(3, dtype=np.int32))
    weights = -(rng.random(3) * 6 + 1)
    if mode & FLOAT32:
        weights = weights.astype(np.float32).astype(np.float64)
    data = np.frombuffer((text * ((1 << 20) // len(text.encode()))).encode(), np.uint8).copy()
    starts, ends = np.array([0], np.int64), np.array([data.size], np.int64)
    want = run(get_backend("cpu"), trie, weights, data, starts, ends, -20.0, 0, mode)
    be = emulated_backend()
    assert_same(run(be, trie, weights, data, starts, ends, -20.0, 0, mode), want)
    module = be.runtime.module("lattice")
    steps = {name: module.get_function(name).last_max_steps for name in PIECE_KERNELS}
    print(f"longest thread's steps on a 1 MB span without cut points ({text!r}, mode {mode}):", steps)
    chunk = launchers.CHUNK_BYTES
    solve = 5 * chunk  # one piece's solve; a kernel makes at most one per frontier position (4)
    pieces = (1 << 20) // chunk + 1
    assert max(steps[k] for k in ("lattice_cuts", "lattice_pieces", "lattice_estimate", "lattice_settle",
                                  "lattice_settle_front", "lattice_zone_split", "lattice_settle_zone",
                                  "lattice_finish")) <= 4 * solve + pieces, steps
    # resolve: its scan of the pieces (2 log2(tiles) + 16 steps), a step per segment (a binade each:
    # the pieces' tables compose) and an exact solve of the zone of each piece whose scores cross a
    # binade edge (a few hundred bytes), one per binade the span's scores reach past the first piece's:
    # at most log2(pieces) ('a': 37 steps in float64, a step per piece before: 511; 7,355 in float32,
    # nearly all the zones' solves, 7,829 before)
    assert steps["lattice_resolve"] <= pieces.bit_length() * solve // 4, steps
    if not mode & FLOAT32:
        assert steps["lattice_resolve"] <= 4 * pieces.bit_length(), steps
    assert steps["lattice_emit_pieces"] <= pieces + chunk, steps


def test_lattice_kernels_keep_occupancy():
    """Every lattice kernel on sm_90: at most 64 registers (>= 50% occupancy at 256 threads per
    block) and no spills, its noinline device functions none either, from ptxas's report through
    NVRTC (needs cuda-bindings, not a GPU)."""
    from tests.conftest import require

    require("cuda.bindings")
    from tests.nvrtc_check import ptxas_device_functions, ptxas_report

    report = ptxas_report("lattice")
    print("lattice (registers, spilled bytes):", report)
    for kernel in PIECE_KERNELS:
        registers, spilled = report[kernel]
        assert spilled == 0 and registers <= 64, (kernel, registers, spilled)
    # the noinline helpers (the scans by tiles and their operators, the resolve's jump check) report
    # their spills apart
    functions = ptxas_device_functions("lattice")
    print("lattice's noinline functions (spilled bytes):", functions)
    assert any("lattice_heads" in name for name in functions) and not any(functions.values()), functions
    assert any("tile_scan" in name and "HeadScan" in name for name in functions), functions
    assert any("tile_scan" in name and "ExitScan" in name for name in functions), functions
