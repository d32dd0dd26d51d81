// maxpool_flat.cu: 2x2 / stride-2 max pooling over NCHW, one thread per output element; the
// flat thread index is taken apart with % and / (PyTorch-style index arithmetic).
#include <cuda_runtime.h>
#include <cfloat>

__global__ void maxpool2x2_flat(const float* __restrict__ in, float* __restrict__ out,
                                int P, int H, int W)
{
    const int OH = H / 2;
    const int OW = W / 2;
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= P * OH * OW) return;
    int ow = index % OW;
    int oh = (index / OW) % OH;
    int p = index / (OW * OH);
    const float* plane = in + p * H * W;
    float m = -FLT_MAX;
    for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx)
            m = fmaxf(m, plane[(oh * 2 + dy) * W + ow * 2 + dx]);
    out[(p * OH + oh) * OW + ow] = m;
}
