"""The one-pass kernels (utf8 decode, trie prefix search) keep their occupancy on sm_90: no
spills and at most 64 registers per thread (>= 50% occupancy at 256 threads per block), read from
ptxas's report through NVRTC. Needs cuda-bindings (the `test` extra), not a GPU."""
from __future__ import annotations

import pytest

from tests.conftest import require
from tests.nvrtc_check import ptxas_report

require("cuda.bindings")

ONE_PASS = {"utf8": ["utf8_decode", "utf8_decode_wide", "utf8_string_stats"], "trie": ["trie_prefix_search"]}


@pytest.mark.parametrize("family", sorted(ONE_PASS))
def test_one_pass_kernels_do_not_spill(family):
    report = ptxas_report(family)
    print(family, "(registers, spilled bytes):", report)
    for kernel in ONE_PASS[family]:
        registers, spilled = report[kernel]
        assert spilled == 0 and registers <= 64, (kernel, registers, spilled)
