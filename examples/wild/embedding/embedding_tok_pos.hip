// embedding_tok_pos.hip: GPT-2 style encoder, out[b][t][c] = wte[ids[b][t]][c] + wpe[t][c];
// one work-item per output element, (b, t, c) from the flat index by div/mod.
#include <hip/hip_runtime.h>

__global__ void encoder_fwd(float* out, const int* ids, const float* wte, const float* wpe, int B, int T, int C)
{
    int idx = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    if (idx >= B * T * C) return;
    int c = idx % C;
    int bt = idx / C;
    int t = bt % T;
    int tok = ids[bt];
    out[idx] = wte[tok * C + c] + wpe[t * C + c];
}

void encoder_fwd_host(float* out, const int* ids, const float* wte, const float* wpe, int B, int T, int C, int V)
{
    float *dout, *dwte, *dwpe;
    int* dids;
    hipMalloc(&dout, sizeof(float) * B * T * C);
    hipMalloc(&dids, sizeof(int) * B * T);
    hipMalloc(&dwte, sizeof(float) * V * C);
    hipMalloc(&dwpe, sizeof(float) * T * C);
    hipMemcpy(dids, ids, sizeof(int) * B * T, hipMemcpyHostToDevice);
    hipMemcpy(dwte, wte, sizeof(float) * V * C, hipMemcpyHostToDevice);
    hipMemcpy(dwpe, wpe, sizeof(float) * T * C, hipMemcpyHostToDevice);
    int total = B * T * C;
    hipLaunchKernelGGL(encoder_fwd, dim3((total + 255) / 256), dim3(256), 0, 0, dout, dids, dwte, dwpe, B, T, C);
    hipMemcpy(out, dout, sizeof(float) * total, hipMemcpyDeviceToHost);
    hipFree(dout);
    hipFree(dids);
    hipFree(dwte);
    hipFree(dwpe);
}
