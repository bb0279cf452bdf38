"""The SentencePiece Unigram tokenizer: the pipeline of :class:`~gpu_text.tokenizer.Tokenizer`
(Normalizer → whole-text span → :class:`~gpu_text.tokenizer.unigram.UnigramModel` → Decoder),
imported from a SentencePiece ``.model`` of type UNIGRAM with ids identical to SentencePiece's.

USER_DEFINED pieces are lattice edges with SentencePiece's bonus score (not matched whole before
the model, as for BPE), so ``user_symbols`` is off. Plain encoding runs on the CPU the fused row
encoder (``cpu_fallback/unigram_rows.py``: normalize, walk the trie and solve the lattice per row),
on a GPU the normalizer, then every later step in one op (``lattice_encode``,
``cuda/lattice_tokens.cu``: the trie's prefix search, ``lattice_viterbi``'s kernels, the unknown
tokens' ids; three host reads per call, the tables kept on the device), with the same ids.
Sampling (``enable_sampling``) and n-best run on the host, one text at a time.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch, as_text_batch
from gpu_text.ragged import RaggedArray, row_ids
from gpu_text.tokenizer.bpe import EncodedPreTokens
from gpu_text.tokenizer.decoder import Decoder
from gpu_text.tokenizer.normalizer import Normalizer
from gpu_text.tokenizer.pre_tokenizer import PreTokenizer
from gpu_text.tokenizer.tokenizer import Encoding, Tokenizer, register_model_type
from gpu_text.tokenizer.unigram import UnigramModel


# a trie without words (one slot, no edges), for a model without NORMAL or USER_DEFINED pieces
_NO_TRIE = (np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.uint8), np.zeros(1, np.uint8))


class Unigram(Tokenizer):
    """A SentencePiece Unigram tokenizer.

    >>> model = UnigramModel(["<unk>", "<s>", "</s>", "▁", "a", "b", "ab", "▁ab"], [0, 0, 0, -2, -3, -3, -4, -5],
    ...                      [2, 3, 3, 1, 1, 1, 1, 1])
    >>> tok = Unigram(model, Normalizer("no", add_dummy_prefix=True), PreTokenizer("none"), bos_id=1, eos_id=2)
    >>> tok.encode_as_pieces(["ab  ba"])
    [['▁ab', '▁', 'b', 'a']]
    >>> tok.encode(["ab"], add_bos=True, add_eos=True).ids.to_pylist(), tok.decode([7, 3, 5, 4])
    ([[1, 7, 2]], 'ab ba')
    """

    def __init__(self, model: UnigramModel, normalizer: Normalizer, pre_tokenizer: PreTokenizer,
                 bos_id: int = -1, eos_id: int = -1, pad_id: int = -1, decoder: Decoder | None = None) -> None:
        """``pre_tokenizer``: ``split="none"`` gives SentencePiece's ids (one lattice per text)."""
        super().__init__(model, normalizer, pre_tokenizer, bos_id, eos_id, pad_id, decoder)
        self.user_symbols = None  # USER_DEFINED pieces are lattice edges (SentencePiece's Unigram model)

    def encode(self, texts: Any, backend: str | Backend | None = None, with_offsets: bool = False,
               add_bos: bool = False, add_eos: bool = False, enable_sampling: bool = False, alpha: float = 0.1,
               nbest_size: int = -1, seed: int | None = None) -> Encoding:
        """Encode a batch (``TextBatch``, pyarrow strings, or a list of str/bytes): the best path,
        or with ``enable_sampling`` one sampled segmentation per text as SentencePiece's
        ``encode(..., enable_sampling=True, alpha=, nbest_size=)``: ``nbest_size`` < 0 samples from
        every segmentation with probability ∝ exp(alpha · score), > 1 from the ``nbest_size`` best,
        0 or 1 is the best path. ``seed`` makes the samples repeatable (``None``: fresh entropy).

        >>> model = UnigramModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -1.0, -1.5], [2, 1, 1, 1])
        >>> tok = Unigram(model, Normalizer(), PreTokenizer("none"))
        >>> tok.encode(["abab"], with_offsets=True).ends.to_pylist()
        [[2, 4]]
        >>> a = tok.encode(["ab"] * 8, enable_sampling=True, alpha=1.0, seed=3).ids.to_pylist()
        >>> b = tok.encode(["ab"] * 8, enable_sampling=True, alpha=1.0, seed=3).ids.to_pylist()
        >>> a == b, sorted(map(len, a))[::7]
        (True, [1, 2])
        """
        be = get_backend(backend)
        batch = as_text_batch(texts).to_device(be.xp)
        if enable_sampling and nbest_size not in (0, 1):
            ids, starts, ends = self._encode_sampled(batch, be, with_offsets, float(alpha), int(nbest_size),
                                                     np.random.default_rng(seed))
        elif be.has_op("unigram_rows", "encode_unigram_text") and self.pre_tokenizer.split == "none":
            # the CPU: every stage row by row, in cache (each row one lattice: the fused encoder cuts no pre-tokens)
            ids, starts, ends = self._encode_rows(batch, be, with_offsets)
        else:
            ids, starts, ends = self._encode_stages_fitting(batch, be, with_offsets)
        if add_bos or add_eos:
            ids, starts, ends = self._add_specials(ids, starts, ends, batch, add_bos, add_eos, be.xp)
        return Encoding(ids, starts, ends)

    def _encode_rows(self, batch: TextBatch, be: Backend, with_offsets: bool
                     ) -> tuple[RaggedArray, RaggedArray | None, RaggedArray | None]:
        """All stages row by row while the row is in cache (the CPU's way; the staged path's ids)."""
        charsmap, symbol, collapse, dummy = self.normalizer.kernel_arguments(be)
        model = self.model
        trie = model.trie.arrays(be) if model.trie is not None else _NO_TRIE
        ids, offsets, starts, ends = be.op("unigram_rows", "encode_unigram_text")(
            batch.data, batch.offsets, charsmap, symbol, collapse, dummy, self.normalizer.growth, trie, model.weights,
            model.unk_score, model.unk_id, model.byte_fallback, model.byte_ids, with_offsets)
        if not with_offsets:
            return RaggedArray(ids, offsets, check=False), None, None
        return tuple(RaggedArray(a, offsets, check=False) for a in (ids, starts, ends))

    def _encode_sampled(self, batch: TextBatch, be: Backend, with_offsets: bool, alpha: float, nbest_size: int,
                        rng: np.random.Generator) -> tuple[RaggedArray, RaggedArray | None, RaggedArray | None]:
        """:meth:`_encode_stages` with a sampled path per span (on the host, span by span)."""
        normalized = self.normalizer.normalize(batch, be, with_alignment=with_offsets)
        text = normalized.text
        pre = self.pre_tokenizer.pre_tokenize(text, be, None)
        base = text.offsets[:-1][row_ids(pre.starts.offsets)]
        span_starts, span_ends = to_host(pre.starts.values + base), to_host(pre.ends.values + base)
        data = to_host(text.data)
        starts, ends, values, offsets = [], [], [], [0]
        lattices = self.model.lattices(data, span_starts, span_ends)
        for a, b, nodes in zip(span_starts.tolist(), span_ends.tolist(), lattices):
            for s, e, v in self.model.sample_spans(data[a:b].tobytes(), alpha, nbest_size, rng, nodes):
                starts.append(a + s)
                ends.append(a + e)
                values.append(v)
            offsets.append(len(values))
        xp = be.xp
        encoded = self.model.finish_paths(text.data, xp.asarray(np.array(starts, np.int64)),
                                          xp.asarray(np.array(ends, np.int64)), xp.asarray(np.array(values, np.int32)),
                                          xp.asarray(np.array(offsets, np.int64)), be)
        row_offsets = encoded.offsets[pre.starts.offsets]
        ids = RaggedArray(encoded.ids, row_offsets, check=False)
        if not with_offsets:
            return ids, None, None
        return ids, *self._original_spans(text, normalized.alignment, encoded, row_offsets, xp)

    def nbest(self, text: str | bytes, n: int) -> list[list[int]]:
        """The ids of the ``n`` best segmentations of one text, best first (SentencePiece's
        ``nbest_encode_as_ids``; fewer when the text has fewer).

        >>> model = UnigramModel(["<unk>", "a", "b", "ab"], [0.0, -1.0, -2.0, -2.5], [2, 1, 1, 1])
        >>> Unigram(model, Normalizer(), PreTokenizer("none")).nbest("ab", 5)
        [[3], [1, 2]]
        """
        normalized = self.normalizer.normalize([text], "cpu", with_alignment=False).text
        raw = to_host(normalized.data)[int(normalized.offsets[0]):int(normalized.offsets[1])].tobytes()
        out = []
        for path, _ in self.model.nbest_spans(raw, int(n)):
            data = np.frombuffer(raw, np.uint8)
            arrays = [np.array([t[k] for t in path], dt) for k, dt in ((0, np.int64), (1, np.int64), (2, np.int32))]
            encoded: EncodedPreTokens = self.model.finish_paths(data, *arrays, np.array([0, len(path)], np.int64),
                                                                get_backend("cpu"))
            out.append(to_host(encoded.ids).tolist())
        return out

    @classmethod
    def from_sentencepiece(cls, path: str | Path) -> "Unigram":
        """Import a SentencePiece ``.model`` of type UNIGRAM (see
        :mod:`gpu_text.tokenizer.sentencepiece_model` for what is honoured or refused).

        Here a tiny ``ModelProto`` written by hand: pieces (field 1: the piece, field 2: its float
        score, field 3: its type) and a trainer spec saying UNIGRAM; unset fields take the proto's
        defaults (the dummy prefix, no byte fallback).

        >>> import struct, tempfile, pathlib
        >>> def piece(text, score, kind):
        ...     body = b"\\x0a" + bytes([len(text.encode())]) + text.encode() + b"\\x15" + struct.pack("<f", score)
        ...     body += b"\\x18" + bytes([kind])
        ...     return b"\\x0a" + bytes([len(body)]) + body
        >>> kinds = [("<unk>", 0, 2), ("<s>", 0, 3), ("</s>", 0, 3), ("▁", -2, 1), ("a", -3, 1), ("▁a", -4, 1)]
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.model"
        >>> _ = path.write_bytes(b"".join(piece(*p) for p in kinds) + b"\\x12\\x02\\x18\\x01")
        >>> tok = Unigram.from_sentencepiece(path)
        >>> tok.encode(["a  ab"]).ids.to_pylist(), tok.decode([5, 5, 4])
        ([[5, 5, 0]], 'a aa')
        """
        from gpu_text.tokenizer.sentencepiece_model import SentencePieceModelError, load_sentencepiece_model

        sp = load_sentencepiece_model(path)
        if sp.model_type != "UNIGRAM":
            raise SentencePieceModelError(f"{path}: a {sp.model_type} model, not UNIGRAM (Tokenizer.from_sentencepiece "
                                          "loads every type)")
        model = UnigramModel(sp.pieces, sp.scores, sp.types, unk_id=sp.unk_id, byte_fallback=sp.byte_fallback)
        return cls(model, sp.normalizer(), PreTokenizer(split="none"), sp.bos_id, sp.eos_id, sp.pad_id)


__all__ = ["Unigram"]


register_model_type("unigram", Unigram, UnigramModel)  # Tokenizer.load returns a Unigram for these files
