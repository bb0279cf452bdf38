"""The tokenizer: Normalizer → PreTokenizer → BPE model → ids, and the Decoder back.

Every stage runs batched on the chosen backend (kernels on a GPU, Numba on the CPU). Token byte
spans are reported in the ORIGINAL text: the normalizer's alignment maps each normalized byte
back to the original byte it came from.

The model's USER_DEFINED pieces (SentencePiece's ``user_defined_symbols``, a trainer's
``extra_tokens``) are matched whole in the normalized text before pre-tokenization, as
SentencePiece does: each occurrence is one id, and merges run between them, never across.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.backend import Backend, get_backend, is_device_out_of_memory
from gpu_text.batch import TextBatch, as_text_batch
from gpu_text.ragged import RaggedArray, row_ids
from gpu_text.specs import spec_mapping, spec_value
from gpu_text.tokenizer.bpe import BPEModel, EncodedPreTokens, PieceType
from gpu_text.tokenizer.decoder import Decoder
from gpu_text.tokenizer.normalizer import SPACE_SYMBOL, Normalizer
from gpu_text.tokenizer.pre_tokenizer import SPLIT_MODES, PreTokenizer, symbol_scan_width
from gpu_text.tokenizer.tokenizer_file import FORMAT, TokenizerFileError, model_file_kind, model_from_spec, \
    model_to_spec, read_tokenizer_file, write_tokenizer_file
from gpu_text.trie import DoubleArrayTrie

_SPECIALS = ("bos_id", "eos_id", "pad_id")


@dataclass(frozen=True)
class Encoding:
    """Ids of every text (ragged, int32) and, when asked for, each id's byte span ``[start, end)``
    in the original text (relative to that text; bos/eos get empty spans at 0 and at the end)."""

    ids: RaggedArray
    starts: RaggedArray | None = None
    ends: RaggedArray | None = None


def stages_of(pre: Any, path: str | Path, cn: Any = None) -> tuple[Normalizer, PreTokenizer]:
    """The normalizer and pre-tokenizer a model file's ``[PreTokenizerSpec]`` (``pre``) describes
    (``cn``: the Chinese cutter, which the file does not keep); ``path`` names the file in errors.

    >>> from gpu_text.tokenizer.model_file import PreTokenizerSpec
    >>> normalizer, pre_tokenizer = stages_of(PreTokenizerSpec(cut=1), "m.txt")
    >>> pre_tokenizer.split
    'isolate'
    """
    if not 0 <= pre.cut < len(SPLIT_MODES):
        modes = ", ".join(f"{cut} {mode}" for cut, mode in enumerate(SPLIT_MODES))
        raise ValueError(f"{path}: unknown pre-tokenizer cut={pre.cut} ({modes})")
    split = SPLIT_MODES[pre.cut]
    normalizer = Normalizer(pre.name, space=pre.space, reconstruct=pre.reconstruct)
    return normalizer, PreTokenizer(split=split, digits="split" if pre.split_digits else "keep",
                                    cn=cn if split != "whitespace" else None, space=pre.space)


# model-file methods other than BPE ("sentencepiece") and the Tokenizer subclass that loads each;
# filled by the subclasses' modules (gpu_text.tokenizer imports them all), so that this module
# does not import them
MODEL_FILE_METHODS: dict[str, Any] = {}

# the model types of tokenizer files ("model": {"type": name, ...}): name -> (the Tokenizer subclass
# that loads it, its model class); filled by the subclasses' modules as MODEL_FILE_METHODS is. A
# file without "type" is a BPE file (written before types were named).
MODEL_TYPES: dict[str, tuple[Any, Any]] = {}


def register_model_type(name: str, tokenizer_class: Any, model_class: Any) -> None:
    """Make :meth:`Tokenizer.save` name ``model_class`` models ``name`` and :meth:`Tokenizer.load`
    build ``tokenizer_class`` for them. A model class without ``to_dict``/``from_dict`` is saved
    as its piece table (``pieces``, ``scores``, ``types``, ``unk_id``) and the constructor options
    it keeps as attributes of the same names (see :func:`~gpu_text.tokenizer.tokenizer_file.model_to_spec`).

    >>> MODEL_TYPES["bpe"][1].__name__
    'BPEModel'
    """
    MODEL_TYPES[name] = (tokenizer_class, model_class)


def _model_type_of(model: Any) -> str:
    for name, (_, model_class) in MODEL_TYPES.items():
        if type(model) is model_class:
            return name
    raise ValueError(f"no tokenizer file type is registered for {type(model).__name__} models")


class Tokenizer:
    """A BPE tokenizer pipeline.

    >>> from gpu_text.tokenizer.bpe import byte_piece
    >>> pieces = ["<unk>", "<s>", "</s>"] + [byte_piece(b) for b in range(256)] + ["▁h", "i", "▁hi"]
    >>> types = [2, 3, 3] + [6] * 256 + [1, 1, 1]
    >>> tok = Tokenizer(BPEModel(pieces, [0.0] * 259 + [-1.0, -2.0, 0.0], types), Normalizer("no"), PreTokenizer())
    >>> tok.encode_as_pieces(["hi hi!"])
    [['<0x68>', 'i', '▁hi', '<0x21>']]
    >>> tok.decode_batch(tok.encode(["hi hi!"]).ids)
    ['hi hi!']
    """

    def __init__(self, model: BPEModel, normalizer: Normalizer, pre_tokenizer: PreTokenizer,
                 bos_id: int = -1, eos_id: int = -1, pad_id: int = -1, decoder: Decoder | None = None) -> None:
        """``decoder``: by default the one that undoes ``normalizer``'s space handling."""
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        # special ids: -1 or a CONTROL piece, so no id outside the vocabulary is ever written
        model.check_special_ids(bos_id=bos_id, eos_id=eos_id, pad_id=pad_id)
        self.bos_id, self.eos_id, self.pad_id = bos_id, eos_id, pad_id
        if decoder is None:
            decoder = Decoder(model.piece_bytes, model.types, space=getattr(normalizer, "space", SPACE_SYMBOL),
                              strip_leading_space=bool(getattr(normalizer, "add_dummy_prefix", False)))
        self.decoder = decoder
        user = [i for i in np.flatnonzero(model.types == PieceType.USER_DEFINED).tolist() if model.piece_bytes[i]]
        words = {model.piece_bytes[i]: i for i in reversed(user)}  # a repeated piece: its first id
        self.user_symbols = DoubleArrayTrie.build(list(words), list(words.values())) if words else None
        # the symbols on the device path (per-byte marks), or None when its marks cannot hold them
        self.symbol_width = symbol_scan_width(words) if words else None

    # ------------------------------------------------------------------------------- vocabulary
    def __len__(self) -> int:
        return len(self.model)

    def id_to_piece(self, token_id: int) -> str:
        """The piece of an id.

        >>> Tokenizer(BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]), Normalizer(), PreTokenizer()).id_to_piece(1)
        'a'
        """
        return self.model.pieces[token_id]

    def piece_to_id(self, piece: str) -> int:
        """The id of a piece (the unknown id when there is no such piece).

        >>> Tokenizer(BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]), Normalizer(), PreTokenizer()).piece_to_id("zz")
        0
        """
        return self.model.piece_to_id.get(piece, self.model.unk_id)

    # ----------------------------------------------------------------------------------- encode
    def encode(self, texts: Any, backend: str | Backend | None = None, with_offsets: bool = False,
               add_bos: bool = False, add_eos: bool = False) -> Encoding:
        """Encode a batch (``TextBatch``, pyarrow strings, or a list of str/bytes).

        >>> tok = Tokenizer(BPEModel(["<unk>", "a", "b", "ab"], [0.0, -1, -2, 0], [2, 1, 1, 1]), Normalizer(),
        ...                 PreTokenizer())
        >>> e = tok.encode(["abab", "b"], with_offsets=True)
        >>> e.ids.to_pylist(), e.starts.to_pylist(), e.ends.to_pylist()
        ([[3, 3], [2]], [[0, 2], [0]], [[2, 4], [1]])
        """
        be = get_backend(backend)
        xp = be.xp
        batch = as_text_batch(texts).to_device(xp)
        # a backend with the fused row encoder (the CPU) runs every stage row by row, while the row is in cache
        if be.has_op("tokenizer", "encode_text") and self.pre_tokenizer.segmenter is None:
            ids, starts, ends = self._encode_rows(batch, be, with_offsets)
        else:
            ids, starts, ends = self._encode_stages_fitting(batch, be, with_offsets)
        if add_bos or add_eos:
            ids, starts, ends = self._add_specials(ids, starts, ends, batch, add_bos, add_eos, xp)
        return Encoding(ids, starts, ends)

    def _encode_stages(self, batch: TextBatch, be: Backend, with_offsets: bool, lists: bool = False
                       ) -> tuple[RaggedArray, RaggedArray | None, RaggedArray | None]:
        """Each stage over the whole batch (the GPU's way: one kernel per stage). The pre-tokens
        stay per-byte marks on the device (the lattice models take ``split="none"`` rows whole;
        user symbols are marked too, and each is its one id; so are a dictionary cutter's words,
        without user symbols), and a call reads the device twice for BPE (the
        normalized size, the number of ids; a dictionary cutter adds none), three times
        for the lattice models (and the number of edges). ``lists``: the pre-tokens as lists (the
        staged path, which every configuration can take; the tests' comparison)."""
        normalized = self.normalizer.normalize(batch, be, with_alignment=with_offsets)
        text = normalized.text
        pre_tokenizer = self.pre_tokenizer
        marked = getattr(self.model, "encode_marked", None)  # BPE's
        rows = getattr(self.model, "encode_rows", None)  # the lattice models': a whole row is one lattice
        symbols = self.user_symbols
        if symbols is not None and (self.symbol_width is None or pre_tokenizer.segmenter is not None):
            rows = marked = None  # the staged path below
        if lists:
            rows = marked = None
        if marked is not None or rows is not None:
            # BPE reads each symbol's id from symbol_at; a lattice model's span spells it (its lookup trie
            # holds every piece without a NUL byte, as every symbol is)
            if symbols is not None:
                marks, symbol_at = pre_tokenizer.symbol_marks(text, symbols, self.symbol_width, be)
                encode = functools.partial(marked, symbol_at=symbol_at) if marked is not None else rows
            elif marked is not None:
                encode, marks = marked, pre_tokenizer.marks(text, be)
            else:
                encode, marks = rows, None if pre_tokenizer.split == "none" else pre_tokenizer.marks(text, be)
            values, id_starts, id_ends, row_offsets = encode(text.data, text.offsets, marks, be)
            ids = RaggedArray(values, row_offsets, check=False)
            if not with_offsets:
                return ids, None, None
            encoded = EncodedPreTokens(values, id_starts, id_ends, row_offsets)
            return ids, *self._original_spans(text, normalized.alignment, encoded, row_offsets, be.xp)
        pre = pre_tokenizer.pre_tokenize(text, be, self.user_symbols)
        base = text.offsets[:-1][row_ids(pre.starts.offsets)]
        starts, ends = pre.starts.values + base, pre.ends.values + base
        if pre.symbol_ids is None:
            encoded = self.model.encode_pre_tokens(text.data, starts, ends, be)
        else:
            encoded = self._encode_around_symbols(text.data, starts, ends, pre.symbol_ids.values, be)
        row_offsets = encoded.offsets[pre.starts.offsets]
        ids = RaggedArray(encoded.ids, row_offsets, check=False)
        if not with_offsets:
            return ids, None, None
        return ids, *self._original_spans(text, normalized.alignment, encoded, row_offsets, be.xp)

    def _encode_around_symbols(self, data: Any, starts: Any, ends: Any, symbol_ids: Any, be: Backend
                               ) -> EncodedPreTokens:
        """BPE over the ordinary pre-tokens; each symbol pre-token (``symbol_ids >= 0``) is its one id."""
        xp = be.xp
        plain = xp.flatnonzero(symbol_ids < 0)
        merged = self.model.encode_pre_tokens(data, starts[plain], ends[plain], be)
        counts = xp.ones(starts.size, xp.int64)
        counts[plain] = merged.offsets[1:] - merged.offsets[:-1]
        offsets = xp.zeros(starts.size + 1, xp.int64)
        xp.cumsum(counts, out=offsets[1:])
        # where each merged id goes: its pre-token's new first slot plus its rank within the pre-token
        rows = row_ids(merged.offsets)
        slots = offsets[:-1][plain[rows]] + xp.arange(merged.ids.size, dtype=xp.int64) - merged.offsets[:-1][rows]
        ids, id_starts, id_ends = (xp.empty(int(offsets[-1]), dt) for dt in (xp.int32, xp.int64, xp.int64))
        ids[slots], id_starts[slots], id_ends[slots] = merged.ids, merged.starts, merged.ends
        symbols = xp.flatnonzero(symbol_ids >= 0)
        at = offsets[:-1][symbols]
        ids[at], id_starts[at], id_ends[at] = symbol_ids[symbols], starts[symbols], ends[symbols]
        return EncodedPreTokens(ids, id_starts, id_ends, offsets)

    def _encode_stages_fitting(self, batch: TextBatch, be: Backend, with_offsets: bool
                               ) -> tuple[RaggedArray, RaggedArray | None, RaggedArray | None]:
        """:meth:`_encode_stages`, in halves of the rows (recursively) while the GPU runs out of
        memory; a single text that does not fit raises ``MemoryError`` saying so."""
        try:
            return self._encode_stages(batch, be, with_offsets)
        except Exception as error:
            if not is_device_out_of_memory(error):
                raise
            if len(batch) <= 1:
                raise MemoryError(f"a text of {batch.nbytes} bytes does not fit in GPU memory") from error
        release = getattr(be.xp, "get_default_memory_pool", None)
        if release is not None:  # CuPy keeps freed blocks; hand them back before the retry
            release().free_all_blocks()
        half = len(batch) // 2
        parts = [self._encode_stages_fitting(batch.rows(a, b), be, with_offsets)
                 for a, b in ((0, half), (half, len(batch)))]
        return tuple(RaggedArray.concat([p[k] for p in parts]) if parts[0][k] is not None else None
                     for k in range(3))

    def _encode_rows(self, batch: TextBatch, be: Backend, with_offsets: bool
                     ) -> tuple[RaggedArray, RaggedArray | None, RaggedArray | None]:
        """All stages row by row while the row is in cache (the CPU's way; the same ids)."""
        charsmap, symbol, collapse, dummy = self.normalizer.kernel_arguments(be)
        model = self.model
        symbols = None if self.user_symbols is None else self.user_symbols.arrays(be)
        ids, offsets, starts, ends = be.op("tokenizer", "encode_text")(
            batch.data, batch.offsets, charsmap, symbol, collapse, dummy, self.normalizer.growth,
            self.pre_tokenizer.dfa, model.scores, model.byte_ids, model.unk_id, model.merge_tables, with_offsets,
            symbols)
        if not with_offsets:
            return RaggedArray(ids, offsets, check=False), None, None
        return tuple(RaggedArray(a, offsets, check=False) for a in (ids, starts, ends))

    @staticmethod
    def _original_spans(text: TextBatch, alignment: RaggedArray, encoded: Any, row_offsets: Any, xp: Any
                        ) -> tuple[RaggedArray, RaggedArray]:
        """Map each id's normalized byte span through the alignment to the original text."""
        # alignment row r has len(normalized row r) + 1 entries, one per byte and the end, from
        # text.offsets[r] + r on: byte p of row r has entry p + r (no host read: the ids' count is known)
        rows = xp.searchsorted(row_offsets[1:], xp.arange(encoded.ids.size, dtype=xp.int64), side="right")
        starts = alignment.values[encoded.starts + rows]
        ends = alignment.values[encoded.ends + rows]
        return RaggedArray(starts, row_offsets, check=False), RaggedArray(ends, row_offsets, check=False)

    def _add_specials(self, ids: RaggedArray, starts: RaggedArray | None, ends: RaggedArray | None, batch: TextBatch,
                      add_bos: bool, add_eos: bool, xp: Any) -> tuple[RaggedArray, Any, Any]:
        for name, flag, special in (("bos", add_bos, self.bos_id), ("eos", add_eos, self.eos_id)):
            if flag and special < 0:
                raise ValueError(f"this tokenizer has no {name} token")
        n_rows, n_values, extra = len(ids), ids.values.size, int(add_bos) + int(add_eos)
        offsets = ids.offsets + extra * xp.arange(n_rows + 1, dtype=xp.int64)
        # value j of row r moves past the r rows before it and its own bos (no host read: the sizes are known)
        values_at = xp.arange(n_values, dtype=xp.int64)
        rows = xp.searchsorted(ids.offsets[1:], values_at, side="right")
        moved = values_at + extra * rows + int(add_bos)

        def spread(values: Any, bos_value: Any, eos_value: Any) -> Any:
            out = xp.empty(n_values + extra * n_rows, values.dtype)
            out[moved] = values
            if add_bos:
                out[offsets[:-1]] = bos_value
            if add_eos:
                out[offsets[1:] - 1] = eos_value
            return out

        new_ids = RaggedArray(spread(ids.values, self.bos_id, self.eos_id), offsets, check=False)
        if starts is None:
            return new_ids, None, None
        text_end = batch.offsets[1:] - batch.offsets[:-1]
        return (new_ids, RaggedArray(spread(starts.values, 0, text_end), offsets, check=False),
                RaggedArray(spread(ends.values, 0, text_end), offsets, check=False))

    def encode_as_pieces(self, texts: Any, backend: str | Backend | None = None) -> list[list[str]]:
        """Pieces instead of ids (for inspection).

        >>> Tokenizer(BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]), Normalizer(), PreTokenizer()).encode_as_pieces(["aa"])
        [['a', 'a']]
        """
        return [[self.model.pieces[i] for i in row] for row in self.encode(texts, backend).ids.to_pylist()]

    def encode_padded(self, texts: Any, max_length: int | None = None, backend: str | Backend | None = None,
                      add_bos: bool = False, add_eos: bool = False) -> tuple[Any, Any]:
        """Ids as a 2-D array padded with ``pad_id`` (or 0 when there is none), truncated to
        ``max_length``, and each row's length.

        >>> tok = Tokenizer(BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]), Normalizer(), PreTokenizer())
        >>> padded, lengths = tok.encode_padded(["aaa", "a"], max_length=2)
        >>> padded.tolist(), lengths.tolist()
        ([[1, 1], [1, 0]], [2, 1])
        """
        ids = self.encode(texts, backend, add_bos=add_bos, add_eos=add_eos).ids
        return ids.to_padded(pad_value=self.pad_id if self.pad_id >= 0 else 0, max_length=max_length)

    # ----------------------------------------------------------------------------------- decode
    def decode(self, ids: Sequence[int]) -> str:
        """Text of one id sequence.

        >>> Tokenizer(BPEModel(["<unk>", "▁a"], [0.0, 0.0], [2, 1]), Normalizer(), PreTokenizer()).decode([1, 1])
        ' a a'
        """
        return self.decoder.decode_batch([list(ids)], backend="cpu")[0]

    def decode_batch(self, ids: RaggedArray | Sequence[Sequence[int]], backend: str | Backend | None = None
                     ) -> list[str]:
        """Text of every row of ids.

        >>> Tokenizer(BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]), Normalizer(), PreTokenizer()).decode_batch([[1], []])
        ['a', '']
        """
        return self.decoder.decode_batch(ids, backend)

    # ------------------------------------------------------------------------------ model files
    @classmethod
    def from_sentencepiece(cls, path: str | Path) -> "Tokenizer":
        """Import a SentencePiece ``.model`` of type BPE (or UNIGRAM: then a
        :class:`~gpu_text.tokenizer.unigram_tokenizer.Unigram`).

        Here a tiny ``ModelProto`` written by hand: six pieces (field 1: the piece, field 3: its
        type) and a trainer spec saying BPE; unset fields take the proto's defaults (the dummy prefix).

        >>> import tempfile, pathlib
        >>> def piece(text, kind):
        ...     body = b"\\x0a" + bytes([len(text.encode())]) + text.encode() + b"\\x18" + bytes([kind])
        ...     return b"\\x0a" + bytes([len(body)]) + body
        >>> kinds = [("<unk>", 2), ("<s>", 3), ("</s>", 3), ("▁", 1), ("a", 1), ("▁a", 1)]
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.model"
        >>> _ = path.write_bytes(b"".join(piece(p, k) for p, k in kinds) + b"\\x12\\x02\\x18\\x02")
        >>> tok = Tokenizer.from_sentencepiece(path)
        >>> tok.encode(["a  a"]).ids.to_pylist(), tok.decode([5, 5, 4])
        ([[5, 5]], 'a aa')
        """
        from gpu_text.tokenizer.sentencepiece_model import SentencePieceModelError, load_sentencepiece_model

        sp = load_sentencepiece_model(path)
        if sp.model_type == "UNIGRAM" and cls is Tokenizer:  # the Unigram class, which registers itself
            return MODEL_TYPES["unigram"][0].from_sentencepiece(path)
        if sp.model_type != "BPE":
            raise SentencePieceModelError(f"{path}: {cls.__name__} loads BPE models; this one is {sp.model_type}")
        model = BPEModel(sp.pieces, sp.scores, sp.types, unk_id=sp.unk_id, byte_fallback=sp.byte_fallback)
        normalizer = sp.normalizer()
        # SentencePiece merges over the whole text; cutting at each space symbol first gives the
        # same ids (and parallel work) unless a piece that merges holds the symbol after its start
        normal = int(PieceType.NORMAL)
        inner = any(SPACE_SYMBOL in piece[1:] for piece, kind in zip(sp.pieces, sp.types.tolist()) if kind == normal)
        split = "whitespace" if sp.escape_whitespaces and not inner else "none"
        return cls(model, normalizer, PreTokenizer(split=split), sp.bos_id, sp.eos_id, sp.pad_id)

    @classmethod
    def from_model_file(cls, path: str | Path, cn: Any = None) -> "Tokenizer":
        """Load the seed's text model format (``cn``: the Chinese cutter, which the file does not keep).

        >>> import gpu_text, pathlib
        >>> tok = Tokenizer.from_model_file(pathlib.Path(gpu_text.__file__).parent / "data/models/sample-bpe-4k.txt")
        >>> len(tok), tok.encode_as_pieces(["And God said"])
        (4259, [['A', 'nd', '▁God', '▁said']])
        """
        from gpu_text.tokenizer.model_file import read_model_file

        spec = read_model_file(path)
        counter, pre = spec.counter, spec.pretokenizer
        other = MODEL_FILE_METHODS.get(counter.method)
        if other is not None and cls is Tokenizer:  # e.g. a BytePiece (lattice) model, not merges
            return other.from_model_file(path, cn)
        model = BPEModel(spec.pieces.pieces, spec.pieces.scores, spec.pieces.types, unk_id=counter.unk_id)
        return cls(model, *stages_of(pre, path, cn), counter.bos_id, counter.eos_id, counter.pad_id)

    def save_model_file(self, path: str | Path) -> None:
        """Write the seed's text model format, which holds a shipped normalization rule without a
        dummy prefix, a pre-tokenizer without a dictionary (``cn`` is not kept: give it to
        :meth:`from_model_file`) and no merge parents; a configuration it cannot hold is a
        ``ValueError`` saying what (:meth:`save` holds everything).

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.txt"
        >>> tok = Tokenizer(BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]), Normalizer("NFKC"), PreTokenizer("isolate"))
        >>> tok.save_model_file(path)
        >>> again = Tokenizer.from_model_file(path)
        >>> again.normalizer.name, again.pre_tokenizer.split, again.encode(["ａa"]).ids.to_pylist()
        ('NFKC', 'isolate', [[1, 1]])
        >>> Tokenizer(tok.model, Normalizer(add_dummy_prefix=True), PreTokenizer()).save_model_file(path)
        Traceback (most recent call last):
        ...
        ValueError: the seed's model format cannot hold add_dummy_prefix=True; Tokenizer.save holds every configuration
        """
        from gpu_text.tokenizer.model_file import CounterSpec, PieceTable, PreTokenizerSpec, TokenizerModel, \
            write_model_file

        n, pre, model = self.normalizer, self.pre_tokenizer, self.model
        # what from_model_file would build from the fields the format has, against what is here
        held = {"a shipped normalization rule": n.charsmap_pairs is None,
                "add_dummy_prefix=True": not n.add_dummy_prefix,
                "remove_extra_whitespaces and escape_whitespaces other than the defaults":
                    n.escape_whitespaces and n.remove_extra_whitespaces != n.reconstruct,
                f"cn={pre.cn!r}": pre.cn is None,
                "a pre-tokenizer space other than the normalizer's": pre.space == n.space,
                f"byte_fallback={model.byte_fallback} with these pieces": model.byte_fallback == model.has_byte_pieces,
                "a decoder other than the normalizer's": self.decoder.to_dict() == {
                    "space": n.space, "strip_leading_space": n.add_dummy_prefix}}
        missing = [what for what, fits in held.items() if not fits]
        if missing:
            raise ValueError(f"the seed's model format cannot hold {', '.join(missing)}; "
                             "Tokenizer.save holds every configuration")
        pieces = model.piece_bytes
        # "sentencepiece" is the seed's name for BPE models ("bytepiece" files load as BytePiece)
        counter = CounterSpec(method="sentencepiece", vocab_size=len(model), unk_id=model.unk_id, bos_id=self.bos_id,
                              eos_id=self.eos_id,
                              pad_id=self.pad_id, unk_piece=model.pieces[model.unk_id],
                              **{f"{name}_piece": model.pieces[i] for name, i in
                                 (("bos", self.bos_id), ("eos", self.eos_id), ("pad", self.pad_id)) if i >= 0})
        spec = PreTokenizerSpec(name=n.name, space=n.space, cut=SPLIT_MODES.index(pre.split),
                                reconstruct=n.reconstruct, split_digits=pre.digits == "split")
        write_model_file(TokenizerModel(counter, spec, PieceTable.from_lists(pieces, model.scores, model.types)), path)

    # ------------------------------------------------------------------------- tokenizer files
    @classmethod
    def from_file(cls, path: str | Path) -> "Tokenizer":
        """Load any model file this package reads, told apart by content (not by name): a file
        written by :meth:`save`, the seed's text format or a SentencePiece ``.model``.

        >>> import gpu_text, pathlib
        >>> Tokenizer.from_file(pathlib.Path(gpu_text.__file__).parent / "data/models/sample-bpe-4k.txt").bos_id
        1
        """
        kind = model_file_kind(path)
        if kind == "tokenizer":
            return cls.load(path)
        return cls.from_model_file(path) if kind == "model_file" else cls.from_sentencepiece(path)

    def to_dict(self) -> dict[str, Any]:
        """Every stage's configuration as plain JSON values (the layout is in
        :mod:`gpu_text.tokenizer.tokenizer_file`).

        >>> model = BPEModel(["<unk>", "<pad>", "a"], [0.0, 0.0, 0.0], [2, 3, 1])
        >>> spec = Tokenizer(model, Normalizer(), PreTokenizer(), pad_id=1).to_dict()
        >>> list(spec), spec["special_tokens"]
        (['format', 'normalizer', 'pre_tokenizer', 'model', 'decoder', 'special_tokens'], \
{'bos_id': -1, 'eos_id': -1, 'pad_id': 1})
        """
        model = model_to_spec(self.model, _model_type_of(self.model))
        return {"format": FORMAT, "normalizer": self.normalizer.to_dict(), "pre_tokenizer": self.pre_tokenizer.to_dict(),
                "model": model, "decoder": self.decoder.to_dict(),
                "special_tokens": {name: getattr(self, name) for name in _SPECIALS}}

    @classmethod
    def from_dict(cls, spec: Any) -> "Tokenizer":
        """The tokenizer a :meth:`to_dict` spec describes (a malformed one is a ``ValueError`` saying
        which stage and key).

        >>> tok = Tokenizer(BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]), Normalizer("NFKC"), PreTokenizer())
        >>> Tokenizer.from_dict(tok.to_dict()).encode(["ａa"]).ids.to_pylist()
        [[1, 1]]
        >>> Tokenizer.from_dict({**tok.to_dict(), "special_tokens": {"bos_id": 7, "eos_id": -1, "pad_id": -1}})
        Traceback (most recent call last):
        ...
        ValueError: Tokenizer spec: bos_id 7 is neither -1 nor one of the 2 ids
        """
        spec = spec_mapping(spec, "Tokenizer", ("format", "normalizer", "pre_tokenizer", "model", "decoder",
                                                "special_tokens"))
        if spec_value(spec, "format", str, "Tokenizer") != FORMAT:
            raise ValueError(f"Tokenizer spec: format {spec['format']!r} is not {FORMAT!r}")
        model_spec = dict(spec_value(spec, "model", dict, "Tokenizer"))
        kind = spec_value(model_spec, "type", str, "Tokenizer model") if "type" in model_spec else "bpe"
        model_spec.pop("type", None)
        if kind not in MODEL_TYPES:
            raise ValueError(f"Tokenizer spec: model type {kind!r} is none of {sorted(MODEL_TYPES)}")
        tokenizer_class, model_class = MODEL_TYPES[kind]
        if cls is not Tokenizer and not issubclass(tokenizer_class, cls):
            raise ValueError(f"Tokenizer spec: a {kind!r} model, which {cls.__name__} does not load")
        model = model_from_spec(model_class, model_spec)
        specials = spec_mapping(spec_value(spec, "special_tokens", dict, "Tokenizer"), "Tokenizer special_tokens",
                                _SPECIALS)
        ids = {name: spec_value(specials, name, int, "Tokenizer special_tokens") for name in _SPECIALS}
        for name, value in ids.items():
            if not -1 <= value < len(model):
                raise ValueError(f"Tokenizer spec: {name} {value} is neither -1 nor one of the {len(model)} ids")
        decoder = Decoder.from_dict(spec_value(spec, "decoder", dict, "Tokenizer"), model.piece_bytes, model.types)
        return tokenizer_class(model, Normalizer.from_dict(spec_value(spec, "normalizer", dict, "Tokenizer")),
                   PreTokenizer.from_dict(spec_value(spec, "pre_tokenizer", dict, "Tokenizer")), decoder=decoder,
                   **ids)

    def save(self, path: str | Path) -> None:
        """Write one self-describing file holding every stage (JSON, no pickle; see
        :mod:`gpu_text.tokenizer.tokenizer_file`); :meth:`load` reads it back.

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tok.json"
        >>> tok = Tokenizer(BPEModel(["<unk>", "▁a", "b"], [0.0, 0.0, -1.0], [2, 1, 1]),
        ...                 Normalizer("NFKC", add_dummy_prefix=True), PreTokenizer("whitespace", "split"))
        >>> tok.save(path)
        >>> again = Tokenizer.load(path)
        >>> again.encode(["ａ b"]).ids.to_pylist(), again.decode([1, 2])
        ([[1, 0, 2]], 'ab')
        """
        write_tokenizer_file(self.to_dict(), path)

    @classmethod
    def load(cls, path: str | Path) -> "Tokenizer":
        """Read a file written by :meth:`save`; a file that is not one, or is damaged, is a
        ``ValueError`` (:class:`~gpu_text.tokenizer.tokenizer_file.TokenizerFileError`) naming it
        and the problem.

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tok.json"
        >>> _ = path.write_text('{"format": "gpu_text.Tokenizer/1", "model": {}}')
        >>> Tokenizer.load(path)
        Traceback (most recent call last):
        ...
        gpu_text.tokenizer.tokenizer_file.TokenizerFileError: ...tok.json: BPEModel spec: 'pieces' is missing
        """
        spec = read_tokenizer_file(path)
        try:
            return cls.from_dict(spec)
        except ValueError as exc:
            raise TokenizerFileError(f"{path}: {exc}") from None


__all__ = ["Encoding", "Tokenizer"]


register_model_type("bpe", Tokenizer, BPEModel)
