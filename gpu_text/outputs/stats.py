"""Statistics of a tokenizing job, written as JSON beside its output (``OUT.stats.json``, :func:`stats_path`):
documents (and how many were empty), tokens, bytes of input files and of document text, tokens
per text byte, the longest document (its tokens, file and number there), the rows and tokens
written (packing and ``--append-eod`` change them), seconds and MB/s.

>>> import numpy as np
>>> stats = JobStats()
>>> stats.add("a.txt", 1, text_bytes=12, lengths=np.array([3, 0, 5]))
>>> stats.add("b.txt", 1, text_bytes=4, lengths=np.array([1]))
>>> summary = stats.summary(input_bytes=20, seconds=2.0)
>>> summary["documents"], summary["tokens"], summary["tokens_per_byte"], summary["longest_document"]
(4, 9, 0.5625, {'tokens': 5, 'file': 'a.txt', 'document': 3})
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np


class JobStats:
    """Counts accumulated batch by batch (:meth:`add`), summed up by :meth:`summary`; ``stages``:
    the reading, encoding and writing times of the job's pipeline once it ran
    (:class:`gpu_text.pipeline.PipelineStats`, what ``--verbose`` prints), not in the summary."""

    def __init__(self) -> None:
        self.documents = self.empty_documents = self.tokens = self.text_bytes = 0
        self.longest: dict[str, Any] = {"tokens": 0, "file": None, "document": None}
        self.stages: Any = None

    def add(self, path: str, first: int, text_bytes: int, lengths: np.ndarray) -> None:
        """A batch of ``len(lengths)`` documents of ``path``, the first numbered ``first`` there,
        holding ``text_bytes`` bytes of text and ``lengths`` tokens each."""
        lengths = np.asarray(lengths)
        self.documents += int(lengths.size)
        self.empty_documents += int((lengths == 0).sum())
        self.tokens += int(lengths.sum())
        self.text_bytes += int(text_bytes)
        if lengths.size and int(lengths.max()) > self.longest["tokens"]:
            at = int(np.argmax(lengths))  # the first of the longest: ties keep the earlier document
            self.longest = {"tokens": int(lengths[at]), "file": str(path), "document": first + at}

    def summary(self, input_bytes: int, seconds: float, **extra: Any) -> dict[str, Any]:
        """Everything as a JSON-ready dict; ``extra`` (output format, rows written...) is added last."""
        return {"documents": self.documents, "empty_documents": self.empty_documents, "tokens": self.tokens,
                "bytes": int(input_bytes), "text_bytes": self.text_bytes,
                "tokens_per_byte": round(self.tokens / self.text_bytes, 6) if self.text_bytes else None,
                "longest_document": dict(self.longest), "seconds": round(seconds, 3),
                "mb_per_s": round(input_bytes / 1e6 / seconds, 2) if seconds > 0 else None, **extra}


def stats_path(output: str | os.PathLike, format: str | None = None) -> str:
    """Where the statistics of a job writing ``output`` go: the output's name plus
    ``.stats.json``; a Megatron dataset's prefix (``.bin``/``.idx`` dropped) or an HF dataset
    directory's name (no trailing slash) stands for its output. Outputs of other formats with
    the same stem keep their own statistics (``ids.parquet.stats.json``, ``ids.npy.stats.json``).

    >>> stats_path("out/ids.parquet"), stats_path("ids.npy"), stats_path("wiki.bin", "megatron"), stats_path("ds/")
    ('out/ids.parquet.stats.json', 'ids.npy.stats.json', 'wiki.stats.json', 'ds.stats.json')
    """
    name = str(output).rstrip("/") or str(output)
    if format == "megatron" and name.endswith((".bin", ".idx")) and len(name) > 4:
        name = name[:-4]
    return f"{name}.stats.json"


def write_stats(path: str, summary: dict[str, Any]) -> None:
    """``summary`` as indented JSON at ``path`` (the caller gives a temporary name to rename).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "s.json"); write_stats(path, {"documents": 1})
    >>> json.load(open(path))
    {'documents': 1}
    """
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2)
        handle.write("\n")


__all__ = ["JobStats", "stats_path", "write_stats"]
