#!/usr/bin/env python3
"""run_gemm.py --shape MxNxK [--iters N] - runs gemm.tile (bf16, the path
profile_gemm.py uses, so $TILEC_CUDA_OVERRIDE applies to instrument.py's edit),
each launch after a 256 MB L2 flush and between CUDA events; after each launch
reads instrument.py's records from C and prints them as timeline.py's R lines."""
import argparse, os, sys
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")  # bench/timeline -> the repository
sys.path.insert(0, os.path.join(root, "python"))
import tilec, torch
ap = argparse.ArgumentParser()
ap.add_argument("--shape", default="4096x4096x4096")
ap.add_argument("--iters", type=int, default=6)
a = ap.parse_args()
ctx = tilec.Context(device="cuda")
kern = ctx.load(os.path.normpath(os.path.join(root, "examples", "gemm.tile")), defines={"dtype": "bf16"}).kernel("gemm")
m, n, k = (int(v) for v in a.shape.split("x"))
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
y = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
for it in range(a.iters):
    flush.zero_()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); kern(x, y, out); e.record()
    torch.cuda.synchronize()
    rec = out.view(torch.int64).flatten()[:200 * 16 * 12].view(200 * 16, 12).cpu().tolist()
    nrec = 0
    for i, r in enumerate(rec):
        if r[11] <= 0 or r[11] > 16: continue
        blk, u = divmod(i, 16)
        tile, kb, kl, ta, tb, tc, te, tf, ent, t0, smid, _ = r
        print("R %d %d %d %d %d %d %d %d %d %d %d %d %d" % (blk, smid, ent, t0, u, tile, kb, kl, ta, tb, tc, te, tf))
        nrec += 1
    print("L launch %d: %.1f us (events), %d records" % (it, s.elapsed_time(e) * 1000, nrec))
