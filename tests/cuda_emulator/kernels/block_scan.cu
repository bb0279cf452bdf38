// block_scan.cu -- block-wide exclusive prefix sum for any block size from 1 to 1024 (partial
// last warps included): warp shuffles, static shared memory, two __syncthreads.
#include "scan_helpers.cuh"

// out[i] = sum of in[j] for j < i within i's block; block_totals[b] and block_max[b] summarise
// block b's valid elements (block_max is INT32_LOWEST for a block without any).
extern "C" __global__ void block_scan(const int* __restrict__ in, long long n, int* __restrict__ out,
                                      int* __restrict__ block_totals, int* __restrict__ block_max) {
    __shared__ int warp_offsets[32];
    __shared__ int warp_maxima[32];
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const u32 n_warps = (blockDim.x + 31u) / 32u;
    const long long i = (long long)blockIdx.x * blockDim.x + tid;
    const bool valid = i < n;
    const int value = valid ? in[i] : 0;

    const int inclusive = warp_inclusive_scan(value, lane);
    const int maximum = warp_max(valid ? value : INT32_LOWEST);
    if (lane == 31u || tid == blockDim.x - 1u) warp_offsets[warp] = inclusive;  // last lane of the warp
    if (lane == 0) warp_maxima[warp] = maximum;
    __syncthreads();

    if (warp == 0) {
        const int total = lane < n_warps ? warp_offsets[lane] : 0;
        const int scanned = warp_inclusive_scan(total, lane);
        const int block_maximum = warp_max(lane < n_warps ? warp_maxima[lane] : INT32_LOWEST);
        const int block_total = __shfl_sync(FULL_MASK, scanned, (int)n_warps - 1);
        if (lane < n_warps) warp_offsets[lane] = scanned - total;
        if (lane == 0) {
            block_totals[blockIdx.x] = block_total;
            block_max[blockIdx.x] = block_maximum;
        }
    }
    __syncthreads();

    if (valid) out[i] = warp_offsets[warp] + inclusive - value;
}
