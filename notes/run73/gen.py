#!/usr/bin/env python3
"""Writes a prototype kernel: wgmma with the A operand (the im2col matrix) in
registers, loaded straight from global memory (no patch in shared memory, no
producer warpgroups), B (the filter slice) in shared memory as in the wgmma
family. Flagship only, NCHW. Usage: gen.py OUT.cu WARPGROUPS GROUP SPLIT3"""
import sys
out, WG, G, SPLIT3 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
TILE_K = 48 if SPLIT3 else 96
ACC = TILE_K // 2
def accops(n, first=0):
    return ", ".join("%%%d" % (first + i) for i in range(n))
def acccons(n, name):
    return ", ".join('"+f"(%s[%d])' % (name, i) for i in range(n))
def wg_fn(name, n, nacc):
    # d (+)= A(registers) * B(desc); operands: nacc acc, 4 a, desc, scale
    return '''__device__ __forceinline__ void %s(float (&d)[%d], const unsigned (&a)[4], unsigned long long b, int scale_d) {
    asm volatile(
        "{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 "
        "{%s}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1;\\n}\\n"
        : %s
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}
''' % (name, nacc, nacc + 5, n, accops(nacc), nacc, nacc + 1, nacc + 2, nacc + 3, nacc + 4, acccons(nacc, "d"))
src = r'''
#define N 256
#define C 3
#define H 224
#define W 224
#define K 96
#define R 11
#define S 11
#define P 55
#define Q 55
#define PAD 2
#define TILE_K %(TILE_K)d
#define WARPGROUPS %(WG)d
#define G %(G)d
#define SPLIT3 %(SPLIT3)d
#define ACC %(ACC)d
#define S4 12
#define BLOCKS (C * R * S4 / 4)
#define KSTEPS ((BLOCKS + 1) / 2)
#define NG ((KSTEPS + G - 1) / G)
#define TILES_P 7
#define TILES_Q 7
#define TILES (N * TILES_P * TILES_Q)
#define FILTER_FLOATS (TILE_K * KSTEPS * 8)
#define B_LBO 128
#define B_SBO (KSTEPS * 8 * 32)
#define THREADS (WARPGROUPS * 128)
#define KNAME rega
#define PATCH_PITCH 40
#define PATCH_ROWS 39

__device__ __forceinline__ float to_tf32(float x) {
    return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}
__device__ __forceinline__ unsigned long long descriptor(const float* p, unsigned int lbo, unsigned int sbo) {
    const unsigned int a = (unsigned int)__cvta_generic_to_shared(p);
    return (unsigned long long)((a & 0x3ffff) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
        | ((unsigned long long)(sbo >> 4) << 32);
}
%(WGFN)s
%(WGFN2)s

// The A fragment of one k step for this thread: registers (h=0, block 2ks),
// (h=1, block 2ks), (h=0, block 2ks+1), (h=1, block 2ks+1); block b = (c, r, j)
// covers taps s = 4j..4j+3, this thread's tap 4j + t.
struct frag { float v[4]; };

template <int KS>
__device__ __forceinline__ void load_step(frag& f, const float* base, unsigned rmask0, unsigned rmask1, unsigned smask) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const int b = 2 * KS + e / 2, h = e %% 2;
        float v = 0.0f;
        if (b < BLOCKS) {
            const int c = b / (R * 3), r = b / 3 %% R, j = b %% 3;
            const unsigned ok = ((h ? rmask1 : rmask0) >> r) & (smask >> j) & 1;
            // Predicated, not branched: no divergent path before the wgmmas.
            asm volatile("{\n.reg .pred q;\nsetp.ne.u32 q, %%1, 0;\n@q ld.global.nc.f32 %%0, [%%2];\n}\n"
                         : "+f"(v) : "r"(ok), "l"(base + c * H * W + (r + 4 * h) * W + 4 * j));
        }
        f.v[e] = v;
    }
}

template <int GI>
__device__ __forceinline__ void load_group(frag (&f)[G], const float* base, unsigned rm0, unsigned rm1, unsigned sm) {
#pragma unroll
    for (int i = 0; i < G; ++i)
        if (GI * G + i < KSTEPS) {
            switch (GI * G + i) {
#define CASE(x) case x: load_step<x>(f[i], base, rm0, rm1, sm); break;
%(CASES)s
#undef CASE
            }
        }
}

template <int GI>
__device__ __forceinline__ void mma_group(float (&acc)[3 * ACC], const frag (&f)[G], unsigned long long b0) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int i = 0; i < G; ++i) {
        const int ks = GI * G + i;
        if (ks >= KSTEPS) break;
        const unsigned long long b = b0 + (unsigned long long)(ks * 16);
#if SPLIT3
        unsigned hi[4], lo[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float x = f[i].v[e], xh = to_tf32(x);
            hi[e] = __float_as_uint(xh);
            lo[e] = __float_as_uint(to_tf32(x - xh));
        }
        wgmma_wide(*reinterpret_cast<float(*)[2 * ACC]>(&acc[0]), hi, b, ks > 0);
        wgmma_ra(*reinterpret_cast<float(*)[ACC]>(&acc[2 * ACC]), lo, b, ks > 0);
#else
        unsigned a[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) a[e] = __float_as_uint(f[i].v[e]);
        wgmma_ra(*reinterpret_cast<float(*)[ACC]>(&acc[0]), a, b, ks > 0);
#endif
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
rega(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ filter, const float* __restrict__ bias)
{
    extern __shared__ __align__(128) float smem[];
    float* s_f = smem;
    const int k0 = blockIdx.y * TILE_K;
    for (int base = threadIdx.x; base < FILTER_FLOATS; base += 8 * THREADS) {
        float v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int idx = base + u * THREADS;
            const int e = idx %% 4, kk = idx / 4 %% 8, blk = idx / 32 %% (2 * KSTEPS), grp = idx / (64 * KSTEPS);
            const int j = blk * 4 + e;
            const int c = j / (R * S4), r = j / S4 %% R, s = j %% S4, k = k0 + grp * 8 + kk;
            const bool ok = idx < FILTER_FLOATS && blk < BLOCKS && s < S;
            v[u] = ok ? __ldg(&filter[((k * C + c) * R + r) * S + s]) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int idx = base + u * THREADS;
            if (idx < FILTER_FLOATS) {
                s_f[idx] = to_tf32(v[u]);
#if SPLIT3
                s_f[FILTER_FLOATS + idx] = to_tf32(v[u] - to_tf32(v[u]));
#endif
            }
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int wg = threadIdx.x / 128, tid = threadIdx.x %% 128;
    const int warp = tid / 32, g = tid %% 32 / 4, t = tid %% 4;
    float bias_reg[TILE_K / 8][2];
#pragma unroll
    for (int nb = 0; nb < TILE_K / 8; ++nb) {
        bias_reg[nb][0] = __ldg(&bias[k0 + nb * 8 + 2 * t]);
        bias_reg[nb][1] = __ldg(&bias[k0 + nb * 8 + 2 * t + 1]);
    }
    const unsigned long long b0 = descriptor(s_f, B_LBO, B_SBO);
    float acc[3 * ACC];
    frag f0[G], f1[G];
    for (int tile = blockIdx.x * WARPGROUPS + wg; tile < TILES; tile += gridDim.x * WARPGROUPS) {
        const int n = tile / (TILES_P * TILES_Q);
        const int p0 = tile / TILES_Q %% TILES_P * 8, q0 = tile %% TILES_Q * 8;
        const int q = q0 + g, pa = p0 + 2 * warp;
        const int ix = 4 * q - PAD + t, iy = 4 * pa - PAD;
        unsigned sm = 0, rm0 = 0, rm1 = 0;
#pragma unroll
        for (int j = 0; j < 3; ++j) sm |= (q < Q && 4 * j + t < S && ix + 4 * j >= 0 && ix + 4 * j < W) << j;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            rm0 |= (pa < P && iy + r >= 0 && iy + r < H) << r;
            rm1 |= (pa + 1 < P && iy + 4 + r >= 0 && iy + 4 + r < H) << r;
        }
        const float* base = in + (long long)n * C * H * W + (long long)iy * W + ix;
%(PIPE)s
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        // Epilogue: NCHW stores.
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int p = pa + h;
            if (p >= P || q >= Q) continue;
#pragma unroll
            for (int nb = 0; nb < TILE_K / 8; ++nb) {
                const int k = k0 + nb * 8 + 2 * t, e = nb * 4 + 2 * h;
#if SPLIT3
                const float v0 = acc[e] + (acc[ACC + e] + acc[2 * ACC + e]) + bias_reg[nb][0];
                const float v1 = acc[e + 1] + (acc[ACC + e + 1] + acc[2 * ACC + e + 1]) + bias_reg[nb][1];
#else
                const float v0 = acc[e] + bias_reg[nb][0], v1 = acc[e + 1] + bias_reg[nb][1];
#endif
                float* o = out + (((long long)n * K + k) * P + p) * Q + q;
                o[0] = v0;
                o[P * Q] = v1;
            }
        }
    }
}
'''
ng = (50 + G - 1) // G
pipe = ["        load_group<0>(f0, base, rm0, rm1, sm);"]
for gi in range(ng):
    cur, nxt = ("f0", "f1") if gi % 2 == 0 else ("f1", "f0")
    pipe.append("        mma_group<%d>(acc, %s, b0);" % (gi, cur))
    if gi + 1 < ng:
        pipe.append('        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");')
        pipe.append("        load_group<%d>(%s, base, rm0, rm1, sm);" % (gi + 1, nxt))
cases = "\n".join("                CASE(%d)" % i for i in range(50))
wgfn = wg_fn("wgmma_ra", ACC if not SPLIT3 else ACC, ACC).replace("m64n%dk8" % ACC, "m64n%dk8" % TILE_K)
wgfn2 = wg_fn("wgmma_wide", 2 * TILE_K, 2 * ACC) if SPLIT3 else ""
open(out, "w").write(src % dict(TILE_K=TILE_K, WG=WG, G=G, SPLIT3=SPLIT3, ACC=ACC, WGFN=wgfn, WGFN2=wgfn2, PIPE="\n".join(pipe), CASES=cases))
