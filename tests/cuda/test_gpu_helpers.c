/* test_gpu_helpers.c (label gpu) - runs helpers_kernel.cu on the GPU and
 * checks every output element against a CPU reference.
 *
 * tc_test_mma_{f16,bf16}: one warp, D = A(16x16) * B(16x8) five ways (all six
 * ldmatrix forms), A loaded by cp.async as a partial tile (11 of 16 rows, 12
 * of 16 columns; the rest must be zero-filled, the global poison never read).
 * Inputs are multiples of 1/8 small enough that every product and sum is
 * exact in f32, so D must match exactly; the exp2-based row sums match to
 * 1e-5 relative. Also checked: the raw swizzled shared tile, quad and warp
 * reductions, f32 -> f16/bf16 packing, 16-byte vector copies.
 * tc_test_convert: rounding edge cases of the scalar conversions, exp2.
 * tc_test_atomic_pairs: tc_atomic_add_f32x2 at aligned and odd pairs.
 * tc_test_store_pairs: tc_store_f32x2 / f16x2 / bf16x2 the same way.
 * tc_test_stmatrix: tc_stmatrix_x4's four tiles, rows at per-lane addresses
 * (sm_90 GPUs).
 * Exit 77 (skip) with the reason when there is no usable GPU.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "cuda_test.h"

/* ---- host reference conversions (round to nearest even) ---- */

static uint16_t host_f16(float f) {
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (isinf(a)) return sign | 0x7c00;
  if (a < 0x1p-14) return sign | (uint16_t)nearbyint(a * 0x1p24); /* subnormal (or 2^-14) */
  int ex;
  frexp(a, &ex);
  int e = ex - 1; /* a = 1.m * 2^e */
  long bits = ((long)(e + 15) << 10) + (long)nearbyint(ldexp(a, 10 - e)) - 1024;
  return bits >= 0x7c00 ? (uint16_t)(sign | 0x7c00) : (uint16_t)(sign | bits);
}

static float host_f16_to_f32(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? INFINITY : ldexp(1024 + m, e - 25);
  return (float)((h & 0x8000) ? -v : v);
}

static uint16_t host_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float host_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static unsigned host_swizzle(unsigned row, unsigned chunk, unsigned cpr) {
  unsigned x = cpr >= 8 ? (row & 7u) : (row / (8u / cpr)) & (cpr - 1u);
  return row * cpr + (chunk ^ x);
}

static bool close_rel(double got, double want, double tol) {
  return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* ---- device buffers ---- */

#define NBUF 11
typedef struct Bufs {
  RtCuDevPtr p[NBUF];
} Bufs;

static bool upload(RtCuda *cu, RtCuDevPtr *d, const void *h, size_t n) {
  return rt_cuda_malloc(cu, n, d) && rt_cuda_memcpy_htod(cu, *d, h, n);
}

/* Runs one mma kernel and checks everything it wrote. */
static void run_mma(RtCuda *cu, RtCuModule mod, bool bf16) {
  const char *kname = bf16 ? "tc_test_mma_bf16" : "tc_test_mma_f16";
  uint16_t (*enc)(float) = bf16 ? host_bf16 : host_f16;
  float (*dec)(uint16_t) = bf16 ? host_bf16_to_f32 : host_f16_to_f32;
  int a_rows = 11, a_cols = 12; /* kernel parameters: not const */
  const uint16_t poison = bf16 ? 0x7fc0 : 0x7e00; /* NaN */

  float am[16][16], b[16][8];
  uint16_t A[11 * 16], At[16 * 16], B[16 * 8], Bt[8 * 16];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) {
      float v = (float)((i * 16 + k * 3) % 7 - 3) * 0.25f;
      am[i][k] = (i < a_rows && k < a_cols) ? v : 0.0f;
      if (i < a_rows) A[i * 16 + k] = k < a_cols ? enc(v) : poison;
    }
  for (int k = 0; k < 16; k++)
    for (int i = 0; i < 16; i++) At[k * 16 + i] = enc(am[i][k]);
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 8; n++) {
      b[k][n] = (float)((k * 5 + n * 3) % 9 - 4) * 0.125f;
      B[k * 8 + n] = enc(b[k][n]);
      Bt[n * 16 + k] = enc(b[k][n]);
    }
  double ref[16][8];
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) {
      ref[i][n] = 0;
      for (int k = 0; k < 16; k++) ref[i][n] += (double)am[i][k] * b[k][n];
    }

  size_t out_sizes[7] = {5 * 128 * 4, 32 * 4, 6 * 4, 64 * 4, 128 * 4, 256 * 2, 128 * 2};
  RtCuDevPtr dA = 0, dAt = 0, dB = 0, dBt = 0, out[7] = {0};
  bool ok = upload(cu, &dA, A, sizeof A) && upload(cu, &dAt, At, sizeof At) &&
            upload(cu, &dB, B, sizeof B) && upload(cu, &dBt, Bt, sizeof Bt);
  for (int i = 0; ok && i < 7; i++)
    ok = rt_cuda_malloc(cu, out_sizes[i], &out[i]) && rt_cuda_memset(cu, out[i], 0xAB, out_sizes[i]);
  RtCuFunction fn = NULL;
  ok = ok && rt_cuda_get_function(cu, mod, kname, &fn);
  void *params[] = {&dA,     &a_rows, &a_cols, &dAt,    &dB,     &dBt,   &out[0],
                    &out[1], &out[2], &out[3], &out[4], &out[5], &out[6]};
  unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  ok = ok && rt_cuda_launch_kernel(cu, fn, grid, block, 0, NULL, params) && rt_cuda_synchronize(cu);
  CHECK_MSG(ok, "%s: %s", kname, rt_cuda_last_error(cu));

  float D[5 * 128], rowstat[32], total[6], Dr[128];
  unsigned Dh[64];
  uint16_t dump[256], Bcopy[128];
  void *host_out[7] = {D, rowstat, total, Dh, Dr, dump, Bcopy};
  for (int i = 0; ok && i < 7; i++) ok = rt_cuda_memcpy_dtoh(cu, host_out[i], out[i], out_sizes[i]);
  CHECK_MSG(ok, "%s: %s", kname, rt_cuda_last_error(cu));
  if (ok) {
    int bad = 0;
    for (int v = 0; v < 5; v++)
      for (int i = 0; i < 16; i++)
        for (int n = 0; n < 8; n++)
          if (D[v * 128 + i * 8 + n] != (float)ref[i][n] && bad++ < 8)
            fprintf(stderr, "%s: D%d[%d][%d] = %g, want %g\n", kname, v, i, n,
                    D[v * 128 + i * 8 + n], ref[i][n]);
    CHECK_MSG(bad == 0, "%s: %d wrong mma results", kname, bad);

    double all_sum = 0, all_max = -INFINITY;
    for (int i = 0; i < 16; i++) {
      double mx = -INFINITY, s = 0;
      for (int n = 0; n < 8; n++) mx = fmax(mx, ref[i][n]);
      for (int n = 0; n < 8; n++) s += exp2(ref[i][n] - mx);
      CHECK_MSG(rowstat[i] == (float)mx, "%s row %d max %g want %g", kname, i, rowstat[i], mx);
      CHECK_MSG(close_rel(rowstat[16 + i], s, 1e-5), "%s row %d sum %g want %g", kname, i,
                rowstat[16 + i], s);
      for (int n = 0; n < 8; n++) all_sum += ref[i][n];
      all_max = fmax(all_max, mx);
    }
    CHECK_MSG(total[0] == (float)all_sum, "%s warp sum %g want %g", kname, total[0], all_sum);
    CHECK_MSG(total[1] == (float)all_max, "%s warp max %g want %g", kname, total[1], all_max);
    CHECK_MSG(total[2] == 5.0f && total[3] == 3.0f, "%s shfl_xor gave %g %g, want 5 3", kname,
              total[2], total[3]);
    CHECK_MSG(total[4] == 1.0f && total[5] == 0.0f, "%s tc_warp_all_one gave %g %g, want 1 0", kname,
              total[4], total[5]);

    bad = 0;
    for (int idx = 0; idx < 128; idx += 2) {
      unsigned want = (unsigned)enc(D[idx]) | (unsigned)enc(D[idx + 1]) << 16;
      if (Dh[idx / 2] != want && bad++ < 4)
        fprintf(stderr, "%s: packed D[%d] = %08x, want %08x\n", kname, idx, Dh[idx / 2], want);
      for (int j = 0; j < 2; j++)
        if (Dr[idx + j] != dec(enc(D[idx + j])) && bad++ < 4)
          fprintf(stderr, "%s: round trip D[%d] = %g\n", kname, idx + j, Dr[idx + j]);
    }
    CHECK_MSG(bad == 0, "%s: %d wrong conversions of D", kname, bad);

    /* The shared tile as cp.async + swizzle left it: chunk (r, c) at
     * host_swizzle(r, c, 2), zero (+0.0 bits) outside the valid region. */
    bad = 0;
    for (int r = 0; r < 16; r++)
      for (int c = 0; c < 2; c++)
        for (int e = 0; e < 8; e++) {
          uint16_t got = dump[host_swizzle(r, c, 2) * 8 + e];
          uint16_t want = (r < a_rows && 8 * c + e < a_cols) ? enc(am[r][8 * c + e]) : 0;
          if (got != want && bad++ < 8)
            fprintf(stderr, "%s: smem A[%d][%d] = %04x, want %04x\n", kname, r, 8 * c + e, got,
                    want);
        }
    CHECK_MSG(bad == 0, "%s: %d wrong shared-memory elements", kname, bad);
    CHECK_MSG(memcmp(Bcopy, B, sizeof B) == 0, "%s: 16-byte vector copy of B differs", kname);
  }
  rt_cuda_free(cu, dA);
  rt_cuda_free(cu, dAt);
  rt_cuda_free(cu, dB);
  rt_cuda_free(cu, dBt);
  for (int i = 0; i < 7; i++) rt_cuda_free(cu, out[i]);
  printf("%s: %s\n", kname, test_failures ? "FAILED" : "ok");
}

static void run_convert(RtCuda *cu, RtCuModule mod) {
  static const float in[] = {
      0.0f, -0.0f, 1.0f / 3.0f, -2.5f, 3.14159265f, 65504.0f, 65519.0f, 65520.0f, 1e30f,
      1e-8f, 3e-6f, 6.1e-5f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f,
      1.0f + 3 * 0x1p-8f, -7.75f, 10.0f, -10.0f, 0.5f, -126.5f, 100.0f,
  };
  enum { N = sizeof in / sizeof *in };
  RtCuDevPtr din = 0, d16 = 0, dback = 0, dex = 0;
  RtCuFunction fn = NULL;
  int n = N;
  bool ok = upload(cu, &din, in, sizeof in) && rt_cuda_malloc(cu, N * 4, &d16) &&
            rt_cuda_malloc(cu, N * 8, &dback) && rt_cuda_malloc(cu, N * 4, &dex) &&
            rt_cuda_get_function(cu, mod, "tc_test_convert", &fn);
  void *params[] = {&din, &n, &d16, &dback, &dex};
  unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  unsigned out16[N];
  float back[2 * N], ex[N];
  ok = ok && rt_cuda_launch_kernel(cu, fn, grid, block, 0, NULL, params) && rt_cuda_synchronize(cu) &&
       rt_cuda_memcpy_dtoh(cu, out16, d16, sizeof out16) &&
       rt_cuda_memcpy_dtoh(cu, back, dback, sizeof back) &&
       rt_cuda_memcpy_dtoh(cu, ex, dex, sizeof ex);
  CHECK_MSG(ok, "tc_test_convert: %s", rt_cuda_last_error(cu));
  for (int i = 0; ok && i < N; i++) {
    uint16_t h = host_f16(in[i]), bb = host_bf16(in[i]);
    CHECK_MSG((out16[i] & 0xffff) == h, "f16(%a) = %04x, want %04x", in[i], out16[i] & 0xffff, h);
    CHECK_MSG((out16[i] >> 16) == bb, "bf16(%a) = %04x, want %04x", in[i], out16[i] >> 16, bb);
    CHECK_MSG(back[2 * i] == host_f16_to_f32(h), "f32(f16(%a)) = %a", in[i], back[2 * i]);
    CHECK_MSG(back[2 * i + 1] == host_bf16_to_f32(bb), "f32(bf16(%a)) = %a", in[i], back[2 * i + 1]);
    double want = exp2((double)in[i]);
    if (want < 0x1p-126) want = 0; /* ex2.approx.ftz flushes denormals */
    CHECK_MSG(close_rel(ex[i], want, 1e-5) || (isinf(ex[i]) && want > 0x1p127), "exp2(%g) = %g, want %g",
              in[i], ex[i], want);
  }
  rt_cuda_free(cu, din);
  rt_cuda_free(cu, d16);
  rt_cuda_free(cu, dback);
  rt_cuda_free(cu, dex);
  printf("tc_test_convert: %s\n", test_failures ? "FAILED" : "ok");
}

/* tc_store_f32x2, tc_store_f16x2, tc_store_bf16x2 (the CUDA backend's
 * store of a fragment's column pairs into a global tile): 8 threads store
 * pairs at even (one vector store) and odd (two scalar ones) starts, two
 * without their second element, into f32, f16 and bf16 arrays; the 16-bit
 * values must be the round-to-nearest-even conversions of the f32 ones, and
 * every other element keeps its initial bits. */
static void run_store_pairs(RtCuda *cu, RtCuModule mod) {
  enum { N = 8, LEN = 22 };
  const int start[N] = {0, 2, 5, 7, 10, 13, 16, 18}, has[N] = {1, 1, 1, 0, 1, 1, 0, 1};
  float want[LEN], init[LEN], got[LEN];
  uint16_t want16[LEN], wantb[LEN], init16[LEN], got16[LEN], gotb[LEN];
  for (int i = 0; i < LEN; i++) {
    want[i] = init[i] = -1.0f;
    want16[i] = wantb[i] = init16[i] = 0x7e7e;
  }
  for (int i = 0; i < N; i++) {
    const float a = (float)(i + 1) + 1.0f / 3.0f, b = -1000.0f * (float)(i + 1) - 1.0f / 7.0f;
    want[start[i]] = a, want16[start[i]] = host_f16(a), wantb[start[i]] = host_bf16(a);
    if (has[i]) want[start[i] + 1] = b, want16[start[i] + 1] = host_f16(b), wantb[start[i] + 1] = host_bf16(b);
  }
  RtCuDevPtr ddst = 0, d16 = 0, dbf = 0, dstart = 0, dhas = 0;
  RtCuFunction fn = NULL;
  int n = N;
  bool ok = upload(cu, &ddst, init, sizeof init) && upload(cu, &d16, init16, sizeof init16) &&
            upload(cu, &dbf, init16, sizeof init16) && upload(cu, &dstart, start, sizeof start) &&
            upload(cu, &dhas, has, sizeof has) && rt_cuda_get_function(cu, mod, "tc_test_store_pairs", &fn);
  void *params[] = {&ddst, &d16, &dbf, &dstart, &dhas, &n};
  unsigned grid[3] = {1, 1, 1}, block[3] = {N, 1, 1};
  ok = ok && rt_cuda_launch_kernel(cu, fn, grid, block, 0, NULL, params) && rt_cuda_synchronize(cu) &&
       rt_cuda_memcpy_dtoh(cu, got, ddst, sizeof got) && rt_cuda_memcpy_dtoh(cu, got16, d16, sizeof got16) &&
       rt_cuda_memcpy_dtoh(cu, gotb, dbf, sizeof gotb);
  CHECK_MSG(ok, "tc_test_store_pairs: %s", rt_cuda_last_error(cu));
  for (int i = 0; ok && i < LEN; i++) {
    CHECK_MSG(got[i] == want[i], "f32 pair stores: [%d] = %g, want %g", i, got[i], want[i]);
    CHECK_MSG(got16[i] == want16[i], "f16 pair stores: [%d] = 0x%04x, want 0x%04x", i, got16[i], want16[i]);
    CHECK_MSG(gotb[i] == wantb[i], "bf16 pair stores: [%d] = 0x%04x, want 0x%04x", i, gotb[i], wantb[i]);
  }
  rt_cuda_free(cu, ddst);
  rt_cuda_free(cu, d16);
  rt_cuda_free(cu, dbf);
  rt_cuda_free(cu, dstart);
  rt_cuda_free(cu, dhas);
  printf("tc_test_store_pairs: %s\n", test_failures ? "FAILED" : "ok");
}

/* tc_atomic_add_f32x2 (the CUDA backend's atomic_add of column pairs): 64
 * threads add into 8 pairs at even (vector reduction) and odd (two atomics)
 * starts, some without their second element; the host sums the same. */
static void run_atomic_pairs(RtCuda *cu, RtCuModule mod) {
  enum { N = 64, LEN = 20 };
  int start[N], has[N];
  double want[LEN] = {0};
  for (int i = 0; i < N; i++) {
    start[i] = (int[]){0, 2, 4, 6, 1, 3, 9, 17}[i % 8];
    has[i] = i % 5 != 0;
    want[start[i]] += i + 1;
    if (has[i]) want[start[i] + 1] += 1000.0 * (i + 1);
  }
  float zeros[LEN] = {0}, got[LEN];
  RtCuDevPtr ddst = 0, dstart = 0, dhas = 0;
  RtCuFunction fn = NULL;
  int n = N;
  bool ok = upload(cu, &ddst, zeros, sizeof zeros) && upload(cu, &dstart, start, sizeof start) &&
            upload(cu, &dhas, has, sizeof has) && rt_cuda_get_function(cu, mod, "tc_test_atomic_pairs", &fn);
  void *params[] = {&ddst, &dstart, &dhas, &n};
  unsigned grid[3] = {1, 1, 1}, block[3] = {N, 1, 1};
  ok = ok && rt_cuda_launch_kernel(cu, fn, grid, block, 0, NULL, params) && rt_cuda_synchronize(cu) &&
       rt_cuda_memcpy_dtoh(cu, got, ddst, sizeof got);
  CHECK_MSG(ok, "tc_test_atomic_pairs: %s", rt_cuda_last_error(cu));
  for (int i = 0; ok && i < LEN; i++) CHECK_MSG(got[i] == (float)want[i], "pair sums: [%d] = %g, want %g", i, got[i], want[i]);
  rt_cuda_free(cu, ddst);
  rt_cuda_free(cu, dstart);
  rt_cuda_free(cu, dhas);
  printf("tc_test_atomic_pairs: %s\n", test_failures ? "FAILED" : "ok");
}

/* tc_stmatrix_x4 (sm_90 only): tile i, row j, column c of the dump must be
 * the code of lane 4 j + c / 2, register i, half c % 2 (helpers_kernel.cu). */
static void run_stmatrix(RtCuda *cu, RtCuModule mod) {
  enum { LEN = 4 * 8 * 8 };
  uint16_t init[LEN], got[LEN];
  for (int i = 0; i < LEN; i++) init[i] = 0xffff;
  RtCuDevPtr dout = 0;
  RtCuFunction fn = NULL;
  bool ok = upload(cu, &dout, init, sizeof init) && rt_cuda_get_function(cu, mod, "tc_test_stmatrix", &fn);
  void *params[] = {&dout};
  unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  ok = ok && rt_cuda_launch_kernel(cu, fn, grid, block, 0, NULL, params) && rt_cuda_synchronize(cu) &&
       rt_cuda_memcpy_dtoh(cu, got, dout, sizeof got);
  CHECK_MSG(ok, "tc_test_stmatrix: %s", rt_cuda_last_error(cu));
  for (int i = 0; ok && i < 4; i++)
    for (int j = 0; j < 8; j++)
      for (int c = 0; c < 8; c++) {
        const int at = (i * 8 + 7 - j) * 8 + c, want = 8 * (4 * j + c / 2) + 2 * i + c % 2;
        CHECK_MSG(got[at] == want, "stmatrix: tile %d row %d column %d = %d, want %d", i, j, c, got[at], want);
      }
  rt_cuda_free(cu, dout);
  printf("tc_test_stmatrix: %s\n", test_failures ? "FAILED" : "ok");
}

int main(void) {
  char why[512];
  RtCuda *cu = rt_cuda_open(RT_CUDA_DEVICE, 0, why, sizeof why);
  if (!cu) {
    printf("skipped: %s\n", why);
    return TEST_SKIP;
  }
  char target[16];
  rt_cuda_target(rt_cuda_arch(cu), target);
  printf("device: %s (sm_%d, target %s, %d bytes shared opt-in), NVRTC %d\n",
         rt_cuda_device_name(cu), rt_cuda_arch(cu), target, rt_cuda_max_smem_optin(cu),
         rt_cuda_nvrtc_version(cu));

  void *cubin = NULL;
  size_t size = 0;
  RtCuModule mod = NULL;
  if (!rt_cuda_compile(cu, test_helpers_kernel_text, "helpers_kernel.cu", target, NULL, 0, &cubin,
                       &size) ||
      !rt_cuda_module_load(cu, cubin, size, &mod)) {
    fprintf(stderr, "%s\n", rt_cuda_last_error(cu));
    free(cubin);
    rt_cuda_close(cu);
    return 1;
  }
  free(cubin);

  run_mma(cu, mod, false);
  run_mma(cu, mod, true);
  run_convert(cu, mod);
  run_atomic_pairs(cu, mod);
  run_store_pairs(cu, mod);
  if (rt_cuda_arch(cu) >= 90) run_stmatrix(cu, mod);
  else printf("tc_test_stmatrix: not run (stmatrix needs sm_90, this is sm_%d)\n", rt_cuda_arch(cu));

  /* Driver errors come back as text naming the call, not as a crash. */
  RtCuFunction fn = NULL;
  CHECK(!rt_cuda_get_function(cu, mod, "no_such_kernel", &fn));
  CHECK(strstr(rt_cuda_last_error(cu), "no_such_kernel") != NULL);
  CHECK(strstr(rt_cuda_last_error(cu), "cuModuleGetFunction") != NULL);
  printf("expected error: %s\n", rt_cuda_last_error(cu));
  /* The shared-memory attribute: fine up to the opt-in limit, refused above. */
  CHECK(rt_cuda_get_function(cu, mod, "tc_test_convert", &fn));
  CHECK_MSG(rt_cuda_set_max_dynamic_smem(cu, fn, 96 * 1024), "%s", rt_cuda_last_error(cu));
  CHECK(!rt_cuda_set_max_dynamic_smem(cu, fn, (size_t)rt_cuda_max_smem_optin(cu) + 1024));

  rt_cuda_module_unload(cu, mod);
  rt_cuda_close(cu);
  return test_failures ? 1 : 0;
}
