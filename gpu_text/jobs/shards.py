"""Planning a sharded job: which input files there are, in which order, and what each one's
output shard is called.

Inputs are files, globs and directories, expanded by :func:`expand_inputs` in a fixed order: the
arguments as given, a glob's matches and a directory's files sorted by path. A directory gives
every file under it (recursively) whose name says a document format (``.txt``, ``.text``,
``.jsonl``, ``.ndjson``, ``.json``, ``.parquet``, ``.pq``, each maybe ``.gz``/``.zst``/``.bz2``),
hidden files and folders left out.

Each input is one shard (:func:`plan_shards`). Its output is named after the input's path below
the folder all inputs share, with the input's format and compression suffixes replaced by the
output format's (``news/2024/a.jsonl.gz`` → ``DIR/2024/a.parquet``, or ``a.bin``/``a.idx``,
``a.ids.npy``/``a.offsets.npy``, an ``a/`` dataset folder). With ``shard_bytes`` the output is
cut into pieces numbered from 0 (``a-00000.parquet``, ``a-00001.parquet``...): a piece ends after
the document that brings its text to ``shard_bytes`` bytes or more, so the cuts depend only on
the documents.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); os.makedirs(os.path.join(d, "in", "2024"))
>>> for name in ["b.txt", "a.jsonl.gz", "2024/c.txt", "README.md", ".hidden.txt"]:
...     _ = open(os.path.join(d, "in", name), "w").write("x\\n")
>>> inputs = expand_inputs([os.path.join(d, "in")])
>>> [os.path.relpath(p, d) for p in inputs]
['in/2024/c.txt', 'in/a.jsonl.gz', 'in/b.txt']
>>> [s.name for s in plan_shards(inputs, os.path.join(d, "out"), "parquet")]
['2024/c', 'a', 'b']
>>> shard = plan_shards(inputs, "out", "megatron", shard_bytes=1 << 20)[1]
>>> shard.piece_output(0), shard.piece_files(0)
('out/a-00000.bin', ['out/a-00000.bin', 'out/a-00000.idx'])
"""
from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpu_text.documents import COMPRESSION_SUFFIXES, NAMED_FORMATS, STDIN, name_format
from gpu_text.outputs import output_files

MANIFEST = "manifest.json"
TEMP_PREFIX = ".gpu-text-"  # what gpu_text's temporary outputs are named (atomic_outputs, the HF writer)
PIECE_DIGITS = 5
_SUFFIX = {"parquet": ".parquet", "npy": ".npy", "megatron": ".bin", "hf": ""}


def expand_inputs(specs: Sequence[str | os.PathLike]) -> list[str]:
    """The input files ``specs`` name, in order (see the module docstring): an existing file (or
    ``-``, stdin) stands for itself, a directory for its document files, a glob (``*``, ``?``,
    ``[...]``, ``**``) for its matches; a name that is none of these is kept, for the reader to
    report as missing. A glob without matches or a directory without document files is an error.

    >>> expand_inputs(["-"])
    ['-']
    >>> expand_inputs(["/nonexistent/*.txt"])
    Traceback (most recent call last):
    ...
    ValueError: /nonexistent/*.txt: no file matches this pattern
    """
    files: list[str] = []
    for spec in map(str, specs):
        if spec == STDIN or os.path.isfile(spec):
            files.append(spec)
        elif os.path.isdir(spec):
            files += _directory_files(spec)
        elif glob.has_magic(spec):
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches:
                raise ValueError(f"{spec}: no file matches this pattern")
            for match in matches:
                files += _directory_files(match) if os.path.isdir(match) else [match]
        else:
            files.append(spec)
    return files


def _directory_files(directory: str) -> list[str]:
    found = []
    for root, folders, names in os.walk(directory):
        folders[:] = sorted(f for f in folders if not f.startswith("."))  # walked in order, hidden ones not
        found += [os.path.join(root, n) for n in names if not n.startswith(".") and name_format(n) is not None]
    if not found:
        raise ValueError(f"{directory}: no document files in this directory (names ending in "
                         f"{', '.join(NAMED_FORMATS)}, maybe compressed)")
    return sorted(found, key=lambda p: Path(os.path.relpath(p, directory)).parts)


@dataclass(frozen=True)
class Shard:
    """One input file and where its output goes: ``name`` is the output's path below the output
    directory without a suffix (``2024/a``); ``pieces`` says whether outputs are numbered
    (``--shard-bytes``)."""

    index: int
    input: str
    name: str
    output_dir: str
    format: str
    pieces: bool = False

    def piece_output(self, piece: int) -> str:
        """The output name of piece ``piece`` (0 without ``--shard-bytes``), as
        :func:`gpu_text.outputs.output_files` takes it."""
        stem = os.path.join(self.output_dir, self.name) + (f"-{piece:0{PIECE_DIGITS}d}" if self.pieces else "")
        return stem + _SUFFIX[self.format]

    def piece_files(self, piece: int) -> list[str]:
        """The files of piece ``piece`` (none for an HF dataset folder, which is its own output)."""
        return output_files(self.piece_output(piece), self.format)

    def piece_paths(self, piece: int) -> list[str]:
        """What piece ``piece`` consists of on disk: its files, or its dataset folder.

        >>> Shard(0, "a.txt", "a", "out", "hf").piece_paths(0), Shard(0, "a.txt", "a", "out", "npy").piece_paths(0)
        (['out/a'], ['out/a.ids.npy', 'out/a.offsets.npy'])
        """
        return self.piece_files(piece) or [self.piece_output(piece)]


def plan_shards(inputs: Sequence[str], output_dir: str | os.PathLike, format: str,
                shard_bytes: int | None = None) -> list[Shard]:
    """A :class:`Shard` per input (see the module docstring), refusing stdin, an input given
    twice, and two inputs whose outputs would have the same name.

    >>> plan_shards(["a/x.txt", "b/x.jsonl"], "out", "parquet")  # doctest: +ELLIPSIS
    [Shard(index=0, input='.../a/x.txt', name='a/x', ...), Shard(index=1, input='.../b/x.jsonl', name='b/x', ...)]
    >>> plan_shards(["a/x.txt", "a/x.jsonl"], "out", "parquet")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../a/x.jsonl: its output shard 'x' would be that of .../a/x.txt too; rename one of them
    """
    if not inputs:
        raise ValueError("a sharded job needs at least one input file")
    if STDIN in inputs:
        raise ValueError("stdin ('-') cannot be a shard: a sharded job reads files (it names its outputs "
                         "after them and re-reads them to resume)")
    absolute = [os.path.abspath(p) for p in inputs]
    root = os.path.commonpath([os.path.dirname(p) for p in absolute])
    output_dir = str(output_dir)
    shards: list[Shard] = []
    taken: dict[str, str] = {}
    seen: dict[str, str] = {}
    for index, path in enumerate(absolute):
        real = os.path.realpath(path)
        if real in seen:
            raise ValueError(f"{path}: given twice (also as {seen[real]}); each input is one shard")
        seen[real] = path
        name = _stem(os.path.relpath(path, root))
        if name.lower() in taken:  # case-insensitive file systems would merge them
            raise ValueError(f"{path}: its output shard {name!r} would be that of {taken[name.lower()]} too; "
                             "rename one of them")
        shard = Shard(index, path, name, output_dir, format, shard_bytes is not None)
        if any(os.path.basename(p) == MANIFEST and os.path.dirname(p) == output_dir for p in shard.piece_paths(0)):
            raise ValueError(f"{path}: its output shard would be the job's {MANIFEST}; rename it")
        taken[name.lower()] = path
        shards.append(shard)
    return shards


def _stem(relative: str) -> str:
    """``relative`` (a path) without its compression suffix and then its format suffix, with ``/``."""
    parts = Path(relative).parts
    name = parts[-1]
    for known in (COMPRESSION_SUFFIXES, set(NAMED_FORMATS)):
        stem, suffix = os.path.splitext(name)
        if stem and suffix.lower() in known:
            name = stem
    return "/".join([*parts[:-1], name])


def remove_temporaries(directories: Sequence[str]) -> list[str]:
    """Remove what a killed job left under a temporary name (``.gpu-text-*`` files and dataset
    folders) in ``directories``; returns what was removed. Only when no other job writes there:
    the job lock (:func:`gpu_text.jobs.manifest.job_lock`) says so.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); _ = open(os.path.join(d, ".gpu-text-abc.x.parquet"), "w")
    >>> [os.path.basename(p) for p in remove_temporaries([d])], os.listdir(d)
    (['.gpu-text-abc.x.parquet'], [])
    """
    removed = []
    for directory in sorted(set(directories)):
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            if not name.startswith(TEMP_PREFIX):
                continue
            path = os.path.join(directory, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
            removed.append(path)
    return removed


def existing_outputs(shard: Shard) -> list[str]:
    """What of ``shard``'s output exists on disk (every numbered piece there is, with
    ``--shard-bytes``): a shard that is not complete has it removed before it is redone.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); shard = Shard(0, "a.txt", "a", d, "parquet", pieces=True)
    >>> _ = [open(shard.piece_output(k), "w") for k in range(2)]
    >>> [os.path.basename(p) for p in existing_outputs(shard)]
    ['a-00000.parquet', 'a-00001.parquet']
    """
    found: list[str] = []
    piece = 0
    while True:
        present = [p for p in shard.piece_paths(piece) if os.path.lexists(p)]
        found += present
        piece += 1
        if not present or not shard.pieces:
            return found


def remove_outputs(paths: Sequence[str]) -> None:
    """Remove files and dataset folders (what :func:`existing_outputs` found).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); os.mkdir(os.path.join(d, "ds")); _ = open(os.path.join(d, "a.bin"), "w")
    >>> remove_outputs([os.path.join(d, "ds"), os.path.join(d, "a.bin")]); os.listdir(d)
    []
    """
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)


__all__ = ["MANIFEST", "Shard", "TEMP_PREFIX", "existing_outputs", "expand_inputs", "plan_shards", "remove_outputs",
           "remove_temporaries"]
