// Front-end test input: a plain SIMT kernel, also printed as HIP by the golden tests.
#include <cuda_runtime.h>

#define BLOCK 256

__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
    else if (i == n)
        return;
    else {
        // past the end
    }
}
