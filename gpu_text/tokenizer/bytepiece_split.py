"""The pre-splitter of BytePiece training (the seed's ``ustr::SplitText(text, space, cut)``).

Training splits each normalized line with its own rule, not with the encoder's
:class:`~gpu_text.tokenizer.PreTokenizer`: cut=0 (GPT-4-like) keeps word runs (letters, digits and
CJK together, Han and non-Han apart) with one space or one punctuation character in front,
punctuation runs with one space in front, and each surplus space alone; cut=1 makes every space
and punctuation character a token and keeps word runs whole.
"""
from __future__ import annotations

import numpy as np

from gpu_text.backend import get_backend

_WORD_RANGES = ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0xFF),
                (0x100, 0x2FF), (0x300, 0x36F), (0x370, 0x7FF), (0x800, 0x85F), (0x900, 0x1CFF),
                (0x1D00, 0x1FFF), (0x2E80, 0x2FFF), (0x3040, 0x31FF), (0x3200, 0x33FF), (0x3400, 0x9FFF),
                (0xA000, 0xABFF), (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFB00, 0xFDFF), (0xFE70, 0xFEFF),
                (0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0xFF66, 0xFF9F), (0xFFA0, 0xFFDC),
                (0x10000, 0x103FF), (0x10400, 0x10FFF), (0x20000, 0x323AF))
_HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x323AF))
_WHITE = frozenset([0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, *range(0x09, 0x0E),
                    *range(0x2000, 0x200B)])


def is_word_char(cp: int) -> bool:
    """The seed's IsWordChar (letters, digits, CJK and other scripts).

    >>> is_word_char(ord("a")), is_word_char(ord("7")), is_word_char(ord("，")), is_word_char(0xD7)
    (True, True, False, False)
    """
    return any(lo <= cp <= hi for lo, hi in _WORD_RANGES)


def is_han(cp: int) -> bool:
    """The seed's IsHan.

    >>> is_han(ord("中")), is_han(ord("a"))
    (True, False)
    """
    return any(lo <= cp <= hi for lo, hi in _HAN_RANGES)


def is_punctuation(cp: int) -> bool:
    """The seed's IsPunctuationToken for one character: not a word character, not white space, not a control.

    >>> is_punctuation(ord(",")), is_punctuation(ord(" ")), is_punctuation(ord("a"))
    (True, False, False)
    """
    return not (is_word_char(cp) or cp in _WHITE or cp < 0x20 or cp == 0x7F or 0x80 <= cp <= 0x9F)


def split_text(text: str, space: str = "▁", cut: int = 0) -> list[str]:
    """The pre-tokens training counts in one normalized line.

    >>> split_text("hello▁world,▁a1▁▁b")
    ['hello', '▁world', ',', '▁a1', '▁', '▁b']
    >>> split_text("你好▁world!!,x中文")  # a punctuation run takes the comma; one space goes on
    ['你好', '▁world', '!!,', 'x', '中文']
    >>> split_text("▁don't▁stop", cut=1)
    ['▁', 'don', "'", 't', '▁', 'stop']
    """
    out: list[str] = []
    n = len(text)
    if cut == 1:
        i = 0
        while i < n:
            ch = text[i]
            if ch == space or is_punctuation(ord(ch)):
                out.append(ch)
                i += 1
                continue
            j = i + 1
            while j < n and not (text[j] == space or is_punctuation(ord(text[j]))):
                j += 1
            out.append(text[i:j])
            i = j
        return out

    def kind(ch: str) -> int:  # 0 space, 1 word, 2 punctuation
        return 0 if ch == space else (1 if is_word_char(ord(ch)) else 2)

    pending = -1  # the index of a space not yet placed
    i = 0
    while i < n:
        k = kind(text[i])
        if k == 0:
            if pending >= 0:
                out.append(text[pending])
            pending = i
            i += 1
            continue
        if k == 1:
            han = is_han(ord(text[i]))
            start = i
            if pending >= 0:
                if han:  # Han runs never carry a space
                    out.append(text[pending])
                else:
                    start = pending
                pending = -1
            j = i
            while j < n and kind(text[j]) == 1 and is_han(ord(text[j])) == han:
                j += 1
            out.append(text[start:j])
            i = j
            continue
        if pending < 0 and i + 1 < n and kind(text[i + 1]) == 1 and not is_han(ord(text[i + 1])):
            j = i + 1  # one punctuation character in front of a non-Han word run
            while j < n and kind(text[j]) == 1 and not is_han(ord(text[j])):
                j += 1
            out.append(text[i:j])
            i = j
            continue
        start = pending if pending >= 0 else i
        pending = -1
        j = i
        while j < n and kind(text[j]) == 2:
            j += 1
        out.append(text[start:j])
        i = j
    if pending >= 0:
        out.append(text[pending])
    return out


_FLAGS = {"space": 1, "word": 2, "han": 4, "punct": 8}  # cpu_fallback.bytepiece_trainer's flags


def _in_ranges(codepoints: np.ndarray, ranges: tuple[tuple[int, int], ...]) -> np.ndarray:
    hit = np.zeros(codepoints.size, bool)
    for lo, hi in ranges:
        hit |= (codepoints >= lo) & (codepoints <= hi)
    return hit


def split_batch(data: np.ndarray, offsets: np.ndarray, space: str = "▁", cut: int = 0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`split_text` over every row of a ragged UTF-8 batch at once (Numba): the pre-tokens'
    byte starts and ends in ``data`` and each row's pre-token offsets.

    >>> from gpu_text.batch import TextBatch
    >>> b = TextBatch.from_strings(["hello▁world,▁a1▁▁b", "你好▁x"])
    >>> starts, ends, rows = split_batch(b.data, b.offsets)
    >>> [bytes(b.data[s:e]).decode() for s, e in zip(starts, ends)], rows.tolist()
    (['hello', '▁world', ',', '▁a1', '▁', '▁b', '你好', '▁x'], [0, 6, 8])
    """
    cpu = get_backend("cpu")
    codepoints, positions, row_offsets = cpu.op("utf8", "utf8_decode")(data, offsets)
    cp = codepoints.astype(np.int64)
    white = np.isin(cp, np.array(sorted(_WHITE), np.int64))
    word = _in_ranges(cp, _WORD_RANGES)
    flags = np.where(cp == ord(space), _FLAGS["space"], 0) | np.where(word, _FLAGS["word"], 0) | \
        np.where(_in_ranges(cp, _HAN_RANGES), _FLAGS["han"], 0) | \
        np.where(~(word | white | (cp < 0x20) | (cp == 0x7F) | ((cp >= 0x80) & (cp <= 0x9F))), _FLAGS["punct"], 0)
    starts, ends, token_offsets = cpu.op("bytepiece_trainer", "split_rows")(flags.astype(np.uint8), row_offsets, cut)
    rows = np.searchsorted(row_offsets[1:], starts, side="right")
    # byte position of a character: its row's start plus its offset; a range's end is the next character's start
    char_bytes = np.append(positions + offsets[:-1][np.searchsorted(row_offsets[1:], np.arange(cp.size), side="right")],
                           0)
    row_ends = offsets[1:]
    byte_starts = char_bytes[starts]
    last = ends == row_offsets[1:][rows]
    byte_ends = np.where(last, row_ends[rows], char_bytes[np.minimum(ends, cp.size)])
    return byte_starts, byte_ends, token_offsets
