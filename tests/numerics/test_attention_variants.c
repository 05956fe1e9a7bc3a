/* test_attention_variants.c - examples/gqa_attention.tile and
 * examples/flash_decoding.tile against a double-precision reference
 * (host_ref_attention_general: GQA heads, seqlen_q != seqlen_kv, causal
 * aligned to the bottom right, the log-sum-exp).
 *
 *   test_attention_variants --kernel gqa --dim 64 --dtype f16 [--causal]
 *       --batch 2 --heads 6 --heads-kv 2 --lengths 1,63,100,257
 *   test_attention_variants --kernel decoding --dim 64 --dtype f16 [--causal]
 *       --batch 2 --heads 4 --heads-kv 2 --q-lengths 1,5,16 --lengths 1,100,1000
 *       --splits 1,3,40
 *   [--define NAME=VALUE]... [--device cpu|cuda]
 *
 * gqa: one load (every shape symbol dynamic) serves every length.
 * decoding: one load of the two kernels serves every (seqlen_q, seqlen_kv,
 * num_split); both kernels run, the output is checked, and so is the
 * log-sum-exp the combine implies (log2 sum_s 2^LSE_s, rescaled to natural
 * log) against the reference's. Split counts above the number of key blocks
 * leave splits empty (LSE -inf, weight 0).
 * Inputs are fresh random numbers each run (seed printed); outputs are
 * poisoned with NaN before every launch. Bounds as test_flash_attention.c. */
#include "numerics.h"

#include <math.h>

static double bound_for(DLDataType t) { return t.code == kDLBfloat ? 2e-2 : 5e-3; }

typedef struct Config {
  bool decoding, varlen;
  bool gqa_packed; /* decoding: also flash_decoding_gqa_split (seqlen_q 1 only) */
  bool paged;    /* decoding: also the paged split kernel (pages of block_N tokens) */
  long block_N;  /* decoding: the page size, from --define block_N (default 64) */
  long kv_extra; /* varlen: each sequence has seqlen + kv_extra keys */
  long dim;
  bool causal;
  DLDataType dtype;
  const char *dtype_name;
  long lengths[16], qlengths[16], splits[16];
  int nlengths, nqlengths, nsplits;
  NumDefines extra; /* --define */
  long batch, heads, heads_kv;
} Config;

static bool alloc_up(HostTensor *t, DLDataType dt, int nd, const int64_t *shape, NumEnv *env) {
  return host_tensor_init(t, dt, nd, shape, env->ctx);
}

/* Checks `o` against `ref`; returns true when within the bound. */
static bool check_out(const Config *c, const char *what, HostTensor *o, const double *ref) {
  HostError e = host_compare(o, ref);
  double bound = bound_for(c->dtype);
  printf("  %s: max abs %.3e, rel to max|ref| %.3e (bound %.0e), %zu non-finite\n", what,
         e.max_abs, e.rel_to_max, bound, e.nonfinite);
  NUM_CHECK(host_error_ok(&e, bound),
            "%s: error %.3e (bound %.0e), %zu non-finite; worst element %zu: out %g ref %g", what,
            e.rel_to_max, bound, e.nonfinite, e.worst, host_tensor_get(o, e.worst), ref[e.worst]);
  return host_error_ok(&e, bound);
}

static void run_gqa(NumEnv *env, const Config *c, TilertKernel *k, long seq_len) {
  int64_t qshape[4] = {c->batch, seq_len, c->heads, c->dim};
  int64_t kshape[4] = {c->batch, seq_len, c->heads_kv, c->dim};
  HostTensor q, kt, v, o;
  bool ok = alloc_up(&q, c->dtype, 4, qshape, env) && alloc_up(&kt, c->dtype, 4, kshape, env) &&
            alloc_up(&v, c->dtype, 4, kshape, env) && alloc_up(&o, c->dtype, 4, qshape, env);
  NUM_CHECK(ok, "allocating seq_len %ld", seq_len);
  if (!ok) exit(1);
  host_tensor_fill_uniform(&q, &env->rng, -1, 1);
  host_tensor_fill_uniform(&kt, &env->rng, -1, 1);
  host_tensor_fill_uniform(&v, &env->rng, -1, 1);
  host_tensor_poison(&o);
  NUM_CHECK(host_tensor_upload(&q) && host_tensor_upload(&kt) && host_tensor_upload(&v) &&
                host_tensor_upload(&o),
            "upload failed");
  double scale = 1.0 / sqrt((double)c->dim) * 1.4426950408889634;
  TilertArg args[] = {tilert_arg_tensor(&q.dl), tilert_arg_tensor(&kt.dl), tilert_arg_tensor(&v.dl),
                      tilert_arg_tensor(&o.dl), tilert_arg_f32(scale)};
  TilertStatus st = tilert_launch(k, args, 5, NULL);
  NUM_CHECK(st == TILERT_OK, "launch seq_len %ld: %s: %s", seq_len, tilert_strerror(st),
            tilert_last_error(env->ctx));
  if (st == TILERT_OK) {
    NUM_CHECK(host_tensor_download(&o), "download failed");
    double *ref = malloc(o.numel * sizeof *ref);
    host_ref_attention_general(&q, &kt, &v, c->causal, 1.0 / sqrt((double)c->dim), ref, NULL);
    char what[64];
    snprintf(what, sizeof what, "seq_len %4ld", seq_len);
    check_out(c, what, &o, ref);
    free(ref);
  }
  host_tensor_free(&q), host_tensor_free(&kt), host_tensor_free(&v), host_tensor_free(&o);
}

/* The paged split kernel on a cache built from kt/v: sequence b's key block
 * n goes to a page chosen at random (pages shuffled over the whole cache,
 * plus one spare page that no table points to); then the combine into o. */
static TilertStatus run_paged(NumEnv *env, const Config *c, TilertKernel *kp, TilertKernel *kc,
                              HostTensor *q, HostTensor *kt, HostTensor *v, HostTensor *op,
                              HostTensor *lp, HostTensor *o, long skv, double scale) {
  const int64_t B = c->batch, Hkv = c->heads_kv, D = c->dim, P = c->block_N;
  const int64_t max_pages = (skv + P - 1) / P, npages = B * max_pages + 1;
  int64_t cshape[4] = {npages, P, Hkv, D}, tshape[2] = {B, max_pages}, sshape[1] = {B};
  DLDataType i32 = {kDLInt, 32, 1};
  HostTensor kc_, vc_, bt, sl;
  bool ok = alloc_up(&kc_, c->dtype, 4, cshape, env) && alloc_up(&vc_, c->dtype, 4, cshape, env) &&
            alloc_up(&bt, i32, 2, tshape, env) && alloc_up(&sl, i32, 1, sshape, env);
  NUM_CHECK(ok, "allocating the paged cache");
  if (!ok) exit(1);
  host_tensor_fill_uniform(&kc_, &env->rng, -1, 1); /* pages not in any table: noise */
  host_tensor_fill_uniform(&vc_, &env->rng, -1, 1);
  int64_t *perm = malloc((size_t)npages * sizeof *perm);
  for (int64_t i = 0; i < npages; i++) perm[i] = i;
  for (int64_t i = npages - 1; i > 0; i--) {
    int64_t j = (int64_t)host_rng_uniform(&env->rng, 0, (double)(i + 1));
    if (j > i) j = i;
    int64_t t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  for (int64_t b = 0; b < B; b++) {
    ((int32_t *)sl.host)[b] = (int32_t)skv;
    for (int64_t n = 0; n < max_pages; n++) {
      int64_t page = perm[b * max_pages + n];
      ((int32_t *)bt.host)[b * max_pages + n] = (int32_t)page;
      for (int64_t t = 0; t < P && n * P + t < skv; t++)
        for (int64_t h = 0; h < Hkv; h++)
          for (int64_t d = 0; d < D; d++) {
            size_t from = (size_t)((((b * skv) + n * P + t) * Hkv + h) * D + d);
            size_t to = (size_t)(((page * P + t) * Hkv + h) * D + d);
            host_tensor_set(&kc_, to, host_tensor_get(kt, from));
            host_tensor_set(&vc_, to, host_tensor_get(v, from));
          }
    }
  }
  free(perm);
  host_tensor_poison(o), host_tensor_poison(op), host_tensor_poison(lp);
  NUM_CHECK(host_tensor_upload(&kc_) && host_tensor_upload(&vc_) && host_tensor_upload(&bt) &&
                host_tensor_upload(&sl) && host_tensor_upload(o) && host_tensor_upload(op) &&
                host_tensor_upload(lp),
            "upload failed");
  TilertArg a1[] = {tilert_arg_tensor(&q->dl),  tilert_arg_tensor(&kc_.dl), tilert_arg_tensor(&vc_.dl),
                    tilert_arg_tensor(&bt.dl),  tilert_arg_tensor(&sl.dl),  tilert_arg_tensor(&op->dl),
                    tilert_arg_tensor(&lp->dl), tilert_arg_f32(scale)};
  TilertArg a2[] = {tilert_arg_tensor(&op->dl), tilert_arg_tensor(&lp->dl), tilert_arg_tensor(&o->dl)};
  TilertStatus st = tilert_launch(kp, a1, 8, NULL);
  NUM_CHECK(st == TILERT_OK, "launch paged split: %s: %s", tilert_strerror(st), tilert_last_error(env->ctx));
  if (st == TILERT_OK) st = tilert_launch(kc, a2, 3, NULL);
  if (st == TILERT_OK) NUM_CHECK(host_tensor_download(o), "download failed");
  host_tensor_free(&kc_), host_tensor_free(&vc_), host_tensor_free(&bt), host_tensor_free(&sl);
  return st;
}

static void run_decoding(NumEnv *env, const Config *c, TilertKernel *ks, TilertKernel *kc,
                         TilertKernel *kp, TilertKernel *kg, long sq, long skv, long nsplit) {
  const int64_t B = c->batch, H = c->heads, D = c->dim;
  int64_t qshape[4] = {B, sq, H, D}, kshape[4] = {B, skv, c->heads_kv, D};
  int64_t pshape[5] = {B, H, nsplit, sq, D}, lshape[4] = {B, H, nsplit, sq};
  DLDataType f32 = {kDLFloat, 32, 1};
  HostTensor q, kt, v, o, op, lp;
  bool ok = alloc_up(&q, c->dtype, 4, qshape, env) && alloc_up(&kt, c->dtype, 4, kshape, env) &&
            alloc_up(&v, c->dtype, 4, kshape, env) && alloc_up(&o, c->dtype, 4, qshape, env) &&
            alloc_up(&op, f32, 5, pshape, env) && alloc_up(&lp, f32, 4, lshape, env);
  NUM_CHECK(ok, "allocating");
  if (!ok) exit(1);
  host_tensor_fill_uniform(&q, &env->rng, -1, 1);
  host_tensor_fill_uniform(&kt, &env->rng, -1, 1);
  host_tensor_fill_uniform(&v, &env->rng, -1, 1);
  host_tensor_poison(&o), host_tensor_poison(&op), host_tensor_poison(&lp);
  NUM_CHECK(host_tensor_upload(&q) && host_tensor_upload(&kt) && host_tensor_upload(&v) &&
                host_tensor_upload(&o) && host_tensor_upload(&op) && host_tensor_upload(&lp),
            "upload failed");
  double scale = 1.0 / sqrt((double)D) * 1.4426950408889634;
  TilertArg a1[] = {tilert_arg_tensor(&q.dl),  tilert_arg_tensor(&kt.dl), tilert_arg_tensor(&v.dl),
                    tilert_arg_tensor(&op.dl), tilert_arg_tensor(&lp.dl), tilert_arg_tensor(&o.dl),
                    tilert_arg_f32(scale)};
  TilertArg a2[] = {tilert_arg_tensor(&op.dl), tilert_arg_tensor(&lp.dl), tilert_arg_tensor(&o.dl)};
  TilertStatus st = tilert_launch(ks, a1, 7, NULL);
  NUM_CHECK(st == TILERT_OK, "launch split: %s: %s", tilert_strerror(st), tilert_last_error(env->ctx));
  /* One split: the split kernel wrote o itself and the combine is not run
   * (o is checked below as the split left it; the paged and group-packed
   * paths below still run the combine at one split). */
  if (st == TILERT_OK && nsplit > 1) {
    st = tilert_launch(kc, a2, 3, NULL);
    NUM_CHECK(st == TILERT_OK, "launch combine: %s: %s", tilert_strerror(st),
              tilert_last_error(env->ctx));
  }
  if (st == TILERT_OK) {
    NUM_CHECK(host_tensor_download(&o) && host_tensor_download(&lp), "download failed");
    double *ref = malloc(o.numel * sizeof *ref), *lse = malloc((size_t)(B * H * sq) * sizeof *lse);
    host_ref_attention_general(&q, &kt, &v, c->causal, 1.0 / sqrt((double)D), ref, lse);
    char what[96];
    snprintf(what, sizeof what, "seqlen_q %2ld seqlen_kv %5ld num_split %3ld: out", sq, skv, nsplit);
    check_out(c, what, &o, ref);
    /* The combined log-sum-exp, from the split kernel's partials. */
    double worst = 0;
    size_t bad = 0;
    for (int64_t bh = 0; bh < B * H; bh++)
      for (int64_t i = 0; i < sq; i++) {
        double m = -INFINITY, s = 0;
        for (int64_t sp = 0; sp < nsplit; sp++) {
          double l = host_tensor_get(&lp, (size_t)((bh * nsplit + sp) * sq + i));
          if (isnan(l)) bad++;
          if (l > m) m = l;
        }
        for (int64_t sp = 0; sp < nsplit; sp++)
          if (m > -INFINITY) s += exp2(host_tensor_get(&lp, (size_t)((bh * nsplit + sp) * sq + i)) - m);
        double got = (m + log2(s)) * log(2.0), want = lse[bh * sq + i];
        if (isinf(want) && got == want) continue;
        if (!isfinite(got) || fabs(got - want) > worst) worst = isfinite(got) ? fabs(got - want) : INFINITY;
      }
    printf("  %*s  lse: max abs %.3e (bound 1e-3), %zu NaN\n", 38, "", worst, bad);
    NUM_CHECK(worst <= 1e-3 && bad == 0, "lse: max abs error %.3e, %zu NaN", worst, bad);
    if (kp && run_paged(env, c, kp, kc, &q, &kt, &v, &op, &lp, &o, skv, scale) == TILERT_OK)
      check_out(c, "                   paged, same inputs", &o, ref);
    if (kg && sq == 1) { /* the group-packed kernel: one query token */
      host_tensor_poison(&o), host_tensor_poison(&op), host_tensor_poison(&lp);
      NUM_CHECK(host_tensor_upload(&o) && host_tensor_upload(&op) && host_tensor_upload(&lp), "upload");
      TilertArg ag[] = {a1[0], a1[1], a1[2], a1[3], a1[4], a1[6]}; /* no Output: always combined */
      st = tilert_launch(kg, ag, 6, NULL);
      NUM_CHECK(st == TILERT_OK, "launch gqa split: %s: %s", tilert_strerror(st), tilert_last_error(env->ctx));
      if (st == TILERT_OK) st = tilert_launch(kc, a2, 3, NULL);
      if (st == TILERT_OK && host_tensor_download(&o))
        check_out(c, "                   heads packed per KV head", &o, ref);
    }
    free(ref), free(lse);
  }
  host_tensor_free(&q), host_tensor_free(&kt), host_tensor_free(&v), host_tensor_free(&o);
  host_tensor_free(&op), host_tensor_free(&lp);
}

/* --kernel varlen: the --lengths are the packed sequences' query lengths (one
 * launch for all of them); each has length + kv_extra keys (at least 0). */
static void run_varlen(NumEnv *env, const Config *c, TilertKernel *k) {
  const int64_t H = c->heads, Hkv = c->heads_kv, D = c->dim, g = H / Hkv;
  const int nseq = c->nlengths;
  int64_t cq[17] = {0}, ck[17] = {0}, max_q = 0;
  for (int b = 0; b < nseq; b++) {
    long kl = c->lengths[b] + c->kv_extra;
    cq[b + 1] = cq[b] + c->lengths[b];
    ck[b + 1] = ck[b] + (kl > 0 ? kl : 0);
    if (c->lengths[b] > max_q) max_q = c->lengths[b];
  }
  /* Q and Output have 3 rows more than the sequences use: the kernel must
   * never write them (they stay NaN). */
  const int64_t tail = 3;
  int64_t qshape[3] = {cq[nseq] + tail, H, D}, kshape[3] = {ck[nseq] ? ck[nseq] : 1, Hkv, D},
          cshape[1] = {nseq + 1};
  DLDataType i32 = {kDLInt, 32, 1};
  HostTensor q, kt, v, o, tq, tk;
  bool ok = alloc_up(&q, c->dtype, 3, qshape, env) && alloc_up(&kt, c->dtype, 3, kshape, env) &&
            alloc_up(&v, c->dtype, 3, kshape, env) && alloc_up(&o, c->dtype, 3, qshape, env) &&
            alloc_up(&tq, i32, 1, cshape, env) && alloc_up(&tk, i32, 1, cshape, env);
  NUM_CHECK(ok, "allocating");
  if (!ok) exit(1);
  for (int b = 0; b <= nseq; b++) {
    ((int32_t *)tq.host)[b] = (int32_t)cq[b];
    ((int32_t *)tk.host)[b] = (int32_t)ck[b];
  }
  host_tensor_fill_uniform(&q, &env->rng, -1, 1);
  host_tensor_fill_uniform(&kt, &env->rng, -1, 1);
  host_tensor_fill_uniform(&v, &env->rng, -1, 1);
  host_tensor_poison(&o);
  NUM_CHECK(host_tensor_upload(&q) && host_tensor_upload(&kt) && host_tensor_upload(&v) &&
                host_tensor_upload(&o) && host_tensor_upload(&tq) && host_tensor_upload(&tk),
            "upload failed");
  double scale = 1.0 / sqrt((double)D) * 1.4426950408889634;
  TilertArg args[] = {tilert_arg_tensor(&q.dl),  tilert_arg_tensor(&kt.dl), tilert_arg_tensor(&v.dl),
                      tilert_arg_tensor(&o.dl),  tilert_arg_tensor(&tq.dl), tilert_arg_tensor(&tk.dl),
                      tilert_arg_int(max_q), tilert_arg_f32(scale)};
  double t0 = host_now_ms();
  TilertStatus st = tilert_launch(k, args, 8, NULL);
  double ms = host_now_ms() - t0;
  NUM_CHECK(st == TILERT_OK, "launch: %s: %s", tilert_strerror(st), tilert_last_error(env->ctx));
  if (st == TILERT_OK) {
    NUM_CHECK(host_tensor_download(&o), "download failed");
    double *Q = host_tensor_to_double(&q), *K = host_tensor_to_double(&kt), *V = host_tensor_to_double(&v);
    double *ref = calloc(o.numel, sizeof *ref), *p = malloc((size_t)(ck[nseq] + 1) * sizeof *p);
    const double sm = 1.0 / sqrt((double)D);
    for (int b = 0; b < nseq; b++) {
      int64_t ql = cq[b + 1] - cq[b], kl = ck[b + 1] - ck[b];
      for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < ql; i++) {
          const double *qi = Q + ((cq[b] + i) * H + h) * D;
          int64_t n = c->causal ? kl - ql + i + 1 : kl;
          n = n < 0 ? 0 : n > kl ? kl : n;
          double m = -INFINITY, l = 0;
          for (int64_t j = 0; j < n; j++) {
            const double *kj = K + ((ck[b] + j) * Hkv + h / g) * D;
            double s = 0;
            for (int64_t d = 0; d < D; d++) s += qi[d] * kj[d];
            p[j] = s * sm;
            if (p[j] > m) m = p[j];
          }
          for (int64_t j = 0; j < n; j++) l += (p[j] = exp(p[j] - m));
          double *out = ref + ((cq[b] + i) * H + h) * D;
          for (int64_t d = 0; d < D; d++) out[d] = 0;
          for (int64_t j = 0; j < n; j++) {
            const double *vj = V + ((ck[b] + j) * Hkv + h / g) * D;
            for (int64_t d = 0; d < D; d++) out[d] += p[j] * vj[d];
          }
          for (int64_t d = 0; d < D; d++) out[d] = n ? out[d] / l : 0;
        }
    }
    size_t written = 0;
    for (size_t e = (size_t)(cq[nseq] * H * D); e < o.numel; e++) {
      written += !isnan(host_tensor_get(&o, e));
      host_tensor_set(&o, e, 0), ref[e] = 0;
    }
    NUM_CHECK(written == 0, "%zu elements of the %lld rows after the last sequence were written",
              written, (long long)tail);
    char what[96];
    snprintf(what, sizeof what, "%d sequences, total_q %lld, total_kv %lld, %.1f ms", nseq,
             (long long)cq[nseq], (long long)ck[nseq], ms);
    check_out(c, what, &o, ref);
    free(Q), free(K), free(V), free(ref), free(p);
  }
  host_tensor_free(&q), host_tensor_free(&kt), host_tensor_free(&v), host_tensor_free(&o);
  host_tensor_free(&tq), host_tensor_free(&tk);
}

int main(int argc, char **argv) {
  Config c = {.dim = 64, .dtype = {kDLFloat, 16, 1}, .dtype_name = "f16",
              .lengths = {1, 63, 100, 257}, .nlengths = 4, .qlengths = {1, 5, 16}, .nqlengths = 3,
              .splits = {1, 3}, .nsplits = 2, .block_N = 64, .batch = 2, .heads = 4, .heads_kv = 2};
  TilertDevice device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (num_arg_common(argc, argv, &i, &c.dtype, &c.dtype_name, NULL, &device)) continue;
    if (strcmp(argv[i], "--causal") == 0) {
      c.causal = true;
    } else if (strcmp(argv[i], "--paged") == 0) {
      c.paged = true;
    } else if (strcmp(argv[i], "--gqa-packed") == 0) {
      c.gqa_packed = true;
    } else if (host_opt(argc, argv, &i, "--kernel", &v)) {
      if (strcmp(v, "gqa") != 0 && strcmp(v, "decoding") != 0 && strcmp(v, "varlen") != 0) {
        fprintf(stderr, "bad --kernel %s (gqa, decoding or varlen)\n", v);
        return 2;
      }
      c.decoding = strcmp(v, "decoding") == 0;
      c.varlen = strcmp(v, "varlen") == 0;
    } else if (host_opt(argc, argv, &i, "--batch", &v)) {
      c.batch = host_parse_long("--batch", v, 1, 1024);
    } else if (host_opt(argc, argv, &i, "--heads", &v)) {
      c.heads = host_parse_long("--heads", v, 1, 1024);
    } else if (host_opt(argc, argv, &i, "--heads-kv", &v)) {
      c.heads_kv = host_parse_long("--heads-kv", v, 1, 1024);
    } else if (host_opt(argc, argv, &i, "--dim", &v)) {
      c.dim = host_parse_long("--dim", v, 1, 1024);
    } else if (host_opt(argc, argv, &i, "--define", &v)) {
      if (!num_arg_define(v, &c.extra)) return 2;
      if (strncmp(v, "block_N=", 8) == 0) c.block_N = atol(v + 8);
    } else if (host_opt(argc, argv, &i, "--lengths", &v)) {
      num_arg_list("--lengths", v, c.lengths, &c.nlengths, 1 << 20);
    } else if (host_opt(argc, argv, &i, "--q-lengths", &v)) {
      num_arg_list("--q-lengths", v, c.qlengths, &c.nqlengths, 1 << 20);
    } else if (host_opt(argc, argv, &i, "--kv-extra", &v)) {
      c.kv_extra = host_parse_long("--kv-extra", v, -4096, 1 << 20);
    } else if (host_opt(argc, argv, &i, "--splits", &v)) {
      num_arg_list("--splits", v, c.splits, &c.nsplits, 1 << 16);
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (c.heads % c.heads_kv != 0) {
    fprintf(stderr, "--heads %ld is not a multiple of --heads-kv %ld\n", c.heads, c.heads_kv);
    return 2;
  }

  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  printf("%s: dim %ld, %s, %s, batch %ld, heads %ld, heads_kv %ld",
         c.varlen ? "varlen_attention" : c.decoding ? "flash_decoding" : "gqa_attention", c.dim, c.causal ? "causal" : "non-causal",
         c.dtype_name, c.batch, c.heads, c.heads_kv);
  num_print_defines(&c.extra);
  printf("\n");

  char dim_s[32];
  TilecDefine defs[3 + NUM_MAX_DEFINES];
  int n = num_attention_defines(defs, dim_s, c.dim, c.dtype_name, c.causal, &c.extra);
  TilertModule *mod = num_load(&env, c.varlen ? "varlen_attention.tile" : c.decoding ? "flash_decoding.tile" : "gqa_attention.tile", defs, n);
  if (mod && c.varlen) {
    TilertKernel *k = NULL;
    NUM_CHECK(tilert_module_get_kernel(mod, "varlen_attention", &k) == TILERT_OK, "no kernel: %s",
              tilert_last_error(env.ctx));
    if (k) run_varlen(&env, &c, k);
  } else if (mod && !c.decoding) {
    TilertKernel *k = NULL;
    NUM_CHECK(tilert_module_get_kernel(mod, "gqa_attention", &k) == TILERT_OK, "no kernel: %s",
              tilert_last_error(env.ctx));
    for (int i = 0; k && i < c.nlengths; i++) run_gqa(&env, &c, k, c.lengths[i]);
  } else if (mod) {
    TilertKernel *ks = NULL, *kc = NULL, *kp = NULL, *kg = NULL;
    if (c.gqa_packed)
      NUM_CHECK(tilert_module_get_kernel(mod, "flash_decoding_gqa_split", &kg) == TILERT_OK,
                "no gqa kernel: %s", tilert_last_error(env.ctx));
    if (c.paged)
      NUM_CHECK(tilert_module_get_kernel(mod, "flash_decoding_paged_split", &kp) == TILERT_OK,
                "no paged kernel: %s", tilert_last_error(env.ctx));
    NUM_CHECK(tilert_module_get_kernel(mod, "flash_decoding_split", &ks) == TILERT_OK &&
                  tilert_module_get_kernel(mod, "flash_decoding_combine", &kc) == TILERT_OK,
              "no kernels: %s", tilert_last_error(env.ctx));
    for (int a = 0; ks && kc && a < c.nqlengths; a++)
      for (int b = 0; b < c.nlengths; b++)
        for (int s = 0; s < c.nsplits; s++)
          run_decoding(&env, &c, ks, kc, kp, kg, c.qlengths[a], c.lengths[b], c.splits[s]);
  }
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_attention_variants");
}
