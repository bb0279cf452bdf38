"""Reference twin of ``cuda/normalizer.cu``: SentencePiece's normalizer loop in plain Python.

The charsmap is read back from the trie arrays as a ``{source: target}`` dict (no trie walks);
characters come from the reference UTF-8 decoder.
"""
from __future__ import annotations

import numpy as np

from tests.reference.trie import words_of
from tests.reference.utf8 import decode_string

REPLACEMENT = "\ufffd".encode()


def normalize_one(raw: bytes, charsmap: dict[bytes, bytes], symbol: bytes, collapse: bool, dummy: bool
                  ) -> tuple[bytes, list[int]]:
    """One string: (normalized bytes, original offset of each normalized byte + the end entry)."""
    longest = max(map(len, charsmap), default=0)
    starts = [at for _, at in decode_string(raw)] + [len(raw)]
    char_end = dict(zip(starts, starts[1:]))

    def step(i: int) -> tuple[int, bytes]:
        for n in range(min(longest, len(raw) - i), 0, -1):
            if raw[i:i + n] in charsmap:
                return n, charsmap[raw[i:i + n]]
        n = char_end[i] - i
        try:
            return n, raw[i:i + n].decode("utf-8").encode()
        except UnicodeDecodeError:
            return 1, REPLACEMENT

    i = 0
    if collapse:
        while i < len(raw) and step(i)[1] == b" ":
            i += step(i)[0]
    out, align = bytearray(), []
    if i == len(raw):
        return b"", [len(raw)]
    if dummy:
        out += symbol
        align += [0] * len(symbol)
    prev_space = collapse
    while i < len(raw):
        n, piece = step(i)
        if prev_space:
            piece = piece.lstrip(b" ")
        if piece:
            for b in piece:
                emitted = symbol if b == 0x20 else bytes([b])
                out += emitted
                align += [i] * len(emitted)
            prev_space = collapse and piece.endswith(b" ")
        i += n
    if collapse:
        while out.endswith(symbol):
            del out[-len(symbol):]
            del align[-len(symbol):]
    return bytes(out), align + [len(raw)]


def normalize_text(state, check, label, eow, targets, target_offsets, data, offsets, symbol, collapse, dummy,
                   aligned=1):
    table = bytes(targets)
    bounds = target_offsets.tolist()
    charsmap = {source: table[bounds[v]:bounds[v + 1]] for source, v in words_of(state, check, label, eow).items()}
    raw = bytes(data)
    out, lengths, align = [], [], []
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        text, where = normalize_one(raw[a:b], charsmap, bytes(symbol), bool(collapse), bool(dummy))
        out.append(text)
        lengths.append(len(text))
        align += where
    new_offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    return (np.frombuffer(b"".join(out), np.uint8).copy(), new_offsets,
            np.array(align, np.int64) if aligned else None)
