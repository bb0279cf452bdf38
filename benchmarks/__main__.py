"""``python -m benchmarks [NAME ...] [--repeat N] [--quick] [--out DIR]``: run and report benchmarks
(a ``NAME.md`` and ``NAME.json`` each); ``python -m benchmarks cold_start``: every command's first
run on an empty cache and its second run (:mod:`benchmarks.cold_start`); ``python -m benchmarks
bulk_cli``: ``gpu-text tokenize`` end to end against in-process encoding (:mod:`benchmarks.bulk_cli`);
``python -m benchmarks report [--quick] [--out DIR] [NAME ...]``: all of them, the size sweep and
the training curves in one ``REPORT.md`` with plots (:mod:`benchmarks.report`)."""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from benchmarks.harness import BENCHMARKS, Config, report


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        from benchmarks.report import main as report_main

        return report_main(argv[1:])
    if argv[:1] == ["cold_start"]:  # every command's first and second run, each in a fresh process
        from benchmarks.cold_start import main as cold_start_main

        return cold_start_main(argv[1:])
    if argv[:1] == ["bulk_cli"]:  # the CLI job end to end vs in-process encode, fresh processes
        from benchmarks.bulk_cli import main as bulk_cli_main

        return bulk_cli_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", default=BENCHMARKS, help=f"benchmarks to run (default: all of {BENCHMARKS})")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions; the median is reported")
    parser.add_argument("--quick", action="store_true", help="small inputs (a smoke run)")
    parser.add_argument("--out", type=Path, default=Path("bench-results"), help="folder for the .md and .json reports")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {BENCHMARKS}")
    config = Config(repeat=args.repeat, quick=args.quick, out_dir=args.out)
    missing = []
    for name in args.names:
        try:
            rows = importlib.import_module(f"benchmarks.{name}").run(config)
        except ImportError as exc:  # a peer is not installed (the GPU machine installs nothing)
            missing.append(f"{name}: skipped, {exc}")
            print(missing[-1], file=sys.stderr)
            continue
        print(report(rows, config.out_dir, name))
    return 0 if len(missing) < len(args.names) else 1


if __name__ == "__main__":
    sys.exit(main())
