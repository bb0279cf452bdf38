// scan_helpers.cuh -- warp-level helpers of the emulator's test kernels (also valid CUDA C for
// NVRTC: built-in types only). Included from block_scan.cu to exercise include handling.
#pragma once

typedef unsigned int u32;
#define FULL_MASK 0xffffffffu
#define INT32_LOWEST (-2147483647 - 1)

// Inclusive prefix sum over the warp's lanes (lanes that do not exist contribute nothing).
__device__ __forceinline__ int warp_inclusive_scan(int value, u32 lane) {
#pragma unroll
    for (int delta = 1; delta < 32; delta <<= 1) {
        const int up = __shfl_up_sync(FULL_MASK, value, delta);
        if (lane >= (u32)delta) value += up;
    }
    return value;
}

// Maximum over the warp: in every lane of a full warp, but only in lane 0 of a partial one (a
// butterfly partner that does not exist hands back the caller's own value, so lanes near the
// end miss some of the others; lane 0 still sees every lane).
__device__ __forceinline__ int warp_max(int value) {
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) value = max(value, __shfl_xor_sync(FULL_MASK, value, mask));
    return value;
}
