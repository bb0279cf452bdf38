"""Wapic ``.wac`` model files (the seed's CRF, after Wapiti) read into a fitted :class:`CRF`.

A ``.wac`` file is, in order (every header a line of its own)::

    #Patterns#<P>#<columns>     then P strings: the pattern lines
    #Trie#<Y>  | #TrieBin#<Y>   then Y strings: the labels, in id order
    #Trie#<O>  | #TrieBin#<O>   then O strings: the observations, in id order
    #Model#<N>                  then N lines <feature index>=<weight, C++ hexfloat>
    | #ModelBin32#<N>           then N (varint index delta, float32 weight) records
    | #ModelBin#<N>             then N (varint index delta, float64 weight) records

A text string is ``<length>:<bytes>,`` and a newline; a binary one a little-endian uint16 length
and the bytes. Observation ``o`` owns ``Y`` weights when it starts with ``u``, ``Y·Y`` (``[yp·Y+y]``,
row = previous label) when it starts with ``b`` and both with ``*``, laid end to end in id order.

Wapic's observations are whole strings (``u05:南/京``); gpu_text's are a namespace (the pattern's
literal text) and the ids of the command outputs. Reading splits every string back into its
pattern's pieces, with array operations over all observations at once; a string that splits in
more than one way (a ``/`` token inside ``u05:…/…``) gets one feature per split, all with the same
weights, which is exactly what Wapic computes. :class:`WapicCRF` adds Wapic's ``segment`` rule.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import numpy as np

from gpu_text.backend import Backend
from gpu_text.crf.features import FeatureSpace
from gpu_text.crf import CRF  # the package: gpu_text.crf.model imports this module in CRF.from_wapic
from gpu_text.crf.patterns import Pattern
from gpu_text.crf.wapic_file import WapicFile
from gpu_text.crf.wapic_patterns import parse_wapic_pattern

MAGIC = b"#Patterns#"
# Wapic feeds at most this many characters to one Viterbi call (longer Han runs are cut there).
WAPIC_CHUNK = 1024
# A string that splits into more pattern pieces than this is refused (Wapic's own patterns give 1).
MAX_SPLITS = 256

# Wapic's pre-segmentation classes (its own code point ranges, not Unicode categories): spaces are
# dropped, digit and Latin runs are words, Han runs go to the CRF, anything else is a word alone.
_RUNS = re.compile(
    "(?P<space>[ \t\n\r\f\v\u00a0\u3000]+)|(?P<digit>[0-9\uff10-\uff19]+)"
    "|(?P<latin>[A-Za-z\u00c0-\u024f\uff21-\uff3a\uff41-\uff5a]+)"
    "|(?P<han>[\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff\u3007\U00020000-\U0002a6df\U0002a700-\U0002ebef]+)"
    "|(?P<other>.)", re.DOTALL)


def is_wapic_model(path: str) -> bool:
    """Whether ``path`` starts like a Wapic model (its first line is ``#Patterns#…``).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "m.wac")
    >>> _ = open(path, "wb").write(b"#Patterns#1#1\\n")
    >>> is_wapic_model(path), is_wapic_model(__file__)
    (True, False)
    """
    with open(path, "rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


# -- observations to gpu_text features ---------------------------------------------------------

def _splits(middle: bytes, separators: Sequence[bytes], nonempty: Sequence[bool]) -> Iterator[tuple[bytes, ...]]:
    """Every way ``middle`` reads as value₀ sep₀ value₁ … valueₖ (values flagged ``nonempty`` not empty)."""
    if not separators:
        if middle or not nonempty[0]:
            yield (middle,)
        return
    at = middle.find(separators[0])
    while at >= 0:
        if at or not nonempty[0]:
            for rest in _splits(middle[at + len(separators[0]):], separators[1:], nonempty[1:]):
                yield (middle[:at],) + rest
        at = middle.find(separators[0], at + 1)


def _edge_words(data: np.ndarray, begins: np.ndarray, lengths: np.ndarray, n_head: int, n_tail: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n_head`` and the last ``n_tail`` bytes (at most 8) of every string as
    little-endian uint64 words."""
    heads, tails = np.zeros(begins.size, np.uint64), np.zeros(begins.size, np.uint64)
    for j in range(min(n_head, 8)):
        byte = np.where(lengths > j, data[np.minimum(begins + j, data.size - 1)], 0)
        heads |= byte.astype(np.uint64) << np.uint64(8 * j)
    for j in range(min(n_tail, 8)):
        byte = np.where(lengths > j, data[np.maximum(begins + lengths - 1 - j, 0)], 0)
        tails |= byte.astype(np.uint64) << np.uint64(8 * j)
    return heads, tails


def _with_literals(data: np.ndarray, begins: np.ndarray, lengths: np.ndarray, edges: tuple[np.ndarray, np.ndarray],
                   head: bytes, tail: bytes, at_least: int) -> np.ndarray:
    """Ids of the strings at least ``at_least`` bytes long that start with ``head`` and end with
    ``tail``: one comparison of the edge words, then byte by byte beyond 8 bytes."""
    ok = lengths >= at_least
    for words, text in zip(edges, (head, tail[::-1])):
        n = min(len(text), 8)
        if n:
            mask = np.uint64((1 << (8 * n)) - 1)
            ok &= (words & mask) == np.uint64(int.from_bytes(text[:n], "little"))
    rows = np.flatnonzero(ok)
    for j in range(8, len(head)):
        rows = rows[data[begins[rows] + j] == head[j]]
    for j in range(8, len(tail)):
        rows = rows[data[begins[rows] + lengths[rows] - 1 - j] == tail[len(tail) - 1 - j]]
    return rows


class _Values:
    """Interned command outputs (value ids), from byte ranges of the observations in bulk or one by one."""

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}

    def of_ranges(self, data: np.ndarray, begins: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Value ids of ``data[begins[i]:begins[i] + lengths[i]]``: the ranges become rows of 64-bit
        words (bytes, then the length, so trailing NUL bytes stay distinct), sorted and numbered."""
        if begins.size == 0:
            return np.zeros(0, np.int64)
        if int(lengths.max()) <= 6:  # one word per value: bytes, then the length in the top 16 bits
            words = lengths.astype(np.uint64) << np.uint64(48)
            for j in range(int(lengths.max())):
                byte = np.where(lengths > j, data[np.minimum(begins + j, data.size - 1)], 0).astype(np.uint64)
                words |= byte << np.uint64(8 * j)
            distinct, inverse = np.unique(words, return_inverse=True)
            table = np.fromiter((self.add(int(w).to_bytes(8, "little")[:int(w) >> 48]) for w in distinct.tolist()),
                                np.int64, distinct.size)
            return table[inverse.ravel()]
        width = -(-(int(lengths.max()) + 2) // 8) * 8
        matrix = np.zeros((begins.size, width), np.uint8)
        for j in range(int(lengths.max())):
            inside = np.flatnonzero(lengths > j)
            matrix[inside, j] = data[begins[inside] + j]
        matrix[:, -2], matrix[:, -1] = lengths & 255, lengths >> 8
        words = matrix.view(np.uint64)
        order = np.lexsort(words.T[::-1])
        ordered = words[order]
        new = np.ones(order.size, bool)
        new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
        number = np.cumsum(new) - 1
        table = np.empty(int(new.sum()), np.int64)
        for i, row in enumerate(matrix[order[new]]):  # one Python step per distinct value
            table[i] = self.add(row.tobytes()[:int(row[-2]) | int(row[-1]) << 8])
        out = np.empty(order.size, np.int64)
        out[order] = table[number]
        return out

    def add(self, value: bytes) -> int:
        """The id of one value, added when new."""
        return self.ids.setdefault(value, len(self.ids))


def _split_observations(data: np.ndarray, offsets: np.ndarray, patterns: list[Pattern], namespaces: np.ndarray,
                        values: _Values) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """For every namespace: (namespace, observation ids, value ids (rows × commands)) of the
    observations its literal text can produce, every split counted."""
    begins, lengths = offsets[:-1], np.diff(offsets)
    edges = _edge_words(data, begins, lengths, max(len(p.literals[0].encode("utf-8")) for p in patterns),
                        max(len(p.literals[-1].encode("utf-8")) for p in patterns if p.commands) if any(
                            p.commands for p in patterns) else 0)
    marks_of: dict[int, np.ndarray] = {}
    raw = b""
    bulk = []  # (namespace, rows, piece begins, piece sizes) split with array operations
    single = []  # (namespace, rows, value tuples) split one by one
    for ns in np.unique(namespaces).tolist():
        members = [p for p, n in zip(patterns, namespaces.tolist()) if n == ns]
        literals = [l.encode("utf-8") for l in members[0].literals]
        k = len(literals) - 1
        if k == 0:
            rows = _with_literals(data, begins, lengths, edges, literals[0], b"", len(literals[0]))
            bulk.append((ns, rows[lengths[rows] == len(literals[0])], np.zeros((0, 0), np.int64), None))
            continue
        # %x outputs are never empty (Wapic's tokens are not); %t/%m ones may be
        nonempty = [all(p.commands[j].kind == "x" for p in members) for j in range(k)]
        rows = _with_literals(data, begins, lengths, edges, literals[0], literals[-1],
                              sum(map(len, literals)) + sum(nonempty))
        mid_begin = begins[rows] + len(literals[0])
        mid_end = begins[rows] + lengths[rows] - len(literals[-1])
        separators = literals[1:-1]
        if k == 1:
            fast, slow, cuts = np.ones(rows.size, bool), np.zeros(rows.size, bool), []
        elif len(set(separators)) == 1 and len(separators[0]) == 1:  # "/" between every value
            marks = marks_of.setdefault(separators[0][0], np.flatnonzero(data == separators[0][0]))
            first = np.searchsorted(marks, mid_begin)
            count = np.searchsorted(marks, mid_end) - first
            fast, slow = count == k - 1, count > k - 1  # exactly k - 1 marks: one split
            cuts = [marks[np.minimum(first + j, marks.size - 1)] if marks.size else mid_end for j in range(k - 1)]
        else:
            fast, slow, cuts = np.zeros(rows.size, bool), np.ones(rows.size, bool), []
        piece_begin = np.stack([mid_begin] + [c + 1 for c in cuts], axis=1)[fast]
        piece_size = np.stack(cuts + [mid_end], axis=1)[fast] - piece_begin
        valid = ((piece_size > 0) | ~np.array(nonempty)).all(axis=1)
        bulk.append((ns, rows[fast][valid], piece_begin[valid], piece_size[valid]))
        if slow.any():
            raw = raw or data.tobytes()
            found_rows, found = [], []
            for row, b, e in zip(rows[slow].tolist(), mid_begin[slow].tolist(), mid_end[slow].tolist()):
                splits = list(_splits(raw[b:e], separators, nonempty))
                if len(splits) > MAX_SPLITS:
                    raise ValueError(f"observation {raw[begins[row]:begins[row] + lengths[row]][:60]!r} splits "
                                     f"{len(splits)} ways into pattern {members[0].text!r} (more than {MAX_SPLITS})")
                found_rows += [row] * len(splits)
                found += splits
            single.append((ns, np.array(found_rows, np.int64), found))
    sized = [entry for entry in bulk if entry[3] is not None]
    all_ids = values.of_ranges(data, np.concatenate([e[2].ravel() for e in sized] or [np.zeros(0, np.int64)]),
                               np.concatenate([e[3].ravel() for e in sized] or [np.zeros(0, np.int64)]))
    out, at = [], 0
    for ns, rows, piece_begin, piece_size in bulk:
        if piece_size is None:
            out.append((ns, rows, np.zeros((rows.size, 0), np.int64)))
            continue
        out.append((ns, rows, all_ids[at:at + piece_size.size].reshape(piece_size.shape)))
        at += piece_size.size
    for ns, rows, found in single:
        ids = np.array([[values.add(v) for v in split] for split in found], np.int64).reshape(len(found), -1)
        out.append((ns, rows, ids))
    return out


def load_wapic(path: str, backend: str | Backend | None = None) -> "WapicCRF":
    """A fitted CRF from a Wapic ``.wac`` model (text or binary sections; format in the module
    docstring). A damaged file is a ``ValueError`` naming it and the line.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "m.wac")
    >>> text = ("#Patterns#2#1\\n11:u02:%x[0,0],\\n1:b,\\n#Trie#2\\n1:A,\\n1:B,\\n#Trie#3\\n5:u02:a,\\n1:b,\\n"
    ...         "5:u02:b,\\n#Model#2\\n0=0x1p+0\\n7=0x1p+1\\n")
    >>> _ = open(path, "w").write(text)
    >>> crf = load_wapic(path, backend="cpu")
    >>> crf.labels_, crf.predict([["a", "b", "z"]])
    (['A', 'B'], [['A', 'B', 'A']])
    """
    with open(path, "rb") as handle:
        raw = handle.read()
    where = str(path)
    if not raw.startswith(MAGIC):
        raise ValueError(f"{where} is not a Wapic model (it does not start with '#Patterns#')")
    f = WapicFile(where, raw)
    found = f.header("patterns", "'#Patterns#<count>#<columns>'")
    starts, lengths = f.text_strings(int(found.group(1)))
    patterns = []
    for source, start in zip(f.decoded(starts, lengths, "pattern"), starts.tolist()):
        try:
            pattern, _ = parse_wapic_pattern(source)
        except ValueError as exc:
            raise f.error(start, str(exc)) from None
        if pattern is not None:
            patterns.append(pattern)
    label_starts, label_lengths = f.strings("labels")
    labels = f.decoded(label_starts, label_lengths, "label")
    if not labels or len(set(labels)) != len(labels) or not all(labels):
        raise f.error(f.pos, "the labels must be distinct, non-empty, and at least one")
    obs_starts, obs_lengths = f.strings("observations")
    n_labels = len(labels)
    # the observations, contiguous: one gather (no per-string Python work)
    offsets = np.zeros(obs_starts.size + 1, np.int64)
    np.cumsum(obs_lengths, out=offsets[1:])
    base = int(obs_starts[0]) if obs_starts.size else 0
    inside = np.zeros(int(obs_starts[-1] + obs_lengths[-1]) - base + 1 if obs_starts.size else 1, np.int8)
    inside[obs_starts - base] += 1
    inside[obs_starts + obs_lengths - base] -= 1
    data = f.bytes[base:base + inside.size - 1][np.cumsum(inside[:-1], dtype=np.int8).view(bool)]
    if obs_starts.size == 0:
        raise f.error(f.pos, "the model has no observations")
    if (obs_lengths == 0).any():
        raise f.error(int(obs_starts[obs_lengths == 0][0]), "an observation is empty")
    first = data[offsets[:-1]]
    kind = np.select([first == ord("u"), first == ord("b"), first == ord("*")], [1, 2, 3], 0)
    if (kind == 0).any():  # Wapic refuses these too
        bad = int(np.flatnonzero(kind == 0)[0])
        raise f.error(int(obs_starts[bad]), f"observation {bad} does not start with u, b or *")
    sizes = (kind & 1) * n_labels + (kind >> 1) * n_labels * n_labels
    unigram_at = np.zeros(kind.size, np.int64)
    np.cumsum(sizes[:-1], out=unigram_at[1:])
    bigram_at = unigram_at + (kind & 1) * n_labels
    theta = f.weights(int(sizes.sum()))
    if not patterns:
        raise ValueError(f"{where}: no pattern gives features (a pattern starts with u, b or *)")

    space = FeatureSpace(patterns)
    values = _Values()
    tables = {"u": [], "b": []}
    for ns, rows, ids in _split_observations(data, offsets, patterns, space.namespaces, values):
        kinds = {p.kind for p, n in zip(patterns, space.namespaces.tolist()) if n == ns}
        width = 1 + space._width()
        for name, bit, at, size in (("u", 1, unigram_at, n_labels), ("b", 2, bigram_at, n_labels * n_labels)):
            if not kinds & {name, "*"}:
                continue
            live = rows[(kind[rows] & bit) > 0]
            keep = (kind[rows] & bit) > 0
            parts = np.full((live.size, width), -1, np.int64)
            parts[:, 0] = ns
            parts[:, 1:1 + ids.shape[1]] = ids[keep]
            tables[name].append((parts, theta[at[live, None] + np.arange(size)]))
    strings = [None] * len(values.ids)
    for value, i in values.ids.items():
        strings[i] = value.decode("utf-8", "surrogateescape")  # not UTF-8: no str token can produce it
    for value in strings:
        space.values.add(value)
    space.n_values = len(space.values)
    joined = {}
    for name in ("u", "b"):
        width = 1 + space._width()
        parts = [p for p, _ in tables[name]] or [np.zeros((0, width), np.int64)]
        weights = [w for _, w in tables[name]] or [np.zeros((0, n_labels ** (1 + (name == "b"))))]
        joined[name] = (np.concatenate(parts), np.concatenate(weights))
    space.set_features(joined["u"][0], joined["b"][0])
    crf = WapicCRF(pattern="\n".join(p.text for p in patterns), backend=backend)
    crf.labels_ = labels
    crf.space_ = space
    crf.n_unigram_, crf.n_bigram_ = space.n_unigram, space.n_bigram
    crf.unigram_weights_ = np.ascontiguousarray(joined["u"][1])
    crf.bigram_weights_ = np.ascontiguousarray(joined["b"][1].reshape(-1, n_labels, n_labels))
    return crf


class WapicCRF(CRF):
    """A CRF read from a Wapic model: :meth:`segment` follows ``wapic.Segmenter.segment``.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "m.wac")
    >>> _ = open(path, "w").write("#Patterns#1#1\\n1:b,\\n#Trie#4\\n1:B,\\n1:M,\\n1:E,\\n1:S,\\n#Trie#1\\n"
    ...                           "1:b,\\n#Model#1\\n2=0x1p+0\\n")
    >>> load_wapic(path, backend="cpu").segment(["中文 ab12，好"])
    [['中文', 'ab', '12', '，', '好']]
    """

    def segment(self, texts: Sequence[str]) -> list[list[str]]:
        """Words of each raw text, Wapic's way: whitespace (ASCII, U+00A0, U+3000) is dropped, a
        run of digits (ASCII or full-width) or of Latin letters (ASCII, U+00C0–U+024F, full-width)
        is one word, any other non-Han character is a word alone, and each run of Han characters
        (cut every 1024) is labelled by the CRF one character per token, a word ending after each
        ``E`` or ``S`` label (see the class example)."""
        runs: list[list[tuple[str, str]]] = []
        chunks: list[str] = []
        for text in texts:
            row = []
            for found in _RUNS.finditer(text):
                kind, run = found.lastgroup, found.group()
                if kind == "han":
                    for start in range(0, len(run), WAPIC_CHUNK):
                        chunks.append(run[start:start + WAPIC_CHUNK])
                        row.append(("han", chunks[-1]))
                elif kind != "space":
                    row.append((kind, run))
            runs.append(row)
        tags = iter(self.predict([list(c) for c in chunks]) if chunks else [])
        out = []
        for row in runs:
            words: list[str] = []
            for kind, run in row:
                if kind != "han":
                    words.append(run)
                    continue
                current = ""
                for char, tag in zip(run, next(tags)):
                    current += char
                    if tag in ("E", "S"):
                        words.append(current)
                        current = ""
                if current:
                    words.append(current)
            out.append(words)
        return out
