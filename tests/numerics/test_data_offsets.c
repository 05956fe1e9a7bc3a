/* test_data_offsets.c - tile operations whose slice starts are read from an
 * i32 tensor (tests/numerics/data_offsets.tile) against C references: a
 * start that is negative or past the end reads zeros outside the tensor and
 * writes nothing there, at both edges (docs/language.md, "Bounds").
 *
 *   test_data_offsets --file data_offsets.tile [--device cpu|cuda]
 *
 * Every tensor lies in the middle of a larger allocation whose margins hold
 * a sentinel: an input's margins 1000, so that a read before or after the
 * tensor changes the result; an output's (and the output itself) NaN, so
 * that an element nobody should write, inside or outside the tensor, must
 * come back NaN. The offsets mix starts inside the tensor (aligned and odd),
 * starts a little and far before it (INT32_MIN), starts past its end
 * (INT32_MAX), and pages outside the page table's range. Each kernel runs at
 * two sizes: rows of a multiple of 16 bytes (TMA on sm_90a) and rows that
 * are not (the cp.async build). Copies (FP8 widening too), fills and atomic
 * additions must be exact; the gemm within f16 rounding. */
#include "numerics.h"

#include <math.h>

enum { NB = 11, PAGES = 3 };

/* The rows / columns starts of every block: reads (r0, c0) and writes
 * (r1, c1) for windows of up to 32 x 64 in tensors of 100 rows. The writes'
 * in-range parts are disjoint, so blocks never write the same element. */
static int64_t read_at[NB][2], write_at[NB][2];
static void offsets_init(int64_t cols) {
  const int64_t reads[NB][2] = {{-5, -7}, {-31, 3}, {-32, 0}, {0, -64}, {-1000000, 5}, {90, cols - 20},
                                {17, 40}, {-3, cols - 30}, {INT32_MIN, INT32_MIN}, {INT32_MAX, INT32_MAX}, {8, 8}};
  const int64_t writes[NB][2] = {{-5, -7}, {-40, 0}, {27, -63}, {27, 1}, {59, 65}, {91, cols - 20},
                                 {INT32_MIN, INT32_MIN}, {0, -1000000}, {-10, 80}, {100, 0}, {INT32_MAX, INT32_MAX}};
  memcpy(read_at, reads, sizeof reads);
  memcpy(write_at, writes, sizeof writes);
}
static const int64_t page_of[NB] = {0, PAGES - 1, -1, PAGES, 1, -100, INT32_MIN, INT32_MAX, 2, 0, -2};

/* A tensor in the middle of a larger allocation (margins on both sides). */
typedef struct Padded {
  HostTensor store;
  HostView view; /* the tensor: compact, `margin` elements into store */
  size_t margin, numel;
} Padded;

static bool padded_init(Padded *p, DLDataType dtype, int ndim, const int64_t *shape, TilertContext *ctx) {
  memset(p, 0, sizeof *p);
  int64_t strides[HOST_MAX_RANK], n = 1;
  for (int d = ndim - 1; d >= 0; d--) strides[d] = n, n *= shape[d];
  p->numel = (size_t)n;
  p->margin = 16384; /* more than any window reaches past either end; 16-byte aligned */
  int64_t total = (int64_t)(p->numel + 2 * p->margin);
  if (!host_tensor_init(&p->store, dtype, 1, &total, ctx)) return false;
  host_view_init(&p->view, &p->store, ndim, shape, strides, (int64_t)p->margin);
  return true;
}

/* Inputs: the tensor uniform in [-1, 1), the margins 1000. */
static void padded_input(Padded *p, HostRng *rng) {
  for (size_t i = 0; i < p->store.numel; i++)
    host_tensor_set(&p->store, i,
                    i < p->margin || i >= p->margin + p->numel ? 1000.0 : host_rng_uniform(rng, -1, 1));
}

static double padded_get(const Padded *p, size_t i) { return host_tensor_get(&p->store, p->margin + i); }

/* Compares the whole allocation with want[] (tensor elements, NaN where
 * nothing may be written) and its margins with NaN (or the input value
 * `margin_value` when not NaN); tol: |got - want| <= tol * (1 + |want|). */
static void padded_check(const Padded *p, const double *want, double margin_value, double tol, const char *what) {
  int bad = 0;
  for (size_t i = 0; i < p->store.numel; i++) {
    const bool in = i >= p->margin && i < p->margin + p->numel;
    const double w = in ? want[i - p->margin] : margin_value, got = host_tensor_get(&p->store, i);
    const bool ok = isnan(w) ? isnan(got) : fabs(got - w) <= tol * (1 + fabs(w));
    if (!ok && bad++ < 5) {
      if (in)
        NUM_CHECK(false, "%s: element %zu = %g, want %g", what, i - p->margin, got, w);
      else
        NUM_CHECK(false, "%s: written %s the tensor (%zu elements away): %g", what, i < p->margin ? "before" : "after",
                  i < p->margin ? p->margin - i : i - p->margin - p->numel + 1, got);
    }
  }
  NUM_CHECK(bad == 0, "%s: %d wrong elements", what, bad);
}

static bool upload_all(Padded *const *t, int n) {
  for (int i = 0; i < n; i++)
    if (!host_tensor_upload(&t[i]->store)) return false;
  return true;
}
static bool download_all(Padded *const *t, int n) {
  for (int i = 0; i < n; i++)
    if (!host_tensor_download(&t[i]->store)) return false;
  return true;
}
static void free_all(Padded *const *t, int n) {
  for (int i = 0; i < n; i++) host_tensor_free(&t[i]->store);
}

static bool launch(NumEnv *env, TilertModule *mod, const char *name, const TilertArg *args, int nargs) {
  TilertKernel *kern = NULL;
  NUM_CHECK(tilert_module_get_kernel(mod, name, &kern) == TILERT_OK, "no kernel %s", name);
  if (!kern) return false;
  TilertStatus st = tilert_launch(kern, args, nargs, NULL);
  NUM_CHECK(st == TILERT_OK, "%s: launch: %s", name, tilert_last_error(env->ctx));
  return st == TILERT_OK;
}

/* The i32 tensor [n, cols] of offsets: at[b] then (cols 4) at2[b]. */
static bool offsets_tensor(NumEnv *env, HostTensor *t, const int64_t (*at)[2], const int64_t (*at2)[2], int n,
                           int cols) {
  DLDataType i32 = {kDLInt, 32, 1};
  if (!host_tensor_init(t, i32, 2, (int64_t[]){n, cols}, env->ctx)) return false;
  for (int b = 0; b < n; b++)
    for (int j = 0; j < cols; j++) host_tensor_set(t, (size_t)(b * cols + j), (double)(j < 2 ? at[b][j] : at2[b][j - 2]));
  return true;
}

static bool inside(int64_t i, int64_t n) { return i >= 0 && i < n; }

/* Element (i, j) of block b's read window of the R x C tensor X: 0 outside. */
static double window_read(const Padded *X, int b, int i, int j, int64_t R, int64_t C) {
  const int64_t r = read_at[b][0] + i, c = read_at[b][1] + j;
  return inside(r, R) && inside(c, C) ? padded_get(X, (size_t)(r * C + c)) : 0.0;
}

/* kernel windows: X window -> Out[b], Y[b] -> W window, page of Xp -> OutP[b]. */
static void test_windows(NumEnv *env, TilertModule *mod, int64_t R, int64_t C) {
  enum { BM = 32, BN = 64 };
  DLDataType f16 = {kDLFloat, 16, 1}, i32 = {kDLInt, 32, 1};
  Padded X, Y, Xp, Out, W, OutP;
  Padded *all[] = {&X, &Y, &Xp, &Out, &W, &OutP};
  bool ok = padded_init(&X, f16, 2, (int64_t[]){R, C}, env->ctx) &&
            padded_init(&Y, f16, 3, (int64_t[]){NB, BM, BN}, env->ctx) &&
            padded_init(&Xp, f16, 3, (int64_t[]){PAGES, BM, BN}, env->ctx) &&
            padded_init(&Out, f16, 3, (int64_t[]){NB, BM, BN}, env->ctx) &&
            padded_init(&W, f16, 2, (int64_t[]){R, C}, env->ctx) &&
            padded_init(&OutP, f16, 3, (int64_t[]){NB, BM, BN}, env->ctx);
  HostTensor offs = {0}, pages = {0};
  ok = ok && offsets_tensor(env, &offs, read_at, write_at, NB, 4) && host_tensor_init(&pages, i32, 1, (int64_t[]){NB}, env->ctx);
  NUM_CHECK(ok, "allocating");
  if (!ok) return;
  for (int b = 0; b < NB; b++) host_tensor_set(&pages, (size_t)b, (double)page_of[b]);
  padded_input(&X, &env->rng), padded_input(&Y, &env->rng), padded_input(&Xp, &env->rng);
  host_tensor_poison(&Out.store), host_tensor_poison(&W.store), host_tensor_poison(&OutP.store);
  NUM_CHECK(upload_all(all, 6) && host_tensor_upload(&offs) && host_tensor_upload(&pages), "upload");
  TilertArg args[] = {tilert_arg_tensor(&X.view.dl),   tilert_arg_tensor(&Y.view.dl), tilert_arg_tensor(&Xp.view.dl),
                      tilert_arg_tensor(&offs.dl),     tilert_arg_tensor(&pages.dl),  tilert_arg_tensor(&Out.view.dl),
                      tilert_arg_tensor(&W.view.dl),   tilert_arg_tensor(&OutP.view.dl)};
  if (launch(env, mod, "windows", args, 8) && download_all(all, 6)) {
    double *out = malloc(Out.numel * sizeof *out), *w = malloc(W.numel * sizeof *w), *outp = malloc(OutP.numel * sizeof *outp);
    for (size_t i = 0; i < W.numel; i++) w[i] = NAN;
    for (int b = 0; b < NB; b++)
      for (int i = 0; i < BM; i++)
        for (int j = 0; j < BN; j++) {
          const size_t o = ((size_t)b * BM + i) * BN + j;
          out[o] = window_read(&X, b, i, j, R, C);
          const int64_t rw = write_at[b][0] + i, cw = write_at[b][1] + j;
          if (inside(rw, R) && inside(cw, C)) w[rw * C + cw] = padded_get(&Y, o);
          outp[o] = inside(page_of[b], PAGES) ? padded_get(&Xp, ((size_t)page_of[b] * BM + i) * BN + j) : 0.0;
        }
    char what[96];
    snprintf(what, sizeof what, "windows %lldx%lld: Out (reads)", (long long)R, (long long)C);
    padded_check(&Out, out, NAN, 0, what);
    snprintf(what, sizeof what, "windows %lldx%lld: W (writes)", (long long)R, (long long)C);
    padded_check(&W, w, NAN, 0, what);
    snprintf(what, sizeof what, "windows %lldx%lld: OutP (pages)", (long long)R, (long long)C);
    padded_check(&OutP, outp, NAN, 0, what);
    printf("  windows %lld x %lld: %d reads, writes and pages checked\n", (long long)R, (long long)C, NB);
    free(out), free(w), free(outp);
  }
  free_all(all, 6);
  host_tensor_free(&offs), host_tensor_free(&pages);
}

/* kernel elements: fragment reads and writes, a shared f32 tile written
 * element-wise, a fill and an atomic_add, all at the same offsets. */
static void test_elements(NumEnv *env, TilertModule *mod, int64_t R, int64_t C) {
  enum { BM = 16, BN = 32 };
  DLDataType f32 = {kDLFloat, 32, 1};
  Padded X, Y, Out, W, V, F, A;
  Padded *all[] = {&X, &Y, &Out, &W, &V, &F, &A};
  bool ok = padded_init(&X, f32, 2, (int64_t[]){R, C}, env->ctx) &&
            padded_init(&Y, f32, 3, (int64_t[]){NB, BM, BN}, env->ctx) &&
            padded_init(&Out, f32, 3, (int64_t[]){NB, BM, BN}, env->ctx);
  for (int i = 3; i < 7 && ok; i++) ok = padded_init(all[i], f32, 2, (int64_t[]){R, C}, env->ctx);
  HostTensor offs = {0};
  ok = ok && offsets_tensor(env, &offs, read_at, write_at, NB, 4);
  NUM_CHECK(ok, "allocating");
  if (!ok) return;
  padded_input(&X, &env->rng), padded_input(&Y, &env->rng), padded_input(&A, &env->rng);
  host_tensor_poison(&Out.store), host_tensor_poison(&W.store), host_tensor_poison(&V.store),
      host_tensor_poison(&F.store);
  double *a0 = malloc(A.numel * sizeof *a0);
  for (size_t i = 0; i < A.numel; i++) a0[i] = padded_get(&A, i);
  NUM_CHECK(upload_all(all, 7) && host_tensor_upload(&offs), "upload");
  TilertArg args[] = {tilert_arg_tensor(&X.view.dl), tilert_arg_tensor(&Y.view.dl), tilert_arg_tensor(&offs.dl),
                      tilert_arg_tensor(&Out.view.dl), tilert_arg_tensor(&W.view.dl), tilert_arg_tensor(&V.view.dl),
                      tilert_arg_tensor(&F.view.dl), tilert_arg_tensor(&A.view.dl)};
  if (launch(env, mod, "elements", args, 8) && download_all(all, 7)) {
    double *out = malloc(Out.numel * sizeof *out), *w = malloc(W.numel * sizeof *w), *f = malloc(F.numel * sizeof *f);
    for (size_t i = 0; i < W.numel; i++) w[i] = f[i] = NAN;
    for (int b = 0; b < NB; b++)
      for (int i = 0; i < BM; i++)
        for (int j = 0; j < BN; j++) {
          const size_t o = ((size_t)b * BM + i) * BN + j;
          out[o] = window_read(&X, b, i, j, R, C);
          const int64_t rw = write_at[b][0] + i, cw = write_at[b][1] + j;
          if (!inside(rw, R) || !inside(cw, C)) continue;
          const size_t at = (size_t)(rw * C + cw);
          w[at] = padded_get(&Y, o);
          f[at] = 7;
          a0[at] = (float)((float)a0[at] + (float)padded_get(&Y, o));
        }
    char what[96];
    const char *names[] = {"Out (fragment reads)", "W (fragment writes)", "V (shared writes)", "F (fill)", "A (atomic_add)"};
    const double *wants[] = {out, w, w, f, a0};
    Padded *outs[] = {&Out, &W, &V, &F, &A};
    for (int k = 0; k < 5; k++) {
      snprintf(what, sizeof what, "elements %lldx%lld: %s", (long long)R, (long long)C, names[k]);
      padded_check(outs[k], wants[k], k == 4 ? 1000.0 : NAN, 0, what);
    }
    printf("  elements %lld x %lld: fragment, shared, fill and atomic_add at %d offsets checked\n", (long long)R,
           (long long)C, NB);
    free(out), free(w), free(f);
  }
  free(a0);
  free_all(all, 7);
  host_tensor_free(&offs);
}

/* kernel widen: the X window of FP8 codes -> an f16 tile -> Out[b]. Every
 * E4M3 value is an f16, so the result is exact; the margins' 1000
 * saturates to 448. */
static void test_widen(NumEnv *env, TilertModule *mod, int64_t R, int64_t C) {
  enum { BM = 32, BN = 64 };
  DLDataType e4 = {HOST_DL_F8E4M3FN, 8, 1}, f16 = {kDLFloat, 16, 1};
  Padded X, Out;
  Padded *all[] = {&X, &Out};
  bool ok = padded_init(&X, e4, 2, (int64_t[]){R, C}, env->ctx) &&
            padded_init(&Out, f16, 3, (int64_t[]){NB, BM, BN}, env->ctx);
  HostTensor offs = {0};
  ok = ok && offsets_tensor(env, &offs, read_at, write_at, NB, 4);
  NUM_CHECK(ok, "allocating");
  if (!ok) return;
  padded_input(&X, &env->rng);
  host_tensor_poison(&Out.store);
  NUM_CHECK(upload_all(all, 2) && host_tensor_upload(&offs), "upload");
  TilertArg args[] = {tilert_arg_tensor(&X.view.dl), tilert_arg_tensor(&offs.dl), tilert_arg_tensor(&Out.view.dl)};
  if (launch(env, mod, "widen", args, 3) && download_all(all, 2)) {
    double *out = malloc(Out.numel * sizeof *out);
    for (int b = 0; b < NB; b++)
      for (int i = 0; i < BM; i++)
        for (int j = 0; j < BN; j++) {
          const int64_t r = read_at[b][0] + i, c = read_at[b][1] + j;
          out[((size_t)b * BM + i) * BN + j] = inside(r, R) && inside(c, C) ? padded_get(&X, (size_t)(r * C + c)) : 0.0;
        }
    char what[96];
    snprintf(what, sizeof what, "widen %lldx%lld: Out", (long long)R, (long long)C);
    padded_check(&Out, out, NAN, 0, what);
    printf("  widen %lld x %lld: %d FP8 windows checked\n", (long long)R, (long long)C, NB);
    free(out);
  }
  free_all(all, 2);
  host_tensor_free(&offs);
}

/* kernel grouped_gemm: C rows from Offs[g, 0] = A rows there times B[g]
 * over K from Offs[g, 1] (nk * 32 of it, zeros outside). */
static void test_gemm(NumEnv *env, TilertModule *mod, int64_t M, int64_t K, int64_t N) {
  enum { G = 5, TILES = 2, BM = 64, BK = 32 };
  static const int64_t at[G][2] = {{-50, -70}, {78, 40}, {206, 17}, {-1000, 0}, {INT32_MIN, INT32_MAX}};
  DLDataType f16 = {kDLFloat, 16, 1};
  Padded A, B, C;
  Padded *all[] = {&A, &B, &C};
  bool ok = padded_init(&A, f16, 2, (int64_t[]){M, K}, env->ctx) &&
            padded_init(&B, f16, 3, (int64_t[]){G, K, N}, env->ctx) &&
            padded_init(&C, f16, 2, (int64_t[]){M, N}, env->ctx);
  HostTensor offs = {0};
  ok = ok && offsets_tensor(env, &offs, at, NULL, G, 2);
  NUM_CHECK(ok, "allocating");
  if (!ok) return;
  padded_input(&A, &env->rng), padded_input(&B, &env->rng);
  host_tensor_poison(&C.store);
  NUM_CHECK(upload_all(all, 3) && host_tensor_upload(&offs), "upload");
  const int64_t nk = (K + BK - 1) / BK + 1;
  TilertArg args[] = {tilert_arg_tensor(&A.view.dl), tilert_arg_tensor(&B.view.dl), tilert_arg_tensor(&offs.dl),
                      tilert_arg_tensor(&C.view.dl), tilert_arg_int(TILES),         tilert_arg_int(nk)};
  if (launch(env, mod, "grouped_gemm", args, 6) && download_all(all, 3)) {
    double *c = malloc(C.numel * sizeof *c);
    for (size_t i = 0; i < C.numel; i++) c[i] = NAN;
    for (int g = 0; g < G; g++)
      for (int64_t i = 0; i < TILES * BM; i++) {
        const int64_t r = at[g][0] + i;
        if (!inside(r, M)) continue;
        for (int64_t n = 0; n < N; n++) {
          double s = 0;
          for (int64_t t = at[g][1]; t < at[g][1] + nk * BK; t++)
            if (inside(t, K)) s += padded_get(&A, (size_t)(r * K + t)) * padded_get(&B, (size_t)((g * K + t) * N + n));
          c[r * N + n] = s;
        }
      }
    char what[96];
    snprintf(what, sizeof what, "grouped_gemm %lldx%lldx%lld: C", (long long)M, (long long)K, (long long)N);
    padded_check(&C, c, NAN, 0x1p-10, what);
    printf("  grouped_gemm %lld x %lld x %lld: %d groups checked\n", (long long)M, (long long)K, (long long)N, G);
    free(c);
  }
  free_all(all, 3);
  host_tensor_free(&offs);
}

int main(int argc, char **argv) {
  const char *file;
  TilertDevice device;
  int bad = num_args_file_device(argc, argv, "test_data_offsets --file data_offsets.tile [--device cpu|cuda]", &file, &device);
  if (bad) return bad;
  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  TilertModule *mod = num_load_path(&env, file, NULL, 0);
  if (mod) {
    /* Rows of 320 bytes (a multiple of 16: TMA on sm_90a) and of 300. */
    static const int64_t cols[] = {160, 150};
    for (int s = 0; s < 2; s++) {
      offsets_init(cols[s]);
      test_windows(&env, mod, 100, cols[s]);
      test_elements(&env, mod, 100, cols[s]);
      test_widen(&env, mod, 100, cols[s]);
    }
    test_gemm(&env, mod, 300, 200, 96); /* B's tiles by TMA on sm_90a */
    test_gemm(&env, mod, 300, 100, 100);
  }
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_data_offsets");
}
