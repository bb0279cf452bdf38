// utf8.cu -- batched UTF-8 decode, encode, validation and character classes.
//
// Byte-parallel: a tile of GT_BLOCK * UTF8_ITEMS consecutive bytes per block, UTF8_ITEMS
// consecutive bytes per thread, strings of any length anywhere in the batch. A thread finds its
// string once by binary search over the offsets and then walks forward. Decoding is two passes:
// utf8_string_stats counts characters per string and per tile, the host scans both, and
// utf8_decode places each character with a block-wide prefix sum.
#include "utf8.cuh"

#define UTF8_ITEMS 16
#define UTF8_TILE (GT_BLOCK * UTF8_ITEMS)

// The bytes [first, last) of this thread, walked with the string each byte belongs to.
struct ByteWalk {
    const i64* offsets;
    i64 first, last, string, begin, end;

    __device__ ByteWalk(const i64* offs, i64 n_strings, i64 n_bytes) : offsets(offs) {
        first = (i64)blockIdx.x * UTF8_TILE + (i64)threadIdx.x * UTF8_ITEMS;
        last = first + UTF8_ITEMS < n_bytes ? first + UTF8_ITEMS : n_bytes;
        string = first < last ? string_of_byte(offsets, n_strings, first) : 0;
        begin = offsets[string];
        end = offsets[string + 1];
    }
    // Moves to the string holding byte i; returns true when that is a different string.
    __device__ __forceinline__ bool enter(i64 i) {
        if (i < end) return false;
        while (offsets[string + 1] <= i) ++string;
        begin = offsets[string];
        end = offsets[string + 1];
        return true;
    }
};

// Characters and malformed sequences per string (atomics, one per thread and string touched), and
// characters per tile. char_counts and error_counts must start at zero.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
utf8_string_stats(const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
                  u64* __restrict__ char_counts, u64* __restrict__ error_counts, i64* __restrict__ tile_counts) {
    __shared__ i64 scratch[GT_WARPS];
    ByteWalk walk(offsets, n_strings, n_bytes);
    u64 chars = 0, errors = 0;
    i64 thread_chars = 0;
    for (i64 i = walk.first; i < walk.last; ++i) {
        const i64 previous = walk.string;
        if (walk.enter(i)) {
            if (chars) atomicAdd(&char_counts[previous], chars);
            if (errors) atomicAdd(&error_counts[previous], errors);
            chars = errors = 0;
        }
        if (!utf8_starts_char(data, i, walk.begin, walk.end)) continue;
        ++chars;
        ++thread_chars;
        u32 cp;
        if (utf8_sequence_at(data + i, walk.end - i, &cp) == 0) ++errors;
    }
    if (chars) atomicAdd(&char_counts[walk.string], chars);
    if (errors) atomicAdd(&error_counts[walk.string], errors);
    const i64 total = block_sum(thread_chars, scratch);
    if (threadIdx.x == 0) tile_counts[blockIdx.x] = total;
}

// Codepoints and their byte offsets within their string. tile_offsets[b] is the index of the first
// character of tile b (the exclusive scan of utf8_string_stats's tile_counts).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
utf8_decode(const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
            const i64* __restrict__ tile_offsets, u32* __restrict__ codepoints, i64* __restrict__ positions) {
    __shared__ i64 scratch[GT_WARPS];
    ByteWalk walk(offsets, n_strings, n_bytes);
    ByteWalk again = walk;  // enter() only moves forward; the write pass starts over from here
    u32 starts = 0;  // bit k: byte first + k starts a character
    for (i64 i = walk.first; i < walk.last; ++i) {
        walk.enter(i);
        if (utf8_starts_char(data, i, walk.begin, walk.end)) starts |= 1u << (i - walk.first);
    }
    i64 tile_total;
    i64 out = tile_offsets[blockIdx.x] + block_exclusive_scan(__popc(starts), scratch, &tile_total);
    if (walk.first >= walk.last) return;
    for (i64 i = walk.first; i < walk.last; ++i) {
        again.enter(i);
        if (!((starts >> (i - walk.first)) & 1u)) continue;
        u32 cp;
        utf8_sequence_at(data + i, again.end - i, &cp);
        if (utf8_is_continuation(data[i])) cp = GT_REPLACEMENT;  // a stray continuation byte
        codepoints[out] = cp;
        positions[out] = i - again.begin;
        ++out;
    }
}

// Encoded length of every codepoint (invalid ones count as U+FFFD).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
utf8_encoded_lengths(const u32* __restrict__ codepoints, i64 n, i64* __restrict__ lengths) {
    const i64 i = global_thread_index();
    if (i < n) lengths[i] = utf8_encoded_length(codepoints[i]);
}

// Writes every codepoint's bytes; byte_ends is the inclusive scan of utf8_encoded_lengths.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
utf8_encode(const u32* __restrict__ codepoints, i64 n, const i64* __restrict__ byte_ends, u8* __restrict__ out) {
    const i64 i = global_thread_index();
    if (i >= n) return;
    const u32 cp = codepoints[i];
    utf8_write(cp, out + byte_ends[i] - utf8_encoded_length(cp));
}

// The pre-tokenizer character class (GT_CLASS_*) of every codepoint.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
char_classify(const u32* __restrict__ codepoints, i64 n, u8* __restrict__ classes) {
    const i64 i = global_thread_index();
    if (i < n) classes[i] = char_class_of(codepoints[i]);
}
