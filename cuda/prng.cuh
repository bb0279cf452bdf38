// prng.cuh -- the counter-based random stream every sampling kernel draws from.
//
// draw(key, position, sub) = mix(mix(key ^ position) ^ sub), mix being SplitMix64's finaliser
// (golden-gamma increment, two xor-shift-multiplies). A value depends only on its three
// counters, never on which thread or block computes it, so results do not depend on the launch
// shape. The Numba twin is cpu_fallback/prng.py; gpu_text/word2vec/model.py derives the keys.
#pragma once

#include "common.cuh"

__device__ __forceinline__ u64 gt_mix(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 gt_draw(u64 key, u64 position, u64 sub) {
    return gt_mix(gt_mix(key ^ position) ^ sub);
}
