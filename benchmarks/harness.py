"""Timing, hardware description and the markdown/JSON report shared by every benchmark."""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpu_text.timing import measure  # noqa: F401  (re-exported for the benchmark modules)


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


def _ratio(m: Measurement, rows: list[Measurement]) -> float | None:
    if not m.peer:
        return None
    peers = [r for r in rows if r.implementation == m.peer and r.dataset == m.dataset and r.benchmark == m.benchmark]
    return peers[0].median / m.median if peers and m.median > 0 else None


def report(rows: list[Measurement], out_dir: Path, name: str) -> str:
    """Write ``<name>.md`` and ``<name>.json`` under ``out_dir``; return the markdown."""
    hw = hardware()
    lines = [f"## {name}", "",
             f"Hardware: {hw.get('cpu', '?')} ({hw['cores']} cores, {hw.get('memory_gib', '?')} GiB)"
             + (f", GPU {hw['gpu']}" if hw.get("gpu") else ", no GPU"), "",
             "| dataset | implementation | threads | median s | MB/s | speed vs peer | notes |",
             "|---|---|---|---|---|---|---|"]
    for m in rows:
        ratio = _ratio(m, rows)
        ratio_text = f"{ratio:.2f}x {m.peer}" if ratio is not None else ""
        lines.append(f"| {m.dataset} | {m.implementation} | {m.threads} | {m.median:.4f} | "
                     f"{m.bytes_per_second / 1e6:,.1f} | {ratio_text} | {m.notes} |")
    markdown = "\n".join(lines) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.md").write_text(markdown)
    payload = {"benchmark": name, "hardware": hw, "rows": [
        {**asdict(m), "median_s": m.median, "bytes_per_s": m.bytes_per_second, "ratio_to_peer": _ratio(m, rows)}
        for m in rows]}
    (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=2))
    return markdown
