// Run 118 prototype (not a template): tf32 NCHW wgmma with "row band" tiles.
// A warpgroup's m64 tile is one whole output row (55 pixels of 64 slots: the
// 8 core matrices of A are 8 pixel groups of the row, 128 bytes apart in the
// staged input). A block walks consecutive output rows (its share of the
// N*P rows, in order); its producer warpgroup keeps a ring of SLOTS "groups"
// of STRIDE_H = 4 input rows (all C channels, full width): output row p of
// image n needs groups p, p+1, p+2 of that image (group g = input rows
// 4g-2 .. 4g+1), so each row stages one new group (4 rows) instead of a whole
// patch. The reduction runs group by group, (j, c, r % 4, s / 4) blocks of 4
// taps, so that both blocks of a k step lie in one group (compile-time
// leading offsets); each group's base is a runtime descriptor. Two computing
// warpgroups take alternate rows; full/empty mbarriers per slot (a group is
// used by up to 3 rows; the producer arrives for users outside the block's
// rows). Epilogue: STORE_MODE 0 as store_tile (a warp store = 8 pixels x 4
// channels), 1: a 4x4 transpose in each quad first, so that a warp store is
// 16 pixels x 2 channels (two 64-byte runs).
#define N 256
#define C 3
#define H 224
#define W 224
#define K 96
#define R 11
#define S 11
#define P 55
#define Q 55
#ifndef STORE_MODE
#define STORE_MODE 0
#endif
#ifndef SLOTS
#define SLOTS 6
#endif
#ifndef LAG
#define LAG 1
#endif
#ifndef WARPGROUPS
#define WARPGROUPS 2
#endif
#ifndef PRODUCER_INC
#define PRODUCER_INC 0                    // producer: incremental slot indices
#endif
#ifndef EARLY_RELEASE
#define EARLY_RELEASE 0                   // one commit group per ring group, each freed when done
#endif
#define WG_THREADS 128
#define THREADS_PER_BLOCK ((WARPGROUPS + 1) * WG_THREADS)
#define ACC 48
#define KSTEPS 50
#define BLOCKS 99
#define PITCH 228                         // floats per staged row: image columns -2 .. 225
#define PAIRS (PITCH / 2)
#define GROUP_FLOATS (C * 4 * PITCH)
#define GPI (P + 2)                       // groups per image
#define ROWS (N * P)
#define FILTER_FLOATS (K * KSTEPS * 8)
#define RING_FLOATS (SLOTS * GROUP_FLOATS + 64)   // + slack: slots 55..63 read past the last row
#define SMEM_BYTES ((FILTER_FLOATS + RING_FLOATS) * 4 + 2 * SLOTS * 8)
#define A_SBO 128
#define B_LBO 128
#define B_SBO (KSTEPS * 8 * 32)
#define EMPTY_COUNT 12                    // 3 users x 4 warps

typedef float elem_t;

// Block b (0..98) of the reduction: group j, channel c, row rr of the group,
// tap block sb (taps 4sb..4sb+3 of filter row 4j + rr).
__host__ __device__ constexpr int blk_j(int b) { return b < 36 ? 0 : b < 72 ? 1 : 2; }
__host__ __device__ constexpr int blk_in(int b) { return b - 36 * blk_j(b); }
__host__ __device__ constexpr int blk_rows(int b) { return blk_j(b) == 2 ? 3 : 4; }   // rows of the group with taps
__host__ __device__ constexpr int blk_c(int b) { return blk_in(b) / (3 * blk_rows(b)); }
__host__ __device__ constexpr int blk_rr(int b) { return blk_in(b) / 3 % blk_rows(b); }
__host__ __device__ constexpr int blk_sb(int b) { return blk_in(b) % 3; }
__host__ __device__ constexpr int blk_off(int b) { return (blk_c(b) * 4 + blk_rr(b)) * PITCH + blk_sb(b) * 4; }  // floats in the group
#define A_LBO(i) (2 * (i) + 1 < BLOCKS ? 4 * (blk_off(2 * (i) + 1) - blk_off(2 * (i))) : 0)

__device__ __forceinline__ void cp_async8(float* dst, const float* src, bool valid) {
    const unsigned int d = (unsigned int)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(d), "l"(src), "r"(valid ? 8 : 0));
}
__device__ __forceinline__ float to_tf32(float x) {
    return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}
__device__ __forceinline__ unsigned long long descriptor(const float* p, unsigned int lbo, unsigned int sbo) {
    const unsigned int a = (unsigned int)__cvta_generic_to_shared(p);
    return (unsigned long long)((a & 0x3ffff) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
        | ((unsigned long long)(sbo >> 4) << 32);
}
__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(unsigned long long* b, int n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sa(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(b)) : "memory");
}
__device__ __forceinline__ void mbar_arrive_n(unsigned long long* b, int n) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" :: "r"(sa(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, int parity) {
    asm volatile("{\n.reg .pred done;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT_%=;\n}\n" :: "r"(sa(b)), "r"(parity) : "memory");
}

// wgmma issues d (+)= A * B for one m64n96k8 step; scale_d = 0 starts d
// from zero.
__device__ __forceinline__ void wgmma(float (&d)[ACC], unsigned long long a, unsigned long long b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
        : "l"(a), "l"(b), "r"(scale_d));
}

// first_group: the flattened index of row R's first group.
__device__ __forceinline__ int first_group(int r) { return r + 2 * (r / P); }

// users: how many of the block's rows [lo, hi) use group g.
__device__ __forceinline__ int users(int g, int lo, int hi) {
    const int n = g / GPI, gi = g % GPI;
    int u = 0;
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        const int p = gi - d, r = n * P + p;
        u += p >= 0 && p < P && r >= lo && r < hi;
    }
    return u;
}

// stage_group issues the cp.async copies of group g (input rows 4gi-2 ..
// 4gi+1 of image n, every channel, columns -2..225, zeros outside) into dst.
__device__ __forceinline__ void stage_group(float* dst, const float* __restrict__ in, int g, int tid) {
    const int n = g / GPI, gi = g % GPI;
#if PRODUCER_INC
    int pr = tid % PAIRS, row = tid / PAIRS;   // row = c * 4 + rr
#pragma unroll
    for (int i = 0; i < (C * 4 * PAIRS + WG_THREADS - 1) / WG_THREADS; ++i) {
        if (row < C * 4) {
            const int c = row / 4, h = 4 * gi - 2 + row % 4, w = 2 * pr - 2;
            const bool ok = h >= 0 && h < H && w >= 0 && w < W;
            cp_async8(dst + row * PITCH + 2 * pr, in + (((long long)n * C + c) * H + (ok ? h : 0)) * W + (ok ? w : 0), ok);
        }
        pr += WG_THREADS % PAIRS, row += WG_THREADS / PAIRS;
        if (pr >= PAIRS) pr -= PAIRS, ++row;
    }
#else
#pragma unroll 4
    for (int s = tid; s < C * 4 * PAIRS; s += WG_THREADS) {
        const int pr = s % PAIRS, row = s / PAIRS;      // row = c * 4 + rr
        const int c = row / 4, h = 4 * gi - 2 + row % 4, w = 2 * pr - 2;
        const bool ok = h >= 0 && h < H && w >= 0 && w < W;
        cp_async8(dst + row * PITCH + 2 * pr, in + (((long long)n * C + c) * H + (ok ? h : 0)) * W + (ok ? w : 0), ok);
    }
#endif
    asm volatile("cp.async.commit_group;");
}

__device__ __forceinline__ void store_row(float* __restrict__ out, const float (&acc)[ACC], const float (&bias_reg)[K / 8][2],
                                          int row, int tid) {
    const int warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
    const int n = row / P, p = row % P;
    float* plane = out + ((long long)n * K * P + p) * Q;   // + k * P * Q + q
#if STORE_MODE == 0
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int q = 16 * warp + 8 * h + g;
        if (q >= Q) continue;
#pragma unroll
        for (int nb = 0; nb < K / 8; ++nb) {
            const int k = nb * 8 + 2 * t, e = nb * 4 + 2 * h;
            plane[(long long)k * P * Q + q] = acc[e] + bias_reg[nb][0];
            plane[(long long)(k + 1) * P * Q + q] = acc[e + 1] + bias_reg[nb][1];
        }
    }
#else
    // Lane (g, t) holds v[h][b] = channel 8nb + 2t + b, pixel 16warp + 8h + g.
    // A 4x4 transpose in the quad (index i = 2h + b) gives lane t the values
    // i = t of its quad's four lanes u: channel 8nb + 2u + t % 2, pixel
    // 16warp + 8(t / 2) + g; store u then writes 16 pixels of 2 channels.
    const int hh = t / 2, bb = t % 2;
    const int q = 16 * warp + 8 * hh + g;
    const bool ok = q < Q;
#pragma unroll
    for (int nb = 0; nb < K / 8; ++nb) {
        float v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = acc[nb * 4 + i] + bias_reg[nb][i % 2];  // i = 2h + b: acc e = 4nb + 2h + b
        // round 1 (xor 1): lane t keeps elements whose bit 0 equals t's bit 0...
        // transpose: after it, w[u] = v_from_lane_u[t]
        float w[4];
        {
            // step A: exchange across xor 1 the elements with index bit0 != lane bit0
            const int b0 = t & 1;
            float s0 = __shfl_xor_sync(0xffffffffu, b0 ? v[0] : v[1], 1);
            float s1 = __shfl_xor_sync(0xffffffffu, b0 ? v[2] : v[3], 1);
            // now lane holds, for pair (i0 = 2m + b0) of its own and received:
            // x[m][src bit0] : own v[2m + b0] (src = t), received = partner's v[2m + b0]
            float x00 = b0 ? s0 : v[0], x01 = b0 ? v[1] : s0;   // m = 0: from lanes with bit0 = 0 / 1, element 2*0 + b0
            float x10 = b0 ? s1 : v[2], x11 = b0 ? v[3] : s1;   // m = 1
            // x[m][j] = lane (t & 2 | j)'s v[2m + b0]
            const int b1 = (t >> 1) & 1;
            float r0 = __shfl_xor_sync(0xffffffffu, b1 ? x00 : x10, 2);
            float r1 = __shfl_xor_sync(0xffffffffu, b1 ? x01 : x11, 2);
            // lane keeps m = b1: x[b1][j] = lane (t & 2 | j)'s v[2 b1 + b0] = v[t]
            // and receives partner's x[b1'][j] where partner b1' = !b1 ... partner sent x[!b1... ]
            // partner (t ^ 2) sent its x[m = b1] (since it sends m = !b1_partner = b1)
            // = lane ((t ^ 2) & 2 | j)'s v[2 b1 + b0] = v[t]
            const float own0 = b1 ? x10 : x00, own1 = b1 ? x11 : x01;
            w[0] = b1 ? r0 : own0;
            w[1] = b1 ? r1 : own1;
            w[2] = b1 ? own0 : r0;
            w[3] = b1 ? own1 : r1;
        }
        if (ok) {
#pragma unroll
            for (int u = 0; u < 4; ++u)
                plane[(long long)(nb * 8 + 2 * u + bb) * P * Q + q] = w[u];
        }
    }
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS_PER_BLOCK, 1)
band_tf32(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ filter, const float* __restrict__ bias)
{
    extern __shared__ __align__(128) float smem[];
    const int wg = threadIdx.x / WG_THREADS, tid = threadIdx.x % WG_THREADS;
    float* s_f = smem;
    float* s_ring = smem + FILTER_FLOATS;
    unsigned long long* full = reinterpret_cast<unsigned long long*>(s_ring + RING_FLOATS);
    unsigned long long* empty = full + SLOTS;
    const int lo = (int)((long long)blockIdx.x * ROWS / gridDim.x), hi = (int)((long long)(blockIdx.x + 1) * ROWS / gridDim.x);
    const int g_first = first_group(lo), ngroups = first_group(hi - 1) + 3 - g_first;
    if (threadIdx.x == 0) {
        for (int s = 0; s < SLOTS; ++s) mbar_init(&full[s], WG_THREADS), mbar_init(&empty[s], EMPTY_COUNT);
    }
    // Ring slack (read by the discarded pixel slots 55..63) and filter.
    for (int i = threadIdx.x; i < RING_FLOATS; i += THREADS_PER_BLOCK) s_ring[i] = 0.0f;
    __syncthreads();
    if (wg == WARPGROUPS && ngroups > 0) stage_group(s_ring, in, g_first, tid);
    for (int base = threadIdx.x; base < FILTER_FLOATS; base += 8 * THREADS_PER_BLOCK) {
        float v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int idx = base + u * THREADS_PER_BLOCK;
            const int e = idx % 4, kk = idx / 4 % 8, blk = idx / 32 % (2 * KSTEPS), grp = idx / (64 * KSTEPS);
            const int c = blk_c(blk), r = 4 * blk_j(blk) + blk_rr(blk), s = 4 * blk_sb(blk) + e, k = grp * 8 + kk;
            const bool ok = idx < FILTER_FLOATS && blk < BLOCKS && r < R && s < S;
            v[u] = ok ? __ldg(&filter[((k * C + c) * R + r) * S + s]) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int idx = base + u * THREADS_PER_BLOCK;
            if (idx < FILTER_FLOATS) s_f[idx] = to_tf32(v[u]);
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();

    if (wg == WARPGROUPS) {
        // Producer: group seq goes to slot seq % SLOTS; LAG groups loading
        // behind the newest one issued.
        for (int seq = 0; seq < ngroups; ++seq) {
            const int slot = seq % SLOTS, f = seq / SLOTS;
            if (seq > 0) {
                if (f > 0) mbar_wait(&empty[slot], (f - 1) & 1);
                stage_group(s_ring + slot * GROUP_FLOATS, in, g_first + seq, tid);
            }
            if (tid == 0) {
                const int missing = 3 - users(g_first + seq, lo, hi);
                if (missing > 0) mbar_arrive_n(&empty[slot], 4 * missing);
            }
            if (seq >= LAG) {
                asm volatile("cp.async.wait_group %0;" :: "n"(LAG) : "memory");
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                mbar_arrive(&full[(seq - LAG) % SLOTS]);
            }
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        for (int seq = ngroups - LAG > 0 ? ngroups - LAG : 0; seq < ngroups; ++seq) mbar_arrive(&full[seq % SLOTS]);
        return;
    }

    float bias_reg[K / 8][2];
#pragma unroll
    for (int nb = 0; nb < K / 8; ++nb) {
        bias_reg[nb][0] = __ldg(&bias[nb * 8 + 2 * (tid % 4)]);
        bias_reg[nb][1] = __ldg(&bias[nb * 8 + 2 * (tid % 4) + 1]);
    }
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
    const unsigned long long b0 = descriptor(s_f, B_LBO, B_SBO);
    for (int row = lo + wg; row < hi; row += WARPGROUPS) {
        const int seq0 = first_group(row) - g_first;
        unsigned long long a_base[3];
#if EARLY_RELEASE
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int j = 0; j < 3; ++j) {
            const int seq = seq0 + j, slot = seq % SLOTS;
            mbar_wait(&full[slot], (seq / SLOTS) & 1);
            a_base[j] = descriptor(s_ring + slot * GROUP_FLOATS, 0, A_SBO);
#pragma unroll
            for (int ks = 0; ks < KSTEPS; ++ks) {
                if (blk_j(2 * ks) != j) continue;
                const unsigned long long a = a_base[j] + (unsigned long long)(blk_off(2 * ks) / 4)
                    + ((unsigned long long)(A_LBO(ks) >> 4) << 16);
                wgmma(acc, a, b0 + (unsigned long long)(ks * 16), ks > 0);
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        }
        asm volatile("wgmma.wait_group.sync.aligned 2;" ::: "memory");
        __syncwarp();
        if (tid % 32 == 0) mbar_arrive(&empty[seq0 % SLOTS]);
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        __syncwarp();
        if (tid % 32 == 0) mbar_arrive(&empty[(seq0 + 1) % SLOTS]);
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncwarp();
        if (tid % 32 == 0) mbar_arrive(&empty[(seq0 + 2) % SLOTS]);
#else
#pragma unroll
        for (int j = 0; j < 3; ++j) {
            const int seq = seq0 + j, slot = seq % SLOTS;
            mbar_wait(&full[slot], (seq / SLOTS) & 1);
            a_base[j] = descriptor(s_ring + slot * GROUP_FLOATS, 0, A_SBO);
        }
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            const unsigned long long a = a_base[blk_j(2 * ks)] + (unsigned long long)(blk_off(2 * ks) / 4)
                + ((unsigned long long)(A_LBO(ks) >> 4) << 16);
            wgmma(acc, a, b0 + (unsigned long long)(ks * 16), ks > 0);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncwarp();
        if (tid % 32 == 0) {
#pragma unroll
            for (int j = 0; j < 3; ++j) mbar_arrive(&empty[(seq0 + j) % SLOTS]);
        }
#endif
        store_row(out, acc, bias_reg, row, tid);
    }
}

#define KNAME band_tf32
