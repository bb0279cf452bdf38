// warp_ops.cu -- warp votes, shuffles (with width), warp reductions/matches, bit intrinsics and
// 3-D thread/block indices, for the emulator's tests. 1-D blocks unless stated; any block size.
#define FULL 0xffffffffu

__device__ __forceinline__ unsigned linear_thread() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ long long global_thread() {
    return (long long)blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + linear_thread();
}

// Votes over each warp (partial warps: only the lanes that exist take part).
extern "C" __global__ void votes(const int* __restrict__ pred, unsigned* __restrict__ ballot, int* __restrict__ any,
                                 int* __restrict__ all, unsigned* __restrict__ active, int* __restrict__ uni) {
    const long long g = global_thread();
    const int p = pred[g];
    ballot[g] = __ballot_sync(FULL, p);
    any[g] = __any_sync(FULL, p);
    all[g] = __all_sync(FULL, p);
    active[g] = __activemask();
    uni[g] = __uni_sync(FULL, p);
}

// Every shuffle flavour on value = 1000 * block + thread; `param` is the source lane (idx),
// the delta (up/down) or the lane mask (xor). wide[] moves an 8-byte double through xor.
extern "C" __global__ void shuffles(int width, int param, int* __restrict__ idx, int* __restrict__ up,
                                    int* __restrict__ down, int* __restrict__ xr, double* __restrict__ wide) {
    const long long g = global_thread();
    const int value = 1000 * (int)blockIdx.x + (int)threadIdx.x;
    idx[g] = __shfl_sync(FULL, value, param, width);
    up[g] = __shfl_up_sync(FULL, value, (unsigned)param, width);
    down[g] = __shfl_down_sync(FULL, value, (unsigned)param, width);
    xr[g] = __shfl_xor_sync(FULL, value, param, width);
    wide[g] = __shfl_xor_sync(FULL, value + 0.25, param, width);
}

// Reductions and matches over the lanes of each warp.
extern "C" __global__ void warp_reduce_match(const unsigned* __restrict__ v, unsigned* __restrict__ sum,
                                             int* __restrict__ smin, unsigned* __restrict__ umax,
                                             unsigned* __restrict__ any_match, unsigned* __restrict__ all_match,
                                             int* __restrict__ all_pred) {
    const long long g = global_thread();
    const unsigned x = v[g];
    sum[g] = __reduce_add_sync(FULL, x);
    smin[g] = __reduce_min_sync(FULL, (int)x);
    umax[g] = __reduce_max_sync(FULL, x);
    any_match[g] = __match_any_sync(FULL, x);
    int pred;
    all_match[g] = __match_all_sync(FULL, x, &pred);
    all_pred[g] = pred;
}

// Grid-stride loop over n words: population counts, leading zeros, first set bit, bit reversal.
extern "C" __global__ void bit_ops(const unsigned* __restrict__ x, const unsigned long long* __restrict__ x64, int n,
                                   int* __restrict__ popc, int* __restrict__ popcll, int* __restrict__ clz,
                                   int* __restrict__ ffs, unsigned* __restrict__ brev) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        popc[i] = __popc(x[i]);
        popcll[i] = __popcll(x64[i]);
        clz[i] = __clz((int)x[i]);
        ffs[i] = __ffs((int)x[i]);
        brev[i] = __brev(x[i]);
    }
}

// 3-D grid of 3-D blocks: each thread records where it is. Row r = linear block * threads per
// block + linear thread; columns: threadIdx xyz, blockIdx xyz, blockDim xyz, gridDim xyz, and the
// linear index of lane 0 of its warp (warps are formed from the linear thread index).
extern "C" __global__ void where_am_i(unsigned* __restrict__ out) {
    const unsigned t = linear_thread();
    const unsigned long long b = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned* row = out + (b * (blockDim.x * blockDim.y * blockDim.z) + t) * 13;
    row[0] = threadIdx.x; row[1] = threadIdx.y; row[2] = threadIdx.z;
    row[3] = blockIdx.x; row[4] = blockIdx.y; row[5] = blockIdx.z;
    row[6] = blockDim.x; row[7] = blockDim.y; row[8] = blockDim.z;
    row[9] = gridDim.x; row[10] = gridDim.y; row[11] = gridDim.z;
    row[12] = __shfl_sync(FULL, t, 0);
}
