"""Slow, obvious reference of ``cuda/lattice_tokens.cu`` and ``cpu_fallback/lattice_tokens.py``:
a lattice model's ids for every normalized row.

Each row is split into spans (the row itself, or its pre-tokens: a pre-token starts at every
marked byte and runs to the next one); each span's best path comes from the reference prefix
search and Viterbi; then every token of the path, span by span, becomes ids: an edge its piece id;
a fallback character (value -1) the piece it spells (``finish`` 0, BytePiece, else its bytes),
its bytes' ``byte_ids`` (``finish`` 2), or, with ``finish`` 1 (Unigram), the unknown id, one for
a whole run of them spanning the run.
"""
from __future__ import annotations

import numpy as np

from tests.reference.lattice import lattice_viterbi
from tests.reference.trie import trie_prefix_search, words_of


def lattice_encode(data, offsets, marks, trie, weights, fallback_weight, max_edges_per_start, mode, finish, unk_id,
                   byte_ids, lookup):
    raw = bytes(np.asarray(data, np.uint8))
    offsets = [int(x) for x in offsets]
    spelled = words_of(*lookup)
    ids, starts, ends, row_offsets = [], [], [], [0]
    for begin, end in zip(offsets, offsets[1:]):
        if marks is None:
            cuts = [begin, end] if end > begin else [begin]
        else:
            cuts = [p for p in range(begin, end) if marks[p]] + [end]
        spans = list(zip(cuts, cuts[1:]))
        edges = trie_prefix_search(*trie, np.frombuffer(raw, np.uint8), np.array([a for a, _ in spans], np.int64),
                                   np.array([b for _, b in spans], np.int64))
        t_starts, t_ends, t_values, t_offsets = lattice_viterbi(
            np.frombuffer(raw, np.uint8), [a for a, _ in spans], [b for _, b in spans], *edges, weights,
            fallback_weight, max_edges_per_start, mode)
        for s in range(len(spans)):
            previous_unknown = False
            for k in range(int(t_offsets[s]), int(t_offsets[s + 1])):
                a, b, v = int(t_starts[k]), int(t_ends[k]), int(t_values[k])
                if v < 0 and finish == 0:
                    v = spelled.get(raw[a:b], -1)
                if v >= 0:
                    ids.append(v)
                    starts.append(a)
                    ends.append(b)
                elif finish == 1 and previous_unknown:
                    ends[-1] = b  # the run's one unknown id reaches this token's end
                elif finish == 1:
                    ids.append(unk_id)
                    starts.append(a)
                    ends.append(b)
                else:
                    for p in range(a, b):
                        ids.append(int(byte_ids[raw[p]]))
                        starts.append(p)
                        ends.append(p + 1)
                previous_unknown = int(t_values[k]) < 0
        row_offsets.append(len(ids))
    return (np.array(ids, np.int32), np.array(starts, np.int64), np.array(ends, np.int64),
            np.array(row_offsets, np.int64))
