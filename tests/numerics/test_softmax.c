/* test_softmax.c - examples/softmax.tile against a double-precision
 * reference.
 *
 *   test_softmax [--n N] --rows M,M,... [--block-m BM] [--device cpu|cuda]
 *
 * N (a const of the kernel, default 256) is bound with -D when given; M stays
 * dynamic and one load serves every row count. Row counts that are not a
 * multiple of block_M exercise the zero-filled tail tile that must not be
 * written back. */
#include "numerics.h"

#include <math.h>

/* All arithmetic is f32: the exp2 argument (x - max) * log2(e), |arg| <= ~60
 * for inputs in [-20, 20], carries an absolute error of a few 2^-24 * 60, i.e.
 * ~1e-5 relative in exp2; then a sum of N terms and one division. 1e-4
 * relative to max|ref| is ~10x that; forgetting the row max or normalizing by
 * a wrong row's sum is off by orders of magnitude. */
static const double bound = 1e-4;

int main(int argc, char **argv) {
  const char *n_value = NULL, *block_m = NULL;
  long n = 256, rows[16];
  int nrows = 0;
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (host_opt(argc, argv, &i, "--n", &v)) {
      n = host_parse_long("--n", v, 1, 1 << 16);
      n_value = v;
    } else if (host_opt(argc, argv, &i, "--block-m", &v)) {
      host_parse_long("--block-m", v, 1, 1 << 16);
      block_m = v;
    } else if (host_opt(argc, argv, &i, "--rows", &v)) {
      num_arg_list("--rows", v, rows, &nrows, 1 << 24);
    } else if (host_opt(argc, argv, &i, "--device", &v)) {
      if (!num_arg_device(v, &device)) return 2;
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (nrows == 0) {
    fprintf(stderr, "--rows is required\n");
    return 2;
  }

  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  TilecDefine defs[2];
  int ndefs = 0;
  if (n_value) defs[ndefs++] = (TilecDefine){"N", n_value};
  if (block_m) defs[ndefs++] = (TilecDefine){"block_M", block_m};
  printf("softmax: N %ld, block_M %s, M dynamic\n", n, block_m ? block_m : "default");

  TilertModule *mod = num_load(&env, "softmax.tile", defs, ndefs);
  TilertKernel *kern = NULL;
  if (mod && tilert_module_get_kernel(mod, "softmax", &kern) == TILERT_OK) {
    DLDataType f32 = {kDLFloat, 32, 1};
    for (int r = 0; r < nrows; r++) {
      int64_t shape[2] = {rows[r], n};
      HostTensor x, y;
      bool ok = host_tensor_init(&x, f32, 2, shape, env.ctx) &&
                host_tensor_init(&y, f32, 2, shape, env.ctx);
      NUM_CHECK(ok, "allocating");
      if (!ok) return 1;
      host_tensor_fill_uniform(&x, &env.rng, -20, 20);
      host_tensor_poison(&y);
      NUM_CHECK(host_tensor_upload(&x) && host_tensor_upload(&y), "upload failed");
      TilertArg args[] = {tilert_arg_tensor(&x.dl), tilert_arg_tensor(&y.dl)};
      TilertStatus st = tilert_launch(kern, args, 2, NULL);
      NUM_CHECK(st == TILERT_OK, "launch M=%ld: %s: %s", rows[r], tilert_strerror(st),
                tilert_last_error(env.ctx));
      if (st == TILERT_OK) {
        NUM_CHECK(host_tensor_download(&y), "download failed");
        double *ref = malloc(y.numel * sizeof *ref);
        host_ref_softmax(&x, ref);
        HostError e = host_compare(&y, ref);
        printf("  M %ld: max abs %.3e, rel to max|ref| %.3e (bound %.0e), %zu non-finite\n",
               rows[r], e.max_abs, e.rel_to_max, bound, e.nonfinite);
        NUM_CHECK(host_error_ok(&e, bound),
                  "M=%ld: error %.3e (bound %.0e), %zu non-finite; worst Y[%zu][%zu]: out %g ref %g",
                  rows[r], e.rel_to_max, bound, e.nonfinite, e.worst / (size_t)n,
                  e.worst % (size_t)n, host_tensor_get(&y, e.worst), ref[e.worst]);
        free(ref);
      }
      host_tensor_free(&x), host_tensor_free(&y);
    }
  } else {
    NUM_CHECK(false, "no kernel softmax: %s", tilert_last_error(env.ctx));
  }
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_softmax");
}
