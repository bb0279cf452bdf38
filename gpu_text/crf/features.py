"""Observation features of a pattern set: learned once (``FeatureSpace.fit``), then every batch of
sentences is encoded to ragged per-token feature ids, entirely with array operations.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from gpu_text.arrays import array_module, to_host
from gpu_text.crf.patterns import (OUT_OF_RANGE, Command, Pattern, Vocabulary, combine_keys, extract_parts, flatten,
                                   namespace_ids)
from gpu_text.ragged import row_ids

# Occurrences per gradient chunk: frequent features (the transition observation occurs at every
# token) are split so that no single thread or block sums millions of tokens.
CHUNK = 512
# The first-slot hash of the observation tables, and the row layout (the crf_features kernels
# read the same: cpu_fallback/crf_features.py).
SLOT_MULTIPLIER = np.uint64(0xD6E8FEB86659FD93)
HASHED, DENSE = 0, 1
# A code point whose value id a FeatureEncoder's per-character table has not computed yet.
UNSEEN = -2
N_CODE_POINTS = 0x110000


@dataclass
class Encoded:
    """A batch of sequences as flat arrays (numpy or cupy): token ``t`` of the batch has unigram
    observations ``u_ids[u_offsets[t]:u_offsets[t + 1]]`` and bigram ones likewise; ``labels`` is
    int32 (empty when unknown)."""

    seq_offsets: Any
    u_offsets: Any
    u_ids: Any
    b_offsets: Any
    b_ids: Any
    labels: Any

    @property
    def n_tokens(self) -> int:
        """Number of tokens.

        >>> _tiny().n_tokens
        3
        """
        return int(self.u_offsets.size - 1)

    def to(self, xp: Any) -> "Encoded":
        """The same batch on ``xp``'s device.

        >>> _tiny().to(np).u_ids.tolist()
        [0, 1, 0]
        """
        moved = {f.name: xp.asarray(to_host(getattr(self, f.name)) if xp is np else getattr(self, f.name))
                 for f in fields(self)}
        return Encoded(**moved)

    def subset(self, sequences: np.ndarray) -> "Encoded":
        """The sequences ``sequences`` (host arrays), in that order.

        >>> _tiny().subset(np.array([1])).u_ids.tolist()
        [0]
        """
        seq_offsets = np.asarray(self.seq_offsets)
        lengths = seq_offsets[sequences + 1] - seq_offsets[sequences]
        new_offsets = np.zeros(sequences.size + 1, np.int64)
        np.cumsum(lengths, out=new_offsets[1:])
        tokens = np.repeat(seq_offsets[sequences] - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
        out = replace(self, seq_offsets=new_offsets, labels=self.labels[tokens] if self.labels.size else self.labels)
        for name in ("u", "b"):
            offsets, ids = getattr(self, f"{name}_offsets"), getattr(self, f"{name}_ids")
            counts = offsets[tokens + 1] - offsets[tokens]
            sub_offsets = np.zeros(tokens.size + 1, np.int64)
            np.cumsum(counts, out=sub_offsets[1:])
            entries = np.repeat(offsets[tokens] - sub_offsets[:-1], counts) + np.arange(sub_offsets[-1])
            setattr(out, f"{name}_offsets", sub_offsets)
            setattr(out, f"{name}_ids", ids[entries])
        return out


def slot_region(keys: np.ndarray, ids: np.ndarray) -> tuple[int, np.ndarray]:
    """An open-addressing region for ``keys`` (distinct, >= 0) as the ``crf_features`` kernels
    probe it: log2 of its slots (at least twice the keys, at least 2) and the ``(key, id)`` slots
    (key -1 empty), each key at its first free slot from ``(key * SLOT_MULTIPLIER mod 2^64) >> (64
    - bits)`` on. Placed in rounds (every pending key tries its current slot; the lowest key index
    takes a free one; the others move on), so the layout is fixed by the keys alone.

    >>> bits, slots = slot_region(np.array([7, 3, 9]), np.array([0, 1, 2]))
    >>> bits, sorted(row for row in slots.tolist() if row[0] >= 0)
    (3, [[3, 1], [7, 0], [9, 2]])
    """
    bits = max(1, int(keys.size).bit_length() + (keys.size > 0))
    mask = (1 << bits) - 1
    slots = np.full((1 << bits, 2), -1, np.int64)
    slot = ((keys.astype(np.uint64) * SLOT_MULTIPLIER) >> np.uint64(64 - bits)).astype(np.int64)
    pending = np.arange(keys.size)
    while pending.size:
        at = slot[pending]
        free = slots[at, 0] == -1
        taken, first = np.unique(at[free], return_index=True)
        winners = pending[free][first]
        slots[taken, 0], slots[taken, 1] = keys[winners], ids[winners]
        placed = np.zeros(keys.size, bool)
        placed[winners] = True
        pending = pending[~placed[pending]]
        slot[pending] = (slot[pending] + 1) & mask
    return bits, slots


class FeatureEncoder:
    """A :class:`FeatureSpace` compiled for the ``crf_features`` kernels (the layout is in
    ``cpu_fallback/crf_features.py``): every pattern command's (column, transform) is a derived
    column whose value ids the caller supplies per position (:meth:`code_table`,
    :meth:`value_id`); the patterns (a row per pattern and kind, unigram rows first) and commands
    are int64 matrices; each namespace's observations are a table by value id (one command) or
    an open-addressing region of keys (:func:`slot_region`). Built once per model
    (:meth:`FeatureSpace.encoder`).

    >>> from gpu_text.crf.patterns import parse_patterns
    >>> space = FeatureSpace(parse_patterns("u%x[0,0]/%x[1,0]\\nb")).fit([[("a",), ("b",)]])
    >>> enc = space.encoder(); enc.rows.tolist(), enc.commands.tolist(), enc.edges.tolist()
    ([[1, 0, 1, 0, 2, 0, 0, 3], [2, 1, 1, 2, 0, 0, 8, 2]], [[0, 0, 0], [0, 1, 0]], [[-1, -1, -1, -1, -1, 2, -1, -1, -1, -1]])
    """

    def __init__(self, space: "FeatureSpace") -> None:
        self.values = space.values
        self.n_values, self.n_namespaces = space.n_values, space.n_namespaces
        derived: dict[tuple, int] = {}
        self.derived: list[tuple[int, Command]] = []  # (column, a command with the transform) per derived column
        commands, first_command = [], []
        for pattern in space.patterns:
            first_command.append(len(commands))
            for command in pattern.commands:
                transform = (command.column, command.kind, command.lower, command.regex)
                if transform not in derived:
                    derived[transform] = len(self.derived)
                    self.derived.append((command.column, command))
                commands.append((derived[transform], command.offset, int(command.absolute)))
        self.commands = np.array(commands, np.int64).reshape(-1, 3)
        self.edges = np.array([[self.value_id(d, marker) for marker in OUT_OF_RANGE] for d in range(len(self.derived))],
                              np.int32).reshape(-1, len(OUT_OF_RANGE))
        rows, slots, dense = [], [np.zeros((0, 2), np.int64)], [np.zeros(0, np.int64)]
        n_slots = n_dense = 0
        regions: dict[tuple[int, int], tuple[int, int, int]] = {}  # (kind, namespace) -> mode, base, size
        for kind, keys, ids, parts in ((1, space.unigram_keys, space.unigram_ids, space.unigram_parts),
                                       (2, space.bigram_keys, space.bigram_ids, space.bigram_parts)):
            namespace_of_key = parts[ids, 0] if ids.size else np.zeros(0, np.int64)
            for p, (pattern, namespace) in enumerate(zip(space.patterns, space.namespaces.tolist())):
                if not {"u": 1, "b": 2, "*": 3}[pattern.kind] & kind:
                    continue
                try:
                    exact = space.n_namespaces * float(space.n_values) ** len(pattern.commands) < 2.0 ** 62
                except OverflowError:  # combine_keys' rule
                    exact = False
                if (kind, namespace) not in regions:
                    mine = namespace_of_key == namespace
                    if exact and len(pattern.commands) == 1:  # a key is value * n_namespaces + namespace
                        table = np.full(space.n_values, -1, np.int64)
                        table[(keys[mine] - namespace) // space.n_namespaces] = ids[mine]
                        regions[kind, namespace] = (DENSE, n_dense, space.n_values)
                        dense.append(table)
                        n_dense += table.size
                    else:
                        bits, region = slot_region(keys[mine], ids[mine])
                        regions[kind, namespace] = (HASHED, n_slots, bits)
                        slots.append(region)
                        n_slots += region.shape[0]
                rows.append((kind, namespace, int(exact), first_command[p], len(pattern.commands),
                             *regions[kind, namespace]))
        self.rows = np.array(rows, np.int64).reshape(-1, 8)
        self.slots = np.ascontiguousarray(np.concatenate(slots))
        self.dense = np.concatenate(dense)
        self._code_tables: dict[int, np.ndarray] = {}
        self._device: dict[str, tuple] = {}

    def value_id(self, derived: int, value: str) -> int:
        """The id of ``value`` through derived column ``derived``'s transform (-1: never seen).

        >>> from gpu_text.crf.patterns import parse_patterns
        >>> enc = FeatureSpace(parse_patterns("u%X[0,0]")).fit([[("a",)]]).encoder()
        >>> enc.value_id(0, "A"), enc.value_id(0, "b")
        (0, -1)
        """
        return self.values.ids.get(self.derived[derived][1].transform(value), -1)

    def code_table(self, derived: int, codes: np.ndarray, value_of: Callable[[str], str]) -> np.ndarray:
        """A per-code-point table of derived column ``derived``'s value ids (int32), complete for
        ``codes``: the value of a character is ``value_of(char)``; each code point is computed
        once per model, the first time it is seen.

        >>> from gpu_text.crf.patterns import parse_patterns
        >>> enc = FeatureSpace(parse_patterns("u%x[0,0]")).fit([[("a",), ("b",)]]).encoder()
        >>> enc.code_table(0, np.array([97, 99], np.uint32), str)[[97, 98, 99]].tolist()
        [0, -2, -1]
        """
        table = self._code_tables.get(derived)
        if table is None:
            table = self._code_tables[derived] = np.full(N_CODE_POINTS, UNSEEN, np.int32)
        missing = codes[table[codes] == UNSEEN]
        if missing.size:
            for code in np.unique(missing).tolist():
                table[code] = self.value_id(derived, value_of(chr(code)))
        return table

    def arrays(self, xp: Any) -> tuple:
        """``edges, rows, commands, slots, dense`` on ``xp``'s device (copied once per device)
        and ``n_values, n_namespaces``: the kernels' arguments after the values.

        >>> from gpu_text.crf.patterns import parse_patterns
        >>> enc = FeatureSpace(parse_patterns("u%x[0,0]")).fit([[("a",)]]).encoder()
        >>> [a.shape if hasattr(a, "shape") else a for a in enc.arrays(np)]
        [(1, 10), (1, 8), (1, 3), (0, 2), (1,), 1, 1]
        """
        name = xp.__name__
        if name not in self._device:
            device = [xp.asarray(a) for a in (self.edges, self.rows, self.commands, self.slots, self.dense)]
            self._device[name] = (*device, self.n_values, self.n_namespaces)
        return self._device[name]


def _tiny() -> Encoded:
    one = np.arange(4, dtype=np.int64)
    return Encoded(np.array([0, 2, 3]), one, np.array([0, 1, 0]), np.array([0, 0, 1, 1]), np.array([0]),
                   np.array([0, 1, 0], np.int32))


def occurrences(ids: Any, offsets: Any, n_features: int, chunk: int = CHUNK) -> tuple[Any, Any, Any]:
    """The transposed, chunked layout the gradient kernels reduce over: tokens of each feature's
    occurrences (by feature, then token), chunk boundaries (no chunk spans two features nor has
    more than ``chunk`` occurrences) and each feature's chunks.

    >>> occ, chunks, per_feature = occurrences(np.array([1, 0, 1, 1]), np.array([0, 2, 3, 4]), 3, chunk=2)
    >>> occ.tolist(), chunks.tolist(), per_feature.tolist()
    ([0, 0, 1, 2], [0, 1, 3, 4], [0, 1, 3, 3])
    """
    xp = array_module(ids)
    tokens = row_ids(offsets)
    order = xp.argsort(ids, kind="stable")
    occ = tokens[order]
    counts = xp.bincount(ids, minlength=n_features) if ids.size else xp.zeros(n_features, xp.int64)
    feature_starts = xp.zeros(n_features + 1, xp.int64)
    xp.cumsum(counts, out=feature_starts[1:])
    feature_chunks = xp.zeros(n_features + 1, xp.int64)
    xp.cumsum(-(-counts // chunk), out=feature_chunks[1:])
    chunk_feature = row_ids(feature_chunks)
    chunk_offsets = xp.empty(int(feature_chunks[-1]) + 1, xp.int64)
    chunk_offsets[:-1] = feature_starts[chunk_feature] + (xp.arange(chunk_feature.size) - feature_chunks[chunk_feature]) * chunk
    chunk_offsets[-1] = ids.size
    return occ, chunk_offsets, feature_chunks


class FeatureSpace:
    """The observations of ``patterns`` seen in training: unigram and bigram keys (sorted int64)
    with, for each, its namespace and command-output ids (``parts``) for the model file.

    >>> from gpu_text.crf.patterns import parse_patterns
    >>> space = FeatureSpace(parse_patterns("u%x[0,0]\\nb")).fit([[("a",), ("b",)], [("a",)]])
    >>> space.n_unigram, space.n_bigram, space.encode([[("b",), ("z",)]]).u_ids.tolist()
    (2, 1, [1])
    """

    def __init__(self, patterns: Sequence[Pattern]) -> None:
        self.patterns = list(patterns)
        self.values = Vocabulary()
        self.namespaces = namespace_ids(self.patterns)
        self.n_namespaces = int(self.namespaces.max()) + 1 if self.patterns else 0
        self.n_values = 0
        # observation keys, sorted for lookup, and the id of each (ids index the parts and the weights)
        self.unigram_keys = np.zeros(0, np.int64)
        self.bigram_keys = np.zeros(0, np.int64)
        self.unigram_ids = np.zeros(0, np.int64)
        self.bigram_ids = np.zeros(0, np.int64)
        self.unigram_parts = np.zeros((0, 1 + self._width()), np.int64)
        self.bigram_parts = np.zeros((0, 1 + self._width()), np.int64)

    @property
    def n_unigram(self) -> int:
        """Number of unigram observations (see the class example)."""
        return int(self.unigram_keys.size)

    @property
    def n_bigram(self) -> int:
        """Number of bigram observations (see the class example)."""
        return int(self.bigram_keys.size)

    def _key_matrices(self, sentences: Sequence[Sequence], grow: bool, columns: Sequence | None = None,
                      offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
        if columns is None:
            columns, offsets = flatten(sentences)
        parts = extract_parts(self.patterns, columns, offsets, self.values, grow)
        if grow:
            self.n_values = len(self.values)
        n = int(offsets[-1])
        keys = [combine_keys(int(ns), p if p.shape[1] else np.zeros((n, 0), np.int64), self.n_values,
                             self.n_namespaces) for ns, p in zip(self.namespaces, parts)]
        first = offsets[:-1][np.diff(offsets) > 0]
        def stack(kinds: str) -> np.ndarray:
            chosen = [k for k, p in zip(keys, self.patterns) if p.kind in kinds]
            return np.stack(chosen, axis=1) if chosen else np.zeros((n, 0), np.int64)

        unigram, bigram = stack("u*"), stack("b*")
        bigram[first] = -1  # no transition into the first token (Wapiti: bigrams at t = 0 ignored)
        return offsets, unigram, bigram, parts

    def fit(self, sentences: Sequence[Sequence]) -> "FeatureSpace":
        """Learn the observations of ``sentences`` (see the class example)."""
        offsets, unigram, bigram, parts = self._key_matrices(sentences, grow=True)
        for kind, matrix in (("u", unigram), ("b", bigram)):
            chosen = [i for i, p in enumerate(self.patterns) if p.kind in (kind + "*")]
            flat = matrix.ravel()
            keys, first, counts = np.unique(flat, return_index=True, return_counts=True)
            keep = keys >= 0
            keys, first, counts = keys[keep], first[keep], counts[keep]
            tokens, columns = np.divmod(first, max(matrix.shape[1], 1))
            table = np.full((keys.size, 1 + self._width()), -1, np.int64)
            for column, pattern_index in enumerate(chosen):
                rows = columns == column
                table[rows, 0] = self.namespaces[pattern_index]
                table[rows, 1:1 + parts[pattern_index].shape[1]] = parts[pattern_index][tokens[rows]]
            # ids by falling frequency (ties: key order): the weights that most tokens read sit together
            # at the front of the weight array, so training's gathers and scatters mostly hit the cache
            by_count = np.argsort(-counts, kind="stable")
            ids = np.empty(keys.size, np.int64)
            ids[by_count] = np.arange(keys.size)
            name = "unigram" if kind == "u" else "bigram"
            setattr(self, f"{name}_keys", keys)
            setattr(self, f"{name}_ids", ids)
            setattr(self, f"{name}_parts", table[by_count])
        return self

    def _value_table(self, namespace: int) -> np.ndarray:
        """Unigram id of every value id in a one-command namespace (-1 for none), cached: such a
        key is ``value * n_namespaces + namespace`` (:func:`combine_keys`)."""
        tables = self.__dict__.setdefault("_value_tables", {})
        key = (namespace, self.n_values, self.n_unigram)  # a refit or a new model file rebuilds it
        if key not in tables:
            candidates = combine_keys(namespace, np.arange(self.n_values, dtype=np.int64)[:, None], self.n_values,
                                      self.n_namespaces)
            position = np.minimum(np.searchsorted(self.unigram_keys, candidates), max(self.n_unigram - 1, 0))
            found = self.unigram_keys[position] == candidates if self.n_unigram else np.zeros(self.n_values, bool)
            tables[key] = np.where(found, self.unigram_ids[position] if self.n_unigram else -1, -1)
        return tables[key]

    def encoder(self) -> FeatureEncoder:
        """The space compiled for the ``crf_features`` kernels, cached (a refit or a new model
        file rebuilds it; see :class:`FeatureEncoder`)."""
        key = (self.n_values, self.n_unigram, self.n_bigram, id(self.unigram_keys), id(self.bigram_keys))
        cached = self.__dict__.get("_encoder")
        if cached is None or cached[0] != key:
            cached = self.__dict__["_encoder"] = (key, FeatureEncoder(self))
        return cached[1]

    def _width(self) -> int:
        return max((len(p.commands) for p in self.patterns), default=0)

    def set_features(self, unigram_parts: np.ndarray, bigram_parts: np.ndarray) -> None:
        """Install observations read from a model file: rows of (namespace, value ids…, -1 padding);
        their keys are recomputed from the parts.

        >>> from gpu_text.crf.patterns import parse_patterns
        >>> s = FeatureSpace(parse_patterns("u%x[0,0]")); s.values.add("a"); s.n_values = 1
        0
        >>> s.set_features(np.array([[0, 0]]), np.zeros((0, 2), np.int64)); s.unigram_keys.tolist()
        [0]
        """
        for name, parts in (("unigram", unigram_parts), ("bigram", bigram_parts)):
            keys = self.keys_of(parts)
            order = np.argsort(keys, kind="stable")
            if keys.size and (np.diff(keys[order]) == 0).any():
                raise ValueError(f"duplicate {name} observations in the model")
            setattr(self, f"{name}_keys", keys[order])
            setattr(self, f"{name}_ids", order.astype(np.int64))
            setattr(self, f"{name}_parts", parts)

    def keys_of(self, parts: np.ndarray) -> np.ndarray:
        """Keys of parts rows (namespace, value ids…, -1 padding), vectorised per namespace.

        >>> from gpu_text.crf.patterns import parse_patterns
        >>> s = FeatureSpace(parse_patterns("u%x[0,0]\\nb")); s.n_values = 3
        >>> s.keys_of(np.array([[0, 2], [1, -1]])).tolist()
        [4, 1]
        """
        keys = np.empty(parts.shape[0], np.int64)
        widths = {int(ns): len(p.commands) for ns, p in zip(self.namespaces, self.patterns)}
        for ns, width in widths.items():
            rows = parts[:, 0] == ns
            keys[rows] = combine_keys(ns, parts[rows, 1:1 + width], self.n_values, self.n_namespaces)
        return keys

    def observation(self, part: Sequence[int]) -> str:
        """The Wapiti observation string of a feature's parts.

        >>> from gpu_text.crf.patterns import parse_patterns
        >>> s = FeatureSpace(parse_patterns("U1:%x[0,0]/%x[1,0]")).fit([[("a",), ("b",)]])
        >>> [s.observation(p) for p in s.unigram_parts]
        ['U1:a/b', 'U1:b/_x+1']
        """
        literals = next(p.literals for p, ns in zip(self.patterns, self.namespaces) if ns == part[0])
        out = [literals[0]]
        for value, literal in zip(list(part)[1:], literals[1:]):
            out += [self.values.strings[value], literal]
        return "".join(out)

    def encode(self, sentences: Sequence[Sequence], labels: np.ndarray | None = None) -> Encoded:
        """Ragged per-token feature ids of ``sentences``; observations not in the space are dropped."""
        return self.encode_columns(*flatten(sentences), labels)

    def encode_columns(self, columns: Sequence, offsets: np.ndarray, labels: np.ndarray | None = None) -> Encoded:
        """:meth:`encode` of sentences given as columns (each a sequence of strings, one per token,
        or an :class:`~gpu_text.crf.patterns.InternedColumn`) and sentence offsets.

        >>> from gpu_text.crf.patterns import InternedColumn, parse_patterns
        >>> space = FeatureSpace(parse_patterns("u%x[0,0]")).fit([[("a",), ("b",)]])
        >>> space.encode_columns([InternedColumn(np.array([0, 0, 1]), ["b", "a"])], np.array([0, 3])).u_ids.tolist()
        [1, 1, 0]
        """
        offsets, unigram, bigram, parts = self._key_matrices((), grow=False, columns=columns, offsets=offsets)
        out = {}
        for name, matrix, known, id_of in (("u", unigram, self.unigram_keys, self.unigram_ids),
                                           ("b", bigram, self.bigram_keys, self.bigram_ids)):
            if known.size:
                ids = np.empty(matrix.shape, np.int64)
                chosen = [i for i, p in enumerate(self.patterns) if p.kind in name + "*"]
                # one-command unigram patterns: a table by value id instead of a binary search
                dense = [c for c, i in enumerate(chosen) if name == "u" and len(self.patterns[i].commands) == 1]
                for c in dense:
                    values = parts[chosen[c]][:, 0]
                    ids[:, c] = np.where(values >= 0, self._value_table(int(self.namespaces[chosen[c]]))[values], -1)
                rest = [c for c in range(matrix.shape[1]) if c not in dense]
                if rest:
                    sub = matrix[:, rest]
                    position = np.minimum(np.searchsorted(known, sub), known.size - 1)
                    ids[:, rest] = np.where((sub >= 0) & (known[position] == sub), id_of[position], -1)
            else:
                ids = np.full(matrix.shape, -1, np.int64)
            mask = ids >= 0
            row_offsets = np.zeros(matrix.shape[0] + 1, np.int64)
            np.cumsum(mask.sum(axis=1), out=row_offsets[1:])
            out[f"{name}_offsets"], out[f"{name}_ids"] = row_offsets, ids[mask].astype(np.int64)
        return Encoded(offsets, out["u_offsets"], out["u_ids"], out["b_offsets"], out["b_ids"],
                       np.zeros(0, np.int32) if labels is None else labels.astype(np.int32))
