/* tilec_wgmma.cuh - the Hopper (sm_90a) gemm: wgmma.mma_async from shared memory.
 *
 * tc_gemm_wgmma_ss<TAG, M, N, K, WARPS, A_SWZ, B_SWZ, B_NK, INFLIGHT>(As, Bs, acc, warp)
 * tc_gemm_wgmma_rs<TAG, M, N, K, WARPS, B_SWZ, B_NK>(a_frag, Bs, acc, warp)
 *   acc += A @ B, the same contract as tc_gemm_ss with WM = WARPS, WN = 1 and
 *   M = 16 * WARPS, WARPS a multiple of 4: warpgroup g (warps 4g .. 4g+3)
 *   issues m64nNk16 for rows [64g, 64g + 64). The accumulator is then
 *   exactly tilec's MMA_C fragment (warp w owns rows 16w .. 16w+15, all N
 *   columns), so the code around the gemm does not change.
 *   A is the shared tile [M][K] (K-major); B is [N][K] (K-major) when B_NK,
 *   else [K][N] (N-major, read with wgmma's transpose bit).
 *   Every operand must be swizzled (A_SWZ / B_SWZ != 0) with rows of at most
 *   128 bytes (SWZ 1) or stored as 64-column panels (SWZ 2, rows over 128
 *   bytes): then its chunks sit exactly where wgmma's 32/64/128-byte swizzle
 *   modes expect them (tc_swizzle_offset is that swizzle), and each tile
 *   must start at a 1024-byte aligned shared address.
 *   With INFLIGHT = 0 it waits for its own wgmmas before returning (the
 *   tiles may be overwritten afterwards). With INFLIGHT = 1 it returns with
 *   them running and waits only for the warpgroup's earlier ones: acc must
 *   not be touched, nor these tiles overwritten, until the next call has
 *   returned (for the tiles: and a barrier has followed) or
 *   tc_wgmma_drain<N>(acc) has run. Before the call, shared-memory writes by the threads (plain
 *   or cp.async) must be published to the async proxy:
 *   tc_fence_proxy_async() by the writers, then the block barrier.
 *
 * tc_gemm_wgmma_fp8_ss<TA, TB, M, N, K, WARPS, A_SWZ, B_SWZ, INFLIGHT>(As, Bs, acc, warp)
 *   The FP8 form: acc += A @ B^T with A [M][K] and B [N][K] both K-major
 *   tiles of FP8 codes (unsigned char), TA / TB tc_e4m3_t or tc_e5m2_t (they
 *   may differ); m64nNk32 steps, f32 accumulation, otherwise the contract of
 *   tc_gemm_wgmma_ss. FP8 wgmma has no transpose bits, so there is no
 *   [K][N] B here: the compiler stores B as [N, K] (gemm transpose_B).
 *   Rows of at most 128 bytes (K = 32, 64 or 128) or 128-column panels
 *   (SWZ 2, K a multiple of 128).
 *
 * How a descriptor walks a tile (docs/gpu-codegen.md, "wgmma"):
 *   K-major operand, rows of P = min(K, 64) elements: the start address is
 *   the row block's first row plus (k0 % 64) * 2 bytes inside the swizzled
 *   row (plus the panel for k0 >= 64); SBO = 8 rows = 8 * 2P bytes.
 *   N-major B, rows of P = min(N, 64) elements: start = row k0; SBO = 8 rows
 *   (8 * 2P bytes, the next 8 k); LBO = one panel (K * 128 bytes, the next 64
 *   columns).
 *   FP8 (K-major only): the same in bytes, rows of P = min(K, 128) codes;
 *   k32 step kk starts 32 * kk bytes into the row (the panel for kk >= 4).
 */
#ifndef TILEC_WGMMA_CUH
#define TILEC_WGMMA_CUH

#include "tilec_tile.cuh"
#include "tilec_wgmma_ops.cuh"

/* Shared-memory matrix descriptor: address, LBO and SBO in 16-byte units,
 * swizzle mode 1/2/3 for 128/64/32-byte rows. */
TC_DEVICE unsigned long long tc_wgmma_desc(unsigned addr, unsigned lbo_bytes, unsigned sbo_bytes, int row_bytes) {
  const unsigned long long mode = row_bytes == 128 ? 1ull : row_bytes == 64 ? 2ull : 3ull;
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         ((unsigned long long)((sbo_bytes >> 4) & 0x3FFFu) << 32) | (mode << 62);
}

/* Makes this thread's earlier shared-memory writes visible to wgmma (the
 * async proxy); a block barrier must follow before the gemm. */
TC_DEVICE void tc_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

TC_DEVICE void tc_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
TC_DEVICE void tc_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
TC_DEVICE void tc_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

template <typename TAG>
struct tc_wgmma_is_bf16 {
  static constexpr bool value = false;
};
template <>
struct tc_wgmma_is_bf16<tc_bf16_t> {
  static constexpr bool value = true;
};

/* The per-N instruction macros, picked by N, the element type and B's
 * major-ness (TB "1": N-major B, wgmma's transpose bit). ONE(NN, TY, TB)
 * expands to one guarded instruction. */
#define TC_WGMMA_EACH_N(ONE, TY, TB) ONE(16, TY, TB) ONE(32, TY, TB) ONE(64, TY, TB) ONE(128, TY, TB) ONE(256, TY, TB)
#define TC_WGMMA_SELECT(ONE)                                      \
  static_assert(N == 16 || N == 32 || N == 64 || N == 128 || N == 256, \
                "tc_gemm_wgmma_*: N must be 16, 32, 64, 128 or 256"); \
  if constexpr (!tc_wgmma_is_bf16<TAG>::value) {                  \
    if constexpr (B_NK) {                                         \
      TC_WGMMA_EACH_N(ONE, "f16", "0")                            \
    } else {                                                      \
      TC_WGMMA_EACH_N(ONE, "f16", "1")                            \
    }                                                             \
  } else {                                                        \
    if constexpr (B_NK) {                                         \
      TC_WGMMA_EACH_N(ONE, "bf16", "0")                           \
    } else {                                                      \
      TC_WGMMA_EACH_N(ONE, "bf16", "1")                           \
    }                                                             \
  }

/* One m64nNk16 into acc (N / 2 floats), A and B from descriptors. */
#define TC_WGMMA_SS_ONE(NN, TY, TB) \
  if constexpr (N == NN) TC_WGMMA_M64N##NN##K16(TY, TB, acc, da, db);
template <typename TAG, int N, bool B_NK>
TC_DEVICE void tc_wgmma_m64k16(float *acc, unsigned long long da, unsigned long long db) {
  TC_WGMMA_SELECT(TC_WGMMA_SS_ONE)
}

/* The same with A from registers (a[4]: mma.sync's m16n8k16 A fragment of
 * the warp's 16 rows, which is wgmma's register-A layout). */
#define TC_WGMMA_RS_ONE(NN, TY, TB) \
  if constexpr (N == NN) TC_WGMMA_RS_M64N##NN##K16(TY, TB, acc, a[0], a[1], a[2], a[3], db);
template <typename TAG, int N, bool B_NK>
TC_DEVICE void tc_wgmma_rs_m64k16(float *acc, const unsigned (&a)[4], unsigned long long db) {
  TC_WGMMA_SELECT(TC_WGMMA_RS_ONE)
}
#undef TC_WGMMA_SS_ONE
#undef TC_WGMMA_RS_ONE
#undef TC_WGMMA_SELECT
#undef TC_WGMMA_EACH_N

template <int N>
TC_DEVICE void tc_wgmma_fence_acc(float *acc) {
  if constexpr (N == 16) TC_WGMMA_FENCE_N16(acc);
  if constexpr (N == 32) TC_WGMMA_FENCE_N32(acc);
  if constexpr (N == 64) TC_WGMMA_FENCE_N64(acc);
  if constexpr (N == 128) TC_WGMMA_FENCE_N128(acc);
  if constexpr (N == 256) TC_WGMMA_FENCE_N256(acc);
}

/* Byte offset of element (r, c0) of a K-major [ROWS][COLS] operand, c0 a
 * multiple of 16, in the layout SWZ (1: swizzled rows, 2: 64-column panels). */
template <int ROWS, int COLS, int SWZ>
TC_DEVICE constexpr unsigned tc_wgmma_kmajor_offset(int r, int c0) {
  return SWZ == 2 ? (unsigned)((c0 / 64) * ROWS * 128 + r * 128 + (c0 % 64) * 2) : (unsigned)(r * COLS * 2 + c0 * 2);
}

/* Descriptor of B for the k16 step kk: [N][K] K-major when B_NK, else
 * [K][N] N-major (LBO = one 64-column panel of K rows). */
template <int N, int K, int B_SWZ, bool B_NK>
TC_DEVICE unsigned long long tc_wgmma_b_desc(unsigned b_base, int kk) {
  constexpr int BC = B_NK ? K : N; /* B's contiguous extent */
  static_assert(B_SWZ != 0, "tc_gemm_wgmma_*: B must be swizzled");
  static_assert(B_SWZ == 2 ? BC % 64 == 0 : (BC == 16 || BC == 32 || BC == 64),
                "tc_gemm_wgmma_*: B's rows must be 32, 64 or 128 bytes, or 64-column panels");
  constexpr int B_ROW = (BC < 64 ? BC : 64) * 2;
  if constexpr (B_NK)
    return tc_wgmma_desc(b_base + tc_wgmma_kmajor_offset<N, K, B_SWZ>(0, 16 * kk), 16u, 8u * B_ROW, B_ROW);
  else
    return tc_wgmma_desc(b_base + 16u * kk * B_ROW, (unsigned)K * 128u, 8u * B_ROW, B_ROW);
}

template <typename TAG, int M, int N, int K, int WARPS, int A_SWZ, int B_SWZ, bool B_NK, int INFLIGHT = 0>
TC_DEVICE void tc_gemm_wgmma_ss(const unsigned short *As, const unsigned short *Bs, float *acc, int warp) {
  static_assert(INFLIGHT == 0 || INFLIGHT == 1, "tc_gemm_wgmma_ss: INFLIGHT is 0 or 1");
  TC_TILE_TAG_CHECK(TAG);
  static_assert(WARPS % 4 == 0 && M == 16 * WARPS, "tc_gemm_wgmma_ss: M must be 64 per warpgroup");
  static_assert(K % 16 == 0, "tc_gemm_wgmma_ss: K must be a multiple of 16");
  static_assert(A_SWZ != 0, "tc_gemm_wgmma_ss: A must be swizzled");
  static_assert(A_SWZ == 2 ? K % 64 == 0 : (K == 16 || K == 32 || K == 64),
                "tc_gemm_wgmma_ss: A's rows must be 32, 64 or 128 bytes, or 64-column panels");
  constexpr int A_ROW = (K < 64 ? K : 64) * 2;
  const unsigned a_base = tc_smem_addr(As) + tc_wgmma_kmajor_offset<M, K, A_SWZ>((warp / 4) * 64, 0);
  const unsigned b_base = tc_smem_addr(Bs);
  tc_wgmma_fence_acc<N>(acc);
  tc_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    const unsigned long long da =
        tc_wgmma_desc(a_base + tc_wgmma_kmajor_offset<M, K, A_SWZ>(0, 16 * kk), 16u, 8u * A_ROW, A_ROW);
    tc_wgmma_m64k16<TAG, N, B_NK>(acc, da, tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(b_base, kk));
  }
  tc_wgmma_commit();
  tc_wgmma_wait<INFLIGHT>();
  tc_wgmma_fence_acc<N>(acc);
}

/* acc += A @ B with A from registers: a_frag is the 16-bit fragment of
 * [M, K] in the MMA_C layout with one 16-row slice per warp (K / 4 values
 * per row slot, as tc_gemm_rs takes it). B as in tc_gemm_wgmma_ss. Waits for
 * its wgmmas before returning (they read a_frag's registers). */
template <typename TAG, int M, int N, int K, int WARPS, int B_SWZ, bool B_NK>
TC_DEVICE void tc_gemm_wgmma_rs(const unsigned short *a_frag, const unsigned short *Bs, float *acc, int warp) {
  TC_TILE_TAG_CHECK(TAG);
  static_assert(WARPS % 4 == 0 && M == 16 * WARPS, "tc_gemm_wgmma_rs: M must be 64 per warpgroup");
  static_assert(K % 16 == 0, "tc_gemm_wgmma_rs: K must be a multiple of 16");
  constexpr int KC = K / 4; /* values per row slot of a_frag */
  (void)warp;
  const unsigned b_base = tc_smem_addr(Bs);
  unsigned a[K / 16][4];
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    const unsigned short *top = a_frag + 4 * kk, *bot = a_frag + KC + 4 * kk;
    a[kk][0] = tc_pack2(top[0], top[1]);
    a[kk][1] = tc_pack2(bot[0], bot[1]);
    a[kk][2] = tc_pack2(top[2], top[3]);
    a[kk][3] = tc_pack2(bot[2], bot[3]);
  }
  tc_wgmma_fence_acc<N>(acc);
  tc_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    tc_wgmma_rs_m64k16<TAG, N, B_NK>(acc, a[kk], tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(b_base, kk));
  tc_wgmma_commit();
  tc_wgmma_wait<0>();
  tc_wgmma_fence_acc<N>(acc);
}

/* ---- FP8 (e4m3 / e5m2), m64nNk32, both operands K-major ------------------ */

struct tc_e4m3_t {};
struct tc_e5m2_t {};
template <typename T>
struct tc_fp8_traits {
  static constexpr bool valid = false;
};
template <>
struct tc_fp8_traits<tc_e4m3_t> {
  static constexpr bool valid = true, e5m2 = false;
};
template <>
struct tc_fp8_traits<tc_e5m2_t> {
  static constexpr bool valid = true, e5m2 = true;
};

#define TC_WGMMA_FP8_EACH_N(TA, TB)                                       \
  if constexpr (N == 16) TC_WGMMA_FP8_M64N16K32(TA, TB, acc, da, db);     \
  if constexpr (N == 32) TC_WGMMA_FP8_M64N32K32(TA, TB, acc, da, db);     \
  if constexpr (N == 64) TC_WGMMA_FP8_M64N64K32(TA, TB, acc, da, db);     \
  if constexpr (N == 128) TC_WGMMA_FP8_M64N128K32(TA, TB, acc, da, db);   \
  if constexpr (N == 256) TC_WGMMA_FP8_M64N256K32(TA, TB, acc, da, db);
/* One m64nNk32 into acc (N / 2 floats), A and B from descriptors. */
template <typename TA, typename TB, int N>
TC_DEVICE void tc_wgmma_fp8_m64k32(float *acc, unsigned long long da, unsigned long long db) {
  static_assert(N == 16 || N == 32 || N == 64 || N == 128 || N == 256,
                "tc_gemm_wgmma_fp8_ss: N must be 16, 32, 64, 128 or 256");
  constexpr bool A5 = tc_fp8_traits<TA>::e5m2, B5 = tc_fp8_traits<TB>::e5m2;
  if constexpr (!A5 && !B5) {
    TC_WGMMA_FP8_EACH_N("e4m3", "e4m3")
  } else if constexpr (!A5 && B5) {
    TC_WGMMA_FP8_EACH_N("e4m3", "e5m2")
  } else if constexpr (A5 && !B5) {
    TC_WGMMA_FP8_EACH_N("e5m2", "e4m3")
  } else {
    TC_WGMMA_FP8_EACH_N("e5m2", "e5m2")
  }
}
#undef TC_WGMMA_FP8_EACH_N

/* Byte offset of code (r, c0) of a K-major [ROWS][COLS] FP8 operand, c0 a
 * multiple of 32, in the layout SWZ (1: swizzled rows, 2: 128-column panels). */
template <int ROWS, int COLS, int SWZ>
TC_DEVICE constexpr unsigned tc_wgmma_fp8_offset(int r, int c0) {
  return SWZ == 2 ? (unsigned)((c0 / 128) * ROWS * 128 + r * 128 + c0 % 128) : (unsigned)(r * COLS + c0);
}

template <typename TA, typename TB, int M, int N, int K, int WARPS, int A_SWZ, int B_SWZ, int INFLIGHT = 0>
TC_DEVICE void tc_gemm_wgmma_fp8_ss(const unsigned char *As, const unsigned char *Bs, float *acc, int warp) {
  static_assert(tc_fp8_traits<TA>::valid && tc_fp8_traits<TB>::valid,
                "tc_gemm_wgmma_fp8_ss: TA and TB must be tc_e4m3_t or tc_e5m2_t");
  static_assert(INFLIGHT == 0 || INFLIGHT == 1, "tc_gemm_wgmma_fp8_ss: INFLIGHT is 0 or 1");
  static_assert(WARPS % 4 == 0 && M == 16 * WARPS, "tc_gemm_wgmma_fp8_ss: M must be 64 per warpgroup");
  static_assert(K % 32 == 0, "tc_gemm_wgmma_fp8_ss: K must be a multiple of 32");
  static_assert(A_SWZ != 0 && B_SWZ != 0, "tc_gemm_wgmma_fp8_ss: A and B must be swizzled");
  static_assert((A_SWZ == 2 ? K % 128 == 0 : (K == 32 || K == 64 || K == 128)) &&
                    (B_SWZ == 2 ? K % 128 == 0 : (K == 32 || K == 64 || K == 128)),
                "tc_gemm_wgmma_fp8_ss: rows must be 32, 64 or 128 bytes, or 128-column panels");
  constexpr int ROW = K < 128 ? K : 128; /* bytes per (panel) row */
  const unsigned a_base = tc_smem_addr(As) + tc_wgmma_fp8_offset<M, K, A_SWZ>((warp / 4) * 64, 0);
  const unsigned b_base = tc_smem_addr(Bs);
  tc_wgmma_fence_acc<N>(acc);
  tc_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 32; ++kk) {
    const unsigned long long da = tc_wgmma_desc(a_base + tc_wgmma_fp8_offset<M, K, A_SWZ>(0, 32 * kk), 16u, 8u * ROW, ROW);
    const unsigned long long db = tc_wgmma_desc(b_base + tc_wgmma_fp8_offset<N, K, B_SWZ>(0, 32 * kk), 16u, 8u * ROW, ROW);
    tc_wgmma_fp8_m64k32<TA, TB, N>(acc, da, db);
  }
  tc_wgmma_commit();
  tc_wgmma_wait<INFLIGHT>();
  tc_wgmma_fence_acc<N>(acc);
}

/* Waits for every wgmma of this warpgroup; acc (N / 2 floats) may then be
 * read. Ends a loop of tc_gemm_wgmma_ss<..., INFLIGHT = 1>. */
template <int N>
TC_DEVICE void tc_wgmma_drain(float *acc) {
  tc_wgmma_wait<0>();
  tc_wgmma_fence_acc<N>(acc);
}

#endif
