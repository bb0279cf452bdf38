"""segment_resolve's run walk grows as the binades its values cross, not as its pieces (issue 16).

The walk steps a segment of pieces whose tables compose at a time (cuda/segment.cu, "the run's walk
by segments of composed tables"); a segment ends where the values change binade, so 4x the pieces
(8 -> 32 MB of 一 under 一一: 4,096 -> 16,384 pieces, forced cuts of 2 positions) adds about two
binades' segments and two levels of tiles to segment_resolve's scan of 8 x 8 max-plus products (64
steps each): a few hundred steps, not 2x (the guess walks of about sqrt(pieces) a segment took 704 ->
4,385 steps).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from gpu_text.backend import get_backend
from gpu_text.batch import TextBatch
from gpu_text.segment import Dictionary, Segmenter
from tests.emulated_backend import emulated_backend
from tests.test_segment_kernels import run_segment_rows, segment_rows_args
from tests.test_utf8_kernels import host

pytestmark = pytest.mark.skipif(os.environ.get("GPU_TEXT_SKIP_EMULATION") == "1",
                                reason="emulated kernels run in CI, not in the device check")


def resolve_steps(megabytes: int) -> int:
    """segment_resolve's longest thread on a line of 一 of `megabytes` MB (the Numba twin's words)."""
    segmenter = Segmenter(Dictionary(["一一"], np.array([5]), 11), compat=None)
    batch = TextBatch.from_strings(["一" * ((megabytes << 20) // 3)])
    cpu = get_backend("cpu")
    want = cpu.op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, cpu))
    backend = emulated_backend()
    got = run_segment_rows(segmenter, segment_rows_args(segmenter, batch, backend), backend)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(host(g), host(w))
    return backend.runtime.module("segment").get_function("segment_resolve").last_max_steps


def test_segment_walk_grows_as_binades():
    """8 MB -> 32 MB: 1,371 -> 1,631 steps (two levels of tiles and two binades more)."""
    small, large = resolve_steps(8), resolve_steps(32)
    print(f"segment_resolve's longest thread: 8 MB {small}, 32 MB {large}")
    assert large <= small + 300, (small, large)
    assert large < 1.5 * small, (small, large)
