"""Compiling a command's later kernels in a second process (``cpu_fallback/compile_ahead.py``):
the plans name the types the commands really call their kernels with, and whatever happens to
the child (cannot start, fails, hangs, is stopped) the kernels still compile here and give the
same results, with no process left behind."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cpu_fallback import compile_ahead
from gpu_text.cli import main
from gpu_text.warmup import WARMUPS, _inputs, ahead_plans

REPO = Path(__file__).resolve().parents[1]
BYTEPIECE_TRAIN = ["train-tokenizer", "--method", "bytepiece", "{english}", "{mixed}", "-o", "{out}.bp",
                   "--vocab-size", "400"]
# plan -> the runs that use it (the last one is the plan's; the earlier ones make its model)
PLAN_RUNS = {
    "tokenize-bpe": [WARMUPS["tokenize"][0]],
    "tokenize-unigram": WARMUPS["tokenize"][2:4],
    "tokenize-bytepiece": [BYTEPIECE_TRAIN, ["tokenize", "--model", "{out}.bp", "{mixed}", "{out}.b.parquet"]],
    "train-bpe": [WARMUPS["train-tokenizer"][0]],
    "train-unigram": [WARMUPS["train-tokenizer"][1]],
    "train-bytepiece": [BYTEPIECE_TRAIN],
    "train-dict": [WARMUPS["train-dict"][0]],
    "segment": [WARMUPS["segment"][0]],
    "crf-train": [WARMUPS["crf"][0]],
    "word2vec-train": [WARMUPS["word2vec"][0]],
    "lda-train": [WARMUPS["lda"][0]],
}
# kernels only ever called from other kernels: a run that loads their callers from the cache
# never types them, so only the fresh-cache test below sees their types
CALLEES = {"normalizer.normalize_row", "bpe.encode_pre_token"}


def test_every_plan_is_checked_and_parses():
    assert set(PLAN_RUNS) | {"parquet"} == set(compile_ahead.PLANS)
    for here, there in compile_ahead.PLANS.values():
        for entry in here + there:
            dispatcher, signature = compile_ahead._kernel(entry)
            assert callable(dispatcher.py_func) and isinstance(signature, tuple), entry


@pytest.mark.parametrize("plan", sorted(PLAN_RUNS))
def test_a_plan_names_the_types_its_command_calls_with(plan, tmp_path, monkeypatch):
    """Run the command; each kernel the plan compiles ahead must have been called with the plan's
    types (else the child compiles code nobody loads and the kernel compiles here anyway)."""
    monkeypatch.setenv("GPU_TEXT_BACKEND", "cpu")
    # an empty table cache: with the model's tables on disk already, the kernels that build them
    # (merge_tables.piece_chars) are never called and the check below could not see their types
    monkeypatch.setenv("GPU_TEXT_TABLE_CACHE", str(tmp_path / "tables"))
    paths = _inputs(tmp_path)
    for argv in PLAN_RUNS[plan]:
        assert main([arg.format(**paths) for arg in argv]) == 0
    from gpu_text.cli import build_parser

    args = build_parser().parse_args([arg.format(**paths) for arg in argv] + ["--backend", "cpu"])
    plans = ahead_plans(args)
    assert plans[0] == plan and plans[1:] == (("parquet",) if argv[0] == "tokenize" else ()), plans
    here, there = compile_ahead.PLANS[plan]
    for entry in here + there + (compile_ahead.PLANS["parquet"][0] if argv[0] == "tokenize" else ()):
        if entry.split(":")[0] in CALLEES:
            continue
        dispatcher, signature = compile_ahead._kernel(entry)
        assert signature in dispatcher.overloads, (entry, dispatcher.signatures)


def _uncached_plan(monkeypatch):
    """A plan of one cheap kernel, taken as missing from the cache (the suite's cache is warm)."""
    entry = "utf8.utf8_string_stats: u1[] i8[]"
    monkeypatch.setitem(compile_ahead.PLANS, "test", ((), (entry,)))
    monkeypatch.setattr(compile_ahead, "_is_cached", lambda dispatcher, signature: False)
    monkeypatch.delenv(compile_ahead.DISABLE_VAR, raising=False)
    monkeypatch.setattr(compile_ahead, "_cpus", lambda: 2)
    dispatcher, _ = compile_ahead._kernel(entry)
    return dispatcher


def _stats(dispatcher):
    chars, errors = dispatcher(np.frombuffer("aé\xff".encode() + b"\xff", np.uint8), np.array([0, 3, 5]))
    return chars.tolist(), errors.tolist()


def _fake_python(tmp_path, body: str, monkeypatch) -> None:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(compile_ahead.sys, "executable", str(script))


def test_a_failing_child_leaves_the_kernel_to_compile_here(tmp_path, monkeypatch):
    dispatcher = _uncached_plan(monkeypatch)
    expected = _stats(dispatcher)
    _fake_python(tmp_path, "exit 1", monkeypatch)
    waits = []
    assert compile_ahead.start("test", on_wait=lambda: waits.append(1))
    child = compile_ahead._CHILDREN[-1]
    assert "compile" in dispatcher.__dict__ and not waits  # its first call with new types waits for the child
    dispatcher.compile(dispatcher.signatures[0])  # what Numba calls: returns once the child has failed
    assert "compile" not in dispatcher.__dict__ and _stats(dispatcher) == expected
    assert waits == [1]  # the command line's notice: said when this process first waits
    compile_ahead.stop()
    assert child.process.returncode == 1 and not compile_ahead._CHILDREN


def test_a_child_that_cannot_start_starts_nothing(tmp_path, monkeypatch):
    dispatcher = _uncached_plan(monkeypatch)
    monkeypatch.setattr(compile_ahead.sys, "executable", str(tmp_path / "no-such-python"))
    assert not compile_ahead.start("test")
    assert "compile" not in dispatcher.__dict__ and not compile_ahead._CHILDREN


def test_a_hung_child_is_ended_after_the_wait_and_stop_reaps_it(tmp_path, monkeypatch):
    dispatcher = _uncached_plan(monkeypatch)
    expected = _stats(dispatcher)
    _fake_python(tmp_path, "exec sleep 60", monkeypatch)
    monkeypatch.setattr(compile_ahead, "WAIT_SECONDS", 0.5)
    assert compile_ahead.start("test")
    child = compile_ahead._CHILDREN[-1]
    dispatcher.compile(dispatcher.signatures[0])  # waits half a second, ends the child, compiles here
    assert child.process.poll() is not None and _stats(dispatcher) == expected
    compile_ahead.stop()
    # stopped while still running: ended, reaped, the dispatcher's own compile back
    assert compile_ahead.start("test")
    child = compile_ahead._CHILDREN[-1]
    compile_ahead.stop()
    assert child.process.returncode is not None and "compile" not in dispatcher.__dict__


def test_no_child_when_turned_off_or_on_one_core(monkeypatch):
    dispatcher = _uncached_plan(monkeypatch)
    monkeypatch.setenv(compile_ahead.DISABLE_VAR, "0")
    assert not compile_ahead.start("test")
    monkeypatch.delenv(compile_ahead.DISABLE_VAR)
    monkeypatch.setattr(compile_ahead, "_cpus", lambda: 1)
    assert not compile_ahead.start("test")
    assert "compile" not in dispatcher.__dict__


def test_the_child_compiles_into_the_cache_and_prints_each_entry(tmp_path):
    """The child itself (``python -m cpu_fallback.compile_ahead ENTRY...``) on an empty cache."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "cpu_fallback.compile_ahead", "utf8.utf8_string_stats: u1[] i8[]",
                           "merge_tables.empty_table: i8"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]  # index, the child's CPU seconds so far
    assert [line[0] for line in lines] == ["0", "1"] and 0 < float(lines[0][1]) <= float(lines[1][1])
    names = {p.name.split("-")[0] for p in tmp_path.rglob("*.nbi")}  # module.function-line.pyXY.nbi
    assert names >= {"utf8.utf8_string_stats", "merge_tables.empty_table"}, names


COLD_RUN = textwrap.dedent("""
    import json, sys
    from numba.core import event
    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            f = ev.data["dispatcher"].py_func
            compiled.append(f.__module__.rsplit(".", 1)[-1] + "." + f.__name__)

        def on_end(self, ev):
            pass

    event.register("numba:compile", Listener())
    from gpu_text.cli import main
    code = main(sys.argv[1:])
    print(json.dumps({"code": code, "compiled": compiled}))
""")


@pytest.mark.slow
def test_a_cold_tokenize_compiles_the_row_encoder_in_the_child_only(tmp_path):
    """A first BPE tokenize on an empty cache: the row encoder (and its merge step) come from the
    child, the ids are those of a run that compiles everything itself, the notice is printed once."""
    import json

    import pyarrow.parquet as pq

    from gpu_text.warmup import NOTICE

    paths = _inputs(tmp_path)
    ids = {}
    for ahead in ("1", "0"):
        out = tmp_path / f"ids-{ahead}.parquet"
        argv = [arg.format(**paths) for arg in WARMUPS["tokenize"][0][:-1]] + [str(out)]
        env = {k: v for k, v in os.environ.items() if k != "GPU_TEXT_COMPILE_NOTICE"}
        env.update(NUMBA_CACHE_DIR=str(tmp_path / f"cache-{ahead}"), PYTHONPATH=str(REPO), GPU_TEXT_BACKEND="cpu",
                   GPU_TEXT_COMPILE_AHEAD=ahead)
        done = subprocess.run([sys.executable, "-c", COLD_RUN, *argv], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["code"] == 0 and done.stderr.count(NOTICE) == 1, done.stderr
        there = {entry.split(":")[0] for entry in compile_ahead.PLANS["tokenize-bpe"][1]}
        if ahead == "1":
            assert not there & set(report["compiled"]), report["compiled"]
        else:
            assert there <= set(report["compiled"])
        ids[ahead] = pq.read_table(out).column(0).to_pylist()
    assert ids["1"] == ids["0"] and ids["1"]


def test_the_warmup_command_runs_without_a_child(monkeypatch):
    """``gpu-text warmup`` turns compile-ahead off for the commands it runs (and back on after)."""
    from gpu_text import warmup as warmup_module

    assert warmup_module.AHEAD_VAR == compile_ahead.DISABLE_VAR
    monkeypatch.delenv(compile_ahead.DISABLE_VAR, raising=False)
    seen = []

    def fake_main(argv):
        seen.append(os.environ.get(compile_ahead.DISABLE_VAR))
        return 0

    warmup_module.warmup(fake_main, ["score"])
    assert seen == ["0"] and compile_ahead.DISABLE_VAR not in os.environ
