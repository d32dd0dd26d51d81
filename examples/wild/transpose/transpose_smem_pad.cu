// transpose_smem_pad.cu: out = in^T through a 32x33 shared tile (one column of padding
// against bank conflicts); 32x8 threads, each moving four rows of the tile.
#include <cuda_runtime.h>

#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_tiled(float* odata, const float* idata, int rows, int cols)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < cols && y + j < rows)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;   // transposed block offset
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < rows && y + j < cols)
            odata[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

void transpose_host(float* out, const float* in, int rows, int cols)
{
    float *d_in, *d_out;
    cudaMalloc(&d_in, sizeof(float) * rows * cols);
    cudaMalloc(&d_out, sizeof(float) * rows * cols);
    cudaMemcpy(d_in, in, sizeof(float) * rows * cols, cudaMemcpyHostToDevice);
    dim3 grid((cols + TILE_DIM - 1) / TILE_DIM, (rows + TILE_DIM - 1) / TILE_DIM);
    dim3 block(TILE_DIM, BLOCK_ROWS);
    transpose_tiled<<<grid, block>>>(d_out, d_in, rows, cols);
    cudaMemcpy(out, d_out, sizeof(float) * rows * cols, cudaMemcpyDeviceToHost);
    cudaFree(d_in);
    cudaFree(d_out);
}
