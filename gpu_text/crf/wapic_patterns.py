"""Wapic's pattern commands where they differ from gpu_text's (see :mod:`gpu_text.crf.wapic_model`,
which reads ``.wac`` models with them): ``%t``/``%m`` run Wapic's own small regular expressions on
bytes, an uppercase command lowercases its output (ASCII letters only), and ``[@k,c]`` counts from 1.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from gpu_text.crf.patterns import Command, Pattern

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# C's <ctype.h> classes in the C locale, as Wapic's regular expressions use them (\\a \\d \\l \\p \\s \\u \\w)
_CLASSES = {"a": str.isalpha, "d": str.isdigit, "l": str.islower, "u": str.isupper, "w": str.isalnum,
            "s": lambda ch: ch in " \t\n\v\f\r", "p": lambda ch: "!" <= ch <= "~" and not ch.isalnum()}

def _wapic_match(regex: bytes, text: bytes) -> tuple[int, int]:
    """Where Wapic's small regular expressions (``.``, ``\\d``-style classes, ``*``, ``?``, ``^``,
    a lone ``$``) first match ``text``, by bytes: (start, length), or (-1, 0)."""

    def char_ok(at: int, c: int) -> bool:
        if c == 0:
            return False
        if regex[at] == 0x2E:  # "."
            return True
        if regex[at] == 0x5C and at + 1 < len(regex):  # "\\": a C character class, or the next byte itself
            key = chr(regex[at + 1])
            test = _CLASSES.get(key.lower())
            if test is None:
                return regex[at + 1] == c
            hit = c < 128 and test(chr(c))  # the C locale: no byte above 127 is in a class
            return hit if key.islower() else not hit
        return regex[at] == c

    def match_here(at: int, pos: int) -> int:  # the length matched from text[pos:], or -1
        if at == len(regex):
            return 0
        if regex[at:] == b"$":
            return 0 if pos == len(text) else -1
        width = 2 if regex[at:at + 1] == b"\\" else 1
        nxt = at + width
        if regex[nxt:nxt + 1] == b"*":
            length = 0
            while True:
                rest = match_here(nxt + 1, pos + length)
                if rest >= 0:
                    return length + rest
                if pos + length >= len(text) or not char_ok(at, text[pos + length]):
                    return -1
                length += 1
        if regex[nxt:nxt + 1] == b"?":
            if pos < len(text) and char_ok(at, text[pos]):
                rest = match_here(nxt + 1, pos + 1)
                if rest >= 0:
                    return 1 + rest
            return match_here(nxt + 1, pos)
        if pos < len(text) and char_ok(at, text[pos]):
            rest = match_here(nxt, pos + 1)
            return -1 if rest < 0 else 1 + rest
        return -1

    if not regex:
        return 0, 0
    if regex[:1] == b"^":
        regex = regex[1:]
        found = match_here(0, 0) if regex else 0
        return (0, found) if found >= 0 else (-1, 0)
    for start in range(len(text) + 1):
        found = match_here(0, start)
        if found >= 0:
            return start, found
    return -1, 0


@dataclass(frozen=True)
class WapicCommand(Command):
    """A command with Wapic's semantics where they differ from gpu_text's: ``%t``/``%m`` use
    Wapic's regular expressions on bytes, and an uppercase command lowercases its *output*, ASCII
    letters only.

    >>> WapicCommand("m", True, False, 0, 0, "\\\\d*").transform("AB12c")
    ''
    >>> WapicCommand("t", False, False, 0, 0, "^A").transform("AB"), WapicCommand("x", True, False, 0, 0).transform("ÉA")
    ('true', 'Éa')
    """

    def transform(self, value: str) -> str:
        """The command's output for one token value (see the class example)."""
        if self.kind == "x":
            out = value
        else:
            raw = value.encode("utf-8", "surrogatepass")
            start, length = _wapic_match((self.regex or "").encode("utf-8", "surrogatepass"), raw)
            if self.kind == "t":
                out = "false" if start < 0 else "true"
            else:
                out = "" if start < 0 else raw[start:start + length].decode("utf-8", "replace")
        return out.translate(_ASCII_LOWER) if self.lower else out


def parse_wapic_pattern(source: str) -> tuple[Pattern | None, str | None]:
    """A Wapic pattern line as a gpu_text :class:`Pattern` with Wapic's semantics, or (None, why)
    for one that Wapic keeps but that never yields an observation; a ``ValueError`` for one that
    Wapic cannot read. ``[@k,c]`` counts from 1 in Wapic (``@0`` is always before the sentence).

    >>> p, _ = parse_wapic_pattern("u05:%x[-1,0]/%x[@2,0]")
    >>> p.text, p.literals, p.commands[1].offset
    ('u05:%x[-1,0]/%x[@1,0]', ('u05:', '/', ''), 1)
    """
    if not source or source[0] not in "ub*":
        return None, "it does not start with u, b or * (Wapic gives it no feature)"
    literals, commands, text, pos = [""], [], [], 0
    command_re = re.compile(r'%([xXtTmM])\[(@?)\s*([-+]?[0-9]{1,9}),\s*\+?([0-9]{1,9})')
    while pos < len(source):
        if source[pos] != "%":
            end = source.find("%", pos)
            end = len(source) if end < 0 else end
            literals[-1] += source[pos:end]
            text.append(source[pos:end])
            pos = end
            continue
        found = command_re.match(source, pos)
        if not found:
            raise ValueError(f"{source!r}: malformed command at character {pos}")
        letter, at, offset, column = found.groups()
        kind, end, regex = letter.lower(), found.end(), None
        if kind in "tm":
            if source[end:end + 2] != ',"':
                raise ValueError(f"{source!r}: %{letter} needs ,\"regex\" at character {end}")
            end, chars = end + 2, []
            while end < len(source) and source[end] != '"':
                step = 2 if source[end] == "\\" and end + 1 < len(source) else 1
                chars.append(source[end + step - 1])  # Wapic keeps the character after a backslash
                end += step
            regex, end = "".join(chars), end + 1
        if end >= len(source) + 1 or source[end:end + 1] not in ("]", ""):
            raise ValueError(f"{source!r}: expected ']' at character {end}")
        pos = end + 1
        offset, col = int(offset), int(column)
        if at and offset == 0:  # before the sentence at every token: a constant, so literal text
            literals[-1] += WapicCommand(kind, letter.isupper(), False, 0, 0, regex).transform("_x-1")
            continue
        if at and offset > 0:
            offset -= 1
        plain = kind == "x" and not letter.isupper()
        commands.append((Command if plain else WapicCommand)(kind, letter.isupper(), bool(at), offset, col, regex))
        literals.append("")
        text.append(f"%{letter}[{'@' if at else ''}{offset},{col}" + (f',"{regex}"]' if regex is not None else "]"))
    return Pattern("".join(text), source[0], tuple(literals), tuple(commands)), None
