"""The sections of a Wapic ``.wac`` file (layout in :mod:`gpu_text.crf.wapic_model`) read with
array operations: headers, text and binary strings, hexfloat / decimal / binary weights, each
malformed part a ``ValueError`` naming the file and line. :mod:`gpu_text.crf.wapic_model` turns
them into a CRF.
"""
from __future__ import annotations

import re

import numpy as np

_HEADER = {"patterns": re.compile(rb"#Patterns#([0-9]{1,9})#([0-9]{1,9})\r?"),
           "trie": re.compile(rb"#Trie(Bin)?#([0-9]{1,12})\r?"),
           "model": re.compile(rb"#Model(Bin32|Bin)?#([0-9]{1,12})\r?")}


class WapicFile:
    """The bytes of a model file and a cursor; errors name the file and the line.

    >>> f = WapicFile("m.wac", b"#Patterns#1#1\\n11:u02:%x[0,0],\\n")
    >>> f.header("patterns", "patterns").groups(), f.error(f.pos, "bad").args[0]
    ((b'1', b'1'), 'm.wac line 2: bad')
    """

    def __init__(self, path: str, raw: bytes) -> None:
        self.path, self.raw, self.pos = path, raw, 0
        self.bytes = np.frombuffer(raw, np.uint8)

    def error(self, pos: int, message: str) -> ValueError:
        line = self.raw.count(b"\n", 0, min(pos, len(self.raw))) + 1
        return ValueError(f"{self.path} line {line}: {message}")

    def header(self, kind: str, what: str) -> re.Match:
        end = self.raw.find(b"\n", self.pos)
        end = len(self.raw) if end < 0 else end
        found = _HEADER[kind].fullmatch(self.raw, self.pos, end)
        if not found:
            seen = self.raw[self.pos:min(end, self.pos + 40)].decode("utf-8", "replace")
            shown = "the end of the file (truncated)" if self.pos >= len(self.raw) else repr(seen)
            raise self.error(self.pos, f"expected the {what} header, found {shown}")
        self.pos = end + 1
        return found

    def text_strings(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Start and length (in the file) of ``count`` text strings ``<n>:<bytes>,``; one per line
        is checked with array operations, anything else is read one string at a time."""
        data, pos = self.bytes, self.pos
        newlines = np.flatnonzero(data[pos:] == 10)[:count] + pos
        if newlines.size == count and count:
            begins = np.concatenate([[pos], newlines[:-1] + 1])
            ends = newlines - (data[np.maximum(newlines - 1, 0)] == 13)
            window = np.zeros((count, 11), np.uint8)
            for j in range(11):  # the length field, at most 10 digits
                inside = begins + j < ends
                window[inside, j] = data[(begins + j)[inside]]
            digits = (window >= 48) & (window <= 57)
            n_digits = np.argmin(np.concatenate([digits, np.zeros((count, 1), bool)], axis=1), axis=1)
            weights = 10 ** np.arange(10, -1, -1, dtype=np.int64)
            value = ((window.astype(np.int64) - 48) * digits * weights).sum(axis=1) // 10 ** (11 - n_digits)
            colon = np.minimum(begins + n_digits, len(data) - 1)
            last = np.maximum(ends - 1, 0)
            good = ((n_digits > 0) & (n_digits < 11) & (data[colon] == 58) & (ends - begins == n_digits + 2 + value)
                    & (data[last] == 44))
            if good.all():
                self.pos = int(newlines[-1]) + 1
                return begins + n_digits + 1, value
        starts, lengths = np.empty(count, np.int64), np.empty(count, np.int64)
        raw = self.raw
        for i in range(count):
            while pos < len(raw) and raw[pos] in b" \t\r\n\f\v":  # Wapic reads the length with >>
                pos += 1
            colon = raw.find(b":", pos, pos + 12)
            if colon <= pos or not raw[pos:colon].isdigit():
                raise self.error(pos, f"string {i + 1} of {count}: expected '<length>:'"
                                      + (" (the file ends: truncated)" if pos >= len(raw) else ""))
            n = int(raw[pos:colon])
            if raw[colon + 1 + n:colon + 2 + n] != b",":
                raise self.error(pos, f"string {i + 1} of {count}: {n} bytes then ',' expected (truncated or "
                                      "damaged)")
            starts[i], lengths[i] = colon + 1, n
            pos = colon + 2 + n
            pos += raw[pos:pos + 1] == b"\r"
            pos += raw[pos:pos + 1] == b"\n"
        self.pos = pos
        return starts, lengths

    def binary_strings(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Start and length of ``count`` strings with uint16 lengths (sequential: each length says
        where the next string starts)."""
        raw, pos, size = self.raw, self.pos, len(self.raw)
        starts = [0] * count
        for i in range(count):
            starts[i] = pos
            pos += 2 + (raw[pos] | raw[pos + 1] << 8) if pos + 1 < size else 2
        if pos > size:
            raise self.error(size, f"the {count} binary strings run past the end of the file (truncated)")
        self.pos = pos
        begins = np.array(starts, np.int64)
        return begins + 2, self.bytes[begins].astype(np.int64) | self.bytes[begins + 1].astype(np.int64) << 8

    def strings(self, what: str) -> tuple[np.ndarray, np.ndarray]:
        found = self.header("trie", f"'#Trie#<count>' ({what})")
        count = int(found.group(2))
        return (self.binary_strings if found.group(1) else self.text_strings)(count)

    def decoded(self, starts: np.ndarray, lengths: np.ndarray, what: str) -> list[str]:
        out = []
        for start, length in zip(starts.tolist(), lengths.tolist()):
            try:
                out.append(self.raw[start:start + length].decode("utf-8"))
            except UnicodeDecodeError:
                raise self.error(start, f"a {what} is not UTF-8") from None
        return out

    def weights(self, n_features: int) -> np.ndarray:
        """The weight vector of the ``#Model…`` section."""
        found = self.header("model", "'#Model#<count>' weights")
        count, kind, start = int(found.group(2)), found.group(1), self.pos
        if kind:
            width = 4 if kind == b"Bin32" else 8
            index, values = self._binary_weights(count, width)
        else:
            index, values = self._text_weights(count)
        if index.size and (index.min() < 0 or index.max() >= n_features):
            bad = int(index[(index < 0) | (index >= n_features)][0])
            raise self.error(start, f"weight index {bad} is out of range (the model has {n_features} weights)")
        if not np.isfinite(values).all():
            raise self.error(start, "a weight is not a finite number")
        rest = self.raw[self.pos:].strip()
        if rest:
            raise self.error(self.pos, f"unexpected content after the {count} announced weights (wrong count?)")
        theta = np.zeros(n_features)
        if index.size > 1 and not (np.diff(index) > 0).all():
            last = np.unique(index[::-1], return_index=True)[1]  # a repeated index: the last one wins, as in Wapic
            index, values = index[::-1][last], values[::-1][last]
        theta[index] = values
        return theta

    def _binary_weights(self, count: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        data, pos, stride = self.bytes, self.pos, width + 1
        dtype = np.dtype("<f4" if width == 4 else "<f8")
        end = pos + count * stride
        if end <= len(data) and (data[pos:end:stride] < 128).all():  # every index delta in one byte
            records = data[pos:end].reshape(count, stride)
            deltas = records[:, 0].astype(np.int64)
            values = records[:, 1:].copy().view(dtype).ravel().astype(np.float64)
            self.pos = end
        else:
            deltas, values = np.empty(count, np.int64), np.empty(count)
            raw = self.raw
            for i in range(count):
                delta, shift = 0, 0
                while True:
                    if pos >= len(raw) or shift > 63:
                        raise self.error(pos, f"weight {i + 1} of {count}: truncated or bad index delta")
                    byte = raw[pos]
                    delta |= (byte & 127) << shift
                    pos, shift = pos + 1, shift + 7
                    if byte < 128:
                        break
                if pos + width > len(raw):
                    raise self.error(pos, f"weight {i + 1} of {count}: the file ends (truncated)")
                deltas[i] = delta
                values[i] = np.frombuffer(raw, dtype, 1, pos)[0]
                pos += width
            self.pos = pos
        return np.cumsum(deltas) - 1, values

    def _text_weights(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``<index>=<hexfloat>`` lines, parsed with array operations; a line they cannot read is
        read alone, as C++'s ``std::stod`` would (a decimal too), and is an error if that fails."""
        data, pos = self.bytes, self.pos
        ends = np.flatnonzero(data[pos:] == 10)[:count] + pos
        if ends.size < count:  # the last line may lack its newline
            ends = np.append(ends, len(data)) if ends.size == count - 1 and pos < len(data) else ends
        begins = np.concatenate([[pos], ends[:-1] + 1])[:ends.size]
        stops = ends - (data[np.maximum(ends - 1, 0)] == 13)  # CRLF
        empty = np.flatnonzero(stops <= begins)
        if ends.size < count or empty.size:
            missing = int(empty[0]) if empty.size else ends.size
            raise self.error(int(begins[missing]) if missing < begins.size else len(data),
                             f"'#Model#{count}' announces {count} weights, the file has {missing} (truncated)")
        self.pos = int(ends[-1]) + 1 if count else pos
        equals = _first_at(data, 61, begins, stops)  # "="
        index, ok = _decimal(data, begins, equals)
        values, good = _hexfloat(data, equals + 1, stops)
        for i in np.flatnonzero(~(ok & good)).tolist():
            line = self.raw[begins[i]:stops[i]]
            head, _, tail = line.strip().partition(b"=")
            value = _weight(tail.strip())
            if not head.isdigit() or value is None:
                raise self.error(int(begins[i]), f"expected '<index>=<hexfloat weight>', found "
                                                 f"{line[:40].decode('utf-8', 'replace')!r}")
            index[i], values[i] = int(head), value
        return index, values


def _first_at(data: np.ndarray, byte: int, begins: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Position of the first ``byte`` in each range (``stops`` where there is none)."""
    marks = np.flatnonzero(data == byte)
    first = np.searchsorted(marks, begins)
    found = marks[np.minimum(first, marks.size - 1)] if marks.size else stops
    return np.where(found < stops, found, stops)


def _decimal(data: np.ndarray, begins: np.ndarray, stops: np.ndarray, width: int = 18
             ) -> tuple[np.ndarray, np.ndarray]:
    """The unsigned decimal number in each range, and whether it is one (1 to ``width`` digits)."""
    value, ok = np.zeros(begins.size, np.int64), (stops > begins) & (stops - begins <= width)
    for j in range(min(width, int((stops - begins).max(initial=0)))):
        inside = begins + j < stops
        digit = data[np.minimum(begins + j, data.size - 1)].astype(np.int64) - 48
        ok &= ~inside | ((digit >= 0) & (digit <= 9))
        value = np.where(inside, value * 10 + digit, value)
    return value, ok


_HEX_DIGIT = np.full(256, -1, np.int64)
_HEX_DIGIT[list(b"0123456789")] = range(10)
_HEX_DIGIT[list(b"abcdef")] = range(10, 16)
_HEX_DIGIT[list(b"ABCDEF")] = range(10, 16)


def _hexfloat(data: np.ndarray, begins: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's ``[-]0xH.HHHp[+-]D`` numbers in each range, and whether each is one that converts
    exactly here (at most 53 significant bits); the others are read one by one."""
    last = data.size - 1
    negative = data[np.minimum(begins, last)] == 45
    start = begins + (negative | (data[np.minimum(begins, last)] == 43))
    ok = (data[np.minimum(start, last)] == 48) & np.isin(data[np.minimum(start + 1, last)], (120, 88))
    power = _first_at(data, 112, start, stops)  # "p"
    dot = _first_at(data, 46, start + 2, power)
    ok &= (power < stops) & (power - start - 2 - (dot < power) >= 1) & (power - start - 2 - (dot < power) <= 14)
    mantissa = np.zeros(begins.size, np.int64)
    for j in range(min(15, int((power - start - 2).max(initial=0)))):
        at = start + 2 + j
        inside = (at < power) & (at != dot)
        digit = _HEX_DIGIT[data[np.minimum(at, last)]]
        ok &= ~inside | (digit >= 0)
        mantissa = np.where(inside & ok, mantissa * 16 + digit, mantissa)
    sign = data[np.minimum(power + 1, last)]
    signed = np.isin(sign, (43, 45))
    exponent, exponent_ok = _decimal(data, power + 1 + signed, stops, width=5)
    ok &= exponent_ok & (mantissa <= 1 << 53)
    fraction = np.where(dot < power, power - dot - 1, 0)
    with np.errstate(over="ignore"):  # too large: inf, refused with the other non-finite weights
        values = np.ldexp(mantissa.astype(np.float64), np.where(sign == 45, -exponent, exponent) - 4 * fraction)
    return np.where(negative, -values, values), ok


def _weight(text: bytes) -> float | None:
    """A weight as C++'s ``std::stod`` reads it (hexfloat or decimal), or None."""
    try:
        word = text.decode("ascii")
        return float.fromhex(word) if "x" in word.lower() else float(word)
    except (ValueError, UnicodeDecodeError):
        return None
