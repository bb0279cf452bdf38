// trie.cu -- batched double-array trie queries: prefix search over spans, exact lookup, longest prefix.
//
// Prefix search is byte-parallel: one thread per byte of the concatenated spans (span_bytes is the
// exclusive scan of the span lengths), so a long span spreads over many blocks. The thread finds
// its span by binary search, and when its byte starts a character it walks the trie from there.
// Two passes, as in utf8.cu: trie_count_matches counts per block, the host scans the block counts,
// and trie_prefix_search recounts, places each thread's matches with a block-wide prefix sum and
// writes them. Memory stays one counter per block, not per byte, at the price of a second walk.
// Lookup and longest prefix are one thread per string (each walk stops at the first missing edge).
#include "double_array.cuh"
#include "utf8.cuh"

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
            pos = trie_step(state, check, label, size, pos, data[i]);
            if (pos < 0) return;
            const int value = trie_value(state, check, label, eow, size, pos);
            if (value >= 0) visit(i + 1, value);
        }
    }
};

// The byte at flat index t of the concatenated spans: its position in data and its span.
struct SpanByte {
    i64 span, at, begin, end;

    __device__ SpanByte(const i64* span_starts, const i64* span_ends, const i64* span_bytes, i64 n_spans, i64 t) {
        span = string_of_byte(span_bytes, n_spans, t);  // the last span starting at or before t: empties skipped
        begin = span_starts[span];
        end = span_ends[span];
        at = begin + (t - span_bytes[span]);
    }
    // Words may start only where a character starts.
    __device__ __forceinline__ bool starts_char(const u8* data) const { return utf8_starts_char(data, at, begin, end); }
};

// Number of matches of each block's bytes. block_counts has one entry per block.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
trie_count_matches(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
                   const u8* __restrict__ eow, int trie_size, const u8* __restrict__ data,
                   const i64* __restrict__ span_starts, const i64* __restrict__ span_ends,
                   const i64* __restrict__ span_bytes, i64 n_spans, i64 n_bytes, i64* __restrict__ block_counts) {
    __shared__ i64 scratch[GT_WARPS];
    const TrieView trie{state, check, label, eow, trie_size};
    const i64 t = global_thread_index();
    i64 matches = 0;
    if (t < n_bytes) {
        const SpanByte b(span_starts, span_ends, span_bytes, n_spans, t);
        if (b.starts_char(data)) trie.words_at(data, b.at, b.end, [&](i64, int) { ++matches; });
    }
    const i64 total = block_sum(matches, scratch);
    if (threadIdx.x == 0) block_counts[blockIdx.x] = total;
}

// Writes every match (start and end positions in data, value), ordered by span, start, end.
// block_offsets is the exclusive scan of trie_count_matches's block_counts. The first byte of each
// span writes span_edge_offsets for that span and for the empty spans just before it; the host
// fills the entries at the end of the bytes (trailing empty spans and the total).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
trie_prefix_search(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
                   const u8* __restrict__ eow, int trie_size, const u8* __restrict__ data,
                   const i64* __restrict__ span_starts, const i64* __restrict__ span_ends,
                   const i64* __restrict__ span_bytes, i64 n_spans, i64 n_bytes,
                   const i64* __restrict__ block_offsets, i64* __restrict__ edge_starts, i64* __restrict__ edge_ends,
                   int* __restrict__ edge_values, i64* __restrict__ span_edge_offsets) {
    __shared__ i64 scratch[GT_WARPS];
    const TrieView trie{state, check, label, eow, trie_size};
    const i64 t = global_thread_index();
    const bool active = t < n_bytes;
    SpanByte b(span_starts, span_ends, span_bytes, n_spans, active ? t : 0);
    const bool searching = active && b.starts_char(data);
    i64 matches = 0;
    if (searching) trie.words_at(data, b.at, b.end, [&](i64, int) { ++matches; });
    i64 block_total;
    i64 out = block_offsets[blockIdx.x] + block_exclusive_scan(matches, scratch, &block_total);
    if (!active) return;
    if (t == span_bytes[b.span]) {
        for (i64 s = b.span; s >= 0 && span_bytes[s] == t; --s) span_edge_offsets[s] = out;
    }
    if (!searching) return;
    trie.words_at(data, b.at, b.end, [&](i64 end, int value) {
        edge_starts[out] = b.at;
        edge_ends[out] = end;
        edge_values[out] = value;
        ++out;
    });
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
