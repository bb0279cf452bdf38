// crf.cu -- linear-chain CRF: scaled forward-backward, gradient reductions, Viterbi.
//
// Training's forward-backward is two launches. crf_emissions, one thread per token: the token's
// emissions e_t (the sum of its unigram weight rows), psi_t = exp(e_t - m_t) with m_t their
// maximum, the gold path's unigram and transition terms and whether the token's bigram id list
// repeats the previous token's -- every random gather of the pass, in token order, so
// neighbouring threads read neighbouring id lists. Then the recursion over each sequence: for
// Y <= 6 labels on a group of G lanes (crf_forward_backward_y<Y>, G = 1, 2, 4 or 8; 4 lanes for
// BMES), lane y holding alpha_t[y], beta_t[y] and its column and row of the transition factor
// M_t[a*Y + b] = prod_f exp(B[f])[a*Y + b] in registers, the other labels' values by shuffles,
// each step one psi value read and one alpha value written per lane (a group reads a row, 8 * Y
// contiguous bytes); for more labels on a warp (crf_forward_backward: labels across lanes, M_t in
// per-warp shared memory, global scratch when Y*Y does not fit). Sequences are taken in the
// order `order` gives (the launch wrapper sorts them longest first, so a warp's groups finish
// together and the long ones start first). M_t is rebuilt only where the repeat flag says the
// token's bigram observations differ from the previous token's (with Wapiti's `B` pattern, once a
// sequence). exp(B) is computed once per evaluation by the caller and shared with the bigram
// gradient. The recursion kernels ask for 4 blocks an SM (__launch_bounds__(256, 4), 64
// registers, 50% occupancy on sm_90) and fit without spilling.
// Gradients: one thread per (chunk of a feature's occurrences, weight component), then one per
// (feature, component) summing its chunks in order and adding the L2 term -- a segmented
// reduction, deterministic, no atomics, written straight into the gradient vector.
// Same arithmetic order as cpu_fallback/crf.py (its `emissions` and `forward_backward`) except
// the warp kernel's per-token normaliser (a warp sum), the gold score (summed per token here,
// running on the CPU) and training's unigram gradient, which the CPU scatters in token order (a
// GPU scatter would need atomics); the CPU's transposed path is this file's order.
#include "common.cuh"
#include "step_counter.cuh"

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

// One thread per token: psi[t*Y + y] = exp(e_t[y] - m_t), shift[t] = m_t, gold_u[t] = e_t[labels[t]],
// gold_b[t] = sum over the token's bigram ids f of B[f][labels[t-1], labels[t]] (t > 0; the
// recursion drops it at a sequence's first token), and repeat[t] = 1 when token t's bigram id
// list equals token t-1's (then M_t = M_{t-1}, bit for bit, and the recursion keeps it).
// Per-thread work: the token's id lists.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_emissions(const double* __restrict__ unigram, const double* __restrict__ bigram,
              const i64* __restrict__ u_offsets, const i64* __restrict__ u_ids, const i64* __restrict__ b_offsets,
              const i64* __restrict__ b_ids, const int* __restrict__ labels, int has_labels, i64 n_tokens,
              i64 n_labels, double* __restrict__ psi, double* __restrict__ shift, double* __restrict__ gold_u,
              double* __restrict__ gold_b, u8* __restrict__ repeat) {
    const i64 t = global_thread_index();
    if (t >= n_tokens) return;
    const i64 first = u_offsets[t], last = u_offsets[t + 1];
    double* row = psi + t * n_labels;
    double m = CRF_NEG_INF;
    for (i64 y = 0; y < n_labels; ++y) {  // label outer: each label's sum in id order, as the CPU's
        double e = 0.0;
        for (i64 k = first; k < last; ++k) e += unigram[u_ids[k] * n_labels + y];
        row[y] = e;
        m = fmax(m, e);
    }
    for (i64 y = 0; y < n_labels; ++y) row[y] = exp(row[y] - m);
    shift[t] = m;
    double gu = 0.0, gb = 0.0;
    if (has_labels) {
        const i64 label = labels[t];
        for (i64 k = first; k < last; ++k) gu += unigram[u_ids[k] * n_labels + label];
        if (t > 0) {
            const i64 pair = (i64)labels[t - 1] * n_labels + label;
            for (i64 k = b_offsets[t]; k < b_offsets[t + 1]; ++k) gb += bigram[b_ids[k] * n_labels * n_labels + pair];
        }
    }
    gold_u[t] = gu;
    gold_b[t] = gb;
    repeat[t] = t > 0 && same_bigrams(b_offsets, b_ids, t, t - 1);
}

// Lane y's column M_t[:, y] and row M_t[y, :], M_t = prod over token t's bigram ids of exp(B)
// (each factor multiplied in id order, from 1, as the CPU's).
template <int Y>
__device__ __forceinline__ void factors_of(const double* exp_bigram, const i64* b_offsets, const i64* b_ids, i64 t,
                                           int y, double* col, double* row) {
#pragma unroll
    for (int k = 0; k < Y; ++k) col[k] = row[k] = 1.0;
    for (i64 j = b_offsets[t]; j < b_offsets[t + 1]; ++j) {
        const double* f = exp_bigram + b_ids[j] * (Y * Y);
#pragma unroll
        for (int k = 0; k < Y; ++k) {
            col[k] *= f[k * Y + y];
            row[k] *= f[y * Y + k];
        }
    }
}

// The recursion of sequence order[i] on the i-th group of G lanes (G = Y rounded up to a power
// of two), lane y holding alpha_t[y], beta_t[y] and lane y's column and row of M_t in registers
// (2Y values); the other labels' values come by shuffles within the group, in label order, so
// every sum is the CPU's. psi (in omega), shift (in scale) and repeat from crf_emissions.
// Per-lane work: two walks of the sequence, each step one value read and one or two written.
template <int Y, int G>
__device__ __forceinline__ void forward_backward_group(const double* exp_bigram, const i64* seq_offsets,
                                                       const i64* order, i64 n_seqs, const i64* b_offsets,
                                                       const i64* b_ids, const u8* repeat, const double* gold_u,
                                                       const double* gold_b, double* alpha, double* omega,
                                                       double* marginals, double* scale, double* log_z,
                                                       double* gold) {
    const i64 i = global_thread_index() / G;
    if (i >= n_seqs) return;  // whole groups leave together
    const int y = threadIdx.x & (G - 1);
    const unsigned mask = G == 32 ? 0xffffffffu : ((1u << G) - 1u) << ((threadIdx.x & 31) & ~(G - 1));
    const bool mine = y < Y;  // lanes past the last label (Y not a power of two) only take part in shuffles
    const i64 s = order[i], start = seq_offsets[s];
    const int n = (int)(seq_offsets[s + 1] - start);  // a sequence's tokens: under 2^31
    double *al = alpha + start * Y, *om = omega + start * Y, *sc = scale + start;  // the sequence's rows
    double col[Y], row[Y];
    double prev = 0.0, total = 0.0, score = 0.0;
    for (int t = 0; t < n; ++t) {
        GT_STEP();
        if (mine && t > 0 && (t == 1 || !repeat[start + t]))
            factors_of<Y>(exp_bigram, b_offsets, b_ids, start + t, y, col, row);
        double v = mine ? om[t * Y + y] : 0.0;
        const double shift = sc[t];  // m_t, read by every lane before lane 0 replaces it
        if (t > 0) {
            double acc = 0.0;
#pragma unroll
            for (int k = 0; k < Y; ++k) acc += __shfl_sync(mask, prev, k, G) * col[k];
            v *= acc;
        }
        double norm = 0.0;
#pragma unroll
        for (int k = 0; k < Y; ++k) norm += __shfl_sync(mask, v, k, G);
        prev = v / norm;
        if (mine) al[t * Y + y] = prev;
        total += log(norm) + shift;
        if (y == 0) sc[t] = norm;
        score += t > 0 ? gold_u[start + t] + gold_b[start + t] : gold_u[start + t];
    }
    if (y == 0) {
        log_z[s] = total;
        gold[s] = score;
    }
    __syncwarp(mask);  // lane 0's normalisers are read by the whole group next
    double* mg = marginals + start * Y;
    double next = 0.0;  // omega_{t+1}[y]; M holds M_{t+1} (the forward pass ended with M_{n-1})
    for (int t = n - 1; t >= 0; --t) {
        GT_STEP();
        double beta = 1.0;
        if (t < n - 1) {
            if (mine && t < n - 2 && !repeat[start + t + 2])
                factors_of<Y>(exp_bigram, b_offsets, b_ids, start + t + 1, y, col, row);
            beta = 0.0;
#pragma unroll
            for (int k = 0; k < Y; ++k) beta += row[k] * __shfl_sync(mask, next, k, G);
        }
        if (mine) {
            mg[t * Y + y] = al[t * Y + y] * beta;
            next = om[t * Y + y] * beta / sc[t];
            om[t * Y + y] = next;
        }
    }
}

// 4 blocks of 256 threads an SM (50% occupancy on sm_90): at most 64 registers a thread, which
// holds 2Y values without spilling up to Y = 6 (more labels take the warp kernel below).
extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
crf_forward_backward_y1(const double* __restrict__ exp_bigram, const i64* __restrict__ seq_offsets,
                        const i64* __restrict__ order, i64 n_seqs, const i64* __restrict__ b_offsets,
                        const i64* __restrict__ b_ids, const u8* __restrict__ repeat,
                        const double* __restrict__ gold_u, const double* __restrict__ gold_b, double* alpha,
                        double* omega, double* __restrict__ marginals, double* scale, double* __restrict__ log_z,
                        double* __restrict__ gold) {
    forward_backward_group<1, 1>(exp_bigram, seq_offsets, order, n_seqs, b_offsets, b_ids, repeat, gold_u, gold_b,
                                alpha, omega, marginals, scale, log_z, gold);
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
crf_forward_backward_y2(const double* __restrict__ exp_bigram, const i64* __restrict__ seq_offsets,
                        const i64* __restrict__ order, i64 n_seqs, const i64* __restrict__ b_offsets,
                        const i64* __restrict__ b_ids, const u8* __restrict__ repeat,
                        const double* __restrict__ gold_u, const double* __restrict__ gold_b, double* alpha,
                        double* omega, double* __restrict__ marginals, double* scale, double* __restrict__ log_z,
                        double* __restrict__ gold) {
    forward_backward_group<2, 2>(exp_bigram, seq_offsets, order, n_seqs, b_offsets, b_ids, repeat, gold_u, gold_b,
                                alpha, omega, marginals, scale, log_z, gold);
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
crf_forward_backward_y3(const double* __restrict__ exp_bigram, const i64* __restrict__ seq_offsets,
                        const i64* __restrict__ order, i64 n_seqs, const i64* __restrict__ b_offsets,
                        const i64* __restrict__ b_ids, const u8* __restrict__ repeat,
                        const double* __restrict__ gold_u, const double* __restrict__ gold_b, double* alpha,
                        double* omega, double* __restrict__ marginals, double* scale, double* __restrict__ log_z,
                        double* __restrict__ gold) {
    forward_backward_group<3, 4>(exp_bigram, seq_offsets, order, n_seqs, b_offsets, b_ids, repeat, gold_u, gold_b,
                                alpha, omega, marginals, scale, log_z, gold);
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
crf_forward_backward_y4(const double* __restrict__ exp_bigram, const i64* __restrict__ seq_offsets,
                        const i64* __restrict__ order, i64 n_seqs, const i64* __restrict__ b_offsets,
                        const i64* __restrict__ b_ids, const u8* __restrict__ repeat,
                        const double* __restrict__ gold_u, const double* __restrict__ gold_b, double* alpha,
                        double* omega, double* __restrict__ marginals, double* scale, double* __restrict__ log_z,
                        double* __restrict__ gold) {
    forward_backward_group<4, 4>(exp_bigram, seq_offsets, order, n_seqs, b_offsets, b_ids, repeat, gold_u, gold_b,
                                alpha, omega, marginals, scale, log_z, gold);
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
crf_forward_backward_y5(const double* __restrict__ exp_bigram, const i64* __restrict__ seq_offsets,
                        const i64* __restrict__ order, i64 n_seqs, const i64* __restrict__ b_offsets,
                        const i64* __restrict__ b_ids, const u8* __restrict__ repeat,
                        const double* __restrict__ gold_u, const double* __restrict__ gold_b, double* alpha,
                        double* omega, double* __restrict__ marginals, double* scale, double* __restrict__ log_z,
                        double* __restrict__ gold) {
    forward_backward_group<5, 8>(exp_bigram, seq_offsets, order, n_seqs, b_offsets, b_ids, repeat, gold_u, gold_b,
                                alpha, omega, marginals, scale, log_z, gold);
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
crf_forward_backward_y6(const double* __restrict__ exp_bigram, const i64* __restrict__ seq_offsets,
                        const i64* __restrict__ order, i64 n_seqs, const i64* __restrict__ b_offsets,
                        const i64* __restrict__ b_ids, const u8* __restrict__ repeat,
                        const double* __restrict__ gold_u, const double* __restrict__ gold_b, double* alpha,
                        double* omega, double* __restrict__ marginals, double* scale, double* __restrict__ log_z,
                        double* __restrict__ gold) {
    forward_backward_group<6, 8>(exp_bigram, seq_offsets, order, n_seqs, b_offsets, b_ids, repeat, gold_u, gold_b,
                                alpha, omega, marginals, scale, log_z, gold);
}

// The recursion of sequence order[w] on warp w, for any number of labels (lanes across labels):
// psi (in omega) and shift (in scale) from crf_emissions. Per-lane work: two walks of the
// sequence, ceil(Y / 32) labels a step, Y multiply-adds each.
extern "C" __global__ void __launch_bounds__(GT_BLOCK, 4)
crf_forward_backward(const double* __restrict__ exp_bigram, const i64* __restrict__ seq_offsets,
                     const i64* __restrict__ order, i64 n_seqs, const i64* __restrict__ b_offsets,
                     const i64* __restrict__ b_ids, const double* __restrict__ gold_u,
                     const double* __restrict__ gold_b, i64 n_labels, double* alpha, double* omega,
                     double* __restrict__ marginals, double* scale, double* __restrict__ log_z,
                     double* __restrict__ gold, double* scratch, int use_shared) {
    const i64 w = (i64)blockIdx.x * CRF_WARPS + (threadIdx.x >> 5);
    const i64 lane = threadIdx.x & 31;
    if (w >= n_seqs) return;  // whole warps leave together
    const i64 s = order[w], yy = n_labels * n_labels, start = seq_offsets[s], end = seq_offsets[s + 1];
    double* m = warp_matrix(scratch, use_shared, yy);
    i64 cached = -1;
    double total = 0.0, score = 0.0;
    for (i64 t = start; t < end; ++t) {
        GT_STEP();
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
        score += t > start ? gold_u[t] + gold_b[t] : gold_u[t];
        __syncwarp();  // every lane has read m_t and scale[t]
        if (lane == 0) scale[t] = norm;
        __syncwarp();  // alpha[t] and scale[t] are read by every lane next
    }
    for (i64 t = end - 1; t >= start; --t) {
        GT_STEP();
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
