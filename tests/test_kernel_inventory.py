"""Every CUDA kernel has its three twins: a Numba function of the same name in cpu_fallback, a
reference of the same name in tests/reference, and a launch wrapper reaching it in gpu_text.cuda_ops."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from gpu_text.kernel_sources import kernel_families, kernel_source_dir, kernel_source_path

REPO = Path(__file__).resolve().parents[1]

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


@pytest.mark.parametrize("family", kernel_families())
def test_one_stem_per_family(family):
    """A family's twins, launch wrappers and tests are all found by the family's own name."""
    for path in (f"cpu_fallback/{family}.py", f"gpu_text/cuda_ops/{family}.py", f"tests/reference/{family}.py"):
        assert (REPO / path).is_file(), f"{path} is missing"
    assert list((REPO / "tests").glob(f"test_{family}*.py")), f"no tests/test_{family}*.py"


def test_cpu_modules_without_a_cuda_twin_say_so():
    families = set(kernel_families())
    for path in sorted((REPO / "cpu_fallback").glob("*.py")):
        if path.stem in families or path.stem == "__init__":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert "No CUDA" in doc, f"{path.name} has no CUDA twin; its module docstring must say so"
