"""Bulk tokenizing (the main job): stream documents (any input :mod:`gpu_text.documents` reads)
through a tokenizer into one of the outputs of :mod:`gpu_text.outputs`: Parquet (a
``list<int32>`` ids column, optionally offsets), a flat ``.npy`` pair, a Megatron-LM indexed
dataset (``.bin`` + ``.idx``) or a Hugging Face ``datasets`` directory, optionally packed into
fixed-length rows for pretraining, with the job's statistics in a JSON file beside it. The
command line is ``gpu-text tokenize`` (:mod:`gpu_text.tokenizer.commands`).

Reading, encoding and writing overlap (:func:`gpu_text.pipeline.run_pipeline`: the reading and
the writing on their own threads, bounded queues between them), so memory stays bounded by a few
chunks whatever the input size; documents are never dropped or reordered (the count of documents
read and rows written is checked at the end), and an output appears only whole (written under a
temporary name, renamed on success).
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_text.documents import DEFAULT_CHUNK_BYTES, Documents, iter_documents, total_bytes
from gpu_text.outputs import check_options, open_writer, output_files
from gpu_text.outputs import output_format as format_of
from gpu_text.outputs.stats import JobStats, stats_path, write_stats
from gpu_text.ragged import RaggedArray


def load_tokenizer(path: str | Path) -> Any:
    """A file of ``Tokenizer.save``, the seed's text model format or a SentencePiece ``.model``,
    told apart by content (:meth:`~gpu_text.tokenizer.Tokenizer.from_file`).

    >>> import gpu_text, pathlib, tempfile
    >>> saved = pathlib.Path(tempfile.mkdtemp()) / "saved.bin"  # any name
    >>> load_tokenizer(pathlib.Path(gpu_text.__file__).parent / "data/models/sample-bpe-4k.txt").save(saved)
    >>> load_tokenizer(saved).encode(["In the beginning"]).ids.to_pylist()
    [[1514, 1478, 263, 612, 270, 1478, 318]]
    """
    from gpu_text.tokenizer.tokenizer import Tokenizer

    return Tokenizer.from_file(path)


def output_paths(output: str | Path, format: str | None = None, stats: bool = False) -> list[str]:
    """The files :func:`tokenize_files` writes for ``output`` in ``format`` (told by the name when
    ``None``, :func:`gpu_text.outputs.output_format`): itself, ``OUT.ids.npy`` and
    ``OUT.offsets.npy`` for ``OUT.npy``, ``PREFIX.bin`` and ``PREFIX.idx`` for Megatron (none for an
    HF dataset directory), and with ``stats`` the statistics JSON.

    >>> output_paths("ids.npy"), output_paths("ids.parquet", stats=True)
    (['ids.ids.npy', 'ids.offsets.npy'], ['ids.parquet', 'ids.parquet.stats.json'])
    >>> output_paths("wiki", "megatron")
    ['wiki.bin', 'wiki.idx']
    """
    paths = output_files(output, format_of(output, format))
    return paths + [stats_path(output, format_of(output, format))] if stats else paths


@dataclass
class _Encoded:
    """One encoded batch on its way to the writer thread."""

    documents: Documents
    ids: RaggedArray
    starts: RaggedArray | None
    ends: RaggedArray | None


def tokenize_files(tokenizer: Any, inputs: Sequence[str | Path], output: str | Path, field: str = "text",
                   with_offsets: bool = False, backend: str | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                   add_bos: bool = False, add_eos: bool = False, progress: bool = True, format: str | None = None,
                   max_document_bytes: int | None = None, output_format: str | None = None,
                   append_eod: bool = False, pack: int | None = None, stats: bool = True) -> dict[str, Any]:
    """Tokenize every document of ``inputs`` (read as ``format`` says, see
    :func:`gpu_text.documents.read_documents`) into ``output``, written as ``output_format``
    (``parquet``, ``npy``, ``megatron`` or ``hf``; ``None``: told by the name, see
    :func:`output_paths`). Returns the job's statistics, which ``stats`` also writes beside the
    output (``OUT.stats.json``, :func:`gpu_text.outputs.stats.stats_path`).

    ``append_eod`` (Megatron) ends every non-empty document with the tokenizer's eos id; ``pack``
    joins the documents, each followed by the eos id, and cuts them into rows of ``pack`` tokens,
    the remainder kept as a last shorter row (:mod:`gpu_text.outputs.packing`).

    The outputs are written under temporary names and renamed at the end, so a failure (named
    by input file and documents) leaves no partial output and an older output untouched; an
    output that is one of the inputs is refused before anything is read.

    >>> import os, tempfile
    >>> from gpu_text.demo import MODEL
    >>> d = tempfile.mkdtemp(); docs = os.path.join(d, "docs.txt")
    >>> _ = open(docs, "w").write("Hello world\\n\\nbye\\n")
    >>> summary = tokenize_files(load_tokenizer(MODEL), [docs], os.path.join(d, "ids.npy"), backend="cpu", progress=False)
    >>> summary["documents"], summary["bytes"], sorted(os.listdir(d))
    (3, 17, ['docs.txt', 'ids.ids.npy', 'ids.npy.stats.json', 'ids.offsets.npy'])
    >>> packed = tokenize_files(load_tokenizer(MODEL), [docs], os.path.join(d, "wiki"), output_format="megatron",
    ...                         pack=4, backend="cpu", progress=False, stats=False)
    >>> packed["tokens"], packed["tokens_written"], packed["rows"]  # 5 + 3 tokens, an eos after each: 4 + 4 + 2
    (8, 10, 3)
    """
    from tqdm import tqdm

    from gpu_text.backend import get_backend
    from gpu_text.cli_helpers import atomic_outputs, check_outputs, failing_documents
    from gpu_text.outputs.packing import PackingWriter
    from gpu_text.pipeline import run_pipeline

    if str(output) == "-":
        raise ValueError("the output must be a file or a dataset directory, not '-' (stdout)")
    fmt = format_of(output, output_format)
    check_options(fmt, with_offsets, append_eod, pack)
    eos_id = _eos_for(tokenizer, append_eod, pack, add_eos)
    inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    files = output_paths(output, fmt)
    outputs = files + [stats_path(output, fmt)] if stats else files
    check_outputs(inputs, outputs)
    if fmt == "hf":
        from gpu_text.outputs.hf_datasets import check_dataset_output

        check_dataset_output(output, inputs)
    total = total_bytes(inputs)  # a missing input fails before an output is created
    get_backend(backend)  # and so does a backend that cannot run here
    job = JobStats()
    start = time.perf_counter()

    def encode(documents: Documents) -> _Encoded:
        with failing_documents(documents.path, documents.first, len(documents.batch)):
            encoding = tokenizer.encode(documents.batch, backend=backend, with_offsets=with_offsets,
                                        add_bos=add_bos, add_eos=add_eos)
            return _Encoded(documents, encoding.ids.to_numpy(),
                            encoding.starts.to_numpy() if encoding.starts is not None else None,
                            encoding.ends.to_numpy() if encoding.ends is not None else None)

    def write(encoded: _Encoded) -> None:
        documents = encoded.documents
        with failing_documents(documents.path, documents.first, len(documents.batch)):
            writer.write(encoded.ids, encoded.starts, encoded.ends)
        job.add(documents.path, documents.first, documents.batch.nbytes, encoded.ids.lengths)

    with atomic_outputs(outputs) as temps, tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                                                desc="tokenize", disable=not progress) as bar:
        writer: Any = open_writer(fmt, str(output), temps[:len(files)], with_offsets, vocab_size=len(tokenizer),
                                  eod_id=eos_id if append_eod else None)
        if pack:
            writer = PackingWriter(writer, pack, eos_id)
        try:
            run_pipeline(iter_documents(inputs, field, chunk_bytes, bar, format, max_document_bytes), encode, write)
            rows = writer.close()
        except BaseException:
            writer.discard()
            raise
        expected = writer.rows if pack else job.documents
        if rows != expected:
            raise RuntimeError(f"read {job.documents} documents but wrote {rows} rows"
                               + (f" ({expected} packed rows made)" if pack else ""))
        written = writer.tokens if pack else job.tokens + (job.documents - job.empty_documents) * bool(append_eod)
        summary = job.summary(total, time.perf_counter() - start, format=fmt, rows=rows, tokens_written=written,
                              pack=pack, append_eod=append_eod, output=str(output))
        if stats:
            write_stats(temps[-1], summary)
    return summary


def _eos_for(tokenizer: Any, append_eod: bool, pack: int | None, add_eos: bool) -> int:
    """The eos id ``--append-eod`` and ``--pack`` end documents with, checked to exist."""
    if not (append_eod or pack):
        return -1
    option = "--append-eod" if append_eod else "--pack"
    if add_eos:
        raise ValueError(f"{option} ends documents with the eos id already: drop --add-eos")
    if tokenizer.eos_id < 0:
        raise ValueError(f"the model has no eos piece, so {option} cannot end documents with it")
    return int(tokenizer.eos_id)
