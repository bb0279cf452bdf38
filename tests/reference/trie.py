"""Reference twins of ``cuda/trie.cu``: plain Python over a ``{word: value}`` dict.

The dict is read back from the trie arrays by following parent links (``check``) up from every
value slot and spelling the ``label`` bytes, so no transition (``state``) is ever computed here;
character starts come from the reference UTF-8 decoder.
"""
from __future__ import annotations

import numpy as np

from tests.reference.utf8 import decode_string


def words_of(state: np.ndarray, check: np.ndarray, label: np.ndarray, eow: np.ndarray) -> dict[bytes, int]:
    """Every word of the trie and its value."""
    check_, label_, state_ = check.tolist(), label.tolist(), state.tolist()
    words = {}
    for slot, parent in enumerate(check_):
        if parent == 0 or label_[slot] != 0:  # free slot, root or an edge with a byte
            continue
        node = parent - 1
        assert eow[node], f"value slot {slot} hangs below slot {node}, which is not marked end-of-word"
        spelled = bytearray()
        while node != 0:
            spelled.append(label_[node])
            node = check_[node] - 1
        words[bytes(reversed(spelled))] = state_[slot]
    return words


def trie_prefix_search(state, check, label, eow, data, span_starts, span_ends):
    words = words_of(state, check, label, eow)
    longest = max(map(len, words), default=0)
    prefixes = {w[:n] for w in words for n in range(1, len(w) + 1)}
    raw = bytes(data)
    starts, ends, values, offsets = [], [], [], [0]
    for begin, end in zip(span_starts.tolist(), span_ends.tolist()):
        for _, at in decode_string(raw[begin:end]):
            for stop in range(begin + at + 1, min(end, begin + at + longest) + 1):
                if raw[begin + at:stop] not in prefixes:  # no longer word either
                    break
                value = words.get(raw[begin + at:stop])
                if value is not None:
                    starts.append(begin + at)
                    ends.append(stop)
                    values.append(value)
        offsets.append(len(starts))
    return (np.array(starts, np.int64), np.array(ends, np.int64), np.array(values, np.int32),
            np.array(offsets, np.int64))


def _strings(data: np.ndarray, offsets: np.ndarray) -> list[bytes]:
    raw = bytes(data)
    return [raw[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


def trie_lookup(state, check, label, eow, data, offsets):
    words = words_of(state, check, label, eow)
    return np.array([words.get(s, -1) for s in _strings(data, offsets)], np.int32)


def trie_longest_prefix(state, check, label, eow, data, offsets):
    words = words_of(state, check, label, eow)
    lengths, values = [], []
    for s in _strings(data, offsets):
        best = max((n for n in range(1, len(s) + 1) if s[:n] in words), default=0)
        lengths.append(best)
        values.append(words[s[:best]] if best else -1)
    return np.array(lengths, np.int64), np.array(values, np.int32)
