// tile_scan.cuh -- a launch-wide exclusive scan whose tiles of GT_BLOCK elements are scanned by the
// blocks that own them, in the order blocks start (lookback_tile), with a fixed association order.
//
// A tile's block scans its elements in shared memory (Blelloch's up-sweep, then the down-sweep
// seeded with the product of the earlier tiles) and combines whole tiles as a Fenwick tree does:
// tile t publishes node t, the product of tiles t + 1 - lowbit(t + 1) ... t (its own product after
// the nodes t - 1, t - 2, t - 4, ... below lowbit(t + 1)), and its prefix is the product of the
// nodes t - 1, then t - 1 - lowbit(t), ... Every product is taken in the same order whatever the
// timing, so an operator that rounds (max-plus products of doubles) gives the same bits every run,
// and a tile waits on at most 2 log2(tiles) nodes, each of a tile that started earlier and never
// waits on a later one (no deadlock, as lookback.cuh's look-back). Per thread: an element, its
// put, 2 log2(GT_BLOCK) sweep steps and, for one thread a tile, at most 2 log2(tiles) products.
//
// Op supplies: T, the element type, and W, the words of a product (flags, counts and such included);
// identity(p); join(later, earlier), later = later after earlier, in place (earlier stays); element(i,
// p) writes element i; put(i, p) gets the product of elements 0 ... i - 1 (p may be overwritten).
// Nodes are written, then fenced, then flagged with atomicExch; flags[t] (zeroed before the launch):
// 1 when tile t's node is published, 2 when its puts are done (for readers of what put wrote).
#pragma once
#include "common.cuh"
#include "step_counter.cuh"

// Waits until flags[t] >= state (tile t started earlier and waits on no later tile).
__device__ __forceinline__ void tile_wait(u64* flags, i64 t, u64 state) {
    while (atomicAdd(&flags[t], 0ull) < state) __nanosleep(64);
    __threadfence();
}

// Tile `tile`'s part of the scan of elements 0 ... n - 1 (tile * GT_BLOCK < n), its sweeps in `tree`
// (GT_BLOCK * W words of this block's own: shared memory, or global scratch where a product is too
// wide for shared memory). Call from every thread of the block (it synchronises it); block size must
// be GT_BLOCK. Called through tile_scan or tile_scan_global, not inlined: the caller's registers stay
// its own.
template <class Op>
__device__ __forceinline__ void tile_scan_in(const Op& op, i64 n, i64 tile, u64* flags, typename Op::T* nodes,
                                             typename Op::T* tree) {
    using T = typename Op::T;
    constexpr int W = Op::W;
    __shared__ T other[W];
    const unsigned me = threadIdx.x;
    const i64 i = tile * GT_BLOCK + me;
    T* p = tree + W * me;
    GT_STEP();
    if (i < n) op.element(i, p); else Op::identity(p);
    __syncthreads();
    for (unsigned d = 1; d < GT_BLOCK; d <<= 1) {  // up-sweep: p = p after the d elements' product before it
        GT_STEP();
        if ((me + 1) % (2 * d) == 0) Op::join(p, p - W * d);
        __syncthreads();
    }
    if (me == GT_BLOCK - 1) {  // p: the tile's product; its node, then the earlier tiles' product
        const i64 low = (tile + 1) & -(tile + 1);
        for (i64 j = 1; j < low; j <<= 1) {
            GT_STEP();
            tile_wait(flags, tile - j, 1);
            for (int m = 0; m < W; ++m) other[m] = __ldcg(nodes + W * (tile - j) + m);
            Op::join(p, other);
        }
        for (int m = 0; m < W; ++m) nodes[W * tile + m] = p[m];
        __threadfence();
        atomicExch(&flags[tile], 1ull);
        Op::identity(p);
        for (i64 t = tile; t > 0; t -= t & -t) {
            GT_STEP();
            tile_wait(flags, t - 1, 1);
            for (int m = 0; m < W; ++m) other[m] = __ldcg(nodes + W * (t - 1) + m);
            Op::join(p, other);
        }
    }
    __syncthreads();
    for (unsigned d = GT_BLOCK / 2; d > 0; d >>= 1) {  // down-sweep: the product before each range
        GT_STEP();
        if ((me + 1) % (2 * d) == 0) {
            T* q = p - W * d;  // the left half's product; p: the product before the range
            for (int m = 0; m < W; ++m) {
                const T swap = p[m];
                p[m] = q[m];
                q[m] = swap;
            }
            Op::join(p, q);  // before the right half: the left half after what came before
        }
        __syncthreads();
    }
    GT_STEP();
    if (i < n) op.put(i, p);
    __threadfence();
    __syncthreads();
    if (me == 0) atomicExch(&flags[tile], 2ull);
}

// tile_scan_in with the sweeps in shared memory.
template <class Op>
__device__ __noinline__ void tile_scan(const Op& op, i64 n, i64 tile, u64* flags, typename Op::T* nodes) {
    __shared__ typename Op::T tree[GT_BLOCK * Op::W];
    tile_scan_in(op, n, tile, flags, nodes, tree);
}

// tile_scan_in with the sweeps in `tree`, this block's GT_BLOCK * W words of global scratch: products
// too wide for shared memory (the block's own words, so its barriers order them as shared memory's).
template <class Op>
__device__ __noinline__ void tile_scan_global(const Op& op, i64 n, i64 tile, u64* flags, typename Op::T* nodes,
                                              typename Op::T* tree) {
    tile_scan_in(op, n, tile, flags, nodes, tree);
}
