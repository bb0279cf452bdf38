"""The text model file of :class:`gpu_text.crf.CRF` (format in :mod:`gpu_text.crf.model`'s
docstring): escaping, and the checked reader of every section (errors name the file and line).
"""
from __future__ import annotations

import math
import re

import numpy as np

from gpu_text.crf.features import FeatureSpace
from gpu_text.crf.patterns import Pattern, parse_pattern_line
from gpu_text.crf.segmentation import COLUMNS

FORMAT = "gpu_text-crf 2"
FORMAT_V1 = "gpu_text-crf 1"  # still written for models without segmentation columns, and read
_COUNT = re.compile("[0-9]{1,12}")  # ASCII digits only: int() would take any script's
_ID_ROWS = re.compile("(?:[0-9]{1,12}(?: [0-9]{1,12})*\n)*")  # the id fields of a section, a line each


def escape(text: str) -> str:
    """One line's worth of ``text``: backslash, tab, newline and carriage return escaped.

    >>> escape("a\\tb"), unescape(escape("a\\tb\\n")) == "a\\tb\\n"
    ('a\\\\tb', True)
    """
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def unescape(text: str) -> str:
    """The inverse of :func:`escape` (see its example)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "r": "\r"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


class ModelReader:
    """The lines of a model file and a cursor over its sections; errors name the file and line.

    >>> r = ModelReader("m.crf", b"gpu_text-crf 1\\nlabels 1\\nA\\n")
    >>> r.section("labels")
    (2, ['A'])
    >>> r.section("patterns")
    Traceback (most recent call last):
    ...
    ValueError: m.crf line 4: expected the section header 'patterns <count>', found '' (truncated or damaged)
    """

    def __init__(self, path: str, raw: bytes) -> None:
        self.path = path
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not a {FORMAT!r} model file (not UTF-8 at byte {exc.start})") from None
        text = text[1:] if text.startswith("\ufeff") else text
        self.lines = [line.removesuffix("\r") for line in text.split("\n")]
        self.next = 1
        self.columns: list[str] | None = None  # segmentation columns and dictionary (format 2)
        self.words: list[str] | None = None

    def error(self, index: int, message: str) -> ValueError:
        return ValueError(f"{self.path} line {index + 1}: {message}")

    def section(self, name: str) -> tuple[int, list[str]]:
        """The index of the section's first line and its lines."""
        i = self.next
        found = self.lines[i] if i < len(self.lines) else None
        header = (found or "").split(" ")
        if len(header) != 2 or header[0] != name or not _COUNT.fullmatch(header[1]):
            what = "the end of the file" if found is None else repr(found[:40])
            raise self.error(i, f"expected the section header '{name} <count>', found {what} (truncated or damaged)")
        count = int(header[1])
        if i + 1 + count > len(self.lines):
            raise self.error(i, f"section {name!r} announces {count} lines but the file ends "
                                f"{len(self.lines) - i - 1} lines later (truncated?)")
        self.next = i + 1 + count
        return i + 1, self.lines[i + 1:i + 1 + count]

    def read(self) -> tuple[list[str], list[Pattern], list[str], list[tuple[np.ndarray, np.ndarray]]]:
        """Labels, patterns, values and the (parts, weights) of the unigram and bigram features."""
        if self.lines[0] not in (FORMAT, FORMAT_V1):
            raise ValueError(f"{self.path} is not a {FORMAT!r} model file (line 1 is {self.lines[0][:40]!r})")
        first, labels = self.section("labels")
        labels = self.distinct(first, [unescape(s) for s in labels], "label")
        if not labels:
            raise self.error(first - 1, "a model needs at least one label")
        first, lines = self.section("patterns")
        patterns = []
        for i, line in enumerate(lines, first):
            text = unescape(line)
            try:
                pattern = parse_pattern_line(text) if "\n" not in text else None
            except ValueError as exc:
                raise self.error(i, str(exc)) from None
            if pattern is None:
                raise self.error(i, f"{line[:40]!r} is not a pattern")
            patterns.append(pattern)
        if not patterns:
            raise self.error(first - 1, "a model needs at least one pattern")
        if self.lines[0] == FORMAT:
            self.segmentation(patterns)
        first, values = self.section("values")
        values = self.distinct(first, [unescape(s) for s in values], "value")
        space = FeatureSpace(patterns)
        widths = {int(ns): len(p.commands) for ns, p in zip(space.namespaces, patterns)}
        kinds: dict[int, str] = {}
        for ns, p in zip(space.namespaces.tolist(), patterns):
            kinds[ns] = kinds.get(ns, "") + p.kind
        tables = []
        for name, n_weights, kind in (("unigram", len(labels), "u"), ("bigram", len(labels) ** 2, "b")):
            first, rows = self.section(name)
            fast = self.table(rows, n_weights, kind, widths, kinds, len(values), 1 + space._width())
            if fast is not None:  # every row checked with array operations; else find the bad one below
                tables.append((fast[0], fast[1].reshape(len(rows), *([len(labels)] * (1 + (kind == "b"))))))
                continue
            parts = np.full((len(rows), 1 + space._width()), -1, np.int64)
            weights = np.empty((len(rows), n_weights), np.float64)
            seen: dict[tuple[int, ...], int] = {}
            for row, line in enumerate(rows):
                i = first + row
                fields = line.split("\t")
                if len(fields) != 3:
                    raise self.error(i, f"a {name} row has 3 tab-separated fields, found {len(fields)}")
                ids = fields[1].split(" ")
                if not all(_COUNT.fullmatch(v) for v in ids):
                    raise self.error(i, f"ids {fields[1][:40]!r} are not non-negative integers")
                ids = [int(v) for v in ids]
                ns = ids[0]
                if ns not in widths or not any(k in kind + "*" for k in kinds[ns]):
                    raise self.error(i, f"namespace {ns} is not one of the model's {name} patterns")
                if len(ids) != 1 + widths[ns]:
                    raise self.error(i, f"namespace {ns} takes {widths[ns]} value id(s), found {len(ids) - 1}")
                bad = [v for v in ids[1:] if v >= len(values)]
                if bad:
                    raise self.error(i, f"value id {bad[0]} is out of range (the model has {len(values)} values)")
                if tuple(ids) in seen:
                    raise self.error(i, f"the same {name} observation as line {seen[tuple(ids)] + 1}")
                seen[tuple(ids)] = i
                parts[row, :len(ids)] = ids
                weights[row] = self.weights(i, fields[2], n_weights)
            tables.append((parts, weights.reshape(len(rows), *([len(labels)] * (1 + (kind == "b"))))))
        rest = next((i for i in range(self.next, len(self.lines)) if self.lines[i]), None)
        if rest is not None:
            raise self.error(rest, "unexpected content after the bigram section")
        return labels, patterns, values, tables

    @staticmethod
    def table(rows: list[str], n_weights: int, kind: str, widths: dict[int, int], kinds: dict[int, str],
              n_values: int, width: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The (parts, weights) of a unigram or bigram section when every row is well formed (the
        checks of :meth:`read`'s row loop, on arrays: a large model loads in a fraction of the
        time), else None so that the loop names the first bad line."""
        fields = [line.split("\t") for line in rows]
        if any(len(f) != 3 for f in fields):
            return None
        ids_text = [f[1] for f in fields]
        if not _ID_ROWS.fullmatch("\n".join(ids_text) + "\n" if rows else ""):
            return None
        counts = np.fromiter((t.count(" ") + 1 for t in ids_text), np.int64, len(rows))
        flat = np.array(" ".join(ids_text).split(" ") if rows else [], dtype=np.int64)
        starts = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        namespaces = flat[starts[:-1]]
        known = max(widths, default=-1) + 1
        expected = np.full(known, -1, np.int64)  # width + 1 of each namespace this section may hold
        for ns, w in widths.items():
            if any(k in kind + "*" for k in kinds[ns]):
                expected[ns] = 1 + w
        if (namespaces >= known).any() or (expected[np.minimum(namespaces, known - 1)] != counts).any():
            return None
        value_ids = np.ones(flat.size, bool)
        value_ids[starts[:-1]] = False
        if (flat[value_ids] >= n_values).any():
            return None
        parts = np.full((len(rows), width), -1, np.int64)
        row_of = np.repeat(np.arange(len(rows)), counts)
        parts[row_of, np.arange(flat.size) - starts[:-1][row_of]] = flat
        if rows and np.unique(parts, axis=0).shape[0] != len(rows):
            return None
        weight_text = [f[2] for f in fields]
        if any(t.count(" ") != n_weights - 1 for t in weight_text):
            return None
        try:
            weights = np.array(" ".join(weight_text).split(" ") if rows else [], dtype=np.float64)
        except ValueError:
            return None
        if weights.size != len(rows) * n_weights or not np.isfinite(weights).all():
            return None
        return parts, weights.reshape(len(rows), n_weights)

    def segmentation(self, patterns: list[Pattern]) -> None:
        """The columns and dictionary sections: known, distinct column names that every pattern's
        columns exist in, a dictionary exactly when a dict_* column needs one."""
        first, columns = self.section("columns")
        if not columns or len(set(columns)) != len(columns) or any(c not in COLUMNS for c in columns):
            raise self.error(first - 1, f"columns must be distinct names of {COLUMNS}, found {columns[:8]}")
        widest = max((c.column for p in patterns for c in p.commands), default=-1)
        if widest >= len(columns):
            raise self.error(first - 1, f"a pattern reads column {widest} but the model has {len(columns)} columns")
        first, words = self.section("dictionary")
        words = self.distinct(first, [unescape(w) for w in words], "dictionary word")
        if "" in words:
            raise self.error(first + words.index(""), "an empty dictionary word")
        needs = any(c.startswith("dict_") for c in columns)
        if needs != bool(words):
            raise self.error(first - 1, "a dictionary column needs dictionary words" if needs else
                             "dictionary words but no dictionary column")
        self.columns, self.words = columns, (words if needs else None)

    def distinct(self, first: int, strings: list[str], what: str) -> list[str]:
        """``strings``, refused when one is empty or repeated (ids are positions in the list)."""
        seen: dict[str, int] = {}
        for i, string in enumerate(strings, first):
            if (what == "label" and not string) or string in seen:
                raise self.error(i, f"{'an empty' if not string and what == 'label' else 'a repeated'} {what} "
                                    f"{string[:40]!r}" + (f" (also line {seen[string] + 1})" if string in seen else ""))
            seen[string] = i
        return strings

    def weights(self, i: int, text: str, count: int) -> list[float]:
        """The ``count`` finite weights of line ``i``."""
        fields = text.split()
        if len(fields) != count:
            raise self.error(i, f"expected {count} weights, found {len(fields)}")
        out = []
        for field in fields:
            try:
                value = float(field)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise self.error(i, f"weight {field[:40]!r} is not a finite number")
            out.append(value)
        return out
