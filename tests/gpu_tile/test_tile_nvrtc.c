/* test_tile_nvrtc.c - NVRTC builds the tile templates for sm_80 and sm_90a.
 *
 * No GPU needed (CI). Compiles, with only the embedded headers:
 *   1. the instantiation matrix: tc_gemm_ss for f16 and bf16, both operands
 *      swizzled or both plain (plus mixed ones), B [N][K] and [K][N], shapes
 *      64x64x128, 64x128x64, 128x128x32 over 4x1 and 2x2 warps (each also
 *      instantiates tc_copy_g2s for its two tiles); tc_gemm_rs (inside the
 *      flash-attention kernel: ss, 16-bit conversion, rs) for the same
 *      dtypes, swizzles, B layouts and shapes over 4x1 warps;
 *   2. the source the GPU test (test_tile_gpu) runs;
 *   3. a kernel passing tc_half as the gemm tag, which must fail with a
 *      message naming tc_f16_t / tc_bf16_t.
 * The builds must be warning-free. Exit 77 when libnvrtc cannot be opened.
 */
#include "cuda_driver.h"
#include "tile_test.h"

static const char *const archs[] = {"sm_80", "sm_90a"};

static void compile_ok(RtCuda *cu, const char *what, const char *src) {
  for (int i = 0; i < 2; i++) {
    void *cubin = NULL;
    size_t size = 0;
    if (tile_compile_clean(cu, src, "tile_kernels.cu", archs[i], &cubin, &size)) {
      printf("%s, %s: cubin of %zu bytes\n", what, archs[i], size);
      CHECK(size >= 4 && memcmp(cubin, "\x7f" "ELF", 4) == 0);
    } else {
      fprintf(stderr, "  (that was: %s)\n", what);
    }
    free(cubin);
  }
}

int main(void) {
  char why[512];
  RtCuda *cu = rt_cuda_open(RT_CUDA_NVRTC_ONLY, 0, why, sizeof why);
  if (!cu) {
    printf("skipped: %s\n", why);
    return TEST_SKIP;
  }
  printf("NVRTC %d\n", rt_cuda_nvrtc_version(cu));
  CHECK(rt_cuda_device_header("tilec_tile.cuh") != NULL);

  /* 1. the matrix */
  static const int shapes[3][3] = {{64, 64, 128}, {64, 128, 64}, {128, 128, 32}};
  static const int warps[2][2] = {{4, 1}, {2, 2}};
  static const bool swz[4][2] = {{false, false}, {true, true}, {true, false}, {false, true}};
  TileSsCase ss[2 * 3 * 2 * 2 * 4];
  TileRsCase rs[2 * 3 * 2 * 2];
  int nss = 0, nrs = 0;
  for (int bf = 0; bf < 2; bf++)
    for (int s = 0; s < 3; s++)
      for (int nk = 0; nk < 2; nk++) {
        for (int w = 0; w < 2; w++)
          for (int z = 0; z < 4; z++) {
            /* Mixed swizzles only for one shape / warp split: they share
             * every code path with the uniform ones. */
            if (z >= 2 && (s != 0 || w != 1)) continue;
            ss[nss++] = (TileSsCase){bf, shapes[s][0], shapes[s][1], shapes[s][2], warps[w][0],
                                     warps[w][1], swz[z][0], swz[z][1], nk};
          }
        /* rs<M = m, N = n, K = k>: O = P[m][k] V, S = Q[m][64] Kt[k][64]^T. */
        for (int z = 0; z < 2; z++)
          rs[nrs++] = (TileRsCase){bf, shapes[s][0], 64, shapes[s][2], shapes[s][1], z == 1, nk};
      }
  char *src = tile_source(ss, nss, rs, nrs, NULL, 0);
  char what[64];
  snprintf(what, sizeof what, "matrix (%d ss, %d rs kernels)", nss, nrs);
  compile_ok(cu, what, src);
  free(src);

  /* 2. the GPU test's kernels */
  src = tile_source(tile_gpu_ss, TILE_GPU_NSS, tile_gpu_rs, TILE_GPU_NRS, tile_gpu_copy,
                    TILE_GPU_NCOPY);
  compile_ok(cu, "gpu test kernels", src);
  free(src);

  /* 3. the element type is not a tag: refused at compile time, clearly. */
  static const char bad[] =
      "#include \"tilec_tile.cuh\"\n"
      "extern \"C\" __global__ void bad(float *out) {\n"
      "  __shared__ __align__(128) tc_half a[16 * 16], b[16 * 8];\n"
      "  float acc[4] = {0, 0, 0, 0};\n"
      "  tc_gemm_ss<tc_half, 16, 8, 16, 1, 1, false, false, false>(a, b, acc, 0, threadIdx.x);\n"
      "  out[threadIdx.x] = acc[0];\n"
      "}\n";
  void *cubin = NULL;
  size_t size = 0;
  CHECK(!rt_cuda_compile(cu, bad, "bad.cu", "sm_80", NULL, 0, &cubin, &size));
  CHECK_MSG(strstr(rt_cuda_last_error(cu), "tc_f16_t or tc_bf16_t") != NULL, "log:\n%s",
            rt_cuda_last_error(cu));
  free(cubin);

  rt_cuda_close(cu);
  printf("%s\n", test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
