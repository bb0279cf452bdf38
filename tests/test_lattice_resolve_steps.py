"""cuda/lattice.cu's lattice_resolve walks a long span by segments: its blocks scan the pieces' table
steps as max-plus matrices (between boundaries: binade edges, zones, tables that differ by class) with
the bounds the tables' windows put on each segment's start, and a span's walk takes a step per
segment whose bounds hold, a step per piece elsewhere. On 1 MB and 4 MB spans of Chinese-like text:
the Numba twin's tokens and scores, the walk growing as the binades the scores cross (a step per
piece before: 511 and 2,047; a step per segment of about sqrt(pieces): 32 and 52). On random lattices
cut every few bytes (exact ties, float32 near-ties, fallbacks, caps): jumps taken, the Numba twin's
and the reference's tokens, and with every jump turned into its steps (``GT_LSEG_NO_JUMPS``) the
same scores bit for bit. lattice_finish's blocks scan the pieces by tiles (cuda/tile_scan.cuh)
instead of walking them: its longest thread the same on 1 and 4 MB."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cpu_fallback.lattice import FALLBACK_IF_NO_CHAR, FLOAT32
from gpu_text.backend import get_backend
from gpu_text.trie import DoubleArrayTrie
from tests.test_lattice_kernels import ALPHABET, run
from tests.test_lattice_pieces import assert_same, han_span

UNIGRAM = FALLBACK_IF_NO_CHAR | FLOAT32


def kept_launch_args(monkeypatch, kernel: str) -> dict:
    """The arguments of the latest launch of `kernel` (a dict, "args"), kept by a wrapped launch."""
    import gpu_text.cuda_ops.lattice as launchers
    from gpu_text.cuda_ops import launch

    seen = {}

    def keep_args(function, blocks, args):
        if function.name == kernel:
            seen["args"] = args
        return launch(function, blocks, args)

    monkeypatch.setattr(launchers, "launch", keep_args)
    return seen


@pytest.fixture
def resolve_launch(monkeypatch):
    """The arguments of the latest lattice_resolve launch (a dict, "args")."""
    return kept_launch_args(monkeypatch, "lattice_resolve")


def many_pieces_model(rng: np.random.Generator, mode: int) -> tuple[DoubleArrayTrie, np.ndarray]:
    """A trie of 40 random words of 1-4 letters and their weights (float32 values in float32 mode),
    for texts cut every 16 bytes."""
    words = sorted({"".join(rng.choice(ALPHABET, int(rng.integers(1, 5)))) for _ in range(40)})
    trie = DoubleArrayTrie.build(words, np.arange(len(words), dtype=np.int32))
    weights = -(rng.random(len(words)) * 6 + 1)
    if mode & FLOAT32:
        weights = weights.astype(np.float32).astype(np.float64)
    return trie, weights


def spans_of(rng: np.random.Generator, n: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n random texts of `size` letters, one after the other: data, span starts, span ends."""
    texts = ["".join(rng.choice(ALPHABET, size)).encode() for _ in range(n)]
    data = np.frombuffer(b"".join(texts), np.uint8).copy()
    ends = np.cumsum([len(t) for t in texts]).astype(np.int64)
    return data, ends - size, ends


def twin_scores(data, starts, ends, edges, weights, fallback, cap, mode) -> tuple[np.ndarray, np.ndarray]:
    """The Numba twin's whole-span pass: the best score into every byte of the spans, and each span's
    offset in those rows."""
    from cpu_fallback.lattice import _route_spans

    scratch_offsets = np.zeros(starts.size + 1, np.int64)
    np.cumsum(ends - starts + 1, out=scratch_offsets[1:])
    size = int(scratch_offsets[-1])
    score, route, value = np.empty(size, np.float64), np.empty(size, np.int64), np.empty(size, np.int32)
    _route_spans(data, starts, ends, *edges, weights, np.float64(fallback), np.int64(cap), np.int64(mode),
                 scratch_offsets, score, route, value)
    return score, scratch_offsets


def assert_same_scores(args, data, starts, ends, edges, weights, fallback, cap, mode):
    """The best score into every byte of the spans (lattice_resolve's launch's scratch rows, final after
    lattice_finish) bit for bit the Numba twin's whole-span pass: every piece solved from its exact
    head (a head off by a jump's shift would leave most tokens alike, not the scores)."""
    np.testing.assert_array_equal(args[18], twin_scores(data, starts, ends, edges, weights, fallback, cap, mode)[0])


def walk_of(args) -> tuple[int, int, int]:
    """From lattice_resolve's arguments after the call: (pieces after the spans' first, segments
    jumped, the walk's steps: a step per head, a span's first piece or a boundary, plus a step per
    piece it stepped, every boundary and the pieces of the segments whose bounds failed)."""
    import gpu_text.cuda_ops.lattice as launchers

    n_anchors, slot_i, seg_i = int(args[12]), args[15], args[27]
    fields = slot_i.reshape(-1, launchers.SLOT_INTS)
    seg = seg_i.reshape(-1, launchers.SEGMENT_INTS)
    anchors = np.flatnonzero(fields[:n_anchors, 4] != 0)
    firsts = n_anchors + np.flatnonzero((fields[n_anchors:, 4] != 0) & (fields[n_anchors:, 2] >= 0))
    boundaries = anchors[seg[anchors, 3] == 0]
    members = anchors[seg[anchors, 3] == 1]
    heads = np.concatenate([firsts, boundaries])
    heads = heads[fields[heads, 2] >= 0]  # a head with pieces after it
    jumped = heads[seg[heads, 2] == 1]
    stepped = int((seg[seg[members, 0], 2] != 1).sum())
    with_members = np.isin(jumped, seg[members, 0])
    return anchors.size, int(with_members.sum()), heads.size + boundaries.size + stepped


@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_resolve_walk_is_a_step_per_segment(resolve_launch, mode):
    """1 MB: 511 pieces after the first, a walk of 19 (jumps, boundaries); 4 MB: 2,047 pieces, 23: a
    segment per binade the scores reach, so 4x the pieces add two. The longest thread's other steps
    are its boundaries' solves (the zones where the scores cross a binade edge, a few hundred bytes
    each, one per binade) and lattice_resolve's scan (2 log2(tiles) + 16 steps)."""
    from tests.emulated_backend import emulated_backend

    walks, finish = [], []
    for megabytes in (1, 4):
        trie, weights, data, starts, ends = han_span(megabytes, mode)
        be = emulated_backend()
        assert_same(run(be, trie, weights, data, starts, ends, -20.0, 0, mode),
                    run(get_backend("cpu"), trie, weights, data, starts, ends, -20.0, 0, mode))
        edges = trie.prefix_search_spans(data, starts, ends, "cpu")
        assert_same_scores(resolve_launch["args"], data, starts, ends, edges, weights, -20.0, 0, mode)
        steps = be.runtime.module("lattice").get_function("lattice_resolve").last_max_steps
        finish.append(be.runtime.module("lattice").get_function("lattice_finish").last_max_steps)
        pieces, jumps, walk = walk_of(resolve_launch["args"])
        print(f"{megabytes} MB, mode {mode}: {pieces} pieces, {jumps} segments jumped, walk {walk}, "
              f"lattice_resolve's longest thread {steps} steps, lattice_finish's {finish[-1]}")
        assert pieces >= (megabytes << 20) // 2048 - 1
        assert jumps > 0 and walk <= 3 * pieces.bit_length(), (megabytes, walk, pieces)
        assert steps < pieces, (megabytes, steps, pieces)  # a step per piece before, plus exact solves
        walks.append(walk)
    assert walks[1] <= walks[0] + 8, walks  # 4x the pieces: two more binades
    # lattice_finish: a piece's exact solve and route back (4,316 steps on both); its scan by tiles
    # adds 2 log2(tiles) + 18 steps at most to a thread (three walks of a step per piece before: 6,144
    # on 4 MB)
    assert finish[1] <= finish[0] + 64, finish


def random_lattice_case(monkeypatch, seed: int):
    """Texts of up to 6 KB cut every 16-64 bytes (hundreds of pieces): small integer weights (exact
    ties), float32 weights with tiny or large fractions (near-ties), fallbacks and caps. Returns
    (trie, weights, data, starts, ends, fallback, cap, mode)."""
    import gpu_text.cuda_ops.lattice as launchers

    rng = np.random.default_rng(1000 + seed)
    chunk = (16, 24, 40, 64)[seed % 4]
    monkeypatch.setattr(launchers, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(launchers, "LONG_BYTES", 2 * chunk)
    mode = (0, UNIGRAM, FLOAT32, FALLBACK_IF_NO_CHAR)[seed % 4]
    alphabet = ALPHABET if seed % 2 else ALPHABET[:3]
    words = sorted({"".join(rng.choice(alphabet, int(rng.integers(1, 5)))) for _ in range(30)})
    trie = DoubleArrayTrie.build(words, np.arange(len(words), dtype=np.int32))
    weights = -rng.integers(0, 6, len(words)).astype(np.float64)
    if mode & FLOAT32 or seed % 3 == 0:
        fraction = (1e-3, 1e-6, 0.5)[seed % 3]
        weights = (weights - rng.random(weights.size) * fraction).astype(np.float32).astype(np.float64)
    texts = ["".join(rng.choice(alphabet, int(rng.integers(2000, 6000)))).encode() for _ in range(3)]
    data = np.frombuffer(b"".join(texts), np.uint8).copy()
    ends = np.cumsum([len(t) for t in texts]).astype(np.int64)
    starts = ends - np.array([len(t) for t in texts], np.int64)
    fallback, cap = (-10.0, -2.0, -20.0)[seed % 3], (0, 1, 2, 16)[seed % 4]
    return trie, weights, data, starts, ends, fallback, cap, mode


@pytest.mark.parametrize("seed", range(6))
def test_jumps_on_random_lattices(monkeypatch, resolve_launch, seed):
    """The jumps taken give the Numba twin's tokens and scores, and the reference's tokens."""
    from tests.emulated_backend import emulated_backend
    from tests.reference import lattice as reference

    trie, weights, data, starts, ends, fallback, cap, mode = random_lattice_case(monkeypatch, seed)
    want = run(get_backend("cpu"), trie, weights, data, starts, ends, fallback, cap, mode)
    edges = trie.prefix_search_spans(data, starts, ends, "cpu")
    assert_same(want, reference.lattice_viterbi(data, starts, ends, *edges, weights, fallback, cap, mode))
    assert_same(run(emulated_backend(), trie, weights, data, starts, ends, fallback, cap, mode), want)
    assert_same_scores(resolve_launch["args"], data, starts, ends, edges, weights, fallback, cap, mode)
    pieces, jumps, walk = walk_of(resolve_launch["args"])
    print(f"seed {seed}: {pieces} pieces, {jumps} jumps, walk {walk}")
    assert jumps > 0 and walk < pieces, (pieces, jumps, walk)


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_each_jump_stands_for_its_steps(monkeypatch, resolve_launch, seed):
    """Built with GT_LSEG_NO_JUMPS (every segment stepped a piece at a time, the walk before segments)
    and blocks interleaved: no jump, a step per piece, and every score bit for bit the jumping walk's
    and the Numba twin's."""
    from tests.emulated_backend import emulated_backend
    from tests.test_interblock_waits import interleaved

    trie, weights, data, starts, ends, fallback, cap, mode = random_lattice_case(monkeypatch, seed)
    edges = trie.prefix_search_spans(data, starts, ends, "cpu")
    jumping = run(emulated_backend(), trie, weights, data, starts, ends, fallback, cap, mode)
    jumped_scores = resolve_launch["args"][18].copy()
    assert walk_of(resolve_launch["args"])[1] > 0
    stepping = run(interleaved(seed, defines=("GT_LSEG_NO_JUMPS",)), trie, weights, data, starts, ends, fallback, cap,
                   mode)
    assert_same(stepping, jumping)
    np.testing.assert_array_equal(resolve_launch["args"][18], jumped_scores)
    assert_same_scores(resolve_launch["args"], data, starts, ends, edges, weights, fallback, cap, mode)
    pieces, jumps, walk = walk_of(resolve_launch["args"])
    assert jumps == 0 and walk >= pieces, (pieces, jumps, walk)


@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_tile_scans_of_many_pieces(monkeypatch, resolve_launch, mode):
    """Pieces of 16-byte chunks (thousands per span, a short solve each), so that the scans dominate:
    lattice_estimate's rough heads and estimates (max-plus products) and lattice_finish's exits and
    token counts, by tiles of 256 anchors (cuda/tile_scan.cuh). 16x the pieces (1.5k to 24k, 6 to 96
    tiles) add a few steps a thread (2 log2(tiles) per scan); a launch's last block scanning them all
    added about 2 anchors / 256 a scan (8 KB to 32 KB: lattice_estimate 45 -> 131, lattice_finish
    73 -> 245), a thread per span walking every piece one per piece. The Numba twin's and the
    reference's tokens, the twin's scores bit for bit; lattice_resolve's walks a few steps more per
    binade the scores cross."""
    import gpu_text.cuda_ops.lattice as launchers
    from tests.emulated_backend import emulated_backend
    from tests.reference import lattice as reference

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 16)
    monkeypatch.setattr(launchers, "LONG_BYTES", 32)
    rng = np.random.default_rng(7 + mode)
    trie, weights = many_pieces_model(rng, mode)
    steps, counts, walks = [], [], []
    for kilobytes in (8, 32, 128):
        data, starts, ends = spans_of(rng, 3, kilobytes << 10)
        want = run(get_backend("cpu"), trie, weights, data, starts, ends, -10.0, 0, mode)
        if kilobytes == 8:
            edges = trie.prefix_search_spans(data, starts, ends, "cpu")
            assert_same(want, reference.lattice_viterbi(data, starts, ends, *edges, weights, -10.0, 0, mode))
        be = emulated_backend()
        assert_same(run(be, trie, weights, data, starts, ends, -10.0, 0, mode), want)
        edges = trie.prefix_search_spans(data, starts, ends, "cpu")
        assert_same_scores(resolve_launch["args"], data, starts, ends, edges, weights, -10.0, 0, mode)
        module = be.runtime.module("lattice")
        steps.append({k: module.get_function(k).last_max_steps
                      for k in ("lattice_pieces", "lattice_estimate", "lattice_resolve", "lattice_finish")})
        pieces, jumps, walk = walk_of(resolve_launch["args"])
        counts.append(pieces)
        walks.append(walk)
        print(f"3 spans of {kilobytes} KB, mode {mode}: {pieces} pieces, walk {walk} ({jumps} jumps), "
              f"longest threads {steps[-1]}")
        assert pieces >= 3 * (kilobytes << 10) // 16 * 99 // 100  # an anchor without a cut here and there
        assert max(steps[-1].values()) < 256, (steps[-1], pieces)
    # 16x the pieces: 4 more levels of tiles, 8 steps a scan at most (lattice_estimate's first pass
    # scans twice); the rest is a piece's solve, longer where several anchors in a row found no cut;
    # lattice_resolve's walks: a few steps per binade more (69 -> 105 for the 3 spans, 1,535 -> 24,571
    # pieces)
    for kernel, small in steps[0].items():
        if kernel != "lattice_resolve":
            assert steps[2][kernel] - small <= 32, (kernel, steps, counts)
    assert walks[2] - walks[0] <= 3 * 16, (walks, counts)
