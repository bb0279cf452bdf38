"""Slow, obvious reference of BytePiece training's byte Viterbi and pruning (the seed's
BytePieceCounter), for the Numba helpers in ``cpu_fallback/bytepiece_trainer.py``."""
from __future__ import annotations

import math

STATES = 6  # the seed's max_piece_count_: n-grams of 1 to 6 bytes


def lead_length(byte: int) -> int:
    """Bytes of the character a lead byte starts (the seed's OneUTF8Size: by the high nibble)."""
    return (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)[byte >> 4]


def count_ngrams(words: list[bytes]) -> list[dict[bytes, int]]:
    """counts[n][gram] for n = 1..6 (counts[0][b""]: the number of byte positions)."""
    counts: list[dict[bytes, int]] = [dict() for _ in range(STATES + 1)]
    counts[0][b""] = 0
    for w in words:
        for i in range(len(w)):
            counts[0][b""] += 1
            for n in range(1, min(STATES, len(w) - i) + 1):
                gram = w[i:i + n]
                counts[n][gram] = counts[n].get(gram, 0) + 1
    return counts


def prune_ngrams(counts: list[dict[bytes, int]], min_count: int) -> list[dict[bytes, float]]:
    """The seed's PruneRaw: unseen bytes count 1, n > 1 needs ``min_count``, log counts become
    conditional log-probabilities ``log c(k) - log c(k[:-1])``."""
    counts = [dict(c) for c in counts]
    for b in range(256):
        if bytes([b]) not in counts[1]:
            counts[1][bytes([b])] = 1
            counts[0][b""] += 1
    logs = [{k: math.log(v) for k, v in c.items() if v >= (min_count if n > 1 else 0)} for n, c in enumerate(counts)]
    out: list[dict[bytes, float]] = [dict(logs[0])]
    for n in range(1, STATES + 1):
        out.append({k: v - logs[n - 1].get(k[:-1], 0.0) for k, v in logs[n].items()})
    return out


def byte_viterbi(text: bytes, table: list[dict[bytes, float]]) -> list[bytes]:
    """The seed's 6-state byte Viterbi (BytePieceCounter::Tokenize): pieces of one pre-token."""
    num = len(text)
    if num == 0:
        return []
    inf = math.inf
    pos = [0] * num
    i = 0
    while i < num:
        n = lead_length(text[i])
        for j in range(n):
            if i + j < num:
                pos[i + j] = j
        i += n
    nodes = [[-inf] * STATES for _ in range(num)]
    for j in range(STATES):
        for i in range(j, num):
            if j == 0 and pos[i] > 0:
                continue
            value = table[j + 1].get(text[i - j:i + 1])
            if value is not None:
                nodes[i][j] = value
    routes = [[0] * STATES for _ in range(max(num - 1, 0))]
    for i in range(1, num):
        for cur in range(STATES):
            if cur < pos[i]:
                continue
            best, best_prev = -inf, -1
            for prev in range(STATES):
                if prev < pos[i - 1]:
                    continue
                if not (cur == 0 or cur == prev + 1 or (prev == cur == STATES - 1)):
                    continue
                sliding = prev == cur == STATES - 1
                start = i - cur
                if not sliding and start > 0 and pos[start] > 0:
                    continue
                score = nodes[i - 1][prev] + nodes[i][cur]
                if score > best:
                    best, best_prev = score, prev
            if best_prev != -1:
                routes[i - 1][cur] = best_prev
                nodes[i][cur] = best
            else:
                nodes[i][cur] = -inf
    last, best = 0, -inf
    for j in range(STATES):
        if j >= pos[num - 1] and nodes[num - 1][j] > best:
            best, last = nodes[num - 1][j], j
    route = [0] * num
    state = last
    for p in range(num - 1, -1, -1):
        route[p] = state
        if p > 0:
            state = routes[p - 1][state]
    cuts = [0] + [p for p in range(1, num) if route[p] == 0 and pos[p] == 0] + [num]
    return [text[a:b] for a, b in zip(cuts, cuts[1:])]
