"""The saved form of a built :class:`~gpu_text.segment.segmenter.Segmenter`: one uncompressed
``.npz`` (no pickle) holding the trie, weights, words and frequencies, checked against a digest of
every member when it is loaded, the trie memory-mapped.

>>> import tempfile, pathlib
>>> from gpu_text.segment import Segmenter
>>> from gpu_text.segment.dictionary import Dictionary
>>> path = pathlib.Path(tempfile.mkdtemp()) / "seg.npz"
>>> write_segmenter(Segmenter(Dictionary(["你好"], np.array([3]), 5)), path, "t")
>>> read_segmenter(Segmenter, path, "t", 1 << 20).cut("你好吗")
['你好', '吗']
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from typing import Any

import numpy as np

from gpu_text.segment.dictionary import Dictionary
from gpu_text.trie import DoubleArrayTrie
from gpu_text.trie.double_array_file import FORMAT as TRIE_FORMAT, write_npz

FILE_FORMAT = "gpu_text.Segmenter/1"  # bump when the saved members or their meaning change


def write_segmenter(segmenter: Any, path: str | os.PathLike, tag: str = "") -> None:
    """:meth:`Segmenter.save <gpu_text.segment.segmenter.Segmenter.save>`: the members, their digest,
    written beside ``path`` and renamed."""
    d = segmenter.dictionary
    words = [] if d is None else list(d.words)
    members = {"segmenter": np.array(FILE_FORMAT), "compat": np.array(segmenter.compat or ""), "tag": np.array(tag),
               "has_dictionary": np.array(d is not None),
               # words never hold NUL (the trie's terminator), so NUL separates them
               "words": np.frombuffer("\0".join(words).encode("utf-8", "surrogatepass"), np.uint8),
               "freqs": np.zeros(0, np.int64) if d is None else np.asarray(d.freqs, np.int64),
               "total": np.array(0 if d is None else int(d.total), np.int64),
               "skipped": np.frombuffer("\0".join([] if d is None else d.skipped).encode("utf-8", "replace"),
                                        np.uint8),
               "weights": segmenter.weights,
               "scalars": np.array([segmenter.unknown_weight, segmenter.tail_score, segmenter.max_word_bytes],
                                   np.float64)}
    if segmenter.trie is not None:
        members.update({"format": np.array(TRIE_FORMAT), "state": segmenter.trie.state,
                        "check": segmenter.trie.check, "label": segmenter.trie.label, "eow": segmenter.trie.eow})
    members["digest"] = np.array(_digest(members))
    folder = os.path.dirname(os.path.abspath(path))
    handle, temp = tempfile.mkstemp(prefix=".segmenter-", suffix=".npz", dir=folder)
    os.close(handle)
    try:
        write_npz(temp, members)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # mkstemp's 0o600 would make a saved model private
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def read_segmenter(cls: Any, path: str | os.PathLike, tag: str | None, window_bytes: int) -> Any:
    """:meth:`Segmenter.load <gpu_text.segment.segmenter.Segmenter.load>`: a ``cls`` from the checked
    members of the file at ``path``."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            members = {name: archive[name] for name in archive.files if name not in ("state", "check", "label",
                                                                                     "eow")}
        kind = members.get("segmenter")
        if kind is None or kind.shape != () or str(kind) != FILE_FORMAT:
            raise ValueError(f"format is {kind!r}, expected {FILE_FORMAT!r}")
        trie = DoubleArrayTrie.load(path, mmap=True) if "format" in members else None
        if trie is not None:
            # private writable copies of the mapped pages (one memcpy): Numba compiles a second
            # specialisation of every kernel for read-only arrays, seconds of JIT on a cold cache
            trie.state, trie.check, trie.label, trie.eow = (np.array(a) for a in (trie.state, trie.check,
                                                                                   trie.label, trie.eow))
            members.update(state=trie.state, check=trie.check, label=trie.label, eow=trie.eow)
        if str(members.pop("digest", "")) != _digest(members):
            raise ValueError("its contents do not match their digest (corrupt or altered)")
        segmenter = _from_members(cls, members, trie, window_bytes)
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{os.fspath(path)} is not a saved Segmenter: {exc}") from exc
    saved = str(members["tag"])
    if tag is not None and saved != tag:
        raise ValueError(f"{os.fspath(path)} was saved with tag {saved!r}, not {tag!r}")
    return segmenter


def _from_members(cls: Any, members: dict[str, np.ndarray], trie: DoubleArrayTrie | None, window_bytes: int
                  ) -> Any:
    """A segmenter from checked-digest members, without building anything."""
    compat = str(members["compat"]) or None
    words_blob = members["words"].tobytes().decode("utf-8", "surrogatepass")
    words = words_blob.split("\0") if words_blob else []
    skipped_blob = members["skipped"].tobytes().decode("utf-8")
    freqs, weights = members["freqs"], members["weights"]
    n = len(words)
    if freqs.shape != (n,) or freqs.dtype != np.int64 or weights.dtype != np.float64:
        raise ValueError("the word frequencies or weights have the wrong shape or type")
    if (trie is not None) != (n > 0) or (trie is not None and len(trie) != n) or weights.size != max(n, 1):
        raise ValueError("the trie, the words and the weights do not agree in size")
    dictionary = None
    if bool(members["has_dictionary"]):
        dictionary = Dictionary(words, np.array(freqs), int(members["total"]),
                                skipped_blob.split("\0") if skipped_blob else [])
    segmenter = cls(None, compat, window_bytes=window_bytes)  # checks compat and window_bytes
    unknown, tail, max_word_bytes = members["scalars"].tolist()
    segmenter.dictionary, segmenter.trie, segmenter.weights = dictionary, trie, np.array(weights)
    segmenter.unknown_weight, segmenter.tail_score, segmenter.max_word_bytes = unknown, tail, int(max_word_bytes)
    return segmenter


def _digest(members: dict[str, np.ndarray]) -> str:
    """sha256 over every member's name, dtype, shape and bytes, in name order: what a saved
    segmenter must still match when it is loaded (mapped members bypass the zip's CRCs)."""
    h = hashlib.sha256()
    for name in sorted(members):
        array = np.ascontiguousarray(members[name])
        h.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        h.update(memoryview(array.reshape(-1).view(np.uint8)) if array.dtype.kind != "U" else str(array).encode())
    return h.hexdigest()


__all__ = ["FILE_FORMAT", "read_segmenter", "write_segmenter"]
