// interblock.cu -- blocks that wait for each other, for the emulator's interleaved mode.
//
// SKIP_WAIT (a -D of the tests only) removes the wait, PUBLISH_EARLY makes a block count itself
// done before it writes its part: kernels that sequential blocks run correctly and interleaved
// ones must not.

// Chained prefix over tiles: tile t (taken in start order from counter[0]) sums its values, waits
// for tile t - 1's inclusive sum (flags[t] != 0), and publishes its own (flags[t + 1], prefix[t + 1]).
// out[t] gets tile t's exclusive prefix; tile_of_block[blockIdx.x] which tile the block took.
extern "C" __global__ void chained_prefix(const long long* __restrict__ values, long long n,
                                          unsigned long long* counter, unsigned* flags, long long* prefix,
                                          long long* out, long long* tile_of_block) {
    __shared__ long long tile, sum;
    if (threadIdx.x == 0) {
        tile = (long long)atomicAdd(counter, 1ull);
        sum = 0;
        tile_of_block[blockIdx.x] = tile;
    }
    __syncthreads();
    const long long i = tile * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd((unsigned long long*)&sum, (unsigned long long)values[i]);
    __syncthreads();
    if (threadIdx.x == 0) {
        long long before = 0;
        if (tile > 0) {
#ifndef SKIP_WAIT
            while (atomicAdd(&flags[tile], 0u) == 0) __nanosleep(32);
#endif
            before = __ldcg(prefix + tile);
        }
        out[tile] = before;
        __stcg(prefix + tile + 1, before + sum);
        __threadfence();
        atomicExch(&flags[tile + 1], 1u);
    }
}

// The "last block" pattern: every block writes its part, fences, counts itself in `done`; the block
// that counts last adds up all parts into *total.
extern "C" __global__ void last_block_total(const long long* __restrict__ values, long long n, long long* parts,
                                            unsigned long long* done, long long* total) {
    __shared__ long long sum;
    __shared__ bool last;
    if (threadIdx.x == 0) sum = 0;
    __syncthreads();
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        atomicAdd((unsigned long long*)&sum, (unsigned long long)values[i]);
    __syncthreads();
    if (threadIdx.x == 0) {
#ifndef PUBLISH_EARLY
        __stcg(parts + blockIdx.x, sum);
        __threadfence();
        last = atomicAdd(done, 1ull) == gridDim.x - 1;
#else
        last = atomicAdd(done, 1ull) == gridDim.x - 1;
        __threadfence();
        __stcg(parts + blockIdx.x, sum);
#endif
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        long long all = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) all += __ldcg(parts + b);
        *total = all;
    }
}

// Resident blocks: in_flight[0] counts running blocks, in_flight[1] keeps the most seen at once;
// start_order[k] is the k-th block to start. Each block does `rounds` atomics in between.
extern "C" __global__ void resident_blocks(unsigned* in_flight, unsigned* ticket, unsigned* start_order, int rounds,
                                           unsigned* scratch) {
    if (threadIdx.x == 0) {
        start_order[atomicAdd(ticket, 1u)] = blockIdx.x;
        const unsigned now = atomicAdd(&in_flight[0], 1u) + 1u;
        atomicMax(&in_flight[1], now);
    }
    __syncthreads();
    for (int r = 0; r < rounds; ++r) atomicAdd(scratch, 1u);
    __syncthreads();
    if (threadIdx.x == 0) atomicSub(&in_flight[0], 1u);
}

// Waits for a flag no block sets: a deadlock, reported instead of hanging.
extern "C" __global__ void wait_forever(unsigned* flag) {
    if (threadIdx.x == 0)
        while (atomicAdd(flag, 0u) == 0) __nanosleep(32);
}
