"""``python -m benchmarks bulk_cli [--input FILE] [--model MODEL] [--size-mb N] [--rounds N]
[--no-workers | --no-single] [--out DIR]``:
the bulk job as users run it against the encoder it is built on, on the CPU backend, in
interleaved rounds. Each round times in-process ``Tokenizer.encode`` over the input's 16 MB chunks
already in memory (ids brought to numpy), then ``gpu-text tokenize`` in a fresh process, start-up,
reading and writing included, into Parquet and Megatron, and the same job as 8 shards with
``--workers 2`` (``--output-dir``; ``--no-workers`` leaves those out, ``--no-single`` the
others): wall seconds, MB/s of input,
CPU seconds and the peak RSS of each process (``wait4``; with workers, the largest of the job's processes). A CLI run's ratio is to
the in-process run of its own round, so that a machine whose speed drifts (a shared or throttled
host) moves both sides of a ratio alike; the summary gives each run's median ratio and range over
the rounds. The input defaults to the shared corpora (zh and en lines) repeated to ``--size-mb``;
the model to a 16k BPE trained by sentencepiece on a part of them. Each figure comes with the
load average when it was taken. Writes ``bulk_cli.md`` and ``bulk_cli.json`` under ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SHARDS = 8


def build_input(folder: Path, size_mb: int) -> Path:
    """The zh and en corpora's lines, alternating blocks, repeated to ``size_mb`` MiB."""
    from benchmarks.corpora import load_lines

    block = b"".join(line + b"\n" for name in ("zh", "en") for line in load_lines(name, 64 << 20)[0])
    path = folder / "input.txt"
    target = size_mb << 20
    with open(path, "wb") as out:
        written = 0
        while written < target:
            piece = block[:target - written]
            out.write(piece)
            written += len(piece)
    return path


def split_shards(path: Path, folder: Path) -> Path:
    """``path`` cut at line ends into :data:`SHARDS` files of about equal size."""
    data = path.read_bytes()
    shards = folder / "shards"
    shards.mkdir()
    start = 0
    for k in range(SHARDS):
        end = len(data) if k == SHARDS - 1 else data.index(b"\n", (k + 1) * len(data) // SHARDS) + 1
        (shards / f"part-{k:02d}.txt").write_bytes(data[start:end])
        start = end
    return shards


def head_lines(path: Path, folder: Path, size: int = 16 << 20) -> Path:
    """The whole lines of ``path``'s first ``size`` bytes, as a file in ``folder`` (the warm-up
    run's input when there are no shards)."""
    with open(path, "rb") as source:
        data = source.read(size)
    head = folder / "head.txt"
    head.write_bytes(data[:data.rfind(b"\n") + 1] or data)
    return head


def train_model(folder: Path) -> str:
    import sentencepiece as spm

    from benchmarks.corpora import load_lines

    corpus = folder / "train.txt"
    corpus.write_bytes(b"\n".join(load_lines("zh", 24 << 20)[0] + load_lines("en", 8 << 20)[0]))
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(folder / "sp16k"), model_type="bpe",
                                   vocab_size=16000, byte_fallback=True, character_coverage=0.9995, num_threads=2,
                                   minloglevel=2, input_sentence_size=300_000, shuffle_input_sentence=False)
    return str(folder / "sp16k.model")


def encoded_batches(model: str, path: Path) -> tuple[Any, list[Any]]:
    """The tokenizer and the input's batches in memory, the encoder run once (Numba's cache loaded)."""
    from gpu_text.documents import iter_documents
    from gpu_text.tokenizer.bulk import load_tokenizer

    tokenizer = load_tokenizer(model)
    batches = [documents.batch for documents in iter_documents(str(path))]
    tokenizer.encode(batches[0], backend="cpu")
    return tokenizer, batches


def in_process(tokenizer: Any, batches: list[Any]) -> dict[str, float]:
    """One timed pass of ``Tokenizer.encode`` over ``batches``, ids brought to numpy."""
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        tokenizer.encode(batch, backend="cpu").ids.to_numpy()
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, "load": load}


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per run: the median, lowest and highest ratio to in-process over the rounds, the median
    MB/s and the largest peak RSS.

    >>> rows = [{"run": "a", "vs_in_process": r, "mb_per_s": 10.0 * r, "peak_rss_mb": 5} for r in (0.8, 0.9, 0.7)]
    >>> summarize(rows)[0]["median_ratio"], summarize(rows)[0]["lowest_ratio"]
    (0.8, 0.7)
    """
    import statistics

    names = list(dict.fromkeys(row["run"] for row in rows))
    summary = []
    for name in names:
        runs = [row for row in rows if row["run"] == name]
        ratios = [row["vs_in_process"] for row in runs]
        summary.append({"run": name, "rounds": len(runs), "median_ratio": statistics.median(ratios),
                        "lowest_ratio": min(ratios), "highest_ratio": max(ratios),
                        "median_mb_per_s": statistics.median(row["mb_per_s"] for row in runs),
                        "peak_rss_mb": max((row.get("peak_rss_mb") or 0) for row in runs) or None})
    return summary


def cli_run(argv: list[str]) -> dict[str, float]:
    """One ``gpu-text`` run in a fresh process (:func:`benchmarks.harness.run_cli`): wall, CPU and
    peak RSS (with workers, the largest of the job's processes), with the load before it."""
    from benchmarks.harness import run_cli

    load = os.getloadavg()[0]
    result = run_cli(argv)
    summary = json.loads(result.pop("stderr")[-1])
    workers = [w.get("peak_rss_mb") or 0 for w in summary.get("workers", [])]
    return {**result, "peak_rss_mb": max([result["peak_rss_mb"], *workers]), "load": load}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks bulk_cli", description=__doc__)
    parser.add_argument("--input", type=Path, default=None, help="a text file (default: the corpora repeated)")
    parser.add_argument("--model", default=None, help="a tokenizer model (default: a 16k sentencepiece BPE)")
    parser.add_argument("--size-mb", type=int, default=1024, help="size of the generated input (MiB)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (in-process, then every CLI run)")
    parser.add_argument("--no-workers", action="store_true", help="only the single-process CLI runs")
    parser.add_argument("--no-single", action="store_true", help="only the --workers 2 runs")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.no_workers and args.no_single:
        parser.error("--no-workers and --no-single leave no CLI run to time")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gpu-text-bulk-") as scratch:
        folder = Path(scratch)
        path = args.input or build_input(folder, args.size_mb)
        shards = None if args.no_workers else split_shards(path, folder)
        model = args.model or train_model(folder)
        size = path.stat().st_size
        warm = shards / "part-00.txt" if shards else head_lines(path, folder)
        subprocess.run([sys.executable, "-m", "gpu_text.cli", "tokenize", "--model", model, str(warm),
                        str(folder / "warm.parquet")], check=True, capture_output=True)  # caches filled beforehand
        tokenizer, batches = encoded_batches(model, path)
        for round_number in range(1, args.rounds + 1):
            measured = [{"run": "in-process Tokenizer.encode", **in_process(tokenizer, batches)}]
            for fmt in () if args.no_single else ("parquet", "megatron"):
                out = folder / f"out-{fmt}"
                measured.append({"run": f"CLI {fmt}", **cli_run(["tokenize", "--model", model, str(path), str(out),
                                                                 "--output-format", fmt])})
                for name in os.listdir(folder):
                    if name.startswith(f"out-{fmt}"):
                        os.unlink(folder / name)
            for fmt in () if args.no_workers else ("parquet", "megatron"):
                out_dir = folder / f"dir-{fmt}"
                measured.append({"run": f"CLI --workers 2 {fmt} ({SHARDS} shards)",
                                 **cli_run(["tokenize", "--model", model, str(shards), "--output-dir", str(out_dir),
                                            "--workers", "2", "--output-format", fmt])})
                shutil.rmtree(out_dir)
            base = measured[0]["wall_s"]
            for row in measured:
                row.update(round=round_number, mb_per_s=size / 1e6 / row["wall_s"], vs_in_process=base / row["wall_s"])
            rows += measured
    summary = summarize(rows)
    lines = [f"# Bulk job vs in-process encode ({size / 2**20:.0f} MiB, CPU backend, {os.cpu_count()} CPUs, "
             f"{platform.processor() or platform.machine()}, {args.rounds} interleaved rounds)", "",
             "| run | vs in-process, median (range) | MB/s, median | peak RSS MiB |", "|---|---|---|---|"]
    for row in summary:
        lines.append(f"| {row['run']} | {row['median_ratio']:.2f} ({row['lowest_ratio']:.2f}-{row['highest_ratio']:.2f}) "
                     f"| {row['median_mb_per_s']:.1f} | {row['peak_rss_mb'] or float('nan'):.0f} |")
    lines += ["", "| round | run | wall s | MB/s | vs in-process (same round) | CPU s | peak RSS MiB | load |",
              "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['round']} | {row['run']} | {row['wall_s']:.2f} | {row['mb_per_s']:.1f} | "
                     f"{row['vs_in_process']:.2f} | {row['cpu_s']:.2f} | {row.get('peak_rss_mb', float('nan')):.0f} | "
                     f"{row['load']:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bulk_cli.md").write_text(text)
    (args.out / "bulk_cli.json").write_text(json.dumps({"bytes": size, "summary": summary, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
