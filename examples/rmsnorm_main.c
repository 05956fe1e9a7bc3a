/* rmsnorm_main.c - runs examples/rmsnorm.tile (Y = X / rms(X) * w, f32)
 * through libtilert on random inputs and checks it against a
 * double-precision reference.
 *
 *   rmsnorm [--m N] [--n N] [--device auto|cpu|cuda]
 *
 * N is a compile-time constant of the kernel (bound here with -D N=...; it
 * need not divide by the threads that share a row); M is dynamic. Exit
 * status: 0 correct, 1 wrong result or runtime error, 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "tilert.h"

int main(int argc, char **argv) {
  long M = 1000, N = 256;
  const char *device_name = "auto";
  const HostOption opts[] = {
      {"--m", HOST_OPT_LONG, &M, 1, 1 << 24},
      {"--n", HOST_OPT_LONG, &N, 1, 1 << 16},
  };
  int st = host_parse_options(argc, argv, "[--m N] [--n N] [--device auto|cpu|cuda]", opts,
                              HOST_NOPTS(opts), &device_name);
  if (st >= 0) return st;

  TilertConfig cfg = {0};
  TilertContext *ctx = host_context_open(device_name, &cfg);
  if (!ctx) return 1;
  TilertDevice dev = tilert_context_device(ctx);
  char n_s[32];
  snprintf(n_s, sizeof n_s, "%ld", N);
  TilecDefine defs[] = {{"N", n_s}};
  TilertModule *mod = NULL;
  TilertKernel *kern = host_load_kernel(ctx, host_example_path("rmsnorm.tile"), defs, 1, "rmsnorm", &mod);
  if (!kern) {
    tilert_context_destroy(ctx);
    return 1;
  }

  uint64_t seed = host_seed();
  printf("rmsnorm: %ld x %ld, f32, device %s, seed %llu\n", M, N, dev == TILERT_DEVICE_CUDA ? "cuda" : "cpu",
         (unsigned long long)seed);
  HostRng rng;
  host_rng_init(&rng, seed);
  DLDataType f32 = {kDLFloat, 32, 1};
  HostTensor x, w, y;
  memset(&x, 0, sizeof x), memset(&w, 0, sizeof w), memset(&y, 0, sizeof y);
  int status = 0;
  if (!host_tensor_init(&x, f32, 2, (int64_t[]){M, N}, ctx) || !host_tensor_init(&w, f32, 1, (int64_t[]){N}, ctx) ||
      !host_tensor_init(&y, f32, 2, (int64_t[]){M, N}, ctx)) {
    fprintf(stderr, "error: out of memory\n");
    status = 1;
    goto done;
  }
  host_tensor_fill_uniform(&x, &rng, -3, 3);
  host_tensor_fill_uniform(&w, &rng, 0.5, 1.5);
  host_tensor_poison(&y);
  TilertArg args[] = {tilert_arg_tensor(&x.dl), tilert_arg_tensor(&w.dl), tilert_arg_tensor(&y.dl)};
  HostTensor *tensors[] = {&x, &w, &y};
  double ms = 0;
  if (!host_launch_timed(ctx, kern, args, 3, tensors, 3, &y, 1, &ms)) {
    status = 1;
    goto done;
  }
  double *ref = malloc(y.numel * sizeof *ref);
  host_ref_rmsnorm(&x, &w, 1e-6, ref);
  HostError e = host_compare(&y, ref);
  free(ref);
  /* All f32: a sum of N squares, rsqrt (2 ulp on the GPU), two products. */
  double bound = 1e-5;
  printf("  time: %.3f ms (with copies)\n", ms);
  printf("  max abs error %.3e, %.3e relative to max|ref| (bound %.0e)\n", e.max_abs, e.rel_to_max, bound);
  if (!host_error_ok(&e, bound)) {
    fprintf(stderr, "FAILED: %zu non-finite outputs, error %.3e > %.0e (worst at element %zu)\n", e.nonfinite,
            e.rel_to_max, bound, e.worst);
    status = 1;
  } else {
    printf("  OK\n");
  }

done:
  host_tensor_free(&x), host_tensor_free(&w), host_tensor_free(&y);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  return status;
}
