"""Bulk tokenizing (the main job): stream documents (any input :mod:`gpu_text.documents` reads)
through a tokenizer into one of the outputs of :mod:`gpu_text.outputs`: Parquet (a
``list<int32>`` ids column, optionally offsets), a flat ``.npy`` pair, a Megatron-LM indexed
dataset (``.bin`` + ``.idx``) or a Hugging Face ``datasets`` directory, optionally packed into
fixed-length rows for pretraining, with the job's statistics in a JSON file beside it. The
command line is ``gpu-text tokenize`` (:mod:`gpu_text.tokenizer.commands`); a job of many input
shards, one output shard each, resumable and spread over worker processes, is
:mod:`gpu_text.jobs`, built on :func:`encode_documents` and :func:`open_token_writer` here.

Reading, encoding and writing overlap (:func:`gpu_text.pipeline.run_pipeline`: the reading and
the writing on their own threads, bounded queues between them), so memory stays bounded by a few
chunks whatever the input size; documents are never dropped or reordered (the count of documents
read and rows written is checked at the end), and an output appears only whole (written under a
temporary name, renamed on success).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
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
class EncodedChunk:
    """One encoded batch on its way to the writer thread: the documents (their file, number and
    text) and their host ids (and token byte spans, with offsets)."""

    documents: Documents
    ids: RaggedArray
    starts: RaggedArray | None
    ends: RaggedArray | None


def encode_documents(tokenizer: Any, inputs: Sequence[str | Path], write: Callable[[EncodedChunk], Any],
                     progress: Any = None, field: str = "text", with_offsets: bool = False,
                     backend: str | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES, add_bos: bool = False,
                     add_eos: bool = False, format: str | None = None,
                     max_document_bytes: int | None = None) -> JobStats:
    """Read ``inputs`` in chunks, encode each and hand it to ``write`` (on the writer thread), in
    order, reading, encoding and writing overlapped (:func:`gpu_text.pipeline.run_pipeline`);
    returns the counts of what was written. ``progress`` (anything with ``update(n)``) advances by
    the input bytes read. A failure of encoding or writing names the file and its documents.

    >>> from gpu_text.demo import MODEL
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "docs.txt"); _ = open(path, "w").write("Hello world\\nbye\\n")
    >>> chunks = []
    >>> stats = encode_documents(load_tokenizer(MODEL), [path], chunks.append, backend="cpu")
    >>> stats.documents, stats.tokens, [chunk.ids.to_pylist() for chunk in chunks]
    (2, 8, [[[1607, 1052, 1479, 1304, 321], [1493, 1491, 1474]]])
    >>> stats.stages.items  # the pipeline's stage times (gpu_text.pipeline.PipelineStats)
    1
    """
    from gpu_text.cli_helpers import failing_documents
    from gpu_text.pipeline import run_pipeline

    job = JobStats()
    started = time.perf_counter()
    chunk_bytes, lanes, lane_context = encoding_lanes(backend, chunk_bytes)
    encode = chunk_encoder(tokenizer, backend, with_offsets, add_bos, add_eos)

    def written(encoded: EncodedChunk) -> None:
        documents = encoded.documents
        with failing_documents(documents.path, documents.first, len(documents.batch)):
            write(encoded)
        job.add(documents.path, documents.first, documents.batch.nbytes, encoded.ids.lengths)
        show_rates(progress, job.documents, job.tokens, time.perf_counter() - started)

    job.stages = run_pipeline(iter_documents(inputs, field, chunk_bytes, progress, format, max_document_bytes),
                              encode, written, lanes=lanes, lane_context=lane_context)
    return job


def encoding_lanes(backend: str | None, chunk_bytes: int) -> tuple[int, int, Any]:
    """The chunk size, compute lanes and lane context a pipeline encodes with on ``backend``: on
    a GPU two chunks encode at once, each on its own stream (see ``Backend.compute_lanes``), and
    chunks shrink to fit the device's free memory, all lanes at once.

    >>> encoding_lanes("cpu", 1 << 20)[:2]
    (1048576, 1)
    """
    from gpu_text.backend import get_backend

    resolved = get_backend(backend)
    lanes, lane_context = resolved.compute_lanes()
    free_bytes = getattr(resolved.runtime, "free_bytes", None)
    if free_bytes is not None:
        from gpu_text.cuda_runtime import device_chunk_bytes

        chunk_bytes = device_chunk_bytes(chunk_bytes, free_bytes(), lanes)
    return chunk_bytes, lanes, lane_context


def chunk_encoder(tokenizer: Any, backend: str | None = None, with_offsets: bool = False, add_bos: bool = False,
                  add_eos: bool = False) -> Callable[[Documents], EncodedChunk]:
    """What a pipeline's compute stage does to a chunk of documents: encode it, ids (and spans)
    brought to the host; a failure names the file and the documents.

    >>> from gpu_text.demo import MODEL
    >>> from gpu_text.documents import Documents
    >>> from gpu_text.batch import TextBatch
    >>> encode = chunk_encoder(load_tokenizer(MODEL), "cpu")
    >>> encode(Documents("a.txt", 1, TextBatch.from_strings(["bye"]))).ids.to_pylist()
    [[1493, 1491, 1474]]
    """
    from gpu_text.cli_helpers import failing_documents

    def encode(documents: Documents) -> EncodedChunk:
        with failing_documents(documents.path, documents.first, len(documents.batch)):
            encoding = tokenizer.encode(documents.batch, backend=backend, with_offsets=with_offsets,
                                        add_bos=add_bos, add_eos=add_eos)
            return EncodedChunk(documents, encoding.ids.to_numpy(),
                                encoding.starts.to_numpy() if encoding.starts is not None else None,
                                encoding.ends.to_numpy() if encoding.ends is not None else None)

    return encode


def show_rates(progress: Any, documents: int, tokens: int, seconds: float) -> None:
    """Documents/s and tokens/s beside a tqdm bar's MB/s (a bar without ``set_postfix_str``, or a
    worker's byte counter, shows the bytes only).

    >>> class Bar:
    ...     def set_postfix_str(self, text, refresh=True): print(text)
    >>> show_rates(Bar(), 2000, 10**6, 2.0)
    1.0k docs/s, 500.0k tokens/s
    """
    postfix = getattr(progress, "set_postfix_str", None)
    if postfix is None or seconds <= 0:
        return
    postfix(f"{_si(documents / seconds)} docs/s, {_si(tokens / seconds)} tokens/s", refresh=False)


def _si(value: float) -> str:
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.1f}{suffix}"
    return f"{value:.0f}"


def open_token_writer(format: str, output: str, temps: list[str], with_offsets: bool = False, vocab_size: int = 0,
                      eos_id: int = -1, append_eod: bool = False, pack: int | None = None) -> Any:
    """The writer of one ``format`` output named ``output`` (its files written to ``temps``, see
    :func:`gpu_text.outputs.open_writer`), packing rows of ``pack`` tokens in front of it when
    asked (:class:`gpu_text.outputs.packing.PackingWriter`, ``eos_id`` after every document).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "o.parquet")
    >>> type(open_token_writer("parquet", path, [path], eos_id=2, pack=8)).__name__
    'PackingWriter'
    """
    from gpu_text.outputs.packing import PackingWriter

    writer: Any = open_writer(format, output, temps, with_offsets, vocab_size=vocab_size,
                              eod_id=eos_id if append_eod else None)
    return PackingWriter(writer, pack, eos_id) if pack else writer


def close_token_writer(writer: Any, documents: int, nonempty: int, tokens: int, append_eod: bool = False,
                       pack: int | None = None) -> tuple[int, int]:
    """Close a writer of :func:`open_token_writer` that was given ``documents`` documents
    (``nonempty`` of them with tokens, ``tokens`` in all) and check that it wrote a row for each
    (for each packed row with ``pack``); returns the rows and the tokens written (eos ids of
    ``--append-eod`` and packing included).

    >>> import os, tempfile
    >>> import numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "o.npy")
    >>> writer = open_token_writer("npy", path, [path + ".ids", path + ".offsets"])
    >>> writer.write(RaggedArray(np.array([5, 6], np.int32), np.array([0, 2, 2])), None, None)
    >>> close_token_writer(writer, documents=2, nonempty=1, tokens=2)
    (2, 2)
    """
    rows = writer.close()
    expected = writer.rows if pack else documents
    if rows != expected:
        raise RuntimeError(f"read {documents} documents but wrote {rows} rows"
                           + (f" ({expected} packed rows made)" if pack else ""))
    return rows, (writer.tokens if pack else tokens + nonempty * bool(append_eod))


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
    from gpu_text.cli_helpers import atomic_outputs, check_outputs

    if str(output) == "-":
        raise ValueError("the output must be a file or a dataset directory, not '-' (stdout)")
    fmt = format_of(output, output_format)
    check_options(fmt, with_offsets, append_eod, pack)
    eos_id = eos_for(tokenizer, append_eod, pack, add_eos)
    inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    files = output_paths(output, fmt)
    outputs = files + [stats_path(output, fmt)] if stats else files
    check_outputs(inputs, outputs)
    if fmt == "hf":
        from gpu_text.outputs.hf_datasets import check_dataset_output

        check_dataset_output(output, inputs)
    total = total_bytes(inputs)  # a missing input fails before an output is created
    get_backend(backend)  # and so does a backend that cannot run here
    start = time.perf_counter()
    with atomic_outputs(outputs) as temps, tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                                                desc="tokenize", disable=not progress) as bar:
        writer = open_token_writer(fmt, str(output), temps[:len(files)], with_offsets, len(tokenizer), eos_id,
                                   append_eod, pack)
        try:
            job = encode_documents(tokenizer, inputs, lambda e: writer.write(e.ids, e.starts, e.ends), bar,
                                   field, with_offsets, backend, chunk_bytes, add_bos, add_eos, format,
                                   max_document_bytes)
            rows, written = close_token_writer(writer, job.documents, job.documents - job.empty_documents,
                                               job.tokens, append_eod, pack)
        except BaseException:
            writer.discard()
            raise
        summary = job.summary(total, time.perf_counter() - start, format=fmt, rows=rows, tokens_written=written,
                              pack=pack, append_eod=append_eod, output=str(output))
        if stats:
            write_stats(temps[-1], summary)
    return summary


def check_specials(tokenizer: Any, model: str, add_bos: bool = False, add_eos: bool = False,
                   append_eod: bool = False, pack: int | None = None) -> None:
    """Refuse options the model (loaded from ``model``) has no special piece for: ``--add-bos``
    and ``--add-eos`` need its bos and eos, ``--append-eod`` and ``--pack`` its eos. Said before
    any output exists, naming the model.

    >>> from types import SimpleNamespace
    >>> check_specials(SimpleNamespace(bos_id=-1, eos_id=2), "m.model", add_bos=True)
    Traceback (most recent call last):
    ...
    ValueError: m.model: the model has no bos piece, so --add-bos cannot be honoured
    """
    for flag, name, special in ((add_bos, "bos", tokenizer.bos_id), (add_eos, "eos", tokenizer.eos_id)):
        if flag and special < 0:
            raise ValueError(f"{model}: the model has no {name} piece, so --add-{name} cannot be honoured")
    for used, option in ((append_eod, "--append-eod"), (pack, "--pack")):
        if used and tokenizer.eos_id < 0:
            raise ValueError(f"{model}: the model has no eos piece, so {option} cannot end documents with it")


def eos_for(tokenizer: Any, append_eod: bool, pack: int | None, add_eos: bool) -> int:
    """The eos id ``--append-eod`` and ``--pack`` end documents with, checked to exist (-1 when
    neither is asked for).

    >>> from types import SimpleNamespace
    >>> eos_for(SimpleNamespace(eos_id=2), append_eod=True, pack=None, add_eos=False)
    2
    """
    if not (append_eod or pack):
        return -1
    option = "--append-eod" if append_eod else "--pack"
    if add_eos:
        raise ValueError(f"{option} ends documents with the eos id already: drop --add-eos")
    if tokenizer.eos_id < 0:
        raise ValueError(f"the model has no eos piece, so {option} cannot end documents with it")
    return int(tokenizer.eos_id)
