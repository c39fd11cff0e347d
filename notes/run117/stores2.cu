// Run 117: the store patterns of a "row band" NCHW epilogue, where a
// warpgroup's m64 tile is one whole output row (55 pixels of 64 slots) and
// a block walks consecutive rows of its images (so that its producer could
// keep a ring of input rows), against the committed 8x8 tile's pattern and
// the NHWC pattern, each writing the whole flagship output (297 MB) once.
//   tile:      store_tile's NCHW pattern (four 8-float runs per warp store);
//   nhwc:      the NHWC epilogue of the tf32 NHWC winner (a quad writes 64
//              contiguous bytes of a pixel; 8 pixels per warp store);
//   shfl16:    row tiles, a warp store = 16 pixels of a row in 2 channels
//              (what a warp of the wgmma layout holds after two shuffles);
//   row32:     row tiles, a warp store = 32 consecutive pixels of one channel
//              (needs the tile transposed through shared memory);
// and for the row tiles the order: "band" (block b takes rows b*R/G ..,
// its warpgroups alternate rows) or "strided" (row b + i*grid).
// nvcc -O3 -arch=sm_90a stores2.cu -o stores2 && ./stores2
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define N 256
#define K 96
#define P 55
#define Q 55
#define TILES_P 7
#define TILES_Q 7
#define TILES (N * TILES_P * TILES_Q)
#define ROWS (N * P)
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__device__ __forceinline__ float val(int n, int k, int p, int q) { return 1.0f + k + 0.001f * q; }

template <int WG>
__global__ void __launch_bounds__(WG * 128) tile(float* out) {
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
    for (int i = wg;; i += WG) {
        const int tile = blockIdx.x + i * gridDim.x;
        if (tile >= TILES) break;
        const int n = tile / (TILES_P * TILES_Q), p0 = tile / TILES_Q % TILES_P * 8, q0 = tile % TILES_Q * 8;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int p = p0 + 2 * warp + h, q = q0 + g;
            if (p >= P || q >= Q) continue;
#pragma unroll
            for (int nb = 0; nb < K / 8; ++nb) {
                const int k = nb * 8 + 2 * t;
                float* o = &out[(((long long)n * K + k) * P + p) * Q + q];
                o[0] = val(n, k, p, q);
                o[P * Q] = val(n, k + 1, p, q);
            }
        }
    }
}

// NHWC: 16-byte stores, a quad = 64 contiguous bytes of one pixel.
template <int WG>
__global__ void __launch_bounds__(WG * 128) nhwc(float* out) {
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
    for (int i = wg;; i += WG) {
        const int tile = blockIdx.x + i * gridDim.x;
        if (tile >= TILES) break;
        const int n = tile / (TILES_P * TILES_Q), p0 = tile / TILES_Q % TILES_P * 8, q0 = tile % TILES_Q * 8;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int p = p0 + 2 * warp + h, q = q0 + g;
            if (p >= P || q >= Q) continue;
#pragma unroll
            for (int nb = 0; nb < K / 16; ++nb) {
                const int k = nb * 16 + 4 * t;
                *reinterpret_cast<float4*>(&out[(((long long)n * P + p) * Q + q) * K + k]) = make_float4(1, 2, 3, 4);
            }
        }
    }
}

// row index of warpgroup wg's j-th row tile, or -1
template <bool BAND, int WG>
__device__ __forceinline__ int row_of(int wg, int j) {
    if (BAND) {
        const int lo = (int)((long long)blockIdx.x * ROWS / gridDim.x), hi = (int)((long long)(blockIdx.x + 1) * ROWS / gridDim.x);
        const int r = lo + j * WG + wg;
        return r < hi ? r : -1;
    }
    const int r = blockIdx.x + (j * WG + wg) * gridDim.x;
    return r < ROWS ? r : -1;
}

template <bool BAND, int WG>
__global__ void __launch_bounds__(WG * 128) shfl16(float* out) {
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int warp = tid / 32, lane = tid % 32;
    for (int j = 0;; ++j) {
        const int row = row_of<BAND, WG>(wg, j);
        if (row < 0) break;
        const int n = row / P, p = row % P, q = warp * 16 + lane % 16;
        if (q >= Q) continue;
#pragma unroll
        for (int i = 0; i < K / 2; ++i) {   // channel pairs (c, c + 2) as in run 113
            const int k = i / 2 * 4 + (i % 2) + 2 * (lane / 16);
            out[(((long long)n * K + k) * P + p) * Q + q] = val(n, k, p, q);
        }
    }
}

template <bool BAND, int WG>
__global__ void __launch_bounds__(WG * 128) row32(float* out) {
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int warp = tid / 32, lane = tid % 32;
    for (int j = 0;; ++j) {
        const int row = row_of<BAND, WG>(wg, j);
        if (row < 0) break;
        const int n = row / P, p = row % P;
#pragma unroll
        for (int i = 0; i < K / 4; ++i) {
            const int k = i * 4 + warp;
            float* o = &out[(((long long)n * K + k) * P + p) * Q];
            o[lane] = val(n, k, p, lane);
            if (32 + lane < Q) o[32 + lane] = val(n, k, p, 32 + lane);
        }
    }
}

template <typename F>
float timeit(F f, int reps = 30) {
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (int i = 0; i < 3; ++i) f();
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) {
        cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b);
        float m; cudaEventElapsedTime(&m, a, b); ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

template <typename F>
int check(const char* name, float* out, long long n, F f) {
    CK(cudaMemset(out, 0, n * 4));
    f();
    CK(cudaDeviceSynchronize());
    std::vector<float> h(n);
    CK(cudaMemcpy(h.data(), out, n * 4, cudaMemcpyDeviceToHost));
    long long bad = 0;
    for (long long i = 0; i < n; ++i) {
        const int k = i / (P * Q) % K, q = i % Q;
        if (h[i] != 1.0f + k + 0.001f * q) ++bad;
    }
    printf("%s check: %lld wrong of %lld\n", name, bad, n);
    return 0;
}

int main(int argc, char**) {
    const long long n = (long long)N * K * P * Q;
    float* out;
    CK(cudaMalloc(&out, n * 4));
    CK(cudaMemset(out, 0, n * 4));
    if (argc > 1) {  // once each, for ncu
        tile<2><<<131, 256>>>(out);
        nhwc<2><<<131, 256>>>(out);
        shfl16<true, 2><<<132, 256>>>(out);
        shfl16<false, 2><<<132, 256>>>(out);
        row32<true, 2><<<132, 256>>>(out);
        row32<false, 2><<<132, 256>>>(out);
        CK(cudaDeviceSynchronize());
        return 0;
    }
    for (int rep = 0; rep < 2; ++rep) {
        printf("tile    WG=2: %.4f ms\n", timeit([&] { tile<2><<<131, 256>>>(out); }));
        printf("nhwc    WG=2: %.4f ms\n", timeit([&] { nhwc<2><<<131, 256>>>(out); }));
        printf("shfl16 band    WG=2: %.4f ms\n", timeit([&] { shfl16<true, 2><<<132, 256>>>(out); }));
        printf("shfl16 strided WG=2: %.4f ms\n", timeit([&] { shfl16<false, 2><<<132, 256>>>(out); }));
        printf("row32  band    WG=2: %.4f ms\n", timeit([&] { row32<true, 2><<<132, 256>>>(out); }));
        printf("row32  strided WG=2: %.4f ms\n", timeit([&] { row32<false, 2><<<132, 256>>>(out); }));
        printf("row32  band    WG=1: %.4f ms\n", timeit([&] { row32<true, 1><<<132, 128>>>(out); }));
    }
    check("tile", out, n, [&] { tile<2><<<131, 256>>>(out); });
    check("shfl16 band", out, n, [&] { shfl16<true, 2><<<132, 256>>>(out); });
    check("row32 band", out, n, [&] { row32<true, 2><<<132, 256>>>(out); });
    check("row32 strided", out, n, [&] { row32<false, 2><<<132, 256>>>(out); });
    return 0;
}
