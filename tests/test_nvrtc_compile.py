"""Every kernel family compiles with NVRTC for every target architecture, warnings as errors.

The options are the runtime loader's own (gpu_text.cuda_runtime.nvrtc_options). Needs
cuda-bindings and cuda-toolkit[nvrtc] (in the `test` extra), not a GPU.
"""
from __future__ import annotations

import pytest

from gpu_text.cuda_runtime import TARGET_ARCHITECTURES
from gpu_text.kernel_sources import kernel_families
from tests.conftest import require

require("cuda.bindings")
from tests.nvrtc_check import NvrtcFailure, compile_family  # noqa: E402


@pytest.mark.parametrize("arch", TARGET_ARCHITECTURES)
@pytest.mark.parametrize("family", kernel_families())
def test_kernel_compiles(family, arch):
    assert compile_family(family, arch) > 0


def test_a_broken_kernel_fails_with_the_compiler_message(tmp_path, monkeypatch):
    import gpu_text.cuda_runtime as runtime
    import tests.nvrtc_check as check

    monkeypatch.setattr(check, "kernel_source_text", lambda family: 'extern "C" __global__ void k() { int unused; }\n')
    with pytest.raises(NvrtcFailure, match="unused"):
        compile_family("broken", "sm_80")
    assert runtime.nvrtc_options()[0] == "-std=c++17"
