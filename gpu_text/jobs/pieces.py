"""Tokenizing one shard of a sharded job: its input file through the encoder
(:func:`gpu_text.tokenizer.bulk.encode_documents`) into its output, or into numbered pieces of
about ``shard_bytes`` of input text each (:mod:`gpu_text.jobs.shards` names them).

Every piece is written under a temporary name; all of them are renamed when the whole shard is
written, and only then does the job record the shard in its manifest. A failure of reading or
encoding the input is an :class:`InputError` (the job may skip the shard); a failure of writing
is not (the job stops).

For tests, ``GPU_TEXT_TEST_FAULT=kill:NAME:N`` makes the process tokenizing shard ``NAME`` kill
itself (SIGKILL) once ``N`` chunks of it are written, ``kill:NAME:renamed`` once its outputs are
renamed (before the manifest records them), and ``pause:NAME:N`` stops it there for an hour (for
a test to kill the job from outside): the moments a real job can die at, made deterministic.

>>> import os, tempfile
>>> from gpu_text.demo import MODEL
>>> from gpu_text.jobs.shards import plan_shards
>>> from gpu_text.tokenizer.bulk import load_tokenizer
>>> d = tempfile.mkdtemp(); src = os.path.join(d, "a.txt"); _ = open(src, "w").write("one two\\nthree\\nfour\\n")
>>> shard = plan_shards([src], os.path.join(d, "out"), "npy", shard_bytes=8)[0]; os.mkdir(shard.output_dir)
>>> result = tokenize_shard(load_tokenizer(MODEL), shard, ShardSettings(output_format="npy", shard_bytes=8,
...                                                                     backend="cpu"))
>>> result["documents"], result["pieces"], [f["path"] for f in result["files"]]
(3, 2, ['a-00000.ids.npy', 'a-00000.offsets.npy', 'a-00001.ids.npy', 'a-00001.offsets.npy'])
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_text.documents import DEFAULT_CHUNK_BYTES
from gpu_text.jobs.manifest import describe_files, input_identity
from gpu_text.jobs.shards import Shard
from gpu_text.tokenizer.bulk import EncodedChunk, close_token_writer, encode_documents, open_token_writer

FAULT_VAR = "GPU_TEXT_TEST_FAULT"


class InputError(ValueError):
    """The shard's input could not be read or encoded (a corrupt file, a bad document)."""


class _WriteFailure(RuntimeError):
    """Writing an output failed: marks the error so that it is not taken for the input's."""


@dataclass(frozen=True)
class ShardSettings:
    """How every shard of a job is read, encoded and written: plain values, sent to the worker
    processes as JSON (:meth:`to_dict`)."""

    field: str = "text"
    input_format: str = "auto"
    max_document_bytes: int | None = None
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    backend: str | None = None
    output_format: str = "parquet"
    with_offsets: bool = False
    add_bos: bool = False
    add_eos: bool = False
    append_eod: bool = False
    pack: int | None = None
    shard_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict; :meth:`from_dict` reads it back.

        >>> ShardSettings.from_dict(ShardSettings(pack=8).to_dict()).pack
        8
        """
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "ShardSettings":
        return cls(**values)


class _Piece:
    """One output piece being written: its writer and what it holds so far."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.documents = self.nonempty = self.tokens = self.text_bytes = 0


class PieceWriter:
    """Writes the encoded chunks of ``shard`` to its pieces, a new piece starting after the
    document that brings a piece's text to ``settings.shard_bytes`` (one piece without it); the
    pieces' temporary names are registered with ``stack``, which renames them when it closes."""

    def __init__(self, shard: Shard, settings: ShardSettings, vocab_size: int, eos_id: int,
                 stack: contextlib.ExitStack) -> None:
        self.shard, self.settings, self.vocab_size, self.eos_id, self.stack = shard, settings, vocab_size, eos_id, stack
        self.current: _Piece | None = None
        self.closed: list[tuple[int, int]] = []  # (rows, tokens written) of every finished piece
        self.chunks = 0
        self.fault = _fault_point(shard.name)

    def write(self, chunk: EncodedChunk) -> None:
        """Append a chunk, cutting it between pieces where ``shard_bytes`` says."""
        try:
            self._write(chunk)
        except Exception as exc:
            raise _WriteFailure(f"writing shard {self.shard.name}: {exc}") from exc
        self.chunks += 1
        _fault(self.fault, str(self.chunks))

    def _write(self, chunk: EncodedChunk) -> None:
        ids, starts, ends = chunk.ids, chunk.starts, chunk.ends
        limit = self.settings.shard_bytes
        text = np.cumsum(np.diff(np.asarray(chunk.documents.batch.offsets)))  # text bytes up to each document
        position = 0
        while position < len(ids):
            piece = self.current or self._open()
            before = int(text[position - 1]) if position else 0
            stop = len(ids)
            if limit is not None:  # the first document that brings the piece to the limit is its last
                stop = min(int(np.searchsorted(text, before + limit - piece.text_bytes, "left")) + 1, stop)
            self._send(piece, ids.rows(position, stop), None if starts is None else starts.rows(position, stop),
                       None if ends is None else ends.rows(position, stop), int(text[stop - 1]) - before)
            position = stop
            if limit is not None and piece.text_bytes >= limit:
                self._finish()

    def _open(self) -> _Piece:
        from gpu_text.cli_helpers import atomic_outputs

        number = len(self.closed)
        output = self.shard.piece_output(number)
        files = self.shard.piece_files(number)
        temps = self.stack.enter_context(atomic_outputs(files)) if files else []
        s = self.settings
        self.current = _Piece(open_token_writer(s.output_format, output, temps, s.with_offsets, self.vocab_size,
                                                self.eos_id, s.append_eod, s.pack))
        return self.current

    @staticmethod
    def _send(piece: _Piece, ids: Any, starts: Any, ends: Any, text_bytes: int) -> None:
        piece.writer.write(ids, starts, ends)
        lengths = ids.lengths
        piece.documents += len(ids)
        piece.nonempty += int(np.count_nonzero(lengths))
        piece.tokens += int(lengths.sum())
        piece.text_bytes += text_bytes

    def _finish(self) -> None:
        piece, self.current = self.current, None
        assert piece is not None
        s = self.settings
        self.closed.append(close_token_writer(piece.writer, piece.documents, piece.nonempty, piece.tokens,
                                              s.append_eod, s.pack))

    def close(self) -> tuple[int, int, int]:
        """Finish the last piece (an input without documents still gets one, empty); returns
        the pieces, rows and tokens written."""
        if self.current is None and not self.closed:
            self._open()
        if self.current is not None:
            self._finish()
        return len(self.closed), sum(r for r, _ in self.closed), sum(t for _, t in self.closed)

    def discard(self) -> None:
        """Stop writing the open piece (the stack removes every temporary)."""
        if self.current is not None:
            self.current.writer.discard()
            self.current = None


def tokenize_shard(tokenizer: Any, shard: Shard, settings: ShardSettings, progress: Any = None) -> dict[str, Any]:
    """Tokenize ``shard`` (see the module docstring); returns its manifest entry's counts and
    files. Raises :class:`InputError` when the input cannot be read or encoded."""
    from gpu_text.outputs.direct_file import digests_kept
    from gpu_text.tokenizer.bulk import eos_for

    s = settings
    identity = input_identity(shard.input)  # before reading: a file changed meanwhile is redone on resume
    eos_id = eos_for(tokenizer, s.append_eod, s.pack, s.add_eos)
    # the manifest records every output's SHA-256: the tokens are hashed as they are written
    with digests_kept(), contextlib.ExitStack() as stack:  # on success, renames every piece; on failure, removes them
        os.makedirs(os.path.dirname(os.path.abspath(shard.piece_output(0))), exist_ok=True)  # a mirrored subfolder
        writer = PieceWriter(shard, s, len(tokenizer), eos_id, stack)
        try:
            try:
                job = encode_documents(tokenizer, [shard.input], writer.write, progress, s.field, s.with_offsets,
                                       s.backend, s.chunk_bytes, s.add_bos, s.add_eos, s.input_format,
                                       s.max_document_bytes)
            except Exception as exc:
                if _caused_by(exc, _WriteFailure):
                    raise
                raise InputError(str(exc)) from exc
            pieces, rows, written = writer.close()
        except BaseException:
            writer.discard()
            raise
    _fault(writer.fault, "renamed")
    paths = [path for piece in range(pieces) for path in shard.piece_paths(piece)]
    return {**identity, "status": "done", "documents": job.documents, "empty_documents": job.empty_documents,
            "tokens": job.tokens, "text_bytes": job.text_bytes, "rows": rows, "tokens_written": written,
            "pieces": pieces, "files": describe_files(paths, shard.output_dir)}


def _caused_by(exc: BaseException | None, kind: type) -> bool:
    while exc is not None:
        if isinstance(exc, kind):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _fault_point(name: str) -> tuple[str, str] | None:
    """The ``GPU_TEXT_TEST_FAULT`` action and point for shard ``name`` (see the module docstring)."""
    action, _, rest = os.environ.get(FAULT_VAR, "").partition(":")
    shard, _, point = rest.rpartition(":")
    return (action, point) if action in ("kill", "pause") and shard == name else None


def _fault(fault: tuple[str, str] | None, point: str) -> None:
    if fault is None or fault[1] != point:
        return
    if fault[0] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(3600)


__all__ = ["FAULT_VAR", "InputError", "PieceWriter", "ShardSettings", "tokenize_shard"]
