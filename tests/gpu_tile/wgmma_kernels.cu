// wgmma_kernels.cu - test kernels for tc_gemm_wgmma_ss (tilec_wgmma.cuh).
//
// One block of M / 16 warps (M / 32: two m64 blocks per warpgroup). A [M][K]
// and B ([K][N], or [N][K] when B_NK) come from global memory in row-major
// order and are stored element by
// element at tc_smem_index<rows, cols, SWZ> (SWZ 1 for rows of 16, 32 or 64
// elements, else 2: panels of tc_panel_cols<cols>() columns): the layouts
// the compiler gives wgmma operands. The accumulator starts at wg_acc_init(r, c) and is written back
// at the logical (row, column) of the MMA_C formula of docs/gpu-codegen.md,
// computed here independently of the template.
#include "tilec_wgmma.cuh"

extern __shared__ __align__(1024) unsigned char wg_smem[];

__device__ constexpr int wg_swz(int cols) { return cols == 16 || cols == 32 || cols == 64 ? 1 : 2; }

__device__ __forceinline__ float wg_acc_init(int r, int c) { return (float)((r * 3 + c * 5) % 11 - 5) * 0.125f; }

// A_KM: A comes from global as [K][M] and is stored so (transpose_A).
// RPW: accumulator rows per warp, 16 (one m64 block per warpgroup) or 32
// (two: tc_gemm_wgmma_ss with M = 32 * WARPS); row slot s of warp w is row
// RPW w + 16 (s / 2) + 8 (s % 2).
template <typename TAG, int M, int N, int K, bool B_NK, bool A_KM, int RPW = 16>
__device__ void wg_body(const unsigned short *A, const unsigned short *B, float *C) {
  constexpr int WARPS = M / RPW, THREADS = WARPS * 32, NACC = N / 2 * (RPW / 16);
  constexpr int BR = B_NK ? N : K, BC = B_NK ? K : N, AR = A_KM ? K : M, AC = A_KM ? M : K;
  constexpr int A_SWZ = wg_swz(AC), B_SWZ = wg_swz(BC);
  unsigned short *As = (unsigned short *)wg_smem;
  unsigned short *Bs = As + M * K; // M * K * 2 bytes is a multiple of 1024
  for (int i = threadIdx.x; i < M * K; i += THREADS) As[tc_smem_index<AR, AC, A_SWZ>(i / AC, i % AC)] = A[i];
  for (int i = threadIdx.x; i < BR * BC; i += THREADS) Bs[tc_smem_index<BR, BC, B_SWZ>(i / BC, i % BC)] = B[i];
  tc_fence_proxy_async();
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float acc[NACC];
#pragma unroll
  for (int s = 0; s < NACC; ++s) {
    const int rs = s / (N / 4), cs = s % (N / 4);
    acc[s] = wg_acc_init(warp * RPW + 16 * (rs / 2) + 8 * (rs % 2) + lane / 4, 8 * (cs / 2) + 2 * (lane % 4) + cs % 2);
  }
  tc_gemm_wgmma_ss<TAG, M, N, K, WARPS, A_SWZ, B_SWZ, B_NK, 0, A_KM>(As, Bs, acc, warp);
#pragma unroll
  for (int s = 0; s < NACC; ++s) {
    const int rs = s / (N / 4), cs = s % (N / 4);
    C[(warp * RPW + 16 * (rs / 2) + 8 * (rs % 2) + lane / 4) * N + 8 * (cs / 2) + 2 * (lane % 4) + cs % 2] = acc[s];
  }
}

// The warpgroups split N as well (tc_gemm_wgmma_ss's GN): M / 16 * GN
// warps, warpgroup g computing rows [64 (g / GN), +64) and columns
// [(g % GN) N / GN, +N / GN); B stored in the layout B_SWZ the compiler
// gives it (panels narrowed so that each slice starts one: SWZ 32 / 64).
// The accumulator's place is the MMA_C formula with the warps in warpgroup
// order (docs/gpu-codegen.md), written out here.
template <typename TAG, int M, int N, int K, bool B_NK, bool A_KM, int GN, int B_SWZ>
__device__ void wg_ns_body(const unsigned short *A, const unsigned short *B, float *C) {
  constexpr int WARPS = M / 16 * GN, THREADS = WARPS * 32, NW = N / GN;
  constexpr int BR = B_NK ? N : K, BC = B_NK ? K : N, AR = A_KM ? K : M, AC = A_KM ? M : K;
  constexpr int A_SWZ = wg_swz(AC);
  unsigned short *As = (unsigned short *)wg_smem;
  unsigned short *Bs = As + M * K; // M * K * 2 bytes is a multiple of 1024
  for (int i = threadIdx.x; i < M * K; i += THREADS) As[tc_smem_index<AR, AC, A_SWZ>(i / AC, i % AC)] = A[i];
  for (int i = threadIdx.x; i < BR * BC; i += THREADS) Bs[tc_smem_index<BR, BC, B_SWZ>(i / BC, i % BC)] = B[i];
  tc_fence_proxy_async();
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = warp / 4;
  const int row0 = 64 * (g / GN) + 16 * (warp % 4), col0 = (g % GN) * NW;
  float acc[NW / 2];
#pragma unroll
  for (int s = 0; s < NW / 2; ++s) {
    const int h = s / (NW / 4), cs = s % (NW / 4);
    acc[s] = wg_acc_init(row0 + 8 * h + lane / 4, col0 + 8 * (cs / 2) + 2 * (lane % 4) + cs % 2);
  }
  tc_gemm_wgmma_ss<TAG, M, N, K, WARPS, A_SWZ, B_SWZ, B_NK, 0, A_KM, GN>(As, Bs, acc, warp);
#pragma unroll
  for (int s = 0; s < NW / 2; ++s) {
    const int h = s / (NW / 4), cs = s % (NW / 4);
    C[(row0 + 8 * h + lane / 4) * N + col0 + 8 * (cs / 2) + 2 * (lane % 4) + cs % 2] = acc[s];
  }
}

#define WG_NS_KERNEL(name, TAG, M, N, K, B_NK, A_KM, GN, B_SWZ)                                             \
  extern "C" __global__ void __launch_bounds__(M * 2 * GN) name(const unsigned short *A,                   \
                                                               const unsigned short *B, float *C) {        \
    wg_ns_body<TAG, M, N, K, B_NK, A_KM, GN, B_SWZ>(A, B, C);                                               \
  }

#define WG_2B_KERNEL(name, TAG, M, N, K, B_NK)                                                           \
  extern "C" __global__ void __launch_bounds__(M) name(const unsigned short *A, const unsigned short *B,   \
                                                      float *C) {                                        \
    wg_body<TAG, M, N, K, B_NK, false, 32>(A, B, C);                                                     \
  }

// A from registers: thread's a_frag holds A at the MMA_C positions of its
// warp's 16 rows (K / 4 values per row slot); B in shared memory as above.
template <typename TAG, int M, int N, int K, bool B_NK>
__device__ void wg_rs_body(const unsigned short *A, const unsigned short *B, float *C) {
  constexpr int WARPS = M / 16, THREADS = WARPS * 32;
  constexpr int BR = B_NK ? N : K, BC = B_NK ? K : N;
  constexpr int B_SWZ = wg_swz(BC);
  unsigned short *Bs = (unsigned short *)wg_smem;
  for (int i = threadIdx.x; i < BR * BC; i += THREADS) Bs[tc_smem_index<BR, BC, B_SWZ>(i / BC, i % BC)] = B[i];
  tc_fence_proxy_async();
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned short a_frag[K / 2];
#pragma unroll
  for (int s = 0; s < K / 2; ++s) {
    const int h = s / (K / 4), cs = s % (K / 4);
    a_frag[s] = A[(warp * 16 + 8 * h + lane / 4) * K + 8 * (cs / 2) + 2 * (lane % 4) + cs % 2];
  }
  float acc[N / 2];
#pragma unroll
  for (int s = 0; s < N / 2; ++s) {
    const int h = s / (N / 4), cs = s % (N / 4);
    acc[s] = wg_acc_init(warp * 16 + 8 * h + lane / 4, 8 * (cs / 2) + 2 * (lane % 4) + cs % 2);
  }
  tc_gemm_wgmma_rs<TAG, M, N, K, WARPS, B_SWZ, B_NK>(a_frag, Bs, acc, warp);
#pragma unroll
  for (int s = 0; s < N / 2; ++s) {
    const int h = s / (N / 4), cs = s % (N / 4);
    C[(warp * 16 + 8 * h + lane / 4) * N + 8 * (cs / 2) + 2 * (lane % 4) + cs % 2] = acc[s];
  }
}

#define WG_RS_KERNEL(name, TAG, M, N, K, B_NK)                                                           \
  extern "C" __global__ void __launch_bounds__(M * 2) name(const unsigned short *A, const unsigned short *B, \
                                                          float *C) {                                    \
    wg_rs_body<TAG, M, N, K, B_NK>(A, B, C);                                                             \
  }

#define WG_KERNEL(name, TAG, M, N, K, B_NK)                                                              \
  extern "C" __global__ void __launch_bounds__(M * 2) name(const unsigned short *A, const unsigned short *B, \
                                                          float *C) {                                    \
    wg_body<TAG, M, N, K, B_NK, false>(A, B, C);                                                         \
  }
#define WG_TA_KERNEL(name, TAG, M, N, K, B_NK)                                                           \
  extern "C" __global__ void __launch_bounds__(M * 2) name(const unsigned short *A, const unsigned short *B, \
                                                          float *C) {                                    \
    wg_body<TAG, M, N, K, B_NK, true>(A, B, C);                                                          \
  }

// FP8 (tc_gemm_wgmma_fp8_ss): A [M][K] and B [N][K] codes (one byte each),
// both K-major, stored at tc_smem_index<rows, K, SWZ, 1> (SWZ 1 for rows of
// 32, 64 or 128 bytes, else 2: panels of tc_panel_cols<K, 1>() codes).
template <typename TA, typename TB, int M, int N, int K>
__device__ void wg_fp8_body(const unsigned char *A, const unsigned char *B, float *C) {
  constexpr int WARPS = M / 16, THREADS = WARPS * 32;
  constexpr int SWZ = K == 32 || K == 64 || K == 128 ? 1 : 2;
  unsigned char *As = wg_smem;
  unsigned char *Bs = As + (M * K + 1023) / 1024 * 1024;
  for (int i = threadIdx.x; i < M * K; i += THREADS) As[tc_smem_index<M, K, SWZ, 1>(i / K, i % K)] = A[i];
  for (int i = threadIdx.x; i < N * K; i += THREADS) Bs[tc_smem_index<N, K, SWZ, 1>(i / K, i % K)] = B[i];
  tc_fence_proxy_async();
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float acc[N / 2];
#pragma unroll
  for (int s = 0; s < N / 2; ++s) {
    const int h = s / (N / 4), cs = s % (N / 4);
    acc[s] = wg_acc_init(warp * 16 + 8 * h + lane / 4, 8 * (cs / 2) + 2 * (lane % 4) + cs % 2);
  }
  tc_gemm_wgmma_fp8_ss<TA, TB, M, N, K, WARPS, SWZ, SWZ>(As, Bs, acc, warp);
#pragma unroll
  for (int s = 0; s < N / 2; ++s) {
    const int h = s / (N / 4), cs = s % (N / 4);
    C[(warp * 16 + 8 * h + lane / 4) * N + 8 * (cs / 2) + 2 * (lane % 4) + cs % 2] = acc[s];
  }
}

#define WG_FP8_KERNEL(name, TA, TB, M, N, K)                                                              \
  extern "C" __global__ void __launch_bounds__(M * 2) name(const unsigned char *A, const unsigned char *B, \
                                                          float *C) {                                  \
    wg_fp8_body<TA, TB, M, N, K>(A, B, C);                                                               \
  }
