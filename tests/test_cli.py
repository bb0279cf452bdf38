"""The gpu-text command line."""
from __future__ import annotations

import json
import subprocess
import sys

from gpu_text.cli import main


def test_info_json(capsys):
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["backend"] in ("cpu", "cuda")
    assert info["numba_threads"] >= 1
    assert info["numba_threading_layer"] in ("omp", "tbb", "workqueue")
    assert info["nvrtc"][0].isdigit()
    if info["backend"] == "cuda":
        assert info["device"]["memory_total_gib"] > 0
    else:
        assert info["device"] is None and info["cuda_unavailable_reason"]


def test_console_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "gpu_text.cli", "info"], capture_output=True, text=True, check=True)
    assert "backend" in out.stdout and "gpu_text" in out.stdout


def test_no_subcommand_prints_help(capsys):
    assert main([]) == 2
    assert "info" in capsys.readouterr().out


def test_only_the_process_entry_point_tunes_and_freezes_the_collector(monkeypatch, capsys):
    # the console script (no argv) collects rarely and skips the exit's full collection; callers
    # passing argv keep their collector
    import gpu_text.cli as cli

    frozen, thresholds = [], []
    monkeypatch.setattr(cli.gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setattr(cli.gc, "set_threshold", lambda *levels: thresholds.append(levels))
    monkeypatch.setattr(cli.sys, "argv", ["gpu-text", "--version"])
    assert cli.main() == 0 and frozen == [True] and thresholds == [cli.ENTRY_GC_THRESHOLDS]
    assert cli.main(["--version"]) == 0 and frozen == [True] and len(thresholds) == 1
    assert capsys.readouterr().out.count("gpu_text ") == 2
