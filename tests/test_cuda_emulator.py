"""Tests of the CUDA-on-CPU emulator itself (tests/cuda_emulator), with its own small kernels in
tests/cuda_emulator/kernels checked against numpy: results, partial warps, shared memory,
atomics, the deadlock reports, argument checking and the build cache."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require

# The device check (GPU_TEXT_SKIP_EMULATION=1) spends its minutes on the GPU; CI runs these.
pytestmark = pytest.mark.skipif(os.environ.get("GPU_TEXT_SKIP_EMULATION") == "1",
                                reason="emulator self-tests run in CI, not in the device check")
require("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.cuda_emulator.emulator import EmulatedModule, EmulationError

KERNELS = Path(__file__).resolve().parent / "cuda_emulator" / "kernels"
FULL = 0xFFFFFFFF


def module(name: str, **options) -> EmulatedModule:
    return EmulatedModule(str(KERNELS / name), **options)


@pytest.fixture(scope="module")
def scan():
    return module("block_scan.cu").get_function("block_scan")


@pytest.fixture(scope="module")
def warp_ops():
    return module("warp_ops.cu")


@pytest.fixture(scope="module")
def sync():
    return module("shared_and_sync.cu")


def warp_lanes(block: int, thread: int) -> tuple[int, int]:
    """(lane, number of lanes that exist in the thread's warp) for a 1-D block."""
    warp = thread // 32
    return thread % 32, min(32, block - 32 * warp)


# ------------------------------------------------------------------ block scan (shuffles + shared memory)
def run_scan(kernel, x: np.ndarray, block: int, **launch):
    n_blocks = max(1, -(-x.size // block))
    out = np.full(x.size, -7, np.int32)
    totals = np.zeros(n_blocks, np.int32)
    maxima = np.zeros(n_blocks, np.int32)
    kernel((n_blocks,), (block,), (x, np.int64(x.size), out, totals, maxima), **launch)
    return out, totals, maxima


def check_scan(x: np.ndarray, block: int, out, totals, maxima) -> None:
    segments = [x[i:i + block].astype(np.int64) for i in range(0, x.size, block)]
    np.testing.assert_array_equal(out, np.concatenate([np.cumsum(s) - s for s in segments]))
    np.testing.assert_array_equal(totals, [s.sum() for s in segments])
    np.testing.assert_array_equal(maxima, [s.max() for s in segments])


@pytest.mark.parametrize("block", [1, 33, 100, 1024])
def test_block_scan_any_block_size(scan, block):
    x = np.random.default_rng(block).integers(-1000, 1000, 3 * block - 5 if block > 5 else 7).astype(np.int32)
    check_scan(x, block, *run_scan(scan, x, block))


@settings(max_examples=25, deadline=None)
@given(block=st.integers(1, 1024), n=st.integers(1, 3000), seed=st.integers(0, 3))
def test_block_scan_random_shapes_and_schedules(scan, block, n, seed):
    x = np.random.default_rng(n).integers(-100, 100, n).astype(np.int32)
    check_scan(x, block, *run_scan(scan, x, block, schedule_seed=seed))


def test_block_scan_on_two_workers():
    kernel = module("block_scan.cu", workers=2).get_function("block_scan")
    x = np.random.default_rng(5).integers(-1000, 1000, 40 * 96).astype(np.int32)
    check_scan(x, 96, *run_scan(kernel, x, 96, schedule_seed=11))


# ------------------------------------------------------------------ warp intrinsics
@pytest.mark.parametrize("block", [1, 33, 100, 1024])
def test_votes_on_partial_warps(warp_ops, block):
    n_blocks = 2
    size = n_blocks * block
    pred = (np.random.default_rng(block).random(size) < 0.6).astype(np.int32)
    pred[:block][(np.arange(block) // 32) == 0] = 1  # warp 0 of block 0: all true
    ballot, active = np.zeros(size, np.uint32), np.zeros(size, np.uint32)
    any_, all_, uni = (np.zeros(size, np.int32) for _ in range(3))
    warp_ops.get_function("votes")((n_blocks,), (block,), (pred, ballot, any_, all_, active, uni))
    for g in range(size):
        lane, lanes = warp_lanes(block, g % block)
        first = g - lane
        members = pred[first:first + lanes]
        expected = sum(1 << i for i in range(lanes) if members[i])
        assert ballot[g] == expected, g
        assert any_[g] == int(members.any()) and all_[g] == int(members.all())
        assert uni[g] == int(members.all() or not members.any())
        assert active[g] == (1 << lanes) - 1


def expected_shuffles(block: int, n_blocks: int, width: int, param: int):
    values = {}
    for kind in ("idx", "up", "down", "xor"):
        out = np.zeros(n_blocks * block, np.int64)
        for b in range(n_blocks):
            for t in range(block):
                lane, lanes = warp_lanes(block, t)
                base = lane & ~(width - 1)
                if kind == "idx":
                    src = base + (param & (width - 1))
                elif kind == "up":
                    src = lane - param if lane - param >= base else lane
                elif kind == "down":
                    src = lane + param if lane + param < base + width else lane
                else:
                    src = lane ^ param if (lane ^ param) < base + width else lane
                if src >= lanes:  # a lane that does not exist: the caller's own value (documented)
                    src = lane
                out[b * block + t] = 1000 * b + (t - lane + src)
        values[kind] = out
    return values


# (64, 8, 9) and (48, 16, 20): xor lane masks >= width reach into other segments.
@pytest.mark.parametrize("block,width,param", [
    (64, 32, 3), (100, 16, 1), (33, 8, 5), (1024, 4, 2), (70, 32, 17), (64, 8, 9), (48, 16, 20),
])
def test_shuffles_with_width(warp_ops, block, width, param):
    n_blocks = 2
    size = n_blocks * block
    idx, up, down, xr = (np.zeros(size, np.int32) for _ in range(4))
    wide = np.zeros(size, np.float64)
    args = (np.int32(width), np.int32(param), idx, up, down, xr, wide)
    warp_ops.get_function("shuffles")((n_blocks,), (block,), args)
    expected = expected_shuffles(block, n_blocks, width, param)
    np.testing.assert_array_equal(idx, expected["idx"])
    np.testing.assert_array_equal(up, expected["up"])
    np.testing.assert_array_equal(down, expected["down"])
    np.testing.assert_array_equal(xr, expected["xor"])
    np.testing.assert_array_equal(wide, expected["xor"] + 0.25)


def test_shuffle_width_must_be_a_power_of_two(warp_ops):
    out = [np.zeros(32, np.int32) for _ in range(4)]
    with pytest.raises(EmulationError, match="width 12"):
        warp_ops.get_function("shuffles")(1, 32, (np.int32(12), np.int32(1), *out, np.zeros(32)))


@pytest.mark.parametrize("block", [32, 50])
def test_warp_reductions_and_matches(warp_ops, block):
    rng = np.random.default_rng(block)
    v = rng.integers(0, 4, block).astype(np.uint32)
    v[::7] = rng.integers(2**31, 2**32, v[::7].size)  # negative as int
    outs = [np.zeros(block, dt) for dt in (np.uint32, np.int32, np.uint32, np.uint32, np.uint32, np.int32)]
    warp_ops.get_function("warp_reduce_match")(1, block, (v, *outs))
    total, smin, umax, any_match, all_match, all_pred = outs
    for t in range(block):
        lane, lanes = warp_lanes(block, t)
        members = v[t - lane:t - lane + lanes]
        assert total[t] == members.sum(dtype=np.uint64) % 2**32
        assert smin[t] == members.view(np.int32).min() and umax[t] == members.max()
        assert any_match[t] == sum(1 << i for i in range(lanes) if members[i] == v[t])
        same = bool((members == members[0]).all())
        assert all_match[t] == ((1 << lanes) - 1 if same else 0) and all_pred[t] == int(same)


def test_bit_intrinsics_in_grid_stride_loop(warp_ops):
    rng = np.random.default_rng(0)
    n = 1000
    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x[:3] = [0, 1, 0x80000000]
    x64 = rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1
    popc, popcll, clz, ffs = (np.zeros(n, np.int32) for _ in range(4))
    brev = np.zeros(n, np.uint32)
    warp_ops.get_function("bit_ops")(3, 64, (x, x64, np.int32(n), popc, popcll, clz, ffs, brev))  # 192 threads < n
    ints = [int(v) for v in x]
    np.testing.assert_array_equal(popc, [bin(v).count("1") for v in ints])
    np.testing.assert_array_equal(popcll, [bin(int(v)).count("1") for v in x64])
    np.testing.assert_array_equal(clz, [32 - v.bit_length() for v in ints])
    np.testing.assert_array_equal(ffs, [(v & -v).bit_length() for v in ints])
    np.testing.assert_array_equal(brev, [int(f"{v:032b}"[::-1], 2) for v in ints])


def test_3d_grid_and_blocks(warp_ops):
    block, grid = (4, 3, 5), (2, 3, 2)
    threads, blocks = 60, 12
    out = np.zeros((blocks * threads, 13), np.uint32)
    warp_ops.get_function("where_am_i")(grid, block, (out,))
    rows = []
    for bz in range(2):
        for by in range(3):
            for bx in range(2):
                for t in range(threads):
                    tx, ty, tz = t % 4, t // 4 % 3, t // 12
                    rows.append([tx, ty, tz, bx, by, bz, *block, *grid, t & ~31])
    np.testing.assert_array_equal(out, rows)


# ------------------------------------------------------------------ atomics
@pytest.mark.parametrize("workers", [1, 2])
def test_atomics(workers):
    kernels = module("atomics.cu", workers=workers)
    rng = np.random.default_rng(workers)
    n = 3000
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    xf = (rng.integers(-100, 100, n) * 0.25).astype(np.float32)  # every partial sum is exact
    xd = rng.random(n)
    cells = dict(
        fsum=np.zeros(1, np.float32), dsum=np.zeros(1, np.float64), usum=np.zeros(1, np.uint64),
        imax=np.array([-(2**31)], np.int32), imin=np.array([2**31 - 1], np.int32), umax=np.zeros(1, np.uint32),
        bits_or=np.zeros(1, np.uint32), bits_and=np.array([FULL], np.uint32), countdown=np.array([n], np.int32),
        fmax=np.array([-np.inf], np.float32), tickets=np.zeros(n, np.uint32), last=np.array([-1], np.int32),
        chain=np.zeros(n, np.int32), wrap=np.zeros(1, np.uint32),
    )
    kernels.get_function("atomic_mix")(4, 128, (x, xf, xd, np.int32(n), *cells.values()))
    c = cells
    assert c["fsum"][0] == xf.sum(dtype=np.float64)
    assert c["dsum"][0] == pytest.approx(xd.sum(), rel=1e-12)
    assert int(c["usum"][0]) == sum((int(v) + 1000) << 20 for v in x)
    assert c["imax"][0] == x.max() and c["imin"][0] == x.min() and c["umax"][0] == x.view(np.uint32).max()
    assert c["bits_or"][0] == np.bitwise_or.reduce(np.uint32(1) << (x & 31).astype(np.uint32))
    assert c["bits_and"][0] == FULL & ~int(np.bitwise_or.reduce(np.uint32(1) << ((x >> 5) & 31).astype(np.uint32)))
    assert c["countdown"][0] == 0 and c["fmax"][0] == xf.max()
    np.testing.assert_array_equal(np.sort(c["tickets"]), np.arange(n))
    np.testing.assert_array_equal(np.sort(np.append(c["chain"], c["last"])), np.arange(-1, n))


def test_histogram_with_shared_atomics_on_two_workers():
    kernel = module("atomics.cu", workers=2).get_function("histogram")
    data = np.random.default_rng(1).integers(0, 256, 100_000).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    kernel(8, 256, (data, np.int64(data.size), hist))
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))


# ------------------------------------------------------------------ shared memory and barriers
@pytest.mark.parametrize("block", [1, 33, 100, 1024])
def test_dynamic_shared_memory(sync, block):
    n = 3 * block - 1 if block > 1 else 3
    x = np.random.default_rng(block).integers(0, 10**6, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    sync.get_function("reverse_segments")(-(-n // block), block, (x, out, np.int32(n)), shared_mem=4 * block)
    np.testing.assert_array_equal(out, np.concatenate([x[i:i + block][::-1] for i in range(0, n, block)]))


def test_extern_shared_arrays_alias_one_buffer(sync):
    x = np.random.default_rng(0).random(64).astype(np.float32)
    bits, alignment = np.zeros(64, np.uint32), np.ones(1, np.uint64)
    sync.get_function("shared_views")(1, 64, (x, bits, alignment), shared_mem=256)
    np.testing.assert_array_equal(bits, x.view(np.uint32)[::-1])
    assert alignment[0] == 0


def test_dynamic_shared_memory_limits(sync):
    kernel = sync.get_function("reverse_segments")
    x, out = np.arange(32, dtype=np.int32), np.zeros(32, np.int32)
    args = (x, out, np.int32(32))
    with pytest.raises(EmulationError, match="max_dynamic_shared_size_bytes"):
        kernel(1, 32, args, shared_mem=64 * 1024)  # above 48 KiB needs the opt-in, as on a GPU
    kernel.max_dynamic_shared_size_bytes = 100 * 1024
    kernel(1, 32, args, shared_mem=64 * 1024)
    np.testing.assert_array_equal(out, x[::-1])
    with pytest.raises(EmulationError):
        kernel.max_dynamic_shared_size_bytes = 228 * 1024


@pytest.mark.parametrize("workers", [1, 2])
def test_static_shared_is_per_block(workers):
    out = np.zeros(9, np.int32)
    module("shared_and_sync.cu", workers=workers).get_function("count_block_threads")(9, (16, 5), (out,))
    np.testing.assert_array_equal(out, 80)


def test_barrier_votes_with_exited_threads(sync):
    pred = (np.random.default_rng(2).random(64) < 0.5).astype(np.int32)
    count, all_, any_ = (np.full(1, -1, np.int32) for _ in range(3))
    passed = np.zeros(64, np.int32)
    sync.get_function("barrier_votes")(1, 64, (pred, np.int32(40), count, all_, any_, passed))
    active = pred[:40] != 0
    assert (count[0], all_[0], any_[0]) == (active.sum(), int(active.all()), int(active.any()))
    np.testing.assert_array_equal(passed, np.arange(64) < 40)


def test_missing_syncthreads_gives_wrong_results(sync):
    out = np.zeros(64, np.int32)
    sync.get_function("neighbour_without_sync")(1, 64, (out,), shared_mem=256)
    assert not np.array_equal(out, (np.arange(64) + 1) % 64)


def test_nanosleep_lets_spinning_threads_wait(sync):
    out = np.zeros(64, np.int32)
    sync.get_function("spin_until_flag")(1, 64, (out,))
    np.testing.assert_array_equal(out, 1)


@pytest.mark.parametrize("name,pattern", [
    ("divergent_barrier", r"deadlock: divergent __syncthreads .*shared_and_sync\.cu:\d+"),
    ("warp_barrier_deadlock", r"deadlock in block \(0,0,0\).*__syncthreads.*__syncwarp"),
    ("divergent_shuffle", r"deadlock in block \(0,0,0\).*__shfl\*_sync.*waiting for lanes 0xffff0000"),
])
def test_deadlocks_are_reported(sync, name, pattern):
    with pytest.raises(EmulationError, match=pattern):
        sync.get_function(name)(1, 64, (np.zeros(64, np.int32),))
    # the module stays usable after an abandoned block
    out = np.zeros(9, np.int32)
    sync.get_function("count_block_threads")(9, 32, (out,))
    np.testing.assert_array_equal(out, 32)


def test_trap_is_reported(sync):
    with pytest.raises(EmulationError, match=r"__trap\(\) called by thread \(5,0,0\)"):
        sync.get_function("trap_in_block_1")(3, 32, (np.zeros(96, np.int32),))


# ------------------------------------------------------------------ launch configuration and arguments
def test_launch_configuration_is_checked(sync):
    kernel = sync.get_function("count_block_threads")
    out = np.zeros(4, np.int32)
    for block in (1025, (32, 33), (1, 1, 65), 0):
        with pytest.raises(EmulationError, match="invalid launch configuration"):
            kernel(1, block, (out,))
    with pytest.raises(EmulationError, match="invalid launch configuration"):
        kernel((0,), 32, (out,))
    with pytest.raises(TypeError):
        kernel(1, (1, 2, 3, 4), (out,))


def test_launch_bounds_are_enforced(sync):
    kernel = sync.get_function("bounded")
    assert kernel.max_threads_per_block == 64
    out = np.zeros(128, np.int32)
    kernel(1, 64, (out,))
    np.testing.assert_array_equal(out[:64], np.arange(64))
    with pytest.raises(EmulationError, match="__launch_bounds__ allows 64"):
        kernel(1, 128, (out,))


def test_arguments_are_checked(sync):
    kernel = sync.get_function("reverse_segments")
    x, out = np.arange(32, dtype=np.int32), np.zeros(32, np.int32)
    with pytest.raises(TypeError, match=r"Python int.*np\.int32"):
        kernel(1, 32, (x, out, 32))
    with pytest.raises(TypeError, match=r"Python float"):
        kernel(1, 32, (x, out, 32.0))
    with pytest.raises(TypeError, match=r"int64.*np\.int32"):
        kernel(1, 32, (x, out, np.int64(32)))
    with pytest.raises(TypeError, match="float32"):
        kernel(1, 32, (x, out, np.float32(32)))
    with pytest.raises(TypeError, match="numpy array"):
        kernel(1, 32, (x, np.int32(0), np.int32(32)))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        kernel(1, 32, (x, out))
    with pytest.raises(ValueError, match="C-contiguous"):
        kernel(1, 16, (x[::2], out, np.int32(16)))
    kernel(1, 32, (x, out, np.uint32(32)), shared_mem=128)  # same size, other signedness: accepted
    np.testing.assert_array_equal(out, x[::-1])
    assert kernel.param_types == ("pointer", "pointer", "int")


def test_kernel_names_and_unknown_kernel(sync):
    assert sync.kernel_names[:3] == ["reverse_segments", "shared_views", "count_block_threads"]
    assert "bounded" in sync.kernel_names and "trap_in_block_1" in sync.kernel_names
    with pytest.raises(EmulationError, match="no kernel 'nope'"):
        sync.get_function("nope")


# ------------------------------------------------------------------ building and caching
TINY_KERNEL = """// a kernel with a header of its own
#include "tiny.cuh"
extern "C" __global__ void fill(int* out) { out[threadIdx.x] = TINY_VALUE; }
"""


def test_cache_reuse_and_header_changes(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "tiny.cu").write_text(TINY_KERNEL)
    (source / "tiny.cuh").write_text("#define TINY_VALUE 7\n")
    cache = tmp_path / "cache"
    first = EmulatedModule(str(source / "tiny.cu"), cache_dir=str(cache))
    assert first.built and first.library_path.exists()
    again = EmulatedModule(str(source / "tiny.cu"), cache_dir=str(cache))
    assert not again.built and again.library_path == first.library_path

    (source / "tiny.cuh").write_text("#define TINY_VALUE 8\n")
    changed = EmulatedModule(str(source / "tiny.cu"), cache_dir=str(cache))
    assert changed.built and changed.library_path != first.library_path
    # Both libraries are loaded now and define the same kernel name: each keeps its own.
    old_out, new_out = np.zeros(4, np.int32), np.zeros(4, np.int32)
    first.get_function("fill")(1, 4, (old_out,))
    changed.get_function("fill")(1, 4, (new_out,))
    assert old_out.tolist() == [7] * 4 and new_out.tolist() == [8] * 4
    assert not list(cache.glob(".build-*"))  # no leftovers from the builds


def test_build_failure_shows_compiler_errors(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void broken(int* out) { out[0] = undeclared_name; }\n')
    with pytest.raises(EmulationError, match=r"(?s)failed.*undeclared_name"):
        EmulatedModule(str(bad), cache_dir=str(tmp_path / "cache"))


# ------------------------------------------------------------------ per-thread step counter (GT_STEP)
@pytest.mark.parametrize("workers", [1, 3])
def test_step_counter_reports_the_busiest_thread(workers):
    from gpu_text.kernel_sources import kernel_source_dir

    mod = module("steps.cu", include_dirs=[str(kernel_source_dir())], workers=workers)
    kernel = mod.get_function("count_steps")
    assert kernel.last_max_steps == 0 and mod.last_max_steps == 0  # before any launch
    rng = np.random.default_rng(workers)
    for n, block in ((1000, 128), (77, 32), (1, 1)):
        work = rng.integers(0, 500, n).astype(np.int32)
        done = np.zeros(n, np.int32)
        kernel((-(-n // block),), (block,), (work, np.int64(n), done))
        np.testing.assert_array_equal(done, work)
        assert kernel.last_max_steps == mod.last_max_steps == int(work.max())
    zero = np.zeros(5, np.int32)
    kernel((1,), (8,), (zero, np.int64(5), zero.copy()))  # a launch without steps resets the figure
    assert kernel.last_max_steps == 0


def test_step_counter_is_a_no_op_outside_the_emulator():
    header = (Path(__file__).resolve().parents[1] / "cuda" / "step_counter.cuh").read_text()
    assert "#ifndef GT_STEP" in header and "#define GT_STEP() ((void)0)" in header


# ------------------------------------------------------------------ counting what a call costs on a GPU
def test_device_counts_see_launches_syncs_and_uploads():
    import gpu_text.arrays as arrays
    from tests.cuda_emulator.device_counts import CountingRuntime, DeviceArray, measure
    from tests.emulated_backend import counting_emulated_backend

    be = counting_emulated_backend()
    xp = be.xp
    scan_module = module("block_scan.cu")

    class Runtime:  # the emulator's test kernel in place of a gpu_text family
        def function(self, family, name):
            return scan_module.get_function(name)

    counting = CountingRuntime(Runtime())
    host = np.arange(10, dtype=np.int32)
    with measure() as counts:
        x = xp.asarray(host)                      # upload of 40 bytes
        assert isinstance(x, DeviceArray)
        y = xp.cumsum(x)                          # op
        total = int(y[-1])                        # sync (a 0-d device array read)
        picked = y[xp.asarray([1, 2])]            # upload (the index list) + fancy indexing op
        nonzero = xp.flatnonzero(picked > 1)      # 2 ops (compare, flatnonzero) + its count sync
        out, totals, maxima = (xp.zeros(10, xp.int32) for _ in range(3))  # 3 fill ops
        counting.function("any", "block_scan")((1,), (32,), (x, np.int64(10), out, totals, maxima))  # launch
        counting.function("any", "block_scan")((1,), (32,), (host, np.int64(10), out, totals, maxima))  # + upload
        back = arrays.to_host(out)                # sync
    assert total == 45 and nonzero.tolist() == [1] and type(back) is np.ndarray
    np.testing.assert_array_equal(back, np.cumsum(host) - host)
    assert counts.launches == 2
    assert counts.uploads == 3 and counts.upload_bytes == 40 + 16 + 40
    assert counts.syncs == 3
    assert counts.array_ops == 1 + 1 + 2 + 3
    assert any("to_host" in line for line in counts.listing("syncs"))
    # outside a measure block nothing is counted and device arrays are plain numpy arrays
    assert int(y[-1]) == 45 and counts.syncs == 3
