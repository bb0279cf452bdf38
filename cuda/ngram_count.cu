// ngram_count.cu -- the keys of the byte n-grams inside pre-tokens (BytePiece training's pass 1).
//
// A key is n << 8n | the n bytes big-endian, so the keys of each length sort apart and one device
// sort + run-length count gives every length's table; 0 (no key is 0) marks a position whose
// n-gram would cross its pre-token's end. One thread per byte: it finds its pre-token by a binary
// search over the starts (log2(pre-tokens) steps) and reads its n <= 8 bytes, which neighbouring
// threads read too (coalesced, cached). Output is dense (one key per byte), so the writes coalesce.
#include "common.cuh"
#include "step_counter.cuh"

extern "C" __global__ void __launch_bounds__(GT_BLOCK) ngram_keys(
        const u8* __restrict__ data, i64 n_bytes, const i64* __restrict__ starts,
        const i64* __restrict__ ends, i64 n_tokens, i64 n, u64* __restrict__ keys) {
    const i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n_bytes) return;
    // the last pre-token starting at or before i
    i64 lo = 0, hi = n_tokens;
    while (hi - lo > 1) {
        GT_STEP();
        const i64 mid = lo + (hi - lo) / 2;
        if (starts[mid] <= i) lo = mid; else hi = mid;
    }
    u64 key = 0;
    if (n_tokens > 0 && starts[lo] <= i && i + n <= ends[lo]) {
        key = static_cast<u64>(n);
        for (i64 k = 0; k < n; ++k) key = (key << 8) | data[i + k];
    }
    keys[i] = key;
}

// ---------------------------------------------------------------- the byte Viterbi of pass 2
// The seed's 6-state byte Viterbi (BytePieceCounter::Tokenize) over each pre-token: state j at
// byte i is "an n-gram of j + 1 bytes ends at i", scored by the pruned table's conditional
// log-probability; a state may follow j - 1 (the n-gram grows), start afresh (j = 0) or slide at
// 5 -> 5; UTF-8 positions forbid starts inside a character. One thread per pre-token: it walks
// its bytes once forward (two rows of 6 scores in registers, the routes in its scratch rows) and
// once back, marking where each piece starts; the work is linear in the pre-token's bytes (a
// 1 MB pre-token is about 1 M steps on one thread). The table is the sorted keys (the pruned
// n-grams, all lengths; lengths sort apart), searched by bisection.
#define BV_STATES 6
#define BV_NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))

__device__ __forceinline__ int bv_lead_length(u8 byte) {
    return byte < 0xC0 ? 1 : byte < 0xE0 ? 2 : byte < 0xF0 ? 3 : 4;
}

__device__ __forceinline__ double bv_lookup(const u64* __restrict__ keys, const double* __restrict__ values,
                                            i64 n_keys, u64 key) {
    i64 lo = 0, hi = n_keys;
    while (lo < hi) {
        GT_STEP();
        const i64 mid = lo + (hi - lo) / 2;
        if (keys[mid] < key) lo = mid + 1; else hi = mid;
    }
    return (lo < n_keys && keys[lo] == key) ? values[lo] : BV_NEG_INF;
}

// The scores of the states ending at byte i of the pre-token at data + begin.
__device__ __forceinline__ void bv_nodes(const u8* __restrict__ data, i64 begin, i64 i, const signed char* pos,
                                         const u64* __restrict__ keys, const double* __restrict__ values,
                                         i64 n_keys, double* out) {
    u64 gram = 0;
    for (int j = 0; j < BV_STATES; ++j) {
        out[j] = BV_NEG_INF;
        if (j > i) continue;
        gram |= static_cast<u64>(data[begin + i - j]) << (8 * j);
        if (j == 0 && pos[i] > 0) continue;
        out[j] = bv_lookup(keys, values, n_keys, (static_cast<u64>(j + 1) << (8 * (j + 1))) | gram);
    }
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK) byte_viterbi_starts(
        const u8* __restrict__ data, const i64* __restrict__ starts, const i64* __restrict__ ends, i64 n_tokens,
        const u64* __restrict__ keys, const double* __restrict__ values, i64 n_keys,
        const i64* __restrict__ scratch_offsets, signed char* __restrict__ positions,
        signed char* __restrict__ routes, u8* __restrict__ piece_start) {
    const i64 t = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= n_tokens) return;
    const i64 begin = starts[t], num = ends[t] - starts[t];
    if (num <= 0) return;
    signed char* pos = positions + scratch_offsets[t];
    signed char* route = routes + BV_STATES * scratch_offsets[t];
    for (i64 i = 0; i < num;) {
        GT_STEP();
        const int n = bv_lead_length(data[begin + i]);
        for (int j = 0; j < n && i + j < num; ++j) pos[i + j] = static_cast<signed char>(j);
        i += n;
    }
    double prev[BV_STATES], node[BV_STATES];
    bv_nodes(data, begin, 0, pos, keys, values, n_keys, prev);
    for (i64 i = 1; i < num; ++i) {
        GT_STEP();
        bv_nodes(data, begin, i, pos, keys, values, n_keys, node);
        double next[BV_STATES];
        for (int cur = 0; cur < BV_STATES; ++cur) {
            next[cur] = node[cur];  // the seed leaves states before the character's position as they were
            route[(i - 1) * BV_STATES + cur] = 0;
            if (cur < pos[i]) continue;
            double best = BV_NEG_INF;
            int best_prev = -1;
            for (int p = 0; p < BV_STATES; ++p) {
                if (p < pos[i - 1]) continue;
                const bool sliding = p == BV_STATES - 1 && cur == BV_STATES - 1;
                if (!(cur == 0 || cur == p + 1 || sliding)) continue;
                const i64 start = i - cur;
                if (!sliding && start > 0 && pos[start] > 0) continue;
                const double score = prev[p] + node[cur];
                if (score > best) {
                    best = score;
                    best_prev = p;
                }
            }
            if (best_prev != -1) {
                route[(i - 1) * BV_STATES + cur] = static_cast<signed char>(best_prev);
                next[cur] = best;
            } else {
                next[cur] = BV_NEG_INF;
            }
        }
        for (int j = 0; j < BV_STATES; ++j) prev[j] = next[j];
    }
    int state = 0;
    double best = BV_NEG_INF;
    for (int j = 0; j < BV_STATES; ++j) {
        if (j >= pos[num - 1] && prev[j] > best) {
            best = prev[j];
            state = j;
        }
    }
    piece_start[begin] = 1;
    for (i64 p = num - 1; p > 0; --p) {
        GT_STEP();
        if (state == 0 && pos[p] == 0) piece_start[begin + p] = 1;
        state = route[(p - 1) * BV_STATES + state];
    }
}
