// order_key.cuh -- doubles as unsigned keys in the same order, for atomicMin / atomicMax on doubles
// (bounds that many threads tighten at once: lattice.cu's and segment.cu's segments of pieces).
#pragma once
#include "common.cuh"

// The key of x (not NaN): keys compare as unsigned as their doubles do (negative doubles' bits
// reversed below the positive ones').
__device__ __forceinline__ u64 order_key(double x) {
    const u64 bits = (u64)__double_as_longlong(x);
    return bits >> 63 ? ~bits : bits | (1ull << 63);
}

__device__ __forceinline__ double order_value(u64 key) {
    return __longlong_as_double((long long)(key >> 63 ? key & ~(1ull << 63) : ~key));
}

// n bounds that hold for anything: keys[0 .. n) upper (+inf, for atomicMin), keys[n .. 2n) lower
// (-inf, for atomicMax).
__device__ __forceinline__ void open_bounds(u64* keys, int n) {
    const double inf = __longlong_as_double(0x7ff0000000000000LL);
    for (int j = 0; j < n; ++j) {
        keys[j] = order_key(inf);
        keys[n + j] = order_key(-inf);
    }
}

// Whether x[0 .. n) meets the bounds open_bounds(keys, width) laid out, n <= width (tightened by other
// blocks: read through L2).
__device__ __forceinline__ bool within_bounds(const u64* keys, int width, int n, const double* x) {
    bool inside = true;
    for (int j = 0; j < n; ++j)
        inside &= x[j] <= order_value(__ldcg(keys + j)) && x[j] >= order_value(__ldcg(keys + width + j));
    return inside;
}
