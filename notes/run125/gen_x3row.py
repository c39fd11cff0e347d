#!/usr/bin/env python3
"""Run 125: a 3xtf32 row-tile prototype generated from a wgmmarow tf32
rendering (TileK 48) and the committed 3xtf32 winner's register-A wgmma
helpers: A fragments loaded from the ring into registers (four ld.shared a
k step), split into TF32 high part and residual, A_hi*[B_hi|B_lo] as one
m64n96k8 and A_lo*B_hi as m64n48k8, fragments a step ahead (one commit
group per k step, as the winner's AGroup 1).

  gen_x3row.py ROW_SRC X3_SRC OUT_CU [WARPGROUPS]
"""
import re, sys
row, x3, out = sys.argv[1:4]
wgs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
s = open(row).read()
x = open(x3).read()
# register-A helpers from the 3xtf32 winner (ACC = 24 there too)
i = x.index('// wgmma_ra issues')
j = x.index('#endif', x.index('__device__ __forceinline__ void wgmma_wide_ra'))
helpers = x[i:j].replace('#if SPLIT3\n', '')
s = s.replace('// The ring\'s mbarriers', helpers + '\n// The ring\'s mbarriers')
s = re.sub(r'#define WARPGROUPS \d+', '#define WARPGROUPS %d' % wgs, s)
s = re.sub(r'#define SLOTS \d+', '#define SLOTS 7', s)
# two filter copies
s = s.replace('float* s_ring = smem + FILTER_FLOATS;', 'float* s_ring = smem + 2 * FILTER_FLOATS;')
s = s.replace('if (idx < FILTER_FLOATS) s_f[idx] = to_tf32(v[u]);',
              'if (idx < FILTER_FLOATS) { const float h = to_tf32(v[u]); s_f[idx] = h; s_f[FILTER_FLOATS + idx] = to_tf32(v[u] - h); }')
# the steps
steps = re.findall(r'wgmma\(acc, a\[(\d+)\] \+ (\d+)ull \+ \((\d+)ull << 16\), b_desc \+ (\d+)ull \* 16, [01]\);', s)
assert len(steps) == 50, len(steps)
first = s.index('        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");\n        // k step i')
last = s.index('        store_row(out, acc, bias_reg, row, k0, tid);')
K = len(steps)
def load(k):
    jj, off16, lbo16, _ = steps[k]
    o0 = int(off16) * 4; o1 = o0 + int(lbo16) * 4
    return f'        r[0] = pj[{jj}][{o0}], r[1] = pj[{jj}][{o0 + 32}], r[2] = pj[{jj}][{o1}], r[3] = pj[{jj}][{o1 + 32}];\n'
def split(b):
    return ''.join(f'        {{ const float h = to_tf32(r[{e}]); fh[{b}][{e}] = __float_as_uint(h); fl[{b}][{e}] = __float_as_uint(to_tf32(r[{e}] - h)); }}\n' for e in range(4))
body = '''        const float* pj[GROUPS_PER_ROW];
#pragma unroll
        for (int j = 0; j < GROUPS_PER_ROW; ++j) pj[j] = s_ring + ((seq0 + j) % SLOTS) * GROUP_FLOATS + 4 * (tid / 4) + tid % 4;
        float r[4];
        unsigned fh[2][4], fl[2][4];
'''
body += load(0) + split(0) + load(1)
for k in range(K):
    b = k % 2
    body += '        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");\n'
    body += f'        wgmma_wide_ra(accw, fh[{b}], b_desc + {k}ull * 16, {1 if k else 0});\n'
    body += f'        wgmma_ra(accl, fl[{b}], b_desc + {k}ull * 16, {1 if k else 0});\n'
    body += '        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");\n'
    if k + 1 < K:
        body += '        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");\n'
        body += split((k + 1) % 2)
        if k + 2 < K:
            body += load(k + 2)
body += '''        __syncwarp();
        if (tid % 32 == 0) {
#pragma unroll
            for (int j = 0; j < GROUPS_PER_ROW; ++j) mbar_arrive(&empty[(seq0 + j) % SLOTS]);
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        float acc[ACC];
#pragma unroll
        for (int e = 0; e < ACC; ++e) acc[e] = accw[e] + (accw[ACC + e] + accl[e]);
'''
# the consumer waits for the groups before: keep the wait loop, drop the descriptor use
s = s[:first] + body + s[last:]
s = s.replace('''        unsigned long long a[GROUPS_PER_ROW];  // descriptor of each group's slot
#pragma unroll
        for (int j = 0; j < GROUPS_PER_ROW; ++j) {
            const int seq = seq0 + j, slot = seq % SLOTS;
            mbar_wait(&full[slot], (seq / SLOTS) & 1);
            a[j] = descriptor(s_ring + slot * GROUP_FLOATS, 0, A_SBO);
        }''', '''#pragma unroll
        for (int j = 0; j < GROUPS_PER_ROW; ++j) {
            const int seq = seq0 + j;
            mbar_wait(&full[seq % SLOTS], (seq / SLOTS) & 1);
        }''')
s = s.replace('''    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;''', '''    float accw[2 * ACC], accl[ACC];  // A_hi*[B_hi | B_lo], A_lo*B_hi
#pragma unroll
    for (int i = 0; i < 2 * ACC; ++i) accw[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < ACC; ++i) accl[i] = 0.0f;''')
s = re.sub(r'#define KNAME .*\n', '', s)
m = re.search(r'convgen_wgmmarow_tf32_\w+', s)
s += '\n#define KNAME %s\n' % m.group(0)
open(out, 'w').write(s)
