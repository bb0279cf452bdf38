"""Launch wrappers of ``cuda/pre_tokenizer.cu``; the Numba twin is in ``cpu_fallback/pre_tokenizer.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

# Bytes per thread of the chunked scan, chunks per super summary and the most DFA states it
# takes; must equal PT_CHUNK, PT_SUPER and PT_MAX_STATES in cuda/pre_tokenizer.cu.
CHUNK = 256
SUPER = 256
MAX_STATES = 16
# The mark of a user symbol's pre-token (PT_SYMBOL_MARK) and the longest user symbol the scan takes
# (its byte length shares an int32 with the piece id; a step of the scan must fit in a chunk).
SYMBOL_MARK = 7
MAX_SYMBOL_BYTES = 255


def pretokenize_marks(rt: KernelRuntime, data: Any, offsets: Any, dfa: Any, word_marks: Any = None) -> Any:
    """Per byte of ``data`` (uint8): 0, or at every pre-token start 1 + the symbol of its first
    character, for the compiled split ``dfa`` (a ``PreTokenDFA``). ``word_marks`` (uint8 per byte,
    a dictionary cutter's: non-zero where a word of a ``Segmenter``'s segmentation of the same rows
    starts, :meth:`Segmenter.word_marks <gpu_text.segment.Segmenter.word_marks>`): every such Han
    character starts a Han pre-token too. No host read: the output has the input's size.

    Chunk-parallel (``cuda/pre_tokenizer.cu``): cuts (and the words' marks), DFA summaries per
    chunk and per ``SUPER`` chunks (one launch), the chain of
    pre-token starts followed per chunk (speculative and joined in one launch, strings whose chains
    did not meet redone exactly), then the starts marked."""
    return _scan(rt, data, offsets, dfa, None, word_marks)[0]


def pretokenize_symbol_marks(rt: KernelRuntime, data: Any, offsets: Any, dfa: Any, state: Any, check: Any, label: Any,
                             eow: Any, sym_width: int) -> tuple[Any, Any]:
    """:func:`pretokenize_marks` with user-defined symbols (the trie ``state`` … ``eow`` of their
    piece ids) taken whole, as SentencePiece takes them: the marks (``SYMBOL_MARK`` at a symbol's
    pre-token) and ``symbol_at`` (int32 per byte: the longest symbol at each character, its piece
    id << 8 | its byte length, 0 for none). ``sym_width``: max(the longest symbol's bytes, 4), at
    most ``MAX_SYMBOL_BYTES``. The same launches as without symbols, no host read."""
    if not 4 <= sym_width <= MAX_SYMBOL_BYTES:
        raise ValueError(f"sym_width {sym_width} is not in [4, {MAX_SYMBOL_BYTES}]")
    return _scan(rt, data, offsets, dfa, (state, check, label, eow, int(sym_width)))


def _scan(rt: KernelRuntime, data: Any, offsets: Any, dfa: Any, symbols: tuple | None, word_marks: Any = None
          ) -> tuple[Any, Any]:
    xp = rt.xp
    n_states = int(dfa.table.shape[0])
    if n_states > MAX_STATES:
        raise ValueError(f"the pre-tokenizer's DFA has {n_states} states; the CUDA scan takes at most {MAX_STATES}")
    n_bytes, n_strings = int(data.size), int(offsets.size - 1)
    if word_marks is not None and (word_marks.dtype != xp.uint8 or word_marks.size != n_bytes):
        raise ValueError(f"word_marks must be uint8, one per byte ({n_bytes}), not {word_marks.dtype} "
                         f"x {word_marks.size}")
    n_chunks = -(-n_bytes // CHUNK)
    n_super = -(-n_chunks // SUPER)
    space = np.uint32(dfa.space)
    cuts = xp.empty(n_bytes, xp.uint8)
    marks = xp.empty(n_bytes, xp.uint8)
    if symbols is None:  # placeholders, never read (sym_width 0)
        trie, sym_width = (xp.empty(1, xp.int32), xp.empty(1, xp.int32), xp.empty(1, xp.uint8),
                           xp.empty(1, xp.uint8)), 0
        symbol_at, sym_exit, super_sym_exit = xp.empty(1, xp.int32), xp.empty(1, xp.uint8), xp.empty(1, xp.uint8)
    else:
        *trie, sym_width = symbols
        symbol_at = xp.empty(max(n_bytes, 1), xp.int32)
        sym_exit = xp.empty(max(n_chunks * sym_width, 1), xp.uint8)
        super_sym_exit = xp.empty(max(n_super * sym_width, 1), xp.uint8)
    grid = blocks_for(n_chunks, BLOCK)
    order = xp.empty(1 + grid, xp.uint64)  # pretokenize_land_join's tile order, zeroed by pretokenize_cuts
    launch(rt.function("pre_tokenizer", "pretokenize_cuts"), blocks_for(max(n_bytes, order.size), BLOCK),
           (data, offsets, i64(n_strings), i64(n_bytes), xp.asarray(dfa.joinable.ravel()), space, cuts, marks,
            *trie, np.int32(trie[0].size), np.int32(sym_width), symbol_at,
            xp.empty(1, xp.uint8) if word_marks is None else word_marks, np.int32(word_marks is not None), order,
            i64(order.size)))
    exit_state = xp.empty(n_chunks * n_states, xp.int32)
    last_accept = xp.empty(n_chunks * n_states, xp.int64)
    # per chunk: its first character, land, exits, entries
    first_char, land, exits, entries = xp.empty((4, n_chunks), xp.int64)
    super_exit = xp.empty(n_super * n_states, xp.int32)
    super_accept = xp.empty(n_super * n_states, xp.int64)
    first_marked = xp.empty(n_strings, xp.int64)
    table, accepting = xp.asarray(dfa.table.ravel()), xp.asarray(dfa.accepting)
    scan = (data, offsets, i64(n_strings), i64(n_bytes), i64(n_chunks), cuts, table, accepting, np.int32(n_states),
            space, exit_state, last_accept, first_char, super_exit, super_accept, symbol_at, np.int32(sym_width),
            sym_exit, super_sym_exit)
    # a block's chunks are one super chunk (BLOCK == SUPER), which it composes after their summaries
    launch(rt.function("pre_tokenizer", "pretokenize_summary"), grid,
           (*scan[:13], symbol_at, np.int32(sym_width), sym_exit, super_exit, super_accept, super_sym_exit))
    launch(rt.function("pre_tokenizer", "pretokenize_land_join"), grid,
           (*scan, order, land, exits, entries, first_marked))
    launch(rt.function("pre_tokenizer", "pretokenize_resolve"), blocks_for(n_strings, BLOCK),
           (*scan, land, exits, entries, first_marked))
    launch(rt.function("pre_tokenizer", "pretokenize_scan"), grid, (*scan, entries, marks))
    return marks, (symbol_at[:n_bytes] if symbols is not None else None)


def pretokenize(rt: KernelRuntime, data: Any, offsets: Any, dfa: Any) -> tuple[Any, Any]:
    """Pre-token starts (int64 positions in ``data``, ascending) and the symbol of each one's first
    character (uint8), for the compiled split ``dfa`` (a ``PreTokenDFA``): the marks of
    :func:`pretokenize_marks`, gathered (one host read, the count)."""
    xp = rt.xp
    marks = pretokenize_marks(rt, data, offsets, dfa)
    starts = xp.flatnonzero(marks).astype(xp.int64)
    return starts, (marks[starts] - 1).astype(xp.uint8)
