# Offline replay of store_vtile's shared-memory stores for the flagship (8x8 tiles):
# wavefronts per tile under different per-lane element orders.
import itertools
C,W,H,PAD,STR=3,224,224,2,4
PR,PC,PITCH=39,40,40
CHUNK=4
def run(nhwc, producer, rotfn, split3=False, tiles=range(0,7)):
    PIX = C if nhwc else 1
    ROW_CHUNKS = (PC*PIX + CHUNK-1)//CHUNK + 1
    STAGE_ROWS = PR if nhwc else C*PR
    PT = producer*128
    VPR = PT//ROW_CHUNKS
    VPASSES = (STAGE_ROWS+VPR-1)//VPR
    BIAS=(PAD+1)*PIX*CHUNK
    total=0; instrs=0
    for tq in tiles:
        w0 = tq*8*STR - PAD
        a0 = (w0*PIX+BIAS)//CHUNK*CHUNK - BIAS
        for warp in range(PT//32):
            for k in range(VPASSES):
                for e in range(CHUNK):
                  for half in range(1+split3):
                    addrs={}
                    for lane in range(32):
                        pt=warp*32+lane
                        if pt >= VPR*ROW_CHUNKS: continue
                        row = pt//ROW_CHUNKS + k*VPR
                        if row >= STAGE_ROWS: continue
                        a = a0 + pt%ROW_CHUNKS*CHUNK
                        ee = rotfn(lane, pt, e)
                        x = a + ee + BIAS
                        col = x//PIX - BIAS//PIX - w0
                        if not (0 <= col < PC): continue
                        off = (x%PIX)*(PR*PITCH) + col if nhwc else col
                        addr = row*PITCH + off + half*C*PR*PITCH
                        addrs.setdefault(addr%32,set()).add(addr)
                    if addrs:
                        instrs+=1
                        total+=max(len(s) for s in addrs.values())
    return total/instrs, instrs
schemes = {
 'none': lambda l,pt,e: e,
 'swap2 (current)': lambda l,pt,e: (e+2)%4 if l>=16 else e,
 'rot lane%4': lambda l,pt,e: (e+l)%4,
 'rot lane/8': lambda l,pt,e: (e+l//8)%4,
 'rot lane/4': lambda l,pt,e: (e+l//4)%4,
 'rot lane/2': lambda l,pt,e: (e+l//2)%4,
 'rot pt%RC': None,
}
for name,(nhwc,prod,s3) in {'tf32 nhwc P2':(1,2,0),'tf32 nchw P2':(0,2,0),'3xtf32 nchw P2':(0,2,1),'nchw P1':(0,1,0)}.items():
    print(name)
    for sn,f in schemes.items():
        if f is None: continue
        print('  %-16s %.2f wavefronts/store, %d stores' % ((sn,)+run(nhwc,prod,f,s3)))

def run2(nhwc, producer, rotfn, split3=False, tiles=range(0,7)):
    # metric: distinct 128-B segments, and max(bank conflicts, segments)
    PIX = C if nhwc else 1
    ROW_CHUNKS = (PC*PIX + CHUNK-1)//CHUNK + 1
    STAGE_ROWS = PR if nhwc else C*PR
    PT = producer*128
    VPR = PT//ROW_CHUNKS
    VPASSES = (STAGE_ROWS+VPR-1)//VPR
    BIAS=(PAD+1)*PIX*CHUNK
    seg=0; instrs=0
    for tq in tiles:
        w0 = tq*8*STR - PAD
        a0 = (w0*PIX+BIAS)//CHUNK*CHUNK - BIAS
        for warp in range(PT//32):
            for k in range(VPASSES):
                for e in range(CHUNK):
                  for half in range(1+split3):
                    addrs=set()
                    for lane in range(32):
                        pt=warp*32+lane
                        if pt >= VPR*ROW_CHUNKS: continue
                        row = pt//ROW_CHUNKS + k*VPR
                        if row >= STAGE_ROWS: continue
                        a = a0 + pt%ROW_CHUNKS*CHUNK
                        ee = rotfn(lane, pt, e)
                        x = a + ee + BIAS
                        col = x//PIX - BIAS//PIX - w0
                        if not (0 <= col < PC): continue
                        off = (x%PIX)*(PR*PITCH) + col if nhwc else col
                        addrs.add(row*PITCH + off + half*C*PR*PITCH)
                    if addrs:
                        instrs+=1
                        seg+=len(set(a//32 for a in addrs))
    return seg/instrs
print('segments model (current swap2):')
for name,(nhwc,prod,s3) in {'tf32 nhwc P2':(1,2,0),'3xtf32 nchw P2':(0,2,1)}.items():
    print(' ',name, '%.2f'%run2(nhwc,prod,schemes['swap2 (current)'],s3))
