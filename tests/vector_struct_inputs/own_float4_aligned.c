// own_float4_aligned.c: y = a + b through a program's own float4 struct laid out as CUDA's
// (16-byte aligned lanes x, y, z, w): printed for cuda or hip, the builtin float4 is used.

typedef struct __attribute__((aligned(16))) { float x, y, z, w; } float4;

void own_float4_aligned(const float* a, const float* b, float* y, int n)
{
    const float4* a4 = (const float4*)a;
    const float4* b4 = (const float4*)b;
    float4* y4 = (float4*)y;
    for (int i = 0; i < n / 4; i++) {
        float4 s;
        s.x = a4[i].x + b4[i].x;
        s.y = a4[i].y + b4[i].y;
        s.z = a4[i].z + b4[i].z;
        s.w = a4[i].w + b4[i].w;
        y4[i] = s;
    }
    for (int i = n / 4 * 4; i < n; i++) {
        y[i] = a[i] + b[i];
    }
}
