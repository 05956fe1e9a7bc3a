/* tile_test.h - shared by the tests of runtime/device/tilec_tile.cuh.
 *
 * CHECK macros, exit code 77 for "skipped", and the test cases: each case
 * names one instantiation of a kernel macro of tile_kernels.cu. A test builds
 * its NVRTC source as the kernel file's text followed by one macro line per
 * case (tile_source), so the case tables here are the single list of what is
 * compiled and, in the GPU test, run.
 */
#ifndef TILEC_TILE_TEST_H
#define TILEC_TILE_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_SKIP 77

static int test_failures;

#define CHECK_MSG(cond, ...)                                                        \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);      \
      fprintf(stderr, __VA_ARGS__);                                                 \
      fputc('\n', stderr);                                                          \
      test_failures++;                                                              \
    }                                                                               \
  } while (0)
#define CHECK(cond) CHECK_MSG(cond, "%s", "")

/* ---- test values: multiples of 1/8 in [-1, 1], exact in f16 and bf16 ---- */

static inline float tile_test_value(int i, int j, int salt) {
  uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)j * 40503u ^ (uint32_t)salt * 97u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return (float)((int)(h % 17u) - 8) / 8.0f;
}

/* Exact 16-bit encoding of such a value (normal range or zero only). */
static inline uint16_t tile_enc16(bool bf16, float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if (bf16) return (uint16_t)(u >> 16); /* exact for our values */
  uint16_t sign = (u >> 16) & 0x8000u;
  if (x == 0.0f) return sign;
  int e;
  double f = frexp(fabs((double)x), &e); /* |x| = f * 2^e, f in [0.5, 1) */
  return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((f * 2.0 - 1.0) * 1024.0));
}

#ifdef TILERT_CUDA_DRIVER_H /* the tests that include cuda_driver.h first */
/* NVRTC-compiles src for arch; a failure or any warning is a test failure.
 * On success *cubin (malloc'd, the caller frees it) and *size are set. */
static inline bool tile_compile_clean(RtCuda *cu, const char *src, const char *name, const char *arch,
                                      void **cubin, size_t *size) {
  bool ok = rt_cuda_compile(cu, src, name, arch, NULL, 0, cubin, size);
  CHECK_MSG(ok, "%s for %s: %s", name, arch, rt_cuda_last_error(cu));
  if (ok)
    CHECK_MSG(strstr(rt_cuda_compile_log(cu), "warning") == NULL, "%s for %s warns:\n%s", name, arch,
              rt_cuda_compile_log(cu));
  return ok;
}

/* The sm_90 kernel tests' start: NVRTC alone with `--nvrtc` (CI), else a
 * device of compute capability 9.x or newer (exactly 9 when `exact`: wgmma
 * code is sm_90a's). NULL after printing why the test skips (exit 77). */
static inline RtCuda *tile_open_sm90(bool nvrtc_only, bool exact, const char *what) {
  char why[512];
  RtCuda *cu = rt_cuda_open(nvrtc_only ? RT_CUDA_NVRTC_ONLY : RT_CUDA_DEVICE, 0, why, sizeof why);
  if (!cu) {
    printf("skipped: %s\n", why);
    return NULL;
  }
  const int arch = nvrtc_only ? 90 : rt_cuda_arch(cu);
  if (exact ? arch != 90 : arch < 90) {
    printf("skipped: %s needs an sm_90 GPU (this one is sm_%d)\n", what, arch);
    rt_cuda_close(cu);
    return NULL;
  }
  return cu;
}
#endif

/* tile_kernels.cu, embedded by CMake (runtime/cuda/embed_header.cmake). */
extern const char tile_kernels_name[];
extern const char tile_kernels_text[];

/* ---- cases ---- */

typedef struct TileSsCase {
  bool bf16;
  int m, n, k, wm, wn;
  bool a_swz, b_swz, b_nk;
  bool a_km; /* A stored [K][M] (transpose_A: ldmatrix .trans) */
} TileSsCase;

typedef struct TileRsCase {
  bool bf16;
  int m, k1, n1, n2; /* S = Q[m][k1] Kt[n1][k1]^T, O = P[m][n1] V[n1][n2] */
  bool swz, v_nk;
} TileRsCase;

typedef struct TileCopyCase {
  int rows, cols;
  bool swz;
  bool panels; /* SWZ 2: panels of tc_panel_cols<cols, bytes>() columns (wgmma operands) */
  int bytes;   /* element size: 2 (0 means 2) or 1 (FP8 codes, tile_copy8_*) */
} TileCopyCase;

static inline void tile_ss_name(const TileSsCase *c, char *buf, size_t cap) {
  snprintf(buf, cap, "tile_ss_%s_%dx%dx%d_w%dx%d_%s%s_%s%s", c->bf16 ? "bf16" : "f16", c->m, c->n,
           c->k, c->wm, c->wn, c->a_swz ? "S" : "p", c->b_swz ? "S" : "p", c->b_nk ? "nk" : "kn",
           c->a_km ? "_ta" : "");
}

static inline void tile_rs_name(const TileRsCase *c, char *buf, size_t cap) {
  snprintf(buf, cap, "tile_rs_%s_m%d_k%d_n%d_n%d_%s_%s", c->bf16 ? "bf16" : "f16", c->m, c->k1,
           c->n1, c->n2, c->swz ? "S" : "p", c->v_nk ? "nk" : "kn");
}

static inline void tile_copy_name(const TileCopyCase *c, char *buf, size_t cap) {
  snprintf(buf, cap, "tile_copy%s_%dx%d_%s", c->bytes == 1 ? "8" : "", c->rows, c->cols,
           c->panels ? "P" : c->swz ? "S" : "p");
}

/* Dynamic shared memory of each kernel, bytes. */
static inline size_t tile_ss_smem(const TileSsCase *c) {
  return 2u * (size_t)(c->m * c->k + c->n * c->k);
}
static inline size_t tile_rs_smem(const TileRsCase *c) {
  return 2u * (size_t)(c->m * c->k1 + c->n1 * c->k1 + c->n1 * c->n2);
}

/* Growing text buffer; exits on out-of-memory (a test, not a library). */
typedef struct TileSrc {
  char *p;
  size_t len, cap;
} TileSrc;

static inline void tile_src_add(TileSrc *s, const char *text) {
  size_t n = strlen(text);
  if (s->len + n + 1 > s->cap) {
    s->cap = (s->len + n + 1) * 2;
    s->p = (char *)realloc(s->p, s->cap);
    if (!s->p) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
  }
  memcpy(s->p + s->len, text, n + 1);
  s->len += n;
}

/* The kernel text plus one kernel per case (any table may be empty).
 * Returns a malloc'd string. */
static inline char *tile_source(const TileSsCase *ss, int nss, const TileRsCase *rs, int nrs,
                                const TileCopyCase *cp, int ncp) {
  TileSrc s = {0};
  char name[128], line[512];
  tile_src_add(&s, tile_kernels_text);
  tile_src_add(&s, "\n// ---- instantiations added by the test ----\n");
  for (int i = 0; i < nss; i++) {
    const TileSsCase *c = &ss[i];
    tile_ss_name(c, name, sizeof name);
    snprintf(line, sizeof line, "TILE_SS_KERNEL(%s, %s, %d, %d, %d, %d, %d, %s, %s, %s, %s)\n", name,
             c->bf16 ? "tc_bf16_t" : "tc_f16_t", c->m, c->n, c->k, c->wm, c->wn,
             c->a_swz ? "true" : "false", c->b_swz ? "true" : "false", c->b_nk ? "true" : "false",
             c->a_km ? "true" : "false");
    tile_src_add(&s, line);
  }
  for (int i = 0; i < nrs; i++) {
    const TileRsCase *c = &rs[i];
    tile_rs_name(c, name, sizeof name);
    snprintf(line, sizeof line, "TILE_RS_KERNEL(%s, %s, %d, %d, %d, %d, %s, %s)\n", name,
             c->bf16 ? "tc_bf16_t" : "tc_f16_t", c->m, c->k1, c->n1, c->n2,
             c->swz ? "true" : "false", c->v_nk ? "true" : "false");
    tile_src_add(&s, line);
  }
  for (int i = 0; i < ncp; i++) {
    const TileCopyCase *c = &cp[i];
    tile_copy_name(c, name, sizeof name);
    if (c->bytes == 1)
      snprintf(line, sizeof line, "TILE_COPY8_KERNEL(%s, %d, %d, %d)\n", name, c->rows, c->cols,
               c->panels ? 2 : c->swz ? 1 : 0);
    else
      snprintf(line, sizeof line, "TILE_COPY_KERNEL(%s, %d, %d, %s)\n", name, c->rows, c->cols,
               c->panels ? "2" : c->swz ? "true" : "false");
    tile_src_add(&s, line);
  }
  return s.p;
}

/* ---- what the GPU test runs (the NVRTC test compiles it too) ---- */

/* Every ss case runs with partial tiles (and once full): A has m-5 valid
 * rows and k-5 valid columns, B n-3 (or k-5) valid rows and k-5 (or n-3)
 * valid columns, so the last chunk of a row is partially valid. */
static const TileSsCase tile_gpu_ss[] = {
    {false, 64, 64, 128, 4, 1, true, true, true},    /* flash attention's S = Q K^T */
    {true, 64, 64, 128, 4, 1, true, true, true},
    {false, 128, 128, 32, 2, 2, true, true, false},  /* examples/gemm.tile */
    {true, 128, 128, 32, 2, 2, true, true, false},
    {false, 64, 128, 64, 2, 2, false, false, false},
    {true, 64, 128, 64, 2, 2, false, false, true},
    {false, 128, 128, 32, 4, 1, false, true, true},
    {true, 64, 64, 128, 2, 2, true, false, false},
    {false, 64, 24, 32, 4, 1, true, true, true},     /* NI = 3: the ldmatrix .x2 tail */
    {true, 64, 24, 32, 4, 1, false, false, false},
    {false, 32, 16, 16, 2, 2, true, true, false},    /* NI = 1, MI = 1, one k-step */
    {true, 32, 16, 16, 2, 2, true, true, true},
    /* transpose_A: A stored [K][M], fragments by ldmatrix .trans */
    {false, 128, 128, 32, 2, 2, true, true, false, true},
    {true, 64, 64, 64, 4, 1, true, true, true, true},
    {false, 64, 128, 64, 2, 2, false, false, false, true},
    {true, 32, 16, 16, 2, 2, true, true, true, true},
};
#define TILE_GPU_NSS ((int)(sizeof tile_gpu_ss / sizeof tile_gpu_ss[0]))

/* q_rows = m - 3, kv_rows = n1 - 7 (zero-filled beyond). */
static const TileRsCase tile_gpu_rs[] = {
    {false, 64, 128, 64, 128, true, false}, /* flash attention, head dim 128 */
    {true, 64, 128, 64, 128, false, false},
    {false, 64, 128, 64, 128, false, true},
    {true, 64, 128, 64, 128, true, true},
    {false, 128, 64, 32, 64, true, false},  /* MI = 2 */
    {true, 128, 64, 32, 64, true, true},
    {true, 64, 64, 48, 40, false, true},    /* NI = 5, 3 k-steps */
    {false, 64, 64, 48, 40, false, false},
};
#define TILE_GPU_NRS ((int)(sizeof tile_gpu_rs / sizeof tile_gpu_rs[0]))

static const TileCopyCase tile_gpu_copy[] = {
    {8, 24, false}, /* 24 chunks: most threads idle */
    {1, 64, true},  {4, 8, true},    {16, 16, true}, {32, 40, false},
    {64, 128, true}, {128, 32, true}, {32, 128, false},
    /* panels: three of 32 columns (dim 96), five of 16, two of 64 */
    {128, 96, true, true}, {16, 80, true, true}, {8, 48, true, true}, {32, 128, true, true},
    /* 8-bit (FP8 codes, 16 per chunk): 128-byte rows (gemm_fp8_nt's
     * block_K 128), 64 and 32 bytes, one chunk, plain, a tile of more
     * chunks than threads in a ragged pattern, and panels of 128 bytes
     * (two), 64 bytes (three) and 32 bytes (three). */
    {128, 128, true, false, 1}, {64, 64, true, false, 1}, {32, 32, true, false, 1}, {8, 16, true, false, 1},
    {16, 48, false, false, 1},  {24, 160, false, false, 1}, {64, 256, true, true, 1}, {16, 192, true, true, 1},
    {32, 96, true, true, 1},
};
#define TILE_GPU_NCOPY ((int)(sizeof tile_gpu_copy / sizeof tile_gpu_copy[0]))

#endif
