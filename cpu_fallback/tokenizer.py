"""The CPU encoder in one pass per row: normalize it, pre-tokenize it, merge its pre-tokens and
write its ids while the row is in cache.

It gives the ids of the staged path (:class:`~gpu_text.tokenizer.normalizer.Normalizer` →
:class:`~gpu_text.tokenizer.pre_tokenizer.PreTokenizer` → :class:`~gpu_text.tokenizer.bpe.BPEModel`,
which the GPU runs kernel by kernel over the whole batch) from the same row functions, without
the batch-sized intermediate arrays between the stages. Chunks of rows run on threads (the jitted
code releases the GIL); each chunk merges a distinct part once (:func:`cpu_fallback.bpe.encode_pre_token`).
User-defined symbols (a trie of piece ids) are found in each normalized row first, as the staged
path's ``symbol_matches`` finds them: left to right, the longest symbol at a character is one id
and the scan goes on after it; the text between symbols is pre-tokenized and merged stretch by
stretch. No CUDA twin: the GPU runs the stages (``normalizer``, ``pre_tokenizer``, ``bpe``) kernel by kernel.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from .bpe import emit_pre_token, encode_pre_token, memo_rows, new_scratch
from .chunks import chunk_bounds
from .double_array import walk_prefixes
from .jit import JIT
from .normalizer import REPLACEMENT_BYTES, match_starts_table, normalize_row, trim_symbols
from .pre_tokenizer import next_pre_token
from .utf8 import sequence_at

@njit(**JIT)
def _grown(array, size, keep):
    out = np.empty(size, array.dtype)
    for i in range(keep):  # not out[:keep] = array[:keep]: that statement alone compiles for seconds
        out[i] = array[i]
    return out


@njit(**JIT)
def _next_symbol(text, p, end, symbols):
    """(start, end, id) of the first user-defined symbol at a character at or after p (the longest
    there), or (end, end, -1)."""
    state, check, label, eow = symbols
    none = np.zeros(0, np.int64)
    while p < end and state.size > 1:  # an empty trie is the one-slot placeholder
        _, stop, value = walk_prefixes(state, check, label, eow, text, p, end, none, none, 0, False)
        if value >= 0:
            return p, stop, value
        length, _ = sequence_at(text, p, end)
        p += max(length, 1)
    return end, end, -1


@njit(**JIT)
def _encode_rows(data, offsets, first, last, normalizer, symbol, collapse, dummy, growth, match_starts, dfa_table,
                 dfa_accepting, space, scores, char_keys, char_ids, merge_keys, merge_ids, join_keys, join_values,
                 bmp_ids, byte_ids, unk_id, with_spans, symbols, memo, scratch):
    """Ids of rows first..last-1, ids per row, and (``with_spans``) each id's span in the original row.
    ``symbols``: the user-defined symbols' trie arrays; ``memo`` and ``scratch``: an empty memo and
    :func:`~cpu_fallback.bpe.new_scratch`."""
    none8, none64 = np.zeros(0, np.uint8), np.zeros(0, np.int64)
    # no borrowed views (cpu_fallback.borrow) needed: the per-row and per-pre-token steps are compiled
    # without reference counting (jit.NOREF, jit.INLINE), so passing them arrays costs no counts
    state, check, label, eow, targets, target_offsets = normalizer
    replacement = REPLACEMENT_BYTES
    sym_start, sym_id, pair_id, pair_score = scratch[0][0], scratch[1][0], scratch[2][0], scratch[3][0]
    # first guesses (the buffers grow): normalized text ~ the input (spaces become 3-byte symbols),
    # ids ~ a third of its bytes
    size = (offsets[last] - offsets[first]) * 3 // 2 + 64
    text, length, pid = np.empty(size, np.uint8), np.empty(size, np.int32), np.empty(size, np.int32)
    align = np.empty(size if with_spans else 1, np.int64)
    n_guess = size // 3
    n_spans = n_guess if with_spans else 1  # spans are written only when asked for
    ids, starts, ends = np.empty(n_guess, np.int32), np.empty(n_spans, np.int64), np.empty(n_spans, np.int64)
    counts = np.zeros(last - first, np.int64)
    # typed values, not literals, wherever they reach a jitted call: Numba compiles a callee once
    # per distinct literal argument (normalize_row three times over, with literal 0/False/True)
    zero, no, yes = np.int64(0), np.bool_(False), np.bool_(True)
    at = n_ids = filled = zero
    for r in range(first, last):
        begin, end = offsets[r], offsets[r + 1]
        if at + symbol.size + growth * (end - begin) + 1 > text.size:  # maybe too small: count exactly
            need = at + normalize_row(state, check, label, eow, targets, target_offsets, data, begin, end, symbol,
                                      collapse, dummy, replacement, none8, none64, zero, no, no,
                                      match_starts, none64) + 1
            if need > text.size:
                grown = max(2 * text.size, need)
                text, length, pid = _grown(text, grown, at), _grown(length, grown, at), _grown(pid, grown, at)
                align = _grown(align, grown if with_spans else 1, at if with_spans else 0)
        n = normalize_row(state, check, label, eow, targets, target_offsets, data, begin, end, symbol, collapse, dummy,
                          replacement, text, align, at, yes, with_spans, match_starts, none64)
        if collapse:
            n = trim_symbols(text, at, n, symbol)
        if with_spans:
            align[at + n] = end - begin
        if n_ids + n > ids.size:  # a row gives at most one id per byte
            grown = max(2 * ids.size, n_ids + n)
            ids = _grown(ids, grown, n_ids)
            if with_spans:
                starts, ends = _grown(starts, grown, n_ids), _grown(ends, grown, n_ids)
        row_ids = n_ids
        p = at
        symbol_start, symbol_end, symbol_id = _next_symbol(text, p, at + n, symbols)
        while p < at + n:
            if p == symbol_start:
                ids[n_ids] = symbol_id
                if with_spans:
                    starts[n_ids], ends[n_ids] = p, symbol_end
                n_ids += 1
                p = symbol_end
                symbol_start, symbol_end, symbol_id = _next_symbol(text, p, at + n, symbols)
                continue
            _, q = next_pre_token(text, p, symbol_start, dfa_table, dfa_accepting, space)
            filled, source = encode_pre_token(text, p, q, scores, char_keys, char_ids, merge_keys, merge_ids,
                                              join_keys, join_values, bmp_ids, length, pid, memo, filled, sym_start,
                                              sym_id, pair_id, pair_score)
            n_ids = emit_pre_token(text, p, q, source, byte_ids, unk_id, length, pid, ids, starts, ends, n_ids,
                                   with_spans)
            p = q
        if with_spans:
            for k in range(row_ids, n_ids):
                starts[k], ends[k] = align[starts[k]], align[ends[k]]
        counts[r - first] = n_ids - row_ids
        at += n
    n_spans = n_ids if with_spans else 0
    return ids[:n_ids], counts, starts[:n_spans], ends[:n_spans]


def encode_text(data, offsets, normalizer, symbol, collapse, dummy, growth, dfa, scores, byte_ids, unk_id, tables,
                with_spans, symbols=None):
    """Ids (int32) of every row of the batch ``data``/``offsets``, row offsets into them (int64),
    and, when ``with_spans``, each id's start and end in its original row (int64; else None).

    ``normalizer``: the charsmap arrays (trie, targets, target offsets); ``symbol``, ``collapse``,
    ``dummy`` as in :func:`cpu_fallback.normalizer.normalize_text`; ``growth``: the normalizer's most
    output bytes per input byte; ``dfa`` a ``PreTokenDFA``;
    ``scores``, ``byte_ids``, ``unk_id``, ``tables`` the BPE model's; ``symbols`` the four trie
    arrays of the user-defined symbols (None when there are none).
    """
    match_starts = match_starts_table(*normalizer[:4])
    # eight chunks per thread, taken by the threads as they finish (each with its own memo, so a part
    # may merge once per chunk): 8-17% less time than one chunk per thread at 16k and 32k, zh and en,
    # measured interleaved; smaller chunks keep their row buffers in cache and the threads even
    bounds = chunk_bounds(np.diff(offsets), per_thread=8)
    c = np.ascontiguousarray  # one layout, one compile
    if symbols is None:  # the one-slot placeholder trie, which _next_symbol skips
        symbols = (np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.uint8), np.zeros(1, np.uint8))
    common = (tuple(c(a) for a in normalizer), c(symbol), collapse, dummy, growth, match_starts, c(dfa.table),
              c(dfa.accepting), np.uint32(dfa.space), c(scores), *(c(a) for a in tables), c(byte_ids),
              np.int32(unk_id), bool(with_spans), tuple(c(a) for a in symbols))

    def chunk(c: int):
        first, last = int(bounds[c]), int(bounds[c + 1])
        memo = np.zeros((memo_rows(int(offsets[last] - offsets[first])), 2), np.int64)
        return _encode_rows(data, offsets, first, last, *common, memo, new_scratch(1))

    n_chunks = bounds.size - 1
    if n_chunks <= 1 or numba.get_num_threads() == 1:
        parts = [chunk(c) for c in range(n_chunks)]
    else:
        with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
            parts = list(pool.map(chunk, range(n_chunks)))
    row_offsets = np.zeros(offsets.size, np.int64)
    if parts:
        np.cumsum(np.concatenate([p[1] for p in parts]), out=row_offsets[1:])
        ids = np.concatenate([p[0] for p in parts])
    else:
        ids = np.zeros(0, np.int32)
    if not with_spans:
        return ids, row_offsets, None, None
    if not parts:
        return ids, row_offsets, np.zeros(0, np.int64), np.zeros(0, np.int64)
    return ids, row_offsets, np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts])
