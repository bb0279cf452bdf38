"""The device check's kernel table (benchmarks/device_kernels.py) runs end to end here: its dry run
(the counting CPU emulator, a few KB per case, one worker process per group as on the GPU) writes
every case, device figure and kernel; a worker that hangs or crashes costs its case only; the launch
hook and the sync counter it relies on are off by default and count what they should."""
from __future__ import annotations

import contextlib
import doctest
import importlib
import json
import os
import sys
import types

import numpy as np
import pytest

import gpu_text.cuda_ops as cuda_ops
from benchmarks import device_kernels
from benchmarks.device_cases import CASES
from benchmarks.device_kernels import PREFIX, TASKS, kernel_names, main, run_group
from gpu_text.cuda_runtime import count_device_traffic
from gpu_text.kernel_sources import kernel_families, kernel_source_path
from tests.test_kernel_inventory import kernels_of


# the device check runs the real table right after the tests; its minutes go to the GPU
emulated = pytest.mark.skipif(os.environ.get("GPU_TEXT_SKIP_EMULATION") == "1",
                              reason="the dry run uses the CPU emulator; the device check runs the GPU table itself")


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("device-check")
    assert main(["--dry-run", "--out", str(out), "--budget", "400"]) == 0
    return out, json.loads((out / "device_kernels.json").read_text())


@emulated
def test_the_dry_run_measures_every_case(dry_run):
    out, report = dry_run
    rows = {row["case"]: row for row in report["table"]}
    assert list(rows) == [case.name for case in CASES]
    for name, row in rows.items():
        assert row["status"] == "ok", f"{name}: {row.get('error')}"
        assert row["bytes"] > 0 and row["seconds"] > 0 and row["gb_per_s"] > 0, name
        assert row["percent_of_ceiling"] > 0 and row["kernel_s"] > 0 and row["glue_s"] is not None, name
        # the recorder saw every kernel the counting runtime launched (through launch() or not)
        assert row["launches"] >= 1 and row["launches"] == row["counted_launches"], name
        assert 0 <= row["direct_launches"] <= row["launches"], name
        assert row["syncs"] >= 0 and row["top_kernels"], name
    sweep = report["cases"]["tokenize: BPE thresholds swept, zh+en lines 16 MB"]["sweep"]
    assert len(sweep) == 8 and all(v["same_ids"] for v in sweep.values()), sweep  # every threshold: the same ids
    markdown = (out / "device_kernels.md").read_text()
    assert all(f"| {name} |" in markdown for name in rows)
    assert report["ceiling_gb_per_s"] > 0 and report["device"]["status"] == "ok"


@emulated
def test_the_dry_run_lists_every_kernel_of_every_family(dry_run):
    _, report = dry_run
    listed = {(k["family"], k["kernel"]) for k in report["kernels"]["kernels"]}
    assert report["kernels"]["status"] == "ok"
    for family in kernel_families():
        # (the inventory's pattern reads a `__launch_bounds__(...)  // comment` line as a kernel named so)
        assert {(family, name) for name in kernels_of(family) if not name.startswith("__")} <= listed, family
        assert {(family, name) for name in kernel_names(kernel_source_path(family).read_text())} <= listed


def _fake_worker(*lines: str, then: str = "") -> list[str]:
    """A worker command that prints ``lines`` (each a JSON event) and then runs ``then``."""
    code = "import sys, time\n" + "".join(f"print({PREFIX + line!r}, flush=True)\n" for line in lines) + then
    return [sys.executable, "-c", code, "--tasks"]


def test_a_worker_that_hangs_or_crashes_costs_its_case_only(tmp_path, monkeypatch):
    monkeypatch.setattr(device_kernels, "task_budget", lambda name, dry_run: 1.0)
    results: dict = {}
    log = tmp_path / "log"
    a, b, c = 2, 3, 4
    hangs = _fake_worker('{"event": "ready"}', f'{{"event": "start", "task": {a}}}',
                         f'{{"event": "result", "task": {a}, "record": {{"status": "ok", "bytes": 1}}}}',
                         f'{{"event": "start", "task": {b}}}', then="time.sleep(60)")
    left = run_group(hangs, [a, b, c], float("inf"), results, lambda: None, False, log)
    assert left == [c]
    assert results[TASKS[a]] == {"status": "ok", "bytes": 1}
    assert results[TASKS[b]]["status"] == "timed out" and "killed after" in results[TASKS[b]]["error"]
    crashes = _fake_worker('{"event": "ready"}', f'{{"event": "start", "task": {c}}}',
                           then="sys.stderr.write('boom'); sys.exit(5)")
    assert run_group(crashes, [c], float("inf"), results, lambda: None, False, log) == []
    assert results[TASKS[c]]["status"] == "crashed" and "exited with 5: boom" in results[TASKS[c]]["error"]
    # a fatal CUDA error after a result: the rest go to a fresh worker; a worker that got nowhere: failed
    fatal = _fake_worker('{"event": "ready"}', f'{{"event": "start", "task": {a}}}',
                         f'{{"event": "result", "task": {a}, "record": {{"status": "failed"}}}}', then="sys.exit(3)")
    assert run_group(fatal, [a, b], float("inf"), results, lambda: None, False, log) == [b]
    nowhere = _fake_worker('{"event": "ready"}', then="sys.exit(1)")
    assert run_group(nowhere, [b], float("inf"), results, lambda: None, False, log) == []
    assert results[TASKS[b]]["status"] == "failed" and "exited with 1" in results[TASKS[b]]["error"]
    no_setup = _fake_worker('{"event": "setup_failed", "error": "no GPU"}')
    assert run_group(no_setup, [a, b], float("inf"), results, lambda: None, False, log) == []
    assert [results[TASKS[t]]["status"] for t in (a, b)] == ["failed", "failed"]
    assert "no GPU" in results[TASKS[a]]["error"]


def test_the_launch_hook_is_off_by_default_and_launches_in_place():
    assert cuda_ops._launch_hook is None
    calls = []

    def kernel(grid, block, args, shared_mem=0):
        calls.append(("kernel", grid, args, shared_mem))

    def hook(k, grid, block, args, shared_mem):
        calls.append("hook")
        k(grid, block, args, shared_mem=shared_mem)

    previous = cuda_ops.set_launch_hook(hook)
    try:
        cuda_ops.launch(kernel, 2, [1, 2], shared_mem=64)
        cuda_ops.launch(kernel, 0, [])  # no blocks: nothing, hook or not
    finally:
        assert cuda_ops.set_launch_hook(previous) is hook
    assert calls == ["hook", ("kernel", (2, 1, 1), (1, 2), 64)]


def test_the_recorder_times_kernels_launched_with_and_without_launch():
    api = types.SimpleNamespace(mark=iter(range(100)).__next__, elapsed=lambda a, b: float(b - a),
                                synchronize=lambda: None, counting=lambda: _no_counts())
    ran = []

    def kernel(grid, block, args, shared_mem=0):
        ran.append(block)

    kernel.name = "k"
    runtime = types.SimpleNamespace(xp=np, function=lambda family, name: kernel, upload=lambda a: "uploaded")
    backend = device_kernels.LaunchRecorder(api).backend(types.SimpleNamespace(name="b", xp=np, runtime=runtime))
    recorder = backend.runtime._recorder
    wrapped = backend.runtime.function("f", "k")
    cuda_ops.launch(wrapped, 1, ())  # not instrumented: runs, nothing recorded
    with device_kernels.instrument(api, recorder) as seen:
        cuda_ops.launch(wrapped, 2, ())
        backend.runtime.function("f", "k")((1, 1, 1), (128, 1, 1), ())  # a wrapper's own launch
    assert ran == [(256, 1, 1)] * 2 + [(128, 1, 1)]
    assert (seen["launches"], seen["direct_launches"], seen["kernels"]["k"]["launches"]) == (2, 1, 2)
    assert seen["kernels"]["k"]["direct"] and backend.runtime.upload(None) == "uploaded"
    assert cuda_ops._launch_hook is None


@contextlib.contextmanager
def _no_counts():
    yield lambda: {"syncs": 0}


def test_the_sync_counter_counts_declared_syncs_and_restores_the_detector():
    declared = []
    detector = types.SimpleNamespace(_declare_synchronize=lambda: declared.append(1))
    original = detector._declare_synchronize
    with count_device_traffic(detector) as outer:
        detector._declare_synchronize()
        with count_device_traffic(detector) as inner:
            detector._declare_synchronize()
    detector._declare_synchronize()
    assert (outer.syncs, inner.syncs, len(declared)) == (2, 1, 3)
    assert detector._declare_synchronize is original
    with pytest.raises(RuntimeError, match="does not declare its syncs"):
        with count_device_traffic(types.SimpleNamespace()):
            pass


@pytest.mark.parametrize("name", ["benchmarks.device_kernels", "benchmarks.device_cases", "benchmarks.device_report"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


class _StandInArray:
    """A device array of the CuPy stand-in below: numpy inside, a read declares a sync."""

    def __init__(self, host, detector):
        self.host, self.detector = host, detector
        self.data = types.SimpleNamespace(copy_from_device_async=self._copy_from)

    def _copy_from(self, src, size):
        self.host.view(np.uint8)[:size] = src.owner.host.view(np.uint8)[:size]

    def __getattr__(self, name):
        return getattr(self.host, name)

    def view(self, dtype):
        return _StandInArray(self.host.view(dtype), self.detector)

    def fill(self, value):
        self.host.fill(value)

    def sum(self):
        return _StandInArray(np.asarray(self.host.sum()), self.detector)

    def set(self, host):
        self.host[...] = host

    def get(self, out=None):
        self.detector._declare_synchronize()
        if out is None:
            return self.host.copy()
        out[...] = self.host
        return out

    def __int__(self):
        return int(self.get())


def _cupy_stand_in(detector):
    """The parts of CuPy's API that benchmarks/device_apis.py calls, as CuPy documents them."""
    def wrap(host):
        array = _StandInArray(host, detector)
        array.data.owner = array
        return array

    clock = iter(range(1, 10**6))
    event = type("Event", (), {"record": lambda self, stream=None: setattr(self, "t", next(clock))})
    properties = {"name": b"Stand-in GPU", "multiProcessorCount": 132, "major": 9, "minor": 0,
                  "memoryBusWidth": 6144, "totalGlobalMem": 140 << 30, "maxThreadsDim": (1024, 1024, 64)}
    attributes = {13: 1980000, 36: 3201000, 82: 65536, 39: 2048, 81: 233472}  # CUDA 13 dropped the clock fields
    runtime = types.SimpleNamespace(getDeviceProperties=lambda device: properties,
                                    deviceGetAttribute=lambda attr, device: attributes[attr],
                                    runtimeGetVersion=lambda: 13000, driverGetVersion=lambda: 13000,
                                    getDeviceCount=lambda: 1)
    pool = types.SimpleNamespace(free_all_blocks=lambda: None)
    cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(id=0, synchronize=lambda: None), Event=event,
                                 get_elapsed_time=lambda a, b: float(b.t - a.t), runtime=runtime)
    cupy = types.SimpleNamespace(
        __version__="13.stand-in", cuda=cuda, uint8=np.uint8, uint32=np.uint32,
        empty=lambda n, dtype: wrap(np.empty(n, dtype)), empty_like=lambda a: wrap(np.empty_like(a.host)),
        arange=lambda n: wrap(np.arange(n)), asarray=lambda host: wrap(np.array(host)),
        copyto=lambda dst, src: np.copyto(dst.host, src.host),
        get_default_memory_pool=lambda: pool, get_default_pinned_memory_pool=lambda: pool)
    cupyx = types.SimpleNamespace(empty_pinned=lambda n, dtype: np.empty(n, dtype))
    return cupy, cupyx


def test_the_gpu_side_runs_against_a_stand_in_of_cupy(monkeypatch):
    """No GPU here: CupyApi's own code (clocks, the sync probe, the device summary with CUDA 13's
    missing fields, the copy ceilings, attributes) against a stand-in of the CuPy calls it makes."""
    from benchmarks.device_apis import CupyApi

    detector = types.SimpleNamespace(_declare_synchronize=lambda: None)
    cupy, cupyx = _cupy_stand_in(detector)
    kernel = types.SimpleNamespace(attributes={"num_regs": 40, "local_size_bytes": 0, "shared_size_bytes": 0})
    backend = types.SimpleNamespace(runtime=types.SimpleNamespace(function=lambda family, name: kernel))
    for name, module in (("cupy", cupy), ("cupyx", cupyx), ("cupy._core", types.SimpleNamespace()),
                         ("cupy._core.syncdetect", detector)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr("gpu_text.backend.get_backend", lambda name: backend)
    api = CupyApi()
    assert api.sync_counter == "CuPy's declared syncs (int() of a device array: 1)"
    with api.counting() as counted:
        int(cupy.arange(2).sum()), cupy.arange(2).get()
        assert counted()["syncs"] == 2
    a = api.mark()
    assert api.elapsed(a, api.mark()) == pytest.approx(1e-3)
    info = api.device_info()
    assert (info["name"], info["sms"], info["clock_mhz"], info["memory_clock_mhz"]) == ("Stand-in GPU", 132, 1980, 3201)
    assert info["theoretical_gb_per_s"] == pytest.approx(2 * 3201e6 * 6144 / 8 / 1e9)
    assert info["regs_per_sm"] == 65536 and info["compute_capability"] == "9.0"
    json.dumps(info)  # what the worker reports must be JSON
    copies = api.copies(1 << 20, 1 << 16)
    assert copies["ceiling_gb_per_s"] == pytest.approx((1 << 20) / 1e-3 / 1e9)
    assert {f"{way}_{memory}_gb_per_s" for way in ("h2d", "d2h") for memory in ("pinned", "pageable")} <= set(copies)
    assert api.kernel_attributes("utf8", "utf8_decode") == kernel.attributes
    table = device_kernels.kernel_table(api, lambda partial: None)
    assert table["kernels"][0]["occupancy"] == 0.75  # 40 registers: 6 blocks of 256 threads
