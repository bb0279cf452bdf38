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
#include "lookback.cuh"
#include "tile_scan.cuh"
#include "order_key.cuh"

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
//                     and end bytes, the first character of a lattice run appends the run to its
//                     block's list (runs from the block's first byte's slot on, block_runs of them);
//                     it also zeroes the counters and the path, which the later kernels count on.
//                     In the same launch, one thread per anchor (every chunk_bytes-th byte of the
//                     buffer): the first cut point at or after the anchor inside the run holding it
//                     (a character start that no dictionary word crosses) within one chunk; else a
//                     forced cut in the chunk's middle with its frontier (below), or -1.
//   segment_pieces    one thread per piece: a piece starts at a run start or at an anchor's cut and
//                     ends at the next anchor's cut or at the run's end, so it is solved alone
//                     (backward Viterbi, the trie walked from each character start, shortest word
//                     first: the prefix search's order) given the route values at its frontier. A
//                     short run, or a long run's last piece, has the tail score: exact. The others
//                     are solved from 0 at each frontier position: the tables of the estimates.
//                     The launch's last block then composes each segment's tables (a thread per
//                     segment: the pending pieces of a run in one group of about sqrt(anchors)
//                     anchors) and walks each long run (a thread per run, a step per segment): the
//                     estimates of its pieces' frontier values, from the run's end through the
//                     pieces' tables from 0.
//   segment_settle    one thread per (pending piece, frontier position, residue class): its
//                     estimate where the run's walk stepped over its segment (from the segment's
//                     head, at most a group of steps), the piece's class table (below), one
//                     values-only solve.
//   segment_resolve   a block per tile of anchors: the pieces' table steps scanned as max-plus
//                     matrices (segments between boundaries, below) with the bounds their tables'
//                     windows put on each segment's start; then per long run (the thread of its
//                     lowest anchor piece) its walk from its end: a jump over a segment whose bounds
//                     hold, else a step by each piece's table, or an exact solve where none applies.
//   segment_finish    one thread per piece settled by its table: one exact solve from its exact
//                     frontier values (a piece of a jumped segment: its product applied to the
//                     segment's start);
//                     its path, or where the path leaves it from each entry.
//                     The launch's last block then composes each segment's entries (a thread per
//                     segment) and walks each long run (a thread per run, a step per segment):
//                     each piece's entry from the earlier pieces' exits.
//   segment_paths     one thread per piece starting at a forced cut: its entry (inside a segment:
//                     from the segment's first piece, at most a group of steps), its path from it.
//   segment_words     one thread per byte: the path's words as start/end marks, jieba's joins of
//                     one-byte ASCII letters and digits applied (from the path, which nobody writes).
//   segment_compact   one thread per byte: the k-th start and the k-th end mark (prefix sums of the
//                     marks, one array op before it) are word k; row offsets from the sums.
// flags holds 2 (n + 1) bytes: flags[t] marks a word starting at byte t, flags[n + 1 + t] a word
// ending at t (two arrays: a run's end and the next row's first word may share a byte).

// The counters of the kernels after segment_marks (GT_COUNTERS words, zeroed by segment_marks):
// [0] segment_pieces' finished blocks, [1] long runs, [2] segment_finish's finished blocks, [3] long
// runs' last pieces, [4] segment_resolve's tiles taken, [5] segments' heads; after them, per anchor,
// segment_resolve's tile flags, then its counts of tiles scanned per run (zeroed by the anchors' threads).
#define GT_COUNTERS 6

// One byte's marks (segment_marks' first blocks): a bounded look at the characters around it (its
// row from a search between the block's first and last rows); true where a run starts at it.
__device__ __forceinline__ bool mark_byte(const u8* data, i64 n, const i64* offsets, i64 n_rows, int jieba_mode,
                                          u8* flags, int* ids, RowRange rows, i64 i) {
    if (i >= n || n_rows == 0 || i < offsets[0] || i >= offsets[n_rows]) return false;
    const i64 r = row_between(offsets, rows, i);
    const Row row = {offsets[r], offsets[r + 1]};
    if (!utf8_starts_char(data, i, row.begin, row.end)) return false;
    const u8 kind = kind_at(data, i, row.begin, row.end, jieba_mode);
    if (kind == KIND_DROP) return false;
    const Char c = char_at(data, i, row.end);
    if (run_char(c.cp, jieba_mode)) return kind == KIND_START_RUN;
    if (kind == KIND_START) {
        flags[i] = 1;
        ids[i] = -1;
    }
    const i64 next = i + c.len;
    const bool token_ends = next == row.end || kind_at(data, next, row.begin, row.end, jieba_mode) != KIND_CONTINUE;
    if (token_ends) flags[n + 1 + next] = 1;
    return false;
}

// segment_marks' byte blocks: each byte's marks; the block's run starts listed at runs[first ...]
// (block_runs[block] of them: no counter that needs zeroing); the zeroing of what later kernels
// count and mark (counters, path: nothing writes them before).
__device__ void byte_marks(const u8* data, i64 n, const i64* offsets, i64 n_rows, int jieba_mode, u8* flags,
                           int* ids, i64* runs, i64* block_runs, u64* counters, u8* path, i64* shared_rows,
                           int* shared_runs) {
    const i64 i = global_thread_index();
    const i64 first = (i64)blockIdx.x * blockDim.x;
    if (i < n) path[i] = 0;
    if (i == 0) path[n] = 0;
    if (i < GT_COUNTERS) counters[i] = 0;
    if (threadIdx.x == 0) *shared_runs = 0;
    const RowRange rows = block_rows(offsets, n_rows, first, first + blockDim.x - 1, shared_rows);
    if (mark_byte(data, n, offsets, n_rows, jieba_mode, flags, ids, rows, i))
        runs[first + atomicAdd(shared_runs, 1)] = i;
    __syncthreads();
    if (threadIdx.x == 0) block_runs[blockIdx.x] = *shared_runs;
}

// ---- cut points, forced cuts and frontiers
// A piece ends at a cut point (no word crosses it: every path passes there, so the route value at
// the cut is all the piece needs of its future) or, where an anchor's window [anchor, anchor + chunk)
// holds no cut point (a run like 一一一... under the word 一一), at a forced cut b: the first character
// start from the window's middle, or one of the few after it where that one's frontier is too wide.
// Words cross b, so the piece needs the route values at its frontier: b and the ends of the words
// that cross b (at most GT_FRONT_MAX, offsets from b kept per anchor). b + the longest word's bytes
// stays inside the window, so a piece's frontier lies inside the next piece. Where every try's
// frontier is too wide (a run where more than GT_FRONT_MAX - 1 word ends cross every boundary) the
// anchor has no cut and the piece goes on to the next anchor's: exact, but its thread's work grows
// with the uncut stretch. 8 positions: a run of one character under words of 1 to 8 of it still
// cuts (4 stopped at words of 4; a position costs a solve per pending piece in segment_pieces, a
// column of its tables, 8 classes' threads in segment_settle).
#define GT_FRONT_MAX 8
#define GT_CLASSES_MAX 8
// A values-only solve keeps the last GT_RING values: a piece with a longer word gets no table and is
// solved exactly in the run's walk (a step per piece). 1024: every word a forced cut allows under the
// default chunk (chunk >= 2 x the longest word + 8) fits; 8 KB of local memory per thread.
#define GT_RING 1024

struct Front {
    int n;
    int off[GT_FRONT_MAX];
};

// The frontier of anchor j's cut (anchor < 0, or a cut point: {0}).
__device__ __forceinline__ Front front_of(const int* front_n, const int* front_off, i64 anchor) {
    Front f;
    f.n = 1;
    for (int i = 0; i < GT_FRONT_MAX; ++i) f.off[i] = 0;
    if (anchor >= 0 && front_n[anchor] > 1) {
        f.n = front_n[anchor];
        for (int i = 0; i < f.n; ++i) f.off[i] = front_off[GT_FRONT_MAX * anchor + i];
    }
    return f;
}

#define GT_CUT_TRIES 8  // character starts an anchor tries for a forced cut whose frontier is narrow enough

// The frontier of a forced cut at b (the ends of the words crossing it, as offsets from b, after 0)
// into offs (GT_FRONT_MAX of them, unsorted); its size, or 0 where it is wider: the longest word's bytes before
// b with one trie walk each.
__device__ __forceinline__ int cut_frontier(const int* state, const int* check, const u8* label, const u8* eow, int trie_size,
                                            const u8* data, Row row, i64 b, i64 max_word_bytes, int* offs) {
    int count = 1;
    offs[0] = 0;
    i64 s = b - max_word_bytes;
    while (!utf8_starts_char(data, s, row.begin, row.end)) ++s;
    for (; s < b; s += char_at(data, s, row.end).len) {
        int slot = 0;
        for (i64 q = s; q < b + max_word_bytes; ++q) {
            GT_STEP();
            slot = trie_step(state, check, label, trie_size, slot, data[q]);
            if (slot < 0) break;
            if (q + 1 <= b || trie_value(state, check, label, eow, trie_size, slot) < 0) continue;
            const int off = (int)(q + 1 - b);
            bool seen = false;
#pragma unroll
            for (int k = 0; k < GT_FRONT_MAX; ++k) seen = seen || (k < count && offs[k] == off);
            if (seen) continue;
            if (count == GT_FRONT_MAX) return 0;
            // appended in the order found (constant indices: offs stays in registers); anchor_cut sorts them
#pragma unroll
            for (int k = 0; k < GT_FRONT_MAX; ++k) offs[k] = k == count ? off : offs[k];
            ++count;
        }
    }
    return count;
}

// Anchor j's cut (segment_marks' last blocks): at most one chunk of character starts past it (plus
// the longest word's bytes before it), each with one trie walk; where no cut point is found, a
// forced cut: up to GT_CUT_TRIES times cut_frontier's walks.
__device__ void anchor_cut(i64 j, const int* state, const int* check, const u8* label, const u8* eow, int trie_size,
                           int jieba_mode, const u8* data, const i64* offsets, i64 n_rows, i64 chunk_bytes,
                           i64 max_word_bytes, i64 n_anchors, i64* cuts, i64* slot_i, int* front_n, int* front_off) {
    if (j >= n_anchors) return;
    cuts[j] = -1;
    front_n[j] = 1;
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
    // The whole window is in the run: a forced cut b from its middle (b - max_word_bytes stays inside
    // the window, and so does b + max_word_bytes: the piece after b holds b's frontier), or from one
    // of the next GT_CUT_TRIES - 1 character starts where the middle's frontier is too wide.
    if (stop != anchor + chunk_bytes || max_word_bytes <= 0 || chunk_bytes < 2 * max_word_bytes + 8) return;
    i64 b = anchor + chunk_bytes / 2;
    while (!utf8_starts_char(data, b, row.begin, row.end)) ++b;
    for (int tries = 0; tries < GT_CUT_TRIES && b + max_word_bytes < stop; ++tries) {
        int offs[GT_FRONT_MAX];
        const int count = cut_frontier(state, check, label, eow, trie_size, data, row, b, max_word_bytes, offs);
        if (count > 0) {
            for (int k = 0; k < count; ++k) {  // each offset at its rank: ascending (they are distinct)
                int rank = 0;
                for (int i = 0; i < count; ++i) rank += offs[i] < offs[k];
                front_off[GT_FRONT_MAX * j + rank] = offs[k];
            }
            front_n[j] = count;
            cuts[j] = b;
            return;
        }
        b += char_at(data, b, row.end).len;
    }
}

// Per thread: one byte (byte_marks) in the first marks_blocks blocks, one anchor (anchor_cut) in the
// others: the pre-split marks and the cuts in one launch.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_marks(const u8* __restrict__ data, i64 n, const i64* __restrict__ offsets, i64 n_rows, int jieba_mode,
              u8* __restrict__ flags, int* __restrict__ ids, i64* __restrict__ runs, i64* __restrict__ block_runs,
              u64* __restrict__ counters, u8* __restrict__ path, i64 marks_blocks, const int* __restrict__ state,
              const int* __restrict__ check,
              const u8* __restrict__ label, const u8* __restrict__ eow, int trie_size, i64 chunk_bytes,
              i64 max_word_bytes, i64 n_anchors, i64* __restrict__ cuts, i64* __restrict__ slot_i,
              int* __restrict__ front_n, int* __restrict__ front_off) {
    __shared__ i64 shared_rows[2];
    __shared__ int shared_runs;
    if ((i64)blockIdx.x < marks_blocks) {
        byte_marks(data, n, offsets, n_rows, jieba_mode, flags, ids, runs, block_runs, counters, path, shared_rows,
                   &shared_runs);
        return;
    }
    const i64 j = ((i64)blockIdx.x - marks_blocks) * blockDim.x + threadIdx.x;
    if (j < n_anchors) counters[GT_COUNTERS + j] = counters[GT_COUNTERS + n_anchors + j] = 0;
    anchor_cut(j, state, check, label, eow, trie_size, jieba_mode, data, offsets, n_rows, chunk_bytes, max_word_bytes,
               n_anchors, cuts, slot_i, front_n, front_off);
}

// ---- exact values by residue classes
// A pending piece's exact frontier values x_f are only known once the later pieces are, but what the
// piece does with them is known before. Solve the piece with one frontier position f live (the others
// -inf) from a tail t: let every value it computes lie more than a room r (less two units of the top
// binade, for the rounding of the check) from the edges of its binade [2^(e-1), 2^e), all of spacing
// at most u_top, and let x = t + s with s a multiple of 2 u_top and |s| < r: then x + w rounds to
// (t + w rounded) + s, ties included (s / u is even), so the solve from x makes the same comparisons
// and ends s higher. The value at each position p of the piece's own frontier is the max over f of
// these one-live solves (rounding is monotone), so the piece is a table: V[p][f][c], the value at p
// from the tail of class c of x_f modulo 2 u_top (C = 2 u_top / u_t tails of the binade of x_f's
// estimate, spacing u_t, next to it), and R[f][c], the room of that solve. C = 2 inside one binade
// (the parity of the last bit decides halfway roundings), 4 across one edge, and so on. The room is
// checked against the exact x_f's own |s| where the walk applies the table, not against the worst
// case of the estimate's error bound: that bound grows with the run, and a piece crossing a binade
// edge far along a long run would seldom keep it (3 exact solves on 32 MB of 一 did not).
//   segment_pieces   one-live solves of each pending piece from 0: the estimates' tables;
//                    then its last block, a thread per long run: the estimate of each piece's x
//                    (the later pieces' tables composed from the run's end, a step per segment);
//   segment_settle   a thread per (piece, f, class): one class solve;
//   segment_resolve  from the run's end, each piece's exact values from its table (exact: each sum
//                    is a route value; where best paths of the frontier end at distinct values the
//                    table also tells which frontier position the path leaves by), a segment of
//                    pieces at a time where its bounds hold (below), an exact solve where no
//                    valid entry exists (the few pieces next to the run's end, whose small values
//                    span many binades, and pieces with a value within |s| of a binade edge);
//   segment_finish   a thread per other piece: one exact solve from its exact frontier, its path;
//                    then forward, each piece's entry.
#define GT_CF_ESTIMATE 0                                   // estimates of x, per f
#define GT_CF_ERROR GT_FRONT_MAX                           // |x_f - estimate| bound
#define GT_CF_EXACT (GT_FRONT_MAX + 1)                     // exact x, per f
#define GT_CF_APPROX (2 * GT_FRONT_MAX + 1)                // A[p][f]: one-live solves from 0
#define GT_CF_TABLE (GT_CF_APPROX + GT_FRONT_MAX * GT_FRONT_MAX)                // V[p][f][c]
#define GT_CF_ROOM (GT_CF_TABLE + GT_FRONT_MAX * GT_FRONT_MAX * GT_CLASSES_MAX)  // R[f][c]
#define GT_CLASS_FLOATS (GT_CF_ROOM + GT_FRONT_MAX * GT_CLASSES_MAX)
#define GT_CLASS_INTS (3 + GT_FRONT_MAX)  // binade of x, C (0: no table), exit per entry, entry

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

// The tail of class 0 of the `classes` tails next to x in binade e (the class c tail adds c units):
// the multiple of `classes` units at or below x, moved by as many units where a tail would leave the
// binade (an estimate next to its edge).
__device__ __forceinline__ double class_base(double x, int e, int classes) {
    const double unit = ldexp(1.0, e - 53), step = classes * unit;
    const double base = floor(x / step) * step;
    if (binade_of(base) != e) return base + step;
    return binade_of(base + (classes - 1) * unit) != e ? base - step : base;
}

// The positions of anchor's frontier (1 for a cut point or no anchor: {0}), read from the arrays.
__device__ __forceinline__ int front_width(const int* front_n, i64 anchor) {
    return anchor >= 0 && front_n[anchor] > 1 ? front_n[anchor] : 1;
}

// The index of offset `off` in anchor's frontier, or -1 (front_index without copying the frontier).
__device__ __forceinline__ int front_index_at(const int* front_n, const int* front_off, i64 anchor, i64 off) {
    const int width = front_width(front_n, anchor);
    if (width == 1) return off == 0 ? 0 : -1;
    for (int i = 0; i < width; ++i) {
        if (front_off[GT_FRONT_MAX * anchor + i] == off) return i;
    }
    return -1;
}

__device__ __forceinline__ int front_index(const Front& f, i64 off) {
    for (int i = 0; i < f.n; ++i) {
        if (f.off[i] == off) return i;
    }
    return -1;
}

// The values of piece [a, b) at the positions of `out` (offsets from a) with frontier `in` (offsets
// from b) holding `live_value` at index `live` and -inf elsewhere: best_edge_from's arithmetic (words
// walked up to b + the frontier's last offset), nothing written but a ring of the last GT_RING
// values. With `room` (or null), false when a value is 0 or lies above binade e_top or a word reaches
// GT_RING bytes or more past its start (its end's slot of the ring holds a later value: a table
// would be wrong; without `room` such a value only spoils an estimate), and *room gets down to every
// value's distance from its binade's edges; `range` (or null) gets the lowest and highest finite value.
__device__ bool front_values(const Model& m, const u8* data, i64 a, i64 b, const Front& in, int live,
                             double live_value, const Front& out, double* out_values, const int* length,
                             double* room, int e_top, double* range) {
    if (room && in.off[in.n - 1] >= GT_RING) return false;  // frontier positions sharing a slot
    double ring[GT_RING];
    for (int i = 0; i < in.n; ++i) ring[(b + in.off[i]) & (GT_RING - 1)] = i == live ? live_value : GT_NEG_INF;
    const i64 limit = b + in.off[in.n - 1];
    auto valid = [&](double v) {
        if (v == GT_NEG_INF) return true;
        if (range) {
            range[0] = v < range[0] ? v : range[0];
            range[1] = v > range[1] ? v : range[1];
        }
        if (!room) return true;
        const double size = fabs(v);
        const int e = binade_of(v);
        const double low = size - ldexp(1.0, e - 1), high = ldexp(1.0, e) - size;  // exact (Sterbenz)
        *room = low < *room ? low : *room;
        *room = high < *room ? high : *room;
        return size > 0.0 && e <= e_top;
    };
    bool ok = true;
    i64 from = b;  // the position solved
    auto value_at = [&](i64 e) {
        ok = ok && (!room || e - from < GT_RING);
        return ring[e & (GT_RING - 1)];
    };
    auto checked = [&](double, double s) { ok = ok && valid(s); };
    for (i64 p = b - 1; p >= a; --p) {
        GT_STEP();
        if (length[p] == GT_LENGTH_INSIDE) continue;
        from = p;
        i64 end;
        int value;
        const double best = best_edge_from(m, data, p, b, limit, value_at, checked, &end, &value);
        if (!ok) return false;
        ring[p & (GT_RING - 1)] = best;
        const int at = front_index(out, p - a);
        if (at >= 0) out_values[at] = best;
    }
    return true;
}

// solve_piece with a frontier: the exact values `x` at `in` (offsets from b); scratch as solve_piece.
__device__ void solve_front(const Model& m, const u8* data, i64 a, i64 b, const Front& in, const double* x,
                            double* score, int* length, int* ids) {
    const i64 limit = b + in.off[in.n - 1];
    auto value_at = [&](i64 e) {
        if (e < b) return score[e];
        const int at = front_index(in, e - b);
        return at >= 0 ? x[at] : GT_NEG_INF;
    };
    auto unchecked = [](double, double) {};
    for (i64 p = b - 1; p >= a; --p) {
        GT_STEP();
        if (length[p] == GT_LENGTH_INSIDE) continue;
        i64 end;
        score[p] = best_edge_from(m, data, p, b, limit, value_at, unchecked, &end, ids + p);
        length[p] = (int)(end - p);
    }
}

// Where the path from each entry of `out` (offsets from a) leaves the piece (offset from b).
__device__ void trace_exits(i64 a, i64 b, const Front& out, const int* length, int* exits) {
    for (int i = 0; i < out.n; ++i) {
        i64 p = a + out.off[i];
        while (p < b) {
            GT_STEP();
            p += length[p];
        }
        exits[i] = (int)(p - b);
    }
}

// The frontiers of slot k: `out` at its start (anchor k's cut, or {0} for a run's first piece),
// `in` at its end (the next piece's anchor's, or {0} for a run's last piece).
__device__ __forceinline__ void slot_fronts(const int* front_n, const int* front_off, i64 n_anchors, i64 k,
                                            i64 next, Front* out, Front* in) {
    *out = front_of(front_n, front_off, k < n_anchors ? k : -1);
    *in = front_of(front_n, front_off, next);
}

// ---- the estimates of the pending pieces' frontier values (segment_pieces' last block, segment_settle)
// From the run's last piece's exact values back through each later piece's table from 0 (A), max-plus
// products; and the bound of their error. Not a step per piece: the pending pieces of a run whose
// anchors fall in one group of `group` anchors (a segment, at most `group` pieces) compose their
// tables into one (a thread per segment), the run's walk steps a segment at a time (a step per piece
// only up to the first segment's head: the pieces in the last piece's group), and segment_settle
// finishes the estimates inside a segment from its head's (at most `group` steps). Each estimate
// adds up the same pieces' tables (in another order: as many roundings, within the same bound).
#define GT_EST_FLOATS (GT_FRONT_MAX * GT_FRONT_MAX + 2 + GT_FRONT_MAX + 2)
#define GT_EST_M 0                                        // a head's: its segment's composed table
#define GT_EST_BYTES (GT_FRONT_MAX * GT_FRONT_MAX)        // a head's: its segment's bytes
#define GT_EST_PIECES (GT_EST_BYTES + 1)                  // a head's: its segment's pieces
#define GT_EST_X (GT_EST_PIECES + 1)                      // a head's: its estimate
#define GT_EST_LATER (GT_EST_X + GT_FRONT_MAX)            // a head's: the later bytes and pieces
#define GT_EST_INTS (GT_FRONT_MAX + 6)
#define GT_EST_LAST 0   // entry i of the list of the long runs' last pieces
#define GT_EST_HEADS 1  // entry i of the list of the segments' heads
#define GT_EST_FLAGS 2  // 1: heads its segment; 2: its estimate is written; 4: a segment's first piece
                        // (its entries composed); 8: its entry is written (segment_finish)
#define GT_EST_NEXT 3   // a head's: the next segment's head (-1: the run's start)
#define GT_EST_MAP 4    // a segment's first piece's: the entry after the segment per its entry's index
                        // in its frontier (GT_FRONT_MAX: none of them)
#define GT_EST_HEAD_OF (GT_EST_MAP + GT_FRONT_MAX + 1)  // a segment's first piece's: its head

// The error bound of an estimate after `later_bytes` bytes in `later_pieces` pieces: |every value| <
// most; an addition rounds by at most most * 2^-53; a chain of a piece's additions by (its bytes + 1)
// of those; the estimate sums the later pieces' chains.
__device__ __forceinline__ double estimate_error(double later_bytes, double later_pieces, double most) {
    return (later_bytes + 3.0 * later_pieces + 2.0) * most * GT_TWO_TO_MINUS_51;
}

// y = A ⊗ x: y_p = max over g of x_g + a[GT_FRONT_MAX * p + g] (p < out.n, g < in.n; -inf beyond).
template <typename Load>
__device__ __forceinline__ void max_plus(Load a, const Front& out, const Front& in, const double* x, double* y) {
#pragma unroll
    for (int p = 0; p < GT_FRONT_MAX; ++p) {
        y[p] = GT_NEG_INF;
#pragma unroll
        for (int g = 0; g < GT_FRONT_MAX; ++g) {
            if (p >= out.n || g >= in.n) continue;
            GT_STEP();
            const double v = x[g] + a(GT_FRONT_MAX * p + g);
            y[p] = v > y[p] ? v : y[p];
        }
    }
}

// Head h's segment composed: M = A_tail ⊗ ... ⊗ A_h, a column at a time (in est_f), its bytes and
// pieces and the next segment's head (segment_pieces' last block: tables read through L2).
__device__ void compose_segment(i64 h, i64 n_anchors, i64 chunk_bytes, i64 group, const int* front_n,
                                const int* front_off, const i64* slot_i, const double* class_f, double* est_f,
                                i64* est_i) {
    auto field = [&](i64 t, int i) { return __ldcg(slot_i + GT_SLOT_FIELDS * t + i); };
    const i64 g0 = field(h, 0) / chunk_bytes / group;
    double* m = est_f + GT_EST_FLOATS * h + GT_EST_M;
    Front out, in;
    slot_fronts(front_n, front_off, n_anchors, h, field(h, 2), &out, &in);
    const Front head_in = in;
    const double* own_a = class_f + GT_CLASS_FLOATS * h + GT_CF_APPROX;
    for (int i = 0; i < GT_FRONT_MAX * GT_FRONT_MAX; ++i)
        m[i] = i / GT_FRONT_MAX < out.n && i % GT_FRONT_MAX < in.n ? __ldcg(own_a + i) : GT_NEG_INF;
    double bytes = (double)(field(h, 1) - field(h, 0)), pieces = 1.0;
    i64 u = h;
    for (i64 p = field(u, 3); p >= 0 && field(p, 0) / chunk_bytes / group == g0; p = field(u, 3)) {
        slot_fronts(front_n, front_off, n_anchors, p, u, &out, &in);
        const double* a = class_f + GT_CLASS_FLOATS * p + GT_CF_APPROX;
        for (int g = 0; g < head_in.n; ++g) {  // column g: M'[., g] = A_p ⊗ M[., g], in place from the top
            double column[GT_FRONT_MAX];
#pragma unroll
            for (int q = 0; q < GT_FRONT_MAX; ++q) column[q] = m[GT_FRONT_MAX * q + g];
            for (int q = 0; q < GT_FRONT_MAX; ++q) {
                double best = GT_NEG_INF;
                for (int i = 0; i < in.n && q < out.n; ++i) {
                    GT_STEP();
                    const double v = column[i] + __ldcg(a + GT_FRONT_MAX * q + i);
                    best = v > best ? v : best;
                }
                m[GT_FRONT_MAX * q + g] = best;
            }
        }
        bytes += (double)(field(p, 1) - field(p, 0));
        pieces += 1.0;
        u = p;
    }
    est_f[GT_EST_FLOATS * h + GT_EST_BYTES] = bytes;
    est_f[GT_EST_FLOATS * h + GT_EST_PIECES] = pieces;
    est_i[GT_EST_INTS * h + GT_EST_NEXT] = field(u, 3);
}

// Long run r's walk (segment_pieces' last block, after compose_segment): each piece's estimate and
// error up to the first head, then a segment per step (its head's estimate and later bytes and pieces
// for segment_settle).
__device__ void estimate_run(i64 r, double tail_score, double weight_bound, const i64* offsets, i64 n_rows,
                             i64 n_anchors, const int* front_n, const int* front_off, const i64* slot_i,
                             const double* score, double* class_f, double* est_f, i64* est_i) {
    auto field = [&](i64 t, int i) { return __ldcg(slot_i + GT_SLOT_FIELDS * t + i); };
    const i64 last = __ldcg(est_i + GT_EST_INTS * r + GT_EST_LAST);
    const Row row = row_of(offsets, n_rows, field(last, 0));
    const double most = fabs(tail_score) + ((double)(row.end - row.begin) + 2.0) * weight_bound;
    Front out, in;
    slot_fronts(front_n, front_off, n_anchors, last, -1, &out, &in);
    double x[GT_FRONT_MAX];
#pragma unroll
    for (int p = 0; p < GT_FRONT_MAX; ++p) x[p] = p < out.n ? __ldcg(score + field(last, 0) + out.off[p]) : 0.0;
    double later_bytes = (double)(field(last, 1) - field(last, 0));
    double later_pieces = 1.0;
    for (i64 t = field(last, 3); t >= 0;) {
        GT_STEP();
        double* own_f = class_f + GT_CLASS_FLOATS * t;
        slot_fronts(front_n, front_off, n_anchors, t, field(t, 2), &out, &in);
#pragma unroll
        for (int g = 0; g < GT_FRONT_MAX; ++g) {
            if (g < in.n) own_f[GT_CF_ESTIMATE + g] = x[g];
        }
        own_f[GT_CF_ERROR] = estimate_error(later_bytes, later_pieces, most);
        const i64 flags = __ldcg(est_i + GT_EST_INTS * t + GT_EST_FLAGS);
        est_i[GT_EST_INTS * t + GT_EST_FLAGS] = flags | 2;
        double y[GT_FRONT_MAX];
        if (flags & 1) {  // a segment at a time
            double* head = est_f + GT_EST_FLOATS * t;
#pragma unroll
            for (int g = 0; g < GT_FRONT_MAX; ++g) head[GT_EST_X + g] = x[g];
            head[GT_EST_LATER] = later_bytes;
            head[GT_EST_LATER + 1] = later_pieces;
            Front all;
            all.n = GT_FRONT_MAX;
            max_plus([&](int i) { return __ldcg(head + GT_EST_M + i); }, all, in, x, y);
            later_bytes += __ldcg(head + GT_EST_BYTES);
            later_pieces += __ldcg(head + GT_EST_PIECES);
            t = __ldcg(est_i + GT_EST_INTS * t + GT_EST_NEXT);
        } else {
            max_plus([&](int i) { return __ldcg(own_f + GT_CF_APPROX + i); }, out, in, x, y);
            later_bytes += (double)(field(t, 1) - field(t, 0));
            later_pieces += 1.0;
            t = field(t, 3);
        }
#pragma unroll
        for (int p = 0; p < GT_FRONT_MAX; ++p) x[p] = y[p];
    }
}

// Slot k's estimate (x) and its error where the run's walk stepped over its segment: from the
// segment's head through the pieces between (at most a group of them; segment_settle).
__device__ double estimate_in_segment(i64 k, double most, i64 n_anchors, const int* front_n, const int* front_off,
                                      const i64* slot_i, const double* class_f, const double* est_f,
                                      const i64* est_i, double* x) {
    i64 h = k;
    while (!(est_i[GT_EST_INTS * h + GT_EST_FLAGS] & 1)) {
        GT_STEP();
        h = slot_i[GT_SLOT_FIELDS * h + 2];
    }
    const double* head = est_f + GT_EST_FLOATS * h;
    for (int g = 0; g < GT_FRONT_MAX; ++g) x[g] = head[GT_EST_X + g];
    double later_bytes = head[GT_EST_LATER], later_pieces = head[GT_EST_LATER + 1];
    for (i64 u = h; u != k; u = slot_i[GT_SLOT_FIELDS * u + 3]) {
        Front out, in;
        slot_fronts(front_n, front_off, n_anchors, u, slot_i[GT_SLOT_FIELDS * u + 2], &out, &in);
        double y[GT_FRONT_MAX];
        max_plus([&](int i) { return class_f[GT_CLASS_FLOATS * u + GT_CF_APPROX + i]; }, out, in, x, y);
        for (int p = 0; p < GT_FRONT_MAX; ++p) x[p] = y[p];
        later_bytes += (double)(slot_i[GT_SLOT_FIELDS * u + 1] - slot_i[GT_SLOT_FIELDS * u]);
        later_pieces += 1.0;
    }
    return estimate_error(later_bytes, later_pieces, most);
}

// Per thread: one piece (about a chunk, longer only where an anchor finds no cut point). A run
// without an anchor is one piece: the whole run on one thread, under a chunk of bytes. A pending
// piece: one solve per frontier position.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_pieces(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
               const u8* __restrict__ eow, int trie_size, const double* __restrict__ weights, double unknown_weight,
               double tail_score, double weight_bound, int jieba_mode, const u8* __restrict__ data,
               const i64* __restrict__ offsets, i64 n_rows, i64 chunk_bytes, i64 n_anchors, i64 n_runs,
               const i64* __restrict__ runs, const i64* __restrict__ block_runs,
               const i64* __restrict__ cuts, const int* __restrict__ front_n, const int* __restrict__ front_off,
               u64* __restrict__ counters, i64 group,
               double* __restrict__ slot_f, i64* __restrict__ slot_i, double* __restrict__ class_f,
               double* __restrict__ est_f, i64* __restrict__ est_i,
               double* __restrict__ score, int* __restrict__ length, int* __restrict__ ids, u8* __restrict__ path) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const Model m = {state, check, label, eow, trie_size, weights, unknown_weight, jieba_mode};
    for (i64 r = global_thread_index(); r < n_runs + n_anchors; r += stride) {
        const bool run_start = r < n_runs;
        if (run_start && r % GT_BLOCK >= block_runs[r / GT_BLOCK]) continue;  // past its block's run starts
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
        const i64 slot = run_start ? n_anchors + (i64)atomicAdd(&counters[1], 1ull) : r - n_runs;
        i64* fields = slot_i + GT_SLOT_FIELDS * slot;
        double* floats = slot_f + GT_SLOT_FLOATS * slot;
        fields[0] = s;
        fields[1] = b;
        fields[2] = next;
        if (run_start) fields[3] = -1;
        if (next >= 0) slot_i[GT_SLOT_FIELDS * next + 3] = slot;
        Front out, in;
        slot_fronts(front_n, front_off, n_anchors, slot, next, &out, &in);
        if (next < 0) {  // the run's last piece: exact; its path once its entry is known
            solve_piece(m, data, s, b, tail_score, nullptr, score, length, ids);
            if (out.n == 1) mark_path(s, b, length, path, 1);
            fields[4] = GT_SLOT_EXACT;
            est_i[GT_EST_INTS * slot + GT_EST_FLAGS] = 0;
            est_i[GT_EST_INTS * (i64)atomicAdd(&counters[3], 1ull) + GT_EST_LAST] = slot;
            continue;
        }
        // a segment's head: the piece after it in another group of anchors
        const bool head = cuts[next] / chunk_bytes / group != s / chunk_bytes / group;
        est_i[GT_EST_INTS * slot + GT_EST_FLAGS] = head;
        if (head) est_i[GT_EST_INTS * (i64)atomicAdd(&counters[5], 1ull) + GT_EST_HEADS] = slot;
        double* approx = class_f + GT_CLASS_FLOATS * slot + GT_CF_APPROX;
        floats[1] = floats[2] = 0.0;
        for (int f = 0; f < in.n; ++f) {
            double values[GT_FRONT_MAX];
            front_values(m, data, s, b, in, f, 0.0, out, values, length, nullptr, 0, floats + 1);
            for (int p = 0; p < out.n; ++p) approx[GT_FRONT_MAX * p + f] = values[p];
        }
        fields[4] = GT_SLOT_PENDING;
    }
    // The last block to finish estimates the long runs' frontier values (every piece's table is
    // written then: each block fences its writes before it counts itself done).
    __shared__ int last_block;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last_block = atomicAdd(&counters[0], 1ull) == (u64)gridDim.x - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    const i64 n_heads = (i64)__ldcg(counters + 5);
    for (i64 i = threadIdx.x; i < n_heads; i += blockDim.x)
        compose_segment(__ldcg(est_i + GT_EST_INTS * i + GT_EST_HEADS), n_anchors, chunk_bytes, group, front_n,
                        front_off, slot_i, class_f, est_f, est_i);
    __threadfence_block();
    __syncthreads();
    const i64 n_long = (i64)__ldcg(counters + 3);
    for (i64 r = threadIdx.x; r < n_long; r += blockDim.x)
        estimate_run(r, tail_score, weight_bound, offsets, n_rows, n_anchors, front_n, front_off, slot_i, score,
                     class_f, est_f, est_i);
}

// Per thread: one class of one frontier position of one pending piece (thread
// (k * GT_FRONT_MAX + f) * GT_CLASSES_MAX + c): at most one values-only solve of the piece.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_settle(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
               const u8* __restrict__ eow, int trie_size, const double* __restrict__ weights, double unknown_weight,
               double tail_score, double weight_bound, int jieba_mode, const u8* __restrict__ data,
               const i64* __restrict__ offsets, i64 n_rows, i64 n_anchors, i64 n_slots,
               const int* __restrict__ front_n, const int* __restrict__ front_off, const double* __restrict__ slot_f,
               const i64* __restrict__ slot_i, const double* __restrict__ score, const int* __restrict__ length,
               double* __restrict__ class_f, int* __restrict__ class_i, const double* __restrict__ est_f,
               const i64* __restrict__ est_i) {
    const i64 thread = global_thread_index();
    const i64 k = thread / (GT_FRONT_MAX * GT_CLASSES_MAX);
    const int f = (int)(thread / GT_CLASSES_MAX % GT_FRONT_MAX), c = (int)(thread % GT_CLASSES_MAX);
    if (k >= n_slots || slot_i[GT_SLOT_FIELDS * k + 4] != GT_SLOT_PENDING) return;
    const Model m = {state, check, label, eow, trie_size, weights, unknown_weight, jieba_mode};
    const i64* fields = slot_i + GT_SLOT_FIELDS * k;
    const double* floats = slot_f + GT_SLOT_FLOATS * k;
    double* own_f = class_f + GT_CLASS_FLOATS * k;
    Front out, in;
    slot_fronts(front_n, front_off, n_anchors, k, fields[2], &out, &in);
    if (f >= in.n) return;
    const i64 a = fields[0], b = fields[1];
    const Row row = row_of(offsets, n_rows, a);
    const double most = fabs(tail_score) + ((double)(row.end - row.begin) + 2.0) * weight_bound;
    double x[GT_FRONT_MAX];
    for (int g = 0; g < in.n; ++g) x[g] = own_f[GT_CF_ESTIMATE + g];
    double error = own_f[GT_CF_ERROR];
    if (!(est_i[GT_EST_INTS * k + GT_EST_FLAGS] & 2)) {  // inside a segment the run's walk stepped over
        error = estimate_in_segment(k, most, n_anchors, front_n, front_off, slot_i, class_f, est_f, est_i, x);
        if (f == 0 && c == 0) {
            for (int g = 0; g < in.n; ++g) own_f[GT_CF_ESTIMATE + g] = x[g];
            own_f[GT_CF_ERROR] = error;
        }
    }
    const double own = ((double)(b - a) + 2.0) * most * GT_TWO_TO_MINUS_51;
    // the binades of x and of the piece's values (from its range from 0), as far as known
    double x_low = x[0], x_high = x[0];
    for (int g = 1; g < in.n; ++g) {
        x_low = x[g] < x_low ? x[g] : x_low;
        x_high = x[g] > x_high ? x[g] : x_high;
    }
    const int e_tail = binade_of(x[0]);
    const int e_low = binade_of(x_low + floats[1] - error - own), e_high = binade_of(x_high + floats[2] + error + own);
    const int e_top = e_low > e_high ? e_low : e_high;
    int classes = 0;
    if (e_top >= e_tail && e_top - e_tail + 1 <= 3) classes = 1 << (e_top - e_tail + 1);
    for (int g = 0; g < in.n; ++g) {  // the exact x_g need only be in it too (by_table checks)
        if (x[g] == 0.0 || binade_of(x[g]) != e_tail) classes = 0;
    }
    if (f == 0 && c == 0) {
        class_i[GT_CLASS_INTS * k] = e_tail;
        class_i[GT_CLASS_INTS * k + 1] = classes;
    }
    if (c >= classes) return;
    const double tail = class_base(x[f], e_tail, classes) + c * ldexp(1.0, e_tail - 53);  // of class c
    double values[GT_FRONT_MAX], room = -GT_NEG_INF;
    const bool ok = front_values(m, data, a, b, in, f, tail, out, values, length, &room, e_top, nullptr);
    for (int p = 0; p < out.n; ++p) own_f[GT_CF_TABLE + (GT_FRONT_MAX * p + f) * GT_CLASSES_MAX + c] = ok ? values[p] : nan("");
    own_f[GT_CF_ROOM + GT_CLASSES_MAX * f + c] = room - 2.0 * ldexp(1.0, e_top - 53);
}

// x_g minus the tail of its class in slot k's table (exact: both in binade e, multiples of its unit);
// *cls its class, *room that class's room (s applies where |s| < room or s = 0).
__device__ __forceinline__ double class_shift(const double* own_f, const int* own_i, int g, double x, int* cls,
                                              double* room) {
    const int e = own_i[0], classes = own_i[1];
    *cls = class_of(x, e, classes);
    *room = own_f[GT_CF_ROOM + GT_CLASSES_MAX * g + *cls];
    return x - (class_base(own_f[GT_CF_ESTIMATE + g], e, classes) + *cls * ldexp(1.0, e - 53));
}

// The values at `out` from the exact x at `in` by slot k's table; false when x is outside what the
// table was made for or an entry is missing or inexact.
__device__ bool by_table(const double* own_f, const int* own_i, const Front& out, const Front& in, const double* x,
                         double* y) {
    const int e = own_i[0], classes = own_i[1];
    if (classes <= 0) return false;
    for (int g = 0; g < in.n; ++g) {
        int cls;
        double room;
        const double s = class_shift(own_f, own_i, g, x[g], &cls, &room);
        if (binade_of(x[g]) != e || !(fabs(x[g] - own_f[GT_CF_ESTIMATE + g]) <= own_f[GT_CF_ERROR]) ||
            !(s == 0.0 || fabs(s) < room))
            return false;
    }
    for (int p = 0; p < out.n; ++p) {
        double best = GT_NEG_INF;
        for (int g = 0; g < in.n; ++g) {
            GT_STEP();
            int cls;
            double room;
            const double s = class_shift(own_f, own_i, g, x[g], &cls, &room);
            const double v = own_f[GT_CF_TABLE + (GT_FRONT_MAX * p + g) * GT_CLASSES_MAX + cls];
            if (isnan(v)) return false;
            if (v == GT_NEG_INF) continue;
            const double sum = v + s;
            if (!exact_sum(v, s, sum)) return false;
            best = sum > best ? sum : best;
        }
        if (best == GT_NEG_INF) return false;
        y[p] = best;
    }
    return true;
}

// A piece solved exactly: its path when every path enters it at its start, where the path from each
// entry leaves it when its end is a forced cut (segment_paths follows them).
__device__ __forceinline__ void after_solve(i64 a, i64 b, const Front& out, const Front& in, const int* length,
                                            u8* path, int* exits) {
    if (in.n > 1) trace_exits(a, b, out, length, exits);
    if (out.n == 1) mark_path(a, b, length, path, 1);
}

// ---- the run's walk by segments of composed tables (segment_resolve): no thread steps through a whole run
// The run's walk goes from its end toward its start, a step per piece: a pending piece's table maps
// its exact frontier values x to its entry's, y_p = max over f of x_f + D[p][f][class of x_f], exact
// where every x_f lies within its window (by_table: its estimate's error, binade e, its class's room).
// Where a piece's table has two classes (all its values in binade e), the same deltas for both (no
// tie among its roundings), none positive, and each entry of its frontier a finite value, its step is
// a max-plus product y = M x, and such steps compose: x_k = P_k E, E the entries of the segment's head
// (a piece of any other kind: a boundary, stepped as before; the run's last piece is one) and P_k the
// product of the matrices of the segment's pieces between. The sums are exact where it matters: their
// terms are multiples of binade e's spacing, so a sum below 2^e in size is exact, and with no positive
// term its partial sums are no larger; a larger one (a path far below the best) may round, but never
// above -2^e in size, so it cannot win a max whose true value lies in the binade. segment_resolve's
// blocks scan the anchors' pieces by tiles (tile_scan.cuh; element i is anchor n_anchors - 1 - i, the
// walk's order; a boundary restarts the product, a run's last piece the run), and each put turns piece
// k's windows [lo, hi] into bounds on its head's E: x_k[i] <= hi exactly when E[j] <= hi - P_k[i][j]
// for every j (min over the segment), and x_k[i] >= lo when E[w] >= lo - P_k[i][w], w the entry its
// segment's first piece's estimates make the best (a sufficient bound, max over the segment), both
// rounded inwards. A run's walk (the thread of its anchor piece next to its start, once every tile of
// its pieces is scanned): where E meets its segment's bounds, every piece of it would have applied its
// table (by induction, each x_k exact and within its window), so it jumps to the boundary b after the
// segment (entries P_b E; the run's first piece where the segment reaches it) and steps b; where E
// does not, it steps each piece of the segment, as before. A walk: a step per segment (binade changes,
// ties, wide frontiers, exact solves) where the bounds hold. segment_finish gives each piece of a
// jumped segment its entries P_k E.
#define GT_SEG_FRONT GT_FRONT_MAX  // frontier positions a segment piece's matrix holds
#define GT_SEG_W (GT_SEG_FRONT * GT_SEG_FRONT + 2)  // a product: P (row i the entry i of the piece after
                                                    // the range, column j the head's entry j), the head
                                                    // slot where the range restarts the segment, the run's
                                                    // last piece where it restarts a run (-1: it does not)
#define GT_SEG_I 5  // per slot: its segment's head, the boundary after the segment it heads (-1: none), 1
                    // where the walk jumped the segment it heads, 1 for a segment piece, its run's last piece

// GT_SEG_NO_JUMPS (tests/test_segment_walk_jumps.py only): the run's walk never jumps, a step per
// piece, the walk that each jump stands for (its words must be the same).
#if defined(GT_SEG_NO_JUMPS) && !defined(CUDA_EMU)
#error "GT_SEG_NO_JUMPS is for the CPU emulator's tests only"
#endif

// The tables segment_resolve's scan reads (written by the launches before it).
struct SegTables {
    i64 n_anchors;
    const i64* slot_i;
    const double* class_f;
    const int* class_i;
    const int* front_n;

    // Piece t's delta at entry position p from frontier position f by class c's table (binade e):
    // exact, the value and the class's tail lie in one binade.
    __device__ __forceinline__ double delta(i64 t, int p, int f, int e, int c) const {
        const double* own_f = class_f + GT_CLASS_FLOATS * t;
        const double tail = class_base(own_f[GT_CF_ESTIMATE + f], e, 2) + c * ldexp(1.0, e - 53);
        return own_f[GT_CF_TABLE + (GT_FRONT_MAX * p + f) * GT_CLASSES_MAX + c] - tail;
    }
    // Whether pending anchor piece t steps by a matrix (its deltas into m, -inf where no path, unless
    // null): a table of two classes of binade *e with the same deltas, no wider frontier than
    // GT_SEG_FRONT, a finite value at each position of its entry.
    __device__ bool matrix(i64 t, int* e, double* m) const {
        if (slot_i[GT_SLOT_FIELDS * t + 4] != GT_SLOT_PENDING) return false;
        *e = class_i[GT_CLASS_INTS * t];
        const int n_in = front_width(front_n, slot_i[GT_SLOT_FIELDS * t + 2]), n_out = front_width(front_n, t);
        if (class_i[GT_CLASS_INTS * t + 1] != 2 || n_in > GT_SEG_FRONT || n_out > GT_SEG_FRONT) return false;
        const double unit = ldexp(1.0, *e - 53);
        for (int q = 0; m && q < GT_SEG_FRONT * GT_SEG_FRONT; ++q) m[q] = GT_NEG_INF;
        for (int p = 0; p < n_out; ++p) {
            bool reached = false;
            for (int f = 0; f < n_in; ++f) {
                const double a = delta(t, p, f, *e, 0), b = delta(t, p, f, *e, 1);
                if (!(a == b) || a > 0.0 || (a != GT_NEG_INF && fmod(a, unit) != 0.0)) return false;
                reached = reached || a != GT_NEG_INF;
                if (m) m[GT_SEG_FRONT * p + f] = a;
            }
            if (!reached) return false;  // by_table takes no -inf value
        }
        return true;
    }
    // Where piece t's table holds for entry f's exact value (by_table's conditions for either class):
    // [*lo, *hi], rounded inwards (empty where the estimate or a room is not usable). Each class's tail
    // lies within 4 units of the estimate (class_base), so |x - tail| < room where x lies within the
    // room less 6 units of the estimate (2 units more for the roundings here).
    __device__ __forceinline__ void window(i64 t, int f, int e, double* lo, double* hi) const {
        const double* own_f = class_f + GT_CLASS_FLOATS * t;
        const double est = own_f[GT_CF_ESTIMATE + f], err = own_f[GT_CF_ERROR];
        const double room = fmin(own_f[GT_CF_ROOM + GT_CLASSES_MAX * f], own_f[GT_CF_ROOM + GT_CLASSES_MAX * f + 1]);
        *lo = -GT_NEG_INF;
        *hi = GT_NEG_INF;
        if (!(isfinite(est) && isfinite(err) && room > 0.0)) return;
        const double edge = ldexp(1.0, e), half = ldexp(1.0, e - 1), unit = ldexp(1.0, e - 53);
        const double radius = fmin(err, room - 6.0 * unit);
        *lo = fmax(nextafter(est - radius, -GT_NEG_INF), est < 0.0 ? unit - edge : half);
        *hi = fmin(nextafter(est + radius, GT_NEG_INF), est < 0.0 ? -half : edge - unit);
    }
};

// c = a after b (max-plus, GT_SEG_FRONT square, row-major; c may be a, not b).
__device__ __forceinline__ void seg_product(double* c, const double* a, const double* b) {
    for (int i = 0; i < GT_SEG_FRONT; ++i) {
        double row[GT_SEG_FRONT];
        for (int j = 0; j < GT_SEG_FRONT; ++j) {
            GT_STEP();
            row[j] = GT_NEG_INF;
            for (int m = 0; m < GT_SEG_FRONT; ++m) {
                const double v = a[GT_SEG_FRONT * i + m] + b[GT_SEG_FRONT * m + j];
                row[j] = v > row[j] ? v : row[j];
            }
        }
        for (int j = 0; j < GT_SEG_FRONT; ++j) c[GT_SEG_FRONT * i + j] = row[j];
    }
}

// The max-plus identity (GT_SEG_FRONT square): 0 on the diagonal, -inf elsewhere.
__device__ __forceinline__ void seg_identity(double* p) {
    for (int m = 0; m < GT_SEG_FRONT * GT_SEG_FRONT; ++m) p[m] = m % (GT_SEG_FRONT + 1) ? GT_NEG_INF : 0.0;
}

// tile_scan's operator over the anchors, from the last (the walk's order): element i is piece k =
// n_anchors - 1 - i's matrix (a segment piece) or a restart at k (a boundary: identity, head k; a
// run's last piece restarts its run too). put records each piece's product P_k, head and run, links
// each boundary to the head before it, adds a segment piece's bounds to its head's and, at a run's
// anchor piece next to its start, the run's first piece's product.
struct SegScan {
    using T = double;
    static constexpr int W = GT_SEG_W;
    SegTables t;
    double* seg_p;  // per slot: P_k
    i64* seg_i;     // per slot: GT_SEG_I
    u64* seg_c;     // per anchor that heads a segment: keys of the bounds on its entries, upper then lower

    __device__ __forceinline__ static void identity(double* p) {
        seg_identity(p);
        p[W - 2] = p[W - 1] = -1.0;
    }
    __device__ __noinline__ static void join(double* later, const double* earlier) {
        if (later[W - 2] < 0.0) {  // no restart inside later: it extends earlier's segment
            seg_product(later, later, earlier);
            later[W - 2] = earlier[W - 2];
        }
        if (later[W - 1] < 0.0) later[W - 1] = earlier[W - 1];
    }
    // Head h: no boundary after it yet, bounds that hold for any entries.
    __device__ __forceinline__ void start_head(i64 h) const {
        seg_i[GT_SEG_I * h + 1] = -1;
        open_bounds(seg_c + 2 * GT_SEG_FRONT * h, GT_SEG_FRONT);
    }
    __device__ __noinline__ void element(i64 i, double* p) const {
        identity(p);
        const i64 k = t.n_anchors - 1 - i;
        if (t.slot_i[GT_SLOT_FIELDS * k + 4] == GT_SLOT_NONE) return;  // no piece at this anchor
        const i64 next = t.slot_i[GT_SLOT_FIELDS * k + 2];
        int e;
        bool segment = next >= 0 && t.matrix(k, &e, p);
        // a new binade is a boundary: a product's sums share one spacing (a pending piece before it of
        // another binade, whether a segment piece or not)
        if (segment && t.slot_i[GT_SLOT_FIELDS * next + 4] == GT_SLOT_PENDING && t.class_i[GT_CLASS_INTS * next] != e)
            segment = false;
        seg_i[GT_SEG_I * k + 3] = segment;
        if (!segment) {
            identity(p);
            p[W - 2] = (double)k;
            start_head(k);
        }
        if (next < 0) p[W - 1] = (double)k;
    }
    __device__ __noinline__ void put(i64 i, double* p) const {
        const i64 k = t.n_anchors - 1 - i;
        const i64* fields = t.slot_i + GT_SLOT_FIELDS * k;
        if (fields[4] == GT_SLOT_NONE) return;
        const bool segment = seg_i[GT_SEG_I * k + 3];
        const i64 run = fields[2] < 0 ? k : (i64)p[W - 1], h = fields[2] < 0 ? k : (i64)p[W - 2];
        seg_i[GT_SEG_I * k] = h;
        seg_i[GT_SEG_I * k + 4] = run;
        for (int m = 0; m < GT_SEG_FRONT * GT_SEG_FRONT; ++m) seg_p[GT_SEG_FRONT * GT_SEG_FRONT * k + m] = p[m];
        if (!segment && fields[2] >= 0) seg_i[GT_SEG_I * h + 1] = k;  // a boundary ends h's segment
        if (segment) bound(k, h, p);
        if (fields[3] >= t.n_anchors) run_start(k, segment ? h : k, run, segment, p);
    }
    // The run's first piece r after anchor piece k: its product (P_k then k's matrix; identity after a
    // boundary k, which heads an empty segment), head and run.
    __device__ __noinline__ void run_start(i64 k, i64 head, i64 run, bool segment, const double* p) const {
        const i64 r = t.slot_i[GT_SLOT_FIELDS * k + 3];
        double* to = seg_p + GT_SEG_FRONT * GT_SEG_FRONT * r;
        seg_identity(to);
        if (segment) {
            const int e = t.class_i[GT_CLASS_INTS * k];
            const int n_in = front_width(t.front_n, t.slot_i[GT_SLOT_FIELDS * k + 2]);
            const int n_out = front_width(t.front_n, k);
            for (int i = 0; i < GT_SEG_FRONT; ++i) {
                for (int j = 0; j < GT_SEG_FRONT; ++j) {
                    GT_STEP();
                    double best = GT_NEG_INF;
                    for (int m = 0; m < n_in && i < n_out; ++m) {
                        const double v = t.delta(k, i, m, e, 0) + p[GT_SEG_FRONT * m + j];
                        best = v > best ? v : best;
                    }
                    to[GT_SEG_FRONT * i + j] = best;
                }
            }
        }
        seg_i[GT_SEG_I * r] = head;
        seg_i[GT_SEG_I * r + 3] = 0;
        seg_i[GT_SEG_I * r + 4] = run;
        seg_i[GT_SEG_I * head + 1] = r;
    }
    // Segment piece k's windows on its entries x_k = P_k E as bounds on head h's E (see above).
    __device__ __forceinline__ void bound(i64 k, i64 h, const double* p) const {
        const int e = t.class_i[GT_CLASS_INTS * k];
        const i64 first = t.slot_i[GT_SLOT_FIELDS * h + 3];  // the segment's first piece: its estimates pick w
        const int n_e = front_width(t.front_n, h), n_in = front_width(t.front_n, t.slot_i[GT_SLOT_FIELDS * k + 2]);
        u64* upper = seg_c + 2 * GT_SEG_FRONT * h;  // a bound per (entry, head's entry): no arrays to keep
        u64* lower = upper + GT_SEG_FRONT;
        for (int i = 0; i < n_in; ++i) {
            double lo, hi, best = GT_NEG_INF;
            t.window(k, i, e, &lo, &hi);
            int w = -1;
            for (int j = 0; j < n_e; ++j) {
                GT_STEP();
                const double a = p[GT_SEG_FRONT * i + j];
                if (a == GT_NEG_INF) continue;
                atomicMin(upper + j, order_key(nextafter(hi - a, GT_NEG_INF)));
                const double guess = a + t.class_f[GT_CLASS_FLOATS * first + GT_CF_ESTIMATE + j];
                if (w < 0 || guess > best) {
                    w = j;
                    best = guess;
                }
            }
            // no path into entry i: never in its window
            const double least = w < 0 ? -GT_NEG_INF : nextafter(lo - p[GT_SEG_FRONT * i + w], -GT_NEG_INF);
            atomicMax(lower + (w < 0 ? 0 : w), order_key(least));
        }
    }
};

// What a run's walk reads and writes (segment_resolve's arrays; by reference: few registers).
struct WalkArrays {
    i64 n_anchors;
    const int* front_n;
    const int* front_off;
    i64* slot_i;
    double* class_f;
    int* class_i;
    const double* seg_p;
    double* seg_x;
    i64* seg_i;
    const u64* seg_c;
    double* score;
    int* length;
    int* ids;
    u8* path;
};

// The walk's step over piece t: its entry's exact values from x (its end's), in place, by its table
// where it holds, else by an exact solve; the x it was stepped from kept for segment_finish.
__device__ __noinline__ void resolve_piece(const Model& m, const u8* data, const WalkArrays& w, i64 t, double* x) {
    GT_STEP();
    i64* fields = w.slot_i + GT_SLOT_FIELDS * t;
    double* own_f = w.class_f + GT_CLASS_FLOATS * t;
    int* own_i = w.class_i + GT_CLASS_INTS * t;
    Front out, in;
    slot_fronts(w.front_n, w.front_off, w.n_anchors, t, fields[2], &out, &in);
    for (int g = 0; g < in.n; ++g) own_f[GT_CF_EXACT + g] = x[g];
    double y[GT_FRONT_MAX];
    if (by_table(own_f, own_i, out, in, x, y)) {
        fields[4] = GT_SLOT_CERTAIN;
    } else {
        solve_front(m, data, fields[0], fields[1], in, x, w.score, w.length, w.ids);
        after_solve(fields[0], fields[1], out, in, w.length, w.path, own_i + 2);
        for (int p = 0; p < out.n; ++p) y[p] = w.score[fields[0] + out.off[p]];
        fields[4] = GT_SLOT_EXACT;
    }
    for (int p = 0; p < GT_FRONT_MAX; ++p) x[p] = p < out.n ? y[p] : GT_NEG_INF;
}

// The walk at head h (x its entry's values): kept for segment_finish, and whether they meet its
// segment's bounds (then x becomes the entries of the boundary after the segment). Returns the next
// piece to step, the boundary where the bounds hold, else the segment's first piece (-1: none), and
// sets *stop to the boundary.
__device__ __noinline__ i64 segment_head(const WalkArrays& w, i64 h, double* x, i64* stop) {
    GT_STEP();
    const i64 k0 = w.slot_i[GT_SLOT_FIELDS * h + 3], b = __ldcg(w.seg_i + GT_SEG_I * h + 1);
    *stop = b;
    w.seg_i[GT_SEG_I * h + 2] = 0;
    if (k0 < 0 || b == k0 || b < 0) return k0;  // the run's start, or an empty segment: k0 stepped
    const int n_e = front_width(w.front_n, h);  // <= GT_SEG_FRONT: its first piece is a segment piece
    for (int j = 0; j < GT_SEG_FRONT; ++j) w.seg_x[GT_SEG_FRONT * h + j] = x[j];
    bool jump = within_bounds(w.seg_c + 2 * GT_SEG_FRONT * h, GT_SEG_FRONT, n_e, x);
#ifdef GT_SEG_NO_JUMPS
    jump = false;  // tests: the walk a step per piece that each jump stands for
#endif
    if (!jump) return k0;
    w.seg_i[GT_SEG_I * h + 2] = 1;
    double y[GT_SEG_FRONT];  // b's entries: P_b E
    for (int i = 0; i < GT_SEG_FRONT; ++i) {
        y[i] = GT_NEG_INF;
        for (int j = 0; j < n_e; ++j) {
            const double v = x[j] + __ldcg(w.seg_p + GT_SEG_FRONT * (GT_SEG_FRONT * b + i) + j);
            y[i] = v > y[i] ? v : y[i];
        }
    }
    for (int i = 0; i < GT_FRONT_MAX; ++i) x[i] = i < GT_SEG_FRONT ? y[i] : GT_NEG_INF;
    return b;
}

// The walk of the long run whose last piece is anchor `last`: from each head, a jump over its segment
// where its entry's values meet the segment's bounds, else a step per piece of it; then the boundary
// after it.
__device__ __noinline__ void resolve_run(const Model& m, const u8* data, const WalkArrays& w, i64 last) {
    double x[GT_FRONT_MAX];  // the entry's exact values of the piece stepped last
    const Front out = front_of(w.front_n, w.front_off, last);
    for (int p = 0; p < GT_FRONT_MAX; ++p)
        x[p] = p < out.n ? w.score[w.slot_i[GT_SLOT_FIELDS * last] + out.off[p]] : GT_NEG_INF;
    i64 stop;
    for (i64 t = segment_head(w, last, x, &stop); t >= 0;) {
        resolve_piece(m, data, w, t, x);
        t = t == stop && t < w.n_anchors ? segment_head(w, t, x, &stop) : w.slot_i[GT_SLOT_FIELDS * t + 3];
    }
}

// Per block: a tile of anchors, from the last (in the order blocks start), their pieces scanned
// (SegScan); then per long run, the thread of its anchor piece next to its start: its walk
// (resolve_run), once every tile holding its pieces is scanned (counted per run, so the walk waits on
// earlier tiles only). Per thread: the scan's steps (tile_scan.cuh) and, for a walk, a step per
// segment plus the steps of its boundaries (a table step or an exact solve each) and of the segments
// whose bounds fail (a step per piece). counters: [4] the tiles taken, then per tile its scan's flag,
// then per run's last piece its scanned tiles (zeroed by segment_marks).
extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
segment_resolve(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
                const u8* __restrict__ eow, int trie_size, const double* __restrict__ weights, double unknown_weight,
                int jieba_mode, const u8* __restrict__ data, i64 n_anchors, u64* __restrict__ counters,
                const int* __restrict__ front_n, const int* __restrict__ front_off, i64* __restrict__ slot_i,
                double* __restrict__ class_f, int* __restrict__ class_i, double* __restrict__ seg_p,
                double* __restrict__ seg_x, i64* __restrict__ seg_i, u64* __restrict__ seg_c,
                double* __restrict__ nodes, double* __restrict__ sweeps, double* __restrict__ score,
                int* __restrict__ length, int* __restrict__ ids, u8* __restrict__ path) {
    __shared__ i64 tile_slot;
    const i64 tile = lookback_tile(counters + 4, &tile_slot);
    const SegTables tables{n_anchors, slot_i, class_f, class_i, front_n};
    // a product of 8 x 8 doubles is too wide for shared memory: the sweeps in the tile's scratch
    tile_scan_global(SegScan{tables, seg_p, seg_i, seg_c}, n_anchors, tile, counters + GT_COUNTERS, nodes,
                     sweeps + GT_BLOCK * GT_SEG_W * tile);
    u64* done = counters + GT_COUNTERS + n_anchors;  // per run's last piece: the tiles of its pieces scanned
    const i64 i = tile * GT_BLOCK + threadIdx.x, k = n_anchors - 1 - i;
    auto tile_of = [&](i64 anchor) { return (n_anchors - 1 - anchor) / GT_BLOCK; };
    if (i < n_anchors && slot_i[GT_SLOT_FIELDS * k + 4] != GT_SLOT_NONE) {
        // the first of run's pieces in this tile adds the tiles since its piece before (the run's last
        // piece: 1), so that the run's count reaches 1 + the tile of its piece next to its start - its last's
        const i64 next = slot_i[GT_SLOT_FIELDS * k + 2];
        if (next < 0 || tile_of(next) < tile)
            atomicAdd(done + seg_i[GT_SEG_I * k + 4], next < 0 ? 1ull : (u64)(tile - tile_of(next)));
    }
    __syncthreads();  // this tile's counts first: a walk waits on other blocks only
    // the walk: the run's piece next to its start
    if (i >= n_anchors || slot_i[GT_SLOT_FIELDS * k + 4] == GT_SLOT_NONE || slot_i[GT_SLOT_FIELDS * k + 3] < n_anchors)
        return;
    const i64 run = seg_i[GT_SEG_I * k + 4];
    tile_wait(done, run, (u64)(1 + tile - tile_of(run)));
    const Model m = {state, check, label, eow, trie_size, weights, unknown_weight, jieba_mode};
    const WalkArrays w{n_anchors, front_n, front_off, slot_i, class_f, class_i, seg_p, seg_x, seg_i, seg_c,
                       score, length, ids, path};
    resolve_run(m, data, w, run);
}

// The entry after each piece, from its entry `entry` (an offset in its start's frontier; one not in it
// enters as 0): where the path from there leaves it (segment_finish's last block, segment_paths).
// The frontiers are read where needed, not copied into a Front: these walks keep few registers.
__device__ __forceinline__ i64 entry_after(i64 t, i64 entry, i64 n_anchors, const int* front_n, const int* front_off,
                                           const i64* slot_i, const int* class_i) {
    const int at = front_index_at(front_n, front_off, t < n_anchors ? t : -1, entry);
    return front_width(front_n, slot_i[GT_SLOT_FIELDS * t + 2]) > 1 && at >= 0
               ? __ldcg(class_i + GT_CLASS_INTS * t + 2 + at) : 0;
}

// Head h's segment's entries composed, on its first piece (the one toward the run's start): the entry
// after the segment for each entry of its frontier and for one not in it (segment_finish's last block).
__device__ void compose_entries(i64 h, i64 n_anchors, i64 chunk_bytes, i64 group, const int* front_n,
                                const int* front_off, const i64* slot_i, const int* class_i, i64* est_i) {
    const i64 g0 = slot_i[GT_SLOT_FIELDS * h] / chunk_bytes / group;
    i64 first = h;
    for (i64 p = slot_i[GT_SLOT_FIELDS * first + 3]; p >= 0 && slot_i[GT_SLOT_FIELDS * p] / chunk_bytes / group == g0;
         p = slot_i[GT_SLOT_FIELDS * first + 3]) {
        GT_STEP();
        first = p;
    }
    const i64 anchor = first < n_anchors ? first : -1;
    const int width = front_width(front_n, anchor);
    i64* own = est_i + GT_EST_INTS * first;
    for (int i = 0; i <= GT_FRONT_MAX; ++i) {
        if (i < GT_FRONT_MAX && i >= width) continue;
        // -1: an offset no frontier holds
        i64 entry = i == GT_FRONT_MAX ? -1 : (width > 1 ? front_off[GT_FRONT_MAX * anchor + i] : 0);
        for (i64 t = first;; t = slot_i[GT_SLOT_FIELDS * t + 2]) {
            GT_STEP();
            entry = entry_after(t, entry, n_anchors, front_n, front_off, slot_i, class_i);
            if (t == h) break;
        }
        own[GT_EST_MAP + i] = entry;
    }
    own[GT_EST_HEAD_OF] = h;
    own[GT_EST_FLAGS] |= 4;
}

// Per thread: one piece whose exact frontier values segment_resolve found (stepped over: class_f's;
// in a jumped segment: its product applied to the segment's start): one solve
// and its path (or, where it starts at a forced cut, where the path from each entry leaves it). The
// launch's last block then composes each segment's entries (compose_entries, a thread per segment)
// and walks each long run (a thread per run, a step per segment or per piece of the last piece's
// group): each piece's entry from the earlier pieces' exits, for segment_paths.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_finish(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
               const u8* __restrict__ eow, int trie_size, const double* __restrict__ weights, double unknown_weight,
               int jieba_mode, const u8* __restrict__ data, i64 n_anchors, i64 n_slots,
               const int* __restrict__ front_n, const int* __restrict__ front_off, i64* __restrict__ slot_i,
               const double* __restrict__ class_f, int* __restrict__ class_i, const double* __restrict__ seg_p,
               const double* __restrict__ seg_x, const i64* __restrict__ seg_i, u64* __restrict__ counters,
               i64 chunk_bytes, i64 group,
               i64* __restrict__ est_i, double* __restrict__ score, int* __restrict__ length, int* __restrict__ ids,
               u8* __restrict__ path) {
    const i64 k = global_thread_index();
    Front out, in;
    const i64 k_state = k < n_slots ? slot_i[GT_SLOT_FIELDS * k + 4] : GT_SLOT_NONE;
    if (k_state == GT_SLOT_CERTAIN || k_state == GT_SLOT_PENDING) {
        const Model m = {state, check, label, eow, trie_size, weights, unknown_weight, jieba_mode};
        const i64 a = slot_i[GT_SLOT_FIELDS * k], b = slot_i[GT_SLOT_FIELDS * k + 1];
        slot_fronts(front_n, front_off, n_anchors, k, slot_i[GT_SLOT_FIELDS * k + 2], &out, &in);
        double x[GT_FRONT_MAX];
        for (int g = 0; g < in.n; ++g) x[g] = class_f[GT_CLASS_FLOATS * k + GT_CF_EXACT + g];
        if (k_state == GT_SLOT_PENDING) {  // in a segment the walk jumped: P_k E, E its head's entry
            const i64 h = seg_i[GT_SEG_I * k];
            const int n_e = front_width(front_n, h);
            for (int g = 0; g < in.n; ++g) {
                x[g] = GT_NEG_INF;
                for (int j = 0; j < n_e; ++j) {
                    GT_STEP();
                    const double v = seg_x[GT_SEG_FRONT * h + j] + seg_p[GT_SEG_FRONT * (GT_SEG_FRONT * k + g) + j];
                    x[g] = v > x[g] ? v : x[g];
                }
            }
            slot_i[GT_SLOT_FIELDS * k + 4] = GT_SLOT_CERTAIN;
        }
        solve_front(m, data, a, b, in, x, score, length, ids);
        after_solve(a, b, out, in, length, path, class_i + GT_CLASS_INTS * k + 2);
    }
    __shared__ int last_block;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last_block = atomicAdd(&counters[2], 1ull) == (u64)gridDim.x - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    // each segment's entries composed (a thread per segment), then each run's walk (a thread per
    // run, a step per segment); segment_paths finishes the entries inside a segment
    const i64 n_heads = (i64)counters[5];
    for (i64 i = threadIdx.x; i < n_heads; i += blockDim.x)
        compose_entries(est_i[GT_EST_INTS * i + GT_EST_HEADS], n_anchors, chunk_bytes, group, front_n, front_off,
                        slot_i, class_i, est_i);
    __syncthreads();
    const i64 n_long = (i64)counters[1];
    for (i64 r = threadIdx.x; r < n_long; r += blockDim.x) {
        i64 entry = 0;
        for (i64 t = n_anchors + r; t >= 0;) {
            GT_STEP();
            i64* own = est_i + GT_EST_INTS * t;
            class_i[GT_CLASS_INTS * t + 2 + GT_FRONT_MAX] = (int)entry;
            own[GT_EST_FLAGS] |= 8;
            if (own[GT_EST_FLAGS] & 4) {  // a segment at a time
                const int at = front_index_at(front_n, front_off, t < n_anchors ? t : -1, entry);
                entry = own[GT_EST_MAP + (at >= 0 ? at : GT_FRONT_MAX)];
                t = slot_i[GT_SLOT_FIELDS * own[GT_EST_HEAD_OF] + 2];
            } else {
                entry = entry_after(t, entry, n_anchors, front_n, front_off, slot_i, class_i);
                t = slot_i[GT_SLOT_FIELDS * t + 2];
            }
        }
    }
}

// Per thread: one piece that starts at a forced cut: its path from its entry (segment_finish).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
segment_paths(i64 n_anchors, const int* __restrict__ front_n, const i64* __restrict__ slot_i,
              const int* __restrict__ class_i, const int* __restrict__ length, u8* __restrict__ path,
              const int* __restrict__ front_off, const i64* __restrict__ est_i) {
    const i64 k = global_thread_index();
    if (k >= n_anchors || front_n[k] <= 1) return;
    const i64 state = slot_i[GT_SLOT_FIELDS * k + 4];
    if (state != GT_SLOT_CERTAIN && state != GT_SLOT_EXACT) return;
    i64 entry = class_i[GT_CLASS_INTS * k + 2 + GT_FRONT_MAX];
    if (!(est_i[GT_EST_INTS * k + GT_EST_FLAGS] & 8)) {  // inside a segment: from its first piece's entry
        i64 first = k;
        while (!(est_i[GT_EST_INTS * first + GT_EST_FLAGS] & 4)) {
            GT_STEP();
            first = slot_i[GT_SLOT_FIELDS * first + 3];
        }
        entry = class_i[GT_CLASS_INTS * first + 2 + GT_FRONT_MAX];
        for (i64 t = first; t != k; t = slot_i[GT_SLOT_FIELDS * t + 2]) {
            GT_STEP();
            entry = entry_after(t, entry, n_anchors, front_n, front_off, slot_i, class_i);
        }
    }
    mark_path(slot_i[GT_SLOT_FIELDS * k] + entry, slot_i[GT_SLOT_FIELDS * k + 1], length, path, 1);
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
