// Implicit-GEMM convolution on Hopper tensor cores (wgmma, sm_90a), TF32 operands, FP32 accumulation; the filter is rounded to TF32 (nearest), the input too with
// RoundInput = 1, else the tensor cores truncate it (the error bound holds either way).
// Shape: N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2,dilation=1,groups=1,bias=true, layout nhwc (filter krsc)
// Config: Overlap=0,PredicatedStores=1,Producer=2,RoundInput=1,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2
//
// The convolution is a GEMM: M = N*P*Q output pixels, N = K output channels,
// and a reduction over the C*R*S filter taps, laid out as (c, r, s) with s
// padded from S to S4 = 12 and counted in blocks of 4 taps (16 bytes).
// Both wgmma operands are read by the tensor cores straight from shared
// memory through matrix descriptors (no swizzle: a "core matrix" is 8 rows
// of 16 contiguous bytes):
//   - A, the im2col matrix, is never materialised. With stride_w = 4 the 4
//     taps (c, r, s..s+3) of 8 neighbouring output pixels of one output row
//     are 8 rows of 16 bytes, 16 bytes apart, in the staged input patch:
//     a core matrix as it is. An m64 tile is 8 output rows x 8 output
//     columns (core matrices STRIDE_H patch rows apart: the descriptor's
//     stride offset), and the 2 core matrices of a k8 step are two tap
//     blocks (the leading offset, a compile-time constant per step).
//   - B, the filter slice, is staged once per block in core-matrix order
//     [channel/8][tap block][channel%8][tap%4], rounded to TF32, zeros on
//     padded taps.
// With 2-byte tensors (IO_HALF: FP16 or BF16 input, filter, bias and output)
// the patch and the filter are widened to FP32 in shared memory: every FP16
// or BF16 value is exactly a TF32 value, so the TF32 products are the exact
// products of the half operands, accumulated in FP32 as on FP16 tensor cores.
// The patch is then staged through registers (VEC_STAGE): aligned CHUNK-element
// loads of whole image rows, each element converted (or rounded, or split) and
// stored to its channel plane; NHWC is de-interleaved on the way.
//
// Block:     TileK output channels; Warpgroups computing warpgroups (4 warps
//            each) that share the filter slice. With Producer = 0 each one
//            stages its own tiles into its own Stages patch buffers (2: the
//            next tile's patch is prefetched with cp.async while the tensor
//            cores work on this one). With Producer = 1 (or 2) one more
//            warpgroup (or two, sharing each tile's rows; register staging
//            only) only stages patches, into a ring of Stages buffers shared
//            by the computing warpgroups, handing each over through named
//            barriers.
// Warpgroup: one TileP x TileQ pixel tile at a time (TileP/8 x TileQ/8 m64
//            sub-tiles), walking TilesPerWarpgroup tiles. Per m64 sub-tile
//            and k8 step: one wgmma.mma_async m64n96k8.
// Thread:    the accumulator fragment of its lane (warp w of the warpgroup
//            holds sub-tile rows 16w..16w+15: output rows 2w and 2w+1,
//            column lane/4; channels 8i + 2(lane%4) and +1), FP32 in
//            registers; bias is added in the epilogue.

#define N 256
#define C 3
#define H 224
#define W 224
#define K 96
#define R 11
#define S 11
#define P 55
#define Q 55
#define STRIDE_H 4
#define STRIDE_W 4
#define PAD_H 2
#define PAD_W 2
#define DIL_H 1
#define DIL_W 1
#define HAS_BIAS 1
#define NHWC 1
#define IO_HALF 0                  // tensors in memory: 0 FP32, 1 FP16, 2 BF16

// Knobs.
#define TILE_P 8
#define TILE_Q 8
#define TILE_K 96
#define WARPGROUPS 2
#define TILES_PER_WARPGROUP 48
#define STAGES 2
#define PRODUCER 2                   // producer warpgroups: 0, 1 or 2
#define PREDICATED_STORES 1   // epilogue stores predicated (1) or branched around (0)
#define OVERLAP 0                     // producer mode: store a tile while the next one's wgmmas run
#define SPLIT3 0                       // 3xTF32: high parts and residuals
#define ROUND_INPUT 1              // 0: the tensor cores truncate the input to TF32
#define VEC_STAGE 1                  // producer stages the patch through registers (1) or cp.async (0)
#define LAG (STAGES - WARPGROUPS)                // producer: tiles loading behind the newest

// Derived.
#define WG_THREADS 128
#define THREADS_PER_BLOCK ((WARPGROUPS + PRODUCER) * WG_THREADS)
#define PRODUCER_THREADS (PRODUCER * WG_THREADS)
#define BAR_THREADS (PRODUCER_THREADS + WG_THREADS)   // a buffer's barriers: the producers and one consumer
#define SUB_P (TILE_P / 8)
#define SUB_Q (TILE_Q / 8)
#define SUBTILES (SUB_P * SUB_Q)
#define ACC (TILE_K / 2)                     // accumulators per thread per m64 sub-tile and product
// 3xTF32 keeps three: A_hi*B_hi and A_hi*B_lo side by side (one wgmma of
// N = 2*TILE_K over the filter's two copies), then A_lo*B_hi.
#define ACCS (SPLIT3 ? 3 * ACC : ACC)
#define S4 12
#define BLOCKS 99                // 4-tap blocks with taps: C*R*S4/4
#define KSTEPS 50                   // k8 steps: BLOCKS/2 rounded up
#define TILES_P 7
#define TILES_Q 7
#define TILES (N * TILES_P * TILES_Q)
#define PATCH_ROWS 39
#define PATCH_COLS 40
#define PATCH_PITCH 40          // a multiple of 4: 16-byte rows
#define PATCH_FLOATS (C * PATCH_ROWS * PATCH_PITCH)
#define BUF_FLOATS ((1 + SPLIT3) * PATCH_FLOATS)  // a patch buffer: the patch (and its TF32 residual)
#define FILTER_FLOATS (TILE_K * KSTEPS * 8)
#define FILTER_BATCH 8
#define PAIR_STAGE 0            // stage the patch 8 bytes at a time
#define PAIRS ((PATCH_COLS + 1) / 2)

// Offset in floats, within a patch, of 4-tap block b = (c, r, s/4).
#define BLOCK_OFF(b) (((b) / (R * (S4 / 4))) * (PATCH_ROWS * PATCH_PITCH) \
    + ((b) / (S4 / 4) % R) * DIL_H * PATCH_PITCH + ((b) % (S4 / 4)) * 4)
// Leading (k-direction) byte offset of k step i: from its first tap block to
// its second; an odd last step's second block has zero filter weights and
// reads the first block again.
#define A_LBO(i) (2 * (i) + 1 < BLOCKS ? 4 * (BLOCK_OFF(2 * (i) + 1) - BLOCK_OFF(2 * (i))) : 0)
#define A_SBO (4 * STRIDE_H * PATCH_PITCH)  // next 8 pixels: the next output row
#define B_LBO 128                           // next 4 taps of the same 8 channels
#define B_SBO (KSTEPS * 8 * 32)             // next 8 channels: one channel group

#if IO_HALF
typedef unsigned short elem_t;  // FP16 or BF16 bits
#else
typedef float elem_t;
#endif

// to_float widens one tensor element to FP32 (exactly).
__device__ __forceinline__ float to_float(elem_t v) {
#if IO_HALF == 2
    return __uint_as_float((unsigned int)v << 16);
#elif IO_HALF == 1
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    return f;
#else
    return v;
#endif
}

#if IO_HALF
// narrow rounds one FP32 value to the tensors' 2-byte type (nearest even);
// narrow2 packs two, lo in the low half.
__device__ __forceinline__ unsigned short narrow(float v) {
    unsigned short r;
#if IO_HALF == 2
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
#else
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
#endif
    return r;
}
__device__ __forceinline__ unsigned int narrow2(float lo, float hi) {
    unsigned int r;
#if IO_HALF == 2
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}
#endif

// to_tf32 rounds to TF32 (10 mantissa bits, nearest, ties away from zero,
// as cvt.rna.tf32.f32 does for finite values) with integer operations.
__device__ __forceinline__ float to_tf32(float x) {
    return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}

__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid) {
    const unsigned int d = (unsigned int)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(d), "l"(src), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async8(float* dst, const float* src, bool valid) {
    const unsigned int d = (unsigned int)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(d), "l"(src), "r"(valid ? 8 : 0));
}

// Shared-memory matrix descriptor without swizzle: start address, leading
// and stride byte offsets, each in 16-byte units.
__device__ __forceinline__ unsigned long long descriptor(const float* p, unsigned int lbo, unsigned int sbo) {
    const unsigned int a = (unsigned int)__cvta_generic_to_shared(p);
    return (unsigned long long)((a & 0x3ffff) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
        | ((unsigned long long)(sbo >> 4) << 32);
}

#if SPLIT3
// wgmma_wide issues d (+)= A * [B_hi | B_lo] for one m64n192k8 step.
__device__ __forceinline__ void wgmma_wide(float (&d)[2 * ACC], unsigned long long a, unsigned long long b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(a), "l"(b), "r"(scale_d));
}
#endif

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

// The staging work of one warpgroup: a patch row holds ROW_ITEMS copies
// (8-byte pairs with PAIR_STAGE, else single floats, all channels of a
// pixel together in NHWC); thread slot s copies item s % ROW_ITEMS of rows
// s / ROW_ITEMS, s / ROW_ITEMS + PASS_ROWS, ... so that the index
// arithmetic is done once per slot and the row loop is unrolled with
// constant offsets.
#if PAIR_STAGE
#define ROW_ITEMS PAIRS
#elif NHWC
#define ROW_ITEMS (PATCH_COLS * C)
#else
#define ROW_ITEMS PATCH_COLS
#endif
#define PASS_ROWS (WG_THREADS / ROW_ITEMS > 0 ? WG_THREADS / ROW_ITEMS : 1)
#define PASSES ((PATCH_ROWS + PASS_ROWS - 1) / PASS_ROWS)
#if NHWC
#define SLOT_CHANNELS 1                    // one channel per item
#else
#define SLOT_CHANNELS C                    // every channel of the item's column
#endif

// for_each_slot calls f(smem offset, image offset, in image) for every
// element (pair) this thread stages for the tile with patch origin (n, h0,
// w0); smem offsets are in floats within a patch buffer.
template <typename F>
__device__ __forceinline__ void for_each_slot(int tile, int tid, F f) {
    const int n = tile / (TILES_P * TILES_Q);
    const int h0 = (tile / TILES_Q) % TILES_P * TILE_P * STRIDE_H - PAD_H;
    const int w0 = tile % TILES_Q * TILE_Q * STRIDE_W - PAD_W;
    for (int slot = tid; slot < PASS_ROWS * ROW_ITEMS; slot += WG_THREADS) {
        const int item = slot % ROW_ITEMS, r0 = slot / ROW_ITEMS;
#if PAIR_STAGE
        const int col = item * 2, c0 = 0;
#elif NHWC
        const int col = item / C, c0 = item % C;
#else
        const int col = item, c0 = 0;
#endif
        const int w = w0 + col;
        const bool w_ok = w >= 0 && w < W;
#pragma unroll
        for (int ci = 0; ci < SLOT_CHANNELS; ++ci) {
            const int c = c0 + ci;
#pragma unroll
            for (int pass = 0; pass < PASSES; ++pass) {
                const int row = r0 + pass * PASS_ROWS, h = h0 + row;
                if (row >= PATCH_ROWS) break;
                const bool ok = w_ok && h >= 0 && h < H;
#if NHWC
                const long long src = (((long long)n * H + (ok ? h : 0)) * W + (ok ? w : 0)) * C + c;
#else
                const long long src = (((long long)n * C + c) * H + (ok ? h : 0)) * W + (ok ? w : 0);
#endif
                f((c * PATCH_ROWS + row) * PATCH_PITCH + col, src, ok);
            }
        }
    }
}

// stage_patch issues cp.async copies of the input patch of one tile (zeros
// outside the image) into buf, laid out [c][row][col], by the warpgroup's
// threads. With PAIR_STAGE (NCHW, even image width and padding, tiles
// starting on even columns: image borders fall between pairs) it copies
// 8 bytes at a time.
__device__ __forceinline__ void stage_patch(float* buf, const float* __restrict__ in, int tile, int tid) {
    for_each_slot(tile, tid, [&](int dst, long long src, bool ok) {
#if PAIR_STAGE
        cp_async8(buf + dst, in + src, ok);
#else
        cp_async4(buf + dst, in + src, ok);
#endif
    });
    asm volatile("cp.async.commit_group;");
}

// round_patch rounds to TF32, in place, the elements this thread staged
// (its own cp.async writes are visible to it after cp.async.wait_group);
// with SPLIT3 it also writes their TF32 residuals PATCH_FLOATS further.
__device__ __forceinline__ void round_patch(float* buf, int tile, int tid) {
    for_each_slot(tile, tid, [&](int dst, long long, bool) {
#if PAIR_STAGE
        float2* e = reinterpret_cast<float2*>(buf + dst);
        const float2 v = *e, hi = make_float2(to_tf32(v.x), to_tf32(v.y));
        *e = hi;
#if SPLIT3
        *reinterpret_cast<float2*>(buf + PATCH_FLOATS + dst) = make_float2(to_tf32(v.x - hi.x), to_tf32(v.y - hi.y));
#endif
#else
        const float v = buf[dst], hi = to_tf32(v);
        buf[dst] = hi;
#if SPLIT3
        buf[PATCH_FLOATS + dst] = to_tf32(v - hi);
#endif
#endif
    });
}

#if VEC_STAGE
// Staging through registers (producer only). An image row (one channel's in
// NCHW, all channels interleaved in NHWC) is ROW_ELEMS elements, a multiple
// of CHUNK, and starts CHUNK-aligned; a tile's columns of that row are read
// as ROW_CHUNKS aligned chunks from the one holding column w0, so a chunk is
// wholly inside the image row or wholly outside (then zeros). A staged row
// is a patch row (NHWC) or a (channel, patch row) pair (NCHW). Producer
// thread pt (of all producer warpgroups) takes chunk pt % ROW_CHUNKS of
// staged rows pt / ROW_CHUNKS, + VPASS_ROWS, ... (a warp's lanes read
// consecutive chunks: coalesced), so where each element of its chunks goes
// in the patch (channel plane and column) is worked out once per tile, not
// per element.
#define CHUNK 4                     // elements per load
#define CHUNK_WORDS (CHUNK * (IO_HALF ? 2 : 4) / 4)
#define PIX_ELEMS (NHWC ? C : 1)             // elements per pixel of an image row
#define ROW_ELEMS (W * PIX_ELEMS)
#define STAGE_ROWS (NHWC ? PATCH_ROWS : C * PATCH_ROWS)
#define ROW_CHUNKS ((PATCH_COLS * PIX_ELEMS + CHUNK - 1) / CHUNK + 1)
#define VPASS_ROWS (PRODUCER_THREADS / ROW_CHUNKS)
#define VPASSES ((STAGE_ROWS + VPASS_ROWS - 1) / VPASS_ROWS)
#define PREFETCH (1 + PRODUCER)              // tiles loading at once: each thread holds 1/PRODUCER of a tile
#define IDX_BIAS ((PAD_W + 1) * PIX_ELEMS * CHUNK)  // keeps divided element indices non-negative

// load_chunk reads CHUNK aligned elements as 32-bit words (read-only path).
__device__ __forceinline__ void load_chunk(unsigned int (&v)[CHUNK_WORDS], const elem_t* p) {
#if CHUNK_WORDS == 4
    const uint4 x = __ldg(reinterpret_cast<const uint4*>(p));
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
#elif CHUNK_WORDS == 2
    const uint2 x = __ldg(reinterpret_cast<const uint2*>(p));
    v[0] = x.x, v[1] = x.y;
#else
    v[0] = __ldg(reinterpret_cast<const unsigned int*>(p));
#endif
}

// chunk_elem widens element e of a loaded chunk to FP32.
__device__ __forceinline__ float chunk_elem(const unsigned int (&v)[CHUNK_WORDS], int e) {
#if IO_HALF
    return to_float((elem_t)(v[e / 2] >> (16 * (e % 2))));
#else
    return __uint_as_float(v[e]);
#endif
}

// vtile holds one tile's chunks of this thread, loaded and not yet stored.
struct vtile {
    unsigned int v[VPASSES][CHUNK_WORDS];
};

// vtile_origin gives a tile's image n, first patch row h0, first column w0
// and the element index a (within an image row) of this thread's chunk.
__device__ __forceinline__ void vtile_origin(int tile, int pt, int& n, int& h0, int& w0, int& a) {
    n = tile / (TILES_P * TILES_Q);
    h0 = (tile / TILES_Q) % TILES_P * TILE_P * STRIDE_H - PAD_H;
    w0 = tile % TILES_Q * TILE_Q * STRIDE_W - PAD_W;
    const int a0 = (w0 * PIX_ELEMS + IDX_BIAS) / CHUNK * CHUNK - IDX_BIAS;  // floor to a chunk
    a = a0 + pt % ROW_CHUNKS * CHUNK;
}

// load_vtile issues this thread's loads of one tile (zeros outside the image).
__device__ __forceinline__ void load_vtile(vtile& t, const elem_t* __restrict__ in, int tile, int pt) {
    int n, h0, w0, a;
    vtile_origin(tile, pt, n, h0, w0, a);
    const bool a_ok = pt < VPASS_ROWS * ROW_CHUNKS && a >= 0 && a < ROW_ELEMS;
#pragma unroll
    for (int k = 0; k < VPASSES; ++k) {
        const int row = pt / ROW_CHUNKS + k * VPASS_ROWS, h = h0 + row % PATCH_ROWS;
        if (a_ok && row < STAGE_ROWS && h >= 0 && h < H) {
#if NHWC
            load_chunk(t.v[k], in + ((long long)n * H + h) * ROW_ELEMS + a);
#else
            load_chunk(t.v[k], in + (((long long)n * C + row / PATCH_ROWS) * H + h) * ROW_ELEMS + a);
#endif
        } else {
#pragma unroll
            for (int e = 0; e < CHUNK_WORDS; ++e) t.v[k][e] = 0;
        }
    }
}

// store_vtile writes this thread's elements of a loaded tile into buf
// ([c][row][col]); with ROUND_INPUT (FP32 input) they are rounded to TF32
// on the way, with SPLIT3 their residuals go PATCH_FLOATS further. FP16 and
// BF16 values are exact in TF32.
__device__ __forceinline__ void store_vtile(float* buf, const vtile& t, int tile, int pt) {
    int n, h0, w0, a;
    vtile_origin(tile, pt, n, h0, w0, a);
    // Lanes 16..31 store the second half of each chunk first, so that the
    // two half-warps' stores fall in different banks more often: counted
    // offline for the flagship's 8x8 tiles, 2.0 shared-memory wavefronts per
    // store instead of 2.95 (fp16 NHWC) and 3.7 (tf32 NCHW).
    const bool swap = pt % 32 >= 16;
    int off[CHUNK];   // stored element e's offset within a staged row (plane and column)
    bool ok[CHUNK];   // ... and whether it is a patch column
#pragma unroll
    for (int e = 0; e < CHUNK; ++e) {
        const int x = a + (swap ? (e + CHUNK / 2) % CHUNK : e) + IDX_BIAS;  // >= 0
        const int col = x / PIX_ELEMS - IDX_BIAS / PIX_ELEMS - w0;
        off[e] = (NHWC ? x % PIX_ELEMS * (PATCH_ROWS * PATCH_PITCH) : 0) + col;
        ok[e] = pt < VPASS_ROWS * ROW_CHUNKS && col >= 0 && col < PATCH_COLS;
    }
#pragma unroll
    for (int k = 0; k < VPASSES; ++k) {
        const int row = pt / ROW_CHUNKS + k * VPASS_ROWS;
        if (row >= STAGE_ROWS) break;
        float* dst = buf + row * PATCH_PITCH;
        unsigned int w[CHUNK_WORDS];  // the chunk, rotated by half of it with swap
#pragma unroll
        for (int i = 0; i < CHUNK_WORDS; ++i) w[i] = swap ? t.v[k][(i + CHUNK_WORDS / 2) % CHUNK_WORDS] : t.v[k][i];
#if IO_HALF && CHUNK_WORDS == 1
        w[0] = swap ? __byte_perm(w[0], 0, 0x1032) : w[0];
#endif
#pragma unroll
        for (int e = 0; e < CHUNK; ++e) {
            if (!ok[e]) continue;
            const float f = chunk_elem(w, e), hi = ROUND_INPUT ? to_tf32(f) : f;
            dst[off[e]] = hi;
#if SPLIT3
            dst[PATCH_FLOATS + off[e]] = to_tf32(f - hi);
#endif
        }
    }
}
#endif

// mma_issue issues the warpgroup's wgmmas for one tile whose patch is in buf
// and commits them as one group; acc holds the tile's sums once
// wgmma.wait_group says the group is done.
__device__ __forceinline__ void mma_issue(float (&acc)[SUBTILES][ACCS], const float* buf, const float* s_f) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    const unsigned long long b0 = descriptor(s_f, B_LBO, B_SBO);
#pragma unroll
    for (int mt = 0; mt < SUBTILES; ++mt) {
        const unsigned long long a0 = descriptor(buf + (mt / SUB_Q) * 8 * STRIDE_H * PATCH_PITCH
                                                 + (mt % SUB_Q) * 8 * STRIDE_W, 0, A_SBO);
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            // Start addresses and leading offsets are compile-time constants
            // added to the descriptors' fields.
            const unsigned long long a = a0 + (unsigned long long)(BLOCK_OFF(2 * ks) / 4)
                + ((unsigned long long)(A_LBO(ks) >> 4) << 16);
            const unsigned long long b = b0 + (unsigned long long)(ks * 16);
#if SPLIT3
            // A_hi*[B_hi | B_lo] (the filter's two copies are one B of
            // 2*TILE_K channels), then A_lo*B_hi; summed in the epilogue.
            wgmma_wide(*reinterpret_cast<float(*)[2 * ACC]>(&acc[mt][0]), a, b, ks > 0);
            wgmma(*reinterpret_cast<float(*)[ACC]>(&acc[mt][2 * ACC]), a + PATCH_FLOATS / 4, b, ks > 0);
#else
            wgmma(acc[mt], a, b, ks > 0);
#endif
        }
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void mma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

// store_tile adds the bias and writes the tile's outputs that fall inside
// the image (warp w of the warpgroup, lane (g, t); see the top comment);
// nothing when live is false. With PRED the stores are predicated instead
// of branched around (needed with OVERLAP: they run while wgmmas are in
// flight, and a branch there makes ptxas serialise the wgmmas, advice
// C7518; otherwise the PredicatedStores knob picks).
__device__ __forceinline__ void st_pred(float* p, float v, bool ok) {
    asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %2, 0;\n@q st.global.f32 [%0], %1;\n}\n"
                 :: "l"(p), "f"(v), "r"((int)ok) : "memory");
}
__device__ __forceinline__ void st_pred2(float* p, float v0, float v1, bool ok) {
    asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %3, 0;\n@q st.global.v2.f32 [%0], {%1, %2};\n}\n"
                 :: "l"(p), "f"(v0), "f"(v1), "r"((int)ok) : "memory");
}
#if IO_HALF
__device__ __forceinline__ void st_pred(unsigned short* p, float v, bool ok) {
    asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %2, 0;\n@q st.global.b16 [%0], %1;\n}\n"
                 :: "l"(p), "h"(narrow(v)), "r"((int)ok) : "memory");
}
__device__ __forceinline__ void st_pred2(unsigned short* p, float v0, float v1, bool ok) {
    asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %2, 0;\n@q st.global.b32 [%0], %1;\n}\n"
                 :: "l"(p), "r"(narrow2(v0, v1)), "r"((int)ok) : "memory");
}
#endif
template <bool PRED>
__device__ __forceinline__ void store_tile(elem_t* __restrict__ out, const float (&acc)[SUBTILES][ACCS],
                                           const float (&bias_reg)[TILE_K / 8][2], int tile, int k0, int tid,
                                           bool live) {
    const int warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
    const int n = live ? tile / (TILES_P * TILES_Q) : 0;
    const int p0 = (tile / TILES_Q) % TILES_P * TILE_P;
    const int q0 = tile % TILES_Q * TILE_Q;
#pragma unroll
    for (int mt = 0; mt < SUBTILES; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int p = p0 + (mt / SUB_Q) * 8 + 2 * warp + h, q = q0 + (mt % SUB_Q) * 8 + g;
            const bool ok = live && p >= 0 && p < P && q >= 0 && q < Q;
            if (!PRED && !ok) continue;
            const int pc = ok ? p : 0, qc = ok ? q : 0;   // in-bounds addresses even when masked
#pragma unroll
            for (int nb = 0; nb < TILE_K / 8; ++nb) {
                const int k = k0 + nb * 8 + 2 * t;
                const int e = nb * 4 + 2 * h;
#if SPLIT3
                // The small products summed first, then the large one.
                const float v0 = acc[mt][e] + (acc[mt][ACC + e] + acc[mt][2 * ACC + e]) + bias_reg[nb][0];
                const float v1 = acc[mt][e + 1] + (acc[mt][ACC + e + 1] + acc[mt][2 * ACC + e + 1]) + bias_reg[nb][1];
#else
                const float v0 = acc[mt][e] + bias_reg[nb][0];
                const float v1 = acc[mt][e + 1] + bias_reg[nb][1];
#endif
                elem_t* o0 = &out[NHWC ? (((long long)n * P + pc) * Q + qc) * K + k : (((long long)n * K + k) * P + pc) * Q + qc];
                elem_t* o1 = NHWC ? o0 + 1 : o0 + P * Q;   // channel k + 1
                if (PRED) {
                    if (NHWC) st_pred2(o0, v0, v1, ok);
                    else st_pred(o0, v0, ok), st_pred(o1, v1, ok);
                } else if (NHWC) {
#if IO_HALF
                    *reinterpret_cast<unsigned int*>(o0) = narrow2(v0, v1);
#else
                    *reinterpret_cast<float2*>(o0) = make_float2(v0, v1);
#endif
                } else {
#if IO_HALF
                    *o0 = narrow(v0);
                    *o1 = narrow(v1);
#else
                    *o0 = v0;
                    *o1 = v1;
#endif
                }
            }
        }
}

// Named barriers 1.. (0 is __syncthreads).
__device__ __forceinline__ void named_sync(int id, int threads);
__device__ __forceinline__ void named_arrive(int id, int threads);

// consume computes block tile i (when it exists) into cur, storing the
// previous tile (prev >= 0, its sums in old) while the wgmmas run; it
// returns the tile now in cur, or prev when there is none (then old still
// holds prev's sums and nothing was stored).
__device__ __forceinline__ int consume(float (&cur)[SUBTILES][ACCS], float (&old)[SUBTILES][ACCS], int prev, int i,
                                       int ptiles, const float* s_in, const float* s_f, elem_t* __restrict__ out,
                                       const float (&bias_reg)[TILE_K / 8][2], int k0, int tid) {
    const int tile = blockIdx.x + i * gridDim.x;
    if (i >= ptiles || tile >= TILES) return prev;
    const int b = i % STAGES;
    named_sync(1 + b, BAR_THREADS);                       // the patch is there
    mma_issue(cur, s_in + b * BUF_FLOATS, s_f);
    store_tile<true>(out, old, bias_reg, prev, k0, tid, prev >= 0);  // no branch while wgmmas run
    mma_wait();
    if (i + STAGES < ptiles && blockIdx.x + (i + STAGES) * gridDim.x < TILES)
        named_arrive(1 + STAGES + b, BAR_THREADS);        // the producer may refill it
    return tile;
}

__device__ __forceinline__ void named_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS_PER_BLOCK, 1)
convgen_wgmma_tf32_8190447c(elem_t* __restrict__ out, const elem_t* __restrict__ in,
          const elem_t* __restrict__ filter, const elem_t* __restrict__ bias, unsigned long long* __restrict__ stamps)
{
    const unsigned long long t_start = clock64();
    unsigned long long* st = stamps + (blockIdx.y * gridDim.x + blockIdx.x) * 32;
    extern __shared__ __align__(128) float smem[];
    const int wg = threadIdx.x / WG_THREADS, tid = threadIdx.x % WG_THREADS;
    float* s_f = smem;                                  // FILTER_FLOATS (and as many residuals)
    const int k0 = blockIdx.y * TILE_K;
#if PRODUCER
    // Block tile i (tile blockIdx.x + i*gridDim.x) goes to patch buffer
    // i % STAGES and to consumer warpgroup i % WARPGROUPS; STAGES is a
    // multiple of WARPGROUPS, so a buffer always serves the same consumer
    // and its two named barriers (full: 1 + b, empty: 1 + STAGES + b) always
    // pair the producers with that one consumer.
    float* s_in = smem + (1 + SPLIT3) * FILTER_FLOATS;  // STAGES patch buffers
    const int ptiles = WARPGROUPS * TILES_PER_WARPGROUP;
#if !VEC_STAGE
    if (wg == WARPGROUPS && blockIdx.x < TILES) stage_patch(s_in, in, blockIdx.x, tid);
#endif
#else
    // Each warpgroup stages its own tiles into its own STAGES buffers.
    float* s_in = smem + (1 + SPLIT3) * FILTER_FLOATS + wg * STAGES * BUF_FLOATS;
    const int first = blockIdx.x * WARPGROUPS + wg, step = gridDim.x * WARPGROUPS;
    if (first < TILES) stage_patch(s_in, in, first, tid);
#endif

    // The filter slice, once per block, in core-matrix order: FILTER_BATCH
    // independent loads in flight per thread before their stores.
    for (int base = threadIdx.x; base < FILTER_FLOATS; base += FILTER_BATCH * THREADS_PER_BLOCK) {
        float v[FILTER_BATCH];
#pragma unroll
        for (int u = 0; u < FILTER_BATCH; ++u) {
            const int idx = base + u * THREADS_PER_BLOCK;
            const int e = idx % 4, kk = idx / 4 % 8, blk = idx / 32 % (2 * KSTEPS), grp = idx / (64 * KSTEPS);
            const int j = blk * 4 + e;              // padded tap (c, r, s)
            const int c = j / (R * S4), r = j / S4 % R, s = j % S4, k = k0 + grp * 8 + kk;
            const bool ok = idx < FILTER_FLOATS && blk < BLOCKS && s < S;
#if NHWC
            const elem_t* src = &filter[ok ? ((k * R + r) * S + s) * C + c : 0];
#else
            const elem_t* src = &filter[ok ? ((k * C + c) * R + r) * S + s : 0];
#endif
            v[u] = ok ? to_float(__ldg(src)) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < FILTER_BATCH; ++u) {
            const int idx = base + u * THREADS_PER_BLOCK;
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
    if (threadIdx.x == 0) st[30] = clock64() - t_start;  // setup (filter staging)
    unsigned long long p_w = 0, p_s = 0, p_l = 0, p_n = 0;

#if PRODUCER
    if (wg >= WARPGROUPS) {
#if VEC_STAGE
        // Producer through registers: PREFETCH tiles' loads in flight (the
        // next ones are issued before this one is converted and stored); a
        // stored tile is fenced for the tensor cores and handed to its
        // consumer. The loop is unrolled by PREFETCH so that each vtile stays
        // in fixed registers.
        const auto live = [&](int i) { return i < ptiles && blockIdx.x + i * gridDim.x < TILES; };
        const int pt = threadIdx.x - WARPGROUPS * WG_THREADS;  // producer thread, all producers counted
        const auto put = [&](int i, const vtile& t) {
            const int b = i % STAGES;
            const unsigned long long q0 = clock64();
            if (i >= STAGES) named_sync(1 + STAGES + b, BAR_THREADS);  // consumer done with it
            const unsigned long long q1 = clock64();
            store_vtile(s_in + b * BUF_FLOATS, t, blockIdx.x + i * gridDim.x, pt);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            named_arrive(1 + b, BAR_THREADS);
            const unsigned long long q2 = clock64();
            p_w += q1 - q0; p_s += q2 - q1; ++p_n;
        };
        vtile t[PREFETCH];
#pragma unroll
        for (int d = 0; d + 1 < PREFETCH; ++d)
            if (live(d)) load_vtile(t[d], in, blockIdx.x + d * gridDim.x, pt);
        for (int i = 0; live(i); i += PREFETCH) {
#pragma unroll
            for (int d = 0; d < PREFETCH; ++d) {
                if (!live(i + d)) break;
                const int ahead = i + d + PREFETCH - 1;
                const unsigned long long q3 = clock64();
                if (live(ahead)) load_vtile(t[(d + PREFETCH - 1) % PREFETCH], in, blockIdx.x + ahead * gridDim.x, pt);
                p_l += clock64() - q3;
                put(i + d, t[d]);
            }
        }
        if (pt == 0) { st[16] = p_w; st[17] = p_s; st[18] = p_l; st[19] = p_n; st[20] = clock64() - t_start; }
        return;
#else
        // Producer: keep LAG = STAGES - WARPGROUPS tiles loading behind the
        // one just issued; finishing a tile rounds it, fences it for the
        // tensor cores and hands it to its consumer. Finishing tile j thus
        // waits only for buffer j + LAG - STAGES = j - WARPGROUPS: the same
        // consumer's previous tile, never another consumer's.
        int i = 0;
        for (; i < ptiles && blockIdx.x + i * gridDim.x < TILES; ++i) {
            const int b = i % STAGES;
            if (i > 0) {
                if (i >= STAGES) named_sync(1 + STAGES + b, BAR_THREADS);  // consumer done with it
                stage_patch(s_in + b * BUF_FLOATS, in, blockIdx.x + i * gridDim.x, tid);
            }
            if (i >= LAG) {
                asm volatile("cp.async.wait_group %0;" :: "n"(LAG) : "memory");
                const int j = i - LAG;
                if (ROUND_INPUT) round_patch(s_in + (j % STAGES) * BUF_FLOATS, blockIdx.x + j * gridDim.x, tid);
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                named_arrive(1 + j % STAGES, BAR_THREADS);
            }
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        for (int j = max(i - LAG, 0); j < i; ++j) {
            if (ROUND_INPUT) round_patch(s_in + (j % STAGES) * BUF_FLOATS, blockIdx.x + j * gridDim.x, tid);
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            named_arrive(1 + j % STAGES, BAR_THREADS);
        }
        return;
#endif
    }
#endif

    float bias_reg[TILE_K / 8][2];  // this thread's channels' bias
#pragma unroll
    for (int nb = 0; nb < TILE_K / 8; ++nb) {
        bias_reg[nb][0] = HAS_BIAS ? to_float(__ldg(&bias[k0 + nb * 8 + 2 * (tid % 4)])) : 0.0f;
        bias_reg[nb][1] = HAS_BIAS ? to_float(__ldg(&bias[k0 + nb * 8 + 2 * (tid % 4) + 1])) : 0.0f;
    }
    float acc[SUBTILES][ACCS];
#pragma unroll
    for (int mt = 0; mt < SUBTILES; ++mt)
#pragma unroll
        for (int i = 0; i < ACCS; ++i) acc[mt][i] = 0.0f;

#if PRODUCER
    // Consumer warpgroup wg: block tiles wg, wg + WARPGROUPS, ...
#if OVERLAP
    // Two accumulator sets: the previous tile's outputs are stored while
    // this tile's wgmmas run (the loop is unrolled by two so that each set
    // stays in fixed registers).
    float acc2[SUBTILES][ACCS];
#pragma unroll
    for (int mt = 0; mt < SUBTILES; ++mt)
#pragma unroll
        for (int j = 0; j < ACCS; ++j) acc2[mt][j] = 0.0f;
    int prev = -1;          // the last computed tile, its sums not stored yet
    bool in_acc2 = false;   // ... in acc2 (else in acc)
    for (int i = wg; i < ptiles; i += 2 * WARPGROUPS) {
        int t = consume(acc, acc2, prev, i, ptiles, s_in, s_f, out, bias_reg, k0, tid);
        if (t != prev) prev = t, in_acc2 = false;
        t = consume(acc2, acc, prev, i + WARPGROUPS, ptiles, s_in, s_f, out, bias_reg, k0, tid);
        if (t != prev) prev = t, in_acc2 = true;
    }
    if (prev >= 0) {
        if (in_acc2) store_tile<true>(out, acc2, bias_reg, prev, k0, tid, true);
        else store_tile<true>(out, acc, bias_reg, prev, k0, tid, true);
    }
#else
    for (int i = wg; i < ptiles; i += WARPGROUPS) {
        const int tile = blockIdx.x + i * gridDim.x;
        if (tile >= TILES) break;
        const int b = i % STAGES;
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
    if (tid == 0) atomicMax(&st[31], clock64() - t_start);
#endif
#else
    int tile = first;
    for (int it = 0; it < TILES_PER_WARPGROUP && tile < TILES; ++it, tile += step) {
        float* buf = s_in + (STAGES == 2 ? (it & 1) * BUF_FLOATS : 0);
        if (STAGES == 1 && it > 0) stage_patch(buf, in, tile, tid);
        const int next = tile + step;
        if (STAGES == 2 && it + 1 < TILES_PER_WARPGROUP && next < TILES) {
            stage_patch(s_in + ((it + 1) & 1) * BUF_FLOATS, in, next, tid);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        if (ROUND_INPUT) round_patch(buf, tile, tid);
        // Generic-proxy writes (cp.async, rounding) become visible to the
        // tensor cores' async proxy, then to the whole warpgroup.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        named_sync(1 + wg, WG_THREADS);
        mma_issue(acc, buf, s_f);
        mma_wait();
        named_sync(1 + wg, WG_THREADS);  // every warp is done with this patch buffer
        store_tile<PREDICATED_STORES>(out, acc, bias_reg, tile, k0, tid, true);
    }
#endif
}
