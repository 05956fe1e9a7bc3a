#!/usr/bin/env python3
"""timeline.py LOG [n_iters] - summarises instrument.py's R lines (the last launches):
per block entry -> consumer start (set-up), per unit start -> first stage full (a -> f),
main loop (f -> b), fix-up (b -> c), epilogue (c -> e), and the launch's span and tail."""
import sys, statistics as st
n = int(sys.argv[2]) if len(sys.argv) > 2 else 64
recs = []
for line in open(sys.argv[1], errors='replace'):
    p = line.split()
    if len(p) == 14 and p[0] == 'R':
        blk, smid, ent, t0, u, tile, kb, kl, a, b, c, e, f = map(int, p[1:])
        recs.append(dict(blk=blk, smid=smid, ent=ent, t0=t0, u=u, tile=tile, kb=kb, kl=(n if kl < 0 else kl), a=a, b=b, c=c, e=e, f=f))
recs.sort(key=lambda r: r['ent'])
launches, cur = [], []
for r in recs:
    if cur and r['ent'] - cur[-1]['ent'] > 30000: launches.append(cur); cur = []
    cur.append(r)
if cur: launches.append(cur)
print(f'{len(recs)} records, {len(launches)} launches')
us = lambda x: x / 1000.0
for L in launches[-3:]:
    T0 = min(r['ent'] for r in L)
    blocks = {}
    for r in L: blocks.setdefault(r['blk'], []).append(r)
    ends = {b: max(r['e'] for r in R) - T0 for b, R in blocks.items()}
    span = max(ends.values())
    ent = [R[0]['ent'] - T0 for R in blocks.values()]
    setup = [R[0]['t0'] - R[0]['ent'] for R in blocks.values()]
    first_full = [min(r['f'] for r in R) - T0 for R in blocks.values()]
    print(f'-- launch: {len(blocks)} blocks, span {us(span):.1f} us; entry spread {us(max(ent)):.2f} us; set-up (entry -> consumers) mean {us(st.mean(setup)):.2f} us;'
          f' first stage full at {us(min(first_full)):.2f} .. {us(max(first_full)):.2f} us (mean {us(st.mean(first_full)):.2f})')
    print(f'   block ends: min {us(min(ends.values())):.1f} median {us(st.median(ends.values())):.1f} max {us(span):.1f} us;'
          f' idle after own end, summed over blocks / blocks: {us(sum(span - v for v in ends.values()) / len(ends)):.2f} us')
    for u in range(max(r['u'] for r in L) + 1):
        R = [r for r in L if r['u'] == u]
        print(f'   unit {u}: n={len(R):3d} start {us(st.mean(r["a"]-T0 for r in R)):6.1f} (max {us(max(r["a"]-T0 for r in R)):6.1f})'
              f' wait first stage {us(st.mean(r["f"]-r["a"] for r in R)):5.2f} (max {us(max(r["f"]-r["a"] for r in R)):5.2f})'
              f' loop {us(st.mean(r["b"]-r["f"] for r in R)):6.2f} ({st.mean((r["b"]-r["f"])/max(1,r["kl"]-1) for r in R):4.0f} ns/iter, min {us(min(r["b"]-r["f"] for r in R)):6.2f} max {us(max(r["b"]-r["f"] for r in R)):6.2f})'
              f' fixup {us(st.mean(r["c"]-r["b"] for r in R)):4.2f} epi {us(st.mean(r["e"]-r["c"] for r in R)):4.2f} (max {us(max(r["e"]-r["c"] for r in R)):4.2f})'
              f' end {us(st.mean(r["e"]-T0 for r in R)):6.1f} (max {us(max(r["e"]-T0 for r in R)):6.1f})')
