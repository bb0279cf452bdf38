"""Shared fixtures: the backends every differential test runs on, and the shared data folder."""
from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import pytest

from gpu_text.backend import cuda_unavailable_reason, get_backend

DEVICE_CHECK = os.environ.get("GPU_TEXT_DEVICE_CHECK") == "1"
SHARED_DATA = Path(os.environ.get("GPU_TEXT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def kernel_backends() -> list[str]:
    """CPU (Numba), the CUDA kernels under emulation, and the real GPU when one is present."""
    names = ["cpu"]
    skip_emulation = os.environ.get("GPU_TEXT_SKIP_EMULATION") == "1" or (DEVICE_CHECK and not shutil.which("g++"))
    if not skip_emulation:  # in CI a missing g++ must fail, not quietly drop the emulated kernels
        names.append("emulated")
    if cuda_unavailable_reason() is None:
        names.append("cuda")
    return names


def resolve(name: str):
    if name == "emulated":
        from tests.emulated_backend import emulated_backend

        return emulated_backend()
    return get_backend(name)


@pytest.fixture(params=kernel_backends())
def backend(request):
    """Each kernel backend in turn."""
    return resolve(request.param)


def shared_data(relative: str) -> Path:
    """A path under ../shared/data, skipping the test with a clear reason when it is absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"needs {path} (the research data folder beside the repository); absent here")
    return path


def require(module: str):
    """Import a test-only dependency. CI installs them all, so a missing one fails there; the
    device check (GPU machine without internet, GPU_TEXT_DEVICE_CHECK=1) skips what it lacks."""
    if DEVICE_CHECK:
        return pytest.importorskip(module, reason=f"{module} is not installed on this machine")
    return importlib.import_module(module)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Commands that cache built models (``gpu-text segment``'s segmenter) write to a per-session
    folder, never to the user's ``~/.cache``."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))
    # the first-compile notice is a stderr line that tests asserting exact stderr would see on a
    # cold cache (tests/test_warmup.py checks the notice itself)
    monkeypatch.setenv("GPU_TEXT_COMPILE_NOTICE", "0")
