"""stream_k_l2_model.py - an LRU model of the DRAM reads of gemm.tile's
persistent sm_90a schedule (128 x 256 tiles, 64-wide k-blocks, raster
panels of 10 rows, 132 blocks stepping one k-block at a time in lockstep,
a 40 MB L2 holding A and B slices): whole tiles against stream-K with the
last partial wave split (as runtime/device/tilec_stream_k.cuh plans it)
and with one whole wave more (the two-tile hybrid, not built). A model only:
no fix-up cost, no waits, no stores. Session 22's output is in
bench/results/2026-12-06-nvidia-h100-session22-notes.md.

  python3 bench/stream_k_l2_model.py
"""
from collections import OrderedDict
import sys

def tile_xy(t, tx, ty, panel=10):
    span = tx * panel
    p, ip = divmod(t, span)
    rows = min(panel, ty - p * panel)
    return ip // rows, p * panel + ip % rows  # bx, by

def units(T, n, P, b, extra):
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
        out.append((t, k, L)); g += L
    t = split + b
    while t < T:
        out.append((t, 0, n)); t += P
    return out

def simulate(M, N, K, P=132, extra=None, cap_mb=40):
    tx, ty, n = N // 256, M // 128, K // 64
    T = tx * ty
    seqs = []
    for b in range(P):
        us = units(T, n, P, b, extra) if extra is not None else [(t, 0, n) for t in range(b, T, P)]
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

for shape in [(4096, 4096, 4096), (3840, 4096, 4096), (4352, 4096, 4096), (8192, 8192, 8192)]:
    for name, extra in (("whole tiles", None), ("SK last wave", 0), ("SK +1 wave", 1)):
        mb, steps = simulate(*shape, extra=extra)
        print("%-16s %-13s DRAM reads %7.1f MB, %4d steps (k-blocks per block, longest)" % ("x".join(map(str, shape)), name, mb, steps))
