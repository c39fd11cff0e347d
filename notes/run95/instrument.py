# Run 95: clock64 phase timers for the RegisterA 3xtf32 winner (run 68's
# instrument.py adapted to the consumer loop with the early buffer release
# and to mma_issue's fragment groups). Per block, stamps[32]:
#   consumer warpgroup w (w < 2): [4w] wait for the patch, [4w+1] mma_issue
#   (loads, splits, group waits, issue), [4w+2] epilogue, [4w+3] tiles;
#   [8+3w] the final wgmma wait, [9+3w] the group waits inside mma_issue,
#   [10+3w] the fragment loads and splits after those waits;
#   producer thread 0: [16] wait for a free buffer, [17] store, [18] load
#   issue, [19] tiles, [20] loop; [30] setup; [31] the last consumer's end.
import sys
src = open(sys.argv[1]).read()
def rep(old, new, count=1):
    global src
    n = src.count(old)
    if n != count:
        sys.exit(f"pattern found {n} times, want {count}: {old[:70]!r}")
    src = src.replace(old, new)
rep("""          const elem_t* __restrict__ filter, const elem_t* __restrict__ bias)
{
    extern __shared__ __align__(128) float smem[];""",
"""          const elem_t* __restrict__ filter, const elem_t* __restrict__ bias, unsigned long long* __restrict__ stamps)
{
    const unsigned long long t_start = clock64();
    unsigned long long* st = stamps + (blockIdx.y * gridDim.x + blockIdx.x) * 32;
    extern __shared__ __align__(128) float smem[];""")
rep("""    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();

#if PRODUCER""", """    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) st[30] = clock64() - t_start;  // setup (filter staging)
    unsigned long long p_w = 0, p_s = 0, p_l = 0, p_n = 0, p_f = 0, p_g = 0, p_d = 0;

#if PRODUCER""")
rep("""            if (i >= STAGES) named_sync(1 + STAGES + b, BAR_THREADS);  // consumer done with it
            store_vtile(s_in + b * BUF_FLOATS, t, blockIdx.x + i * gridDim.x, pt);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            named_arrive(1 + b, BAR_THREADS);
        };""", """            const unsigned long long q0 = clock64();
            if (i >= STAGES) named_sync(1 + STAGES + b, BAR_THREADS);  // consumer done with it
            const unsigned long long q1 = clock64();
            store_vtile(s_in + b * BUF_FLOATS, t, blockIdx.x + i * gridDim.x, pt);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            named_arrive(1 + b, BAR_THREADS);
            const unsigned long long q2 = clock64();
            p_w += q1 - q0; p_s += q2 - q1; ++p_n;
        };""")
rep("""                if (live(ahead)) load_vtile(t[(d + PREFETCH - 1) % PREFETCH], in, blockIdx.x + ahead * gridDim.x, pt);""",
"""                const unsigned long long q3 = clock64();
                if (live(ahead)) load_vtile(t[(d + PREFETCH - 1) % PREFETCH], in, blockIdx.x + ahead * gridDim.x, pt);
                p_l += clock64() - q3;""")
rep("""                put(i + d, t[d]);
            }
        }
        return;""", """                put(i + d, t[d]);
            }
        }
        if (pt == 0) { st[16] = p_w; st[17] = p_s; st[18] = p_l; st[19] = p_n; st[20] = clock64() - t_start; }
        return;""")
# mma_issue: time the group waits and the loads after them.
rep("""                                          int release = -1) {
    const int tid = threadIdx.x % WG_THREADS;""", """                                          int release = -1, unsigned long long* t_g = nullptr, unsigned long long* t_d = nullptr) {
    const int tid = threadIdx.x % WG_THREADS;""")
rep("""            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");  // group gi - 1 is done with its registers
#pragma unroll
            for (int i = 0; i < A_GROUP; ++i)
                if ((gi + 1) * A_GROUP + i < A_STEPS) load_afrag(f[(gi + 1) % 2][i], p, (gi + 1) * A_GROUP + i);""",
"""            const unsigned long long w0 = clock64();
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");  // group gi - 1 is done with its registers
            const unsigned long long w1 = clock64();
#pragma unroll
            for (int i = 0; i < A_GROUP; ++i)
                if ((gi + 1) * A_GROUP + i < A_STEPS) load_afrag(f[(gi + 1) % 2][i], p, (gi + 1) * A_GROUP + i);
            unsigned int sink = 0;   // make the loads complete before the stamp
#pragma unroll
            for (int i = 0; i < A_GROUP; ++i) sink ^= f[(gi + 1) % 2][i].lo[0];
            asm volatile("" :: "r"(sink));
            if (t_g) *t_g += w1 - w0, *t_d += clock64() - w1;""")
rep("""        named_sync(1 + b, BAR_THREADS);                   // the patch is there
        // The producer may refill the buffer once this tile is read from it.
        const int release = i + STAGES < ptiles && blockIdx.x + (i + STAGES) * gridDim.x < TILES ? 1 + STAGES + b : -1;
        mma_issue(acc, s_in + b * BUF_FLOATS, s_f, A_REGS ? release : -1);
        mma_wait();
        if (!A_REGS && release >= 0) named_arrive(release, BAR_THREADS);
        store_tile<PREDICATED_STORES>(out, acc, bias_reg, tile, k0, tid, true);
    }""", """        const unsigned long long c0 = clock64();
        named_sync(1 + b, BAR_THREADS);                   // the patch is there
        const unsigned long long c1 = clock64();
        // The producer may refill the buffer once this tile is read from it.
        const int release = i + STAGES < ptiles && blockIdx.x + (i + STAGES) * gridDim.x < TILES ? 1 + STAGES + b : -1;
        mma_issue(acc, s_in + b * BUF_FLOATS, s_f, A_REGS ? release : -1, &p_g, &p_d);
        const unsigned long long c2 = clock64();
        mma_wait();
        const unsigned long long c3 = clock64();
        if (!A_REGS && release >= 0) named_arrive(release, BAR_THREADS);
        store_tile<PREDICATED_STORES>(out, acc, bias_reg, tile, k0, tid, true);
        const unsigned long long c4 = clock64();
        p_w += c1 - c0; p_s += c2 - c1; p_f += c3 - c2; p_l += c4 - c3; ++p_n;
    }
    if (tid == 0) { st[wg * 4] = p_w; st[wg * 4 + 1] = p_s; st[wg * 4 + 2] = p_l; st[wg * 4 + 3] = p_n;
                    st[8 + 3 * wg] = p_f; st[9 + 3 * wg] = p_g; st[10 + 3 * wg] = p_d; }
    if (tid == 0) atomicMax(&st[31], clock64() - t_start);""")
open(sys.argv[2], "w").write(src)
