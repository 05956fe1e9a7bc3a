/* test_aot_load.c - a cubin compiled ahead of time loads without NVRTC
 * (ctest aot_gpu_load, label gpu; run after aot_cli, which fills CACHE).
 *
 *   test_aot_load FLASH_ATTENTION.tile CACHE_DIR
 *
 * A CUDA context on CACHE_DIR loads FILE (the same path string aot_cli gave
 * tilec --emit=cubin --cache-dir, dtype=bf16) and must find the cubin there
 * (tilert_module_from_cache); the time of that load is printed. Then one
 * launch (batch 1, seq_len 200, 2 heads, dim 128: shape class 2, the
 * ragged-keys build, 200 % 128 != 0) is checked against a
 * double-precision reference. The runtime also builds the module's other
 * classes in the background (prebuild threads): aot_cli stores every one. libnvrtc must not be mapped into this
 * process at any point (/proc/self/maps): context creation leaves it to the
 * first compile, and a cache hit needs none. Then a launch at seq_len 8192,
 * where the flagship's shape choice (dim 128 reads 176 keys per block from
 * 8192) takes the build of shape class 1, which aot_cli also stored
 * (--shape-class=1): it must come from the cache too (still no libnvrtc),
 * and three of its rows are checked against the reference. Exits 77 without
 * a GPU, or when the GPU is not sm_90 (aot_cli built for sm_90a). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tilert.h"

enum { B = 1, S = 200, H = 2, D = 128 };

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Is any libnvrtc mapped into this process? (The loader's truth.) */
static int nvrtc_mapped(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, "libnvrtc") != NULL;
  fclose(f);
  return found;
}

/* Q, K, V (h[0..2], copied) and the output (h[3]'s size) as bf16 device
 * tensors of `shape`, n elements each. False (reported) when the device
 * memory cannot be had. */
static bool device_tensors(TilertContext *ctx, uint16_t *const h[4], size_t n, int64_t *shape, void *d[4],
                           DLTensor t[4]) {
  for (int i = 0; i < 4; i++) {
    if (tilert_device_alloc(ctx, n * 2, &d[i]) != TILERT_OK ||
        (i < 3 && tilert_copy_to_device(ctx, d[i], h[i], n * 2) != TILERT_OK)) {
      printf("FAIL: device memory: %s\n", tilert_last_error(ctx));
      return false;
    }
    memset(&t[i], 0, sizeof t[i]);
    t[i].data = d[i];
    t[i].device.device_type = kDLCUDA;
    t[i].ndim = 4;
    t[i].shape = shape;
    t[i].dtype.code = kDLBfloat;
    t[i].dtype.bits = 16;
    t[i].dtype.lanes = 1;
  }
  return true;
}

/* One head of seq_len SL = 8192 (shape class 1): the launch must not
 * compile (libnvrtc stays unmapped), and rows 0, SL/2 and SL-1 must match a
 * double-precision reference. Returns the number of failures. */
static int check_class_build(TilertContext *ctx, TilertKernel *k, double scale) {
  enum { SL = 8192 };
  size_t n = (size_t)SL * D;
  uint16_t *h[4];
  void *d[4] = {0};
  int fails = 0;
  unsigned seed = 777;
  for (int i = 0; i < 4; i++) h[i] = calloc(n, sizeof **h);
  for (int i = 0; i < 3; i++)
    for (size_t e = 0; e < n; e++) {
      seed = seed * 1103515245u + 12345u;
      h[i][e] = tilert_f32_to_bf16(((float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f) * 2.0f);
    }
  int64_t shape[4] = {1, SL, 1, D};
  DLTensor t[4];
  if (!device_tensors(ctx, h, n, shape, d, t)) return 1;
  TilertArg args[] = {tilert_arg_tensor(&t[0]), tilert_arg_tensor(&t[1]), tilert_arg_tensor(&t[2]),
                      tilert_arg_tensor(&t[3]), tilert_arg_f32(scale)};
  if (tilert_launch(k, args, 5, NULL) != TILERT_OK || tilert_copy_to_host(ctx, h[3], d[3], n * 2) != TILERT_OK) {
    printf("FAIL: launch at seq_len %d: %s\n", SL, tilert_last_error(ctx));
    fails++;
  } else if (nvrtc_mapped()) {
    printf("FAIL: the seq_len %d launch compiled its shape class (libnvrtc mapped): not found in the cache\n", SL);
    fails++;
  } else {
    double max_err = 0, max_ref = 0;
    double *p = malloc(sizeof *p * SL);
    const int rows[3] = {0, SL / 2, SL - 1};
    for (int r = 0; r < 3; r++) {
      int i = rows[r];
      double m = -INFINITY, sum = 0;
      for (int j = 0; j < SL; j++) {
        double s = 0;
        for (int c = 0; c < D; c++)
          s += (double)tilert_bf16_to_f32(h[0][(size_t)i * D + c]) * tilert_bf16_to_f32(h[1][(size_t)j * D + c]);
        p[j] = s * scale;
        if (p[j] > m) m = p[j];
      }
      for (int j = 0; j < SL; j++) sum += (p[j] = exp2(p[j] - m));
      for (int c = 0; c < D; c++) {
        double o = 0;
        for (int j = 0; j < SL; j++) o += p[j] * tilert_bf16_to_f32(h[2][(size_t)j * D + c]);
        o /= sum;
        double got = tilert_bf16_to_f32(h[3][(size_t)i * D + c]);
        if (!(fabs(got - o) <= max_err)) max_err = isnan(got) ? INFINITY : fabs(got - o);
        if (fabs(o) > max_ref) max_ref = fabs(o);
      }
    }
    free(p);
    if (!(max_err <= 2e-2 * max_ref)) {
      printf("FAIL: seq_len %d: max |out - ref| = %g, max |ref| = %g\n", SL, max_err, max_ref);
      fails++;
    } else {
      printf("ok: seq_len %d ran shape class 1 from the cache (no libnvrtc), rows within %.2g of max|ref|\n", SL,
             max_err / max_ref);
    }
  }
  for (int i = 0; i < 4; i++) {
    tilert_device_free(ctx, d[i]);
    free(h[i]);
  }
  return fails;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FLASH_ATTENTION.tile CACHE_DIR\n", argv[0]);
    return 2;
  }
  TilertConfig cfg = {TILERT_DEVICE_CUDA, argv[2], false, NULL};
  TilertContext *ctx = NULL;
  if (tilert_context_create(&cfg, &ctx) != TILERT_OK) {
    printf("SKIP: %s\n", tilert_last_error(ctx));
    tilert_context_destroy(ctx);
    return 77;
  }
  const char *note = tilert_context_device_note(ctx);
  if (!strstr(note, "(sm_90)")) {
    printf("SKIP: aot_cli built for sm_90a; this device is %s\n", note);
    tilert_context_destroy(ctx);
    return 77;
  }
  TilecDefine defs[] = {{"dtype", "bf16"}};
  TilertModule *mod = NULL;
  double t0 = now_ms();
  TilertStatus st = tilert_module_load_file(ctx, argv[1], defs, 1, &mod);
  double t1 = now_ms();
  int fails = 0;
  if (st != TILERT_OK) {
    printf("FAIL: load: %s\n", tilert_last_error(ctx));
    tilert_context_destroy(ctx);
    return 1;
  }
  if (!tilert_module_from_cache(mod)) {
    printf("FAIL: the load ran NVRTC: the ahead-of-time entry in %s was not found\n", argv[2]);
    fails++;
  } else {
    printf("ok: loaded from the ahead-of-time cache entry in %.1f ms (no NVRTC)\n", t1 - t0);
  }
  if (nvrtc_mapped()) {
    printf("FAIL: libnvrtc is mapped after context creation and a cache hit\n");
    fails++;
  } else {
    printf("ok: context creation and the cache hit opened no libnvrtc\n");
  }
  TilertKernel *k = NULL;
  if (tilert_module_get_kernel(mod, "flash_attention", &k) != TILERT_OK) {
    printf("FAIL: %s\n", tilert_last_error(ctx));
    return 1;
  }
  size_t n = (size_t)B * S * H * D;
  uint16_t *h[4];
  float *f[3];
  void *d[4] = {0};
  for (int i = 0; i < 4; i++) h[i] = calloc(n, sizeof **h);
  for (int i = 0; i < 3; i++) f[i] = calloc(n, sizeof **f);
  unsigned seed = 12345;
  for (int i = 0; i < 3; i++)
    for (size_t e = 0; e < n; e++) {
      seed = seed * 1103515245u + 12345u;
      float x = ((float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f) * 2.0f;
      h[i][e] = tilert_f32_to_bf16(x);
      f[i][e] = tilert_bf16_to_f32(h[i][e]);
    }
  int64_t shape[4] = {B, S, H, D};
  DLTensor t[4];
  if (!device_tensors(ctx, h, n, shape, d, t)) return 1;
  double scale = 1.0 / sqrt((double)D) * 1.4426950408889634;
  TilertArg args[] = {tilert_arg_tensor(&t[0]), tilert_arg_tensor(&t[1]), tilert_arg_tensor(&t[2]),
                      tilert_arg_tensor(&t[3]), tilert_arg_f32(scale)};
  if (tilert_launch(k, args, 5, NULL) != TILERT_OK ||
      tilert_copy_to_host(ctx, h[3], d[3], n * 2) != TILERT_OK) {
    printf("FAIL: launch: %s\n", tilert_last_error(ctx));
    return 1;
  }
  /* Reference: softmax in base 2 of scale * q.k over all keys, times V. */
  double max_err = 0, max_ref = 0;
  double *p = malloc(sizeof *p * S);
  for (int hh = 0; hh < H; hh++)
    for (int i = 0; i < S; i++) {
      double m = -INFINITY, sum = 0;
      for (int j = 0; j < S; j++) {
        double s = 0;
        for (int c = 0; c < D; c++)
          s += (double)f[0][((size_t)i * H + hh) * D + c] * f[1][((size_t)j * H + hh) * D + c];
        p[j] = s * scale;
        if (p[j] > m) m = p[j];
      }
      for (int j = 0; j < S; j++) sum += (p[j] = exp2(p[j] - m));
      for (int c = 0; c < D; c++) {
        double o = 0;
        for (int j = 0; j < S; j++) o += p[j] * f[2][((size_t)j * H + hh) * D + c];
        o /= sum;
        double got = tilert_bf16_to_f32(h[3][((size_t)i * H + hh) * D + c]);
        if (!(fabs(got - o) <= max_err)) max_err = isnan(got) ? INFINITY : fabs(got - o);
        if (fabs(o) > max_ref) max_ref = fabs(o);
      }
    }
  if (!(max_err <= 2e-2 * max_ref)) {
    printf("FAIL: max |out - ref| = %g, max |ref| = %g (bound 2e-2 of it)\n", max_err, max_ref);
    fails++;
  } else {
    printf("ok: result within %.2g of max|ref| = %.3g\n", max_err / max_ref, max_ref);
  }
  free(p);
  for (int i = 0; i < 4; i++) {
    tilert_device_free(ctx, d[i]);
    free(h[i]);
  }
  for (int i = 0; i < 3; i++) free(f[i]);
  fails += check_class_build(ctx, k, scale);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  printf("%s\n", fails ? "FAILED" : "aot_gpu_load: all checks passed");
  return fails ? 1 : 0;
}
