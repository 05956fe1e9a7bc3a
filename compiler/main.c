/* main.c - the tilec command line (contract: shared design architecture.md).
 *
 *   tilec FILE.tile [--emit=cuda|c|ir|cubin|ptx] [-o PATH] [-D NAME=VALUE]...
 *         [--target=sm_80|sm_86|sm_87|sm_89|sm_90a|cpu] [--cache-dir=DIR] [--dump-ir=DIR]
 *         [--print-ir-after=PASS|all]
 *   tilec --list-passes | --version | --help
 *
 * --emit=cubin|ptx compiles ahead of time through the runtime's NVRTC path
 * (tilert_compile_aot, runtime/rt_aot.c; libnvrtc is dlopen'ed, no GPU is
 * needed); --cache-dir also stores the cubin in that runtime cache, under
 * the key a load of the same FILE (the path as written) on a GPU of that
 * arch looks up. Built without the runtime, those two are refused. The
 * warnings in NVRTC's log of that build (ptxas's "Potential Performance
 * Loss" advisories included) are printed as diagnostics; the exit status
 * stays 0.
 *
 * Exit status: 0 success; 1 the input has errors (diagnostics on stderr, no
 * output file written); 2 bad usage. The output file is written to a
 * temporary name and renamed, so it is never left half-written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/tilec.h"
#ifdef TILEC_CLI_AOT
#include "tilert.h"
#endif

static const char usage[] =
    "usage: tilec FILE.tile [options]\n"
    "  --emit=cuda|c|ir|cubin|ptx   what to write (default cuda); cubin and ptx run\n"
    "                         NVRTC (libnvrtc, no GPU needed) for --target and print\n"
    "                         its warnings (a serialized-wgmma advisory: a slow kernel)\n"
    "  -o PATH                output file (default stdout)\n"
    "  -D NAME=VALUE          bind a constant, shape or stride symbol (repeatable)\n"
    "  --target=sm_80|sm_90a|cpu   (default: cpu for --emit=c, sm_80 otherwise);\n"
    "                         sm_86, sm_87, sm_89: the sm_80 code, a cubin for that arch\n"
    "  --cache-dir=DIR        --emit=cubin: also store it in the runtime cache DIR,\n"
    "                         where a load of FILE (same path) on that GPU finds it\n"
    "  --no-tma               sm_90a: keep global->shared copies on cp.async (the build\n"
    "                         the runtime launches when TMA cannot take a tensor)\n"
    "  --cluster-multicast    sm_90a, experimental: persistent GEMMs pair tiles in 2-block\n"
    "                         clusters that share B through multicast TMA (slower today)\n"
    "  --no-fast-division     CUDA: persistent kernels split their tile indices with\n"
    "                         hardware division, not the multipliers computed once\n"
    "                         per block that they use by default\n"
    "  --stream-k             sm_90a: persistent GEMMs split the last partial wave's\n"
    "                         k-iterations evenly over the blocks where it pays (the\n"
    "                         runtime uses such a build for thin last waves by itself)\n"
    "  --shape-class=N        the build for shape choices N (bit i set: the module's\n"
    "                         condition #i on a launch-time shape holds; default 0)\n"
    "  --dump-ir=DIR          write DIR/NN-<pass>.tir after every pass\n"
    "  --print-ir-after=PASS|all   the same text, to stderr\n"
    "  --list-passes          the pipeline, in order\n"
    "  --version, --help\n"
    "exit status: 0 ok, 1 the input has errors, 2 bad usage\n";

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "tilec: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see tilec --help)\n");
  return 2;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) abort();
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) break;
    cap *= 2;
    buf = realloc(buf, cap);
  }
  bool err = ferror(f);
  if (f != stdin) fclose(f);
  if (err) {
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

static bool write_atomically(const char *path, const char *data, size_t len) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  if (!tmp) abort();
  snprintf(tmp, n + 16, "%s.tmpXXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(tmp);
    return false;
  }
  bool ok = true;
  for (size_t off = 0; off < len && ok;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w <= 0) ok = false;
    else off += (size_t)w;
  }
  ok = close(fd) == 0 && ok;
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) unlink(tmp);
  free(tmp);
  return ok;
}

#ifdef TILEC_CLI_AOT
/* The warnings in NVRTC's log of a build that succeeded, as diagnostics on
 * stderr: NVRTC's own ("gemm.cu(12): warning #177-D: ...", with the source
 * lines it quotes), ptxas's ("ptxas warning : ..."), and the ptxas
 * advisories that the kernel will be slow, which ptxas files under "info"
 * ("ptxas info : (C7511) Potential Performance Loss: wgmma.mma_async
 * instructions are serialized ..."). Other info lines (C7519 "warpgroup.arrive
 * is injected", -v statistics) and NVRTC's "Remark:" ask nothing of the
 * user: not printed (docs/cuda-runtime.md, "The compile log"). */
static void print_log_warnings(const char *log, const char *input) {
  char *text = strdup(log);
  if (!text) abort();
  bool slow = false, quoting = false; /* quoting: the lines under an NVRTC warning */
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    const char *colon = strchr(line, ':');
    bool ptxas = strncmp(line, "ptxas", 5) == 0 && colon;
    const char *msg = ptxas ? colon + 1 + strspn(colon + 1, " ") : line;
    if (quoting && line[0] == ' ') {
      fprintf(stderr, "%s\n", line);
      continue;
    }
    quoting = false;
    if (ptxas && strstr(msg, "Potential Performance Loss")) {
      fprintf(stderr, "tilec: warning: slow kernel: ptxas: %s\n", msg);
      slow = true;
    } else if (ptxas && strstr(line, "warning") && strstr(line, "warning") < colon) {
      fprintf(stderr, "tilec: warning: ptxas: %s\n", msg);
    } else if (!ptxas && line[0] != ' ' && strstr(line, "): warning")) {
      fprintf(stderr, "tilec: warning: nvrtc: %s\n", line);
      quoting = true;
    }
  }
  if (slow)
    fprintf(stderr,
            "tilec: note: %s: ptxas serialized the kernel's wgmma instructions: its results are right, but its "
            "tensor cores run one instruction at a time (docs/cuda-runtime.md, \"The compile log\")\n",
            input);
  free(text);
}

/* --emit=cubin|ptx: tilert_compile_aot on a CPU context (libnvrtc is
 * opened when it compiles: not for a cubin already in --cache-dir), its
 * cache the --cache-dir one or none. The binary goes to
 * -o (stdout for PTX; a cubin needs -o). Exit 1 on any failure, with the
 * runtime's full message (diagnostics, or NVRTC's log); on success the
 * log's warnings go to stderr (print_log_warnings) and the exit is 0 --
 * for a cubin found in --cache-dir, those of the log stored with it. */
static int emit_aot(const char *input, const char *text, size_t len, const TilecDefine *defines,
                    int ndefines, unsigned shape_class, const char *arch, bool ptx, const char *cache_dir,
                    const char *output) {
  if (!ptx && !output) {
    fprintf(stderr, "tilec: --emit=cubin writes a binary: give -o PATH\n");
    return 2;
  }
  /* With a driver installed, NVRTC keeps ptxas's output in the driver's
   * compute cache (~/.nv/ComputeCache), and a compile that hits it logs no
   * ptxas line: the slow-kernel advisory would show only the first time. */
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  TilertConfig cfg = {TILERT_DEVICE_CPU, cache_dir, cache_dir == NULL, NULL};
  TilertContext *ctx = NULL;
  if (tilert_context_create(&cfg, &ctx) != TILERT_OK) {
    fprintf(stderr, "tilec: %s\n", ctx ? tilert_last_error(ctx) : "out of memory");
    tilert_context_destroy(ctx);
    return 1;
  }
  void *bin = NULL;
  size_t n = 0;
  bool hit = false;
  TilertStatus st = tilert_compile_aot_class(ctx, input, text, len, defines, ndefines, shape_class, arch,
                                             ptx ? TILERT_BINARY_PTX : TILERT_BINARY_CUBIN, &bin, &n, &hit);
  int rc = 0;
  if (st != TILERT_OK) {
    const char *msg = tilert_last_error(ctx);
    fprintf(stderr, "tilec: %s%s", msg, *msg && msg[strlen(msg) - 1] == '\n' ? "" : "\n");
    rc = 1;
  } else if (output) {
    if (!write_atomically(output, bin, n)) {
      fprintf(stderr, "tilec: cannot write %s: %s\n", output, strerror(errno));
      rc = 1;
    }
  } else if (fwrite(bin, 1, n, stdout) != n || fflush(stdout) != 0) {
    fprintf(stderr, "tilec: cannot write to stdout\n");
    rc = 1;
  }
  if (rc == 0) print_log_warnings(tilert_compile_aot_log(ctx), input);
  if (rc == 0 && getenv("TILEC_AOT_VERBOSE"))
    fprintf(stderr, "tilec: %s %s, %zu bytes%s\n", arch, ptx ? "PTX" : "cubin", n,
            !cache_dir ? "" : hit ? " (from the cache)" : " (stored in the cache)");
  free(bin);
  tilert_context_destroy(ctx);
  return rc;
}
#endif

int main(int argc, char **argv) {
  TilecOptions o;
  tilec_options_init(&o);
  o.emit = TILEC_EMIT_CUDA;
  bool target_given = false;
  const char *gpu_arch = "sm_80"; /* --emit=cubin|ptx: NVRTC's -arch */
  const char *input = NULL, *output = NULL, *cache_dir = NULL;
  int aot = 0; /* 1 cubin, 2 ptx */
  TilecDefine *defines = calloc((size_t)argc, sizeof *defines);
  if (!defines) abort();
  int ndefines = 0;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      free(defines);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("tilec %s\n", tilec_version());
      free(defines);
      return 0;
    } else if (strcmp(a, "--list-passes") == 0) {
      for (int p = 0; p < tilec_num_passes(); p++)
        printf("%2d  %-18s %-4s %s\n", p + 1, tilec_pass_name(p), tilec_pass_targets(p), tilec_pass_summary(p));
      free(defines);
      return 0;
    } else if (strncmp(a, "--emit=", 7) == 0) {
      const char *v = a + 7;
      aot = 0;
      if (strcmp(v, "cuda") == 0) o.emit = TILEC_EMIT_CUDA;
      else if (strcmp(v, "cubin") == 0) o.emit = TILEC_EMIT_CUDA, aot = 1;
      else if (strcmp(v, "ptx") == 0) o.emit = TILEC_EMIT_CUDA, aot = 2;
      else if (strcmp(v, "c") == 0) o.emit = TILEC_EMIT_C;
      else if (strcmp(v, "ir") == 0) o.emit = TILEC_EMIT_IR;
      else return bad_usage("unknown --emit value '%s' (cuda, c, ir, cubin or ptx)", v);
    } else if (strncmp(a, "--target=", 9) == 0) {
      const char *v = a + 9;
      target_given = true;
      gpu_arch = "sm_80";
      if (strcmp(v, "sm_80") == 0) o.target = TILEC_TARGET_SM80;
      else if (strcmp(v, "sm_90a") == 0) o.target = TILEC_TARGET_SM90A, gpu_arch = "sm_90a";
      else if (strcmp(v, "cpu") == 0) o.target = TILEC_TARGET_CPU;
      /* Other compute capability 8.x GPUs run the sm_80 code; their cubin
       * (and the runtime's cache key) names their own arch. */
      else if (strcmp(v, "sm_86") == 0 || strcmp(v, "sm_87") == 0 || strcmp(v, "sm_89") == 0)
        o.target = TILEC_TARGET_SM80, gpu_arch = v;
      else return bad_usage("unknown --target '%s' (sm_80, sm_86, sm_87, sm_89, sm_90a or cpu)", v);
    } else if (strncmp(a, "--cache-dir=", 12) == 0) {
      cache_dir = a + 12;
      if (!*cache_dir) return bad_usage("%s: empty directory", a);
    } else if (strcmp(a, "--no-tma") == 0) {
      o.no_tma = true;
    } else if (strcmp(a, "--cluster-multicast") == 0) {
      o.cluster_multicast = true;
    } else if (strcmp(a, "--no-fast-division") == 0) {
      o.fast_division = false;
    } else if (strcmp(a, "--stream-k") == 0) {
      o.stream_k = true;
    } else if (strncmp(a, "--shape-class=", 14) == 0) {
      char *end;
      errno = 0;
      unsigned long v = strtoul(a + 14, &end, 0);
      if (!a[14] || *end || errno || v > 0xffu || a[14] == '-')
        return bad_usage("%s: expected a number of shape-choice bits, 0 to 255", a);
      o.shape_class = (unsigned)v;
    } else if (strncmp(a, "--dump-ir=", 10) == 0) {
      o.dump_dir = a + 10;
      if (!*o.dump_dir) return bad_usage("%s: empty directory", a);
    } else if (strncmp(a, "--print-ir-after=", 17) == 0) {
      o.print_after = a + 17;
    } else if (strcmp(a, "-o") == 0) {
      if (++i >= argc) return bad_usage("%s needs a path", a);
      output = argv[i];
    } else if (strncmp(a, "-D", 2) == 0) {
      const char *def = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
      if (!def) return bad_usage("%s needs NAME=VALUE", a);
      const char *eq = strchr(def, '=');
      if (!eq || eq == def || !eq[1]) return bad_usage("-D %s: expected NAME=VALUE", def);
      char *name = strndup(def, (size_t)(eq - def));
      defines[ndefines].name = name;
      defines[ndefines++].value = eq + 1;
    } else if (a[0] == '-' && a[1] != '\0') {
      return bad_usage("unknown option '%s'", a);
    } else if (input) {
      return bad_usage("more than one input file ('%s')", a);
    } else {
      input = a;
    }
  }
  if (!input) return bad_usage("%s", "no input file");
  if (!target_given) o.target = o.emit == TILEC_EMIT_CUDA ? TILEC_TARGET_SM80 : TILEC_TARGET_CPU;
  if (o.no_tma && aot) return bad_usage("%s", "--no-tma goes with --emit=cuda|ir (the runtime builds that variant itself)");
  if (!o.fast_division && aot)
    return bad_usage("%s", "--no-fast-division goes with --emit=cuda (--emit=cubin|ptx: set $TILEC_FAST_DIVISION=0)");
  if (o.stream_k && aot)
    return bad_usage("%s", "--stream-k goes with --emit=cuda|ir (--emit=cubin|ptx: set $TILEC_STREAM_K=1)");
  if (cache_dir && aot != 1) return bad_usage("%s", "--cache-dir goes with --emit=cubin");
  if (aot && o.target == TILEC_TARGET_CPU)
    return bad_usage("%s", "--emit=cubin and --emit=ptx need a GPU --target (sm_80 or sm_90a)");
  if (aot && (o.dump_dir || o.print_after))
    return bad_usage("%s", "--dump-ir and --print-ir-after go with --emit=cuda|c|ir");
#ifndef TILEC_CLI_AOT
  if (aot) return bad_usage("%s", "this tilec was built without the runtime: no --emit=cubin|ptx");
#endif

  size_t len = 0;
  char *text = read_file(input, &len);
  if (!text) {
    fprintf(stderr, "tilec: cannot read %s: %s\n", input, strerror(errno));
    return 1;
  }
  o.defines = defines;
  o.ndefines = ndefines;
  o.diag_echo = stderr;
  o.print_stream = stderr;
#ifdef TILEC_CLI_AOT
  if (aot) {
    int rc = emit_aot(input, text, len, defines, ndefines, o.shape_class, gpu_arch, aot == 2, cache_dir, output);
    for (int i = 0; i < ndefines; i++) free((char *)defines[i].name);
    free(defines);
    free(text);
    return rc;
  }
#endif
  TilecResult *r = NULL;
  int rc = tilec_compile(input, text, len, &o, &r);
  if (rc == 0) {
    const char *out = tilec_result_output(r);
    size_t n = tilec_result_output_size(r);
    if (output) {
      if (!write_atomically(output, out, n)) {
        fprintf(stderr, "tilec: cannot write %s: %s\n", output, strerror(errno));
        rc = 1;
      }
    } else if (fwrite(out, 1, n, stdout) != n || fflush(stdout) != 0) {
      fprintf(stderr, "tilec: cannot write to stdout\n");
      rc = 1;
    }
  }
  tilec_result_destroy(r);
  for (int i = 0; i < ndefines; i++) free((char *)defines[i].name);
  free(defines);
  free(text);
  return rc;
}
