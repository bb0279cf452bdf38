// lookback.cuh -- one-pass tiled kernels: tiles in launch order, each tile's prefix by decoupled
// look-back (Merrill & Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back"), and
// the rows of a tile found with one search per block.
//
// `status` (zeroed before the launch) holds 1 + n_tiles words: status[0] hands out tile numbers in
// the order blocks start, status[1 + t] is tile t's state: flag in the two top bits, value below.
// A tile publishes its own count (AGGREGATE) as soon as it has it, then looks back over the tiles
// before it, 32 at a time (one per lane of warp 0), summing aggregates until it meets a tile that
// published its INCLUSIVE prefix. Tile numbers come from the counter, not blockIdx, so every tile
// a block waits on belongs to a block that started earlier and publishes without waiting on a
// later one: the lowest unfinished tile never waits, so no launch can deadlock (on a GPU, and in
// the CPU emulator, whose workers take blocks in increasing order). Status words are written with
// atomicExch and read with atomicAdd(p, 0): one 64-bit word carries flag and value together, so
// no other ordering is needed.
#pragma once
#include "common.cuh"
#include "step_counter.cuh"

// GT_EMU_BREAK_LOOKBACK (tests/test_interblock_waits.py only) drops the look-back's wait, to prove
// that the emulator's interleaved mode catches a missing wait. Never in a build for a GPU.
#if defined(GT_EMU_BREAK_LOOKBACK) && !defined(CUDA_EMU)
#error "GT_EMU_BREAK_LOOKBACK breaks the look-back on purpose; it is for the CPU emulator's tests only"
#endif

#define GT_LOOKBACK_AGGREGATE (1ull << 62)
#define GT_LOOKBACK_INCLUSIVE (2ull << 62)
#define GT_LOOKBACK_VALUE ((1ull << 62) - 1ull)

// This block's tile number (call from every thread; it synchronises the block).
__device__ __forceinline__ i64 lookback_tile(u64* status, i64* slot) {
    if (threadIdx.x == 0) *slot = (i64)atomicAdd(&status[0], 1ull);
    __syncthreads();
    return *slot;
}

// Publishes tile `tile`'s count (one thread): as its inclusive prefix for tile 0, which has no
// predecessors, else as its aggregate.
__device__ __forceinline__ void lookback_publish_aggregate(u64* status, i64 tile, i64 count) {
    atomicExch(&status[1 + tile], (tile == 0 ? GT_LOOKBACK_INCLUSIVE : GT_LOOKBACK_AGGREGATE) | (u64)count);
}

// Sum of the counts of the tiles before `tile`; called by the 32 lanes of one warp after
// lookback_publish_aggregate, every lane gets it. Publishes the tile's inclusive prefix.
__device__ __forceinline__ i64 lookback_exclusive(u64* status, i64 tile, i64 count) {
    const int lane = (int)(threadIdx.x & 31u);
    i64 exclusive = 0;
    for (i64 top = tile - 1; top >= 0; top -= 32) {
        GT_STEP();
        const i64 j = top - lane;
        u64 word = GT_LOOKBACK_INCLUSIVE;  // before tile 0: an inclusive prefix of 0
        if (j >= 0) {
            // An earlier tile may not have its count yet: wait for it (it never waits on us).
#ifndef GT_EMU_BREAK_LOOKBACK
            while (((word = atomicAdd(&status[1 + j], 0ull)) >> 62) == 0) __nanosleep(64);
#else
            word = atomicAdd(&status[1 + j], 0ull);  // the broken copy reads whatever is there
#endif
        }
        const unsigned done = __ballot_sync(0xffffffffu, (word >> 62) == 2);
        const int stop = done ? __ffs((int)done) - 1 : 31;  // the nearest tile with its inclusive prefix
        i64 value = lane <= stop ? (i64)(word & GT_LOOKBACK_VALUE) : 0;
        for (int delta = 16; delta > 0; delta >>= 1) value += __shfl_xor_sync(0xffffffffu, value, delta);
        exclusive += value;
        if (done) break;
    }
    if (lane == 0 && tile > 0) atomicExch(&status[1 + tile], GT_LOOKBACK_INCLUSIVE | (u64)(exclusive + count));
    return exclusive;
}

// This thread's exclusive prefix of `count` over the whole launch: its rank in the block's scan
// plus the earlier tiles' sum by look-back (kept in the block's shared `*prior`); `*total` gets the
// block's sum. Call from every thread of the block (it synchronises it).
__device__ __forceinline__ i64 lookback_prefix(i64 count, u64* status, i64 tile, i64* scratch, i64* prior,
                                               i64* total) {
    const i64 rank = block_exclusive_scan(count, scratch, total);
    if (threadIdx.x == 0) lookback_publish_aggregate(status, tile, *total);
    if (threadIdx.x < 32) {
        const i64 before = lookback_exclusive(status, tile, *total);
        if (threadIdx.x == 0) *prior = before;
    }
    __syncthreads();
    return *prior + rank;
}

// First k in [0, n] with offsets[k] >= pos (n + 1 when none); offsets has n + 1 ascending entries.
__device__ __forceinline__ i64 offsets_lower_bound(const i64* offsets, i64 n, i64 pos) {
    i64 lo = 0, hi = n + 1;
    while (lo < hi) {
        const i64 mid = lo + (hi - lo) / 2;
        if (offsets[mid] < pos) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Exclusive running maximum over the block in thread order, `seed` before thread 0. `scratch`
// holds GT_WARPS entries of shared memory. Block size must be GT_BLOCK.
__device__ __forceinline__ i64 block_exclusive_max(i64 value, i64 seed, i64* scratch) {
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    i64 inclusive = value;
    for (int delta = 1; delta < 32; delta <<= 1) {
        const i64 up = __shfl_up_sync(0xffffffffu, inclusive, delta);
        if (lane >= (unsigned)delta && up > inclusive) inclusive = up;
    }
    i64 before = __shfl_up_sync(0xffffffffu, inclusive, 1);
    if (lane == 31) scratch[warp] = inclusive;
    __syncthreads();
    i64 best = seed;
    for (int w = 0; w < (int)warp; ++w) best = scratch[w] > best ? scratch[w] : best;
    __syncthreads();
    if (lane > 0 && before > best) best = before;
    return best;
}
