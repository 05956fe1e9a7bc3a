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
 *   - a host tensor to a GPU kernel, a tensor on CUDA:1: LAUNCH_MISMATCH
 *     naming the argument, nothing written;
 *   - a kernel that faults (a wild device pointer) comes back as CUDA_ERROR
 *     naming the kernel, without aborting (last: it poisons the context).
 * Every failure prints what was expected and what came back. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

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
  CHECK(rt_test_count(dir, ".cubin") == 1 && rt_test_count(dir, ".sum") == 1 &&
            rt_test_count(dir, "") == 2,
        "cache dir holds %d entries, expected one .cubin and one .sum", rt_test_count(dir, ""));
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
          "instead of tc_f16_to_f32 (compiler/backend/emit_cuda.c)",
          s_bits, as_bits, N);
    tilert_device_free(ctx, dX), tilert_device_free(ctx, dY);
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
  float back[N];
  tilert_copy_to_host(ctx, back, dC, sizeof back);
  CHECK(isnan(back[0]) && isnan(back[N - 1]), "a rejected launch wrote C (C[0] = %g)", back[0]);

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
  CHECK_CONTAINS(tilert_last_error(ctx), "scale_add");
  CHECK_CONTAINS(tilert_last_error(ctx), "CUDA_ERROR_");
  printf("fault reported as: %s\n", tilert_last_error(ctx));
  tilert_device_free(ctx, dA), tilert_device_free(ctx, dC);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
}

int main(void) {
  rt_test_init();
  TilertConfig cfg = {TILERT_DEVICE_CUDA, NULL, true, NULL};
  TilertContext *ctx = NULL;
  if (tilert_context_create(&cfg, &ctx) != TILERT_OK) {
    printf("skipped: %s\n", tilert_last_error(ctx));
    tilert_context_destroy(ctx);
    return 77;
  }
  tilert_context_destroy(ctx);
  test_scale_add_and_cache();
  test_other_kernels();
  test_mismatch_and_fault();
  if (rt_test_failures) fprintf(stderr, "test_rt_gpu: %d failure(s)\n", rt_test_failures);
  else printf("test_rt_gpu: all passed\n");
  return rt_test_failures != 0;
}
