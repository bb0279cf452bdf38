"""The built wheel carries the CUDA sources and the Numba twins, and finds them when installed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_contains_kernels_and_imports_from_install(tmp_path):
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path)],
                   cwd=REPO, check=True, capture_output=True)
    (wheel,) = tmp_path.glob("gpu_text-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for family in sorted(p.name for p in (REPO / "cuda").iterdir()):
        assert f"gpu_text/_cuda/{family}" in names
    assert "cpu_fallback/utf8.py" in names
    assert not any(n.startswith(("tests/", "cuda/")) for n in names)

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    probe = (
        "import json, gpu_text, cpu_fallback\n"
        "from gpu_text.kernel_sources import kernel_source_dir\n"
        "d = gpu_text.utf8.decode(['A你😀'], backend='cpu')\n"
        "print(json.dumps({'package': gpu_text.__file__, 'twins': cpu_fallback.__file__,\n"
        "                  'kernels': str(kernel_source_dir()), 'decoded': d.codepoints.to_pylist()}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, check=True, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["package"].startswith(str(site))
    assert result["twins"].startswith(str(site))
    assert result["kernels"] == str(site / "gpu_text" / "_cuda")
    assert (site / "gpu_text" / "_cuda" / "utf8.cu").read_text() == (REPO / "cuda" / "utf8.cu").read_text()
    assert result["decoded"] == [[0x41, 0x4F60, 0x1F600]]
    entry_points = next(site.glob("gpu_text-*.dist-info")) / "entry_points.txt"
    assert "gpu-text = gpu_text.cli:main" in entry_points.read_text()
