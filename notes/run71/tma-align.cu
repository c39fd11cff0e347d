#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda/barrier>
#include <cuda/ptx>
using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace ptx = cuda::ptx;
__global__ void k(float* out, const __grid_constant__ CUtensorMap tmap, int rank, int off) {
    __shared__ alignas(128) float buf[40 * 39 * 3];
    __shared__ barrier bar;
    if (threadIdx.x == 0) { init(&bar, blockDim.x); ptx::fence_proxy_async(ptx::space_shared); }
    __syncthreads();
    barrier::arrival_token token;
    if (threadIdx.x == 0) {
        if (rank == 2) {
            int32_t c[2] = {off, off};
            ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, buf, &tmap, c, cuda::device::barrier_native_handle(bar));
        } else {
            int32_t c[4] = {off, off, 0, 0};
            ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, buf, &tmap, c, cuda::device::barrier_native_handle(bar));
        }
        token = cuda::device::barrier_arrive_tx(bar, 1, rank == 2 ? 32 * 8 * 4 : 40 * 39 * 3 * 4);
    } else {
        token = bar.arrive();
    }
    bar.wait(std::move(token));
    if (threadIdx.x == 0) for (int i = 0; i < 40 * 39 * 3; ++i) out[i] = buf[i];
}
int main(int argc, char** argv) {
    const int W = 224, H = 224, C = 3, N = 4;
    float *in, *out;
    cudaMalloc(&in, (size_t)N * C * H * W * 4); cudaMalloc(&out, 4680 * 4);
    float* h = new float[(size_t)N * C * H * W];
    for (size_t i = 0; i < (size_t)N * C * H * W; ++i) h[i] = i % 1000 + 1;
    cudaMemcpy(in, h, (size_t)N * C * H * W * 4, cudaMemcpyHostToDevice);
    const int off = atoi(argv[1]);
    for (int rank : {2, 4}) {
        CUtensorMap map;
        cuuint64_t dims[4] = {W, H, C, N};
        cuuint64_t strides[3] = {W * 4ull, (cuuint64_t)H * W * 4, (cuuint64_t)C * H * W * 4};
        cuuint32_t box[4] = {40, 39, 3, 1}, es[4] = {1, 1, 1, 1};
        if (rank == 2) { dims[1] = (cuuint64_t)H * C * N; box[0] = 32; box[1] = 8; }
        CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, in, dims, strides, box, es,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        printf("rank %d encode %d\n", rank, (int)r);
        k<<<1, 128>>>(out, map, rank, off);
        cudaError_t e = cudaDeviceSynchronize();
        printf("rank %d: %s\n", rank, cudaGetErrorString(e));
        if (e != cudaSuccess) return 1;
        float o[4680]; cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost);
        int bad = 0;
        if (rank == 4) for (int c = 0; c < 3; ++c) for (int y = 0; y < 39; ++y) for (int x = 0; x < 40; ++x) {
            int gy = y + off, gx = x + off; float want = (gy >= 0 && gx >= 0) ? h[((size_t)c * H + gy) * W + gx] : 0;
            if (o[(c * 39 + y) * 40 + x] != want) ++bad;
        }
        else for (int y = 0; y < 8; ++y) for (int x = 0; x < 32; ++x) { int gy = y + off, gx = x + off; float want = (gy >= 0 && gx >= 0) ? h[(size_t)gy * W + gx] : 0; if (o[y * 32 + x] != want) ++bad; }
        printf("rank %d: %d mismatches\n", rank, bad);
    }
}
