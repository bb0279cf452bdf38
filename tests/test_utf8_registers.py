"""The one-pass kernels (utf8 decode, trie prefix search) keep their occupancy on sm_90: no
spills and at most 64 registers per thread (>= 50% occupancy at 256 threads per block), read from
ptxas's report through NVRTC. Needs cuda-bindings (the `test` extra), not a GPU."""
from __future__ import annotations

import re

import pytest

from tests.conftest import require

require("cuda.bindings")

ONE_PASS = {"utf8": ["utf8_decode", "utf8_decode_wide", "utf8_string_stats"], "trie": ["trie_prefix_search"]}
_PROPERTIES = re.compile(r"Function properties for (\w+)\s*\n.*?(\d+) bytes spill stores, (\d+) bytes spill loads"
                         r".*?Used (\d+) registers", re.S)


def ptxas_report(family: str, arch: str = "sm_90") -> dict[str, tuple[int, int]]:
    """(registers, spilled bytes) of every kernel of ``cuda/<family>.cu``, as ptxas reports them."""
    from cuda.bindings import nvrtc

    from gpu_text.cuda_runtime import kernel_source_text, nvrtc_options

    err, program = nvrtc.nvrtcCreateProgram(kernel_source_text(family).encode(), f"{family}.cu".encode(), 0, [], [])
    try:
        options = [o.encode() for o in (*nvrtc_options(), f"-arch={arch}", "--ptxas-options=-v")]
        (err,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(program, log)
        text = log.decode(errors="replace").replace("\0", "")
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, text
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return {m[1]: (int(m[4]), int(m[2]) + int(m[3])) for m in _PROPERTIES.finditer(text)}


@pytest.mark.parametrize("family", sorted(ONE_PASS))
def test_one_pass_kernels_do_not_spill(family):
    report = ptxas_report(family)
    print(family, "(registers, spilled bytes):", report)
    for kernel in ONE_PASS[family]:
        registers, spilled = report[kernel]
        assert spilled == 0 and registers <= 64, (kernel, registers, spilled)
