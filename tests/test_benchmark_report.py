"""The benchmark report (``python -m benchmarks report``): the writer on synthetic rows, curves and
size points gives the markdown tables, strict JSON and real PNG plots; the pieces of the size sweep;
and the command end to end on one cheap benchmark."""
from __future__ import annotations

import doctest
import json
import struct
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from benchmarks import plots, report
from benchmarks.harness import Config, Measurement, row_record, training_curve
from tests.conftest import require

REPO = Path(__file__).resolve().parents[1]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path, min_width: int = 400, min_height: int = 200) -> None:
    """A PNG file, of a real size, with something drawn on it (many colours, not one flat fill)."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= min_width and height >= min_height, (width, height)
    assert len(data) > 10_000, f"{path} is only {len(data)} bytes"
    import matplotlib.image
    import numpy as np

    pixels = matplotlib.image.imread(path)
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 20


def synthetic_payload() -> dict:
    """Two benchmarks (one with a peer and a curve, one failed) and a size sweep."""
    rows = [Measurement("tokenize", "zh 1 MB", "sentencepiece@2", 2, [0.4, 0.5, 0.6], 1_000_000),
            Measurement("tokenize", "zh 1 MB", "gpu_text[cpu]", 2, [0.25], 1_000_000, peer="sentencepiece@2",
                        extra={"curves": [training_curve("fake loss", "epoch", "loss",
                                                         [(1, 5.0), (2, 3.0), (3, 2.5)])]}),
            Measurement("tokenize", "en 2 MB", "gpu_text[cuda]", "GPU", [0.0], 2_000_000, notes="too fast to time")]
    crf = [Measurement("crf", "pd 100 lines", "gpu_text[cpu] CRF l-bfgs", 2, [0.1, 0.2], 5_000,
                       extra={"curves": [training_curve("gpu_text[cpu]", "iteration", "objective",
                                                        [(i, 1000.0 / i) for i in range(1, 21)])]})]
    benchmarks = [{"name": "tokenize", "status": "ok", "reason": None, "seconds": 1.5,
                   "rows": [row_record(m, rows) for m in rows],
                   "curves": [{"benchmark": "tokenize", **c} for m in rows for c in m.extra.get("curves", [])]},
                  {"name": "crf", "status": "ok", "reason": None, "seconds": 2.0,
                   "rows": [row_record(m, crf) for m in crf],
                   "curves": [{"benchmark": "crf", **c} for m in crf for c in m.extra["curves"]]},
                  {"name": "lda", "status": "failed", "reason": "RuntimeError: boom", "seconds": 0.1, "rows": [],
                   "curves": []}]
    points = [{"op": op, "mode": mode, "bytes": size, "seconds": [size / speed], "median_s": size / speed,
               "mb_per_s": speed / 1e6, **({"peak_rss_mb": 300.0} if mode == "cli" else {})}
              for op in ("tokenize", "segment") for size in (1_000_000, 4_000_000, 16_000_000)
              for mode, speed in (("in-process", 8e6), ("cli", 8e6 * size / (size + 6e6)))]
    benchmarks.append({"name": "scaling", "status": "ok", "reason": None, "seconds": 30.0, "rows": [], "curves": [],
                       "scaling": {"backend": "cpu", "corpus": "bundled", "model": "m.txt", "dictionary": "none",
                                   "points": points, "warmup": {"tokenize": {"first_cli_s": 7.0}}, "stopped": None}})
    return {"generated_utc": "2026-12-01 12:00 UTC", "command": "python -m benchmarks report --quick",
            "config": {"quick": True, "repeat": 3, "budget_s": None},
            "git": {"commit": "abc123def456789", "dirty": True},
            "hardware": {"cpu": "Test CPU 9000", "cores": 2, "memory_gib": 8.0, "gpu": None, "python": "3.11"},
            "environment": {"gpu_text": "0.1.0", "backend": "cpu", "device": None, "cuda_unavailable_reason": "no GPU"},
            "benchmarks": benchmarks}


def strict_json(path: Path) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{path} holds {constant}, which JSON does not allow")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_report_writer_tables_json_and_plots(tmp_path):
    require("matplotlib")
    md = report.write_report(synthetic_payload(), tmp_path).read_text()
    assert md.startswith("# gpu_text benchmark report")
    assert "Test CPU 9000 (2 cores, 8.0 GiB), no GPU" in md and "commit abc123def456 (with uncommitted changes)" in md
    assert "| lda | failed: RuntimeError: boom | 0.1 | 0 | 0 |" in md and "| scaling | ok | 30.0 | 12 | 0 |" in md
    # the rows table: median of [0.4, 0.5, 0.6] is 0.5 s for 1 MB; ours 0.25 s, so 2x the peer
    assert "| zh 1 MB | sentencepiece@2 | 2 | 0.5000 | 2.0 |  |  |" in md
    assert "| zh 1 MB | gpu_text[cpu] | 2 | 0.2500 | 4.0 | 2.00x sentencepiece@2 |  |" in md
    # the size sweep: 1 MB in-process at 8 MB/s; the CLI takes (1 + 6) / 8 s, 1.14 MB/s, 0.14 of it
    assert "| tokenize | 1.0 | 1 | 8.00 | 1.14 | 0.14 | 0.87 | 300 |" in md
    assert "| segment | 16.0 | 1 | 8.00 | 5.82 | 0.73 | 2.75 | 300 |" in md
    assert "| crf | gpu_text[cpu] |  | iteration | objective | 20 | 1000 | 50 |" in md
    for image in ("throughput_tokenize.png", "throughput_crf.png", "scaling.png", "curves.png"):
        assert f"]({image})" in md
        assert_png(tmp_path / image)
    assert not (tmp_path / "throughput_lda.png").exists()  # a failed benchmark has no rows to draw
    saved = strict_json(tmp_path / "report.json")
    assert sorted(saved["plots"]) == ["curves.png", "scaling.png", "throughput_crf.png", "throughput_tokenize.png"]
    tokenize = saved["benchmarks"][0]["rows"]
    assert [r["ratio_to_peer"] for r in tokenize] == [None, 2.0, None]
    assert tokenize[2]["bytes_per_s"] is None  # a median of 0 s: infinite throughput, stored as null
    assert saved["benchmarks"][0]["curves"][0]["points"] == [[1.0, 5.0], [2.0, 3.0], [3.0, 2.5]]


def test_report_without_matplotlib_then_rendered_from_the_json(tmp_path, monkeypatch):
    require("matplotlib")
    monkeypatch.setattr(plots, "available", lambda: "matplotlib is not installed here (test)")
    md = report.write_report(synthetic_payload(), tmp_path).read_text()
    assert "Plots: none here, matplotlib is not installed here (test)" in md and ".png)" not in md
    assert not list(tmp_path.glob("*.png"))
    monkeypatch.undo()
    assert report.main(["--render", str(tmp_path)]) == 0  # as on a CPU machine after the device check
    assert "](scaling.png)" in (tmp_path / "REPORT.md").read_text()
    assert_png(tmp_path / "scaling.png")
    assert strict_json(tmp_path / "report.json")["plots_missing"] is None


def test_plots_draw_nothing_from_nothing(tmp_path):
    require("matplotlib")
    assert plots.throughput_plot("b", [], tmp_path / "t.png") is None
    assert plots.scaling_plot([], tmp_path / "s.png") is None
    assert plots.curves_plot([{"benchmark": "b", "name": "n", "x_label": "x", "y_label": "y",
                               "points": [[1.0, None]]}], tmp_path / "c.png") is None
    assert not list(tmp_path.iterdir())


def test_training_curve_keeps_json_valid():
    curve = training_curve("lda", "iteration", "ll/token", [(0, -9.5), (10, float("nan")), (20, float("-inf"))])
    assert curve == {"name": "lda", "x_label": "iteration", "y_label": "ll/token",
                     "points": [[0.0, -9.5], [10.0, None], [20.0, None]]}
    json.dumps(curve, allow_nan=False)


def test_run_benchmark_collects_curves_and_records_failures(monkeypatch):
    good = types.ModuleType("benchmarks.fake_good")
    good.run = lambda config: [Measurement("fake_good", "d", "ours", 1, [1.0], 10 if config.quick else 20,
                                           extra={"curves": [training_curve("c", "x", "y", [(1, 2)])]})]
    bad = types.ModuleType("benchmarks.fake_bad")

    def fail(config):
        raise RuntimeError("measured nothing")

    bad.run = fail
    monkeypatch.setitem(sys.modules, "benchmarks.fake_good", good)
    monkeypatch.setitem(sys.modules, "benchmarks.fake_bad", bad)
    entry = report.run_benchmark("fake_good", Config(quick=True))
    assert entry["status"] == "ok" and entry["rows"][0]["input_bytes"] == 10
    assert entry["curves"] == [{"benchmark": "fake_good", "dataset": "d", "implementation": "ours", "name": "c",
                                "x_label": "x", "y_label": "y", "points": [[1.0, 2.0]]}]
    failed = report.run_benchmark("fake_bad", Config())
    assert (failed["status"], failed["reason"], failed["rows"]) == ("failed", "RuntimeError: measured nothing", [])


def test_write_repeated_streams_whole_lines(tmp_path):
    (tmp_path / "a.txt").write_bytes("一二\n三".encode())  # no final newline: one is added
    (tmp_path / "b.txt").write_bytes(b"xyz\n")
    written = report.write_repeated(tmp_path / "big.txt", 40, [tmp_path / "a.txt", tmp_path / "b.txt"])
    data = (tmp_path / "big.txt").read_bytes()
    assert written == len(data) and 40 <= written < 40 + 11
    assert data.endswith(b"\n") and data.startswith("一二\n三\nxyz\n一二\n".encode())
    assert set(data.decode().split("\n")) == {"一二", "三", "xyz", ""}
    (tmp_path / "empty.txt").write_bytes(b"\n\n")
    with pytest.raises(ValueError, match="hold no text"):
        report.write_repeated(tmp_path / "never.txt", 10, [tmp_path / "empty.txt"])


@pytest.mark.slow  # two fresh interpreters; the device check runs the sweep itself
def test_scaling_measures_both_modes_and_keeps_the_budget():
    # a tiny size, then one whose estimate (the first's time x 400) cannot fit the deadline
    sweep = report.scaling(Config(repeat=1), deadline=time.perf_counter() + 120, sizes_mb=[0.25, 100],
                           ops=("tokenize",))
    assert sweep["stopped"] == "before 100 MB: the budget would be exceeded"
    assert [(p["op"], p["mode"]) for p in sweep["points"]] == [("tokenize", "in-process"), ("tokenize", "cli")]
    for point in sweep["points"]:
        assert 250_000 <= point["bytes"] < 260_000 and point["mb_per_s"] > 0 and len(point["seconds"]) == 1
    assert sweep["points"][1]["peak_rss_mb"] > 50  # an interpreter with numpy and numba loaded
    assert sweep["warmup"]["tokenize"]["first_cli_s"] > 0


def test_scaling_reports_a_failing_command_and_goes_on(monkeypatch):
    def broken(argv):
        raise RuntimeError(f"gpu-text {argv[0]} exited 2")

    monkeypatch.setattr(report, "fresh_process", broken)
    entry = report.run_scaling(Config(quick=True))
    assert entry["status"] == "failed"
    assert entry["reason"] == ("tokenize: RuntimeError: gpu-text tokenize exited 2; "
                               "segment: RuntimeError: gpu-text segment exited 2")
    assert entry["scaling"]["points"] == []
    assert "Failed: segment: RuntimeError" in "\n".join(report.scaling_table(entry))


@pytest.mark.slow  # about 10-20 s here; the device check runs the command itself
def test_report_command_end_to_end_on_one_benchmark(tmp_path):
    require("matplotlib")
    done = subprocess.run([sys.executable, "-m", "benchmarks", "report", "--quick", "--repeat", "1", "--out",
                           str(tmp_path), "utf8_decode"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    md = (tmp_path / "REPORT.md").read_text()
    assert "### utf8_decode" in md and "| utf8_decode | ok |" in md and "gpu_text[cpu] decode" in md
    saved = strict_json(tmp_path / "report.json")
    assert saved["hardware"]["cores"] >= 1 and saved["environment"]["backend"] in ("cpu", "cuda")
    assert saved["git"]["commit"] is None or len(saved["git"]["commit"]) == 40
    rows = saved["benchmarks"][0]["rows"]
    assert {"CPython bytes.decode", "gpu_text[cpu] decode"} <= {r["implementation"] for r in rows}
    assert all(r["bytes_per_s"] > 0 for r in rows)
    assert_png(tmp_path / "throughput_utf8_decode.png")


def test_bad_arguments_are_refused():
    from benchmarks.__main__ import main

    assert main(["report", "--render", "/nonexistent-folder"]) == 2
    with pytest.raises(SystemExit) as exit:
        report.main(["no_such_benchmark"])
    assert exit.value.code == 2


@pytest.mark.parametrize("module", [report, plots])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
