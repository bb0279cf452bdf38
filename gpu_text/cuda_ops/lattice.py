"""Launch wrappers of ``cuda/lattice.cu``; the Numba twins are in ``cpu_fallback/lattice.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

# Bytes between two anchors of a long span's cuts (a thread's work is about a chunk), and the span
# length from which a span is cut into pieces (shorter ones: a thread per span). Tests lower them.
CHUNK_BYTES = 2048
LONG_BYTES = 8 * CHUNK_BYTES
# At most this many blocks run the grid-stride list of pieces (lattice_pieces).
LIST_BLOCKS = 1024
# cuda/lattice.cu's GT_LCLASSES, GT_LSLOT_I and GT_LSLOT_F.
CLASSES = 8
SLOT_INTS = 9
SLOT_FLOATS = 18
# cuda/lattice.cu's GT_LFRONT, GT_LVF and GT_LVI: forced cuts' frontiers and their pieces' vectors.
FRONT = 4
VEC_FLOATS = 52 + FRONT * FRONT * CLASSES + 4 * FRONT * FRONT + 2 * FRONT
VEC_INTS = 24
# cuda/lattice.cu's GT_LSEG_W and GT_LSEG_I: lattice_resolve's segments of pieces (a product per tile,
# ints per slot).
SEGMENT_WORDS = 1 + FRONT * FRONT
SEGMENT_INTS = 4
# cuda/lattice.cu's GT_LCOUNTERS, GT_LMP and ExitScan::W: the scans' counters and products per tile.
COUNTERS = 5
HEAD_WORDS = 19
EXIT_WORDS = 1 + FRONT


def lattice_viterbi(rt: KernelRuntime, data: Any, span_starts: Any, span_ends: Any, edge_starts: Any,
                    edge_ends: Any, edge_values: Any, span_edge_offsets: Any, weights: Any, fallback_weight: float,
                    max_edges_per_start: int, mode: int = 0) -> tuple[Any, Any, Any, Any]:
    """Best path of every span: token starts, ends (int64), values (int32, -1: fallback character)
    and each span's token offsets (int64, n_spans + 1); ``mode`` as in ``cpu_fallback.lattice``.

    Spans of :data:`LONG_BYTES` or more are cut into pieces of about :data:`CHUNK_BYTES` (see the
    end of ``cuda/lattice.cu``), at cut points or, where a chunk has none, at forced cuts with
    frontiers: the same tokens, no thread's work growing with the span but the long span's walk
    (lattice_resolve: a step per segment of pieces, between binade edges and pieces whose tables do
    not compose) and the scans of the pieces (heads, estimates, segments, exits, token counts: by
    tiles of 256 anchors, at most 2 log2(tiles) + 16 steps a thread each) (14 kernel launches with
    long spans; the forced cuts' four: lattice_estimate's second pass, lattice_settle_front,
    lattice_zone_split, lattice_settle_zone)."""
    xp = rt.xp
    n = span_starts.size
    scratch_offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(span_ends - span_starts + 1, out=scratch_offsets[1:])
    size = int(scratch_offsets[-1])
    token_offsets = xp.zeros(n + 1, xp.int64)
    long_spans = bool(n) and int(data.size) >= max(int(LONG_BYTES), 1)
    starts, ends, values = _solve_paths(rt, data, span_starts, span_ends, edge_starts, edge_ends, edge_values,
                                        span_edge_offsets, weights, fallback_weight, max_edges_per_start, mode,
                                        scratch_offsets, size, long_spans, token_offsets, None)
    return starts, ends, values, token_offsets


def _solve_paths(rt: KernelRuntime, data: Any, span_starts: Any, span_ends: Any, edge_starts: Any, edge_ends: Any,
                 edge_values: Any, span_edge_offsets: Any, weights: Any, fallback_weight: float,
                 max_edges_per_start: int, mode: int, scratch_offsets: Any, scratch_size: int, long_spans: bool,
                 token_offsets: Any, capacity: int | None) -> tuple[Any, Any, Any]:
    """:func:`lattice_viterbi`'s kernels, from each span's scratch offset (``scratch_size`` rows
    in all), into ``token_offsets`` (zeroed, n_spans + 1): token starts, ends and values, exactly
    as many as the spans have (one host read, the total) or, with ``capacity``, arrays of that
    many of which the first ``token_offsets[-1]`` are the tokens (no host read). ``long_spans``
    False promises that no span has :data:`LONG_BYTES` bytes (the pieces' kernels are skipped)."""
    xp = rt.xp
    n = span_starts.size
    score, route, value = (xp.empty(scratch_size, dt) for dt in (xp.float64, xp.int64, xp.int32))
    # the route kernel writes every short span's count; lattice_finish only the long ones'
    counts = xp.zeros(n, xp.int64) if long_spans else xp.empty(n, xp.int64)
    weights = xp.ascontiguousarray(weights, dtype=xp.float64)
    if weights.size == 0:  # a kernel argument must point somewhere; no edge reads it
        weights = xp.zeros(1, xp.float64)
    chunk, long_bytes = max(int(CHUNK_BYTES), 16), max(int(LONG_BYTES), 1)
    lattice = (data, span_starts, span_ends, i64(n), edge_starts, edge_ends, edge_values, span_edge_offsets, weights,
               np.float64(fallback_weight), i64(max_edges_per_start), i64(mode))
    n_bytes = int(data.size)
    n_anchors = blocks_for(n_bytes, chunk) if n and long_spans else 0
    n_slots = 2 * n_anchors
    if n_anchors:
        n_edges = int(edge_starts.size)
        long_edge = xp.zeros(n, xp.int32)
        # the scans of the pieces by tiles of BLOCK anchors (cuda/tile_scan.cuh): counter holds the long
        # spans, the tile counters of lattice_estimate's passes, lattice_finish and lattice_resolve, then
        # per scan (rough heads, estimates twice, exits, segments) a flag a tile, then per span the tiles
        # lattice_resolve scanned; nodes hold the scans' products per tile
        tiles = blocks_for(n_anchors, BLOCK)
        counter = xp.zeros(COUNTERS + 5 * tiles + n, xp.uint64)
        head_nodes, exit_nodes = xp.empty(3 * HEAD_WORDS * tiles, xp.float64), xp.empty(EXIT_WORDS * tiles, xp.int64)
        segment_nodes = xp.empty(SEGMENT_WORDS * tiles, xp.float64)
        cuts, cut_spans = xp.empty(n_anchors, xp.int64), xp.empty(n_anchors, xp.int64)
        slot_i, slot_f = xp.empty(SLOT_INTS * n_slots, xp.int64), xp.empty(SLOT_FLOATS * n_slots, xp.float64)
        class_i = xp.empty(4 * n_slots, xp.int64)
        front_n, front_off = xp.empty(n_anchors, xp.int32), xp.empty(FRONT * n_anchors, xp.int32)
        vec_f, vec_i = xp.empty(VEC_FLOATS * n_slots, xp.float64), xp.empty(VEC_INTS * n_slots, xp.int64)
        fronts = (front_n, front_off)
        span_first = xp.empty(n, xp.int64)
        # lattice_resolve's segments: per anchor its product, per slot its ints, per head its exits and
        # the keys of their bounds
        segments = (xp.empty(FRONT * FRONT * n_anchors, xp.float64), xp.empty(FRONT * n_slots, xp.float64),
                    xp.empty(SEGMENT_INTS * n_slots, xp.int64), xp.empty(2 * FRONT * n_slots, xp.uint64))
        scratch = (score, route, value)
        launch(rt.function("lattice", "lattice_long_edges"), blocks_for(n_edges, BLOCK),
               (edge_starts, edge_ends, i64(n_edges), span_edge_offsets, i64(n), long_edge))
        launch(rt.function("lattice", "lattice_cuts"), blocks_for(n_anchors, BLOCK),
               (*lattice, i64(long_bytes), i64(chunk), i64(n_anchors), long_edge, cuts, cut_spans, slot_i, *fronts))
        launch(rt.function("lattice", "lattice_pieces"), min(blocks_for(n + n_anchors, BLOCK), LIST_BLOCKS),
               (*lattice, i64(long_bytes), i64(chunk), i64(n_anchors), cuts, cut_spans, scratch_offsets, counter,
                slot_i, slot_f, *scratch, *fronts, vec_f, span_first))
        for refine in (0, 1):  # from the rough heads, then from those estimates (cuda/lattice.cu)
            launch(rt.function("lattice", "lattice_estimate"), blocks_for(n_slots, BLOCK),
                   (*lattice, i64(n_anchors), i64(n_slots), counter, slot_i, slot_f, *fronts, vec_f, i64(refine),
                    head_nodes))
        launch(rt.function("lattice", "lattice_settle"), blocks_for(n_slots * CLASSES, BLOCK),
               (*lattice, i64(n_slots), slot_i, slot_f, class_i))
        launch(rt.function("lattice", "lattice_settle_front"), blocks_for(n_slots * FRONT * CLASSES, BLOCK),
               (*lattice, i64(n_anchors), i64(n_slots), slot_i, *fronts, vec_f, vec_i))
        launch(rt.function("lattice", "lattice_zone_split"), blocks_for(n_slots, BLOCK),
               (*lattice, i64(n_anchors), i64(n_slots), slot_i, *fronts, vec_f, vec_i))
        launch(rt.function("lattice", "lattice_settle_zone"), blocks_for(n_slots * FRONT * 2, BLOCK),
               (*lattice, i64(n_anchors), i64(n_slots), slot_i, *fronts, vec_f, vec_i))
        launch(rt.function("lattice", "lattice_resolve"), tiles,
               (*lattice, i64(n_anchors), counter, scratch_offsets, slot_i, slot_f, class_i, *scratch, *fronts, vec_f,
                vec_i, *segments, span_first, segment_nodes))
        launch(rt.function("lattice", "lattice_finish"), blocks_for(n_slots, BLOCK),
               (*lattice, i64(n_anchors), i64(n_slots), counter, scratch_offsets, slot_i, slot_f, *scratch, counts,
                *fronts, vec_f, vec_i, *segments[:3], exit_nodes))
    launch(rt.function("lattice", "lattice_route"), blocks_for(n, BLOCK),
           (*lattice, scratch_offsets, score, route, value, counts, i64(long_bytes)))
    xp.cumsum(counts, out=token_offsets[1:])
    total = int(token_offsets[-1]) if capacity is None else capacity
    starts, ends, values = xp.empty(total, xp.int64), xp.empty(total, xp.int64), xp.empty(total, xp.int32)
    launch(rt.function("lattice", "lattice_emit"), blocks_for(n, BLOCK),
           (span_starts, span_ends, i64(n), scratch_offsets, route, value, token_offsets, starts, ends, values,
            i64(long_bytes)))
    if n_anchors:
        launch(rt.function("lattice", "lattice_emit_pieces"), blocks_for(n_slots, BLOCK),
               (span_starts, i64(n_slots), slot_i, scratch_offsets, route, value, token_offsets, starts, ends, values))
    return starts, ends, values
