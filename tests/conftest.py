"""Shared fixtures: the backends every differential test runs on, and the shared data folder."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_text.backend import cuda_unavailable_reason, get_backend

SHARED_DATA = Path(os.environ.get("GPU_TEXT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def kernel_backends() -> list[str]:
    """CPU (Numba), the CUDA kernels under emulation, and the real GPU when one is present."""
    names = ["cpu", "emulated"]
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
