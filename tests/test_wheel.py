"""The built wheel carries the CUDA sources and the Numba twins inside ``gpu_text`` (no other top-level
package), and finds them when installed."""
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
    for twin in sorted(p.name for p in (REPO / "cpu_fallback").glob("*.py")):
        assert f"gpu_text/_cpu_fallback/{twin}" in names
    top_level = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert top_level == {"gpu_text"}, f"the wheel must install no top-level package but gpu_text: {top_level}"
    assert not any("__pycache__" in n or n.endswith((".pyc", ".nbi", ".nbc")) for n in names)

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    probe = (
        "import json, sys, gpu_text\n"
        "from gpu_text.kernel_sources import kernel_source_dir\n"
        "from gpu_text.tokenizer import Tokenizer\n"
        "d = gpu_text.utf8.decode(['A你😀'], backend='cpu')\n"
        "tok = Tokenizer.from_model_file(sys.argv[1])\n"
        "ids = tok.encode(['In the beginning 天地'], backend='cpu').ids.to_pylist()\n"
        "twins = sys.modules['gpu_text._cpu_fallback.utf8'].__file__\n"
        "print(json.dumps({'package': gpu_text.__file__, 'twins': twins,\n"
        "                  'kernels': str(kernel_source_dir()), 'decoded': d.codepoints.to_pylist(), 'ids': ids}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    model = REPO / "gpu_text" / "data" / "models" / "sample-bpe-4k.txt"
    out = subprocess.run([sys.executable, "-c", probe, str(model)], cwd=tmp_path, env=env, check=True,
                         capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["package"].startswith(str(site))
    assert result["twins"].startswith(str(site / "gpu_text" / "_cpu_fallback"))
    # pip --target puts the console script in bin/; every importable name is gpu_text's
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info") and p.name != "bin") == ["gpu_text"]
    assert result["kernels"] == str(site / "gpu_text" / "_cuda")
    assert (site / "gpu_text" / "_cuda" / "utf8.cu").read_text() == (REPO / "cuda" / "utf8.cu").read_text()
    assert result["decoded"] == [[0x41, 0x4F60, 0x1F600]]
    from gpu_text.tokenizer import Tokenizer

    assert result["ids"] == Tokenizer.from_model_file(model).encode(["In the beginning 天地"], backend="cpu").ids.to_pylist()
    entry_points = next(site.glob("gpu_text-*.dist-info")) / "entry_points.txt"
    assert "gpu-text = gpu_text.cli:main" in entry_points.read_text()
