/* test_rt_gpu.c - the runtime on a real GPU (ctest label gpu). Exits 77
 * (skipped) with the reason when TILERT_DEVICE_CUDA cannot be opened.
 *
 * Through the public API (tilert.h), device memory from its helpers:
 *   - scale_add on n = 100 (and n = 1, 64, 65, 1000), checked element by
 *     element against a reference computed here; n = 0 is OK and launches
 *     nothing;
 *   - cache miss then hit in a fresh context: from_cache, no NVRTC run
 *     (the context's counter), and the hit's load time printed;
 *   - scale2d (two dynamic symbols, 2-D grid), scale_big (64 KB of dynamic
 *     shared memory), mixed (f16 tensor and f16 / i32 / f64 scalars);
 *   - a host tensor to a GPU kernel, a tensor on CUDA:1, a wrong dtype,
 *     rank, shape (a symbol two tensors disagree on), argument count, NULL
 *     data, non-compact strides: LAUNCH_MISMATCH naming the argument,
 *     nothing launched (the poisoned output stays NaN);
 *   - device memory: an impossible allocation is OUT_OF_MEMORY;
 *   - shape classes with the same code: one NVRTC run for all of them,
 *     each launch's result right;
 *   - the cubin cache: a tampered and a truncated <key>.cubin are rebuilt
 *     (NVRTC runs again, results right); a full cache directory (injected
 *     ENOSPC) and a real read-only / full tmpfs (a private mount namespace
 *     in a forked child, before this process opens CUDA; skipped where none
 *     can be made): the load succeeds, results right, exactly one warning
 *     naming the directory, nothing left in it;
 *   - a kernel that faults (a wild device pointer) comes back as CUDA_ERROR
 *     naming the kernel, without aborting, and so does the next launch on
 *     the poisoned context (last: it poisons the context).
 * Every failure prints what was expected and what came back. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_gpu_kernels.h"
#include "rt_internal.h"
#include "rt_test.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static TilertContext *gpu_ctx(const char *cache_dir, bool disable) {
  TilertConfig cfg = {TILERT_DEVICE_CUDA, cache_dir, disable, NULL};
  TilertContext *ctx = NULL;
  TilertStatus st = tilert_context_create(&cfg, &ctx);
  CHECK_STATUS(st, TILERT_OK, ctx);
  if (st != TILERT_OK) {
    tilert_context_destroy(ctx);
    return NULL;
  }
  return ctx;
}

static DLTensor tensor(void *data, DLDeviceType dev, int ndim, int64_t *shape, uint8_t code,
                       uint8_t bits) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = dev;
  t.ndim = ndim;
  t.shape = shape;
  t.dtype.code = code, t.dtype.bits = bits, t.dtype.lanes = 1;
  return t;
}

static float a_val(int i) { return 0.25f * (float)(i % 37) - 3.0f; }
static float b_val(int i) { return 1.5f - 0.125f * (float)(i % 11); }

static bool close_to(double got, double want) {
  return fabs(got - want) <= 1e-5 * (1.0 + fabs(want));
}

/* Device buffer filled from host (or poisoned with 0xff bytes = NaN). */
static void *dev_upload(TilertContext *ctx, const void *host, size_t bytes) {
  void *d = NULL;
  CHECK_STATUS(tilert_device_alloc(ctx, bytes, &d), TILERT_OK, ctx);
  if (!d) return NULL;
  if (host) {
    CHECK_STATUS(tilert_copy_to_device(ctx, d, host, bytes), TILERT_OK, ctx);
  } else {
    unsigned char *nan = malloc(bytes);
    memset(nan, 0xff, bytes);
    CHECK_STATUS(tilert_copy_to_device(ctx, d, nan, bytes), TILERT_OK, ctx);
    free(nan);
  }
  return d;
}

/* C = A * alpha + B on the GPU for n elements; returns the number wrong. */
static int run_scale_add(TilertContext *ctx, TilertKernel *k, int n, float alpha) {
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
  float *A = malloc(bytes), *B = malloc(bytes), *C = malloc(bytes);
  for (int i = 0; i < n; i++) A[i] = a_val(i), B[i] = b_val(i);
  void *dA = dev_upload(ctx, A, bytes), *dB = dev_upload(ctx, B, bytes),
       *dC = dev_upload(ctx, NULL, bytes);
  int64_t shape = n;
  DLTensor ta = tensor(dA, kDLCUDA, 1, &shape, kDLFloat, 32);
  DLTensor tb = tensor(dB, kDLCUDA, 1, &shape, kDLFloat, 32);
  DLTensor tc = tensor(dC, kDLCUDA, 1, &shape, kDLFloat, 32);
  TilertArg args[] = {tilert_arg_tensor(&ta), tilert_arg_tensor(&tb), tilert_arg_tensor(&tc),
                      tilert_arg_f32(alpha)};
  TilertStatus st = tilert_launch(k, args, 4, NULL);
  CHECK_STATUS(st, TILERT_OK, ctx);
  int bad = 0;
  if (st == TILERT_OK && n > 0) {
    CHECK_STATUS(tilert_copy_to_host(ctx, C, dC, bytes), TILERT_OK, ctx);
    for (int i = 0; i < n; i++) {
      double want = (double)a_val(i) * alpha + b_val(i);
      if (!close_to(C[i], want) && bad++ < 3)
        CHECK(false, "scale_add n=%d: C[%d] = %.9g, expected %.9g", n, i, C[i], want);
    }
  }
  tilert_device_free(ctx, dA), tilert_device_free(ctx, dB), tilert_device_free(ctx, dC);
  free(A), free(B), free(C);
  return bad;
}

static TilertModule *load(TilertContext *ctx, const char *name, const char *src, double *ms) {
  TilertModule *mod = NULL;
  double t0 = now_ms();
  TilertStatus st = tilert_module_load_string(ctx, name, src, strlen(src), NULL, 0, &mod);
  if (ms) *ms = now_ms() - t0;
  CHECK_STATUS(st, TILERT_OK, ctx);
  return mod;
}

static TilertKernel *kernel(TilertModule *mod, const char *name) {
  TilertKernel *k = NULL;
  if (mod) CHECK_STATUS(tilert_module_get_kernel(mod, name, &k), TILERT_OK, mod->ctx);
  return k;
}

static void test_scale_add_and_cache(void) {
  char *dir = rt_test_mkdtemp("gpu-cache");
  TilertContext *ctx = gpu_ctx(dir, false);
  if (!ctx) return;
  printf("%s\n", tilert_context_device_note(ctx));
  double miss_ms = 0, hit_ms = 0;
  TilertModule *mod = load(ctx, "gpu.tile", rt_gpu_tile_src, &miss_ms);
  CHECK(mod && !tilert_module_from_cache(mod), "first load came from the cache");
  CHECK(ctx->nvrtc_runs == 1, "first load ran NVRTC %u times", ctx->nvrtc_runs);
  /* The entry (.cubin, .sum) and the NVRTC version record (.id, rt_gpu_nvrtc.c). */
  CHECK(rt_test_count(dir, ".cubin") == 1 && rt_test_count(dir, ".sum") == 1 &&
            rt_test_count(dir, ".id") == 1 && rt_test_count(dir, "") == 3,
        "cache dir holds %d entries, expected one .cubin, one .sum and one .id", rt_test_count(dir, ""));
  TilertKernel *k = kernel(mod, "scale_add");
  if (k) {
    CHECK(run_scale_add(ctx, k, 100, 2.5f) == 0, "scale_add n=100 (first load)");
    int sizes[] = {1, 64, 65, 1000};
    for (int i = 0; i < 4; i++)
      CHECK(run_scale_add(ctx, k, sizes[i], -0.75f) == 0, "n=%d", sizes[i]);
    CHECK(run_scale_add(ctx, k, 0, 1.0f) == 0, "n=0");
  }
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);

  /* A fresh context (a fresh process): the cubin comes from the cache. */
  ctx = gpu_ctx(dir, false);
  if (!ctx) return;
  mod = load(ctx, "gpu.tile", rt_gpu_tile_src, &hit_ms);
  CHECK(mod && tilert_module_from_cache(mod), "second load missed the cache");
  CHECK(ctx->nvrtc_runs == 0, "a cache hit ran NVRTC %u times", ctx->nvrtc_runs);
  printf("load gpu.tile: miss %.1f ms (tilec + NVRTC + load), hit %.1f ms (tilec + cache + load)\n",
         miss_ms, hit_ms);
  CHECK(hit_ms < miss_ms, "the hit (%.1f ms) was not faster than the miss (%.1f ms)", hit_ms,
        miss_ms);
  k = kernel(mod, "scale_add");
  if (k) CHECK(run_scale_add(ctx, k, 100, 2.5f) == 0, "scale_add n=100 (cached cubin)");
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  free(dir);
}

/* Flips the byte in the middle of the file. */
static void flip_byte(const char *path) {
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL, "cannot open %s", path);
  if (!f) return;
  fseek(f, 0, SEEK_END);
  long at = ftell(f) / 2;
  fseek(f, at, SEEK_SET);
  int c = fgetc(f);
  fseek(f, at, SEEK_SET);
  fputc(c ^ 0x5a, f);
  fclose(f);
}

/* The path of the one <key>.cubin in dir (static buffer). */
static const char *cubin_path(const char *dir) {
  static char path[1200];
  path[0] = '\0';
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "ls %s/*.cubin 2>/dev/null", dir);
  FILE *p = popen(cmd, "r");
  if (p) {
    if (!fgets(path, sizeof path, p)) path[0] = '\0';
    pclose(p);
  }
  path[strcspn(path, "\n")] = '\0';
  return path;
}

/* A tampered, then a truncated cubin entry: each load in a fresh context
 * misses, runs NVRTC once, and the kernel computes the right thing. */
static void test_tampered_cubin(void) {
  char *dir = rt_test_mkdtemp("gpu-tamper");
  TilertContext *ctx = gpu_ctx(dir, false);
  if (!ctx) return;
  TilertModule *mod = load(ctx, "gpu.tile", rt_gpu_tile_src, NULL);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  const char *cub = cubin_path(dir);
  CHECK(cub[0], "no cubin in %s", dir);
  for (int round = 0; round < 3 && cub[0]; round++) {
    if (round == 0) flip_byte(cub);
    if (round == 1) CHECK(truncate(cub, 1000) == 0, "truncate %s", cub);
    ctx = gpu_ctx(dir, false);
    if (!ctx) break;
    mod = load(ctx, "gpu.tile", rt_gpu_tile_src, NULL);
    const char *what = round == 0 ? "a tampered cubin" : round == 1 ? "a truncated cubin" : "the rebuilt entry";
    if (round < 2)
      CHECK(mod && !tilert_module_from_cache(mod) && ctx->nvrtc_runs == 1,
            "%s was trusted (from_cache %d, %u NVRTC runs)", what, tilert_module_from_cache(mod),
            ctx->nvrtc_runs);
    else
      CHECK(mod && tilert_module_from_cache(mod) && ctx->nvrtc_runs == 0, "%s missed", what);
    TilertKernel *k = kernel(mod, "scale_add");
    if (k) CHECK(run_scale_add(ctx, k, 100, 2.5f) == 0, "scale_add after %s", what);
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
  }
  CHECK(rt_test_count(dir, "") == 3, "cache dir holds %d entries, expected 3 (.cubin, .sum, .id)",
        rt_test_count(dir, ""));
  free(dir);
}

/* Loads gpu.tile twice in one CUDA context on a cache dir that cannot be
 * written; each time scale_add must compute the right thing. Exactly one
 * warning names dir; dir's entries are unchanged. */
static void unwritable_gpu_dir(const char *dir, const char *what) {
  int before = rt_test_count(dir, "");
  rt_test_stderr_begin();
  TilertContext *ctx = gpu_ctx(dir, false);
  for (int round = 0; ctx && round < 2; round++) {
    TilertModule *mod = load(ctx, "gpu.tile", rt_gpu_tile_src, NULL);
    CHECK(mod && !tilert_module_from_cache(mod), "%s: from_cache", what);
    TilertKernel *k = kernel(mod, "scale_add");
    if (k) CHECK(run_scale_add(ctx, k, 100, 2.5f) == 0, "scale_add with %s", what);
    tilert_module_destroy(mod);
  }
  tilert_context_destroy(ctx);
  char *text = rt_test_stderr_end();
  rt_test_check_one_cache_warning(text, dir, what);
  CHECK(rt_test_count(dir, "") == before && rt_test_count(dir, ".cubin") == 0 &&
            rt_test_count(dir, ".sum") == 0,
        "%s: the cache dir had %d entries, now %d", what, before, rt_test_count(dir, ""));
  free(text);
}

static void test_full_cache_injected(void) {
  char *dir = rt_test_mkdtemp("gpu-full");
  rt_cache_fault_errno = ENOSPC;
  unwritable_gpu_dir(dir, "an injected ENOSPC");
  rt_cache_fault_errno = 0;
  free(dir);
}

/* Forked before this process touches CUDA: each child mounts a private
 * read-only or full tmpfs, then opens the GPU itself. Returns false when
 * a child failed. */
static bool test_real_fs_cache(void) {
  const char *const opts[] = {"ro", "size=64k"};
  bool ok = true;
  for (int c = 0; c < 2; c++) {
    char *dir = rt_test_mkdtemp("gpu-fs");
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      int err = rt_test_private_tmpfs(dir, opts[c]);
      if (err) {
        printf("skipped: the %s tmpfs cache (%s)\n", c ? "full" : "read-only", strerror(err));
        fflush(stdout);
        _exit(77);
      }
      TilertConfig cfg = {TILERT_DEVICE_CUDA, NULL, true, NULL};
      TilertContext *probe = NULL;
      if (tilert_context_create(&cfg, &probe) != TILERT_OK) {
        printf("skipped: the %s tmpfs cache: %s\n", c ? "full" : "read-only",
               tilert_last_error(probe));
        fflush(stdout);
        _exit(77);
      }
      tilert_context_destroy(probe);
      if (c == 1) CHECK(rt_test_fill_fs(dir, 0) > 0, "cannot fill %s", dir);
      unwritable_gpu_dir(dir, c ? "a full tmpfs" : "a read-only tmpfs");
      fflush(stdout), fflush(stderr);
      _exit(rt_test_failures != 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (rc != 0 && rc != 77) ok = false;
    printf("%s tmpfs cache: %s\n", c ? "full" : "read-only",
           rc == 0 ? "ok" : rc == 77 ? "skipped" : "FAILED");
    free(dir);
  }
  return ok;
}

static void test_other_kernels(void) {
  TilertContext *ctx = gpu_ctx(NULL, true);
  if (!ctx) return;
  TilertModule *mod = load(ctx, "gpu.tile", rt_gpu_tile_src, NULL);

  /* scale2d: m = 70, k = 45 (partial tiles on both axes), grid (3, 3). */
  TilertKernel *k = kernel(mod, "scale2d");
  if (k) {
    enum { M = 70, K = 45 };
    float *X = malloc(M * K * sizeof(float)), *Y = malloc(M * K * sizeof(float));
    for (int i = 0; i < M * K; i++) X[i] = a_val(i);
    void *dX = dev_upload(ctx, X, M * K * sizeof(float)),
         *dY = dev_upload(ctx, NULL, M * K * sizeof(float));
    int64_t shape[2] = {M, K};
    DLTensor tx = tensor(dX, kDLCUDA, 2, shape, kDLFloat, 32);
    DLTensor ty = tensor(dY, kDLCUDA, 2, shape, kDLFloat, 32);
    TilertArg args[] = {tilert_arg_tensor(&tx), tilert_arg_tensor(&ty), tilert_arg_f32(3.0)};
    CHECK_STATUS(tilert_launch(k, args, 3, NULL), TILERT_OK, ctx);
    tilert_copy_to_host(ctx, Y, dY, M * K * sizeof(float));
    int bad = 0;
    for (int i = 0; i < M * K; i++) {
      double want = (double)X[i] * 3.0 + 1.0;
      if (!close_to(Y[i], want) && bad++ < 3)
        CHECK(false, "scale2d: Y[%d][%d] = %.9g, expected %.9g", i / K, i % K, Y[i], want);
    }
    tilert_device_free(ctx, dX), tilert_device_free(ctx, dY);
    free(X), free(Y);
  }

  /* scale_big: 64 KB of dynamic shared memory, n = 40000 (3 blocks). */
  k = kernel(mod, "scale_big");
  if (k) {
    enum { N = 40000 };
    CHECK(tilert_kernel_info(k)->shared_bytes > 48 * 1024, "scale_big uses %d bytes",
          tilert_kernel_info(k)->shared_bytes);
    float *A = malloc(N * sizeof(float)), *C = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) A[i] = a_val(i);
    void *dA = dev_upload(ctx, A, N * sizeof(float)),
         *dC = dev_upload(ctx, NULL, N * sizeof(float));
    int64_t n = N;
    DLTensor ta = tensor(dA, kDLCUDA, 1, &n, kDLFloat, 32);
    DLTensor tc = tensor(dC, kDLCUDA, 1, &n, kDLFloat, 32);
    TilertArg args[] = {tilert_arg_tensor(&ta), tilert_arg_tensor(&tc), tilert_arg_f32(-2.0)};
    CHECK_STATUS(tilert_launch(k, args, 3, NULL), TILERT_OK, ctx);
    tilert_copy_to_host(ctx, C, dC, N * sizeof(float));
    int bad = 0;
    for (int i = 0; i < N; i++)
      if (!close_to(C[i], -2.0 * A[i]) && bad++ < 3)
        CHECK(false, "scale_big: C[%d] = %.9g, expected %.9g", i, C[i], -2.0 * A[i]);
    tilert_device_free(ctx, dA), tilert_device_free(ctx, dC);
    free(A), free(C);
  }
  tilert_module_destroy(mod);

  /* mixed: an f16 tensor, f16 / i32 / f64 scalars by value. */
  mod = load(ctx, "mixed.tile", rt_gpu_mixed_src, NULL);
  k = kernel(mod, "mixed");
  if (k) {
    enum { N = 300 };
    uint16_t X[N];
    float Y[N];
    for (int i = 0; i < N; i++) X[i] = tilert_f32_to_f16(a_val(i));
    void *dX = dev_upload(ctx, X, sizeof X), *dY = dev_upload(ctx, NULL, sizeof Y);
    int64_t n = N;
    DLTensor tx = tensor(dX, kDLCUDA, 1, &n, kDLFloat, 16);
    DLTensor ty = tensor(dY, kDLCUDA, 1, &n, kDLFloat, 32);
    TilertArg args[] = {tilert_arg_tensor(&tx), tilert_arg_tensor(&ty), tilert_arg_f32(0.5),
                        tilert_arg_int(-7), tilert_arg_f32(0.25)};
    CHECK_STATUS(tilert_launch(k, args, 5, NULL), TILERT_OK, ctx);
    tilert_copy_to_host(ctx, Y, dY, sizeof Y);
    int bad = 0, as_bits = 0;
    uint16_t s_bits = tilert_f32_to_f16(0.5f); /* 0x3800 = 14336 */
    for (int i = 0; i < N; i++) {
      double x = tilert_f16_to_f32(X[i]), want = x * 0.5 - 7 + 0.25;
      as_bits += fabs(Y[i] - (x * s_bits - 7 + 0.25)) <= 1e-3 * (1 + fabs(x * s_bits));
      if (fabs(Y[i] - want) > 1e-3 && bad++ < 3)
        CHECK(false, "mixed: Y[%d] = %.9g, expected %.9g (X = %g, s = 0.5, b = -7, w = 0.25)", i,
              Y[i], want, x);
    }
    /* Name the known way this goes wrong: the kernel reading the f16
     * scalar's bits as an integer instead of converting them. */
    CHECK(as_bits < N / 2,
          "mixed: the kernel used the f16 scalar s = 0.5 as the integer %u (its bit pattern) in "
          "%d of %d outputs: the generated code converts a tc_half parameter with (float) "
          "instead of tc_f16_to_f32 (compiler/backend/cuda/expr.c)",
          s_bits, as_bits, N);
    tilert_device_free(ctx, dX), tilert_device_free(ctx, dY);
  }
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
}

/* Shape classes whose code is the same are built once (tilert.c): factor
 * is 2 for 10 <= n < 50 (class 0) and 3 otherwise, so classes 1 (n < 10),
 * 2 (50 <= n < 100) and 3 (n >= 100) differ only in the comment saying
 * which way each choice went. No cache: every build is an NVRTC run. */
static const char *const same_src = rt_test_same_code_src;

static void test_same_code_classes(void) {
  TilertContext *ctx = gpu_ctx(NULL, true);
  if (!ctx) return;
  TilertModule *mod = load(ctx, "same.tile", same_src, NULL);
  TilertKernel *k = kernel(mod, "same");
  CHECK(ctx->nvrtc_runs == 1, "the load ran NVRTC %u times", ctx->nvrtc_runs);
  static const int ns[] = {5, 60, 150, 20, 1000};
  static const float factors[] = {3, 3, 3, 2, 3};
  for (size_t c = 0; k && c < sizeof ns / sizeof *ns; c++) {
    const int n = ns[c];
    size_t bytes = (size_t)n * sizeof(float);
    float *A = malloc(bytes), *C = malloc(bytes);
    for (int i = 0; i < n; i++) A[i] = a_val(i);
    void *dA = dev_upload(ctx, A, bytes), *dC = dev_upload(ctx, NULL, bytes);
    int64_t shape = n;
    DLTensor ta = tensor(dA, kDLCUDA, 1, &shape, kDLFloat, 32);
    DLTensor tc = tensor(dC, kDLCUDA, 1, &shape, kDLFloat, 32);
    TilertArg args[] = {tilert_arg_tensor(&ta), tilert_arg_tensor(&tc)};
    CHECK_STATUS(tilert_launch(k, args, 2, NULL), TILERT_OK, ctx);
    CHECK_STATUS(tilert_copy_to_host(ctx, C, dC, bytes), TILERT_OK, ctx);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += C[i] != A[i] * factors[c];
    CHECK(bad == 0, "same.tile at n = %d: %d elements are not A * %g", n, bad, factors[c]);
    /* Class 0 at the load, class 1 at n = 5; classes 2 and 3 run class 1's build. */
    CHECK(ctx->nvrtc_runs == 2, "after n = %d: %u NVRTC runs, expected 2", n, ctx->nvrtc_runs);
    tilert_device_free(ctx, dA), tilert_device_free(ctx, dC);
    free(A), free(C);
  }
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
}

static void test_mismatch_and_fault(void) {
  TilertContext *ctx = gpu_ctx(NULL, true);
  if (!ctx) return;
  TilertModule *mod = load(ctx, "gpu.tile", rt_gpu_tile_src, NULL);
  TilertKernel *k = kernel(mod, "scale_add");
  if (!k) {
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
    return;
  }
  enum { N = 100 };
  float host[N];
  for (int i = 0; i < N; i++) host[i] = 7.0f;
  void *dA = dev_upload(ctx, host, sizeof host), *dC = dev_upload(ctx, NULL, sizeof host);
  int64_t n = N;
  DLTensor tdev = tensor(dA, kDLCUDA, 1, &n, kDLFloat, 32);
  DLTensor tout = tensor(dC, kDLCUDA, 1, &n, kDLFloat, 32);
  DLTensor thost = tensor(host, kDLCPU, 1, &n, kDLFloat, 32);

  /* A host tensor as B. */
  TilertArg args[] = {tilert_arg_tensor(&tdev), tilert_arg_tensor(&thost), tilert_arg_tensor(&tout),
                      tilert_arg_f32(1.0)};
  CHECK_STATUS(tilert_launch(k, args, 4, NULL), TILERT_LAUNCH_MISMATCH, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx),
                 "scale_add: argument 2 'B': device is CPU:0, expected CUDA");
  /* A tensor on another GPU as C. */
  DLTensor tother = tout;
  tother.device.device_id = 1;
  args[1] = tilert_arg_tensor(&tdev), args[2] = tilert_arg_tensor(&tother);
  CHECK_STATUS(tilert_launch(k, args, 4, NULL), TILERT_LAUNCH_MISMATCH, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx),
                 "scale_add: argument 3 'C': device is CUDA:1, expected CUDA:0");
  /* The other checks, on device tensors; each must leave C untouched. */
  int64_t n99 = N - 1, shape2[2] = {N, 1}, stride2 = 2;
  DLTensor tf64 = tensor(dA, kDLCUDA, 1, &n, kDLFloat, 64);
  DLTensor tshort = tensor(dA, kDLCUDA, 1, &n99, kDLFloat, 32);
  DLTensor trank = tensor(dA, kDLCUDA, 2, shape2, kDLFloat, 32);
  DLTensor tnull = tensor(NULL, kDLCUDA, 1, &n, kDLFloat, 32);
  DLTensor tstrided = tensor(dC, kDLCUDA, 1, &n, kDLFloat, 32);
  tstrided.strides = &stride2;
  struct {
    int arg;
    const DLTensor *t;
    int nargs;
    const char *want;
  } cases[] = {
      {1, &tf64, 4, "scale_add: argument 2 'B': dtype is float64, expected f32"},
      {1, &tshort, 4, "scale_add: argument 2 'B': dim 0 is 99 but n = 100 from argument 1 'A'"},
      {0, &trank, 4, "scale_add: argument 1 'A': rank is 2, expected 1"},
      {1, &tnull, 4, "scale_add: argument 2 'B': data is NULL"},
      {2, &tstrided, 4, "scale_add: argument 3 'C': strides are not compact row-major"},
      {1, &tdev, 3, "scale_add: expected 4 arguments, got 3"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    args[0] = tilert_arg_tensor(&tdev), args[1] = tilert_arg_tensor(&tdev),
    args[2] = tilert_arg_tensor(&tout);
    args[cases[c].arg] = tilert_arg_tensor(cases[c].t);
    CHECK_STATUS(tilert_launch(k, args, cases[c].nargs, NULL), TILERT_LAUNCH_MISMATCH, ctx);
    CHECK_CONTAINS(tilert_last_error(ctx), cases[c].want);
  }
  float back[N];
  tilert_copy_to_host(ctx, back, dC, sizeof back);
  int written = 0;
  for (int i = 0; i < N; i++) written += !isnan(back[i]);
  CHECK(written == 0, "rejected launches wrote %d elements of C (C[0] = %g)", written, back[0]);

  /* Device memory that cannot exist. */
  void *huge = (void *)1;
  CHECK_STATUS(tilert_device_alloc(ctx, (size_t)1 << 50, &huge), TILERT_OUT_OF_MEMORY, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "tilert_device_alloc(1125899906842624 bytes)");
  CHECK(huge == NULL, "a failed allocation left *dptr set");

  /* The other way: a device tensor to a CPU kernel. */
  TilertConfig cpu_cfg = {TILERT_DEVICE_CPU, NULL, true, NULL};
  TilertContext *cpu = NULL;
  tilert_context_create(&cpu_cfg, &cpu);
  TilertModule *cmod = load(cpu, "gpu.tile", rt_gpu_tile_src, NULL);
  TilertKernel *ck = kernel(cmod, "scale_add");
  if (ck) {
    args[1] = tilert_arg_tensor(&thost), args[2] = tilert_arg_tensor(&thost);
    CHECK_STATUS(tilert_launch(ck, args, 4, NULL), TILERT_LAUNCH_MISMATCH, cpu);
    CHECK_CONTAINS(tilert_last_error(cpu),
                   "scale_add: argument 1 'A': device is CUDA:0, expected CPU");
  }
  tilert_module_destroy(cmod);
  tilert_context_destroy(cpu);

  /* A wild device pointer: the kernel faults; CUDA_ERROR names it. The
   * context is unusable afterwards (CUDA's sticky errors), so this is last. */
  DLTensor twild = tout;
  twild.data = (void *)(uintptr_t)0x10000;
  args[0] = tilert_arg_tensor(&tdev), args[1] = tilert_arg_tensor(&tdev),
  args[2] = tilert_arg_tensor(&twild);
  TilertStatus st = tilert_launch(k, args, 4, NULL);
  CHECK_STATUS(st, TILERT_CUDA_ERROR, ctx);
  /* The fault shows at the synchronization after the launch ("kernel
   * 'scale_add' failed on the GPU: ..."), or, should the driver already
   * refuse the launch, at the launch ("scale_add: launch failed ..."). */
  const char *e = tilert_last_error(ctx);
  CHECK(!strncmp(e, "kernel 'scale_add' failed on the GPU: ", 38) ||
            !strncmp(e, "scale_add: launch failed", 24),
        "the fault's message does not start with the kernel's name: %s", e);
  CHECK_CONTAINS(e, "CUDA_ERROR_");
  printf("fault reported as: %s\n", e);
  /* The context is poisoned now: the next launch fails too, as an error
   * naming the kernel, not an abort. */
  args[2] = tilert_arg_tensor(&tout);
  st = tilert_launch(k, args, 4, NULL);
  CHECK_STATUS(st, TILERT_CUDA_ERROR, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "scale_add");
  CHECK_CONTAINS(tilert_last_error(ctx), "CUDA_ERROR_");
  printf("next launch reported as: %s\n", tilert_last_error(ctx));
  tilert_device_free(ctx, dA), tilert_device_free(ctx, dC);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
}

int main(void) {
  rt_test_init();
  /* First, before this process opens CUDA: the children need a fresh
   * process to enter their mount namespaces and open the GPU. */
  bool fs_ok = test_real_fs_cache();
  TilertConfig cfg = {TILERT_DEVICE_CUDA, NULL, true, NULL};
  TilertContext *ctx = NULL;
  if (tilert_context_create(&cfg, &ctx) != TILERT_OK) {
    printf("skipped: %s\n", tilert_last_error(ctx));
    tilert_context_destroy(ctx);
    return 77;
  }
  tilert_context_destroy(ctx);
  CHECK(fs_ok, "a read-only / full tmpfs cache case failed (its output is above)");
  test_scale_add_and_cache();
  test_tampered_cubin();
  test_full_cache_injected();
  test_other_kernels();
  test_same_code_classes();
  test_mismatch_and_fault();
  if (rt_test_failures) fprintf(stderr, "test_rt_gpu: %d failure(s)\n", rt_test_failures);
  else printf("test_rt_gpu: all passed\n");
  return rt_test_failures != 0;
}
