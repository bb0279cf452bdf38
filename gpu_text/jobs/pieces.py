"""Tokenizing the shards of a sharded job: each input file through the encoder into its output,
or into numbered pieces of about ``shard_bytes`` of input text each (:mod:`gpu_text.jobs.shards`
names them), a worker's shards one after another through ONE read → encode → write pipeline
(:func:`tokenize_shards`), so that it neither fills nor drains at every shard.

Every piece is written under a temporary name; all of a shard's pieces are renamed when the
whole shard is written, and only then is the shard reported (and the job records it in its
manifest). A shard whose input cannot be read or encoded is reported failed with
``input_error`` (the job may skip it), a shard whose writing failed without (the job stops);
either way its pieces are removed and the shards after it are tokenized as if it had not been.

For tests, ``GPU_TEXT_TEST_FAULT=kill:NAME:N`` makes the process tokenizing shard ``NAME`` kill
itself (SIGKILL) once ``N`` chunks of it are written, ``kill:NAME:renamed`` once its outputs are
renamed (before the manifest records them), and ``pause:NAME:N`` stops its writer there for an
hour (for a test to kill the job from outside): the moments a real job can die at, made
deterministic.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from gpu_text.documents import DEFAULT_CHUNK_BYTES, iter_documents
from gpu_text.jobs.manifest import describe_files, input_identity
from gpu_text.jobs.shards import Shard
from gpu_text.outputs.stats import JobStats
from gpu_text.pipeline import PipelineStats
from gpu_text.tokenizer.bulk import EncodedChunk, close_token_writer, open_token_writer

FAULT_VAR = "GPU_TEXT_TEST_FAULT"
_POLL_S = 0.05  # how often the reader, waiting for a shard to finish, looks whether the pipeline has failed


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
            raise RuntimeError(f"writing shard {self.shard.name}: {exc}") from exc
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


class _Output:
    """The shard the writer thread is on: its pieces (under temporary names until
    :meth:`finish`), what was written to them, and its input's identity."""

    def __init__(self, shard: Shard, settings: ShardSettings, vocab_size: int, eos_id: int,
                 identity: dict[str, int]) -> None:
        self.shard, self.identity = shard, identity
        self.job = JobStats()
        self.stack = contextlib.ExitStack()  # on finish renames every piece; on discard removes them
        os.makedirs(os.path.dirname(os.path.abspath(shard.piece_output(0))), exist_ok=True)  # a mirrored subfolder
        self.pieces = PieceWriter(shard, settings, vocab_size, eos_id, self.stack)

    def write(self, encoded: EncodedChunk) -> None:
        documents = encoded.documents
        self.pieces.write(encoded)
        self.job.add(documents.path, documents.first, documents.batch.nbytes, encoded.ids.lengths)

    def finish(self) -> dict[str, Any]:
        """Close the last piece, rename every piece into place; the shard's manifest entry."""
        pieces, rows, written = self.pieces.close()
        self.stack.close()
        job, shard = self.job, self.shard
        paths = [path for piece in range(pieces) for path in shard.piece_paths(piece)]
        return {**self.identity, "status": "done", "documents": job.documents, "empty_documents": job.empty_documents,
                "tokens": job.tokens, "text_bytes": job.text_bytes, "rows": rows, "tokens_written": written,
                "pieces": pieces, "files": describe_files(paths, shard.output_dir)}

    def discard(self) -> None:
        """Stop writing and remove every temporary piece."""
        self.pieces.discard()
        with contextlib.suppress(Exception):  # a temporary left over is removed by the job (remove_temporaries)
            self.stack.__exit__(_Discarded, _Discarded(), None)


class _Discarded(Exception):
    """Thrown into a shard's pieces' ``atomic_outputs``: remove the temporaries, rename nothing."""


class _Mark(NamedTuple):
    """A shard's place in the stream: ``begin`` (its input's identity), ``end``, ``failed`` (the
    error, and whether the input is at fault) or ``dropped`` (a chunk of a failed shard)."""

    shard: Shard
    kind: str
    identity: dict[str, int] | None = None
    error: str = ""
    input_error: bool = True


class _Chunk(NamedTuple):
    """A chunk of a shard's documents, read (``Documents``) or encoded (``EncodedChunk``)."""

    shard: Shard
    payload: Any


def tokenize_shards(tokenizer: Any, next_shard: Callable[[], Shard | None], settings: ShardSettings,
                    report: Callable[[dict[str, Any]], Any], progress: Any = None) -> PipelineStats:
    """Tokenize the shards ``next_shard`` gives (until it gives ``None``) through one pipeline
    (:func:`gpu_text.pipeline.run_pipeline`): while one shard's last chunks encode and its
    pieces are finished and renamed, the next shard's input is already read. ``next_shard`` is
    called on the reader thread when the previous input is read and at most one shard is still
    being written (so a worker holds at most one shard ahead). ``report`` is called on the writer
    thread with each shard's result, in order: ``{"kind": "done", "index": ..., "entry": ...}``
    (its manifest entry: counts and files) once its pieces are renamed, or ``{"kind": "failed",
    "index": ..., "error": ..., "input_error": ...}``: the input could not be read or encoded
    (``input_error``: the job may skip it), or writing failed. A shard's failure leaves no piece
    of it and does not touch the shards after it. Returns the pipeline's stage times.

    >>> import functools, os, tempfile
    >>> from gpu_text.demo import MODEL
    >>> from gpu_text.jobs.shards import plan_shards
    >>> from gpu_text.tokenizer.bulk import load_tokenizer
    >>> d = tempfile.mkdtemp(); sources = [os.path.join(d, name) for name in ("a.txt", "b.txt.gz", "c.txt")]
    >>> _ = open(sources[0], "w").write("one two\\nthree\\nfour\\n"); _ = open(sources[2], "w").write("five\\n")
    >>> _ = open(sources[1], "wb").write(b"\\x1f\\x8b?")  # damaged gzip
    >>> shards = plan_shards(sources, os.path.join(d, "out"), "npy", shard_bytes=8); os.mkdir(shards[0].output_dir)
    >>> results = []
    >>> _ = tokenize_shards(load_tokenizer(MODEL), functools.partial(next, iter(shards), None),
    ...                     ShardSettings(output_format="npy", shard_bytes=8, backend="cpu"), results.append)
    >>> [(r["kind"], r.get("input_error"), r.get("entry", {}).get("documents")) for r in results]
    [('done', None, 3), ('failed', True, None), ('done', None, 1)]
    >>> [f["path"] for f in results[0]["entry"]["files"]], sorted(os.listdir(shards[0].output_dir))[:2]
    (['a-00000.ids.npy', 'a-00000.offsets.npy', 'a-00001.ids.npy', 'a-00001.offsets.npy'], ['a-00000.ids.npy', \
'a-00000.offsets.npy'])
    """
    return _Stream(tokenizer, next_shard, settings, report, progress).run()


class _Stream:
    """The three stages of :func:`tokenize_shards`, with what they share: the shards that failed
    (the reader stops reading them, compute stops encoding them) and the shards in the worker
    (a slot each: taken by the reader before it asks for a shard, given back by the writer)."""

    def __init__(self, tokenizer: Any, next_shard: Callable[[], Shard | None], settings: ShardSettings,
                 report: Callable[[dict[str, Any]], Any], progress: Any) -> None:
        from gpu_text.tokenizer.bulk import eos_for

        self.tokenizer, self.next_shard, self.settings, self.report, self.progress = (
            tokenizer, next_shard, settings, report, progress)
        self.eos_id = eos_for(tokenizer, settings.append_eod, settings.pack, settings.add_eos)
        self.stop = threading.Event()
        self.slots = threading.Semaphore(2)  # the shard being written and the one being read
        self.failed: set[int] = set()
        self.reported: set[int] = set()
        self.output: _Output | None = None

    def run(self) -> PipelineStats:
        from gpu_text.outputs.direct_file import digests_kept
        from gpu_text.pipeline import run_pipeline
        from gpu_text.tokenizer.bulk import chunk_encoder, encoding_lanes

        s = self.settings
        chunk_bytes, lanes, lane_context = encoding_lanes(s.backend, s.chunk_bytes)
        self.encode_chunk = chunk_encoder(self.tokenizer, s.backend, s.with_offsets, s.add_bos, s.add_eos)
        # the manifest records every output's SHA-256: the tokens are hashed as they are written
        with digests_kept():
            try:
                return run_pipeline(self._read(chunk_bytes), self._encode, self._write, lanes=lanes,
                                    lane_context=lane_context, stop=self.stop)
            except BaseException:
                if self.output is not None:  # the stream stopped midway through this shard
                    self.output.discard()
                raise

    def _read(self, chunk_bytes: int) -> Iterator[_Mark | _Chunk]:
        s = self.settings
        while self._take_slot():
            shard = self.next_shard()
            if shard is None:
                return
            try:
                identity = input_identity(shard.input)  # before reading: a file changed meanwhile is redone on resume
            except OSError as exc:
                yield _Mark(shard, "failed", error=_one_line(exc), input_error=False)
                continue
            yield _Mark(shard, "begin", identity)
            documents = iter_documents([shard.input], s.field, chunk_bytes, self.progress, s.input_format,
                                       s.max_document_bytes)
            try:
                while shard.index not in self.failed:  # once its encoding failed, read no more of it
                    try:
                        batch = next(documents)
                    except StopIteration:
                        break
                    except Exception as exc:  # this shard's input is bad: the next one is read all the same
                        self.failed.add(shard.index)
                        yield _Mark(shard, "failed", error=_one_line(exc))
                        break
                    yield _Chunk(shard, batch)
            finally:
                documents.close()
            yield _Mark(shard, "end")

    def _take_slot(self) -> bool:
        while not self.slots.acquire(timeout=_POLL_S):
            if self.stop.is_set():  # the pipeline failed: the writer gives back no slot any more
                return False
        return not self.stop.is_set()

    def _encode(self, item: _Mark | _Chunk) -> _Mark | _Chunk:
        if isinstance(item, _Mark):
            return item
        if item.shard.index in self.failed:
            return _Mark(item.shard, "dropped")
        try:
            return _Chunk(item.shard, self.encode_chunk(item.payload))
        except Exception as exc:
            self.failed.add(item.shard.index)
            return _Mark(item.shard, "failed", error=_one_line(exc))

    def _write(self, item: _Mark | _Chunk) -> None:
        shard = item.shard
        current = self.output is not None and self.output.shard.index == shard.index
        if isinstance(item, _Chunk):
            if current:  # else its shard has failed: dropped
                self._guarded(shard, lambda: self.output.write(item.payload))  # type: ignore[union-attr]
        elif item.kind == "begin":
            self._guarded(shard, lambda: self._open(shard, item.identity or {}))
        elif item.kind == "end" and current:
            self._finish()
        elif item.kind == "failed":
            self._fail(shard, item.error, item.input_error)

    def _open(self, shard: Shard, identity: dict[str, int]) -> None:
        self.output = _Output(shard, self.settings, len(self.tokenizer), self.eos_id, identity)

    def _finish(self) -> None:
        output = self.output
        assert output is not None
        try:
            entry = output.finish()
        except Exception as exc:
            self._fail(output.shard, _one_line(exc), input_error=False)
            return
        self.output = None
        _fault(output.pieces.fault, "renamed")
        self._report(output.shard, {"kind": "done", "entry": entry})  # outside the try: its own errors stop the job

    def _guarded(self, shard: Shard, step: Callable[[], None]) -> None:
        """A writing step of ``shard`` (one that reports nothing): its failure fails the shard (not
        the input's fault), and the stream goes on with the next one."""
        try:
            step()
        except Exception as exc:
            self._fail(shard, _one_line(exc), input_error=False)

    def _fail(self, shard: Shard, error: str, input_error: bool) -> None:
        if shard.index in self.reported:  # a failure after the first, or a writing step of a failed shard
            return
        if self.output is not None and self.output.shard.index == shard.index:
            self.output.discard()
            self.output = None
        self._report(shard, {"kind": "failed", "error": error, "input_error": input_error})

    def _report(self, shard: Shard, result: dict[str, Any]) -> None:
        self.reported.add(shard.index)
        self.slots.release()  # the reader may take the next shard now
        self.report({**result, "index": shard.index})


def _one_line(exc: BaseException) -> str:
    """An error as the manifest and the job's message say it: one line, its kind named unless it is
    a plain ``ValueError``, ``OSError`` or ``RuntimeError`` with a message."""
    plain = isinstance(exc, (ValueError, OSError, RuntimeError)) and str(exc)
    return " ".join((str(exc) if plain else f"{type(exc).__name__}: {exc}").split())


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


__all__ = ["FAULT_VAR", "PieceWriter", "ShardSettings", "tokenize_shards"]
