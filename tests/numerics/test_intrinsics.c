/* test_intrinsics.c - every math intrinsic (tests/numerics/intrinsics.tile)
 * against libm in double precision.
 *
 *   test_intrinsics --file intrinsics.tile [--dtype f32|f64] [--device cpu|cuda]
 *
 * n = 1000 elements (not a multiple of the kernel's block of 64: the last
 * block is guarded). x and z in [-4, 4], y in [1/8, 4] (the domain of rsqrt,
 * log, pow's base). The first inputs are the halfway cases of round (half
 * away from zero, as C's round) and floor's negative side. An output is
 * correct when |out - ref| <= ulps * eps(T) * (|ref| + 1): relative for
 * results above 1, absolute near 0 (where log's and sin's fast versions are
 * specified absolutely). ulps: 4 for the CPU (glibc is within 2 ulps, and
 * sigmoid/rsqrt round twice), 16 for CUDA's fast f32 functions (__expf:
 * 2 + 1.2|x| ulps, __logf, rsqrtf, powf: up to 4); a wrong function or a
 * swapped argument is off by far more. */
#include "numerics.h"

#include <math.h>

enum { N = 1000, NFUNCS = 16 };

static const char *const names[NFUNCS] = {"tanh", "erf", "sigmoid", "rsqrt", "sin", "cos",
                                          "floor", "round", "pow", "fma", "exp", "log",
                                          "exp2", "log2", "sqrt", "abs"};

/* Row f of the kernel's output, computed in double. */
static double reference(int f, double x, double y, double z) {
  switch (f) {
  case 0: return tanh(x);
  case 1: return erf(x);
  case 2: return 1.0 / (1.0 + exp(-x));
  case 3: return 1.0 / sqrt(y);
  case 4: return sin(x);
  case 5: return cos(x);
  case 6: return floor(x);
  case 7: return round(x);
  case 8: return pow(y, x);
  case 9: return fma(x, y, z);
  case 10: return exp(x);
  case 11: return log(y);
  case 12: return exp2(x);
  case 13: return log2(y);
  case 14: return sqrt(y);
  default: return fabs(x);
  }
}

int main(int argc, char **argv) {
  const char *file = NULL, *dtype = "f32";
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (host_opt(argc, argv, &i, "--file", &v)) {
      file = v;
    } else if (host_opt(argc, argv, &i, "--dtype", &v)) {
      dtype = v;
    } else if (host_opt(argc, argv, &i, "--device", &v)) {
      if (!num_arg_device(v, &device)) return 2;
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  bool f64 = strcmp(dtype, "f64") == 0;
  if (!file || (!f64 && strcmp(dtype, "f32") != 0)) {
    fprintf(stderr, "usage: test_intrinsics --file intrinsics.tile [--dtype f32|f64] [--device cpu|cuda]\n");
    return 2;
  }

  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  double eps = f64 ? 0x1p-52 : 0x1p-23;
  double ulps = device == TILERT_DEVICE_CUDA && !f64 ? 16 : 4;
  printf("intrinsics: %s, n %d, bound %g ulps\n", dtype, N, ulps);

  TilecDefine defs[] = {{"T", dtype}};
  TilertModule *mod = num_load_path(&env, file, defs, 1);
  TilertKernel *kern = NULL;
  if (mod && tilert_module_get_kernel(mod, "intrinsics", &kern) == TILERT_OK) {
    DLDataType t = {kDLFloat, f64 ? 64 : 32, 1};
    int64_t n = N, out_shape[2] = {NFUNCS, N};
    HostTensor x, y, z, o;
    bool ok = host_tensor_init(&x, t, 1, &n, env.ctx) && host_tensor_init(&y, t, 1, &n, env.ctx) &&
              host_tensor_init(&z, t, 1, &n, env.ctx) && host_tensor_init(&o, t, 2, out_shape, env.ctx);
    NUM_CHECK(ok, "allocating");
    if (!ok) return 1;
    host_tensor_fill_uniform(&x, &env.rng, -4, 4);
    host_tensor_fill_uniform(&y, &env.rng, 0.125, 4);
    host_tensor_fill_uniform(&z, &env.rng, -4, 4);
    static const double edges[] = {2.5, -2.5, 0.5, -0.5, 0.0, -3.0, 3.75, -0.25};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) host_tensor_set(&x, i, edges[i]);
    host_tensor_poison(&o);
    NUM_CHECK(host_tensor_upload(&x) && host_tensor_upload(&y) && host_tensor_upload(&z) &&
                  host_tensor_upload(&o), "upload failed");
    TilertArg args[] = {tilert_arg_tensor(&x.dl), tilert_arg_tensor(&y.dl), tilert_arg_tensor(&z.dl),
                        tilert_arg_tensor(&o.dl)};
    TilertStatus st = tilert_launch(kern, args, 4, NULL);
    NUM_CHECK(st == TILERT_OK, "launch: %s: %s", tilert_strerror(st), tilert_last_error(env.ctx));
    if (st == TILERT_OK) {
      NUM_CHECK(host_tensor_download(&o), "download failed");
      for (int f = 0; f < NFUNCS; f++) {
        double worst = 0; /* in units of the bound */
        int worst_i = 0;
        for (int i = 0; i < N; i++) {
          double xi = host_tensor_get(&x, i), yi = host_tensor_get(&y, i), zi = host_tensor_get(&z, i);
          double ref = reference(f, xi, yi, zi), out = host_tensor_get(&o, (size_t)f * N + i);
          double err = fabs(out - ref) / (ulps * eps * (fabs(ref) + 1));
          if (!(err <= worst)) worst = isnan(err) ? INFINITY : err, worst_i = i;
        }
        double xi = host_tensor_get(&x, worst_i), yi = host_tensor_get(&y, worst_i);
        double zi = host_tensor_get(&z, worst_i);
        printf("  %-8s worst %.3f of the bound at x %g y %g z %g\n", names[f], worst, xi, yi, zi);
        NUM_CHECK(worst <= 1, "%s(x %.17g, y %.17g, z %.17g) = %.17g, libm %.17g", names[f], xi, yi, zi,
                  host_tensor_get(&o, (size_t)f * N + worst_i), reference(f, xi, yi, zi));
      }
      /* round is half away from zero (C's round, CUDA's roundf), not to even. */
      NUM_CHECK(host_tensor_get(&o, 7 * N + 0) == 3.0 && host_tensor_get(&o, 7 * N + 1) == -3.0 &&
                    host_tensor_get(&o, 7 * N + 2) == 1.0,
                "round(2.5, -2.5, 0.5) = %g, %g, %g; expected 3, -3, 1", host_tensor_get(&o, 7 * N),
                host_tensor_get(&o, 7 * N + 1), host_tensor_get(&o, 7 * N + 2));
    }
    host_tensor_free(&x), host_tensor_free(&y), host_tensor_free(&z), host_tensor_free(&o);
  } else {
    NUM_CHECK(false, "no kernel intrinsics: %s", tilert_last_error(env.ctx));
  }
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_intrinsics");
}
