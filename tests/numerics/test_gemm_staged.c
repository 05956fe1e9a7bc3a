/* test_gemm_staged.c - tests/numerics/gemm_staged.tile against a
 * double-precision reference: gemm_ta (C = A^T @ B, A stored [K, M]) and
 * gemm_bfrag (C = A @ (2 B), B in a fragment). On the GPU both run through
 * the staging infer-layout inserts (shared tc_at_* / tc_b_* tiles).
 *
 *   test_gemm_staged --kernel gemm_ta|gemm_bfrag [--dtype f16|bf16]
 *                    [--define N=V]... --shapes MxNxK,... [--device cpu|cuda] */
#include "numerics.h"

#include <math.h>

int main(int argc, char **argv) {
  const char *kernel = NULL, *dtype_name = "f16";
  DLDataType dtype = {kDLFloat, 16, 1};
  NumDefines extra = {0};
  int nshapes = 0;
  NumShape shapes[16];
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (num_arg_common(argc, argv, &i, &dtype, &dtype_name, &extra, &device)) continue;
    if (host_opt(argc, argv, &i, "--kernel", &v)) {
      kernel = v;
    } else if (host_opt(argc, argv, &i, "--shapes", &v)) {
      if (!num_arg_shapes(v, shapes, &nshapes)) return 2;
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  bool ta = kernel && strcmp(kernel, "gemm_ta") == 0;
  if (!kernel || (!ta && strcmp(kernel, "gemm_bfrag") != 0) || nshapes == 0) {
    fprintf(stderr, "want --kernel gemm_ta|gemm_bfrag --shapes MxNxK,...\n");
    return 2;
  }
  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  TilecDefine defs[1 + NUM_MAX_DEFINES];
  int ndefs = 0;
  defs[ndefs++] = (TilecDefine){"dtype", dtype_name};
  num_add_defines(&extra, defs, &ndefs);
  TilertModule *mod = num_load_path(&env, TILEC_NUMERICS_DIR "/gemm_staged.tile", defs, ndefs);
  TilertKernel *kern = NULL;
  if (mod && tilert_module_get_kernel(mod, kernel, &kern) == TILERT_OK) {
    printf("%s: %s\n", kernel, dtype_name);
    for (int s = 0; s < nshapes; s++) {
      long M = shapes[s].m, N = shapes[s].n, K = shapes[s].k;
      HostTensor a, b, c;
      int64_t ashape[2] = {ta ? K : M, ta ? M : K};
      bool ok = host_tensor_init(&a, dtype, 2, ashape, env.ctx) &&
                host_tensor_init(&b, dtype, 2, (int64_t[]){K, N}, env.ctx) &&
                host_tensor_init(&c, dtype, 2, (int64_t[]){M, N}, env.ctx);
      NUM_CHECK(ok, "allocating");
      if (!ok) return 1;
      host_tensor_fill_uniform(&a, &env.rng, -1, 1);
      host_tensor_fill_uniform(&b, &env.rng, -1, 1);
      host_tensor_poison(&c);
      NUM_CHECK(host_tensor_upload(&a) && host_tensor_upload(&b) && host_tensor_upload(&c), "upload failed");
      TilertArg args[] = {tilert_arg_tensor(&a.dl), tilert_arg_tensor(&b.dl), tilert_arg_tensor(&c.dl)};
      TilertStatus st = tilert_launch(kern, args, 3, NULL);
      NUM_CHECK(st == TILERT_OK, "launch %ldx%ldx%ld: %s", M, N, K, tilert_last_error(env.ctx));
      if (st == TILERT_OK) {
        NUM_CHECK(host_tensor_download(&c), "download failed");
        double *A = host_tensor_to_double(&a), *B = host_tensor_to_double(&b);
        double *ref = calloc((size_t)(M * N), sizeof *ref);
        for (long i = 0; i < M; i++)
          for (long k = 0; k < K; k++) {
            double x = ta ? A[k * M + i] : A[i * K + k];
            for (long j = 0; j < N; j++) ref[i * N + j] += x * (ta ? 1.0 : 2.0) * B[k * N + j];
          }
        HostError e = host_compare(&c, ref);
        /* f32 accumulation, one rounding of C (and of 2 B: exact). */
        double bound = 4 * host_dtype_eps(dtype);
        printf("  %ldx%ldx%ld: rel to max|ref| %.3e (bound %.1e), %zu non-finite\n", M, N, K, e.rel_to_max, bound,
               e.nonfinite);
        NUM_CHECK(host_error_ok(&e, bound), "%ldx%ldx%ld: error %.3e; worst C[%zu][%zu]: out %g ref %g", M, N, K,
                  e.rel_to_max, e.worst / (size_t)N, e.worst % (size_t)N, host_tensor_get(&c, e.worst),
                  ref[e.worst]);
        free(A), free(B), free(ref);
      }
      host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&c);
    }
  } else {
    NUM_CHECK(false, "no kernel %s: %s", kernel, tilert_last_error(env.ctx));
  }
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_gemm_staged");
}
