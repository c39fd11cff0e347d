# Emit address tables of store_vtile's shared stores (first warp instructions of several tiles)
# for a device microbenchmark, plus each model's prediction.
exec(open('banks.py').read().split("schemes = {")[0])
def instrs(nhwc, producer, rotfn, split3=False, tiles=range(0,7)):
    PIX = C if nhwc else 1
    ROW_CHUNKS = (PC*PIX + CHUNK-1)//CHUNK + 1
    STAGE_ROWS = PR if nhwc else C*PR
    PT = producer*128
    VPR = PT//ROW_CHUNKS
    VPASSES = (STAGE_ROWS+VPR-1)//VPR
    BIAS=(PAD+1)*PIX*CHUNK
    out=[]
    for tq in tiles:
        w0 = tq*8*STR - PAD
        a0 = (w0*PIX+BIAS)//CHUNK*CHUNK - BIAS
        for warp in range(PT//32):
            for k in range(VPASSES):
                for e in range(CHUNK):
                  for half in range(1+split3):
                    lanes=[]
                    for lane in range(32):
                        pt=warp*32+lane
                        ad=-1
                        row = pt//ROW_CHUNKS + k*VPR
                        if pt < VPR*ROW_CHUNKS and row < STAGE_ROWS:
                            a = a0 + pt%ROW_CHUNKS*CHUNK
                            x = a + rotfn(lane, pt, e) + BIAS
                            col = x//PIX - BIAS//PIX - w0
                            if 0 <= col < PC:
                                off = (x%PIX)*(PR*PITCH) + col if nhwc else col
                                ad = row*PITCH + off + half*C*PR*PITCH
                        lanes.append(ad)
                    if any(a>=0 for a in lanes): out.append(lanes)
    return out
def classic(ins):
    t=0
    for l in ins:
        b={}
        for a in l:
            if a>=0: b.setdefault(a%32,set()).add(a)
        t+=max(len(s) for s in b.values())
    return t/len(ins)
def segs(ins): return sum(len(set(a//32 for a in l if a>=0)) for l in ins)/len(ins)
sets = {
 'nhwc_cur': instrs(1,2,lambda l,pt,e:(e+2)%4 if l>=16 else e),
 'nhwc_none': instrs(1,2,lambda l,pt,e:e),
 'nhwc_l4': instrs(1,2,lambda l,pt,e:(e+l)%4),
 'x3_cur': instrs(0,2,lambda l,pt,e:(e+2)%4 if l>=16 else e,True),
 'x3_l8': instrs(0,2,lambda l,pt,e:(e+l//8)%4,True),
 'nchw_none': instrs(0,2,lambda l,pt,e:e),
 'contig': [[i for i in range(32)]]*64,
 'stride4': [[4*i for i in range(32)]]*64,
 'stride2': [[2*i for i in range(32)]]*64,
 'two_segs_nc': [[i if i<16 else 64+i for i in range(32)]]*64,
 'row40x3': [[(i//11)*40 + (i%11)*4 for i in range(32)]]*64,
}
with open('tables.h','w') as f:
    f.write('#define NSETS %d\n' % len(sets))
    f.write('static const char* set_names[] = {%s};\n' % ','.join('"%s"'%k for k in sets))
    f.write('static const int set_len[] = {%s};\n' % ','.join(str(len(v)) for v in sets.values()))
    allv=[a for v in sets.values() for l in v for a in l]
    f.write('static const int tables[] = {%s};\n' % ','.join(map(str,allv)))
for k,v in sets.items(): print('%-12s n=%4d classic %.2f segs %.2f' % (k,len(v),classic(v),segs(v)))
