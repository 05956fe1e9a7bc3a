/* test_wgmma_gpu.c - tc_gemm_wgmma_ss (runtime/device/tilec_wgmma.cuh).
 *
 *   test_wgmma_gpu            (label gpu) runs every case on an sm_90 GPU:
 *                             out = init + A @ B, checked element by element
 *                             against the CPU (exact: inputs are multiples
 *                             of 1/8 in [-1, 1], so every sum is exact in f32)
 *   test_wgmma_gpu --nvrtc    (CI) only compiles the kernels for sm_90a
 * The cases cover every descriptor shape the compiler can ask for: A rows of
 * 32, 64, 128 bytes and panels of 64, 32 and 16 columns (dim 96: three of
 * 32); B K-major ([N][K]) and N-major ([K][N]) with one and several panels;
 * one and two warpgroups; N from 16 to 256 (96, 160, 80 included); f16 and
 * bf16; A from shared memory and (wg_rs_*) from registers; FP8 (wg_fp8_*:
 * m64nNk32, e4m3 and e5m2, mixed, A and B K-major, rows of 32, 64, 128
 * bytes and panels of 128, 64 and 32 bytes); warpgroups splitting N
 * (wg_ns_*: GN 2 and 4, the attention backward's dQ^T = K^T dS^T at dim 64
 * with B in narrowed panels, K-major B, two warpgroup rows); two m64 blocks
 * per warpgroup (wg_2b_*: 32 accumulator rows per warp). The same 16-bit
 * descriptors are walked on the CPU by test_wgmma_layout. Exit 77 (skip) without libnvrtc or an sm_90 GPU.
 */
#include <math.h>
#include <stdint.h>

#include "cuda_driver.h"
#include "tile_test.h"

extern const char wgmma_kernels_name[];
extern const char wgmma_kernels_text[];

typedef struct WgCase {
  bool bf16;
  int m, n, k;
  bool b_nk;
  bool a_regs; /* tc_gemm_wgmma_rs: A from registers */
  bool a_km;   /* A stored [K][M] (transpose_A: wgmma's transpose bit for A) */
  int fp8;     /* tc_gemm_wgmma_fp8_ss: 0 no; else bit 0: A e5m2, bit 1: B e5m2 (plus 4: e4m3 x e4m3) */
  int gn;      /* > 1: the warpgroups split N into gn slices (M / 16 * gn warps) */
  int b_swz;   /* with gn: B's layout (1 rows, 2 panels, 32 / 64: narrowed panels of that many bytes) */
  bool two_blocks; /* 32 rows per warp: each warpgroup owns two m64 blocks (M / 32 warps) */
} WgCase;

static const WgCase cases[] = {
    {false, 64, 64, 64, false},   /* A 128 B rows, B one N-major panel */
    {true, 128, 128, 64, false},  /* two warpgroups, B two panels (examples/gemm.tile) */
    {false, 128, 256, 64, false}, /* the widest N */
    {true, 64, 256, 32, false},   /* A 64 B rows, B four panels of 32 rows */
    {false, 64, 128, 16, false},  /* A 32 B rows */
    {false, 64, 32, 64, false},   /* B N-major 64 B rows */
    {true, 64, 16, 64, false},    /* B N-major 32 B rows */
    {false, 128, 64, 128, true},  /* flash attention's S = Q K^T, d 128: A and B panels */
    {true, 64, 128, 64, true},    /* S = Q K^T, d 64 */
    {false, 128, 128, 32, true},  /* B K-major 64 B rows */
    {false, 128, 128, 64, false, true}, /* flash attention's O = P V, d 128: V in panels */
    {true, 64, 64, 128, false, true},   /* O = P V, d 64, a 128-key block */
    {false, 64, 32, 32, true, true},
    /* Widths that are not a power of two: panels of 32 or 16 columns
     * (64- / 32-byte swizzle), N = 96, 160, 80. */
    {false, 128, 128, 96, true},        /* flash attention d 96: S = Q K^T, A and B in 32-column panels */
    {true, 128, 128, 96, true},
    {false, 128, 96, 128, false, true}, /* d 96: O = P V, V [128][96] in three N-major panels */
    {true, 128, 96, 128, false, true},
    {true, 64, 64, 160, true},          /* d 160: five 32-column panels */
    {false, 64, 160, 64, false},        /* N-major B of five panels, N = 160 */
    {false, 64, 80, 48, false},         /* 16-column panels: A three, B five; N = 80 */
    {true, 64, 80, 80, true},
    /* transpose_A: A [K][M], M-major (64-column panels per warpgroup). */
    {false, 64, 64, 32, false, false, true},
    {true, 128, 128, 64, false, false, true},
    {false, 128, 96, 96, true, false, true},
    /* FP8 (B always [N][K]): 128-byte rows (examples/gemm_fp8.tile, block_K 128) */
    {false, 128, 128, 128, true, false, false, 4},
    {false, 64, 256, 128, true, false, false, 3}, /* e5m2 x e5m2, the widest N */
    {false, 64, 64, 64, true, false, false, 2},   /* e4m3 x e5m2, 64-byte rows */
    {false, 64, 16, 32, true, false, false, 1},   /* e5m2 x e4m3, 32-byte rows */
    {false, 128, 64, 256, true, false, false, 4}, /* two 128-byte panels */
    /* FP8 rows that are not a power of two: panels of 64 or 32 bytes (the
     * 16-bit rule in bytes), N = 96, 80. */
    {false, 128, 96, 192, true, false, false, 4}, /* three 64-byte panels */
    {false, 64, 80, 96, true, false, false, 3},   /* three 32-byte panels */
    {false, 64, 48, 384, true, false, false, 1},  /* three 128-byte panels */
    /* Warpgroups splitting N: the backward's dQ^T [64, N] over 8 warps,
     * A = K [128][64] read M-major, B = dS^T [128][N] N-major in the
     * narrowed panels that start each slice (N 96: 16-column panels for
     * slices of 48; N 64: 32-column panels for slices of 32); a K-major B;
     * two warpgroup rows; four warpgroup columns. */
    {true, 64, 96, 128, false, false, true, 0, 2, 32},
    {false, 64, 96, 128, false, false, true, 0, 2, 32},
    {true, 64, 64, 128, false, false, true, 0, 2, 64},
    {false, 64, 32, 128, false, false, true, 0, 2, 32},
    {true, 64, 128, 64, true, false, false, 0, 2, 1},
    {false, 64, 96, 96, true, false, false, 0, 2, 2},
    {false, 128, 64, 32, false, false, false, 0, 2, 64},
    {true, 64, 128, 64, false, false, false, 0, 4, 64},
    /* Two m64 blocks per warpgroup (32 accumulator rows per warp): gemm.tile
     * 256 x 128 over 256 threads; one warpgroup; K-major B; A in 64-column
     * panels, in 32-column ones (dim 96), 64-byte rows. */
    {true, 256, 128, 64, false, false, false, 0, 0, 0, true},
    {false, 128, 256, 64, false, false, false, 0, 0, 0, true},
    {true, 128, 64, 128, true, false, false, 0, 0, 0, true},
    {false, 256, 96, 96, true, false, false, 0, 0, 0, true},
    {true, 128, 128, 32, false, false, false, 0, 0, 0, true},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static const char *fp8_name(const WgCase *c, int which) { return (c->fp8 >> which) & 1 ? "e5m2" : "e4m3"; }

static void case_name(const WgCase *c, char *buf, size_t cap) {
  if (c->fp8) {
    snprintf(buf, cap, "wg_fp8_%s_%s_%dx%dx%d", fp8_name(c, 0), fp8_name(c, 1), c->m, c->n, c->k);
    return;
  }
  if (c->gn > 1) {
    snprintf(buf, cap, "wg_ns%d_%s_%dx%dx%d_%s%s_swz%d", c->gn, c->bf16 ? "bf16" : "f16", c->m, c->n, c->k,
             c->b_nk ? "nk" : "kn", c->a_km ? "_ta" : "", c->b_swz);
    return;
  }
  snprintf(buf, cap, "wg_%s%s_%dx%dx%d_%s%s", c->a_regs ? "rs_" : c->two_blocks ? "2b_" : "", c->bf16 ? "bf16" : "f16",
           c->m, c->n, c->k, c->b_nk ? "nk" : "kn", c->a_km ? "_ta" : "");
}

static char *source(void) {
  TileSrc s = {0};
  char name[96], line[256];
  tile_src_add(&s, wgmma_kernels_text);
  tile_src_add(&s, "\n");
  for (int i = 0; i < NCASES; i++) {
    const WgCase *c = &cases[i];
    case_name(c, name, sizeof name);
    if (c->fp8) {
      snprintf(line, sizeof line, "WG_FP8_KERNEL(%s, tc_%s_t, tc_%s_t, %d, %d, %d)\n", name, fp8_name(c, 0),
               fp8_name(c, 1), c->m, c->n, c->k);
      tile_src_add(&s, line);
      continue;
    }
    if (c->gn > 1) {
      snprintf(line, sizeof line, "WG_NS_KERNEL(%s, %s, %d, %d, %d, %s, %s, %d, %d)\n", name,
               c->bf16 ? "tc_bf16_t" : "tc_f16_t", c->m, c->n, c->k, c->b_nk ? "true" : "false",
               c->a_km ? "true" : "false", c->gn, c->b_swz);
      tile_src_add(&s, line);
      continue;
    }
    snprintf(line, sizeof line, "%s(%s, %s, %d, %d, %d, %s)\n", c->a_regs ? "WG_RS_KERNEL" : c->a_km ? "WG_TA_KERNEL" : c->two_blocks ? "WG_2B_KERNEL" : "WG_KERNEL", name,
             c->bf16 ? "tc_bf16_t" : "tc_f16_t",
             c->m, c->n, c->k, c->b_nk ? "true" : "false");
    tile_src_add(&s, line);
  }
  return s.p;
}

/* The FP8 code of x, a multiple of 1/8 in [-1, 1] (exact in both formats:
 * at most 3 significant bits, normal or zero): sign, biased exponent,
 * mantissa bits of the format (E4M3: bias 7, 3 bits; E5M2: bias 15, 2). */
static uint8_t enc_fp8(bool e5m2, float x) {
  uint8_t sign = x < 0 ? 0x80 : 0;
  if (x == 0.0f) return sign;
  int e, mb = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  double f = frexp(fabs((double)x), &e); /* |x| = f * 2^e, f in [0.5, 1) */
  return (uint8_t)(sign | ((e - 1 + bias) << mb) | (int)((f * 2.0 - 1.0) * (1 << mb)));
}

static void run_case(RtCuda *cu, RtCuModule mod, const WgCase *c) {
  char name[96];
  case_name(c, name, sizeof name);
  const int M = c->m, N = c->n, K = c->k;
  const size_t es = c->fp8 ? 1 : 2; /* bytes per input element */
  float *a = malloc(sizeof *a * M * K), *b = malloc(sizeof *b * K * N), *out = malloc(sizeof *out * M * N);
  uint16_t *ah = malloc(2u * M * K), *bh = malloc(2u * K * N);
  uint8_t *a8 = (uint8_t *)ah, *b8 = (uint8_t *)bh; /* FP8 codes, packed */
  for (int r = 0; r < M; r++)
    for (int k = 0; k < K; k++) {
      a[r * K + k] = tile_test_value(r, k, 1);
      if (c->fp8) a8[r * K + k] = enc_fp8(c->fp8 & 1, a[r * K + k]);
      /* A as stored in global memory: [M][K], or [K][M] when a_km. */
      else ah[c->a_km ? k * M + r : r * K + k] = tile_enc16(c->bf16, a[r * K + k]);
    }
  for (int k = 0; k < K; k++)
    for (int n = 0; n < N; n++) {
      b[k * N + n] = tile_test_value(k, n, 2);
      /* B as stored in global memory: [K][N], or [N][K] when b_nk. */
      if (c->fp8) b8[n * K + k] = enc_fp8(c->fp8 & 2, b[k * N + n]);
      else bh[c->b_nk ? n * K + k : k * N + n] = tile_enc16(c->bf16, b[k * N + n]);
    }
  RtCuDevPtr da = 0, db = 0, dc = 0;
  RtCuFunction fn = NULL;
  size_t smem = c->fp8 ? (size_t)(M * K + 1023) / 1024 * 1024 + (size_t)(N * K) : 2u * (size_t)(M * K + K * N);
  unsigned grid[3] = {1, 1, 1},
           block[3] = {c->two_blocks ? (unsigned)M : (unsigned)M * 2 * (unsigned)(c->gn > 1 ? c->gn : 1), 1, 1};
  bool ok = rt_cuda_malloc(cu, es * M * K, &da) && rt_cuda_malloc(cu, es * K * N, &db) &&
            rt_cuda_malloc(cu, 4u * M * N, &dc) && rt_cuda_memcpy_htod(cu, da, ah, es * M * K) &&
            rt_cuda_memcpy_htod(cu, db, bh, es * K * N) && rt_cuda_memset(cu, dc, 0xFF, 4u * M * N) &&
            rt_cuda_get_function(cu, mod, name, &fn) && rt_cuda_set_max_dynamic_smem(cu, fn, smem);
  void *params[] = {&da, &db, &dc};
  ok = ok && rt_cuda_launch_kernel(cu, fn, grid, block, smem, NULL, params) && rt_cuda_synchronize(cu) &&
       rt_cuda_memcpy_dtoh(cu, out, dc, 4u * M * N);
  CHECK_MSG(ok, "%s: %s", name, rt_cuda_last_error(cu));
  int bad = 0;
  for (int r = 0; ok && r < M; r++)
    for (int n = 0; n < N; n++) {
      double want = (double)((r * 3 + n * 5) % 11 - 5) * 0.125;
      for (int k = 0; k < K; k++) want += (double)a[r * K + k] * b[k * N + n];
      double got = out[r * N + n];
      if (!(fabs(got - want) <= 1e-5 * (1.0 + fabs(want)))) {
        if (bad++ < 5) fprintf(stderr, "%s: (%d, %d): got %g, want %g\n", name, r, n, got, want);
      }
    }
  CHECK_MSG(bad == 0, "%s: %d of %d elements wrong", name, bad, M * N);
  if (ok && !bad) printf("ok %s\n", name);
  rt_cuda_free(cu, da);
  rt_cuda_free(cu, db);
  rt_cuda_free(cu, dc);
  free(a), free(b), free(out), free(ah), free(bh);
}

int main(int argc, char **argv) {
  bool nvrtc_only = argc > 1 && strcmp(argv[1], "--nvrtc") == 0;
  RtCuda *cu = tile_open_sm90(nvrtc_only, true, "wgmma");
  if (!cu) return TEST_SKIP;
  char *src = source();
  void *cubin = NULL;
  size_t size = 0;
  RtCuModule mod = NULL;
  bool ok = tile_compile_clean(cu, src, "wgmma_kernels.cu", "sm_90a", &cubin, &size);
  if (ok && !nvrtc_only) {
    ok = rt_cuda_module_load(cu, cubin, size, &mod);
    CHECK_MSG(ok, "load: %s", rt_cuda_last_error(cu));
    for (int i = 0; ok && i < NCASES; i++) run_case(cu, mod, &cases[i]);
    rt_cuda_module_unload(cu, mod);
  }
  free(cubin);
  free(src);
  rt_cuda_close(cu);
  printf("%s\n", test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
