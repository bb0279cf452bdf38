"""The BPE kernels (cuda/bpe.cu) keep their occupancy on sm_90, read from ptxas's report through
NVRTC: at most 64 registers per thread (>= 50% occupancy at 256 threads per block; the warp
kernel's launch bounds ask for 8 blocks of 128) and no spills. The thread per short pre-token
(bpe_merge) keeps its symbols in local arrays sized by THREAD_MAX_BYTES: its stack frame is those
arrays and nothing more. Needs cuda-bindings (the `test` extra), not a GPU."""
from __future__ import annotations

from tests.conftest import require

require("cuda.bindings")

# kernels -> the most local memory (stack frame bytes per thread) each may use
KERNELS = {"bpe_pre_tokens": 0, "bpe_merge": 448, "bpe_merge_warp": 0, "bpe_emit": 0,
           "bpe_merge_long": 128}  # bpe_merge_long: the call of its __noinline__ pre-token merge


def test_bpe_kernels_keep_occupancy():
    from tests.nvrtc_check import ptxas_report, ptxas_stack_frames

    report, frames = ptxas_report("bpe"), ptxas_stack_frames("bpe")
    print("bpe (registers, spilled bytes):", report, "stack frames:", frames)
    assert set(report) == set(KERNELS)
    for kernel, most_local in KERNELS.items():
        registers, spilled = report[kernel]
        assert spilled == 0 and registers <= 64 and frames[kernel] <= most_local, (kernel, registers, spilled,
                                                                                  frames[kernel])


def test_short_path_state_is_its_local_arrays():
    """bpe_merge's frame holds ThreadSymbols (ids and pair scores as 4-byte words, starts as bytes,
    THREAD_MAX_BYTES of each) and at most alignment padding: it touches no global scratch for its
    merge state, and no spill hides in the frame."""
    import re

    from gpu_text.cuda_ops import bpe as cuda_bpe
    from gpu_text.kernel_sources import kernel_source_path
    from tests.nvrtc_check import ptxas_stack_frames

    source = kernel_source_path("bpe").read_text()
    assert int(re.search(r"#define THREAD_MAX_BYTES (\d+)", source)[1]) == cuda_bpe.THREAD_MAX_BYTES
    arrays = 2 * 4 * cuda_bpe.THREAD_MAX_BYTES + cuda_bpe.THREAD_MAX_BYTES + 1
    assert arrays <= ptxas_stack_frames("bpe")["bpe_merge"] <= arrays + 8
