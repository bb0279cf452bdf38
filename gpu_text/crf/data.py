"""Sequence data: CoNLL-style columns and word-segmented text turned into BMES characters.

A sentence is a list of tokens; a token is a tuple of column strings (the label column removed).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

Token = tuple[str, ...]


def read_conll(lines: Iterable[str] | str, *, labelled: bool = True) -> tuple[list[list[Token]], list[list[str]]]:
    """Sentences of a CoNLL-style file (or of an iterable of lines): whitespace-separated columns,
    the last one the label when ``labelled``, a blank line between sentences.

    >>> X, y = read_conll(["He PRP B-NP", "ran VBD B-VP", "", "Go VB B-VP"])
    >>> X, y
    ([[('He', 'PRP'), ('ran', 'VBD')], [('Go', 'VB')]], [['B-NP', 'B-VP'], ['B-VP']])
    """
    if isinstance(lines, str):
        with open(lines, encoding="utf-8") as handle:
            return read_conll(handle.readlines(), labelled=labelled)
    sentences: list[list[Token]] = []
    labels: list[list[str]] = []
    tokens: list[Token] = []
    tags: list[str] = []
    for line in list(lines) + [""]:
        fields = line.split()
        if not fields:
            if tokens:
                sentences.append(tokens)
                labels.append(tags)
                tokens, tags = [], []
            continue
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


def read_segmented_bmes(lines: Iterable[str] | str, separator: str | None = None
                        ) -> tuple[list[list[Token]], list[list[str]]]:
    """Word-segmented text (words separated by whitespace) as one-column character sentences and
    BMES labels; blank lines are skipped.

    >>> read_segmented_bmes(["南京  长江", "", "桥"])
    ([[('南',), ('京',), ('长',), ('江',)], [('桥',)]], [['B', 'E', 'B', 'E'], ['S']])
    """
    if isinstance(lines, str):
        with open(lines, encoding="utf-8") as handle:
            return read_segmented_bmes(handle.readlines(), separator)
    sentences: list[list[Token]] = []
    labels: list[list[str]] = []
    for line in lines:
        words = [w for w in line.rstrip("\n").split(separator) if w.strip()]
        if not words:
            continue
        chars, tags = words_to_bmes(words)
        sentences.append([(c,) for c in chars])
        labels.append(tags)
    return sentences, labels
