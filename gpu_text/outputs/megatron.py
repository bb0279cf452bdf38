"""The Megatron-LM indexed dataset output (``PREFIX.bin`` + ``PREFIX.idx``), the files
Megatron's ``tools/preprocess_data.py`` writes and its ``IndexedDataset`` (formerly
``MMapIndexedDataset``) memory-maps for pretraining.

``PREFIX.bin`` holds every token, one sequence after another, in the token dtype. ``PREFIX.idx``
is, all little-endian:

====================  ==========================================================
9 bytes               ``MMIDIDX\\x00\\x00``
uint64                version, 1
uint8                 dtype code of the tokens (Megatron's ``DType``: 1 uint8,
                      2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32,
                      8 uint16)
uint64                sequence count S
uint64                document index entries, D + 1 for D documents
int32 × S             sequence lengths, in tokens
int64 × S             sequence pointers, byte offsets into ``PREFIX.bin``
int64 × (D + 1)       document index: ``0``, then after each document the number
                      of sequences so far
====================  ==========================================================

Each document is one sequence (``--append-eod`` adds the end-of-document id to it). An empty
document has no sequence at all, its document index entry repeats the previous one, and it gets
no end-of-document id: what ``preprocess_data.py`` writes for an empty document. Tokens are
uint16 when the vocabulary has fewer than 65500 pieces (Megatron's ``DType.optimal_dtype``, which
``preprocess_data.py`` uses), else int32.

Memory stays flat whatever the corpus: tokens go straight to ``.bin``; lengths, sequence pointers
and document index entries are spooled to scratch files as the rows come (on the writer thread,
overlapped with the encoding) and only copied into ``.idx`` at the end, the sections read straight
into the output's aligned buffer: the index is about 20 bytes a document (146 MB for 1 GB of
text), and computing the pointers from the lengths at the end, after the last chunk, was 0.1 s per
256 MB of text that nothing else overlapped.

>>> import os, tempfile
>>> import numpy as np
>>> from gpu_text.ragged import RaggedArray
>>> prefix = os.path.join(tempfile.mkdtemp(), "corpus")
>>> writer = MegatronWriter(prefix + ".bin", prefix + ".idx", vocab_size=4000, eod_id=2)
>>> writer.write(RaggedArray(np.array([5, 6, 7], np.int32), np.array([0, 2, 2, 3])), None, None)
>>> writer.close()
3
>>> np.fromfile(prefix + ".bin", np.uint16).tolist()
[5, 6, 2, 7, 2]
>>> os.path.getsize(prefix + ".idx") == 34 + 2 * (4 + 8) + 4 * 8
True
"""
from __future__ import annotations

import os
import struct
import tempfile

import numpy as np

from gpu_text.outputs.direct_file import DirectFile
from gpu_text.outputs.packing import append_to_rows
from gpu_text.ragged import RaggedArray

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
# Megatron's DType codes (megatron/core/datasets/indexed_dataset.py), by numpy dtype
DTYPE_CODES = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
               np.dtype(np.int64): 5, np.dtype(np.float64): 6, np.dtype(np.float32): 7, np.dtype(np.uint16): 8}
UINT16_VOCABULARY = 65500  # Megatron's optimal_dtype threshold (not 65536): the same files as its tool
_MAX_LENGTH = np.iinfo(np.int32).max  # a sequence length is an int32 in the index


def token_dtype(vocab_size: int) -> np.dtype:
    """The dtype Megatron stores tokens of a ``vocab_size`` vocabulary in: uint16 below 65500, else int32.

    >>> token_dtype(32000), token_dtype(65500), token_dtype(128256)
    (dtype('uint16'), dtype('int32'), dtype('int32'))
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    return np.dtype(np.uint16) if vocab_size < UINT16_VOCABULARY else np.dtype(np.int32)


def megatron_paths(prefix: str) -> list[str]:
    """The two files of a dataset: ``PREFIX.bin`` and ``PREFIX.idx``.

    >>> megatron_paths("data/wiki_text_document")
    ['data/wiki_text_document.bin', 'data/wiki_text_document.idx']
    """
    return [f"{prefix}.bin", f"{prefix}.idx"]


class MegatronWriter:
    """Writes ``.bin`` as rows come and ``.idx`` at :meth:`close` (see the module docstring).

    ``vocab_size`` picks the token dtype (:func:`token_dtype`); an id that does not fit it is an
    error, never silently wrapped. ``eod_id`` (``None``: none) is appended to every non-empty
    document.
    """

    def __init__(self, bin_path: str, idx_path: str, vocab_size: int, eod_id: int | None = None) -> None:
        self.dtype = token_dtype(vocab_size)
        self.limit = vocab_size if self.dtype == np.uint16 else np.iinfo(np.int32).max
        if eod_id is not None and not 0 <= eod_id < self.limit:
            raise ValueError(f"eod_id {eod_id} is outside the vocabulary of {vocab_size} ids")
        self.idx_path, self.eod_id = idx_path, eod_id
        scratch = os.path.dirname(os.path.abspath(idx_path))
        self.bin = DirectFile(bin_path)  # the tokens: most of the bytes a job writes
        self.lengths = tempfile.TemporaryFile(dir=scratch)  # int32 per sequence
        self.pointers = tempfile.TemporaryFile(dir=scratch)  # int64 per sequence
        self.document_index = tempfile.TemporaryFile(dir=scratch)  # int64 per document
        self.sequences = self.documents = 0

    def write(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None) -> None:
        """Append the rows of ``ids`` (host arrays), a document each; spans are not stored. An id
        that does not fit the token dtype is an error that leaves the dataset part-written (the
        caller discards it)."""
        from gpu_text.backend import get_backend

        values, lengths = np.ascontiguousarray(ids.values, np.int32), np.asarray(ids.lengths)
        start = self.bin.tell()
        if self.eod_id is None:
            self._write_tokens(values)
        else:
            tokens = np.empty(values.size, self.dtype)
            self._check(values, get_backend("cpu").op("token_ids", "narrow_ids")(values, self.limit, tokens))
            tokens, lengths = append_to_rows(tokens, lengths, self.eod_id)
            self.bin.write(memoryview(tokens))  # no bytes copy of the tokens
        if lengths.size and int(lengths.max()) > _MAX_LENGTH:
            raise ValueError(f"a document of {int(lengths.max())} tokens is longer than an index entry holds")
        present = lengths > 0
        kept = lengths[present].astype(np.int64)
        self.lengths.write(kept.astype("<i4").tobytes())
        # a sequence's pointer: the byte offset of its first token in .bin
        self.pointers.write((start + (np.cumsum(kept) - kept) * self.dtype.itemsize).astype("<i8").tobytes())
        self.document_index.write((self.sequences + np.cumsum(present, dtype=np.int64)).astype("<i8").tobytes())
        self.sequences += int(present.sum())
        self.documents += int(lengths.size)

    def _write_tokens(self, values: np.ndarray) -> None:
        """``values`` narrowed to the token dtype straight into ``.bin``'s aligned buffer, a
        buffer's worth at a time: no array of tokens to allocate (and fault in) and copy again."""
        from gpu_text.backend import get_backend

        narrow = get_backend("cpu").op("token_ids", "narrow_ids")
        size = self.dtype.itemsize
        at = 0
        while at < values.size:
            room = self.bin.space()
            take = min(values.size - at, room.size // size)  # the buffer holds whole tokens only: take >= 1
            piece = values[at:at + take]
            bad = narrow(piece, self.limit, room[:take * size].view(self.dtype))
            del room  # else an error below keeps the view (in its traceback) and .bin's buffer cannot close
            self._check(piece, bad)
            self.bin.commit(take * size)
            at += take

    def _check(self, values: np.ndarray, bad: int) -> None:
        if bad >= 0:
            raise ValueError(f"token id {values[bad]} does not fit this dataset's {self.dtype} tokens "
                             f"(vocabulary of {self.limit} ids)")

    def close(self) -> int:
        """Finish ``.bin`` and write ``.idx``; returns the number of documents written."""
        self.bin.close()
        idx = DirectFile(self.idx_path)  # 20 bytes a document: written after the job, so past the page cache too
        try:
            idx.write(MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", DTYPE_CODES[self.dtype]))
            idx.write(struct.pack("<QQ", self.sequences, self.documents + 1))
            for section in (self.lengths, self.pointers):
                section.seek(0)
                idx.write_from(section)
            idx.write(np.zeros(1, "<i8").tobytes())
            self.document_index.seek(0)
            idx.write_from(self.document_index)
        finally:
            idx.close()
        for scratch in (self.lengths, self.pointers, self.document_index):
            scratch.close()
        return self.documents

    def discard(self) -> None:
        """Stop writing (the caller removes the output files)."""
        for handle in (self.bin, self.lengths, self.pointers, self.document_index):
            handle.close()


__all__ = ["DTYPE_CODES", "MAGIC", "MegatronWriter", "UINT16_VOCABULARY", "megatron_paths", "token_dtype"]
