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


def pretokenize_marks(rt: KernelRuntime, data: Any, offsets: Any, dfa: Any) -> Any:
    """Per byte of ``data`` (uint8): 0, or at every pre-token start 1 + the symbol of its first
    character, for the compiled split ``dfa`` (a ``PreTokenDFA``). No host read: the output has
    the input's size.

    Chunk-parallel (``cuda/pre_tokenizer.cu``): cuts, DFA summaries per chunk and per
    ``SUPER`` chunks, the chain of
    pre-token starts followed per chunk (speculative, joined, strings whose chains did not meet
    redone exactly), then the starts marked."""
    xp = rt.xp
    n_states = int(dfa.table.shape[0])
    if n_states > MAX_STATES:
        raise ValueError(f"the pre-tokenizer's DFA has {n_states} states; the CUDA scan takes at most {MAX_STATES}")
    n_bytes, n_strings = int(data.size), int(offsets.size - 1)
    n_chunks = -(-n_bytes // CHUNK)
    space = np.uint32(dfa.space)
    cuts = xp.empty(n_bytes, xp.uint8)
    marks = xp.empty(n_bytes, xp.uint8)
    launch(rt.function("pre_tokenizer", "pretokenize_cuts"), blocks_for(n_bytes, BLOCK),
           (data, offsets, i64(n_strings), i64(n_bytes), xp.asarray(dfa.joinable.ravel()), space, cuts, marks))
    exit_state = xp.empty(n_chunks * n_states, xp.int32)
    last_accept = xp.empty(n_chunks * n_states, xp.int64)
    # per chunk: its first character, land, exits, entries
    first_char, land, exits, entries = xp.empty((4, n_chunks), xp.int64)
    n_super = -(-n_chunks // SUPER)
    super_exit = xp.empty(n_super * n_states, xp.int32)
    super_accept = xp.empty(n_super * n_states, xp.int64)
    first_marked = xp.empty(n_strings, xp.int64)
    grid = blocks_for(n_chunks, BLOCK)
    table, accepting = xp.asarray(dfa.table.ravel()), xp.asarray(dfa.accepting)
    scan = (data, offsets, i64(n_strings), i64(n_bytes), i64(n_chunks), cuts, table, accepting, np.int32(n_states),
            space, exit_state, last_accept, first_char, super_exit, super_accept)
    launch(rt.function("pre_tokenizer", "pretokenize_summary"), grid, scan[:13])
    launch(rt.function("pre_tokenizer", "pretokenize_super_summary"), blocks_for(n_super * n_states, BLOCK),
           (i64(n_chunks), np.int32(n_states), exit_state, last_accept, i64(n_super), super_exit, super_accept))
    launch(rt.function("pre_tokenizer", "pretokenize_land"), grid, (*scan, land, first_marked))
    launch(rt.function("pre_tokenizer", "pretokenize_join"), grid, (*scan, land, exits, entries, first_marked))
    launch(rt.function("pre_tokenizer", "pretokenize_resolve"), blocks_for(n_strings, BLOCK),
           (*scan, land, exits, entries, first_marked))
    launch(rt.function("pre_tokenizer", "pretokenize_scan"), grid, (*scan, entries, marks))
    return marks


def pretokenize(rt: KernelRuntime, data: Any, offsets: Any, dfa: Any) -> tuple[Any, Any]:
    """Pre-token starts (int64 positions in ``data``, ascending) and the symbol of each one's first
    character (uint8), for the compiled split ``dfa`` (a ``PreTokenDFA``): the marks of
    :func:`pretokenize_marks`, gathered (one host read, the count)."""
    xp = rt.xp
    marks = pretokenize_marks(rt, data, offsets, dfa)
    starts = xp.flatnonzero(marks).astype(xp.int64)
    return starts, (marks[starts] - 1).astype(xp.uint8)
