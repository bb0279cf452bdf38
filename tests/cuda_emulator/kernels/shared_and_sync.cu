// shared_and_sync.cu -- dynamic and static shared memory, block barriers and their failure
// modes, for the emulator's tests.

// Reverses each block's segment of `in` through dynamic shared memory (blockDim.x ints).
extern "C" __global__ void reverse_segments(const int* __restrict__ in, int* __restrict__ out, int n) {
    extern __shared__ int segment[];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int first = blockIdx.x * blockDim.x;
    const int length = min(n - first, (int)blockDim.x);
    if (i < n) segment[threadIdx.x] = in[i];
    __syncthreads();
    if (i < n) out[i] = segment[length - 1 - (int)threadIdx.x];
}

// Two `extern __shared__` arrays of different types share one address, as on a GPU: what is
// written as float is read back as its bits. Also reports the alignment of the buffer.
extern "C" __global__ void shared_views(const float* __restrict__ in, unsigned* __restrict__ bits,
                                        unsigned long long* __restrict__ alignment) {
    extern __shared__ float as_float[];
    extern __shared__ unsigned as_bits[];
    as_float[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    bits[threadIdx.x] = as_bits[blockDim.x - 1 - threadIdx.x];
    if (threadIdx.x == 0) alignment[0] = (unsigned long long)as_float % 16ull;
}

// A static __shared__ counter is private to its block (2-D blocks; several workers at once).
extern "C" __global__ void count_block_threads(int* __restrict__ out) {
    __shared__ int counter;
    if (threadIdx.x == 0 && threadIdx.y == 0) counter = 0;
    __syncthreads();
    atomicAdd(&counter, 1);
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) out[blockIdx.x] = counter;
}

// __syncthreads_count/_and/_or, with the threads at or above n_active exiting first: exited
// threads no longer take part in barriers.
extern "C" __global__ void barrier_votes(const int* __restrict__ pred, int n_active, int* __restrict__ count,
                                         int* __restrict__ all, int* __restrict__ any, int* __restrict__ passed) {
    if ((int)threadIdx.x >= n_active) return;
    const int p = pred[threadIdx.x];
    const int c = __syncthreads_count(p);
    const int a = __syncthreads_and(p);
    const int o = __syncthreads_or(p);
    if (threadIdx.x == 0) { *count = c; *all = a; *any = o; }
    passed[threadIdx.x] = 1;
}

// Reads a neighbour's value with the __syncthreads missing: a data race the emulator's
// thread-by-thread schedule turns into wrong results (the dynamic buffer is poisoned).
extern "C" __global__ void neighbour_without_sync(int* __restrict__ out) {
    extern __shared__ int values[];
    values[threadIdx.x] = (int)threadIdx.x;
    out[threadIdx.x] = values[(threadIdx.x + 1) % blockDim.x];
}

// Half of the block takes an extra barrier: a divergent __syncthreads.
extern "C" __global__ void divergent_barrier(int* __restrict__ out) {
    if (threadIdx.x < 16) {
        __syncthreads();
        out[threadIdx.x] = 1;
    }
    __syncthreads();
}

// Thread 0 waits at __syncwarp for lanes that wait at __syncthreads for thread 0: a deadlock.
extern "C" __global__ void warp_barrier_deadlock(int* __restrict__ out) {
    if (threadIdx.x == 0) __syncwarp();
    __syncthreads();
    out[threadIdx.x] = 1;
}

// Lanes 0-15 shuffle with a full mask while lanes 16-31 wait at a block barrier.
extern "C" __global__ void divergent_shuffle(int* __restrict__ out) {
    int v = (int)threadIdx.x;
    if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
    __syncthreads();
    out[threadIdx.x] = v;
}

// Every thread but the last spins until the last one raises a flag; __nanosleep lets it run.
extern "C" __global__ void spin_until_flag(int* __restrict__ out) {
    __shared__ int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == blockDim.x - 1) {
        atomicExch(&flag, 1);
    } else {
        while (atomicAdd(&flag, 0) == 0) __nanosleep(100);
    }
    out[threadIdx.x] = 1;
}

// __launch_bounds__ between void and the name, with a second argument: at most 64 threads.
extern "C" __global__ void __launch_bounds__(64, 2) bounded(int* __restrict__ out) {
    out[threadIdx.x] = (int)threadIdx.x;
}

// Thread 5 of block 1 calls __trap().
extern "C" __global__ void trap_in_block_1(int* __restrict__ out) {
    if (blockIdx.x == 1 && threadIdx.x == 5) __trap();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
