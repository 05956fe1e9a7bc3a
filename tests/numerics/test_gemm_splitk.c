/* test_gemm_splitk.c - examples/gemm_splitk.tile (split-K gemm + the
 * deterministic reduce) against a double-precision reference.
 *
 *   test_gemm_splitk [--dtype f16|bf16] [--blocks BM,BN,BK] [--define N=V]... [--bind]
 *                    --splits S,S,... --shapes MxNxK,... [--device cpu|cuda]
 *
 * M, N, K and splits stay dynamic: one load serves every case; --bind
 * binds M, N and K with -D per shape (on sm_90a the copies become TMA
 * boxes: lower-tma), splits stays dynamic. For each
 * shape and split count: A and B uniform in [-1, 1], the partials P
 * [splits, M, N] and C poisoned with NaN, gemm_splitk then splitk_reduce (on
 * P and C viewed flat, as the host helper passes them), C compared to the
 * reference. A split count larger than K's tiles leaves splits without a K
 * range: they must write zeros (a skipped write would leave NaN in the sum).
 * Each case runs twice, and the two results must be equal bit for bit (the
 * reduce sums in a fixed order, no atomics).
 *
 * --fused: gemm_splitk_fused instead (one launch; the last block of each
 * tile to count itself in Counters sums the partials). Counters (i32, one
 * per C tile, exactly as many as the tiles) start at zero and must be zero
 * again after every launch; the second run reuses them as they are. Its C
 * must equal, bit for bit, the first run's and that of the two-kernel path
 * on the same inputs (both add P[0], P[1], ... in that order from 0).
 *
 * --thin: examples/gemm_thin.tile's gemm_thin (C^T = B^T A^T, the thin
 * product's kernel; --blocks and --define apply to it) as the partial
 * kernel, gemm_splitk.tile's splitk_reduce after it when splits > 1. With
 * one split gemm_thin writes C itself and must leave P untouched (still
 * NaN); no reduce runs. */
#include "numerics.h"

#include <math.h>

/* As test_gemm.c: f32 accumulation (the split order changes only f32
 * rounding, ~K * 2^-24) and one rounding of C to the dtype, bounded by
 * 4u * max|ref|; a dropped or doubled K range is off by far more. */
static double bound_for(DLDataType t) { return 4 * host_dtype_eps(t); }

typedef NumShape Shape;

/* splitk_reduce on P and C seen flat ([splits, M * N] and [M * N], as the
 * host helper passes them), then C downloaded. */
static bool launch_reduce(NumEnv *env, TilertKernel *reduce, HostTensor *p, HostTensor *c) {
  int64_t pshape[2] = {p->shape[0], p->shape[1] * p->shape[2]}, cshape[1] = {c->shape[0] * c->shape[1]};
  DLTensor pflat = p->dl, cflat = c->dl;
  pflat.ndim = 2, pflat.shape = pshape, pflat.strides = NULL;
  cflat.ndim = 1, cflat.shape = cshape, cflat.strides = NULL;
  TilertArg rargs[] = {tilert_arg_tensor(&pflat), tilert_arg_tensor(&cflat)};
  TilertStatus st = tilert_launch(reduce, rargs, 2, NULL);
  NUM_CHECK(st == TILERT_OK, "launch splitk_reduce: %s: %s", tilert_strerror(st), tilert_last_error(env->ctx));
  return st == TILERT_OK && host_tensor_download(c);
}

static bool launch_pair(NumEnv *env, TilertKernel *part, TilertKernel *reduce, HostTensor *a,
                        HostTensor *b, HostTensor *p, HostTensor *c) {
  TilertArg pargs[] = {tilert_arg_tensor(&a->dl), tilert_arg_tensor(&b->dl), tilert_arg_tensor(&p->dl)};
  TilertStatus st = tilert_launch(part, pargs, 3, NULL);
  NUM_CHECK(st == TILERT_OK, "launch gemm_splitk: %s: %s", tilert_strerror(st), tilert_last_error(env->ctx));
  return st == TILERT_OK && launch_reduce(env, reduce, p, c);
}

/* gemm_thin on (A, B, P, C), then, for more than one split, splitk_reduce;
 * C (and P) downloaded. With one split P must come
 * back as it went in: poisoned. */
static bool launch_thin(NumEnv *env, TilertKernel *thin, TilertKernel *reduce, HostTensor *a, HostTensor *b,
                        HostTensor *p, HostTensor *c) {
  TilertArg args[] = {tilert_arg_tensor(&a->dl), tilert_arg_tensor(&b->dl), tilert_arg_tensor(&p->dl),
                      tilert_arg_tensor(&c->dl)};
  TilertStatus st = tilert_launch(thin, args, 4, NULL);
  NUM_CHECK(st == TILERT_OK, "launch gemm_thin: %s: %s", tilert_strerror(st), tilert_last_error(env->ctx));
  if (st != TILERT_OK) return false;
  if (p->shape[0] == 1) {
    if (!host_tensor_download(p) || !host_tensor_download(c)) return false;
    size_t written = 0;
    for (size_t i = 0; i < p->numel; i++) written += !isnan(host_tensor_get(p, i));
    NUM_CHECK(written == 0, "gemm_thin, one split: %zu elements of P written (P is not used then)", written);
    return written == 0;
  }
  return launch_reduce(env, reduce, p, c);
}

/* The partial kernel of run_case: gemm_thin (four arguments, the reduce
 * only past one split) or gemm_splitk. */
static bool launch_case(NumEnv *env, TilertKernel *part, TilertKernel *reduce, bool thin, HostTensor *a,
                        HostTensor *b, HostTensor *p, HostTensor *c) {
  return thin ? launch_thin(env, part, reduce, a, b, p, c) : launch_pair(env, part, reduce, a, b, p, c);
}

/* A and B random in [-1, 1], the partials P [splits, M, N] and C poisoned
 * with NaN, all uploaded. Exits when they cannot be allocated. */
static void make_inputs(NumEnv *env, DLDataType dtype, Shape s, long splits, HostTensor *a, HostTensor *b,
                        HostTensor *p, HostTensor *c) {
  memset(p, 0, sizeof *p);
  bool ok = host_tensor_init(a, dtype, 2, (int64_t[]){s.m, s.k}, env->ctx) &&
            host_tensor_init(b, dtype, 2, (int64_t[]){s.k, s.n}, env->ctx) &&
            host_tensor_init(p, (DLDataType){kDLFloat, 32, 1}, 3, (int64_t[]){splits, s.m, s.n}, env->ctx) &&
            host_tensor_init(c, dtype, 2, (int64_t[]){s.m, s.n}, env->ctx);
  NUM_CHECK(ok, "allocating %ldx%ldx%ld, %ld splits", s.m, s.n, s.k, splits);
  if (!ok) exit(1);
  host_tensor_fill_uniform(a, &env->rng, -1, 1);
  host_tensor_fill_uniform(b, &env->rng, -1, 1);
  host_tensor_poison(p);
  host_tensor_poison(c);
  NUM_CHECK(host_tensor_upload(a) && host_tensor_upload(b) && host_tensor_upload(p) && host_tensor_upload(c),
            "upload failed");
}

static void run_case(NumEnv *env, TilertKernel *part, TilertKernel *reduce, bool thin, DLDataType dtype, Shape s,
                     long splits) {
  HostTensor a, b, p, c;
  make_inputs(env, dtype, s, splits, &a, &b, &p, &c);
  double t0 = host_now_ms();
  bool ran = launch_case(env, part, reduce, thin, &a, &b, &p, &c);
  double ms = host_now_ms() - t0;
  if (ran) {
    char label[96];
    snprintf(label, sizeof label, "%ldx%ldx%ld, %ld splits", s.m, s.n, s.k, splits);
    num_check_gemm(label, &a, &b, &c, bound_for(dtype), ms);
    /* Deterministic: the same inputs again (P and C poisoned again) give
     * the same bits. */
    void *first = malloc(c.nbytes);
    memcpy(first, c.host, c.nbytes);
    host_tensor_poison(&p);
    host_tensor_poison(&c);
    NUM_CHECK(host_tensor_upload(&p) && host_tensor_upload(&c), "upload failed");
    if (launch_case(env, part, reduce, thin, &a, &b, &p, &c))
      NUM_CHECK(memcmp(first, c.host, c.nbytes) == 0, "%ldx%ldx%ld, %ld splits: a second run gave other bits",
                s.m, s.n, s.k, splits);
    free(first);
  }
  host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&p), host_tensor_free(&c);
}

/* gemm_splitk_fused on (A, B, P, C, Counters), then C and Counters downloaded. */
static bool launch_fused(NumEnv *env, TilertKernel *fused, HostTensor *a, HostTensor *b, HostTensor *p,
                         HostTensor *c, HostTensor *counters) {
  TilertArg args[] = {tilert_arg_tensor(&a->dl), tilert_arg_tensor(&b->dl), tilert_arg_tensor(&p->dl),
                      tilert_arg_tensor(&c->dl), tilert_arg_tensor(&counters->dl)};
  TilertStatus st = tilert_launch(fused, args, 5, NULL);
  NUM_CHECK(st == TILERT_OK, "launch gemm_splitk_fused: %s: %s", tilert_strerror(st), tilert_last_error(env->ctx));
  return st == TILERT_OK && host_tensor_download(c) && host_tensor_download(counters);
}

static bool counters_zero(const HostTensor *counters, const char *label, const char *when) {
  const int32_t *v = counters->host;
  for (size_t i = 0; i < counters->numel; i++)
    if (v[i] != 0) {
      NUM_CHECK(false, "%s: Counters[%zu] = %d %s (every counter must be back at 0)", label, i, (int)v[i], when);
      return false;
    }
  return true;
}

static void run_case_fused(NumEnv *env, TilertKernel *fused, TilertKernel *part, TilertKernel *reduce,
                           DLDataType dtype, Shape s, long splits, long block_M, long block_N) {
  HostTensor a, b, p, c, counters;
  make_inputs(env, dtype, s, splits, &a, &b, &p, &c);
  memset(&counters, 0, sizeof counters);
  const int64_t tiles = ((s.m + block_M - 1) / block_M) * ((s.n + block_N - 1) / block_N);
  bool ok = host_tensor_init(&counters, (DLDataType){kDLInt, 32, 1}, 1, (int64_t[]){tiles}, env->ctx);
  NUM_CHECK(ok, "allocating %ld counters", (long)tiles);
  if (!ok) exit(1);
  NUM_CHECK(host_tensor_upload(&counters), "upload failed");
  char label[96];
  snprintf(label, sizeof label, "fused %ldx%ldx%ld, %ld splits", s.m, s.n, s.k, splits);
  double t0 = host_now_ms();
  bool ran = launch_fused(env, fused, &a, &b, &p, &c, &counters);
  double ms = host_now_ms() - t0;
  if (ran) {
    num_check_gemm(label, &a, &b, &c, bound_for(dtype), ms);
    counters_zero(&counters, label, "after the first launch");
    void *first = malloc(c.nbytes);
    memcpy(first, c.host, c.nbytes);
    /* Again, on the counters as the first launch left them. */
    host_tensor_poison(&p);
    host_tensor_poison(&c);
    NUM_CHECK(host_tensor_upload(&p) && host_tensor_upload(&c), "upload failed");
    if (launch_fused(env, fused, &a, &b, &p, &c, &counters)) {
      NUM_CHECK(memcmp(first, c.host, c.nbytes) == 0, "%s: a second run gave other bits", label);
      counters_zero(&counters, label, "after the second launch");
    }
    /* The two-kernel path on the same inputs: the same sums in the same order. */
    host_tensor_poison(&p);
    host_tensor_poison(&c);
    NUM_CHECK(host_tensor_upload(&p) && host_tensor_upload(&c), "upload failed");
    if (launch_pair(env, part, reduce, &a, &b, &p, &c))
      NUM_CHECK(memcmp(first, c.host, c.nbytes) == 0, "%s: gemm_splitk + splitk_reduce gave other bits", label);
    free(first);
  }
  host_tensor_free(&a), host_tensor_free(&b), host_tensor_free(&p), host_tensor_free(&c);
  host_tensor_free(&counters);
}

int main(int argc, char **argv) {
  DLDataType dtype = {kDLFloat, 16, 1};
  const char *dtype_name = "f16";
  NumBlocks blocks = {"", "", ""};
  NumDefines extra = {0};
  Shape shapes[16];
  int nshapes = 0;
  long splits[16];
  int nsplits = 0;
  bool bind = false, fused = false, thin = false;
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (num_arg_common(argc, argv, &i, &dtype, &dtype_name, &extra, &device)) continue;
    if (strcmp(argv[i], "--bind") == 0) {
      bind = true;
    } else if (strcmp(argv[i], "--fused") == 0) {
      fused = true;
    } else if (strcmp(argv[i], "--thin") == 0) {
      thin = true;
    } else if (host_opt(argc, argv, &i, "--blocks", &v)) {
      if (!num_arg_blocks(v, blocks)) return 2;
    } else if (host_opt(argc, argv, &i, "--shapes", &v)) {
      if (!num_arg_shapes(v, shapes, &nshapes)) return 2;
    } else if (host_opt(argc, argv, &i, "--splits", &v)) {
      const char *p = v;
      int used = 0;
      while (nsplits < 16 && sscanf(p, "%ld%n", &splits[nsplits], &used) == 1 && splits[nsplits] > 0) {
        nsplits++;
        p += used;
        if (*p != ',') break;
        p++;
      }
      if (*p != '\0' || nsplits == 0) {
        fprintf(stderr, "bad --splits %s (want positive S,S,...)\n", v);
        return 2;
      }
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (nshapes == 0 || nsplits == 0) {
    fprintf(stderr, "--shapes and --splits are required\n");
    return 2;
  }
  if (thin && fused) {
    fprintf(stderr, "--thin and --fused do not go together (gemm_thin has no fused form)\n");
    return 2;
  }

  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  printf("%s: %s, blocks ", thin ? "gemm_thin" : "gemm_splitk", dtype_name);
  num_print_blocks(blocks);
  printf(", shapes %s%s\n", bind ? "bound with -D" : "dynamic", fused ? ", fused (gemm_splitk_fused)" : "");
  /* The C tile, for the counter count (the kernel's defaults unless --blocks). */
  const long block_M = blocks[0][0] ? atol(blocks[0]) : 64, block_N = blocks[1][0] ? atol(blocks[1]) : 128;

  TilecDefine defs[1 + 3 + NUM_MAX_DEFINES];
  int ndefs = 0;
  defs[ndefs++] = (TilecDefine){"dtype", dtype_name};
  num_add_blocks(blocks, defs, &ndefs);
  num_add_defines(&extra, defs, &ndefs);

  TilertModule *mod = NULL, *thin_mod = NULL;
  TilertKernel *part = NULL, *reduce = NULL, *fk = NULL;
  for (int sh = 0; sh < nshapes; sh++) {
    if (bind || !mod) {
      char dims[3][32];
      TilecDefine all[1 + 3 + NUM_MAX_DEFINES + 3];
      memcpy(all, defs, (size_t)ndefs * sizeof defs[0]);
      int nall = ndefs;
      if (bind) num_add_dims(shapes[sh], dims, all, &nall);
      tilert_module_destroy(mod);
      tilert_module_destroy(thin_mod);
      mod = thin_mod = NULL;
      part = reduce = fk = NULL;
      if (thin) {
        /* gemm_thin with the blocks and defines; the reduce of gemm_splitk.tile
         * with the dtype alone (its own tile). */
        thin_mod = num_load(&env, "gemm_thin.tile", all, nall);
        mod = num_load(&env, "gemm_splitk.tile", defs, 1);
        if (!thin_mod || !mod || tilert_module_get_kernel(thin_mod, "gemm_thin", &part) != TILERT_OK ||
            tilert_module_get_kernel(mod, "splitk_reduce", &reduce) != TILERT_OK) {
          NUM_CHECK(false, "no kernels gemm_thin / splitk_reduce: %s", tilert_last_error(env.ctx));
          break;
        }
      } else {
        mod = num_load(&env, "gemm_splitk.tile", all, nall);
        if (!mod || tilert_module_get_kernel(mod, "gemm_splitk", &part) != TILERT_OK ||
            tilert_module_get_kernel(mod, "splitk_reduce", &reduce) != TILERT_OK) {
          NUM_CHECK(false, "no kernels gemm_splitk / splitk_reduce: %s", tilert_last_error(env.ctx));
          break;
        }
      }
      if (fused && tilert_module_get_kernel(mod, "gemm_splitk_fused", &fk) != TILERT_OK) {
        NUM_CHECK(false, "no kernel gemm_splitk_fused: %s", tilert_last_error(env.ctx));
        break;
      }
      if (fused) {
        const TilecKernelInfo *fi = tilert_kernel_info(fk);
        int fwant = bind ? 2 : 5;
        NUM_CHECK(fi && fi->ndynamic == fwant, "gemm_splitk_fused: expected %d dynamic symbols (%s), got %d", fwant,
                  bind ? "splits, tiles" : "M, K, N, splits, tiles", fi ? fi->ndynamic : -1);
      }
      const TilecKernelInfo *pi = tilert_kernel_info(part), *ri = tilert_kernel_info(reduce);
      int want = bind ? 1 : 4;
      NUM_CHECK(pi && pi->ndynamic == want, "%s: expected %d dynamic symbols (%s), got %d",
                thin ? "gemm_thin" : "gemm_splitk", want, bind ? "splits" : "M, K, N, splits",
                pi ? pi->ndynamic : -1);
      NUM_CHECK(ri && ri->ndynamic == 2, "splitk_reduce: expected 2 dynamic symbols (splits, MN), got %d",
                ri ? ri->ndynamic : -1);
    }
    for (int j = 0; j < nsplits; j++) {
      if (fused)
        run_case_fused(&env, fk, part, reduce, dtype, shapes[sh], splits[j], block_M, block_N);
      else
        run_case(&env, part, reduce, thin, dtype, shapes[sh], splits[j]);
    }
  }
  tilert_module_destroy(thin_mod);
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_gemm_splitk");
}
