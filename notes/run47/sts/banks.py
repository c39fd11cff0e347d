"""Wavefronts per store of store_vtile under several per-lane element
orders (run 47/48), by the bank model and by 128-byte segments."""
from model import SCHEMES, classic, instrs, segs

CASES = {'tf32 nhwc P2': (1, 2, False), 'tf32 nchw P2': (0, 2, False),
         '3xtf32 nchw P2': (0, 2, True), 'nchw P1': (0, 1, False)}
for name, (nhwc, prod, s3) in CASES.items():
    print(name)
    for sn, f in SCHEMES.items():
        ins = instrs(nhwc, prod, f, s3)
        print('  %-16s %.2f wavefronts/store (segments %.2f), %d stores' % (sn, classic(ins), segs(ins), len(ins)))
