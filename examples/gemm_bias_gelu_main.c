/* gemm_bias_gelu_main.c - runs examples/gemm_bias_gelu.tile (C = gelu(A @ B
 * + bias), f16) through libtilert on random inputs and checks it against a
 * double-precision reference.
 *
 *   gemm_bias_gelu [--m N] [--n N] [--k N] [--device auto|cpu|cuda]
 *
 * M, N and K stay dynamic (any sizes, edges included). Exit status: 0
 * correct, 1 wrong result or runtime error, 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "tilert.h"

int main(int argc, char **argv) {
  long M = 1000, N = 1000, K = 512;
  const char *device_name = "auto";
  const HostOption opts[] = {
      {"--m", HOST_OPT_LONG, &M, 1, 1 << 20},
      {"--n", HOST_OPT_LONG, &N, 1, 1 << 20},
      {"--k", HOST_OPT_LONG, &K, 1, 1 << 20},
  };
  int st = host_parse_options(argc, argv, "[--m N] [--n N] [--k N] [--device auto|cpu|cuda]", opts,
                              HOST_NOPTS(opts), &device_name);
  if (st >= 0) return st;

  TilertConfig cfg = {0};
  TilertContext *ctx = host_context_open(device_name, &cfg);
  if (!ctx) return 1;
  TilertDevice dev = tilert_context_device(ctx);
  TilertModule *mod = NULL;
  TilertKernel *kern =
      host_load_kernel(ctx, host_example_path("gemm_bias_gelu.tile"), NULL, 0, "gemm_bias_gelu", &mod);
  if (!kern) {
    tilert_context_destroy(ctx);
    return 1;
  }

  uint64_t seed = host_seed();
  printf("gemm_bias_gelu: %ld x %ld x %ld, f16, device %s, seed %llu\n", M, N, K,
         dev == TILERT_DEVICE_CUDA ? "cuda" : "cpu", (unsigned long long)seed);
  HostRng rng;
  host_rng_init(&rng, seed);
  DLDataType f16 = {kDLFloat, 16, 1};
  HostTensor a, b, bias, c;
  memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&bias, 0, sizeof bias), memset(&c, 0, sizeof c);
  int status = 0;
  if (!host_tensor_init(&a, f16, 2, (int64_t[]){M, K}, ctx) || !host_tensor_init(&b, f16, 2, (int64_t[]){K, N}, ctx) ||
      !host_tensor_init(&bias, f16, 1, (int64_t[]){N}, ctx) || !host_tensor_init(&c, f16, 2, (int64_t[]){M, N}, ctx)) {
    fprintf(stderr, "error: out of memory\n");
    status = 1;
    goto done;
  }
  host_tensor_fill_uniform(&a, &rng, -1, 1);
  host_tensor_fill_uniform(&b, &rng, -1, 1);
  host_tensor_fill_uniform(&bias, &rng, -1, 1);
  host_tensor_poison(&c);
  TilertArg args[] = {tilert_arg_tensor(&a.dl), tilert_arg_tensor(&b.dl), tilert_arg_tensor(&bias.dl),
                      tilert_arg_tensor(&c.dl)};
  HostTensor *tensors[] = {&a, &b, &bias, &c};
  double ms = 0;
  if (!host_launch_timed(ctx, kern, args, 4, tensors, 4, &c, 1, &ms)) {
    status = 1;
    goto done;
  }
  double *ref = malloc(c.numel * sizeof *ref);
  host_ref_gemm_bias_gelu(&a, &b, &bias, ref);
  HostError e = host_compare(&c, ref);
  free(ref);
  /* f32 accumulation and erf, one rounding to f16: 4 f16 ulps of max|C|. */
  double bound = 4 * host_dtype_eps(f16);
  printf("  time: %.3f ms (with copies)\n", ms);
  printf("  max abs error %.3e, %.3e relative to max|ref| (bound %.1e)\n", e.max_abs, e.rel_to_max, bound);
  if (!host_error_ok(&e, bound)) {
    fprintf(stderr, "FAILED: %zu non-finite outputs, error %.3e > %.1e (worst at element %zu)\n", e.nonfinite,
            e.rel_to_max, bound, e.worst);
    status = 1;
  } else {
    printf("  OK\n");
  }

done:
  host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&bias), host_tensor_free(&c);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  return status;
}
