"""Reference twin of ``cuda/pre_tokenizer.cu``: the pre-tokenizer's patterns matched directly.

No DFA: at every pre-token start each alternative of the configuration's pattern is tried on the
characters ahead, and the longest match wins (an unmatched character stands alone). Only the
configuration (split, digits, han_per_char, space) is read from the compiled ``dfa``.
"""
from __future__ import annotations

import numpy as np

from tests.reference.utf8 import char_class, decode_string

OTHER, SPACE, DIGIT, ALPHA, HAN, APOSTROPHE = "O", "S", "N", "A", "H", "'"
NUMBERS = {OTHER: 0, SPACE: 1, DIGIT: 2, ALPHA: 3, HAN: 4, APOSTROPHE: 5}


def kind(cp: int, space: int) -> str:
    if cp == space:
        return SPACE
    if cp == 0x27:
        return APOSTROPHE
    return {2: DIGIT, 3: ALPHA, 4: HAN}.get(char_class(cp), OTHER)


def run(kinds: list[str], at: int, allowed: set[str]) -> int:
    """How many characters from `at` on are of the allowed kinds."""
    n = 0
    while at + n < len(kinds) and kinds[at + n] in allowed:
        n += 1
    return n


def _one_or_run(kinds: list[str], at: int, k: str, single: bool) -> int:
    if single:
        return 1 if kinds[at] == k else 0
    return run(kinds, at, {k})


def match_lengths(kinds: list[str], at: int, split: str, digits: str, han_per_char: bool) -> list[int]:
    """The length (in characters, 0 = no match) of every alternative at position `at`."""
    everything = {OTHER, SPACE, DIGIT, ALPHA, HAN, APOSTROPHE}
    letter = {ALPHA}
    punct = everything - {ALPHA, HAN, DIGIT}  # [^AHN]
    here = kinds[at]
    han = _one_or_run(kinds, at, HAN, han_per_char)
    digit = _one_or_run(kinds, at, DIGIT, digits == "split")
    if split == "word":
        letters = run(kinds, at, letter)
        prefixed = 1 + run(kinds, at + 1, letter) if here in punct and run(kinds, at + 1, letter) else 0
        space_prefix = 1 if here == SPACE else 0
        punct_run = run(kinds, at + space_prefix, punct - {SPACE})
        punct_match = space_prefix + punct_run if punct_run else 0
        return [letters, prefixed, han, digit, punct_match, space_prefix]
    if split == "isolate":
        n = run(kinds, at, letter)
        while n and at + n < len(kinds) and kinds[at + n] == APOSTROPHE and run(kinds, at + n + 1, letter):
            n += 1 + run(kinds, at + n + 1, letter)
        return [n, han, digit, 1 if here in punct else 0]
    if split == "none":
        return [len(kinds) - at]
    if digits == "split":
        space_prefix = 1 if here == SPACE else 0
        rest = run(kinds, at + space_prefix, everything - {SPACE, DIGIT})
        return [space_prefix + rest if rest else 0, space_prefix, 1 if here == DIGIT else 0]
    return [1 + run(kinds, at + 1, everything - {SPACE}) if here == SPACE else run(kinds, at, everything - {SPACE})]


def pre_tokens_of(raw: bytes, split: str, digits: str, han_per_char: bool, space: int) -> list[tuple[int, str]]:
    """(byte offset, first character's kind) of every pre-token of one string."""
    chars = decode_string(raw)
    kinds = [kind(cp, space) for cp, _ in chars]
    out = []
    at = 0
    while at < len(chars):
        out.append((chars[at][1], kinds[at]))
        at += max(max(match_lengths(kinds, at, split, digits, han_per_char)), 1)
    return out


def pretokenize(data: np.ndarray, offsets: np.ndarray, dfa) -> tuple[np.ndarray, np.ndarray]:
    raw = bytes(data)
    starts, symbols = [], []
    for s in range(len(offsets) - 1):
        base = int(offsets[s])
        for at, k in pre_tokens_of(raw[base:int(offsets[s + 1])], dfa.split, dfa.digits, dfa.han_per_char, dfa.space):
            starts.append(base + at)
            symbols.append(NUMBERS[k])
    return np.array(starts, np.int64), np.array(symbols, np.uint8)


def pretokenize_marks(data: np.ndarray, offsets: np.ndarray, dfa) -> np.ndarray:
    """0 per byte, 1 + the first character's symbol at every pre-token start."""
    starts, symbols = pretokenize(data, offsets, dfa)
    marks = np.zeros(len(data), np.uint8)
    marks[starts] = symbols + 1
    return marks


SYMBOL_MARK = 7  # the mark of a user symbol's pre-token (PT_SYMBOL_MARK)


def pretokenize_symbol_marks(data: np.ndarray, offsets: np.ndarray, dfa, state, check, label, eow,
                             sym_width: int) -> tuple[np.ndarray, np.ndarray]:
    """SentencePiece's scan for user symbols, directly: at every character the longest word of the
    trie (``symbol_at``: its value << 8 | its length), taken whole when the scan stands there, and
    each stretch between the taken ones pre-tokenized as a string of its own."""
    from tests.reference.trie import words_of

    words = words_of(state, check, label, eow)
    raw = bytes(data)
    marks = np.zeros(len(raw), np.uint8)
    symbol_at = np.zeros(len(raw), np.int32)
    for s in range(len(offsets) - 1):
        begin, end = int(offsets[s]), int(offsets[s + 1])
        text = raw[begin:end]
        chars = [at for _, at in decode_string(text)]
        for at in chars:
            found = [(len(w), v) for w, v in words.items() if text.startswith(w, at)]
            if found:
                length, value = max(found)
                symbol_at[begin + at] = value << 8 | length
        at, char = 0, set(chars)
        stretch = 0  # where the text since the last symbol starts
        while at <= len(text):
            taken = at < len(text) and at in char and symbol_at[begin + at] != 0
            if taken or at == len(text):
                for k, kind_of in pre_tokens_of(text[stretch:at], dfa.split, dfa.digits, dfa.han_per_char, dfa.space):
                    marks[begin + stretch + k] = NUMBERS[kind_of] + 1
                if at == len(text):
                    break
                marks[begin + at] = SYMBOL_MARK
                at += int(symbol_at[begin + at]) & 255
                stretch = at
            else:
                at += 1
    return marks, symbol_at


def pretokenize_mark_words(data: np.ndarray, offsets: np.ndarray, word_starts: np.ndarray, word_rows: np.ndarray,
                           dfa, marks: np.ndarray) -> np.ndarray:
    """Every word start whose character is Han becomes a Han pre-token start (in place)."""
    raw = bytes(data)
    for r in range(len(offsets) - 1):
        begin, end = int(offsets[r]), int(offsets[r + 1])
        kinds = {at: kind(cp, dfa.space) for cp, at in decode_string(raw[begin:end])}
        for k in range(int(word_rows[r]), int(word_rows[r + 1])):
            if kinds.get(int(word_starts[k])) == HAN:
                marks[begin + int(word_starts[k])] = NUMBERS[HAN] + 1
    return marks
