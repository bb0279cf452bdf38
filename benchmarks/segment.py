"""Dictionary segmentation throughput: gpu_text (Numba, CUDA) vs jieba (HMM=False), same
dictionary (jieba's dict.txt), same text, same run. gpu_text runs compat="jieba", so both produce
the same words on Han text (tests/test_jieba_parity.py).

Two measurements:

- in process: ``Segmenter.segment`` on a batch already in memory vs ``jieba.cut`` on its lines;
- end to end, the way a user runs both: ``gpu-text segment`` on a file (50 MB; 2 MB with
  ``--quick``, Sogou news repeated) in a fresh process each time (interpreter start-up, imports,
  dictionary, trie, reading and writing included) vs ``jieba.cut(line, HMM=False)`` over the same
  lines in this process (its dictionary loaded beforehand, no reading or writing: the figure
  favours jieba). CLI and jieba runs alternate, so a busy spell of a shared machine slows both. The
  CLI rows carry its peak RSS, CPU seconds and its ``--verbose`` breakdown of where time went.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement, cpu_thread_counts, measure, on_gpu
from gpu_text import TextBatch
from gpu_text.backend import get_backend
from gpu_text.segment import Segmenter, load_dictionary
from gpu_text.trie import DoubleArrayTrie

PEER = "jieba.cut(HMM=False)"
END_TO_END_BYTES = 50_000_000
QUICK_END_TO_END_BYTES = 2_000_000


def run(config: Config) -> list[Measurement]:
    import jieba

    dict_path = Path(jieba.__file__).parent / "dict.txt"
    lines, source = load_lines("zh", 2_000_000 if config.quick else 16_000_000)
    text = [line.decode("utf-8", "replace") for line in lines]
    batch = TextBatch.from_strings(lines)
    name = f"zh ({source}, {batch.nbytes / 1e6:.1f} MB, {len(batch)} lines)"
    tokenizer = jieba.Tokenizer(str(dict_path))
    tokenizer.initialize()
    rows = [Measurement("segment", name, PEER, 1, measure(lambda: [list(tokenizer.cut(t, HMM=False)) for t in text],
                                                           max(1, config.repeat // 2), warmup=0),
                        batch.nbytes, notes="jieba 0.42, one process")]
    words = [line.split(" ", 1)[0].encode() for line in dict_path.read_text(encoding="utf-8").splitlines()]
    words = list(dict.fromkeys(words))  # jieba's file lists one word twice
    DoubleArrayTrie.build(words[:10])  # compile once, outside the timing
    rows.append(Measurement("segment", f"jieba dict.txt ({len(words)} words)", "DoubleArrayTrie.build", 1,
                            measure(lambda: DoubleArrayTrie.build(words), config.repeat, warmup=0),
                            sum(map(len, words)), notes="trie build; target < 2 s on one core"))
    segmenter = Segmenter(load_dictionary(dict_path), compat="jieba")
    cpu = get_backend("cpu")
    for threads in cpu_thread_counts():
        rows.append(Measurement("segment", name, "gpu_text[cpu] Segmenter(compat='jieba')", threads,
                                measure(lambda: segmenter.segment(batch, cpu), config.repeat), batch.nbytes, peer=PEER,
                                notes="spans; same words as jieba on Han text"))
    gpu = on_gpu(batch)
    if gpu is not None:
        be, on_device, sync = gpu
        rows.append(Measurement("segment", name, "gpu_text[cuda] Segmenter(compat='jieba')", "GPU",
                                measure(lambda: segmenter.segment(on_device, be), config.repeat, sync), batch.nbytes,
                                peer=PEER, notes="input and spans on the GPU"))
    rows += end_to_end(config, tokenizer, dict_path)
    return rows


def end_to_end(config: Config, tokenizer: object, dict_path: Path) -> list[Measurement]:
    """``gpu-text segment`` on a file, a fresh process per run, vs jieba over the file's lines."""
    target = QUICK_END_TO_END_BYTES if config.quick else END_TO_END_BYTES
    backend = "cuda" if on_gpu(TextBatch.from_strings([""])) is not None else "cpu"
    with tempfile.TemporaryDirectory(prefix="gpu-text-bench-") as folder:
        source, lines = write_corpus_file(Path(folder) / "zh.txt", target)
        size = source.stat().st_size
        name = f"zh file {size / 1e6:.1f} MB ({len(lines)} lines, Sogou news repeated), end to end"
        texts = [line.decode("utf-8") for line in lines]
        del lines
        command = [*cli_command(), "segment", "--dict", str(dict_path), "--compat", "jieba", "--backend", backend,
                   "--verbose", str(source), str(Path(folder) / "out.txt")]
        cli_run(command)  # untimed: Numba's cache filled, the file in the page cache
        cli_runs: list[dict] = []
        jieba_seconds: list[float] = []
        jieba_cpu_seconds: list[float] = []
        jieba_runs = max(1, config.repeat // 3)
        # --quick (the device check's few minutes): two timed CLI runs, each a fresh process
        cli_repeats = min(2, config.repeat) if config.quick else config.repeat
        for round_ in range(max(cli_repeats, jieba_runs)):
            cli_runs.append(cli_run(command))
            if round_ < jieba_runs:  # jieba is slow: fewer runs, spread among the CLI's
                start, cpu_start = time.perf_counter(), time.process_time()
                for text in texts:
                    list(tokenizer.cut(text, HMM=False))
                jieba_seconds.append(time.perf_counter() - start)
                jieba_cpu_seconds.append(time.process_time() - cpu_start)
    rss = max(r["peak_rss_mib"] for r in cli_runs)
    fastest = min(cli_runs, key=lambda r: r["seconds"])
    # CPU seconds too: on a shared machine the wall times of a one-thread peer and of a
    # multi-threaded command suffer differently from the other load
    jieba_cpu = statistics.median(jieba_cpu_seconds)
    cli_cpu = statistics.median(r["cpu_seconds"] for r in cli_runs)
    threads = "GPU" if backend == "cuda" else os.cpu_count()
    print(f"end to end, {name}: last CLI run's breakdown:\n{cli_runs[-1]['verbose']}", file=sys.stderr)
    print(f"end to end CPU seconds (median): jieba {jieba_cpu:.2f}, CLI {cli_cpu:.2f} "
          f"({jieba_cpu / cli_cpu:.2f}x); wall seconds: jieba {jieba_seconds}, CLI {[r['seconds'] for r in cli_runs]}",
          file=sys.stderr)
    return [Measurement("segment", name, PEER, 1, jieba_seconds, size,
                        notes=f"lines in memory, dictionary loaded beforehand, no output written; "
                              f"{jieba_cpu:.1f} CPU s", extra={"cpu_seconds": jieba_cpu_seconds}),
            Measurement("segment", name, f"gpu-text segment --compat jieba (CLI, {backend})", threads,
                        [r["seconds"] for r in cli_runs], size, peer=PEER,
                        notes=f"fresh process: start-up, reading and writing included; peak RSS {rss:.0f} MiB; "
                              f"{cli_cpu:.1f} CPU s ({jieba_cpu / cli_cpu:.1f}x fewer than jieba)",
                        extra={"peak_rss_mib": rss, "cpu_seconds": [r["cpu_seconds"] for r in cli_runs],
                               "fastest_run_breakdown": fastest["verbose"]})]


def write_corpus_file(path: Path, target: int) -> tuple[Path, list[bytes]]:
    """The shared Chinese corpus's lines repeated until ``target`` bytes, written to ``path``."""
    corpus, _ = load_lines("zh")
    lines: list[bytes] = []
    total = 0
    while total < target:
        for line in corpus:
            lines.append(line)
            total += len(line) + 1
            if total >= target:
                break
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, lines


def cli_command() -> list[str]:
    """The ``gpu-text`` console script beside this interpreter, else ``python -m gpu_text.cli``."""
    script = Path(sys.executable).parent / "gpu-text"
    return [str(script)] if script.exists() else [sys.executable, "-m", "gpu_text.cli"]


def cli_run(command: list[str]) -> dict:
    """Wall seconds, CPU seconds, peak RSS (MiB) and the ``--verbose`` report of one CLI run."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with process.stderr:
        stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}): {stderr.decode()[-2000:]}")
    return {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_rss_mib": usage.ru_maxrss / 1024, "verbose": stderr.decode()}
