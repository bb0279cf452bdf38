// crf_decode.cu -- exact n-best Viterbi (list Viterbi) of the linear-chain CRF.
//
// Each (token t, label y) keeps its k best partial paths, sorted, as cpu_fallback/crf_decode.py
// describes (same values, same order: higher value first, then the lower previous label, then
// the lower rank; final paths: higher score, lower last label, lower rank).
//
// One warp per sentence (8 per block). Per warp, in shared memory when it fits (else the warp's
// slice of global scratch): the previous and the current token's lists (Y*k scores each), the
// token's transition sums B_t (Y*Y, reloaded only when its bigram observations change) and its
// emissions (Y). Back pointers (token, label, rank) -> y' * k + r are global, for the backtrack.
//
// The k best of (t, y) are found by ranking rather than by a sequential merge: the lanes take
// the Y*Y*c candidates (y, y', r) in strides (c = entries per list, <= k); a candidate's rank is
// r plus, for every other list y'', the number of its entries that come first -- a prefix of the
// list, found by binary search, because each list is sorted and x -> x + B_t[y'', y] is monotone.
// A candidate ranked below min(k, Y*c) writes itself to that slot. Ranks are distinct (the order
// is strict), so there are no atomics and no barrier but the warp's.
// Work per lane and token: ceil(Y*Y*c / 32) candidates, each with Y-1 binary searches of at most
// log2(k)+1 steps -- for BMES (Y=4) and k=5, 3 candidates and about 27 comparisons. (The total
// grows as Y^3 k log k: right for tag sets of a few labels; tens of labels would want a merge per
// state instead.) The last token's Y*c entries are ranked the same way and each of the k chosen
// paths is backtracked by the lane that ranked it: the paths walk back in parallel, n steps each.
// So no thread runs a sequential merge (k dependent picks over Y heads per state: n*k*Y steps for
// one thread per state). For BMES and k=5 a lane's comparisons per token are of the same size (27
// vs 20), but over all 32 lanes instead of Y=4, with no dependence between a state's k picks.
#include "common.cuh"

extern __shared__ double decode_shared[];

__device__ __forceinline__ bool same_bigram_list(const i64* b_offsets, const i64* b_ids, i64 t, i64 u) {
    if (u < 0 || b_offsets[t + 1] - b_offsets[t] != b_offsets[u + 1] - b_offsets[u]) return false;
    for (i64 j = 0; j < b_offsets[t + 1] - b_offsets[t]; ++j)
        if (b_ids[b_offsets[t] + j] != b_ids[b_offsets[u] + j]) return false;
    return true;
}

__device__ __forceinline__ double emission_of(const double* unigram, const i64* u_offsets, const i64* u_ids, i64 t,
                                              i64 y, i64 n_labels) {
    double e = 0.0;
    for (i64 j = u_offsets[t]; j < u_offsets[t + 1]; ++j) e += unigram[u_ids[j] * n_labels + y];
    return e;
}

// How many of the `count` entries list[r] + add (sorted best first) come before a candidate of
// value v: those greater, and the equal ones when their label is lower (`wins_ties`).
__device__ __forceinline__ i64 ahead_in_list(const double* list, i64 count, double add, double v, bool wins_ties) {
    i64 lo = 0, hi = count;  // the first entry that does not come first is in [lo, hi]
    while (lo < hi) {
        const i64 mid = (lo + hi) >> 1;
        const double w = list[mid] + add;
        if (w > v || (wins_ties && w == v)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
crf_nbest_viterbi(const double* __restrict__ unigram, const double* __restrict__ bigram,
                  const i64* __restrict__ seq_offsets, i64 n_seqs, i64 n_tokens, const i64* __restrict__ u_offsets,
                  const i64* __restrict__ u_ids, const i64* __restrict__ b_offsets, const i64* __restrict__ b_ids,
                  i64 n_labels, i64 k, int* back, int* __restrict__ paths, double* __restrict__ scores,
                  int* __restrict__ counts, double* scratch, int use_shared) {
    const i64 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const i64 s = (i64)blockIdx.x * GT_WARPS + warp;
    if (s >= n_seqs) return;  // whole warps leave together
    const i64 start = seq_offsets[s], end = seq_offsets[s + 1];
    if (end == start) {  // one path, the empty one
        if (lane == 0) {
            counts[s] = 1;
            scores[s * k] = 0.0;
        }
        return;
    }
    const i64 yy = n_labels * n_labels, yk = n_labels * k, area = 2 * yk + yy + n_labels;
    double* base = use_shared ? decode_shared + warp * area : scratch + ((i64)blockIdx.x * GT_WARPS + warp) * area;
    double* previous = base;
    double* current = base + yk;
    double* trans = base + 2 * yk;
    double* emission = trans + yy;
    for (i64 y = lane; y < n_labels; y += 32)
        previous[y * k] = emission_of(unigram, u_offsets, u_ids, start, y, n_labels);
    __syncwarp();
    i64 kept = 1, cached = -1;  // entries per list at the previous token: min(k, Y^(t - start))
    for (i64 t = start + 1; t < end; ++t) {
        // the previous token's ranking (which read trans, emission, previous) ended in a __syncwarp
        if (!same_bigram_list(b_offsets, b_ids, t, cached)) {
            for (i64 q = lane; q < yy; q += 32) {
                double v = 0.0;
                for (i64 j = b_offsets[t]; j < b_offsets[t + 1]; ++j) v += bigram[b_ids[j] * yy + q];
                trans[q] = v;
            }
            cached = t;
        }
        for (i64 y = lane; y < n_labels; y += 32) emission[y] = emission_of(unigram, u_offsets, u_ids, t, y, n_labels);
        __syncwarp();
        const i64 keep = k < n_labels * kept ? k : n_labels * kept;
        for (i64 i = lane; i < yy * kept; i += 32) {
            const i64 y = i / (n_labels * kept), yp = (i / kept) % n_labels, r = i % kept;
            const double v = previous[yp * k + r] + trans[yp * n_labels + y];
            i64 rank = r;
            for (i64 yq = 0; yq < n_labels && rank < keep; ++yq)
                if (yq != yp) rank += ahead_in_list(previous + yq * k, kept, trans[yq * n_labels + y], v, yq < yp);
            if (rank < keep) {
                current[y * k + rank] = v + emission[y];
                back[(t * n_labels + y) * k + rank] = (int)(yp * k + r);
            }
        }
        __syncwarp();  // current is read by every lane next
        double* swap = previous;
        previous = current;
        current = swap;
        kept = keep;
    }
    const i64 found = k < n_labels * kept ? k : n_labels * kept;
    for (i64 i = lane; i < n_labels * kept; i += 32) {
        const i64 y = i / kept, r = i % kept;
        const double v = previous[y * k + r];
        i64 rank = r;
        for (i64 yq = 0; yq < n_labels && rank < found; ++yq)
            if (yq != y) rank += ahead_in_list(previous + yq * k, kept, 0.0, v, yq < y);
        if (rank < found) {
            scores[s * k + rank] = v;
            i64 label = y, at = r;
            for (i64 t = end - 1; t >= start; --t) {
                paths[rank * n_tokens + t] = (int)label;
                if (t > start) {
                    const i64 code = back[(t * n_labels + label) * k + at];
                    label = code / k;
                    at = code % k;
                }
            }
        }
    }
    if (lane == 0) counts[s] = (int)found;
}
