"""The BytePiece tokenizer: the pipeline of :class:`~gpu_text.tokenizer.Tokenizer` (Normalizer →
PreTokenizer → model → Decoder) with a :class:`~gpu_text.tokenizer.bytepiece.BytePieceModel`,
loaded from the seed's text model format (``method=bytepiece``)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import as_text_batch
from gpu_text.ragged import RaggedArray
from gpu_text.tokenizer.bpe import byte_piece
from gpu_text.tokenizer.bytepiece import BytePieceModel
from gpu_text.tokenizer.normalizer import Normalizer
from gpu_text.tokenizer.pre_tokenizer import SPLIT_MODES, PreTokenizer
from gpu_text.tokenizer.tokenizer import MODEL_FILE_METHODS, Encoding, Tokenizer, register_model_type, stages_of


class BytePiece(Tokenizer):
    """A BytePiece tokenizer: ids identical to ``piece-tokenizer``'s for the same model file.

    >>> pieces = ["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)] + ["hello", "world", "▁"]
    >>> model = BytePieceModel(pieces, [0.0] * 259 + [10.0, 10.0, 5.0], [2, 3, 3] + [6] * 256 + [1, 1, 1])
    >>> tok = BytePiece(model, Normalizer("no"), PreTokenizer())
    >>> tok.encode_as_pieces(["hello world"])
    [['hello', '▁', 'world']]
    >>> tok.decode_batch(tok.encode(["hello  world!"]).ids)
    ['hello world!']
    """

    def encode(self, texts: Any, backend: str | Backend | None = None, with_offsets: bool = False,
               add_bos: bool = False, add_eos: bool = False) -> Encoding:
        """Encode a batch (``TextBatch``, pyarrow strings, or a list of str/bytes): the normalizer,
        the pre-tokenizer's marks, then the model's one op (:meth:`BytePieceModel.encode_rows`; the
        BPE model's fused CPU row encoder does not apply), halving batches on GPU out-of-memory.

        >>> model = BytePieceModel(["<unk>", "a", "ab"], [0.0, 1.0, 1.0], [2, 1, 1])
        >>> e = BytePiece(model, Normalizer(), PreTokenizer()).encode(["abab a"], with_offsets=True)
        >>> e.ids.to_pylist(), e.starts.to_pylist(), e.ends.to_pylist()
        ([[2, 2, 0, 0, 0, 1]], [[0, 2, 4, 4, 4, 5]], [[2, 4, 4, 4, 5, 6]])
        """
        be = get_backend(backend)
        batch = as_text_batch(texts).to_device(be.xp)
        ids, starts, ends = self._encode_stages_fitting(batch, be, with_offsets)
        if add_bos or add_eos:
            ids, starts, ends = self._add_specials(ids, starts, ends, batch, add_bos, add_eos, be.xp)
        return Encoding(ids, starts, ends)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of one id sequence (see :meth:`decode_batch`).

        >>> model = BytePieceModel(["<unk>", "a"] + [byte_piece(b) for b in range(256)], [0.0, 1.0] + [0.0] * 256,
        ...                        [2, 1] + [6] * 256)
        >>> BytePiece(model, Normalizer(), PreTokenizer()).decode([1, 2 + 0xE2, 2 + 0x96, 2 + 0x81, 1])
        'a a'
        """
        return self.decode_batch([list(ids)], backend="cpu")[0]

    def decode_batch(self, ids: RaggedArray | Sequence[Sequence[int]], backend: str | Backend | None = None
                     ) -> list[str]:
        """Text of every row of ids. As the seed, the space symbol becomes a space in the whole
        decoded text, also where byte pieces spell it.

        >>> model = BytePieceModel(["<unk>", "▁a"], [0.0, 1.0], [2, 1])
        >>> BytePiece(model, Normalizer(), PreTokenizer()).decode_batch([[1, 1], []])
        [' a a', '']
        """
        space = self.decoder.to_dict()["space"]
        return [text.replace(space, " ") for text in super().decode_batch(ids, backend)]

    @classmethod
    def from_model_file(cls, path: str | Path, cn: Any = None) -> "BytePiece":
        """Load the seed's text model format (any ``method``: the pieces are read as counts).

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.txt"
        >>> model = BytePieceModel(["<unk>", "a", "ab"], [0.0, 1.0, 3.0], [2, 1, 1])
        >>> BytePiece(model, Normalizer(), PreTokenizer("isolate")).save_model_file(path)
        >>> again = BytePiece.from_model_file(path)
        >>> again.pre_tokenizer.split, again.model.scores.tolist(), again.encode_as_pieces(["aab"])
        ('isolate', [0.0, 1.0, 3.0], [['a', 'ab']])
        """
        from gpu_text.tokenizer.model_file import read_model_file

        spec = read_model_file(path)
        counter, pre = spec.counter, spec.pretokenizer
        model = BytePieceModel(spec.pieces.pieces, spec.pieces.scores, spec.pieces.types, unk_id=counter.unk_id)
        tok = cls(model, *stages_of(pre, path, cn), counter.bos_id, counter.eos_id, counter.pad_id)
        tok.counter_options = {"min_count": counter.min_count, "max_piece_size": counter.max_piece_size}
        return tok

    def save_model_file(self, path: str | Path) -> None:
        """Write the seed's text model format with ``method=bytepiece`` (scores are the counts).

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.txt"
        >>> BytePiece(BytePieceModel(["<unk>", "a"], [0.0, 7.0], [2, 1]), Normalizer(), PreTokenizer()
        ...           ).save_model_file(path)
        >>> path.read_text().splitlines()[1], path.read_text().splitlines()[-1]
        ('method=bytepiece', '1\\ta\\t7\\t1\\t\\t')
        """
        from gpu_text.tokenizer.model_file import CounterSpec, PieceTable, PreTokenizerSpec, TokenizerModel, \
            write_model_file

        n, pre, model = self.normalizer, self.pre_tokenizer, self.model
        if n.charsmap_pairs is not None or n.add_dummy_prefix or pre.cn is not None:
            raise ValueError("the seed's model format cannot hold this normalizer or a Cn dictionary")
        # the training options (min_count, max_piece_size) a trainer or a loaded file left here
        options = getattr(self, "counter_options", {})
        counter = CounterSpec(method="bytepiece", vocab_size=len(model), **options, unk_id=model.unk_id,
                              bos_id=self.bos_id, eos_id=self.eos_id, pad_id=self.pad_id,
                              unk_piece=model.pieces[model.unk_id],
                              **{f"{name}_piece": model.pieces[i] for name, i in
                                 (("bos", self.bos_id), ("eos", self.eos_id), ("pad", self.pad_id)) if i >= 0})
        spec = PreTokenizerSpec(name=n.name, space=n.space, cut=SPLIT_MODES.index(pre.split),
                                reconstruct=n.reconstruct, split_digits=pre.digits == "split")
        write_model_file(TokenizerModel(counter, spec, PieceTable.from_lists(model.piece_bytes, model.scores,
                                                                            model.types)), path)


__all__ = ["BytePiece"]


MODEL_FILE_METHODS["bytepiece"] = BytePiece  # Tokenizer.from_model_file (so gpu-text tokenize) loads these files
register_model_type("bytepiece", BytePiece, BytePieceModel)  # Tokenizer.save / Tokenizer.load (the JSON file)
