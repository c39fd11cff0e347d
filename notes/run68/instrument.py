# Adds clock64 phase timers to a rendered wgmma kernel (consumer: wait for
# the patch, wgmmas, epilogue; producer: wait for a free buffer, staging,
# loads), written per block into stamps[32].
import sys, re
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
    unsigned long long p_w = 0, p_s = 0, p_l = 0, p_n = 0;

#if PRODUCER""")
# register-staging producer
if "const auto put = [&](int i, const vtile& t) {" in src and "#define VEC_STAGE 1" in src:
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
else:  # cp.async producer
    rep("""                if (i >= STAGES) named_sync(1 + STAGES + b, BAR_THREADS);  // consumer done with it
                stage_patch(s_in + b * BUF_FLOATS, in, blockIdx.x + i * gridDim.x, tid);""",
"""                const unsigned long long q0 = clock64();
                if (i >= STAGES) named_sync(1 + STAGES + b, BAR_THREADS);  // consumer done with it
                const unsigned long long q1 = clock64();
                stage_patch(s_in + b * BUF_FLOATS, in, blockIdx.x + i * gridDim.x, tid);
                p_w += q1 - q0; p_l += clock64() - q1;""")
    rep("""            if (i >= LAG) {
                asm volatile("cp.async.wait_group %0;" :: "n"(LAG) : "memory");""", """            if (i >= LAG) {
                const unsigned long long q4 = clock64();
                asm volatile("cp.async.wait_group %0;" :: "n"(LAG) : "memory");""")
    rep("""                named_arrive(1 + j % STAGES, BAR_THREADS);
            }
        }""", """                named_arrive(1 + j % STAGES, BAR_THREADS);
                p_s += clock64() - q4; ++p_n;
            }
        }""")
    rep("""            named_arrive(1 + j % STAGES, BAR_THREADS);
        }
        return;""", """            named_arrive(1 + j % STAGES, BAR_THREADS);
        }
        if (tid == 0) { st[16] = p_w; st[17] = p_s; st[18] = p_l; st[19] = p_n; st[20] = clock64() - t_start; }
        return;""")
rep("""        const int b = i % STAGES;
        named_sync(1 + b, BAR_THREADS);                   // the patch is there
        mma_issue(acc, s_in + b * BUF_FLOATS, s_f);
        mma_wait();
        if (i + STAGES < ptiles && blockIdx.x + (i + STAGES) * gridDim.x < TILES)
            named_arrive(1 + STAGES + b, BAR_THREADS);    // the producer may refill it
        store_tile<PREDICATED_STORES>(out, acc, bias_reg, tile, k0, tid, true);
    }""", """        const int b = i % STAGES;
        const unsigned long long c0 = clock64();
        named_sync(1 + b, BAR_THREADS);                   // the patch is there
        const unsigned long long c1 = clock64();
        mma_issue(acc, s_in + b * BUF_FLOATS, s_f);
        mma_wait();
        const unsigned long long c2 = clock64();
        if (i + STAGES < ptiles && blockIdx.x + (i + STAGES) * gridDim.x < TILES)
            named_arrive(1 + STAGES + b, BAR_THREADS);    // the producer may refill it
        store_tile<PREDICATED_STORES>(out, acc, bias_reg, tile, k0, tid, true);
        const unsigned long long c3 = clock64();
        p_w += c1 - c0; p_s += c2 - c1; p_l += c3 - c2; ++p_n;
    }
    if (tid == 0) { st[wg * 4] = p_w; st[wg * 4 + 1] = p_s; st[wg * 4 + 2] = p_l; st[wg * 4 + 3] = p_n; }
    if (tid == 0) atomicMax(&st[31], clock64() - t_start);""")
open(sys.argv[2], "w").write(src)
