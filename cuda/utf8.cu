// utf8.cu -- batched UTF-8 decode, encode, validation and character classes.
//
// Decoding is one pass, byte-parallel: a tile of GT_BLOCK * UTF8_ITEMS consecutive bytes per
// block (strings of any length anywhere in the batch), UTF8_ITEMS bytes per thread, loaded as one
// 16-byte word into shared memory with a halo of UTF8_HALO bytes on each side (3 are read: a
// sequence is at most 4 bytes). The block finds its rows with one pair of searches over the
// offsets (first string starting in the halo-widened tile, first starting past it) and marks the
// string starts of the tile in shared memory, one thread per string. Each thread walks its 16
// bytes once: every lead byte is decoded once, its codepoint kept in a register, and the bytes it
// covers are skipped. The tile's character count goes to the decoupled look-back (lookback.cuh)
// at once; the characters are staged in shared memory in output order and stored coalesced once
// the tile's prefix arrives. Row offsets come from the same prefix (the character rank of each
// string's first byte), so no second kernel and no host scan are needed.
//
// Per-thread work: UTF8_ITEMS bytes, plus ceil(strings starting in the tile / GT_BLOCK) row
// entries (at most 16 + 1 for tiles without empty strings), plus the look-back (one step per 32
// earlier tiles still without an inclusive prefix; one step when tiles finish in order).
#include "lookback.cuh"
#include "utf8.cuh"

#define UTF8_ITEMS 16
#define UTF8_TILE (GT_BLOCK * UTF8_ITEMS)
#define UTF8_HALO 16
#define UTF8_STAGED (UTF8_HALO + UTF8_TILE + UTF8_HALO)
// Five blocks per SM: ~41 KiB of shared memory each, and at most 48 registers (62.5% occupancy).
#define UTF8_BLOCKS_PER_SM 5
// A staged position whose string began before the tile: the offset from the tile start, flagged.
#define UTF8_FROM_TILE 0x80000000u

// Shared memory of one decode tile (~41 KiB).
struct DecodeTile {
    u8 bytes[UTF8_STAGED];     // data[tile_start - UTF8_HALO, tile_end + UTF8_HALO), 0 outside
    u8 boundary[UTF8_STAGED];  // 1 where a string starts, and at and past the end of the batch
    u32 codepoints[UTF8_TILE];  // the tile's characters, in output order
    u32 positions[UTF8_TILE];   // their offsets in their string (or from the tile start, flagged)
    unsigned short starts[GT_BLOCK];  // bit j: byte j of thread t starts a character
    int ranks[GT_BLOCK];              // tile index of thread t's first character
    i64 scratch[GT_WARPS];
    i64 tile, k_first, k_stop, carried_begin, prefix;
};

// One tile of the decode (Pos: int, or i64 for batches of 2 GiB and more). Without codepoints it
// only counts: row offsets, and malformed sequences per string into error_counts.
template <class Pos>
__device__ __forceinline__ void decode_tile(DecodeTile& sh, const u8* __restrict__ data,
                                            const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
                                            u64* __restrict__ status, u32* __restrict__ codepoints,
                                            Pos* __restrict__ positions, i64* __restrict__ row_offsets,
                                            u64* __restrict__ error_counts) {
    const i64 tile = lookback_tile(status, &sh.tile);
    const i64 n_tiles = (n_bytes + UTF8_TILE - 1) / UTF8_TILE;
    const i64 tile_start = tile * UTF8_TILE;
    const i64 tile_end = tile_start + UTF8_TILE < n_bytes ? tile_start + UTF8_TILE : n_bytes;
    const i64 base = tile_start - UTF8_HALO;  // batch position of bytes[0]
    const i64 lo = tile_start - UTF8_HALO > 0 ? tile_start - UTF8_HALO : 0;
    const i64 hi = tile_end + UTF8_HALO < n_bytes ? tile_end + UTF8_HALO : n_bytes;
    // The block's rows: two searches, by two warps at once.
    if (threadIdx.x == 0) {
        const i64 k = offsets_lower_bound(offsets, n_strings, lo);
        sh.k_first = k;
        sh.carried_begin = k > 0 ? offsets[k - 1] : 0;
    }
    if (threadIdx.x == 32) sh.k_stop = offsets_lower_bound(offsets, n_strings, hi);

    // Bytes: one aligned 16-byte load per thread where the data allows it; halos by threads 0, 1.
    const bool aligned = ((unsigned long long)data & 15ull) == 0;
    const auto stage16 = [&](i64 at, int slot) {
        if (aligned && at >= 0 && at + 16 <= n_bytes) {
            *reinterpret_cast<uint4*>(&sh.bytes[slot]) = *reinterpret_cast<const uint4*>(data + at);
        } else {
            for (int j = 0; j < 16; ++j) sh.bytes[slot + j] = at + j >= 0 && at + j < n_bytes ? data[at + j] : 0;
        }
        for (int j = 0; j < 16; ++j) sh.boundary[slot + j] = at + j >= n_bytes ? 1 : 0;
    };
    const int slot = UTF8_HALO + (int)threadIdx.x * UTF8_ITEMS;
    const i64 first = tile_start + (i64)threadIdx.x * UTF8_ITEMS;
    stage16(first, slot);
    if (threadIdx.x == 0) stage16(base, 0);
    if (threadIdx.x == 1) stage16(tile_start + UTF8_TILE, UTF8_HALO + UTF8_TILE);
    __syncthreads();
    const i64 k_first = sh.k_first, k_stop = sh.k_stop;
    for (i64 k = k_first + threadIdx.x; k < k_stop; k += GT_BLOCK) {
        GT_STEP();
        sh.boundary[offsets[k] - base] = 1;
    }
    __syncthreads();

    // The start of the string holding each thread's first byte: the last string start before it.
    i64 last = -1;
    for (int j = 0; j < UTF8_ITEMS; ++j) {
        if (sh.boundary[slot + j] && first + j < tile_end) last = first + j;
    }
    i64 seed = sh.carried_begin;
    for (int j = 0; j < UTF8_HALO; ++j) {
        if (base + j >= lo && sh.boundary[j]) seed = base + j;
    }
    i64 begin = block_exclusive_max(last, seed, sh.scratch);
    const i64 carried = seed;  // where the string holding tile_start - 1 begins

    // Walk the thread's bytes once: a character starts where no earlier sequence covers the byte.
    // Before the first byte, up to 3 bytes of the same string may hold a covering lead byte.
    i64 cover = first;
    const i64 stop = first - 3 > begin ? first - 3 : begin;
    for (i64 p = first - 1; p >= stop; --p) {
        if (!utf8_is_continuation(sh.bytes[p - base])) {
            u32 ignored;
            int limit = 1;
            while (limit < 4 && !sh.boundary[p - base + limit]) ++limit;
            const int len = utf8_sequence_at(&sh.bytes[p - base], limit, &ignored);
            cover = p + len > first ? p + len : first;
            break;
        }
    }
    u32 cps[UTF8_ITEMS];
    unsigned starts = 0;
    i64 error_string = -1;
    u64 errors = 0;
#pragma unroll
    for (int j = 0; j < UTF8_ITEMS; ++j) {
        const i64 i = first + j;
        cps[j] = 0;
        if (i >= tile_end || i < cover) continue;
        starts |= 1u << j;
        const u8 b0 = sh.bytes[slot + j];
        int len = 1;
        u32 cp = b0;
        if (b0 >= 0x80u) {
            int limit = 1;  // bytes left in the string, up to 4
            while (limit < 4 && !sh.boundary[slot + j + limit]) ++limit;
            len = utf8_sequence_at(&sh.bytes[slot + j], limit, &cp);
            if (len == 0) {
                len = 1;
                if (error_counts) {  // malformed input is rare: find its string only then
                    if (error_string < 0 || i >= offsets[error_string + 1]) {
                        if (errors) atomicAdd(&error_counts[error_string], errors);
                        // among the block's strings: [k_first - 1, k_stop) holds every byte of the tile
                        const i64 low = k_first > 0 ? k_first - 1 : 0;
                        error_string = low + string_of_byte(offsets + low, k_stop - low, i);
                        errors = 0;
                    }
                    ++errors;
                }
            }
        }
        cps[j] = cp;
        cover = i + len;
    }
    if (errors) atomicAdd(&error_counts[error_string], errors);

    i64 tile_chars;
    const int rank = (int)block_exclusive_scan(__popc(starts), sh.scratch, &tile_chars);
    if (threadIdx.x == 0) lookback_publish_aggregate(status, tile, tile_chars);
    sh.starts[threadIdx.x] = (unsigned short)starts;
    sh.ranks[threadIdx.x] = rank;
    if (codepoints) {
        int out = rank;
#pragma unroll
        for (int j = 0; j < UTF8_ITEMS; ++j) {
            const i64 i = first + j;
            if (i < tile_end && sh.boundary[slot + j]) begin = i;
            if (!((starts >> j) & 1u)) continue;
            sh.codepoints[out] = cps[j];
            sh.positions[out] = begin >= tile_start ? (u32)(i - begin) : UTF8_FROM_TILE | (u32)(i - tile_start);
            ++out;
        }
    }
    if (threadIdx.x < 32) {
        const i64 prefix = lookback_exclusive(status, tile, tile_chars);
        if (threadIdx.x == 0) sh.prefix = prefix;
    }
    __syncthreads();
    const i64 prefix = sh.prefix;
    if (codepoints) {
        for (int k = (int)threadIdx.x; k < tile_chars; k += GT_BLOCK) {
            const u32 at = sh.positions[k];
            codepoints[prefix + k] = sh.codepoints[k];
            positions[prefix + k] = (at & UTF8_FROM_TILE) ? (Pos)((i64)(at & ~UTF8_FROM_TILE) + (tile_start - carried))
                                                          : (Pos)at;
        }
    }
    // Row offsets: the output index of each string's first byte, which always starts a character.
    for (i64 k = k_first + threadIdx.x; k < k_stop; k += GT_BLOCK) {
        GT_STEP();
        const i64 at = offsets[k] - tile_start;
        if (at < 0 || at >= UTF8_TILE) continue;
        const int t = (int)(at / UTF8_ITEMS), j = (int)(at % UTF8_ITEMS);
        row_offsets[k] = prefix + sh.ranks[t] + __popc(sh.starts[t] & ((1u << j) - 1u));
    }
    if (tile == n_tiles - 1) {  // strings at the end of the batch (empty ones) and the total
        for (i64 k = k_stop + threadIdx.x; k <= n_strings; k += GT_BLOCK) {
            GT_STEP();
            row_offsets[k] = prefix + tile_chars;
        }
    }
}

// Codepoints, their int32 offsets within their string, and row offsets (n_strings + 1 entries),
// in one pass. status: 1 + ceil(n_bytes / UTF8_TILE) zeros. codepoints and positions have room for
// n_bytes entries (a character is at least one byte); row_offsets[n_strings] is the total.
extern "C" __global__ void __launch_bounds__(GT_BLOCK, UTF8_BLOCKS_PER_SM)
utf8_decode(const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
            u64* __restrict__ status, u32* __restrict__ codepoints, int* __restrict__ positions,
            i64* __restrict__ row_offsets) {
    __shared__ __align__(16) DecodeTile sh;
    decode_tile<int>(sh, data, offsets, n_strings, n_bytes, status, codepoints, positions, row_offsets, nullptr);
}

// utf8_decode with int64 positions, for batches of 2 GiB and more.
extern "C" __global__ void __launch_bounds__(GT_BLOCK, UTF8_BLOCKS_PER_SM)
utf8_decode_wide(const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
                 u64* __restrict__ status, u32* __restrict__ codepoints, i64* __restrict__ positions,
                 i64* __restrict__ row_offsets) {
    __shared__ __align__(16) DecodeTile sh;
    decode_tile<i64>(sh, data, offsets, n_strings, n_bytes, status, codepoints, positions, row_offsets, nullptr);
}

// Per string, without decoding: row offsets (as utf8_decode: character counts by difference) and
// malformed sequences (error_counts, zeroed; one atomic per thread and string with errors).
extern "C" __global__ void __launch_bounds__(GT_BLOCK, UTF8_BLOCKS_PER_SM)
utf8_string_stats(const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
                  u64* __restrict__ status, i64* __restrict__ row_offsets, u64* __restrict__ error_counts) {
    __shared__ __align__(16) DecodeTile sh;
    decode_tile<int>(sh, data, offsets, n_strings, n_bytes, status, nullptr, nullptr, row_offsets, error_counts);
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
