// lattice.cu -- the best path through a lattice of scored edges, per span (BytePiece and
// SentencePiece Unigram encoding).
//
// A span's lattice: a fallback edge per character (weight fallback_weight) and the edges the
// trie's prefix search found (trie.cu, ordered by start then end), each weighted by its value.
// The path is solved forward: at each character start its fallback edge, then its first
// max_edges_per_start edges (0: all), each replacing the best path into its end only on a
// strictly higher score, so the first of equal paths stays (PieceTokenizer's BytePieceTokenizer).
// mode flags give SentencePiece's EncodeOptimized instead: GT_LATTICE_FALLBACK_IF_NO_CHAR (the
// fallback edge only at a character where no edge of exactly that character starts) and
// GT_LATTICE_FLOAT32 (every path score is rounded to float before it is compared and kept, as
// SentencePiece's float best_path_score; its ids agree with this on ties, not with a double
// comparison). One thread per span shorter than long_bytes: its work is linear in the span's bytes
// plus its edges; spans of a batch run in parallel. Longer spans (a 1 MB pre-token) are cut into
// pieces of about a chunk solved on their own threads (the end of the file). Character starts
// follow utf8_sequence_at (a malformed byte is one character), as the prefix search does.
#include "utf8.cuh"
#include "step_counter.cuh"
#include "lookback.cuh"
#include "tile_scan.cuh"
#include "order_key.cuh"

#define GT_LATTICE_NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))
#define GT_LATTICE_FALLBACK_IF_NO_CHAR 1
#define GT_LATTICE_FLOAT32 2

// The score kept for a path: as computed, or rounded to float (a float stays exactly a double).
__device__ __forceinline__ double lattice_kept(double score, i64 mode) {
    return (mode & GT_LATTICE_FLOAT32) ? static_cast<double>(static_cast<float>(score)) : score;
}

// Pass 1: the best path into every byte of span s, in its scratch rows (scratch_offsets[s] = the
// sum of (length + 1) of the spans before it), and its token count.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_route(const u8* __restrict__ data, const i64* __restrict__ span_starts, const i64* __restrict__ span_ends,
              i64 n_spans, const i64* __restrict__ edge_starts, const i64* __restrict__ edge_ends,
              const int* __restrict__ edge_values, const i64* __restrict__ span_edge_offsets,
              const double* __restrict__ weights, double fallback_weight, i64 max_edges_per_start,
              i64 mode, const i64* __restrict__ scratch_offsets, double* __restrict__ score, i64* __restrict__ route,
              int* __restrict__ value, i64* __restrict__ token_counts, i64 long_bytes) {
    const i64 s = global_thread_index();
    if (s >= n_spans) return;
    const i64 begin = span_starts[s], end = span_ends[s], n = end - begin, row = scratch_offsets[s];
    if (long_bytes > 0 && n >= long_bytes) return;  // in pieces (lattice_pieces ...)
    double* sc = score + row;
    i64* rt = route + row;
    int* va = value + row;
    for (i64 k = 0; k <= n; ++k) {
        sc[k] = GT_LATTICE_NEG_INF;
        rt[k] = k;
        va[k] = -1;
    }
    sc[0] = 0.0;
    i64 e = span_edge_offsets[s];
    const i64 e_hi = span_edge_offsets[s + 1];
    for (i64 p = begin; p < end;) {
        u32 cp;
        int length = utf8_sequence_at(data + p, end - p, &cp);
        if (length < 1) length = 1;
        const double here = sc[p - begin];
        i64 stop = p + length - begin;
        const bool only_if_no_char = (mode & GT_LATTICE_FALLBACK_IF_NO_CHAR) != 0;
        const double fallback = lattice_kept(here + fallback_weight, mode);
        if (!only_if_no_char && fallback > sc[stop]) {
            sc[stop] = fallback;
            rt[stop] = p - begin;
            va[stop] = -1;
        }
        while (e < e_hi && edge_starts[e] < p) ++e;  // edges at starts that are not character starts
        i64 taken = 0;
        bool char_edge = false;
        for (; e < e_hi && edge_starts[e] == p; ++e, ++taken) {
            if (max_edges_per_start > 0 && taken >= max_edges_per_start) continue;
            const i64 to = edge_ends[e] - begin;
            char_edge |= to == stop;
            const double candidate = lattice_kept(here + weights[edge_values[e]], mode);
            if (candidate > sc[to]) {
                sc[to] = candidate;
                rt[to] = p - begin;
                va[to] = edge_values[e];
            }
        }
        if (only_if_no_char && !char_edge && fallback > sc[stop]) {
            sc[stop] = fallback;
            rt[stop] = p - begin;
            va[stop] = -1;
        }
        GT_STEP();
        p += length;
    }
    i64 count = 0;
    for (i64 k = n; k > 0; k = rt[k]) ++count;
    token_counts[s] = count;
}

// Pass 2: each span's tokens (start, end, value; -1 for a fallback character) from token_offsets[s].
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_emit(const i64* __restrict__ span_starts, const i64* __restrict__ span_ends, i64 n_spans,
             const i64* __restrict__ scratch_offsets, const i64* __restrict__ route, const int* __restrict__ value,
             const i64* __restrict__ token_offsets, i64* __restrict__ starts, i64* __restrict__ ends,
             int* __restrict__ values, i64 long_bytes) {
    const i64 s = global_thread_index();
    if (s >= n_spans || (long_bytes > 0 && span_ends[s] - span_starts[s] >= long_bytes)) return;
    const i64 begin = span_starts[s], row = scratch_offsets[s];
    i64 out = token_offsets[s + 1];
    for (i64 k = span_ends[s] - begin; k > 0;) {  // backward from the end: the last token first
        --out;
        const i64 start = route[row + k];
        starts[out] = begin + start;
        ends[out] = begin + k;
        values[out] = value[row + k];
        k = start;
    }
}

// ------------------------------------------------------------ long spans in pieces
// A span of at least long_bytes bytes (a Chinese line as one pre-token, 'a' * 2^20) is cut where no
// edge crosses: every path passes such a cut point c, so the best paths past c depend on the span's
// start only through the score at c (the head of the piece after c), and a piece is solved alone
// given its head. The span's first piece has head 0: exact. Each other piece gets a table, as
// segment.cu's pieces do (there backward, here forward): solved from heads next to an estimate of
// its exact head (the earlier pieces' values from head 0 added up), one per residue class of heads
// modulo 2 u_top (u_top the spacing of the highest binade its scores reach; in float32 mode the
// float's spacing), with every score kept more than a margin from its binade's edges, each
// addition (and float rounding) shifts by exactly what the head shifts, ties included, so the
// piece's choices and its value minus its head hold for every head of that class near the
// estimate. Where an anchor's window holds no cut point ('a' * 2^20 under 'a', 'aa', 'aaa'; a run
// of one Han character), a forced cut in its middle: its frontier is the starts of the edges crossing
// it and the cut itself (at most GT_LFRONT), the piece after it is solved from the frontier's values
// (those edges relaxed first), and a piece with a forced cut at either end carries vectors: per
// entry (frontier position at its start) a solve with only that entry live gives its values at each
// exit (frontier position at its end); the exits are the max over the entries (rounding is
// monotone), and per entry and class a table, as above. The backward token walk: from each exit,
// the entry it leaves by and its tokens; the span's walk then picks each piece's exit from its end.
// Kernels (per-thread work: a few solves of a piece, about a chunk each; the scans of the pieces by
// tiles of blockDim anchors, tile_scan.cuh: 2 log2(blockDim) + 2 log2(tiles) steps a thread at most):
//   lattice_cuts      per anchor (every chunk_bytes-th byte): the first cut point at or after it in
//                     its long span, within one chunk (edges by start; their running maximum end),
//                     else a forced cut and its frontier.
//   lattice_pieces    per piece: a long span's start or an anchor's cut to the next cut or the span's
//                     end; the first piece solved exactly, the others from head 0 (value, range; a
//                     solve per entry).
//   lattice_estimate  (twice) per piece, a tile of them a block: a solve per entry from its rough head
//                     (the first pass's scan of the tile's values from head 0, lattice_heads), then
//                     from the first pass's estimate; a scan: estimates and errors (lattice_heads).
//   lattice_settle    per (piece, class): one class solve (at most two, around a binade edge).
//   lattice_settle_front  per (piece with a forced cut, entry, class): one class solve.
//   lattice_zone_split    per piece with a forced cut: where its scores cross one binade edge, its
//                     zone (two passes from the estimates) and the frontiers at the zone's ends.
//   lattice_settle_zone   per (split piece, entry, class of 2): a class solve of each part.
//   lattice_resolve   a tile of anchors a block: the pieces' steps as max-plus matrices scanned in
//                     segments (between pieces of other kinds, in one binade) with the bounds their
//                     tables' windows put on each segment's start; per long span, from its start, a
//                     jump per segment whose bounds hold, else a step per piece by its table (a split
//                     piece's zone solved exactly, an exact solve where no valid entry exists; below).
//   lattice_finish    per piece: the exact solve from its exact head or entries (table-settled
//                     pieces; one in a jumped segment: its product applied to the segment's start), from each exit
//                     the route back to its start (entry, tokens), a tile of pieces a block; a scan
//                     from the last anchor: each piece's exit and tokens after it (finish_scans).
//   lattice_emit_pieces  per piece: its tokens from its exit (a step per token).
#define GT_LSLOT_I 9  // start, end, next, previous, state, span, tokens, tokens of the later pieces, exit
#define GT_LSLOT_F 18 // value from head 0, lowest, highest, estimate, error, exact head, delta per class,
                      // a split piece's part after the zone: head estimate, error; the rough delta, the
                      // rough head
#define GT_LCLASSES 8
#define GT_LRING 64
// Forced cuts (a window of an anchor without a cut point: 'a' * 2^20 under 'a', 'aa', 'aaa'): the
// cut b at the window's middle and its frontier, the starts of the edges crossing b and b itself (at
// most GT_LFRONT positions, offsets from b, ascending). A piece whose start or end is a forced cut
// keeps per slot (GT_LVF doubles): A[j][i] its values at exit j with only entry i live from 0 (0),
// the lowest of those solves per entry (16), rough heads (20), rough deltas R[j][i] (24), estimates
// (40), errors (44), the exact entry values (48), the class tables D[j][i][c] (52); and GT_LVI ints:
// per exit j, the entry its path leaves by and its token count (2j, 2j + 1); per entry i, the
// binade and classes of its table (8 + 2i, 9 + 2i).
#define GT_LFRONT 4
#define GT_LVF (52 + GT_LFRONT * GT_LFRONT * GT_LCLASSES + 4 * GT_LFRONT * GT_LFRONT + 2 * GT_LFRONT)
#define GT_LVF_D3 (52 + GT_LFRONT * GT_LFRONT * GT_LCLASSES)  // a split piece's part after its zone: D3[j][i][c]
#define GT_LVF_D1 (GT_LVF_D3 + 2 * GT_LFRONT * GT_LFRONT)  // the part before its zone: D1[j][i][c]
#define GT_LVF_E3 (GT_LVF_D1 + 2 * GT_LFRONT * GT_LFRONT)  // the part after: its entries' estimates, errors
#define GT_LVI 24  // ... 16: zone start z1, end z2, z1's frontier (n, packed), z2's, split (1), e_top
#define GT_LSLOT_EXACT 1
#define GT_LSLOT_PENDING 2
#define GT_LSLOT_CERTAIN 3
#define GT_LSLOT_PENDING_FRONT 4  // pending, with a forced cut at either end

struct LatticeArgs {
    const u8* data;
    const i64* span_starts;
    const i64* span_ends;
    const i64* edge_starts;
    const i64* edge_ends;
    const int* edge_values;
    const i64* span_edge_offsets;
    const double* weights;
    double fallback_weight;
    i64 max_edges_per_start;
    i64 mode;
};

// Offsets are above -GT_LRING: a byte each, packed in one register.
struct LFront {
    int n;
    u32 packed;
    __device__ __forceinline__ int off(int i) const { return (int)(signed char)(packed >> (8 * i)); }
};

// The frontier of anchor `anchor`'s cut ({0}: a cut point, a span's start or end, anchor < 0).
__device__ __forceinline__ LFront lattice_front(const int* front_n, const int* front_off, i64 anchor) {
    LFront f;
    f.n = anchor >= 0 ? front_n[anchor] : 1;
    f.packed = 0;
    for (int i = 0; i < GT_LFRONT; ++i)
        if (f.n > 1 && i < f.n) f.packed |= (u32)(front_off[GT_LFRONT * anchor + i] & 0xff) << (8 * i);
    return f;
}

__device__ __forceinline__ int lattice_binade(double x) {
    int e;
    frexp(x, &e);
    return e;
}

__device__ __forceinline__ bool lattice_exact_sum(double a, double b, double sum) {
    const double bb = sum - a;
    return (a - (sum - bb)) + (b - bb) == 0.0;
}

// The first edge of span s starting at or after p (edges of a span are ordered by start).
__device__ __forceinline__ i64 first_edge_from(const LatticeArgs& g, i64 s, i64 p) {
    i64 lo = g.span_edge_offsets[s], hi = g.span_edge_offsets[s + 1];
    while (lo < hi) {
        const i64 mid = lo + (hi - lo) / 2;
        if (g.edge_starts[mid] < p) lo = mid + 1; else hi = mid;
    }
    return lo;
}

__device__ __forceinline__ int char_length(const u8* data, i64 p, i64 end) {
    u32 cp;
    const int length = utf8_sequence_at(data + p, end - p, &cp);
    return length < 1 ? 1 : length;
}

// lattice_route's pass over the piece [a, b) of span s (begin its start) from `head` at a, exactly,
// into the span's scratch rows (positions after a; a's own entries are the previous piece's).
// With a frontier `in` (a forced cut at a: in_x its exact values, head = the last), the edges from its
// positions before a that cross a are relaxed first, in order, as a pass over the whole span does
// before it reaches a. Edges ending after b (a forced cut) are the next piece's.
__device__ void lattice_solve(const LatticeArgs& g, i64 s, i64 begin, i64 a, i64 b, double head, double* sc,
                              i64* rt, int* va, const LFront* in = nullptr, const double* in_x = nullptr) {
    for (i64 k = a - begin + (a == begin ? 0 : 1); k <= b - begin; ++k) {
        GT_STEP();
        sc[k] = GT_LATTICE_NEG_INF;
        rt[k] = k;
        va[k] = -1;
    }
    if (a == begin) sc[0] = head;
    const i64 e_hi = g.span_edge_offsets[s + 1];
    const bool only_if_no_char = (g.mode & GT_LATTICE_FALLBACK_IF_NO_CHAR) != 0;
    for (int i = 0; in && i + 1 < in->n; ++i) {
        const i64 f = a + in->off(i);
        i64 taken = 0;
        for (i64 e = first_edge_from(g, s, f); e < e_hi && g.edge_starts[e] == f; ++e, ++taken) {
            GT_STEP();
            const i64 to = g.edge_ends[e] - begin;
            if ((g.max_edges_per_start > 0 && taken >= g.max_edges_per_start) || to <= a - begin || to > b - begin)
                continue;
            const double candidate = lattice_kept(in_x[i] + g.weights[g.edge_values[e]], g.mode);
            if (candidate > sc[to]) {
                sc[to] = candidate;
                rt[to] = f - begin;
                va[to] = g.edge_values[e];
            }
        }
    }
    i64 e = first_edge_from(g, s, a);
    for (i64 p = a; p < b;) {
        GT_STEP();
        const int length = char_length(g.data, p, b);
        const double here = p == a ? head : sc[p - begin];
        const i64 stop = p + length - begin;
        const double fallback = lattice_kept(here + g.fallback_weight, g.mode);
        if (!only_if_no_char && fallback > sc[stop]) {
            sc[stop] = fallback;
            rt[stop] = p - begin;
            va[stop] = -1;
        }
        while (e < e_hi && g.edge_starts[e] < p) ++e;
        i64 taken = 0;
        bool char_edge = false;
        for (; e < e_hi && g.edge_starts[e] == p; ++e, ++taken) {
            GT_STEP();
            if (g.max_edges_per_start > 0 && taken >= g.max_edges_per_start) continue;
            const i64 to = g.edge_ends[e] - begin;
            char_edge |= to == stop;
            if (to > b - begin) continue;
            const double candidate = lattice_kept(here + g.weights[g.edge_values[e]], g.mode);
            if (candidate > sc[to]) {
                sc[to] = candidate;
                rt[to] = p - begin;
                va[to] = g.edge_values[e];
            }
        }
        if (only_if_no_char && !char_edge && fallback > sc[stop]) {
            sc[stop] = fallback;
            rt[stop] = p - begin;
            va[stop] = -1;
        }
        p += length;
    }
}

// The relaxations leaving the character at p (< b) of span s from its score `here`, in the order a
// whole-span pass makes them: keep(p, to, v) for the fallback and each taken edge (*e walks the span's
// edges up to e_hi). The ring slots of the character's bytes are cleared first (they become the scores
// of p + GT_LRING on). With too_long (or null): set, and the relaxing stopped, at an edge of GT_LRING
// bytes or more, which the ring cannot hold. Returns the character's length.
template <typename Keep>
__device__ __forceinline__ int lattice_relax(const LatticeArgs& g, i64 p, i64 b, double here, double* ring, i64* e,
                                             i64 e_hi, bool* too_long, Keep keep) {
    const int length = char_length(g.data, p, b);
    for (int k = 0; k < length; ++k) ring[(p + k) & (GT_LRING - 1)] = GT_LATTICE_NEG_INF;
    const bool only_if_no_char = (g.mode & GT_LATTICE_FALLBACK_IF_NO_CHAR) != 0;
    const double fallback = lattice_kept(here + g.fallback_weight, g.mode);
    if (!only_if_no_char) keep(p, p + length, fallback);
    while (*e < e_hi && g.edge_starts[*e] < p) ++*e;
    i64 taken = 0;
    bool char_edge = false;
    for (; *e < e_hi && g.edge_starts[*e] == p; ++*e, ++taken) {
        GT_STEP();
        if (g.max_edges_per_start > 0 && taken >= g.max_edges_per_start) continue;
        if (too_long && g.edge_ends[*e] - p >= GT_LRING) {
            *too_long = true;
            return length;
        }
        char_edge |= g.edge_ends[*e] == p + length;
        keep(p, g.edge_ends[*e], lattice_kept(here + g.weights[g.edge_values[*e]], g.mode));
    }
    if (only_if_no_char && !char_edge) keep(p, p + length, fallback);
    return length;
}

// Whether |v| lies inside binade e_top or below, more than `margin` from its binade's edges: where a
// piece's tables hold (see lattice_settle).
__device__ __forceinline__ bool lattice_inside_binade(double v, double margin, int e_top) {
    const double size = fabs(v);
    const int e = lattice_binade(v);
    return size > 0.0 && e <= e_top && size - ldexp(1.0, e - 1) > margin && ldexp(1.0, e) - size > margin;
}

// The score at b of the piece [a, b) of span s from `head`, the same arithmetic keeping only a ring of
// the next GT_LRING scores (NaN when an edge is GT_LRING bytes or longer). With margin >= 0, *ok
// (or null) turns false when a score comes within `margin` of its binade's edges or lies above
// binade e_top; `range` (or null) gets the lowest and highest finite score.
__device__ double lattice_values(const LatticeArgs& g, i64 s, i64 a, i64 b, double head, double margin, int e_top,
                                 double* range, bool* ok = nullptr) {
    double ring[GT_LRING];
    for (int k = 0; k < GT_LRING; ++k) ring[k] = GT_LATTICE_NEG_INF;
    ring[a & (GT_LRING - 1)] = head;
    bool fine = true;
    auto keep = [&](i64, i64 to, double v) {
        if (v == GT_LATTICE_NEG_INF) return;
        if (range) {
            range[0] = v < range[0] ? v : range[0];
            range[1] = v > range[1] ? v : range[1];
        }
        if (margin >= 0.0) fine &= lattice_inside_binade(v, margin, e_top);
        double* slot = ring + (to & (GT_LRING - 1));
        *slot = v > *slot ? v : *slot;
    };
    const i64 e_hi = g.span_edge_offsets[s + 1];
    i64 e = first_edge_from(g, s, a);
    bool too_long = false;
    for (i64 p = a; p < b;) {
        GT_STEP();
        p += lattice_relax(g, p, b, ring[p & (GT_LRING - 1)], ring, &e, e_hi, &too_long, keep);
        if (too_long) {
            if (ok) *ok = false;
            return nan("");
        }
    }
    if (ok) *ok = fine;
    return ring[b & (GT_LRING - 1)];
}

// lattice_values for a piece [a, b) with a frontier `in` at a and `out` at b: entry `live` holds
// `head`, the others -inf; out_values[j] gets the score at b + out.off(j). True when no score comes
// within `margin` of its binade's edges or lies above binade e_top (margin < 0: always);
// *lowest (or null) gets the lowest finite score. Per thread: the piece's bytes and edges, once.
__device__ bool lattice_front_values(const LatticeArgs& g, i64 s, i64 a, i64 b, const LFront& in, int live,
                                     double head, const LFront& out, double* out_values, double margin, int e_top,
                                     double* lowest) {
    double ring[GT_LRING];
    for (int k = 0; k < GT_LRING; ++k) ring[k] = GT_LATTICE_NEG_INF;
    for (int j = 0; j < GT_LFRONT; ++j) out_values[j] = nan("");
    bool fine = true;
    auto keep = [&](i64, i64 to, double v) {
        if (v == GT_LATTICE_NEG_INF) return;
        if (lowest) *lowest = v < *lowest ? v : *lowest;
        if (margin >= 0.0) fine &= lattice_inside_binade(v, margin, e_top);
        double* slot = ring + (to & (GT_LRING - 1));
        *slot = v > *slot ? v : *slot;
    };
    const i64 e_hi = g.span_edge_offsets[s + 1];
    if (live == in.n - 1) {
        ring[a & (GT_LRING - 1)] = head;
    } else {  // an earlier entry: its edges crossing a (lattice_cuts kept them under GT_LRING bytes)
        const i64 f = a + in.off(live);
        i64 taken = 0;
        for (i64 e = first_edge_from(g, s, f); e < e_hi && g.edge_starts[e] == f; ++e, ++taken) {
            GT_STEP();
            if ((g.max_edges_per_start > 0 && taken >= g.max_edges_per_start) || g.edge_ends[e] <= a) continue;
            keep(f, g.edge_ends[e], lattice_kept(head + g.weights[g.edge_values[e]], g.mode));
        }
    }
    i64 e = first_edge_from(g, s, a);
    bool too_long = false;
    for (i64 p = a; p < b;) {
        GT_STEP();
        const double here = ring[p & (GT_LRING - 1)];
        for (int j = 0; j < out.n; ++j) out_values[j] = b + out.off(j) == p ? here : out_values[j];
        p += lattice_relax(g, p, b, here, ring, &e, e_hi, &too_long, keep);
        if (too_long) return false;
    }
    for (int j = 0; j < out.n; ++j) out_values[j] = out.off(j) == 0 ? ring[b & (GT_LRING - 1)] : out_values[j];
    return fine;
}

// lattice_front_values with every entry live (xs[i] at in's position i): the exact values at out's
// positions. With p_lo (or null): the first start relaxing a score of size edge - margin or more
// (*p_lo, b when none) and the last relaxing one of size edge + margin or less (*p_hi, -1 when none).
__device__ void lattice_all_values(const LatticeArgs& g, i64 s, i64 a, i64 b, const LFront& in, const double* xs,
                                   const LFront& out, double* out_values, double edge, double margin, i64* p_lo,
                                   i64* p_hi) {
    double ring[GT_LRING];
    for (int k = 0; k < GT_LRING; ++k) ring[k] = GT_LATTICE_NEG_INF;
    for (int j = 0; j < GT_LFRONT; ++j) out_values[j] = nan("");
    i64 lo = b, hi = -1;
    auto keep = [&](i64 from, i64 to, double v) {
        if (v == GT_LATTICE_NEG_INF) return;
        if (p_lo && fabs(v) >= edge - margin) lo = from < lo ? from : lo;
        if (p_lo && fabs(v) <= edge + margin) hi = from > hi ? from : hi;
        double* slot = ring + (to & (GT_LRING - 1));
        *slot = v > *slot ? v : *slot;
    };
    const i64 e_hi = g.span_edge_offsets[s + 1];
    ring[a & (GT_LRING - 1)] = xs[in.n - 1];
    for (int i = 0; i + 1 < in.n; ++i) {
        const i64 f = a + in.off(i);
        i64 taken = 0;
        for (i64 e = first_edge_from(g, s, f); e < e_hi && g.edge_starts[e] == f; ++e, ++taken) {
            GT_STEP();
            if ((g.max_edges_per_start > 0 && taken >= g.max_edges_per_start) || g.edge_ends[e] <= a) continue;
            keep(f, g.edge_ends[e], lattice_kept(xs[i] + g.weights[g.edge_values[e]], g.mode));
        }
    }
    i64 e = first_edge_from(g, s, a);
    for (i64 p = a; p < b;) {
        GT_STEP();
        const double here = ring[p & (GT_LRING - 1)];
        for (int j = 0; j < out.n; ++j) out_values[j] = b + out.off(j) == p ? here : out_values[j];
        p += lattice_relax(g, p, b, here, ring, &e, e_hi, nullptr, keep);
    }
    for (int j = 0; j < out.n; ++j) out_values[j] = out.off(j) == 0 ? ring[b & (GT_LRING - 1)] : out_values[j];
    if (p_lo) {
        *p_lo = lo;
        *p_hi = hi;
    }
}

// The frontier of an inner position z of span s (a character start): the starts after `after` of the
// (taken) edges crossing z, and z; n = 0 when more than GT_LFRONT or an edge starts at or before `after`.
__device__ LFront lattice_front_at(const LatticeArgs& g, i64 s, i64 z, i64 after) {
    LFront f;
    f.n = 0;
    f.packed = 0;
    const i64 e_hi = g.span_edge_offsets[s + 1], begin = g.span_starts[s], end = g.span_ends[s];
    int count = 0;
    for (i64 e = first_edge_from(g, s, z - GT_LRING); e < e_hi && g.edge_starts[e] < z;) {
        const i64 f0 = g.edge_starts[e];
        i64 taken = 0;
        bool crosses = false;
        for (; e < e_hi && g.edge_starts[e] == f0; ++e, ++taken) {
            GT_STEP();
            if ((g.max_edges_per_start > 0 && taken >= g.max_edges_per_start) || g.edge_ends[e] <= z) continue;
            crosses = true;
        }
        if (!crosses || !utf8_starts_char(g.data, f0, begin, end)) continue;
        if (count == GT_LFRONT - 1 || f0 <= after) return f;
        f.packed |= (u32)((int)(f0 - z) & 0xff) << (8 * count++);
        }
    f.n = count + 1;
    return f;
}

// The crossing of a piece whose scores cross the binade edge `edge` (|score| = edge), from `head`:
// *c1 the last cut point (no edge crosses it; a is one) before the first start relaxing a score not
// below edge - margin, *c2 the first cut point after the last start relaxing a score not above
// edge + margin (or b) and *at_c2 the score there (*c1 = *c2 = -1 when no score comes near or an
// edge is too long). Per thread: the piece's bytes and edges, once.
__device__ void lattice_zone(const LatticeArgs& g, i64 s, i64 a, i64 b, double head, double edge, double margin,
                             i64* c1, i64* c2, double* at_c2) {
    double ring[GT_LRING];
    for (int k = 0; k < GT_LRING; ++k) ring[k] = GT_LATTICE_NEG_INF;
    ring[a & (GT_LRING - 1)] = head;
    *c1 = a;
    *c2 = -1;
    bool seen = fabs(head) >= edge - margin;
    i64 reach = a;
    const i64 e_hi = g.span_edge_offsets[s + 1];
    const bool only_if_no_char = (g.mode & GT_LATTICE_FALLBACK_IF_NO_CHAR) != 0;
    i64 e = first_edge_from(g, s, a);
    for (i64 p = a; p < b;) {
        GT_STEP();
        const int length = char_length(g.data, p, b);
        const double here = ring[p & (GT_LRING - 1)];
        for (; e < e_hi && g.edge_starts[e] < p; ++e) reach = g.edge_ends[e] > reach ? g.edge_ends[e] : reach;
        if (p > a && reach <= p) {  // a cut point
            if (!seen) {
                *c1 = p;
            } else if (*c2 < 0 && fabs(here) > edge + margin) {
                *c2 = p;
                *at_c2 = here;
            }
        }
        for (int k = 0; k < length; ++k) ring[(p + k) & (GT_LRING - 1)] = GT_LATTICE_NEG_INF;
        bool not_below = false, not_above = false;
        auto keep = [&](i64 to, double v) {
            if (v == GT_LATTICE_NEG_INF) return;
            not_below |= fabs(v) >= edge - margin;
            not_above |= fabs(v) <= edge + margin;
            double* slot = ring + (to & (GT_LRING - 1));
            *slot = v > *slot ? v : *slot;
        };
        const double fallback = lattice_kept(here + g.fallback_weight, g.mode);
        if (!only_if_no_char) keep(p + length, fallback);
        i64 taken = 0;
        bool char_edge = false;
        for (; e < e_hi && g.edge_starts[e] == p; ++e, ++taken) {
            GT_STEP();
            reach = g.edge_ends[e] > reach ? g.edge_ends[e] : reach;
            if (g.max_edges_per_start > 0 && taken >= g.max_edges_per_start) continue;
            if (g.edge_ends[e] - p >= GT_LRING) {
                *c1 = *c2 = -1;
                return;
            }
            char_edge |= g.edge_ends[e] == p + length;
            keep(g.edge_ends[e], lattice_kept(here + g.weights[g.edge_values[e]], g.mode));
        }
        if (only_if_no_char && !char_edge) keep(p + length, fallback);
        seen |= not_below;
        if (seen && not_above) *c2 = -1;
        p += length;
    }
    if (!seen) {
        *c1 = *c2 = -1;
    } else if (*c2 < 0) {
        *c2 = b;
        *at_c2 = ring[b & (GT_LRING - 1)];
    }
}

// The span holding byte pos among spans sorted by start (-1 when none holds it).
__device__ __forceinline__ i64 span_of(const LatticeArgs& g, i64 n_spans, i64 pos) {
    i64 lo = 0, hi = n_spans;
    while (lo < hi) {
        const i64 mid = lo + (hi - lo) / 2;
        if (g.span_starts[mid] <= pos) lo = mid + 1; else hi = mid;
    }
    return lo > 0 && pos < g.span_ends[lo - 1] ? lo - 1 : -1;
}

#define LATTICE_ARGS                                                                                        \
    const u8 *__restrict__ data, const i64 *__restrict__ span_starts, const i64 *__restrict__ span_ends,    \
        i64 n_spans, const i64 *__restrict__ edge_starts, const i64 *__restrict__ edge_ends,                 \
        const int *__restrict__ edge_values, const i64 *__restrict__ span_edge_offsets,                      \
        const double *__restrict__ weights, double fallback_weight, i64 max_edges_per_start, i64 mode
#define LATTICE_G                                                                                           \
    const LatticeArgs g = {data, span_starts, span_ends, edge_starts, edge_ends, edge_values, span_edge_offsets, \
                           weights, fallback_weight, max_edges_per_start, mode}

// Per thread: one edge: marks its span when it is GT_LRING bytes or longer (such spans are not cut:
// lattice_cuts looks back GT_LRING bytes for the edges crossing a candidate, as the class solves do).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_long_edges(const i64* __restrict__ edge_starts, const i64* __restrict__ edge_ends, i64 n_edges,
                   const i64* __restrict__ span_edge_offsets, i64 n_spans, int* __restrict__ long_edge) {
    const i64 e = global_thread_index();
    if (e >= n_edges || edge_ends[e] - edge_starts[e] < GT_LRING) return;
    i64 lo = 0, hi = n_spans;  // the span whose edges hold e: the last s with span_edge_offsets[s] <= e
    while (hi - lo > 1) {
        const i64 mid = lo + (hi - lo) / 2;
        if (span_edge_offsets[mid] <= e) lo = mid; else hi = mid;
    }
    atomicOr(long_edge + lo, 1);
}

// Per thread: one anchor; at most a chunk of character starts past it and the edges starting there
// or up to GT_LRING bytes before. Where the window [anchor, anchor + chunk) lies in the span and
// holds no cut point, a forced cut b at its middle with its frontier: the starts of the (taken)
// edges crossing b, each edge under half a chunk (so the frontier lies inside the piece before b
// and the piece after b's exits after its start), and b (no cut when more than GT_LFRONT).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_cuts(LATTICE_ARGS, i64 long_bytes, i64 chunk_bytes, i64 n_anchors, const int* __restrict__ long_edge,
             i64* __restrict__ cuts, i64* __restrict__ cut_spans, i64* __restrict__ slot_i, int* __restrict__ front_n,
             int* __restrict__ front_off) {
    const i64 j = global_thread_index();
    if (j >= n_anchors) return;
    LATTICE_G;
    cuts[j] = -1;
    front_n[j] = 1;
    slot_i[GT_LSLOT_I * j + 4] = 0;
    slot_i[GT_LSLOT_I * (n_anchors + j) + 4] = 0;
    const i64 anchor = j * chunk_bytes;
    const i64 s = span_of(g, n_spans, anchor);
    if (s < 0) return;
    const i64 begin = span_starts[s], end = span_ends[s];
    if (end - begin < long_bytes || anchor <= begin || long_edge[s]) return;
    const i64 e_hi = span_edge_offsets[s + 1];
    i64 p = anchor;
    while (p < end && !utf8_starts_char(data, p, begin, end)) ++p;
    i64 e = first_edge_from(g, s, p - GT_LRING), reach = 0;  // edges before e start before p
    const i64 stop = anchor + chunk_bytes < end ? anchor + chunk_bytes : end;
    while (p < stop) {
        GT_STEP();
        for (; e < e_hi && edge_starts[e] < p; ++e) {
            GT_STEP();
            reach = edge_ends[e] > reach ? edge_ends[e] : reach;
        }
        if (reach <= p) {
            cuts[j] = p;
            cut_spans[j] = s;
            return;
        }
        p += char_length(data, p, end);
    }
    if (stop != anchor + chunk_bytes) return;
    i64 b = anchor + chunk_bytes / 2;
    while (b < stop && !utf8_starts_char(data, b, begin, end)) ++b;
    int offs[GT_LFRONT];
    int count = 0;
    for (e = first_edge_from(g, s, b - GT_LRING); e < e_hi && edge_starts[e] < b;) {
        const i64 f = edge_starts[e];
        i64 taken = 0;
        bool crosses = false;
        for (; e < e_hi && edge_starts[e] == f; ++e, ++taken) {
            GT_STEP();
            if ((max_edges_per_start > 0 && taken >= max_edges_per_start) || edge_ends[e] <= b) continue;
            if (2 * (edge_ends[e] - f) + 8 > chunk_bytes) return;
            crosses = true;
        }
        if (!crosses || !utf8_starts_char(data, f, begin, end)) continue;  // never relaxed: not a character start
        if (count == GT_LFRONT - 1) return;
        offs[count++] = (int)(f - b);
    }
    offs[count++] = 0;
    for (int k = 0; k < count; ++k) front_off[GT_LFRONT * j + k] = offs[k];
    front_n[j] = count;
    cuts[j] = b;
    cut_spans[j] = s;
}

// ------------------------------------------------------------ heads along the long spans, by tiles
// lattice_estimate's blocks give each piece a head: its entries' values x, the earlier pieces' steps
// applied from the span's start (x = 0), x'[j] = max over i of x[i] + M[j][i] (exit j, entry i; a piece
// without forced cuts: x'[0] = x[0] + M[0][0], its value from head 0 or its rough delta). The steps
// compose as max-plus matrices, associatively in exact arithmetic, so the anchors are scanned as
// tile_scan.cuh scans (a tile of GT_BLOCK anchors a block, the tiles' products combined in a fixed
// order: the same bits every run, whichever blocks run first). In floating point the sums round in
// another order than one piece after the other: the heads are estimates either way, and the tables
// hold only where lattice_resolve finds the exact head within the error of the estimate, solving the
// piece exactly where it is not. Estimates' errors count the earlier pieces and bytes, summed exactly
// along (whole numbers). A product: M (row-major), bytes, pieces, and 1 where its range holds a span's
// second piece (it then starts from the span's first piece, x = 0).
#define GT_LMP 19
// later = later q, max-plus products of GT_LFRONT x GT_LFRONT matrices (row-major), row by row: a row
// of the product needs only that row of later.
__device__ __forceinline__ void maxplus_after(double* later, const double* q) {
    for (int j = 0; j < GT_LFRONT; ++j) {
        double y[GT_LFRONT];
        for (int c = 0; c < GT_LFRONT; ++c) {
            y[c] = GT_LATTICE_NEG_INF;
            for (int i = 0; i < GT_LFRONT; ++i) {
                const double v = later[GT_LFRONT * j + i] + q[GT_LFRONT * i + c];
                y[c] = v > y[c] ? v : y[c];
            }
        }
        for (int c = 0; c < GT_LFRONT; ++c) later[GT_LFRONT * j + c] = y[c];
    }
}

// counter: long spans, then the tile counters of lattice_estimate's two passes, lattice_finish and
// lattice_resolve; after them the tile flags of the scans (tile_scan.cuh): rough heads, estimates
// (twice), exits, segments; then per span the tiles of its pieces lattice_resolve has scanned
#define GT_LCOUNTERS 5

struct HeadSteps {
    i64 n_anchors;
    const i64* slot_i;
    double* slot_f;
    const int* front_n;
    const int* front_off;
    double* vec_f;
    int matrix, scalar;  // where a step is: vec_f (pieces with forced cuts), slot_f (the others)

    // M[j][i] of piece t's step (read through L2: written by other blocks)
    __device__ __forceinline__ double at(i64 t, const LFront& in, const LFront& out, int j, int i) const {
        if (in.n > 1 || out.n > 1)
            return j < out.n && i < in.n ? __ldcg(vec_f + GT_LVF * t + matrix + GT_LFRONT * j + i) : GT_LATTICE_NEG_INF;
        return j == 0 && i == 0 ? __ldcg(slot_f + GT_LSLOT_F * t + scalar) : GT_LATTICE_NEG_INF;
    }
    __device__ __forceinline__ LFront in(i64 t) const { return lattice_front(front_n, front_off, t < n_anchors ? t : -1); }
    __device__ __forceinline__ LFront out(i64 t) const { return lattice_front(front_n, front_off, slot_i[GT_LSLOT_I * t + 2]); }
    __device__ __forceinline__ double bytes(i64 t) const {
        return (double)(slot_i[GT_LSLOT_I * t + 1] - slot_i[GT_LSLOT_I * t]);
    }
    // p = M_t p in its first `columns` columns, column by column (a column of the product needs only
    // that column of p)
    __device__ __forceinline__ void apply(i64 t, double* p, int columns) const {
        const LFront fi = in(t), fo = out(t);
        if (fi.n == 1 && fo.n == 1) {
            const double d = __ldcg(slot_f + GT_LSLOT_F * t + scalar);
            for (int c = 0; c < columns; ++c) {
                p[c] += d;
                for (int j = 1; j < GT_LFRONT; ++j) p[GT_LFRONT * j + c] = GT_LATTICE_NEG_INF;
            }
        } else {
            const double* m = vec_f + GT_LVF * t + matrix;
            for (int c = 0; c < columns; ++c) {
                double y[GT_LFRONT];
                for (int j = 0; j < GT_LFRONT; ++j) {
                    y[j] = GT_LATTICE_NEG_INF;
                    for (int i = 0; i < fi.n && j < fo.n; ++i) {
                        const double v = p[GT_LFRONT * i + c] + __ldcg(m + GT_LFRONT * j + i);
                        y[j] = v > y[j] ? v : y[j];
                    }
                }
                for (int j = 0; j < GT_LFRONT; ++j) p[GT_LFRONT * j + c] = y[j];
            }
        }
        p[16] += bytes(t);
        p[17] += 1.0;
    }
};

// Where a range's product starts at a span's second piece k: from its first piece's step (x = 0
// before), its exact values from head 0 as lattice_pieces left them (lattice_estimate copies them
// where the rough deltas go, in a block that may run later).
__device__ __forceinline__ void heads_restart(const HeadSteps& steps, i64 first, double* p) {
    HeadSteps exact = steps;
    exact.matrix = exact.scalar = 0;
    const LFront fi = exact.in(first), fo = exact.out(first);
    for (int m = 0; m < GT_LFRONT * GT_LFRONT; ++m) p[m] = exact.at(first, fi, fo, m / GT_LFRONT, m % GT_LFRONT);
    p[16] = exact.bytes(first);
    p[17] = 1.0;
    p[18] = 1.0;
}

// Piece t's head x (column 0 of `p`; the earlier pieces and bytes at 16, 17): rough heads (pass < 0),
// else the estimates and the errors the tables assume (lattice_estimate).
__device__ __forceinline__ void heads_put(const HeadSteps& steps, i64 t, const double* p, int pass, int precision) {
    const LFront fi = steps.in(t), fo = steps.out(t);
    const bool vector = fi.n > 1 || fo.n > 1;
    double* v = steps.vec_f + GT_LVF * t;
    double* floats = steps.slot_f + GT_LSLOT_F * t;
    for (int i = 0; i < fi.n; ++i) {
        const double x = p[GT_LFRONT * i];
        if (pass < 0) {
            if (vector) v[20 + i] = x; else floats[17] = x;
            continue;
        }
        const double at = fabs(x) + fabs(vector ? v[16 + i] : floats[1]) + 1.0;
        const double error = precision == 53
            ? (2.0 * p[16] + 3.0 * p[17] + 2.0) * at * ldexp(1.0, 2 - precision)
            : (64.0 + 8.0 * sqrt(p[17])) * ldexp(1.0, lattice_binade(at) - precision);
        if (vector) {
            v[40 + i] = x;
            v[44 + i] = error;
        } else {
            floats[3] = x;
            floats[4] = error;
        }
    }
}

// tile_scan's operator over the anchors: element k is piece k's step (after its span's first piece's
// where k is its span's second; the identity where no cut is at anchor k), put gets the product of
// the steps before k, whose column 0 is k's head.
struct HeadScan {
    using T = double;
    static constexpr int W = GT_LMP;
    HeadSteps steps;
    int pass, precision;

    __device__ __forceinline__ static void identity(double* p) {
        for (int m = 0; m < GT_LMP; ++m) p[m] = m < 16 && m % (GT_LFRONT + 1) ? GT_LATTICE_NEG_INF : 0.0;
    }
    // later = later q
    __device__ __noinline__ static void join(double* later, const double* q) {
        if (later[18] != 0.0) return;  // it starts at a span's first piece: q is an earlier span's
        maxplus_after(later, q);
        later[16] += q[16];
        later[17] += q[17];
        later[18] = q[18];
    }
    __device__ __noinline__ void element(i64 k, double* p) const {
        identity(p);
        if (steps.slot_i[GT_LSLOT_I * k + 4] == 0) return;  // no cut at this anchor
        const i64 before = steps.slot_i[GT_LSLOT_I * k + 3];
        if (before >= steps.n_anchors) heads_restart(steps, before, p);
        steps.apply(k, p, GT_LFRONT);
    }
    __device__ __noinline__ void put(i64 k, double* p) const {
        if (steps.slot_i[GT_LSLOT_I * k + 4] == 0) return;
        const i64 before = steps.slot_i[GT_LSLOT_I * k + 3];
        if (before >= steps.n_anchors) heads_restart(steps, before, p);
        heads_put(steps, k, p, pass, precision);
    }
};

// The heads of tile `tile`'s pieces (slots tile * GT_BLOCK on; call from every thread of the block):
// rough heads (pass < 0), else the estimates and errors; the spans' first pieces' head 0, the anchors'
// by tile_scan (flags and nodes: this scan's; called last, so that nothing is kept across it).
__device__ __noinline__ void lattice_heads(i64 tile, i64 n_anchors, i64 n_long, u64* flags, double* nodes,
                                          const i64* slot_i, double* slot_f, const int* front_n, const int* front_off,
                                          double* vec_f, int pass, int precision) {
    __shared__ double zero[GT_LMP];
    const HeadSteps steps{n_anchors, slot_i, slot_f, front_n, front_off, vec_f, pass < 0 ? 0 : 24, pass < 0 ? 0 : 16};
    if (threadIdx.x < GT_LMP) zero[threadIdx.x] = 0.0;
    __syncthreads();
    const i64 k = tile * GT_BLOCK + threadIdx.x;
    if (k >= n_anchors && k < n_anchors + n_long) {
        GT_STEP();
        heads_put(steps, k, zero, pass, precision);
    }
    if (tile * GT_BLOCK < n_anchors) tile_scan(HeadScan{steps, pass, precision}, n_anchors, tile, flags, nodes);
}

// Per thread: one piece (grid-stride over the spans, then the anchors; span_first[s]: long span s's
// first piece's slot). Work: its bytes and edges, once (and the anchors it passes without a cut).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_pieces(LATTICE_ARGS, i64 long_bytes, i64 chunk_bytes, i64 n_anchors, const i64* __restrict__ cuts,
               const i64* __restrict__ cut_spans, const i64* __restrict__ scratch_offsets, u64* __restrict__ counter,
               i64* __restrict__ slot_i, double* __restrict__ slot_f, double* __restrict__ score,
               i64* __restrict__ route, int* __restrict__ value, const int* __restrict__ front_n,
               const int* __restrict__ front_off, double* __restrict__ vec_f, i64* __restrict__ span_first) {
    LATTICE_G;
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 r = global_thread_index(); r < n_spans + n_anchors; r += stride) {
        const bool span_start = r < n_spans;
        const i64 s = span_start ? r : cut_spans[r - n_spans];
        if (span_start ? span_ends[s] - span_starts[s] < long_bytes : cuts[r - n_spans] < 0) continue;
        const i64 begin = span_starts[s], end = span_ends[s];
        const i64 a = span_start ? begin : cuts[r - n_spans];
        i64 next = -1, b = end;
        for (i64 k = span_start ? (a + chunk_bytes - 1) / chunk_bytes : r - n_spans + 1;
             k < n_anchors && k * chunk_bytes < end; ++k) {
            GT_STEP();
            if (cuts[k] >= 0 && cut_spans[k] == s) {
                next = k;
                b = cuts[k];
                break;
            }
        }
        const i64 slot = span_start ? n_anchors + (i64)atomicAdd(counter, 1ull) : r - n_spans;
        i64* fields = slot_i + GT_LSLOT_I * slot;
        double* floats = slot_f + GT_LSLOT_F * slot;
        fields[0] = a;
        fields[1] = b;
        fields[2] = next;
        fields[5] = s;
        if (span_start) {
            fields[3] = -1;
            span_first[s] = slot;
        }
        if (next >= 0) slot_i[GT_LSLOT_I * next + 3] = slot;
        const i64 row = scratch_offsets[s];
        const LFront in = lattice_front(front_n, front_off, span_start ? -1 : slot);
        const LFront out = lattice_front(front_n, front_off, next);
        double* v = vec_f + GT_LVF * slot;
        if (span_start) {  // head 0: exact
            lattice_solve(g, s, begin, a, b, 0.0, score + row, route + row, value + row);
            floats[0] = floats[1] = score[row + b - begin];
            floats[2] = 0.0;
            v[16] = floats[1];  // as floats[1]: the estimate's error bound reads it (else garbage, vector heads)
            fields[4] = GT_LSLOT_EXACT;
            for (int j = 0; j < out.n; ++j) v[GT_LFRONT * j] = score[row + b + out.off(j) - begin];
        } else if (in.n > 1 || out.n > 1) {  // a solve per entry, from 0
            for (int i = 0; i < in.n; ++i) {
                double lowest = 0.0, at[GT_LFRONT];
                lattice_front_values(g, s, a, b, in, i, 0.0, out, at, -1.0, 0, &lowest);
                for (int j = 0; j < out.n; ++j) v[GT_LFRONT * j + i] = at[j];
                v[16 + i] = lowest;
            }
            fields[4] = GT_LSLOT_PENDING_FRONT;
        } else {
            floats[1] = floats[2] = 0.0;
            floats[0] = lattice_values(g, s, a, b, 0.0, -1.0, 0, floats + 1);
            fields[4] = GT_LSLOT_PENDING;
        }
    }
}

// Per thread: one pending piece: one solve from its rough head gives its rough delta, its value minus
// its head computed in (about) the right binades, so with (about) the same roundings as the exact
// one: float32 sums round each word's weight the same way at a given spacing, so the head-0 values
// drift from the exact ones by a bias per word, which the rough deltas do not have. A block takes a
// tile of slots in the order blocks start (tile_scan.cuh); pass 0's first scans the tile's anchors
// for their rough heads (lattice_heads: the earlier pieces' values from head 0, lattice_pieces',
// added up), every pass's block then solves its pieces and scans them for their estimates (the
// earlier pieces' rough deltas added up) and the errors the tables assume. The rough deltas differ
// from the exact ones only where a piece's roundings differ: near binade edges, ties and near-ties;
// lattice_resolve checks the error (an exact solve where it does not hold): in doubles a bound of
// every rounding (far below the scores' spacing, so harmless), in float32 a few dozen of the
// spacings at the head (a bound of every rounding there would span binades). nodes: the scans'
// products per tile (GT_LMP doubles a tile: the rough heads' tiles, then pass 0's, then pass 1's).
extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
lattice_estimate(LATTICE_ARGS, i64 n_anchors, i64 n_slots, u64* __restrict__ counter, const i64* __restrict__ slot_i,
                 double* __restrict__ slot_f, const int* __restrict__ front_n, const int* __restrict__ front_off,
                 double* __restrict__ vec_f, i64 pass, double* __restrict__ nodes) {
    __shared__ i64 tile;
    lookback_tile(counter + 1 + pass, &tile);
    if (!pass)  // only the parameters and the shared tile number live across the call
        lattice_heads(tile, n_anchors, (i64)counter[0], counter + GT_LCOUNTERS, nodes, slot_i, slot_f, front_n,
                      front_off, vec_f, -1, 53);
    LATTICE_G;
    const i64 k = tile * GT_BLOCK + threadIdx.x, n_tiles = (n_anchors + GT_BLOCK - 1) / GT_BLOCK;
    // pass 0 solves from the rough heads, pass 1 again from pass 0's estimates: a rough head can lie
    // in another binade than the exact head for a piece or two near each binade edge (the head-0
    // values drift by float32's per-word bias of small binades), and such a piece's rough delta has
    // the wrong roundings; the estimates are within a few of those deltas' errors, so pass 1's
    // deltas round as the exact ones do except next to an edge.
    const int rough = pass ? 40 : 20, rough_f = pass ? 3 : 17;
    if (k < n_slots) {
        const i64* fields = slot_i + GT_LSLOT_I * k;
        double* floats = slot_f + GT_LSLOT_F * k;
        const LFront in = lattice_front(front_n, front_off, k < n_anchors ? k : -1);
        const LFront out = lattice_front(front_n, front_off, fields[4] ? fields[2] : -1);
        double* v = vec_f + GT_LVF * k;
        if (in.n > 1 || out.n > 1) {  // rough deltas per entry and exit (the first piece: its exact values)
            for (int i = 0; i < in.n && fields[4] == GT_LSLOT_PENDING_FRONT; ++i) {
                double at[GT_LFRONT];
                lattice_front_values(g, fields[5], fields[0], fields[1], in, i, v[rough + i], out, at, -1.0, 0,
                                     nullptr);
                for (int j = 0; j < out.n; ++j) v[24 + GT_LFRONT * j + i] = at[j] - v[rough + i];
            }
            for (int j = 0; j < out.n && fields[4] == GT_LSLOT_EXACT; ++j) v[24 + GT_LFRONT * j] = v[GT_LFRONT * j];
        } else {
            if (fields[4] == GT_LSLOT_EXACT) floats[16] = floats[0];  // the first piece: its exact value
            if (fields[4] == GT_LSLOT_PENDING)
                floats[16] = lattice_values(g, fields[5], fields[0], fields[1], floats[rough_f], -1.0, 0, nullptr) -
                             floats[rough_f];
        }
    }
    __syncthreads();  // the tile's rough deltas, for its scan
    lattice_heads(tile, n_anchors, (i64)counter[0], counter + GT_LCOUNTERS + (1 + pass) * n_tiles,
                  nodes + (1 + pass) * n_tiles * GT_LMP, slot_i, slot_f, front_n, front_off, vec_f, (int)pass,
                  (mode & GT_LATTICE_FLOAT32) ? 24 : 53);
}

// lattice_settle for a piece with a forced cut at either end: class c of entry `live`'s table, from
// one solve with only that entry live (the exits' values are the max over the entries of these,
// rounding being monotone). A piece whose scores cross one binade edge 2^e (float32: the spacing
// doubles) is split as pieces between cut points are, at inner positions with frontiers: z1, 128
// bytes before the first start relaxing a score near the edge (from the estimates), and z2, 128 bytes
// past the last (so its frontier's scores are all past the edge): a table of two classes of binade e
// for [a, z1) (exits: z1's frontier), the zone [z1, z2) solved exactly by lattice_resolve (a few
// hundred bytes), a table of two classes of binade e + 1 for [z2, b) (zone_split finds the split,
// settle_zone solves its classes; the whole-piece table stays, tried first).
__device__ __forceinline__ void settle_front(const LatticeArgs& g, const i64* fields, const LFront& in,
                                             const LFront& out, int live, int c, double* v, i64* vi) {
    const int precision = (g.mode & GT_LATTICE_FLOAT32) ? 24 : 53;
    const i64 a = fields[0], b = fields[1], s = fields[5];
    if (live < in.n) {
        const double estimate = v[40 + live], error = v[44 + live];
        const double low = fabs(estimate) - error, high = fabs(estimate) + error;
        const int e_head = lattice_binade(low);
        const int e_top = lattice_binade(fabs(estimate) - v[16 + live] + error + 1.0);
        const double unit = ldexp(1.0, e_head - precision), top = ldexp(1.0, e_top - precision);
        int classes = low > 0.0 && e_top >= e_head && e_top - e_head <= 2 && lattice_binade(high) == e_head
            ? 1 << (e_top - e_head + 1) : 0;
        const double base = classes ? floor(estimate / (classes * unit)) * (classes * unit) : 0.0;
        if (classes && (lattice_binade(base) != e_head || lattice_binade(base + (classes - 1) * unit) != e_head))
            classes = 0;
        if (c == 0) {
            vi[8 + 2 * live] = e_head;
            vi[9 + 2 * live] = classes;
        }
        if (c < classes) {
            const double head = base + c * unit;
            double at[GT_LFRONT];
            const bool ok = lattice_front_values(g, s, a, b, in, live, head, out, at,
                                                 error + classes * unit + 2.0 * top, e_top, nullptr);
            for (int j = 0; j < out.n; ++j) {
                const double delta = at[j] - head;
                const bool exact = at[j] == GT_LATTICE_NEG_INF || lattice_exact_sum(at[j], -head, delta);
                v[52 + (GT_LFRONT * j + live) * GT_LCLASSES + c] =
                    !ok || !exact ? nan("") : at[j] == GT_LATTICE_NEG_INF ? at[j] : delta;
            }
        }
    }
}

// lattice_zone_split's piece: its zone (vi[16...23], the estimates of z2's frontier), vi[22] = 1, or 0.
__device__ __forceinline__ void zone_split(const LatticeArgs& g, const i64* fields, const LFront& in,
                                           const LFront& out, double* v, i64* vi) {
    const int precision = (g.mode & GT_LATTICE_FLOAT32) ? 24 : 53;
    const i64 a = fields[0], b = fields[1], s = fields[5];
    // The split around one binade edge: every entry's estimate well inside binade e, scores reaching e + 1.
    const double est_last = v[40 + in.n - 1];
    const int e = lattice_binade(fabs(est_last));
    double error = 0.0;
    bool split = true;
    for (int i = 0; i < in.n; ++i) {
        const double size = fabs(v[40 + i]), err = v[44 + i];
        error = err > error ? err : error;
        split &= size - err > 0.0 && lattice_binade(size - err) == e && lattice_binade(size + err) == e &&
                 lattice_binade(size - v[16 + i] + err + 1.0) == e + 1;
    }
    vi[22] = 0;
    if (!split) return;
    const double unit = ldexp(1.0, e - precision), top = 2.0 * unit, edge = ldexp(1.0, e);
    const double error3 = 2.0 * error + 64.0 * top;
    i64 p_lo, p_hi;
    double at[GT_LFRONT];
    lattice_all_values(g, s, a, b, in, v + 40, out, at, edge, error3 + 8.0 * top, &p_lo, &p_hi);
    if (p_lo >= b || p_hi < 0) return;
    const i64 begin = g.span_starts[s], end = g.span_ends[s];
    // One entry's own scores lag the max over the entries by a few weights: they reach the edge a little
    // earlier than p_lo, so z1 keeps 2 GT_LRING bytes more (an entry that still comes near: no table).
    i64 z1 = p_lo - 2 * GT_LRING, z2 = p_hi + 2 * GT_LRING;
    while (z1 > a && !utf8_starts_char(g.data, z1, begin, end)) --z1;
    if (z1 <= a + GT_LRING) z1 = a;
    while (z2 < b && !utf8_starts_char(g.data, z2, begin, end)) ++z2;
    if (z2 > b - GT_LRING) z2 = b;
    const LFront f1 = z1 == a ? in : lattice_front_at(g, s, z1, a);
    const LFront f2 = z2 == b ? out : lattice_front_at(g, s, z2, z1);
    if (f1.n == 0 || f2.n == 0 || z2 <= z1) return;
    double est3[GT_LFRONT];
    lattice_all_values(g, s, a, z2, in, v + 40, f2, est3, 0.0, 0.0, nullptr, nullptr);  // estimates at z2's frontier
    for (int i = 0; i < f2.n && z2 < b; ++i) {
        if (!(fabs(est3[i]) - error3 - 4.0 * top > edge && lattice_binade(fabs(est3[i]) + error3) == e + 1)) return;
    }
    vi[16] = z1;
    vi[17] = z2;
    vi[18] = f1.n;
    vi[19] = f1.packed;
    vi[20] = f2.n;
    vi[21] = f2.packed;
    vi[22] = 1;
    vi[23] = e + 1;
    for (int i = 0; i < GT_LFRONT; ++i) {
        v[GT_LVF_E3 + i] = est3[i];
        v[GT_LVF_E3 + GT_LFRONT + i] = error3;
    }
}

// lattice_settle_zone's thread (live, c < 2) of a split piece: class c of entry `live`'s tables for
// the parts before and after its zone.
__device__ __forceinline__ void settle_zone(const LatticeArgs& g, const i64* fields, const LFront& in,
                                            const LFront& out, int live, int c, double* v, const i64* vi) {
    const int precision = (g.mode & GT_LATTICE_FLOAT32) ? 24 : 53;
    const i64 a = fields[0], b = fields[1], s = fields[5], z1 = vi[16], z2 = vi[17];
    const int e = (int)vi[23] - 1;
    LFront f1, f2;
    f1.n = (int)vi[18];
    f1.packed = (u32)vi[19];
    f2.n = (int)vi[20];
    f2.packed = (u32)vi[21];
    const double unit = ldexp(1.0, e - precision), top = 2.0 * unit, error3 = v[GT_LVF_E3 + GT_LFRONT];
    if (z1 > a && live < in.n) {  // the part before the zone: two classes of binade e
        const double estimate = v[40 + live];
        const double head = floor(estimate / (2.0 * unit)) * (2.0 * unit) + c * unit;
        bool ok = lattice_binade(fabs(head)) == e;
        double out1[GT_LFRONT];
        ok &= lattice_front_values(g, s, a, z1, in, live, head, f1, out1, v[44 + live] + 4.0 * unit, e, nullptr);
        for (int j = 0; j < f1.n; ++j) {
            const double delta = out1[j] - head;
            const bool exact = out1[j] == GT_LATTICE_NEG_INF || lattice_exact_sum(out1[j], -head, delta);
            v[GT_LVF_D1 + (GT_LFRONT * j + live) * 2 + c] =
                !ok || !exact ? nan("") : out1[j] == GT_LATTICE_NEG_INF ? out1[j] : delta;
        }
    }
    if (z2 < b && live < f2.n) {  // the part after the zone: two classes of binade e + 1
        const double head = floor(v[GT_LVF_E3 + live] / (2.0 * top)) * (2.0 * top) + c * top;
        bool ok = lattice_binade(fabs(head)) == e + 1;
        double out3[GT_LFRONT];
        ok &= lattice_front_values(g, s, z2, b, f2, live, head, out, out3, error3 + 4.0 * top, e + 1, nullptr);
        for (int j = 0; j < out.n; ++j) {
            const double delta = out3[j] - head;
            const bool exact = out3[j] == GT_LATTICE_NEG_INF || lattice_exact_sum(out3[j], -head, delta);
            v[GT_LVF_D3 + (GT_LFRONT * j + live) * 2 + c] =
                !ok || !exact ? nan("") : out3[j] == GT_LATTICE_NEG_INF ? out3[j] : delta;
        }
    }
}

// Per thread: one class of one pending piece (thread k * GT_LCLASSES + c): at most two values-only
// solves of parts of it (and, every class thread the same, one pass for its split).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_settle(LATTICE_ARGS, i64 n_slots, const i64* __restrict__ slot_i, double* __restrict__ slot_f,
               i64* __restrict__ class_i) {
    const i64 thread = global_thread_index();
    const i64 k = thread / GT_LCLASSES;
    const int c = (int)(thread % GT_LCLASSES);
    if (k >= n_slots || slot_i[GT_LSLOT_I * k + 4] != GT_LSLOT_PENDING) return;
    LATTICE_G;
    const i64* fields = slot_i + GT_LSLOT_I * k;
    double* floats = slot_f + GT_LSLOT_F * k;
    const i64 a = fields[0], b = fields[1], s = fields[5];
    const int precision = (mode & GT_LATTICE_FLOAT32) ? 24 : 53;
    const double estimate = floats[3], error = floats[4];
    const double low = fabs(estimate) - error, high = fabs(estimate) + error;
    const int e_head = lattice_binade(low);
    const int e_top = lattice_binade(fabs(estimate) - floats[1] + error + 1.0);  // the largest score's binade
    const double unit = ldexp(1.0, e_head - precision), top = ldexp(1.0, e_top - precision);
    int classes = low > 0.0 && e_top >= e_head && e_top - e_head <= 2 ? 1 << (e_top - e_head + 1) : 0;
    // A piece (or its head) near one binade edge is split where its scores come near it: a table for
    // the part before (none when the head is near), the zone after it solved exactly by
    // lattice_resolve (a few characters), a table for the part after (none when the zone reaches b).
    // Every class thread computes the same split.
    i64 c1 = -1, c2 = -1;
    double at_c2 = 0.0;
    const double error2 = 2.0 * error + 64.0 * top;
    const bool head_near = lattice_binade(high) != e_head;
    if (classes == 4 || (head_near && e_top == e_head + 1)) {
        lattice_zone(g, s, a, b, estimate, ldexp(1.0, e_head), error2 + 8.0 * top, &c1, &c2, &at_c2);
        if (c1 < 0 || (c2 < b && lattice_binade(at_c2) != e_top) || (head_near && c1 != a)) c1 = c2 = -1;
        classes = c1 < 0 ? 0 : 2;
    } else if (head_near) {
        classes = 0;
    }
    const double base = classes ? floor(estimate / (classes * unit)) * (classes * unit) : 0.0;  // class 0
    if (classes && c1 != a && (lattice_binade(base) != e_head || lattice_binade(base + (classes - 1) * unit) != e_head))
        classes = 0;
    if (c == 0) {
        floats[14] = at_c2;
        floats[15] = error2;
        class_i[4 * k] = e_head;
        class_i[4 * k + 1] = classes;
        class_i[4 * k + 2] = classes ? c1 : -1;
        class_i[4 * k + 3] = classes ? c2 : -1;
    }
    if (c >= classes) return;
    const bool split = c1 >= 0;
    if (!split || c1 > a) {  // the table of the piece, or of its part before the zone
        const double head = base + c * unit;  // of class c
        bool ok = false;
        const double v = lattice_values(g, s, a, split ? c1 : b, head, error + classes * unit + 2.0 * (split ? unit : top),
                                        split ? e_head : e_top, nullptr, &ok);
        const double delta = v - head;
        floats[6 + c] = ok && v != GT_LATTICE_NEG_INF && lattice_exact_sum(v, -head, delta) ? delta : nan("");
    }
    if (split && c2 < b) {  // the part after the zone: two classes of its head's binade
        const double head = floor(at_c2 / (2.0 * top)) * (2.0 * top) + c * top;
        bool ok = false;
        const double v = lattice_binade(head) == e_top
            ? lattice_values(g, s, c2, b, head, error2 + 4.0 * top, e_top, nullptr, &ok) : nan("");
        const double delta = v - head;
        floats[8 + c] = ok && v != GT_LATTICE_NEG_INF && lattice_exact_sum(v, -head, delta) ? delta : nan("");
    }
}

// A scalar piece's table step from x (floats: its slot_f, cls: its class_i): x + delta[class of x],
// NaN where the table does not apply (another binade, out of the estimate's error, no delta, an
// inexact sum).
__device__ __forceinline__ double lattice_table_at(double x, const double* floats, const i64* cls_i, int precision) {
    const int e = (int)cls_i[0], classes = (int)cls_i[1];
    if (!(classes > 0 && lattice_binade(x) == e && fabs(x - floats[3]) <= floats[4])) return nan("");
    const int cls = (int)((long long)ldexp(x, precision - e) & (long long)(classes - 1));
    const double delta = floats[6 + cls];
    const double sum = x + delta;
    return !isnan(delta) && lattice_exact_sum(x, delta, sum) ? sum : nan("");
}

// Per thread: one class of one entry of a pending piece with a forced cut at either end (thread
// (k * GT_LFRONT + entry) * GT_LCLASSES + c): one values-only solve (settle_front).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_settle_front(LATTICE_ARGS, i64 n_anchors, i64 n_slots, const i64* __restrict__ slot_i,
                     const int* __restrict__ front_n, const int* __restrict__ front_off, double* __restrict__ vec_f,
                     i64* __restrict__ vec_i) {
    const i64 thread = global_thread_index();
    const i64 k = thread / (GT_LFRONT * GT_LCLASSES);
    const int live = (int)(thread / GT_LCLASSES % GT_LFRONT);
    const int c = (int)(thread % GT_LCLASSES);
    if (k >= n_slots || slot_i[GT_LSLOT_I * k + 4] != GT_LSLOT_PENDING_FRONT) return;
    LATTICE_G;
    const LFront in = lattice_front(front_n, front_off, k < n_anchors ? k : -1);
    const LFront out = lattice_front(front_n, front_off, slot_i[GT_LSLOT_I * k + 2]);
    settle_front(g, slot_i + GT_LSLOT_I * k, in, out, live, c, vec_f + GT_LVF * k, vec_i + GT_LVI * k);
}

// Per thread: one pending piece with a forced cut at either end: its zone split when its scores cross
// one binade edge (zone_split: two passes over the piece from the estimates).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_zone_split(LATTICE_ARGS, i64 n_anchors, i64 n_slots, const i64* __restrict__ slot_i,
                   const int* __restrict__ front_n, const int* __restrict__ front_off, double* __restrict__ vec_f,
                   i64* __restrict__ vec_i) {
    const i64 k = global_thread_index();
    if (k >= n_slots || slot_i[GT_LSLOT_I * k + 4] != GT_LSLOT_PENDING_FRONT) return;
    LATTICE_G;
    const LFront in = lattice_front(front_n, front_off, k < n_anchors ? k : -1);
    const LFront out = lattice_front(front_n, front_off, slot_i[GT_LSLOT_I * k + 2]);
    zone_split(g, slot_i + GT_LSLOT_I * k, in, out, vec_f + GT_LVF * k, vec_i + GT_LVI * k);
}

// Per thread: one class (of 2) of one entry of a split piece (thread (k * GT_LFRONT + entry) * 2 + c):
// at most two class solves of its parts (settle_zone).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_settle_zone(LATTICE_ARGS, i64 n_anchors, i64 n_slots, const i64* __restrict__ slot_i,
                    const int* __restrict__ front_n, const int* __restrict__ front_off, double* __restrict__ vec_f,
                    const i64* __restrict__ vec_i) {
    const i64 thread = global_thread_index();
    const i64 k = thread / (GT_LFRONT * 2);
    const int live = (int)(thread / 2 % GT_LFRONT);
    const int c = (int)(thread % 2);
    if (k >= n_slots || slot_i[GT_LSLOT_I * k + 4] != GT_LSLOT_PENDING_FRONT || vec_i[GT_LVI * k + 22] != 1) return;
    LATTICE_G;
    const LFront in = lattice_front(front_n, front_off, k < n_anchors ? k : -1);
    const LFront out = lattice_front(front_n, front_off, slot_i[GT_LSLOT_I * k + 2]);
    settle_zone(g, slot_i + GT_LSLOT_I * k, in, out, live, c, vec_f + GT_LVF * k, vec_i + GT_LVI * k);
}

// One table step: y[j] = max over entries i of x[i] + its table's delta (classes of binade e, table
// d[(GT_LFRONT * j + i) * stride + class]); false when an entry is out of its estimate's error, in
// another binade, without a valid entry, or a sum is inexact.
__device__ __forceinline__ bool lattice_table_step(const double* x, int n_in, int n_out, int e, int classes,
                                                   const double* estimates, const double* errors, int error_step,
                                                   const double* d, int stride, int precision, double* y) {
    for (int j = 0; j < GT_LFRONT; ++j) y[j] = GT_LATTICE_NEG_INF;
    for (int i = 0; i < n_in; ++i) {
        if (!(lattice_binade(x[i]) == e && fabs(x[i] - estimates[i]) <= errors[error_step * i])) return false;
        const int cls = (int)((long long)ldexp(x[i], precision - e) & (long long)(classes - 1));
        for (int j = 0; j < n_out; ++j) {
            const double delta = d[(GT_LFRONT * j + i) * stride + cls];
            const double sum = x[i] + delta;
            if (isnan(delta) || (delta != GT_LATTICE_NEG_INF && !lattice_exact_sum(x[i], delta, sum))) return false;
            y[j] = sum > y[j] ? sum : y[j];
        }
    }
    return true;
}

// A split piece's exits (xs in place): its part before the zone by its table, the zone exactly, the
// part after by its table; false where a table does not apply (xs unchanged).
__device__ __forceinline__ bool resolve_split(const LatticeArgs& g, i64 s, const i64* fields, const LFront& in,
                                          const LFront& out, const double* v, const i64* vi, double* xs) {
    const int precision = (g.mode & GT_LATTICE_FLOAT32) ? 24 : 53;
    const i64 a = fields[0], b = fields[1], z1 = vi[16], z2 = vi[17];
    const int e_top = (int)vi[23];
    LFront f1, f2;
    f1.n = (int)vi[18];
    f1.packed = (u32)vi[19];
    f2.n = (int)vi[20];
    f2.packed = (u32)vi[21];
    double y[GT_LFRONT], w[GT_LFRONT];
    if (z1 > a) {
        if (!lattice_table_step(xs, in.n, f1.n, e_top - 1, 2, v + 40, v + 44, 1, v + GT_LVF_D1, 2, precision, y))
            return false;
    } else {
        for (int i = 0; i < GT_LFRONT; ++i) y[i] = xs[i];
    }
    lattice_all_values(g, s, z1, z2, f1, y, f2, w, 0.0, 0.0, nullptr, nullptr);
    if (z2 < b) {
        if (!lattice_table_step(w, f2.n, out.n, e_top, 2, v + GT_LVF_E3, v + GT_LVF_E3 + GT_LFRONT, 1,
                                v + GT_LVF_D3, 2, precision, y))
            return false;
    } else {
        for (int i = 0; i < GT_LFRONT; ++i) y[i] = w[i];
    }
    for (int j = 0; j < GT_LFRONT; ++j) xs[j] = y[j];
    return true;
}

// lattice_resolve's step over a piece with a forced cut at either end: its exits' exact values xs
// from its entries' (in place), max over the entries of entry + D[j][i][class], each sum exact; an
// exact solve when an entry has no valid table entry.
__device__ __forceinline__ void resolve_front(const LatticeArgs& g, i64 s, i64 begin, i64 row, i64* fields,
                                           const LFront& in, const LFront& out, double* v, const i64* vi, double* xs,
                                           double* score, i64* route, int* value) {
    const int precision = (g.mode & GT_LATTICE_FLOAT32) ? 24 : 53;
    double y[GT_LFRONT];
    bool ok = true;
    for (int i = 0; i < in.n; ++i) v[48 + i] = xs[i];
    for (int j = 0; j < GT_LFRONT; ++j) y[j] = GT_LATTICE_NEG_INF;
    for (int i = 0; i < in.n; ++i) {
        const double x = xs[i];
        const int e = (int)vi[8 + 2 * i], classes = (int)vi[9 + 2 * i];
        if (!(classes > 0 && lattice_binade(x) == e && fabs(x - v[40 + i]) <= v[44 + i])) {
            ok = false;
            continue;
        }
        const int cls = (int)((long long)ldexp(x, precision - e) & (long long)(classes - 1));
        for (int j = 0; j < out.n; ++j) {
            const double delta = v[52 + (GT_LFRONT * j + i) * GT_LCLASSES + cls];
            const double sum = x + delta;
            if (isnan(delta) || (delta != GT_LATTICE_NEG_INF && !lattice_exact_sum(x, delta, sum))) ok = false;
            y[j] = sum > y[j] ? sum : y[j];
        }
    }
    if (!ok && vi[22] == 1 && resolve_split(g, s, fields, in, out, v, vi, xs)) {  // xs: its exits
        fields[4] = GT_LSLOT_CERTAIN;
        return;
    }
    if (ok) {
        fields[4] = GT_LSLOT_CERTAIN;
    } else {
        lattice_solve(g, s, begin, fields[0], fields[1], xs[in.n - 1], score + row, route + row, value + row, &in, xs);
        fields[4] = GT_LSLOT_EXACT;
        for (int j = 0; j < out.n; ++j) y[j] = score[row + fields[1] + out.off(j) - begin];
    }
    for (int j = 0; j < GT_LFRONT; ++j) xs[j] = y[j];
}

// ---- the span's walk by segments (no thread steps through a whole long span)
// lattice_resolve's walk applies each piece's table to its exact entries, a step per piece: exit j's
// value max over entries i of x[i] + D[j][i][class of x[i]], exact where every x[i] lies within its
// table's window (its estimate's error, its binade e: there each score of the piece shifts by exactly
// what its entry shifts). Where a piece's deltas are the same for both classes (no tie among its
// roundings: the rule), none positive and each a multiple of binade e's spacing, its step is a
// max-plus product y = M x, and such steps compose: x_k = P_k E, E the exits of the segment's head (a
// span's first piece, or a boundary: a piece of any other kind, stepped as before) and P_k the
// product of the segment's matrices before piece k. The products' sums are exact where it matters:
// their terms are multiples of the spacing, so a sum below 2^e in size is exact, and with no positive
// term its partial sums are no larger; a larger one (of a path far below the best) may round, but
// never above -2^e, so it cannot win a max whose true value lies in the binade. lattice_resolve's
// blocks scan the anchors' pieces by tiles (tile_scan.cuh; a boundary restarts the product), and each
// put turns piece k's windows [lo, hi] into bounds on its head's E: x_k[i] <= hi exactly when E[j] <=
// hi - P_k[i][j] for every j (min over the segment), and x_k[i] >= lo when E[w] >= lo - P_k[i][w], w
// the exit its segment's estimates make the best (a sufficient bound, max over the segment), both
// rounded inwards. A span's walk (the thread of its last piece, once every tile of its pieces is
// scanned): where E meets its segment's bounds, every piece of it would have applied its table (by
// induction, each x_k exact and within its window), so it jumps to the boundary b after the segment
// (entries P_b E) and steps b; where E does not, it steps each piece of the segment, as before. A
// walk: a step per segment (binade changes, ties, zones, exact solves) where the bounds hold.
// lattice_finish gives each piece of a jumped segment its entries P_k E.
#define GT_LSEG_W 17  // a product: P (GT_LFRONT x GT_LFRONT, row-major: row i the entry i of the piece
                      // after the range, column j the head's exit j), then the head slot where the
                      // range restarts the segment (-1: it does not)
#define GT_LSEG_I 4   // per slot: its segment's head (anchors), the boundary ending the segment it heads
                      // (-1: none), 1 where the walk jumped the segment it heads, 1 for a segment piece

// GT_LSEG_NO_JUMPS (tests/test_lattice_resolve_steps.py only) steps every piece of every segment.
#if defined(GT_LSEG_NO_JUMPS) && !defined(CUDA_EMU)
#error "GT_LSEG_NO_JUMPS is for the CPU emulator's tests only"
#endif

// The tables lattice_resolve's scan reads (written by the launches before it).
struct SegTables {
    i64 n_anchors;
    const i64* slot_i;
    const double* slot_f;
    const i64* class_i;
    const double* vec_f;
    const i64* vec_i;
    const int* front_n;
    const int* front_off;
    int precision;

    __device__ __forceinline__ LFront in(i64 t) const { return lattice_front(front_n, front_off, t); }
    __device__ __forceinline__ LFront out(i64 t) const {
        return lattice_front(front_n, front_off, slot_i[GT_LSLOT_I * t + 2]);
    }
    __device__ __forceinline__ bool vector(i64 t) const { return in(t).n > 1 || out(t).n > 1; }
    __device__ __forceinline__ double estimate(i64 t, int i) const {
        return vector(t) ? vec_f[GT_LVF * t + 40 + i] : slot_f[GT_LSLOT_F * t + 3];
    }
    // Whether anchor piece t steps by a matrix (its deltas into m, -inf where no path, unless null),
    // all of its entries' tables of two classes of binade *e and no zone.
    __device__ bool matrix(i64 t, int* e, double* m) const {
        const i64 state = slot_i[GT_LSLOT_I * t + 4];
        const double* d;  // class 0's delta of (exit j, entry i) at d[stride (GT_LFRONT j + i)], class 1's after
        int stride = 0;
        if (state == GT_LSLOT_PENDING_FRONT) {
            const i64* vi = vec_i + GT_LVI * t;
            *e = (int)vi[8];
            for (int i = 0; i < in(t).n; ++i)
                if (vi[22] == 1 || vi[8 + 2 * i] != *e || vi[9 + 2 * i] != 2) return false;
            d = vec_f + GT_LVF * t + 52;
            stride = GT_LCLASSES;
        } else if (state == GT_LSLOT_PENDING) {
            const i64* ci = class_i + 4 * t;
            *e = (int)ci[0];
            if (ci[1] != 2 || ci[2] >= 0) return false;
            d = slot_f + GT_LSLOT_F * t + 6;
        } else {
            return false;
        }
        const double unit = ldexp(1.0, *e - precision);
        const LFront fi = in(t), fo = out(t);
        for (int q = 0; m && q < GT_LFRONT * GT_LFRONT; ++q) m[q] = GT_LATTICE_NEG_INF;
        for (int j = 0; j < fo.n; ++j) {
            for (int i = 0; i < fi.n; ++i) {
                const double a = d[stride * (GT_LFRONT * j + i)], b = d[stride * (GT_LFRONT * j + i) + 1];
                if (!(a == b) || a > 0.0 || (a != GT_LATTICE_NEG_INF && fmod(a, unit) != 0.0)) return false;
                if (m) m[GT_LFRONT * j + i] = a;
            }
        }
        return true;
    }
    // Where piece t's table holds for entry i's exact value: [*lo, *hi], its estimate's error within
    // binade e, rounded inwards (empty where the estimate is not finite).
    __device__ __forceinline__ void window(i64 t, int i, int e, double* lo, double* hi) const {
        const double est = estimate(t, i);
        const double err = vector(t) ? vec_f[GT_LVF * t + 44 + i] : slot_f[GT_LSLOT_F * t + 4];
        const double edge = ldexp(1.0, e), half = ldexp(1.0, e - 1), unit = ldexp(1.0, e - precision);
        *lo = -GT_LATTICE_NEG_INF;
        *hi = GT_LATTICE_NEG_INF;
        if (!(isfinite(est) && isfinite(err))) return;
        *lo = fmax(nextafter(est - err, -GT_LATTICE_NEG_INF), est < 0.0 ? unit - edge : half);
        *hi = fmin(nextafter(est + err, GT_LATTICE_NEG_INF), est < 0.0 ? -half : edge - unit);
    }
};

// tile_scan's operator over the anchors: element k is piece k's matrix (a segment piece) or a restart
// at k (a boundary: identity, head k); where k is its span's second piece, the segment restarts at
// the span's first piece. put records each piece's product P_k and head, links each boundary to the
// head before it and adds a segment piece's bounds to its head's.
struct SegScan {
    using T = double;
    static constexpr int W = GT_LSEG_W;
    SegTables t;
    double* seg_p;  // per anchor: P_k
    i64* seg_i;     // per slot: GT_LSEG_I
    u64* seg_c;     // per head: keys of the bounds on its exits, upper (min) then lower (max)

    __device__ __forceinline__ static void identity(double* p) {
        for (int m = 0; m < GT_LFRONT * GT_LFRONT; ++m) p[m] = m % (GT_LFRONT + 1) ? GT_LATTICE_NEG_INF : 0.0;
        p[GT_LSEG_W - 1] = -1.0;
    }
    __device__ __noinline__ static void join(double* later, const double* q) {
        if (later[GT_LSEG_W - 1] >= 0.0) return;  // the segment restarts inside later
        maxplus_after(later, q);
        later[GT_LSEG_W - 1] = q[GT_LSEG_W - 1];
    }
    // Head h: no boundary after it yet, bounds that hold for any exits.
    __device__ __forceinline__ void start_head(i64 h) const {
        seg_i[GT_LSEG_I * h + 1] = -1;
        open_bounds(seg_c + 2 * GT_LFRONT * h, GT_LFRONT);
    }
    __device__ __noinline__ void element(i64 k, double* p) const {
        identity(p);
        if (t.slot_i[GT_LSLOT_I * k + 4] == 0) return;  // no cut at this anchor
        const i64 before = t.slot_i[GT_LSLOT_I * k + 3];
        int e, e_before;
        bool segment = t.matrix(k, &e, p);
        // a new binade is a boundary: a product's sums share one spacing
        if (segment && before < t.n_anchors && t.matrix(before, &e_before, nullptr) && e_before != e) segment = false;
        seg_i[GT_LSEG_I * k + 3] = segment;
        if (!segment) {
            identity(p);
            p[GT_LSEG_W - 1] = (double)k;
            start_head(k);
        } else if (before >= t.n_anchors) {
            p[GT_LSEG_W - 1] = (double)before;
        }
        if (before >= t.n_anchors) start_head(before);
    }
    __device__ __noinline__ void put(i64 k, double* p) const {
        if (t.slot_i[GT_LSLOT_I * k + 4] == 0) return;
        const i64 before = t.slot_i[GT_LSLOT_I * k + 3];
        if (before >= t.n_anchors) identity(p);  // its span's second piece: the first piece's exits
        const i64 h = before >= t.n_anchors ? before : (i64)p[GT_LSEG_W - 1];
        seg_i[GT_LSEG_I * k] = h;
        for (int m = 0; m < GT_LFRONT * GT_LFRONT; ++m) seg_p[GT_LFRONT * GT_LFRONT * k + m] = p[m];
        if (!seg_i[GT_LSEG_I * k + 3]) {  // a boundary ends h's segment
            seg_i[GT_LSEG_I * h + 1] = k;
            return;
        }
        int e;
        t.matrix(k, &e, nullptr);
        const i64 first = t.slot_i[GT_LSLOT_I * h + 2];  // the segment's first piece: its estimates pick w
        const int n_e = t.in(first).n;
        double upper[GT_LFRONT], lower[GT_LFRONT];
        for (int j = 0; j < GT_LFRONT; ++j) {
            upper[j] = -GT_LATTICE_NEG_INF;
            lower[j] = GT_LATTICE_NEG_INF;
        }
        for (int i = 0; i < t.in(k).n; ++i) {
            double lo, hi, best = GT_LATTICE_NEG_INF;
            t.window(k, i, e, &lo, &hi);
            int w = -1;
            for (int j = 0; j < n_e; ++j) {
                const double a = p[GT_LFRONT * i + j];
                if (a == GT_LATTICE_NEG_INF) continue;
                upper[j] = fmin(upper[j], nextafter(hi - a, GT_LATTICE_NEG_INF));
                const double guess = a + t.estimate(first, j);
                if (w < 0 || guess > best) {
                    w = j;
                    best = guess;
                }
            }
            if (w < 0) lower[0] = -GT_LATTICE_NEG_INF;  // no path into entry i: never in its window
            else lower[w] = fmax(lower[w], nextafter(lo - p[GT_LFRONT * i + w], -GT_LATTICE_NEG_INF));
        }
        for (int j = 0; j < n_e; ++j) {
            if (upper[j] != -GT_LATTICE_NEG_INF) atomicMin(seg_c + 2 * GT_LFRONT * h + j, order_key(upper[j]));
            if (lower[j] != GT_LATTICE_NEG_INF)
                atomicMax(seg_c + 2 * GT_LFRONT * h + GT_LFRONT + j, order_key(lower[j]));
        }
    }
};

// What a span's walk reads and writes (lattice_resolve's arrays; passed by reference: the walk has no
// registers to spare).
struct WalkArrays {
    const i64* scratch_offsets;
    i64* slot_i;
    double* slot_f;
    const i64* class_i;
    double* score;
    i64* route;
    int* value;
    const int* front_n;
    const int* front_off;
    double* vec_f;
    const i64* vec_i;
    const double* seg_p;
    double* seg_x;
    i64* seg_i;
    const u64* seg_c;
};

// lattice_resolve's step over piece t of span s (from begin, its scratch row `row`): its exits' exact
// values from its entries' xs, in place (a piece without forced cuts: xs[0], its head), by its table
// where it holds, else by an exact solve; what lattice_finish solves it from kept in its slot.
__device__ __forceinline__ void resolve_piece(const LatticeArgs& g, const WalkArrays& w, i64 s, i64 begin, i64 row,
                                           i64 t, double* xs) {
    GT_STEP();
    i64* slot_i = w.slot_i;
    const i64* class_i = w.class_i;
    const int* front_n = w.front_n;
    const int* front_off = w.front_off;
    double* score = w.score;
    i64* route = w.route;
    int* value = w.value;
    const int precision = (g.mode & GT_LATTICE_FLOAT32) ? 24 : 53;
    i64* fields = slot_i + GT_LSLOT_I * t;
    double* floats = w.slot_f + GT_LSLOT_F * t;
    const LFront in = lattice_front(front_n, front_off, t);
    const LFront out = lattice_front(front_n, front_off, fields[2]);
    if (in.n > 1 || out.n > 1) {
        resolve_front(g, s, begin, row, fields, in, out, w.vec_f + GT_LVF * t, w.vec_i + GT_LVI * t, xs, score, route,
                      value);
        return;
    }
    const int e = (int)class_i[4 * t], classes = (int)class_i[4 * t + 1];
    const i64 c1 = class_i[4 * t + 2], c2 = class_i[4 * t + 3];
    const double x = xs[0];
    floats[5] = x;
    // a zone starting at the head: from the head itself
    double next = c1 == fields[0] ? x : lattice_table_at(x, floats, class_i + 4 * t, precision);
    if (!isnan(next) && classes > 0 && c1 >= 0) {  // a split piece: the zone exactly, then the part after
        const double y = lattice_values(g, s, c1, c2, next, -1.0, 0, nullptr);
        next = c2 == fields[1] ? y : nan("");
        if (c2 < fields[1] && !isnan(y) && lattice_binade(y) == e + 1 && fabs(y - floats[14]) <= floats[15]) {
            const int cls = (int)((long long)ldexp(y, precision - e - 1) & 1LL);
            const double delta = floats[8 + cls];
            const double sum = y + delta;
            if (!isnan(delta) && lattice_exact_sum(y, delta, sum)) next = sum;
        }
    }
    if (!isnan(next)) {
        fields[4] = GT_LSLOT_CERTAIN;
    } else {
        lattice_solve(g, s, begin, fields[0], fields[1], x, score + row, route + row, value + row);
        fields[4] = GT_LSLOT_EXACT;
        next = score[row + fields[1] - begin];
    }
    xs[0] = next;
    for (int j = 1; j < GT_LFRONT; ++j) xs[j] = GT_LATTICE_NEG_INF;
}

// The walk at head h (a span's first piece or a boundary; xs its exits, see above): its exits kept for
// lattice_finish and whether they meet its segment's bounds (then xs becomes the entries of the
// boundary after the segment). Returns the next piece to step, the boundary where the bounds hold,
// else the segment's first piece (-1: none), and sets *stop to the boundary (-1: the span's end).
__device__ __noinline__ i64 segment_head(const WalkArrays& w, i64 h, double* xs, i64* stop) {
    GT_STEP();
    const i64 k0 = w.slot_i[GT_LSLOT_I * h + 2], b = __ldcg(w.seg_i + GT_LSEG_I * h + 1);
    *stop = b;
    if (k0 < 0) return -1;
    for (int j = 0; j < GT_LFRONT; ++j) w.seg_x[GT_LFRONT * h + j] = xs[j];
    const int n_e = lattice_front(w.front_n, w.front_off, k0).n;
    bool jump = within_bounds(w.seg_c + 2 * GT_LFRONT * h, GT_LFRONT, n_e, xs);
#ifdef GT_LSEG_NO_JUMPS
    jump = false;  // tests: the walk a step per piece that each jump stands for
#endif
    w.seg_i[GT_LSEG_I * h + 2] = jump;
    if (!jump) return k0;
    if (b >= 0) {  // b's entries: P_b E
        double y[GT_LFRONT];
        for (int i = 0; i < GT_LFRONT; ++i) {
            y[i] = GT_LATTICE_NEG_INF;
            for (int j = 0; j < n_e; ++j) {
                const double v = xs[j] + __ldcg(w.seg_p + GT_LFRONT * (GT_LFRONT * b + i) + j);
                y[i] = v > y[i] ? v : y[i];
            }
        }
        for (int i = 0; i < GT_LFRONT; ++i) xs[i] = y[i];
    }
    return b;
}

// The walk of the long span whose first piece is slot `first`: from each head, a jump over its segment
// where its exits meet the segment's bounds, else a step per piece of it; then the boundary after it.
__device__ __forceinline__ void resolve_span(const LatticeArgs& g, const WalkArrays& w, i64 first) {
    const i64 s = w.slot_i[GT_LSLOT_I * first + 5], begin = g.span_starts[s], row = w.scratch_offsets[s];
    // the head's exits, kept in the first piece's vector (its entries are unused): the walk has no
    // registers left for them
    double* xs = w.vec_f + GT_LVF * first + 48;
    const int n_first = lattice_front(w.front_n, w.front_off, w.slot_i[GT_LSLOT_I * first + 2]).n;
    for (int j = 0; j < GT_LFRONT; ++j)
        xs[j] = j < n_first ? w.vec_f[GT_LVF * first + GT_LFRONT * j] : GT_LATTICE_NEG_INF;
    i64 stop;
    for (i64 t = segment_head(w, first, xs, &stop); t >= 0;) {
        resolve_piece(g, w, s, begin, row, t, xs);
        t = t == stop ? segment_head(w, t, xs, &stop) : w.slot_i[GT_LSLOT_I * t + 2];
    }
}

// Per block: a tile of anchors (in the order blocks start), their pieces scanned (SegScan); then per
// long span, the thread of its last piece: its walk (resolve_span), once every tile holding its pieces
// is scanned (counted per span, so the walk waits on earlier tiles only). Per thread: the scan's steps
// (tile_scan.cuh) and, for a walk, a step per segment plus the steps of its boundaries (a table step,
// a zone or an exact solve of a piece each) and of the segments whose bounds fail (a step per piece).
extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
lattice_resolve(LATTICE_ARGS, i64 n_anchors, u64* __restrict__ counter, const i64* __restrict__ scratch_offsets,
                i64* __restrict__ slot_i, double* __restrict__ slot_f, const i64* __restrict__ class_i,
                double* __restrict__ score, i64* __restrict__ route, int* __restrict__ value,
                const int* __restrict__ front_n, const int* __restrict__ front_off, double* __restrict__ vec_f,
                const i64* __restrict__ vec_i, double* __restrict__ seg_p, double* __restrict__ seg_x,
                i64* __restrict__ seg_i, u64* __restrict__ seg_c, const i64* __restrict__ span_first,
                double* __restrict__ nodes) {
    __shared__ i64 tile_slot;
    const i64 tile = lookback_tile(counter + 4, &tile_slot);
    const i64 n_tiles = (n_anchors + GT_BLOCK - 1) / GT_BLOCK;
    const int precision = (mode & GT_LATTICE_FLOAT32) ? 24 : 53;
    const SegTables tables{n_anchors, slot_i, slot_f, class_i, vec_f, vec_i, front_n, front_off, precision};
    tile_scan(SegScan{tables, seg_p, seg_i, seg_c}, n_anchors, tile, counter + GT_LCOUNTERS + 4 * n_tiles, nodes);
    u64* done = counter + GT_LCOUNTERS + 5 * n_tiles;  // per span: the tiles of its pieces scanned
    const i64 k = tile * GT_BLOCK + threadIdx.x;
    const bool piece = k < n_anchors && slot_i[GT_LSLOT_I * k + 4] != 0;
    const i64 before = piece ? slot_i[GT_LSLOT_I * k + 3] : 0, s = piece ? slot_i[GT_LSLOT_I * k + 5] : 0;
    // the first of span s's pieces in this tile adds the tiles since its piece before (its span's first
    // piece: 1), so that a span's count reaches 1 + its last piece's tile - its second piece's
    if (piece && (before >= n_anchors || before / GT_BLOCK < tile))
        atomicAdd(done + s, before >= n_anchors ? 1ull : (u64)(tile - before / GT_BLOCK));
    __syncthreads();
    if (!piece || slot_i[GT_LSLOT_I * k + 2] >= 0) return;  // the walk is its span's last piece's
    const i64 first = span_first[s];
    tile_wait(done, s, (u64)(1 + tile - slot_i[GT_LSLOT_I * first + 2] / GT_BLOCK));
    LATTICE_G;
    const WalkArrays w{scratch_offsets, slot_i, slot_f, class_i, score, route, value, front_n, front_off, vec_f, vec_i,
                       seg_p, seg_x, seg_i, seg_c};
    resolve_span(g, w, first);
}

// ------------------------------------------------------------ the long spans' walks back, by tiles
// A span's pieces after its first are its anchors' with a cut, ascending, and spans never interleave,
// so the walk back from each span's end is a scan over the anchors, from the last, of a combination
// that restarts at a span's last piece: tile_scan.cuh's (lattice_finish's blocks take the anchors'
// tiles from the last). A range's product: per exit of its highest piece (the entry the piece above
// leaves by), the entry its lowest piece leaves by (2 bits an exit, 0xE4 maps each exit to itself; bit
// 8 set where the range holds a span's last piece, whose exit is 0 whatever comes above) and the
// tokens of its pieces' paths. Integers and maps of a few indices: exact in any order.
struct ExitScan {
    using T = i64;
    static constexpr int W = 1 + GT_LFRONT;  // the map, then the tokens per exit
    i64 n_anchors;
    i64* slot_i;
    const i64* vec_i;  // written by other threads of the block: read through L2
    const int* front_n;
    const int* front_off;

    __device__ __forceinline__ static void identity(i64* p) {
        p[0] = 0xE4;
        for (int j = 0; j < GT_LFRONT; ++j) p[1 + j] = 0;
    }
    // later = later after earlier (the pieces above it)
    __device__ __forceinline__ static void join(i64* later, const i64* earlier) {
        if (later[0] >> 8) return;
        i64 m = earlier[0] & 0x100, tokens[GT_LFRONT];
        for (int j = 0; j < GT_LFRONT; ++j) {
            const int e = (int)((earlier[0] >> (2 * j)) & 3);
            m |= ((later[0] >> (2 * e)) & 3) << (2 * j);
            tokens[j] = earlier[1 + j] + later[1 + e];
        }
        later[0] = m;
        for (int j = 0; j < GT_LFRONT; ++j) later[1 + j] = tokens[j];
    }
    // Anchor piece k's product: per exit, the entry its path leaves by and its tokens.
    __device__ __forceinline__ void element(i64 i, i64* p) const {
        const i64 k = n_anchors - 1 - i;
        identity(p);
        if (slot_i[GT_LSLOT_I * k + 4] == 0) return;  // no cut at this anchor
        const i64 next = slot_i[GT_LSLOT_I * k + 2];
        const LFront out = lattice_front(front_n, front_off, next);
        p[0] = next < 0 ? 0x100 : 0;
        for (int j = 0; j < out.n; ++j) {
            p[0] |= (__ldcg(vec_i + GT_LVI * k + 2 * j) & 3) << (2 * j);
            p[1 + j] = __ldcg(vec_i + GT_LVI * k + 2 * j + 1);
        }
    }
    // Piece k leaves by the exit the piece above enters by (p at exit 0: the pieces above it in its
    // span; exit 0 at its span's last piece): its exit's position, its tokens and the tokens after it
    // in its span; where k is its span's second piece, its first piece's exit and tokens after it too.
    __device__ __forceinline__ void put(i64 i, const i64* p) const {
        const i64 k = n_anchors - 1 - i;
        i64* fields = slot_i + GT_LSLOT_I * k;
        if (fields[4] == 0) return;
        const bool last = fields[2] < 0;
        const int exit = last ? 0 : (int)(p[0] & 3);
        fields[8] = fields[1] + lattice_front(front_n, front_off, fields[2]).off(exit);
        fields[6] = __ldcg(vec_i + GT_LVI * k + 2 * exit + 1);
        fields[7] = last ? 0 : p[1];
        i64* first = slot_i + GT_LSLOT_I * fields[3];
        if (fields[3] >= n_anchors) {
            first[8] = first[1] + lattice_front(front_n, front_off, k).off((int)__ldcg(vec_i + GT_LVI * k + 2 * exit));
            first[7] = fields[7] + fields[6];
        }
    }
};

// lattice_finish's pieces' exits (its path leaves by the exit the piece after it enters by; the span's
// last piece by the span's end), their tokens and the tokens after them in their span, and the long
// spans' token counts: the anchors of tile `tile` by tile_scan, the spans' first pieces among the
// tile's slots from their second piece's put (its tile's flag; not inlined: the kernel's registers
// are the solve's).
__device__ __noinline__ void finish_scans(i64 tile, i64 n_anchors, i64 n_long, u64* flags, i64* nodes, i64* slot_i,
                                         unsigned long long* token_counts, const int* front_n, const int* front_off,
                                         const i64* vec_i) {
    if (tile * GT_BLOCK < n_anchors)
        tile_scan(ExitScan{n_anchors, slot_i, vec_i, front_n, front_off}, n_anchors, tile, flags, nodes);
    const i64 k = tile * GT_BLOCK + threadIdx.x;
    if (k < n_anchors || k >= n_anchors + n_long) return;
    GT_STEP();
    i64* first = slot_i + GT_LSLOT_I * k;
    const i64 next = first[2];
    int exit = 0;
    if (next >= 0) {
        tile_wait(flags, (n_anchors - 1 - next) / GT_BLOCK, 2);
        const LFront out = lattice_front(front_n, front_off, next);
        const i64 at = __ldcg(first + 8);
        for (int j = 0; j < out.n; ++j) exit = first[1] + out.off(j) == at ? j : exit;
    } else {
        first[8] = first[1];
        first[7] = 0;
    }
    first[6] = vec_i[GT_LVI * k + 2 * exit + 1];
    token_counts[first[5]] = (unsigned long long)(__ldcg(first + 7) + first[6]);
}

// Per thread: one piece of a long span: the exact solve from its exact head (pieces settled by their
// table; a piece of a segment lattice_resolve jumped: P_k E, its head's exits E) and, from each exit,
// the entry its path leaves by and its tokens. A block takes a tile of slots in the order blocks
// start (the anchors' from the last, then the spans' first pieces) and scans them (finish_scans):
// each piece's exit, tokens and tokens after it in its span, the long spans' token counts. nodes:
// the scan's products per tile (ExitScan::W each).
extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
lattice_finish(LATTICE_ARGS, i64 n_anchors, i64 n_slots, u64* __restrict__ counter,
               const i64* __restrict__ scratch_offsets, i64* __restrict__ slot_i, const double* __restrict__ slot_f,
               double* __restrict__ score, i64* __restrict__ route, int* __restrict__ value,
               unsigned long long* __restrict__ token_counts, const int* __restrict__ front_n,
               const int* __restrict__ front_off, double* __restrict__ vec_f, i64* __restrict__ vec_i,
               const double* __restrict__ seg_p, const double* __restrict__ seg_x, const i64* __restrict__ seg_i,
               i64* __restrict__ nodes) {
    LATTICE_G;
    __shared__ i64 tile_slot;
    const i64 tile = lookback_tile(counter + 3, &tile_slot);
    const i64 at = tile * GT_BLOCK + threadIdx.x, k = at < n_anchors ? n_anchors - 1 - at : at;
    i64* fields = slot_i + GT_LSLOT_I * (k < n_slots ? k : 0);
    double head = k < n_slots ? slot_f[GT_LSLOT_F * k + 5] : 0.0;
    if (k < n_anchors && (fields[4] == GT_LSLOT_PENDING || fields[4] == GT_LSLOT_PENDING_FRONT) &&
        seg_i[GT_LSEG_I * seg_i[GT_LSEG_I * k] + 2] == 1) {  // in a segment the walk jumped: entries P_k E
        const i64 h = seg_i[GT_LSEG_I * k];
        double* xs = vec_f + GT_LVF * k + 48;
        for (int i = 0; i < GT_LFRONT; ++i) {
            double x = GT_LATTICE_NEG_INF;
            for (int j = 0; j < GT_LFRONT; ++j) {
                const double v = seg_x[GT_LFRONT * h + j] + seg_p[GT_LFRONT * (GT_LFRONT * k + i) + j];
                x = v > x ? v : x;
            }
            xs[i] = x;
        }
        head = xs[0];
        fields[4] = GT_LSLOT_CERTAIN;
    }
    if (k < n_slots && (fields[4] == GT_LSLOT_CERTAIN || fields[4] == GT_LSLOT_EXACT)) {
        const i64 s = fields[5], begin = span_starts[s], row = scratch_offsets[s];
        const LFront in = lattice_front(front_n, front_off, k < n_anchors ? k : -1);
        const LFront out = lattice_front(front_n, front_off, fields[2]);
        if (fields[4] == GT_LSLOT_CERTAIN) {  // from its exact entries (a forced cut at either end) or head
            const bool vector = in.n > 1 || out.n > 1;
            const double* xs = vec_f + GT_LVF * k + 48;
            lattice_solve(g, s, begin, fields[0], fields[1], vector ? xs[in.n - 1] : head,
                          score + row, route + row, value + row, vector ? &in : nullptr, xs);
        }
        // From each exit back to the piece's start: the entry the path leaves by, and its tokens.
        for (int j = 0; j < out.n; ++j) {
            i64 count = 0, q = fields[1] + out.off(j) - begin;
            for (; q > fields[0] - begin; q = route[row + q]) {
                GT_STEP();
                ++count;
            }
            int entry = 0;
            for (int i = 0; i < in.n; ++i) entry = q == fields[0] + in.off(i) - begin ? i : entry;
            vec_i[GT_LVI * k + 2 * j] = entry;
            vec_i[GT_LVI * k + 2 * j + 1] = count;
        }
    }
    const i64 n_tiles = (n_anchors + GT_BLOCK - 1) / GT_BLOCK;
    finish_scans(tile, n_anchors, (i64)counter[0], counter + GT_LCOUNTERS + 3 * n_tiles, nodes, slot_i, token_counts,
                 front_n, front_off, vec_i);
}

// Per thread: one piece of a long span: its tokens, ending where the later pieces' start (a step per
// token).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_emit_pieces(const i64* __restrict__ span_starts, i64 n_slots, const i64* __restrict__ slot_i,
                    const i64* __restrict__ scratch_offsets, const i64* __restrict__ route,
                    const int* __restrict__ value, const i64* __restrict__ token_offsets, i64* __restrict__ starts,
                    i64* __restrict__ ends, int* __restrict__ values) {
    const i64 k = global_thread_index();
    if (k >= n_slots) return;
    const i64* fields = slot_i + GT_LSLOT_I * k;
    if (fields[4] != GT_LSLOT_CERTAIN && fields[4] != GT_LSLOT_EXACT) return;
    const i64 s = fields[5], begin = span_starts[s], row = scratch_offsets[s];
    i64 out = token_offsets[s + 1] - fields[7];  // before the tokens of the pieces after it
    for (i64 q = fields[8] - begin; q > fields[0] - begin;) {  // from the exit its path leaves by
        GT_STEP();
        --out;
        const i64 start = route[row + q];
        starts[out] = begin + start;
        ends[out] = begin + q;
        values[out] = value[row + q];
        q = start;
    }
}
