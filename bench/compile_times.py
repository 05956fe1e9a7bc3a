#!/usr/bin/env python3
"""compile_times.py - what a user waits for before a kernel first runs
(issue 12's table), each figure from FRESH processes, repeated.

Every measurement runs in a new Python process (this script with --child)
with a new, empty cache directory where it says "cold": NVRTC keeps work
from earlier compilations inside one process, so a second compile of the
same source in a process is much faster than what a user sees first, and a
figure taken after another compile in the same process is not a cold one.
Times are wall-clock of the step alone, measured inside the child (Python
start-up and `import tilec` excluded, and context creation excluded from
the load rows); each child also reports the CPU time (user + sys) of the
step, which a loaded machine disturbs less than the wall clock.

Rows, per kernel variant where it applies:
  front end        `tilec FILE --emit=cuda --target=sm_90a -D ...`: a whole
                   process, wall time around subprocess.run
  aot cold         tilert_compile_aot (what `tilec --emit=cubin` runs) on a
                   CPU context with an empty cache: front end + NVRTC opened
                   + NVRTC compile to a cubin + cache entry written. The
                   runtime's JIT path minus the driver (rt_gpu_cubin is the
                   same function); runs with no GPU.
  aot again        the same call again in the same process, another empty
                   cache: the "NVRTC reuses work" figure, NOT a cold one
  aot cache hit    a fresh process, the cache filled by the cold run: front
                   end + key + reading and checking <key>.cubin; the key's
                   NVRTC version comes from the cache's NVRTC stamp, so
                   libnvrtc is not opened (runtime/rt_gpu_nvrtc.c)
  nvrtc phases     NVRTC's own --time split of one cold compile
                   (TILEC_NVRTC_FLAGS=--time=FILE, cache off): C++ front
                   end / NVVM optimizer / ptxas ("PTX Translation")
GPU rows (skipped, with the reason, where no CUDA device opens):
  aot parallel     the four flagship variants compiled at once, one thread
                   each, in a fresh process: wall until the last cubin (the
                   autotuning case; compare with the sum of their cold rows)
  nvrtc open       dlopen libnvrtc + nvrtcVersion in a fresh process: what
                   the first compile of a process pays on top of NVRTC
                   (context creation no longer opens libnvrtc)
  context          tilec.Context(device="cuda") in a fresh process, and
                   its parts in another fresh process through ctypes: dlopen
                   libcuda, cuInit, device queries, primary context (the
                   calls rt_cuda_open makes), and dlopen libnvrtc +
                   nvrtcVersion, which it made before libnvrtc became lazy
  module load      cuModuleLoadData of the flagship's cubin with and
                   without -lineinfo, first module of a fresh process
  load cold        ctx.load() in a fresh process with an empty cache
                   (context excluded): front end + NVRTC + cuModuleLoad
  load again       another empty cache, same process (not cold)
  load cache hit   ctx.load() in a fresh process on the filled cache
                   (context excluded): front end + cache read + cuModuleLoad

    python3 bench/compile_times.py [--repeats 5] [--out-dir bench/results]
                                   [--tag NAME] [--only fa-bf16-d128,...]

Prints the table last. Writes <date>-<tag>-compile-times.{md,json} to
--out-dir (tag: the GPU's name, or "cpu-host"). Needs the build (libtilert
and bin/tilec): $TILEC_BUILD_DIR, else <repo>/build.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

FA = os.path.join(ROOT, "examples", "flash_attention.tile")
GEMM = os.path.join(ROOT, "examples", "gemm.tile")
VARIANTS = [
    ("fa-bf16-d128", FA, {"dtype": "bf16", "dim": "128"}),
    ("fa-f16-d128", FA, {"dtype": "f16", "dim": "128"}),
    ("fa-bf16-d64-causal", FA, {"dtype": "bf16", "dim": "64", "is_causal": "true"}),
    ("fa-f16-d64-causal", FA, {"dtype": "f16", "dim": "64", "is_causal": "true"}),
    ("gemm-f16", GEMM, {"dtype": "f16"}),
]
ARCH = "sm_90a"


def build_dir():
    return os.environ.get("TILEC_BUILD_DIR") or os.path.join(ROOT, "build")


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ------------------------------------------------------------- children ---

def aot_lib():
    from tilec import _ffi
    lib = _ffi.lib()
    c = ctypes
    lib.tilert_compile_aot.restype = c.c_int
    lib.tilert_compile_aot.argtypes = [
        c.c_void_p, c.c_char_p, c.c_char_p, c.c_size_t, c.POINTER(_ffi.TilecDefine), c.c_int,
        c.c_char_p, c.c_int, c.POINTER(c.c_void_p), c.POINTER(c.c_size_t), c.POINTER(c.c_bool)]
    return lib, _ffi


def aot_compile(lib, _ffi, cache_dir, path, defines):
    """One tilert_compile_aot on a fresh CPU context; (wall s, cpu s, size, hit)."""
    cfg = _ffi.TilertConfig(_ffi.DEVICE_CPU, cache_dir.encode() if cache_dir else None,
                            cache_dir is None, None)
    ctx = ctypes.c_void_p()
    st = lib.tilert_context_create(ctypes.byref(cfg), ctypes.byref(ctx))
    if st != 0:
        raise RuntimeError("tilert_context_create: %d" % st)
    text = open(path, "rb").read()
    items = list(defines.items())
    defs = (_ffi.TilecDefine * max(1, len(items)))(
        *[_ffi.TilecDefine(k.encode(), v.encode()) for k, v in items])
    out, size, hit = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_bool()
    c0, t0 = cpu_s(), time.perf_counter()
    st = lib.tilert_compile_aot(ctx, path.encode(), text, len(text), defs, len(items),
                                ARCH.encode(), 0, ctypes.byref(out), ctypes.byref(size),
                                ctypes.byref(hit))
    t1, c1 = time.perf_counter(), cpu_s()
    if st != 0:
        msg = lib.tilert_last_error(ctx).decode(errors="replace")
        lib.tilert_context_destroy(ctx)
        raise RuntimeError("tilert_compile_aot: status %d: %s" % (st, msg[:2000]))
    ctypes.CDLL(None).free(out)
    lib.tilert_context_destroy(ctx)
    return t1 - t0, c1 - c0, size.value, bool(hit.value)


def child_aot_cold(spec):
    lib, _ffi = aot_lib()
    wall, cpu, size, hit = aot_compile(lib, _ffi, spec["cache"], spec["path"], spec["defines"])
    assert not hit, "a cold compile came from the cache"
    other = tempfile.mkdtemp(prefix="tilec-again-")
    try:
        wall2, cpu2, _, hit2 = aot_compile(lib, _ffi, other, spec["path"], spec["defines"])
        assert not hit2
    finally:
        shutil.rmtree(other, ignore_errors=True)
    return {"aot cold": [wall, cpu], "aot again (same process)": [wall2, cpu2], "cubin bytes": size}


def child_aot_hit(spec):
    lib, _ffi = aot_lib()
    wall, cpu, size, hit = aot_compile(lib, _ffi, spec["cache"], spec["path"], spec["defines"])
    assert hit, "the cache hit missed"
    return {"aot cache hit": [wall, cpu]}


def child_phases(spec):
    csv = os.path.join(spec["tmp"], "nvrtc-time.csv")
    os.environ["TILEC_NVRTC_FLAGS"] = "--time=" + csv
    lib, _ffi = aot_lib()
    aot_compile(lib, _ffi, None, spec["path"], spec["defines"])
    phases = {}
    for line in open(csv):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[3] == "ms":
            phases["nvrtc " + parts[1]] = [float(parts[2]) / 1e3, None]
    return phases


def child_context(spec):
    import tilec
    c0, t0 = cpu_s(), time.perf_counter()
    ctx = tilec.Context(device="cuda")
    t1, c1 = time.perf_counter(), cpu_s()
    ctx.close()
    return {"context": [t1 - t0, c1 - c0]}


def child_context_parts(spec):
    """The calls rt_cuda_open makes, one by one (runtime/cuda/cuda_driver.c)."""
    res = {}

    def step(name, fn):
        c0, t0 = cpu_s(), time.perf_counter()
        v = fn()
        res["context: " + name] = [time.perf_counter() - t0, cpu_s() - c0]
        return v

    cu = step("dlopen libcuda", lambda: ctypes.CDLL("libcuda.so.1"))
    r = step("cuInit", lambda: cu.cuInit(0))
    assert r == 0, "cuInit %d" % r
    dev = ctypes.c_int()
    n, v = ctypes.c_int(), ctypes.c_int()
    name = ctypes.create_string_buffer(128)

    def queries():
        cu.cuDeviceGetCount(ctypes.byref(n))
        cu.cuDeviceGet(ctypes.byref(dev), 0)
        for attr in (75, 76, 97):
            cu.cuDeviceGetAttribute(ctypes.byref(v), attr, dev)
        cu.cuDeviceGetName(name, 128, dev)
    step("device queries", queries)
    ctx = ctypes.c_void_p()
    r = step("primary context retain + set current",
             lambda: cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or cu.cuCtxSetCurrent(ctx))
    assert r == 0, "primary context %d" % r

    def nvrtc():
        for cand in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                     "/usr/local/cuda/lib64/libnvrtc.so"):
            try:
                lib = ctypes.CDLL(cand)
                break
            except OSError:
                continue
        a, b = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(a), ctypes.byref(b))
    step("dlopen libnvrtc + nvrtcVersion", nvrtc)
    return res


def child_aot_parallel(spec):
    """Every flagship variant at once, one thread and one CPU context each,
    in a fresh process with empty caches (autotuning and several dtypes
    compile this way): wall time until the last cubin."""
    import threading
    lib, _ffi = aot_lib()
    errs, dirs = [], []
    fa = [v for v in VARIANTS if v[1] == FA]

    def one(path, defines):
        d = tempfile.mkdtemp(prefix="tilec-par-")
        dirs.append(d)
        try:
            aot_compile(lib, _ffi, d, path, defines)
        except Exception as e:
            errs.append(str(e))
    threads = [threading.Thread(target=one, args=(p, d)) for _, p, d in fa]
    c0, t0 = cpu_s(), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    if errs:
        raise RuntimeError(errs[0])
    return {"aot %d variants in parallel threads" % len(fa): [wall, cpu]}


def nvrtc_cubin(src_path, opts):
    """The flagship's CUDA text compiled by NVRTC in this process with the
    runtime's device headers (runtime/device/*.cuh, what it embeds)."""
    import glob
    for cand in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"):
        try:
            lib = ctypes.CDLL(cand)
            break
        except OSError:
            continue
    hs = sorted(glob.glob(os.path.join(ROOT, "runtime", "device", "*.cuh")))
    H = ctypes.c_char_p * len(hs)
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), open(src_path, "rb").read(), b"fa.cu", len(hs),
                           H(*[open(h, "rb").read() for h in hs]), H(*[os.path.basename(h).encode() for h in hs]))
    o = [b"-arch=" + ARCH.encode(), b"-std=c++17"] + [x.encode() for x in opts]
    if lib.nvrtcCompileProgram(prog, len(o), (ctypes.c_char_p * len(o))(*o)) != 0:
        raise RuntimeError("NVRTC failed on %s" % src_path)
    n = ctypes.c_size_t()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetCUBIN(prog, buf)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.raw


def child_module_load(spec):
    """cuModuleLoadData of one cubin file, the first module of a fresh
    process and context (GPU only)."""
    cu = ctypes.CDLL("libcuda.so.1")
    assert cu.cuInit(0) == 0
    dev, ctx, mod = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
    cu.cuDeviceGet(ctypes.byref(dev), 0)
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    cu.cuCtxSetCurrent(ctx)
    data = open(spec["cubin"], "rb").read()
    c0, t0 = cpu_s(), time.perf_counter()
    r = cu.cuModuleLoadData(ctypes.byref(mod), data)
    t1, c1 = time.perf_counter(), cpu_s()
    assert r == 0, "cuModuleLoadData %d" % r
    return {"cuModuleLoadData %s (%d KB)" % (spec["label"], len(data) // 1024): [t1 - t0, c1 - c0]}


def child_nvrtc_open(spec):
    """dlopen libnvrtc + nvrtcVersion alone (the runtime's part of context
    creation that needs no GPU)."""
    c0, t0 = cpu_s(), time.perf_counter()
    for cand in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"):
        try:
            lib = ctypes.CDLL(cand)
            break
        except OSError:
            continue
    a, b = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(a), ctypes.byref(b))
    return {"dlopen libnvrtc + nvrtcVersion": [time.perf_counter() - t0, cpu_s() - c0]}


def child_load(spec):
    import tilec
    ctx = tilec.Context(device="cuda", cache_dir=spec["cache"])
    c0, t0 = cpu_s(), time.perf_counter()
    m = ctx.load(spec["path"], defines=spec["defines"])
    t1, c1 = time.perf_counter(), cpu_s()
    hit = m.from_cache
    ctx.close()
    if spec["kind"] == "cold":
        assert not hit, "a cold load came from the cache"
        other = tempfile.mkdtemp(prefix="tilec-again-")
        try:
            ctx = tilec.Context(device="cuda", cache_dir=other)
            c2, t2 = cpu_s(), time.perf_counter()
            m2 = ctx.load(spec["path"], defines=spec["defines"])
            t3, c3 = time.perf_counter(), cpu_s()
            assert not m2.from_cache
            ctx.close()
        finally:
            shutil.rmtree(other, ignore_errors=True)
        return {"load cold": [t1 - t0, c1 - c0], "load again (same process)": [t3 - t2, c3 - c2]}
    assert hit, "the cache hit missed"
    return {"load cache hit": [t1 - t0, c1 - c0]}


def child_probe(spec):
    try:
        import tilec
        ctx = tilec.Context(device="auto", disable_cache=True)
        dev, note = ctx.device, ctx.device_note
        ctx.close()
    except Exception as e:  # no library at all
        return {"device": "none", "note": str(e)}
    return {"device": dev, "note": note}


CHILDREN = {"aot_cold": child_aot_cold, "aot_hit": child_aot_hit, "phases": child_phases,
            "context": child_context, "context_parts": child_context_parts,
            "load": child_load, "probe": child_probe, "nvrtc_open": child_nvrtc_open,
            "aot_parallel": child_aot_parallel, "module_load": child_module_load}


def child_main(spec_json):
    spec = json.loads(spec_json)
    try:
        out = CHILDREN[spec["what"]](spec)
    except Exception as e:
        out = {"error": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write("RESULT " + json.dumps(out) + "\n")


def run_child(spec, env=None, timeout=600):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                       capture_output=True, text=True, timeout=timeout, env=env)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": "child exited %d: %s" % (p.returncode, (p.stderr or p.stdout)[-1500:])}


# --------------------------------------------------------------- parent ---

def front_end(cli, path, defines, n):
    cmd = [cli, path, "--emit=cuda", "--target=" + ARCH, "-o", os.devnull]
    for k, v in defines.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    out = []
    for _ in range(n):
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        t1 = time.perf_counter()
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            return {"error": "`%s` exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr[:300])}
        out.append([t1 - t0, (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)])
    return out


def summarize(samples):
    walls = [s[0] for s in samples]
    cpus = [s[1] for s in samples if s[1] is not None]
    d = {"n": len(walls), "median_ms": 1e3 * statistics.median(walls), "min_ms": 1e3 * min(walls),
         "max_ms": 1e3 * max(walls)}
    if cpus:
        d["cpu_median_ms"] = 1e3 * statistics.median(cpus)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--tag", default=None, help="file-name tag (default: the GPU's name, or cpu-host)")
    ap.add_argument("--only", default="", help="comma-separated variant names")
    ap.add_argument("--tilec-cli", default=None)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()

    cli = args.tilec_cli or os.path.join(build_dir(), "bin", "tilec")
    variants = [v for v in VARIANTS if not args.only or v[0] in args.only.split(",")]
    probe = run_child({"what": "probe"})
    gpu = probe.get("device") == "cuda"
    skipped = []
    if not gpu:
        why = probe.get("note") or probe.get("error") or "no CUDA device"
        skipped.append("context, context parts, load cold, load again, load cache hit: no CUDA "
                       "device here (%s); measured on a GPU machine only" % why)
    rows = {}  # (variant, metric) -> samples

    def add(variant, res):
        if "error" in res:
            rows.setdefault((variant, "ERROR"), []).append(res["error"])
            print("  %s: ERROR %s" % (variant, res["error"][:300]), file=sys.stderr)
            return
        for k, v in res.items():
            if isinstance(v, list):
                rows.setdefault((variant, k), []).append(v)
            else:
                rows[(variant, k)] = v

    print("device: %s (%s)" % (probe.get("device"), probe.get("note", "")), file=sys.stderr)
    for _ in range(args.repeats):
        add("-", run_child({"what": "nvrtc_open"}))
    if not args.only:
        for _ in range(min(3, args.repeats)):
            add("-", run_child({"what": "aot_parallel"}))
    if gpu:
        # What -lineinfo (the PTX text embedded for profilers) costs a cache
        # hit's cuModuleLoadData: the flagship's cubin with and without it.
        tmp = tempfile.mkdtemp(prefix="tilec-ml-")
        try:
            src = os.path.join(tmp, "fa.cu")
            subprocess.run([cli, FA, "--emit=cuda", "--target=" + ARCH, "-D", "dtype=bf16", "-o", src], check=True)
            for label, opts in (("with -lineinfo", ["-lineinfo"]), ("without -lineinfo", [])):
                path = os.path.join(tmp, label.split()[0] + ".cubin")
                with open(path, "wb") as f:
                    f.write(nvrtc_cubin(src, opts))
                for _ in range(args.repeats):
                    add("-", run_child({"what": "module_load", "cubin": path, "label": label}))
        except Exception as e:
            add("-", {"error": "module load rows: %s" % e})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for _ in range(args.repeats):
            add("-", run_child({"what": "context"}))
            add("-", run_child({"what": "context_parts"}))
    for name, path, defines in variants:
        print("%s ..." % name, file=sys.stderr)
        fe = front_end(cli, path, defines, args.repeats)
        if isinstance(fe, dict):
            add(name, fe)
        else:
            for s in fe:
                add(name, {"front end (process)": s})
        tmp = tempfile.mkdtemp(prefix="tilec-ct-")
        try:
            for i in range(args.repeats):
                cache = os.path.join(tmp, "aot-%d" % i)
                os.makedirs(cache)
                add(name, run_child({"what": "aot_cold", "cache": cache, "path": path, "defines": defines}))
                add(name, run_child({"what": "aot_hit", "cache": cache, "path": path, "defines": defines}))
                if i < 3:
                    add(name, run_child({"what": "phases", "tmp": tmp, "path": path, "defines": defines}))
                if gpu:
                    cache = os.path.join(tmp, "load-%d" % i)
                    os.makedirs(cache)
                    add(name, run_child({"what": "load", "kind": "cold", "cache": cache, "path": path,
                                         "defines": defines}))
                    add(name, run_child({"what": "load", "kind": "hit", "cache": cache, "path": path,
                                         "defines": defines}))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # ---- report ----
    host = platform.node()
    cpu_model = ""
    try:
        cpu_model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except Exception:
        pass
    gpu_name = ""
    if gpu:
        m = re.search(r"CUDA device 0: (.*?) \(sm_", probe.get("note", ""))
        gpu_name = m.group(1) if m else "gpu"
    tag = args.tag or (re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-") if gpu else "cpu-host")
    date = datetime.date.today().isoformat()
    table = {}
    for (variant, metric), samples in rows.items():
        if metric == "ERROR":
            table[(variant, metric)] = {"errors": samples}
        elif isinstance(samples, list):
            table[(variant, metric)] = summarize(samples)
        else:
            table[(variant, metric)] = {"value": samples}
    lines = ["# tilec compile latency, %s, %s" % (date, tag), "",
             "Host %s: %s, %d CPUs%s; %s. Each figure: fresh processes, %d repeats (nvrtc phases: 3),"
             " median [min, max] of the step's wall time; CPU = median user+sys of the step"
             " (steadier on a loaded machine). Cold = empty cache directory."
             % (host, cpu_model or platform.machine(), os.cpu_count() or 0,
                ", GPU " + gpu_name if gpu else ", no GPU", probe.get("note", ""), args.repeats), "",
             "| kernel | step | median ms | min ms | max ms | CPU ms |", "|---|---|---|---|---|---|"]
    order = ["dlopen libnvrtc + nvrtcVersion", "context", "front end (process)", "aot cold", "aot again (same process)", "aot cache hit",
             "nvrtc CUDA C++ Frontend", "nvrtc NVVM Optimizer", "nvrtc PTX Translation",
             "load cold", "load again (same process)", "load cache hit"]

    def key(item):
        (variant, metric), _ = item
        vi = [v[0] for v in VARIANTS].index(variant) if variant in [v[0] for v in VARIANTS] else -1
        mi = order.index(metric) if metric in order else (len(order) if metric.startswith("context") else 99)
        return (vi, mi, metric)
    for (variant, metric), s in sorted(table.items(), key=key):
        if "errors" in s:
            lines.append("| %s | ERROR | %s | | | |" % (variant, s["errors"][0][:200].replace("|", "/")))
        elif "value" in s:
            lines.append("| %s | %s | %s | | | |" % (variant, metric, s["value"]))
        else:
            lines.append("| %s | %s | %.1f | %.1f | %.1f | %s |" % (
                variant, metric, s["median_ms"], s["min_ms"], s["max_ms"],
                "%.1f" % s["cpu_median_ms"] if "cpu_median_ms" in s else ""))
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped)]
    lines += ["", "Steps: front end = `tilec --emit=cuda` as a whole process; aot cold ="
              " tilert_compile_aot (front end + NVRTC to a cubin + cache write, the JIT path without"
              " the driver) in a fresh process with an empty cache; aot again = the same call again in"
              " that process (NVRTC reuses work: not a cold figure); aot cache hit = a fresh process on"
              " the filled cache (includes opening NVRTC, which a CUDA context does at creation); nvrtc * = NVRTC's --time split of one cold compile; load * = ctx.load()"
              " on a CUDA context, context creation excluded; context = tilec.Context(device=\"cuda\")"
              " in a fresh process, then its driver calls one by one."]
    # The short table: one line per kernel, medians in ms (wall; CPU in
    # parentheses where the step ran in this host's CPU only).
    def med(variant, metric, cpu=False):
        t = table.get((variant, metric))
        if not t or "median_ms" not in t:
            return "-"
        return "%.0f (%.0f CPU)" % (t["median_ms"], t["cpu_median_ms"]) if cpu and "cpu_median_ms" in t \
            else ("%.1f" % t["median_ms"] if t["median_ms"] < 50 else "%.0f" % t["median_ms"])
    short = ["", "## Summary (medians, ms; goal: load cold < 250 flagship / < 150 gemm, load cache hit < 5)", "",
             "| kernel | load cold (GPU) | load cache hit (GPU) | aot cold: NVRTC path, no driver | aot cache hit |",
             "|---|---|---|---|---|"]
    for name, _, _ in variants:
        short.append("| %s | %s | %s | %s | %s |" % (name, med(name, "load cold"), med(name, "load cache hit"),
                                                     med(name, "aot cold", True), med(name, "aot cache hit", True)))
    short.append("")
    short.append("context creation (GPU): %s ms; dlopen libnvrtc + nvrtcVersion: %s ms"
                 % (med("-", "context"), med("-", "dlopen libnvrtc + nvrtcVersion")))
    lines += short
    text = "\n".join(lines) + "\n"
    if not args.no_write:
        os.makedirs(args.out_dir, exist_ok=True)
        base = os.path.join(args.out_dir, "%s-%s-compile-times" % (date, tag))
        with open(base + ".md", "w") as f:
            f.write(text)
        with open(base + ".json", "w") as f:
            json.dump({"date": date, "tag": tag, "host": host, "cpu": cpu_model, "gpu": gpu_name,
                       "device_note": probe.get("note"), "repeats": args.repeats, "skipped": skipped,
                       "rows": [{"variant": v, "step": m, **s} for (v, m), s in sorted(table.items(), key=key)]},
                      f, indent=1)
        print("wrote %s.{md,json}" % base, file=sys.stderr)
    sys.stdout.write(text)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child_main(sys.argv[2])
    else:
        main()
