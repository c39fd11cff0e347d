"""Offline model of store_vtile's shared-memory stores for the flagship's 8x8
tiles (run 47): the addresses each warp store instruction writes, and the
wavefronts a store needs under the bank model (max distinct addresses per
bank) or counting 128-byte segments."""
C, W, H, PAD, STR = 3, 224, 224, 2, 4
PR, PC, PITCH = 39, 40, 40          # patch rows, columns, pitch (floats)
CHUNK = 4                           # elements per 16-byte load


def instrs(nhwc, producer, rotfn, split3=False, tiles=range(0, 7)):
    """Per store instruction, the 32 lanes' word addresses (-1: lane idle)."""
    pix = C if nhwc else 1
    row_chunks = (PC * pix + CHUNK - 1) // CHUNK + 1
    stage_rows = PR if nhwc else C * PR
    threads = producer * 128
    vpr = threads // row_chunks
    vpasses = (stage_rows + vpr - 1) // vpr
    bias = (PAD + 1) * pix * CHUNK
    out = []
    for tq in tiles:
        w0 = tq * 8 * STR - PAD
        a0 = (w0 * pix + bias) // CHUNK * CHUNK - bias
        for warp in range(threads // 32):
            for k in range(vpasses):
                for e in range(CHUNK):
                    for half in range(1 + split3):
                        lanes = []
                        for lane in range(32):
                            pt = warp * 32 + lane
                            ad = -1
                            row = pt // row_chunks + k * vpr
                            if pt < vpr * row_chunks and row < stage_rows:
                                x = a0 + pt % row_chunks * CHUNK + rotfn(lane, pt, e) + bias
                                col = x // pix - bias // pix - w0
                                if 0 <= col < PC:
                                    off = (x % pix) * (PR * PITCH) + col if nhwc else col
                                    ad = row * PITCH + off + half * C * PR * PITCH
                            lanes.append(ad)
                        if any(a >= 0 for a in lanes):
                            out.append(lanes)
    return out


def classic(ins):
    """Mean wavefronts per store: the most distinct addresses in one bank."""
    t = 0
    for lanes in ins:
        banks = {}
        for a in lanes:
            if a >= 0:
                banks.setdefault(a % 32, set()).add(a)
        t += max(len(s) for s in banks.values())
    return t / len(ins)


def segs(ins):
    """Mean distinct 128-byte segments per store."""
    return sum(len(set(a // 32 for a in lanes if a >= 0)) for lanes in ins) / len(ins)


SCHEMES = {
    'none': lambda l, pt, e: e,
    'swap2 (current)': lambda l, pt, e: (e + 2) % 4 if l >= 16 else e,
    'rot lane%4': lambda l, pt, e: (e + l) % 4,
    'rot lane/8': lambda l, pt, e: (e + l // 8) % 4,
    'rot lane/4': lambda l, pt, e: (e + l // 4) % 4,
    'rot lane/2': lambda l, pt, e: (e + l // 2) % 4,
}
