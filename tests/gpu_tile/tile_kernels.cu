// tile_kernels.cu - test kernels for the templates of tilec_tile.cuh.
//
// This file holds only templates and the macros that turn one instantiation
// into an extern "C" kernel; the tests append the instantiation lines they
// need (tile_test.h builds them from its case tables), then NVRTC compiles
// the whole text. Every kernel runs as one block of exactly 128 threads with
// dynamic shared memory (the size is in tile_test.h) and writes what it
// computed to global memory, indexed by the logical (row, column) of
// docs/gpu-codegen.md, computed here independently of the templates.
#include "tilec_tile.cuh"

#define TILE_THREADS 128
#define TILE_POISON 0xffffu // NaN as f16 and as bf16

extern __shared__ __align__(128) unsigned char tile_smem[];

// The MMA_C layout formulas of the doc: row / column of slot (rs, cs).
template <int M, int N, int WM, int WN>
__device__ __forceinline__ int tile_mma_row(int warp, int lane, int rs) {
  return (warp / WN) * (M / WM) + 16 * (rs / 2) + 8 * (rs % 2) + lane / 4;
}
template <int M, int N, int WM, int WN>
__device__ __forceinline__ int tile_mma_col(int warp, int lane, int cs) {
  return (warp % WN) * (N / WN) + 8 * (cs / 2) + 2 * (lane % 4) + cs % 2;
}

// The accumulator's starting value at (r, c) (the host has the same
// formula): the gemm must add to it, in the documented layout.
__device__ __forceinline__ float tile_acc_init(int r, int c) {
  return (float)((r * 3 + c * 5) % 11 - 5) * 0.125f;
}

__device__ __forceinline__ void tile_poison(unsigned short *s, int n) {
  for (int i = threadIdx.x; i < n; i += TILE_THREADS) s[i] = TILE_POISON;
}

__device__ __forceinline__ void tile_dump(unsigned short *dst, const unsigned short *s, int n) {
  for (int i = threadIdx.x; i < n; i += TILE_THREADS) dst[i] = s[i];
}

// ---- tc_copy_g2s alone: the raw shared tile is written to dump. rows_lo /
// cols_lo > 0: a slice starting before its tensor (tc_copy_g2s_edges). ----
template <int ROWS, int COLS, int SWZ>
__device__ void tile_copy_body(const unsigned short *g, long long stride, int rows_valid,
                               int cols_valid, int rows_lo, int cols_lo, unsigned short *dump) {
  unsigned short *s = (unsigned short *)tile_smem;
  tile_poison(s, ROWS * COLS);
  __syncthreads();
  tc_copy_g2s<ROWS, COLS, TILE_THREADS, SWZ>(s, g, stride, rows_valid, cols_valid, (int)threadIdx.x, rows_lo,
                                             cols_lo);
  tc_cp_async_commit();
  tc_cp_async_wait<0>();
  __syncthreads();
  tile_dump(dump, s, ROWS * COLS);
}

#define TILE_COPY_KERNEL(name, ROWS, COLS, SWZ)                                                   \
  extern "C" __global__ void __launch_bounds__(TILE_THREADS)                                     \
      name(const unsigned short *g, long long stride, int rows_valid, int cols_valid,           \
           int rows_lo, int cols_lo, unsigned short *dump) {                                     \
    tile_copy_body<ROWS, COLS, SWZ>(g, stride, rows_valid, cols_valid, rows_lo, cols_lo, dump);  \
  }

// ---- tc_copy_g2s of 8-bit elements (FP8 codes); SWZ 0, 1 or 2 (panels). ----
template <int ROWS, int COLS, int SWZ>
__device__ void tile_copy8_body(const unsigned char *g, long long stride, int rows_valid,
                                int cols_valid, unsigned char *dump) {
  unsigned char *s = tile_smem;
  for (int i = threadIdx.x; i < ROWS * COLS; i += TILE_THREADS) s[i] = 0xff;
  __syncthreads();
  tc_copy_g2s<ROWS, COLS, TILE_THREADS, SWZ>(s, g, stride, rows_valid, cols_valid, (int)threadIdx.x);
  tc_cp_async_commit();
  tc_cp_async_wait<0>();
  __syncthreads();
  for (int i = threadIdx.x; i < ROWS * COLS; i += TILE_THREADS) dump[i] = s[i];
}

#define TILE_COPY8_KERNEL(name, ROWS, COLS, SWZ)                                                  \
  extern "C" __global__ void __launch_bounds__(TILE_THREADS)                                     \
      name(const unsigned char *g, long long stride, int rows_valid, int cols_valid,            \
           unsigned char *dump) {                                                                \
    tile_copy8_body<ROWS, COLS, SWZ>(g, stride, rows_valid, cols_valid, dump);                   \
  }

// ---- tc_gemm_ss: A [M][K] ([K][M] when AKM, transpose_A) and B ([N][K]
// when NK, else [K][N]) copied from global (partial tiles allowed), then
// out[r][c] = init(r, c) + (A@B)[r][c]. dump receives the raw shared A tile
// then the raw shared B tile. ----
template <typename TAG, int M, int N, int K, int WM, int WN, bool AS, bool BS, bool NK, bool AKM>
__device__ void tile_ss_body(const unsigned short *A, long long lda, int a_rows, int a_cols,
                             const unsigned short *B, long long ldb, int b_rows, int b_cols,
                             float *out, unsigned short *dump) {
  static_assert(WM * WN * 32 == TILE_THREADS, "the ss test runs 4 warps");
  constexpr int BR = NK ? N : K, BC = NK ? K : N, AR = AKM ? K : M, AC = AKM ? M : K;
  constexpr int CL = 2 * (N / WN / 8), RL = 2 * (M / WM / 16);
  unsigned short *As = (unsigned short *)tile_smem;
  unsigned short *Bs = As + M * K;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  tile_poison(As, M * K + BR * BC);
  __syncthreads();
  tc_copy_g2s<AR, AC, TILE_THREADS, AS>(As, A, lda, a_rows, a_cols, tid);
  tc_copy_g2s<BR, BC, TILE_THREADS, BS>(Bs, B, ldb, b_rows, b_cols, tid);
  tc_cp_async_commit();
  tc_cp_async_wait<0>();
  __syncthreads();
  tile_dump(dump, As, M * K + BR * BC);

  float acc[RL * CL];
#pragma unroll
  for (int rs = 0; rs < RL; ++rs)
#pragma unroll
    for (int cs = 0; cs < CL; ++cs)
      acc[rs * CL + cs] = tile_acc_init(tile_mma_row<M, N, WM, WN>(warp, lane, rs),
                                        tile_mma_col<M, N, WM, WN>(warp, lane, cs));
  tc_gemm_ss<TAG, M, N, K, WM, WN, AS, BS, NK, AKM>(As, Bs, acc, warp, lane);
#pragma unroll
  for (int rs = 0; rs < RL; ++rs)
#pragma unroll
    for (int cs = 0; cs < CL; ++cs)
      out[tile_mma_row<M, N, WM, WN>(warp, lane, rs) * N + tile_mma_col<M, N, WM, WN>(warp, lane, cs)] =
          acc[rs * CL + cs];
}

#define TILE_SS_KERNEL(name, TAG, M, N, K, WM, WN, AS, BS, NK, AKM)                              \
  extern "C" __global__ void __launch_bounds__(TILE_THREADS)                                     \
      name(const unsigned short *A, long long lda, int a_rows, int a_cols,                      \
           const unsigned short *B, long long ldb, int b_rows, int b_cols, float *out,          \
           unsigned short *dump) {                                                               \
    tile_ss_body<TAG, M, N, K, WM, WN, AS, BS, NK, AKM>(A, lda, a_rows, a_cols, B, ldb, b_rows, \
                                                   b_cols, out, dump);                           \
  }

// ---- Flash attention's two gemms over 4 x 1 warps:
//   S = Q Kt^T  (tc_gemm_ss, Q [M][K1], Kt [N1][K1], both copied with `SWZ`)
//   P = 16-bit(S) element-wise, in registers (the MMA_C layout of [M, N1])
//   O = P V     (tc_gemm_rs, V [N1][N2], or V^T [N2][N1] when VNK)
// Q has q_rows valid rows, Kt and V kv_rows valid rows of the sequence
// (zero-filled beyond). S and O are written as [M][N1] and [M][N2]. ----
template <typename TAG, int M, int K1, int N1, int N2, bool SWZ, bool VNK>
__device__ void tile_rs_body(const unsigned short *Q, const unsigned short *Kt,
                             const unsigned short *V, int q_rows, int kv_rows, float *S, float *O) {
  constexpr int WM = TILE_THREADS / 32;
  constexpr int RL = 2 * (M / WM / 16), CL1 = 2 * (N1 / 8), CL2 = 2 * (N2 / 8);
  unsigned short *Qs = (unsigned short *)tile_smem;
  unsigned short *Ks = Qs + M * K1;
  unsigned short *Vs = Ks + N1 * K1;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  tc_copy_g2s<M, K1, TILE_THREADS, SWZ>(Qs, Q, K1, q_rows, K1, tid);
  tc_copy_g2s<N1, K1, TILE_THREADS, SWZ>(Ks, Kt, K1, kv_rows, K1, tid);
  if constexpr (VNK)
    tc_copy_g2s<N2, N1, TILE_THREADS, SWZ>(Vs, V, N1, N2, kv_rows, tid);
  else
    tc_copy_g2s<N1, N2, TILE_THREADS, SWZ>(Vs, V, N2, kv_rows, N2, tid);
  tc_cp_async_commit();
  tc_cp_async_wait<0>();
  __syncthreads();

  float acc_s[RL * CL1];
#pragma unroll
  for (int e = 0; e < RL * CL1; ++e) acc_s[e] = 0.0f;
  tc_gemm_ss<TAG, M, N1, K1, WM, 1, SWZ, SWZ, true>(Qs, Ks, acc_s, warp, lane);
  unsigned short p[RL * CL1];
#pragma unroll
  for (int e = 0; e < RL * CL1; ++e) p[e] = tc_mma_traits<TAG>::from_f32(acc_s[e]);
  float acc_o[RL * CL2];
#pragma unroll
  for (int e = 0; e < RL * CL2; ++e) acc_o[e] = 0.0f;
  tc_gemm_rs<TAG, M, N2, N1, WM, SWZ, VNK>(p, Vs, acc_o, warp, lane);

#pragma unroll
  for (int rs = 0; rs < RL; ++rs) {
    const int r = tile_mma_row<M, N1, WM, 1>(warp, lane, rs);
#pragma unroll
    for (int cs = 0; cs < CL1; ++cs)
      S[r * N1 + tile_mma_col<M, N1, WM, 1>(warp, lane, cs)] = acc_s[rs * CL1 + cs];
#pragma unroll
    for (int cs = 0; cs < CL2; ++cs)
      O[r * N2 + tile_mma_col<M, N2, WM, 1>(warp, lane, cs)] = acc_o[rs * CL2 + cs];
  }
}

#define TILE_RS_KERNEL(name, TAG, M, K1, N1, N2, SWZ, VNK)                                       \
  extern "C" __global__ void __launch_bounds__(TILE_THREADS)                                     \
      name(const unsigned short *Q, const unsigned short *Kt, const unsigned short *V,          \
           int q_rows, int kv_rows, float *S, float *O) {                                        \
    tile_rs_body<TAG, M, K1, N1, N2, SWZ, VNK>(Q, Kt, V, q_rows, kv_rows, S, O);                 \
  }

// ---- tc_smem_index and tc_ceildiv: idx gets, for each tile below in turn,
// tc_smem_index(r, c) for every (r, c) row-major; cd[i] = tc_ceildiv(a[i], b[i]).
//   <64,128,true> <128,32,true> <16,16,true> <8,8,true> <8,24,false>
extern "C" __global__ void __launch_bounds__(TILE_THREADS)
    tile_misc(int *idx, const long long *a, const long long *b, int n, long long *cd) {
  int o = 0;
  for (int i = threadIdx.x; i < 64 * 128; i += TILE_THREADS)
    idx[o + i] = tc_smem_index<64, 128, true>(i / 128, i % 128);
  o += 64 * 128;
  for (int i = threadIdx.x; i < 128 * 32; i += TILE_THREADS)
    idx[o + i] = tc_smem_index<128, 32, true>(i / 32, i % 32);
  o += 128 * 32;
  for (int i = threadIdx.x; i < 16 * 16; i += TILE_THREADS)
    idx[o + i] = tc_smem_index<16, 16, true>(i / 16, i % 16);
  o += 16 * 16;
  for (int i = threadIdx.x; i < 8 * 8; i += TILE_THREADS)
    idx[o + i] = tc_smem_index<8, 8, true>(i / 8, i % 8);
  o += 8 * 8;
  for (int i = threadIdx.x; i < 8 * 24; i += TILE_THREADS)
    idx[o + i] = tc_smem_index<8, 24, false>(i / 24, i % 24);
  for (int i = threadIdx.x; i < n; i += TILE_THREADS) cd[i] = tc_ceildiv(a[i], b[i]);
}
