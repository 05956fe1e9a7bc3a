/* test_rt_compile_log.c - the NVRTC log of a build through the public API
 * (tilert.h: tilert_module_compile_log, tilert_compile_aot_log).
 *
 *   test_rt_compile_log COMPILE_LOG.tile COMPILE_LOG.cu
 *
 * COMPILE_LOG.cu is compiled in place of the .tile's generated CUDA
 * ($TILEC_CUDA_OVERRIDE): its log holds an NVRTC warning, a ptxas
 * "Potential Performance Loss" and a ptxas info line (tests/aot/compile_log.cu).
 *   - no NVRTC: "" (never NULL) for a CPU module, loaded and from the cache,
 *     and for NULL handles; rt_module_add_log's header lines and log_to;
 *     the cache's <key>.log (rt_cache_publish_bytes, rt_cache_read_log):
 *     written beside the entry only when not empty, nothing left by a failed
 *     write, NULL when missing, empty or not a file, garbage read as it
 *     stands up to a NUL, a long file cut at RT_CACHE_LOG_MAX;
 *   - NVRTC, no GPU: tilert_compile_aot_log is byte for byte the log of a
 *     direct rt_cuda_compile of the same text, name and options, and so is
 *     the <key>.log the build stored; the cache hit that follows gives that
 *     stored log, "" once the .log is gone, garbage .log text as it stands;
 *     "" for a call refused before NVRTC and for a clean kernel (which
 *     stores no .log); PTX has the NVRTC warning and no ptxas; on
 *     NVRTC_FAILED the log is the one the last error quotes;
 *   - on an sm_90 GPU: a module's log is that same text, built and again
 *     when the next load comes from the cache.
 * (docs/cuda-runtime.md, "The compile log".)
 * Exits 77 when libnvrtc cannot be opened, after the checks that need none. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_internal.h"
#include "rt_test.h"

static char *read_text(const char *path, size_t *len) {
  void *data = NULL;
  size_t n = 0;
  if (rt_read_file(path, &data, &n) != 0) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(2);
  }
  char *text = realloc(data, n + 1);
  if (!text) exit(2);
  text[n] = '\0';
  if (len) *len = n;
  return text;
}

static void write_text(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(2);
  }
}

static void test_cpu_module(void) {
  char *dir = rt_test_mkdtemp("cpu-cache");
  TilertConfig cfg = {TILERT_DEVICE_CPU, dir, false, NULL};
  for (int round = 0; round < 2; round++) { /* a build, then a cache hit */
    TilertContext *ctx = NULL;
    TilertModule *mod = NULL;
    CHECK_STATUS(tilert_context_create(&cfg, &ctx), TILERT_OK, ctx);
    CHECK_STATUS(rt_test_load_tile(ctx, &mod), TILERT_OK, ctx);
    if (mod) {
      CHECK(tilert_module_from_cache(mod) == (round == 1), "round %d: from_cache %d", round,
            tilert_module_from_cache(mod));
      const char *log = tilert_module_compile_log(mod);
      CHECK(log && strcmp(log, "") == 0, "CPU module, round %d: log %s", round, log ? log : "NULL");
      CHECK(strcmp(tilert_module_warnings(mod), "") == 0, "CPU module, round %d: warnings", round);
    }
    CHECK(strcmp(tilert_compile_aot_log(ctx), "") == 0, "a fresh context has an AOT log");
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
  }
  CHECK(strcmp(tilert_module_compile_log(NULL), "") == 0, "NULL module");
  CHECK(strcmp(tilert_module_warnings(NULL), "") == 0, "NULL module: warnings");
  CHECK(strcmp(tilert_compile_aot_log(NULL), "") == 0, "NULL context");
  free(dir);
}

/* The module's log and the builds made later (tilert.c, rt_gpu.c). */
static void test_add_log(void) {
  TilertContext *ctx = NULL;
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, NULL};
  CHECK_STATUS(tilert_context_create(&cfg, &ctx), TILERT_OK, ctx);
  TilertModule *mod = rt_module_new(ctx, NULL, 0), *build = rt_module_new(ctx, NULL, 0);
  if (!mod || !build) exit(2);
  rt_module_add_log(mod, "", "the build for shape class %u", 1u);
  rt_module_add_log(mod, NULL, "the cp.async build");
  CHECK(mod->compile_log == NULL, "an empty log added text: '%s'", mod->compile_log);
  rt_module_add_log(mod, "w1\n", "the build for shape class %u", 1u);
  CHECK(strcmp(mod->compile_log, "--- the build for shape class 1 ---\nw1\n") == 0, "got '%s'", mod->compile_log);
  /* A log without a final newline: the next header still starts a line. */
  free(mod->compile_log);
  mod->compile_log = strdup("load");
  build->log_to = mod;
  rt_module_add_log(build, "w2", "the cp.async build of shape class %u", 2u);
  CHECK(build->compile_log == NULL, "log_to: the build kept '%s'", build->compile_log);
  CHECK(strcmp(mod->compile_log, "load\n--- the cp.async build of shape class 2 ---\nw2") == 0, "got '%s'",
        mod->compile_log);
  CHECK(strcmp(tilert_module_compile_log(mod), mod->compile_log) == 0, "the public call returns another text");
  rt_module_free(build);
  rt_module_free(mod);
  tilert_context_destroy(ctx);
}

/* The path of the one <key>.log in dir (malloc'd), or NULL. */
static char *cache_log_path(const char *dir) {
  DIR *d = opendir(dir);
  char *found = NULL;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".log") == 0 && !found) {
      size_t n = strlen(dir) + l + 2;
      found = malloc(n);
      if (found) snprintf(found, n, "%s/%s", dir, e->d_name);
    }
  }
  if (d) closedir(d);
  return found;
}

/* <key>.log through rt_cache.c's own functions: no NVRTC needed. */
static void test_cache_log_files(void) {
  char *dir = rt_test_mkdtemp("log-unit"), path[1200];
  static const char bin[] = "cubin bytes";
  CHECK(rt_cache_publish_bytes(dir, "k1", "cubin", bin, sizeof bin, 0644, "w1\n") == 0, "publish with a log");
  snprintf(path, sizeof path, "%s/k1.log", dir);
  char *got = rt_cache_read_log(dir, "k1");
  CHECK(got && strcmp(got, "w1\n") == 0, "k1.log reads back '%s'", got ? got : "NULL");
  free(got);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644, "k1.log's mode %o", (unsigned)st.st_mode);
  /* An empty log writes no file, and leaves an older one alone (same key,
   * same compile: rt_cache.c). */
  CHECK(rt_cache_publish_bytes(dir, "k2", "cubin", bin, sizeof bin, 0644, "") == 0, "publish, empty log");
  CHECK(rt_cache_publish_bytes(dir, "k3", "cubin", bin, sizeof bin, 0644, NULL) == 0, "publish, no log");
  CHECK(rt_test_count(dir, ".log") == 1, "%d .log files for one non-empty log", rt_test_count(dir, ".log"));
  CHECK(rt_cache_read_log(dir, "k2") == NULL && rt_cache_read_log(dir, "k3") == NULL, "a log from no file");
  CHECK(rt_cache_publish_bytes(dir, "k1", "cubin", bin, sizeof bin, 0644, NULL) == 0, "republish, no log");
  got = rt_cache_read_log(dir, "k1");
  CHECK(got && strcmp(got, "w1\n") == 0, "a republish without a log dropped k1.log: '%s'", got ? got : "NULL");
  free(got);
  /* A full disk: the log's write fails like the others and leaves nothing. */
  int before = rt_test_count(dir, "");
  rt_cache_fault_errno = ENOSPC;
  CHECK(rt_cache_publish_bytes(dir, "k4", "cubin", bin, sizeof bin, 0644, "w4\n") == ENOSPC, "ENOSPC not reported");
  rt_cache_fault_errno = 0;
  CHECK(rt_test_count(dir, "") == before, "a failed publish left %d files", rt_test_count(dir, "") - before);

  /* What a later reader may find instead of a log it wrote. */
  write_text(path, "", 0);
  CHECK(rt_cache_read_log(dir, "k1") == NULL, "an empty .log is not NULL");
  write_text(path, "garbage\0\xff\xfe", 11);
  got = rt_cache_read_log(dir, "k1");
  CHECK(got && strcmp(got, "garbage") == 0, "garbage reads '%s'", got ? got : "NULL");
  free(got);
  unlink(path);
  CHECK(mkdir(path, 0755) == 0 && rt_cache_read_log(dir, "k1") == NULL, "a directory named k1.log reads as a log");
  rmdir(path);
  size_t big = RT_CACHE_LOG_MAX + 4096;
  char *text = malloc(big);
  if (!text) exit(2);
  memset(text, 'x', big);
  write_text(path, text, big);
  got = rt_cache_read_log(dir, "k1");
  static const char cut[] = "\n--- tilert: the cached log is cut here, after its first 1 MiB ---\n";
  CHECK(got && strlen(got) == RT_CACHE_LOG_MAX + strlen(cut) && strcmp(got + RT_CACHE_LOG_MAX, cut) == 0,
        "a %zu-byte .log read back as %zu bytes", big, got ? strlen(got) : 0);
  free(got);
  free(text);
  free(dir);
}

/* NVRTC's own log for `cuda` built as the runtime builds `tile_path`. */
static char *direct_log(RtCuda *cu, const char *tile_path, const char *cuda) {
  char name[256];
  rt_gpu_source_name(tile_path, name, sizeof name);
  void *bin = NULL;
  size_t n = 0;
  bool ok = rt_cuda_compile(cu, cuda, name, "sm_90a", rt_gpu_nvrtc_opts, rt_gpu_nvrtc_nopts, &bin, &n);
  CHECK(ok, "direct compile: %s", rt_cuda_last_error(cu));
  free(bin);
  return strdup(rt_cuda_compile_log(cu));
}

static void aot(TilertContext *ctx, const char *name, const char *text, TilertBinaryKind kind, const char *arch,
                TilertStatus want, bool want_hit) {
  void *bin = NULL;
  size_t n = 0;
  bool hit = !want_hit;
  CHECK_STATUS(tilert_compile_aot(ctx, name, text, strlen(text), NULL, 0, arch, kind, &bin, &n, &hit), want, ctx);
  if (want == TILERT_OK) CHECK(hit == want_hit, "%s for %s: from_cache %d", name, arch, hit);
  free(bin);
}

/* Whether device 0 is a GPU of compute capability 9.x; a note naming what
 * goes unchecked otherwise. */
static bool have_sm90_gpu(const char *unchecked) {
  RtCuda *probe = rt_cuda_open(RT_CUDA_DEVICE, 0, NULL, 0);
  int arch = probe ? rt_cuda_arch(probe) : 0;
  rt_cuda_close(probe);
  if (arch / 10 != 9) printf("note: no sm_90 GPU: %s not checked\n", unchecked);
  return arch / 10 == 9;
}

/* On a GPU of compute capability 9.x: loads through the override give the
 * same log, built and then from the cache. */
static void test_gpu_module(const char *tile_path, const char *tile, size_t len, const char *want) {
  if (!have_sm90_gpu("the module log on a GPU is")) return;
  char *dir = rt_test_mkdtemp("gpu-cache");
  TilertConfig cfg = {TILERT_DEVICE_CUDA, dir, false, NULL};
  for (int round = 0; round < 2; round++) {
    TilertContext *ctx = NULL;
    TilertModule *mod = NULL;
    CHECK_STATUS(tilert_context_create(&cfg, &ctx), TILERT_OK, ctx);
    CHECK_STATUS(tilert_module_load_string(ctx, tile_path, tile, len, NULL, 0, &mod), TILERT_OK, ctx);
    if (mod) {
      CHECK(tilert_module_from_cache(mod) == (round == 1), "GPU round %d: from_cache", round);
      const char *log = tilert_module_compile_log(mod);
      CHECK(strcmp(log, want) == 0, "GPU round %d: log '%s'", round, log);
    }
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
  }
  printf("ok: a GPU module's log, built and from the cache\n");
  free(dir);
}

/* On a GPU of compute capability 9.x: tilec's own warnings of a module
 * (tilert_module_warnings), here a gemm with 64 accumulator rows per warp
 * that runs as mma.sync; a module without any has "". */
static void test_gpu_warnings(void) {
  if (!have_sm90_gpu("tilec's warnings of a GPU module are")) return;
  static const char text[] =
      "kernel w(A: f16[M, K], B: f16[N, K], C: f32[M, N])\n"
      "  grid (1) threads (64) as (bx)\n"
      "{\n"
      "    A_s = alloc_shared([128, 64], f16);\n"
      "    B_s = alloc_shared([64, 64], f16);\n"
      "    acc = alloc_fragment([128, 64], f32);\n"
      "    copy(A[0 : 128, 0 : 64], A_s);\n"
      "    copy(B[0 : 64, 0 : 64], B_s);\n"
      "    clear(acc);\n"
      "    gemm(A_s, B_s, acc, transpose_B = true);\n"
      "    copy(acc, C[0 : 128, 0 : 64]);\n"
      "}\n";
  char *dir = rt_test_mkdtemp("gpu-warnings");
  TilertConfig cfg = {TILERT_DEVICE_CUDA, dir, false, NULL};
  TilertContext *ctx = NULL;
  TilertModule *mod = NULL;
  CHECK_STATUS(tilert_context_create(&cfg, &ctx), TILERT_OK, ctx);
  CHECK_STATUS(tilert_module_load_string(ctx, "w.tile", text, sizeof text - 1, NULL, 0, &mod), TILERT_OK, ctx);
  if (mod)
    CHECK_CONTAINS(tilert_module_warnings(mod), "w.tile:10:5: warning: gemm: runs as mma.sync, not wgmma: its 128 "
                                                "accumulator rows over 2 warps are 64 per warp");
  tilert_module_destroy(mod);
  mod = NULL;
  static const char clean[] = "kernel c(X: f32[N])\n  grid (1) threads (32) as (bx)\n{\n    X[0] = 1.0;\n}\n";
  CHECK_STATUS(tilert_module_load_string(ctx, "c.tile", clean, sizeof clean - 1, NULL, 0, &mod), TILERT_OK, ctx);
  if (mod) CHECK(strcmp(tilert_module_warnings(mod), "") == 0, "clean module: '%s'", tilert_module_warnings(mod));
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  printf("ok: tilec's warnings of a GPU module\n");
  free(dir);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s COMPILE_LOG.tile COMPILE_LOG.cu\n", argv[0]);
    return 2;
  }
  const char *tile_path = argv[1], *fixture_path = argv[2];
  rt_test_init();
  /* ptxas's lines, every time (tilert.h: the driver's compute cache). */
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  test_cpu_module();
  test_add_log();
  test_cache_log_files();
  if (rt_test_failures) return 1;

  RtCuda *cu = rt_cuda_open(RT_CUDA_NVRTC_ONLY, 0, NULL, 0);
  if (!cu) {
    printf("SKIP: libnvrtc cannot be opened; the checks without it passed\n");
    return 77;
  }
  size_t tile_len = 0;
  char *tile = read_text(tile_path, &tile_len), *fixture = read_text(fixture_path, NULL);
  /* The override: the .tile's generated CUDA (as an AOT build for sm_90a
   * makes it) -> the fixture. */
  TilecOptions opt;
  tilec_options_init(&opt);
  opt.emit = TILEC_EMIT_CUDA;
  opt.target = TILEC_TARGET_SM90A;
  TilecResult *res = NULL;
  if (tilec_compile(tile_path, tile, tile_len, &opt, &res) != 0) {
    fprintf(stderr, "%s: %s\n", tile_path, tilec_result_diagnostics(res));
    return 1;
  }
  char *dir = rt_test_mkdtemp("aot"), gen[1100], broken[1100], spec[2300];
  snprintf(gen, sizeof gen, "%s/generated.cu", dir);
  snprintf(broken, sizeof broken, "%s/broken.cu", dir);
  write_text(gen, tilec_result_output(res), tilec_result_output_size(res));
  tilec_result_destroy(res);
  snprintf(spec, sizeof spec, "%s:%s", gen, fixture_path);
  setenv("TILEC_CUDA_OVERRIDE", spec, 1);

  char *want = direct_log(cu, tile_path, fixture);
  CHECK_CONTAINS(want, "warning #177-D: variable \"unused_probe\"");
  CHECK_CONTAINS(want, "Potential Performance Loss: wgmma.mma_async instructions are serialized");
  CHECK_CONTAINS(want, "(C7519)");

  TilertConfig cfg = {TILERT_DEVICE_CPU, dir, false, NULL};
  TilertContext *ctx = NULL;
  CHECK_STATUS(tilert_context_create(&cfg, &ctx), TILERT_OK, ctx);
  rt_test_stderr_begin(); /* the override's note */
  aot(ctx, tile_path, tile, TILERT_BINARY_CUBIN, "sm_90a", TILERT_OK, false);
  CHECK(strcmp(tilert_compile_aot_log(ctx), want) == 0, "AOT log:\n%s\nwant:\n%s", tilert_compile_aot_log(ctx), want);
  /* The entry's <key>.log holds that same text ... */
  char *log_path = cache_log_path(dir);
  char *stored = log_path ? read_text(log_path, NULL) : NULL;
  CHECK(stored && strcmp(stored, want) == 0, "<key>.log: '%s'", stored ? stored : "(no file)");
  free(stored);
  /* ... and the hit gives it back: the log of the build that made the cubin. */
  aot(ctx, tile_path, tile, TILERT_BINARY_CUBIN, "sm_90a", TILERT_OK, true);
  CHECK(strcmp(tilert_compile_aot_log(ctx), want) == 0, "cache hit: '%s'", tilert_compile_aot_log(ctx));
  /* Garbage in the .log is read as it stands; no .log (a cache written
   * before logs were kept) is "", still a hit. */
  if (log_path) write_text(log_path, "junk\0junk", 9);
  aot(ctx, tile_path, tile, TILERT_BINARY_CUBIN, "sm_90a", TILERT_OK, true);
  CHECK(strcmp(tilert_compile_aot_log(ctx), "junk") == 0, "garbage .log: '%s'", tilert_compile_aot_log(ctx));
  if (log_path) unlink(log_path);
  aot(ctx, tile_path, tile, TILERT_BINARY_CUBIN, "sm_90a", TILERT_OK, true);
  CHECK(strcmp(tilert_compile_aot_log(ctx), "") == 0, "hit without a .log: '%s'", tilert_compile_aot_log(ctx));
  free(log_path);

  aot(ctx, tile_path, tile, TILERT_BINARY_PTX, "sm_90a", TILERT_OK, false);
  const char *ptx_log = tilert_compile_aot_log(ctx);
  CHECK_CONTAINS(ptx_log, "compile_log.cu(19): warning #177-D: variable \"unused_probe\"");
  CHECK(strstr(ptx_log, "ptxas") == NULL, "PTX ran ptxas? '%s'", ptx_log);
  aot(ctx, tile_path, tile, TILERT_BINARY_CUBIN, "sm_70", TILERT_INVALID_ARGUMENT, false);
  CHECK(strcmp(tilert_compile_aot_log(ctx), "") == 0, "refused call: '%s'", tilert_compile_aot_log(ctx));

  /* NVRTC_FAILED: the log is the one the error quotes. */
  const char *bad = "extern \"C\" __global__ void tilec_probe() { int x = ; }\n";
  write_text(broken, bad, strlen(bad));
  snprintf(spec, sizeof spec, "%s:%s", gen, broken);
  setenv("TILEC_CUDA_OVERRIDE", spec, 1);
  aot(ctx, tile_path, tile, TILERT_BINARY_CUBIN, "sm_90a", TILERT_NVRTC_FAILED, false);
  CHECK_CONTAINS(tilert_compile_aot_log(ctx), "compile_log.cu(1): error: expected an expression");
  CHECK_CONTAINS(tilert_last_error(ctx), tilert_compile_aot_log(ctx));
  free(rt_test_stderr_end());

  /* A clean kernel: NVRTC says nothing. */
  unsetenv("TILEC_CUDA_OVERRIDE");
  aot(ctx, "scale.tile", rt_test_tile_src, TILERT_BINARY_CUBIN, "sm_80", TILERT_OK, false);
  CHECK(strcmp(tilert_compile_aot_log(ctx), "") == 0, "clean kernel: '%s'", tilert_compile_aot_log(ctx));
  CHECK(rt_test_count(dir, ".log") == 0 && rt_test_count(dir, ".cubin") == 2,
        "a clean kernel: %d .log files, %d cubins", rt_test_count(dir, ".log"), rt_test_count(dir, ".cubin"));
  tilert_context_destroy(ctx);
  printf("ok: the AOT log is NVRTC's, verbatim, and the cache's <key>.log gives it back on a hit; \"\" for a hit "
         "without a .log, a refused call, a clean kernel\n");

  snprintf(spec, sizeof spec, "%s:%s", gen, fixture_path);
  setenv("TILEC_CUDA_OVERRIDE", spec, 1);
  rt_test_stderr_begin();
  test_gpu_module(tile_path, tile, tile_len, want);
  test_gpu_warnings();
  free(rt_test_stderr_end());

  free(want);
  free(dir);
  free(tile);
  free(fixture);
  rt_cuda_close(cu);
  return rt_test_failures != 0;
}
