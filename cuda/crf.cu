// crf.cu -- linear-chain CRF: scaled forward-backward, gradient reductions, Viterbi.
//
// Sequences: one warp each (8 per block). The emissions of all the sequence's tokens are gathered
// first with the whole warp, lanes across (token, label) pairs -- the gathers are the random reads,
// and with few labels a lane per label alone would leave most lanes idle -- then turned into
// psi_t = exp(e_t - m_t) the same way; the forward and backward recursions then run with labels
// across lanes (lane, lane + 32, ...) and the token's transition factors
// M_t[a*Y + b] = prod_f exp(B[f])[a*Y + b] in per-warp shared memory (global scratch when Y*Y
// does not fit), recomputed only when the token's bigram observations differ from those of the
// token whose factors are loaded. Gradients: one thread per (chunk of a feature's occurrences,
// weight component), then one per (feature, component) summing its chunks in order and adding
// the L2 term -- a segmented reduction, deterministic, no atomics, written straight into the
// gradient vector. Same arithmetic order as cpu_fallback/crf.py except the per-token normaliser
// (a warp sum) and training's unigram gradient, which the CPU scatters in token order (a GPU
// scatter would need atomics); the CPU's transposed path is this file's order.
#include "common.cuh"

#define CRF_NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))
#define CRF_WARPS (GT_BLOCK / 32)

extern __shared__ double crf_shared[];

__device__ __forceinline__ double warp_sum(double v) {
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

__device__ __forceinline__ double warp_max(double v) {
    for (int d = 16; d > 0; d >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

__device__ __forceinline__ bool same_bigrams(const i64* b_offsets, const i64* b_ids, i64 t, i64 u) {
    if (u < 0 || b_offsets[t + 1] - b_offsets[t] != b_offsets[u + 1] - b_offsets[u]) return false;
    for (i64 k = 0; k < b_offsets[t + 1] - b_offsets[t]; ++k)
        if (b_ids[b_offsets[t] + k] != b_ids[b_offsets[u] + k]) return false;
    return true;
}

// Loads token t's transition matrix into m (by the whole warp): the product of exp(B) rows when
// `product`, else the sum of B rows.
__device__ __forceinline__ void load_transitions(const double* table, const i64* b_offsets, const i64* b_ids,
                                                 i64 t, i64 yy, bool product, double* m) {
    __syncwarp();  // every lane is done with the previous matrix
    for (i64 k = threadIdx.x & 31; k < yy; k += 32) {
        double v = product ? 1.0 : 0.0;
        for (i64 j = b_offsets[t]; j < b_offsets[t + 1]; ++j) {
            if (product) v *= table[b_ids[j] * yy + k];
            else v += table[b_ids[j] * yy + k];
        }
        m[k] = v;
    }
    __syncwarp();
}

// Per-warp matrix: shared memory when the launch provided it, else the warp's global scratch.
__device__ __forceinline__ double* warp_matrix(double* scratch, int use_shared, i64 yy) {
    const i64 warp_in_block = threadIdx.x >> 5;
    if (use_shared) return crf_shared + warp_in_block * yy;
    return scratch + ((i64)blockIdx.x * CRF_WARPS + warp_in_block) * yy;
}

__device__ __forceinline__ double emission(const double* unigram, const i64* u_offsets, const i64* u_ids, i64 t,
                                           i64 y, i64 n_labels) {
    double e = 0.0;
    for (i64 k = u_offsets[t]; k < u_offsets[t + 1]; ++k) e += unigram[u_ids[k] * n_labels + y];
    return e;
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_forward_backward(const double* __restrict__ unigram, const double* __restrict__ bigram,
                     const double* __restrict__ exp_bigram, const i64* __restrict__ seq_offsets, i64 n_seqs,
                     const i64* __restrict__ u_offsets, const i64* __restrict__ u_ids,
                     const i64* __restrict__ b_offsets, const i64* __restrict__ b_ids, const int* __restrict__ labels,
                     int has_labels, i64 n_labels, double* alpha, double* omega, double* __restrict__ marginals,
                     double* scale, double* __restrict__ log_z, double* __restrict__ gold, double* scratch,
                     int use_shared) {
    const i64 s = (i64)blockIdx.x * CRF_WARPS + (threadIdx.x >> 5);
    const i64 lane = threadIdx.x & 31;
    if (s >= n_seqs) return;  // whole warps leave together
    const i64 yy = n_labels * n_labels, start = seq_offsets[s], end = seq_offsets[s + 1];
    double* m = warp_matrix(scratch, use_shared, yy);
    const i64 cells = (end - start) * n_labels;
    for (i64 i = lane; i < cells; i += 32) {  // (token, label) pairs across the warp
        const i64 t = start + i / n_labels;
        omega[t * n_labels + i % n_labels] = emission(unigram, u_offsets, u_ids, t, i % n_labels, n_labels);
    }
    __syncwarp();
    for (i64 t = start + lane; t < end; t += 32) {  // m_t, kept in scale[t] until the forward pass needs it
        double shift = omega[t * n_labels];
        for (i64 y = 1; y < n_labels; ++y) shift = fmax(shift, omega[t * n_labels + y]);
        scale[t] = shift;
    }
    __syncwarp();
    for (i64 i = lane; i < cells; i += 32) {  // psi_t, turned into omega by the backward pass
        const i64 t = start + i / n_labels;
        omega[t * n_labels + i % n_labels] = exp(omega[t * n_labels + i % n_labels] - scale[t]);
    }
    __syncwarp();
    i64 cached = -1;
    double total = 0.0;
    for (i64 t = start; t < end; ++t) {
        if (t > start && !same_bigrams(b_offsets, b_ids, t, cached)) {
            load_transitions(exp_bigram, b_offsets, b_ids, t, yy, true, m);
            cached = t;
        }
        double local_sum = 0.0;
        for (i64 y = lane; y < n_labels; y += 32) {
            double a = omega[t * n_labels + y];
            if (t > start) {
                double acc = 0.0;
                for (i64 yp = 0; yp < n_labels; ++yp) acc += alpha[(t - 1) * n_labels + yp] * m[yp * n_labels + y];
                a *= acc;
            }
            alpha[t * n_labels + y] = a;
            local_sum += a;
        }
        const double norm = warp_sum(local_sum);
        for (i64 y = lane; y < n_labels; y += 32) alpha[t * n_labels + y] /= norm;
        total += log(norm) + scale[t];
        __syncwarp();  // every lane has read m_t
        if (lane == 0) scale[t] = norm;
        __syncwarp();  // alpha[t] and scale[t] are read by every lane next
    }
    for (i64 t = end - 1; t >= start; --t) {
        if (t < end - 1 && !same_bigrams(b_offsets, b_ids, t + 1, cached)) {
            load_transitions(exp_bigram, b_offsets, b_ids, t + 1, yy, true, m);
            cached = t + 1;
        }
        for (i64 yp = lane; yp < n_labels; yp += 32) {
            double beta = 1.0;
            if (t < end - 1) {
                beta = 0.0;
                for (i64 y = 0; y < n_labels; ++y) beta += m[yp * n_labels + y] * omega[(t + 1) * n_labels + y];
            }
            marginals[t * n_labels + yp] = alpha[t * n_labels + yp] * beta;
            omega[t * n_labels + yp] = omega[t * n_labels + yp] * beta / scale[t];
        }
        __syncwarp();  // omega[t] is read by every lane next
    }
    if (lane == 0) {
        log_z[s] = total;
        double score = 0.0;
        if (has_labels) {
            for (i64 t = start; t < end; ++t) {
                for (i64 k = u_offsets[t]; k < u_offsets[t + 1]; ++k) score += unigram[u_ids[k] * n_labels + labels[t]];
                if (t > start)
                    for (i64 k = b_offsets[t]; k < b_offsets[t + 1]; ++k)
                        score += bigram[b_ids[k] * yy + labels[t - 1] * n_labels + labels[t]];
            }
        }
        gold[s] = score;
    }
}

// partial[c * Y + y] = sum over the occurrences (tokens t) of chunk c of marginals[t, y] - [labels[t] == y].
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_unigram_partials(const double* __restrict__ marginals, const int* __restrict__ labels,
                     const i64* __restrict__ occ_tokens, const i64* __restrict__ chunk_offsets, i64 n_chunks,
                     i64 n_labels, double* __restrict__ partial) {
    const i64 i = global_thread_index();
    if (i >= n_chunks * n_labels) return;
    const i64 c = i / n_labels, y = i % n_labels;
    double acc = 0.0;
    for (i64 o = chunk_offsets[c]; o < chunk_offsets[c + 1]; ++o) {
        const i64 t = occ_tokens[o];
        acc += marginals[t * n_labels + y];
        if (labels[t] == y) acc -= 1.0;
    }
    partial[i] = acc;
}

// partial[c * Y*Y + a*Y + b] = sum over chunk c's tokens t of p(y_{t-1} = a, y_t = b) - [gold pair == (a, b)].
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_bigram_partials(const double* __restrict__ exp_bigram, const double* __restrict__ alpha,
                    const double* __restrict__ omega, const int* __restrict__ labels,
                    const i64* __restrict__ b_offsets, const i64* __restrict__ b_ids,
                    const i64* __restrict__ occ_tokens, const i64* __restrict__ chunk_offsets, i64 n_chunks,
                    i64 n_labels, double* __restrict__ partial) {
    const i64 yy = n_labels * n_labels;
    const i64 i = global_thread_index();
    if (i >= n_chunks * yy) return;
    const i64 c = i / yy, k = i % yy, a = k / n_labels, b = k % n_labels;
    double acc = 0.0;
    for (i64 o = chunk_offsets[c]; o < chunk_offsets[c + 1]; ++o) {
        const i64 t = occ_tokens[o];
        double factor = 1.0;
        for (i64 j = b_offsets[t]; j < b_offsets[t + 1]; ++j) factor *= exp_bigram[b_ids[j] * yy + k];
        acc += alpha[(t - 1) * n_labels + a] * factor * omega[t * n_labels + b];
        if (labels[t - 1] == a && labels[t] == b) acc -= 1.0;
    }
    partial[i] = acc;
}

// out[f * K + k] = sum of partial[c * K + k] over feature f's chunks, in chunk order, plus
// l2 * weights[f * K + k] when has_weights (the L2 term's gradient).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_reduce_chunks(const double* __restrict__ partial, const i64* __restrict__ feature_chunks, i64 n_features,
                  i64 width, const double* __restrict__ weights, int has_weights, double l2,
                  double* __restrict__ out) {
    const i64 i = global_thread_index();
    if (i >= n_features * width) return;
    const i64 f = i / width, k = i % width;
    double acc = 0.0;
    for (i64 c = feature_chunks[f]; c < feature_chunks[f + 1]; ++c) acc += partial[c * width + k];
    out[i] = has_weights ? acc + l2 * weights[i] : acc;
}

// Viterbi, one warp per sequence: delta and back pointers in global scratch (token-major), the
// transition sums in the warp's matrix; lane 0 backtracks. Ties go to the lowest label.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_viterbi(const double* __restrict__ unigram, const double* __restrict__ bigram, const i64* __restrict__ seq_offsets,
            i64 n_seqs, const i64* __restrict__ u_offsets, const i64* __restrict__ u_ids,
            const i64* __restrict__ b_offsets, const i64* __restrict__ b_ids, i64 n_labels, double* delta,
            int* back, int* __restrict__ out, double* __restrict__ scores, double* scratch, int use_shared) {
    const i64 s = (i64)blockIdx.x * CRF_WARPS + (threadIdx.x >> 5);
    const i64 lane = threadIdx.x & 31;
    if (s >= n_seqs) return;
    const i64 yy = n_labels * n_labels, start = seq_offsets[s], end = seq_offsets[s + 1];
    double* m = warp_matrix(scratch, use_shared, yy);
    i64 cached = -1;
    for (i64 t = start; t < end; ++t) {
        if (t > start && !same_bigrams(b_offsets, b_ids, t, cached)) {
            load_transitions(bigram, b_offsets, b_ids, t, yy, false, m);
            cached = t;
        }
        for (i64 y = lane; y < n_labels; y += 32) {
            const double e = emission(unigram, u_offsets, u_ids, t, y, n_labels);
            if (t == start) {
                delta[t * n_labels + y] = e;
                continue;
            }
            double best = delta[(t - 1) * n_labels] + m[y];
            int arg = 0;
            for (i64 yp = 1; yp < n_labels; ++yp) {
                const double v = delta[(t - 1) * n_labels + yp] + m[yp * n_labels + y];
                if (v > best) { best = v; arg = (int)yp; }
            }
            delta[t * n_labels + y] = best + e;
            back[t * n_labels + y] = arg;
        }
        __syncwarp();  // delta[t] is read by every lane next
    }
    if (lane == 0 && end > start) {
        i64 y = 0;
        for (i64 k = 1; k < n_labels; ++k)
            if (delta[(end - 1) * n_labels + k] > delta[(end - 1) * n_labels + y]) y = k;
        scores[s] = delta[(end - 1) * n_labels + y];
        for (i64 t = end - 1; t >= start; --t) {
            out[t] = (int)y;
            y = back[t * n_labels + y];
        }
    } else if (lane == 0) {
        scores[s] = 0.0;
    }
}
