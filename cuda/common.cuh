// common.cuh -- device helpers shared by every kernel family.
//
// Written for NVRTC (no <cstdint>: NVRTC ships no C++ standard headers) and for the project's
// CPU emulator (tests/cuda_emulator/cuda_emu.h), so only plain built-in types are used.
#pragma once

typedef unsigned char u8;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

// Threads per block of the tiled kernels; the launch wrappers in gpu_text/cuda_ops use the same.
#define GT_BLOCK 256
#define GT_WARPS (GT_BLOCK / 32)

// Global index of this thread in a 1-D launch, in 64 bits: batches may exceed 2^31 bytes.
__device__ __forceinline__ i64 global_thread_index() {
    return (i64)blockIdx.x * blockDim.x + threadIdx.x;
}

// Sum of `value` over the block; every thread receives the total. `scratch` holds GT_WARPS
// entries of shared memory. Block size must be GT_BLOCK.
__device__ __forceinline__ i64 block_sum(i64 value, i64* scratch) {
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    for (int delta = 16; delta > 0; delta >>= 1) value += __shfl_down_sync(0xffffffffu, value, delta);
    if (lane == 0) scratch[warp] = value;
    __syncthreads();
    i64 total = 0;
    for (int w = 0; w < GT_WARPS; ++w) total += scratch[w];
    __syncthreads();  // scratch may be reused right after
    return total;
}

// Exclusive prefix sum of `value` over the block in thread order; *total gets the block sum.
// `scratch` holds GT_WARPS entries of shared memory. Block size must be GT_BLOCK.
__device__ __forceinline__ i64 block_exclusive_scan(i64 value, i64* scratch, i64* total) {
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    i64 inclusive = value;
    for (int delta = 1; delta < 32; delta <<= 1) {
        const i64 up = __shfl_up_sync(0xffffffffu, inclusive, delta);
        if (lane >= (unsigned)delta) inclusive += up;
    }
    if (lane == 31) scratch[warp] = inclusive;
    __syncthreads();
    i64 warp_base = 0, sum = 0;
    for (int w = 0; w < GT_WARPS; ++w) {
        if (w == (int)warp) warp_base = sum;
        sum += scratch[w];
    }
    __syncthreads();
    *total = sum;
    return warp_base + inclusive - value;
}

// Index of the string holding byte `pos`: the last j with offsets[j] <= pos (empty strings,
// which share their start with the next string, are skipped). offsets has n_strings + 1 entries.
__device__ __forceinline__ i64 string_of_byte(const i64* offsets, i64 n_strings, i64 pos) {
    i64 lo = 0, hi = n_strings;  // answer in [lo, hi)
    while (hi - lo > 1) {
        const i64 mid = lo + (hi - lo) / 2;
        if (offsets[mid] <= pos) lo = mid; else hi = mid;
    }
    return lo;
}
