"""stream_k_l2_model.py - an LRU model of the DRAM reads of gemm.tile's
persistent sm_90a schedule (128 x 256 tiles, 64-wide k-blocks, raster
panels of 10 rows, 132 blocks stepping one k-block at a time in lockstep,
an L2 of CAP MB holding A and B slices): whole tiles against stream-K with
the last partial wave split, in plain tile order (session 22) and in the
phase order runtime/device/tilec_stream_k.cuh now plans, and with one whole
wave more (the two-tile hybrid, not built). A model only: no fix-up cost,
no waits, no stores. At 25 MB it gives the DRAM reads ncu measured on an
H100 for the whole-tile kernel at 4096^3 (186.6 MB, session 23), as if
each half of the 50 MB L2 served its own SMs; at 40 MB it misses the
plain order's excess (ncu: 269 MB). Outputs in
bench/results/2026-12-06-nvidia-h100-session2{2,3}-notes.md.

  python3 bench/stream_k_l2_model.py [CAP_MB (25)]
"""
from collections import OrderedDict
import math
import sys

def tile_xy(t, tx, ty, panel=10):
    span = tx * panel
    p, ip = divmod(t, span)
    rows = min(panel, ty - p * panel)
    return ip // rows, p * panel + ip % rows  # bx, by

def phase_rank(p, R, P):
    """tc_sk_tile_of_position: split position p of R -> the tile it computes."""
    g = math.gcd(P, R)
    return ((p * P % R) // g) * g + p // (R // g)

def units(T, n, P, b, extra, phase=False):
    r = T % P
    split = 0
    if T > P and r and (P - r) * n >= 4 * P:
        split = min(T, r + extra * P)
    S = split * n
    g0, g1 = S * b // P, S * (b + 1) // P
    out = []
    g = g0
    while g < g1:
        t, k = divmod(g, n)
        L = min(n - k, g1 - g)
        out.append((phase_rank(t, split, P) if phase else t, k, L)); g += L
    t = split + b
    while t < T:
        out.append((t, 0, n)); t += P
    return out

def simulate(M, N, K, P=132, extra=None, cap_mb=25, phase=False):
    tx, ty, n = N // 256, M // 128, K // 64
    T = tx * ty
    seqs = []
    for b in range(P):
        us = units(T, n, P, b, extra, phase) if extra is not None else [(t, 0, n) for t in range(b, T, P)]
        seq = []
        for (t, k0, L) in us:
            bx, by = tile_xy(t, tx, ty)
            for k in range(k0, k0 + L):
                seq.append((bx, by, k))
        seqs.append(seq)
    cap = cap_mb * 2**20
    lru = OrderedDict(); used = 0; miss = 0
    steps = max(len(s) for s in seqs)
    for step in range(steps):
        for s in seqs:
            if step >= len(s): continue
            bx, by, k = s[step]
            for key, size in ((("A", by, k), 128 * 64 * 2), (("B", bx, k), 64 * 256 * 2)):
                if key in lru:
                    lru.move_to_end(key)
                else:
                    miss += size; lru[key] = size; used += size
                    while used > cap:
                        _, sz = lru.popitem(last=False); used -= sz
    return miss / 1e6, steps

cap = float(sys.argv[1]) if len(sys.argv) > 1 else 25
for shape in [(4096, 4096, 4096), (3840, 4096, 4096), (4352, 4096, 4096), (8192, 8192, 8192)]:
    for name, extra, phase in (("whole tiles", None, False), ("SK tile order", 0, False), ("SK phase order", 0, True),
                               ("SK +1 wave", 1, True)):
        mb, steps = simulate(*shape, extra=extra, cap_mb=cap, phase=phase)
        print("%-16s %-13s DRAM reads %7.1f MB, %4d steps (k-blocks per block, longest)" % ("x".join(map(str, shape)), name, mb, steps))
