"""Sequence data: CoNLL-style columns and word-segmented text turned into BMES characters.

A sentence is a list of tokens; a token is a tuple of column strings (the label column removed).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

Token = tuple[str, ...]


BOM = "\ufeff"


def read_lines(path: str) -> list[str]:
    """The lines of a UTF-8 text file: only ``\\n`` (or ``\\r\\n``) ends a line, a leading BOM is
    dropped, and bytes that are not UTF-8 are a ``ValueError`` naming the file and line.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "d.txt")
    >>> _ = open(path, "wb").write("\\ufeffa B\\r\\nc\\u2028d E\\n".encode())
    >>> read_lines(path)
    ['a B', 'c\\u2028d E']
    """
    with open(path, "rb") as handle:
        raw = handle.read()
    lines = raw.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    out = []
    for number, line in enumerate(lines, 1):
        try:
            out.append(line.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} line {number}: not UTF-8 text (byte {exc.start} of the line)") from None
    if out and out[0].startswith(BOM):
        out[0] = out[0][1:]
    return out


def read_conll(lines: Iterable[str] | str, *, labelled: bool = True, source: str | None = None
               ) -> tuple[list[list[Token]], list[list[str]]]:
    """Sentences of a CoNLL-style file (or of an iterable of lines): whitespace-separated columns,
    the last one the label when ``labelled``, a blank line between sentences. Every token has the
    same number of columns; a ``ValueError`` names ``source`` (the file, by default) and the line
    of one that differs. A leading BOM is ignored.

    >>> X, y = read_conll(["He PRP B-NP", "ran VBD B-VP", "", "Go VB B-VP"])
    >>> X, y
    ([[('He', 'PRP'), ('ran', 'VBD')], [('Go', 'VB')]], [['B-NP', 'B-VP'], ['B-VP']])
    >>> read_conll(["He PRP B-NP", "ran B-VP"], source="t.txt")
    Traceback (most recent call last):
    ...
    ValueError: t.txt line 2: 2 columns, but line 1 has 3 (every token needs the same columns)
    """
    if isinstance(lines, str):
        return read_conll(read_lines(lines), labelled=labelled, source=lines if source is None else source)
    where = "input" if source is None else str(source)
    sentences: list[list[Token]] = []
    labels: list[list[str]] = []
    tokens: list[Token] = []
    tags: list[str] = []
    width, width_line = None, 0
    for number, line in enumerate(chain(lines, [""]), 1):
        if number == 1 and line.startswith(BOM):
            line = line[1:]
        fields = line.split()
        if not fields:
            if tokens:
                sentences.append(tokens)
                labels.append(tags)
                tokens, tags = [], []
            continue
        if width is None:
            width, width_line = len(fields), number
        elif len(fields) != width:
            raise ValueError(f"{where} line {number}: {len(fields)} columns, but line {width_line} has {width} "
                             "(every token needs the same columns)")
        if labelled:
            tokens.append(tuple(fields[:-1]))
            tags.append(fields[-1])
        else:
            tokens.append(tuple(fields))
    return sentences, labels


def words_to_bmes(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """Characters of a segmented sentence and their tags: S for a one-character word, else B M… E.

    >>> words_to_bmes(["南京市", "长江", "桥"])
    (['南', '京', '市', '长', '江', '桥'], ['B', 'M', 'E', 'B', 'E', 'S'])
    """
    chars: list[str] = []
    tags: list[str] = []
    for word in words:
        chars.extend(word)
        tags.extend(["S"] if len(word) == 1 else ["B"] + ["M"] * (len(word) - 2) + ["E"])
    return chars, tags


def bmes_to_words(chars: Sequence[str], tags: Sequence[str]) -> list[str]:
    """Words of a tagged character sequence; a word ends after E or S, or before B or S, so any tag
    sequence (even an ill-formed one) gives words that spell the characters.

    >>> bmes_to_words(list("南京市长江"), ["B", "M", "E", "B", "E"])
    ['南京市', '长江']
    >>> bmes_to_words(list("abc"), ["M", "B", "M"])
    ['a', 'bc']
    """
    words: list[str] = []
    current = ""
    for char, tag in zip(chars, tags):
        if current and tag in ("B", "S"):
            words.append(current)
            current = ""
        current += char
        if tag in ("E", "S"):
            words.append(current)
            current = ""
    if current:
        words.append(current)
    return words


def read_segmented_bmes(lines: Iterable[str] | str, separator: str | None = None, features: Any = None
                        ) -> tuple[list[list[Token]], list[list[str]]]:
    """Word-segmented text (words separated by whitespace) as character sentences and BMES
    labels; blank lines are skipped and a leading BOM is ignored. A token is the character alone,
    or with ``features`` (a :class:`gpu_text.crf.segmentation.SegmentationFeatures`) its columns.

    >>> read_segmented_bmes(["南京  长江", "", "桥"])
    ([[('南',), ('京',), ('长',), ('江',)], [('桥',)]], [['B', 'E', 'B', 'E'], ['S']])
    >>> from gpu_text.crf.segmentation import SegmentationFeatures
    >>> read_segmented_bmes(["１月  桥"], features=SegmentationFeatures())[0]
    [[('1', 'D'), ('月', 'U月'), ('桥', 'H')]]
    """
    if isinstance(lines, str):
        return read_segmented_bmes(read_lines(lines), separator, features)
    texts: list[str] = []
    labels: list[list[str]] = []
    for number, line in enumerate(lines):
        if number == 0 and line.startswith(BOM):
            line = line[1:]
        words = [w for w in line.rstrip("\n").split(separator) if w.strip()]
        if not words:
            continue
        chars, tags = words_to_bmes(words)
        texts.append("".join(chars))
        labels.append(tags)
    sentences = features.tokens(texts) if features is not None else [[(c,) for c in text] for text in texts]
    return sentences, labels
