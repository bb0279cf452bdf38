// trie.cu -- batched double-array trie queries: prefix search over spans, exact lookup, longest prefix.
//
// Prefix search is byte-parallel and one pass: one thread per byte of the concatenated spans
// (span_bytes is the exclusive scan of the span lengths), so a long span spreads over many
// blocks. The block finds its spans with one pair of searches over span_bytes and marks the spans
// starting in it in shared memory; a block-wide running maximum gives every thread its span. A
// thread whose byte starts a character walks the trie once, keeping its first TRIE_KEPT matches in
// registers and counting the rest; the block's match count goes to the decoupled look-back
// (lookback.cuh), and each thread writes its matches at its place in the output order. Only a
// thread with more than TRIE_KEPT matches at one start walks again to write them. The output has
// room for `capacity` matches (an upper bound chosen by the host); the true total comes back in
// span_edge_offsets[n_spans], and when it exceeds the capacity the host launches again with
// room for it.
//
// Per-thread work: one trie walk (at most the longest word's bytes; two above TRIE_KEPT matches),
// plus ceil(spans starting in the block / GT_BLOCK) offset entries, plus the look-back.
// Lookup and longest prefix are one thread per string (each walk stops at the first missing edge).
#include "double_array.cuh"
#include "lookback.cuh"
#include "utf8.cuh"

#define TRIE_KEPT 7

struct TrieView {
    const int* state;
    const int* check;
    const u8* label;
    const u8* eow;
    int size;

    // Calls visit(end, value) for every word data[at:end) with end <= limit, shortest first.
    template <class Visit>
    __device__ __forceinline__ void words_at(const u8* data, i64 at, i64 limit, Visit visit) const {
        int pos = 0;
        for (i64 i = at; i < limit; ++i) {
            GT_STEP();
            pos = trie_step(state, check, label, size, pos, data[i]);
            if (pos < 0) return;
            const int value = trie_value(state, check, label, eow, size, pos);
            if (value >= 0) visit(i + 1, value);
        }
    }
};

// Every match (start and end positions in data, value), ordered by span, start, end, at most
// `capacity` of them stored; span_edge_offsets (n_spans + 1 entries) gets each span's first
// match and the total. status: 1 + gridDim.x zeros.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
trie_prefix_search(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
                   const u8* __restrict__ eow, int trie_size, const u8* __restrict__ data,
                   const i64* __restrict__ span_starts, const i64* __restrict__ span_ends,
                   const i64* __restrict__ span_bytes, i64 n_spans, i64 n_bytes, u64* __restrict__ status,
                   i64 capacity, i64* __restrict__ edge_starts, i64* __restrict__ edge_ends,
                   int* __restrict__ edge_values, i64* __restrict__ span_edge_offsets) {
    __shared__ i64 scratch[GT_WARPS];
    __shared__ i64 span_at[GT_BLOCK];  // the non-empty span starting at each byte of the block, or -1
    __shared__ int ranks[GT_BLOCK];    // each thread's first match, counted from the block's first
    __shared__ i64 tile_slot, k_first, k_stop, prefix_slot;
    const i64 tile = lookback_tile(status, &tile_slot);
    const i64 n_tiles = (n_bytes + GT_BLOCK - 1) / GT_BLOCK;
    const i64 first = tile * GT_BLOCK;
    const i64 stop = first + GT_BLOCK < n_bytes ? first + GT_BLOCK : n_bytes;
    const i64 t = first + threadIdx.x;
    if (threadIdx.x == 0) k_first = offsets_lower_bound(span_bytes, n_spans, first);
    if (threadIdx.x == 32) k_stop = offsets_lower_bound(span_bytes, n_spans, stop);
    span_at[threadIdx.x] = -1;
    __syncthreads();
    const i64 k_begin = k_first, k_end = k_stop;
    for (i64 k = k_begin + threadIdx.x; k < k_end; k += GT_BLOCK) {
        GT_STEP();
        if (span_bytes[k] < span_bytes[k + 1]) span_at[span_bytes[k] - first] = k;
    }
    __syncthreads();
    // The span of byte t: the last non-empty span starting at or before it.
    const i64 mine = span_at[threadIdx.x];
    const i64 before = block_exclusive_max(mine, k_begin - 1, scratch);
    const i64 span = mine > before ? mine : before;

    i64 at = 0;
    int found = 0;
    int lengths[TRIE_KEPT], values[TRIE_KEPT];
#pragma unroll
    for (int r = 0; r < TRIE_KEPT; ++r) lengths[r] = values[r] = 0;
    if (t < n_bytes) {
        const i64 begin = span_starts[span], end = span_ends[span];
        at = begin + (t - span_bytes[span]);
        // Words may start only where a character starts.
        if (utf8_starts_char(data, at, begin, end)) {
            int pos = 0;  // TrieView::words_at written out, keeping the first TRIE_KEPT matches
            for (i64 i = at; i < end; ++i) {
                GT_STEP();
                pos = trie_step(state, check, label, trie_size, pos, data[i]);
                if (pos < 0) break;
                const int value = trie_value(state, check, label, eow, trie_size, pos);
                if (value < 0) continue;
#pragma unroll
                for (int r = 0; r < TRIE_KEPT; ++r) {
                    if (r == found) { lengths[r] = (int)(i + 1 - at); values[r] = value; }
                }
                ++found;
            }
        }
    }
    i64 tile_matches;
    const i64 rank = block_exclusive_scan(found, scratch, &tile_matches);
    if (threadIdx.x == 0) lookback_publish_aggregate(status, tile, tile_matches);
    ranks[threadIdx.x] = (int)rank;
    if (threadIdx.x < 32) {
        const i64 prefix = lookback_exclusive(status, tile, tile_matches);
        if (threadIdx.x == 0) prefix_slot = prefix;
    }
    __syncthreads();
    const i64 prefix = prefix_slot;
    i64 out = prefix + rank;
    if (found <= TRIE_KEPT) {
#pragma unroll
        for (int r = 0; r < TRIE_KEPT; ++r) {
            if (r < found && out + r < capacity) {
                edge_starts[out + r] = at;
                edge_ends[out + r] = at + lengths[r];
                edge_values[out + r] = values[r];
            }
        }
    } else {
        const i64 end = span_ends[span];
        int pos = 0;
        for (i64 i = at; i < end; ++i) {  // words_at written out: a lambda advancing `out` spills
            GT_STEP();
            pos = trie_step(state, check, label, trie_size, pos, data[i]);
            if (pos < 0) break;
            const int value = trie_value(state, check, label, eow, trie_size, pos);
            if (value < 0) continue;
            if (out < capacity) {
                edge_starts[out] = at;
                edge_ends[out] = i + 1;
                edge_values[out] = value;
            }
            ++out;
        }
    }
    // Each span's first match: the first match at or after its first byte.
    for (i64 k = k_begin + threadIdx.x; k < k_end; k += GT_BLOCK) {
        GT_STEP();
        span_edge_offsets[k] = prefix + ranks[span_bytes[k] - first];
    }
    if (tile == n_tiles - 1) {  // spans starting at the end of the bytes (empty ones) and the total
        for (i64 k = k_end + threadIdx.x; k <= n_spans; k += GT_BLOCK) {
            GT_STEP();
            span_edge_offsets[k] = prefix + tile_matches;
        }
    }
}

// Per string: the longest word that is a prefix of it, as (length, value); (0, -1) when none.
__device__ __forceinline__ void longest_word(const TrieView& trie, const u8* data, i64 begin, i64 end,
                                             i64* length, int* value) {
    *length = 0;
    *value = -1;
    trie.words_at(data, begin, end, [&](i64 stop, int found) { *length = stop - begin; *value = found; });
}

// The value of every string of a ragged batch, -1 when it is not a word.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
trie_lookup(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
            const u8* __restrict__ eow, int trie_size, const u8* __restrict__ data, const i64* __restrict__ offsets,
            i64 n_strings, int* __restrict__ values) {
    const i64 s = global_thread_index();
    if (s >= n_strings) return;
    const TrieView trie{state, check, label, eow, trie_size};
    const i64 begin = offsets[s], end = offsets[s + 1];
    i64 length;
    int value;
    longest_word(trie, data, begin, end, &length, &value);
    values[s] = length > 0 && length == end - begin ? value : -1;
}

// Per string: the byte length and value of its longest prefix word; 0 and -1 when none.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
trie_longest_prefix(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
                    const u8* __restrict__ eow, int trie_size, const u8* __restrict__ data,
                    const i64* __restrict__ offsets, i64 n_strings, i64* __restrict__ lengths, int* __restrict__ values) {
    const i64 s = global_thread_index();
    if (s >= n_strings) return;
    const TrieView trie{state, check, label, eow, trie_size};
    longest_word(trie, data, offsets[s], offsets[s + 1], &lengths[s], &values[s]);
}
