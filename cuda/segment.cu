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
//
// The segment_* kernels (the end of the file) are the whole segmentation of a batch fused into
// seven kernels over its bytes (Segmenter.segment's CUDA path); their helpers are in segment_rows.cuh.
#include "segment_rows.cuh"

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

// ------------------------------------------------------------ the fused batch segmentation
// Segmenter.segment on the device (the Numba twin is segment_rows in cpu_fallback/segment.py, one
// fused pass per row). No count is read back until the end; flags, path, piece and the scratch
// rows are indexed by byte (runs are disjoint), so no per-run offsets are needed.
//   segment_marks     one thread per byte: the pre-split of its character from its neighbours'
//                     bytes (two characters back, two ahead); a non-lattice token marks its start
//                     and end bytes, the first character of a lattice run appends the run to a list.
//   segment_cuts      one thread per anchor (every chunk_bytes-th byte of the buffer): the first cut
//                     point at or after the anchor inside the run holding it (a character start of
//                     the run that no dictionary word crosses), found within one chunk, or -1.
//   segment_pieces    one thread per piece: a piece starts at a run start or at an anchor's cut
//                     point and ends at the next anchor's cut point or at the run's end. Every path
//                     passes a cut point, so a piece is solved alone (backward Viterbi, the trie
//                     walked from each character start, shortest word first: the prefix search's
//                     order). A run's last piece has the tail score: exact. The others are solved
//                     from tail 0 for their value and the range of their values.
//   segment_settle    one thread per other piece: solved again from an estimate of its tail (the
//                     later pieces' values added up); exact when all its values stay in one binade
//                     (see the kernel), else listed as uncertain.
//   segment_resolve   one thread per uncertain piece; the last one of its run gets the exact route
//                     value at its end from the later pieces and solves its piece with it, and so on
//                     back to the run's start.
//   segment_words     one thread per byte: the path's words as start/end marks, jieba's joins of
//                     one-byte ASCII letters and digits applied (from the path, which nobody writes).
//   segment_compact   one thread per byte: the k-th start and the k-th end mark (prefix sums of the
//                     marks, one array op before it) are word k; row offsets from the sums.
// flags holds 2 (n + 1) bytes: flags[t] marks a word starting at byte t, flags[n + 1 + t] a word
// ending at t (two arrays: a run's end and the next row's first word may share a byte).

// Per thread: one byte and a bounded look at the characters around it (its row from a search
// between the block's first and last rows).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_marks(const u8* __restrict__ data, i64 n, const i64* __restrict__ offsets, i64 n_rows, int jieba_mode,
              u8* __restrict__ flags, int* __restrict__ ids, i64* __restrict__ runs, u64* __restrict__ counters) {
    __shared__ i64 shared_rows[2];
    const i64 i = global_thread_index();
    const i64 first = (i64)blockIdx.x * blockDim.x;
    const RowRange rows = block_rows(offsets, n_rows, first, first + blockDim.x - 1, shared_rows);
    if (i >= n || n_rows == 0 || i < offsets[0] || i >= offsets[n_rows]) return;
    const i64 r = row_between(offsets, rows, i);
    const Row row = {offsets[r], offsets[r + 1]};
    if (!utf8_starts_char(data, i, row.begin, row.end)) return;
    const u8 kind = kind_at(data, i, row.begin, row.end, jieba_mode);
    if (kind == KIND_DROP) return;
    const Char c = char_at(data, i, row.end);
    if (run_char(c.cp, jieba_mode)) {
        if (kind == KIND_START_RUN) runs[atomicAdd(&counters[0], 1ull)] = i;
        return;
    }
    if (kind == KIND_START) {
        flags[i] = 1;
        ids[i] = -1;
    }
    const i64 next = i + c.len;
    const bool token_ends = next == row.end || kind_at(data, next, row.begin, row.end, jieba_mode) != KIND_CONTINUE;
    if (token_ends) flags[n + 1 + next] = 1;
}

// Per thread: one anchor; at most one chunk of character starts past it (plus the longest word's
// bytes before it), each with one trie walk.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_cuts(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
             const u8* __restrict__ eow, int trie_size, int jieba_mode, const u8* __restrict__ data, i64 n,
             const i64* __restrict__ offsets, i64 n_rows, i64 chunk_bytes, i64 max_word_bytes, i64 n_anchors,
             i64* __restrict__ cuts, i64* __restrict__ slot_i) {
    const i64 j = global_thread_index();
    if (j >= n_anchors) return;
    cuts[j] = -1;
    slot_i[GT_SLOT_FIELDS * j + 4] = GT_SLOT_NONE;  // anchor j's slot, and a long run's
    slot_i[GT_SLOT_FIELDS * (n_anchors + j) + 4] = GT_SLOT_NONE;
    const i64 anchor = j * chunk_bytes;
    if (j == 0 || n_rows == 0 || anchor < offsets[0] || anchor >= offsets[n_rows]) return;
    const Model m = {state, check, label, eow, trie_size, nullptr, 0.0, jieba_mode};
    const Row row = row_of(offsets, n_rows, anchor);
    // every word that could cross a position >= anchor starts at or after lo
    i64 p = anchor - max_word_bytes > row.begin ? anchor - max_word_bytes : row.begin;
    while (!utf8_starts_char(data, p, row.begin, row.end)) ++p;
    bool previous_in_run = p > row.begin && run_char(char_at(data, previous_char(data, p, row.begin, row.end),
                                                             row.end).cp, jieba_mode);
    i64 reach = 0;  // the furthest end of a word starting before p
    const i64 stop = anchor + chunk_bytes < row.end ? anchor + chunk_bytes : row.end;
    while (p < stop) {
        GT_STEP();
        const Char c = char_at(data, p, row.end);
        const bool in_run = run_char(c.cp, jieba_mode);
        if (p >= anchor) {
            // the anchor must lie inside a run that started before it (that run's first piece
            // looks for this cut), and the cut before the run's end
            if (!in_run || !previous_in_run) return;
            if (reach <= p) {
                cuts[j] = p;
                return;
            }
        }
        if (in_run) {
            const i64 r = m.reach(data, p, row.end);
            reach = r > reach ? r : reach;
        }
        previous_in_run = in_run;
        p += c.len;
    }
}

// Per thread: one piece (about a chunk, longer only where an anchor finds no cut point). A run
// without an anchor is one piece: the whole run on one thread, under a chunk of bytes.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_pieces(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
               const u8* __restrict__ eow, int trie_size, const double* __restrict__ weights, double unknown_weight,
               double tail_score, int jieba_mode, const u8* __restrict__ data, const i64* __restrict__ offsets,
               i64 n_rows, i64 chunk_bytes, i64 n_anchors, const i64* __restrict__ runs, const i64* __restrict__ cuts,
               u64* __restrict__ counters, double* __restrict__ slot_f, i64* __restrict__ slot_i,
               double* __restrict__ score, int* __restrict__ length, int* __restrict__ ids, u8* __restrict__ path) {
    const i64 n_runs = (i64)counters[0];
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const Model m = {state, check, label, eow, trie_size, weights, unknown_weight, jieba_mode};
    for (i64 r = global_thread_index(); r < n_runs + n_anchors; r += stride) {
        const bool run_start = r < n_runs;
        const i64 s = run_start ? runs[r] : cuts[r - n_runs];
        if (s < 0) continue;
        const Row row = row_of(offsets, n_rows, s);
        const i64 first_anchor = run_start ? (s + chunk_bytes - 1) / chunk_bytes : r - n_runs + 1;
        i64 next;
        const i64 b = piece_end(data, s, row, first_anchor > 0 ? first_anchor : 1, chunk_bytes, n_anchors, cuts,
                                jieba_mode, length, &next);
        if (run_start && next < 0) {  // a short run: exact, done
            solve_piece(m, data, s, b, tail_score, nullptr, score, length, ids);
            mark_path(s, b, length, path, 1);
            continue;
        }
        const i64 slot = run_start ? n_anchors + (i64)atomicAdd(&counters[2], 1ull) : r - n_runs;
        i64* fields = slot_i + GT_SLOT_FIELDS * slot;
        double* floats = slot_f + GT_SLOT_FLOATS * slot;
        fields[0] = s;
        fields[1] = b;
        fields[2] = next;
        if (run_start) fields[3] = -1;
        if (next >= 0) slot_i[GT_SLOT_FIELDS * next + 3] = slot;
        floats[1] = floats[2] = 0.0;
        Checks checks = {floats + 1, 0.0, false};
        solve_piece(m, data, s, b, next < 0 ? tail_score : 0.0, next < 0 ? nullptr : &checks, score, length, ids);
        floats[0] = score[s];
        if (next < 0) mark_path(s, b, length, path, 1);
        fields[4] = next < 0 ? GT_SLOT_EXACT : GT_SLOT_PENDING;
    }
}

// ---- exact tails by residue classes (segment_settle, segment_resolve, segment_finish)
// A pending piece's exact tail x (the route value at its end) is only known once the later pieces
// are, but what the piece does with it is known before. Let every value the piece computes from x
// keep more than a margin from the edges of its binade [2^(e-1), 2^e), all of spacing at most u_top,
// and let x' = x + s with s a multiple of 2 u_top and |s| under the margin: then x' + w rounds to
// (x + w rounded) + s, ties included (s / u is even), so the solve from x' makes the same
// comparisons and ends s higher. The piece is thus a table: its value minus its tail for each
// class of tails modulo 2 u_top, i.e. for C = 2 u_top / u_t tails of the tail's binade (spacing u_t)
// next to the estimate (the later pieces' tail-0 values added up, within `error` of x). C = 2 inside
// one binade (the parity of the last bit decides halfway roundings), 4 across one edge, and so on.
// segment_settle solves each class on its own thread, segment_resolve walks each long run from its
// end adding table entries (one step per piece; exact: each sum is a route value) and solves exactly
// only the pieces without a valid entry (the few next to the run's end, whose small values span
// many binades), and segment_finish solves every other piece again from its exact tail.
#define GT_CLASSES_MAX 8
#define GT_RING 64  // a class solve keeps the last GT_RING values: needs max_word_bytes < GT_RING
#define GT_CLASS_FLOATS (3 + GT_CLASSES_MAX)  // estimate, error, exact tail, value - tail per class
#define GT_CLASS_INTS 2                       // the tail's binade exponent, C (0: no table)

__device__ __forceinline__ int binade_of(double x) {
    int e;
    frexp(x, &e);
    return e;
}

// Is a + b exact in doubles (Knuth's two-sum: the rounding error of a + b is zero)?
__device__ __forceinline__ bool exact_sum(double a, double b, double sum) {
    const double bb = sum - a;
    return (a - (sum - bb)) + (b - bb) == 0.0;
}

// Residue class of x (a multiple of 2^(e - 53), of binade e) modulo `classes` such multiples.
__device__ __forceinline__ int class_of(double x, int e, int classes) {
    return (int)((long long)ldexp(x, 53 - e) & (long long)(classes - 1));
}

// The route value at a of piece [a, b) from tail `tail` (solve_piece's arithmetic and order;
// `length` is read to skip bytes inside characters, nothing is written but a ring of the last
// GT_RING values), or NaN when a value comes within `margin` of its binade's edges or lies above
// binade e_top. Per thread: the piece's bytes and their trie walks.
__device__ double class_solve(const Model& m, const u8* data, i64 a, i64 b, double tail, const int* length,
                              double margin, int e_top) {
    double ring[GT_RING];
    ring[b & (GT_RING - 1)] = tail;
    auto valid = [&](double v) {
        const double size = fabs(v);
        const int e = binade_of(v);
        return size > 0.0 && e <= e_top && size - ldexp(1.0, e - 1) > margin && ldexp(1.0, e) - size > margin;
    };
    for (i64 p = b - 1; p >= a; --p) {
        GT_STEP();
        if (length[p] == GT_LENGTH_INSIDE) continue;
        const i64 char_end = p + char_at(data, p, b).len;
        double best = GT_NEG_INF;
        i64 best_end = -1;
        bool covered = false;
        int slot = 0;
        for (i64 q = p; q < b; ++q) {
            GT_STEP();
            slot = trie_step(m.state, m.check, m.label, m.trie_size, slot, data[q]);
            if (slot < 0) break;
            const int v = trie_value(m.state, m.check, m.label, m.eow, m.trie_size, slot);
            if (v < 0 || m.weights[v] == GT_NEG_INF) continue;
            if (q + 1 == char_end) covered = true;
            const double s = m.weights[v] + ring[(q + 1) & (GT_RING - 1)];
            if (!valid(s)) return nan("");
            if (best_end < 0 || better(s, best, m.jieba_mode)) {
                best = s;
                best_end = q + 1;
            }
        }
        if (m.jieba_mode ? best_end < 0 : !covered) {
            const double fallback = m.unknown_weight + ring[char_end & (GT_RING - 1)];
            if (!valid(fallback)) return nan("");
            if (best_end < 0 || !(best > fallback)) best = fallback;
        }
        ring[p & (GT_RING - 1)] = best;
    }
    return ring[a & (GT_RING - 1)];
}

// Per thread: one class of one pending piece (thread k * GT_CLASSES_MAX + c): the later pieces of
// its run (one step each, for the estimate) and at most one class solve of the piece.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_settle(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
               const u8* __restrict__ eow, int trie_size, const double* __restrict__ weights, double unknown_weight,
               double tail_score, double weight_bound, int jieba_mode, i64 max_word_bytes,
               const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_rows, i64 n_slots,
               const double* __restrict__ slot_f, const i64* __restrict__ slot_i, const int* __restrict__ length,
               double* __restrict__ class_f, int* __restrict__ class_i) {
    const i64 thread = global_thread_index();
    const i64 k = thread / GT_CLASSES_MAX;
    const int c = (int)(thread % GT_CLASSES_MAX);
    if (k >= n_slots || slot_i[GT_SLOT_FIELDS * k + 4] != GT_SLOT_PENDING) return;
    const Model m = {state, check, label, eow, trie_size, weights, unknown_weight, jieba_mode};
    const i64* fields = slot_i + GT_SLOT_FIELDS * k;
    const double* floats = slot_f + GT_SLOT_FLOATS * k;
    double* table = class_f + GT_CLASS_FLOATS * k;
    const i64 a = fields[0], b = fields[1];
    double estimate = 0.0, later_bytes = 0.0, later_pieces = 0.0;  // the last piece's value has the tail
    for (i64 t = fields[2]; t >= 0; t = slot_i[GT_SLOT_FIELDS * t + 2]) {
        GT_STEP();
        estimate += slot_f[GT_SLOT_FLOATS * t];
        later_bytes += (double)(slot_i[GT_SLOT_FIELDS * t + 1] - slot_i[GT_SLOT_FIELDS * t]);
        later_pieces += 1.0;
    }
    // |every value| < most; an addition rounds by at most most * 2^-53; a chain of a piece's
    // additions by (its bytes + 1) of those; the estimate sums the later pieces' chains
    const Row row = row_of(offsets, n_rows, a);
    const double most = fabs(tail_score) + ((double)(row.end - row.begin) + 2.0) * weight_bound;
    const double error = (later_bytes + 3.0 * later_pieces + 2.0) * most * GT_TWO_TO_MINUS_51;
    const double own = ((double)(b - a) + 2.0) * most * GT_TWO_TO_MINUS_51;
    // the binades of the tail and of the piece's values (from its tail-0 range), as far as known
    const int e_tail = binade_of(estimate);
    const double low = estimate + floats[1] - error - own, high = estimate + floats[2] + error + own;
    const int e_low = binade_of(low), e_high = binade_of(high);
    const int e_top = e_low > e_high ? e_low : e_high;
    int classes = 0;
    if (estimate != 0.0 && binade_of(estimate - error) == e_tail && binade_of(estimate + error) == e_tail &&
        e_top >= e_tail && e_top - e_tail + 1 <= 3 && max_word_bytes < GT_RING) {
        classes = 1 << (e_top - e_tail + 1);
    }
    const double unit = ldexp(1.0, e_tail - 53);
    const double base = classes ? floor(estimate / (classes * unit)) * (classes * unit) : 0.0;  // class 0
    if (classes && (binade_of(base) != e_tail || binade_of(base + (classes - 1) * unit) != e_tail)) classes = 0;
    if (c == 0) {
        table[0] = estimate;
        table[1] = error;
        class_i[GT_CLASS_INTS * k] = e_tail;
        class_i[GT_CLASS_INTS * k + 1] = classes;
    }
    if (c >= classes) return;
    const double tail = base + c * unit;  // of class c
    const double margin = error + classes * unit + 2.0 * ldexp(1.0, e_top - 53);
    const double value = class_solve(m, data, a, b, tail, length, margin, e_top);
    const double delta = value - tail;
    table[3 + c] = !isnan(value) && exact_sum(value, -tail, delta) ? delta : nan("");
}

// Per thread: one long run: its pieces twice (one step each) and an exact solve of each piece
// without a valid table entry. Each other piece's exact tail goes to class_f for segment_finish.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_resolve(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
                const u8* __restrict__ eow, int trie_size, const double* __restrict__ weights, double unknown_weight,
                int jieba_mode, const u8* __restrict__ data, i64 n_anchors, const u64* __restrict__ counters,
                i64* __restrict__ slot_i, double* __restrict__ class_f, const int* __restrict__ class_i,
                double* __restrict__ score, int* __restrict__ length, int* __restrict__ ids, u8* __restrict__ path) {
    const i64 n_long = (i64)counters[2];
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const Model m = {state, check, label, eow, trie_size, weights, unknown_weight, jieba_mode};
    for (i64 r = global_thread_index(); r < n_long; r += stride) {
        i64 last = n_anchors + r;  // the run's first piece
        while (slot_i[GT_SLOT_FIELDS * last + 2] >= 0) {
            GT_STEP();
            last = slot_i[GT_SLOT_FIELDS * last + 2];
        }
        double x = score[slot_i[GT_SLOT_FIELDS * last]];  // exact: the last piece had the tail score
        for (i64 t = slot_i[GT_SLOT_FIELDS * last + 3]; t >= 0; t = slot_i[GT_SLOT_FIELDS * t + 3]) {
            GT_STEP();
            i64* fields = slot_i + GT_SLOT_FIELDS * t;
            double* table = class_f + GT_CLASS_FLOATS * t;
            const int e = class_i[GT_CLASS_INTS * t], classes = class_i[GT_CLASS_INTS * t + 1];
            table[2] = x;
            double next = nan("");
            if (classes > 0 && binade_of(x) == e && fabs(x - table[0]) <= table[1]) {
                const double delta = table[3 + class_of(x, e, classes)];
                const double sum = x + delta;
                if (!isnan(delta) && exact_sum(x, delta, sum)) next = sum;
            }
            if (!isnan(next)) {
                fields[4] = GT_SLOT_CERTAIN;
                x = next;
            } else {
                solve_piece(m, data, fields[0], fields[1], x, nullptr, score, length, ids);
                mark_path(fields[0], fields[1], length, path, 1);
                fields[4] = GT_SLOT_EXACT;
                x = score[fields[0]];
            }
        }
    }
}

// Per thread: one piece whose exact tail segment_resolve found: one solve and its path.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_finish(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
               const u8* __restrict__ eow, int trie_size, const double* __restrict__ weights, double unknown_weight,
               int jieba_mode, const u8* __restrict__ data, i64 n_slots, const i64* __restrict__ slot_i,
               const double* __restrict__ class_f, double* __restrict__ score, int* __restrict__ length,
               int* __restrict__ ids, u8* __restrict__ path) {
    const i64 k = global_thread_index();
    if (k >= n_slots || slot_i[GT_SLOT_FIELDS * k + 4] != GT_SLOT_CERTAIN) return;
    const Model m = {state, check, label, eow, trie_size, weights, unknown_weight, jieba_mode};
    const i64 a = slot_i[GT_SLOT_FIELDS * k], b = slot_i[GT_SLOT_FIELDS * k + 1];
    solve_piece(m, data, a, b, class_f[GT_CLASS_FLOATS * k + 2], nullptr, score, length, ids);
    mark_path(a, b, length, path, 1);
}

// Per thread: one byte (and one binary search when it starts a path word).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_words(const u8* __restrict__ data, i64 n, const i64* __restrict__ offsets, i64 n_rows, int jieba_mode,
              const u8* __restrict__ path, const int* __restrict__ length, u8* __restrict__ flags,
              int* __restrict__ ids) {
    const i64 p = global_thread_index();
    if (p >= n || !path[p]) return;
    const i64 q = p + length[p];
    bool joins_previous = false, next_joins = false;
    if (jieba_mode && single_alnum(data, path, length, p)) {
        const Row row = row_of(offsets, n_rows, p);
        joins_previous = p > row.begin && single_alnum(data, path, length, p - 1);
        next_joins = q < row.end && single_alnum(data, path, length, q);
    }
    if (!joins_previous) {
        flags[p] = 1;
        if (next_joins) ids[p] = -1;  // more than one word joined: not a dictionary word
    }
    if (!next_joins) flags[n + 1 + q] = 1;
}

// Per thread: one byte (and one row offset); counts[t] is the inclusive prefix sum of flags.
// Rows as in segment_marks: one search per block, then between its rows.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_compact(const i64* __restrict__ offsets, i64 n_rows, i64 n, const u8* __restrict__ flags,
                const i64* __restrict__ counts, const int* __restrict__ ids, i64* __restrict__ word_starts,
                i64* __restrict__ word_ends, int* __restrict__ word_ids, i64* __restrict__ row_offsets) {
    __shared__ i64 shared_rows[2];
    const i64 t = global_thread_index();
    const i64 first = (i64)blockIdx.x * blockDim.x;
    const RowRange rows = block_rows(offsets, n_rows, first - 1, first + blockDim.x - 1, shared_rows);
    if (t <= n_rows) {
        const i64 begin = offsets[t];
        row_offsets[t] = begin == 0 ? 0 : counts[begin - 1];
    }
    if (t > n) return;
    const i64 words = counts[n];
    if (flags[t]) {  // a word starts at t: inside a row
        const i64 k = counts[t] - 1;
        word_starts[k] = t - offsets[row_between(offsets, rows, t)];
        word_ids[k] = ids[t];
    }
    if (flags[n + 1 + t]) {  // a word ends at t: its last byte t - 1 is inside a row
        const i64 k = counts[n + 1 + t] - words - 1;
        word_ends[k] = t - offsets[row_between(offsets, rows, t - 1)];
    }
}
