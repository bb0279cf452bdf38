"""benchmarks/cold_start.py's environment: a cold run starts from empty caches whatever the caller's."""
from __future__ import annotations

from pathlib import Path

from benchmarks.cold_start import _environment


def test_cold_runs_use_only_their_own_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_TEXT_TABLE_CACHE", "/tmp/somebody-elses-tables")
    monkeypatch.setenv("GPU_TEXT_COMPILE_AHEAD", "0")
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/tmp/somebody-elses-numba")
    env = _environment(tmp_path, ahead=True)
    assert "GPU_TEXT_TABLE_CACHE" not in env  # the tables then live under XDG_CACHE_HOME, fresh
    assert "GPU_TEXT_COMPILE_AHEAD" not in env
    assert Path(env["NUMBA_CACHE_DIR"]) == tmp_path / "numba" and Path(env["XDG_CACHE_HOME"]) == tmp_path / "xdg"
    assert _environment(tmp_path, ahead=False)["GPU_TEXT_COMPILE_AHEAD"] == "0"
