"""Word-frequency dictionaries: ``word<TAB>freq`` (DictCut) or ``word freq [tag]`` (jieba).

Duplicated words keep their last frequency while the total counts every line, as jieba does.
A UTF-8 byte order mark before the first line is not part of its word. Frequencies and their total
must fit in int64 (what the segmenter stores them as).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

INT64_MAX = 2**63 - 1

class DictionaryError(ValueError):
    """A malformed dictionary line; the message names the file and line."""


@dataclass
class Dictionary:
    """Words (str, unique, in first-seen order), their frequencies and the total frequency.

    >>> d = parse_dictionary(["南京\\t751", "市 1003 n", "南京\\t750"])
    >>> d.words, d.freqs.tolist(), d.total
    (['南京', '市'], [750, 1003], 2504)
    """

    words: list[str]
    freqs: np.ndarray
    total: int
    skipped: list[str] = field(default_factory=list)  # "source:line: reason" for skipped lines

    def __len__(self) -> int:
        return len(self.words)

    def save(self, path: str | Path) -> None:
        """Write ``word<TAB>freq`` lines, one per word.

        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "d.tsv")
        >>> parse_dictionary(["a\\t2"]).save(p); open(p).read()
        'a\\t2\\n'
        """
        with open(path, "w", encoding="utf-8") as out:
            for word, freq in zip(self.words, self.freqs.tolist()):
                out.write(f"{word}\t{freq}\n")


def parse_dictionary(lines: Iterable[str], source: str = "<lines>", on_error: str = "raise") -> Dictionary:
    """Parse dictionary lines; ``on_error="skip"`` skips malformed lines and lists them in ``skipped``.

    >>> parse_dictionary(["ok\\t3", "bad"], on_error="skip").skipped
    ['<lines>:2: expected "word<TAB>freq" or "word freq [tag]"']
    >>> parse_dictionary(["bad"])
    Traceback (most recent call last):
    ...
    gpu_text.segment.dictionary.DictionaryError: <lines>:1: expected "word<TAB>freq" or "word freq [tag]"
    >>> parse_dictionary(["\ufeff好\t1"]).words
    ['好']
    """
    if on_error not in ("raise", "skip"):
        raise ValueError("on_error must be 'raise' or 'skip'")
    index: dict[str, int] = {}
    freqs: list[int] = []
    total = 0
    skipped: list[str] = []
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if number == 1:
            line = line.removeprefix("\ufeff")
        if not line.strip():
            continue
        problem, word, freq = _parse_line(line)
        if not problem and total + freq > INT64_MAX:
            problem = f"the frequencies add up to more than {INT64_MAX} (int64)"
        if problem:
            message = f"{source}:{number}: {problem}"
            if on_error == "raise":
                raise DictionaryError(message)
            skipped.append(message)
            continue
        total += freq
        if word in index:
            freqs[index[word]] = freq
        else:
            index[word] = len(freqs)
            freqs.append(freq)
    return Dictionary(list(index), np.array(freqs, np.int64), total, skipped)


def _parse_line(line: str) -> tuple[str | None, str, int]:
    fields = line.split("\t") if "\t" in line else line.split()
    if len(fields) < 2 or (len(fields) > 3 and "\t" not in line):
        return 'expected "word<TAB>freq" or "word freq [tag]"', "", 0
    word, freq_text = fields[0].strip(), fields[1].strip()
    if not word:
        return "empty word", "", 0
    if "\x00" in word or "\ufffd" in word or any("\ud800" <= c <= "\udfff" for c in word):
        return f"word {word!r} holds a NUL or undecodable byte", "", 0
    try:
        freq = int(freq_text)
    except ValueError:
        return f"frequency {freq_text!r} is not an integer", "", 0
    if freq < 0:
        return f"negative frequency {freq}", "", 0
    if freq > INT64_MAX:
        return f"frequency {freq_text!r} is larger than {INT64_MAX} (int64)", "", 0
    return None, word, freq


def load_dictionary(path: str | Path, on_error: str = "raise") -> Dictionary:
    """Read a dictionary file (UTF-8; a byte that is not UTF-8 makes its line malformed). A line
    ends at ``\n`` only (a lone ``\r`` or U+2028 does not end one), so line numbers are what
    ``wc -l`` and editors count.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "d.txt")
    >>> _ = open(p, "w").write("他 50\\n是\\t40\\n")
    >>> load_dictionary(p).words
    ['他', '是']
    """
    with open(path, "rb") as raw:
        lines = (line.decode("utf-8", "replace") for line in raw)
        return parse_dictionary(lines, source=str(path), on_error=on_error)
