"""Model tables built once and kept on disk between processes, named by what they are built from.

Loading a SentencePiece ``.model`` spends most of its ~0.5 s decoding the model's precompiled
charsmap (225k rules for NMT_NFKC) and building the normalizer's trie from it: the same work for
every run of ``gpu-text tokenize`` with that model, and start-up a bulk job pays before its
first chunk. :func:`cached_arrays` keeps the built arrays as an ``.npz`` (no pickle) under
``$GPU_TEXT_TABLE_CACHE`` or ``$XDG_CACHE_HOME/gpu_text/tables`` (``~/.cache/...``), named by the
sha256 of the source bytes, the table's kind and the source of the modules that build it (a
changed builder never reads an old entry). Writes are atomic (a temporary name, then a rename);
an unreadable or damaged entry (zip CRC) is rebuilt and replaced; a folder that cannot be written
only means building every time. ``GPU_TEXT_TABLE_CACHE=0`` turns the cache off.

>>> import os, tempfile
>>> import numpy as np
>>> os.environ[CACHE_VAR] = tempfile.mkdtemp()
>>> calls = []
>>> def build():
...     calls.append(1)
...     return {"squares": np.arange(4) ** 2}
>>> [cached_arrays("demo", b"source", build, __file__)["squares"].tolist() for _ in range(2)], len(calls)
([[0, 1, 4, 9], [0, 1, 4, 9]], 1)
>>> del os.environ[CACHE_VAR]
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

CACHE_VAR = "GPU_TEXT_TABLE_CACHE"
FORMAT = 1  # bump to orphan every entry


def user_cache_root() -> Path:
    """``$XDG_CACHE_HOME/gpu_text``, or ``~/.cache/gpu_text``: where gpu_text keeps what it builds once.

    >>> user_cache_root().name
    'gpu_text'
    """
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "gpu_text"


def cache_folder() -> Path | None:
    """Where entries live (``None``: the cache is off).

    >>> os.environ[CACHE_VAR] = "0"; cache_folder() is None
    True
    >>> del os.environ[CACHE_VAR]
    """
    chosen = os.environ.get(CACHE_VAR)
    if chosen is not None:
        return None if chosen.strip() in ("", "0") else Path(chosen)
    return user_cache_root() / "tables"


def cached_arrays(kind: str, source: bytes, build: Callable[[], dict[str, np.ndarray]],
                  *builders: str) -> dict[str, np.ndarray]:
    """The arrays ``build()`` makes from ``source``, from the cache when an entry for ``kind``,
    ``source`` and the builder files ``builders`` (their content is part of the name) exists,
    else built and stored (see the module docstring)."""
    folder = cache_folder()
    if folder is None:
        return build()
    digest = hashlib.sha256(f"{kind}\0{FORMAT}\0".encode())
    for path in builders:
        digest.update(_file_digest(path))
    digest.update(source)
    path = folder / f"{kind}-{digest.hexdigest()}.npz"
    try:
        with np.load(path, allow_pickle=False) as entry:
            return {name: entry[name] for name in entry.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # none yet, or damaged: build it again
        pass
    arrays = build()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{kind}-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, **arrays)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:  # a read-only or full cache folder: the tables were built, that is enough
        pass
    return arrays


_DIGESTS: dict[str, bytes] = {}


def _file_digest(path: str) -> bytes:
    if path not in _DIGESTS:
        _DIGESTS[path] = hashlib.sha256(Path(path).read_bytes()).digest()
    return _DIGESTS[path]


__all__ = ["CACHE_VAR", "cache_folder", "cached_arrays", "user_cache_root"]
