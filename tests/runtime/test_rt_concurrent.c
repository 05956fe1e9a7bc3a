/* test_rt_concurrent.c - several processes compile the same kernel into one
 * empty cache directory at the same moment. Every one must succeed and
 * compute the right result, and the directory must end with exactly one
 * good entry (one .so and its .sum, no temporary files), which a later load
 * then hits without running the C compiler. */
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_test.h"

enum { PROCESSES = 6, N = 100 };

static const char tile_src[] =
    "kernel axpy(X: f32[n], Y: f32[n], alpha: f32)\n"
    "  const (block = 32)\n"
    "  grid (ceildiv(n, block)) threads (block) as (bx)\n"
    "{\n"
    "    x = alloc_fragment([block], f32);\n"
    "    copy(X[bx*block : (bx+1)*block], x);\n"
    "    for i in parallel(block) x[i] = x[i] * alpha + 1.0;\n"
    "    copy(x, Y[bx*block : (bx+1)*block]);\n"
    "}\n";

/* Loads and runs axpy in a fresh context on cache_dir; 0 when the result is
 * right. *from_cache tells how the module was obtained. */
static int load_and_run(const char *cache_dir, bool *from_cache) {
  TilertContext *ctx = NULL;
  TilertConfig cfg = {TILERT_DEVICE_CPU, cache_dir, false, NULL};
  if (tilert_context_create(&cfg, &ctx) != TILERT_OK) return 1;
  TilertModule *mod = NULL;
  TilertKernel *k = NULL;
  int rc = 0;
  if (tilert_module_load_string(ctx, "axpy.tile", tile_src, sizeof tile_src - 1, NULL, 0, &mod) != TILERT_OK ||
      tilert_module_get_kernel(mod, "axpy", &k) != TILERT_OK) {
    fprintf(stderr, "load failed: %s\n", tilert_last_error(ctx));
    rc = 2;
  } else {
    float x[N], y[N];
    int64_t shape[1] = {N};
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = NAN;
    DLTensor tx = {x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    DLTensor ty = {y, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    TilertArg args[3] = {tilert_arg_tensor(&tx), tilert_arg_tensor(&ty), tilert_arg_f32(2.0)};
    if (tilert_launch(k, args, 3, NULL) != TILERT_OK) {
      fprintf(stderr, "launch failed: %s\n", tilert_last_error(ctx));
      rc = 3;
    }
    for (int i = 0; i < N && rc == 0; i++)
      if (y[i] != 2.0f * (float)i + 1.0f) {
        fprintf(stderr, "y[%d] = %g, want %g\n", i, y[i], 2.0 * i + 1.0);
        rc = 4;
      }
    if (from_cache) *from_cache = tilert_module_from_cache(mod);
  }
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  return rc;
}

int main(void) {
  rt_test_init();
  char *dir = rt_test_mkdtemp("concurrent");
  pid_t pids[PROCESSES];
  for (int p = 0; p < PROCESSES; p++) {
    pids[p] = fork();
    if (pids[p] == 0) _exit(load_and_run(dir, NULL));
    CHECK(pids[p] > 0, "fork %d failed", p);
  }
  for (int p = 0; p < PROCESSES; p++) {
    int status = 0;
    if (pids[p] <= 0) continue;
    waitpid(pids[p], &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d: status %d", p, status);
  }
  CHECK(rt_test_count(dir, ".so") == 1, "%d .so entries in %s, want 1", rt_test_count(dir, ".so"), dir);
  CHECK(rt_test_count(dir, ".sum") == 1, "%d .sum entries in %s, want 1", rt_test_count(dir, ".sum"), dir);
  CHECK(rt_test_count(dir, "") == 2, "%d entries in %s, want 2 (temporary files left?)", rt_test_count(dir, ""),
        dir);
  /* The entry they left is good: a fresh load hits it (checksum verified,
   * no compiler run). */
  bool hit = false;
  CHECK(load_and_run(dir, &hit) == 0, "load after the race failed");
  CHECK(hit, "the load after the race did not come from the cache");
  printf("%d processes, one cache entry, cache hit afterwards: %s\n", PROCESSES,
         rt_test_failures ? "FAILED" : "ok");
  free(dir);
  return rt_test_failures != 0;
}
