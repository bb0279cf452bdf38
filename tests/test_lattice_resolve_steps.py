"""cuda/lattice.cu's lattice_resolve walks a long span by segments: a jump per segment where a guess's
walk (lattice_settle_front's threads) matches the exact head, a step per piece elsewhere. On 1 MB and
4 MB spans of Chinese-like text: the Numba twin's tokens, the walk's jumps and steps (read from the
arrays the resolve launch gets) growing about as sqrt(pieces), and the longest resolve thread's
steps below the one step per piece the walk took before (722 on 1 MB, 2,313 on 4 MB)."""
from __future__ import annotations

import math

import pytest

from cpu_fallback.lattice import FALLBACK_IF_NO_CHAR, FLOAT32
from gpu_text.backend import get_backend
from tests.test_lattice_kernels import run
from tests.test_lattice_pieces import assert_same, han_span

UNIGRAM = FALLBACK_IF_NO_CHAR | FLOAT32


def resolve_walk(monkeypatch, megabytes: int, mode: int) -> tuple[int, int, int]:
    """Encode a span of ``megabytes`` MB on the emulated backend (checked against the Numba twin):
    (pieces after the span's first, the walk's jumps plus pieces stepped, lattice_resolve's longest
    thread's steps)."""
    import gpu_text.cuda_ops.lattice as launchers
    from gpu_text.cuda_ops import launch
    from tests.emulated_backend import emulated_backend

    seen = {}

    def keep_resolve_args(function, blocks, args):
        if function.name == "lattice_resolve":
            seen["args"] = args
        return launch(function, blocks, args)

    monkeypatch.setattr(launchers, "launch", keep_resolve_args)
    trie, weights, data, starts, ends = han_span(megabytes, mode)
    be = emulated_backend()
    assert_same(run(be, trie, weights, data, starts, ends, -20.0, 0, mode),
                run(get_backend("cpu"), trie, weights, data, starts, ends, -20.0, 0, mode))
    steps = be.runtime.module("lattice").get_function("lattice_resolve").last_max_steps
    args = seen["args"]
    n_anchors, slot_i, spec_i = int(args[12]), args[15], args[-1]
    states = slot_i.reshape(-1, launchers.SLOT_INTS)[:n_anchors, 4]
    spec = spec_i.reshape(-1, launchers.SPEC_INTS)[:n_anchors]
    guesses = launchers.GUESSES
    jumps = spec[:, 2 * guesses]
    pieces = int((states != 0).sum())
    # a piece is jumped over when the walk jumped from the start of its guess's walk over it by that guess
    starts_of = spec[states != 0, guesses:2 * guesses]
    jumped_over = sum(int(v >= 0 and jumps[v] == q) for row in starts_of for q, v in enumerate(row))
    return pieces, int((jumps[states != 0] >= 0).sum()) + pieces - jumped_over, steps


@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_resolve_walk_grows_as_sqrt_of_pieces(monkeypatch, mode):
    """1 MB: 511 pieces after the first, a walk of 32 (a step per piece before: 511); 4 MB: 2,047
    pieces, a walk of 52. The longest thread's other steps are exact solves of the zones where the
    scores cross a binade edge (a few hundred bytes each, one per binade)."""
    walks = []
    for megabytes in (1, 4):
        pieces, walk, steps = resolve_walk(monkeypatch, megabytes, mode)
        print(f"{megabytes} MB, mode {mode}: {pieces} pieces, walk {walk} (jumps + pieces stepped), "
              f"lattice_resolve's longest thread {steps} steps")
        assert pieces >= (megabytes << 20) // 2048 - 1
        assert walk <= 3 * math.isqrt(pieces), (megabytes, walk, pieces)
        assert steps < pieces, (megabytes, steps, pieces)  # a step per piece before, plus exact solves
        walks.append(walk)
    assert walks[1] <= 2.5 * walks[0], walks  # 4x the pieces: about 2x the walk
