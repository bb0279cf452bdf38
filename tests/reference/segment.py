"""Reference twins of ``cuda/segment.cu``: DictCut's pre-split and lattice, plain Python."""
from __future__ import annotations

import math
import re

import numpy as np

from tests.reference.utf8 import char_class, decode_string

SPACE, DIGIT, ALPHA, HAN, OTHER = 1, 2, 3, 4, 0


JIEBA_BLOCK = re.compile("[\u4E00-\u9FD5a-zA-Z0-9+#&._%-]")  # jieba's re_han_default, one character


def jieba_tokens_of(raw: bytes) -> list[tuple[int, int, bool]]:
    """jieba's split: block runs (to the lattice), str.isspace characters dropped, others alone."""
    chars = decode_string(raw)
    ends = [at for _, at in chars[1:]] + [len(raw)]
    tokens: list[list] = []
    previous_block = False
    for (cp, at), end in zip(chars, ends):
        block = bool(JIEBA_BLOCK.match(chr(cp)))
        if chr(cp).isspace():
            pass
        elif block and previous_block:
            tokens[-1][1] = end
        else:
            tokens.append([at, end, block])
        previous_block = block and not chr(cp).isspace()
    return [tuple(t) for t in tokens]


def tokens_of(raw: bytes, jieba: bool = False) -> list[tuple[int, int, bool]]:
    """(start, end, is_han) of every token of one string, byte offsets within it."""
    if jieba:
        return jieba_tokens_of(raw)
    chars = [(cp, at, char_class(cp)) for cp, at in decode_string(raw)]
    ends = [at for _, at, _ in chars[1:]] + [len(raw)]
    tokens: list[list] = []
    for k, (cp, at, cls) in enumerate(chars):
        if cls == SPACE:
            continue
        prev = chars[k - 1][2] if k > 0 else None
        nxt = chars[k + 1][2] if k + 1 < len(chars) else None
        apostrophe_inside = cp == 0x27 and prev == ALPHA and nxt == ALPHA
        after_apostrophe = cls == ALPHA and k >= 2 and chars[k - 1][0] == 0x27 and chars[k - 2][2] == ALPHA
        joins = k > 0 and (apostrophe_inside or after_apostrophe or (cls != OTHER and prev == cls))
        if joins:
            tokens[-1][1] = ends[k]
        else:
            tokens.append([at, ends[k], cls == HAN])
    return [tuple(t) for t in tokens]


def presplit(data: np.ndarray, offsets: np.ndarray, jieba_mode: bool = False):
    raw = bytes(data)
    starts, ends, han, rows = [], [], [], [0]
    for s in range(len(offsets) - 1):
        base = int(offsets[s])
        for a, b, is_han in tokens_of(raw[base:int(offsets[s + 1])], bool(jieba_mode)):
            starts.append(base + a)
            ends.append(base + b)
            han.append(int(is_han))
        rows.append(len(starts))
    return (np.array(starts, np.int64), np.array(ends, np.int64), np.array(han, np.uint8), np.array(rows, np.int64))


def solve(raw: bytes, begin: int, end: int, edges: list[tuple[int, int, int]], weights, unknown: float,
          tail: float, jieba: bool, removed: tuple[int, int] | None = None) -> tuple[list[tuple[int, int]], float]:
    """(end, value) of each word on the best path of raw[begin:end], and the path's score;
    `removed` = (start, end) is an edge left out of the lattice."""
    starts = [begin + at for _, at in decode_string(raw[begin:end])]
    char_end = dict(zip(starts, starts[1:] + [end]))
    route = {end: (tail, None, None)}
    for p in reversed(starts):
        dict_edges = [(q, v) for a, q, v in edges if a == p and weights[v] != -math.inf and (p, q) != removed]
        candidates = sorted(dict_edges)
        fallback = (not dict_edges) if jieba else all(q != char_end[p] for q, _ in dict_edges)
        if fallback and (p, char_end[p]) != removed:
            candidates.insert(0, (char_end[p], -1))
        best = None
        for q, v in candidates:
            w = unknown if v == -1 else weights[v]
            score = w + route[q][0] if q in route else -math.inf
            if best is None or (score >= best[0] if jieba else score > best[0]):
                best = (score, q, v)
        route[p] = best if best is not None else (-math.inf, None, None)
    if route[begin][0] == -math.inf:
        return [], -math.inf  # no path (only when `removed` cuts the last way on)
    words, p = [], begin
    while p < end:
        _, q, v = route[p]
        words.append((q, v))
        p = q
    return words, route[begin][0]


def viterbi_segment(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
                    unknown_weight, tail_score, jieba_mode):
    raw = bytes(data)
    word_ends, word_values, offsets = [], [], [0]
    for s in range(len(span_starts)):
        lo, hi = int(span_edge_offsets[s]), int(span_edge_offsets[s + 1])
        edges = list(zip(edge_starts[lo:hi].tolist(), edge_ends[lo:hi].tolist(), edge_values[lo:hi].tolist()))
        words, _ = solve(raw, int(span_starts[s]), int(span_ends[s]), edges, weights.tolist(), float(unknown_weight),
                         float(tail_score), bool(jieba_mode))
        for q, v in words:
            word_ends.append(q)
            word_values.append(v)
        offsets.append(len(word_ends))
    return np.array(word_ends, np.int64), np.array(word_values, np.int32), np.array(offsets, np.int64)


def viterbi_loss(data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
                 unknown_weight, tail_score, jieba_mode, job_spans, job_starts, job_ends):
    raw = bytes(data)
    losses = []
    for s, a, b in zip(job_spans.tolist(), job_starts.tolist(), job_ends.tolist()):
        lo, hi = int(span_edge_offsets[s]), int(span_edge_offsets[s + 1])
        edges = list(zip(edge_starts[lo:hi].tolist(), edge_ends[lo:hi].tolist(), edge_values[lo:hi].tolist()))
        args = (raw, int(span_starts[s]), int(span_ends[s]), edges, weights.tolist(), float(unknown_weight),
                float(tail_score), bool(jieba_mode))
        losses.append(solve(*args)[1] - solve(*args, removed=(a, b))[1])
    return np.array(losses, np.float64)


def _trie_words_at(trie: tuple[list, list, list, list], raw: bytes, p: int, limit: int) -> list[tuple[int, int]]:
    """(end, value) of every dictionary word raw[p:end) with end <= limit, shortest first: a plain
    walk of the double array (the layout of cuda/double_array.cuh)."""
    state, check, _, eow = trie
    size = len(state)
    pos, found = 0, []
    for i in range(p, limit):
        nxt = pos ^ state[pos] ^ raw[i]
        if raw[i] == 0 or not 0 <= nxt < size or check[nxt] != pos + 1:
            break
        pos = nxt
        slot = pos ^ state[pos]
        if eow[pos] and 0 <= slot < size and check[slot] == pos + 1:
            found.append((i + 1, state[slot]))
    return found


def segment_rows(state, check, label, eow, data, offsets, weights, unknown_weight, tail_score, jieba_mode):
    """Every row's words: its tokens, each lattice run solved with the trie's words as edges, and
    in jieba mode consecutive one-byte ASCII letter/digit words of a run joined (id -1 when more
    than one). (starts, ends relative to the row, ids, row offsets)."""
    trie = tuple(np.asarray(a).tolist() for a in (state, check, label, eow))
    raw_all = bytes(data)
    weights = np.asarray(weights).tolist()
    starts, ends, ids, rows = [], [], [], [0]
    for r in range(len(offsets) - 1):
        raw = raw_all[int(offsets[r]):int(offsets[r + 1])]
        for a, b, in_run in tokens_of(raw, bool(jieba_mode)):
            if not in_run:
                starts.append(a), ends.append(b), ids.append(-1)
                continue
            edges = [(a + at, q, v) for _, at in decode_string(raw[a:b])
                     for q, v in _trie_words_at(trie, raw, a + at, b)]
            words, _ = solve(raw, a, b, edges, weights, float(unknown_weight), float(tail_score), bool(jieba_mode))
            p, joining = a, False
            for q, v in words:
                single = bool(jieba_mode) and q - p == 1 and chr(raw[p]).isascii() and chr(raw[p]).isalnum()
                if single and joining:
                    ends[-1], ids[-1] = q, -1
                else:
                    starts.append(p), ends.append(q), ids.append(v)
                joining, p = single, q
        rows.append(len(starts))
    return (np.array(starts, np.int64), np.array(ends, np.int64), np.array(ids, np.int32), np.array(rows, np.int64))
