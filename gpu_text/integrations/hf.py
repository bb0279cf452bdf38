"""Hugging Face ``datasets``: :func:`batched_encoder` makes the function to give
``Dataset.map(..., batched=True)``, which tokenizes a whole batch at once through
:meth:`Tokenizer.encode <gpu_text.tokenizer.Tokenizer.encode>` and hands the ids back built from
the encoder's flat buffers, never as Python lists of ints built token by token: int32 numpy
arrays, one per row (``returns="numpy"``: ``datasets`` joins them into an Arrow column in one go
and keeps the batch's other columns), or a ``pyarrow.Table`` holding the batch's columns and
``list<int32>`` ids (``returns="arrow"``, zero-copy). ``datasets`` takes a returned table as the
whole new batch, hence the other columns in it, and keeps no column of an Arrow-formatted batch
(``with_format("arrow")``) unless returned, so the default ``returns="auto"`` gives a table for
an Arrow batch and numpy arrays for a dict of lists: the batch's columns survive either way.

(To write a dataset directory straight from files, without ``map``, use ``gpu-text tokenize
--output-format hf``: :mod:`gpu_text.outputs.hf_datasets`.)

>>> from gpu_text.demo import MODEL
>>> from gpu_text.tokenizer import Tokenizer
>>> encode = batched_encoder(Tokenizer.from_model_file(MODEL), backend="cpu", returns="arrow")
>>> out = encode({"text": ["Hello world", ""]})
>>> out.column_names, out.schema.field("input_ids").type, out["input_ids"].to_pylist()
(['text', 'input_ids'], ListType(list<item: int32>), [[1607, 1052, 1479, 1304, 321], []])
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpu_text.outputs.arrow_rows import list_column, row_ranges

RETURNS = ("auto", "arrow", "numpy")


def _column(rows: Any, value_type: str, returns: str) -> Any:
    """``rows`` (a host RaggedArray) as numpy views, one per row, or as one Arrow list column."""
    if returns == "numpy":
        values = np.asarray(rows.values).astype(value_type, copy=False)
        return np.split(values, np.asarray(rows.offsets)[1:-1]) if len(rows) else []
    import pyarrow as pa

    parts = [list_column(rows.rows(a, b), value_type) for a, b in row_ranges(rows.offsets)]
    return pa.chunked_array(parts, pa.list_(pa.from_numpy_dtype(np.dtype(value_type))))


def _as_table(batch: Any, columns: dict[str, Any]) -> Any:
    """The batch's own columns (an Arrow table's as they are) followed by ``columns``."""
    import pyarrow as pa

    table = batch if isinstance(batch, pa.Table) else pa.table({k: pa.array(v) for k, v in batch.items()})
    for name, column in columns.items():
        if name in table.column_names:
            table = table.drop_columns([name])
        table = table.append_column(name, column)
    return table


def batched_encoder(tokenizer: Any, column: str = "text", backend: str | None = None, add_bos: bool = False,
                    add_eos: bool = False, with_offsets: bool = False, returns: str = "auto",
                    ids_column: str = "input_ids") -> Callable[[Any], dict[str, Any]]:
    """A function of a ``datasets`` batch (a dict of columns, or a ``pyarrow.Table`` under
    ``with_format("arrow")``) that encodes ``batch[column]`` and returns ``{ids_column: ...}``,
    plus ``starts``/``ends`` (each token's byte span) when ``with_offsets``: lists of int32
    (int64) numpy arrays, one per row (``returns="numpy"``), or a ``pyarrow.Table`` of the
    batch's columns and these (``"arrow"``); ``"auto"``: a table for an Arrow batch, else numpy
    (see the module docstring).

    >>> import pyarrow as pa
    >>> from gpu_text.demo import MODEL
    >>> from gpu_text.tokenizer import Tokenizer
    >>> encode = batched_encoder(Tokenizer.from_model_file(MODEL), backend="cpu", returns="numpy", with_offsets=True)
    >>> out = encode(pa.table({"text": ["bye"]}))
    >>> out["input_ids"][0].tolist(), out["starts"][0].tolist(), out["ends"][0].tolist()
    ([1493, 1491, 1474], [0, 1, 2], [1, 2, 3])
    """
    if returns not in RETURNS:
        raise ValueError(f"returns must be one of {', '.join(RETURNS)} (got {returns!r})")

    def encode(batch: Any) -> dict[str, Any]:
        names = batch.column_names if hasattr(batch, "column_names") else list(batch)
        if column not in names:
            raise KeyError(f"the batch has no column {column!r} (columns: {', '.join(map(str, names))})")
        texts = batch[column]
        if hasattr(texts, "combine_chunks"):  # a pyarrow ChunkedArray (an Arrow-formatted batch)
            texts = texts.combine_chunks()
        encoding = tokenizer.encode(texts, backend=backend, with_offsets=with_offsets, add_bos=add_bos,
                                    add_eos=add_eos)
        kind = returns if returns != "auto" else ("arrow" if hasattr(batch, "column_names") else "numpy")
        out = {ids_column: _column(encoding.ids.to_numpy(), "int32", kind)}
        if with_offsets:
            out["starts"] = _column(encoding.starts.to_numpy(), "int64", kind)
            out["ends"] = _column(encoding.ends.to_numpy(), "int64", kind)
        return _as_table(batch, out) if kind == "arrow" else out

    return encode


__all__ = ["RETURNS", "batched_encoder"]
