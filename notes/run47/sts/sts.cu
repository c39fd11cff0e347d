// Shared-store wavefront calibration: replays recorded warp store patterns.
#include <cstdio>
#include "tables.h"
__global__ void replay(const int* tab, int n, int reps, float* out) {
    __shared__ float s[12288];
    const int lane = threadIdx.x;
    for (int r = 0; r < reps; ++r)
        for (int i = 0; i < n; ++i) {
            const int a = tab[i * 32 + lane];
            asm volatile("{\n.reg .pred p;\nsetp.ge.s32 p, %0, 0;\n@p st.shared.f32 [%1], %2;\n}\n"
                         :: "r"(a), "r"((unsigned)__cvta_generic_to_shared(&s[a < 0 ? 0 : a])), "f"((float)r) : "memory");
        }
    __syncthreads();
    out[lane] = s[lane * 7];
}
int main() {
    int total = 0;
    for (int k = 0; k < NSETS; ++k) total += set_len[k] * 32;
    int* d; float* o;
    cudaMalloc(&d, total * 4); cudaMalloc(&o, 128);
    cudaMemcpy(d, tables, total * 4, cudaMemcpyHostToDevice);
    int off = 0;
    for (int k = 0; k < NSETS; ++k) {
        printf("set %d %s n=%d\n", k, set_names[k], set_len[k]);
        replay<<<1, 32>>>(d + off, set_len[k], 4, o);
        cudaDeviceSynchronize();
        off += set_len[k] * 32;
    }
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
