"""The manifest of a sharded job, ``DIR/manifest.json``: what the job is (the options that
produce its outputs) and every shard's state, rewritten atomically (a temporary file, flushed to
disk, renamed over the old one) after each shard, so that it is whole whenever the job dies.

::

    {"manifest": "gpu-text tokenize shards", "version": 1, "gpu_text": "0.1.0",
     "options": {"model_sha256": "...", "field": "text", "output_format": "parquet", ...},
     "complete": false,
     "totals": {"shards": 3, "done": 1, "skipped": 0, "pending": 2, "documents": ..., "tokens": ...},
     "shards": [{"shard": "a", "input": "/data/a.txt", "input_bytes": 10, "input_mtime_ns": ...,
                 "status": "done", "documents": 2, "tokens": 9, "text_bytes": 8, "rows": 2,
                 "tokens_written": 9, "pieces": 1,
                 "files": [{"path": "a.parquet", "bytes": 612, "sha256": "..."}]},
                {"shard": "b", ..., "status": "skipped", "error": "...: damaged compressed data (...)"},
                {"shard": "c", ..., "status": "pending"}]}

A shard is complete when its entry is ``done``, its input has the recorded size and modification
time, and every file it lists has the recorded size and SHA-256 (:meth:`Manifest.complete`).
Nothing in the manifest depends on timing or on the number of workers: the same job gives the
same manifest, byte for byte.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); src = os.path.join(d, "a.txt"); _ = open(src, "w").write("x\\n")
>>> m = Manifest(os.path.join(d, MANIFEST), {"field": "text"}, [("a", src)])
>>> m.save(); Manifest.load(m.path).entries[0]["status"]
'pending'
>>> m.check_resumable({"field": "body"}, [("a", src)])
Traceback (most recent call last):
...
ValueError: the job in this directory was made with other options (field: 'text' there, 'body' now); ...
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from gpu_text.jobs.shards import MANIFEST, TEMP_PREFIX

KIND = "gpu-text tokenize shards"
VERSION = 1
LOCK = ".gpu-text.lock"
_READ_BYTES = 1 << 20
_COUNTS = ("documents", "empty_documents", "tokens", "text_bytes", "input_bytes", "rows", "tokens_written")


def file_sha256(path: str) -> str:
    """The SHA-256 of a file's bytes, as hex, read a MiB at a time.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "f"); _ = open(path, "wb").write(b"abc")
    >>> file_sha256(path)[:16]
    'ba7816bf8f01cfea'
    """
    from gpu_text.outputs.direct_file import known_sha256

    known = known_sha256(path)  # hashed as this process wrote it: not read back from disk
    if known is not None:
        return known
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_READ_BYTES):
            digest.update(block)
    return digest.hexdigest()


def describe_files(paths: Sequence[str], output_dir: str) -> list[dict[str, Any]]:
    """Path (relative to ``output_dir``), size and SHA-256 of each file of ``paths``, a folder
    (an HF dataset) standing for every file in it, sorted.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); _ = open(os.path.join(d, "a.bin"), "wb").write(b"abc")
    >>> [(f["path"], f["bytes"]) for f in describe_files([os.path.join(d, "a.bin")], d)]
    [('a.bin', 3)]
    """
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names)
        else:
            files.append(path)
    return [{"path": os.path.relpath(f, output_dir).replace(os.sep, "/"), "bytes": os.path.getsize(f),
             "sha256": file_sha256(f)} for f in files]


def files_match(described: Sequence[dict[str, Any]], output_dir: str) -> bool:
    """Whether every file :func:`describe_files` listed is still there with its size and SHA-256
    (the size first: a changed size needs no hashing).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); path = os.path.join(d, "a.bin"); _ = open(path, "wb").write(b"abc")
    >>> described = describe_files([path], d); _ = open(path, "wb").write(b"abd")
    >>> files_match(described, d)
    False
    """
    for item in described:
        path = os.path.join(output_dir, item["path"])
        if not os.path.isfile(path) or os.path.getsize(path) != item["bytes"]:
            return False
    return all(file_sha256(os.path.join(output_dir, item["path"])) == item["sha256"] for item in described)


def input_identity(path: str) -> dict[str, int]:
    """What tells a changed input: its size and modification time (nanoseconds).

    >>> sorted(input_identity(__file__))
    ['input_bytes', 'input_mtime_ns']
    """
    status = os.stat(path)
    return {"input_bytes": status.st_size, "input_mtime_ns": status.st_mtime_ns}


class Manifest:
    """The manifest at ``path`` of a job made with ``options`` over ``plan`` (the shards' names
    and inputs, in order); :attr:`entries` holds a dict per shard (see the module docstring)."""

    def __init__(self, path: str, options: dict[str, Any], plan: Sequence[tuple[str, str]]) -> None:
        self.path = path
        self.options = dict(options)
        self.entries: list[dict[str, Any]] = [{"shard": name, "input": source, "status": "pending"}
                                              for name, source in plan]

    @classmethod
    def load(cls, path: str) -> "Manifest":
        """The manifest at ``path``, refused with a message naming it when it is not one."""
        try:
            with open(path, encoding="utf-8") as handle:
                content = json.load(handle)
            if content.get("manifest") != KIND or not isinstance(content.get("shards"), list):
                raise ValueError(f"not a {KIND!r} manifest")
            if content.get("version") != VERSION:
                raise ValueError(f"manifest version {content.get('version')!r}, this gpu_text reads {VERSION}")
            manifest = cls(path, content["options"], [])
            manifest.entries = [dict(entry) for entry in content["shards"]]
            for entry in manifest.entries:
                if not {"shard", "input", "status"} <= set(entry):
                    raise ValueError("a shard entry lacks its name, input or status")
        except (ValueError, KeyError, AttributeError, TypeError) as exc:
            raise ValueError(f"{path}: not a usable job manifest ({exc}); remove it (and the outputs) to start "
                             "over") from None
        return manifest

    def check_resumable(self, options: dict[str, Any], plan: Sequence[tuple[str, str]]) -> None:
        """Refuse to continue this job with other ``options`` or another ``plan`` of shards,
        saying what differs."""
        changed = [f"{key}: {self.options.get(key)!r} there, {options.get(key)!r} now"
                   for key in sorted(set(self.options) | set(options)) if self.options.get(key) != options.get(key)]
        if changed:
            raise ValueError("the job in this directory was made with other options (" + "; ".join(changed)
                             + "); run it with the same options, or choose another --output-dir")
        there = [(entry["shard"], entry["input"]) for entry in self.entries]
        now = [tuple(item) for item in plan]
        if there != now:
            old, new = set(there), set(now)
            added = [name for name, source in now if (name, source) not in old]
            missing = [name for name, source in there if (name, source) not in new]
            raise ValueError(f"the job in this directory has other input shards ({len(there)} there, {len(plan)} "
                             f"now; new: {', '.join(added[:3]) or 'none'}; gone: {', '.join(missing[:3]) or 'none'}"
                             "); give the same inputs, or choose another --output-dir")

    def complete(self, index: int) -> bool:
        """Whether shard ``index`` is done and still whole: its input unchanged, its files intact."""
        entry = self.entries[index]
        if entry["status"] != "done":
            return False
        try:
            if {k: entry.get(k) for k in ("input_bytes", "input_mtime_ns")} != input_identity(entry["input"]):
                return False
        except OSError:  # the input is gone: its output cannot be checked against it
            return False
        return files_match(entry.get("files", []), os.path.dirname(self.path))

    def record(self, index: int, **fields: Any) -> None:
        """Set shard ``index``'s entry to ``fields`` (its name and input kept)."""
        entry = self.entries[index]
        self.entries[index] = {"shard": entry["shard"], "input": entry["input"], **fields}

    def totals(self) -> dict[str, Any]:
        """Shards by state, and the counts of the done ones summed."""
        states = [entry["status"] for entry in self.entries]
        done = [entry for entry in self.entries if entry["status"] == "done"]
        return {"shards": len(states), "done": states.count("done"), "skipped": states.count("skipped"),
                "pending": states.count("pending"), **{key: sum(int(e.get(key, 0)) for e in done) for key in _COUNTS}}

    def to_dict(self) -> dict[str, Any]:
        """The manifest as written (see the module docstring)."""
        import gpu_text

        totals = self.totals()
        return {"manifest": KIND, "version": VERSION, "gpu_text": gpu_text.__version__, "options": self.options,
                "complete": totals["done"] == totals["shards"], "totals": totals, "shards": self.entries}

    def save(self) -> None:
        """Write the manifest atomically: a whole old one or a whole new one, whenever the job dies."""
        directory = os.path.dirname(os.path.abspath(self.path))
        handle, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=f".{MANIFEST}", dir=directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(self.to_dict(), out, indent=1)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temp, 0o644)
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(temp)
            raise
        _sync_directory(directory)


def _sync_directory(directory: str) -> None:
    """Flush a rename to disk (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


@contextlib.contextmanager
def job_lock(output_dir: str) -> Iterator[None]:
    """Hold ``DIR/.gpu-text.lock`` for the block, so that two jobs never write one directory (a
    second one is refused at once); the system drops the lock of a killed job.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with job_lock(d):
    ...     with job_lock(d):
    ...         pass  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...: another gpu-text job is writing this directory (it holds ....gpu-text.lock)
    """
    try:
        import fcntl
    except ImportError:  # no advisory locks here (Windows): one job per directory is the user's to keep
        yield
        return
    path = os.path.join(output_dir, LOCK)
    handle = open(path, "a")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ValueError(f"{output_dir}: another gpu-text job is writing this directory (it holds {path})") \
                from None
        yield
    finally:
        handle.close()


__all__ = ["KIND", "LOCK", "Manifest", "VERSION", "describe_files", "file_sha256", "files_match", "input_identity",
           "job_lock"]
