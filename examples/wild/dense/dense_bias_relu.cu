// dense_bias_relu.cu: fully connected layer out = relu(inp . W^T + bias), PyTorch Linear
// layout (W is [OC][C]). One thread per output, (b, o) from a flat index; an optional bias
// pointer that may be null, and a fused activation flag, both as kernel parameters.
#include <cuda_runtime.h>

__device__ __forceinline__ float act(float v, int relu) { return (relu && v < 0.0f) ? 0.0f : v; }

__global__ void linear_fwd(float* out, const float* __restrict__ inp, const float* __restrict__ weight,
                           const float* __restrict__ bias, int B, int C, int OC, int relu)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * OC) return;
    int b = idx / OC;
    int o = idx % OC;
    const float* xrow = inp + b * C;
    const float* wrow = weight + o * C;
    float val = (bias != nullptr) ? bias[o] : 0.0f;
    for (int i = 0; i < C; i++)
        val += xrow[i] * wrow[i];
    out[idx] = act(val, relu);
}

void linear_fwd_host(float* out, const float* inp, const float* weight, const float* bias,
                     int B, int C, int OC, int relu)
{
    float *d_out, *d_inp, *d_w, *d_b;
    cudaMalloc(&d_out, sizeof(float) * B * OC);
    cudaMalloc(&d_inp, sizeof(float) * B * C);
    cudaMalloc(&d_w, sizeof(float) * OC * C);
    cudaMalloc(&d_b, sizeof(float) * OC);
    cudaMemcpy(d_inp, inp, sizeof(float) * B * C, cudaMemcpyHostToDevice);
    cudaMemcpy(d_w, weight, sizeof(float) * OC * C, cudaMemcpyHostToDevice);
    cudaMemcpy(d_b, bias, sizeof(float) * OC, cudaMemcpyHostToDevice);
    int total = B * OC;
    linear_fwd<<<(total + 127) / 128, 128>>>(d_out, d_inp, d_w, d_b, B, C, OC, relu);
    cudaMemcpy(out, d_out, sizeof(float) * B * OC, cudaMemcpyDeviceToHost);
    cudaFree(d_out);
    cudaFree(d_inp);
    cudaFree(d_w);
    cudaFree(d_b);
}
