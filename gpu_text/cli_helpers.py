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
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, TypeVar

STDIO = "-"
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
    "gpu-text demo: error: argument --n: '0' is not a positive integer\\n"
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def positive_int(text: str) -> int:
    """An argparse ``type``: an integer of at least 1.

    >>> positive_int("3")
    3
    """
    return _number(text, int, lambda v: v >= 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An argparse ``type``: an integer of at least 0.

    >>> non_negative_int("0")
    0
    """
    return _number(text, int, lambda v: v >= 0, "a non-negative integer")


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
    return parser


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and ``--chunk-mb``, shared by every batch command.

    >>> parser = CommandParser(); add_backend_options(parser)
    >>> chunk_bytes(parser.parse_args(["--chunk-mb", "2"]))
    2097152
    """
    parser.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None,
                        help="default: $GPU_TEXT_BACKEND, else CUDA when a GPU is usable")
    parser.add_argument("--chunk-mb", type=positive_int, default=16,
                        help="MiB of input read per batch, at least 1 (bounds memory; default 16)")


def chunk_bytes(args: argparse.Namespace) -> int:
    """``--chunk-mb`` in bytes (see :func:`add_backend_options`)."""
    return args.chunk_mb << 20


def add_field_option(parser: argparse.ArgumentParser) -> None:
    """``--field``: the text field of ``.jsonl`` records and the text column of ``.parquet`` files.

    >>> parser = CommandParser(); add_field_option(parser)
    >>> parser.parse_args([]).field
    'text'
    """
    parser.add_argument("--field", default="text",
                        help="the .jsonl field or .parquet column holding the text (default 'text')")


@contextlib.contextmanager
def open_input(path: str) -> Iterator[BinaryIO]:
    """A file to read in binary, or stdin for ``-`` (left open when done).

    >>> with open_input(__file__) as handle:
    ...     handle.read(1)
    b'"'
    """
    if path == STDIO:
        yield sys.stdin.buffer
    else:
        with open(path, "rb") as handle:
            yield handle


@contextlib.contextmanager
def open_output(path: str) -> Iterator[BinaryIO]:
    """A file to write in binary, or stdout for ``-`` (flushed, left open when done).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "o.txt")
    >>> with open_output(path) as handle:
    ...     handle.write(b"x")
    1
    """
    if path == STDIO:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
    else:
        with open(path, "wb") as handle:
            yield handle


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
    message = str(exc) if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: {exc}"
    print(f"{command}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2
