"""``python -m benchmarks.device_kernels [--out DIR] [--budget S] [--dry-run]``: the device check's
answers in one table: each case's achieved GB/s against a 4 GiB device-to-device copy (the
bandwidth ceiling), with its launches, host syncs, kernel time and glue time; and each kernel's
registers and local memory.

What is measured, on a GPU (CuPy):

- the device: name, SMs, clocks, memory bus (``runtime.getDeviceProperties``, or the device
  attributes where CUDA 13 dropped the fields), a 4 GiB ``cudaMemcpy`` device to device (the
  ceiling: bytes copied per second; the memory moves twice that), a uint32 copy kernel, and 256 MiB
  host-to-device and back, pinned and pageable;
- every kernel of every family (``extern "C" __global__`` names read from the sources, so renamed
  kernels appear): ``RawKernel.attributes`` (registers, local, shared bytes) and the occupancy
  those registers and that shared memory allow for 256-thread blocks;
- every case of :mod:`benchmarks.device_cases`: its inputs built and uploaded, one warm-up call,
  up to 5 timed calls (median; a device sync after each) and one instrumented call: each project
  kernel between two CUDA events (the launch hook of :func:`gpu_text.cuda_ops.set_launch_hook`;
  a kernel a wrapper calls itself, without ``launch``, through the runtime's kernels, which the
  cases' backend wraps: :class:`LaunchRecorder`) and the host's waits on the device counted
  (:func:`gpu_text.cuda_runtime.count_device_traffic`). Kernel time is the sum of the events'
  times; glue = median wall time - kernel time (CuPy's own array operations, copies, syncs and
  Python). Launches count the project's kernels only, not CuPy's array operations.

Each group of cases runs in its own worker process under a time budget per case and for the
whole run: a case that fails records its error, one that overruns is killed with its worker (the
next worker takes the group's remaining cases), and cases that would start after the budget are
recorded as skipped. ``DIR/device_kernels.json`` and ``DIR/device_kernels.md`` are rewritten
after every case, so a run stopped from outside still leaves what was measured.

``--dry-run`` runs the same code on this machine: the counting CPU emulator
(``tests/emulated_backend.py``) in place of CuPy, a few KB per case, host clocks in place of CUDA
events and the emulator's sync counts in place of CuPy's; kernel attributes are not available.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.corpora import REPO
from benchmarks.device_apis import CupyApi, EmulatedApi
from benchmarks.device_cases import CASES, GROUPS, Case, Context
from benchmarks.device_report import render, write_results
from gpu_text.cuda_ops import BLOCK, set_launch_hook
from gpu_text.kernel_sources import kernel_families, kernel_source_path

TASKS = ["device", "kernels"] + [case.name for case in CASES]  # what a worker is told to run, by index
DEVICE_BUDGET_S, KERNELS_BUDGET_S, SETUP_BUDGET_S = 30.0, 45.0, 60.0
GRACE_S = 5.0  # past a case's budget before its worker is killed (the worker keeps within the budget itself)
DRY_TASK_BUDGET_S = 240.0  # the emulator on a few KB: generous, never reached in practice
PREFIX = "@@device_kernels "


# ------------------------------------------------------------------------------ measuring

def kernel_name(kernel: Any) -> str:
    """The kernel's name: CuPy's and the emulator's kernels have ``name`` (the counting runtime's
    launcher wraps one as ``kernel``).

    >>> class K: name = "utf8_decode"
    >>> kernel_name(K()), kernel_name(type("L", (), {"kernel": K()})())
    ('utf8_decode', 'utf8_decode')
    """
    name = getattr(kernel, "name", None) or getattr(getattr(kernel, "kernel", None), "name", None)
    return str(name) if name else repr(kernel)


class LaunchRecorder:
    """Times every project kernel while :func:`instrument` runs: those :func:`gpu_text.cuda_ops.launch`
    launches through its hook, and those a launch wrapper calls itself (another block size) through
    the kernels of the runtime that :meth:`backend` wraps; the latter are counted as ``direct``."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.records: list[tuple[str, Any, Any, bool]] | None = None
        self._local = threading.local()

    def backend(self, backend: Any) -> Any:
        """``backend`` with its runtime's kernels wrapped (the cases run on this one)."""
        from gpu_text.backend import Backend

        return Backend(backend.name, backend.xp, _RecordedRuntime(backend.runtime, self))

    def launch_hook(self, kernel: Any, grid: tuple, block: tuple, args: tuple, shared_mem: int) -> None:
        self._local.inside = True
        try:
            self._run(kernel, grid, block, args, False, shared_mem=shared_mem)
        finally:
            self._local.inside = False

    def wrap(self, kernel: Any) -> Callable[..., None]:
        def call(grid: tuple, block: tuple, args: tuple, **kwargs: Any) -> None:
            if self.records is None or getattr(self._local, "inside", False):
                kernel(grid, block, args, **kwargs)
            else:
                self._run(kernel, grid, block, args, True, **kwargs)

        call.name, call.kernel = kernel_name(kernel), kernel  # type: ignore[attr-defined]
        return call

    def _run(self, kernel: Any, grid: tuple, block: tuple, args: tuple, direct: bool, **kwargs: Any) -> None:
        start = self.api.mark()
        kernel(grid, block, args, **kwargs)
        if self.records is not None:
            self.records.append((kernel_name(kernel), start, self.api.mark(), direct))


class _RecordedRuntime:
    """A kernel runtime whose kernels go through a :class:`LaunchRecorder`; the rest is the runtime's."""

    def __init__(self, runtime: Any, recorder: LaunchRecorder) -> None:
        self._runtime, self._recorder, self.xp = runtime, recorder, runtime.xp

    def function(self, family: str, name: str) -> Callable[..., None]:
        return self._recorder.wrap(self._runtime.function(family, name))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)


def _kernel_totals(timeline: list[tuple[str, float, bool]]) -> dict[str, Any]:
    """Launches, kernel seconds and the per-kernel split of ``(name, seconds, direct)`` launches."""
    kernels: dict[str, dict[str, Any]] = {}
    for name, seconds, direct in timeline:
        entry = kernels.setdefault(name, {"launches": 0, "seconds": 0.0})
        entry["launches"] += 1
        entry["seconds"] += seconds
        if direct:
            entry["direct"] = True
    return {"launches": len(timeline), "direct_launches": sum(direct for _, _, direct in timeline),
            "kernel_s": sum(k["seconds"] for k in kernels.values()), "kernels": kernels}


@contextlib.contextmanager
def instrument(api: Any, recorder: LaunchRecorder) -> Iterator[dict[str, Any]]:
    """While the block runs, every project kernel runs between two marks of ``api``'s clock and the
    host's waits are counted; at exit (after a device sync) the yielded dict holds ``launches``
    (``direct_launches`` of them not through ``launch``), ``syncs``, ``kernel_s`` and ``kernels``
    (per name: launches and seconds). The block may call ``seen["mark"]()``: the same figures
    between its first and last mark are then under ``seen["window"]``."""
    seen: dict[str, Any] = {}
    marks: list[tuple[int, dict[str, Any]]] = []
    recorder.records = records = []
    previous = set_launch_hook(recorder.launch_hook)
    try:
        with api.counting() as counted:
            seen["mark"] = lambda: marks.append((len(records), counted()))
            yield seen
            traffic = counted()
    finally:
        set_launch_hook(previous)
        recorder.records = None
        seen.pop("mark", None)
    api.synchronize()
    timeline = [(name, api.elapsed(start, end), direct) for name, start, end, direct in records]
    seen.update(traffic, **_kernel_totals(timeline))
    if len(marks) >= 2:
        (first, before), (last, after) = marks[0], marks[-1]
        counts = {k: None if v is None or before.get(k) is None else v - before[k] for k, v in after.items()}
        seen["window"] = {**counts, **_kernel_totals(timeline[first:last])}


def measure_case(ctx: Context, api: Any, recorder: LaunchRecorder, case: Case, budget_s: float) -> dict[str, Any]:
    """One case: inputs, a warm-up call, timed calls while half the budget lasts (at most 5), then
    one instrumented call if the budget still allows it."""
    started = time.perf_counter()
    prepared = case.prepare(ctx, case.dry if ctx.dry_run else case.full)
    api.synchronize()
    record: dict[str, Any] = {"status": "ok", "bytes": prepared.nbytes, "notes": prepared.notes,
                              "setup_s": time.perf_counter() - started}
    if prepared.measure is not None:
        result = prepared.measure(api, lambda: instrument(api, recorder))
        n = max(1, result["iterations"])
        window = result["per_iteration"]
        record.update({k: v for k, v in result.items() if k not in ("per_iteration", "iterations")})
        record.update(runs=result["runs"], seconds=statistics.median(result["runs"]), notes=result["notes"],
                      launches=window.get("launches", 0) / n, kernel_s=window.get("kernel_s", 0.0) / n,
                      syncs=None if window.get("syncs") is None else window["syncs"] / n,
                      kernels={k: {"launches": v["launches"] / n, "seconds": v["seconds"] / n}
                               for k, v in window.get("kernels", {}).items()},
                      **{k: v / n for k, v in window.items()
                         if k in ("direct_launches", "counted_launches", "array_ops", "uploads")})
        return record
    start = time.perf_counter()
    prepared.run()
    api.synchronize()
    warm = time.perf_counter() - start
    left = budget_s - (time.perf_counter() - started)
    runs: list[float] = []
    for _ in range(int(min(5, 0.5 * left / max(warm, 1e-9)))):
        start = time.perf_counter()
        prepared.run()
        api.synchronize()
        runs.append(time.perf_counter() - start)
    if not runs:
        runs, record["notes"] = [warm], record["notes"] + "; one call: the warm-up's time"
    record.update(runs=runs, seconds=statistics.median(runs), warmup_s=warm)
    if budget_s - (time.perf_counter() - started) > 2 * warm:
        start = time.perf_counter()
        with instrument(api, recorder) as seen:
            prepared.run()
        record.update(seen, instrumented_s=time.perf_counter() - start)
    else:
        record.update(launches=None, syncs=None, kernel_s=None,
                      notes=record["notes"] + "; not instrumented (no time left in its budget)")
    return record


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?'
                     r'(\w+)\s*\(')
_MACRO = re.compile(r"#define\s+(\w+)\((\w+)\)((?:[^\n]*\\\n)*[^\n]*)")


def kernel_names(source: str) -> list[str]:
    """The ``extern "C" __global__`` kernels of a ``.cu`` source, those a one-parameter macro
    stamps out (``name##PARAM``) included, in the order they appear.

    >>> kernel_names('extern "C" __global__ void __launch_bounds__(256)\\nk1(int a) {}\\n'
    ...              '#define K(Y) extern "C" __global__ void k_y##Y(int a) {}\\nK(2)\\nK(4)\\n'
    ...              '// extern "C" __global__ void old(')
    ['k1', 'k_y2', 'k_y4']
    """
    source = _COMMENTS.sub("", source)
    names = _KERNEL.findall(source)
    for macro, param, body in _MACRO.findall(source):
        stem = re.search(rf"__global__.*?(\w+)##{param}\s*\(", body, re.S)
        if stem:
            names += [stem.group(1) + arg for arg in re.findall(rf"^\s*{macro}\(\s*(\w+)\s*\)", source, re.M)]
    return list(dict.fromkeys(names))


def occupancy(num_regs: int | None, shared_bytes: int = 0, block: int = BLOCK, regs_per_sm: int = 65536,
              threads_per_sm: int = 2048, shared_per_sm: int = 233472, max_blocks: int = 32) -> float | None:
    """Resident threads / the SM's maximum for ``block``-thread blocks of a kernel with ``num_regs``
    registers a thread and ``shared_bytes`` static shared memory (sm_90's limits by default:
    registers allocated per warp in 256s, 1 KiB of shared memory reserved per block).

    >>> occupancy(122), occupancy(64), occupancy(32), occupancy(32, 64 << 10)
    (0.25, 0.5, 1.0, 0.375)
    """
    if not num_regs:
        return None
    warps = block // 32
    per_warp = -(-num_regs * 32 // 256) * 256
    blocks = min(regs_per_sm // (per_warp * warps), threads_per_sm // block, max_blocks)
    if shared_bytes:
        blocks = min(blocks, shared_per_sm // (shared_bytes + 1024))
    return blocks * block / threads_per_sm


def kernel_table(api: Any, emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Every kernel of every family with its attributes; ``emit`` gets the table so far after each family."""
    info = api.device_info() if not api.dry_run else {}
    limits = {k: info[k] for k in ("regs_per_sm", "threads_per_sm", "shared_per_sm") if info.get(k)}
    rows: list[dict[str, Any]] = []
    table = {"status": "ok", "kernels": rows}
    for family in kernel_families():
        for name in kernel_names(kernel_source_path(family).read_text()):
            row: dict[str, Any] = {"family": family, "kernel": name}
            try:
                row.update(api.kernel_attributes(family, name))
                row["occupancy"] = occupancy(row.get("num_regs"), row.get("shared_size_bytes", 0), **limits)
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            rows.append(row)
        emit(table)
    return table


# ------------------------------------------------------------------------------ the worker

def _emit(event: str, **fields: Any) -> None:
    print(PREFIX + json.dumps({"event": event, **fields}, default=str), flush=True)


def _fatal(error: BaseException) -> bool:
    """A CUDA error that leaves the context unusable (the next cases need a fresh process)."""
    text = f"{type(error).__name__} {error}"
    return "CUDARuntimeError" in text or "CUDADriverError" in text or "cudaErrorIllegal" in text


def worker(group: str, tasks: list[int], dry_run: bool) -> int:
    """Run ``tasks`` (indices into :data:`TASKS`) of ``group``, reporting on stdout."""
    try:
        api = EmulatedApi() if dry_run else CupyApi()
        recorder = LaunchRecorder(api)
        ctx = Context(recorder.backend(api.backend), dry_run)
        setup = dict(GROUPS).get(group)
        if setup is not None:
            setup(ctx)
        api.synchronize()
    except Exception as exc:
        _emit("setup_failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-3000:])
        return 2
    _emit("ready")
    by_name = {case.name: case for case in CASES}
    for task in tasks:
        name = TASKS[task]
        _emit("start", task=task)
        try:
            if name == "device":
                record = {"status": "ok", **api.device_info(), "copies": api.copies()}
            elif name == "kernels":
                record = kernel_table(api, lambda table: _emit("partial", task=task, record=table))
            else:
                case = by_name[name]
                record = measure_case(ctx, api, recorder, case, DRY_TASK_BUDGET_S if dry_run else case.budget_s)
        except Exception as exc:
            record = {"status": "failed", "error": f"{type(exc).__name__}: {str(exc)[:1000]}",
                      "traceback": traceback.format_exc()[-3000:]}
            if _fatal(exc):
                _emit("result", task=task, record=record)
                return 3
        _emit("result", task=task, record=record)
        gc.collect()  # the case's arrays went with its frame: their memory goes back before the next case
        api.free_memory()
    return 0


# ------------------------------------------------------------------------------ the driver

def task_budget(name: str, dry_run: bool) -> float:
    """Seconds a task may take before its worker is killed."""
    if dry_run:
        return DRY_TASK_BUDGET_S
    if name == "device":
        return DEVICE_BUDGET_S
    if name == "kernels":
        return KERNELS_BUDGET_S
    return next(c.budget_s for c in CASES if c.name == name) + GRACE_S


def _reader(stream: Any, lines: queue.Queue) -> None:
    for line in stream:
        if line.startswith(PREFIX):
            try:
                lines.put(json.loads(line[len(PREFIX):]))
            except json.JSONDecodeError:
                pass
        else:
            sys.stdout.write(line)
    lines.put(None)


def run_group(command: list[str], tasks: list[int], deadline: float, results: dict[str, Any],
              save: Callable[[], None], dry_run: bool, log: Path, setup_budget: float = SETUP_BUDGET_S) -> list[int]:
    """Run one worker (``command`` + the task indices) and record its results in ``results`` under
    the task's name; kill it when a task, or its setup, overruns. Returns the tasks it did not get to."""
    with open(log, "a") as err:
        offset = err.tell()
        process = subprocess.Popen(command + [",".join(map(str, tasks))], cwd=REPO, stdout=subprocess.PIPE,
                                   stderr=err, text=True, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(process.stdout, lines), daemon=True).start()
    pending, current, ready, finished, started = list(tasks), None, False, 0, time.monotonic()
    limit = min(deadline, started + setup_budget)
    try:
        while True:
            try:
                event = lines.get(timeout=max(0.0, min(limit - time.monotonic(), 86400.0)))
            except queue.Empty:
                _kill(process)
                seconds = time.monotonic() - started
                if current is None:  # in the group's setup, or between two cases when the run's budget ran out
                    error = ("the run's time budget was spent" if ready
                             else f"its worker's setup took over {seconds:.0f} s")
                    for task in pending:
                        results[TASKS[task]] = {"status": "skipped" if ready else "failed", "error": error}
                    return []
                what = TASKS[current]
                results[what] = {**_partial(results.get(what)), "status": "timed out",
                                 "error": f"killed after {seconds:.0f} s "
                                          f"(its budget: {task_budget(what, dry_run):.0f} s"
                                          f"{', the run budget ran out' if limit >= deadline else ''})"}
                pending.remove(current)
                return pending
            if event is None:  # the worker exited
                code = process.wait()
                if current is not None:
                    results[TASKS[current]] = {"status": "crashed", "error": f"worker exited with {code}: "
                                               + _tail(log, offset)}
                    pending.remove(current)
                elif pending and not finished:  # it got nowhere: another worker would not either
                    for task in pending:
                        results[TASKS[task]] = {"status": "failed", "error": f"worker exited with {code}: "
                                                + _tail(log, offset)}
                    return []
                return pending
            kind = event.get("event")
            if kind == "setup_failed":
                for task in pending:
                    results[TASKS[task]] = {"status": "failed", "error": f"group setup: {event.get('error')}",
                                            "traceback": event.get("traceback")}
                save()
                _kill(process)
                return []
            if kind == "ready":
                ready, limit = True, deadline
            elif kind == "start":
                current, started = event["task"], time.monotonic()
                limit = min(deadline, started + task_budget(TASKS[current], dry_run))
            elif kind in ("partial", "result"):
                results[TASKS[event["task"]]] = event["record"] if kind == "result" else {
                    **event["record"], "status": "partial"}
                if kind == "result":
                    pending.remove(event["task"])
                    finished += 1
                    current, limit = None, deadline
                save()
    finally:
        if process.poll() is None:
            _kill(process)


def _partial(record: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (record or {}).items() if k != "status"}


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _tail(log: Path, offset: int) -> str:
    try:
        with open(log) as err:
            err.seek(offset)
            return err.read()[-1500:].strip() or "(no output)"
    except OSError:
        return "(no log)"


def _commit() -> str | None:
    """The checkout's commit, else ``$GPU_TEXT_COMMIT`` (a copied tree has no ``.git``)."""
    try:
        done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if done.returncode == 0:
            return done.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("GPU_TEXT_COMMIT") or None


def run(out_dir: Path, budget: float, dry_run: bool) -> dict[str, Any]:
    """Every group, a worker each (another for what a killed or crashed worker left), within ``budget`` seconds."""
    out_dir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    deadline = began + budget
    log = out_dir / "device_kernels.log"
    log.write_text("")
    results: dict[str, Any] = {}
    meta = {"generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "dry_run": dry_run, "budget_s": budget, "commit": _commit()}

    def save() -> None:
        write_results(out_dir, {**meta, "seconds": round(time.monotonic() - began, 1)}, results, TASKS)

    groups = [("device", [0, 1])] + [(g, [i for i, name in enumerate(TASKS) if i > 1 and CASES[i - 2].group == g])
                                     for g, _ in GROUPS]
    for group, tasks in groups:
        while tasks:
            if deadline - time.monotonic() < (1.0 if dry_run else 5.0):
                for task in tasks:
                    results[TASKS[task]] = {"status": "skipped", "error": "the run's time budget was spent"}
                break
            command = [sys.executable, "-m", "benchmarks.device_kernels", "--worker", group] + \
                (["--dry-run"] if dry_run else []) + ["--tasks"]
            tasks = run_group(command, tasks, deadline, results, save, dry_run, log,
                              DRY_TASK_BUDGET_S if dry_run else SETUP_BUDGET_S)
            save()
    save()
    return json.loads((out_dir / "device_kernels.json").read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.device_kernels", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("device-check-out"), help="folder for the table")
    parser.add_argument("--budget", type=float, default=None, help="seconds for the whole run (170; dry run 600)")
    parser.add_argument("--dry-run", action="store_true", help="the CPU emulator and a few KB per case")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, [int(t) for t in args.tasks.split(",") if t], args.dry_run)
    budget = args.budget if args.budget is not None else (600.0 if args.dry_run else 170.0)
    report = run(args.out, budget, args.dry_run)
    print(render(report))
    return 0  # a case that failed is a finding, recorded in the table, not a failure of the check


if __name__ == "__main__":
    sys.exit(main())
