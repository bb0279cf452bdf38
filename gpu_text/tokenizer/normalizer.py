"""SentencePiece's normalizer, batched: character maps by longest match, then space handling.

Rules (``name``): ``no`` (no mapping), ``NFKC``, ``NMT_NFKC``, ``NFKC_CF``, ``NMT_NFKC_CF`` — the
precompiled charsmaps SentencePiece ships, extracted from sentencepiece itself by
``charsmaps/build_charsmaps.py`` into ``charsmaps/<name>.npz`` (see there). A model imported from a
``.model`` file brings its own charsmap (``charsmap_pairs``).

Per string, left to right: the longest charsmap key at the current position is replaced by its
target; with no key there, one character is copied (a malformed byte becomes U+FFFD). Then, on
the output of each step (only U+0020 counts as a space, after mapping):

- ``remove_extra_whitespaces`` (default): steps whose output is exactly one space are skipped at
  the start; a step's leading spaces are dropped when the previous kept output ended in a space
  (so runs collapse to one); trailing space symbols are stripped at the end.
- ``escape_whitespaces`` (default): every remaining space is written as ``space`` (``▁`` U+2581).
- ``add_dummy_prefix``: a space symbol goes in front of every string that has something left
  after the leading spaces (SentencePiece's models set it; the seed's tokenizer does not).
- ``reconstruct=True`` (the seed's option): every space becomes ``space``, nothing is collapsed
  or stripped.

The result carries an **alignment**: for every normalized byte the byte offset in the original
string it comes from (all bytes of a replacement point at the start of its source; a dummy prefix
points at 0), plus one end entry per string holding the original string's length, so a span
``[a, b)`` of normalized bytes maps back to ``[alignment[a], alignment[b])``.

Kernels: the ``normalizer`` family (``cuda/normalizer.cu``, ``cpu_fallback/normalizer.py``).
"""
from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch, as_text_batch
from gpu_text.ragged import RaggedArray
from gpu_text.specs import bytes_from_spec, bytes_to_spec, spec_mapping, spec_value
from gpu_text.trie.double_array import DoubleArrayTrie, _device_key

CHARSMAP_DIR = Path(__file__).resolve().parent / "charsmaps"
RULE_NAMES = ("no", "NFKC", "NMT_NFKC", "NFKC_CF", "NMT_NFKC_CF")
SPACE_SYMBOL = "\u2581"  # what a space becomes: the pre-tokenizer, the model's pieces and the decoder share it
# SentencePiece's lower-case rule names, and its name for "no mapping"
_MAX_PATHS_PER_UNIT = 64
_MAX_KEY_BYTES = 1024
_ALIASES = {name.lower(): name for name in RULE_NAMES} | {"identity": "no", "": "no"}


# ------------------------------------------------------------------- precompiled charsmaps


def decode_precompiled_charsmap(blob: bytes) -> list[tuple[bytes, bytes]]:
    """Every (source, target) pair of a SentencePiece precompiled charsmap, sorted by source.

    The blob is a little-endian uint32 byte size of a darts-clone double array, the array's
    32-bit units, then the NUL-terminated target strings that the trie's values point into. A
    unit holds: bit 8 "has a leaf", bit 9 + bits 10-31 the XOR offset of its children, bits 0-7
    (and bit 31 for leaves) its label; a leaf unit's low 31 bits are the value. Keys are
    enumerated breadth-first, all nodes of one depth at a time, with numpy. A blob that is not such a map is a
    ``ValueError`` saying why.

    >>> units = [96 << 10, (3 << 10) | (1 << 8) | ord("a"), (1 << 31) | 0]  # root, "a" at 96 ^ 97, its leaf
    >>> decode_precompiled_charsmap(struct.pack("<I", 12) + struct.pack("<3I", *units) + b"A\\0")
    [(b'a', b'A')]
    """
    blob = bytes(blob)
    if len(blob) < 4:
        raise ValueError(f"a precompiled charsmap starts with a 4-byte size; this one has {len(blob)} bytes")
    (trie_size,) = struct.unpack_from("<I", blob, 0)
    if trie_size % 4 or trie_size == 0 or 4 + trie_size > len(blob):
        raise ValueError(f"the trie size {trie_size} is not a positive multiple of 4 within the "
                         f"{len(blob) - 4} bytes after it")
    units = np.frombuffer(blob, "<u4", trie_size // 4, 4).astype(np.int64)
    targets = blob[4 + trie_size:]
    n = units.size
    has_leaf = ((units >> 8) & 1).astype(bool)
    child_base = (units >> 10) << ((units & (1 << 9)) >> 6)
    # A child unit u with label c hangs below the node whose children's base is u ^ c, and
    # darts-clone gives every node its own base, so grouping units by u ^ c finds every node's
    # children without probing all 255 labels. Leaf units (bit 31) and free units (label 0) are no
    # edges.
    labels = units & 0xFF
    edges = np.nonzero(((units >> 31) == 0) & (labels != 0))[0]
    edge_bases = edges ^ labels[edges]
    order = np.argsort(edge_bases, kind="stable")
    edge_bases, edges = edge_bases[order], edges[order]
    sources: list[bytes] = []
    values: list[int] = []
    bases = child_base[:1]  # the root's children
    prefixes = np.zeros((1, 0), np.uint8)
    visited = 0
    while bases.size:
        first = np.searchsorted(edge_bases, bases, "left")
        counts = np.searchsorted(edge_bases, bases, "right") - first
        parents = np.repeat(np.arange(bases.size), counts)
        starts = np.cumsum(counts) - counts
        nodes = edges[np.repeat(first, counts) + np.arange(parents.size) - np.repeat(starts, counts)]
        # darts-clone shares common suffixes, so paths may outnumber units, but not without bound
        visited += nodes.size
        if visited > _MAX_PATHS_PER_UNIT * n or prefixes.shape[1] >= _MAX_KEY_BYTES:
            raise ValueError("the trie's paths do not end (a cycle?): not a darts-clone array")
        prefixes = np.concatenate([prefixes[parents], labels[nodes].astype(np.uint8)[:, None]], axis=1)
        bases = nodes ^ child_base[nodes]
        leaves = has_leaf[nodes]
        leaf_slots = bases[leaves]
        if leaf_slots.size and int(leaf_slots.max()) >= n:
            raise ValueError("a leaf lies outside the trie")
        sources.extend(row.tobytes() for row in prefixes[leaves])
        values.extend((units[leaf_slots] & 0x7FFFFFFF).tolist())
    pairs = []
    for source, value in zip(sources, values):
        end = targets.find(b"\0", value)
        if value >= len(targets) or end < 0:
            raise ValueError(f"the target of {source!r} (offset {value}) is outside the {len(targets)} string bytes")
        pairs.append((source, targets[value:end]))
    pairs.sort()
    return pairs


def _pairs_to_arrays(pairs: Sequence[tuple[bytes, bytes]]) -> dict[str, np.ndarray]:
    return {"sources": np.frombuffer(b"".join(s for s, _ in pairs), np.uint8),
            "source_lengths": np.array([len(s) for s, _ in pairs], np.int32),
            "targets": np.frombuffer(b"".join(t for _, t in pairs), np.uint8),
            "target_lengths": np.array([len(t) for _, t in pairs], np.int32)}


def _split(data: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    raw = data.tobytes()
    ends = np.cumsum(lengths, dtype=np.int64).tolist()
    return [raw[a:b] for a, b in zip([0] + ends[:-1], ends)]


def save_charsmap(pairs: Sequence[tuple[bytes, bytes]], path: str | Path) -> None:
    """Writes (source, target) pairs as a compressed ``.npz`` of four arrays (no pickle).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.npz"
    >>> save_charsmap([(b"a", b"A"), (b"\\xe2\\x91\\xa0", b"1")], path)
    >>> load_charsmap(path)
    [(b'a', b'A'), (b'\\xe2\\x91\\xa0', b'1')]
    """
    np.savez_compressed(path, **_pairs_to_arrays(pairs))


def load_charsmap(name_or_path: str | Path) -> list[tuple[bytes, bytes]]:
    """The (source, target) pairs of a shipped rule (``"NMT_NFKC"``, ...) or of a saved ``.npz``.

    >>> dict(load_charsmap("NMT_NFKC"))["①".encode()]
    b'1'
    >>> load_charsmap("no")
    []
    """
    path = Path(name_or_path)
    if isinstance(name_or_path, str) and not name_or_path.endswith(".npz"):
        rule = canonical_rule_name(name_or_path)
        if rule == "no":
            return []
        path = CHARSMAP_DIR / f"{rule}.npz"
    with np.load(path, allow_pickle=False) as f:
        return list(zip(_split(f["sources"], f["source_lengths"]), _split(f["targets"], f["target_lengths"])))


def canonical_rule_name(name: str) -> str:
    """The rule name as :data:`RULE_NAMES` spells it (SentencePiece's lower-case names accepted).

    >>> canonical_rule_name("nmt_nfkc_cf"), canonical_rule_name("identity")
    ('NMT_NFKC_CF', 'no')
    """
    rule = _ALIASES.get(name.lower())
    if rule is None:
        raise ValueError(f"unknown normalization rule {name!r}; the rules are {', '.join(RULE_NAMES)}")
    return rule


class _Charsmap:
    """A charsmap ready for the kernels: a trie from sources to target numbers, and the targets."""

    def __init__(self, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        numbers: dict[bytes, int] = {}
        for _, target in pairs:
            numbers.setdefault(target, len(numbers))
        self.trie = DoubleArrayTrie.build([s for s, _ in pairs], [numbers[t] for _, t in pairs])
        table = list(numbers)
        self.targets = np.frombuffer(b"".join(table), np.uint8).copy()
        self.target_offsets = np.zeros(len(table) + 1, np.int64)
        np.cumsum([len(t) for t in table], out=self.target_offsets[1:])
        self.max_ratio = max((-(-len(t) // len(s)) for s, t in pairs if s), default=1)  # ceil(target / source)
        self._on_device: dict[tuple[str, int], tuple[Any, Any]] = {}

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Everything the charsmap is, as arrays (:meth:`from_arrays` reads them back)."""
        return {"state": self.trie.state, "check": self.trie.check, "label": self.trie.label, "eow": self.trie.eow,
                "targets": self.targets, "target_offsets": self.target_offsets,
                "max_ratio": np.array(self.max_ratio, np.int64)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "_Charsmap":
        charsmap = cls.__new__(cls)
        charsmap.trie = DoubleArrayTrie(arrays["state"], arrays["check"], arrays["label"], arrays["eow"])
        charsmap.targets, charsmap.target_offsets = arrays["targets"], arrays["target_offsets"]
        charsmap.max_ratio = int(arrays["max_ratio"])
        charsmap._on_device = {}
        return charsmap

    def arrays(self, backend: str | Backend | None) -> tuple[Any, ...]:
        be = get_backend(backend)
        key = _device_key(be.xp)
        if key not in self._on_device:
            self._on_device[key] = (be.asarray(self.targets), be.asarray(self.target_offsets))
        return (*self.trie.arrays(be), *self._on_device[key])


@functools.lru_cache(maxsize=None)
def _shipped_charsmap(rule: str) -> _Charsmap:
    return _Charsmap(load_charsmap(rule))


class PrecompiledCharsmap(Sequence[tuple[bytes, bytes]]):
    """The (source, target) pairs of a model's precompiled charsmap (:func:`decode_precompiled_charsmap`),
    decoded only when read: the normalizer's charsmap is built from the blob once and then taken
    from the table cache (:mod:`gpu_text.table_cache`) by the blob's digest, so loading a
    ``.model`` again decodes and builds nothing. :meth:`check` decodes a blob the cache does not
    know yet (a bad blob is a ``ValueError``, as from the decoder).

    >>> import struct
    >>> units = [96 << 10, (3 << 10) | (1 << 8) | ord("a"), (1 << 31) | 0]
    >>> pairs = PrecompiledCharsmap(struct.pack("<I", 12) + struct.pack("<3I", *units) + b"A\\0").check()
    >>> list(pairs), pairs == ((b"a", b"A"),), Normalizer("m", charsmap_pairs=pairs).normalize_strings(["ab"])
    ([(b'a', b'A')], True, ['Ab'])
    """

    def __init__(self, blob: bytes) -> None:
        self.blob = bytes(blob)
        self._pairs: tuple[tuple[bytes, bytes], ...] | None = None
        self._charsmap: _Charsmap | None = None

    def check(self) -> "PrecompiledCharsmap":
        """Build (or find in the cache) the charsmap now; returns ``self``."""
        self.charsmap()
        return self

    def charsmap(self) -> _Charsmap:
        """The normalizer's charsmap of these pairs."""
        if self._charsmap is None:
            from gpu_text.kernel_sources import cpu_twin_package
            from gpu_text.table_cache import cached_arrays
            import importlib.util

            builders = [__file__, DoubleArrayTrie.__module__, f"{cpu_twin_package()}.double_array"]
            files = [b if b.endswith(".py") else importlib.util.find_spec(b).origin for b in builders]
            self._charsmap = _Charsmap.from_arrays(
                cached_arrays("charsmap", self.blob, lambda: _Charsmap(self.pairs()).to_arrays(), *files))
        return self._charsmap

    def pairs(self) -> tuple[tuple[bytes, bytes], ...]:
        if self._pairs is None:
            self._pairs = tuple(decode_precompiled_charsmap(self.blob))
        return self._pairs

    def __len__(self) -> int:
        return len(self.pairs())

    def __getitem__(self, index: Any) -> Any:
        return self.pairs()[index]

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        return iter(self.pairs())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PrecompiledCharsmap):
            return self.blob == other.blob or self.pairs() == other.pairs()
        return isinstance(other, (tuple, list)) and self.pairs() == tuple(other)

    __hash__ = None  # type: ignore[assignment]


# ------------------------------------------------------------------------------ normalizer


@dataclass
class NormalizedBatch:
    """Normalized strings and, per string, the original byte offset of every normalized byte plus an
    end entry (the original length).

    >>> out = Normalizer().normalize(["a b"], "cpu")
    >>> out.text.to_pylist(), out.alignment.to_pylist()
    (['a▁b'], [[0, 1, 1, 1, 2, 3]])
    """

    text: TextBatch
    alignment: RaggedArray | None


class Normalizer:
    """SentencePiece-style normalizer (see the module docstring for the rules and options).

    >>> Normalizer("NMT_NFKC").normalize_strings(["  ①②③  ＨＥＬＬＯ  "])
    ['123▁HELLO']
    >>> Normalizer("NFKC_CF", add_dummy_prefix=True).normalize_strings(["HELLO World"])
    ['▁hello▁world']
    >>> Normalizer(reconstruct=True).normalize_strings(["  Hello   World  "])
    ['▁▁Hello▁▁▁World▁▁']
    """

    _FLAGS = ("remove_extra_whitespaces", "escape_whitespaces", "add_dummy_prefix", "reconstruct")

    def __init__(self, name: str = "no", *, space: str = SPACE_SYMBOL, remove_extra_whitespaces: bool = True,
                 escape_whitespaces: bool = True, add_dummy_prefix: bool = False, reconstruct: bool = False,
                 charsmap_pairs: Iterable[tuple[bytes, bytes]] | None = None) -> None:
        """``name``: a rule of :data:`RULE_NAMES`, or with ``charsmap_pairs`` (source, target) just a label.

        >>> Normalizer("nfkc").name, Normalizer("mine", charsmap_pairs=[(b"x", b"y")]).normalize_strings(["x"])
        ('NFKC', ['y'])
        """
        if not space:
            raise ValueError("space must be a non-empty string")
        self.space = space
        self.reconstruct = bool(reconstruct)
        self.remove_extra_whitespaces = bool(remove_extra_whitespaces) and not self.reconstruct
        self.escape_whitespaces = bool(escape_whitespaces) or self.reconstruct
        self.add_dummy_prefix = bool(add_dummy_prefix)
        # a shipped rule is known by its name; a model's own map is kept to be saved with it
        if isinstance(charsmap_pairs, PrecompiledCharsmap):  # a .model's: decoded only if read
            self.charsmap_pairs: Sequence[tuple[bytes, bytes]] | None = charsmap_pairs
        else:
            self.charsmap_pairs = None if charsmap_pairs is None else tuple(charsmap_pairs)
        if self.charsmap_pairs is None:
            self.name = canonical_rule_name(name)
            self._charsmap = _shipped_charsmap(self.name)
        else:
            self.name = name
            self._charsmap = charsmap_pairs.charsmap() if isinstance(charsmap_pairs, PrecompiledCharsmap) \
                else _Charsmap(self.charsmap_pairs)
        self._symbol_on_device: dict[tuple[tuple[str, int], bytes], Any] = {}

    def __repr__(self) -> str:
        return (f"Normalizer({self.name!r}, space={self.space!r}, remove_extra_whitespaces="
                f"{self.remove_extra_whitespaces}, escape_whitespaces={self.escape_whitespaces}, "
                f"add_dummy_prefix={self.add_dummy_prefix}, reconstruct={self.reconstruct})")

    @property
    def symbol(self) -> bytes:
        """What a space becomes (and what is stripped at the end): ``space`` when escaping, else a space.

        >>> Normalizer().symbol, Normalizer(escape_whitespaces=False).symbol
        (b'\\xe2\\x96\\x81', b' ')
        """
        return self.space.encode("utf-8", "surrogatepass") if self.escape_whitespaces else b" "

    def kernel_arguments(self, backend: str | Backend | None = None) -> tuple[tuple[Any, ...], Any, int, int]:
        """What the kernels take: the charsmap arrays (trie, targets, target offsets) on the
        backend's device, the space symbol's bytes, and the collapse and dummy-prefix flags.

        >>> charsmap, symbol, collapse, dummy = Normalizer().kernel_arguments("cpu")
        >>> len(charsmap), bytes(symbol).decode(), collapse, dummy
        (6, '▁', 1, 0)
        """
        be = get_backend(backend)
        key = (_device_key(be.xp), self.symbol)  # copied to each device once, like the charsmap
        if key not in self._symbol_on_device:
            self._symbol_on_device[key] = be.asarray(np.frombuffer(self.symbol, np.uint8).copy())
        return (self._charsmap.arrays(be), self._symbol_on_device[key], int(self.remove_extra_whitespaces),
                int(self.add_dummy_prefix))

    @property
    def growth(self) -> int:
        """At most this many output bytes per input byte (a mapped target whose spaces all become the
        symbol; a malformed byte becomes U+FFFD), plus one symbol per row for the dummy prefix.

        >>> Normalizer("NMT_NFKC").growth  # U+FDFA: 3 bytes -> 33, each space -> 3
        33
        """
        return max(3, self._charsmap.max_ratio * max(1, len(self.symbol)))

    def normalize(self, texts: Any, backend: str | Backend | None = None, with_alignment: bool = True
                  ) -> NormalizedBatch:
        """Normalizes a batch (``TextBatch``, pyarrow string/binary array, or list of str/bytes);
        ``with_alignment=False`` skips the alignment (``alignment`` is None), which costs 8 bytes
        per output byte.

        >>> out = Normalizer("NMT_NFKC", add_dummy_prefix=True).normalize([" ①x", ""], "cpu")
        >>> out.text.to_pylist(), out.alignment.to_pylist()
        (['▁1x', ''], [[0, 0, 0, 1, 4, 5], [0]])
        """
        be = get_backend(backend)
        xp = be.xp
        batch = as_text_batch(texts).to_device(xp)
        charsmap, symbol, collapse, dummy = self.kernel_arguments(be)
        data, offsets, alignment = be.op("normalizer", "normalize_text")(
            *charsmap, batch.data, batch.offsets, symbol, collapse, dummy, int(with_alignment))
        text = TextBatch(data, offsets, check=False)
        if alignment is None:
            return NormalizedBatch(text, None)
        rows = xp.arange(offsets.size, dtype=xp.int64)
        return NormalizedBatch(text, RaggedArray(alignment, offsets + rows, check=False))

    def normalize_strings(self, texts: Iterable[str | bytes], backend: str | Backend | None = None) -> list[str]:
        """Normalized ``str`` of every input (the output is always valid UTF-8).

        >>> Normalizer().normalize_strings(["a\\xa0 b", b"\\xff"])
        ['a\\xa0▁b', '�']
        """
        return self.normalize(list(texts), backend).text.to_pylist(errors="strict")

    def to_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON values: a shipped rule by name (``charsmap`` null), a
        model's own charsmap as its (source, target) pairs (see :func:`gpu_text.specs.bytes_to_spec`).

        >>> Normalizer("mine", charsmap_pairs=[(b"x", b"y")], add_dummy_prefix=True).to_dict()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'name': 'mine', 'space': '▁', 'remove_extra_whitespaces': True, 'escape_whitespaces': True,
         'add_dummy_prefix': True, 'reconstruct': False, 'charsmap': [['x', 'y']]}
        """
        charsmap = None if self.charsmap_pairs is None else [
            [bytes_to_spec(source), bytes_to_spec(target)] for source, target in self.charsmap_pairs]
        return {"name": self.name, "space": self.space, **{flag: getattr(self, flag) for flag in self._FLAGS},
                "charsmap": charsmap}

    @classmethod
    def from_dict(cls, spec: Any) -> "Normalizer":
        """The normalizer :meth:`to_dict` describes (a malformed spec is a ``ValueError`` saying why).

        >>> n = Normalizer.from_dict(Normalizer("NFKC_CF", add_dummy_prefix=True).to_dict())
        >>> n.name, n.add_dummy_prefix, n.normalize_strings(["ＡB"])
        ('NFKC_CF', True, ['▁ab'])
        """
        spec = spec_mapping(spec, "Normalizer", ("name", "space", *cls._FLAGS, "charsmap"))
        flags = {flag: spec_value(spec, flag, bool, "Normalizer") for flag in cls._FLAGS}
        charsmap = spec_value(spec, "charsmap", (list, type(None)), "Normalizer")
        pairs = None
        if charsmap is not None:
            pairs = []
            for index, pair in enumerate(charsmap):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ValueError(f"Normalizer spec: charsmap[{index}] must be a [source, target] pair")
                pairs.append(tuple(bytes_from_spec(part, f"Normalizer spec: charsmap[{index}]") for part in pair))
        return cls(spec_value(spec, "name", str, "Normalizer"), space=spec_value(spec, "space", str, "Normalizer"),
                   charsmap_pairs=pairs, **flags)
