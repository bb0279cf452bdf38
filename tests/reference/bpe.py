"""Reference twin of ``cuda/bpe.cu``: BPE by repeatedly merging the best adjacent pair.

Quadratic and obvious: at every step scan all adjacent symbol pairs, keep those whose
concatenation is a piece, merge the one with the highest score (ties: the leftmost).
"""
from __future__ import annotations

import bisect

import numpy as np

from tests.reference.utf8 import decode_string


def encode_token(raw: bytes, pieces: dict[bytes, int], scores: list[float], byte_ids: list[int],
                 unk_id: int) -> list[tuple[int, int, int]]:
    """(id, start, end) of every output token of one pre-token; offsets within ``raw``."""
    bounds = [at for _, at in decode_string(raw)] + [len(raw)]
    symbols = [(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    while True:
        best = None
        for k in range(len(symbols) - 1):
            a, b = symbols[k][0], symbols[k + 1][1]
            pid = pieces.get(raw[a:b])
            if pid is not None and (best is None or scores[pid] > best[0]):
                best = (scores[pid], k)
        if best is None:
            break
        k = best[1]
        symbols[k:k + 2] = [(symbols[k][0], symbols[k + 1][1])]
    out = []
    previous_unknown = False
    for a, b in symbols:
        pid = pieces.get(raw[a:b])
        if pid is not None:
            out.append((pid, a, b))
        elif byte_ids[0] >= 0:
            out.extend((byte_ids[raw[i]], i, i + 1) for i in range(a, b))
        elif previous_unknown:
            out[-1] = (unk_id, out[-1][1], b)  # a run of unknown symbols is one unknown token
        else:
            out.append((unk_id, a, b))
        previous_unknown = pid is None and byte_ids[0] < 0
    return out


def bpe_encode(data, token_starts, token_ends, state, check, label, eow, scores, byte_ids, unk_id, tables=None):
    """Merges every pre-token whole by the pieces' bytes (the CPU twin's ``tables`` are not needed)."""
    from gpu_text.trie import DoubleArrayTrie

    trie = DoubleArrayTrie(state, check, label, eow)
    pieces = {word: value for word, value in trie.predictive(b"")}
    raw = bytes(data)
    ids, starts, ends, offsets = [], [], [], [0]
    for a, b in zip(token_starts.tolist(), token_ends.tolist()):
        for pid, s, e in encode_token(raw[a:b], pieces, np.asarray(scores).tolist(), np.asarray(byte_ids).tolist(),
                                      int(unk_id)):
            ids.append(pid)
            starts.append(a + s)
            ends.append(a + e)
        offsets.append(len(ids))
    return (np.array(ids, np.int32), np.array(starts, np.int64), np.array(ends, np.int64),
            np.array(offsets, np.int64))


def bpe_encode_rows(data, offsets, marks, state, check, label, eow, scores, byte_ids, unk_id, tables=None,
                    symbol_at=None):
    """Every text's pre-tokens (from each non-zero mark to the next) merged by :func:`bpe_encode`,
    except a user symbol's (``symbol_at`` non-zero at its start), which is its one id; the ids' row
    offsets counted text by text."""
    starts = [p for p in range(len(marks)) if marks[p]]
    ends = starts[1:] + [len(data)]
    is_symbol = [symbol_at is not None and int(symbol_at[a]) != 0 for a in starts]
    plain = [k for k, symbol in enumerate(is_symbol) if not symbol]
    merged = bpe_encode(data, np.array([starts[k] for k in plain], np.int64),
                        np.array([ends[k] for k in plain], np.int64), state, check, label, eow, scores, byte_ids,
                        unk_id, tables)
    merged_ids, merged_starts, merged_ends, merged_offsets = (a.tolist() for a in merged)
    ids, id_starts, id_ends, token_offsets = [], [], [], [0]
    j = 0  # the next merged pre-token
    for k, (a, b) in enumerate(zip(starts, ends)):
        if is_symbol[k]:
            ids.append(int(symbol_at[a]) >> 8)
            id_starts.append(a)
            id_ends.append(b)
        else:
            lo, hi = merged_offsets[j], merged_offsets[j + 1]
            j += 1
            ids += merged_ids[lo:hi]
            id_starts += merged_starts[lo:hi]
            id_ends += merged_ends[lo:hi]
        token_offsets.append(len(ids))
    rows = [token_offsets[bisect.bisect_left(starts, at)] for at in np.asarray(offsets).tolist()]
    return (np.array(ids, np.int32), np.array(id_starts, np.int64), np.array(id_ends, np.int64),
            np.array(rows, np.int64))
