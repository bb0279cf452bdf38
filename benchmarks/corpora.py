"""Benchmark text: the shared research corpora when present, else the bundled public-domain sample."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GPU_TEXT_SHARED_DATA", REPO.parent / "shared" / "data"))
SAMPLES = REPO / "gpu_text" / "data" / "samples"

# name -> (files under shared/data, bundled fallback)
CORPORA = {
    "zh": (["zh-sogou-news"], "zh-hongloumeng.txt"),
    "en": (["en-gutenberg", "en-kjv"], "en-kjv.txt"),
}


def load_lines(name: str, limit_bytes: int | None = None) -> tuple[list[bytes], str]:
    """Lines (bytes, without newlines) of corpus ``name`` and a description of where they came from."""
    folders, sample = CORPORA[name]
    files = []
    for folder in folders:
        if (SHARED / folder).is_dir():
            files += sorted(p for p in (SHARED / folder).rglob("*") if p.is_file() and not p.name.startswith(("SOURCE", "README")))
    source = f"shared/data/{'+'.join(folders)}" if files else f"bundled sample {sample}"
    files = files or [SAMPLES / sample]
    lines: list[bytes] = []
    total = 0
    for path in files:
        for line in path.read_bytes().split(b"\n"):
            lines.append(line)
            total += len(line)
            if limit_bytes and total >= limit_bytes:
                return lines, source
    return lines, source
