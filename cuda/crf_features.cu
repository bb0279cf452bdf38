// crf_features.cu -- a CRF's observation features straight from per-position value ids, and the
// Viterbi over them (the layout of values, edges, rows, commands, slots and dense, and the rules,
// are cpu_fallback/crf_features.py's docstring; the ids and labels are the same, bit for bit).
//
// crf_feature_ids: one thread per position computes the feature id of every row there (the
// position's sequence by binary search over the offsets): gathers of a few value ids, a key, and
// a table read or a short linear probe. crf_dense_viterbi: one warp per sequence, a lane per label,
// over those ids -- the emission of (t, y) is 0 plus the found unigram rows' weights in row
// order, the transition 0 plus the found bigram rows', as the Numba twin adds them.
#include "common.cuh"

#define ROW_WIDTH 8
#define MODE_DENSE 1
#define FEATURE_WARPS (GT_BLOCK / 32)

__device__ __forceinline__ i64 command_value(const int* values, i64 n_positions, const int* edges, const i64* commands,
                                             i64 c, i64 start, i64 length, i64 local) {
    const i64 column = commands[c * 3], offset = commands[c * 3 + 1];
    const i64 pos = commands[c * 3 + 2] ? (offset >= 0 ? offset : length + offset) : local + offset;
    if (pos < 0) return edges[column * 10 + (-pos - 1 < 4 ? -pos - 1 : 4)];
    if (pos >= length) return edges[column * 10 + 5 + (pos - length < 4 ? pos - length : 4)];
    return values[column * n_positions + start + pos];
}

// The feature id of row r at position `local` of the sequence at `start`, -1 for none.
__device__ i64 row_feature_id(const int* values, i64 n_positions, const int* edges, const i64* rows,
                              const i64* commands, const i64* slots, const i64* dense, i64 n_values,
                              i64 n_namespaces, i64 r, i64 start, i64 length, i64 local) {
    const i64* row = rows + r * ROW_WIDTH;
    if (row[0] == 2 && local == 0) return -1;  // no transition into a sequence's first position
    const i64 namespace_id = row[1], exact = row[2], first = row[3], count = row[4];
    const i64 mode = row[5], base = row[6], size = row[7];
    i64 key = 0, value = 0;
    u64 hashed = (u64)(namespace_id + 1);
    for (i64 c = first; c < first + count; ++c) {
        value = command_value(values, n_positions, edges, commands, c, start, length, local);
        if (value < 0) return -1;
        if (exact) {
            key = key * n_values + value;
        } else {
            hashed = hashed * 0x9E3779B97F4A7C15ull + (u64)value + 1ull;
            hashed ^= hashed >> 29;
        }
    }
    if (mode == MODE_DENSE) return value < size ? dense[base + value] : -1;
    key = exact ? key * n_namespaces + namespace_id : (i64)(hashed >> 1);
    const i64 mask = ((i64)1 << size) - 1;
    i64 slot = (i64)(((u64)key * 0xD6E8FEB86659FD93ull) >> (64 - size));
    while (slots[(base + slot) * 2] != -1) {  // linear probing; every region has an empty slot
        if (slots[(base + slot) * 2] == key) return slots[(base + slot) * 2 + 1];
        slot = (slot + 1) & mask;
    }
    return -1;
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_feature_ids(const i64* __restrict__ seq_offsets, i64 n_seqs, const int* __restrict__ values, i64 n_positions,
                const int* __restrict__ edges, const i64* __restrict__ rows, i64 n_rows,
                const i64* __restrict__ commands, const i64* __restrict__ slots, const i64* __restrict__ dense,
                i64 n_values, i64 n_namespaces, i64* __restrict__ out) {
    const i64 t = global_thread_index();
    if (t >= n_positions) return;
    i64 lo = 0, hi = n_seqs - 1;  // the last sequence starting at or before t (empty ones skipped)
    while (lo < hi) {
        const i64 mid = (lo + hi + 1) >> 1;
        if (seq_offsets[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    const i64 start = seq_offsets[lo], length = seq_offsets[lo + 1] - start;
    for (i64 r = 0; r < n_rows; ++r)
        out[t * n_rows + r] = row_feature_id(values, n_positions, edges, rows, commands, slots, dense, n_values,
                                             n_namespaces, r, start, length, t - start);
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_dense_viterbi(const double* __restrict__ unigram, const double* __restrict__ bigram,
                  const i64* __restrict__ seq_offsets, i64 n_seqs, const i64* __restrict__ ids, i64 n_rows, i64 n_u,
                  i64 n_labels, double* delta, int* back, int* __restrict__ out, double* __restrict__ scores) {
    const i64 s = (i64)blockIdx.x * FEATURE_WARPS + (threadIdx.x >> 5);
    const i64 lane = threadIdx.x & 31;
    if (s >= n_seqs) return;
    const i64 start = seq_offsets[s], end = seq_offsets[s + 1];
    for (i64 t = start; t < end; ++t) {
        const i64* row = ids + t * n_rows;
        for (i64 y = lane; y < n_labels; y += 32) {
            double e = 0.0;
            for (i64 k = 0; k < n_u; ++k)
                if (row[k] >= 0) e += unigram[row[k] * n_labels + y];
            if (t == start) {
                delta[t * n_labels + y] = e;
                continue;
            }
            double best = 0.0;
            int arg = 0;
            for (i64 yp = 0; yp < n_labels; ++yp) {
                double transition = 0.0;
                for (i64 k = n_u; k < n_rows; ++k)
                    if (row[k] >= 0) transition += bigram[(row[k] * n_labels + yp) * n_labels + y];
                const double v = delta[(t - 1) * n_labels + yp] + transition;
                if (yp == 0 || v > best) { best = v; arg = (int)yp; }
            }
            delta[t * n_labels + y] = best + e;
            back[t * n_labels + y] = arg;
        }
        __syncwarp();  // delta[t] is read by every lane next
    }
    if (lane == 0) {
        if (end == start) {
            scores[s] = 0.0;
            return;
        }
        i64 y = 0;
        for (i64 k = 1; k < n_labels; ++k)
            if (delta[(end - 1) * n_labels + k] > delta[(end - 1) * n_labels + y]) y = k;
        scores[s] = delta[(end - 1) * n_labels + y];
        for (i64 t = end - 1; t >= start; --t) {
            out[t] = (int)y;
            y = back[t * n_labels + y];
        }
    }
}
