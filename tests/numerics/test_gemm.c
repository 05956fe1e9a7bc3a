/* test_gemm.c - examples/gemm.tile against a double-precision reference.
 *
 *   test_gemm [--dtype f16|bf16] [--blocks BM,BN,BK] [--define N=V]... [--bind]
 *             --shapes MxNxK,MxNxK,... [--device cpu|cuda] [--strided]
 *
 * Without --bind, M, N and K stay dynamic and one load serves every shape;
 * with --bind, each shape gets its own load with -D M= N= K=. --blocks binds
 * block_M, block_N and block_K (smaller tiles keep the CPU run short and put
 * the tile edges inside the matrix).
 *
 * --strided runs tests/numerics/gemm_strided.tile (strides (...) on A, B
 * and C) on views, without a copy: A with rows padded to K + 8, B the
 * columns [8, 8 + N) of a [K, N + 24] matrix, C the rows [1, 1 + M) of an
 * [M + 2, N + 8] matrix; every element of C's storage outside the view must
 * still be NaN afterwards. Where the kernel loads by TMA (sm_90a), each shape
 * runs again with A's pitch K + 1, which TMA cannot take: the runtime
 * stages A through a scratch copy (runtime/rt_repack.c; with
 * TILEC_TMA_STAGING=0 it launches the kernel's cp.async build), and the
 * result must be as good. */
#include "numerics.h"

#include <math.h>

/* f32 accumulation over K <= a few hundred terms (relative error ~K * 2^-24,
 * negligible) and one rounding of C to the dtype: at most u * max|ref| with
 * u = 2^-11 (f16) or 2^-8 (bf16). 4u leaves a margin; a dropped or doubled
 * K tile is off by far more (each K tile holds >= 1/ceil(K/block_K) of the sum). */
static double bound_for(DLDataType t) { return 4 * host_dtype_eps(t); }

typedef NumShape Shape;

static void run_shape(NumEnv *env, TilertKernel *kern, DLDataType dtype, Shape s) {
  HostTensor a, b, c;
  bool ok = host_tensor_init(&a, dtype, 2, (int64_t[]){s.m, s.k}, env->ctx) &&
            host_tensor_init(&b, dtype, 2, (int64_t[]){s.k, s.n}, env->ctx) &&
            host_tensor_init(&c, dtype, 2, (int64_t[]){s.m, s.n}, env->ctx);
  NUM_CHECK(ok, "allocating %ldx%ldx%ld", s.m, s.n, s.k);
  if (!ok) exit(1);
  host_tensor_fill_uniform(&a, &env->rng, -1, 1);
  host_tensor_fill_uniform(&b, &env->rng, -1, 1);
  host_tensor_poison(&c);
  NUM_CHECK(host_tensor_upload(&a) && host_tensor_upload(&b) && host_tensor_upload(&c),
            "upload failed");
  TilertArg args[] = {tilert_arg_tensor(&a.dl), tilert_arg_tensor(&b.dl), tilert_arg_tensor(&c.dl)};
  double t0 = host_now_ms();
  TilertStatus st = tilert_launch(kern, args, 3, NULL);
  double ms = host_now_ms() - t0;
  NUM_CHECK(st == TILERT_OK, "launch %ldx%ldx%ld: %s: %s", s.m, s.n, s.k, tilert_strerror(st),
            tilert_last_error(env->ctx));
  if (st == TILERT_OK) {
    NUM_CHECK(host_tensor_download(&c), "download failed");
    char label[96];
    snprintf(label, sizeof label, "%ldx%ldx%ld", s.m, s.n, s.k);
    num_check_gemm(label, &a, &b, &c, bound_for(dtype), ms);
  }
  host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&c);
}

/* run_shape on views (--strided); A's rows padded by pad_a elements. With
 * pad_a = 1 the row pitch of A is not a multiple of 16 bytes (K even): a
 * kernel that loads A by TMA (sm_90a) must stage A or run its cp.async
 * build. */
static void run_shape_strided(NumEnv *env, TilertKernel *kern, DLDataType dtype, Shape s, int64_t pad_a) {
  HostTensor sa, sb, sc, a, b, c;
  const int64_t pa = s.k + pad_a, pb = s.n + 24, pc = s.n + 8;
  bool ok = host_tensor_init(&sa, dtype, 2, (int64_t[]){s.m, pa}, env->ctx) &&
            host_tensor_init(&sb, dtype, 2, (int64_t[]){s.k, pb}, env->ctx) &&
            host_tensor_init(&sc, dtype, 2, (int64_t[]){s.m + 2, pc}, env->ctx) &&
            host_tensor_init(&a, dtype, 2, (int64_t[]){s.m, s.k}, NULL) &&
            host_tensor_init(&b, dtype, 2, (int64_t[]){s.k, s.n}, NULL) &&
            host_tensor_init(&c, dtype, 2, (int64_t[]){s.m, s.n}, NULL);
  NUM_CHECK(ok, "allocating %ldx%ldx%ld", s.m, s.n, s.k);
  if (!ok) exit(1);
  HostView va, vb, vc;
  host_view_init(&va, &sa, 2, (int64_t[]){s.m, s.k}, (int64_t[]){pa, 1}, 0);
  host_view_init(&vb, &sb, 2, (int64_t[]){s.k, s.n}, (int64_t[]){pb, 1}, 8);
  host_view_init(&vc, &sc, 2, (int64_t[]){s.m, s.n}, (int64_t[]){pc, 1}, pc);
  host_tensor_poison(&sa), host_tensor_poison(&sb), host_tensor_poison(&sc);
  host_tensor_fill_uniform(&a, &env->rng, -1, 1);
  host_tensor_fill_uniform(&b, &env->rng, -1, 1);
  host_view_scatter(&va, &sa, &a);
  host_view_scatter(&vb, &sb, &b);
  NUM_CHECK(host_tensor_upload(&sa) && host_tensor_upload(&sb) && host_tensor_upload(&sc), "upload failed");
  TilertArg args[] = {tilert_arg_tensor(&va.dl), tilert_arg_tensor(&vb.dl), tilert_arg_tensor(&vc.dl)};
  TilertStatus st = tilert_launch(kern, args, 3, NULL);
  NUM_CHECK(st == TILERT_OK, "launch %ldx%ldx%ld (views): %s: %s", s.m, s.n, s.k, tilert_strerror(st),
            tilert_last_error(env->ctx));
  if (st == TILERT_OK) {
    NUM_CHECK(host_tensor_download(&sc), "download failed");
    host_view_gather(&vc, &sc, &c);
    double *ref = malloc(c.numel * sizeof *ref);
    host_ref_gemm(&a, &b, ref);
    HostError e = host_compare(&c, ref);
    double bound = bound_for(dtype);
    size_t written = 0;
    for (size_t i = 0; i < sc.numel; i++) written += !isnan(host_tensor_get(&sc, i));
    printf("  %ldx%ldx%ld (views, pitches %lld/%lld/%lld): rel to max|ref| %.3e (bound %.1e), %zu non-finite, "
           "%zu of %zu storage elements of C written\n",
           s.m, s.n, s.k, (long long)pa, (long long)pb, (long long)pc, e.rel_to_max, bound, e.nonfinite, written,
           sc.numel);
    NUM_CHECK(host_error_ok(&e, bound), "%ldx%ldx%ld (views): error %.3e (bound %.1e), %zu non-finite", s.m, s.n,
              s.k, e.rel_to_max, bound, e.nonfinite);
    NUM_CHECK(written == c.numel, "%ldx%ldx%ld (views): %zu elements of C's storage written, the view has %zu",
              s.m, s.n, s.k, written, c.numel);
    free(ref);
  }
  host_tensor_free(&sa), host_tensor_free(&sb), host_tensor_free(&sc);
  host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&c);
}

int main(int argc, char **argv) {
  DLDataType dtype = {kDLFloat, 16, 1};
  const char *dtype_name = "f16";
  NumBlocks blocks = {"", "", ""};
  NumDefines extra = {0};
  bool bind = false, strided = false;
  Shape shapes[16];
  int nshapes = 0;
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (num_arg_common(argc, argv, &i, &dtype, &dtype_name, &extra, &device)) continue;
    if (strcmp(argv[i], "--bind") == 0) {
      bind = true;
    } else if (strcmp(argv[i], "--strided") == 0) {
      strided = true;
    } else if (host_opt(argc, argv, &i, "--blocks", &v)) {
      if (!num_arg_blocks(v, blocks)) return 2;
    } else if (host_opt(argc, argv, &i, "--shapes", &v)) {
      if (!num_arg_shapes(v, shapes, &nshapes)) return 2;
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (nshapes == 0) {
    fprintf(stderr, "--shapes is required\n");
    return 2;
  }

  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  printf("gemm%s: %s, blocks ", strided ? " (strided views)" : "", dtype_name);
  num_print_blocks(blocks);
  printf(", shapes %s\n", bind ? "bound with -D" : "dynamic");

  TilecDefine defs[1 + 3 + NUM_MAX_DEFINES + 3];
  int nbase = 0;
  defs[nbase++] = (TilecDefine){"dtype", dtype_name};
  num_add_blocks(blocks, defs, &nbase);
  num_add_defines(&extra, defs, &nbase);

  TilertModule *mod = NULL;
  TilertKernel *kern = NULL;
  for (int s = 0; s < nshapes; s++) {
    if (bind || !mod) {
      char dims[3][32];
      int ndefs = nbase;
      if (bind) num_add_dims(shapes[s], dims, defs, &ndefs);
      tilert_module_destroy(mod);
      kern = NULL;
      if (strided) {
        mod = num_load_path(&env, TILEC_NUMERICS_DIR "/gemm_strided.tile", defs, ndefs);
      } else {
        mod = num_load(&env, "gemm.tile", defs, ndefs);
      }
      if (!mod || tilert_module_get_kernel(mod, "gemm", &kern) != TILERT_OK) {
        NUM_CHECK(false, "no kernel gemm: %s", tilert_last_error(env.ctx));
        break;
      }
      const TilecKernelInfo *info = tilert_kernel_info(kern);
      const int want = (bind ? 0 : 3) + (strided ? 3 : 0); /* M, N, K; sa, sb, sc */
      NUM_CHECK(info && info->ndynamic == want, "expected %d dynamic symbols, got %d", want,
                info ? info->ndynamic : -1);
    }
    if (strided) {
      run_shape_strided(&env, kern, dtype, shapes[s], 8);
      if (tilert_kernel_info(kern)->ntensor_maps > 0) run_shape_strided(&env, kern, dtype, shapes[s], 1);
    } else {
      run_shape(&env, kern, dtype, shapes[s]);
    }
  }
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_gemm");
}
