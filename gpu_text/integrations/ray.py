"""Ray Data: tokenize a column of a ``ray.data.Dataset`` on a pool of actors, each of which loads
the tokenizer once, and write the ids as Megatron-LM shards. Ray is imported only when a Ray
object is made (``pip install "ray[data]"``); everything else here runs without it.

- :class:`TokenizeBatch` is the callable class for ``Dataset.map_batches(...,
  batch_format="pyarrow")``: it loads the model (a path: on a cluster, a file on shared storage)
  in its constructor, on the actor, and turns each ``pyarrow.Table`` batch into the same table
  with an ids column added, ``list<int32>``, whose values buffer is the encoder's own (only the
  row offsets are narrowed to int32, as a ``list`` column needs).
- :func:`tokenize_dataset` is that ``map_batches`` call, with ``concurrency`` (actors),
  ``num_gpus`` (per actor) and ``batch_size`` passed through.
- :func:`write_megatron` writes a tokenized dataset as one ``.bin``/``.idx`` pair per block
  (:mod:`gpu_text.outputs.megatron`) plus a ``_manifest.json``; :func:`write_megatron_shard` is
  what each write task does with one block.

``python -m gpu_text.integrations.ray_example IN_DIR OUT_DIR --model M`` runs the whole job
(:mod:`gpu_text.integrations.ray_example`). In a program::

    import ray
    from gpu_text.integrations.ray import tokenize_dataset

    ds = ray.data.read_parquet("shards/")
    ds = tokenize_dataset(ds, "/shared/model.txt", concurrency=8, num_gpus=1, batch_size=4096)
    ds.write_parquet("tokenized/")

>>> import pyarrow as pa
>>> from gpu_text.demo import MODEL
>>> tokenize = TokenizeBatch(MODEL, backend="cpu")  # what each actor holds
>>> out = tokenize(pa.table({"id": [7, 8], "text": ["Hello world", ""]}))
>>> out.column_names, out.schema.field("ids").type, out["ids"].to_pylist()
(['id', 'text', 'ids'], ListType(list<item: int32>), [[1607, 1052, 1479, 1304, 321], []])
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.outputs.arrow_rows import list_column, row_ranges
from gpu_text.ragged import RaggedArray

RAY_MISSING = 'Ray Data is not installed: pip install "ray[data]"'
MANIFEST = "_manifest.json"  # "_": Arrow's dataset discovery skips it, as Ray's readers do


def import_ray() -> Any:
    """The ``ray`` module with ``ray.data`` loaded, or an ``ImportError`` saying how to install it.

    >>> try:
    ...     found = hasattr(import_ray(), "data")
    ... except ImportError as exc:
    ...     found = str(exc) == RAY_MISSING
    >>> found
    True
    """
    try:
        import ray
        import ray.data  # loads the submodule onto the package
    except ImportError as exc:
        raise ImportError(RAY_MISSING) from exc
    return ray


class TokenizeBatch:
    """The callable class ``map_batches`` instantiates once per actor: it loads ``model`` (a path
    to any model file :meth:`Tokenizer.from_file <gpu_text.tokenizer.Tokenizer.from_file>` reads,
    or a ``Tokenizer``, which Ray then ships to the actor with the other arguments) and, for each
    ``pyarrow.Table`` batch, encodes ``column`` on ``backend`` and returns the batch with
    ``output_column`` (``list<int32>``) appended, or replaced where the batch has one already.
    Null texts are empty documents, as for ``gpu-text tokenize`` on Parquet. In a Ray worker
    with CPUs reserved (``num_cpus``), the CPU encoder runs that many Numba threads (at least
    one), so that the actors of a node do not each run one per core.

    >>> import pyarrow as pa
    >>> from gpu_text.demo import MODEL
    >>> tokenize = TokenizeBatch(MODEL, column="body", output_column="body", backend="cpu", add_eos=True)
    >>> tokenize(pa.table({"body": ["bye", None]}))["body"].to_pylist()
    [[1493, 1491, 1474, 2], [2]]
    >>> tokenize(pa.table({"text": ["bye"]}))
    Traceback (most recent call last):
    ...
    KeyError: "the batch has no column 'body' (columns: text)"
    """

    def __init__(self, model: Any, column: str = "text", output_column: str = "ids", backend: str | None = "auto",
                 add_bos: bool = False, add_eos: bool = False) -> None:
        from gpu_text.backend import get_backend
        from gpu_text.tokenizer.bulk import load_tokenizer
        from gpu_text.tokenizer.tokenizer import Tokenizer

        self.tokenizer = model if isinstance(model, Tokenizer) else load_tokenizer(model)
        for flag, name, special in ((add_bos, "bos", self.tokenizer.bos_id), (add_eos, "eos", self.tokenizer.eos_id)):
            if flag and special < 0:
                raise ValueError(f"the model has no {name} piece, so add_{name}=True cannot be honoured")
        # chosen once per actor: "auto" is the GPU Ray gave this actor, or the CPU without one
        self.backend = get_backend(backend)
        cpus = reserved_cpus()
        if cpus is not None:  # Numba would run a thread per core of the node, whatever Ray reserved
            import numba

            numba.set_num_threads(max(1, min(int(cpus), numba.config.NUMBA_NUM_THREADS)))
        self.column, self.output_column = column, output_column
        self.add_bos, self.add_eos = add_bos, add_eos

    def __call__(self, batch: Any) -> Any:
        """``batch`` (a ``pyarrow.Table``) with the ids of its ``column`` added."""
        import pyarrow as pa

        from gpu_text.batch import TextBatch

        if not isinstance(batch, pa.Table):
            raise TypeError(f"TokenizeBatch takes pyarrow tables (map_batches(..., batch_format='pyarrow')), "
                            f"got {type(batch).__name__}")
        if self.column not in batch.column_names:
            raise KeyError(f"the batch has no column {self.column!r} (columns: {', '.join(batch.column_names)})")
        try:
            texts = TextBatch.from_arrow(batch.column(self.column), nulls="empty")
        except TypeError as exc:
            raise TypeError(f"column {self.column!r}: {exc}") from None
        encoding = self.tokenizer.encode(texts, backend=self.backend, add_bos=self.add_bos, add_eos=self.add_eos)
        ids = ids_column(encoding.ids.to_numpy())
        if self.output_column in batch.column_names:
            return batch.set_column(batch.column_names.index(self.output_column), self.output_column, ids)
        return batch.append_column(self.output_column, ids)


def reserved_cpus() -> float | None:
    """The CPUs Ray reserved for this worker (task or actor), ``None`` outside a Ray worker or
    without a CPU reservation; Ray is not imported for this (a worker has it loaded already).

    >>> reserved_cpus() is None  # the driver of a Ray session, or no Ray at all
    True
    """
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    context = ray.get_runtime_context()
    if context.worker.mode != ray.WORKER_MODE:  # the driver has no reservation of its own
        return None
    cpus = context.get_assigned_resources().get("CPU")
    return float(cpus) if cpus else None


def ids_column(ids: RaggedArray) -> Any:
    """Host ragged ids as a ``list<int32>`` ``pyarrow.ChunkedArray`` sharing their values buffer
    (one chunk, or more only past 2**31 - 1 ids, which int32 list offsets cannot address).

    >>> ids = RaggedArray(np.array([3, 4, 5], np.int32), np.array([0, 2, 2, 3]))
    >>> column = ids_column(ids)
    >>> column.to_pylist(), column.chunk(0).values.buffers()[1].address == ids.values.ctypes.data
    ([[3, 4], [], [5]], True)
    """
    import pyarrow as pa

    chunks = [list_column(ids.rows(a, b), "int32") for a, b in row_ranges(np.asarray(ids.offsets))]
    return pa.chunked_array(chunks, pa.list_(pa.int32()))


def tokenize_dataset(ds: Any, model: Any, column: str = "text", output_column: str = "ids",
                     backend: str | None = "auto", concurrency: int | tuple[int, int] | None = None,
                     num_gpus: float | None = None, batch_size: int | None = 4096, add_bos: bool = False,
                     add_eos: bool = False, **map_batches_options: Any) -> Any:
    """``ds`` with ``output_column`` (``list<int32>`` ids of ``column``) added to every row, its
    other columns kept: ``ds.map_batches(TokenizeBatch, batch_format="pyarrow", ...)``, lazily,
    as Ray Data runs everything.

    ``concurrency``: the number of actors (or ``(min, max)`` for an autoscaling pool; ``None``:
    Ray's default pool); ``num_gpus``: GPUs per actor (1 on GPU nodes, with ``backend`` "auto" or
    "cuda"); ``batch_size``: documents per batch (GPUs want several MB of text per call);
    ``map_batches_options`` (``num_cpus``, ``memory``, ``runtime_env``, ...) go to
    ``map_batches`` as they are. Without ``preserve_order`` in Ray's ``DataContext`` the rows may
    come out in another order: keep an id column to match them up.

    >>> from gpu_text.demo import MODEL
    >>> tokenize_dataset(["not", "a", "dataset"], MODEL)
    Traceback (most recent call last):
    ...
    TypeError: tokenize_dataset takes a ray.data.Dataset, got list
    """
    if not hasattr(ds, "map_batches"):
        raise TypeError(f"tokenize_dataset takes a ray.data.Dataset, got {type(ds).__name__}")
    ray = import_ray()
    options = dict(map_batches_options)
    if concurrency is not None:
        options["compute"] = _actor_pool(ray, concurrency)
    if num_gpus is not None:
        options["num_gpus"] = num_gpus
    # one row out for each row in: lets Ray push limits through the map (a newer map_batches option)
    if "udf_modifying_row_count" in _parameters(ds.map_batches):
        options.setdefault("udf_modifying_row_count", False)
    return ds.map_batches(TokenizeBatch, batch_format="pyarrow", batch_size=batch_size,
                          fn_constructor_kwargs={"model": _portable(model), "column": column,
                                                 "output_column": output_column, "backend": backend,
                                                 "add_bos": add_bos, "add_eos": add_eos},
                          **options)


def _actor_pool(ray: Any, concurrency: int | tuple[int, int]) -> Any:
    """Ray's actor pool strategy for ``concurrency`` actors (``n`` or ``(min, max)``)."""
    if isinstance(concurrency, tuple) and len(concurrency) == 2 and all(_positive(n) for n in concurrency):
        return ray.data.ActorPoolStrategy(min_size=concurrency[0], max_size=concurrency[1])
    if _positive(concurrency):
        return ray.data.ActorPoolStrategy(size=concurrency)
    raise ValueError(f"concurrency must be a positive number of actors or a (min, max) pair, got {concurrency!r}")


def _positive(n: Any) -> bool:
    return isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1


def _parameters(function: Any) -> Any:
    import inspect

    try:
        return inspect.signature(function).parameters
    except (TypeError, ValueError):
        return {}


def _portable(model: Any) -> Any:
    """A model path made absolute (actors open it from their own working directory), a
    ``Tokenizer`` as it is."""
    return os.path.abspath(os.fspath(model)) if isinstance(model, (str, os.PathLike)) else model


# ------------------------------------------------------------------------------------- Megatron
def write_megatron_shard(block: Any, prefix: str, vocab_size: int, column: str = "ids",
                         eod_id: int | None = None) -> dict[str, Any]:
    """Write the ``list`` column ``column`` of ``block`` (a ``pyarrow.Table``) as the Megatron
    dataset ``PREFIX.bin`` + ``PREFIX.idx``, a document per row, under temporary names renamed
    when whole; returns ``{"prefix", "documents", "tokens"}`` (tokens: as stored, eod included).

    >>> import os, tempfile
    >>> import pyarrow as pa
    >>> from gpu_text.outputs.megatron_reader import read_megatron
    >>> prefix = os.path.join(tempfile.mkdtemp(), "shard")
    >>> write_megatron_shard(pa.table({"ids": [[5, 6], [], [7]]}), prefix, vocab_size=100, eod_id=2)
    {'prefix': 'shard', 'documents': 3, 'tokens': 5}
    >>> [d.tolist() for d in read_megatron(prefix).documents()]
    [[5, 6, 2], [], [7, 2]]
    """
    from gpu_text.cli_helpers import atomic_outputs
    from gpu_text.outputs.megatron import MegatronWriter, megatron_paths

    if column not in block.column_names:
        raise KeyError(f"the block has no column {column!r} (columns: {', '.join(block.column_names)})")
    documents = tokens = 0
    with atomic_outputs(megatron_paths(prefix)) as (bin_temp, idx_temp):
        writer = MegatronWriter(bin_temp, idx_temp, vocab_size=vocab_size, eod_id=eod_id)
        try:
            for rows in _ragged_chunks(block.column(column), column):
                writer.write(rows, None, None)
                present = np.asarray(rows.lengths) > 0
                tokens += int(rows.values.size) + (int(present.sum()) if eod_id is not None else 0)
            documents = writer.close()
        except BaseException:
            writer.discard()
            raise
    return {"prefix": os.path.basename(prefix), "documents": documents, "tokens": tokens}


def _ragged_chunks(column: Any, name: str) -> Iterable[RaggedArray]:
    """Each chunk of a ``(large_)list`` of integers column as host ragged rows (views where Arrow allows)."""
    import pyarrow as pa

    for chunk in column.chunks:
        if not (pa.types.is_list(chunk.type) or pa.types.is_large_list(chunk.type)) or \
                not pa.types.is_integer(chunk.type.value_type):
            raise TypeError(f"column {name!r} must hold lists of integer ids, not {chunk.type}")
        if chunk.null_count:
            raise ValueError(f"column {name!r} has {chunk.null_count} null rows; tokenized rows are never null")
        offsets = np.asarray(chunk.offsets).astype(np.int64)
        values = np.asarray(chunk.flatten())  # the rows' values only, whatever slice the chunk is
        yield RaggedArray(values, offsets - offsets[0])


def write_megatron(ds: Any, out_dir: str | os.PathLike, vocab_size: int, column: str = "ids",
                   eod_id: int | None = None, prefix: str = "shard") -> dict[str, Any]:
    """Write ``ds`` (tokenized, see :func:`tokenize_dataset`) into ``out_dir`` as Megatron
    datasets, one ``PREFIX_TTTTTT_BBBB.bin``/``.idx`` per non-empty block (``T`` the write task,
    ``B`` the block in it; :func:`write_megatron_shard`), and ``out_dir/_manifest.json`` listing
    them in that order with their document and token counts; returns the manifest. ``out_dir``
    must be shared by every node of a cluster. With Ray's ``preserve_order`` the shards in
    manifest order hold the documents in dataset order.

    >>> write_megatron([], "out", vocab_size=100)
    Traceback (most recent call last):
    ...
    TypeError: write_megatron takes a ray.data.Dataset, got list
    """
    if not hasattr(ds, "write_datasink"):
        raise TypeError(f"write_megatron takes a ray.data.Dataset, got {type(ds).__name__}")
    from gpu_text.outputs.megatron import token_dtype

    token_dtype(vocab_size)  # a bad vocabulary size fails here, not in every write task
    os.makedirs(out_dir, exist_ok=True)
    sink = _megatron_datasink(import_ray())(os.fspath(out_dir), vocab_size, column, eod_id, prefix)
    ds.write_datasink(sink)
    return sink.manifest


def _megatron_datasink(ray: Any) -> type:
    """A ``ray.data.Datasink`` class writing Megatron shards (made here, since its base is Ray's)."""

    class MegatronDatasink(ray.data.Datasink):
        def __init__(self, out_dir: str, vocab_size: int, column: str, eod_id: int | None, prefix: str) -> None:
            self.out_dir, self.vocab_size, self.column = out_dir, vocab_size, column
            self.eod_id, self.prefix = eod_id, prefix
            self.manifest: dict[str, Any] = {}

        def write(self, blocks: Iterable[Any], ctx: Any) -> list[dict[str, Any]]:
            from ray.data.block import BlockAccessor

            shards = []
            for number, block in enumerate(blocks):
                table = BlockAccessor.for_block(block).to_arrow()
                if table.num_rows:
                    name = f"{self.prefix}_{ctx.task_idx:06d}_{number:04d}"
                    shards.append(write_megatron_shard(table, os.path.join(self.out_dir, name), self.vocab_size,
                                                       self.column, self.eod_id))
            return shards

        def on_write_complete(self, write_result: Any) -> None:
            # Ray >= 2.40 hands a WriteResult; older versions the list of what write returned
            returns = getattr(write_result, "write_returns", write_result)
            shards = sorted((shard for task in returns for shard in task), key=lambda shard: shard["prefix"])
            self.manifest = {"format": "megatron", "vocab_size": self.vocab_size, "eod_id": self.eod_id,
                             "documents": sum(s["documents"] for s in shards),
                             "tokens": sum(s["tokens"] for s in shards), "shards": shards}
            write_manifest(Path(self.out_dir) / MANIFEST, self.manifest)

    return MegatronDatasink


def write_manifest(path: str | os.PathLike, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` as JSON to ``path``, whole or not at all.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / MANIFEST
    >>> write_manifest(path, {"documents": 2})
    >>> json.loads(path.read_text())
    {'documents': 2}
    """
    from gpu_text.cli_helpers import atomic_outputs

    with atomic_outputs([path]) as (temp,):
        Path(temp).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


__all__ = ["MANIFEST", "RAY_MISSING", "TokenizeBatch", "ids_column", "import_ray", "reserved_cpus", "tokenize_dataset",
           "write_manifest", "write_megatron", "write_megatron_shard"]
