"""Backend dispatch: names, environment default, and the error when CUDA is not usable."""
from __future__ import annotations

import pytest

from gpu_text import utf8
from gpu_text.backend import BackendUnavailable, cuda_unavailable_reason, get_backend


def test_cpu_and_auto(monkeypatch):
    assert get_backend("cpu").name == "cpu"
    monkeypatch.delenv("GPU_TEXT_BACKEND", raising=False)
    expected = "cuda" if cuda_unavailable_reason() is None else "cpu"
    assert get_backend().name == expected
    assert get_backend("AUTO").name == expected


def test_environment_variable_sets_the_default(monkeypatch):
    monkeypatch.setenv("GPU_TEXT_BACKEND", "cpu")
    assert get_backend().name == "cpu"
    monkeypatch.setenv("GPU_TEXT_BACKEND", "quantum")
    with pytest.raises(ValueError, match="quantum"):
        get_backend()


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="a GPU is present, so 'cuda' does not fail here")
def test_cuda_without_gpu_says_why():
    with pytest.raises(BackendUnavailable, match="backend='cuda' was requested but"):
        get_backend("cuda")
    with pytest.raises(BackendUnavailable):
        utf8.decode(["x"], backend="cuda")


def test_ops_resolve_to_twins_with_the_same_name():
    cpu = get_backend("cpu")
    assert cpu.op("utf8", "utf8_decode").__name__ == "utf8_decode"
    with pytest.raises(AttributeError):
        cpu.op("utf8", "no_such_kernel")
