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
// comparison). One thread per span:
// its work is linear in the span's bytes plus its edges (a 1 MB pre-token is about 1 M steps on
// one thread); spans of a batch run in parallel. Character starts follow utf8_sequence_at (a
// malformed byte is one character), as the prefix search does.
#include "utf8.cuh"
#include "step_counter.cuh"

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
              int* __restrict__ value, i64* __restrict__ token_counts) {
    const i64 s = global_thread_index();
    if (s >= n_spans) return;
    const i64 begin = span_starts[s], end = span_ends[s], n = end - begin, row = scratch_offsets[s];
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
             int* __restrict__ values) {
    const i64 s = global_thread_index();
    if (s >= n_spans) return;
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
