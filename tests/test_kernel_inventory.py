"""Every CUDA kernel has its three twins: a Numba function of the same name in cpu_fallback, a
reference of the same name in tests/reference, and a launch wrapper reaching it in gpu_text.cuda_ops."""
from __future__ import annotations

import importlib
import re

import pytest

from gpu_text.kernel_sources import kernel_families, kernel_source_dir, kernel_source_path

KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+(?:void\s+)?(?:__launch_bounds__\([^)]*\)\s+)?(?:void\s+)?(\w+)\s*\(')


def kernels_of(family: str) -> list[str]:
    return KERNEL.findall(kernel_source_path(family).read_text())


@pytest.mark.parametrize("family", kernel_families())
def test_family_twins(family):
    names = kernels_of(family)
    assert names, f"no kernels found in {family}.cu"
    launchers = importlib.import_module(f"gpu_text.cuda_ops.{family}")
    twins = importlib.import_module(f"cpu_fallback.{family}")
    references = importlib.import_module(f"tests.reference.{family}")
    launcher_source = open(launchers.__file__).read()
    for name in names:
        assert f'"{name}"' in launcher_source, f"kernel {name} is never launched by gpu_text.cuda_ops.{family}"
    public = [n for n in dir(launchers) if not n.startswith("_") and callable(getattr(launchers, n))
              and getattr(getattr(launchers, n), "__module__", "") == launchers.__name__]
    for name in public:
        assert callable(getattr(twins, name, None)), f"cpu_fallback.{family}.{name} is missing"
        assert callable(getattr(references, name, None)), f"tests.reference.{family}.{name} is missing"


def test_no_package_init_in_cuda_folder():
    """A `cuda/__init__.py` would shadow NVIDIA's `cuda` namespace and break CuPy."""
    assert not (kernel_source_dir() / "__init__.py").exists()
