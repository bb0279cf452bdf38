"""keep_freed_memory: a large block freed and allocated again is reused instead of faulted in
afresh (glibc on Linux; elsewhere the call says it did nothing). Each case runs in a fresh
interpreter, since the setting is process-wide."""
from __future__ import annotations

import platform
import subprocess
import sys

import pytest

PROBE = """
import resource, sys
import numpy as np
from gpu_text.process_memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
faults = []
for _ in range(4):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = np.ones(24 << 20, dtype=np.uint8)  # 24 MiB, touched whole
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    del block
print(max(faults[1:]))
"""


def faults_after_the_first(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_a_freed_block_is_reused_without_faults():
    kept = faults_after_the_first("keep")
    default = faults_after_the_first("default")
    print("faults per allocation after the first: kept", kept, "default", default)
    # at least a fault per 2 MiB page (transparent huge pages) by default; the kept block's pages
    # are the heap's already
    assert default >= (24 << 20) // (2 << 20)
    assert kept * 10 < default
