/* test_rt_nvrtc_lazy.c - libnvrtc is opened by the first compile, never by a
 * cache hit (ctest runtime_nvrtc_lazy; no GPU needed).
 *
 * One fresh process (this one, which has not opened libnvrtc: checked in
 * /proc/self/maps) and a cubin cache that a forked child fills, as an
 * earlier process would:
 *   - a hit through a lazy handle (RT_CUDA_NVRTC_LAZY, what
 *     tilert_compile_aot uses; a device context opens libnvrtc the same way)
 *     returns the child's bytes, runs no NVRTC, and leaves libnvrtc
 *     unopened: rt_cuda_nvrtc_opens() stays 0 and no libnvrtc is mapped;
 *   - a miss opens it (mapped now, one open) and builds;
 *   - the cache directory's NVRTC stamp (rt_gpu_nvrtc.c) is trusted only
 *     while it holds: another $LD_LIBRARY_PATH, another $TILEC_NVRTC_LIB, a
 *     library file with a new mtime and a garbled stamp each cost one open
 *     (and still hit, with the same key), after which the next fresh handle
 *     hits without opening again;
 *   - no libnvrtc at all ($TILEC_NVRTC_LIB naming none): the newest stamp's
 *     version still finds the cached cubin; a miss is NO_GPU naming NVRTC.
 * Prints "skipped" (and passes) where libnvrtc cannot be opened, as
 * runtime_gpu_ci does. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_internal.h"
#include "rt_test.h"

static const char src_a[] =
    "extern \"C\" __global__ void tilec_twice(float *x, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] *= 2.0f;\n"
    "}\n";
static const char src_b[] =
    "extern \"C\" __global__ void tilec_thrice(float *x, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] *= 3.0f;\n"
    "}\n";

/* Is any libnvrtc mapped into this process? (The loader's truth, not ours.) */
static bool nvrtc_mapped(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, "libnvrtc") != NULL;
  fclose(f);
  return found;
}

/* A CPU context on dir with a lazy NVRTC handle (nothing opened yet). */
static TilertContext *lazy_ctx(const char *dir) {
  TilertConfig cfg = {TILERT_DEVICE_CPU, dir, false, NULL};
  TilertContext *ctx = NULL;
  tilert_context_create(&cfg, &ctx);
  char why[256] = "";
  if (ctx) ctx->cu = rt_cuda_open(RT_CUDA_NVRTC_LAZY, 0, why, sizeof why);
  CHECK(ctx && ctx->cu, "no lazy handle: %s", why);
  CHECK(!ctx || !rt_cuda_nvrtc_loaded(ctx->cu), "a lazy handle opened libnvrtc");
  return ctx;
}

static void drop(TilertContext *ctx) {
  if (!ctx) return;
  rt_cuda_close(ctx->cu);
  ctx->cu = NULL;
  tilert_context_destroy(ctx);
}

/* Fetches src for sm_80 through a fresh lazy handle on dir; returns whether
 * it was a hit and how many libnvrtc opens it took. *bin is malloc'd. */
static bool fetch(const char *dir, const char *src, void **bin, size_t *size, unsigned *opens) {
  TilertContext *ctx = lazy_ctx(dir);
  bool hit = false;
  *bin = NULL;
  *size = 0;
  unsigned before = rt_cuda_nvrtc_opens();
  if (ctx && ctx->cu) {
    TilertStatus st = rt_gpu_cubin(ctx, "t.tile", src, strlen(src), "ir", "sm_80", false, bin,
                                   size, &hit, NULL);
    CHECK_STATUS(st, TILERT_OK, ctx);
    CHECK(hit == (ctx->nvrtc_runs == 0), "hit %d but %u NVRTC runs", hit, ctx->nvrtc_runs);
  }
  *opens = rt_cuda_nvrtc_opens() - before;
  drop(ctx);
  return hit;
}

/* The path of dir's newest NVRTC stamp file (malloc'd), NULL if none. */
static char *stamp_file(const char *dir) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "ls -t '%s' | grep '^nvrtc-.*\\.id$' | head -1", dir);
  FILE *p = popen(cmd, "r");
  char name[256] = "";
  if (p) {
    if (!fgets(name, sizeof name, p)) name[0] = '\0';
    pclose(p);
  }
  name[strcspn(name, "\n")] = '\0';
  if (!*name) return NULL;
  char *path = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(path, "%s/%s", dir, name);
  return path;
}

/* The child: an earlier process that built src_a into dir. 77: no libnvrtc. */
static int fill_cache(const char *dir) {
  TilertContext *ctx = lazy_ctx(dir);
  void *bin = NULL;
  size_t size = 0;
  bool hit = true;
  TilertStatus st = rt_gpu_cubin(ctx, "t.tile", src_a, strlen(src_a), "ir", "sm_80", false, &bin,
                                 &size, &hit, NULL);
  if (st == TILERT_NO_GPU) {
    printf("skipped: %s\n", tilert_last_error(ctx));
    return 77;
  }
  CHECK_STATUS(st, TILERT_OK, ctx);
  CHECK(!hit && size > 0 && rt_cuda_nvrtc_opens() == 1, "child: hit %d, %zu bytes, %u opens", hit,
        size, rt_cuda_nvrtc_opens());
  free(bin);
  drop(ctx);
  return rt_test_failures ? 1 : 0;
}

int main(void) {
  rt_test_init();
  CHECK(!nvrtc_mapped() && rt_cuda_nvrtc_opens() == 0, "libnvrtc is open before the test starts");
  char *dir = rt_test_mkdtemp("lazy");

  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) _exit(fill_cache(dir));
  int status = 0;
  waitpid(pid, &status, 0);
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  if (rc == 77) {
    free(dir);
    printf("test_rt_nvrtc_lazy: all passed (NVRTC part skipped)\n");
    return 0;
  }
  CHECK(rc == 0, "the child that fills the cache failed (%d)", rc);
  CHECK(rt_test_count(dir, ".cubin") == 1 && rt_test_count(dir, ".id") == 1,
        "the child left %d cubins, %d stamps", rt_test_count(dir, ".cubin"), rt_test_count(dir, ".id"));
  char *stamp = stamp_file(dir);
  const char *ld_path = getenv("LD_LIBRARY_PATH");
  char *saved_ld_path = ld_path ? strdup(ld_path) : NULL;

  /* A hit in this fresh process: no NVRTC, no libnvrtc. */
  void *want = NULL, *bin = NULL;
  size_t want_size = 0, size = 0;
  unsigned opens = 0;
  CHECK(fetch(dir, src_a, &want, &want_size, &opens), "the child's entry was not a hit");
  CHECK(opens == 0 && rt_cuda_nvrtc_opens() == 0, "a cache hit opened libnvrtc (%u)", opens);
  CHECK(!nvrtc_mapped(), "libnvrtc is mapped after a cache hit");

  /* A miss opens it. */
  CHECK(!fetch(dir, src_b, &bin, &size, &opens) && size > 0, "src_b was a hit");
  CHECK(opens == 1 && nvrtc_mapped(), "a miss: %u opens, mapped %d", opens, nvrtc_mapped());
  free(bin);
  CHECK(rt_test_count(dir, ".id") == 1, "%d stamps after a miss with the same NVRTC",
        rt_test_count(dir, ".id"));

  /* Another loader environment: its own stamp, one open, still a hit. */
  setenv("LD_LIBRARY_PATH", "/nonexistent-tilec-lazy-test", 1);
  CHECK(fetch(dir, src_a, &bin, &size, &opens) && opens == 1, "new LD_LIBRARY_PATH: %u opens",
        opens);
  CHECK(size == want_size && memcmp(bin, want, size) == 0, "new LD_LIBRARY_PATH: other bytes");
  free(bin);
  CHECK(rt_test_count(dir, ".id") == 2, "%d stamps", rt_test_count(dir, ".id"));
  CHECK(fetch(dir, src_a, &bin, &size, &opens) && opens == 0, "its stamp: %u opens", opens);
  free(bin);
  if (saved_ld_path) setenv("LD_LIBRARY_PATH", saved_ld_path, 1);
  else unsetenv("LD_LIBRARY_PATH");

  /* A garbled stamp (the child's): one open, rewritten, then trusted again. */
  FILE *f = stamp ? fopen(stamp, "w") : NULL;
  CHECK(f != NULL, "no stamp to garble in %s", dir);
  if (f) fputs("tilert-nvrtc 1\npath /nonexistent\nversion 13000\n", f), fclose(f);
  unsigned opens_b = 0;
  bool hit_a = fetch(dir, src_a, &bin, &size, &opens);
  free(bin);
  bool hit_b = fetch(dir, src_a, &bin, &size, &opens_b);
  free(bin);
  CHECK(hit_a && hit_b && opens == 1 && opens_b == 0, "garbled stamp: hits %d %d, opens %u %u",
        hit_a, hit_b, opens, opens_b);

  /* The library file changes (an upgrade in place): a copy of libnvrtc named
   * by $TILEC_NVRTC_LIB, its mtime moved. */
  TilertContext *probe = lazy_ctx(NULL);
  const char *real = probe && rt_cuda_nvrtc_load(probe->cu) ? rt_cuda_nvrtc_path(probe->cu) : "";
  char *lib_dir = rt_test_mkdtemp("lib"), copy[1024], cmd[3072];
  snprintf(copy, sizeof copy, "%s/libnvrtc.so", lib_dir);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", real, copy);
  CHECK(*real && system(cmd) == 0, "cannot copy libnvrtc '%s'", real);
  drop(probe);
  setenv("TILEC_NVRTC_LIB", copy, 1);
  CHECK(fetch(dir, src_a, &bin, &size, &opens) && opens == 1, "copied libnvrtc: %u opens", opens);
  free(bin);
  CHECK(fetch(dir, src_a, &bin, &size, &opens) && opens == 0, "copied libnvrtc, again: %u opens",
        opens);
  free(bin);
  struct stat st;
  CHECK(stat(copy, &st) == 0, "stat %s", copy);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  times[1].tv_sec -= 100;
  CHECK(utimensat(AT_FDCWD, copy, times, 0) == 0, "utimensat %s", copy);
  CHECK(fetch(dir, src_a, &bin, &size, &opens) && opens == 1, "library changed: %u opens", opens);
  CHECK(size == want_size && memcmp(bin, want, size) == 0, "library changed: other bytes");
  free(bin);
  CHECK(fetch(dir, src_a, &bin, &size, &opens) && opens == 0, "library changed, again: %u opens",
        opens);
  free(bin);
  unlink(copy);

  /* No libnvrtc at all (a deployment with a cache filled ahead of time):
   * the newest stamp's version still finds the cubins; a miss is NO_GPU
   * saying NVRTC is needed. */
  setenv("TILEC_NVRTC_LIB", "/nonexistent-tilec-lazy-test/libnvrtc.so", 1);
  CHECK(fetch(dir, src_a, &bin, &size, &opens) && opens == 0, "no libnvrtc: not a hit (%u opens)",
        opens);
  CHECK(size == want_size && bin && memcmp(bin, want, size) == 0, "no libnvrtc: other bytes");
  free(bin);
  TilertContext *none = lazy_ctx(dir);
  if (none && none->cu) {
    static const char src_c[] = "extern \"C\" __global__ void tilec_never_built(float *x) { x[0] = 4.0f; }\n";
    bool hit = true;
    CHECK_STATUS(rt_gpu_cubin(none, "c.tile", src_c, strlen(src_c), "ir", "sm_80", false, &bin, &size, &hit, NULL),
                 TILERT_NO_GPU, none);
    CHECK_CONTAINS(tilert_last_error(none), "c.tile: no cached cubin, and building one needs NVRTC");
    CHECK_CONTAINS(tilert_last_error(none), "/nonexistent-tilec-lazy-test/libnvrtc.so");
    CHECK(!bin && !hit && none->nvrtc_runs == 0, "no libnvrtc: a miss built something");
  }
  drop(none);
  unsetenv("TILEC_NVRTC_LIB");

  free(want);
  free(stamp);
  free(saved_ld_path);
  free(lib_dir);
  free(dir);
  if (rt_test_failures) fprintf(stderr, "test_rt_nvrtc_lazy: %d failure(s)\n", rt_test_failures);
  else printf("test_rt_nvrtc_lazy: all passed\n");
  return rt_test_failures != 0;
}
