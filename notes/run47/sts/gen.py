"""Writes tables.h for sts.cu (the device replay of recorded store
patterns) and prints each set's modelled wavefronts per store."""
from model import classic, instrs, segs

swap2 = lambda l, pt, e: (e + 2) % 4 if l >= 16 else e
sets = {
    'nhwc_cur': instrs(1, 2, swap2),
    'nhwc_none': instrs(1, 2, lambda l, pt, e: e),
    'nhwc_l4': instrs(1, 2, lambda l, pt, e: (e + l) % 4),
    'x3_cur': instrs(0, 2, swap2, True),
    'x3_l8': instrs(0, 2, lambda l, pt, e: (e + l // 8) % 4, True),
    'nchw_none': instrs(0, 2, lambda l, pt, e: e),
    'contig': [list(range(32))] * 64,
    'stride4': [[4 * i for i in range(32)]] * 64,
    'stride2': [[2 * i for i in range(32)]] * 64,
    'two_segs_nc': [[i if i < 16 else 64 + i for i in range(32)]] * 64,
    'row40x3': [[(i // 11) * 40 + (i % 11) * 4 for i in range(32)]] * 64,
}
with open('tables.h', 'w') as f:
    f.write('#define NSETS %d\n' % len(sets))
    f.write('static const char* set_names[] = {%s};\n' % ','.join('"%s"' % k for k in sets))
    f.write('static const int set_len[] = {%s};\n' % ','.join(str(len(v)) for v in sets.values()))
    f.write('static const int tables[] = {%s};\n' % ','.join(str(a) for v in sets.values() for l in v for a in l))
for k, v in sets.items():
    print('%-12s n=%4d classic %.2f segs %.2f' % (k, len(v), classic(v), segs(v)))
