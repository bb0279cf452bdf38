"""Numba helpers of the Unigram trainer (``gpu_text/tokenizer/unigram_trainer.py``). No CUDA twin: a
trainer helper; training runs on the host.

The corpus is the distinct pre-tokens laid out flat as character ids (``chars``, -1 for a character
outside the coverage), each pre-token ``tok_off[t]:tok_off[t + 1]`` seen ``tok_weight[t]`` times.
A *run* is a stretch of known characters inside one pre-token; ``run_end[p]`` is where the run of
position ``p`` ends (``p`` itself at an unknown character). No piece crosses a run's end.

- Seed pieces: the suffixes, sorted by their first ``cap`` characters (prefix doubling, the sort
  itself done by NumPy in the caller), their capped longest common prefixes (:func:`lcp_capped`),
  and the LCP intervals of that array (:func:`seed_nodes`): each interval is a substring that
  occurs at two or more positions and is followed by different characters (a suffix tree's inner
  node, SentencePiece's suffix-array candidates), each suffix a substring running to its run's
  end (a leaf: a pre-token seen often counts even when it is distinct once).
- The lattice: every occurrence of every seed piece, found once from the suffix array (an
  interval's positions are ``sa[lb:lb + count]``), stored per start position (:func:`build_edges`)
  and filtered as pieces die (:func:`compact_edges`), so no EM step searches for pieces again.
- :func:`e_step`, :func:`viterbi_counts`, :func:`prune_losses`: forward-backward expected counts,
  Viterbi piece counts and SentencePiece's pruning loss, over a block of pre-tokens (the caller
  runs blocks on threads: every function releases the GIL).

An unknown edge (one character, ``unk_score``) is added at a position where no live
one-character piece starts, as SentencePiece's lattice does.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .jit import JIT

NEG_INF = -np.inf


@njit(**JIT)
def run_ends(chars, tok_off):
    """Where the run of known characters holding each position ends (see the module docstring).

    >>> run_ends(np.array([0, 1, -1, 1, 0, 1], np.int32), np.array([0, 4, 6], np.int64)).tolist()  # "ab?b", "ab"
    [2, 2, 2, 4, 6, 6]
    """
    out = np.empty(chars.size, np.int64)
    for t in range(tok_off.size - 1):
        end = tok_off[t + 1]
        for p in range(tok_off[t + 1] - 1, tok_off[t] - 1, -1):
            if chars[p] < 0:
                end = p
            out[p] = end
    return out


@njit(**JIT)
def lcp_capped(chars, run_end, sa, cap):
    """``lcp[j]``: characters shared by the suffixes ``sa[j - 1]`` and ``sa[j]`` (each cut at its
    run's end), at most ``cap``; ``lcp[0] = lcp[n] = 0``.

    >>> chars = np.array([0, 1, 0, 1, 0, 1], np.int32)
    >>> ends = run_ends(chars, np.array([0, 4, 6], np.int64))
    >>> lcp_capped(chars, ends, np.array([4, 0, 2, 5, 1, 3]), 8).tolist()
    [0, 2, 2, 0, 1, 1, 0]
    """
    n = sa.size
    lcp = np.zeros(n + 1, np.int64)
    for j in range(1, n):
        a, b = sa[j - 1], sa[j]
        limit = min(cap, run_end[a] - a, run_end[b] - b)
        k = 0
        while k < limit and chars[a + k] == chars[b + k]:
            k += 1
        lcp[j] = k
    return lcp


@njit(**JIT)
def seed_nodes(sa, lcp, run_end, prefix_weight, max_len, min_freq, lb_out, count_out, depth_out, freq_out):
    """The seed candidates: every LCP interval (``lcp`` from :func:`lcp_capped`) and every suffix
    that no other shares whole, of 2 to ``max_len`` characters and weighted frequency at least
    ``min_freq`` (``prefix_weight[j]``: the pre-token counts of ``sa[:j]`` summed). Writes the
    interval's first suffix-array index, its size, its depth and its frequency; with empty outputs
    it only counts. Returns how many there are.

    >>> chars = np.array([0, 1, 0, 1, 0, 1], np.int32)
    >>> ends = run_ends(chars, np.array([0, 4, 6], np.int64))
    >>> sa = np.array([4, 0, 2, 5, 1, 3])
    >>> weight = np.cumsum(np.array([0, 3, 1, 1, 3, 1, 1]))   # "ab" seen 3 times, "abab" once
    >>> out = [np.zeros(4, np.int64) for _ in range(3)] + [np.zeros(4)]
    >>> n = seed_nodes(sa, lcp_capped(chars, ends, sa, 8), ends, weight, 8, 1, *out)
    >>> [(int(lb), int(c), int(d), float(f)) for lb, c, d, f in zip(*(a[:n] for a in out))]  # ab, abab, bab
    [(0, 3, 2, 5.0), (1, 1, 4, 1.0), (4, 1, 3, 1.0)]
    """
    n = sa.size
    fill = lb_out.size > 0
    found = 0
    stack_depth = np.zeros(n + 2, np.int64)
    stack_lb = np.zeros(n + 2, np.int64)
    top = 0
    for j in range(1, n + 1):
        current = lcp[j] if j < n else 0
        lb = j - 1
        while current < stack_depth[top]:
            depth = stack_depth[top]
            first = stack_lb[top]
            top -= 1
            freq = prefix_weight[j] - prefix_weight[first]
            if 2 <= depth <= max_len and freq >= min_freq:
                if fill:
                    lb_out[found], count_out[found], depth_out[found], freq_out[found] = first, j - first, depth, freq
                found += 1
            lb = first
        if current > stack_depth[top]:
            top += 1
            stack_depth[top] = current
            stack_lb[top] = lb
    for j in range(n):
        length = run_end[sa[j]] - sa[j]
        freq = prefix_weight[j + 1] - prefix_weight[j]
        if 2 <= length <= max_len and max(lcp[j], lcp[j + 1]) < length and freq >= min_freq:
            if fill:
                lb_out[found], count_out[found], depth_out[found], freq_out[found] = j, 1, length, freq
            found += 1
    return found


@njit(**JIT)
def build_edges(chars, sa, lb, count, depth, piece):
    """Every occurrence of every seed piece as a lattice edge, grouped by start position
    (``edge_off``, like CSR offsets), each group by length: the character piece first (piece id =
    the character id), then the candidates in the order given (the caller sorts them by depth).

    >>> chars = np.array([0, 1, 0, 1, 0, 1], np.int32)
    >>> off, length, pieces = build_edges(chars, np.array([4, 0, 2, 5, 1, 3]), np.array([0]), np.array([3]),
    ...                                   np.array([2]), np.array([2]))
    >>> off.tolist(), length.tolist(), pieces.tolist()
    ([0, 2, 3, 5, 6, 8, 9], [1, 2, 1, 1, 2, 1, 1, 2, 1], [0, 2, 1, 0, 2, 1, 0, 2, 1])
    """
    n = chars.size
    edge_off = np.zeros(n + 1, np.int64)
    for p in range(n):
        if chars[p] >= 0:
            edge_off[p + 1] += 1
    for k in range(lb.size):
        for j in range(lb[k], lb[k] + count[k]):
            edge_off[sa[j] + 1] += 1
    for p in range(n):
        edge_off[p + 1] += edge_off[p]
    cursor = edge_off[:-1].copy()
    edge_len = np.empty(edge_off[n], np.int16)
    edge_piece = np.empty(edge_off[n], np.int32)
    for p in range(n):
        if chars[p] >= 0:
            edge_len[cursor[p]] = 1
            edge_piece[cursor[p]] = chars[p]
            cursor[p] += 1
    for k in range(lb.size):
        for j in range(lb[k], lb[k] + count[k]):
            p = sa[j]
            edge_len[cursor[p]] = depth[k]
            edge_piece[cursor[p]] = piece[k]
            cursor[p] += 1
    return edge_off, edge_len, edge_piece


@njit(**JIT)
def compact_edges(edge_off, edge_len, edge_piece, new_id):
    """The edges whose piece lives on (``new_id[piece] >= 0``), renumbered to ``new_id``.

    >>> off, length, piece = compact_edges(np.array([0, 2, 3]), np.array([1, 2, 1], np.int16),
    ...                                    np.array([0, 2, 1], np.int32), np.array([0, -1, 1]))
    >>> off.tolist(), length.tolist(), piece.tolist()
    ([0, 2, 2], [1, 2], [0, 1])
    """
    n = edge_off.size - 1
    out_off = np.zeros(n + 1, np.int64)
    kept = 0
    for e in range(edge_off[n]):
        if new_id[edge_piece[e]] >= 0:
            kept += 1
    out_len = np.empty(kept, np.int16)
    out_piece = np.empty(kept, np.int32)
    at = 0
    for p in range(n):
        for e in range(edge_off[p], edge_off[p + 1]):
            i = new_id[edge_piece[e]]
            if i >= 0:
                out_len[at] = edge_len[e]
                out_piece[at] = i
                at += 1
        out_off[p + 1] = at
    return out_off, out_len, out_piece


@njit(**JIT)
def _log_add(a, b):
    if a < b:
        a, b = b, a
    if b == NEG_INF:
        return a
    return a + math.log1p(math.exp(b - a))


@njit(**JIT)
def _longest(tok_off, lo, hi):
    longest = 0
    for t in range(lo, hi):
        longest = max(longest, tok_off[t + 1] - tok_off[t])
    return longest


@njit(**JIT)
def e_step(tok_off, tok_weight, edge_off, edge_len, edge_piece, score, unk_score, lo, hi, expected):
    """Adds to ``expected[piece]`` each piece's expected count over the pre-tokens ``lo:hi``
    (forward-backward in log space, each pre-token's marginals times its count); returns the
    summed weighted log-likelihood of those pre-tokens. ``score[piece]`` is -inf for a dead piece.

    >>> off, length, piece = np.array([0, 2, 3]), np.array([1, 2, 1], np.int16), np.array([0, 2, 1], np.int32)
    >>> score = np.log(np.array([0.25, 0.25, 0.5]))
    >>> expected = np.zeros(3)
    >>> ll = e_step(np.array([0, 2]), np.array([4.0]), off, length, piece, score, -20.0, 0, 1, expected)
    >>> expected.round(3).tolist(), round(ll / 4, 4) == round(float(np.log(0.5 + 0.0625)), 4)
    ([0.444, 0.444, 3.556], True)
    """
    longest = _longest(tok_off, lo, hi)
    alpha = np.empty(longest + 1)
    beta = np.empty(longest + 1)
    total = 0.0
    for t in range(lo, hi):
        a = tok_off[t]
        n = tok_off[t + 1] - a
        w = tok_weight[t]
        if n == 0:
            continue
        alpha[:n + 1] = NEG_INF
        alpha[0] = 0.0
        for i in range(n):
            here = alpha[i]
            single = False
            for e in range(edge_off[a + i], edge_off[a + i + 1]):
                s = score[edge_piece[e]]
                if s == NEG_INF:
                    continue
                length = edge_len[e]
                single |= length == 1
                alpha[i + length] = _log_add(alpha[i + length], here + s)
            if not single:
                alpha[i + 1] = _log_add(alpha[i + 1], here + unk_score)
        z = alpha[n]
        total += w * z
        beta[n] = 0.0
        for i in range(n - 1, -1, -1):
            top = NEG_INF
            single = False
            for e in range(edge_off[a + i], edge_off[a + i + 1]):
                s = score[edge_piece[e]]
                if s == NEG_INF:
                    continue
                length = edge_len[e]
                single |= length == 1
                top = max(top, s + beta[i + length])
            if not single:
                top = max(top, unk_score + beta[i + 1])
            scale = w * math.exp(alpha[i] + top - z)
            mass = 0.0
            for e in range(edge_off[a + i], edge_off[a + i + 1]):
                s = score[edge_piece[e]]
                if s == NEG_INF:
                    continue
                v = math.exp(s + beta[i + edge_len[e]] - top)
                mass += v
                expected[edge_piece[e]] += scale * v
            if not single:
                mass += math.exp(unk_score + beta[i + 1] - top)
            beta[i] = top + math.log(mass)
    return total


@njit(**JIT)
def viterbi_counts(tok_off, tok_weight, edge_off, edge_len, edge_piece, score, unk_score, lo, hi, freq):
    """Adds each pre-token's count to ``freq[piece]`` for every piece on its best path (pre-tokens
    ``lo:hi``; equal scores: the path relaxed first); returns the number of tokens, counts included.

    >>> off, length, piece = np.array([0, 2, 3]), np.array([1, 2, 1], np.int16), np.array([0, 2, 1], np.int32)
    >>> freq = np.zeros(3)
    >>> viterbi_counts(np.array([0, 2]), np.array([4.0]), off, length, piece, np.log([.25, .25, .5]), -20.0, 0, 1, freq)
    4.0
    >>> freq.tolist()
    [0.0, 0.0, 4.0]
    """
    longest = _longest(tok_off, lo, hi)
    best = np.empty(longest + 1)
    back_len = np.zeros(longest + 1, np.int64)
    back_piece = np.zeros(longest + 1, np.int64)
    tokens = 0.0
    for t in range(lo, hi):
        a = tok_off[t]
        n = tok_off[t + 1] - a
        w = tok_weight[t]
        best[:n + 1] = NEG_INF
        best[0] = 0.0
        for i in range(n):
            here = best[i]
            single = False
            for e in range(edge_off[a + i], edge_off[a + i + 1]):
                s = score[edge_piece[e]]
                if s == NEG_INF:
                    continue
                length = edge_len[e]
                single |= length == 1
                if here + s > best[i + length]:
                    best[i + length] = here + s
                    back_len[i + length] = length
                    back_piece[i + length] = edge_piece[e]
            if not single and here + unk_score > best[i + 1]:
                best[i + 1] = here + unk_score
                back_len[i + 1] = 1
                back_piece[i + 1] = -1
        i = n
        while i > 0:
            if back_piece[i] >= 0:
                freq[back_piece[i]] += w
            tokens += w
            i -= back_len[i]
    return tokens


@njit(**JIT)
def prune_losses(piece_pos, piece_len, edge_off, edge_len, edge_piece, score, unk_score, freq, vsum, lo, hi, loss):
    """SentencePiece's pruning loss of the pieces ``lo:hi``: each piece's own text is segmented by
    the 2-best Viterbi (over the edges of one of its occurrences, ``piece_pos``); ``loss[i]`` is
    -inf when the piece may go (not on any best path: ``freq[i] == 0``, or its own best path
    splits it), +inf when it must stay (no second path: a single character), else the
    likelihood lost when its ``freq[i]`` Viterbi uses move to the second-best path's pieces.

    >>> off, length, piece = np.array([0, 2, 3]), np.array([1, 2, 1], np.int16), np.array([0, 2, 1], np.int32)
    >>> loss = np.zeros(3)
    >>> prune_losses(np.array([0, 1, 0]), np.array([1, 1, 2]), off, length, piece, np.log([.25, .25, .5]), -20.0,
    ...              np.array([1.0, 1.0, 4.0]), 5.0, 0, 3, loss)
    >>> loss.round(4).tolist()
    [inf, inf, 0.7847]
    """
    total = 0.0
    for i in range(freq.size):
        total += freq[i]
    log_total = math.log(total) if total > 0 else 0.0
    width = 0
    for i in range(lo, hi):
        width = max(width, piece_len[i])
    best = np.empty((width + 1, 2))
    back_start = np.zeros((width + 1, 2), np.int64)
    back_piece = np.zeros((width + 1, 2), np.int64)
    back_rank = np.zeros((width + 1, 2), np.int64)
    path = np.zeros(width + 1, np.int64)
    for i in range(lo, hi):
        if freq[i] == 0:
            loss[i] = NEG_INF
            continue
        a = piece_pos[i]
        n = piece_len[i]
        best[:n + 1, :] = NEG_INF
        best[0, 0] = 0.0
        for q in range(n):
            single = False
            for e in range(edge_off[a + q], edge_off[a + q + 1] + 1):
                if e < edge_off[a + q + 1]:
                    s = score[edge_piece[e]]
                    length = edge_len[e]
                    v = edge_piece[e]
                    if s == NEG_INF or q + length > n:
                        continue
                    single |= length == 1
                elif single:
                    continue
                else:
                    s, length, v = unk_score, 1, -1
                for r in range(2):
                    cand = best[q, r] + s
                    if cand == NEG_INF:
                        continue
                    end = q + length
                    if cand > best[end, 0]:
                        best[end, 1], back_start[end, 1] = best[end, 0], back_start[end, 0]
                        back_piece[end, 1], back_rank[end, 1] = back_piece[end, 0], back_rank[end, 0]
                        best[end, 0], back_start[end, 0], back_piece[end, 0], back_rank[end, 0] = cand, q, v, r
                    elif cand > best[end, 1]:
                        best[end, 1], back_start[end, 1], back_piece[end, 1], back_rank[end, 1] = cand, q, v, r
        if back_start[n, 0] != 0 or best[n, 0] == NEG_INF:  # its own best path splits it
            loss[i] = NEG_INF
            continue
        if best[n, 1] == NEG_INF:
            loss[i] = np.inf
            continue
        steps = 0
        q, r = n, 1
        while q > 0:
            path[steps] = back_piece[q, r]
            steps += 1
            q, r = back_start[q, r], back_rank[q, r]
        f = freq[i]
        log_alt_total = math.log(total + f * (steps - 1))
        alternative = 0.0
        for k in range(steps):
            other = freq[path[k]] if path[k] >= 0 else 0.0
            alternative += math.log(other + f) - log_alt_total
        loss[i] = f / vsum * ((math.log(f) - log_total) - alternative)
