"""How ``--workers`` jobs start their workers (``gpu_text.jobs.workers.start_method``): forked
from a parent that has loaded the tokenizer and the kernels where that is safe, spawned otherwise;
both write the bytes of one process, a forked worker uses its own share of Numba's threads, and a
forked worker dies with its parent."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpu_text.demo import MODEL
from gpu_text.jobs import ShardSettings, run_sharded_job
from gpu_text.jobs.workers import START_VAR, start_method
from gpu_text.tokenizer.tokenizer import Tokenizer
from tests.test_sharded_jobs import SETTINGS, cli, finish, manifest, output_bytes, shard_lines, summary_of

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Four text shards, each a little over one chunk: each worker gets at least one."""
    folder = tmp_path_factory.mktemp("corpus")
    for name in "abcd":
        (folder / f"{name}.txt").write_text("\n".join(shard_lines(name)) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "out"
    assert run_sharded_job(str(MODEL), [str(corpus)], str(out), SETTINGS, progress=False)["complete"]
    return out


def numba_threads_per_worker() -> int:
    return int(os.environ.get("NUMBA_NUM_THREADS") or max(1, len(os.sched_getaffinity(0)) // 2))


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_forked_and_spawned_workers_write_the_bytes_of_one_process(corpus, reference, tmp_path, start):
    out = tmp_path / "out"
    code, err = finish(cli(corpus, "--output-dir", out, "--workers", "2", env={START_VAR: start}))
    assert code == 0, err
    summary = summary_of(err)
    assert summary["worker_start"] == start and summary["complete"]
    assert all(len(worker["shards"]) >= 1 for worker in summary["workers"])  # both workers wrote shards
    assert {worker["numba_threads"] for worker in summary["workers"]} == {numba_threads_per_worker()}
    assert output_bytes(out) == output_bytes(reference)  # the manifest too, byte for byte


START_IN_A_FRESH_PROCESS = """
import sys, threading
from gpu_text.jobs import ShardSettings
from gpu_text.jobs.workers import start_method
settings = ShardSettings(backend="cpu")
print(start_method(settings))
if sys.argv[1] == "encoded":  # this process has run Numba's thread pool: a forked worker would inherit it broken
    from gpu_text.demo import MODEL
    from gpu_text.tokenizer.bulk import load_tokenizer
    load_tokenizer(MODEL).encode(["hello world"], backend="cpu")
elif sys.argv[1] == "thread":  # another thread, which a forked worker would not have
    threading.Thread(target=threading.Event().wait, daemon=True).start()
print(start_method(settings))
"""


@pytest.mark.parametrize("then", ["encoded", "thread"])
def test_workers_are_forked_only_from_a_process_without_threads_or_a_numba_pool(then):
    done = subprocess.run([sys.executable, "-c", START_IN_A_FRESH_PROCESS, then], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={k: v for k, v in os.environ.items() if k != START_VAR})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["fork", "spawn"]


def test_devices_and_the_environment_ask_for_spawned_workers(monkeypatch):
    assert start_method(ShardSettings(backend="cpu"), devices=["0"]) == "spawn"  # a CUDA context each
    monkeypatch.setenv(START_VAR, "spawn")
    assert start_method(ShardSettings(backend="cpu")) == "spawn"
    monkeypatch.delenv(START_VAR)
    waiting = threading.Event()
    thread = threading.Thread(target=waiting.wait)
    thread.start()
    try:
        assert start_method(ShardSettings(backend="cpu")) == "spawn"
    finally:
        waiting.set()
        thread.join()


def test_forked_workers_die_with_their_killed_parent_and_resume_completes(corpus, reference, tmp_path):
    out = tmp_path / "out"
    # shard b's writer pauses after one chunk: the job is midway when its parent alone is killed
    job = cli(corpus, "--output-dir", out, "--workers", "2", env={"GPU_TEXT_TEST_FAULT": "pause:b:1"})
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and job.poll() is None:
        if (out / "manifest.json").exists() and any(p.name.endswith(".b.parquet") for p in out.glob(".gpu-text-*")):
            break
        time.sleep(0.05)
    assert job.poll() is None, job.communicate()[1]
    workers = [int(pid) for pid in Path(f"/proc/{job.pid}/task/{job.pid}/children").read_text().split()]
    # the paused worker, and the other unless it has already run out of shards (a, c, d) and ended
    assert 1 <= len(workers) <= 2, workers
    os.kill(job.pid, signal.SIGKILL)
    job.communicate()
    for _ in range(200):  # PR_SET_PDEATHSIG: each worker is killed with its parent
        if not any(Path(f"/proc/{pid}").exists() and "Z" not in _state(pid) for pid in workers):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("a forked worker outlived its killed parent")
    assert {e["shard"]: e["status"] for e in manifest(out)["shards"]}["b"] == "pending"
    code, err = finish(cli(corpus, "--output-dir", out, "--workers", "2", "--resume"))
    assert code == 0 and summary_of(err)["complete"], err
    assert output_bytes(out) == output_bytes(reference)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_model_the_options_cannot_use_is_refused_before_any_output(tmp_path, start):
    model = tmp_path / "no-eos.json"
    plain = Tokenizer.from_model_file(MODEL)
    plain.eos_id = -1
    plain.save(model)
    (tmp_path / "in").mkdir()
    for name in "ab":
        (tmp_path / "in" / f"{name}.txt").write_text("hello\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "gpu_text.cli", "tokenize", "--model", str(model), "--backend", "cpu",
                           str(tmp_path / "in"), "--output-dir", str(out), "--workers", "2", "--append-eod",
                           "--output-format", "megatron"], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, START_VAR: start})
    assert done.returncode == 2
    assert f"{model}: the model has no eos piece, so --append-eod" in done.stderr  # the model named, not a worker
    assert not out.exists()


PRELOAD_THEN_ENCODE = """
import json, sys
from numba.core.registry import CPUDispatcher
from gpu_text.demo import MODEL
from gpu_text.documents import iter_documents
from gpu_text.jobs import ShardSettings
from gpu_text.jobs.workers import ShardWorker

def loaded():
    return {(name, key): len(value.overloads) for name, module in list(sys.modules.items())
            if name.startswith("cpu_fallback.") for key, value in vars(module).items() if isinstance(value, CPUDispatcher)}

worker = ShardWorker(str(MODEL), ShardSettings(backend="cpu"))
worker.load_kernels()
before = loaded()
for documents in iter_documents([sys.argv[1]]):  # as a worker reads and encodes its first chunk
    worker.tokenizer.encode(documents.batch, backend="cpu")
after = loaded()
print(json.dumps([sum(before.values()), [f"{m}.{k}" for (m, k), n in after.items() if n > before.get((m, k), 0)]]))
"""


def test_the_parent_loads_the_kernels_a_forked_worker_calls(corpus):
    done = subprocess.run([sys.executable, "-c", PRELOAD_THEN_ENCODE, str(corpus / "a.txt")], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    preloaded, loaded_later = json.loads(done.stdout)
    assert preloaded >= 4  # the line splitter, the normalizer, the pre-token and row encoders
    # the big kernels were loaded for the types the worker calls them with: none is loaded again
    assert not {"cpu_fallback.tokenizer._encode_rows", "cpu_fallback.bpe.encode_pre_token",
                "cpu_fallback.normalizer.normalize_row", "cpu_fallback.lines.split_lines"} & set(loaded_later)


FORK_WHILE_COMPILING_AHEAD = """
import json, sys, threading
from cpu_fallback import compile_ahead
from gpu_text.demo import MODEL
from gpu_text.jobs import ShardSettings, run_sharded_job
compile_ahead._is_cached = lambda dispatcher, signature: False  # as on a first run: a child compiles the encoder
assert compile_ahead.start("tokenize-bpe")
before = [thread.name for thread in threading.enumerate()]
summary = run_sharded_job(str(MODEL), [sys.argv[1]], sys.argv[2], ShardSettings(backend="cpu", chunk_bytes=1 << 20),
                          workers=2, progress=False)
print(json.dumps({"before": before, "start": summary["worker_start"], "children": len(compile_ahead._CHILDREN),
                  "after": [thread.name for thread in threading.enumerate()]}))
"""


def test_a_first_run_forks_its_workers_once_the_compile_ahead_child_is_done(corpus, reference, tmp_path):
    """On a first run the command line compiles the encoder in a compile-ahead child while this
    process compiles the rest; the parent of a ``--workers`` job waits for the child's kernels,
    ends it (its reader thread would not survive the fork) and still forks."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", FORK_WHILE_COMPILING_AHEAD, str(corpus), str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k not in (START_VAR, "GPU_TEXT_COMPILE_AHEAD")})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert "compile-ahead" in seen["before"] and "compile-ahead" not in seen["after"]
    assert seen["start"] == "fork" and seen["children"] == 0
    assert output_bytes(out) == output_bytes(reference)


AHEAD_PLANS = """
import sys
from gpu_text.cli import build_parser
from gpu_text.warmup import ahead_plans
print(*ahead_plans(build_parser().parse_args(sys.argv[1:])) or ["none"])
"""


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_job_whose_workers_are_forked_compiles_ahead_as_one_process_does(tmp_path, start):
    environment = {k: v for k, v in os.environ.items() if k != START_VAR}
    if start == "spawn":
        environment[START_VAR] = "spawn"  # each spawned worker loads its own kernels: nothing ahead here
    args = ["tokenize", "--model", str(MODEL), "--backend", "cpu", str(tmp_path), "--output-dir", str(tmp_path / "o"),
            "--workers", "2"]
    done = subprocess.run([sys.executable, "-c", AHEAD_PLANS, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=environment)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == (["tokenize-bpe", "parquet"] if start == "fork" else ["none"])
