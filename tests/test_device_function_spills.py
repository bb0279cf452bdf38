"""No kernel family's ``__noinline__`` device functions spill on sm_90: ptxas reports them apart
from the kernels that call them, so the per-family register tests (which read each kernel's own
lines) would not see a spill that moved into one. Needs cuda-bindings (the `test` extra), not a GPU.

Known: BPE's ``merge_long_pre_token`` (the long pre-tokens' merge loop over global scratch, one
call per pre-token of more than a warp's bytes) spills 20 bytes, as it did when this test came;
bounded here, not zero."""
from __future__ import annotations

import pytest

from gpu_text.kernel_sources import kernel_families
from tests.conftest import require
from tests.nvrtc_check import ptxas_device_functions

require("cuda.bindings")

KNOWN_SPILLS = {"merge_long_pre_token": 20}  # by the function's name inside its mangled one


@pytest.mark.parametrize("family", kernel_families())
def test_device_functions_do_not_spill(family):
    functions = ptxas_device_functions(family)
    print(family, functions)
    for mangled, spilled in functions.items():
        allowed = max((most for name, most in KNOWN_SPILLS.items() if name in mangled), default=0)
        assert spilled <= allowed, (mangled, spilled)
