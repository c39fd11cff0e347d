// Runs one instrumented wgmma kernel on the flagship (random inputs) and
// prints where each block's consumer and producer time goes, from the
// clock64 phase sums the kernel writes (instrument.py).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include KFILE

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void fill(float* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = (h & 0xffff) / 32768.0f - 1.0f;
    }
}

int main() {
    const size_t nin = (size_t)N * C * H * W, nf = (size_t)K * C * R * S, nout = (size_t)N * K * P * Q;
    float *in, *f, *b, *out; unsigned long long* stamps;
    const int blocks = GX * GY;
    CK(cudaMalloc(&in, nin * 4)); CK(cudaMalloc(&f, nf * 4)); CK(cudaMalloc(&b, K * 4)); CK(cudaMalloc(&out, nout * 4));
    CK(cudaMalloc(&stamps, blocks * 32 * 8));
    fill<<<1024, 256>>>(in, nin, 1); fill<<<64, 256>>>(f, nf, 2); fill<<<1, 128>>>(b, K, 3);
    CK(cudaFuncSetAttribute(KNAME, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int r = 0; r < 25; ++r) {
        CK(cudaMemset(stamps, 0, blocks * 32 * 8));
        cudaEventRecord(e0);
        KNAME<<<dim3(GX, GY), BX, SMEM>>>(out, in, f, b, stamps);
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        float t; cudaEventElapsedTime(&t, e0, e1); if (r >= 5) ms.push_back(t);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    std::vector<unsigned long long> s(blocks * 32);
    CK(cudaMemcpy(s.data(), stamps, s.size() * 8, cudaMemcpyDeviceToHost));
    double cf = 0, cg = 0, cd = 0, cw = 0, cm = 0, ce = 0, cn = 0, pw = 0, ps = 0, pl = 0, pn = 0, setup = 0, tot = 0, ptot = 0;
    int nwg = 0;
    for (int bk = 0; bk < blocks; ++bk) {
        const unsigned long long* x = &s[bk * 32];
        for (int w = 0; w < 2; ++w) if (x[w * 4 + 3]) { cw += x[w * 4]; cm += x[w * 4 + 1]; ce += x[w * 4 + 2]; cn += x[w * 4 + 3]; cf += x[8 + 3 * w]; cg += x[9 + 3 * w]; cd += x[10 + 3 * w]; ++nwg; }
        pw += x[16]; ps += x[17]; pl += x[18]; pn += x[19]; ptot += x[20];
        setup += x[30]; tot += x[31];
    }
    printf("%s: median %.4f ms over %zu runs (events, with the stamps)\n", KSTR, ms[ms.size() / 2], ms.size());
    printf("per block: %.0f cycles to the last consumer's end, setup (filter staging) %.0f\n", tot / blocks, setup / blocks);
    printf("consumer warpgroups (%d, %.1f tiles each): per tile  wait for patch %.0f  wgmmas %.0f  epilogue %.0f cycles;"
           " shares of the loop %.1f%% / %.1f%% / %.1f%%\n", nwg, cn / nwg, cw / cn, cm / cn, ce / cn,
           100 * cw / (cw + cm + ce), 100 * cm / (cw + cm + ce), 100 * ce / (cw + cm + ce));
    printf("  of the issue phase: group waits %.0f, fragment loads and splits after them %.0f cycles per tile; final wgmma wait %.0f\n",
           cg / cn, cd / cn, cf / cn);
    printf("producer thread 0 (%.1f tiles per block): per tile  wait for a free buffer %.0f  stage/store %.0f  load issue %.0f cycles;"
           " producer loop %.0f cycles per block\n", pn / blocks, pw / pn, ps / pn, pl / pn, ptot / blocks);
    return 0;
}
