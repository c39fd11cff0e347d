package autotune

// SearchRevision numbers the search: what it can find (the families'
// spaces and rules) and the order in which it looks (explorationOrder).
// A tuning record keeps the revision that made it, and a replay of an
// older one notes that -retune may find a faster kernel: a record stays
// current while its winner renders the same, whatever the search would
// find today. TestSearchRevision fails when the search changes without a
// new revision.
//
//   - 1: random exploration per family (records with no revision).
//   - 2: wgmmaigemm explored cheapest first by its cost model, split-K
//     where the waves are less than 90% full, the refinement's neighbours
//     within one family (session 15).
//   - 3: wgradmma serves 3xtf32 (step sums); depthwise NCHW offers
//     several planes per block (Planes) for planes of ≤ 16×32 outputs;
//     wgmmaigemm folds strided fp16/bf16 data gradients (NHWC).
//   - 4: wgmmaigemm's fold leaves out the phases that meet no tap; its
//     fp16/bf16 NHWC tiles also store through shared memory (StoreRows),
//     epilogue chains included (session 16).
//   - 5: wgmmaigemm serves the fp16/bf16 NCHW forward, relayed out into
//     NHWC by its blocks (a strided 1x1's copy subsampled), its
//     StoreRows twins storing along the channels' pixels; tf32 too
//     (Relayout=1); a 16-bit NCHW 1x1 at stride 1 also reads its A
//     straight from the planes (PlaneA=1; 8-byte copies where P·Q is a
//     multiple of 4 only); the 16-bit NCHW data gradient relayed out
//     too (session 17).
//   - 6: wgradmma relays NCHW filter gradients out (Relayout=1: X and dY
//     copied to NHWC, Stage=2 on the copies, dW stored KCRS); Relayout is
//     a variant knob of the exploration (its own group in the rotation).
//   - 7: wgradmma reads an NCHW 1x1 at stride 1 straight from the channel
//     planes (Planes=1: 16-byte runs of pixels, channel-major tiles), a
//     variant knob too (session 18).
//   - 8: wgmmaigemm reads a 16-bit NCHW 1x1 data gradient's dY straight
//     from its planes (PlaneA=1, as the forward does; session 18).
//   - 9: wgmmaigemm also computes an NHWC data gradient at stride 1 as
//     the forward on its flipped, transposed filter (FlipFilter=1, a
//     variant knob; any C), which a prologue or the blocks copy; a
//     folded NHWC one also tiled by phase (PhaseTiles=1: a tile runs
//     only its phase's offsets), storing 16-byte runs (StoreRows), in
//     tf32 also reading each phase's filter gathered by a prologue
//     (PhaseFilter=1); FlipFilter splits K on small grids (session 19).
//   - 10: wgradmma's fp16/bf16 NHWC filter gradient on wgmma (Stage=4:
//     both operands MN-major in the 128-byte swizzle, sm_90a; up to four
//     warpgroups), which soft-rejects Stage=2 where it keeps a candidate;
//     wgradmma explored cheapest first by its cost model (session 20).
//   - 11: wgradmma's tf32 NHWC filter gradient on wgmma too (Stage=4,
//     the tiles staged through registers into the K-major swizzle,
//     rounded to TF32, every Split from 1 to 8, explored cheapest first
//     by its own cost model), searched beside Stage=2 (session 21).
//   - 12: with a bias, wgradmma's Stage=4 is also searched summing
//     dBias from the staged dY rows (BiasSum=1), without the column tile
//     of ones, where that column would take a tile of its own; tf32's
//     4-warpgroup tiles prefetch into L2 two tiles ahead (PrefetchL2=2;
//     session 22).
//   - 13: wgmmaigemm's PhaseTiles tiles, where the phases meet unequal
//     numbers of offsets, start the heaviest phases' tiles first
//     (HeavyFirst=1; session 23).
//   - 14: wgmmaigemm's 16-bit NHWC forward and stride-1 data gradient
//     also take tiles of three warpgroups (BM = 192; session 23).
//   - 15: and so do tf32's NHWC forward and data gradient on its flipped
//     filter, with A rounded in registers (ARegs) and BN up to 128; the
//     16-bit data gradient on its flipped filter too (session 23).
//   - 16: tiles of three warpgroups also split K over a cluster
//     (192 × 128 and 192 × 256; session 23).
//   - 17: wgmmaigemm's tf32 kernels leave B to the tensor cores'
//     truncation wherever their main loop rounded it (TruncB=1; A is
//     still rounded; session 24).
//   - 18: wgmmaigemm's flipped filter is copied 16 bytes at a time both
//     ways (VecCopy=1) where C and K are whole vectors (session 24).
//   - 19: and so are the phases' filters (PhaseFilter; session 25).
//   - 20: wgmmaigemm serves 3xtf32's forward (operands split in shared
//     memory, three wgmmas a k step; session 25).
//   - 21: and searches split-K tiles that fit its doubled stages and
//     accumulators (session 25).
//   - 22: and 3xtf32's data gradient (stride 1, folded, the flipped
//     filter's copy unrounded; session 25).
//   - 23: wgmmaigemm's relayed-out NCHW kernels split K too (the tile
//     from the grid, the epoch from a ticket; session 25).
//   - 24: a new data-gradient family, dgradscatter (strided, C ≤ 32: a
//     dY window in shared memory, each stride phase's taps a dense GEMM,
//     the sums gathered; session 26).
//   - 25: wgradmma's Stage=5 for first layers (C ≤ 8; tf32, fp16, bf16):
//     bands of input rows staged whole, the taps gathered into wgmma's A
//     registers (session 27).
//   - 26: Stage=5's splits are one wave of clusters on the H100 (15 of 8,
//     30 of 4: Limits.ClusterSMs), ranked by the waves of whole clusters
//     (session 28).
//   - 27: wgmmaigemm's folded tf32 data gradient aligns its phases' rows
//     (Fold=2) where that shortens the reduction: the flagship's 3 × 3
//     offsets instead of 4 × 4 (session 28).
//   - 28: wgradmma's Stage=4 tiles in clusters also take the clusters per
//     tile that fill one wave (waveTwins), and Stage 0–4's cost model
//     counts waves of whole clusters of 4 or more (session 28).
//   - 29: a new data-gradient family, dgradwin (the aligned folded GEMM
//     on wgmma, A read in place from a dY window; tf32, 3xtf32, fp16,
//     bf16), listed but rejected as unverified until it has run on a GPU;
//     wgradmma's Stage=5 serves 3xtf32 (soft-rejected until then) and
//     Stage=2's clustered tiles take wave twins too (session 28).
const SearchRevision = 29
