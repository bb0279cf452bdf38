"""segment_resolve's run walk with its jumps turned into steps (``GT_SEG_NO_JUMPS``, issue 16).

A jump of the run's walk (cuda/segment.cu, segment_resolve) stands for the steps of a piece each
that it skips: every skipped piece would have applied its table, so the words must not depend
on whether the walk jumped. Built with ``GT_SEG_NO_JUMPS`` the walk steps
every piece (the walk before segments); here both builds, sequential and with interleaved blocks,
give the Numba twin's words, and the stepping walk's longest thread is the longer one (the jumps
are taken, so the comparison tests something).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from gpu_text.backend import get_backend
from gpu_text.batch import TextBatch
from gpu_text.segment import Dictionary, Segmenter
from tests.test_interblock_waits import interleaved
from tests.test_segment_kernels import HAN, random_dictionary, run_segment_rows, segment_rows_args
from tests.test_utf8_kernels import host

pytestmark = pytest.mark.skipif(os.environ.get("GPU_TEXT_SKIP_EMULATION") == "1",
                                reason="emulated kernels run in CI, not in the device check")

NO_JUMPS = ("GT_SEG_NO_JUMPS",)


def walk(segmenter: Segmenter, batch: TextBatch, seed: int, resident: int, defines: tuple[str, ...]):
    """segment_rows' outputs on the emulator (``resident`` 0: blocks one after another) and
    segment_resolve's longest thread, in steps."""
    backend = interleaved(seed, resident, defines)
    got = run_segment_rows(segmenter, segment_rows_args(segmenter, batch, backend), backend)
    return [host(g) for g in got], backend.runtime.function("segment", "segment_resolve").last_max_steps


def one_line() -> tuple[Segmenter, TextBatch]:
    """64 KB of 一 under 一一 (1,024 pieces of 64 bytes, forced cuts of 2 positions)."""
    return Segmenter(Dictionary(["一一"], np.array([5]), 11), compat=None), TextBatch.from_strings(["一" * 21845])


def random_lines() -> tuple[Segmenter, TextBatch]:
    """Han lines of a random dictionary (cut points and forced cuts, exact solves beside tables)."""
    rng = np.random.default_rng(16)
    return (Segmenter(random_dictionary(rng, 200)),
            TextBatch.from_strings(["".join(rng.choice(HAN, 24000)) for _ in range(3)] + ["a", ""]))


@pytest.mark.parametrize("texts", [one_line, random_lines])
def test_segment_walk_without_jumps_same_words(monkeypatch, texts):
    """Jumping (sequential blocks) and stepping (sequential and interleaved) walks: the Numba twin's
    words each; the stepping walk is longer (64 KB of 一: 5,560 steps against 1,171)."""
    import gpu_text.cuda_ops.segment as launchers

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 64)
    segmenter, batch = texts()
    cpu = get_backend("cpu")
    want = [host(w) for w in cpu.op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, cpu))]
    jumping, jumping_steps = walk(segmenter, batch, 1, 0, ())
    stepping, stepping_steps = walk(segmenter, batch, 1, 0, NO_JUMPS)
    interleaved_stepping, _ = walk(segmenter, batch, 2, 8, NO_JUMPS)
    for got in (jumping, stepping, interleaved_stepping):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    print(f"segment_resolve's longest thread ({texts.__name__}): jumping {jumping_steps}, stepping {stepping_steps}")
    assert stepping_steps > jumping_steps, (stepping_steps, jumping_steps)
