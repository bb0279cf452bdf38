// steps.cu -- test kernel of the emulator's per-thread step counter (GT_STEP).
#include "step_counter.cuh"

// Thread t of the grid calls GT_STEP() work[t] times and stores how often it did.
extern "C" __global__ void count_steps(const int* work, long long n, int* done) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int k = 0;
    for (; k < work[t]; ++k) GT_STEP();
    done[t] = k;
}
