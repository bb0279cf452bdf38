"""Every docstring example in the package runs and prints what it shows."""
from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import gpu_text

# the benchmark helpers that run on a GPU machine only are checked here on the CPU
CPU_FALLBACK = Path(__file__).resolve().parents[1] / "cpu_fallback"
MODULES = sorted(m.name for m in pkgutil.walk_packages(gpu_text.__path__, "gpu_text.")) + [
    "benchmarks.harness", "benchmarks.plots", "benchmarks.report", "benchmarks.tokenize", "benchmarks.training"] + [
    # the Numba twins' examples too, imported as the package they are in the repository
    f"cpu_fallback.{m.name}" for m in pkgutil.iter_modules([str(CPU_FALLBACK)])]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
