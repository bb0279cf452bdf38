"""The pattern language of Wapiti / Wapic / CRF++ and vectorised feature extraction.

A pattern line starts with ``u`` (unigram: observation × label), ``b`` (bigram: observation ×
label pair) or ``*`` (both); ``#`` starts a comment. Commands inside it are replaced per token:

* ``%x[off,col]`` the value of column ``col`` at ``off`` tokens from the current one;
* ``%t[off,col,"re"]`` ``true`` or ``false``: whether the regular expression matches the value;
* ``%m[off,col,"re"]`` the substring the expression matches (empty when none);
* an uppercase command (``%X``, ``%T``, ``%M``) lowercases the value first;
* ``[@off,col]`` is an absolute position: ``off`` from the start, or from the end when negative;
* out of range gives ``_x-1`` … ``_x-4``, ``_x-#`` before the sentence and ``_x+1`` … after.

The observation is the whole expanded string (prefix and literal text included), so two patterns
with the same literal text share observations, as in Wapiti.

Extraction never loops over tokens in Python: every column is interned once, each command maps
the (few) distinct values through its transform, and each pattern's observation is an int64 key
combined from its literal text and the command values, interned in bulk with ``numpy``.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

OUT_OF_RANGE = ("_x-1", "_x-2", "_x-3", "_x-4", "_x-#", "_x+1", "_x+2", "_x+3", "_x+4", "_x+#")
_COMMAND = re.compile(r'%([xXtTmM])\[\s*(@?)\s*(-?\d+)\s*,\s*(\d+)\s*(?:,\s*"((?:[^"\\]|\\.)*)"\s*)?\]')
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Command:
    """One ``%x`` / ``%t`` / ``%m`` command of a pattern."""

    kind: str  # "x", "t" or "m"
    lower: bool
    absolute: bool
    offset: int
    column: int
    regex: str | None = None

    def transform(self, value: str) -> str:
        """The command's output for one token value.

        >>> Command("t", False, False, 0, 0, "^[0-9]+$").transform("42")
        'true'
        >>> Command("m", True, False, 0, 0, "[a-z]+").transform("ABc1")
        'abc'
        """
        if self.lower:
            value = value.lower()
        if self.kind == "x":
            return value
        found = re.search(self.regex or "", value)
        if self.kind == "t":
            return "true" if found else "false"
        return found.group(0) if found else ""


@dataclass(frozen=True)
class Pattern:
    """A parsed pattern line: its kind, the literal text around its commands, and the commands."""

    text: str
    kind: str  # "u", "b" or "*"
    literals: tuple[str, ...]  # len(commands) + 1 pieces of literal text
    commands: tuple[Command, ...]

    def expand(self, sentence: Sequence[Sequence[str]], t: int) -> str:
        """The observation string of token ``t`` (slow; extraction uses :func:`extract_parts`).

        >>> p = parse_patterns("U05:%x[-1,0]/%x[0,0]")[0]
        >>> [p.expand([("南",), ("京",)], t) for t in range(2)]
        ['U05:_x-1/南', 'U05:南/京']
        """
        out = [self.literals[0]]
        for command, literal in zip(self.commands, self.literals[1:]):
            out.append(command.transform(_value_at(sentence, t, command)))
            out.append(literal)
        return "".join(out)


def _value_at(sentence: Sequence[Sequence[str]], t: int, command: Command) -> str:
    n = len(sentence)
    pos = (command.offset if command.offset >= 0 else n + command.offset) if command.absolute else t + command.offset
    if pos < 0:
        return OUT_OF_RANGE[min(-pos - 1, 4)]
    if pos >= n:
        return OUT_OF_RANGE[5 + min(pos - n, 4)]
    token = sentence[pos]
    return token if isinstance(token, str) else token[command.column]


BOM = "\ufeff"
# Offsets and columns beyond this are refused: they are typos, and they would overflow int64 arithmetic.
MAX_INDEX = 1 << 30


def parse_pattern_line(line: str) -> Pattern | None:
    """The pattern of one line, or None for a blank line or a ``#`` comment; a ``ValueError``
    (without the line's place, which the caller adds) for anything else that is not a pattern.

    >>> parse_pattern_line("U05:%x[-1,0]/%x[0,0]").literals
    ('U05:', '/', '')
    >>> parse_pattern_line("  # a comment") is None
    True
    >>> parse_pattern_line('u%t[0,0,"(a"]')
    Traceback (most recent call last):
    ...
    ValueError: 'u%t[0,0,"(a"]': bad regular expression '(a' (missing ), unterminated subpattern at position 0)
    """
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    kind = line[0].lower()
    if kind not in "ub*":
        raise ValueError(f"{line!r} must start with u, b or * (Wapiti's unigram, bigram or both)")
    literals, commands, last = [], [], 0
    for match in _COMMAND.finditer(line):
        literals.append(line[last:match.start()])
        letter, at, offset, column, regex = match.groups()
        if letter.lower() != "x" and regex is None:
            raise ValueError(f"{line!r}: %{letter} needs a regular expression argument")
        if len(offset) > 10 or len(column) > 10 or abs(int(offset)) > MAX_INDEX or int(column) > MAX_INDEX:
            raise ValueError(f"{line!r}: offset or column out of range (at most {MAX_INDEX})")
        if regex is not None:
            try:
                re.compile(regex)
            except (re.error, RecursionError, OverflowError) as exc:  # what the compiler raises on bad input
                raise ValueError(f"{line!r}: bad regular expression {regex!r} ({exc})") from None
        commands.append(Command(letter.lower(), letter.isupper(), bool(at), int(offset), int(column), regex))
        last = match.end()
    literals.append(line[last:])
    if "%" in "".join(literals).replace("%%", ""):
        raise ValueError(f"{line!r} has a malformed % command")
    return Pattern(line, kind, tuple(literals), tuple(commands))


def parse_patterns(text: str | Iterable[str], source: str = "pattern") -> list[Pattern]:
    """Patterns of a pattern file's text (or lines); blank lines and ``#`` comments are skipped, a
    leading UTF-8 BOM is ignored, and only ``\\n`` (or ``\\r\\n``) ends a line. Errors name
    ``source`` and the line.

    >>> [(p.kind, p.literals, len(p.commands)) for p in parse_patterns("# c\\nU01:%x[-1,0]\\n\\nB")]
    [('u', ('U01:', ''), 1), ('b', ('B',), 0)]
    >>> parse_patterns("*:%T[@-1,1,\\"a\\"]")[0].commands[0]
    Command(kind='t', lower=True, absolute=True, offset=-1, column=1, regex='a')
    >>> parse_patterns("B\\nx%x[0,0]", source="p.txt")
    Traceback (most recent call last):
    ...
    ValueError: p.txt line 2: 'x%x[0,0]' must start with u, b or * (Wapiti's unigram, bigram or both)
    """
    lines = text.split("\n") if isinstance(text, str) else list(text)
    patterns = []
    for number, line in enumerate(lines, 1):
        if number == 1 and line.startswith(BOM):
            line = line[1:]
        try:
            pattern = parse_pattern_line(line)
        except ValueError as exc:
            raise ValueError(f"{source} line {number}: {exc}") from None
        if pattern is not None:
            patterns.append(pattern)
    return patterns


def read_pattern_file(path: str) -> str:
    """The text of a pattern file, checked: strict UTF-8 (a BOM is dropped), every line a pattern,
    a blank line or a comment, and at least one pattern; a ``ValueError`` names the file and line.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "p.txt")
    >>> _ = open(path, "w", encoding="utf-8").write("\\ufeffU:%x[0,0]\\nB\\n")
    >>> read_pattern_file(path)
    'U:%x[0,0]\\nB\\n'
    """
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    text = text[1:] if text.startswith(BOM) else text
    if not parse_patterns(text, source=str(path)):
        raise ValueError(f"{path}: no pattern lines (a line must start with u, b or *)")
    return text


def flatten(sentences: Sequence[Sequence[Sequence[str] | str]]) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """Columns of all tokens, concatenated, and the sentence offsets (int64).

    >>> flatten([[("a", "X"), ("b", "Y")], [], ["c"]][:2])
    ([('a', 'b'), ('X', 'Y')], array([0, 2, 2]))
    """
    lengths = np.fromiter((len(s) for s in sentences), np.int64, len(sentences))
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = list(chain.from_iterable(sentences))
    if not tokens:
        return [], offsets
    if isinstance(tokens[0], str):
        return [tuple(tokens)], offsets
    width = min(len(t) for t in tokens)
    if width != max(len(t) for t in tokens):
        raise ValueError("every token needs the same number of columns")
    return list(zip(*tokens)), offsets


class Vocabulary:
    """Interned strings: ``ids`` maps a string to its id, ``strings`` lists them by id.

    >>> v = Vocabulary(["a"]); v.add("b"), v.add("a"), v.strings
    (1, 0, ['a', 'b'])
    """

    def __init__(self, strings: Iterable[str] = ()) -> None:
        self.strings: list[str] = []
        self.ids: dict[str, int] = {}
        for s in strings:
            self.add(s)

    def __len__(self) -> int:
        return len(self.strings)

    def add(self, string: str) -> int:
        """The id of ``string``, adding it when new (see the class example)."""
        found = self.ids.get(string)
        if found is None:
            found = self.ids[string] = len(self.strings)
            self.strings.append(string)
        return found


@dataclass(frozen=True)
class InternedColumn:
    """A column given as codes into a list of values (``distinct[codes[t]]`` is token ``t``'s
    value; values may repeat): what a caller that derives columns from the distinct characters
    hands :func:`extract_parts` instead of one string per token.

    >>> cols, off = [InternedColumn(np.array([1, 0, 1]), ["a", "b"])], np.array([0, 3])
    >>> v = Vocabulary(); extract_parts(parse_patterns("u%x[0,0]"), cols, off, v, True)[0].ravel().tolist(), v.strings
    ([1, 0, 1], ['a', 'b'])
    """

    codes: np.ndarray
    distinct: list[str]

    def __len__(self) -> int:
        return int(self.codes.size)


def _intern_column(values: Sequence[str] | InternedColumn) -> tuple[np.ndarray, list[str]]:
    """Ids of a column's values (first occurrence order) and the distinct values."""
    if isinstance(values, InternedColumn):
        return values.codes, values.distinct
    ids: dict[str, int] = {}
    setdefault = ids.setdefault
    codes = np.fromiter((setdefault(v, len(ids)) for v in values), np.int64, len(values))
    return codes, list(ids)


def extract_parts(patterns: Sequence[Pattern], columns: Sequence[Sequence[str]], offsets: np.ndarray,
                  values: Vocabulary, grow: bool) -> list[np.ndarray]:
    """For every pattern, an (n_tokens, n_commands) int64 matrix of command outputs as ids of
    ``values`` (-1 for an output that ``values`` lacks when ``grow`` is false).

    >>> v = Vocabulary()
    >>> cols, off = flatten([[("a",), ("b",)]])
    >>> extract_parts(parse_patterns("u%x[0,0]/%x[1,0]"), cols, off, v, True)[0].tolist(), v.strings
    ([[0, 1], [1, 2]], ['a', 'b', '_x+1'])
    """
    n = int(offsets[-1])
    lengths = np.diff(offsets)
    rows = np.repeat(np.arange(lengths.size), lengths)
    starts = offsets[:-1][rows]
    local = np.arange(n, dtype=np.int64) - starts
    seq_len = lengths[rows]
    interned: dict[int, tuple[np.ndarray, list[str]]] = {}
    tables: dict[tuple, np.ndarray] = {}  # value ids of every candidate, by (column, transform)
    out = []
    for pattern in patterns:
        parts = np.empty((n, len(pattern.commands)), np.int64)
        for k, command in enumerate(pattern.commands):
            if command.column >= len(columns) and n:
                raise ValueError(f"pattern {pattern.text!r} reads column {command.column} but the data has "
                                 f"{len(columns)} observation column(s)")
            if n == 0:
                continue
            if command.column not in interned:
                interned[command.column] = _intern_column(columns[command.column])
            codes, distinct = interned[command.column]
            if command.absolute:
                pos = np.where(command.offset >= 0, command.offset, seq_len + command.offset)
            else:
                pos = local + command.offset
            before, after = pos < 0, pos >= seq_len
            inside = ~(before | after)
            # distinct values first, then the ten out-of-range markers
            value_codes = np.empty(n, np.int64)
            value_codes[inside] = codes[(starts + pos)[inside]]
            value_codes[before] = len(distinct) + np.minimum(-pos[before] - 1, 4)
            value_codes[after] = len(distinct) + 5 + np.minimum((pos - seq_len)[after], 4)
            candidates = list(chain(distinct, OUT_OF_RANGE))
            transform = (command.column, command.kind, command.lower, command.regex)
            if not grow and transform in tables:  # labelling: the same transform of the column, once
                parts[:, k] = tables[transform][value_codes]
                continue
            if grow:  # training adds exactly the outputs that occur (the model's values, as ever)
                used = np.flatnonzero(np.bincount(value_codes, minlength=len(candidates)))
            else:
                used = np.arange(len(candidates))
            lookup = values.add if grow else (lambda o: values.ids.get(o, -1))
            table = np.full(len(candidates), -1, np.int64)
            table[used] = np.fromiter((lookup(command.transform(candidates[c])) for c in used), np.int64, used.size)
            if not grow:
                tables[transform] = table
            parts[:, k] = table[value_codes]
        out.append(parts)
    return out


def namespace_ids(patterns: Sequence[Pattern]) -> np.ndarray:
    """Observation namespace of every pattern: patterns with the same literal text share one.

    >>> namespace_ids(parse_patterns("u:%x[0,0]\\nu:%x[1,0]\\nb")).tolist()
    [0, 0, 1]
    """
    seen: dict[tuple[str, ...], int] = {}
    return np.array([seen.setdefault(p.literals, len(seen)) for p in patterns], np.int64)


def combine_keys(namespace: int, parts: np.ndarray, n_values: int, n_namespaces: int) -> np.ndarray:
    """One int64 key per row of ``parts`` (-1 where a part is -1): exact positional packing while
    it fits in 62 bits, else a 64-bit multiplicative hash with the sign bit cleared. The namespace
    is the lowest digit (``values * n_namespaces + namespace``), so keys of namespaces with
    different numbers of commands (none included) never meet.

    >>> combine_keys(1, np.array([[2, 3], [0, -1]]), 10, 2).tolist()
    [47, -1]
    """
    n, k = parts.shape
    unknown = (parts < 0).any(axis=1)
    try:
        exact = n_namespaces * float(n_values) ** k < 2.0 ** 62
    except OverflowError:  # a pattern with hundreds of commands
        exact = False
    if exact:
        keys = np.zeros(n, np.int64)
        for j in range(k):
            keys = keys * n_values + parts[:, j]
        keys = keys * n_namespaces + namespace
    else:
        keys = np.full(n, namespace + 1, np.uint64)
        for j in range(k):
            keys = keys * _HASH_MULTIPLIER + parts[:, j].astype(np.uint64) + np.uint64(1)
            keys ^= keys >> np.uint64(29)
        keys = (keys >> np.uint64(1)).astype(np.int64)
    keys[unknown] = -1
    return keys
