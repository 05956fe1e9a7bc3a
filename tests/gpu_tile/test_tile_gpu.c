/* test_tile_gpu.c (label gpu) - runs the tile templates on the GPU and checks
 * every output element against a CPU reference.
 *
 *   tile_copy_*  tc_copy_g2s alone: the raw shared tile (swizzle applied)
 *                must hold the valid part of the global tile and +0 elsewhere,
 *                for full, partial, empty and negative valid counts, on the
 *                cp.async path (aligned, stride % 8 == 0) and the scalar path
 *                (odd stride; base one element off alignment).
 *   tile_copy8_* the same for 8-bit elements (FP8 codes, 16 per chunk;
 *                stride % 16 == 0 for cp.async) incl. panels of 128, 64
 *                and 32 bytes.
 *   tile_ss_*    copy A and B (partial tiles) then tc_gemm_ss on an
 *                accumulator that starts non-zero; out = init + A @ B.
 *   tile_rs_*    flash attention's pair: S = Q K^T (ss), P = 16-bit(S) in
 *                registers, O = P V (rs), with a partial key/value block.
 *   tile_misc    tc_smem_index against the doc's formula, tc_ceildiv.
 * Global memory outside the valid region holds NaN (0xffff): a template that
 * reads it produces NaN and fails. Inputs are multiples of 1/8 in [-1, 1], so
 * every ss result and S are exact in f32 and must match exactly (1e-5
 * relative slack); O = P V is compared with 1e-3 of sum |P||V|.
 * Every failure prints the case, the first mismatching elements and the
 * expected and actual values. Exit 77 (skip) when there is no usable GPU.
 * An optional argument runs only the cases whose name contains it, e.g.
 *   test_tile_gpu tile_rs_bf16
 */
#include <math.h>
#include <stdint.h>

#include "cuda_driver.h"
#include "tile_test.h"

#define POISON 0xffffu
#define MAX_REPORT 5

/* ---- host 16-bit formats ---- */

/* Round to the nearest f16 / bf16 value, ties to even (normal range only,
 * which is all the test produces). */
static double round16(bool bf16, double x) {
  if (x == 0.0) return x;
  int e;
  frexp(x, &e);
  double scale = ldexp(1.0, (bf16 ? 8 : 11) - e);
  return nearbyint(x * scale) / scale;
}


static float acc_init(int r, int c) { return (float)((r * 3 + c * 5) % 11 - 5) * 0.125f; }

/* tc_smem_index as docs/gpu-codegen.md defines it. */
static int host_index(int cols, bool swz, int r, int c) {
  if (!swz) return r * cols + c;
  unsigned cpr = (unsigned)cols / 8, chunk = (unsigned)c / 8, x;
  x = cpr >= 8 ? ((unsigned)r & 7u) : ((unsigned)r / (8u / cpr)) & (cpr - 1u);
  return (int)(((unsigned)r * cpr + (chunk ^ x)) * 8 + (unsigned)c % 8);
}

/* A global buffer of poison holding logical (r, c) at g[off + r * stride + c]
 * for r < rv, c < cv (off <= 8); val (optional, [rows][cols]) receives the
 * zero-padded logical tile. */
static uint16_t *make_global_lo(bool bf16, int off, int rows, int cols, long long stride, int rv,
                                int cv, int rlo, int clo, int salt, float *val) {
  uint16_t *g = (uint16_t *)malloc(sizeof *g * (size_t)(rows * stride + 8));
  for (long long i = 0; i < rows * stride + 8; i++) g[i] = POISON;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      bool in = r >= rlo && r < rv && c >= clo && c < cv;
      float v = tile_test_value(r, c, salt);
      if (in) g[off + r * stride + c] = tile_enc16(bf16, v);
      if (val) val[r * cols + c] = in ? v : 0.0f;
    }
  return g;
}

static uint16_t *make_global_at(bool bf16, int off, int rows, int cols, long long stride, int rv,
                                int cv, int salt, float *val) {
  return make_global_lo(bf16, off, rows, cols, stride, rv, cv, 0, 0, salt, val);
}

static uint16_t *make_global(bool bf16, int rows, int cols, long long stride, int rv, int cv,
                             int salt, float *val) {
  return make_global_at(bf16, 0, rows, cols, stride, rv, cv, salt, val);
}

/* ---- device helpers ---- */

typedef struct Dev {
  RtCuda *cu;
  RtCuModule mod;
  RtCuDevPtr p[8];
  int n;
  bool ok;
} Dev;

static RtCuDevPtr dev_alloc(Dev *d, const void *host, size_t bytes) {
  RtCuDevPtr p = 0;
  if (!d->ok) return 0;
  d->ok = rt_cuda_malloc(d->cu, bytes, &p) &&
          (host ? rt_cuda_memcpy_htod(d->cu, p, host, bytes) : rt_cuda_memset(d->cu, p, 0xAB, bytes));
  if (p) d->p[d->n++] = p;
  return p;
}

static void dev_get(Dev *d, void *host, RtCuDevPtr p, size_t bytes) {
  if (d->ok) d->ok = rt_cuda_memcpy_dtoh(d->cu, host, p, bytes);
}

static void dev_launch(Dev *d, const char *name, size_t smem, void **params) {
  RtCuFunction fn = NULL;
  unsigned grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
  if (d->ok)
    d->ok = rt_cuda_get_function(d->cu, d->mod, name, &fn) && rt_cuda_set_max_dynamic_smem(d->cu, fn, smem) &&
            rt_cuda_launch_kernel(d->cu, fn, grid, block, smem, NULL, params) && rt_cuda_synchronize(d->cu);
}

/* Frees the buffers; false (after printing the driver's error) on failure. */
static bool dev_done(Dev *d, const char *what) {
  for (int i = 0; i < d->n; i++) rt_cuda_free(d->cu, d->p[i]);
  d->n = 0;
  CHECK_MSG(d->ok, "%s: %s", what, rt_cuda_last_error(d->cu));
  bool ok = d->ok;
  d->ok = true;
  return ok;
}

/* The same with panels (SWZ 2): columns [Pp, Pp + P) form a swizzled
 * [rows][P] tile at p * rows * P, P the widest of 64, 32, 16 dividing cols. */
static int host_tile_index(int rows, int cols, int swz, int r, int c) {
  int p = cols % 64 == 0 ? 64 : cols % 32 == 0 ? 32 : 16;
  if (swz != 2 || cols <= p) return host_index(cols, swz != 0, r, c);
  return (c / p) * rows * p + host_index(p, true, r, c % p);
}

/* Compares a raw shared tile [rows][cols] (as dumped) with the expected
 * 16-bit contents of logical (r, c): g[r * stride + c] when valid, else 0.
 * swz: 0 plain, 1 swizzled rows, 2 panels. */
static int check_tile_lo(const char *what, const uint16_t *dump, int rows, int cols, int swz,
                         const uint16_t *g, long long stride, int rv, int cv, int rlo, int clo) {
  int bad = 0;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      uint16_t want = (r >= rlo && r < rv && c >= clo && c < cv) ? g[r * stride + c] : 0;
      uint16_t got = dump[host_tile_index(rows, cols, swz, r, c)];
      if (got != want && bad++ < MAX_REPORT)
        fprintf(stderr, "  %s: shared (%d, %d) at index %d = 0x%04x, want 0x%04x%s\n", what, r, c,
                host_tile_index(rows, cols, swz, r, c), got, want,
                got == POISON ? " (never written, or poison read)" : "");
    }
  return bad;
}

static int check_tile(const char *what, const uint16_t *dump, int rows, int cols, int swz,
                      const uint16_t *g, long long stride, int rv, int cv) {
  return check_tile_lo(what, dump, rows, cols, swz, g, stride, rv, cv, 0, 0);
}

/* tc_smem_index<ROWS, COLS, SWZ, 1> as docs/gpu-codegen.md defines it:
 * 16 codes per chunk; SWZ 2: panels of P codes, P the widest of 128, 64, 32
 * bytes dividing the row, each a [rows][P] tile with swizzled P-byte rows. */
static int host_index8(int rows, int cols, int swz, int r, int c) {
  if (swz == 0) return r * cols + c;
  int p = cols % 128 == 0 ? 128 : cols % 64 == 0 ? 64 : 32;
  if (swz == 2 && cols > p) return (c / p) * rows * p + host_index8(rows, p, 1, r, c % p);
  unsigned cpr = (unsigned)cols / 16, chunk = (unsigned)c / 16, x;
  x = cpr >= 8 ? ((unsigned)r & 7u) : ((unsigned)r / (8u / cpr)) & (cpr - 1u);
  return (int)(((unsigned)r * cpr + (chunk ^ x)) * 16 + (unsigned)c % 16);
}

/* The 8-bit copy: codes (r * 7 + c * 3) % 255 (never the 0xff poison) at
 * g[off + r * stride + c] for the valid part; the shared tile is poisoned
 * with 0xff before the copy. */
static void run_copy8(Dev *d, const TileCopyCase *cc) {
  char name[128];
  tile_copy_name(cc, name, sizeof name);
  const int R = cc->rows, C = cc->cols;
  const int valid[][2] = {{R, C}, {R - (R > 3 ? 3 : 0), C - 5}, {R, 3}, {1, C}, {R, 17},
                          {0, C}, {R, 0}, {-2, -5}, {R + 7, C + 9}};
  int failed = 0;
  for (int path = 0; path < 3; path++) {
    /* 0: cp.async (stride % 16 == 0); 1: stride % 16 == 8 -> scalar; 2: base off alignment */
    long long stride = path == 1 ? C + 8 : C + 16;
    int off = path == 2 ? 3 : 0;
    for (size_t v = 0; v < sizeof valid / sizeof valid[0]; v++) {
      int rv = valid[v][0], cv = valid[v][1];
      int grv = rv > R ? R : rv, gcv = cv > C ? C : cv;
      size_t gbytes = (size_t)(R * stride + 16);
      uint8_t *g = (uint8_t *)malloc(gbytes), *dump = (uint8_t *)malloc((size_t)(R * C));
      memset(g, 0xff, gbytes);
      for (int r = 0; r < grv; r++)
        for (int c = 0; c < gcv; c++) g[off + r * stride + c] = (uint8_t)((r * 7 + c * 3) % 255);
      RtCuDevPtr dg = dev_alloc(d, g, gbytes);
      RtCuDevPtr ddump = dev_alloc(d, NULL, (size_t)(R * C));
      RtCuDevPtr gp = dg + (unsigned)off;
      void *params[] = {&gp, &stride, &rv, &cv, &ddump};
      dev_launch(d, name, (size_t)(R * C), params);
      dev_get(d, dump, ddump, (size_t)(R * C));
      if (dev_done(d, name)) {
        int bad = 0;
        for (int r = 0; r < R; r++)
          for (int c = 0; c < C; c++) {
            int want = (r < grv && c < gcv) ? (r * 7 + c * 3) % 255 : 0;
            int at = host_index8(R, C, cc->panels ? 2 : cc->swz, r, c), got = dump[at];
            if (got != want && bad++ < MAX_REPORT)
              fprintf(stderr, "  %s path %d rows_valid %d cols_valid %d: shared (%d, %d) at %d = 0x%02x, want 0x%02x%s\n",
                      name, path, rv, cv, r, c, at, got, want, got == 0xff ? " (never written, or poison read)" : "");
          }
        CHECK_MSG(bad == 0, "%s path %d rows_valid %d cols_valid %d: %d wrong elements", name, path, rv, cv, bad);
        failed += bad != 0;
      } else {
        failed++;
      }
      free(g);
      free(dump);
    }
  }
  printf("%s: %s\n", name, failed ? "FAILED" : "ok");
}

/* ---- tc_copy_g2s ---- */

static void run_copy(Dev *d, const TileCopyCase *cc) {
  if (cc->bytes == 1) {
    run_copy8(d, cc);
    return;
  }
  char name[128];
  tile_copy_name(cc, name, sizeof name);
  const int R = cc->rows, C = cc->cols;
  /* rows_valid, cols_valid, rows_lo, cols_lo: lo > 0 is a slice starting
   * before its tensor (the rows / columns before it read as zeros; the
   * global data there is poison). */
  const int valid[][4] = {{R, C, 0, 0}, {R - (R > 3 ? 3 : 0), C - 5, 0, 0}, {R, 3, 0, 0}, {1, C, 0, 0},
                          {0, C, 0, 0}, {R, 0, 0, 0}, {-2, -5, 0, 0}, {R + 7, C + 9, 0, 0},
                          {R, C, 3, 0}, {R, C, 0, 5}, {R - 2, C - 3, 1, 8}, {R, C, R, 0}, {R, C, 0, C + 1}};
  int failed = 0;
  for (int path = 0; path < 3; path++) {
    /* 0: cp.async; 1: odd stride; 2: base not 16-byte aligned -> scalar */
    long long stride = path == 1 ? C + 3 : C + 8;
    int off = path == 2 ? 1 : 0;
    for (size_t v = 0; v < sizeof valid / sizeof valid[0]; v++) {
      int rv = valid[v][0], cv = valid[v][1], rlo = valid[v][2], clo = valid[v][3];
      /* Counts past the tile mean "all of it"; the global data is the tile. */
      int grv = rv > R ? R : rv, gcv = cv > C ? C : cv;
      uint16_t *g = make_global_lo(false, off, R, C, stride, grv, gcv, rlo, clo, 7 + (int)v, NULL);
      uint16_t *dump = (uint16_t *)malloc(2u * (size_t)(R * C));
      RtCuDevPtr dg = dev_alloc(d, g, 2u * (size_t)(R * stride + 8));
      RtCuDevPtr ddump = dev_alloc(d, NULL, 2u * (size_t)(R * C));
      RtCuDevPtr gp = dg + 2u * (unsigned)off;
      void *params[] = {&gp, &stride, &rv, &cv, &rlo, &clo, &ddump};
      dev_launch(d, name, 2u * (size_t)(R * C), params);
      dev_get(d, dump, ddump, 2u * (size_t)(R * C));
      if (dev_done(d, name)) {
        char what[192];
        snprintf(what, sizeof what, "%s path %d rows_valid %d cols_valid %d rows_lo %d cols_lo %d", name, path, rv,
                 cv, rlo, clo);
        int bad = check_tile_lo(what, dump, R, C, cc->panels ? 2 : cc->swz, g + off, stride, grv, gcv, rlo, clo);
        CHECK_MSG(bad == 0, "%s: %d wrong elements", what, bad);
        failed += bad != 0;
      } else {
        failed++;
      }
      free(g);
      free(dump);
    }
  }
  printf("%s: %s\n", name, failed ? "FAILED" : "ok");
}

/* ---- tc_gemm_ss ---- */

static void run_ss(Dev *d, const TileSsCase *sc) {
  char name[128];
  tile_ss_name(sc, name, sizeof name);
  const int M = sc->m, N = sc->n, K = sc->k;
  const int BR = sc->b_nk ? N : K, BC = sc->b_nk ? K : N, AR = sc->a_km ? K : M, AC = sc->a_km ? M : K;
  int failed = 0;
  for (int variant = 0; variant < 3; variant++) {
    /* 0: partial tiles, cp.async; 1: partial, scalar path; 2: full tiles */
    bool full = variant == 2;
    int a_rows = full ? AR : AR - 5, a_cols = full ? AC : AC - 5;
    int b_rows = full ? BR : sc->b_nk ? N - 3 : K - 5, b_cols = full ? BC : sc->b_nk ? K - 5 : N - 3;
    long long lda = variant == 1 ? AC + 5 : AC + 8, ldb = variant == 1 ? BC + 5 : BC + 8;
    float *a = (float *)malloc(sizeof(float) * (size_t)(M * K));
    float *b = (float *)malloc(sizeof(float) * (size_t)(BR * BC));
    uint16_t *ga = make_global(sc->bf16, AR, AC, lda, a_rows, a_cols, 1, a);
    uint16_t *gb = make_global(sc->bf16, BR, BC, ldb, b_rows, b_cols, 2, b);
    float *out = (float *)malloc(sizeof(float) * (size_t)(M * N));
    uint16_t *dump = (uint16_t *)malloc(2u * (size_t)(M * K + BR * BC));
    RtCuDevPtr da = dev_alloc(d, ga, 2u * (size_t)(AR * lda + 8));
    RtCuDevPtr db = dev_alloc(d, gb, 2u * (size_t)(BR * ldb + 8));
    RtCuDevPtr dout = dev_alloc(d, NULL, sizeof(float) * (size_t)(M * N));
    RtCuDevPtr ddump = dev_alloc(d, NULL, 2u * (size_t)(M * K + BR * BC));
    void *params[] = {&da, &lda, &a_rows, &a_cols, &db, &ldb, &b_rows, &b_cols, &dout, &ddump};
    dev_launch(d, name, tile_ss_smem(sc), params);
    dev_get(d, out, dout, sizeof(float) * (size_t)(M * N));
    dev_get(d, dump, ddump, 2u * (size_t)(M * K + BR * BC));
    char what[192];
    snprintf(what, sizeof what, "%s %s a %dx%d/lda %lld b %dx%d/ldb %lld", name,
             variant == 1 ? "scalar" : "cp.async", a_rows, a_cols, lda, b_rows, b_cols, ldb);
    if (dev_done(d, what)) {
      int bad_copy = check_tile("A", dump, AR, AC, sc->a_swz, ga, lda, a_rows, a_cols) +
                     check_tile("B", dump + M * K, BR, BC, sc->b_swz, gb, ldb, b_rows, b_cols);
      CHECK_MSG(bad_copy == 0, "%s: %d wrong shared-tile elements after tc_copy_g2s", what, bad_copy);
      int bad = 0;
      for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
          double want = acc_init(r, c);
          for (int k = 0; k < K; k++)
            want += (double)(sc->a_km ? a[k * M + r] : a[r * K + k]) * (sc->b_nk ? b[c * K + k] : b[k * N + c]);
          double got = out[r * N + c];
          if (!(fabs(got - want) <= 1e-5 * fmax(1.0, fabs(want))) && bad++ < MAX_REPORT)
            fprintf(stderr, "  %s: out[%d][%d] = %.9g, want %.9g (warp tile of this element: %d, %d)\n",
                    what, r, c, got, want, r / (M / sc->wm), c / (N / sc->wn));
        }
      CHECK_MSG(bad == 0, "%s: %d of %d results wrong", what, bad, M * N);
      failed += bad != 0 || bad_copy != 0;
    } else {
      failed++;
    }
    free(a);
    free(b);
    free(ga);
    free(gb);
    free(out);
    free(dump);
  }
  printf("%s: %s\n", name, failed ? "FAILED" : "ok");
}

/* ---- flash attention: tc_gemm_ss then tc_gemm_rs ---- */

static void run_rs(Dev *d, const TileRsCase *rc) {
  char name[128];
  tile_rs_name(rc, name, sizeof name);
  const int M = rc->m, K1 = rc->k1, N1 = rc->n1, N2 = rc->n2;
  int q_rows = M - 3, kv_rows = N1 - 7;
  float *q = (float *)malloc(sizeof(float) * (size_t)(M * K1));
  float *k = (float *)malloc(sizeof(float) * (size_t)(N1 * K1));
  float *v = (float *)malloc(sizeof(float) * (size_t)(N1 * N2)); /* [N2][N1] when v_nk */
  uint16_t *gq = make_global(rc->bf16, M, K1, K1, q_rows, K1, 3, q);
  uint16_t *gk = make_global(rc->bf16, N1, K1, K1, kv_rows, K1, 4, k);
  uint16_t *gv = rc->v_nk ? make_global(rc->bf16, N2, N1, N1, N2, kv_rows, 5, v)
                          : make_global(rc->bf16, N1, N2, N2, kv_rows, N2, 5, v);
  float *S = (float *)malloc(sizeof(float) * (size_t)(M * N1));
  float *O = (float *)malloc(sizeof(float) * (size_t)(M * N2));
  RtCuDevPtr dq = dev_alloc(d, gq, 2u * (size_t)(M * K1 + 8));
  RtCuDevPtr dk = dev_alloc(d, gk, 2u * (size_t)(N1 * K1 + 8));
  RtCuDevPtr dv = dev_alloc(d, gv, 2u * (size_t)(N1 * N2 + 8));
  RtCuDevPtr ds = dev_alloc(d, NULL, sizeof(float) * (size_t)(M * N1));
  RtCuDevPtr dout = dev_alloc(d, NULL, sizeof(float) * (size_t)(M * N2));
  void *params[] = {&dq, &dk, &dv, &q_rows, &kv_rows, &ds, &dout};
  dev_launch(d, name, tile_rs_smem(rc), params);
  dev_get(d, S, ds, sizeof(float) * (size_t)(M * N1));
  dev_get(d, O, dout, sizeof(float) * (size_t)(M * N2));
  int bad_s = 0, bad_o = 0;
  bool ran = dev_done(d, name);
  if (ran) {
    double *p = (double *)malloc(sizeof(double) * (size_t)N1);
    for (int r = 0; r < M; r++) {
      for (int n = 0; n < N1; n++) {
        double want = 0;
        for (int kk = 0; kk < K1; kk++) want += (double)q[r * K1 + kk] * k[n * K1 + kk];
        p[n] = round16(rc->bf16, want);
        double got = S[r * N1 + n];
        if (!(fabs(got - want) <= 1e-5 * fmax(1.0, fabs(want))) && bad_s++ < MAX_REPORT)
          fprintf(stderr, "  %s: S[%d][%d] = %.9g, want %.9g\n", name, r, n, got, want);
      }
      for (int j = 0; j < N2; j++) {
        double want = 0, mag = 0;
        for (int n = 0; n < N1; n++) {
          double vv = rc->v_nk ? v[j * N1 + n] : v[n * N2 + j];
          want += p[n] * vv;
          mag += fabs(p[n] * vv);
        }
        double got = O[r * N2 + j];
        if (!(fabs(got - want) <= 1e-3 * mag + 1e-6) && bad_o++ < MAX_REPORT)
          fprintf(stderr, "  %s: O[%d][%d] = %.9g, want %.9g (sum |P||V| = %g)\n", name, r, j, got,
                  want, mag);
      }
    }
    free(p);
    CHECK_MSG(bad_s == 0, "%s: %d of %d S = Q K^T results wrong (tc_gemm_ss)", name, bad_s, M * N1);
    CHECK_MSG(bad_o == 0, "%s: %d of %d O = P V results wrong (tc_gemm_rs)", name, bad_o, M * N2);
  }
  printf("%s: %s\n", name, ran && bad_s == 0 && bad_o == 0 ? "ok" : "FAILED");
  free(q);
  free(k);
  free(v);
  free(gq);
  free(gk);
  free(gv);
  free(S);
  free(O);
}

/* ---- tc_smem_index, tc_ceildiv ---- */

static void run_misc(Dev *d) {
  static const int tiles[5][3] = {{64, 128, 1}, {128, 32, 1}, {16, 16, 1}, {8, 8, 1}, {8, 24, 0}};
  static const long long a[] = {0, 1, 63, 64, 65, 128, -1, -63, -64, -65, 7, -7, 1LL << 40, 5, -5};
  static const long long b[] = {64, 64, 64, 64, 64, 64, 64, 64, 64, 64, -2, -2, 3, 1, 1};
  enum { NCD = sizeof a / sizeof a[0] };
  int total = 0;
  for (int t = 0; t < 5; t++) total += tiles[t][0] * tiles[t][1];
  int *idx = (int *)malloc(sizeof(int) * (size_t)total);
  long long cd[NCD];
  int n = NCD;
  RtCuDevPtr didx = dev_alloc(d, NULL, sizeof(int) * (size_t)total);
  RtCuDevPtr da = dev_alloc(d, a, sizeof a), db = dev_alloc(d, b, sizeof b);
  RtCuDevPtr dcd = dev_alloc(d, NULL, sizeof cd);
  void *params[] = {&didx, &da, &db, &n, &dcd};
  dev_launch(d, "tile_misc", 0, params);
  dev_get(d, idx, didx, sizeof(int) * (size_t)total);
  dev_get(d, cd, dcd, sizeof cd);
  int bad = 0;
  if (dev_done(d, "tile_misc")) {
    int o = 0;
    for (int t = 0; t < 5; t++) {
      int R = tiles[t][0], C = tiles[t][1];
      for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
          int want = host_index(C, tiles[t][2], r, c), got = idx[o + r * C + c];
          if (got != want && bad++ < MAX_REPORT)
            fprintf(stderr, "  tc_smem_index<%d, %d, %s>(%d, %d) = %d, want %d\n", R, C,
                    tiles[t][2] ? "true" : "false", r, c, got, want);
        }
      o += R * C;
    }
    for (int i = 0; i < NCD; i++) {
      long double x = (long double)a[i] / (long double)b[i];
      long long want = (long long)ceill(x);
      if (cd[i] != want && bad++ < 2 * MAX_REPORT)
        fprintf(stderr, "  tc_ceildiv(%lld, %lld) = %lld, want %lld\n", a[i], b[i], cd[i], want);
    }
  } else {
    bad++;
  }
  CHECK_MSG(bad == 0, "tile_misc: %d wrong", bad);
  printf("tile_misc: %s\n", bad ? "FAILED" : "ok");
  free(idx);
}

/* The case filter of the command line (NULL: everything). */
static const char *filter;
static bool selected(const char *name) { return !filter || strstr(name, filter) != NULL; }

int main(int argc, char **argv) {
  filter = argc > 1 ? argv[1] : NULL;
  char why[512];
  RtCuda *cu = rt_cuda_open(RT_CUDA_DEVICE, 0, why, sizeof why);
  if (!cu) {
    printf("skipped: %s\n", why);
    return TEST_SKIP;
  }
  char target[16];
  rt_cuda_target(rt_cuda_arch(cu), target);
  rt_cuda_nvrtc_load(cu); /* for its version here; the compiles would open it anyway */
  printf("device: %s (sm_%d, target %s), NVRTC %d\n", rt_cuda_device_name(cu), rt_cuda_arch(cu),
         target, rt_cuda_nvrtc_version(cu));
  if (rt_cuda_arch(cu) < 80) {
    printf("skipped: the tile templates need sm_80 or newer\n");
    rt_cuda_close(cu);
    return TEST_SKIP;
  }

  char *src = tile_source(tile_gpu_ss, TILE_GPU_NSS, tile_gpu_rs, TILE_GPU_NRS, tile_gpu_copy,
                          TILE_GPU_NCOPY);
  void *cubin = NULL;
  size_t size = 0;
  Dev d = {cu, NULL, {0}, 0, true};
  if (!rt_cuda_compile(cu, src, "tile_kernels.cu", target, NULL, 0, &cubin, &size) ||
      !rt_cuda_module_load(cu, cubin, size, &d.mod)) {
    fprintf(stderr, "%s\n", rt_cuda_last_error(cu));
    free(cubin);
    free(src);
    rt_cuda_close(cu);
    return 1;
  }
  free(cubin);
  free(src);

  char name[128];
  int ran = 0;
  if (selected("tile_misc")) run_misc(&d), ran++;
  for (int i = 0; i < TILE_GPU_NCOPY; i++) {
    tile_copy_name(&tile_gpu_copy[i], name, sizeof name);
    if (selected(name)) run_copy(&d, &tile_gpu_copy[i]), ran++;
  }
  for (int i = 0; i < TILE_GPU_NSS; i++) {
    tile_ss_name(&tile_gpu_ss[i], name, sizeof name);
    if (selected(name)) run_ss(&d, &tile_gpu_ss[i]), ran++;
  }
  for (int i = 0; i < TILE_GPU_NRS; i++) {
    tile_rs_name(&tile_gpu_rs[i], name, sizeof name);
    if (selected(name)) run_rs(&d, &tile_gpu_rs[i]), ran++;
  }
  CHECK_MSG(ran > 0, "no case matches '%s'", filter ? filter : "");

  rt_cuda_module_unload(cu, d.mod);
  rt_cuda_close(cu);
  printf("%s\n", test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
