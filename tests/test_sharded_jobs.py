"""Sharded, resumable, multi-worker ``gpu-text tokenize --output-dir``: shard names, the manifest,
resuming after a real ``kill -9`` (in this process's children: the job itself, its workers, the
whole process group), workers and devices giving the same bytes as one process, and corrupt
input shards stopped at or skipped."""
from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gpu_text.cli import main
from gpu_text.demo import MODEL
from gpu_text.jobs import ShardSettings, run_sharded_job
from gpu_text.jobs.manifest import file_sha256
from gpu_text.jobs.shards import expand_inputs, plan_shards
from gpu_text.tokenizer.tokenizer import Tokenizer
from tests.conftest import require

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "gpu_text" / "data" / "samples"
SHARDS = ("a", "b", "c")
SHARD_TEXT_BYTES = 1_100_000  # over one 1 MiB chunk (--chunk-mb 1): a shard is two chunks, so it can die midway
SETTINGS = ShardSettings(backend="cpu", chunk_bytes=1 << 20)
CLI = ["--model", str(MODEL), "--backend", "cpu", "--chunk-mb", "1"]


def tokenizer() -> Tokenizer:
    return Tokenizer.from_model_file(MODEL)


def shard_lines(name: str) -> list[str]:
    """Distinct documents for shard ``name``: sample lines numbered by shard and position."""
    sample = (SAMPLES / "en-kjv.txt").read_text(encoding="utf-8").splitlines()
    sample += (SAMPLES / "zh-hongloumeng.txt").read_text(encoding="utf-8").splitlines()
    lines, size, i = [], 0, 0
    while size < SHARD_TEXT_BYTES:
        line = f"{name}{i} {sample[i % len(sample)]}"
        lines.append(line)
        size += len(line.encode()) + 1
        i += 1
    return lines


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Three text shards, each a little over one chunk."""
    folder = tmp_path_factory.mktemp("corpus")
    for name in SHARDS:
        (folder / f"{name}.txt").write_text("\n".join(shard_lines(name)) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> Path:
    """The job run once, uninterrupted, in this process (one worker)."""
    out = tmp_path_factory.mktemp("reference") / "out"
    summary = run_sharded_job(str(MODEL), [str(corpus)], str(out), SETTINGS, progress=False)
    assert summary["complete"] and summary["done"] == len(SHARDS)
    return out


def read_ids(path: Path) -> list[list[int]]:
    return require("pyarrow.parquet").read_table(path).column("ids").to_pylist()


def output_bytes(out: Path) -> dict[str, bytes]:
    """Every file of a job's output directory but its lock, by name."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != ".gpu-text.lock"}


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def temporaries(out: Path) -> list[str]:
    return sorted(p.name for p in out.rglob(".gpu-text-*"))


def cli(*args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    environment = {**os.environ, "GPU_TEXT_PROGRESS": "0", **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "gpu_text.cli", "tokenize", *CLI, *map(str, args)], cwd=REPO,
                            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def summary_of(err: str) -> dict:
    """The JSON summary a job prints on stderr (before any warning)."""
    return json.loads([line for line in err.splitlines() if line.startswith("{")][-1])


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    _, err = process.communicate(timeout=timeout)
    return process.returncode, err


# --- planning ----------------------------------------------------------------------------------

def test_inputs_expand_in_order_and_shards_are_named_after_them(tmp_path):
    (tmp_path / "in" / "2024" / ".cache").mkdir(parents=True)
    for name in ["z.txt", "a.JSONL.gz", "2024/m.parquet", "2024/.cache/x.txt", "notes.md", ".hidden.txt"]:
        (tmp_path / "in" / name).write_text("x\n")
    (tmp_path / "loose.ndjson").write_text("{}\n")
    inputs = expand_inputs([tmp_path / "in", str(tmp_path / "*.ndjson")])
    assert [os.path.relpath(p, tmp_path) for p in inputs] == ["in/2024/m.parquet", "in/a.JSONL.gz", "in/z.txt",
                                                              "loose.ndjson"]
    shards = plan_shards(inputs, tmp_path / "out", "megatron")
    assert [s.name for s in shards] == ["in/2024/m", "in/a", "in/z", "loose"]
    assert shards[1].piece_files(0) == [str(tmp_path / "out/in/a.bin"), str(tmp_path / "out/in/a.idx")]
    pieces = plan_shards(inputs, tmp_path / "out", "npy", shard_bytes=10)
    assert pieces[2].piece_files(3) == [str(tmp_path / "out/in/z-00003.ids.npy"),
                                        str(tmp_path / "out/in/z-00003.offsets.npy")]
    assert plan_shards(inputs, tmp_path / "out", "hf")[0].piece_paths(0) == [str(tmp_path / "out/in/2024/m")]
    with pytest.raises(ValueError, match="no file matches"):
        expand_inputs([str(tmp_path / "*.csv")])
    with pytest.raises(ValueError, match="no document files"):
        expand_inputs([str(_empty(tmp_path))])
    with pytest.raises(ValueError, match="would be that of"):
        plan_shards([str(tmp_path / "in/z.txt"), str(_touch(tmp_path / "in/z.json"))], tmp_path / "out", "parquet")
    with pytest.raises(ValueError, match="given twice"):
        plan_shards([inputs[0], inputs[0]], tmp_path / "out", "parquet")
    with pytest.raises(ValueError, match="stdin"):
        plan_shards(["-"], tmp_path / "out", "parquet")


def _empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "README").write_text("not a document file\n")
    return folder


def _touch(path: Path) -> Path:
    path.write_text("[]\n")
    return path


# --- one job, its manifest and its pieces -----------------------------------------------------

def test_reference_job_writes_every_document_once_in_order_with_a_true_manifest(corpus, reference):
    ours = tokenizer()
    content = manifest(reference)
    assert content["manifest"] == "gpu-text tokenize shards" and content["complete"] is True
    assert content["options"]["model_sha256"] == file_sha256(str(MODEL))
    assert content["options"]["output_format"] == "parquet" and "chunk_bytes" not in content["options"]
    assert [e["shard"] for e in content["shards"]] == list(SHARDS)
    total_documents = 0
    for entry in content["shards"]:
        lines = shard_lines(entry["shard"])
        expected = ours.encode(lines, backend="cpu").ids.to_pylist()
        assert read_ids(reference / f"{entry['shard']}.parquet") == expected  # every document once, in order
        assert entry["status"] == "done" and entry["documents"] == len(lines) == entry["rows"]
        assert entry["tokens"] == sum(map(len, expected)) == entry["tokens_written"]
        assert entry["input"] == str(corpus / f"{entry['shard']}.txt")
        assert entry["input_bytes"] == (corpus / f"{entry['shard']}.txt").stat().st_size
        assert entry["text_bytes"] == sum(len(line.encode()) for line in lines)
        [described] = entry["files"]
        path = reference / described["path"]
        assert described == {"path": f"{entry['shard']}.parquet", "bytes": path.stat().st_size,
                             "sha256": file_sha256(str(path))}
        total_documents += len(lines)
    assert content["totals"]["documents"] == total_documents and content["totals"]["done"] == len(SHARDS)
    assert temporaries(reference) == []


def test_shard_bytes_cuts_pieces_after_the_document_reaching_the_size(tmp_path):
    lines = shard_lines("p")[:3000]
    (tmp_path / "p.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    limit = 40_000
    assert main(["tokenize", *CLI, str(tmp_path / "p.txt"), "--output-dir", str(tmp_path / "out"),
                 "--output-format", "npy", "--shard-bytes", str(limit)]) == 0
    entry = manifest(tmp_path / "out")["shards"][0]
    sizes = [len(line.encode()) for line in lines]
    cuts, piece = [], 0
    for i, size in enumerate(sizes):  # the rule, document by document
        piece += size
        if piece >= limit:
            cuts.append(i + 1)
            piece = 0
    bounds = [0] + cuts + ([len(lines)] if cuts[-1] != len(lines) else [])
    assert entry["pieces"] == len(bounds) - 1
    expected = tokenizer().encode(lines, backend="cpu").ids.to_pylist()
    for k, (first, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        ids = np.load(tmp_path / "out" / f"p-{k:05d}.ids.npy")
        offsets = np.load(tmp_path / "out" / f"p-{k:05d}.offsets.npy")
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected[first:stop]
    assert [f["path"] for f in entry["files"]][:2] == ["p-00000.ids.npy", "p-00000.offsets.npy"]
    assert len(entry["files"]) == 2 * entry["pieces"]


# --- resume after kill -9 -----------------------------------------------------------------------

def test_job_killed_mid_shard_resumes_to_the_uninterrupted_output(corpus, reference, tmp_path, capsys):
    out = tmp_path / "out"
    code, err = finish(cli(corpus, "--output-dir", out, env={"GPU_TEXT_TEST_FAULT": "kill:b:1"}))
    assert code == -signal.SIGKILL, err
    state = {e["shard"]: e["status"] for e in manifest(out)["shards"]}
    assert state == {"a": "done", "b": "pending", "c": "pending"}
    assert any(name.endswith(".b.parquet") for name in temporaries(out))  # b was half written
    assert not (out / "b.parquet").exists()
    # the same command line with --resume (in this process: the CLI's code without another start-up)
    assert main(["tokenize", *CLI, "--resume", str(corpus), "--output-dir", str(out)]) == 0
    summary = summary_of(capsys.readouterr().err)
    assert summary["resumed"] == 1 and summary["done"] == 2 and temporaries(out) == []
    assert output_bytes(out) == output_bytes(reference)  # every file, the manifest too, byte for byte


SMALL_CHUNKS = ShardSettings(backend="cpu", chunk_bytes=64 << 10)  # a shard is 17 chunks
# the job with small chunks and two workers, as the CLI would run it
SMALL_CHUNKS_JOB = f"""
import sys
from gpu_text.jobs import ShardSettings, run_sharded_job
run_sharded_job({str(MODEL)!r}, [sys.argv[1]], sys.argv[2], ShardSettings.from_dict({SMALL_CHUNKS.to_dict()!r}),
                workers=2, progress=False)
"""


@pytest.fixture(scope="module")
def small_chunks_reference(corpus, tmp_path_factory) -> Path:
    """The job uninterrupted in one process, in the chunks of :data:`SMALL_CHUNKS` (Parquet's row
    groups follow the chunks)."""
    out = tmp_path_factory.mktemp("small") / "out"
    assert run_sharded_job(str(MODEL), [str(corpus)], str(out), SMALL_CHUNKS, progress=False)["complete"]
    return out


def test_workers_killed_from_outside_resume_on_devices_to_the_same_bytes(corpus, small_chunks_reference, tmp_path):
    out = tmp_path / "out"
    # shard b stops after one chunk; the other worker takes a and c meanwhile (a worker asks for its next
    # shard when it has read its current input: b's worker cannot, its 17 chunks held up behind the paused
    # writer by the pipeline's bounded queues, a few chunks long)
    job = subprocess.Popen([sys.executable, "-c", SMALL_CHUNKS_JOB, str(corpus), str(out)], cwd=REPO,
                           env={**os.environ, "GPU_TEXT_TEST_FAULT": "pause:b:1"}, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and job.poll() is None:
        entries = manifest(out)["shards"] if (out / "manifest.json").exists() else []
        if [e["shard"] for e in entries if e["status"] == "done"] == ["a", "c"] and \
                any(n.endswith(".b.parquet") for n in temporaries(out)):
            break
        time.sleep(0.05)
    assert job.poll() is None, job.communicate()[1]
    os.killpg(job.pid, signal.SIGKILL)  # the job and its workers at once, as a node failure would
    job.communicate()
    _wait_gone(job.pid)
    assert {e["shard"]: e["status"] for e in manifest(out)["shards"]}["b"] == "pending"
    # resumed on "GPUs" 0 and 1: --devices runs the --workers code, one process per device
    summary = run_sharded_job(str(MODEL), [str(corpus)], str(out), SMALL_CHUNKS, resume=True, devices=["0", "1"],
                              progress=False)
    assert summary["resumed"] == 2 and summary["done"] == 1 and summary["complete"]
    [worker] = [w for w in summary["workers"] if w["shards"]]
    assert worker["shards"] == ["b"] and worker["device"] == str(worker["worker"])  # its own CUDA_VISIBLE_DEVICES
    cores = len(os.sched_getaffinity(0))
    assert worker["numba_threads"] == int(os.environ.get("NUMBA_NUM_THREADS") or max(1, cores // 2))
    assert output_bytes(out) == output_bytes(small_chunks_reference)  # two workers wrote a and c: the bytes of one


def _wait_gone(group: int) -> None:
    for _ in range(200):
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError("a worker outlived the killed job")


def test_a_worker_killed_after_renaming_stops_the_job_naming_its_shard_and_resume_redoes_it(corpus, reference,
                                                                                              tmp_path):
    out = tmp_path / "out"
    code, err = finish(cli(corpus, "--output-dir", out, "--workers", "2",
                           env={"GPU_TEXT_TEST_FAULT": "kill:c:renamed"}))
    assert code == 2 and "died (signal 9) while tokenizing shard c" in err, err
    assert (out / "c.parquet").exists()  # renamed into place, but the manifest never heard of it
    assert {e["shard"]: e["status"] for e in manifest(out)["shards"]}["c"] == "pending"
    summary = run_sharded_job(str(MODEL), [str(corpus)], str(out), SETTINGS, resume=True, progress=False)
    assert summary["complete"] and "c" in [s for w in summary["workers"] for s in w["shards"]]
    assert output_bytes(out) == output_bytes(reference)


# --- refusals and corrupt shards ----------------------------------------------------------------

def test_resume_refuses_other_options_and_a_rerun_needs_resume(corpus, reference, tmp_path, capsys):
    out = tmp_path / "out"
    for name, data in output_bytes(reference).items():  # a finished job's directory
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    assert main(["tokenize", *CLI, str(corpus), "--output-dir", str(out)]) == 2
    assert "add --resume to continue it" in capsys.readouterr().err
    assert main(["tokenize", *CLI, str(corpus), "--output-dir", str(out), "--resume", "--add-eos"]) == 2
    assert "made with other options (add_eos: False there, True now)" in capsys.readouterr().err
    assert main(["tokenize", *CLI, str(corpus / "a.txt"), "--output-dir", str(out), "--resume"]) == 2
    assert "other input shards" in capsys.readouterr().err
    (out / "b.parquet").write_bytes(b"damaged")  # a completed shard whose file no longer matches: redone
    assert main(["tokenize", *CLI, str(corpus), "--output-dir", str(out), "--resume"]) == 0
    assert summary_of(capsys.readouterr().err)["resumed"] == 2
    assert output_bytes(out) == output_bytes(reference)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "a.parquet").write_bytes(b"someone else's")
    assert main(["tokenize", *CLI, str(corpus), "--output-dir", str(fresh)]) == 2
    assert "has no job manifest to say what it is" in capsys.readouterr().err
    assert main(["tokenize", *CLI, "--resume", str(corpus), str(tmp_path / "o.parquet")]) == 2
    assert "--resume is an option of sharded jobs" in capsys.readouterr().err


def corrupt_corpus(folder: Path) -> list[str]:
    folder.mkdir()
    (folder / "a.txt").write_text("first shard\nof two lines\n", encoding="utf-8")
    (folder / "b.jsonl.gz").write_bytes(gzip.compress(b'{"text": "fine"}\n' * 50)[:-12])  # truncated gzip
    (folder / "c.parquet").write_bytes(b"PAR1" + b"\x00" * 32 + b"PAR1")  # unreadable Parquet
    (folder / "d.txt").write_text("last shard\n", encoding="utf-8")
    return ["a", "b", "c", "d"]


def test_a_corrupt_shard_stops_the_job_naming_it(tmp_path, capsys):
    corrupt_corpus(tmp_path / "in")
    out = tmp_path / "out"
    assert main(["tokenize", *CLI, str(tmp_path / "in"), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error: shard b: " in err and "b.jsonl.gz: damaged compressed data" in err
    state = {e["shard"]: e["status"] for e in manifest(out)["shards"]}
    assert state == {"a": "done", "b": "pending", "c": "pending", "d": "pending"}
    assert sorted(p.name for p in out.iterdir()) == [".gpu-text.lock", "a.parquet", "manifest.json"]


def test_on_error_skip_records_and_reports_corrupt_shards_and_resume_retries_them(tmp_path, capsys):
    corrupt_corpus(tmp_path / "in")
    out = tmp_path / "out"
    assert main(["tokenize", *CLI, str(tmp_path / "in"), "--output-dir", str(out), "--on-error", "skip"]) == 0
    err = capsys.readouterr().err
    assert "warning: skipped 2 shard(s)" in err and "b.jsonl.gz: damaged compressed data" in err
    summary = summary_of(err)
    assert [s["shard"] for s in summary["skipped"]] == ["b", "c"] and summary["complete"] is False
    entries = {e["shard"]: e for e in manifest(out)["shards"]}
    assert entries["b"]["status"] == "skipped" and "damaged compressed data" in entries["b"]["error"]
    assert entries["c"]["status"] == "skipped" and "not a readable Parquet file" in entries["c"]["error"]
    encode = tokenizer().encode
    assert read_ids(out / "a.parquet") == encode(["first shard", "of two lines"], backend="cpu").ids.to_pylist()
    assert read_ids(out / "d.parquet") == encode(["last shard"], backend="cpu").ids.to_pylist()
    assert not (out / "b.parquet").exists() and not (out / "c.parquet").exists()
    (tmp_path / "in" / "b.jsonl.gz").write_bytes(gzip.compress(b'{"text": "fine"}\n' * 50))  # repaired
    assert main(["tokenize", *CLI, str(tmp_path / "in"), "--output-dir", str(out), "--on-error", "skip",
                 "--resume"]) == 0
    entries = {e["shard"]: e for e in manifest(out)["shards"]}
    assert entries["b"]["status"] == "done" and entries["b"]["documents"] == 50
    assert entries["c"]["status"] == "skipped"
    assert summary_of(capsys.readouterr().err)["resumed"] == 2
