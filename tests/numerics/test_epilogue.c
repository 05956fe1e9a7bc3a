/* test_epilogue.c - the broadcast-vector examples against double-precision
 * references: examples/gemm_bias_gelu.tile (a bias row read as bias[j] beside
 * the gemm accumulator) and examples/rmsnorm.tile (a weight vector read as
 * w[j] beside x[i, j], a row vector read as inv[i]).
 *
 *   test_epilogue --kernel gemm_bias_gelu [--dtype f16|bf16] [--define N=V]...
 *                 --shapes MxNxK,... [--device cpu|cuda]
 *   test_epilogue --kernel rmsnorm [--dtype f32|f16|bf16] [--define N=V]...
 *                 --n N --rows M,... [--device cpu|cuda]
 *
 * Sizes stay dynamic (one load serves every shape), except rmsnorm's N, a
 * compile-time constant bound with -D. */
#include "numerics.h"

#include <math.h>

typedef NumShape Shape;

static void check(const char *what, const HostTensor *out, const double *ref, double bound, long ncols) {
  HostError e = host_compare(out, ref);
  printf("  %s: max abs %.3e, rel to max|ref| %.3e (bound %.1e), %zu non-finite\n", what, e.max_abs,
         e.rel_to_max, bound, e.nonfinite);
  NUM_CHECK(host_error_ok(&e, bound), "%s: error %.3e (bound %.1e), %zu non-finite; worst [%zu][%zu]: out %g ref %g",
            what, e.rel_to_max, bound, e.nonfinite, e.worst / (size_t)ncols, e.worst % (size_t)ncols,
            host_tensor_get(out, e.worst), ref[e.worst]);
}

/* f32 accumulation and f32 erf (a few ulp), then one rounding of C to the
 * dtype: 4u of the dtype as in test_gemm.c. A bias added to the wrong
 * column is off by the bias (uniform in [-1, 1], ~1/3 of max|C|). */
static void run_gemm(NumEnv *env, TilertKernel *kern, DLDataType dtype, Shape s) {
  HostTensor a, b, bias, c;
  char what[64];
  snprintf(what, sizeof what, "%ldx%ldx%ld", s.m, s.n, s.k);
  bool ok = host_tensor_init(&a, dtype, 2, (int64_t[]){s.m, s.k}, env->ctx) &&
            host_tensor_init(&b, dtype, 2, (int64_t[]){s.k, s.n}, env->ctx) &&
            host_tensor_init(&bias, dtype, 1, (int64_t[]){s.n}, env->ctx) &&
            host_tensor_init(&c, dtype, 2, (int64_t[]){s.m, s.n}, env->ctx);
  NUM_CHECK(ok, "allocating %s", what);
  if (!ok) exit(1);
  host_tensor_fill_uniform(&a, &env->rng, -1, 1);
  host_tensor_fill_uniform(&b, &env->rng, -1, 1);
  host_tensor_fill_uniform(&bias, &env->rng, -1, 1);
  host_tensor_poison(&c);
  NUM_CHECK(host_tensor_upload(&a) && host_tensor_upload(&b) && host_tensor_upload(&bias) && host_tensor_upload(&c),
            "upload failed");
  TilertArg args[] = {tilert_arg_tensor(&a.dl), tilert_arg_tensor(&b.dl), tilert_arg_tensor(&bias.dl),
                      tilert_arg_tensor(&c.dl)};
  TilertStatus st = tilert_launch(kern, args, 4, NULL);
  NUM_CHECK(st == TILERT_OK, "launch %s: %s: %s", what, tilert_strerror(st), tilert_last_error(env->ctx));
  if (st == TILERT_OK) {
    NUM_CHECK(host_tensor_download(&c), "download failed");
    double *ref = malloc(c.numel * sizeof *ref);
    host_ref_gemm_bias_gelu(&a, &b, &bias, ref);
    check(what, &c, ref, 4 * host_dtype_eps(dtype), s.n);
    free(ref);
  }
  host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&bias), host_tensor_free(&c);
}

/* A sum of N f32 squares (~N * 2^-24 relative), rsqrt (GPU: rsqrtf, 2 ulp),
 * two products, then one rounding to the dtype: 4u of the dtype (u = 2^-24
 * for f32, so 1e-5 there). A weight taken from the wrong column is off by
 * O(1) relative. */
static void run_rmsnorm(NumEnv *env, TilertKernel *kern, DLDataType dtype, long n, long m) {
  HostTensor x, w, y;
  char what[64];
  snprintf(what, sizeof what, "M %ld, N %ld", m, n);
  bool ok = host_tensor_init(&x, dtype, 2, (int64_t[]){m, n}, env->ctx) &&
            host_tensor_init(&w, dtype, 1, (int64_t[]){n}, env->ctx) &&
            host_tensor_init(&y, dtype, 2, (int64_t[]){m, n}, env->ctx);
  NUM_CHECK(ok, "allocating %s", what);
  if (!ok) exit(1);
  host_tensor_fill_uniform(&x, &env->rng, -3, 3);
  host_tensor_fill_uniform(&w, &env->rng, 0.5, 1.5);
  host_tensor_poison(&y);
  NUM_CHECK(host_tensor_upload(&x) && host_tensor_upload(&w) && host_tensor_upload(&y), "upload failed");
  TilertArg args[] = {tilert_arg_tensor(&x.dl), tilert_arg_tensor(&w.dl), tilert_arg_tensor(&y.dl)};
  TilertStatus st = tilert_launch(kern, args, 3, NULL);
  NUM_CHECK(st == TILERT_OK, "launch %s: %s: %s", what, tilert_strerror(st), tilert_last_error(env->ctx));
  if (st == TILERT_OK) {
    NUM_CHECK(host_tensor_download(&y), "download failed");
    double *ref = malloc(y.numel * sizeof *ref);
    host_ref_rmsnorm(&x, &w, 1e-6, ref);
    double eps = host_dtype_eps(dtype);
    check(what, &y, ref, eps < 1e-6 ? 1e-5 : 4 * eps, n);
    free(ref);
  }
  host_tensor_free(&x), host_tensor_free(&w), host_tensor_free(&y);
}

int main(int argc, char **argv) {
  const char *kernel = NULL, *dtype_name = NULL, *n_value = NULL;
  DLDataType dtype = {kDLFloat, 16, 1};
  NumDefines extra = {0};
  int nshapes = 0, nrows = 0;
  Shape shapes[16];
  long rows[16], n = 0;
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (num_arg_common(argc, argv, &i, &dtype, &dtype_name, &extra, &device)) continue;
    if (host_opt(argc, argv, &i, "--kernel", &v)) {
      kernel = v;
    } else if (host_opt(argc, argv, &i, "--shapes", &v)) {
      if (!num_arg_shapes(v, shapes, &nshapes)) return 2;
    } else if (host_opt(argc, argv, &i, "--n", &v)) {
      n = host_parse_long("--n", v, 1, 1 << 16);
      n_value = v;
    } else if (host_opt(argc, argv, &i, "--rows", &v)) {
      num_arg_list("--rows", v, rows, &nrows, 1 << 24);
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  bool gemm = kernel && strcmp(kernel, "gemm_bias_gelu") == 0;
  bool norm = kernel && strcmp(kernel, "rmsnorm") == 0;
  if ((!gemm && !norm) || (gemm && nshapes == 0) || (norm && (!n_value || nrows == 0))) {
    fprintf(stderr, "want --kernel gemm_bias_gelu --shapes ... or --kernel rmsnorm --n N --rows ...\n");
    return 2;
  }
  if (!dtype_name) {
    dtype_name = gemm ? "f16" : "f32";
    host_dtype_parse(dtype_name, &dtype);
  }

  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  TilecDefine defs[2 + NUM_MAX_DEFINES];
  int ndefs = 0;
  defs[ndefs++] = (TilecDefine){"dtype", dtype_name};
  if (norm) defs[ndefs++] = (TilecDefine){"N", n_value};
  num_add_defines(&extra, defs, &ndefs);
  printf("%s: %s\n", kernel, dtype_name);
  char file[64];
  snprintf(file, sizeof file, "%s.tile", kernel);
  TilertModule *mod = num_load(&env, file, defs, ndefs);
  TilertKernel *kern = NULL;
  if (mod && tilert_module_get_kernel(mod, kernel, &kern) == TILERT_OK) {
    if (gemm)
      for (int s = 0; s < nshapes; s++) run_gemm(&env, kern, dtype, shapes[s]);
    else
      for (int r = 0; r < nrows; r++) run_rmsnorm(&env, kern, dtype, n, rows[r]);
  } else {
    NUM_CHECK(false, "no kernel %s: %s", kernel, tilert_last_error(env.ctx));
  }
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_epilogue");
}
