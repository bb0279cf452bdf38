// segment_rows.cuh -- device helpers of the fused batch segmentation in segment.cu (the
// segment_* kernels): rows and characters from the bytes, the pre-split kind of a character, the
// trie walk, the pieces of a run and the backward Viterbi of one piece; and the character rules
// and tie rule that segment.cu's staged kernels share with them.
#pragma once
#include "double_array.cuh"
#include "step_counter.cuh"
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

__device__ __forceinline__ bool better(double score, double best, int jieba_mode) {
    return jieba_mode ? score >= best : score > best;
}

#define GT_LENGTH_INSIDE (-1)  // scratch `length` of a byte inside a character
// The pieces of long runs (runs holding an anchor) have slots: anchor j's piece slot j, a long
// run's first piece a slot from n_anchors on. Per slot: slot_f = (value, lowest, highest, delta),
// slot_i = (start, end, next slot or -1 for the run's last piece, previous slot or -1, state).
#define GT_SLOT_NONE 0
#define GT_SLOT_EXACT 1     // the run's last piece: solved with the tail score
#define GT_SLOT_PENDING 2   // solved with tail 0 (value, range), to be settled
#define GT_SLOT_CERTAIN 3   // settled: its path is the whole run's, delta exact
#define GT_SLOT_UNCERTAIN 4 // left to segment_resolve
#define GT_SLOT_FIELDS 5
#define GT_SLOT_FLOATS 4
#define GT_TWO_TO_MINUS_51 4.440892098500626e-16

struct Row {
    i64 begin, end;
};

// The row holding byte pos, which must lie in [offsets[0], offsets[n_rows]).
__device__ __forceinline__ Row row_of(const i64* offsets, i64 n_rows, i64 pos) {
    const i64 r = string_of_byte(offsets, n_rows, pos);
    return Row{offsets[r], offsets[r + 1]};
}

// The rows that can hold the bytes [first, last] of a block (clamped into the rows' bytes), found
// by one binary search per block; each thread then searches only between them (row_between).
struct RowRange {
    i64 lo, hi;
};

__device__ __forceinline__ RowRange block_rows(const i64* offsets, i64 n_rows, i64 first, i64 last, i64* shared) {
    if (threadIdx.x == 0 && n_rows > 0) {
        const i64 lowest = offsets[0], highest = offsets[n_rows] - 1;
        shared[0] = string_of_byte(offsets, n_rows, first < lowest ? lowest : (first > highest ? highest : first));
        shared[1] = string_of_byte(offsets, n_rows, last < lowest ? lowest : (last > highest ? highest : last));
    }
    __syncthreads();
    return RowRange{shared[0], shared[1]};
}

// string_of_byte for a byte of the block: the last row j in [range.lo, range.hi] with offsets[j] <= pos.
__device__ __forceinline__ i64 row_between(const i64* offsets, RowRange range, i64 pos) {
    i64 lo = range.lo, hi = range.hi + 1;
    while (hi - lo > 1) {
        const i64 mid = lo + (hi - lo) / 2;
        if (offsets[mid] <= pos) lo = mid; else hi = mid;
    }
    return lo;
}

struct Char {
    u32 cp;
    int len;
};

__device__ __forceinline__ Char char_at(const u8* data, i64 p, i64 end) {
    Char c;
    const int len = utf8_sequence_at(data + p, end - p, &c.cp);
    c.len = len > 0 ? len : 1;
    return c;
}

// The start of the character before the one starting at i > begin: the last character start of
// the (at most) four bytes before i.
__device__ __forceinline__ i64 previous_char(const u8* data, i64 i, i64 begin, i64 end) {
    const i64 stop = i - 4 > begin ? i - 4 : begin;
    for (i64 p = i - 1; p > stop; --p) {
        if (utf8_starts_char(data, p, begin, end)) return p;
    }
    return stop;
}

// Does the character cp belong to a lattice run (Han in DictCut mode, jieba's block characters)?
__device__ __forceinline__ bool run_char(u32 cp, int jieba_mode) {
    return jieba_mode ? jieba_block_char(cp) : char_class_of(cp) == GT_CLASS_HAN;
}

// presplit_kinds's kind of the character starting at k in row [begin, end), from the bytes.
__device__ u8 kind_at(const u8* data, i64 k, i64 begin, i64 end, int jieba_mode) {
    const Char c = char_at(data, k, end);
    if (jieba_mode) {
        if (python_space(c.cp)) return KIND_DROP;
        if (!jieba_block_char(c.cp)) return KIND_START;
        return k > begin && jieba_block_char(char_at(data, previous_char(data, k, begin, end), end).cp)
                   ? KIND_CONTINUE : KIND_START_RUN;
    }
    const u8 cls = char_class_of(c.cp);
    if (cls == GT_CLASS_SPACE) return KIND_DROP;
    if (k == begin) return cls == GT_CLASS_HAN ? KIND_START_RUN : KIND_START;
    const i64 j = previous_char(data, k, begin, end);
    const Char prev = char_at(data, j, end);
    const u8 prev_cls = char_class_of(prev.cp);
    const i64 next = k + c.len;
    const bool next_alpha = next < end && char_class_of(char_at(data, next, end).cp) == GT_CLASS_ALPHA;
    const bool inner_apostrophe = c.cp == 0x27u && prev_cls == GT_CLASS_ALPHA && next_alpha;
    const bool after_apostrophe = cls == GT_CLASS_ALPHA && prev.cp == 0x27u && j > begin &&
                                  char_class_of(char_at(data, previous_char(data, j, begin, end), end).cp) ==
                                      GT_CLASS_ALPHA;
    if (inner_apostrophe || after_apostrophe) return KIND_CONTINUE;
    if (cls == GT_CLASS_OTHER || prev_cls != cls) return cls == GT_CLASS_HAN ? KIND_START_RUN : KIND_START;
    return KIND_CONTINUE;
}

struct Model {
    const int* state;
    const int* check;
    const u8* label;
    const u8* eow;
    int trie_size;
    const double* weights;
    double unknown_weight;
    int jieba_mode;

    // The end of the longest dictionary word at p (p when none), not running past `limit`.
    __device__ i64 reach(const u8* data, i64 p, i64 limit) const {
        i64 longest = p;
        int slot = 0;
        for (i64 q = p; q < limit; ++q) {
            GT_STEP();
            slot = trie_step(state, check, label, trie_size, slot, data[q]);
            if (slot < 0) break;
            if (trie_value(state, check, label, eow, trie_size, slot) >= 0) longest = q + 1;
        }
        return longest;
    }
};

// The piece starting at s (a run start, or anchor j's cut point): its end, and the character
// lengths of its bytes in `length`. A piece ends at the first valid cut point of a later anchor
// (the anchors at or after a run start, or after j: *stop_anchor) or at the run's end (-1).
__device__ i64 piece_end(const u8* data, i64 s, const Row& row, i64 first_anchor, i64 chunk_bytes, i64 n_anchors,
                         const i64* cuts, int jieba_mode, int* length, i64* stop_anchor) {
    i64 b = s, stop = -1, anchor = first_anchor;
    *stop_anchor = -1;
    while (b < row.end) {
        GT_STEP();
        if (stop < 0 && anchor < n_anchors && b >= anchor * chunk_bytes) {
            if (cuts[anchor] >= 0) stop = cuts[anchor];
            else ++anchor;
        }
        if (b == stop) {
            *stop_anchor = anchor;
            break;
        }
        const Char c = char_at(data, b, row.end);
        if (!run_char(c.cp, jieba_mode)) break;
        length[b] = c.len;
        for (int k = 1; k < c.len; ++k) length[b + k] = GT_LENGTH_INSIDE;
        b += c.len;
    }
    return b;
}

// What solve_piece checks beside solving: the range of every value it computes (range != null),
// and (unit > 0) that no addition lands half way between two multiples of unit.
struct Checks {
    double* range;  // [lowest, highest], updated
    double unit;
    bool halfway_seen;

    __device__ __forceinline__ void add(double weight, double value) {
        if (range) {
            range[0] = value < range[0] ? value : range[0];
            range[1] = value > range[1] ? value : range[1];
        }
        if (unit > 0.0) {
            const double r = weight / unit;  // exact: unit is a power of two
            if (r - floor(r) == 0.5) halfway_seen = true;
        }
    }
};

// The best edge out of the character start p (< b) by best_edge's rule (the words starting at p,
// shortest first, ending before `limit`; DictCut's fallback first), value_at(e) the route value at e;
// added(weight, sum) sees every sum made. Sets *end (the edge's end) and *value (the word's
// dictionary value, -1: the fallback); returns the route value at p.
template <typename ValueAt, typename Added>
__device__ __forceinline__ double best_edge_from(const Model& m, const u8* data, i64 p, i64 b, i64 limit,
                                                 ValueAt value_at, Added added, i64* end, int* value) {
    const i64 char_end = p + char_at(data, p, b).len;
    double best = GT_NEG_INF;
    i64 best_end = -1;
    int best_value = -1;
    bool covered = false;
    int slot = 0;
    for (i64 q = p; q < limit; ++q) {
        GT_STEP();
        slot = trie_step(m.state, m.check, m.label, m.trie_size, slot, data[q]);
        if (slot < 0) break;
        const int v = trie_value(m.state, m.check, m.label, m.eow, m.trie_size, slot);
        if (v < 0 || m.weights[v] == GT_NEG_INF) continue;
        if (q + 1 == char_end) covered = true;
        const double s = m.weights[v] + value_at(q + 1);
        added(m.weights[v], s);
        if (best_end < 0 || better(s, best, m.jieba_mode)) {
            best = s;
            best_end = q + 1;
            best_value = v;
        }
    }
    if (m.jieba_mode ? best_end < 0 : !covered) {
        const double fallback = m.unknown_weight + value_at(char_end);
        added(m.unknown_weight, fallback);
        if (best_end < 0 || !(best > fallback)) {  // the fallback comes first: it stays unless beaten
            best = fallback;
            best_end = char_end;
            best_value = -1;
        }
    }
    *end = best_end;
    *value = best_value;
    return best;
}

// Backward Viterbi over the piece [a, b) with `tail` the route value at b (best_edge_from's rule). The
// character starts are the bytes whose `length` is not GT_LENGTH_INSIDE; `length` then gets each
// start's best word length, `score` its route value, ids its word's dictionary value (-1: the fallback).
__device__ void solve_piece(const Model& m, const u8* data, i64 a, i64 b, double tail, Checks* checks,
                            double* score, int* length, int* ids) {
    auto value_at = [&](i64 e) { return e == b ? tail : score[e]; };
    auto added = [&](double weight, double sum) {
        if (checks) checks->add(weight, sum);
    };
    for (i64 p = b - 1; p >= a; --p) {
        GT_STEP();
        if (length[p] == GT_LENGTH_INSIDE) continue;
        i64 end;
        score[p] = best_edge_from(m, data, p, b, b, value_at, added, &end, ids + p);
        length[p] = (int)(end - p);
    }
}

__device__ __forceinline__ void mark_path(i64 a, i64 b, const int* length, u8* path, u8 value) {
    for (i64 p = a; p < b; p += length[p]) {
        GT_STEP();
        path[p] = value;
    }
}


__device__ __forceinline__ bool ascii_alnum(u8 b) {
    const u8 folded = b | 0x20u;
    return (b >= 0x30u && b <= 0x39u) || (folded >= 0x61u && folded <= 0x7Au);
}

// Is the path word at p (path[p] set) one byte, an ASCII letter or digit (jieba mode only)?
__device__ __forceinline__ bool single_alnum(const u8* data, const u8* path, const int* length, i64 p) {
    return path[p] && length[p] == 1 && ascii_alnum(data[p]);
}

