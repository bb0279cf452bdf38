"""The bulk job's reading and writing, each beside what it replaced, on the same data in one run.

- Reading a text file into batches of lines: gpu_text's reader (``textio.iter_line_batches``,
  lines split 8 bytes at a time from one reused buffer) vs ``bytes`` chunks split with numpy
  (``iter_line_chunks`` + ``lines_to_batch``, the reader before) and vs Python's ``for line in file``.
- Writing the ids of those lines (encoded once beforehand by the bundled sample model): gpu_text's
  Parquet ids writer vs pyarrow's ``ParquetWriter`` (its defaults: dictionary, snappy), and the
  Megatron writer past the page cache (``O_DIRECT``) vs through it (``GPU_TEXT_DIRECT_IO=0``).

Throughput is text bytes per second (wall); a reading row says the file's bytes, a writing row the
text the ids came from; the notes give each row's median CPU seconds, which is what a writer takes
from the encoder in a job (its wall time overlaps the encoding). Each output is removed after each
repetition, so the page-cache writer here reuses warm pages: the cost of growing the page cache
into memory a job has not touched shows in ``python -m benchmarks bulk_cli``, not here.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement, measure
from gpu_text.ragged import RaggedArray

READ_PEER = "iter_line_chunks + lines_to_batch (numpy)"
PARQUET_PEER = "pyarrow ParquetWriter (defaults)"
MEGATRON_PEER = "Megatron writer through the page cache"


def _timed(fn: Callable[[], None], repeat: int) -> tuple[list[float], str]:
    """Wall seconds of ``repeat`` calls (:func:`measure`) and their median CPU seconds, as a note."""
    cpu: list[float] = []

    def call() -> None:
        start = time.process_time()
        fn()
        cpu.append(time.process_time() - start)

    seconds = measure(call, repeat)
    return seconds, f"CPU {statistics.median(cpu[1:] or cpu):.3f} s"


def _read_rows(path: Path, repeat: int, name: str) -> list[Measurement]:
    from gpu_text.textio import iter_line_batches, iter_line_chunks, lines_to_batch

    size = path.stat().st_size

    def ours() -> None:
        with open(path, "rb") as stream:
            for _ in iter_line_batches(stream):
                pass

    def chunks() -> None:
        with open(path, "rb") as stream:
            for chunk in iter_line_chunks(stream):
                lines_to_batch(chunk)

    def python_lines() -> None:
        with open(path, "rb") as stream:
            for _ in stream:
                pass

    rows = []
    for implementation, fn, peer, note in ((READ_PEER, chunks, None, ""),
                                          ("Python for line in file", python_lines, READ_PEER, "lines only, no batch; "),
                                          ("gpu_text iter_line_batches", ours, READ_PEER, "")):
        seconds, cpu = _timed(fn, repeat)
        rows.append(Measurement("bulk_io", name, implementation, 1, seconds, size, peer=peer, notes=note + cpu))
    return rows


def _write_rows(chunks: list[RaggedArray], text_bytes: int, folder: Path, repeat: int,
                name: str) -> list[Measurement]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gpu_text.outputs.direct_file import DIRECT_VAR
    from gpu_text.outputs.megatron import MegatronWriter
    from gpu_text.outputs.parquet_ids import ParquetIdsWriter

    out = folder / "out"

    def pyarrow_parquet() -> None:
        schema = pa.schema([pa.field("ids", pa.list_(pa.int32()))])
        with pq.ParquetWriter(out, schema) as writer:
            for ids in chunks:
                column = pa.ListArray.from_arrays(pa.array(np.asarray(ids.offsets, np.int32)), pa.array(ids.values))
                writer.write_table(pa.Table.from_arrays([column], schema=schema))
        out.unlink()

    def ours_parquet() -> None:
        writer = ParquetIdsWriter(str(out))
        for ids in chunks:
            writer.write(ids)
        writer.close()
        out.unlink()

    def megatron(direct: str) -> None:
        os.environ[DIRECT_VAR] = direct
        try:
            writer = MegatronWriter(str(out) + ".bin", str(out) + ".idx", vocab_size=4259)
            for ids in chunks:
                writer.write(ids, None, None)
            writer.close()
        finally:
            del os.environ[DIRECT_VAR]
        for suffix in (".bin", ".idx"):
            os.unlink(str(out) + suffix)

    tokens = sum(ids.values.size for ids in chunks)
    rows = []
    for implementation, fn, peer in ((PARQUET_PEER, pyarrow_parquet, None),
                                     ("gpu_text ParquetIdsWriter", ours_parquet, PARQUET_PEER),
                                     (MEGATRON_PEER, lambda: megatron("0"), None),
                                     ("gpu_text Megatron writer (O_DIRECT)", lambda: megatron("1"), MEGATRON_PEER)):
        seconds, cpu = _timed(fn, repeat)
        rows.append(Measurement("bulk_io", name, implementation, 1, seconds, text_bytes, peer=peer,
                                notes=f"{tokens} ids; {cpu}"))
    return rows


def run(config: Config) -> list[Measurement]:
    from gpu_text.demo import MODEL
    from gpu_text.documents import iter_documents
    from gpu_text.tokenizer.bulk import load_tokenizer

    limit = 4 << 20 if config.quick else 128 << 20
    rows: list[Measurement] = []
    tokenizer = load_tokenizer(MODEL)
    with tempfile.TemporaryDirectory(prefix="gpu-text-bulk-io-") as scratch:
        folder = Path(scratch)
        lines = [line for dataset in ("zh", "en") for line in load_lines(dataset, limit // 2)[0]]
        path = folder / "text.txt"
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        del lines
        name = f"zh+en corpora, {path.stat().st_size / 1e6:.0f} MB"
        rows += _read_rows(path, config.repeat, name)
        chunks = [tokenizer.encode(documents.batch, backend="cpu").ids.to_numpy() for documents in
                  iter_documents(str(path))]
        rows += _write_rows(chunks, path.stat().st_size, folder, config.repeat, name)
    return rows
