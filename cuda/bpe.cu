// bpe.cu -- BPE encoding of pre-tokens by replaying merges in score order (SentencePiece's rule).
//
// Symbols are ids of gpu_text/tokenizer/merge_tables.py (a piece id, or for a character that is no
// piece but occurs inside one, an id past the pieces), so a candidate pair is one hash lookup.
// Per pre-token: start from one symbol per character; repeatedly merge the best adjacent pair that
// makes a piece (higher score first, on equal scores the leftmost) until none does. Leftover
// symbols that are not pieces fall back to <0xXX> byte pieces (or the unknown id).
// Three ways to merge, by the pre-token's length n (merge_path):
//   * n <= warp_bytes (at most THREAD_MAX_BYTES, 48): a thread each (bpe_merge), its symbols in
//     per-thread local arrays, the best pair by a scan of the pair scores;
//   * up to long_bytes (at most WARP_MAX_BYTES, 512): a warp each (bpe_merge_warp: the symbols
//     in shared memory, the best pair by a warp max-reduce);
//   * longer: a block each (bpe_merge_long, rounds over all parts at once; bpe_emit's blocks after
//     the short ones write their ids).
// Pass 1 (bpe_merge*) merges and counts tokens, leaving every pre-token's final symbols in global
// arrays at its byte positions; pass 2 (bpe_emit) writes ids and byte spans.
// The pre-tokens come as start/end arrays or, for whole texts (bpe_pre_tokens), from per-byte marks
// whose count stays on the device: the grids are then sized by the byte count, which bounds it.
#include "utf8.cuh"
#include "lookback.cuh"
#include "merge_tables.cuh"
#include "step_counter.cuh"

#define INT_MIN_VALUE (-2147483647 - 1)
#define THREAD_MAX_BYTES 48  // the longest pre-token a thread merges (bpe_merge's local arrays)
#define WARP_MAX_BYTES 512   // the longest pre-token a warp merges (bpe_merge_warp)
#define NO_PAIR __int_as_float((int)0xff800000u)  // -infinity: every piece's score is finite
#define SYMBOL_BITS 8  // symbol_at: a user symbol's piece id << SYMBOL_BITS | its byte length (pre_tokenizer.cu)

struct Model {
    HashTable chars, merges, joins;
    const int* bmp_ids;      // symbol id of every codepoint below U+10000, or -1
    int n_pieces;            // ids below this are pieces
    const float* scores;     // score of every piece id
    const int* byte_ids;     // id of <0xXX> for every byte, or -1
    int unk_id;
};

// The symbol id (or -1) and width of the character at s[0] (a malformed byte is one character).
__device__ __forceinline__ int char_symbol(const Model& m, const u8* s, i64 limit, int* width) {
    u32 cp;
    const int length = utf8_sequence_at(s, limit, &cp);
    *width = length > 0 ? length : 1;
    if (length > 0 && cp < 0x10000u) return m.bmp_ids[cp];
    return table_lookup(m.chars, char_key(s, *width));
}

// The piece symbols `left` and `right` merge into, or -1.
__device__ __forceinline__ int merge_of(const Model& m, int left, int right) {
    return left >= 0 && right >= 0 ? table_lookup(m.merges, pair_key(left, right)) : -1;
}

// The piece id of a final symbol, or -1 (a character that is no piece).
__device__ __forceinline__ int piece_of(const Model& m, int symbol) {
    return symbol >= 0 && symbol < m.n_pieces ? symbol : -1;
}

// The score of the piece `left` and `right` merge into, or NO_PAIR.
__device__ __forceinline__ float pair_score(const Model& m, int left, int right) {
    const int merged = merge_of(m, left, right);
    return merged >= 0 ? m.scores[merged] : NO_PAIR;
}

// Which path merges a pre-token of n bytes. bpe.py passes warp_bytes <= THREAD_MAX_BYTES and
// long_bytes <= WARP_MAX_BYTES (it clamps its settings, and bounds its lists by the same values);
// the array limits are checked here too, so that no path is ever given more than it holds.
#define THREAD_PATH 0
#define WARP_PATH 1
#define LONG_PATH 2
__device__ __forceinline__ int merge_path(int n, i64 warp_bytes, i64 long_bytes) {
    if (n > long_bytes || n > WARP_MAX_BYTES) return LONG_PATH;
    if (n > warp_bytes || n > THREAD_MAX_BYTES) return WARP_PATH;
    return THREAD_PATH;
}

// Tokens the final symbol at `at` (len, id, prev: the symbol list) adds: 1 if it is a piece; else
// one per byte (byte fallback), or 1 unknown token, which swallows the unknown symbols right after
// it (SentencePiece merges unknown runs).
__device__ __forceinline__ int tokens_at(const Model& m, const int* len, const int* prev, const int* id, int at) {
    if (piece_of(m, id[at]) >= 0) return 1;
    if (m.byte_ids[0] >= 0) return len[at];
    return prev[at] >= 0 && piece_of(m, id[prev[at]]) < 0 ? 0 : 1;
}

// Every kernel takes the model as the same run of arguments (a launch passes pointers and scalars,
// not structs) and rebuilds the Model from them.
#define GT_MODEL_PARAMS                                                                                \
    const u64 *__restrict__ char_keys, const int *__restrict__ char_ids, i64 char_size,               \
    const int *__restrict__ bmp_ids, const u64 *__restrict__ merge_keys, const int *__restrict__ merge_ids, \
    i64 merge_size, const u64 *__restrict__ join_keys, i64 join_size, int n_pieces,                   \
    const float *__restrict__ scores, const int *__restrict__ byte_ids, int unk_id
#define GT_MODEL                                                                                       \
    {{char_keys, char_ids, char_size}, {merge_keys, merge_ids, merge_size}, {join_keys, nullptr, join_size}, \
     bmp_ids, n_pieces, scores, byte_ids, unk_id}

// The number of pre-tokens: n_tokens (an upper bound, the grid's size) or, when has_found, the
// count the device holds at *n_found (pre-tokens found on the device; threads past it idle).
__device__ __forceinline__ i64 tokens_found(i64 n_tokens, const i64* n_found, int has_found) {
    return has_found ? min(*n_found, n_tokens) : n_tokens;
}

// Pre-tokens from per-byte marks (non-zero at every start; each one ends where the next starts, the
// last at the end of the data), packed in order: a thread per byte p <= n_bytes, its pre-token's
// number the count of marks before p by a decoupled look-back scan (lookback.cuh; status: 1 +
// gridDim.x zeros). Thread n_bytes writes the count of pre-tokens and the last one's end.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
bpe_pre_tokens(const u8* __restrict__ marks, i64 n_bytes, u64* __restrict__ status, i64* __restrict__ token_starts,
               i64* __restrict__ token_ends, i64* __restrict__ n_found) {
    __shared__ i64 scratch[GT_WARPS];
    __shared__ i64 tile_slot, prior;
    const i64 tile = lookback_tile(status, &tile_slot);
    const i64 p = tile * GT_BLOCK + threadIdx.x;
    const i64 flag = p < n_bytes && marks[p] != 0;
    i64 total;
    const i64 k = lookback_prefix(flag, status, tile, scratch, &prior, &total);
    if (flag) token_starts[k] = p;
    if ((flag || p == n_bytes) && k > 0) token_ends[k - 1] = p;
    if (p == n_bytes) *n_found = k;
}

// ---------------------------------------------------------------------------------------------
// Short pre-tokens (at most THREAD_MAX_BYTES bytes): a thread each, its state in local arrays.
//
// The symbols are kept in order, packed (a merge shifts the ones after it down), each with the
// score of the pair it starts. Each step scans the count - 1 pair scores for the best (the first
// of the highest: leftmost on ties, the order a heap of candidate pairs with stale entries
// skipped pops them, which the thread path used before), merges it with one hash lookup, and
// rescores its two neighbour pairs. Per thread: at most n - 1 merges, each a scan and a shift of
// at most n - 1 entries (n <= 48: under 2,300 steps at worst, a few dozen for a word); the reads
// and writes of global memory are the characters, the hash lookups and the final symbols.
//
// Where the state lives, by ptxas -v for sm_90 (tests/test_bpe_registers.py): in local arrays
// (ThreadSymbols, 433 bytes), a 440-byte stack frame a thread and no spills; 32 registers (40 with
// the list and heap in global scratch), so 8 blocks of 256 threads per SM: full occupancy. Local
// memory is interleaved per thread (word k of the 32 threads of a warp side by side), so a warp's
// threads reading the same slot make one coalesced access, and a word's few symbols stay in the
// first slots, in L1. The same arrays in shared memory would take 110 KiB a block of 256 threads:
// 2 blocks per SM (228 KiB of shared memory), 25% occupancy. The global scratch before (a linked
// list and a heap of 3 entries per byte, 52 bytes per input byte) was scattered by each pre-token's
// byte position; now a short pre-token's only global writes are its final symbols (12 bytes each,
// bpe_emit's input).

struct ThreadSymbols {
    int id[THREAD_MAX_BYTES];                   // symbol k's id (merge_tables)
    float score[THREAD_MAX_BYTES];              // score of merging symbols k and k + 1, or NO_PAIR
    unsigned char start[THREAD_MAX_BYTES + 1];  // symbol k's first byte (from the pre-token's start)
};

// One symbol per character of data[0, n) into s; returns their number (s.start[count] = n).
__device__ __forceinline__ int thread_symbols(const Model& m, const u8* data, int n, ThreadSymbols& s) {
    int count = 0;
    for (int p = 0; p < n; ++count) {
        int width;
        s.id[count] = char_symbol(m, data + p, n - p, &width);
        s.start[count] = (unsigned char)p;
        p += width;
    }
    s.start[count] = (unsigned char)n;
    return count;
}

// Merges the `count` symbols of s in score order; returns how many are left.
__device__ __forceinline__ int thread_merge(const Model& m, ThreadSymbols& s, int count) {
    for (int k = 0; k + 1 < count; ++k) s.score[k] = pair_score(m, s.id[k], s.id[k + 1]);
    for (;;) {
        GT_STEP();
        float best = NO_PAIR;
        int at = -1;
        for (int k = 0; k + 1 < count; ++k)
            if (s.score[k] > best) { best = s.score[k]; at = k; }  // the first of the best
        if (at < 0) return count;
        s.id[at] = merge_of(m, s.id[at], s.id[at + 1]);
        --count;
        for (int k = at + 1; k < count; ++k) {  // symbol at + 1 is gone
            s.id[k] = s.id[k + 1];
            s.score[k] = s.score[k + 1];
            s.start[k] = s.start[k + 1];
        }
        s.start[count] = s.start[count + 1];
        if (at > 0) s.score[at - 1] = pair_score(m, s.id[at - 1], s.id[at]);
        if (at + 1 < count) s.score[at] = pair_score(m, s.id[at], s.id[at + 1]);
    }
}

// A pre-token starting where symbol_at (has_symbols; pretokenize_cuts's, piece id << SYMBOL_BITS |
// byte length) is non-zero is that user symbol whole: its piece id. Otherwise:
// A long pre-token is appended to long_list (n_long[0], zeroed before) for bpe_merge_long, a
// medium one to medium_list (n_long[1]) for bpe_merge_warp (merge_path); a short one is merged
// here, its final symbols written at its byte positions in bpe_emit's layout (sym_len, sym_next,
// sym_id at every symbol start; bpe_emit's short path reads no more) and its token count to
// counts[t]. counts[t] = 0 for the idle threads past the pre-tokens found.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
bpe_merge(const u8* __restrict__ data, const i64* __restrict__ token_starts, const i64* __restrict__ token_ends,
          i64 n_tokens, const i64* __restrict__ n_found, int has_found, GT_MODEL_PARAMS, int* __restrict__ sym_len,
          int* __restrict__ sym_next, int* __restrict__ sym_id, i64 long_bytes, i64* __restrict__ counts,
          unsigned long long* __restrict__ n_long, i64* __restrict__ long_list, i64* __restrict__ out_offsets,
          i64 warp_bytes, i64* __restrict__ medium_list, const int* __restrict__ symbol_at, int has_symbols) {
    const i64 t = global_thread_index();
    if (t == 0) out_offsets[0] = 0;  // the scan of the counts writes the rest
    if (t >= n_tokens) return;
    if (t >= tokens_found(n_tokens, n_found, has_found)) { counts[t] = 0; return; }
    const Model m = GT_MODEL;
    const i64 begin = token_starts[t];
    const int n = (int)(token_ends[t] - begin);
    if (has_symbols && symbol_at[begin] != 0) {  // a user symbol: its piece id, one final symbol
        sym_len[begin] = n;
        sym_next[begin] = -1;
        sym_id[begin] = symbol_at[begin] >> SYMBOL_BITS;
        counts[t] = 1;
        return;
    }
    const int path = merge_path(n, warp_bytes, long_bytes);
    if (path == LONG_PATH) {
        long_list[atomicAdd(n_long, 1ull)] = t;
        return;
    }
    if (path == WARP_PATH) {
        medium_list[atomicAdd(n_long + 1, 1ull)] = t;
        return;
    }
    ThreadSymbols s;
    const int count = thread_merge(m, s, thread_symbols(m, data + begin, n, s));
    int* len = sym_len + begin;
    int* next = sym_next + begin;
    int* id = sym_id + begin;
    i64 tokens = 0;
    bool after_unknown = false;
    for (int k = 0; k < count; ++k) {  // tokens_at's rule
        const int p = s.start[k], q = s.start[k + 1];
        const bool piece = piece_of(m, s.id[k]) >= 0;
        tokens += piece ? 1 : m.byte_ids[0] >= 0 ? q - p : !after_unknown;
        after_unknown = !piece;
        len[p] = q - p;
        next[p] = q < n ? q : -1;
        id[p] = s.id[k];
    }
    counts[t] = tokens;
}

// Writes the ids and byte spans of the final symbol at `at` from `out` on; returns the new end.
// An unknown symbol right after an unknown one writes nothing: `run_end` is where the unknown
// token that swallows it ends (SentencePiece merges unknown runs).
__device__ __forceinline__ i64 emit_symbol(const Model& m, const u8* data, i64 at, int length, int symbol, i64 run_end,
                                           i64 out, int* ids, i64* id_starts, i64* id_ends) {
    const int piece = piece_of(m, symbol);
    if (piece >= 0 || m.byte_ids[0] < 0) {
        ids[out] = piece >= 0 ? piece : m.unk_id;
        id_starts[out] = at;
        id_ends[out] = piece >= 0 ? at + length : run_end;
        return out + 1;
    }
    for (int k = 0; k < length; ++k, ++out) {
        ids[out] = m.byte_ids[data[at + k]];
        id_starts[out] = at + k;
        id_ends[out] = at + k + 1;
    }
    return out;
}

// End of the run of unknown symbols starting at p (relative; the caller's symbol is unknown).
__device__ __forceinline__ i64 unknown_run_end(const Model& m, const int* len, const int* next, const int* id, int p) {
    int stop = p + len[p];
    for (int q = next[p]; q >= 0 && piece_of(m, id[q]) < 0; q = next[q]) stop = q + len[q];
    return stop;
}


// ---------------------------------------------------------------------------------------------
// Medium pre-tokens (more than `warp_bytes`, at most `long_bytes` and WARP_MAX_BYTES: merge_path):
// a warp each, its symbol list in shared memory. Each step the lanes scan the symbols for the best
// pair (score, then leftmost, the thread path's order), a max-reduce
// over the warp picks it and lane 0 merges it and rescores its two neighbour pairs. Per lane:
// (merges + 1) * WARP_MAX_BYTES / 32 steps of the scan; then the final list goes to the global
// arrays in bpe_emit's layout.

#define WARP_BLOCK 128
#define WARP_BLOCK_WARPS (WARP_BLOCK / 32)

struct WarpSymbols {
    int id[WARP_MAX_BYTES];       // symbol id at each symbol start
    float score[WARP_MAX_BYTES];  // score of merging the symbol with the next one, or NO_PAIR
    short len[WARP_MAX_BYTES];    // byte length at a symbol start, 0 inside a symbol
    short prev[WARP_MAX_BYTES];   // the previous symbol start, -1 at the first (the next is p + len)
};

// The symbol after the one at p (n: the pre-token's length), or -1.
__device__ __forceinline__ int warp_next(const WarpSymbols& s, int p, int n) {
    return p + s.len[p] < n ? p + s.len[p] : -1;
}

// The score of the pair starting at symbol p (NO_PAIR when it does not merge or p is the last).
__device__ __forceinline__ float warp_pair_score(const Model& m, const WarpSymbols& s, int p, int n) {
    const int q = p >= 0 ? warp_next(s, p, n) : -1;
    return q < 0 ? NO_PAIR : pair_score(m, s.id[p], s.id[q]);
}

// Launch bounds for 8 blocks of 24 KiB per SM: half its threads.
extern "C" __global__ void __launch_bounds__(WARP_BLOCK, 8)
bpe_merge_warp(const u8* __restrict__ data, const i64* __restrict__ token_starts, const i64* __restrict__ token_ends,
               const i64* __restrict__ medium_list, const unsigned long long* __restrict__ n_medium, GT_MODEL_PARAMS,
               int* __restrict__ sym_len, int* __restrict__ sym_next, int* __restrict__ sym_prev,
               int* __restrict__ sym_id, i64* __restrict__ counts) {
    __shared__ WarpSymbols shared[WARP_BLOCK_WARPS];
    const int lane = (int)(threadIdx.x & 31u);
    WarpSymbols& s = shared[threadIdx.x >> 5];
    const Model m = GT_MODEL;
    const i64 stride = (i64)gridDim.x * WARP_BLOCK_WARPS;
    for (i64 item = (i64)blockIdx.x * WARP_BLOCK_WARPS + (threadIdx.x >> 5); item < (i64)*n_medium; item += stride) {
        const i64 t = medium_list[item];
        const i64 begin = token_starts[t];
        const int n = (int)(token_ends[t] - begin);
        // one symbol per character (starts decided locally, as for the long pre-tokens)
        for (int p = lane; p < n; p += 32) {
            s.len[p] = 0;
            if (!utf8_starts_char(data, begin + p, begin, begin + n)) continue;
            int q = p + 1;
            while (q < n && !utf8_starts_char(data, begin + q, begin, begin + n)) ++q;
            int width;
            s.id[p] = char_symbol(m, data + begin + p, n - p, &width);
            s.len[p] = (short)(q - p);
            if (p == 0) s.prev[0] = -1;
        }
        __syncwarp();
        for (int p = lane; p < n; p += 32)
            if (s.len[p] > 0 && p + s.len[p] < n) s.prev[p + s.len[p]] = (short)p;
        __syncwarp();
        for (int p = lane; p < n; p += 32)
            if (s.len[p] > 0) s.score[p] = warp_pair_score(m, s, p, n);
        __syncwarp();
        for (;;) {
            GT_STEP();
            float best = NO_PAIR;
            int at = WARP_MAX_BYTES;
            for (int p = lane; p < n; p += 32)
                if (s.len[p] > 0 && s.score[p] > best) { best = s.score[p]; at = p; }  // leftmost of the lane's
            for (int delta = 16; delta > 0; delta >>= 1) {
                const float other = __shfl_xor_sync(0xffffffffu, best, delta);
                const int other_at = __shfl_xor_sync(0xffffffffu, at, delta);
                if (other > best || (other == best && other_at < at)) { best = other; at = other_at; }
            }
            if (best == NO_PAIR) break;
            if (lane == 0) {
                const int q = at + s.len[at];
                s.id[at] = merge_of(m, s.id[at], s.id[q]);
                s.len[at] = (short)(s.len[at] + s.len[q]);
                s.len[q] = 0;
                if (at + s.len[at] < n) s.prev[at + s.len[at]] = (short)at;
                s.score[at] = warp_pair_score(m, s, at, n);
                if (s.prev[at] >= 0) s.score[s.prev[at]] = warp_pair_score(m, s, s.prev[at], n);
            }
            __syncwarp();
        }
        int* len = sym_len + begin;
        int* next = sym_next + begin;
        int* prev = sym_prev + begin;
        int* id = sym_id + begin;
        for (int p = lane; p < n; p += 32) {
            len[p] = s.len[p];
            if (s.len[p] == 0) continue;
            next[p] = warp_next(s, p, n);
            prev[p] = s.prev[p];
            id[p] = s.id[p];
        }
        __syncwarp();
        i64 tokens = 0;
        for (int p = lane; p < n; p += 32)
            if (s.len[p] > 0) tokens += tokens_at(m, len, prev, id, p);
        for (int delta = 16; delta > 0; delta >>= 1) tokens += __shfl_xor_sync(0xffffffffu, tokens, delta);
        if (lane == 0) counts[t] = tokens;
        __syncwarp();  // the shared list is reused by the warp's next pre-token
    }
}

// ---------------------------------------------------------------------------------------------
// Long pre-tokens (a Chinese line with Cn none, a line of "aaaa..."): one block each, merging in
// rounds that replay the same priority order.
//
// The pre-token is cut between characters that sit next to each other in no piece (the `joins`
// table): no merge ever crosses such a cut, so the parts evolve independently. In a round each
// part takes its best score s; the pairs scoring s form chains of overlapping pairs, and the
// sequential algorithm pops them left to right, the 1st, 3rd, 5th... of each chain (a popped pair
// leaves the next one stale). It keeps doing so until a merge creates a pair that scores >= s on
// its left or right: that pair pops before the next s pair, so the round stops after the first
// such merge and the next round starts from there. Natural text has short parts and finishes in
// as many rounds as its longest part has merges; "aaaa..." in as many as its pieces have levels.
//
// Scratch (global memory, `work`): LONG_ARRAYS int arrays of the data's size and the pair scores, a
// pre-token's share of each at its own byte positions. The four arrays a round needs only within
// itself (merged, chosen, best, cut) are the final symbol arrays (sym_len, sym_next, sym_prev,
// sym_id) at the same positions, written only after the last round.

#define LONG_ARRAYS 6

struct LongScratch {
    int* start[2];   // byte offset (from begin) of each symbol; double-buffered across rounds
    int* id[2];      // symbol id of merge_tables (a piece id or a character id), -1 if it never merges
    int* part[2];    // index of the part holding the symbol
    int* merged;     // piece the pair (k, k+1) merges into, or -1
    int* chosen;     // pair k is popped this round (unless past its part's cut)
    int* best;       // per part: the best score this round, as an order-preserving int
    int* cut;        // per part: the last pair popped this round
    float* score;    // score of pair k's piece
};

__device__ __forceinline__ int score_order(float s) {
    const int bits = __float_as_int(s);
    return bits >= 0 ? bits : bits ^ 0x7FFFFFFF;
}

// This thread's share [*lo, *hi) of `count` items, contiguous and in thread order.
__device__ __forceinline__ void thread_chunk(i64 count, i64* lo, i64* hi) {
    *lo = count * threadIdx.x / GT_BLOCK;
    *hi = count * (threadIdx.x + 1) / GT_BLOCK;
}

// One symbol per character, their ids and parts; returns the number of symbols.
__device__ int long_symbols(const u8* data, i64 begin, int n, const Model& model, const LongScratch& s,
                            i64* scan_scratch) {
    i64 lo, hi, total;
    thread_chunk(n, &lo, &hi);
    i64 count = 0;
    for (i64 i = lo; i < hi; ++i) count += utf8_starts_char(data, begin + i, begin, begin + n);
    i64 at = block_exclusive_scan(count, scan_scratch, &total);
    for (i64 i = lo; i < hi; ++i)
        if (utf8_starts_char(data, begin + i, begin, begin + n)) s.start[0][at++] = (int)i;
    const int m = (int)total;
    __syncthreads();
    for (int k = threadIdx.x; k < m; k += GT_BLOCK) {
        int width;
        s.id[0][k] = char_symbol(model, data + begin + s.start[0][k], n - s.start[0][k], &width);
    }
    __syncthreads();
    // a part starts at every character that does not join its left neighbour inside some piece
    thread_chunk(m, &lo, &hi);
    count = 0;
    for (i64 k = lo; k < hi; ++k) {
        s.chosen[k] = k == 0 || s.id[0][k - 1] < 0 || s.id[0][k] < 0 ||
                      table_lookup(model.joins, pair_key(s.id[0][k - 1], s.id[0][k])) < 0;
        count += s.chosen[k];
    }
    at = block_exclusive_scan(count, scan_scratch, &total);
    for (i64 k = lo; k < hi; ++k) {
        at += s.chosen[k];
        s.part[0][k] = (int)at - 1;
    }
    __syncthreads();
    return m;
}

// Round step 1: every pair's merge and score, each part's best; false when nothing merges.
__device__ bool long_score_pairs(int m, int n_parts, int cur, const Model& model, const LongScratch& s) {
    for (int p = threadIdx.x; p < n_parts; p += GT_BLOCK) {
        s.best[p] = INT_MIN_VALUE;
        s.cut[p] = m;
    }
    __syncthreads();
    int any = 0;
    for (int k = threadIdx.x; k < m - 1; k += GT_BLOCK) {
        const int part = s.part[cur][k];
        const int merged = part == s.part[cur][k + 1] ? merge_of(model, s.id[cur][k], s.id[cur][k + 1]) : -1;
        s.merged[k] = merged;
        if (merged >= 0) {
            s.score[k] = model.scores[merged];
            atomicMax(&s.best[part], score_order(model.scores[merged]));
            any = 1;
        }
    }
    return __syncthreads_or(any);
}

// Round step 2: choose the 1st, 3rd, 5th... pair of every chain of best-scoring pairs.
__device__ void long_choose(int m, int cur, const LongScratch& s, int* chunk_trail, int* chunk_whole) {
    i64 lo, hi;
    thread_chunk(m - 1, &lo, &hi);
    int trail = 0, whole = 1;
    for (i64 k = lo; k < hi; ++k) {
        const bool top = s.merged[k] >= 0 && score_order(s.score[k]) == s.best[s.part[cur][k]];
        trail = top ? trail + 1 : 0;
        whole &= top;
    }
    chunk_trail[threadIdx.x] = trail;
    chunk_whole[threadIdx.x] = whole;
    __syncthreads();
    int run = 0;  // length of the chain reaching into this chunk
    for (int q = (int)threadIdx.x - 1; q >= 0; --q) {
        run += chunk_trail[q];
        if (!chunk_whole[q]) break;
    }
    for (i64 k = lo; k < hi; ++k) {
        const bool top = s.merged[k] >= 0 && score_order(s.score[k]) == s.best[s.part[cur][k]];
        s.chosen[k] = top && run % 2 == 0;
        run = top ? run + 1 : 0;
    }
    __syncthreads();
}

// Round step 3: the first chosen pair per part whose merge makes a pair scoring >= the round's.
__device__ void long_find_cuts(int m, int cur, const Model& model, const LongScratch& s) {
    for (int k = threadIdx.x; k < m - 1; k += GT_BLOCK) {
        if (!s.chosen[k]) continue;
        const int part = s.part[cur][k], merged = s.merged[k];
        const float top = s.score[k];
        bool stops = false;
        if (k >= 1 && s.part[cur][k - 1] == part) {  // the left neighbour, already merged if chosen
            const int left = k >= 2 && s.chosen[k - 2] ? s.merged[k - 2] : s.id[cur][k - 1];
            const int j = merge_of(model, left, merged);
            stops = j >= 0 && model.scores[j] >= top;
        }
        if (k + 2 < m && s.part[cur][k + 2] == part) {  // the right neighbour, not merged yet
            const int j = merge_of(model, merged, s.id[cur][k + 2]);
            stops = stops || (j >= 0 && model.scores[j] >= top);
        }
        if (stops) atomicMin(&s.cut[part], k);
    }
    __syncthreads();
}

// Round step 4: merge the chosen pairs up to their part's cut into the other buffer; returns m.
__device__ int long_merge(int m, int cur, const LongScratch& s, i64* scan_scratch) {
    i64 lo, hi, total;
    thread_chunk(m, &lo, &hi);
#define POPPED(k) ((k) < m - 1 && s.chosen[k] && (k) <= s.cut[s.part[cur][k]])
    i64 count = 0;
    for (i64 k = lo; k < hi; ++k) count += !(k >= 1 && POPPED(k - 1));
    i64 at = block_exclusive_scan(count, scan_scratch, &total);
    const int nxt = cur ^ 1;
    for (i64 k = lo; k < hi; ++k) {
        if (k >= 1 && POPPED(k - 1)) continue;
        s.start[nxt][at] = s.start[cur][k];
        s.id[nxt][at] = POPPED(k) ? s.merged[k] : s.id[cur][k];
        s.part[nxt][at] = s.part[cur][k];
        ++at;
    }
#undef POPPED
    __syncthreads();
    return (int)total;
}

// Long pre-token t merged by the whole block. Not inlined into the grid-stride loop of
// bpe_merge_long: called, it keeps its registers to itself (inlined, the loop spills).
__device__ __noinline__ void merge_long_pre_token(i64 t, const u8* data, const i64* token_starts,
                                                  const i64* token_ends, i64 work_size, int* work, float* pair_score,
                                                  GT_MODEL_PARAMS, int* sym_len, int* sym_next, int* sym_prev,
                                                  int* sym_id, i64* counts, i64* scan_scratch, int* chunk_trail,
                                                  int* chunk_whole) {
    const Model model = GT_MODEL;
    const i64 begin = token_starts[t];
    const int n = (int)(token_ends[t] - begin);
    int* w = work + begin;
    LongScratch s;
    for (int b = 0; b < 2; ++b) {
        s.start[b] = w + (0 + b) * work_size;
        s.id[b] = w + (2 + b) * work_size;
        s.part[b] = w + (4 + b) * work_size;
    }
    s.merged = sym_len + begin;  // the final symbols overwrite these four after the last round
    s.chosen = sym_next + begin;
    s.best = sym_prev + begin;
    s.cut = sym_id + begin;
    s.score = pair_score + begin;

    int m = long_symbols(data, begin, n, model, s, scan_scratch);
    const int n_parts = s.part[0][m - 1] + 1;
    int cur = 0;
    while (long_score_pairs(m, n_parts, cur, model, s)) {
        long_choose(m, cur, s, chunk_trail, chunk_whole);
        long_find_cuts(m, cur, model, s);
        m = long_merge(m, cur, s, scan_scratch);
        cur ^= 1;
    }

    // the final symbols, in the layout bpe_emit reads (over merged, chosen, best and cut)
    int* len = sym_len + begin;
    int* next = sym_next + begin;
    int* prev = sym_prev + begin;
    int* id = sym_id + begin;
    for (int i = threadIdx.x; i < n; i += GT_BLOCK) len[i] = 0;
    __syncthreads();
    for (int k = threadIdx.x; k < m; k += GT_BLOCK) {
        const int at = s.start[cur][k], after = k + 1 < m ? s.start[cur][k + 1] : n;
        len[at] = after - at;
        next[at] = k + 1 < m ? after : -1;
        prev[at] = k > 0 ? s.start[cur][k - 1] : -1;
        id[at] = s.id[cur][k];
    }
    __syncthreads();
    i64 tokens = 0;
    for (int k = threadIdx.x; k < m; k += GT_BLOCK) tokens += tokens_at(model, len, prev, id, s.start[cur][k]);
    tokens = block_sum(tokens, scan_scratch);
    if (threadIdx.x == 0) counts[t] = tokens;
    __syncthreads();  // the shared scratch is reused by the block's next pre-token
}

// The long pre-tokens of long_list (*n_long of them), a block each in turn (grid-stride: the
// host does not know how many there are). Scratch: LONG_ARRAYS arrays of work_size ints (the
// data's size) and the pair scores, a pre-token's share of each at its own byte positions.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
bpe_merge_long(const u8* __restrict__ data, const i64* __restrict__ token_starts, const i64* __restrict__ token_ends,
               const i64* __restrict__ long_list, const unsigned long long* __restrict__ n_long, i64 work_size,
               int* work, float* pair_score, GT_MODEL_PARAMS, int* sym_len, int* sym_next, int* sym_prev, int* sym_id,
               i64* __restrict__ counts) {
    __shared__ i64 scan_scratch[GT_WARPS];
    __shared__ int chunk_trail[GT_BLOCK], chunk_whole[GT_BLOCK];
    for (i64 item = blockIdx.x; item < (i64)*n_long; item += gridDim.x)
        merge_long_pre_token(long_list[item], data, token_starts, token_ends, work_size, work, pair_score, char_keys,
                             char_ids, char_size, bmp_ids, merge_keys, merge_ids, merge_size, join_keys, join_size,
                             n_pieces, scores, byte_ids, unk_id, sym_len, sym_next, sym_prev, sym_id, counts,
                             scan_scratch, chunk_trail, chunk_whole);
}

// The ids and spans of the long pre-tokens of long_list, block `block` of `n_blocks` taking every
// n_blocks-th in turn (bpe_emit's blocks past its short pre-tokens).
__device__ void emit_long_pre_tokens(i64 block, i64 n_blocks, const u8* data, const i64* token_starts,
                                     const i64* token_ends, const i64* long_list, const unsigned long long* n_long,
                                     const Model& model, const int* sym_len, const int* sym_next, const int* sym_prev,
                                     const int* sym_id, const i64* out_offsets, int* ids, i64* id_starts,
                                     i64* id_ends, i64* scan_scratch) {
    for (i64 item = block; item < (i64)*n_long; item += n_blocks) {
        const i64 t = long_list[item];
        const i64 begin = token_starts[t];
        const int n = (int)(token_ends[t] - begin);
        const int* len = sym_len + begin;
        const int* next = sym_next + begin;
        const int* prev = sym_prev + begin;
        const int* id = sym_id + begin;
        i64 lo, hi, total;
        thread_chunk(n, &lo, &hi);
        i64 count = 0;
        for (i64 i = lo; i < hi; ++i)
            if (len[i] > 0) count += tokens_at(model, len, prev, id, (int)i);
        i64 out = out_offsets[t] + block_exclusive_scan(count, scan_scratch, &total);
        for (i64 i = lo; i < hi; ++i) {
            if (len[i] == 0) continue;
            const bool unk = piece_of(model, id[i]) < 0 && model.byte_ids[0] < 0;
            if (unk && prev[i] >= 0 && piece_of(model, id[prev[i]]) < 0) continue;  // inside an unknown run
            const i64 run_end = unk ? begin + unknown_run_end(model, len, next, id, (int)i) : 0;
            out = emit_symbol(model, data, begin + i, len[i], id[i], run_end, out, ids, id_starts, id_ends);
        }
    }
}

// Ids and spans of the short and medium pre-tokens, a thread each in the first short_blocks
// blocks; the blocks after them take the long ones (emit_long_pre_tokens). Threads r <= n_rows
// also write row_offsets[r], the first id of text row r: that of its first pre-token, the first
// one starting at or after row_starts[r] (a binary search of the ascending starts; n_rows = -1
// when there are no rows).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
bpe_emit(const u8* __restrict__ data, const i64* __restrict__ token_starts, const i64* __restrict__ token_ends,
         i64 n_tokens, const i64* __restrict__ n_found, int has_found, GT_MODEL_PARAMS,
         const int* __restrict__ sym_len, const int* __restrict__ sym_next, const int* __restrict__ sym_id,
         const i64* __restrict__ out_offsets, i64 long_bytes, int* __restrict__ ids, i64* __restrict__ id_starts,
         i64* __restrict__ id_ends, const i64* __restrict__ row_starts, i64 n_rows, i64* __restrict__ row_offsets,
         i64 short_blocks, const i64* __restrict__ long_list, const unsigned long long* __restrict__ n_long,
         const int* __restrict__ sym_prev, const int* __restrict__ symbol_at, int has_symbols) {
    __shared__ i64 scan_scratch[GT_WARPS];
    if (blockIdx.x >= short_blocks) {  // the whole block takes this branch: it synchronises inside
        const Model model = GT_MODEL;
        emit_long_pre_tokens(blockIdx.x - short_blocks, gridDim.x - short_blocks, data, token_starts, token_ends,
                             long_list, n_long, model, sym_len, sym_next, sym_prev, sym_id, out_offsets, ids,
                             id_starts, id_ends, scan_scratch);
        return;
    }
    const i64 t = global_thread_index();
    const i64 found = tokens_found(n_tokens, n_found, has_found);
    if (t <= n_rows) row_offsets[t] = out_offsets[offsets_lower_bound(token_starts, found - 1, row_starts[t])];
    if (t >= found) return;
    const Model m = GT_MODEL;
    const i64 begin = token_starts[t], end = token_ends[t];
    const int n = (int)(end - begin);
    const bool symbol = has_symbols && symbol_at[begin] != 0;  // bpe_merge wrote it as one final symbol
    if (!symbol && merge_path(n, THREAD_MAX_BYTES, long_bytes) == LONG_PATH) return;  // a block's
    const int* len = sym_len + begin;
    const int* next = sym_next + begin;
    const int* id = sym_id + begin;
    i64 out = out_offsets[t];
    bool prev_unk = false;
    for (int p = 0; p < n; p = next[p] >= 0 ? next[p] : n) {
        const bool unk = piece_of(m, id[p]) < 0 && m.byte_ids[0] < 0;
        if (!(unk && prev_unk)) {
            const i64 run_end = unk ? begin + unknown_run_end(m, len, next, id, p) : 0;
            out = emit_symbol(m, data, begin + p, len[p], id[p], run_end, out, ids, id_starts, id_ends);
        }
        prev_unk = unk;
    }
}
