"""Timing, hardware description and the markdown/JSON report shared by every benchmark."""
from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpu_text.timing import measure  # noqa: F401  (re-exported for the benchmark modules)

# every benchmark module, in the order they run (each has run(config) -> list[Measurement])
BENCHMARKS = ["utf8_decode", "segment", "tokenize", "bulk_io", "train_tokenizer", "unigram_encode", "bytepiece_train",
              "unigram_train", "crf",
              "word2vec", "lda", "training"]


def cpu_thread_counts() -> Iterator[int]:
    """1 and then every core, with Numba set to that many threads; all cores again afterwards."""
    import numba

    all_threads = numba.config.NUMBA_NUM_THREADS
    try:
        for threads in sorted({1, all_threads}):
            numba.set_num_threads(threads)
            yield threads
    finally:
        numba.set_num_threads(all_threads)


def measure_interleaved(fns: dict[str, Callable[[], Any]], repeat: int = 5) -> dict[str, list[float]]:
    """Seconds of ``repeat`` calls of each of ``fns``, taken in rounds (one call of each per round,
    after one untimed round): a slow spell of a shared machine then slows every contender, not
    whichever happened to be running.

    >>> times = measure_interleaved({"a": lambda: None, "b": lambda: None}, repeat=3)
    >>> sorted(times), len(times["a"])
    (['a', 'b'], 3)
    """
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def on_gpu(batch: Any) -> tuple[Any, Any, Callable[[], None]] | None:
    """(cuda backend, ``batch`` copied to the GPU, stream sync) when a GPU is usable, else None."""
    from gpu_text.backend import cuda_unavailable_reason, get_backend

    if cuda_unavailable_reason() is not None:
        return None
    import cupy

    return get_backend("cuda"), batch.to_device(cupy), cupy.cuda.get_current_stream().synchronize


@dataclass
class Config:
    repeat: int = 5
    quick: bool = False  # smaller inputs, for smoke runs
    out_dir: Path = Path("bench-results")


@dataclass
class Measurement:
    benchmark: str
    dataset: str
    implementation: str  # e.g. "gpu_text[cpu]", "CPython bytes.decode"
    threads: int | str
    seconds: list[float]
    input_bytes: int
    peer: str | None = None  # implementation this row is compared to
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def bytes_per_second(self) -> float:
        return self.input_bytes / self.median if self.median > 0 else float("inf")


def hardware() -> dict[str, Any]:
    """CPU model and cores, memory, and the GPU if one is usable."""
    info: dict[str, Any] = {"machine": platform.machine(), "cores": os.cpu_count(), "python": platform.python_version()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    from gpu_text.backend import cuda_unavailable_reason

    if cuda_unavailable_reason() is None:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        info["gpu"] = props["name"].decode()
    else:
        info["gpu"] = None
    return info


def training_curve(name: str, x_label: str, y_label: str, points: Any) -> dict[str, Any]:
    """A training curve for ``Measurement.extra["curves"]`` (a list of these), which the report
    (``python -m benchmarks report``) plots: ``points`` are ``(x, y)`` pairs, e.g. (iteration,
    objective); non-finite values are kept as ``None`` so the JSON stays valid.

    >>> training_curve("CRF l-bfgs", "iteration", "objective", [(1, 10.5), (2, float("nan"))])["points"]
    [[1.0, 10.5], [2.0, None]]
    """
    def number(value: Any) -> float | None:
        value = float(value)
        return value if math.isfinite(value) else None

    return {"name": name, "x_label": x_label, "y_label": y_label,
            "points": [[number(x), number(y)] for x, y in points]}


def ratio_to_peer(m: Measurement, rows: list[Measurement]) -> float | None:
    """Peer's median seconds / ``m``'s (above 1: ``m`` is faster), None without a peer row.

    >>> a = Measurement("b", "d", "ours", 1, [1.0], 10, peer="them")
    >>> ratio_to_peer(a, [a, Measurement("b", "d", "them", 1, [3.0], 10)])
    3.0
    """
    if not m.peer:
        return None
    peers = [r for r in rows if r.implementation == m.peer and r.dataset == m.dataset and r.benchmark == m.benchmark]
    return peers[0].median / m.median if peers and m.median > 0 else None


def row_record(m: Measurement, rows: list[Measurement]) -> dict[str, Any]:
    """``m`` as the JSON reports store it: its fields plus median, bytes/s and ratio to its peer.

    >>> row_record(Measurement("b", "d", "ours", 1, [2.0], 10), [])["bytes_per_s"]
    5.0
    """
    return {**asdict(m), "median_s": m.median, "bytes_per_s": m.bytes_per_second,
            "ratio_to_peer": ratio_to_peer(m, rows)}


def hardware_line(hw: dict[str, Any]) -> str:
    """One line naming the CPU, cores, memory and GPU of :func:`hardware`'s record.

    >>> hardware_line({"cpu": "X", "cores": 2, "memory_gib": 7.7, "gpu": None})
    'X (2 cores, 7.7 GiB), no GPU'
    """
    return (f"{hw.get('cpu', '?')} ({hw.get('cores', '?')} cores, {hw.get('memory_gib', '?')} GiB)"
            + (f", GPU {hw['gpu']}" if hw.get("gpu") else ", no GPU"))


def markdown_table(records: list[dict[str, Any]]) -> str:
    """The rows table of the reports, from :func:`row_record` records (so also from a JSON report).

    >>> print(markdown_table([row_record(Measurement("b", "d", "ours", 1, [0.5], 10**6), [])]))
    | dataset | implementation | threads | median s | MB/s | speed vs peer | notes |
    |---|---|---|---|---|---|---|
    | d | ours | 1 | 0.5000 | 2.0 |  |  |
    """
    lines = ["| dataset | implementation | threads | median s | MB/s | speed vs peer | notes |",
             "|---|---|---|---|---|---|---|"]
    for r in records:
        ratio = r.get("ratio_to_peer")
        ratio_text = f"{ratio:.2f}x {r['peer']}" if ratio is not None else ""
        speed = r.get("bytes_per_s")  # None in a JSON report where the median was 0 s
        speed_text = f"{speed / 1e6:,.1f}" if speed is not None else "inf"
        lines.append(f"| {r['dataset']} | {r['implementation']} | {r['threads']} | {r['median_s']:.4f} | "
                     f"{speed_text} | {ratio_text} | {r['notes']} |")
    return "\n".join(lines)


def report(rows: list[Measurement], out_dir: Path, name: str) -> str:
    """Write ``<name>.md`` and ``<name>.json`` under ``out_dir``; return the markdown."""
    hw = hardware()
    records = [row_record(m, rows) for m in rows]
    markdown = "\n".join([f"## {name}", "", f"Hardware: {hardware_line(hw)}", "", markdown_table(records)]) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.md").write_text(markdown)
    payload = {"benchmark": name, "hardware": hw, "rows": records}
    (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=2))
    return markdown


# Runs gpu-text in a child of its own and reports that child's rusage: a process started straight
# from the benchmark (fork or vfork) would start its peak RSS at the benchmark's, which may hold the
# input in memory.
_LAUNCHER = """
import json, os, sys, time
wall = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-m", "gpu_text.cli"] + sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(json.dumps({"status": os.waitstatus_to_exitcode(status), "wall_s": time.perf_counter() - wall,
                  "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}),
      file=sys.stderr)
"""


def run_cli(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """``gpu-text ARGV`` in a fresh interpreter, as a user runs it (start-up, imports, the Numba cache
    load, reading and writing included): its wall and CPU seconds, its own peak RSS in MiB and the
    lines it wrote on stderr (``RuntimeError`` naming the command when it fails).

    >>> run_cli(["info"])["peak_rss_mb"] > 0
    True
    """
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env={**os.environ, "GPU_TEXT_PROGRESS": "0", **(env or {})})
    lines = run.stderr.decode(errors="replace").strip().splitlines()
    measured = json.loads(lines[-1])
    if measured.pop("status") != 0:
        raise RuntimeError(f"gpu-text {' '.join(argv)} failed: " + "\n".join(lines[-20:-1]))
    return {**measured, "stderr": lines[:-1]}

