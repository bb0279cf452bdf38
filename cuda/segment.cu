// segment.cu -- dictionary word segmentation (DictCut): pre-split marks and the Viterbi lattice.
//
// Pre-split: every codepoint is marked as dropped (space), starting a token (one the lattice
// cuts, or one kept whole), or continuing the previous one. DictCut: Han, letter and digit runs
// group, everything else stands alone, and a letter run keeps an apostrophe that is followed by a
// letter ("don't"); Han runs go to the lattice. jieba mode: runs of jieba's block characters
// (re_han_default, [\u4E00-\u9FD5a-zA-Z0-9+#&._%-]) go to the lattice, Python's whitespace
// (str.isspace, what re_skip_default's \s matches) is dropped, anything else stands alone.
// Viterbi: one thread per Han run solves the best path backward over the run's byte positions
// (edges from the prefix search, plus a one-character fallback edge), then emits its words.
#include "utf8.cuh"

#define GT_NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))
#define KIND_DROP 0
#define KIND_START 1
#define KIND_CONTINUE 2
#define KIND_START_RUN 3  // a token the lattice cuts

__device__ __forceinline__ bool jieba_block_char(u32 c) {
    return (c >= 0x4E00u && c <= 0x9FD5u) || (c >= 0x61u && c <= 0x7Au) || (c >= 0x41u && c <= 0x5Au) ||
           (c >= 0x30u && c <= 0x39u) || c == 0x2Bu || c == 0x23u || c == 0x26u || c == 0x2Eu || c == 0x5Fu ||
           c == 0x25u || c == 0x2Du;
}

__device__ __forceinline__ bool python_space(u32 c) {
    return (c >= 0x09u && c <= 0x0Du) || (c >= 0x1Cu && c <= 0x20u) || c == 0x85u || c == 0xA0u || c == 0x1680u ||
           (c >= 0x2000u && c <= 0x200Au) || c == 0x2028u || c == 0x2029u || c == 0x202Fu || c == 0x205Fu ||
           c == 0x3000u;
}

__device__ __forceinline__ u8 jieba_kind(const u32* codepoints, const u8* row_start, i64 k) {
    const u32 c = codepoints[k];
    if (python_space(c)) return KIND_DROP;
    if (!jieba_block_char(c)) return KIND_START;
    return !row_start[k] && jieba_block_char(codepoints[k - 1]) ? KIND_CONTINUE : KIND_START_RUN;
}

// row_start[k] is 1 when codepoint k begins a string (row_start[n] == 1 closes the last one).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
presplit_kinds(const u32* __restrict__ codepoints, const u8* __restrict__ classes, const u8* __restrict__ row_start,
               i64 n, int jieba_mode, u8* __restrict__ kinds) {
    const i64 k = global_thread_index();
    if (k >= n) return;
    if (jieba_mode) {
        kinds[k] = jieba_kind(codepoints, row_start, k);
        return;
    }
    const u8 c = classes[k];
    u8 kind;
    if (c == GT_CLASS_SPACE) kind = KIND_DROP;
    else if (row_start[k]) kind = KIND_START;
    else {
        const u8 prev = classes[k - 1];
        const bool next_alpha = !row_start[k + 1] && classes[k + 1] == GT_CLASS_ALPHA;
        const bool inner_apostrophe = codepoints[k] == 0x27u && prev == GT_CLASS_ALPHA && next_alpha;
        const bool after_apostrophe = c == GT_CLASS_ALPHA && codepoints[k - 1] == 0x27u && k >= 2 &&
                                      !row_start[k - 1] && classes[k - 2] == GT_CLASS_ALPHA;
        if (inner_apostrophe || after_apostrophe) kind = KIND_CONTINUE;
        else if (c == GT_CLASS_OTHER) kind = KIND_START;
        else kind = prev == c ? KIND_CONTINUE : KIND_START;
    }
    kinds[k] = kind == KIND_START && c == GT_CLASS_HAN ? KIND_START_RUN : kind;
}

// The lattice of span s, solved backward. For every codepoint start p of the span:
//   route_score[p] = max over edges p -> q of weight + route_score[q], route_next[p] = best q.
// Edges: the dictionary edges starting at p (edge_values index `weights`; a weight of -inf means
// "not an edge"), plus the one-character edge with `unknown_weight`: in DictCut mode unless a
// dictionary edge ends at the same place, in jieba mode only when p has no dictionary edge.
// Ties: DictCut keeps the first (shortest) end, jieba the last (longest).
struct Lattice {
    const u8* data;
    const i64* edge_starts;
    const i64* edge_ends;
    const int* edge_values;
    const double* weights;
    double unknown_weight;
    int jieba_mode;
};

__device__ __forceinline__ i64 next_char_start(const u8* data, i64 p, i64 begin, i64 end) {
    i64 q = p + 1;
    while (q < end && !utf8_starts_char(data, q, begin, end)) ++q;
    return q;
}

__device__ __forceinline__ bool better(double score, double best, int jieba_mode) {
    return jieba_mode ? score >= best : score > best;
}

// The best edge out of a character start p whose character ends at char_end. Dictionary edges
// [first, last] start at p (ends ascending); `skip_end` (or -1) is an end to leave out, as
// DictCut's loss does; score_at(q) is the best score from q to the end of the span.
template <class ScoreAt>
__device__ __forceinline__ double best_edge(const Lattice& g, i64 char_end, i64 first, i64 last, i64 skip_end,
                                            ScoreAt score_at, i64* best_end, int* best_value) {
    bool has_dict_edge = false, char_end_covered = false;
    for (i64 k = first; k <= last; ++k) {
        if (g.weights[g.edge_values[k]] == GT_NEG_INF || g.edge_ends[k] == skip_end) continue;
        has_dict_edge = true;
        if (g.edge_ends[k] == char_end) char_end_covered = true;
    }
    double best = GT_NEG_INF;
    *best_end = -1;
    *best_value = -1;
    const bool fallback = g.jieba_mode ? !has_dict_edge : !char_end_covered;
    if (fallback && char_end != skip_end) {  // the shortest end, so it comes first in ascending order
        best = g.unknown_weight + score_at(char_end);
        *best_end = char_end;
    }
    for (i64 k = first; k <= last; ++k) {
        const double w = g.weights[g.edge_values[k]];
        if (w == GT_NEG_INF || g.edge_ends[k] == skip_end) continue;
        const double s = w + score_at(g.edge_ends[k]);
        if (*best_end < 0 || better(s, best, g.jieba_mode)) {
            best = s;
            *best_end = g.edge_ends[k];
            *best_value = g.edge_values[k];
        }
    }
    return best;
}

// Edges [*first, *last] of position p, given that *e is the last edge not yet consumed by a
// position after p (edges are sorted by start, then end, and positions are visited downward).
__device__ __forceinline__ void edges_at(const Lattice& g, i64 p, i64 e_lo, i64* e, i64* first, i64* last) {
    *last = *e;
    i64 f = *e + 1;
    while (f - 1 >= e_lo && g.edge_starts[f - 1] == p) --f;
    *first = f;
    *e = f - 1;
}

// Solves span [begin, end) with edges [e_lo, e_hi) into its scratch rows (index p - begin).
// Returns the number of words on the best path.
__device__ i64 solve_span(const Lattice& g, i64 begin, i64 end, i64 e_lo, i64 e_hi, double tail_score,
                          double* score, i64* next, int* value) {
    // Forward pass: next[p] = where the character starting at p ends (-1 inside a character), so
    // the backward pass validates each character once.
    for (i64 p = begin; p < end; ++p) next[p - begin] = -1;
    for (i64 p = begin; p < end;) {
        u32 cp;
        const int len = utf8_sequence_at(g.data + p, end - p, &cp);
        next[p - begin] = p + (len > 0 ? len : 1);
        p = next[p - begin];
    }
    score[end - begin] = tail_score;
    i64 e = e_hi - 1;
    auto score_at = [&](i64 q) { return score[q - begin]; };
    for (i64 p = end - 1; p >= begin; --p) {
        const i64 char_end = next[p - begin];
        score[p - begin] = GT_NEG_INF;
        value[p - begin] = -1;
        if (char_end < 0) continue;
        i64 first, last;
        edges_at(g, p, e_lo, &e, &first, &last);
        score[p - begin] = best_edge(g, char_end, first, last, -1, score_at, &next[p - begin], &value[p - begin]);
    }
    i64 words = 0;
    for (i64 p = begin; p < end; p = next[p - begin]) ++words;
    return words;
}

// Pass 1: solve every span into the scratch rows (scratch_offsets[s] = sum of (len + 1) before s)
// and count its words.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
viterbi_route(const u8* __restrict__ data, const i64* __restrict__ span_starts, const i64* __restrict__ span_ends,
              i64 n_spans, const i64* __restrict__ edge_starts, const i64* __restrict__ edge_ends,
              const int* __restrict__ edge_values, const i64* __restrict__ span_edge_offsets,
              const double* __restrict__ weights, double unknown_weight, double tail_score, int jieba_mode,
              const i64* __restrict__ scratch_offsets, double* __restrict__ scores, i64* __restrict__ next,
              int* __restrict__ values, i64* __restrict__ word_counts) {
    const i64 s = global_thread_index();
    if (s >= n_spans) return;
    const Lattice g = {data, edge_starts, edge_ends, edge_values, weights, unknown_weight, jieba_mode};
    const i64 row = scratch_offsets[s];
    word_counts[s] = solve_span(g, span_starts[s], span_ends[s], span_edge_offsets[s], span_edge_offsets[s + 1],
                                tail_score, scores + row, next + row, values + row);
}

// Pass 2: follow each span's route and write its words' end offsets and dictionary values
// (-1 for a fallback character) at word_offsets[s].
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
viterbi_emit(const i64* __restrict__ span_starts, const i64* __restrict__ span_ends, i64 n_spans,
             const i64* __restrict__ scratch_offsets, const i64* __restrict__ next, const int* __restrict__ values,
             const i64* __restrict__ word_offsets, i64* __restrict__ word_ends, int* __restrict__ word_values) {
    const i64 s = global_thread_index();
    if (s >= n_spans) return;
    const i64 begin = span_starts[s], end = span_ends[s], row = scratch_offsets[s];
    i64 out = word_offsets[s];
    for (i64 p = begin; p < end; p = next[row + p - begin]) {
        word_ends[out] = next[row + p - begin];
        word_values[out] = values[row + p - begin];
        ++out;
    }
}

// DictCut's pruning loss of one word occurrence (job j: the word [job_starts[j], job_ends[j]) on
// the best path of span job_spans[j]): the best score of the span minus its best score when that
// edge is removed. Scores after the word's start are unchanged, so only positions up to its start
// are solved again, into the job's scratch row (job_scratch_offsets[j], length start - begin + 1).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
viterbi_loss(const u8* __restrict__ data, const i64* __restrict__ span_starts, const i64* __restrict__ span_ends,
             const i64* __restrict__ edge_starts, const i64* __restrict__ edge_ends,
             const int* __restrict__ edge_values, const i64* __restrict__ span_edge_offsets,
             const double* __restrict__ weights, double unknown_weight, int jieba_mode,
             const i64* __restrict__ scratch_offsets, const double* __restrict__ scores,
             const i64* __restrict__ job_spans, const i64* __restrict__ job_starts, const i64* __restrict__ job_ends,
             i64 n_jobs, const i64* __restrict__ job_scratch_offsets, double* __restrict__ job_scratch,
             double* __restrict__ losses) {
    const i64 j = global_thread_index();
    if (j >= n_jobs) return;
    const Lattice g = {data, edge_starts, edge_ends, edge_values, weights, unknown_weight, jieba_mode};
    const i64 s = job_spans[j], word_start = job_starts[j], word_end = job_ends[j];
    const i64 begin = span_starts[s], end = span_ends[s], e_lo = span_edge_offsets[s];
    const double* route = scores + scratch_offsets[s];
    double* local = job_scratch + job_scratch_offsets[j];
    auto score_at = [&](i64 q) { return q <= word_start ? local[q - begin] : route[q - begin]; };
    i64 e = span_edge_offsets[s + 1] - 1;
    while (e >= e_lo && edge_starts[e] > word_start) --e;
    for (i64 p = word_start; p >= begin; --p) {
        local[p - begin] = GT_NEG_INF;
        if (!utf8_starts_char(data, p, begin, end)) continue;
        i64 first, last, best_end;
        int best_value;
        edges_at(g, p, e_lo, &e, &first, &last);
        local[p - begin] = best_edge(g, next_char_start(data, p, begin, end), first, last,
                                     p == word_start ? word_end : -1, score_at, &best_end, &best_value);
    }
    losses[j] = route[0] - local[0];
}
