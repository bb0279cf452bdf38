"""The decoder: ids back to text. BYTE pieces become their byte, UNKNOWN and CONTROL pieces are
dropped, the space symbol becomes a space. Batched with array gathers (CuPy kernels on a GPU)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch
from gpu_text.ragged import RaggedArray, row_ids
from gpu_text.specs import spec_mapping, spec_value
from gpu_text.tokenizer.bpe import BYTE_VALUES, PieceType, shown_piece
from gpu_text.tokenizer.normalizer import SPACE_SYMBOL


class Decoder:
    """Turns ragged ids into text bytes with a table of every piece's output bytes.

    >>> d = Decoder(["<unk>", "<0x41>", "▁hi", "<s>"], [2, 6, 1, 3])
    >>> d.decode_batch([[2, 1, 3, 0]], backend="cpu")
    [' hiA']
    >>> Decoder(["<unk>", "<0xZZ>"], [2, 6])
    Traceback (most recent call last):
    ...
    ValueError: piece 1 '<0xZZ>' is a BYTE piece but not one of <0x00> ... <0xFF>
    """

    def __init__(self, pieces: Sequence[str | bytes], types: Sequence[int], space: str = SPACE_SYMBOL,
                 strip_leading_space: bool = False) -> None:
        chunks = []
        space_bytes = space.encode()
        # plain ints: an enum member looked up per piece costs ~20 ms per 1,000 pieces at every load
        byte, empty = int(PieceType.BYTE), (int(PieceType.UNKNOWN), int(PieceType.CONTROL))
        kinds = types.tolist() if isinstance(types, np.ndarray) else [int(kind) for kind in types]
        for index, (piece, kind) in enumerate(zip(pieces, kinds)):
            raw = piece if isinstance(piece, bytes) else piece.encode("utf-8", "surrogatepass")
            if kind == byte:
                if raw not in BYTE_VALUES:
                    raise ValueError(f"piece {index} {shown_piece(raw)} is a BYTE piece but not one of <0x00> ... <0xFF>")
                chunks.append(bytes([BYTE_VALUES[raw]]))
            elif kind in empty:
                chunks.append(b"")
            else:
                chunks.append(raw.replace(space_bytes, b" "))
        self.space = space
        self.strip_leading_space = strip_leading_space
        self.piece_offsets = np.zeros(len(chunks) + 1, np.int64)
        np.cumsum([len(c) for c in chunks], out=self.piece_offsets[1:])
        self.piece_bytes = np.frombuffer(b"".join(chunks), np.uint8)

    def decode_ragged(self, ids: RaggedArray, backend: str | Backend | None = None) -> TextBatch:
        """Bytes of every row of ``ids`` (ids out of range raise ``IndexError``).

        >>> Decoder(["<unk>", "a"], [2, 1]).decode_ragged(RaggedArray(np.array([1, 1]), np.array([0, 2]))).to_pylist()
        ['aa']
        """
        be = get_backend(backend)
        xp = be.xp
        values = be.asarray(ids.values).astype(xp.int64)
        if values.size and (int(values.min()) < 0 or int(values.max()) >= self.piece_offsets.size - 1):
            raise IndexError(f"ids must be in [0, {self.piece_offsets.size - 1})")
        piece_offsets, piece_bytes = xp.asarray(self.piece_offsets), xp.asarray(self.piece_bytes)
        lengths = piece_offsets[values + 1] - piece_offsets[values]
        id_out = xp.zeros(values.size + 1, xp.int64)
        xp.cumsum(lengths, out=id_out[1:])
        owner = row_ids(id_out)  # output byte -> the id that writes it
        data = piece_bytes[piece_offsets[values][owner] + xp.arange(owner.size, dtype=xp.int64) - id_out[owner]]
        row_out = id_out[be.asarray(ids.offsets)]
        if self.strip_leading_space and data.size:
            # SentencePiece drops the space its dummy prefix added at the start of each text
            firsts = row_out[:-1][row_out[1:] > row_out[:-1]]
            leading = firsts[data[firsts] == 0x20]
            keep = xp.ones(data.size, bool)
            keep[leading] = False
            removed = xp.zeros(data.size + 1, xp.int64)
            xp.cumsum(~keep, out=removed[1:])
            data, row_out = data[keep], row_out - removed[row_out]
        return TextBatch(xp.ascontiguousarray(data.astype(xp.uint8)), row_out, check=False)

    def decode_batch(self, ids: RaggedArray | Sequence[Sequence[int]], backend: str | Backend | None = None
                     ) -> list[str]:
        """Every row as ``str`` (malformed UTF-8 from byte pieces shown as U+FFFD).

        >>> Decoder(["<unk>", "▁a"], [2, 1], strip_leading_space=True).decode_batch([[1, 1], []])
        ['a a', '']
        """
        if not isinstance(ids, RaggedArray):
            lengths = [len(row) for row in ids]
            offsets = np.zeros(len(lengths) + 1, np.int64)
            np.cumsum(lengths, out=offsets[1:])
            flat = np.fromiter((i for row in ids for i in row), np.int64, int(offsets[-1]))
            ids = RaggedArray(flat, offsets)
        return self.decode_ragged(ids, backend).to_pylist()


    def to_dict(self) -> dict[str, Any]:
        """The options; the pieces are the model's, so the spec does not repeat them.

        >>> Decoder(["<unk>"], [2], strip_leading_space=True).to_dict()
        {'space': '▁', 'strip_leading_space': True}
        """
        return {"space": self.space, "strip_leading_space": self.strip_leading_space}

    @classmethod
    def from_dict(cls, spec: Any, pieces: Sequence[str | bytes], types: Sequence[int]) -> "Decoder":
        """The decoder of ``pieces`` and ``types`` (the model's) with the options of a :meth:`to_dict` spec.

        >>> Decoder.from_dict({"space": "_", "strip_leading_space": False}, ["<unk>", "_a"], [2, 1]).decode_batch([[1]])
        [' a']
        """
        spec = spec_mapping(spec, "Decoder", ("space", "strip_leading_space"))
        space = spec_value(spec, "space", str, "Decoder")
        if not space:
            raise ValueError("Decoder spec: 'space' must be a non-empty string")
        return cls(pieces, types, space, spec_value(spec, "strip_leading_space", bool, "Decoder"))
