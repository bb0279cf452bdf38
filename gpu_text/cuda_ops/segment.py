"""Launch wrappers of ``cuda/segment.cu``; the Numba twins are in ``cpu_fallback/segment.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch
from gpu_text.cuda_ops.utf8 import char_classify, utf8_decode
from gpu_text.ragged import row_ids


def presplit(rt: KernelRuntime, data: Any, offsets: Any, jieba_mode: bool = False) -> tuple[Any, Any, Any, Any]:
    """Tokens of every string: (starts, ends) byte positions in ``data``, lattice-run flags (Han
    runs; jieba's blocks in ``jieba_mode``), row offsets."""
    xp = rt.xp
    codepoints, positions, row_offsets = utf8_decode(rt, data, offsets)
    classes = char_classify(rt, codepoints)
    n = codepoints.size
    row_lengths = row_offsets[1:] - row_offsets[:-1]
    row_start = xp.zeros(n + 1, xp.uint8)
    row_start[row_offsets[:-1][row_lengths > 0]] = 1
    row_start[n] = 1
    kinds = xp.empty(n, xp.uint8)
    launch(rt.function("segment", "presplit_kinds"), blocks_for(n, BLOCK), (codepoints, classes, row_start, i64(n), np.int32(bool(jieba_mode)), kinds))
    rows = row_ids(row_offsets)
    char_starts = positions + offsets[:-1][rows]
    # a character ends where the next one of its string starts, or at the string's end
    char_ends = xp.empty(n, xp.int64)
    char_ends[:-1] = char_starts[1:]
    last_of_row = row_start[1:].astype(bool)
    char_ends[last_of_row] = offsets[1:][rows[last_of_row]]
    kept = kinds != 0
    is_start = (kinds == 1) | (kinds == 3)
    next_continues = xp.zeros(n, bool)
    next_continues[:-1] = (kinds[1:] == 2) & ~last_of_row[:-1]
    is_end = kept & ~next_continues
    starts = char_starts[is_start]
    ends = char_ends[is_end]
    is_han = (kinds[is_start] == 3).astype(xp.uint8)
    started = xp.zeros(n + 1, xp.int64)
    xp.cumsum(is_start, out=started[1:])
    return starts, ends, is_han, started[row_offsets]


def _route(rt: KernelRuntime, data: Any, span_starts: Any, span_ends: Any, edge_starts: Any, edge_ends: Any,
           edge_values: Any, span_edge_offsets: Any, weights: Any, unknown_weight: float, tail_score: float,
           jieba_mode: bool) -> tuple[Any, Any, Any, Any, Any]:
    """Solve every span; returns (scratch_offsets, scores, next, values, word counts)."""
    xp = rt.xp
    n = span_starts.size
    scratch_offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(span_ends - span_starts + 1, out=scratch_offsets[1:])
    size = int(scratch_offsets[-1])
    scores = xp.empty(size, xp.float64)
    nxt = xp.empty(size, xp.int64)
    values = xp.empty(size, xp.int32)
    counts = xp.zeros(n, xp.int64)
    launch(rt.function("segment", "viterbi_route"), blocks_for(n, BLOCK),
           (data, span_starts, span_ends, i64(n), edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
            np.float64(unknown_weight), np.float64(tail_score), np.int32(bool(jieba_mode)), scratch_offsets, scores,
            nxt, values, counts))
    return scratch_offsets, scores, nxt, values, counts


def viterbi_segment(rt: KernelRuntime, data: Any, span_starts: Any, span_ends: Any, edge_starts: Any, edge_ends: Any,
                    edge_values: Any, span_edge_offsets: Any, weights: Any, unknown_weight: float, tail_score: float,
                    jieba_mode: bool) -> tuple[Any, Any, Any]:
    """Best path of every span: (word_ends, word_values, span_word_offsets)."""
    xp = rt.xp
    n = span_starts.size
    scratch_offsets, _, nxt, values, counts = _route(rt, data, span_starts, span_ends, edge_starts, edge_ends,
                                                     edge_values, span_edge_offsets, weights, unknown_weight,
                                                     tail_score, jieba_mode)
    word_offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(counts, out=word_offsets[1:])
    total = int(word_offsets[-1])
    word_ends = xp.empty(total, xp.int64)
    word_values = xp.empty(total, xp.int32)
    launch(rt.function("segment", "viterbi_emit"), blocks_for(n, BLOCK),
           (span_starts, span_ends, i64(n), scratch_offsets, nxt, values, word_offsets, word_ends, word_values))
    return word_ends, word_values, word_offsets


def viterbi_loss(rt: KernelRuntime, data: Any, span_starts: Any, span_ends: Any, edge_starts: Any, edge_ends: Any,
                 edge_values: Any, span_edge_offsets: Any, weights: Any, unknown_weight: float, tail_score: float,
                 jieba_mode: bool, job_spans: Any, job_starts: Any, job_ends: Any) -> Any:
    """DictCut's pruning loss of each job (a word occurrence on its span's best path)."""
    xp = rt.xp
    scratch_offsets, scores, _, _, _ = _route(rt, data, span_starts, span_ends, edge_starts, edge_ends, edge_values,
                                              span_edge_offsets, weights, unknown_weight, tail_score, jieba_mode)
    n_jobs = job_spans.size
    job_scratch_offsets = xp.zeros(n_jobs + 1, xp.int64)
    xp.cumsum(job_starts - span_starts[job_spans] + 1, out=job_scratch_offsets[1:])
    job_scratch = xp.empty(int(job_scratch_offsets[-1]), xp.float64)
    losses = xp.empty(n_jobs, xp.float64)
    launch(rt.function("segment", "viterbi_loss"), blocks_for(n_jobs, BLOCK),
           (data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
            np.float64(unknown_weight), np.int32(bool(jieba_mode)), scratch_offsets, scores, job_spans, job_starts,
            job_ends, i64(n_jobs), job_scratch_offsets, job_scratch, losses))
    return losses


# At most this many blocks run segment_pieces (grid-stride loops over a list
# whose length only the device knows): about one resident wave of an H200 (132 SMs x 2048 threads).
LIST_BLOCKS = 1024
# Bytes between two anchors (the longest runs are cut near each one): a thread's work is about a
# chunk. Tests lower it to cut small inputs into many pieces.
CHUNK_BYTES = 2048
# cuda/segment.cu's GT_FRONT_MAX (frontier positions of a forced cut), GT_CLASSES_MAX (residue
# classes of a frontier value), GT_CLASS_FLOATS and GT_CLASS_INTS (per piece).
FRONT_MAX = 8
CLASSES_MAX = 8
CLASS_FLOATS = 2 * FRONT_MAX + 1 + FRONT_MAX * FRONT_MAX * (CLASSES_MAX + 1) + FRONT_MAX * CLASSES_MAX
CLASS_INTS = 3 + FRONT_MAX
# segment_resolve's segments of composed tables (GT_SEG_FRONT: frontier positions of a segment
# piece's matrix; GT_SEG_W: words of a product in its tile scan; GT_SEG_I: ints per slot).
SEG_FRONT = FRONT_MAX
SEG_W = SEG_FRONT * SEG_FRONT + 2
SEG_I = 5
# The counters of segment_pieces and the kernels after it (GT_COUNTERS); segment_resolve's tile flags
# and per-run counts of scanned tiles follow them, one of each per anchor.
COUNTERS = 6
# segment_pieces' estimates per slot (GT_EST_FLOATS, GT_EST_INTS).
EST_FLOATS = FRONT_MAX * FRONT_MAX + 2 + FRONT_MAX + 2
EST_INTS = FRONT_MAX + 6


def _group_anchors(n_anchors: int) -> int:
    """Anchors per group of the segments of segment_pieces' estimates: the power of two next to
    sqrt(n_anchors), so a segment has at most that many pieces and a run's estimate walk steps over
    about as many segments."""
    return 1 << max(1, (max(n_anchors - 1, 0).bit_length() + 1) // 2)


def segment_rows(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, data: Any, offsets: Any,
                 weights: Any, unknown_weight: float, tail_score: float, jieba_mode: bool, *,
                 max_word_bytes: int | None = None, weight_bound: float = 0.0) -> tuple[Any, Any, Any, Any]:
    """The whole segmentation of every row (the Numba twin's one pass per row): word starts and
    ends (int64, relative to the row), word ids (int32, -1 off the dictionary) and row offsets.

    Eight kernels and one prefix sum (see the end of ``cuda/segment.cu``); the one
    host read is the word count, which sizes the outputs. Scratch is per byte of ``data``.
    ``max_word_bytes`` (the trie's longest word) and ``weight_bound`` (at least every finite
    ``|weight|``, ``|unknown_weight|`` and ``|tail_score|``) let long runs be cut into pieces of about
    :data:`CHUNK_BYTES`; without them every run is one piece (the same words)."""
    xp = rt.xp
    n, n_rows = int(data.size), int(offsets.size) - 1
    flags, ids = _words(rt, state, check, label, eow, data, offsets, weights, unknown_weight, tail_score, jieba_mode,
                        max_word_bytes, weight_bound)
    counts = xp.cumsum(flags, dtype=xp.int64)
    words = int(counts[n])
    word_starts = xp.empty(words, xp.int64)
    word_ends = xp.empty(words, xp.int64)
    word_ids = xp.empty(words, xp.int32)
    row_offsets = xp.empty(n_rows + 1, xp.int64)
    launch(rt.function("segment", "segment_compact"), blocks_for(max(n, n_rows) + 1, BLOCK),
           (offsets, i64(n_rows), i64(n), flags, counts, ids, word_starts, word_ends, word_ids, row_offsets))
    return word_starts, word_ends, word_ids, row_offsets


def _segment_word_marks(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, data: Any, offsets: Any,
                        weights: Any, unknown_weight: float, tail_score: float, jieba_mode: bool, *,
                        max_word_bytes: int | None = None, weight_bound: float = 0.0) -> Any:
    """Per byte of ``data`` (uint8): non-zero where a word of :func:`segment_rows`' segmentation
    starts, zero where none does. Outside jieba's mode only the words of the Han runs are marked
    (the best paths as they are: no host read, two launches and a prefix sum fewer than
    ``segment_rows``); in jieba's mode every word (``segment_words``' start marks, its joins
    applied). ``Segmenter.word_marks`` on a kernel runtime: a composition of segment_rows'
    kernels, so no twins of its own (the CPU's marks come from its segmentation)."""
    n = int(data.size)
    if not jieba_mode:
        path = _route_rows(rt, state, check, label, eow, data, offsets, weights, unknown_weight, tail_score,
                           jieba_mode, max_word_bytes, weight_bound, with_flags=False)[0]
        return path[:n]
    return _words(rt, state, check, label, eow, data, offsets, weights, unknown_weight, tail_score, jieba_mode,
                  max_word_bytes, weight_bound)[0][:n]


def _words(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, data: Any, offsets: Any, weights: Any,
           unknown_weight: float, tail_score: float, jieba_mode: bool, max_word_bytes: int | None,
           weight_bound: float) -> tuple[Any, Any]:
    """The words' start and end marks (``segment_words``' flags, 2 (n + 1) bytes) and ids per byte."""
    n, n_rows = int(data.size), int(offsets.size) - 1
    path, length, flags, ids = _route_rows(rt, state, check, label, eow, data, offsets, weights, unknown_weight,
                                           tail_score, jieba_mode, max_word_bytes, weight_bound, with_flags=True)
    launch(rt.function("segment", "segment_words"), blocks_for(n, BLOCK),
           (data, i64(n), offsets, i64(n_rows), np.int32(bool(jieba_mode)), path, length, flags, ids))
    return flags, ids


def _route_rows(rt: KernelRuntime, state: Any, check: Any, label: Any, eow: Any, data: Any, offsets: Any,
                weights: Any, unknown_weight: float, tail_score: float, jieba_mode: bool, max_word_bytes: int | None,
                weight_bound: float, with_flags: bool) -> tuple[Any, Any, Any, Any]:
    """Every row's best path, no host read: (path: n + 1 bytes, non-zero where a word of a run
    starts; length: that word's bytes; flags: 2 (n + 1) bytes, the words outside the runs marked
    by segment_marks, only ``with_flags`` (else not zeroed: the marks path reads none of them); ids
    per byte), from segment_marks, segment_pieces and, when long runs are cut, segment_settle,
    segment_resolve, segment_finish and segment_paths."""
    xp = rt.xp
    n = int(data.size)
    n_rows = int(offsets.size) - 1
    jieba = np.int32(bool(jieba_mode))
    trie = (state, check, label, eow, np.int32(state.size))
    chunk = max(int(CHUNK_BYTES), 16)
    n_anchors = blocks_for(n, chunk) if max_word_bytes is not None else 0
    n_anchors = n_anchors if n_anchors > 1 else 0  # anchor 0 cuts nothing: a batch within a chunk is whole runs
    # segment_marks zeroes the counters (cuda/segment.cu's GT_COUNTERS) and the path (n + 1 bytes);
    # the flags (2 n + 2 bytes) it only sets, so they are zeroed here where they are read
    counters = xp.empty(COUNTERS + 2 * n_anchors, xp.uint64)
    path = xp.empty(n + 1, xp.uint8)
    flags = (xp.zeros if with_flags else xp.empty)(2 * (n + 1), xp.uint8)
    ids = xp.empty(n, xp.int32)
    marks_blocks = blocks_for(n, BLOCK)
    # each byte block's run starts from its first byte's slot on, and how many
    runs = xp.empty(max(marks_blocks * BLOCK, 1), xp.int64)
    block_runs = xp.empty(max(marks_blocks, 1), xp.int64)
    n_slots = 2 * n_anchors
    cuts = xp.empty(max(n_anchors, 1), xp.int64)
    front_n = xp.empty(max(n_anchors, 1), xp.int32)
    front_off = xp.empty(FRONT_MAX * max(n_anchors, 1), xp.int32)
    slot_i = xp.empty(5 * max(n_slots, 1), xp.int64)
    slot_f = xp.empty(4 * max(n_slots, 1), xp.float64)
    class_f = xp.empty(CLASS_FLOATS * max(n_slots, 1), xp.float64)
    class_i = xp.empty(CLASS_INTS * max(n_slots, 1), xp.int32)
    est_f = xp.empty(EST_FLOATS * max(n_slots, 1), xp.float64)
    est_i = xp.empty(EST_INTS * max(n_slots, 1), xp.int64)
    group = _group_anchors(n_anchors)
    fronts = (front_n, front_off)
    launch(rt.function("segment", "segment_marks"), marks_blocks + blocks_for(n_anchors, BLOCK),
           (data, i64(n), offsets, i64(n_rows), jieba, flags, ids, runs, block_runs, counters, path,
            i64(marks_blocks), *trie,
            i64(chunk), i64(max_word_bytes or 0), i64(n_anchors), cuts, slot_i, *fronts))
    score = xp.empty(n, xp.float64)
    length = xp.empty(n, xp.int32)
    model = (*trie, weights, np.float64(unknown_weight))
    scratch = (score, length, ids, path)
    launch(rt.function("segment", "segment_pieces"), min(blocks_for(n, BLOCK), LIST_BLOCKS),
           (*model, np.float64(tail_score), np.float64(weight_bound), jieba, data, offsets, i64(n_rows), i64(chunk),
            i64(n_anchors), i64(marks_blocks * BLOCK), runs, block_runs, cuts, *fronts, counters, i64(group), slot_f,
            slot_i, class_f, est_f, est_i, *scratch))
    if n_anchors:
        launch(rt.function("segment", "segment_settle"), blocks_for(n_slots * FRONT_MAX * CLASSES_MAX, BLOCK),
               (*model, np.float64(tail_score), np.float64(weight_bound), jieba, data, offsets, i64(n_rows),
                i64(n_anchors), i64(n_slots), *fronts, slot_f, slot_i, score, length, class_f, class_i, est_f, est_i))
        seg_p = xp.empty(SEG_FRONT * SEG_FRONT * n_slots, xp.float64)
        seg_x = xp.empty(SEG_FRONT * n_slots, xp.float64)
        seg_i = xp.empty(SEG_I * n_slots, xp.int64)
        seg_c = xp.empty(2 * SEG_FRONT * n_anchors, xp.uint64)
        tiles = blocks_for(n_anchors, BLOCK)
        nodes = xp.empty(SEG_W * tiles, xp.float64)
        sweeps = xp.empty(BLOCK * SEG_W * tiles, xp.float64)  # the tiles' scan trees (too wide for shared memory)
        launch(rt.function("segment", "segment_resolve"), tiles,
               (*model, jieba, data, i64(n_anchors), counters, *fronts, slot_i, class_f, class_i, seg_p, seg_x,
                seg_i, seg_c, nodes, sweeps, *scratch))
        launch(rt.function("segment", "segment_finish"), blocks_for(n_slots, BLOCK),
               (*model, jieba, data, i64(n_anchors), i64(n_slots), *fronts, slot_i, class_f, class_i, seg_p,
                seg_x, seg_i, counters, i64(chunk), i64(group), est_i, *scratch))
        launch(rt.function("segment", "segment_paths"), blocks_for(n_anchors, BLOCK),
               (i64(n_anchors), front_n, slot_i, class_i, length, path, front_off, est_i))
    return path, length, flags, ids
