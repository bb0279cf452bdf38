"""What a CRF training iteration costs on a GPU (issue 16), counted under emulation, and the CRF
kernels' registers on sm_90.

Counts per iteration (``tests/cuda_emulator/device_counts.py``; every iteration here accepts its
first trial point, so one evaluation each), as the difference between 6 and 3 iterations of
training on the counting backend, People's-Daily-like sentences, BMES:

=========================  ===========  ==========  =====  =======
                           kernel runs  array ops   syncs  uploads
=========================  ===========  ==========  =====  =======
before, L-BFGS             5            34          12     4
before, OWL-QN             5            62          16     4
after, L-BFGS              6            42          1      0
after, OWL-QN              6            67          1      0
=========================  ===========  ==========  =====  =======

Before: measured with the optimiser's vector passes as CuPy ran them (the ``History`` array
expressions and the array module's dot products: under emulation they had taken the CPU's Numba
passes, since the emulated device arrays are numpy arrays, and gone uncounted); the syncs were
the objective, ``x·x``, five reads of ``History.dots``, ``combine_rows``, ``store_pair``, the
curvature test, the error count and the active weights; the uploads the pass's row indices and
the direction's coefficients.
After: the emissions and the recursion (2 launches), two gradient reductions (2 each); the one
sync is the optimiser's readback of the iteration's scalars (objective, slopes, x·x, active
weights, the error count, the next direction's dot products); nothing is uploaded. The array
ops are mostly the optimiser's: its vector passes, and the direction's coefficients set one by
one (2 tiny ops a pair, kernel scalars rather than an upload) before one matrix-vector product.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

from tests.cuda_emulator.device_counts import measure

pytestmark = pytest.mark.skipif(os.environ.get("GPU_TEXT_SKIP_EMULATION") == "1",
                                reason="counts come from the CPU emulator, which the device check skips")

SENTENCES = ["南京 市长 江大桥", "长江 大桥", "南京 长江", "市长 在 南京", "大桥 长", "１２月 ３１日 ， 南京 市长 讲话"] * 3
# per iteration, at most: (kernel launches, array ops, syncs, uploads) by algorithm
BOUNDS = {0.0: (6, 42, 1, 0), 0.5: (6, 67, 1, 0)}


def train(rho1: float, iterations: int, backend):
    from gpu_text.crf import CRF
    from gpu_text.crf.data import read_segmented_bmes

    X, y = read_segmented_bmes(SENTENCES)
    return CRF(rho1=rho1, rho2=0.05, max_iterations=iterations, stop_window=0, epsilon=0.0,
               backend=backend).fit(X, y)


@pytest.mark.parametrize("rho1", [0.0, 0.5])
def test_training_iteration_counts(rho1):
    from tests.emulated_backend import counting_emulated_backend

    be = counting_emulated_backend()
    runs = {}
    for iterations in (3, 6):
        with measure() as counts:
            crf = train(rho1, iterations, be)
        runs[iterations] = (counts, crf)
    (few, short), (many, long) = runs[3], runs[6]
    assert len(long.history_) == 6 and [r["evaluations"] for r in long.history_] == list(range(2, 8))
    per = [(many.launches - few.launches) / 3, (many.array_ops - few.array_ops) / 3, (many.syncs - few.syncs) / 3,
           (many.uploads - few.uploads) / 3]
    print(f"\nrho1={rho1}: per iteration {per} (launches, array ops, syncs, uploads)")
    for line in many.listing("syncs"):
        print("  sync:", line)
    most = BOUNDS[rho1]
    assert per[0] <= most[0] and per[1] <= most[1], per
    assert per[2] <= most[2] <= 2 and per[3] == 0, per  # the targets: <= 2 syncs, no upload
    # the trajectory is the CPU's (the same decisions, dot products rounded differently)
    cpu = train(rho1, 6, "cpu")
    np.testing.assert_allclose(long.unigram_weights_, cpu.unigram_weights_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(long.bigram_weights_, cpu.bigram_weights_, rtol=1e-9, atol=1e-12)
    assert [r["error_percent"] for r in long.history_] == [r["error_percent"] for r in cpu.history_]
    assert [r["active_features"] for r in long.history_] == [r["active_features"] for r in cpu.history_]


# sm_90 registers of every CRF kernel when written (the forward-backward kernels were 74 and 64
# registers before, the group kernels are new); all must stay spill-free within 64 registers, the
# bound of 4 blocks of 256 threads an SM (50% occupancy) their __launch_bounds__ ask for.
REGISTERS_AT_MOST = 64
BOUNDED = re.compile(r"crf_forward_backward(_y\d)?$")


def test_crf_kernels_registers_and_spills():
    from tests.conftest import require

    require("cuda.bindings")
    from tests.nvrtc_check import ptxas_report

    report = ptxas_report("crf")
    print("\nsm_90 (registers, spill bytes):", report)
    assert {"crf_emissions", "crf_forward_backward", "crf_forward_backward_y4"} <= set(report)
    for name, (registers, spills) in report.items():
        assert spills == 0, f"{name} spills {spills} bytes"
        if BOUNDED.match(name):
            assert registers <= REGISTERS_AT_MOST, f"{name}: {registers} registers"
