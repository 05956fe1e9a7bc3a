/* gemm_fp8_main.c - runs examples/gemm_fp8.tile (C = A @ B * scale_a *
 * scale_b, FP8 inputs, f32 accumulation) through libtilert and checks it.
 *
 *   gemm_fp8 [--m N] [--n N] [--k N] [--a-dtype f8e4m3|f8e5m2]
 *            [--b-dtype f8e4m3|f8e5m2] [--out-dtype f16|bf16|f32]
 *            [--tiles f16|bf16|fp8] [--b-layout kn|nk] [--device auto|cpu|cuda]
 *            [--block-m N --block-n N --block-k N] [--stages N] [--threads N]
 *            [--define NAME=VALUE] [--iters N]
 *
 * The inputs are float32 matrices (uniform in [-2, 2]) quantized per tensor:
 * scale = max|x| / largest finite FP8, code = fp8(x / scale) (host_util's
 * reference encoder: round to nearest even, saturating). Two checks:
 *   exact:   against A @ B of the decoded codes, times both scales, in
 *            double: only the f32 accumulation and the final rounding to
 *            out_dtype differ (bound 4 eps(out_dtype) of max|ref|; on the
 *            GPU with FP8 tiles at least 2^-12, the FP8 wgmma's own
 *            accumulation precision, see below);
 *   float32: against A @ B of the unquantized inputs: the quantization
 *            error, printed (an FP8 gemm is expected to be ~2^-4 off).
 * --tiles: the shared tiles' dtype (a_tile, b_tile): f16 (default) or bf16
 * widen the codes exactly and run the gemm on f16/bf16 tensor cores (GPU
 * and CPU); fp8 keeps the FP8 tiles (an FP8 gemm: the CPU backend, and
 * sm_90a's FP8 wgmma with --b-layout nk; sm_80 has no FP8 tensor cores and
 * tilec says so).
 * --b-layout: kn (default) runs examples/gemm_fp8.tile, B [K, N] row-major;
 * nk runs examples/gemm_fp8_nt.tile, B given as Bt [N, K] row-major (B
 * column-major, as torch._scaled_mm takes it), which FP8 wgmma needs. With
 * --tiles fp8 and no --block-k, nk uses block_K 128 (128-byte rows).
 * --define NAME=VALUE: any other -D (repeatable; e.g. K=1040 binds K, which
 * lets sm_90a load the tiles with TMA).
 * Exit status: 0 correct, 1 wrong result or runtime error, 2 bad usage,
 * 77 --device cuda without a GPU (or --tiles fp8 on a GPU older than sm_90). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "tilert.h"

/* Quantizes x (n floats) into the FP8 tensor t; returns the scale. */
static double quantize(HostTensor *t, const double *x, size_t n) {
  bool e5m2 = t->dl.dtype.code == HOST_DL_F8E5M2;
  double amax = 0, largest = e5m2 ? 57344.0 : 448.0;
  for (size_t i = 0; i < n; i++) amax = fabs(x[i]) > amax ? fabs(x[i]) : amax;
  double scale = amax > 0 ? amax / largest : 1.0;
  scale = (double)(float)scale; /* the kernel takes it as an f32 */
  for (size_t i = 0; i < n; i++) ((uint8_t *)t->host)[i] = host_fp8_encode(x[i] / scale, e5m2);
  return scale;
}

int main(int argc, char **argv) {
  long M = 200, N = 136, K = 150, iters = 0;
  const char *tiles = "f16", *stages = NULL, *threads = NULL;
  const char *extra[4];
  int nextra = 0;
  bool b_nk = false;
  const char *blocks[3] = {NULL, NULL, NULL};
  const char *a_name = "f8e4m3", *b_name = "f8e4m3", *out_name = "f16", *device_name = "auto";
  const char *b_layout = "kn";
  const HostOption opts[] = {
      {"--m", HOST_OPT_LONG, &M, 1, 1 << 16},
      {"--n", HOST_OPT_LONG, &N, 1, 1 << 16},
      {"--k", HOST_OPT_LONG, &K, 1, 1 << 16},
      {"--iters", HOST_OPT_LONG, &iters, 1, 100000},
      {"--tiles", HOST_OPT_CHOICE, &tiles, .choices = "f16|bf16|fp8"},
      {"--b-layout", HOST_OPT_CHOICE, &b_layout, .choices = "kn|nk"},
      {"--stages", HOST_OPT_TEXT, &stages},
      {"--threads", HOST_OPT_TEXT, &threads},
      {"--define", HOST_OPT_DEFINE, extra, .max = 4, .count = &nextra},
      {"--block-m", HOST_OPT_TEXT, &blocks[0]},
      {"--block-n", HOST_OPT_TEXT, &blocks[1]},
      {"--block-k", HOST_OPT_TEXT, &blocks[2]},
      {"--a-dtype", HOST_OPT_CHOICE, &a_name, .choices = "f8e4m3|f8e5m2"},
      {"--b-dtype", HOST_OPT_CHOICE, &b_name, .choices = "f8e4m3|f8e5m2"},
      {"--out-dtype", HOST_OPT_CHOICE, &out_name, .choices = "f16|bf16|f32"},
  };
  int st = host_parse_options(
      argc, argv,
      "[--m N] [--n N] [--k N] [--a-dtype f8e4m3|f8e5m2] [--b-dtype f8e4m3|f8e5m2]\n"
      "          [--out-dtype f16|bf16|f32] [--tiles f16|bf16|fp8] [--b-layout kn|nk]\n"
      "          [--device auto|cpu|cuda] [--block-m N] [--block-n N] [--block-k N] [--stages N]\n"
      "          [--threads N] [--define NAME=VALUE] [--iters N]",
      opts, HOST_NOPTS(opts), &device_name);
  if (st >= 0) return st;
  b_nk = strcmp(b_layout, "nk") == 0;
  DLDataType a_dt, b_dt, out_dt;
  host_dtype_parse(a_name, &a_dt), host_dtype_parse(b_name, &b_dt), host_dtype_parse(out_name, &out_dt);

  TilertConfig cfg = {0};
  if (strcmp(device_name, "cuda") == 0) { /* no GPU: exit 77, ctest's skip (the gpu tests) */
    TilertContext *probe = NULL;
    cfg.device = TILERT_DEVICE_CUDA;
    if (tilert_context_create(&cfg, &probe) == TILERT_NO_GPU) {
      printf("SKIP: no usable GPU (%s)\n", probe ? tilert_last_error(probe) : "");
      tilert_context_destroy(probe);
      return 77;
    }
    tilert_context_destroy(probe);
  }
  TilertContext *ctx = host_context_open(device_name, &cfg);
  if (!ctx) return 1;
  TilertDevice dev = tilert_context_device(ctx);
  bool fp8_tiles = strcmp(tiles, "fp8") == 0;
  TilecDefine defs[16] = {{"a_dtype", a_name}, {"b_dtype", b_name}, {"out_dtype", out_name},
                         {"a_tile", fp8_tiles ? a_name : tiles}, {"b_tile", fp8_tiles ? b_name : tiles}};
  int ndefs = 5;
  static const char *const block_names[3] = {"block_M", "block_N", "block_K"};
  for (int b = 0; b < 3; b++)
    if (blocks[b]) defs[ndefs++] = (TilecDefine){block_names[b], blocks[b]};
  /* gemm_fp8_nt's default block_K (128 on sm_90a) is sized for FP8 tiles;
   * 16-bit tiles take 64. */
  if (b_nk && !blocks[2]) defs[ndefs++] = (TilecDefine){"block_K", fp8_tiles ? "128" : "64"};
  if (stages) defs[ndefs++] = (TilecDefine){"num_stages", stages};
  if (threads) defs[ndefs++] = (TilecDefine){"threads", threads};
  char extra_names[4][64];
  for (int e = 0; e < nextra; e++) {
    size_t n = (size_t)(strchr(extra[e], '=') - extra[e]);
    snprintf(extra_names[e], sizeof extra_names[e], "%.*s", (int)(n < 63 ? n : 63), extra[e]);
    defs[ndefs++] = (TilecDefine){extra_names[e], strchr(extra[e], '=') + 1};
  }
  TilertModule *mod = NULL;
  TilertKernel *kern = NULL;
  const char *file = b_nk ? "gemm_fp8_nt.tile" : "gemm_fp8.tile", *kname = b_nk ? "gemm_fp8_nt" : "gemm_fp8";
  if (tilert_module_load_file(ctx, host_example_path(file), defs, ndefs, &mod) != TILERT_OK ||
      tilert_module_get_kernel(mod, kname, &kern) != TILERT_OK) {
    if (fp8_tiles && dev == TILERT_DEVICE_CUDA && strstr(tilert_last_error(ctx), "has no FP8 tensor cores")) {
      /* An FP8 gemm needs sm_90a's wgmma: a pre-Hopper GPU skips (ctest's 77). */
      printf("SKIP: FP8 tiles need an sm_90 GPU: %s\n", tilert_last_error(ctx));
      tilert_module_destroy(mod);
      tilert_context_destroy(ctx);
      return 77;
    }
    fprintf(stderr, "error: %s\n", tilert_last_error(ctx));
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
    return 1;
  }

  uint64_t seed = host_seed();
  if (iters == 0) iters = dev == TILERT_DEVICE_CUDA ? 20 : 1;
  printf("gemm_fp8: %ld x %ld x %ld, A %s, B %s (%s), C %s, tiles %s, device %s, seed %llu\n", M, N, K, a_name,
         b_name, b_nk ? "given as [N, K]" : "[K, N]", out_name, tiles, dev == TILERT_DEVICE_CUDA ? "cuda" : "cpu",
         (unsigned long long)seed);
  HostRng rng;
  host_rng_init(&rng, seed);
  HostTensor a, b, c;
  memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&c, 0, sizeof c);
  double *xa = malloc((size_t)(M * K) * sizeof *xa), *xb = malloc((size_t)(K * N) * sizeof *xb);
  double *xbt = malloc((size_t)(K * N) * sizeof *xbt); /* B in the tensor's order: [K, N] or [N, K] */
  double *ref = malloc((size_t)(M * N) * sizeof *ref), *ref32 = malloc((size_t)(M * N) * sizeof *ref32);
  int status = 0;
  if (!xa || !xb || !xbt || !ref || !ref32 || !host_tensor_init(&a, a_dt, 2, (int64_t[]){M, K}, ctx) ||
      !host_tensor_init(&b, b_dt, 2, b_nk ? (int64_t[]){N, K} : (int64_t[]){K, N}, ctx) ||
      !host_tensor_init(&c, out_dt, 2, (int64_t[]){M, N}, ctx)) {
    fprintf(stderr, "error: out of memory\n");
    status = 1;
    goto done;
  }
  for (long i = 0; i < M * K; i++) xa[i] = host_rng_uniform(&rng, -2, 2);
  for (long i = 0; i < K * N; i++) xb[i] = host_rng_uniform(&rng, -2, 2);
  for (long k = 0; k < K; k++)
    for (long j = 0; j < N; j++) xbt[b_nk ? j * K + k : k * N + j] = xb[k * N + j];
  double sa = quantize(&a, xa, (size_t)(M * K)), sb = quantize(&b, xbt, (size_t)(K * N));
  host_tensor_poison(&c);
  if (!host_tensor_upload(&a) || !host_tensor_upload(&b) || !host_tensor_upload(&c)) {
    fprintf(stderr, "error: copying the inputs to the GPU failed\n");
    status = 1;
    goto done;
  }
  TilertArg args[] = {tilert_arg_tensor(&a.dl), tilert_arg_tensor(&b.dl), tilert_arg_tensor(&c.dl),
                      tilert_arg_f32(sa), tilert_arg_f32(sb)};
  HostTensor *tensors[] = {&a, &b, &c};
  double best = 0;
  if (!host_launch_timed(ctx, kern, args, 5, tensors, 3, &c, iters, &best)) {
    status = 1;
    goto done;
  }
  if (b_nk) { /* the decoded codes, B read through its [N, K] storage */
    double *da = host_tensor_to_double(&a), *db = host_tensor_to_double(&b);
    if (!da || !db) {
      fprintf(stderr, "error: out of memory\n");
      free(da), free(db);
      status = 1;
      goto done;
    }
    for (long i = 0; i < M; i++)
      for (long j = 0; j < N; j++) {
        double s = 0;
        for (long k = 0; k < K; k++) s += da[i * K + k] * db[j * K + k];
        ref[i * N + j] = s;
      }
    free(da), free(db);
  } else {
    host_ref_gemm(&a, &b, ref); /* the decoded codes */
  }
  for (long i = 0; i < M * N; i++) ref[i] *= (double)(float)(sa * sb);
  for (long i = 0; i < M; i++)
    for (long j = 0; j < N; j++) {
      double s = 0;
      for (long k = 0; k < K; k++) s += xa[i * K + k] * xb[k * N + j];
      ref32[i * N + j] = s;
    }
  HostError e = host_compare(&c, ref), q = host_compare(&c, ref32);
  double bound = 4 * host_dtype_eps(out_dt) + 1e-5; /* the output rounding; f32 sums of K terms */
  /* sm_90a's FP8 wgmma keeps about 14 significant bits in its own running
   * sums (DeepSeek-V3's report; a model truncating to 14 bits after each k32
   * step reproduced the H100's errors). tilec promotes every 128 codes into
   * f32 (docs/gpu-codegen.md, "FP8 promotion"), which leaves about 2^-13 of
   * max|ref| from one chunk: the bound allows 2^-12 there. */
  if (dev == TILERT_DEVICE_CUDA && strcmp(tiles, "fp8") == 0 && bound < 0x1p-12) bound = 0x1p-12;
  printf("  scales: A %.6g, B %.6g; time %.3f ms (best of %ld), %.3f TFLOP/s\n", sa, sb, best, iters,
         2.0 * M * N * K / (best * 1e9));
  printf("  vs the decoded codes: max abs error %.3e, %.3e of max|ref| %.3e (bound %.1e)\n", e.max_abs,
         e.rel_to_max, e.max_ref, bound);
  printf("  vs the float32 inputs (quantization error): %.3e of max|ref|\n", q.rel_to_max);
  if (!host_error_ok(&e, bound)) {
    fprintf(stderr, "FAILED: %zu non-finite outputs, error %.3e > %.1e (worst at element %zu)\n", e.nonfinite,
            e.rel_to_max, bound, e.worst);
    status = 1;
  } else if (q.rel_to_max > 0.25) {
    fprintf(stderr, "FAILED: %.3e from the float32 product: the scales are not applied right\n", q.rel_to_max);
    status = 1;
  } else {
    printf("  OK\n");
  }

done:
  free(xa), free(xb), free(xbt), free(ref), free(ref32);
  host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&c);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  return status;
}
