// exp.cu: y = e^x, float32. The kernel is simply called `exp` and the file has no #include at
// all: nvcc puts cuda_runtime.h in front of every .cu file, so many small kernels omit it.
// One thread per element, 1-D grid, guarded tail.

extern "C" __global__ void exp(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = expf(x[i]);
    }
}
