"""The device check's kernel table (:mod:`benchmarks.device_kernels`) as JSON and markdown.

The workers' raw records (per task name) go in; out come ``device_kernels.json`` (the record:
the device, the ceiling, one row per case, every kernel's attributes, and the markdown) and
``device_kernels.md``. GB/s and the share of the copy ceiling are computed here, from each case's
bytes and median seconds, so every row is set against the same ceiling.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.device_cases import CASES

COLUMNS = ("case", "bytes", "seconds", "GB/s", "% of copy", "launches", "syncs", "kernel s", "glue s", "top kernels",
           "status / notes")


def table_rows(results: dict[str, Any], ceiling: float | None) -> list[dict[str, Any]]:
    """One row per case of :data:`benchmarks.device_cases.CASES`, in their order; a case without a
    record is ``not run``.

    >>> rows = table_rows({CASES[0].name: {"status": "ok", "bytes": 2e9, "seconds": 0.5, "kernel_s": 0.4,
    ...                                    "kernels": {"k": {"launches": 1, "seconds": 0.4}}}}, 8.0)
    >>> rows[0]["gb_per_s"], rows[0]["percent_of_ceiling"], round(rows[0]["glue_s"], 3), rows[1]["status"]
    (4.0, 50.0, 0.1, 'not run')
    """
    rows = []
    for case in CASES:
        record = results.get(case.name) or {"status": "not run"}
        seconds, nbytes, kernel_s = record.get("seconds"), record.get("bytes"), record.get("kernel_s")
        gbps = nbytes / seconds / 1e9 if seconds and nbytes else None
        kernels = sorted((record.get("kernels") or {}).items(), key=lambda kv: -kv[1]["seconds"])
        rows.append({"case": case.name, "group": case.group, "status": record.get("status"), "bytes": nbytes,
                     "seconds": seconds, "runs": record.get("runs"), "gb_per_s": gbps,
                     "percent_of_ceiling": 100 * gbps / ceiling if gbps and ceiling else None,
                     "launches": record.get("launches"), "syncs": record.get("syncs"), "kernel_s": kernel_s,
                     "glue_s": seconds - kernel_s if seconds is not None and kernel_s is not None else None,
                     "top_kernels": [{"kernel": k, **v} for k, v in kernels[:3]],
                     "notes": record.get("notes", ""), "error": record.get("error"),
                     **{k: record[k] for k in ("direct_launches", "counted_launches", "array_ops", "uploads",
                                               "staged_uploads") if k in record}})
    return rows


def _number(value: Any, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.{digits}g}" if abs(value) < 1 else f"{value:,.{max(0, digits - 2)}f}"
    return f"{int(value):,}"


def _seconds(value: float | None) -> str:
    return "" if value is None else (f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.2f} s")


def markdown(meta: dict[str, Any], device: dict[str, Any], rows: list[dict[str, Any]],
             kernels: dict[str, Any]) -> str:
    """The report: the device and its ceilings, the cases' table, the kernels' table."""
    copies = device.get("copies") or {}
    ceiling = copies.get("ceiling_gb_per_s")
    dry = " (dry run: CPU emulator, a few KB per case; the names give the GPU's sizes)" if meta.get("dry_run") else ""
    lines = [f"# Device check: kernels against the copy ceiling{dry}",
             "", f"{meta.get('generated')}, commit {meta.get('commit') or '?'}, {meta.get('seconds')} s "
                 f"of a {meta.get('budget_s')} s budget.", ""]
    if device.get("status") == "ok":
        facts = [f"{device.get('sms')} SMs" if device.get("sms") else "",
                 f"compute {device['compute_capability']}" if device.get("compute_capability") else "",
                 f"clock {device['clock_mhz']:g} MHz" if device.get("clock_mhz") else "",
                 f"memory {device['memory_clock_mhz']:g} MHz x {device['memory_bus_bits']} bits"
                 + (f" = {device['theoretical_gb_per_s']:,.0f} GB/s theoretical" if device.get("theoretical_gb_per_s")
                    else "") if device.get("memory_clock_mhz") and device.get("memory_bus_bits") else "",
                 f"{device['total_memory_gib']} GiB" if device.get("total_memory_gib") else "",
                 f"CuPy {device['cupy']}, CUDA runtime {device.get('runtime')}, driver {device.get('driver')}"
                 if device.get("cupy") else "", f"syncs counted by {device.get('sync_counter')}"]
        lines.append(f"Device: {device.get('name')}: " + ", ".join(f for f in facts if f) + ".")
        if ceiling:
            size = copies["copy_bytes"]
            lines.append(f"Ceiling: a {size / 2**30:g} GiB" if size >= 2**30 else f"Ceiling: a {size / 2**20:g} MiB")
            lines[-1] += (f" device-to-device copy moves {ceiling:,.0f} GB/s of data (reads + writes: twice that)"
                          + (f"; a uint32 copy kernel {copies['copy_kernel_gb_per_s']:,.0f} GB/s"
                             if copies.get("copy_kernel_gb_per_s") else "")
                          + "".join(f"; {k[:-len('_gb_per_s')].replace('_', ' ')} {v:,.1f} GB/s"
                                    for k, v in copies.items() if k.startswith(("h2d", "d2h")))
                          + (f" ({copies['note']})" if copies.get("note") else "") + ".")
    else:
        lines.append(f"Device: {device.get('status', 'not run')}: {device.get('error', '')}")
    lines += ["", "GB/s = the case's input bytes / its median seconds; % of copy = that over the ceiling. "
              "Launches: the project's kernels (CuPy's array operations are not counted); syncs: the host's waits "
              "on the device; kernel s: the project kernels' CUDA-event time in one instrumented call; glue s = "
              "seconds - kernel s. A kernel marked * was launched without gpu_text.cuda_ops.launch (its wrapper "
              "calls it itself).", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        top = ", ".join(f"{k['kernel']}{'*' if k.get('direct') else ''} {_seconds(k['seconds'])} "
                        f"x{_number(k['launches'])}" for k in r["top_kernels"])
        status = r["status"] if r["status"] == "ok" else f"**{r['status']}**: {r.get('error') or ''}"
        notes = "; ".join(part for part in (status if r["status"] != "ok" else "", r.get("notes") or "") if part)
        lines.append(f"| {r['case']} | {_number(r['bytes'])} | {_seconds(r['seconds'])} | {_number(r['gb_per_s'])} | "
                     f"{_number(r['percent_of_ceiling'], 2)} | {_number(r['launches'])} | {_number(r['syncs'])} | "
                     f"{_seconds(r['kernel_s'])} | {_seconds(r['glue_s'])} | {top} | {notes or 'ok'} |")
    lines += ["", "## Kernels: registers, local memory, occupancy at 256-thread blocks", ""]
    if kernels.get("status") not in ("ok", "partial", "timed out"):
        lines.append(f"{kernels.get('status', 'not run')}: {kernels.get('error', '')}")
    else:
        if kernels.get("status") != "ok":
            lines.append(f"**{kernels['status']}**: {kernels.get('error', '')}")
        lines += ["| family | kernel | registers | local bytes | static shared bytes | max threads/block | occupancy |",
                  "|---|---|---|---|---|---|---|"]
        for k in kernels.get("kernels", []):
            occupancy = f"{k['occupancy']:.0%}" if k.get("occupancy") is not None else ""
            lines.append(f"| {k['family']} | {k['kernel']} | {_number(k.get('num_regs'))} | "
                         f"{_number(k.get('local_size_bytes'))} | {_number(k.get('shared_size_bytes'))} | "
                         f"{_number(k.get('max_threads_per_block'))} | {occupancy or k.get('error', '')} |")
    return "\n".join(lines) + "\n"


def write_results(out_dir: Path, meta: dict[str, Any], results: dict[str, Any], tasks: list[str]) -> dict[str, Any]:
    """Write ``device_kernels.json`` and ``.md`` under ``out_dir`` from the raw records; returns the JSON."""
    device = results.get("device") or {"status": "not run"}
    kernels = results.get("kernels") or {"status": "not run"}
    ceiling = (device.get("copies") or {}).get("ceiling_gb_per_s")
    rows = table_rows(results, ceiling)
    report = {**meta, "device": device, "ceiling_gb_per_s": ceiling, "table": rows, "kernels": kernels,
              "cases": {name: results.get(name) for name in tasks[2:]}}
    report["markdown"] = markdown(meta, device, rows, kernels)
    (out_dir / "device_kernels.json").write_text(json.dumps(report, indent=1, default=str))
    (out_dir / "device_kernels.md").write_text(report["markdown"])
    return report


def render(report: dict[str, Any]) -> str:
    """The markdown of a written report."""
    return report.get("markdown", "")
