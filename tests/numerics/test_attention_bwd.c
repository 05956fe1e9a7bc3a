/* test_attention_bwd.c - examples/flash_attention_bwd.tile (the forward with
 * its log-sum-exp, then preprocess, backward and dQ convert) against a
 * double-precision reference of the forward and of dQ, dK, dV.
 *
 *   test_attention_bwd --dim 64 --dtype f16 [--causal] --batch 2 --heads 3
 *       --lengths 1,17,100,257 [--define NAME=VALUE]... [--device cpu|cuda]
 *       [--iters N]
 *
 * One load (batch, heads and seq_len dynamic) serves every length. For each
 * length: random Q, K, V, dO in [-1, 1]; the four kernels run one after the
 * other on device buffers; every output (O, LSE, Delta, the f32 dQ
 * accumulator, dK, dV, dQ) is poisoned with NaN before the first kernel, so
 * an element a kernel fails to write (the accumulator's zeroing included)
 * shows as non-finite. Checked: O, LSE (to 1e-3 absolute, natural log),
 * dQ, dK, dV (relative to max|ref|). The reference backward uses the exact
 * P and O; the kernels round P and dS to dtype for their gemms, hence the
 * looser bounds than the forward's. --iters N > 1 also times the three
 * backward kernels (best of N). */
#include "numerics.h"

#include <math.h>

typedef struct Config {
  long dim, batch, heads, iters;
  bool causal;
  DLDataType dtype;
  const char *dtype_name;
  long lengths[16];
  int nlengths;
  NumDefines extra; /* --define */
} Config;

static double fwd_bound(DLDataType t) { return t.code == kDLBfloat ? 2e-2 : 5e-3; }
static double bwd_bound(DLDataType t) { return t.code == kDLBfloat ? 2e-2 : 5e-3; }

static bool check(const Config *c, const char *what, HostTensor *o, const double *ref, double bound) {
  HostError e = host_compare(o, ref);
  printf("    %-6s max abs %.3e, rel to max|ref| %.3e (bound %.0e), %zu non-finite\n", what, e.max_abs,
         e.rel_to_max, bound, e.nonfinite);
  NUM_CHECK(host_error_ok(&e, bound), "%s, %s: error %.3e (bound %.0e), %zu non-finite; worst element %zu: out %g ref %g",
            c->dtype_name, what, e.rel_to_max, bound, e.nonfinite, e.worst, host_tensor_get(o, e.worst),
            ref[e.worst]);
  return host_error_ok(&e, bound);
}

/* Forward and backward in double, BSHD: out, lse [B, H, S] (natural log),
 * dq, dk, dv. */
static void reference(const Config *c, long S, const double *Q, const double *K, const double *V,
                      const double *dO, double *out, double *lse, double *dq, double *dk, double *dv) {
  const int64_t B = c->batch, H = c->heads, D = c->dim;
  const double sm = 1.0 / sqrt((double)D);
  double *P = malloc((size_t)(S * S) * sizeof *P), *dS = malloc((size_t)(S * S) * sizeof *dS);
  double *delta = malloc((size_t)S * sizeof *delta);
#define AT(T, b, i, h, d) T[(((b) * S + (i)) * H + (h)) * D + (d)]
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++) {
      for (int64_t i = 0; i < S; i++) {
        int64_t n = c->causal ? i + 1 : S;
        double m = -INFINITY, l = 0;
        for (int64_t j = 0; j < n; j++) {
          double s = 0;
          for (int64_t d = 0; d < D; d++) s += AT(Q, b, i, h, d) * AT(K, b, j, h, d);
          P[i * S + j] = s * sm;
          if (P[i * S + j] > m) m = P[i * S + j];
        }
        for (int64_t j = 0; j < n; j++) l += (P[i * S + j] = exp(P[i * S + j] - m));
        for (int64_t j = 0; j < S; j++) P[i * S + j] = j < n ? P[i * S + j] / l : 0;
        lse[(b * H + h) * S + i] = m + log(l);
        delta[i] = 0;
        for (int64_t d = 0; d < D; d++) {
          double o = 0;
          for (int64_t j = 0; j < n; j++) o += P[i * S + j] * AT(V, b, j, h, d);
          AT(out, b, i, h, d) = o;
          delta[i] += o * AT(dO, b, i, h, d);
        }
      }
      /* dP = dO V^T, dS = P * (dP - Delta) * sm. */
      for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++) {
          if (P[i * S + j] == 0) {
            dS[i * S + j] = 0;
            continue;
          }
          double dp = 0;
          for (int64_t d = 0; d < D; d++) dp += AT(dO, b, i, h, d) * AT(V, b, j, h, d);
          dS[i * S + j] = P[i * S + j] * (dp - delta[i]) * sm;
        }
      for (int64_t i = 0; i < S; i++)
        for (int64_t d = 0; d < D; d++) {
          double q = 0, k = 0, v = 0;
          for (int64_t j = 0; j < S; j++) {
            q += dS[i * S + j] * AT(K, b, j, h, d);  /* dQ = dS K */
            k += dS[j * S + i] * AT(Q, b, j, h, d);  /* dK = dS^T Q */
            v += P[j * S + i] * AT(dO, b, j, h, d);  /* dV = P^T dO */
          }
          AT(dq, b, i, h, d) = q, AT(dk, b, i, h, d) = k, AT(dv, b, i, h, d) = v;
        }
    }
#undef AT
  free(P), free(dS), free(delta);
}

static TilertStatus launch(NumEnv *env, TilertKernel *k, const char *name, const TilertArg *args, int n) {
  TilertStatus st = tilert_launch(k, args, n, NULL);
  NUM_CHECK(st == TILERT_OK, "launch %s: %s: %s", name, tilert_strerror(st), tilert_last_error(env->ctx));
  return st;
}

static void run(NumEnv *env, const Config *c, TilertKernel *const *kern, long S) {
  const int64_t B = c->batch, H = c->heads, D = c->dim;
  int64_t tshape[4] = {B, S, H, D}, lshape[3] = {B, H, S}, ashape[4] = {B, H, D, S};
  DLDataType f32 = {kDLFloat, 32, 1};
  HostTensor q, k, v, o, lse, d_o, delta, dqa, dq, dk, dv;
  bool ok = true;
  HostTensor *dts[] = {&q, &k, &v, &o, &d_o, &dq, &dk, &dv};
  for (int i = 0; i < 8; i++) ok = ok && host_tensor_init(dts[i], c->dtype, 4, tshape, env->ctx);
  ok = ok && host_tensor_init(&lse, f32, 3, lshape, env->ctx) && host_tensor_init(&delta, f32, 3, lshape, env->ctx) &&
       host_tensor_init(&dqa, f32, 4, ashape, env->ctx); /* dQ^T accumulator [B, H, D, S] */
  NUM_CHECK(ok, "allocating seq_len %ld", S);
  if (!ok) exit(1);
  host_tensor_fill_uniform(&q, &env->rng, -1, 1);
  host_tensor_fill_uniform(&k, &env->rng, -1, 1);
  host_tensor_fill_uniform(&v, &env->rng, -1, 1);
  host_tensor_fill_uniform(&d_o, &env->rng, -1, 1);
  HostTensor *outs[] = {&o, &lse, &delta, &dqa, &dq, &dk, &dv};
  for (int i = 0; i < 7; i++) host_tensor_poison(outs[i]);
  HostTensor *all[] = {&q, &k, &v, &o, &lse, &d_o, &delta, &dqa, &dq, &dk, &dv};
  for (int i = 0; i < 11; i++) ok = ok && host_tensor_upload(all[i]);
  NUM_CHECK(ok, "upload failed");
  const double scale = 1.0 / sqrt((double)D) * 1.4426950408889634;
  TilertArg fwd[] = {tilert_arg_tensor(&q.dl), tilert_arg_tensor(&k.dl), tilert_arg_tensor(&v.dl),
                     tilert_arg_tensor(&o.dl), tilert_arg_tensor(&lse.dl), tilert_arg_f32(scale)};
  TilertArg pre[] = {tilert_arg_tensor(&o.dl), tilert_arg_tensor(&d_o.dl), tilert_arg_tensor(&delta.dl),
                     tilert_arg_tensor(&dqa.dl)};
  TilertArg bwd[] = {tilert_arg_tensor(&q.dl),     tilert_arg_tensor(&k.dl),   tilert_arg_tensor(&v.dl),
                     tilert_arg_tensor(&d_o.dl),   tilert_arg_tensor(&lse.dl), tilert_arg_tensor(&delta.dl),
                     tilert_arg_tensor(&dqa.dl),   tilert_arg_tensor(&dk.dl),  tilert_arg_tensor(&dv.dl),
                     tilert_arg_f32(scale)};
  TilertArg cvt[] = {tilert_arg_tensor(&dqa.dl), tilert_arg_tensor(&dq.dl)};
  TilertStatus st = launch(env, kern[0], "flash_attention_fwd", fwd, 6);
  double best = INFINITY;
  for (long it = 0; st == TILERT_OK && it < c->iters; it++) {
    double t0 = host_now_ms();
    if (st == TILERT_OK) st = launch(env, kern[1], "flash_attention_bwd_preprocess", pre, 4);
    if (st == TILERT_OK) st = launch(env, kern[2], "flash_attention_bwd", bwd, 10);
    if (st == TILERT_OK) st = launch(env, kern[3], "flash_attention_bwd_dq_convert", cvt, 2);
    double ms = host_now_ms() - t0;
    if (ms < best) best = ms;
  }
  if (st == TILERT_OK) {
    for (int i = 0; i < 7; i++) ok = ok && host_tensor_download(outs[i]);
    NUM_CHECK(ok, "download failed");
    size_t n = q.numel, nl = lse.numel;
    double *Q = host_tensor_to_double(&q), *K = host_tensor_to_double(&k), *V = host_tensor_to_double(&v);
    double *dO = host_tensor_to_double(&d_o);
    double *ro = malloc(n * sizeof *ro), *rl = malloc(nl * sizeof *rl), *rq = malloc(n * sizeof *rq),
           *rk = malloc(n * sizeof *rk), *rv = malloc(n * sizeof *rv);
    reference(c, S, Q, K, V, dO, ro, rl, rq, rk, rv);
    if (c->iters > 1)
      printf("  seq_len %4ld (backward, three kernels: best %.3f ms of %ld)\n", S, best, c->iters);
    else
      printf("  seq_len %4ld\n", S);
    check(c, "O", &o, ro, fwd_bound(c->dtype));
    double worst = 0;
    size_t bad = 0;
    for (size_t i = 0; i < nl; i++) {
      double got = host_tensor_get(&lse, i) * log(2.0);
      if (!isfinite(got)) bad++;
      else if (fabs(got - rl[i]) > worst) worst = fabs(got - rl[i]);
    }
    printf("    %-6s max abs %.3e (bound 1e-3, natural log), %zu non-finite\n", "LSE", worst, bad);
    NUM_CHECK(worst <= 1e-3 && bad == 0, "LSE: max abs error %.3e, %zu non-finite", worst, bad);
    size_t acc_bad = 0;
    for (size_t i = 0; i < n; i++) acc_bad += !isfinite(host_tensor_get(&dqa, i));
    NUM_CHECK(acc_bad == 0, "dQ accumulator: %zu non-finite elements (not zeroed or not added)", acc_bad);
    check(c, "dQ", &dq, rq, bwd_bound(c->dtype));
    check(c, "dK", &dk, rk, bwd_bound(c->dtype));
    check(c, "dV", &dv, rv, bwd_bound(c->dtype));
    free(Q), free(K), free(V), free(dO), free(ro), free(rl), free(rq), free(rk), free(rv);
  }
  for (int i = 0; i < 11; i++) host_tensor_free(all[i]);
}

int main(int argc, char **argv) {
  Config c = {.dim = 64, .batch = 2, .heads = 3, .iters = 1, .dtype = {kDLFloat, 16, 1}, .dtype_name = "f16",
              .lengths = {1, 17, 100, 257}, .nlengths = 4};
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (num_arg_common(argc, argv, &i, &c.dtype, &c.dtype_name, &c.extra, &device)) continue;
    if (strcmp(argv[i], "--causal") == 0) {
      c.causal = true;
    } else if (host_opt(argc, argv, &i, "--batch", &v)) {
      c.batch = host_parse_long("--batch", v, 1, 1024);
    } else if (host_opt(argc, argv, &i, "--heads", &v)) {
      c.heads = host_parse_long("--heads", v, 1, 1024);
    } else if (host_opt(argc, argv, &i, "--dim", &v)) {
      c.dim = host_parse_long("--dim", v, 1, 1024);
    } else if (host_opt(argc, argv, &i, "--iters", &v)) {
      c.iters = host_parse_long("--iters", v, 1, 1000);
    } else if (host_opt(argc, argv, &i, "--lengths", &v)) {
      num_arg_list("--lengths", v, c.lengths, &c.nlengths, 1 << 16);
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  printf("flash_attention_bwd: dim %ld, %s, %s, batch %ld, heads %ld", c.dim, c.causal ? "causal" : "non-causal",
         c.dtype_name, c.batch, c.heads);
  num_print_defines(&c.extra);
  printf("\n");
  char dim_s[32];
  TilecDefine defs[3 + NUM_MAX_DEFINES];
  int nd = num_attention_defines(defs, dim_s, c.dim, c.dtype_name, c.causal, &c.extra);
  TilertModule *mod = num_load(&env, "flash_attention_bwd.tile", defs, nd);
  static const char *const names[4] = {"flash_attention_fwd", "flash_attention_bwd_preprocess",
                                       "flash_attention_bwd", "flash_attention_bwd_dq_convert"};
  TilertKernel *kern[4] = {NULL};
  bool have = mod != NULL;
  for (int i = 0; have && i < 4; i++) {
    have = tilert_module_get_kernel(mod, names[i], &kern[i]) == TILERT_OK;
    NUM_CHECK(have, "no kernel %s: %s", names[i], tilert_last_error(env.ctx));
  }
  for (int i = 0; have && i < c.nlengths; i++) run(&env, &c, kern, c.lengths[i]);
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_attention_bwd");
}
