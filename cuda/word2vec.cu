// word2vec.cu -- CBOW and skip-gram, hierarchical softmax and negative sampling, Hogwild.
//
// One epoch: w2v_subsample draws every position's keep flag (one thread per position), the
// launch wrapper compacts the kept ids (the sentence offsets follow), then w2v_train runs a warp
// per unit of `unit_words` consecutive positions: units cut across sentences, so short sentences
// do not leave warps idle and a long one is shared out. Dimensions lie across the lanes (lane,
// lane + 32, ...); the context mean (neu1) and the error (neu1e) live in the warp's slice of
// shared memory; dot products are lane partial sums folded by xor shuffles, so every lane gets
// the same f and takes the same branch. syn0/syn1/syn1neg are updated in global memory without
// locks (Hogwild), as word2vec.c and gensim do across threads.
//
// Randomness is counter-based: draw(key, position, sub) with key from (seed, epoch), so what a
// position draws (keep, reduced window, its negatives) does not depend on the launch shape.
// Semantics are gensim 4.4's word2vec_inner: updates skipped when |f| >= 6 (HS and NS alike),
// exact sigmoid instead of the 1000-entry table, cbow_mean=1 averages the input and adds the
// whole error to each context word, cbow_mean=0 sums and divides the error by the context size.
// Same arithmetic order as cpu_fallback/word2vec.py except the dot products, whose sums the
// Numba twin vectorises its own way (the twins agree to float32 rounding).
#include "common.cuh"
#include "prng.cuh"

#define W2V_MAX_EXP 6.0f

extern __shared__ float w2v_shared[];

// sum over d of a[d] * b[d]: lane partials in d order, then the xor butterfly (all lanes agree)
__device__ __forceinline__ float w2v_dot(const float* a, const float* b, int dim, int lane) {
    float acc = 0.0f;
    for (int d = lane; d < dim; d += 32) acc += a[d] * b[d];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    return acc;
}

// The logistic function, exact (table == 0) or as gensim's EXP_TABLE gives it (table == 1): 1000
// entries over [-6, 6) indexed by (int)((f + 6) * 83), the 83 being gensim's integer division
// 1000 / 6 / 2, so the entry read is sigma(-6 + 0.012 * index) = sigma(0.996 f - 0.024) rounded
// down to the grid. The _rn intrinsics keep the index arithmetic from being fused into an FMA, so
// the GPU computes gensim's (and the Numba twin's) float32 values.
__device__ __forceinline__ float w2v_sigmoid(float f, int table) {
    if (!table) return 1.0f / (1.0f + expf(-f));
    const int index = (int)__fmul_rn(__fadd_rn(f, W2V_MAX_EXP), 83.0f);
    const float x = __fmul_rn(__fsub_rn(__fmul_rn((float)index / 1000.0f, 2.0f), 1.0f), W2V_MAX_EXP);
    const float e = (float)exp((double)x);
    return e / (e + 1.0f);
}

// First index whose cumulative weight is >= r (bisect_left).
__device__ __forceinline__ int w2v_lower_bound(const u32* cum, i64 n, u64 r) {
    i64 lo = 0, hi = n;
    while (lo < hi) {
        const i64 mid = lo + (hi - lo) / 2;
        if ((u64)cum[mid] < r) lo = mid + 1; else hi = mid;
    }
    return (int)lo;
}

// One output step: f = <in, out>, and unless |f| >= 6 neu1e += g * out, out += g * in.
__device__ __forceinline__ double w2v_step(const float* in, float* out, float* neu1e, int dim, int lane, float label,
                                           float alpha, int compute_loss, int table) {
    const float f = w2v_dot(in, out, dim, lane);
    if (f <= -W2V_MAX_EXP || f >= W2V_MAX_EXP) return 0.0;
    const float g = (label - w2v_sigmoid(f, table)) * alpha;
    for (int d = lane; d < dim; d += 32) neu1e[d] += g * out[d];
    for (int d = lane; d < dim; d += 32) out[d] += g * in[d];
    if (!compute_loss) return 0.0;
    return -log((double)w2v_sigmoid(label > 0.5f ? f : -f, table));
}

// Hierarchical softmax over `word`'s path, then `negative` samples; returns the loss.
__device__ __forceinline__ double w2v_outputs(const float* in, float* neu1e, int word, float* syn1, float* syn1neg,
                                              const u8* codes, const int* points, const i64* code_offsets,
                                              const u32* cum_table, i64 vocab, int hs, int negative, int dim,
                                              int lane, float alpha, u64 key, i64 i, u64 pair, int compute_loss,
                                              int table) {
    double loss = 0.0;
    if (hs) {
        for (i64 k = code_offsets[word]; k < code_offsets[word + 1]; ++k)
            loss += w2v_step(in, syn1 + (i64)points[k] * dim, neu1e, dim, lane, 1.0f - (float)codes[k], alpha,
                             compute_loss, table);
    }
    for (int d = 0; d <= negative && negative > 0; ++d) {
        int target = word;
        if (d > 0) {
            const u64 r = (gt_draw(key, (u64)i, 2 + pair * (u64)(negative + 1) + (u64)d) >> 16) % cum_table[vocab - 1];
            target = w2v_lower_bound(cum_table, vocab, r);
            if (target == word) continue;
        }
        loss += w2v_step(in, syn1neg + (i64)target * dim, neu1e, dim, lane, d == 0 ? 1.0f : 0.0f, alpha, compute_loss,
                         table);
    }
    return loss;
}

// keep[i] = 1 when position i survives subsampling: gensim's `sample_int >= random32`.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
w2v_subsample(const int* __restrict__ ids, i64 n, const u32* __restrict__ sample_int, u64 key, u8* __restrict__ keep) {
    const i64 i = global_thread_index();
    if (i >= n) return;
    keep[i] = (u64)sample_int[ids[i]] >= (gt_draw(key, (u64)i, 0) >> 32) ? 1 : 0;
}

// Trains units [unit_begin, unit_end) of one epoch's kept ids; loss[u - unit_begin] gets each
// unit's loss. alpha falls linearly from alpha_start at position 0 to alpha_end at n_words.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
w2v_train(const int* __restrict__ ids, const i64* __restrict__ row_offsets, i64 n_rows, i64 n_words,
          i64 unit_words, i64 unit_begin, i64 unit_end, float* syn0, float* syn1, float* syn1neg,
          const u8* __restrict__ codes, const int* __restrict__ points, const i64* __restrict__ code_offsets,
          const u32* __restrict__ cum_table, i64 vocab, int sg, int hs, int negative, int window, int cbow_mean,
          int dim, double alpha_start, double alpha_end, u64 key, int compute_loss, int sigmoid_table,
          double* __restrict__ loss) {
    const i64 u = unit_begin + (i64)blockIdx.x * GT_WARPS + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (u >= unit_end) return;  // whole warps leave together
    float* neu1 = w2v_shared + (threadIdx.x >> 5) * 2 * dim;
    float* neu1e = neu1 + dim;
    const i64 first = u * unit_words, last = first + unit_words < n_words ? first + unit_words : n_words;
    i64 row = string_of_byte(row_offsets, n_rows, first);
    double total = 0.0;
    for (i64 i = first; i < last; ++i) {
        while (row_offsets[row + 1] <= i) ++row;
        const i64 start = row_offsets[row], end = row_offsets[row + 1];
        const int word = ids[i];
        const float alpha = (float)(alpha_start + (alpha_end - alpha_start) * ((double)i / (double)n_words));
        const int b = (int)((gt_draw(key, (u64)i, 1) >> 32) % (u64)window);
        const i64 lo = i - window + b > start ? i - window + b : start;
        const i64 hi = i + window + 1 - b < end ? i + window + 1 - b : end;
        if (sg) {
            for (i64 j = lo; j < hi; ++j) {
                if (j == i) continue;
                float* in = syn0 + (i64)ids[j] * dim;
                for (int d = lane; d < dim; d += 32) neu1e[d] = 0.0f;
                total += w2v_outputs(in, neu1e, word, syn1, syn1neg, codes, points, code_offsets, cum_table, vocab,
                                     hs, negative, dim, lane, alpha, key, i, (u64)(j - i + window), compute_loss,
                                     sigmoid_table);
                for (int d = lane; d < dim; d += 32) in[d] += neu1e[d];
            }
            continue;
        }
        for (int d = lane; d < dim; d += 32) neu1[d] = 0.0f;
        int count = 0;
        for (i64 j = lo; j < hi; ++j) {
            if (j == i) continue;
            const float* in = syn0 + (i64)ids[j] * dim;
            for (int d = lane; d < dim; d += 32) neu1[d] += in[d];
            ++count;
        }
        if (count == 0) continue;
        const float inv_count = 1.0f / (float)count;
        if (cbow_mean)
            for (int d = lane; d < dim; d += 32) neu1[d] *= inv_count;
        for (int d = lane; d < dim; d += 32) neu1e[d] = 0.0f;
        total += w2v_outputs(neu1, neu1e, word, syn1, syn1neg, codes, points, code_offsets, cum_table, vocab, hs,
                             negative, dim, lane, alpha, key, i, 0, compute_loss, sigmoid_table);
        if (!cbow_mean)
            for (int d = lane; d < dim; d += 32) neu1e[d] *= inv_count;
        for (i64 j = lo; j < hi; ++j) {
            if (j == i) continue;
            float* in = syn0 + (i64)ids[j] * dim;
            for (int d = lane; d < dim; d += 32) in[d] += neu1e[d];
        }
    }
    if (lane == 0) loss[u - unit_begin] = total;
}
