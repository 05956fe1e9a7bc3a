/* gemm_main.c - runs examples/gemm.tile (C = A @ B, f32 accumulation) on
 * random inputs through libtilert and checks it against a double-precision
 * reference.
 *
 *   gemm [--m N] [--n N] [--k N] [--dtype f16|bf16] [--device auto|cpu|cuda]
 *        [--block-m N --block-n N --block-k N] [--iters N]
 *
 * M, N and K stay dynamic; the block sizes are bound with -D when given.
 * Exit status: 0 correct, 1 wrong result or runtime error, 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "tilert.h"

int main(int argc, char **argv) {
  long M = 512, N = 512, K = 512, iters = 0;
  const char *blocks[3] = {NULL, NULL, NULL}; /* block_M, block_N, block_K */
  const char *dtype_name = "f16", *device_name = "auto";
  DLDataType dtype = {kDLFloat, 16, 1};
  const HostOption opts[] = {
      {"--m", HOST_OPT_LONG, &M, 1, 1 << 20},
      {"--n", HOST_OPT_LONG, &N, 1, 1 << 20},
      {"--k", HOST_OPT_LONG, &K, 1, 1 << 20},
      {"--iters", HOST_OPT_LONG, &iters, 1, 100000},
      {"--block-m", HOST_OPT_TEXT, &blocks[0]},
      {"--block-n", HOST_OPT_TEXT, &blocks[1]},
      {"--block-k", HOST_OPT_TEXT, &blocks[2]},
      {"--dtype", HOST_OPT_CHOICE, &dtype_name, .choices = "f16|bf16"},
  };
  int st = host_parse_options(argc, argv,
                              "[--m N] [--n N] [--k N] [--dtype f16|bf16] [--device auto|cpu|cuda]\n"
                              "          [--block-m N] [--block-n N] [--block-k N] [--iters N]",
                              opts, HOST_NOPTS(opts), &device_name);
  if (st >= 0) return st;
  host_dtype_parse(dtype_name, &dtype);

  TilertConfig cfg = {0};
  TilertContext *ctx = host_context_open(device_name, &cfg);
  if (!ctx) return 1;
  TilertDevice dev = tilert_context_device(ctx);
  if (iters == 0) iters = dev == TILERT_DEVICE_CUDA ? 20 : 1;

  TilecDefine defs[4] = {{"dtype", dtype_name}};
  int ndefs = 1;
  static const char *const block_names[3] = {"block_M", "block_N", "block_K"};
  for (int b = 0; b < 3; b++)
    if (blocks[b]) defs[ndefs++] = (TilecDefine){block_names[b], blocks[b]};

  TilertModule *mod = NULL;
  double t0 = host_now_ms();
  TilertKernel *kern = host_load_kernel(ctx, host_example_path("gemm.tile"), defs, ndefs, "gemm", &mod);
  if (!kern) {
    tilert_context_destroy(ctx);
    return 1;
  }
  double load_ms = host_now_ms() - t0;

  uint64_t seed = host_seed();
  printf("gemm: %ld x %ld x %ld, %s, device %s, seed %llu\n", M, N, K, dtype_name,
         dev == TILERT_DEVICE_CUDA ? "cuda" : "cpu", (unsigned long long)seed);
  HostRng rng;
  host_rng_init(&rng, seed);
  HostTensor a, b, c;
  memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&c, 0, sizeof c);
  int status = 0;
  if (!host_tensor_init(&a, dtype, 2, (int64_t[]){M, K}, ctx) ||
      !host_tensor_init(&b, dtype, 2, (int64_t[]){K, N}, ctx) ||
      !host_tensor_init(&c, dtype, 2, (int64_t[]){M, N}, ctx)) {
    fprintf(stderr, "error: out of memory\n");
    status = 1;
    goto done;
  }
  host_tensor_fill_uniform(&a, &rng, -1, 1);
  host_tensor_fill_uniform(&b, &rng, -1, 1);
  host_tensor_poison(&c);
  TilertArg args[] = {tilert_arg_tensor(&a.dl), tilert_arg_tensor(&b.dl), tilert_arg_tensor(&c.dl)};
  HostTensor *tensors[] = {&a, &b, &c};
  double best = 0;
  if (!host_launch_timed(ctx, kern, args, 3, tensors, 3, &c, iters, &best)) {
    status = 1;
    goto done;
  }

  double *ref = malloc(c.numel * sizeof *ref);
  host_ref_gemm(&a, &b, ref);
  HostError e = host_compare(&c, ref);
  free(ref);
  /* f32 accumulation over K terms (error ~K * 2^-24, negligible) and one
   * rounding of C to the dtype (u = 2^-11 f16, 2^-8 bf16, relative to each
   * element, so at most u * max|ref|): 4u leaves room for both. */
  double bound = 4 * host_dtype_eps(dtype);
  printf("  load (compile or cache): %.1f ms%s\n", load_ms,
         tilert_module_from_cache(mod) ? " (cache hit)" : "");
  printf("  time: %.3f ms (best of %ld), %.3f TFLOP/s\n", best, iters,
         2.0 * M * N * K / (best * 1e9));
  printf("  max abs error %.3e, %.3e relative to max|ref| %.3e (bound %.1e), max rel %.3e\n",
         e.max_abs, e.rel_to_max, e.max_ref, bound, e.max_rel);
  if (!host_error_ok(&e, bound)) {
    fprintf(stderr, "FAILED: %zu non-finite outputs, error %.3e > %.1e (worst at element %zu)\n",
            e.nonfinite, e.rel_to_max, bound, e.worst);
    status = 1;
  } else {
    printf("  OK\n");
  }

done:
  host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&c);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  return status;
}
