"""``python -m benchmarks report [--quick] [--out DIR] [--repeat N] [--budget S] [NAMES...]``: run the
benchmarks and write one report: ``DIR/REPORT.md``, ``DIR/report.json`` and PNG plots.

What it holds: the machine (CPU model, cores, memory, GPU and backend as ``gpu-text info`` sees
them), the date and the git commit; every benchmark's rows (throughput per backend against each
peer, a bar chart per benchmark, :mod:`benchmarks.plots`); the throughput of ``gpu-text tokenize``
and ``gpu-text segment`` against input size (``scaling``: 1 MB to 1 GB, 1 to 16 MB with
``--quick``), run in this process and through the CLI in a fresh process, to show where start-up
stops mattering; and the training curves the benchmarks return in ``Measurement.extra["curves"]``
(:func:`benchmarks.harness.training_curve`).

The JSON is the record; the markdown and the plots are drawn from it, so ``--render DIR`` redraws
them from ``DIR/report.json`` (a report written where matplotlib is missing, as on the GPU machine).
The JSON and markdown are rewritten after every benchmark, so a run stopped by a timeout leaves what
it measured. ``--budget S``: no benchmark starts after S seconds, and the size sweep stops before a
size it estimates would end past them.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import plots
from benchmarks.corpora import CORPORA, REPO, SAMPLES, SHARED
from benchmarks.harness import BENCHMARKS, Config, hardware, hardware_line, markdown_table, row_record, run_cli

SCALING = "scaling"
PARTS = BENCHMARKS + [SCALING]
MB = 1_000_000  # the report's MB, as in MB/s
SIZES_MB = [1, 4, 16, 64, 256, 1024]
QUICK_SIZES_MB = [1, 4, 16]
REPEATED_UP_TO_MB = 16  # sizes up to this run min(repeat, 3) times, interleaved; larger ones (and --quick) once
MODEL = REPO / "gpu_text" / "data" / "models" / "sample-bpe-4k.txt"  # bundled: runs on every machine


# ------------------------------------------------------------------------------ the machine

def git_commit(repo: Path = REPO) -> dict[str, Any]:
    """The checkout's commit and whether tracked files differ from it (read only); the commit is
    ``$GPU_TEXT_COMMIT`` where there is no git checkout (a copied tree).

    >>> sorted(git_commit())
    ['commit', 'dirty']
    """
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": os.environ.get("GPU_TEXT_COMMIT") or None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def machine() -> dict[str, Any]:
    """CPU, cores, memory and GPU (:func:`benchmarks.harness.hardware`), and what gpu_text sees:
    its version, backend, device, Numba threads (``gpu-text info``).

    >>> sorted(machine())
    ['environment', 'hardware']
    """
    try:
        from gpu_text.cli import environment_info

        environment = environment_info()
    except Exception as exc:  # the report still names the hardware
        environment = {"error": f"{type(exc).__name__}: {exc}"}
    return {"hardware": hardware(), "environment": environment}


# ------------------------------------------------------------------------------ the benchmarks

def run_benchmark(name: str, config: Config) -> dict[str, Any]:
    """One benchmark's entry of the report: its rows as records, its curves, seconds and status
    (``ok``; ``skipped`` when a peer or its data is missing, an ``ImportError``; ``failed``).

    >>> run_benchmark("nonexistent", Config())["status"]
    'skipped'
    """
    started = time.perf_counter()
    entry: dict[str, Any] = {"name": name, "status": "ok", "reason": None, "rows": [], "curves": []}
    try:
        rows = importlib.import_module(f"benchmarks.{name}").run(config)
    except ImportError as exc:  # a peer is not installed (the GPU machine installs nothing)
        entry.update(status="skipped", reason=str(exc))
    except Exception as exc:  # the report is still written, with the failure in it
        traceback.print_exc()
        entry.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
    else:
        entry["rows"] = [row_record(m, rows) for m in rows]
        entry["curves"] = [{"benchmark": name, "dataset": m.dataset, "implementation": m.implementation, **curve}
                           for m in rows for curve in m.extra.get("curves", [])]
    entry["seconds"] = time.perf_counter() - started
    return entry


# ------------------------------------------------------------------------ throughput vs size

def corpus_files(name: str = "zh") -> tuple[list[Path], str]:
    """The files of corpus ``name`` (:data:`benchmarks.corpora.CORPORA`) and where they came from.

    >>> files, source = corpus_files("en")
    >>> len(files) > 0 and all(p.is_file() for p in files)
    True
    """
    folders, sample = CORPORA[name]
    files = [p for folder in folders if (SHARED / folder).is_dir() for p in sorted((SHARED / folder).rglob("*"))
             if p.is_file() and not p.name.startswith(("SOURCE", "README"))]
    if files:
        return files, f"shared/data/{'+'.join(folders)}"
    return [SAMPLES / sample], f"bundled sample {sample}"


def write_repeated(path: Path, target_bytes: int, sources: Sequence[Path]) -> int:
    """Write whole lines of ``sources`` to ``path``, over and over, until at least ``target_bytes``;
    streamed: one source file is held at a time, never the output. Returns the bytes written.

    >>> import tempfile; from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp()); (folder / "a.txt").write_bytes(b"ab\\ncd")
    5
    >>> write_repeated(folder / "big.txt", 10, [folder / "a.txt"]), (folder / "big.txt").read_bytes()
    (12, b'ab\\ncd\\nab\\ncd\\n')
    """
    written = 0
    with open(path, "wb") as sink:
        while written < target_bytes:
            before = written
            for source in sources:
                data = source.read_bytes()
                if not data.strip():
                    continue
                if not data.endswith(b"\n"):
                    data += b"\n"
                if written + len(data) > target_bytes:  # cut at a line end past the target
                    cut = data.find(b"\n", target_bytes - written - 1)
                    data = data[:cut + 1]
                sink.write(data)
                written += len(data)
                if written >= target_bytes:
                    break
            if written == before:
                raise ValueError(f"the sources {list(map(str, sources))} hold no text")
    return written


def segment_dictionary() -> tuple[Path | None, str]:
    """jieba's ``dict.txt`` when jieba is installed, else no dictionary (the pre-split alone)."""
    try:
        import jieba
    except ImportError:
        return None, "no dictionary (jieba not installed here): pre-split runs only"
    return Path(jieba.__file__).parent / "dict.txt", "jieba's dict.txt, --compat jieba"


def command_lines(backend: str, dictionary: Path | None, source: Path, folder: Path) -> dict[str, list[str]]:
    """The ``gpu-text`` arguments of each operation on ``source``, writing under ``folder``."""
    segment = ["segment", "--backend", backend, str(source), str(folder / "segmented.txt")]
    if dictionary is not None:
        segment[1:1] = ["--dict", str(dictionary), "--compat", "jieba"]
    return {"tokenize": ["tokenize", "--model", str(MODEL), "--backend", backend, "--no-stats", str(source),
                         str(folder / "ids.parquet")],
            "segment": segment}


def encoders(backend: str, dictionary: Path | None) -> dict[str, Callable[[Any], Any]]:
    """Each operation as a function of one batch, its model or dictionary loaded once, its result
    brought to the host as the CLI needs it (the in-process side of the sweep).

    >>> from gpu_text import TextBatch
    >>> encoders("cpu", None)["tokenize"](TextBatch.from_strings(["In the beginning"])).tolist()
    [1514, 1478, 263, 612, 270, 1478, 318]
    """
    from gpu_text.arrays import to_host
    from gpu_text.backend import get_backend
    from gpu_text.segment import Segmenter, load_dictionary
    from gpu_text.tokenizer.bulk import load_tokenizer

    be = get_backend(backend)
    tokenizer = load_tokenizer(MODEL)
    segmenter = Segmenter(load_dictionary(dictionary) if dictionary else None, compat="jieba")
    return {"tokenize": lambda batch: to_host(tokenizer.encode(batch, be).ids.values),
            "segment": lambda batch: to_host(segmenter.segment(batch, be).starts.values)}


def in_process(encode: Callable[[Any], Any], source: Path) -> float:
    """Seconds to read ``source`` in the CLI's chunks and ``encode`` every batch in this (warm)
    process: the library's streaming throughput, no start-up and no output written."""
    from gpu_text.documents import read_documents

    start = time.perf_counter()
    for batch in read_documents([source]):
        encode(batch)
    return time.perf_counter() - start


def fresh_process(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of ``gpu-text ARGV`` in a new interpreter
    (:func:`benchmarks.harness.run_cli`): start-up, imports and the Numba cache load included, as a
    user runs it."""
    result = run_cli(argv, {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    return result["wall_s"], result["peak_rss_mb"]


def _point(op: str, mode: str, size: int, seconds: list[float], rss: list[float] | None = None) -> dict[str, Any]:
    median = statistics.median(seconds)
    point = {"op": op, "mode": mode, "bytes": size, "seconds": seconds, "median_s": median,
             "mb_per_s": size / MB / median if median > 0 else None}
    if rss:
        point["peak_rss_mb"] = max(rss)
    return point


def scaling(config: Config, deadline: float = math.inf, sizes_mb: Sequence[float] | None = None,
            ops: Sequence[str] = ("tokenize", "segment")) -> dict[str, Any]:
    """Throughput of each of ``ops`` against input size, in this process (:func:`in_process`: warm
    kernels, the model and dictionary loaded beforehand) and through the CLI in a fresh process
    (:func:`fresh_process`: start-up, loading, reading, encoding and writing).
    The inputs are the zh corpus repeated into a temporary folder; each size's in-process and CLI
    runs alternate, so a busy spell of a shared machine slows both. The sweep stops before a size
    whose estimated time (the last one's, scaled by size) would end past ``deadline``
    (``time.perf_counter()`` seconds).
    """
    from gpu_text.backend import get_backend

    sizes = list(sizes_mb or (QUICK_SIZES_MB if config.quick else SIZES_MB))
    backend = get_backend("auto").name
    dictionary, dictionary_text = segment_dictionary()
    sources, source_text = corpus_files("zh")
    result: dict[str, Any] = {"backend": backend, "corpus": f"{source_text}, repeated", "model": MODEL.name,
                              "dictionary": dictionary_text, "points": [], "warmup": {}, "stopped": None,
                              "errors": []}
    ops = list(ops)
    with tempfile.TemporaryDirectory(prefix="gpu-text-scaling-") as tmp:
        folder = Path(tmp)
        warm = folder / "warmup.txt"
        write_repeated(warm, 200_000, sources)
        encode = encoders(backend, dictionary)
        for op, argv in command_lines(backend, dictionary, warm, folder).items():
            if op in ops:  # compile / load kernels here, fill the Numba and segmenter caches for the CLI
                try:
                    in_process(encode[op], warm)
                    result["warmup"][op] = {"first_cli_s": fresh_process(argv)[0]}
                except Exception as exc:  # one command failing leaves the other's sweep
                    result["errors"].append(f"{op}: {type(exc).__name__}: {exc}")
                    ops.remove(op)
        last: tuple[float, float] | None = None  # (MB, seconds per repetition) of the previous size
        for size_mb in sizes:
            repeat = min(config.repeat, 3) if size_mb <= REPEATED_UP_TO_MB and not config.quick else 1
            # start-up scaled with the rest: an overestimate, so the sweep ends early rather than late
            if last is not None and time.perf_counter() + last[1] * repeat * size_mb / last[0] > deadline:
                result["stopped"] = f"before {size_mb} MB: the budget would be exceeded"
                break
            started = time.perf_counter()
            source = folder / f"input-{size_mb}MB.txt"
            size = write_repeated(source, int(size_mb * MB), sources)
            for op, argv in command_lines(backend, dictionary, source, folder).items():
                if op not in ops:
                    continue
                inside, cli, rss = [], [], []
                try:
                    for _ in range(repeat):
                        inside.append(in_process(encode[op], source))
                        seconds, peak = fresh_process(argv)
                        cli.append(seconds)
                        rss.append(peak)
                except Exception as exc:
                    result["errors"].append(f"{op} at {size_mb} MB: {type(exc).__name__}: {exc}")
                    ops.remove(op)
                    continue
                result["points"] += [_point(op, "in-process", size, inside), _point(op, "cli", size, cli, rss)]
                print(f"scaling: {op} {size / MB:.1f} MB: in-process {size / MB / statistics.median(inside):.2f} "
                      f"MB/s, CLI {size / MB / statistics.median(cli):.2f} MB/s", file=sys.stderr, flush=True)
            for path in folder.iterdir():  # outputs and input of this size: the disk holds one size at a time
                if path != warm:
                    path.unlink() if path.is_file() else shutil.rmtree(path)
            last = (size_mb, (time.perf_counter() - started) / repeat)
    return result


def run_scaling(config: Config, deadline: float = math.inf) -> dict[str, Any]:
    """The report's entry for the size sweep, with status and seconds like :func:`run_benchmark`."""
    started = time.perf_counter()
    entry: dict[str, Any] = {"name": SCALING, "status": "ok", "reason": None, "rows": [], "curves": []}
    try:
        entry["scaling"] = scaling(config, deadline)
        if entry["scaling"]["errors"]:  # the points measured stay in the report beside the failure
            entry.update(status="failed", reason="; ".join(entry["scaling"]["errors"]))
    except Exception as exc:
        traceback.print_exc()
        entry.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
    entry["seconds"] = time.perf_counter() - started
    return entry


# ------------------------------------------------------------------------------ the documents

def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None (JSON has neither).

    >>> _finite({"a": [1.0, float("inf")], "b": float("nan")})
    {'a': [1.0, None], 'b': None}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _number(value: Any, digits: int = 2) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def scaling_table(entry: dict[str, Any]) -> list[str]:
    """Markdown lines of the size sweep: a row per (operation, size)."""
    sweep = entry.get("scaling") or {}
    lines = [f"Backend {sweep.get('backend')}; input: {sweep.get('corpus')}; tokenize: bundled model "
             f"{sweep.get('model')}; segment: {sweep.get('dictionary')}. The first CLI run of each command "
             f"in the sweep (it fills the Numba and segmenter caches where empty; not in the table): "
             + ", ".join(f"{op} {w['first_cli_s']:.1f} s" for op, w in sweep.get("warmup", {}).items()) + ".",
             "In-process: the file read in the CLI's chunks and encoded in this process, model and dictionary "
             "loaded beforehand, nothing written; CLI: `gpu-text tokenize|segment` in a fresh process (start-up, "
             "loading, reading, encoding, writing). Runs alternate in-process / CLI.", "",
             "| operation | size MB | runs | in-process MB/s | CLI MB/s | CLI / in-process | CLI s | "
             "CLI peak RSS MB |", "|---|---|---|---|---|---|---|---|"]
    points = {(p["op"], p["bytes"], p["mode"]): p for p in sweep.get("points", [])}
    for op, size in dict.fromkeys((p["op"], p["bytes"]) for p in sweep.get("points", [])):
        inside, cli = points.get((op, size, "in-process"), {}), points.get((op, size, "cli"), {})
        share = (cli["mb_per_s"] / inside["mb_per_s"]) if cli.get("mb_per_s") and inside.get("mb_per_s") else None
        lines.append(f"| {op} | {size / MB:,.1f} | {len(cli.get('seconds', []))} | {_number(inside.get('mb_per_s'))} | "
                     f"{_number(cli.get('mb_per_s'))} | {_number(share)} | {_number(cli.get('median_s'))} | "
                     f"{_number(cli.get('peak_rss_mb'), 0)} |")
    if sweep.get("stopped"):
        lines += ["", f"Stopped {sweep['stopped']}."]
    lines += [f"\nFailed: {error}" for error in sweep.get("errors", [])]
    return lines


def curves_table(curves: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown lines: a row per curve (first and last value)."""
    lines = ["| benchmark | curve | dataset | x | y | points | first | last |", "|---|---|---|---|---|---|---|---|"]
    for c in curves:
        ys = [y for _, y in c["points"] if y is not None]
        lines.append(f"| {c['benchmark']} | {c['name']} | {c.get('dataset', '')} | {c['x_label']} | {c['y_label']} | "
                     f"{len(c['points'])} | {f'{ys[0]:.6g}' if ys else ''} | {f'{ys[-1]:.6g}' if ys else ''} |")
    return lines


def markdown(payload: dict[str, Any]) -> str:
    """REPORT.md from the report's JSON payload (and the plots it lists)."""
    hw, env, git = payload["hardware"], payload.get("environment", {}), payload.get("git", {})
    commit = (git.get("commit") or "unknown")[:12] + (" (with uncommitted changes)" if git.get("dirty") else "")
    device = env.get("device") or {}
    plotted = set(payload.get("plots", []))
    config = payload["config"]
    gpu = (f", {device.get('name')} ({device.get('memory_total_gib')} GiB, compute {device.get('compute_capability')})"
           if device else f" (no GPU: {env.get('cuda_unavailable_reason')})")
    lines = ["# gpu_text benchmark report", "",
             f"- Date: {payload['generated_utc']}; commit {commit}; `{payload['command']}`"
             f" ({'quick sizes' if config['quick'] else 'full sizes'}, repeat {config['repeat']})",
             f"- Hardware: {hardware_line(hw)}; Python {hw.get('python')}",
             f"- gpu_text {env.get('gpu_text', '?')}: backend {env.get('backend', '?')}"
             + gpu
             + f"; Numba {env.get('numba', '?')}, {env.get('numba_threads', '?')} threads "
               f"({env.get('numba_threading_layer', '?')}); CuPy {env.get('cupy', '?')}",
             "- Timings are wall-clock medians; on a shared machine they are noisy. Where a benchmark interleaves "
             "its contenders (one call of each per round), its notes say so.", ""]
    if payload.get("plots_missing"):
        lines += [f"Plots: none here, {payload['plots_missing']}; draw them from the JSON with "
                  "`python -m benchmarks report --render DIR`.", ""]
    lines += ["| part | status | seconds | rows | curves |", "|---|---|---|---|---|"]
    for entry in payload["benchmarks"]:
        status = entry["status"] + (f": {entry['reason']}" if entry.get("reason") else "")
        rows = len(entry["rows"]) or len((entry.get("scaling") or {}).get("points", []))  # the sweep's: its points
        lines.append(f"| {entry['name']} | {status} | {entry['seconds']:.1f} | {rows} | {len(entry['curves'])} |")
    lines += ["", "## Throughput per implementation and peer", ""]
    for entry in payload["benchmarks"]:
        if not entry["rows"]:
            continue
        lines += [f"### {entry['name']}", "", f"Unit of the MB/s column: {plots.unit_of(entry['name'])}.", ""]
        image = f"throughput_{entry['name']}.png"
        lines += [f"![{entry['name']} throughput]({image})", ""] if image in plotted else []
        lines += [markdown_table(entry["rows"]), ""]
    sweeps = [e for e in payload["benchmarks"] if e.get("scaling")]
    if sweeps:
        lines += ["## Throughput against input size", ""]
        lines += ["![throughput against input size](scaling.png)", ""] if "scaling.png" in plotted else []
        lines += scaling_table(sweeps[-1]) + [""]
    curves = [c for e in payload["benchmarks"] for c in e["curves"]]
    lines += ["## Training curves", ""]
    if curves:
        lines += ["![training curves](curves.png)", ""] if "curves.png" in plotted else []
        lines += curves_table(curves) + [""]
    else:
        lines += ["No benchmark run here returned a curve (`Measurement.extra[\"curves\"]`).", ""]
    return "\n".join(lines)


def draw(payload: dict[str, Any], out_dir: Path) -> tuple[list[str], str | None]:
    """Every plot of ``payload`` under ``out_dir``: (file names written, why none when matplotlib is missing)."""
    missing = plots.available()
    if missing is not None:
        return [], missing
    written = []
    for entry in payload["benchmarks"]:
        if entry["rows"] and plots.throughput_plot(entry["name"], entry["rows"],
                                                   out_dir / f"throughput_{entry['name']}.png"):
            written.append(f"throughput_{entry['name']}.png")
        if entry.get("scaling") and plots.scaling_plot(entry["scaling"]["points"], out_dir / "scaling.png"):
            written.append("scaling.png")
    curves = [c for e in payload["benchmarks"] for c in e["curves"]]
    if plots.curves_plot(curves, out_dir / "curves.png"):
        written.append("curves.png")
    return written, None


def write_report(payload: dict[str, Any], out_dir: Path, with_plots: bool = True) -> Path:
    """``REPORT.md``, ``report.json`` and (``with_plots``) the PNG plots under ``out_dir``; returns
    the markdown's path.

    >>> import tempfile; from pathlib import Path
    >>> payload = {"generated_utc": "2026-01-01 00:00 UTC", "command": "python -m benchmarks report",
    ...            "config": {"quick": True, "repeat": 1}, "hardware": {"cpu": "X", "cores": 2}, "benchmarks": []}
    >>> write_report(payload, Path(tempfile.mkdtemp()), with_plots=False).read_text().splitlines()[0]
    '# gpu_text benchmark report'
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = _finite(payload)
    if with_plots:
        payload["plots"], payload["plots_missing"] = draw(payload, out_dir)
    (out_dir / "report.json").write_text(json.dumps(payload, indent=1, allow_nan=False))
    (out_dir / "REPORT.md").write_text(markdown(payload))
    return out_dir / "REPORT.md"


def run_report(names: Sequence[str], config: Config, command: str, budget: float | None = None) -> dict[str, Any]:
    """Run ``names`` (benchmarks and ``scaling``) in order, rewriting the report under
    ``config.out_dir`` after each; the last write draws the plots. Returns the payload."""
    started = time.perf_counter()
    deadline = started + budget if budget is not None else math.inf
    payload: dict[str, Any] = {
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command, "config": {"quick": config.quick, "repeat": config.repeat, "budget_s": budget},
        "git": git_commit(), **machine(), "benchmarks": []}
    for name in names:
        if time.perf_counter() > deadline:
            payload["benchmarks"].append({"name": name, "status": "skipped", "reason": f"over the {budget:g} s budget",
                                          "rows": [], "curves": [], "seconds": 0.0})
            continue
        print(f"report: {name} ...", file=sys.stderr, flush=True)
        entry = run_scaling(config, deadline) if name == SCALING else run_benchmark(name, config)
        payload["benchmarks"].append(entry)
        print(f"report: {name} {entry['status']} in {entry['seconds']:.1f} s", file=sys.stderr, flush=True)
        write_report(payload, config.out_dir, with_plots=False)  # a timeout still leaves what was measured
    payload["seconds"] = time.perf_counter() - started
    write_report(payload, config.out_dir)
    return payload


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks report ...``: exit 0 when every part ran or was skipped for a missing
    peer, 1 when one failed or none ran, 2 on bad arguments.

    >>> main(["--render", "/nonexistent-folder"])
    report: no /nonexistent-folder/report.json to render
    2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=PARTS, help=f"parts to run (default: all of {PARTS})")
    parser.add_argument("--quick", action="store_true", help="small inputs (a smoke run; sizes 1-16 MB)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions; the median is reported")
    parser.add_argument("--out", type=Path, default=Path("bench-report"), help="folder of REPORT.md, report.json, PNGs")
    parser.add_argument("--budget", type=float, default=None, help="seconds after which no part starts")
    parser.add_argument("--render", action="store_true", help="redraw REPORT.md and the plots from OUT/report.json")
    args = parser.parse_args(argv)
    if args.render:
        folder = Path(args.names[0]) if args.names and args.names != PARTS else args.out
        source = folder / "report.json"
        if not source.is_file():
            print(f"report: no {source} to render")
            return 2
        print(write_report(json.loads(source.read_text()), folder))
        return 0
    unknown = [n for n in args.names if n not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {unknown}; choose from {PARTS}")
    if args.repeat < 1 or (args.budget is not None and args.budget <= 0):
        parser.error("--repeat and --budget must be positive")
    config = Config(repeat=args.repeat, quick=args.quick, out_dir=args.out)
    payload = run_report(args.names, config, "python -m benchmarks report " + " ".join(argv), args.budget)
    print(f"report: {config.out_dir / 'REPORT.md'}", file=sys.stderr)
    statuses = [e["status"] for e in payload["benchmarks"]]
    return 0 if "ok" in statuses and "failed" not in statuses else 1
