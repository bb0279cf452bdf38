"""What every ``gpu-text`` command shares: its parser class, option types, the common options,
input and output files, the progress bar and error reporting.

A command module (``gpu_text/<package>/commands.py``) registers its commands with
``add_commands(subparsers)``, each through :func:`add_command`; :func:`gpu_text.cli.main` runs the
chosen one and turns any error into one line on stderr, ``gpu-text <command>: error: ...``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO, TypeVar

STDIO = "-"
DEBUG_VAR = "GPU_TEXT_DEBUG"
T = TypeVar("T")


class CommandParser(argparse.ArgumentParser):
    """An argument parser that reports a usage error as one line (no usage block) and exits 2.

    >>> parser = CommandParser(prog="gpu-text demo")
    >>> _ = parser.add_argument("--n", type=positive_int)
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     try:
    ...         parser.parse_args(["--n", "0"])
    ...     except SystemExit as exit:
    ...         print(exit.code)
    2
    >>> err.getvalue()
    "gpu-text demo: error: argument --n: '0' is not a positive integer (at most 2**31 - 1)\\n"
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


MAX_INT = 2**31 - 1  # option values reach int32/int64 kernels: a bound keeps them from overflowing


def positive_int(text: str) -> int:
    """An argparse ``type``: an integer from 1 to 2**31 - 1.

    >>> positive_int("3")
    3
    """
    return _number(text, int, lambda v: 1 <= v <= MAX_INT, "a positive integer (at most 2**31 - 1)")


def non_negative_int(text: str) -> int:
    """An argparse ``type``: an integer from 0 to 2**31 - 1.

    >>> non_negative_int("0")
    0
    """
    return _number(text, int, lambda v: 0 <= v <= MAX_INT, "a non-negative integer (at most 2**31 - 1)")


def megabytes(text: str) -> int:
    """An argparse ``type``: a size in MiB from 1 to 1048576 (1 TiB), for ``--chunk-mb`` and
    ``--max-document-mb``.

    >>> megabytes("16")
    16
    """
    return _number(text, int, lambda v: 1 <= v <= 1 << 20, "a size in MiB from 1 to 1048576")


def non_negative_float(text: str) -> float:
    """An argparse ``type``: a finite number of at least 0.

    >>> non_negative_float("1e-4")
    0.0001
    """
    return _number(text, float, lambda v: 0 <= v < float("inf"), "a non-negative number")


def fraction(text: str) -> float:
    """An argparse ``type``: a number in (0, 1].

    >>> fraction("0.9995")
    0.9995
    """
    return _number(text, float, lambda v: 0 < v <= 1, "a number in (0, 1]")


def _number(text: str, kind: Callable[[str], T], valid: Callable[[T], bool], what: str) -> T:
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def add_command(subparsers: Any, name: str, run: Callable[[argparse.Namespace], int], help: str,
                **kwargs: Any) -> argparse.ArgumentParser:
    """A new subcommand ``name`` that runs ``run(args)``; errors name it (``args.command_name``).

    >>> sub = CommandParser(prog="gpu-text").add_subparsers()
    >>> add_command(sub, "hello", lambda args: 0, "say hello").parse_args([]).command_name
    'gpu-text hello'
    """
    parser = subparsers.add_parser(name, help=help, **kwargs)
    parser.set_defaults(run=run, command_name=parser.prog)
    add_debug_option(parser)
    return parser


def add_debug_option(parser: argparse.ArgumentParser) -> None:
    """``--debug``: show the traceback of a failure (also ``GPU_TEXT_DEBUG=1``). Given to the
    top-level parser and to every command, so it may come before or after the command name.

    >>> parser = CommandParser(); add_debug_option(parser)
    >>> parser.parse_args(["--debug"]).debug, hasattr(parser.parse_args([]), "debug")
    (True, False)
    """
    # SUPPRESS: a command's parser must not reset a --debug given before the command name
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="on failure, show the Python traceback (also GPU_TEXT_DEBUG=1)")


def debugging(args: argparse.Namespace) -> bool:
    """Whether ``--debug`` was given or ``GPU_TEXT_DEBUG`` is set (to anything but ``0`` or empty).

    >>> debugging(argparse.Namespace(debug=True))
    True
    """
    return bool(getattr(args, "debug", False)) or os.environ.get(DEBUG_VAR, "0") not in ("", "0")


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and ``--chunk-mb``, shared by every batch command.

    >>> parser = CommandParser(); add_backend_options(parser)
    >>> chunk_bytes(parser.parse_args(["--chunk-mb", "2"]))
    2097152
    """
    parser.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None,
                        help="default: $GPU_TEXT_BACKEND, else CUDA when a GPU is usable")
    parser.add_argument("--chunk-mb", type=megabytes, default=16,
                        help="MiB of input read per batch, 1 to 1048576 (bounds memory; default 16)")


def chunk_bytes(args: argparse.Namespace) -> int:
    """``--chunk-mb`` in bytes (see :func:`add_backend_options`)."""
    return args.chunk_mb << 20


def check_backend(args: argparse.Namespace) -> None:
    """Fail now, before any output exists, when ``--backend`` (or ``$GPU_TEXT_BACKEND``) names a
    backend that cannot run here or no backend at all.

    >>> check_backend(argparse.Namespace(backend="cpu"))
    """
    from gpu_text.backend import ENV_VAR, get_backend

    try:
        get_backend(args.backend)
    except ValueError as exc:
        if args.backend is None:  # the value came from the environment: say so
            raise ValueError(f"${ENV_VAR}={os.environ.get(ENV_VAR)!r}: {exc}") from None
        raise


def add_document_options(parser: argparse.ArgumentParser, field: bool = True, format: bool = True) -> None:
    """``--max-document-mb``, and with ``field`` and ``format`` ``--field`` and ``--format``: how
    documents are read (:func:`gpu_text.documents.read_documents`).

    >>> parser = CommandParser(); add_document_options(parser)
    >>> reader_options(parser.parse_args(["--max-document-mb", "2"]))
    {'format': 'auto', 'max_document_bytes': 2097152}
    """
    from gpu_text.documents import FORMATS

    if field:
        parser.add_argument("--field", default="text",
                            help="the JSON field or Parquet column holding the text (default 'text')")
    if format:
        parser.add_argument("--format", choices=FORMATS, default="auto",
                            help="input format; auto (default) tells Parquet, compression and JSON by content, "
                                 "then by the name")
    parser.add_argument("--max-document-mb", type=megabytes, default=1024,
                        help="longest document (line) accepted, in MiB (bounds memory; default 1024)")


def reader_options(args: argparse.Namespace) -> dict[str, Any]:
    """The reader's ``format`` and ``max_document_bytes`` from :func:`add_document_options`."""
    return {"format": getattr(args, "format", "auto"), "max_document_bytes": args.max_document_mb << 20}


def check_outputs(inputs: Iterable[str | os.PathLike | None], outputs: Iterable[str | os.PathLike]) -> None:
    """Refuse, before anything is read, outputs that cannot be written or that would overwrite an
    input: the same file, a link to it or a hard link of it. ``-`` (stdio) and ``None`` are skipped.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); src = os.path.join(d, "in.txt"); _ = open(src, "w").write("x")
    >>> os.symlink(src, os.path.join(d, "link.txt"))
    >>> check_outputs([src], [os.path.join(d, "out.txt")])
    >>> check_outputs([src], [os.path.join(d, "link.txt")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...link.txt: the output is the input ...in.txt; choose another output path
    """
    sources = [str(p) for p in inputs if p is not None and str(p) != STDIO]
    for output in map(str, outputs):
        if output == STDIO:
            continue
        for source in sources:
            if _same_file(source, output):
                raise ValueError(f"{output}: the output is the input {source}; choose another output path")
        directory = os.path.dirname(os.path.abspath(output))
        if os.path.isdir(output):
            raise ValueError(f"{output}: is a directory, not an output file")
        if not os.path.isdir(directory):
            raise ValueError(f"{output}: the output directory {directory} does not exist")
        if not os.access(directory, os.W_OK | os.X_OK):
            raise ValueError(f"{output}: the output directory {directory} is not writable")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)  # links and hard links included
    except OSError:  # one of them does not exist (yet): compare the resolved names
        return os.path.realpath(a) == os.path.realpath(b)


@contextlib.contextmanager
def atomic_outputs(paths: Sequence[str | os.PathLike]) -> Iterator[list[str]]:
    """Temporary names, in the same directories, to write ``paths`` to: renamed over them when
    the block succeeds, removed when it fails (an existing file at ``path`` is then left as it
    was). So a failed run never leaves a partial output that looks whole. ``-`` stays ``-``.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); out = os.path.join(d, "o.txt")
    >>> with atomic_outputs([out]) as (temp,):
    ...     _ = open(temp, "w").write("done")
    >>> open(out).read(), os.listdir(d)
    ('done', ['o.txt'])
    >>> try:
    ...     with atomic_outputs([out]) as (temp,):
    ...         _ = open(temp, "w").write("half")
    ...         raise ValueError("input.txt:3: bad")
    ... except ValueError:
    ...     pass
    >>> open(out).read(), os.listdir(d)
    ('done', ['o.txt'])
    """
    temps = []
    try:
        for path in map(str, paths):
            if path == STDIO:
                temps.append(path)
                continue
            directory, name = os.path.split(os.path.abspath(path))
            # the real name last, so that writers that go by the suffix (.npy, .parquet) see it
            handle, temp = tempfile.mkstemp(prefix=".gpu-text-", suffix=f".{name}", dir=directory)
            os.close(handle)
            os.chmod(temp, 0o666 & ~_umask())  # mkstemp's 0600 would survive the rename
            temps.append(temp)
        yield temps
        for temp, path in zip(temps, map(str, paths)):
            if temp != STDIO:
                os.replace(temp, path)
    finally:
        for temp in temps:
            if temp != STDIO:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(temp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def open_output(path: str) -> Iterator[BinaryIO]:
    """A file to write in binary (atomically, see :func:`atomic_outputs`), or stdout for ``-``
    (flushed, left open when done).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "o.txt")
    >>> with open_output(path) as handle:
    ...     handle.write(b"x")
    1
    """
    if path == STDIO:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with atomic_outputs([path]) as (temp,), open(temp, "wb") as handle:
        yield handle


@contextlib.contextmanager
def failing_documents(path: str, first: int, count: int) -> Iterator[None]:
    """Name the input file and documents (lines, rows) of a batch that failed to process, unless
    the error names a file already.

    >>> with failing_documents("in.txt", 5, 2):
    ...     raise MemoryError("out of memory")
    Traceback (most recent call last):
    ...
    ValueError: in.txt: documents 5-6: MemoryError: out of memory
    """
    try:
        yield
    except Exception as exc:
        message = str(exc) if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: {exc}"
        if path in message or isinstance(exc, OSError):
            raise
        where = f"document {first}" if count <= 1 else f"documents {first}-{first + count - 1}"
        raise ValueError(f"{path}: {where}: {message}") from exc


def progress_enabled() -> bool:
    """Whether to draw progress bars: stderr is a terminal, or ``GPU_TEXT_PROGRESS=1``.

    >>> isinstance(progress_enabled(), bool)
    True
    """
    return sys.stderr.isatty() or os.environ.get("GPU_TEXT_PROGRESS") == "1"


def progress_bar(total: int, description: str) -> Any:
    """A tqdm byte counter on stderr (``total`` 0: unknown), shown as :func:`progress_enabled` says.

    >>> with progress_bar(10, "read") as bar:
    ...     _ = bar.update(10)
    """
    from tqdm import tqdm

    return tqdm(total=total or None, unit="B", unit_scale=True, unit_divisor=1024, desc=description,
                disable=not progress_enabled(), file=sys.stderr)


def load_file(path: str, loader: Callable[[str], T], what: str) -> T:
    """``loader(path)``, any failure but a missing or unreadable file reported as a malformed
    ``what`` file naming ``path``.

    >>> load_file("x.bin", lambda p: int("not a number"), "model")
    Traceback (most recent call last):
    ValueError: x.bin: not a valid model file (invalid literal for int() with base 10: 'not a number')
    """
    try:
        return loader(path)
    except OSError:
        raise
    except Exception as exc:  # whatever a parser trips over in a damaged file
        message = str(exc)
        if message.startswith(str(path)):
            raise ValueError(message) from exc
        raise ValueError(f"{path}: not a valid {what} file ({message or type(exc).__name__})") from exc


def report_error(command: str, exc: BaseException) -> int:
    """Print ``<command>: error: <what went wrong>`` as one line on stderr and return exit code 2.

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     report_error("gpu-text demo", FileNotFoundError(2, "No such file or directory", "x.txt"))
    2
    >>> err.getvalue()
    "gpu-text demo: error: [Errno 2] No such file or directory: 'x.txt'\\n"
    """
    plain = isinstance(exc, (ValueError, OSError, RuntimeError)) and str(exc)
    message = str(exc) if plain else f"{type(exc).__name__}: {exc}".rstrip(": ")
    print(f"{command}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2
