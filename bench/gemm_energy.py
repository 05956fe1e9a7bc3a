#!/usr/bin/env python3
"""gemm_energy.py [--shape MxNxK] [--copy PATH] [--secs S] [--rounds R] - energy per GEMM
(NVML's total-energy counter, mJ) and time per GEMM, each implementation run back to
back for S seconds (no flush), in rotating order over R rounds: cuBLAS (torch.matmul),
gemm.tile (the repository's path: $TILEC_CUDA_OVERRIDE applies) and, with --copy, the
same tile at another path (unedited); --env-variant NAME=VAR:VALUE: gemm.tile in a
context made with $VAR set (the runtime reads some variables then, e.g.
TILEC_BALANCED_WAVES). Also the SM clock and power sampled mid-run."""
import argparse, ctypes, os, statistics, sys
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(root, "python"))
sys.path.insert(0, os.path.join(root, "bench"))
import tilec, torch
import _common  # noqa: E402
from bench_attention import GEMM_BOUND  # noqa: E402
ap = argparse.ArgumentParser()
ap.add_argument("--shape", default="4096x4096x4096")
ap.add_argument("--copy", default=None)
ap.add_argument("--variant", action="append", default=[], help="NAME=PATH: another .tile")
ap.add_argument("--env-variant", action="append", default=[], help="NAME=VAR:VALUE: gemm.tile, $VAR set")
ap.add_argument("--secs", type=float, default=1.0)
ap.add_argument("--rounds", type=int, default=4)
ap.add_argument("-D", action="append", default=[])
a = ap.parse_args()
def nvml_check(rc, what):
    if rc != 0:
        sys.exit("gemm_energy.py: NVML %s failed (status %d)" % (what, rc))
nv = ctypes.CDLL("libnvidia-ml.so.1")  # the driver's NVML: energy counter, clock, power
nvml_check(nv.nvmlInit_v2(), "init")
dev = ctypes.c_void_p()
nvml_check(nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)), "device 0")
def energy_mj():
    e = ctypes.c_ulonglong()
    nvml_check(nv.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(e)), "total energy")
    return e.value
def clock_power():
    c = ctypes.c_uint(); p = ctypes.c_uint()
    nv.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(c))  # NVML_CLOCK_SM
    nv.nvmlDeviceGetPowerUsage(dev, ctypes.byref(p))
    return c.value, p.value / 1000.0
m, n, k = (int(v) for v in a.shape.split("x"))
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16); y = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
ref = torch.matmul(x.float(), y.float())
ctx = tilec.Context(device="cuda")
st = torch.cuda.current_stream()
defs = {"dtype": "bf16"}
defs.update(dict(d.split("=", 1) for d in a.D))
impls = {}
outs = {}
for name, path in [("tilec", os.path.normpath(os.path.join(root, "examples", "gemm.tile"))), ("copy", a.copy)] + [tuple(v.split("=", 1)) for v in a.variant]:
    if not path: continue
    kern = ctx.load(path, defines=defs).kernel("gemm")
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    impls[name] = kern.bind(x, y, c, stream=st); outs[name] = c
for v in a.env_variant:
    name, setting = v.split("=", 1)
    var, val = setting.split(":", 1)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern = _common.load_variant(ctx, os.path.join(root, "examples", "gemm.tile"), "gemm", defs, {"env." + var: val},
                                lambda kv: kv(x, y, c, stream=st))  # compiled and sized while $VAR is set
    torch.cuda.synchronize()
    c.fill_(float("nan"))
    impls[name] = kern.bind(x, y, c, stream=st); outs[name] = c
cb = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
impls["cublas"] = lambda: torch.matmul(x, y, out=cb); outs["cublas"] = cb
for nm, f in impls.items():
    f(); torch.cuda.synchronize()
    err = _common.rel_error(torch, outs[nm], ref)  # the other scripts' check and bound
    print("%s rel error %.2e" % (nm, err))
    if not err <= GEMM_BOUND["bf16"]:
        sys.exit("gemm_energy.py: %s is wrong (relative error %.3g against float32)" % (nm, err))
res = {nm: [] for nm in impls}
names = list(impls)
for r in range(a.rounds):
    order = names[r % len(names):] + names[:r % len(names)]
    for nm in order:
        f = impls[nm]
        for _ in range(20): f()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()  # a first 50 launches size the measured run to about --secs
        for _ in range(50): f()
        e.record(); torch.cuda.synchronize()
        per = s.elapsed_time(e) / 50
        cnt = max(50, int(a.secs * 1000 / per))
        e0 = energy_mj(); s.record()
        half = cnt // 2
        for _ in range(half): f()
        mid = torch.cuda.Event(); mid.record()
        for _ in range(cnt - half): f()
        e.record()
        mid.synchronize(); cp = clock_power()
        e.synchronize(); e1 = energy_mj()
        ms = s.elapsed_time(e)
        res[nm].append((ms / cnt * 1000, (e1 - e0) / cnt, cp[0], cp[1], (e1 - e0) / ms))
print("| impl | us per GEMM | mJ per GEMM | avg W | SM MHz mid-run | W mid-run |")
print("|---|---|---|---|---|---|")
for nm in names:
    R = res[nm]
    med = lambda i: statistics.median(v[i] for v in R)
    print("| %s | %.1f | %.2f | %.0f | %.0f | %.0f |" % (nm, med(0), med(1), med(4), med(2), med(3)))
