"""Input batches for the UTF-8 differential tests: random, adversarial, boundary-straddling, real."""
from __future__ import annotations

import numpy as np

from gpu_text.batch import TextBatch

# Malformed and edge-case sequences (each one is also glued to its neighbours in a long string).
ADVERSARIAL = [
    b"", b"A", b"\x00", b"\x7f", b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc2\x80", b"\xdf\xbf",
    b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
    b"\xee\x80\x80", b"\xef\xbf\xbd", b"\xef\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80",
    b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xfe", b"\xff",
    b"\xe4\xbd", b"\xe4", b"\xf0\x9f\x98", b"\xe4\xbd\xe4\xbd\xa0", b"\x80\x80\x80\x80\x80", b"\xc3(", b"\xe2\x28\xa1",
    b"\xf0\x28\x8c\xbc", b"\xf0\x9f\x98\x80\x80", "A你😀".encode(), "naïve café — 日本語 🎉".encode(),
    b"\xe4\xbd\xa0\xe5", b"\xa0\xe5\xa5\xbd",
]


def random_strings(rng: np.random.Generator, count: int) -> list[bytes]:
    """Strings mixing uniform random bytes, valid characters of every length and stray UTF-8 pieces."""
    pieces = [b"a", b" ", "é".encode(), "你".encode(), "😀".encode(), b"\x80", b"\xe4\xbd", b"\xc0", b"\xff",
              b"\xed\xa0\x80", b"\xf4\x90\x80\x80", "\uffff".encode(), b"\xef\xbf\xbd"]
    out = []
    for _ in range(count):
        length = int(rng.choice([0, 1, 2, 3, 5, 8, 16, 31, 64, 200], p=[.05, .1, .1, .1, .15, .15, .15, .1, .07, .03]))
        if rng.random() < 0.4:
            out.append(rng.integers(0, 256, length, dtype=np.uint8).tobytes())
        else:
            out.append(b"".join(pieces[k] for k in rng.integers(0, len(pieces), length)))
    return out


def straddling_strings() -> list[bytes]:
    """Multi-byte and malformed characters across thread (16 B) and tile (4096 B) boundaries."""
    out = []
    for pad in range(0, 18):
        out.append(b"x" * pad + "你😀é".encode() * 3 + b"\xe4\xbd" + b"y")
    for cut in (4093, 4094, 4095, 4096, 4097):
        out.append(b"a" * cut + "😀".encode() + b"b")
    out.append("你".encode() * 5000)  # one string of 15,000 bytes: characters straddle every tile
    out.append(b"\xf0\x9f\x98" * 3000)
    return out


def batch_of(strings: list[bytes]) -> TextBatch:
    return TextBatch.from_strings(strings)
