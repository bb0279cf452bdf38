"""``python -m benchmarks cold_start [CASE ...] [--repeat N] [--no-ahead] [--out DIR]``: every
command's first run after install (an empty Numba cache, an empty segmenter cache) and its second
run (the same caches, now warm), each in a fresh process on the CPU backend, on the warm-up's tiny
inputs (:data:`gpu_text.warmup.WARMUPS`), so that what is measured is start-up and compiling.

Each run's wall seconds and CPU seconds (the process and its children: the compile-ahead child of
:mod:`cpu_fallback.compile_ahead` included) are reported, and what it would take on two idle cores
(:func:`idle_seconds`, reckoned from CPU seconds: the figure to compare on a shared machine), the
median of ``--repeat`` (a fresh cache
each time for the cold runs; in brackets the CPU seconds of the command's own process, without the
child), with the load average before the runs: on a shared machine the wall
time is only as good as the load. ``--no-ahead`` sets ``GPU_TEXT_COMPILE_AHEAD=0`` (everything
compiled in the one process: the figures before compile-ahead). The table counts the compile
notices: one on a cold run, none on a warm one.
Writes ``cold_start.md`` and
``cold_start.json`` under ``--out`` (``bench-results``).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# (name, gpu-text arguments): every command's first warm-up run, and the other tokenizer methods;
# {name} are the warm-up's input files (gpu_text.warmup._inputs) and the models made by _models.
BYTEPIECE_TRAIN = ["train-tokenizer", "--method", "bytepiece", "{english}", "{mixed}", "-o", "{out}.bp",
                   "--vocab-size", "400"]


def cases() -> list[tuple[str, list[str]]]:
    from gpu_text.warmup import WARMUPS

    found = [(" ".join(runs[0][:2]) if name in ("crf", "word2vec", "lda") else name, runs[0])  # crf train, ...
             for name, runs in WARMUPS.items()]
    at = [name for name, _ in found].index("train-tokenizer") + 1
    found[at:at] = [("train-tokenizer --method unigram", WARMUPS["train-tokenizer"][1]),
                    ("train-tokenizer --method bytepiece", BYTEPIECE_TRAIN)]
    at = [name for name, _ in found].index("tokenize") + 1
    found[at:at] = [("tokenize (Unigram model)", ["tokenize", "--model", "{unigram}", "{mixed}", "{out}.u.parquet"]),
                    ("tokenize (BytePiece model)",
                     ["tokenize", "--model", "{bytepiece}", "{mixed}", "{out}.b.parquet"])]
    return found


def _environment(cache: Path, ahead: bool) -> dict[str, str]:
    # a $GPU_TEXT_TABLE_CACHE of the caller's would serve the model's tables built by an earlier
    # run: the cold runs would skip the table builders' compiling that a first run does
    env = {k: v for k, v in os.environ.items()
           if k not in ("GPU_TEXT_COMPILE_NOTICE", "GPU_TEXT_COMPILE_AHEAD", "GPU_TEXT_TABLE_CACHE")}
    env.update(NUMBA_CACHE_DIR=str(cache / "numba"), XDG_CACHE_HOME=str(cache / "xdg"), GPU_TEXT_BACKEND="cpu",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    if not ahead:
        env["GPU_TEXT_COMPILE_AHEAD"] = "0"
    return env


def run_once(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One ``gpu-text argv`` in a fresh process: wall and CPU seconds (with its children), whether
    it printed the compile notice."""
    from gpu_text.warmup import NOTICE

    load = os.getloadavg()[0]
    with tempfile.NamedTemporaryFile("r", suffix=".json") as usage:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _RUN, usage.name, *argv], env=env, capture_output=True,
                              text=True, timeout=900)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"gpu-text {' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
        own = json.load(usage)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "cpu_main": own["cpu"], "idle": idle_seconds(own["cpu"], own["waits"]),
            "notices": done.stderr.count(NOTICE), "load": load}


def idle_seconds(main_cpu: float, waits: list[list[Any]]) -> float:
    """What a run takes on two idle cores, reckoned from CPU seconds (which a busy machine inflates
    far less than wall seconds): the main process's CPU seconds plus its waits for the compile-ahead
    child, had the child run on the other core from its start (``cpu_fallback.compile_ahead.WAITS``).

    >>> idle_seconds(6.0, [["k", 4.0, 5.5], ["j", 4.5, 5.8]])  # waits 1.5 s for k, j is ready by then
    7.5
    """
    shift = 0.0
    for _, at, ready in waits:
        shift += max(0.0, ready - (at + shift))
    return main_cpu + shift


# gpu-text in a process that also writes its own CPU seconds (without its children) to argv[1]
_RUN = """import json, resource, sys
from gpu_text.cli import main
out = sys.argv.pop(1)
code = main(sys.argv[1:])
me = resource.getrusage(resource.RUSAGE_SELF)
ahead = sys.modules.get("cpu_fallback.compile_ahead")
json.dump({"cpu": me.ru_utime + me.ru_stime, "waits": ahead.WAITS if ahead else []}, open(out, "w"))
sys.exit(code)
"""


def _models(paths: dict[str, str], folder: Path) -> None:
    """The Unigram and BytePiece models the tokenize cases read (trained here, with their own cache)."""
    env = _environment(folder / "setup", ahead=True)
    from gpu_text.warmup import WARMUPS

    for argv in (WARMUPS["train-tokenizer"][1], BYTEPIECE_TRAIN):
        run_once([arg.format(**paths) for arg in argv], env)
    paths["unigram"], paths["bytepiece"] = paths["out"] + ".unigram", paths["out"] + ".bp"


def measure(names: list[str] | None = None, repeat: int = 1, ahead: bool = True,
            progress: Any = None) -> list[dict[str, Any]]:
    from gpu_text.warmup import _inputs

    rows = []
    with tempfile.TemporaryDirectory(prefix="gpu-text-cold-") as tmp:
        folder = Path(tmp)
        paths = _inputs(folder)
        chosen = [(name, argv) for name, argv in cases() if not names or name in names or argv[0] in names]
        if any("{unigram}" in argv or "{bytepiece}" in argv for _, argv in chosen):
            _models(paths, folder)
        for name, argv in chosen:
            argv = [arg.format(**paths) for arg in argv]
            cold, warm = [], []
            for i in range(repeat):
                cache = folder / f"cache-{i}"
                env = _environment(cache, ahead)
                cold.append(run_once(argv, env))
                warm.append(run_once(argv, env))
                shutil.rmtree(cache, ignore_errors=True)
            row = {"command": name, "argv": argv, "ahead": ahead, "repeat": repeat,
                   **{f"{kind}_{key}": statistics.median(r[key] for r in runs)
                      for kind, runs in (("cold", cold), ("warm", warm))
                      for key in ("wall", "cpu", "cpu_main", "idle", "load")},
                   "cold_notices": max(r["notices"] for r in cold), "warm_notices": max(r["notices"] for r in warm),
                   "runs": {"cold": cold, "warm": warm}}
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table of :func:`measure`'s rows: seconds on two idle cores (reckoned), wall and CPU
    seconds (in brackets the command's own process), the 1-minute load average, the compile notices
    of the cold and the warm run.

    >>> print(markdown([{"command": "x", "cold_wall": 1, "cold_cpu": 2, "cold_cpu_main": 1.5, "cold_idle": 1.6,
    ...                  "cold_load": 0.5, "warm_wall": 0.5, "warm_cpu": 0.4, "warm_idle": 0.4, "warm_load": 0.5,
    ...                  "cold_notices": 1, "warm_notices": 0}]))
    | command | cold s, 2 idle cores | wall s | CPU s (main) | warm s, 2 idle cores | wall s | CPU s | load | notices |
    |---|---|---|---|---|---|---|---|---|
    | x | 1.6 | 1.0 | 2.0 (1.5) | 0.4 | 0.5 | 0.4 | 0.5 | 1 / 0 |
    """
    lines = ["| command | cold s, 2 idle cores | wall s | CPU s (main) | warm s, 2 idle cores | wall s | CPU s | load "
             "| notices |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['command']} | {r['cold_idle']:.1f} | {r['cold_wall']:.1f} | {r['cold_cpu']:.1f} "
                     f"({r['cold_cpu_main']:.1f}) | {r['warm_idle']:.1f} | {r['warm_wall']:.1f} | "
                     f"{r['warm_cpu']:.1f} | {max(r['cold_load'], r['warm_load']):.1f} | "
                     f"{r['cold_notices']} / {r['warm_notices']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks cold_start", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="cases (a command name or a case's full name; default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (median reported)")
    parser.add_argument("--no-ahead", action="store_true", help="GPU_TEXT_COMPILE_AHEAD=0: compile in one process")
    parser.add_argument("--out", type=Path, default=Path("bench-results"), help="folder for the .md and .json reports")
    args = parser.parse_args(argv)
    from benchmarks.harness import hardware, hardware_line

    def progress(row: dict[str, Any]) -> None:
        print(markdown([row]).splitlines()[-1], file=sys.stderr, flush=True)

    rows = measure(args.names, args.repeat, not args.no_ahead, progress)
    hw = hardware()
    text = "\n".join(["## cold_start" + (" (GPU_TEXT_COMPILE_AHEAD=0)" if args.no_ahead else ""), "",
                      f"Hardware: {hardware_line(hw)}", "", markdown(rows)]) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "cold_start" + ("_no_ahead" if args.no_ahead else "")
    (args.out / f"{stem}.md").write_text(text)
    (args.out / f"{stem}.json").write_text(json.dumps({"hardware": hw, "rows": rows}, indent=2))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
