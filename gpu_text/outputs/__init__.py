"""The outputs of bulk tokenizing (:mod:`gpu_text.tokenizer.bulk`), one module per format, every
writer with the same small interface: ``write(ids, starts, ends)`` a chunk of documents (host
:class:`~gpu_text.ragged.RaggedArray` rows; ``starts``/``ends`` the token byte spans or ``None``),
``close() -> rows`` written, ``discard()`` after a failure. Files are written under temporary
names the caller renames when complete (an HF dataset directory renames itself).

=========  ==========================================  ==============================
format     files                                        module
=========  ==========================================  ==============================
parquet    ``OUT.parquet``: ``ids`` ``list<int32>``      :mod:`~.parquet`
npy        ``OUT.ids.npy`` + ``OUT.offsets.npy``         :mod:`~.npy`
megatron   ``PREFIX.bin`` + ``PREFIX.idx``               :mod:`~.megatron`
hf         a ``datasets.load_from_disk`` directory       :mod:`~.hf_datasets`
=========  ==========================================  ==============================

:mod:`~.packing` packs documents into fixed-length rows in front of any of them;
:mod:`~.stats` writes the job's statistics beside the output.

>>> [output_format(name) for name in ("ids.parquet", "ids.npy", "wiki.bin", "ds/", "ids.arrow")]
['parquet', 'npy', 'megatron', 'hf', 'parquet']
>>> output_files("wiki.bin", "megatron"), output_files("ds", "hf")
(['wiki.bin', 'wiki.idx'], [])
"""
from __future__ import annotations

import os
from typing import Any, Protocol

from gpu_text.ragged import RaggedArray

FORMATS = ("parquet", "npy", "megatron", "hf")
WITH_OFFSETS = ("parquet", "hf")  # the formats that can store each token's byte span


class Writer(Protocol):
    """What every output writer does (see the module docstring)."""

    def write(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None) -> None: ...

    def close(self) -> int: ...

    def discard(self) -> None: ...


def output_format(output: str | os.PathLike, format: str | None = None) -> str:
    """``format`` when given (checked), else told by the name: ``.npy`` npy, ``.bin``/``.idx``
    megatron, a trailing ``/`` hf, anything else Parquet (see the module example)."""
    if format is not None:
        if format not in FORMATS:
            raise ValueError(f"the output format must be one of {', '.join(FORMATS)} (got {format!r})")
        return format
    name = str(output)
    if name.endswith(("/", os.sep)):
        return "hf"
    suffix = os.path.splitext(name)[1]
    return {".npy": "npy", ".bin": "megatron", ".idx": "megatron"}.get(suffix, "parquet")


def megatron_prefix(output: str | os.PathLike) -> str:
    """The dataset prefix of a Megatron output named ``PREFIX``, ``PREFIX.bin`` or ``PREFIX.idx``.

    >>> megatron_prefix("data/wiki.bin"), megatron_prefix("data/wiki")
    ('data/wiki', 'data/wiki')
    """
    name = str(output)
    return name[:-4] if name.endswith((".bin", ".idx")) and len(name) > 4 else name


def output_files(output: str | os.PathLike, format: str) -> list[str]:
    """The files a ``format`` output named ``output`` consists of, for the caller to create under
    temporary names and rename (none for ``hf``: its directory moves into place by itself)."""
    from gpu_text.outputs.megatron import megatron_paths

    name = str(output)
    if format == "npy":
        stem = name[:-4] if name.endswith(".npy") else name
        return [f"{stem}.ids.npy", f"{stem}.offsets.npy"]
    if format == "megatron":
        return megatron_paths(megatron_prefix(name))
    if format == "hf":
        return []
    return [name]


def check_options(format: str, with_offsets: bool = False, append_eod: bool = False, pack: int | None = None) -> None:
    """Refuse option combinations a format cannot honour, before anything is read.

    >>> check_options("megatron", with_offsets=True)
    Traceback (most recent call last):
    ...
    ValueError: offsets (token byte spans) are written to parquet and hf outputs only, not megatron
    """
    if pack is not None and (isinstance(pack, bool) or not isinstance(pack, int) or pack < 1):
        raise ValueError(f"the packed length must be a positive integer, got {pack!r}")
    if with_offsets and format not in WITH_OFFSETS:
        raise ValueError(f"offsets (token byte spans) are written to parquet and hf outputs only, not {format}")
    if with_offsets and pack:
        raise ValueError("packed rows cut across documents, so they have no byte spans: drop --offsets or --pack")
    if append_eod and format != "megatron":
        raise ValueError(f"--append-eod is Megatron's option; for a {format} output use --add-eos (or --pack)")
    if append_eod and pack:
        raise ValueError("--pack already ends every document with the eos id: drop --append-eod")


def open_writer(format: str, output: str, temps: list[str], with_offsets: bool = False, vocab_size: int = 0,
                eod_id: int | None = None) -> Any:
    """A writer of ``format`` writing ``temps`` (the temporary names of :func:`output_files`;
    the HF dataset writer makes its own beside ``output``). ``vocab_size`` and ``eod_id`` are
    Megatron's (token dtype, ``--append-eod``).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "o.parquet")
    >>> type(open_writer("parquet", path, [path])).__name__
    'ParquetWriter'
    """
    check_options(format, with_offsets, eod_id is not None)
    if format == "npy":
        from gpu_text.outputs.npy import NpyWriter

        return NpyWriter(*temps)
    if format == "megatron":
        from gpu_text.outputs.megatron import MegatronWriter

        return MegatronWriter(*temps, vocab_size=vocab_size, eod_id=eod_id)
    if format == "hf":
        from gpu_text.outputs.hf_datasets import HFDatasetWriter

        return HFDatasetWriter(output, with_offsets=with_offsets)
    from gpu_text.outputs.parquet import ParquetWriter

    return ParquetWriter(temps[0], with_offsets)


__all__ = ["FORMATS", "Writer", "check_options", "megatron_prefix", "open_writer", "output_files", "output_format"]
