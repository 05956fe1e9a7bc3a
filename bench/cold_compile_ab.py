#!/usr/bin/env python3
"""cold_compile_ab.py - NVRTC cold-compile cost of two (or more) tilec builds, interleaved.

    python3 bench/cold_compile_ab.py [--reps 5] before=/path/to/build after=build

Each compile is `BUILD/bin/tilec FILE -D ... --target=sm_90a --emit=cubin` in a
fresh process, the kernel renamed with a random suffix first (no cache of any
kind can answer), with NVRTC's own phase timer on (TILEC_NVRTC_FLAGS=--time).
Builds run round robin within each repetition, so a shared machine's load
hits them alike. Prints medians: process CPU (user+sys of the whole tilec
process: dlopen of libnvrtc and the compile), wall (and its min-max), and
NVRTC's front end / NVVM / ptxas split (wall, from --time). No GPU needed.
"""
import argparse, os, random, re, resource, statistics, subprocess, sys, tempfile, time

CASES = [("flash attention bf16 d128", "examples/flash_attention.tile", ["-D", "dtype=bf16"]),
         ("flash attention bf16 d64 causal", "examples/flash_attention.tile",
          ["-D", "dtype=bf16", "-D", "dim=64", "-D", "is_causal=true"]),
         ("gemm f16", "examples/gemm.tile", [])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("builds", nargs="+", help="LABEL=BUILD_DIR")
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    tmp = tempfile.mkdtemp(prefix="cold_ab_")
    res = {}
    for _ in range(args.reps):
        for cname, f, defs in CASES:
            for label, b in builds:
                salt = "%08d" % random.randrange(10**8)
                src = re.sub(r"^kernel (\w+)\(", lambda m: "kernel %s_%s(" % (m.group(1), salt), open(f).read(),
                             count=1, flags=re.M)
                sf = os.path.join(tmp, "%s_%s.tile" % (os.path.basename(f)[:-5], salt))
                open(sf, "w").write(src)
                tf = os.path.join(tmp, "time_%s.csv" % salt)
                env = dict(os.environ, TILEC_NVRTC_FLAGS="--time=" + tf)
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                subprocess.run([os.path.join(b, "bin", "tilec"), sf, *defs, "--target=sm_90a", "--emit=cubin",
                                "-o", os.path.join(tmp, "o.cubin")], check=True, env=env)
                wall = (time.perf_counter() - t) * 1e3
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e3
                ph = {}
                for line in open(tf).read().splitlines()[1:]:
                    p = [x.strip() for x in line.split(",")]
                    ph[p[1]] = ph.get(p[1], 0) + float(p[2])
                res.setdefault((cname, label), []).append(
                    (cpu, wall, ph.get("CUDA C++ Frontend", 0), ph.get("NVVM Optimizer", 0), ph.get("PTX Translation", 0)))
    print("| kernel (sm_90a) | build | process CPU ms | wall ms | wall min-max | front end | NVVM | ptxas |")
    print("|---|---|---|---|---|---|---|---|")
    for (cname, label), v in res.items():
        med = ["%.0f" % statistics.median(x[i] for x in v) for i in range(5)]
        med.insert(2, "%.0f-%.0f" % (min(x[1] for x in v), max(x[1] for x in v)))
        print("| %s | %s | %s |" % (cname, label, " | ".join(med)))


if __name__ == "__main__":
    sys.exit(main())
