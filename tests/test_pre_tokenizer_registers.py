"""The pre-tokenizer's kernels (cuda/pre_tokenizer.cu) keep their occupancy on sm_90: at most 64
registers per thread (>= 50% occupancy at 256 threads per block) and no spills, read from ptxas's
report through NVRTC. Needs cuda-bindings (the `test` extra), not a GPU.

pretokenize_land_join spills 16 bytes (ptxas's choice; it runs a chain per chunk once, and
pretokenize_join, which it replaced, spilled 24): bounded here, not zero."""
from __future__ import annotations

from tests.conftest import require
from tests.nvrtc_check import ptxas_report, ptxas_stack_frames

require("cuda.bindings")

KNOWN_SPILLS = {"pretokenize_land_join": 16}


def test_pre_tokenizer_kernels_keep_occupancy():
    report = ptxas_report("pre_tokenizer")
    frames = ptxas_stack_frames("pre_tokenizer")
    print("pre_tokenizer (registers, spilled bytes):", report, "stack frames:", frames)
    assert {"pretokenize_cuts", "pretokenize_summary", "pretokenize_land_join"} <= set(report)
    for kernel, (registers, spilled) in report.items():
        assert registers <= 64 and spilled <= KNOWN_SPILLS.get(kernel, 0), (kernel, registers, spilled)
    # the summary's local arrays: the DFA states' exits and accepts, and the symbols' exits per byte
    assert frames["pretokenize_summary"] <= 16 * 4 + 16 * 8 + 256 + 64
