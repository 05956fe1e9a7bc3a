/* softmax_main.c - runs examples/softmax.tile (row softmax of an f32 matrix)
 * through libtilert on random inputs and checks it against a double-precision
 * reference.
 *
 *   softmax [--m N] [--n N] [--block-m N] [--device auto|cpu|cuda]
 *
 * N is a compile-time constant of the kernel (bound here with -D N=...); M is
 * dynamic. On the GPU the [block_M, N] fragment need not spread evenly over
 * the threads (N = 100 pads the last column slot). Exit status: 0 correct, 1
 * wrong result or runtime error, 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "tilert.h"

int main(int argc, char **argv) {
  long M = 1000, N = 256;
  const char *device_name = "auto", *block_m = NULL;
  const HostOption opts[] = {
      {"--m", HOST_OPT_LONG, &M, 1, 1 << 24},
      {"--n", HOST_OPT_LONG, &N, 1, 1 << 16},
      {"--block-m", HOST_OPT_LONG_TEXT, &block_m, 1, 1 << 16},
  };
  int st = host_parse_options(argc, argv, "[--m N] [--n N] [--block-m N] [--device auto|cpu|cuda]",
                              opts, HOST_NOPTS(opts), &device_name);
  if (st >= 0) return st;

  TilertConfig cfg = {0};
  TilertContext *ctx = host_context_open(device_name, &cfg);
  if (!ctx) return 1;
  TilertDevice dev = tilert_context_device(ctx);

  char n_s[32];
  snprintf(n_s, sizeof n_s, "%ld", N);
  TilecDefine defs[] = {{"N", n_s}, {"block_M", block_m}};
  TilertModule *mod = NULL;
  TilertKernel *kern =
      host_load_kernel(ctx, host_example_path("softmax.tile"), defs, block_m ? 2 : 1, "softmax", &mod);
  if (!kern) {
    tilert_context_destroy(ctx);
    return 1;
  }

  uint64_t seed = host_seed();
  printf("softmax: %ld x %ld, device %s, seed %llu\n", M, N,
         dev == TILERT_DEVICE_CUDA ? "cuda" : "cpu", (unsigned long long)seed);
  HostRng rng;
  host_rng_init(&rng, seed);
  DLDataType f32 = {kDLFloat, 32, 1};
  int64_t shape[2] = {M, N};
  HostTensor x, y;
  memset(&x, 0, sizeof x), memset(&y, 0, sizeof y);
  int status = 0;
  if (!host_tensor_init(&x, f32, 2, shape, ctx) || !host_tensor_init(&y, f32, 2, shape, ctx)) {
    fprintf(stderr, "error: out of memory\n");
    status = 1;
    goto done;
  }
  /* A wide range, so that exp overflows unless the row max is subtracted. */
  host_tensor_fill_uniform(&x, &rng, -50, 100);
  host_tensor_poison(&y);
  TilertArg args[] = {tilert_arg_tensor(&x.dl), tilert_arg_tensor(&y.dl)};
  HostTensor *tensors[] = {&x, &y};
  double ms = 0;
  if (!host_launch_timed(ctx, kern, args, 2, tensors, 2, &y, 1, &ms)) {
    status = 1;
    goto done;
  }

  double *ref = malloc(y.numel * sizeof *ref);
  host_ref_softmax(&x, ref);
  HostError e = host_compare(&y, ref);
  free(ref);
  /* All f32: exp2 of a rounded argument (|arg| up to ~200, so an absolute
   * argument error of ~200 * 2^-24 gives ~1e-5 relative), a sum of N terms,
   * one division. 1e-4 relative to max|ref| covers it with margin. */
  double bound = 1e-4;
  printf("  time: %.3f ms (with copies)\n", ms);
  printf("  max abs error %.3e, %.3e relative to max|ref| (bound %.0e)\n", e.max_abs, e.rel_to_max,
         bound);
  if (!host_error_ok(&e, bound)) {
    fprintf(stderr, "FAILED: %zu non-finite outputs, error %.3e > %.0e (worst at element %zu)\n",
            e.nonfinite, e.rel_to_max, bound, e.worst);
    status = 1;
  } else {
    printf("  OK\n");
  }

done:
  host_tensor_free(&x), host_tensor_free(&y);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  return status;
}
