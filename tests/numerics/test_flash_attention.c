/* test_flash_attention.c - examples/flash_attention.tile against a
 * double-precision reference, batch 2, heads 2.
 *
 *   test_flash_attention --dim 64|128 --dtype f16|bf16 [--causal]
 *                        --mode dynamic|bound --lengths 1,63,64,100,257
 *                        [--define NAME=VALUE]... [--device cpu|cuda]
 *                        [--batch N] [--heads N]   (default 2 and 2)
 *                        [--layout compact|bhsd|packed|padded]
 *
 * dynamic: seq_len stays a dynamic symbol; ONE load serves every length.
 * bound:   every length gets its own load with -D seq_len=L, and a launch
 *          with a different length must be refused (LAUNCH_MISMATCH).
 * Inputs are fresh random numbers each run (the seed is printed); the output
 * is poisoned with NaN before every launch, so an element the kernel never
 * writes fails the test.
 *
 * --layout passes strided views instead of compact BSHD tensors (the
 * flagship declares strides (...)), without copying:
 *   bhsd:   Q, K, V, Output are q.transpose(1, 2) views of BHSD tensors;
 *   packed: Q, K, V are the three slices of one [B, S, 3, H, D] tensor and
 *           Output a view of a padded [B, S, H, D + 8] tensor;
 *   padded: all four are views of [B, S, H, D + 8] tensors (rows with a
 *           pitch of D + 8 elements).
 * The inputs are gathered into compact tensors for the reference; every
 * element of the output's storage outside the view must still be NaN. */
#include "numerics.h"

#include <math.h>

/* Bound on max|out - ref| / max|ref|. The inputs are exactly representable
 * (the reference reads the rounded values); S = Q K^T, the softmax and both
 * accumulations are f32 (relative error ~dim * 2^-24, negligible). What is
 * left are two roundings to the input dtype, u = 2^-11 (f16) or 2^-8 (bf16):
 * P before the P V gemm and the output. The output rounding is at most
 * u * max|ref|; the rounding errors of P are independent and partly cancel
 * over the keys. So the error is about u..2u times max|ref| (measured:
 * 3e-4..5e-4 for f16, 2.5e-3..3e-3 for bf16). The bounds, 5e-3 (f16, ~10u)
 * and 2e-2 (bf16, ~5u), leave that margin and still catch real bugs: a tail
 * key block left unmasked shifts every output by >= 1/64 (1.6%, seq_len 63)
 * and by ~20% at seq_len 100; a wrong causal mask by far more. */
static double bound_for(DLDataType t) { return t.code == kDLBfloat ? 2e-2 : 5e-3; }

typedef struct Config {
  long dim;
  bool causal;
  DLDataType dtype;
  const char *dtype_name;
  bool bound; /* seq_len bound with -D */
  long lengths[16];
  int nlengths;
  NumDefines extra; /* --define: block sizes etc. */
  long batch, heads;
  const char *layout; /* compact, bhsd, packed, padded */
} Config;

static TilertModule *load(NumEnv *env, const Config *c, long seq_len_or_0) {
  char dim_s[32], len_s[32];
  snprintf(len_s, sizeof len_s, "%ld", seq_len_or_0);
  TilecDefine defs[3 + NUM_MAX_DEFINES + 1];
  int n = num_attention_defines(defs, dim_s, c->dim, c->dtype_name, c->causal, &c->extra);
  if (seq_len_or_0) defs[n++] = (TilecDefine){"seq_len", len_s};
  return num_load(env, "flash_attention.tile", defs, n);
}

/* Runs one length on a loaded kernel and checks it. */
static void run_length(NumEnv *env, const Config *c, TilertKernel *k, long seq_len) {
  const int64_t batch = c->batch, heads = c->heads;
  int64_t shape[4] = {batch, seq_len, heads, c->dim};
  HostTensor q, kt, v, o;
  bool ok = host_tensor_init(&q, c->dtype, 4, shape, env->ctx) &&
            host_tensor_init(&kt, c->dtype, 4, shape, env->ctx) &&
            host_tensor_init(&v, c->dtype, 4, shape, env->ctx) &&
            host_tensor_init(&o, c->dtype, 4, shape, env->ctx);
  NUM_CHECK(ok, "allocating seq_len %ld", seq_len);
  if (!ok) exit(1);
  host_tensor_fill_uniform(&q, &env->rng, -1, 1);
  host_tensor_fill_uniform(&kt, &env->rng, -1, 1);
  host_tensor_fill_uniform(&v, &env->rng, -1, 1);
  host_tensor_poison(&o);
  ok = host_tensor_upload(&q) && host_tensor_upload(&kt) && host_tensor_upload(&v) &&
       host_tensor_upload(&o);
  NUM_CHECK(ok, "upload failed");

  double scale = 1.0 / sqrt((double)c->dim) * 1.4426950408889634; /* log2(e) folded in */
  TilertArg args[] = {tilert_arg_tensor(&q.dl), tilert_arg_tensor(&kt.dl), tilert_arg_tensor(&v.dl),
                      tilert_arg_tensor(&o.dl), tilert_arg_f32(scale)};
  double t0 = host_now_ms();
  TilertStatus st = tilert_launch(k, args, 5, NULL);
  double ms = host_now_ms() - t0;
  NUM_CHECK(st == TILERT_OK, "launch seq_len %ld: %s: %s", seq_len, tilert_strerror(st),
            tilert_last_error(env->ctx));
  if (st == TILERT_OK) {
    NUM_CHECK(host_tensor_download(&o), "download failed");
    double *ref = malloc(o.numel * sizeof *ref);
    host_ref_attention(&q, &kt, &v, c->causal, 1.0 / sqrt((double)c->dim), ref);
    HostError e = host_compare(&o, ref);
    double bound = bound_for(c->dtype);
    printf("  seq_len %4ld: max abs %.3e, rel to max|ref| %.3e (bound %.0e), max rel %.3e, "
           "%zu non-finite, %.1f ms\n",
           seq_len, e.max_abs, e.rel_to_max, bound, e.max_rel, e.nonfinite, ms);
    NUM_CHECK(host_error_ok(&e, bound),
              "seq_len %ld: error %.3e (bound %.0e), %zu non-finite; worst element %zu: "
              "out %g ref %g",
              seq_len, e.rel_to_max, bound, e.nonfinite, e.worst, host_tensor_get(&o, e.worst),
              ref[e.worst]);
    free(ref);
  }
  host_tensor_free(&q), host_tensor_free(&kt), host_tensor_free(&v), host_tensor_free(&o);
}

/* One tensor argument as a view: its storage, and the view over it. */
typedef struct ViewArg {
  HostTensor *storage;
  HostView view;
} ViewArg;

/* The layouts of --layout: storage shapes and the views over them. */
static void make_views(NumEnv *env, const Config *c, long seq_len, HostTensor st[4], ViewArg va[4]) {
  const int64_t B = c->batch, S = seq_len, H = c->heads, D = c->dim, P = D + 8;
  const int64_t shape[4] = {B, S, H, D};
  bool ok = true;
  if (strcmp(c->layout, "bhsd") == 0) {
    for (int i = 0; i < 4; i++) {
      ok &= host_tensor_init(&st[i], c->dtype, 4, (int64_t[]){B, H, S, D}, env->ctx);
      va[i].storage = &st[i];
      host_view_init(&va[i].view, &st[i], 4, shape, (int64_t[]){H * S * D, D, S * D, 1}, 0);
    }
  } else if (strcmp(c->layout, "packed") == 0) {
    ok &= host_tensor_init(&st[0], c->dtype, 5, (int64_t[]){B, S, 3, H, D}, env->ctx);
    ok &= host_tensor_init(&st[3], c->dtype, 4, (int64_t[]){B, S, H, P}, env->ctx);
    for (int i = 0; i < 3; i++) {
      va[i].storage = &st[0];
      host_view_init(&va[i].view, &st[0], 4, shape, (int64_t[]){S * 3 * H * D, 3 * H * D, D, 1}, i * H * D);
    }
    va[3].storage = &st[3];
    host_view_init(&va[3].view, &st[3], 4, shape, (int64_t[]){S * H * P, H * P, P, 1}, 0);
  } else { /* padded */
    for (int i = 0; i < 4; i++) {
      ok &= host_tensor_init(&st[i], c->dtype, 4, (int64_t[]){B, S, H, P}, env->ctx);
      va[i].storage = &st[i];
      host_view_init(&va[i].view, &st[i], 4, shape, (int64_t[]){S * H * P, H * P, P, 1}, 0);
    }
  }
  NUM_CHECK(ok, "allocating the %s storage for seq_len %ld", c->layout, seq_len);
  if (!ok) exit(1);
}

/* run_length with strided views (--layout). */
static void run_length_views(NumEnv *env, const Config *c, TilertKernel *k, long seq_len) {
  int64_t shape[4] = {c->batch, seq_len, c->heads, c->dim};
  HostTensor st[4] = {{{0}}}, q, kt, v, o;
  ViewArg va[4];
  make_views(env, c, seq_len, st, va);
  bool ok = host_tensor_init(&q, c->dtype, 4, shape, NULL) && host_tensor_init(&kt, c->dtype, 4, shape, NULL) &&
            host_tensor_init(&v, c->dtype, 4, shape, NULL) && host_tensor_init(&o, c->dtype, 4, shape, NULL);
  NUM_CHECK(ok, "allocating seq_len %ld", seq_len);
  if (!ok) exit(1);
  /* Random inputs, NaN everywhere else (pads, the output). */
  for (int i = 0; i < 4; i++)
    if (st[i].host) host_tensor_poison(&st[i]);
  HostTensor *in[3] = {&q, &kt, &v};
  for (int i = 0; i < 3; i++) {
    host_tensor_fill_uniform(in[i], &env->rng, -1, 1);
    host_view_scatter(&va[i].view, va[i].storage, in[i]);
  }
  for (int i = 0; i < 4; i++) NUM_CHECK(!st[i].host || host_tensor_upload(&st[i]), "upload failed");

  double scale = 1.0 / sqrt((double)c->dim) * 1.4426950408889634;
  TilertArg args[] = {tilert_arg_tensor(&va[0].view.dl), tilert_arg_tensor(&va[1].view.dl),
                      tilert_arg_tensor(&va[2].view.dl), tilert_arg_tensor(&va[3].view.dl), tilert_arg_f32(scale)};
  TilertStatus status = tilert_launch(k, args, 5, NULL);
  NUM_CHECK(status == TILERT_OK, "launch (%s views) seq_len %ld: %s: %s", c->layout, seq_len,
            tilert_strerror(status), tilert_last_error(env->ctx));
  if (status == TILERT_OK) {
    HostTensor *out = va[3].storage;
    NUM_CHECK(host_tensor_download(out), "download failed");
    host_view_gather(&va[3].view, out, &o);
    double *ref = malloc(o.numel * sizeof *ref);
    host_ref_attention(&q, &kt, &v, c->causal, 1.0 / sqrt((double)c->dim), ref);
    HostError e = host_compare(&o, ref);
    double bound = bound_for(c->dtype);
    /* The output's storage outside the view: untouched (still NaN). */
    size_t written = 0;
    for (size_t i = 0; i < out->numel; i++) written += !isnan(host_tensor_get(out, i));
    printf("  seq_len %4ld (%s views): rel to max|ref| %.3e (bound %.0e), %zu non-finite, "
           "%zu of %zu storage elements written\n",
           seq_len, c->layout, e.rel_to_max, bound, e.nonfinite, written, out->numel);
    NUM_CHECK(host_error_ok(&e, bound), "seq_len %ld (%s views): error %.3e (bound %.0e), %zu non-finite",
              seq_len, c->layout, e.rel_to_max, bound, e.nonfinite);
    NUM_CHECK(written == o.numel, "seq_len %ld (%s views): %zu storage elements written, the view has %zu",
              seq_len, c->layout, written, o.numel);
    free(ref);
  }
  host_tensor_free(&q), host_tensor_free(&kt), host_tensor_free(&v), host_tensor_free(&o);
  for (int i = 0; i < 4; i++) host_tensor_free(&st[i]);
}

/* A kernel compiled for seq_len = bound_len must refuse another length
 * instead of reading out of bounds. */
static void check_mismatch(NumEnv *env, const Config *c, TilertKernel *k, long bound_len) {
  long other = bound_len + 1;
  int64_t shape[4] = {2, other, 2, c->dim};
  HostTensor t[4];
  for (int i = 0; i < 4; i++) host_tensor_init(&t[i], c->dtype, 4, shape, env->ctx);
  TilertArg args[] = {tilert_arg_tensor(&t[0].dl), tilert_arg_tensor(&t[1].dl),
                      tilert_arg_tensor(&t[2].dl), tilert_arg_tensor(&t[3].dl),
                      tilert_arg_f32(0.125)};
  TilertStatus st = tilert_launch(k, args, 5, NULL);
  NUM_CHECK(st == TILERT_LAUNCH_MISMATCH,
            "kernel bound to seq_len %ld launched with %ld: got %s, expected %s", bound_len,
            other, tilert_strerror(st), tilert_strerror(TILERT_LAUNCH_MISMATCH));
  for (int i = 0; i < 4; i++) host_tensor_free(&t[i]);
}

int main(int argc, char **argv) {
  Config c = {64, false, {kDLFloat, 16, 1}, "f16", false, {1, 63, 64, 100, 257}, 5, .batch = 2, .heads = 2,
              .layout = "compact"};
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (num_arg_common(argc, argv, &i, &c.dtype, &c.dtype_name, &c.extra, &device)) continue;
    if (strcmp(argv[i], "--causal") == 0) {
      c.causal = true;
    } else if (host_opt(argc, argv, &i, "--batch", &v)) {
      c.batch = atol(v);
    } else if (host_opt(argc, argv, &i, "--layout", &v)) {
      if (strcmp(v, "compact") != 0 && strcmp(v, "bhsd") != 0 && strcmp(v, "packed") != 0 &&
          strcmp(v, "padded") != 0) {
        fprintf(stderr, "bad --layout %s (compact, bhsd, packed or padded)\n", v);
        return 2;
      }
      c.layout = v;
    } else if (host_opt(argc, argv, &i, "--heads", &v)) {
      c.heads = atol(v);
    } else if (host_opt(argc, argv, &i, "--dim", &v)) {
      c.dim = host_parse_long("--dim", v, 1, 1024);
    } else if (host_opt(argc, argv, &i, "--mode", &v)) {
      if (strcmp(v, "dynamic") != 0 && strcmp(v, "bound") != 0) {
        fprintf(stderr, "bad --mode %s\n", v);
        return 2;
      }
      c.bound = strcmp(v, "bound") == 0;
    } else if (host_opt(argc, argv, &i, "--lengths", &v)) {
      num_arg_list("--lengths", v, c.lengths, &c.nlengths, 1 << 20);
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }

  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc; /* skipped (no GPU) or failed */
  printf("flash_attention: dim %ld, %s, %s, seq_len %s, %s tensors", c.dim, c.causal ? "causal" : "non-causal",
         c.dtype_name, c.bound ? "bound with -D" : "dynamic", c.layout);
  num_print_defines(&c.extra);
  printf("\n");

  if (!c.bound) {
    /* One compile serves every length. */
    TilertModule *mod = load(&env, &c, 0);
    TilertKernel *k = NULL;
    if (mod && tilert_module_get_kernel(mod, "flash_attention", &k) == TILERT_OK) {
      const TilecKernelInfo *info = tilert_kernel_info(k);
      bool has_seq = false;
      for (int i = 0; info && i < info->ndynamic; i++)
        has_seq |= strcmp(info->dynamic_symbols[i], "seq_len") == 0;
      NUM_CHECK(has_seq, "seq_len should be a dynamic symbol of the kernel");
      for (int i = 0; i < c.nlengths; i++) {
        if (strcmp(c.layout, "compact") == 0) run_length(&env, &c, k, c.lengths[i]);
        else run_length_views(&env, &c, k, c.lengths[i]);
      }
    } else {
      NUM_CHECK(false, "no kernel flash_attention: %s", tilert_last_error(env.ctx));
    }
    tilert_module_destroy(mod);
  } else {
    for (int i = 0; i < c.nlengths; i++) {
      TilertModule *mod = load(&env, &c, c.lengths[i]);
      TilertKernel *k = NULL;
      if (mod && tilert_module_get_kernel(mod, "flash_attention", &k) == TILERT_OK) {
        const TilecKernelInfo *info = tilert_kernel_info(k);
        for (int s = 0; info && s < info->ndynamic; s++)
          NUM_CHECK(strcmp(info->dynamic_symbols[s], "seq_len") != 0,
                    "seq_len was bound with -D but is still dynamic");
        run_length(&env, &c, k, c.lengths[i]);
        check_mismatch(&env, &c, k, c.lengths[i]);
      } else {
        NUM_CHECK(false, "no kernel flash_attention: %s", tilert_last_error(env.ctx));
      }
      tilert_module_destroy(mod);
    }
  }
  num_close(&env);
  return num_result("test_flash_attention");
}
