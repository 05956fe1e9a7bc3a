#!/usr/bin/env python3
"""nvrtc_variants.py - NVRTC cold-compile cost of hand-edited CUDA variants, interleaved.

    python3 bench/nvrtc_variants.py [--reps 7] [--sass] LABEL=FILE.cu[@HEADER_DIR][:OPT,OPT...] ...

For questions about the generated code's shape (issue 12): write a kernel with
`tilec --emit=cuda --target=sm_90a`, edit copies of it by hand, and compare what
NVRTC spends on each. Every compile is a fresh process (a small C driver, built
here with cc, that dlopens libnvrtc and calls it the way the runtime does: the
device headers of HEADER_DIR, default runtime/device, as in-memory headers,
-arch=sm_90a -std=c++17 -lineinfo, then the variant's OPTs), the kernel renamed
with a random suffix each time; variants run round robin within a repetition.
Prints per variant the median wall and CPU time of the compile (nvrtcCompileProgram
alone: no dlopen, no tilec front end), the wall spread (min-max), and NVRTC's own
phase split (--time: front end, NVVM, ptxas). --sass also compares each
variant's SASS with the first variant's (cuobjdump -sass, addresses, encodings
and the kernel's name stripped; cuobjdump and nvdisasm from $PATH, or the
$CUOBJDUMP that tools/sass_compare.sh takes). No GPU needed.
"""
import argparse, os, random, re, shutil, statistics, subprocess, sys, tempfile

DRIVER = r'''
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef int (*create_t)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*compile_t)(void *, int, const char *const *);
typedef int (*size_t_)(void *, size_t *);
typedef int (*get_t)(void *, char *);
static char *slurp(const char *p) {
  FILE *f = fopen(p, "rb");
  if (!f) { perror(p); exit(2); }
  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  char *b = malloc(n + 1);
  if (fread(b, 1, n, f) != (size_t)n) exit(2);
  b[n] = 0; fclose(f); return b;
}
static double ms(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(int argc, char **argv) { /* SRC HEADER_DIR OUT.cubin [OPT...] */
  void *h = dlopen("libnvrtc.so", RTLD_NOW);
  if (!h) h = dlopen("libnvrtc.so.13", RTLD_NOW);
  if (!h) h = dlopen("libnvrtc.so.12", RTLD_NOW);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  create_t create = (create_t)dlsym(h, "nvrtcCreateProgram");
  compile_t compile = (compile_t)dlsym(h, "nvrtcCompileProgram");
  size_t_ cubin_size = (size_t_)dlsym(h, "nvrtcGetCUBINSize"), log_size = (size_t_)dlsym(h, "nvrtcGetProgramLogSize");
  get_t get_cubin = (get_t)dlsym(h, "nvrtcGetCUBIN"), get_log = (get_t)dlsym(h, "nvrtcGetProgramLog");
  const char *names[64], *texts[64], *opts[64];
  int nh = 0, no = 0;
  char path[4096];
  DIR *d = opendir(argv[2]);
  if (!d) { perror(argv[2]); return 2; }
  for (struct dirent *e; (e = readdir(d)) && nh < 64;) {
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".cuh")) {
      snprintf(path, sizeof path, "%s/%s", argv[2], e->d_name);
      names[nh] = strdup(e->d_name); texts[nh++] = slurp(path);
    }
  }
  opts[no++] = "-arch=sm_90a"; opts[no++] = "-std=c++17"; opts[no++] = "-lineinfo";
  for (int i = 4; i < argc && no < 64; i++) opts[no++] = argv[i];
  char *src = slurp(argv[1]);
  double w0 = ms(CLOCK_MONOTONIC), c0 = ms(CLOCK_PROCESS_CPUTIME_ID);
  void *prog;
  create(&prog, src, "kernel.cu", nh, texts, names);
  int r = compile(prog, no, opts);
  double w1 = ms(CLOCK_MONOTONIC), c1 = ms(CLOCK_PROCESS_CPUTIME_ID);
  size_t n = 0;
  log_size(prog, &n);
  char *log = malloc(n + 1); get_log(prog, log);
  if (r) { fprintf(stderr, "%s\nnvrtcCompileProgram: %d\n", log, r); return 1; }
  cubin_size(prog, &n);
  char *cubin = malloc(n); get_cubin(prog, cubin);
  FILE *f = fopen(argv[3], "wb");
  if (!f || fwrite(cubin, 1, n, f) != n) return 2;
  fclose(f);
  printf("%.2f %.2f\n", w1 - w0, c1 - c0);
  return 0;
}
'''

KERNEL = re.compile(r'(extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?)(\w+)\(')


def sass(cubin):
    tool = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
    out = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True)
    if out.returncode:
        sys.exit("cuobjdump -sass failed (nvdisasm on $PATH?):\n" + out.stderr)
    lines = []
    for line in out.stdout.splitlines():
        m = re.match(r'\s+/\*[0-9a-f]{4,}\*/\s*(.*?)\s*(/\* 0x[0-9a-f]+ \*/)?\s*$', line)
        if m:
            lines.append(re.sub(r'\s+', ' ', m.group(1)))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--sass", action="store_true", help="compare each variant's SASS with the first's")
    ap.add_argument("variants", nargs="+", help="LABEL=FILE.cu[@HEADER_DIR][:OPT,OPT...]")
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    variants = []
    for v in args.variants:
        label, rest = v.split("=", 1)
        f, _, opts = rest.partition(":")
        f, _, hdr = f.partition("@")
        variants.append((label, f, hdr or os.path.join(root, "runtime", "device"), [o for o in opts.split(",") if o]))
    tmp = tempfile.mkdtemp(prefix="nvrtc_variants_")
    drv = os.path.join(tmp, "driver")
    open(drv + ".c", "w").write(DRIVER)
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", drv, drv + ".c", "-ldl"], check=True)
    res = {}
    for rep in range(args.reps):
        for label, f, hdr, opts in (variants if rep % 2 == 0 else variants[::-1]):
            salt = "%08d" % random.randrange(10**8)
            src = KERNEL.sub(lambda m: m.group(1) + m.group(2) + "_" + salt + "(", open(f).read())
            sf, tf = os.path.join(tmp, "k_%s.cu" % salt), os.path.join(tmp, "t_%s.csv" % salt)
            open(sf, "w").write(src)
            out = subprocess.run([drv, sf, hdr, os.path.join(tmp, label + ".cubin"), "--time=" + tf] + opts,
                                 capture_output=True, text=True)
            if out.returncode:
                sys.exit("%s: compile failed\n%s" % (label, out.stderr[-3000:]))
            wall, cpu = map(float, out.stdout.split())
            ph = {}
            for line in open(tf).read().splitlines()[1:]:
                p = [x.strip() for x in line.split(",")]
                ph[p[1]] = ph.get(p[1], 0) + float(p[2])
            os.remove(sf)
            os.remove(tf)
            res.setdefault(label, []).append((wall, cpu, ph.get("CUDA C++ Frontend", 0), ph.get("NVVM Optimizer", 0),
                                              ph.get("PTX Translation", 0)))
    ref = sass(os.path.join(tmp, variants[0][0] + ".cubin")) if args.sass else None
    print("| variant | wall ms | min-max | CPU ms | front end | NVVM | ptxas |%s" % (" SASS |" if ref else ""))
    print("|---|---|---|---|---|---|---|%s" % ("---|" if ref else ""))
    for label, *_ in variants:
        v = res[label]
        med = [statistics.median(x[i] for x in v) for i in range(5)]
        cell = ""
        if ref is not None:
            s = sass(os.path.join(tmp, label + ".cubin"))
            cell = " %s |" % ("same (%d)" % len(s) if s == ref else "differs (%d -> %d)" % (len(ref), len(s)))
        print("| %s | %.0f | %.0f-%.0f | %.0f | %.0f | %.0f | %.0f |%s" % (
            label, med[0], min(x[0] for x in v), max(x[0] for x in v), med[1], med[2], med[3], med[4], cell))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
