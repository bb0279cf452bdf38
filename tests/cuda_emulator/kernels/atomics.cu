// atomics.cu -- every atomic the emulator supports, on global and shared memory, driven by
// grid-stride loops so that any grid covers the input.

// Byte histogram: per-block private counts in shared memory, merged with global atomics.
extern "C" __global__ void histogram(const unsigned char* __restrict__ data, long long n, unsigned* __restrict__ hist) {
    __shared__ unsigned local[256];
    for (unsigned b = threadIdx.x; b < 256u; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (unsigned b = threadIdx.x; b < 256u; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

// Float maximum with the classic compare-and-swap loop on the value's bits.
__device__ float atomic_max_float(float* address, float value) {
    int* bits = (int*)address;
    int old = *bits, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(bits, assumed, __float_as_int(value));
    } while (assumed != old);
    return __int_as_float(old);
}

// Reductions of x[0..n) into single cells. `tickets` receives atomicInc's old values (a
// permutation of 0..n-1), `chain` atomicExch's (with the final cell value: `last` plus every i).
extern "C" __global__ void atomic_mix(const int* __restrict__ x, const float* __restrict__ xf,
                                      const double* __restrict__ xd, int n, float* fsum, double* dsum,
                                      unsigned long long* usum, int* imax, int* imin, unsigned* umax,
                                      unsigned* bits_or, unsigned* bits_and, int* countdown, float* fmax,
                                      unsigned* tickets, int* last, int* chain, unsigned* wrap) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int v = x[i];
        atomicAdd(fsum, xf[i]);
        atomicAdd(dsum, xd[i]);
        atomicAdd(usum, (unsigned long long)(v + 1000) << 20);
        atomicMax(imax, v);
        atomicMin(imin, v);
        atomicMax(umax, (unsigned)v);
        atomicOr(bits_or, 1u << (v & 31));
        atomicAnd(bits_and, ~(1u << ((v >> 5) & 31)));
        atomicSub(countdown, 1);
        atomic_max_float(fmax, xf[i]);
        tickets[i] = atomicInc(wrap, 0xffffffffu);
        chain[i] = atomicExch(last, i);
    }
}
