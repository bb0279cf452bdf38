"""gpu_text: GPU-accelerated text processing with a Numba CPU path behind the same API.

Batches of strings are Arrow-style ragged arrays (:class:`TextBatch`); results are ragged too
(:class:`RaggedArray`). Every operation takes ``backend="auto" | "cuda" | "cpu"``.

>>> import gpu_text
>>> batch = gpu_text.TextBatch.from_strings(["A你😀", ""])
>>> [list(map(hex, row)) for row in gpu_text.utf8.decode(batch, backend="cpu").codepoints.to_pylist()]
[['0x41', '0x4f60', '0x1f600'], []]
"""
from __future__ import annotations

__version__ = "0.1.0"

from gpu_text import utf8
from gpu_text.backend import Backend, BackendUnavailable, get_backend
from gpu_text.batch import TextBatch
from gpu_text.ragged import RaggedArray

__all__ = [
    "Backend",
    "BackendUnavailable",
    "RaggedArray",
    "TextBatch",
    "__version__",
    "get_backend",
    "utf8",
]
