"""The fused segmentation kernels (cuda/segment.cu's segment_*) keep their occupancy on sm_90: at
most 64 registers per thread (>= 50% occupancy at 256 threads per block) and no spills in the
kernels that run a thread per byte or per piece, read from ptxas's report through NVRTC. Needs
cuda-bindings (the `test` extra), not a GPU."""
from __future__ import annotations

from tests.conftest import require

require("cuda.bindings")

PER_BYTE_OR_PIECE = ["segment_marks", "segment_pieces", "segment_settle", "segment_finish", "segment_paths",
                     "segment_words", "segment_compact"]


def test_segment_kernels_keep_occupancy():
    from tests.nvrtc_check import ptxas_report

    report = ptxas_report("segment")
    print("segment (registers, spilled bytes):", report)
    for kernel in PER_BYTE_OR_PIECE:
        registers, spilled = report[kernel]
        assert spilled == 0 and registers <= 64, (kernel, registers, spilled)
    assert report["segment_resolve"][0] <= 64  # a thread per long run: few threads, spills allowed
