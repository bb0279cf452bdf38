// lda.cu -- collapsed Gibbs sampling for LDA: initial topics, exact count rebuilds, dense samplers
// and a Metropolis-Hastings sampler for large K.
//
// Data (see gpu_text/cuda_ops/lda.py): tokens flat and document-major, words[N] (word id),
// doc_offsets[D+1], topics z[N]; counts int32 n_dk[D*K], n_wk[V*K], n_k[K]. Every draw comes from
// the counter-based SplitMix64 stream gt_draw(key, token, 0) of prng.cuh (shared with word2vec.cu),
// so what a token draws does not depend on the launch shape: every kernel below gives the same result for any grid size (grid-stride loops).
//
// The canonical draw rule (shared with cpu_fallback/lda.py and tests/reference/lda.py): with the
// token's own assignment t removed, p_k = (n_dk[d,k] + alpha_k) * (n_wk[w,k] + beta) /
// (n_k[k] + vbeta) in float64 in that order, cumulative sum left to right over k = 0..K-1,
// u = uniform * total, the topic is the first k with cum_k > u (K-1 if rounding leaves none).
// vbeta = V * beta is computed on the host and passed in: in the kernel, `n_k + V * beta` would
// be the one place where a GPU compiler may contract a multiply-add into an FMA (NVRTC fuses by
// default); with the product done on the host no product here feeds an addition (checked in the
// PTX for sm_90: no fma.f64 in any kernel of this file), and double division is IEEE-rounded on
// the GPU, so the GPU, the emulator (g++ -O2, x86-64 SSE2, no FMA) and Numba compute the same bits.
// Keep it so: a new a * b + c in a rule needs __dmul_rn / __dadd_rn (and the emulator header then
// needs them too).
//
// Schedules (the `schedule` argument of gpu_text.cuda_ops.lda.sample_dense):
//   0 sequential  lda_sample_sequential: ONE thread walks the tokens in index order and updates
//                 the counts at once (plain collapsed Gibbs, the reference's algorithm). Test
//                 mode only: its loop is the whole corpus, as intended.
//   1 jacobi      lda_sample_jacobi: a thread per token samples against the counts as they were
//                 at the start of the pass minus its own assignment, with the canonical
//                 left-to-right rule: bit-identical to the Numba and reference jacobi samplers.
//                 Per token: two passes over K topics (total, then the search up to the chosen
//                 topic: ~1.5 K loads of n_dk, n_wk, n_k, alpha and ~1.5 K divisions). A warp's
//                 32 tokens mostly share a document row (broadcast) and each lane streams its own
//                 word row (one 128-byte line per 32 topics). The right kernel for small K (up to
//                 ~64, where a warp per token would leave lanes idle).
//   2 jacobi, warp-parallel (lda_sample_warp, choice (a) of issue 13's design note): a warp per
//                 token, lane l holds the contiguous topic strip [l*S, l*S + S), S = ceil(K/32);
//                 strip sums left to right in k order, a warp-level exclusive scan of the strip
//                 sums by shuffles, the lane whose [exclusive, inclusive) range holds u walks its
//                 strip. Same conditional distribution and the same k order, but the sums are
//                 reassociated (strip partials, then the scan), so it differs from the canonical
//                 rule only where u lies within rounding distance of a cumulative boundary: it
//                 is tested by agreement with schedule 1 on almost every token, the closed-form
//                 distribution and the count invariants, not bit for bit. Per token: K/32 + K/32
//                 (the chosen lane's walk) p evaluations per lane, 5 shuffle steps.
// After a jacobi pass lda_apply_changes moves each changed token's counts (integer atomics:
// exact and order-free, so deterministic); lda_count rebuilds all counts from scratch into
// zeroed arrays. Topic totals n_k are aggregated per block in shared memory when K fits
// (block_nk = 1), so the K hot counters see one atomic per block and topic, not one per token.
//
// Cost, and why large K needs lda_sample_mh (issue 13's K = 1024 target: 1G tokens/s on an H200;
// estimates from the code, not measured on a device):
// a dense sampler is O(K) per token. At K = 1024, schedule 2 evaluates ~1100 p per token (3 int
// loads, 1 alpha load, 3 int-to-double conversions, 3 adds, 1 mul, 1 double division: ~15 FP64
// pipe slots), i.e. ~1.6e13 FP64 slots/s at 1G tokens/s, about the H200's whole FP64 rate (~1.7e13
// DFMA/s), and 4 KB of n_wk row per token, mostly from DRAM once V * K * 4 bytes exceeds the L2:
// a few hundred M tokens/s at best. lda_sample_mh (below) is O(1) per token in K: n_steps
// Metropolis-Hastings steps with WarpLDA's doc and word proposals, drawn by picking a random
// token of the same document or word (no alias tables to rebuild), about 8 loads and one division
// per step. It needs the word-major token index (word_offsets, word_tokens), built once per fit.
#include "common.cuh"
#include "prng.cuh"

extern __shared__ int lda_shared[];

// Uniform in [0, 1) with 53 random bits: exact (the scale is a power of two).
__device__ __forceinline__ double lda_uniform(u64 key, i64 token) {
    return (double)(gt_draw(key, (u64)token, 0) >> 11) * 0x1.0p-53;
}

// Document of token `pos`: the last d in [lo, hi] with offsets[d] <= pos (skips empty documents).
__device__ __forceinline__ i64 lda_doc_in(const i64* offsets, i64 lo, i64 hi, i64 pos) {
    ++hi;  // answer in [lo, hi)
    while (hi - lo > 1) {
        const i64 mid = lo + (hi - lo) / 2;
        if (offsets[mid] <= pos) lo = mid; else hi = mid;
    }
    return lo;
}

// Document of this thread's token in the tile [base, base + blockDim.x): one full binary search
// per end of the tile (two threads), then each thread searches only the tile's few documents.
// Every thread of the block must call it (it synchronises).
__device__ __forceinline__ i64 lda_tile_doc(const i64* offsets, i64 n_docs, i64 n, i64 base, i64 i, i64* bounds) {
    const i64 last = base + (i64)blockDim.x - 1 < n - 1 ? base + (i64)blockDim.x - 1 : n - 1;
    if (threadIdx.x == 0) bounds[0] = string_of_byte(offsets, n_docs, base);
    if (threadIdx.x == blockDim.x - 1) bounds[1] = string_of_byte(offsets, n_docs, last);
    __syncthreads();
    const i64 d = i < n ? lda_doc_in(offsets, bounds[0], bounds[1], i) : 0;
    __syncthreads();  // bounds is rewritten by the next tile
    return d;
}

// p_k with counts already excluding the token (float64, the canonical expression order).
__device__ __forceinline__ double lda_p(int ndk, int nwk, int nk, double alpha_k, double beta, double vbeta) {
    return ((double)ndk + alpha_k) * ((double)nwk + beta) / ((double)nk + vbeta);
}

// The canonical rule over rows that still include the token's own topic t (removed on the fly).
__device__ __forceinline__ int lda_draw_topic(const int* ndk, const int* nwk, const int* nk, const double* alpha,
                                              int n_topics, int t, double beta, double vbeta, double uniform) {
    double total = 0.0;
    for (int k = 0; k < n_topics; ++k) {
        const int own = k == t;
        total += lda_p(ndk[k] - own, nwk[k] - own, nk[k] - own, alpha[k], beta, vbeta);
    }
    const double u = uniform * total;
    double cum = 0.0;
    for (int k = 0; k < n_topics; ++k) {  // the same sums again, so the same bits
        const int own = k == t;
        cum += lda_p(ndk[k] - own, nwk[k] - own, nk[k] - own, alpha[k], beta, vbeta);
        if (cum > u) return k;
    }
    return n_topics - 1;
}

// Topics of the initial state: draw(init_key, i, 0) % K.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_init_topics(i64 n, int n_topics, u64 key, int* __restrict__ topics) {
    for (i64 i = global_thread_index(); i < n; i += (i64)gridDim.x * blockDim.x)
        topics[i] = (int)(gt_draw(key, (u64)i, 0) % (u64)n_topics);
}

// Adds (sign = +1) or removes (-1) token i's topic k to/from the counts; n_k into the block's
// shared copy when block_nk.
__device__ __forceinline__ void lda_add(int* n_dk, int* n_wk, int* n_k, int* block_nk, i64 d, int w, int k,
                                        int n_topics, int sign) {
    atomicAdd(n_dk + d * n_topics + k, sign);
    atomicAdd(n_wk + (i64)w * n_topics + k, sign);
    atomicAdd(block_nk ? block_nk + k : n_k + k, sign);
}

__device__ __forceinline__ void lda_block_nk_begin(int* block_nk, int n_topics) {
    if (!block_nk) return;
    for (int k = threadIdx.x; k < n_topics; k += blockDim.x) block_nk[k] = 0;
    __syncthreads();
}

__device__ __forceinline__ void lda_block_nk_end(int* block_nk, int* n_k, int n_topics) {
    if (!block_nk) return;
    __syncthreads();
    for (int k = threadIdx.x; k < n_topics; k += blockDim.x)
        if (block_nk[k]) atomicAdd(n_k + k, block_nk[k]);
}

// Counts of every token added into zeroed n_dk, n_wk, n_k (an exact rebuild: integer atomics).
// block_nk = 1: the launch gives K ints of dynamic shared memory for the block's topic totals.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_count(const int* __restrict__ words, const i64* __restrict__ doc_offsets, i64 n_docs,
          const int* __restrict__ topics, i64 n, int n_topics, int* n_dk, int* n_wk, int* n_k, int block_nk) {
    __shared__ i64 bounds[2];
    int* nk_shared = block_nk ? lda_shared : nullptr;
    lda_block_nk_begin(nk_shared, n_topics);
    for (i64 base = (i64)blockIdx.x * blockDim.x; base < n; base += (i64)gridDim.x * blockDim.x) {
        const i64 i = base + threadIdx.x;
        const i64 d = lda_tile_doc(doc_offsets, n_docs, n, base, i, bounds);
        if (i < n) lda_add(n_dk, n_wk, n_k, nk_shared, d, words[i], topics[i], n_topics, 1);
    }
    lda_block_nk_end(nk_shared, n_k, n_topics);
}

// After a jacobi pass: every token whose topic changed (new_topics[i] != topics[i]) moves its
// counts from the old topic to the new one, and topics takes the new topics.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_apply_changes(const int* __restrict__ words, const i64* __restrict__ doc_offsets, i64 n_docs, int* topics,
                  const int* __restrict__ new_topics, i64 n, int n_topics, int* n_dk, int* n_wk, int* n_k,
                  int block_nk) {
    __shared__ i64 bounds[2];
    int* nk_shared = block_nk ? lda_shared : nullptr;
    lda_block_nk_begin(nk_shared, n_topics);
    for (i64 base = (i64)blockIdx.x * blockDim.x; base < n; base += (i64)gridDim.x * blockDim.x) {
        const i64 i = base + threadIdx.x;
        const i64 d = lda_tile_doc(doc_offsets, n_docs, n, base, i, bounds);
        if (i < n) {
            const int old = topics[i], now = new_topics[i];
            if (old != now) {
                const int w = words[i];
                lda_add(n_dk, n_wk, n_k, nk_shared, d, w, old, n_topics, -1);
                lda_add(n_dk, n_wk, n_k, nk_shared, d, w, now, n_topics, 1);
                topics[i] = now;
            }
        }
    }
    lda_block_nk_end(nk_shared, n_k, n_topics);
}

// Schedule 0: one thread, tokens in index order, counts updated immediately. Launch one block;
// only its thread 0 works.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_sample_sequential(const int* __restrict__ words, const i64* __restrict__ doc_offsets, i64 n_docs, int* topics,
                      int* n_dk, int* n_wk, int* n_k, const double* __restrict__ alpha, int n_topics, double beta,
                      double vbeta, u64 key) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (i64 d = 0; d < n_docs; ++d) {
        int* ndk = n_dk + d * n_topics;
        for (i64 i = doc_offsets[d]; i < doc_offsets[d + 1]; ++i) {
            const int w = words[i], t = topics[i];
            int* nwk = n_wk + (i64)w * n_topics;
            --ndk[t]; --nwk[t]; --n_k[t];
            const int k = lda_draw_topic(ndk, nwk, n_k, alpha, n_topics, -1, beta, vbeta, lda_uniform(key, i));
            ++ndk[k]; ++nwk[k]; ++n_k[k];
            topics[i] = k;
        }
    }
}

// Schedule 1: a thread per token against the start-of-pass counts; new topics to new_topics.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_sample_jacobi(const int* __restrict__ words, const i64* __restrict__ doc_offsets, i64 n_docs,
                  const int* __restrict__ topics, int* __restrict__ new_topics, i64 n,
                  const int* __restrict__ n_dk, const int* __restrict__ n_wk, const int* __restrict__ n_k,
                  const double* __restrict__ alpha, int n_topics, double beta, double vbeta, u64 key) {
    __shared__ i64 bounds[2];
    for (i64 base = (i64)blockIdx.x * blockDim.x; base < n; base += (i64)gridDim.x * blockDim.x) {
        const i64 i = base + threadIdx.x;
        const i64 d = lda_tile_doc(doc_offsets, n_docs, n, base, i, bounds);
        if (i >= n) continue;
        new_topics[i] = lda_draw_topic(n_dk + d * n_topics, n_wk + (i64)words[i] * n_topics, n_k, alpha, n_topics,
                                       topics[i], beta, vbeta, lda_uniform(key, i));
    }
}

// Schedule 2: a warp per token (warp-parallel jacobi); each warp takes `unit` consecutive tokens.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_sample_warp(const int* __restrict__ words, const i64* __restrict__ doc_offsets, i64 n_docs,
                const int* __restrict__ topics, int* __restrict__ new_topics, i64 n, i64 unit,
                const int* __restrict__ n_dk, const int* __restrict__ n_wk, const int* __restrict__ n_k,
                const double* __restrict__ alpha, int n_topics, double beta, double vbeta, u64 key) {
    const int lane = threadIdx.x & 31;
    const i64 n_units = (n + unit - 1) / unit;
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    const int strip = (n_topics + 31) / 32;
    const int k_begin = lane * strip < n_topics ? lane * strip : n_topics;
    const int k_end = k_begin + strip < n_topics ? k_begin + strip : n_topics;
    for (i64 u = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); u < n_units; u += warps) {
        const i64 first = u * unit, last = first + unit < n ? first + unit : n;
        i64 d = string_of_byte(doc_offsets, n_docs, first);  // once per unit, then it only advances
        for (i64 i = first; i < last; ++i) {
            while (doc_offsets[d + 1] <= i) ++d;
            const int t = topics[i];
            const int* ndk = n_dk + d * n_topics;
            const int* nwk = n_wk + (i64)words[i] * n_topics;
            double sum = 0.0;  // this lane's strip, left to right
            for (int k = k_begin; k < k_end; ++k) {
                const int own = k == t;
                sum += lda_p(ndk[k] - own, nwk[k] - own, n_k[k] - own, alpha[k], beta, vbeta);
            }
            double inclusive = sum;  // warp inclusive scan of the strip sums (Hillis-Steele)
            for (int delta = 1; delta < 32; delta <<= 1) {
                const double up = __shfl_up_sync(0xffffffffu, inclusive, delta);
                if (lane >= delta) inclusive += up;
            }
            const double total = __shfl_sync(0xffffffffu, inclusive, 31);
            const double u_draw = lda_uniform(key, i) * total;
            const unsigned above = __ballot_sync(0xffffffffu, inclusive > u_draw && k_end > k_begin);
            // The lane holding u; none (u rounded up to the total): the last topic, as the rule says.
            const int owner = above ? __ffs((int)above) - 1 : -1;
            int chosen = n_topics - 1;
            double cum = __shfl_up_sync(0xffffffffu, inclusive, 1);  // this lane's exclusive prefix
            if (lane == 0) cum = 0.0;
            if (lane == owner) {
                chosen = k_end - 1;  // rounding between the scan and the walk: the strip's last topic
                for (int k = k_begin; k < k_end; ++k) {
                    const int own = k == t;
                    cum += lda_p(ndk[k] - own, nwk[k] - own, n_k[k] - own, alpha[k], beta, vbeta);
                    if (cum > u_draw) { chosen = k; break; }
                }
            }
            if (owner >= 0) chosen = __shfl_sync(0xffffffffu, chosen, owner);
            if (lane == 0) new_topics[i] = chosen;
        }
    }
}

// ---------------------------------------------------------------- large K: Metropolis-Hastings
// lda_sample_mh: a jacobi pass whose per-token cost does not grow with K (WarpLDA's proposals,
// made exact with respect to the canonical conditional). Target of token i (doc d, word w, start
// topic t): pi(k) = lda_p with t removed, the dense sampler's conditional. The chain starts at t
// and runs n_steps Metropolis-Hastings steps, alternating two independence proposals that cost
// O(1) to draw, with no per-iteration tables:
//   even steps, doc proposal  q_d(k) = (n_dk[d,k] + alpha_k) / (L_d + alpha_sum): with x = U1 *
//     (L_d + alpha_sum), x < L_d takes the topic of token doc_offsets[d] + floor(x) (the start-of-
//     pass topics, which n_dk counts), else k from alpha's cumulative by binary search on U3 *
//     alpha_sum;
//   odd steps, word proposal  q_w(k) = (n_wk[w,k] + beta) / (n_w + K beta): x = U1 * (n_w + K beta),
//     x < n_w takes the topic of the word's token word_tokens[word_offsets[w] + floor(x)], else
//     k = floor(U3 * K);
// accept k' (!= current s) when U2 < pi(k') q(s) / (pi(s) q(k')). U1, U2, U3 = uniforms of
// draw(key, i, 1 + 3 step + {0, 1, 2}). Every step keeps pi invariant, so the chain's law after
// n_steps is e_t (P_d P_w ...) exactly (the tests compute it in closed form) and tends to pi.
// Per step: 3 hashes, about 8 loads (two token topics or one word-token index and topic, three
// counts of the proposed topic, alpha), one double division; the current topic's terms stay in
// registers. K * beta is computed on the host (no multiply-add shape for an FMA to fuse).
// alpha_cum (float64[K], alpha's running sum left to right) is made by lda_alpha_cum.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_alpha_cum(const double* __restrict__ alpha, int n_topics, double* __restrict__ alpha_cum) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;  // K additions in order, once per pass
    double sum = 0.0;
    for (int k = 0; k < n_topics; ++k) alpha_cum[k] = sum += alpha[k];
}

// First k with cum[k] > y (K - 1 if none).
__device__ __forceinline__ int lda_search(const double* cum, int n, double y) {
    int lo = 0, hi = n - 1;  // answer in [lo, hi]
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (cum[mid] > y) hi = mid; else lo = mid + 1;
    }
    return lo;
}

__device__ __forceinline__ double lda_u53(u64 bits) { return (double)(bits >> 11) * 0x1.0p-53; }

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_sample_mh(const int* __restrict__ words, const i64* __restrict__ doc_offsets, i64 n_docs,
              const i64* __restrict__ word_offsets, const int* __restrict__ word_tokens,
              const int* __restrict__ topics, int* __restrict__ new_topics, i64 n,
              const int* __restrict__ n_dk, const int* __restrict__ n_wk, const int* __restrict__ n_k,
              const double* __restrict__ alpha, const double* __restrict__ alpha_cum, int n_topics, double beta,
              double vbeta, double kbeta, u64 key, int n_steps) {
    __shared__ i64 bounds[2];
    const double alpha_sum = alpha_cum[n_topics - 1];
    for (i64 base = (i64)blockIdx.x * blockDim.x; base < n; base += (i64)gridDim.x * blockDim.x) {
        const i64 i = base + threadIdx.x;
        const i64 d = lda_tile_doc(doc_offsets, n_docs, n, base, i, bounds);
        if (i >= n) continue;
        const int w = words[i], t = topics[i];
        const int* ndk = n_dk + d * n_topics;
        const int* nwk = n_wk + (i64)w * n_topics;
        const i64 doc_start = doc_offsets[d], word_start = word_offsets[w];
        const double doc_mass = (double)(doc_offsets[d + 1] - doc_start) + alpha_sum;
        const double word_len = (double)(word_offsets[w + 1] - word_start), word_mass = word_len + kbeta;
        int s = t;
        double pi_s = lda_p(ndk[t] - 1, nwk[t] - 1, n_k[t] - 1, alpha[t], beta, vbeta);
        for (int step = 0; step < n_steps; ++step) {
            const u64 sub = 1 + 3 * (u64)step;
            const double u1 = lda_u53(gt_draw(key, (u64)i, sub));
            const int doc_step = (step & 1) == 0;
            int k;
            if (doc_step) {
                const double x = u1 * doc_mass;
                k = x < (double)(doc_offsets[d + 1] - doc_start)
                        ? topics[doc_start + (i64)x]
                        : lda_search(alpha_cum, n_topics, lda_u53(gt_draw(key, (u64)i, sub + 2)) * alpha_sum);
            } else {
                const double x = u1 * word_mass;
                if (x < word_len) {
                    k = topics[word_tokens[word_start + (i64)x]];
                } else {
                    k = (int)(lda_u53(gt_draw(key, (u64)i, sub + 2)) * (double)n_topics);
                    k = k < n_topics ? k : n_topics - 1;
                }
            }
            if (k == s) continue;
            const int own = k == t;
            const double pi_k = lda_p(ndk[k] - own, nwk[k] - own, n_k[k] - own, alpha[k], beta, vbeta);
            const double q_s = doc_step ? (double)ndk[s] + alpha[s] : (double)nwk[s] + beta;
            const double q_k = doc_step ? (double)ndk[k] + alpha[k] : (double)nwk[k] + beta;
            const double ratio = (pi_k * q_s) / (pi_s * q_k);
            if (lda_u53(gt_draw(key, (u64)i, sub + 1)) < ratio) {
                s = k;
                pi_s = pi_k;
            }
        }
        new_topics[i] = s;
    }
}

// ---------------------------------------------------------------- fold-in (transform)
// lda_fold_in: one fold-in sweep for new documents against a trained model. n_wk and n_k are
// the model's (they do not hold these tokens) and stay fixed; each document is plain sequential
// Gibbs on its own n_dk row (remove the token, canonical draw, add), documents independent, so the
// result is the same for any grid and equal to cpu_fallback/lda.py::fold_in bit for bit. A warp
// per document: the lanes evaluate the K p's of a token in parallel (lane l: topics l, l + 32,
// ...) into the warp's scratch row; lane 0 then sums them left to right (the canonical order),
// draws and updates the row. Per token: K/32 p evaluations per lane, then K (total) + up to K
// (search) additions on lane 0, 3 __syncwarp. The tokens of a document are inherently sequential
// here (the contract's fold-in is sequential Gibbs per document): a very long document is one
// warp's serial loop.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lda_fold_in(const int* __restrict__ words, const i64* __restrict__ doc_offsets, i64 n_docs, int* topics, int* n_dk,
            const int* __restrict__ n_wk, const int* __restrict__ n_k, const double* __restrict__ alpha, int n_topics,
            double beta, double vbeta, u64 key, double* scratch) {
    const int lane = threadIdx.x & 31;
    const i64 warp = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    double* p = scratch + warp * n_topics;
    for (i64 d = warp; d < n_docs; d += warps) {
        int* ndk = n_dk + d * n_topics;
        for (i64 i = doc_offsets[d]; i < doc_offsets[d + 1]; ++i) {
            const int* nwk = n_wk + (i64)words[i] * n_topics;
            if (lane == 0) --ndk[topics[i]];
            __syncwarp();
            for (int k = lane; k < n_topics; k += 32) p[k] = lda_p(ndk[k], nwk[k], n_k[k], alpha[k], beta, vbeta);
            __syncwarp();
            if (lane == 0) {
                double total = 0.0;
                for (int k = 0; k < n_topics; ++k) total += p[k];
                const double u = lda_uniform(key, i) * total;
                double cum = 0.0;
                int chosen = n_topics - 1;
                for (int k = 0; k < n_topics; ++k) {
                    cum += p[k];
                    if (cum > u) { chosen = k; break; }
                }
                topics[i] = chosen;
                ++ndk[chosen];
            }
            __syncwarp();
        }
    }
}
