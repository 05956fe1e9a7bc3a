/* host_util.c - see host_util.h. Test-data plumbing for the example programs
 * and the numerics tests: random fills, host/device tensors, double-precision
 * references, error measurement. GPU buffers come from the runtime's device
 * memory calls (tilert_device_alloc...), so nothing here needs CUDA. */
/* nftw, mkdtemp, clock_gettime: POSIX 2008 with XSI. */
#define _XOPEN_SOURCE 700

#include "host_util.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- random */

uint64_t host_seed(void) {
  const char *env = getenv("TILEC_SEED");
  if (env && *env) return strtoull(env, NULL, 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  /* Mix in the pid so tests started in the same nanosecond still differ. */
  return (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}

void host_rng_init(HostRng *r, uint64_t seed) { r->state = seed; }

static uint64_t rng_next(HostRng *r) {
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double host_rng_uniform(HostRng *r, double lo, double hi) {
  double u = (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
  return lo + (hi - lo) * u;
}

double host_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---------------------------------------------------------------- dtypes */

bool host_dtype_parse(const char *name, DLDataType *out) {
  static const struct {
    const char *name;
    uint8_t code, bits;
  } table[] = {{"f16", kDLFloat, 16}, {"bf16", kDLBfloat, 16}, {"f32", kDLFloat, 32},
               {"f64", kDLFloat, 64}, {"f8e4m3", HOST_DL_F8E4M3FN, 8}, {"f8e5m2", HOST_DL_F8E5M2, 8},
               {"i8", kDLInt, 8}, {"u8", kDLUInt, 8}, {"i16", kDLInt, 16}, {"u16", kDLUInt, 16},
               {"i32", kDLInt, 32}, {"u32", kDLUInt, 32}, {"i64", kDLInt, 64}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (strcmp(name, table[i].name) == 0) {
      out->code = table[i].code;
      out->bits = table[i].bits;
      out->lanes = 1;
      return true;
    }
  }
  return false;
}

const char *host_dtype_name(DLDataType t) {
  if (t.code == kDLBfloat && t.bits == 16) return "bf16";
  if (t.code == kDLFloat && t.bits == 16) return "f16";
  if (t.code == kDLFloat && t.bits == 32) return "f32";
  if (t.code == kDLFloat && t.bits == 64) return "f64";
  if (t.code == HOST_DL_F8E4M3FN) return "f8e4m3";
  if (t.code == HOST_DL_F8E5M2) return "f8e5m2";
  return "?";
}

double host_dtype_eps(DLDataType t) {
  if (t.code == HOST_DL_F8E4M3FN) return ldexp(1.0, -4);
  if (t.code == HOST_DL_F8E5M2) return ldexp(1.0, -3);
  if (t.code == kDLBfloat) return ldexp(1.0, -8);
  if (t.bits == 16) return ldexp(1.0, -11);
  if (t.bits == 32) return ldexp(1.0, -24);
  return ldexp(1.0, -53);
}

/* ---------------------------------------------------------------- tensors */

bool host_tensor_init(HostTensor *t, DLDataType dtype, int ndim, const int64_t *shape,
                      TilertContext *gpu) {
  memset(t, 0, sizeof *t);
  if (ndim < 0 || ndim > HOST_MAX_RANK) return false;
  size_t n = 1;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = shape[i];
    n *= (size_t)shape[i];
  }
  t->numel = n;
  t->nbytes = n * (dtype.bits / 8);
  /* calloc(0) may return NULL; keep a valid pointer for empty tensors. */
  t->host = calloc(n ? n : 1, dtype.bits / 8);
  if (!t->host) return false;
  t->dl.data = t->host;
  t->dl.device.device_type = kDLCPU;
  t->dl.device.device_id = 0;
  t->dl.ndim = ndim;
  t->dl.dtype = dtype;
  t->dl.shape = t->shape;
  t->dl.strides = NULL; /* compact row-major */
  t->dl.byte_offset = 0;
  if (gpu && tilert_context_device(gpu) == TILERT_DEVICE_CUDA) {
    void *p = NULL;
    if (tilert_device_alloc(gpu, t->nbytes ? t->nbytes : 1, &p) != TILERT_OK) {
      free(t->host);
      t->host = NULL;
      return false;
    }
    t->gpu = gpu;
    t->dl.data = p;
    t->dl.device.device_type = kDLCUDA;
  }
  return true;
}

void host_tensor_free(HostTensor *t) {
  if (t->gpu) tilert_device_free(t->gpu, t->dl.data);
  free(t->host);
  memset(t, 0, sizeof *t);
}

/* FP8 by definition (OCP v1.0), for references: E4M3FN bias 7, no
 * infinities, S.1111.111 NaN; E5M2 bias 15, IEEE-like. */
double host_fp8_decode(uint8_t code, bool e5m2) {
  int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7, emax = e5m2 ? 31 : 15;
  int e = (code & 0x7f) >> mbits, m = code & ((1 << mbits) - 1);
  double s = code & 0x80 ? -1.0 : 1.0;
  if (e5m2 && e == emax) return m ? NAN : s * INFINITY;
  if (!e5m2 && e == emax && m == 7) return NAN;
  if (e == 0) return s * ldexp(m, 1 - bias - mbits);
  return s * ldexp(m + (1 << mbits), e - bias - mbits);
}

/* The nearest finite code by brute force over all 256 (ties: the even code,
 * i.e. the one whose mantissa is even); beyond the largest finite or
 * infinite: +-largest (saturation); NaN: 0x7F. Independent of the
 * compiler's bit-level encoder, which the tests check against this. */
uint8_t host_fp8_encode(double v, bool e5m2) {
  if (isnan(v)) return 0x7f;
  uint8_t sign = signbit(v) ? 0x80 : 0;
  double a = fabs(v), largest = host_fp8_decode(e5m2 ? 0x7b : 0x7e, e5m2);
  if (a >= largest) return (uint8_t)(sign | (e5m2 ? 0x7b : 0x7e)); /* saturation, infinities too */
  int best = 0;
  double best_d = INFINITY;
  for (int c = 0; c < 0x80; c++) {
    double x = host_fp8_decode((uint8_t)c, e5m2);
    if (!isfinite(x)) continue;
    double d = fabs(x - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  return (uint8_t)(sign | best);
}

double host_tensor_get(const HostTensor *t, size_t i) {
  DLDataType d = t->dl.dtype;
  if (d.code == HOST_DL_F8E4M3FN || d.code == HOST_DL_F8E5M2)
    return host_fp8_decode(((const uint8_t *)t->host)[i], d.code == HOST_DL_F8E5M2);
  if (d.code == kDLInt || d.code == kDLUInt) {
    bool u = d.code == kDLUInt;
    switch (d.bits) {
    case 8: return u ? (double)((const uint8_t *)t->host)[i] : (double)((const int8_t *)t->host)[i];
    case 16: return u ? (double)((const uint16_t *)t->host)[i] : (double)((const int16_t *)t->host)[i];
    case 32: return u ? (double)((const uint32_t *)t->host)[i] : (double)((const int32_t *)t->host)[i];
    default: return (double)((const int64_t *)t->host)[i];
    }
  }
  if (d.code == kDLBfloat) return tilert_bf16_to_f32(((const uint16_t *)t->host)[i]);
  if (d.bits == 16) return tilert_f16_to_f32(((const uint16_t *)t->host)[i]);
  if (d.bits == 32) return ((const float *)t->host)[i];
  return ((const double *)t->host)[i];
}

void host_tensor_set(HostTensor *t, size_t i, double v) {
  DLDataType d = t->dl.dtype;
  if (d.code == HOST_DL_F8E4M3FN || d.code == HOST_DL_F8E5M2) {
    ((uint8_t *)t->host)[i] = host_fp8_encode(v, d.code == HOST_DL_F8E5M2);
    return;
  }
  if (d.code == kDLInt || d.code == kDLUInt) { /* rounded, then wrapped to the width */
    int64_t x = isnan(v) ? (int64_t)0xa5a5a5a5a5a5a5a5ull : (int64_t)llround(v); /* NaN: poison */
    switch (d.bits) {
    case 8: ((uint8_t *)t->host)[i] = (uint8_t)x; break;
    case 16: ((uint16_t *)t->host)[i] = (uint16_t)x; break;
    case 32: ((uint32_t *)t->host)[i] = (uint32_t)x; break;
    default: ((int64_t *)t->host)[i] = x; break;
    }
    return;
  }
  if (d.code == kDLBfloat)
    ((uint16_t *)t->host)[i] = tilert_f32_to_bf16((float)v);
  else if (d.bits == 16)
    ((uint16_t *)t->host)[i] = tilert_f32_to_f16((float)v);
  else if (d.bits == 32)
    ((float *)t->host)[i] = (float)v;
  else
    ((double *)t->host)[i] = v;
}

void host_tensor_fill_uniform(HostTensor *t, HostRng *r, double lo, double hi) {
  for (size_t i = 0; i < t->numel; i++) host_tensor_set(t, i, host_rng_uniform(r, lo, hi));
}

void host_tensor_poison(HostTensor *t) {
  for (size_t i = 0; i < t->numel; i++) host_tensor_set(t, i, NAN);
}

bool host_tensor_upload(HostTensor *t) {
  if (!t->gpu) return true;
  return tilert_copy_to_device(t->gpu, t->dl.data, t->host, t->nbytes) == TILERT_OK;
}

bool host_tensor_download(HostTensor *t) {
  if (!t->gpu) return true;
  return tilert_copy_to_host(t->gpu, t->host, t->dl.data, t->nbytes) == TILERT_OK;
}

void host_view_init(HostView *v, const HostTensor *storage, int ndim, const int64_t *shape,
                    const int64_t *strides, int64_t offset) {
  memset(v, 0, sizeof *v);
  v->dl = storage->dl;
  v->dl.ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    v->shape[d] = shape[d];
    v->strides[d] = strides[d];
  }
  v->offset = offset;
  v->dl.shape = v->shape;
  v->dl.strides = v->strides;
  v->dl.byte_offset = storage->dl.byte_offset + (uint64_t)offset * (storage->dl.dtype.bits / 8);
}

/* Storage index of the view's i-th element in row-major order. */
static size_t view_index(const HostView *v, size_t i) {
  int64_t at = v->offset;
  for (int d = v->dl.ndim - 1; d >= 0; d--) {
    at += (int64_t)(i % (size_t)v->shape[d]) * v->strides[d];
    i /= (size_t)v->shape[d];
  }
  return (size_t)at;
}

void host_view_gather(const HostView *v, const HostTensor *storage, HostTensor *t) {
  for (size_t i = 0; i < t->numel; i++) host_tensor_set(t, i, host_tensor_get(storage, view_index(v, i)));
}

void host_view_scatter(const HostView *v, HostTensor *storage, const HostTensor *t) {
  for (size_t i = 0; i < t->numel; i++) host_tensor_set(storage, view_index(v, i), host_tensor_get(t, i));
}

bool host_launch_timed(TilertContext *ctx, TilertKernel *kern, const TilertArg *args, int nargs,
                       HostTensor *const *tensors, int ntensors, HostTensor *out, long iters,
                       double *best_ms) {
  for (int i = 0; i < ntensors; i++)
    if (!host_tensor_upload(tensors[i])) {
      fprintf(stderr, "error: copying the inputs to the GPU failed\n");
      return false;
    }
  *best_ms = 0;
  for (long it = 0; it < (iters > 0 ? iters : 1); it++) {
    double t1 = host_now_ms();
    if (tilert_launch(kern, args, nargs, NULL) != TILERT_OK) {
      fprintf(stderr, "error: %s\n", tilert_last_error(ctx));
      return false;
    }
    double t = host_now_ms() - t1;
    if (it == 0 || t < *best_ms) *best_ms = t;
  }
  if (!host_tensor_download(out)) {
    fprintf(stderr, "error: copying the output from the GPU failed\n");
    return false;
  }
  return true;
}

/* ---------------------------------------------------------------- references */

double *host_tensor_to_double(const HostTensor *t) {
  double *d = malloc((t->numel ? t->numel : 1) * sizeof *d);
  if (!d) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < t->numel; i++) d[i] = host_tensor_get(t, i);
  return d;
}

void host_ref_attention(const HostTensor *q, const HostTensor *k, const HostTensor *v,
                        bool causal, double sm_scale, double *out) {
  /* Sq == Skv: the bottom-right causal alignment is the usual one (query i
   * sees keys 0..i) and every row sees a key. */
  host_ref_attention_general(q, k, v, causal, sm_scale, out, NULL);
}

void host_ref_attention_general(const HostTensor *q, const HostTensor *k, const HostTensor *v,
                                bool causal, double sm_scale, double *out, double *lse) {
  const int64_t B = q->shape[0], Sq = q->shape[1], H = q->shape[2], D = q->shape[3];
  const int64_t Skv = k->shape[1], Hkv = k->shape[2], groups = H / Hkv;
  double *Q = host_tensor_to_double(q), *K = host_tensor_to_double(k),
         *V = host_tensor_to_double(v);
  double *p = malloc((size_t)(Skv ? Skv : 1) * sizeof *p);
#define QROW(b, s, h) ((size_t)((((b)*Sq + (s)) * H + (h)) * D))
#define KROW(b, s, h) ((size_t)((((b)*Skv + (s)) * Hkv + (h)) * D))
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t i = 0; i < Sq; i++) {
        const double *qi = Q + QROW(b, i, h);
        int64_t n = causal ? Skv - Sq + i + 1 : Skv;
        if (n < 0) n = 0;
        if (n > Skv) n = Skv;
        double m = -INFINITY;
        for (int64_t j = 0; j < n; j++) {
          const double *kj = K + KROW(b, j, h / groups);
          double s = 0;
          for (int64_t d = 0; d < D; d++) s += qi[d] * kj[d];
          p[j] = s * sm_scale;
          if (p[j] > m) m = p[j];
        }
        double l = 0;
        for (int64_t j = 0; j < n; j++) {
          p[j] = exp(p[j] - m);
          l += p[j];
        }
        double *o = out + QROW(b, i, h);
        for (int64_t d = 0; d < D; d++) o[d] = 0;
        for (int64_t j = 0; j < n; j++) {
          const double *vj = V + KROW(b, j, h / groups);
          for (int64_t d = 0; d < D; d++) o[d] += p[j] * vj[d];
        }
        for (int64_t d = 0; d < D; d++) o[d] = n ? o[d] / l : 0;
        if (lse) lse[(b * H + h) * Sq + i] = n ? m + log(l) : -INFINITY;
      }
#undef QROW
#undef KROW
  free(p);
  free(Q);
  free(K);
  free(V);
}

void host_ref_gemm(const HostTensor *a, const HostTensor *b, double *c) {
  const int64_t M = a->shape[0], K = a->shape[1], N = b->shape[1];
  double *A = host_tensor_to_double(a), *B = host_tensor_to_double(b);
  for (int64_t i = 0; i < M * N; i++) c[i] = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) c[i * N + j] += A[i * K + k] * B[k * N + j];
  free(A);
  free(B);
}

void host_ref_gemm_bias_gelu(const HostTensor *a, const HostTensor *b, const HostTensor *bias, double *c) {
  const int64_t M = a->shape[0], N = b->shape[1];
  host_ref_gemm(a, b, c);
  double *w = host_tensor_to_double(bias);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double x = c[i * N + j] + w[j];
      c[i * N + j] = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    }
  free(w);
}

void host_ref_rmsnorm(const HostTensor *x, const HostTensor *w, double eps, double *y) {
  const int64_t M = x->shape[0], N = x->shape[1];
  double *X = host_tensor_to_double(x), *W = host_tensor_to_double(w);
  for (int64_t i = 0; i < M; i++) {
    double ss = 0;
    for (int64_t j = 0; j < N; j++) ss += X[i * N + j] * X[i * N + j];
    double inv = 1.0 / sqrt(ss / (double)N + eps);
    for (int64_t j = 0; j < N; j++) y[i * N + j] = X[i * N + j] * inv * W[j];
  }
  free(X);
  free(W);
}

void host_ref_softmax(const HostTensor *x, double *y) {
  const int64_t M = x->shape[0], N = x->shape[1];
  double *X = host_tensor_to_double(x);
  for (int64_t i = 0; i < M; i++) {
    double m = -INFINITY, l = 0;
    for (int64_t j = 0; j < N; j++)
      if (X[i * N + j] > m) m = X[i * N + j];
    for (int64_t j = 0; j < N; j++) {
      y[i * N + j] = exp(X[i * N + j] - m);
      l += y[i * N + j];
    }
    for (int64_t j = 0; j < N; j++) y[i * N + j] /= l;
  }
  free(X);
}

/* ---------------------------------------------------------------- errors */

static HostError compare_with(const HostTensor *out, const HostTensor *ref_t, const double *ref) {
  HostError e = {0};
  size_t n = out->numel;
  for (size_t i = 0; i < n; i++) {
    double r = ref ? ref[i] : host_tensor_get(ref_t, i);
    if (fabs(r) > e.max_ref) e.max_ref = fabs(r);
  }
  bool have_bad = false;
  for (size_t i = 0; i < n; i++) {
    double o = host_tensor_get(out, i);
    double r = ref ? ref[i] : host_tensor_get(ref_t, i);
    if (!isfinite(o)) {
      if (!have_bad) e.worst = i;
      have_bad = true;
      e.nonfinite++;
      continue;
    }
    double d = fabs(o - r);
    if (d > e.max_abs) {
      e.max_abs = d;
      if (!have_bad) e.worst = i;
    }
    if (fabs(r) >= 1e-3 * e.max_ref && fabs(r) > 0 && d / fabs(r) > e.max_rel) e.max_rel = d / fabs(r);
  }
  e.rel_to_max = e.max_ref > 0 ? e.max_abs / e.max_ref : e.max_abs;
  return e;
}

HostError host_compare(const HostTensor *out, const double *ref) {
  return compare_with(out, NULL, ref);
}

HostError host_compare_tensors(const HostTensor *out, const HostTensor *ref) {
  return compare_with(out, ref, NULL);
}

bool host_error_ok(const HostError *e, double bound) {
  /* Written so that a NaN in rel_to_max fails too. */
  return e->nonfinite == 0 && e->rel_to_max <= bound;
}

/* ---------------------------------------------------------------- paths */

#ifndef TILEC_EXAMPLES_DIR
#define TILEC_EXAMPLES_DIR "examples"
#endif

const char *host_example_path(const char *file) {
  static char path[4096];
  const char *dir = getenv("TILEC_EXAMPLES_DIR");
  snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : TILEC_EXAMPLES_DIR, file);
  return path;
}

/* ---------------------------------------------------------------- temp dirs */

char *host_make_temp_dir(const char *prefix) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  size_t len = strlen(base) + strlen(prefix) + 16;
  char *path = malloc(len);
  if (!path) return NULL;
  snprintf(path, len, "%s/%s-XXXXXX", base, prefix);
  if (!mkdtemp(path)) {
    free(path);
    return NULL;
  }
  return path;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path) == 0 ? 0 : -1;
}

bool host_remove_tree(const char *path) {
  if (!path) return true;
  return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

/* ---------------------------------------------------------------- options */

bool host_opt(int argc, char **argv, int *i, const char *name, const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return false;
  if (a[n] == '=') {
    *value = a + n + 1;
    return true;
  }
  if (a[n] != '\0') return false;
  if (*i + 1 >= argc) {
    fprintf(stderr, "%s: option %s needs a value\n", argv[0], name);
    exit(2);
  }
  *i += 1;
  *value = argv[*i];
  return true;
}

long host_parse_long(const char *name, const char *value, long min, long max) {
  char *end = NULL;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (errno || end == value || *end != '\0' || v < min || v > max) {
    fprintf(stderr, "option %s: expected an integer in [%ld, %ld], got '%s'\n", name, min, max,
            value);
    exit(2);
  }
  return v;
}

bool host_device_valid(const char *prog, const char *device_name) {
  if (strcmp(device_name, "auto") == 0 || strcmp(device_name, "cpu") == 0 || strcmp(device_name, "cuda") == 0)
    return true;
  fprintf(stderr, "%s: --device must be auto, cpu or cuda\n", prog);
  return false;
}

bool host_device_arg(int argc, char **argv, int *i, const char **device_name) {
  const char *v;
  if (host_opt(argc, argv, i, "--device", &v)) {
    if (!host_device_valid(argv[0], v)) return false;
    *device_name = v;
    return true;
  }
  fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", argv[0], argv[*i]);
  return false;
}

static bool choice_ok(const char *choices, const char *v) {
  size_t n = strlen(v);
  for (const char *c = choices; *c;) {
    const char *bar = strchr(c, '|');
    size_t len = bar ? (size_t)(bar - c) : strlen(c);
    if (len == n && strncmp(c, v, n) == 0) return true;
    if (!bar) break;
    c = bar + 1;
  }
  return false;
}

/* "a|b|c" -> "a, b or c" */
static void print_choices(FILE *f, const char *choices) {
  for (const char *c = choices; *c;) {
    const char *bar = strchr(c, '|');
    size_t len = bar ? (size_t)(bar - c) : strlen(c);
    fprintf(f, "%.*s", (int)len, c);
    if (!bar) break;
    c = bar + 1;
    fputs(strchr(c, '|') ? ", " : " or ", f);
  }
}

/* Stores the value of option o (argv[*i] matched it); false after a message. */
static bool option_store(const HostOption *o, const char *prog, const char *v) {
  switch (o->kind) {
  case HOST_OPT_LONG:
    *(long *)o->dest = host_parse_long(o->name, v, o->min, o->max);
    return true;
  case HOST_OPT_LONG_TEXT:
    host_parse_long(o->name, v, o->min, o->max);
    *(const char **)o->dest = v;
    return true;
  case HOST_OPT_TEXT:
    *(const char **)o->dest = v;
    return true;
  case HOST_OPT_CHOICE:
    if (!choice_ok(o->choices, v)) {
      fprintf(stderr, "%s: %s must be ", prog, o->name);
      print_choices(stderr, o->choices);
      fputc('\n', stderr);
      return false;
    }
    *(const char **)o->dest = v;
    return true;
  case HOST_OPT_DEFINE:
    if (!strchr(v, '=') || v[0] == '=' || *o->count >= o->max) {
      fprintf(stderr, "%s: %s takes NAME=VALUE (at most %ld)\n", prog, o->name, o->max);
      return false;
    }
    ((const char **)o->dest)[(*o->count)++] = v;
    return true;
  case HOST_OPT_FLAG:
    break;
  }
  return false;
}

int host_parse_options(int argc, char **argv, const char *usage, const HostOption *opts,
                       int nopts, const char **device_name) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: %s %s\n", argv[0], usage);
      return 0;
    }
    int k = 0;
    for (; k < nopts; k++) {
      const HostOption *o = &opts[k];
      const char *v;
      if (o->kind == HOST_OPT_FLAG) {
        if (strcmp(argv[i], o->name) != 0) continue;
        *(bool *)o->dest = true;
        break;
      }
      if (!host_opt(argc, argv, &i, o->name, &v)) continue;
      if (!option_store(o, argv[0], v)) return 2;
      break;
    }
    if (k == nopts && !host_device_arg(argc, argv, &i, device_name)) return 2;
  }
  return -1;
}

TilertKernel *host_load_kernel(TilertContext *ctx, const char *path, const TilecDefine *defs,
                               int ndefs, const char *kernel, TilertModule **mod) {
  TilertKernel *kern = NULL;
  *mod = NULL;
  if (tilert_module_load_file(ctx, path, defs, ndefs, mod) != TILERT_OK ||
      tilert_module_get_kernel(*mod, kernel, &kern) != TILERT_OK) {
    fprintf(stderr, "error: %s\n", tilert_last_error(ctx));
    tilert_module_destroy(*mod);
    *mod = NULL;
    return NULL;
  }
  return kern;
}

TilertContext *host_context_open(const char *device_name, TilertConfig *cfg) {
  cfg->device = strcmp(device_name, "cpu") == 0    ? TILERT_DEVICE_CPU
                : strcmp(device_name, "cuda") == 0 ? TILERT_DEVICE_CUDA
                                                   : TILERT_DEVICE_AUTO;
  TilertContext *ctx = NULL;
  if (tilert_context_create(cfg, &ctx) != TILERT_OK) {
    fprintf(stderr, "error: cannot create the runtime context: %s\n",
            ctx ? tilert_last_error(ctx) : "(no context)");
    tilert_context_destroy(ctx);
    return NULL;
  }
  return ctx;
}
