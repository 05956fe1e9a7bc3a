"""first_launch_probe.py - what a user waits for on the first call of the
flagship in a fresh process with an empty cache, when the call's shapes
choose a shape class other than the loaded one (docs/language.md, "Shape
choices"): the load compiles class 0, the launch needs class 1.

Each repetition runs in a new Python process with a new, empty
$TILEC_CACHE_DIR and a kernel name never compiled before (the source's
kernel renamed), and reports context creation, load (class 0) and the first
launch (class 1: its compile, or its wait for the load's prebuild thread,
plus the run), with $TILEC_SHAPE_PREBUILD off and on.

    python3 bench/first_launch_probe.py [--reps 3] [--dim 64 --causal --seq 8192]
    python3 bench/first_launch_probe.py --gemm 128x8192x8192   (examples/gemm.tile)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))

CHILD = r"""
import json, math, os, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "python"))
t0 = time.perf_counter()
import torch, tilec
cfg = json.loads(sys.argv[2])
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t1 = time.perf_counter()
ctx = tilec.Context(device="cuda")
t2 = time.perf_counter()
if cfg["gemm"]:
    defs = {"dtype": "bf16"}
else:
    defs = {"dim": cfg["dim"], "is_causal": "true" if cfg["causal"] else "false", "dtype": "bf16"}
kern = ctx.load(cfg["path"], defines=defs).kernel(cfg["name"])
t3 = time.perf_counter()
if cfg["gemm"]:
    m, n, kk = cfg["gemm"]
    a, bm = torch.randn(m, kk, device="cuda", dtype=torch.bfloat16), torch.randn(kk, n, device="cuda", dtype=torch.bfloat16)
    o = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    args = (a, bm, o)
else:
    b, h, s, d = 1, 4, cfg["seq"], cfg["dim"]
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    args = (q, k, v, o, 1.4426950408889634 / math.sqrt(d))
torch.cuda.synchronize()
t4 = time.perf_counter()
kern(*args)
torch.cuda.synchronize()
t5 = time.perf_counter()
assert not torch.isnan(o).any().item(), "NaN left in the output"
print(json.dumps({"context_ms": (t2 - t1) * 1e3, "load_ms": (t3 - t2) * 1e3, "first_launch_ms": (t5 - t4) * 1e3}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--gemm", metavar="MxNxK", help="examples/gemm.tile at this shape instead of the flagship")
    ap.add_argument("--out", help="write the table (markdown) here too")
    a = ap.parse_args()
    gemm = [int(x) for x in a.gemm.split("x")] if a.gemm else None
    example, kernel = ("gemm.tile", "gemm") if gemm else ("flash_attention.tile", "flash_attention")
    src = open(os.path.join(ROOT, "examples", example)).read()
    rows = []
    for prebuild in ("0", "1"):
        res = []
        for rep in range(a.reps):
            with tempfile.TemporaryDirectory() as tmp:
                name = "fa_probe_%d_%s_%d" % (os.getpid(), prebuild, rep)
                path = os.path.join(tmp, name + ".tile")
                with open(path, "w") as f:
                    f.write(src.replace("kernel %s(" % kernel, "kernel %s(" % name, 1))
                env = dict(os.environ, TILEC_CACHE_DIR=os.path.join(tmp, "cache"), TILEC_SHAPE_PREBUILD=prebuild)
                cfg = {"path": path, "name": name, "dim": a.dim, "causal": a.causal, "seq": a.seq, "gemm": gemm}
                out = subprocess.run([sys.executable, "-c", CHILD, ROOT, json.dumps(cfg)], env=env,
                                     capture_output=True, text=True, timeout=600)
                if out.returncode != 0:
                    print("FAILED (prebuild=%s):\n%s" % (prebuild, out.stderr[-2000:]), file=sys.stderr)
                    return 1
                res.append(json.loads(out.stdout.strip().splitlines()[-1]))
        for key in ("context_ms", "load_ms", "first_launch_ms"):
            vals = [r[key] for r in res]
            rows.append((prebuild, key, statistics.median(vals), min(vals), max(vals)))
        tot = [r["load_ms"] + r["first_launch_ms"] for r in res]
        rows.append((prebuild, "load + first launch", statistics.median(tot), min(tot), max(tot)))
    what = ("--gemm %s` (examples/gemm.tile, bf16" % a.gemm if gemm else
            "--dim %d%s --seq %d` (bf16, batch 1, 4 heads" % (a.dim, " --causal" if a.causal else "", a.seq))
    lines = ["`python3 bench/first_launch_probe.py --reps %d %s; %s)" % (a.reps, what, time.strftime("%Y-%m-%d %H:%M")), "",
             "| TILEC_SHAPE_PREBUILD | step | median ms | min | max |", "|---|---|---|---|---|"]
    lines += ["| %s | %s | %.0f | %.0f | %.0f |" % r for r in rows]
    print("\n".join(lines))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
