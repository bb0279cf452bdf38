"""cuda/lattice.cu's lattice_resolve walks a long span by segments: a jump per segment where a guess's
walk (lattice_settle_front's first threads) matches the exact head, a step per piece elsewhere. On 1
MB and 4 MB spans of Chinese-like text: the Numba twin's tokens, the walk's jumps and steps (read from
the arrays the resolve launch gets) growing about as sqrt(pieces), and the longest resolve thread's
steps below the one step per piece the walk took before (722 on 1 MB, 2,313 on 4 MB). On random
lattices cut every few bytes (exact ties, float32 near-ties, fallbacks, caps): jumps taken, and the
Numba twin's and the reference's tokens. lattice_finish's blocks scan the pieces by tiles
(cuda/tile_scan.cuh) instead of walking them: its longest thread the same on 1 and 4 MB."""
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
    """From lattice_resolve's arguments after the call: (pieces after the spans' first, jumps, the
    walk's jumps plus pieces stepped)."""
    import gpu_text.cuda_ops.lattice as launchers

    n_anchors, slot_i, spec_i = int(args[12]), args[15], args[-1]
    states = slot_i.reshape(-1, launchers.SLOT_INTS)[:n_anchors, 4]
    spec = spec_i.reshape(-1, launchers.SPEC_INTS)[:n_anchors]
    guesses = launchers.GUESSES
    jumps = spec[:, 2 * guesses]
    pieces = int((states != 0).sum())
    # a piece is jumped over when the walk jumped from the start of its guess's walk over it by that guess
    starts_of = spec[states != 0, guesses:2 * guesses]
    jumped_over = sum(int(v >= 0 and jumps[v] == q) for row in starts_of for q, v in enumerate(row))
    taken = int((jumps[states != 0] >= 0).sum())
    return pieces, taken, taken + pieces - jumped_over


@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_resolve_walk_grows_as_sqrt_of_pieces(resolve_launch, mode):
    """1 MB: 511 pieces after the first, a walk of 32 (a step per piece before: 511); 4 MB: 2,047
    pieces, a walk of 52. The longest thread's other steps are exact solves of the zones where the
    scores cross a binade edge (a few hundred bytes each, one per binade)."""
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
        pieces, _, walk = walk_of(resolve_launch["args"])
        print(f"{megabytes} MB, mode {mode}: {pieces} pieces, walk {walk} (jumps + pieces stepped), "
              f"lattice_resolve's longest thread {steps} steps, lattice_finish's {finish[-1]}")
        assert pieces >= (megabytes << 20) // 2048 - 1
        assert walk <= 3 * math.isqrt(pieces), (megabytes, walk, pieces)
        assert steps < pieces, (megabytes, steps, pieces)  # a step per piece before, plus exact solves
        walks.append(walk)
    assert walks[1] <= 2.5 * walks[0], walks  # 4x the pieces: about 2x the walk
    # lattice_finish: a piece's exact solve and route back (4,316 steps on both); its scan by tiles
    # adds 2 log2(tiles) + 18 steps at most to a thread (three walks of a step per piece before: 6,144
    # on 4 MB)
    assert finish[1] <= finish[0] + 64, finish


@pytest.mark.parametrize("seed", range(6))
def test_jumps_on_random_lattices(monkeypatch, resolve_launch, seed):
    """Texts of up to 6 KB cut every 16-64 bytes (hundreds of pieces, segments of 8-16): small integer
    weights (exact ties), float32 weights with tiny or large fractions (near-ties), fallbacks and caps;
    the jumps taken give the Numba twin's tokens, and the reference's."""
    import gpu_text.cuda_ops.lattice as launchers
    from tests.emulated_backend import emulated_backend
    from tests.reference import lattice as reference

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
    want = run(get_backend("cpu"), trie, weights, data, starts, ends, fallback, cap, mode)
    edges = trie.prefix_search_spans(data, starts, ends, "cpu")
    assert_same(want, reference.lattice_viterbi(data, starts, ends, *edges, weights, fallback, cap, mode))
    assert_same(run(emulated_backend(), trie, weights, data, starts, ends, fallback, cap, mode), want)
    assert_same_scores(resolve_launch["args"], data, starts, ends, edges, weights, fallback, cap, mode)
    pieces, jumps, walk = walk_of(resolve_launch["args"])
    print(f"seed {seed}: {pieces} pieces, {jumps} jumps, walk {walk}")
    assert jumps > 0 and walk < pieces, (pieces, jumps, walk)


@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_tile_scans_of_many_pieces(monkeypatch, resolve_launch, mode):
    """Pieces of 16-byte chunks (thousands per span, a short solve each), so that the scans dominate:
    lattice_estimate's rough heads and estimates (max-plus products) and lattice_finish's exits and
    token counts, by tiles of 256 anchors (cuda/tile_scan.cuh). 16x the pieces (1.5k to 24k, 6 to 96
    tiles) add a few steps a thread (2 log2(tiles) per scan); a launch's last block scanning them all
    added about 2 anchors / 256 a scan (8 KB to 32 KB: lattice_estimate 45 -> 131, lattice_finish
    73 -> 245), a thread per span walking every piece one per piece. The Numba twin's and the
    reference's tokens, the twin's scores bit for bit."""
    import gpu_text.cuda_ops.lattice as launchers
    from tests.emulated_backend import emulated_backend
    from tests.reference import lattice as reference

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 16)
    monkeypatch.setattr(launchers, "LONG_BYTES", 32)
    rng = np.random.default_rng(7 + mode)
    trie, weights = many_pieces_model(rng, mode)
    steps, counts = [], []
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
                      for k in ("lattice_pieces", "lattice_estimate", "lattice_finish")})
        pieces, _, _ = walk_of(resolve_launch["args"])
        counts.append(pieces)
        print(f"3 spans of {kilobytes} KB, mode {mode}: {pieces} pieces, longest threads {steps[-1]}")
        assert pieces >= 3 * (kilobytes << 10) // 16 * 99 // 100  # an anchor without a cut here and there
        assert max(steps[-1].values()) < 128, (steps[-1], pieces)
    # 16x the pieces: 4 more levels of tiles, 8 steps a scan at most (lattice_estimate's first pass
    # scans twice); the rest is a piece's solve, longer where several anchors in a row found no cut
    for kernel, small in steps[0].items():
        assert steps[2][kernel] - small <= 32, (kernel, steps, counts)
