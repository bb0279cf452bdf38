"""One read → encode → write pipeline across a worker's shards (:func:`gpu_text.jobs.pieces.tokenize_shards`):
the next shard is read while the previous one is finished, at most one shard is held ahead, a
shard that fails (its input unreadable, a document that cannot be encoded) leaves nothing of it
and does not touch the shard already being read after it, and empty inputs still get their
(empty) shard; and the workers load the model once, refusing options it cannot honour before
the job makes any output."""
from __future__ import annotations

import functools
import gzip
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpu_text.cli import main
from gpu_text.demo import MODEL
from gpu_text.jobs import ShardSettings, run_sharded_job
from gpu_text.jobs.pieces import tokenize_shards
from gpu_text.jobs.shards import plan_shards
from gpu_text.tokenizer.tokenizer import Tokenizer

CHUNK = 4096  # small chunks: every shard below is many chunks, so shards overlap in the pipeline
SETTINGS = ShardSettings(backend="cpu", chunk_bytes=CHUNK, output_format="npy")
POISON = "this document cannot be encoded"


def tokenizer() -> Tokenizer:
    return Tokenizer.from_model_file(MODEL)


def lines(name: str, count: int) -> list[str]:
    return [f"{name} line {i} " + "word " * (i % 13) for i in range(count)]


def write_shard(folder: Path, name: str, docs: list[str]) -> Path:
    path = folder / name
    path.write_text("".join(f"{line}\n" for line in docs), encoding="utf-8")
    return path


def read_npy(out: Path, name: str) -> list[list[int]]:
    ids, offsets = np.load(out / f"{name}.ids.npy"), np.load(out / f"{name}.offsets.npy")
    return [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.rglob(".gpu-text-*"))


class Hooked:
    """The real tokenizer, its ``encode`` first calling ``hook(documents)`` on every chunk."""

    def __init__(self, inner: Tokenizer, hook: Any) -> None:
        self.inner, self.hook = inner, hook
        self.bos_id, self.eos_id = inner.bos_id, inner.eos_id

    def __len__(self) -> int:
        return len(self.inner)

    def encode(self, batch: Any, **options: Any) -> Any:
        self.hook(batch.to_pylist())
        return self.inner.encode(batch, **options)


def poison(documents: list[str]) -> None:
    """A chunk holding :data:`POISON` is one the encoder cannot take."""
    if POISON in documents:
        raise ValueError("the encoder choked")


def run_stream(shards: list, settings: ShardSettings = SETTINGS, model: Any = None,
               report: Any = None) -> list[dict]:
    results: list[dict] = []
    tokenize_shards(model or tokenizer(), functools.partial(next, iter(shards), None), settings,
                    report or results.append)
    return results


def test_the_next_shard_is_read_while_the_previous_one_finishes_and_at_most_one_is_held_ahead(tmp_path):
    docs = {name: lines(name, 900) for name in "abcd"}  # ~30 KB each: several chunks
    shards = plan_shards([str(write_shard(tmp_path, f"{n}.txt", d)) for n, d in docs.items()], tmp_path / "out",
                         "npy")
    (tmp_path / "out").mkdir()
    events: list[str] = []
    asked_for_b = threading.Event()
    source = iter(shards)

    def next_shard():
        shard = next(source, None)
        if shard is not None:
            events.append(f"next {shard.name}")
            if shard.name == "b":
                asked_for_b.set()
        return shard

    def hold_a_last_chunk(documents: list[str]) -> None:  # one pipeline: b is asked for while a still encodes
        if docs["a"][-1] in documents and not asked_for_b.wait(30):
            raise AssertionError("the next shard was not asked for before the previous one's last chunk encoded")

    results = []

    def report(result: dict) -> None:
        events.append(f"done {shards[result['index']].name}")
        results.append(result)

    tokenize_shards(Hooked(tokenizer(), hold_a_last_chunk), next_shard, SETTINGS, report)
    assert [r["kind"] for r in results] == ["done"] * 4, results
    assert events.index("next b") < events.index("done a")
    for held, then in (("c", "a"), ("d", "b")):  # a shard is asked for only once the one before last is done
        assert events.index(f"done {then}") < events.index(f"next {held}")
    ours = tokenizer()
    for result, (name, text) in zip(results, docs.items()):
        assert read_npy(tmp_path / "out", name) == ours.encode(text, backend="cpu").ids.to_pylist()
        assert result["entry"]["documents"] == len(text) and result["entry"]["files"][0]["path"] == f"{name}.ids.npy"
    assert leftovers(tmp_path / "out") == []


def test_a_shard_failing_midway_leaves_nothing_and_the_shard_read_after_it_is_whole(tmp_path):
    good = {name: lines(name, 900) for name in "acde"}
    for name, text in good.items():
        write_shard(tmp_path, f"{name}.txt", text)
    # b: damaged gzip that decodes many chunks before the damage; d: the encoder fails at its middle
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress("".join(f"{x}\n" for x in lines("b", 3000)).encode())[:-12])
    write_shard(tmp_path, "d.txt", good["d"][:450] + [POISON] + good["d"][450:])
    write_shard(tmp_path, "empty.txt", [])
    names = ["a", "b.txt.gz", "c", "d", "empty", "e"]
    inputs = [str(tmp_path / (n if "." in n else f"{n}.txt")) for n in names]
    out = tmp_path / "out"
    shards = plan_shards(inputs, out, "npy")
    out.mkdir()
    results = run_stream(shards, model=Hooked(tokenizer(), poison))
    by_name = {shards[r["index"]].name: r for r in results}
    assert [shards[r["index"]].name for r in results] == ["a", "b", "c", "d", "empty", "e"]  # input order
    assert by_name["b"]["kind"] == "failed" and by_name["b"]["input_error"]
    assert "damaged compressed data" in by_name["b"]["error"] and "b.txt.gz" in by_name["b"]["error"]
    assert by_name["d"]["kind"] == "failed" and by_name["d"]["input_error"]
    assert "d.txt: documents" in by_name["d"]["error"] and "the encoder choked" in by_name["d"]["error"]
    ours = tokenizer()
    for name in "ace":  # the shards after a failed one: whole, as if it had not been
        assert by_name[name]["kind"] == "done"
        assert read_npy(out, name) == ours.encode(good[name], backend="cpu").ids.to_pylist()
    assert by_name["empty"]["kind"] == "done" and by_name["empty"]["entry"]["documents"] == 0
    assert read_npy(out, "empty") == []  # an empty input still has its shard
    assert not any(p.name.startswith(("b.", "d.")) for p in out.iterdir()) and leftovers(out) == []


def test_on_error_skip_in_one_process_records_each_shard_as_it_was(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    write_shard(tmp_path / "in", "a.txt", lines("a", 900))
    (tmp_path / "in" / "b.txt.gz").write_bytes(gzip.compress(b"fine line\n" * 5000)[:-12])
    write_shard(tmp_path / "in", "c.txt", lines("c", 900))
    write_shard(tmp_path / "in", "d.txt", [])
    out = tmp_path / "out"
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(tmp_path / "in"), "--output-dir", str(out),
                 "--on-error", "skip", "--output-format", "npy"]) == 0
    assert "warning: skipped 1 shard(s)" in capsys.readouterr().err
    summary = run_sharded_job(str(MODEL), [str(tmp_path / "in")], str(out), SETTINGS, resume=True,
                              on_error="skip", progress=False)
    assert summary["resumed"] == 3 and [s["shard"] for s in summary["skipped"]] == ["b"]
    assert read_npy(out, "c") == tokenizer().encode(lines("c", 900), backend="cpu").ids.to_pylist()
    assert read_npy(out, "d") == [] and leftovers(out) == []


def test_workers_refuse_options_the_model_cannot_honour_before_any_output(tmp_path, capsys):
    model = tmp_path / "no-eos.json"
    plain = tokenizer()
    plain.eos_id = -1
    plain.save(model)
    source = write_shard(tmp_path, "a.txt", ["hello"])
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        assert main(["tokenize", "--model", str(model), "--backend", "cpu", str(source), "--output-dir", str(out),
                     "--workers", workers, "--append-eod", "--output-format", "megatron"]) == 2
        assert f"{model}: the model has no eos piece, so --append-eod" in capsys.readouterr().err
        assert not out.exists()
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(b"\x00not a model")
    assert main(["tokenize", "--model", str(garbage), "--backend", "cpu", str(source), "--output-dir",
                 str(tmp_path / "out3"), "--workers", "2"]) == 2
    assert f"error: {garbage}: " in capsys.readouterr().err  # the model named, not a worker
    assert not (tmp_path / "out3").exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_many_shards_through_one_pipeline_give_the_bytes_of_one_shard_at_a_time(tmp_path, workers):
    docs = {f"s{k}": lines(f"s{k}", 300 + 37 * k) for k in range(6)}
    inputs = [str(write_shard(tmp_path, f"{n}.txt", d)) for n, d in docs.items()]
    write_shard(tmp_path, "s6.txt", [])
    inputs.append(str(tmp_path / "s6.txt"))
    summary = run_sharded_job(str(MODEL), inputs, str(tmp_path / "out"), SETTINGS, workers=workers, progress=False)
    assert summary["complete"] and summary["done"] == 7
    assert sorted(s for w in summary["workers"] for s in w["shards"]) == [f"s{k}" for k in range(7)]
    ours = tokenizer()
    for name, text in docs.items():
        assert read_npy(tmp_path / "out", name) == ours.encode(text, backend="cpu").ids.to_pylist()
    assert read_npy(tmp_path / "out", "s6") == [] and leftovers(tmp_path / "out") == []
    assert os.path.exists(tmp_path / "out" / "manifest.json")


def test_a_shard_that_cannot_be_written_stops_the_job_even_with_on_error_skip(tmp_path):
    (tmp_path / "in" / "sub").mkdir(parents=True)
    for name in ("a.txt", "sub/x.txt", "z.txt"):
        write_shard(tmp_path / "in", name, lines(name, 900))
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").write_text("a file where shard sub/x needs its folder\n")
    with pytest.raises(ValueError, match=r"shard sub/x \(.*x\.txt\): .*File exists"):
        run_sharded_job(str(MODEL), [str(tmp_path / "in")], str(out), SETTINGS, on_error="skip", progress=False)
    state = {e["shard"]: e["status"] for e in json.loads((out / "manifest.json").read_text())["shards"]}
    assert state == {"a": "done", "sub/x": "pending", "z": "pending"}  # not skipped: writing is not the input's fault
    assert leftovers(out) == [] and not (out / "z.ids.npy").exists()
