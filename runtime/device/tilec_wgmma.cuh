/* tilec_wgmma.cuh - the Hopper (sm_90a) gemm: wgmma.mma_async from shared memory.
 *
 * tc_gemm_wgmma_ss<TAG, M, N, K, WARPS, A_SWZ, B_SWZ, B_NK, INFLIGHT, A_KM, GN>(As, Bs, acc, warp)
 * tc_gemm_wgmma_rs<TAG, M, N, K, WARPS, B_SWZ, B_NK, INFLIGHT, PAIRS>(a_frag, Bs, acc, warp)
 *   acc += A @ B, the same contract as tc_gemm_ss with WM = WARPS, WN = 1 and
 *   M = 16 * WARPS, WARPS a multiple of 4: warpgroup g (warps 4g .. 4g+3)
 *   issues m64nNk16 for rows [64g, 64g + 64). The accumulator is then
 *   exactly tilec's MMA_C fragment (warp w owns rows 16w .. 16w+15, all N
 *   columns), so the code around the gemm does not change.
 *   M = 32 * WARPS (A K-major, GN 1): warpgroup g owns rows [128g, +128),
 *   issuing two m64nNk16 per k16 step whose A descriptors interleave
 *   8-row groups, so the accumulator is again the MMA_C fragment, with
 *   32 rows per warp (tc_gemm_wgmma_ss_2blocks).
 *   A is the shared tile [M][K] (K-major), or [K][M] (M-major, wgmma's
 *   transpose bit for A) with A_KM (transpose_A); B is [N][K] (K-major)
 *   when B_NK, else [K][N] (N-major, read with wgmma's transpose bit).
 *   Every operand must be swizzled (A_SWZ / B_SWZ != 0) with rows of 32, 64
 *   or 128 bytes (SWZ 1) or stored as panels (SWZ 2: 64-column panels when
 *   the width is a multiple of 64, else 32- or 16-column ones, e.g. three
 *   of 32 for a head dim of 96; tc_panel_cols): then its chunks sit exactly
 *   where wgmma's 32/64/128-byte swizzle modes expect them
 *   (tc_swizzle_offset is that swizzle), and each tile must start at a
 *   1024-byte aligned shared address. N is any multiple of 16 up to 256.
 *   GN > 1 (the _ss form): the warpgroups split N as well, for an
 *   accumulator with fewer rows than 16 per warp (M = 16 * WARPS / GN):
 *   warpgroup g takes rows [64 (g / GN), +64) and columns
 *   [(g % GN) N / GN, +N / GN), issuing m64n(N/GN)k16 with its B
 *   descriptor started at its slice (tc_wgmma_b_slice: whole rows of a
 *   [N][K] B, whole panels of a [K][N] one); acc is then the MMA_C
 *   fragment over (WARPS / GN) x GN warps in warpgroup order
 *   (tc_warp_pos<GN, true>), N / GN / 2 floats per thread.
 *   With INFLIGHT = 0 it waits for its own wgmmas before returning (the
 *   tiles may be overwritten afterwards). With INFLIGHT = TC_WGMMA_ISSUE_ONLY
 *   it issues and commits them and returns at once: tc_wgmma_wait_acc or
 *   tc_wgmma_drain completes them later (the rs form takes the same last
 *   parameter). With INFLIGHT = 1 it returns with
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
 *   tc_gemm_wgmma_ss (INFLIGHT included). FP8 wgmma has no transpose bits,
 *   so there is no [K][N] B here: the compiler stores B as [N, K] (gemm
 *   transpose_B). K a multiple of 32: rows of 32, 64 or 128 bytes (SWZ 1)
 *   or panels (SWZ 2) of the widest of 128, 64, 32 bytes dividing the row,
 *   tc_panel_cols<K, 1>() codes. Unlike the 16-bit forms it promotes: the
 *   wgmmas accumulate each chunk of TC_FP8_PROMOTE_K (128) codes into a
 *   temporary, which is added into acc in f32 once they complete (FP8
 *   wgmma keeps only ~14 bits in its own sums; see "Promotion" below). This
 *   form always returns with its wgmmas complete, whatever INFLIGHT says;
 *   wider than 128 columns it promotes in column slices (tc_fp8_part_cols).
 * tc_gemm_wgmma_fp8_ss<..., 1, PART>(As, Bs, acc, warp, pend)
 *   The in-flight FP8 form: the last chunk stays running in pend (a
 *   tc_fp8_pending) and is added by the next call or tc_wgmma_fp8_drain, so
 *   the promotion adds overlap the tensor cores.
 *
 * How a descriptor walks a tile (docs/gpu-codegen.md, "wgmma"):
 *   K-major operand, swizzled rows of P elements (the whole row, or the
 *   panel width): the start address is the row block's first row plus
 *   (k0 % P) * 2 bytes inside the swizzled row (plus the panel k0 / P);
 *   SBO = 8 rows = 8 * 2P bytes; the swizzle mode follows 2P (each k16 step
 *   lies inside one panel).
 *   N-major B, rows of P elements: start = row k0; SBO = 8 rows (8 * 2P
 *   bytes, the next 8 k); LBO = one panel (K * 2P bytes, the next P
 *   columns).
 *   FP8 (K-major only): the same in bytes (an FP8 row of K codes is a
 *   16-bit row of K / 2 elements); k32 step kk starts 32 * kk bytes into the
 *   row (into panel 32 * kk / panel bytes).
 */
#ifndef TILEC_WGMMA_CUH
#define TILEC_WGMMA_CUH

#include "tilec_tile.cuh"
#include "tilec_wgmma_ops.cuh"

/* Shared-memory matrix descriptor: address, LBO and SBO in 16-byte units,
 * swizzle mode 1/2/3 for 128/64/32-byte rows. Built as two 32-bit halves so
 * a gemm computes a tile's descriptor once and steps through its k-slices by
 * adding (offset >> 4) to the low half: the address field has 14 bits and
 * shared memory ends below 2^18 bytes, so the sum never carries into LBO. */
TC_DEVICE unsigned tc_wgmma_desc_lo(unsigned addr, unsigned lbo_bytes) {
  return ((addr & 0x3FFFFu) >> 4) | (((lbo_bytes >> 4) & 0x3FFFu) << 16);
}
TC_DEVICE unsigned tc_wgmma_desc_hi(unsigned sbo_bytes, int row_bytes) {
  const unsigned mode = row_bytes == 128 ? 1u : row_bytes == 64 ? 2u : 3u;
  return ((sbo_bytes >> 4) & 0x3FFFu) | (mode << 30);
}
TC_DEVICE unsigned long long tc_wgmma_desc_join(unsigned lo, unsigned hi) {
  return ((unsigned long long)hi << 32) | lo;
}
TC_DEVICE unsigned long long tc_wgmma_desc(unsigned addr, unsigned lbo_bytes, unsigned sbo_bytes, int row_bytes) {
  return tc_wgmma_desc_join(tc_wgmma_desc_lo(addr, lbo_bytes), tc_wgmma_desc_hi(sbo_bytes, row_bytes));
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
/* TC_WGMMA_FOR_N(F, ARGS...) is F(NN, ARGS) for each N compiled in
 * (tilec_wgmma_ops.cuh: all, or those the code lists); TC_WGMMA_N_ON is
 * true when the template's N is one of them. */
#define TC_WGMMA_FOR_N(F, ...)                                                                              \
  TC_WGMMA_IF_N16(F, (16, __VA_ARGS__)) TC_WGMMA_IF_N32(F, (32, __VA_ARGS__))                            \
  TC_WGMMA_IF_N48(F, (48, __VA_ARGS__)) TC_WGMMA_IF_N64(F, (64, __VA_ARGS__))                            \
  TC_WGMMA_IF_N80(F, (80, __VA_ARGS__)) TC_WGMMA_IF_N96(F, (96, __VA_ARGS__))                            \
  TC_WGMMA_IF_N112(F, (112, __VA_ARGS__)) TC_WGMMA_IF_N128(F, (128, __VA_ARGS__))                        \
  TC_WGMMA_IF_N144(F, (144, __VA_ARGS__)) TC_WGMMA_IF_N160(F, (160, __VA_ARGS__))                        \
  TC_WGMMA_IF_N176(F, (176, __VA_ARGS__)) TC_WGMMA_IF_N192(F, (192, __VA_ARGS__))                        \
  TC_WGMMA_IF_N208(F, (208, __VA_ARGS__)) TC_WGMMA_IF_N224(F, (224, __VA_ARGS__))                        \
  TC_WGMMA_IF_N240(F, (240, __VA_ARGS__)) TC_WGMMA_IF_N256(F, (256, __VA_ARGS__))
#define TC_WGMMA_OR_N(NN, _) || N == NN
#define TC_WGMMA_N_ON (false TC_WGMMA_FOR_N(TC_WGMMA_OR_N, _))
#define TC_WGMMA_N_ON_CHECK(WHAT)                                                                            \
  static_assert(TC_WGMMA_N_ON, WHAT ": this N is not compiled in (the code defines TC_WGMMA_NS_LISTED "    \
                                    "without TC_WGMMA_N<N>)");
#define TC_WGMMA_EACH_N(ONE, TY, TB) TC_WGMMA_FOR_N(ONE, TY, TB)
#define TC_WGMMA_SELECT(ONE)                                      \
  static_assert(N % 16 == 0 && N >= 16 && N <= 256,               \
                "tc_gemm_wgmma_*: N must be a multiple of 16 up to 256"); \
  TC_WGMMA_N_ON_CHECK("tc_gemm_wgmma_*")                          \
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

/* One m64nNk16 into acc (N / 2 floats), A and B from descriptors; A_KM:
 * A is M-major (a [K][M] tile, wgmma's transpose bit for A). */
#define TC_WGMMA_SS_ONE(NN, TY, TB) \
  if constexpr (N == NN) TC_WGMMA_M64N##NN##K16(TY, "0", TB, acc, da, db);
#define TC_WGMMA_SS_ONE_TA(NN, TY, TB) \
  if constexpr (N == NN) TC_WGMMA_M64N##NN##K16(TY, "1", TB, acc, da, db);
template <typename TAG, int N, bool B_NK, bool A_KM = false, typename ACC = float *>
TC_DEVICE void tc_wgmma_m64k16(ACC acc, unsigned long long da, unsigned long long db) {
  if constexpr (A_KM) {
    TC_WGMMA_SELECT(TC_WGMMA_SS_ONE_TA)
  } else {
    TC_WGMMA_SELECT(TC_WGMMA_SS_ONE)
  }
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
#undef TC_WGMMA_SS_ONE_TA
#undef TC_WGMMA_RS_ONE
#undef TC_WGMMA_SELECT
#undef TC_WGMMA_EACH_N

#define TC_WGMMA_FENCE_ONE(NN, _) \
  if constexpr (N == NN) TC_WGMMA_FENCE_N##NN(acc);
template <int N>
TC_DEVICE void tc_wgmma_fence_acc(float *acc) {
  TC_WGMMA_N_ON_CHECK("tc_wgmma_fence_acc")
  TC_WGMMA_FOR_N(TC_WGMMA_FENCE_ONE, _)
}
#undef TC_WGMMA_FENCE_ONE

/* The same over MB m64 blocks' accumulators (N / 2 floats each, in a row:
 * a warpgroup that owns two blocks, tc_gemm_wgmma_ss_2blocks). */
template <int N, int MB>
TC_DEVICE void tc_wgmma_fence_blocks(float *acc) {
#pragma unroll
  for (int b = 0; b < MB; ++b) tc_wgmma_fence_acc<N>(acc + b * (N / 2));
}

/* Elements per swizzled row wgmma reads in an operand of COLS contiguous
 * elements stored in the layout SWZ: the panel width (tc_panel_cols) for
 * panels, the whole row for swizzled rows (16, 32 or 64 elements). */
template <int COLS, int SWZ>
TC_DEVICE constexpr int tc_wgmma_row_elems() {
  return SWZ >= 2 ? tc_swz_panel_cols<COLS, SWZ>() : COLS;
}

/* Byte offset of element (r, c0) of a K-major [ROWS][COLS] operand, c0 a
 * multiple of 16, in the layout SWZ (1: swizzled rows, 2 or 32/64/128:
 * panels of P = tc_swz_panel_cols<COLS, SWZ>() columns, P * 2-byte rows). */
template <int ROWS, int COLS, int SWZ>
TC_DEVICE constexpr unsigned tc_wgmma_kmajor_offset(int r, int c0) {
  constexpr int P = tc_swz_panel_cols<COLS, SWZ>();
  return SWZ >= 2 ? (unsigned)((c0 / P) * ROWS * (2 * P) + r * (2 * P) + (c0 % P) * 2)
                  : (unsigned)(r * COLS * 2 + c0 * 2);
}

/* Descriptor of B for the k16 step kk: [N][K] K-major when B_NK, else
 * [K][N] N-major (LBO = one panel of K rows: the next P columns). */
template <int N, int K, int B_SWZ, bool B_NK>
TC_DEVICE unsigned long long tc_wgmma_b_desc(unsigned b_base, int kk) {
  constexpr int BC = B_NK ? K : N; /* B's contiguous extent */
  static_assert(B_SWZ != 0, "tc_gemm_wgmma_*: B must be swizzled");
  static_assert(B_SWZ >= 2 ? BC % 16 == 0 : (BC == 16 || BC == 32 || BC == 64),
                "tc_gemm_wgmma_*: B's rows must be 32, 64 or 128 bytes, or panels");
  constexpr int B_ROW = tc_wgmma_row_elems<BC, B_SWZ>() * 2;
  /* Only read with more than one panel; 64-column panels: K * 128. */
  constexpr unsigned LBO = B_SWZ >= 2 ? (unsigned)K * (unsigned)B_ROW : (unsigned)K * 128u;
  if constexpr (B_NK)
    return tc_wgmma_desc(b_base + tc_wgmma_kmajor_offset<N, K, B_SWZ>(0, 16 * kk), 16u, 8u * B_ROW, B_ROW);
  else
    return tc_wgmma_desc(b_base + 16u * kk * B_ROW, LBO, 8u * B_ROW, B_ROW);
}

/* Descriptor of A for warpgroup g's 64 rows and the k16 step kk; a_addr is
 * the tile's .shared address. A is [M][K] (K-major), or with A_KM the
 * [K][M] tile of transpose_A (M-major, read with wgmma's transpose bit for
 * A: as an N-major B, start = row k0 of the panel holding rows 64g..,
 * SBO = 8 rows, LBO = one panel). */
template <int M, int K, int A_SWZ, bool A_KM = false>
TC_DEVICE unsigned long long tc_wgmma_a_desc(unsigned a_addr, int g, int kk) {
  constexpr int AC = A_KM ? M : K; /* A's contiguous extent */
  static_assert(A_SWZ != 0, "tc_gemm_wgmma_ss: A must be swizzled");
  static_assert(A_SWZ >= 2 || AC == 16 || AC == 32 || AC == 64,
                "tc_gemm_wgmma_ss: A's rows must be 32, 64 or 128 bytes, or panels");
  constexpr int A_ROW = tc_wgmma_row_elems<AC, A_SWZ>() * 2;
  if constexpr (A_KM) {
    static_assert(A_ROW == 128, "tc_gemm_wgmma_ss: an M-major A needs 64-column panels (M a multiple of 64)");
    return tc_wgmma_desc(a_addr + (unsigned)g * (unsigned)K * 128u + 16u * (unsigned)kk * 128u,
                         (unsigned)K * 128u, 8u * 128u, 128);
  } else {
    const unsigned a_base = a_addr + tc_wgmma_kmajor_offset<M, K, A_SWZ>(g * 64, 0);
    return tc_wgmma_desc(a_base + tc_wgmma_kmajor_offset<M, K, A_SWZ>(0, 16 * kk), 16u, 8u * A_ROW, A_ROW);
  }
}

/* Byte offset of the slice of B from column n0 (a warpgroup's share when
 * the warpgroups split N): row n0 of a K-major [N][K] B, n0 a multiple of
 * 8 (the swizzle pattern repeats every 8 rows), or panel n0 / P of an
 * N-major [K][N] B, n0 a multiple of the panel width P (a descriptor
 * starts at a whole swizzle atom; the compiler stores such a B in panels
 * that divide the slices). The descriptors of tc_wgmma_b_desc then walk
 * the slice as they walk a tile: SBO, LBO and the k16 steps are the
 * tile's. */
template <int N, int K, int B_SWZ, bool B_NK>
TC_DEVICE constexpr unsigned tc_wgmma_b_slice(int n0) {
  if constexpr (B_NK) {
    return tc_wgmma_kmajor_offset<N, K, B_SWZ>(n0, 0);
  } else {
    constexpr int P = tc_wgmma_row_elems<N, B_SWZ>();
    return (unsigned)(n0 / P) * (unsigned)K * (unsigned)(2 * P);
  }
}

/* The INFLIGHT value of a gemm that only issues (see the top of the file). */
#define TC_WGMMA_ISSUE_ONLY (-1)

/* A descriptor steps through its tile's k16 slices by adding to the
 * address field (tc_wgmma_desc_lo): the change from slice 0 to slice kk is
 * the difference of the descriptors of a tile at address 0, which the
 * compiler folds to a constant, so each slice costs one add. */
TC_DEVICE unsigned long long tc_wgmma_desc_add(unsigned long long desc, unsigned step) {
  return tc_wgmma_desc_join((unsigned)desc + step, (unsigned)(desc >> 32));
}
template <int M, int K, int A_SWZ, bool A_KM>
TC_DEVICE unsigned tc_wgmma_a_step(int kk) {
  return (unsigned)(tc_wgmma_a_desc<M, K, A_SWZ, A_KM>(0u, 0, kk) - tc_wgmma_a_desc<M, K, A_SWZ, A_KM>(0u, 0, 0));
}
template <int N, int K, int B_SWZ, bool B_NK>
TC_DEVICE unsigned tc_wgmma_b_step(int kk) {
  return (unsigned)(tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(0u, kk) - tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(0u, 0));
}

/* acc's floats of one m64 block when a warpgroup owns two (below): the
 * single block's index i (row half i / (N / 4), the rest its column
 * position, as the TC_WGMMA_* macros number a thread's registers) is slot
 * 2 (i / (N / 4)) + b of the MMA_C fragment with 32 rows per warp. */
template <int N>
struct tc_wgmma_block_acc {
  float *base; /* acc + b * N / 4 */
  __device__ __forceinline__ float &operator[](int i) const { return base[(i / (N / 4)) * (N / 2) + i % (N / 4)]; }
};

/* Block b's A descriptor for warpgroup g's 128 rows of a K-major A (k16
 * step 0): its first row is 8 b into the warpgroup's, SBO two 8-row atoms. */
template <int M, int K, int A_SWZ>
TC_DEVICE unsigned long long tc_wgmma_a_desc_2blocks(unsigned a_addr, int g, int b) {
  static_assert(A_SWZ != 0 && (A_SWZ >= 2 || K == 16 || K == 32 || K == 64),
                "tc_gemm_wgmma_ss: A's rows must be 32, 64 or 128 bytes, or panels");
  constexpr int A_ROW = tc_wgmma_row_elems<K, A_SWZ>() * 2;
  return tc_wgmma_desc(a_addr + tc_wgmma_kmajor_offset<M, K, A_SWZ>(g * 128 + 8 * b, 0), 16u, 16u * A_ROW, A_ROW);
}

/* acc += A @ B for an accumulator of 32 rows per warp (M = 32 * WARPS, A
 * K-major in shared memory): warpgroup g owns rows [128 g, +128) and
 * issues two m64nNk16 per k16 step. Warp w of the warpgroup holds rows
 * 32 w .. 32 w + 31 (MMA_C: row slot s at 16 (s / 2) + 8 (s % 2)), so
 * block b is the rows 8 b + 16 q + (0..7), q = 0..7: its descriptor starts
 * 8 b rows into the warpgroup's rows and steps 16 rows (two 8-row swizzle
 * atoms) per 8 of its rows, and wgmma's row half h of block b lands in
 * slot 2 h + b (tc_wgmma_block_acc). The code around the gemm sees the
 * plain MMA_C fragment. */
template <typename TAG, int M, int N, int K, int WARPS, int A_SWZ, int B_SWZ, bool B_NK, int INFLIGHT>
TC_DEVICE void tc_gemm_wgmma_ss_2blocks(const unsigned short *As, const unsigned short *Bs, float *acc, int warp) {
  static_assert(WARPS % 4 == 0 && M == 32 * WARPS, "tc_gemm_wgmma_ss: two m64 blocks per warpgroup need M = 32 * WARPS");
  static_assert(N % 16 == 0 && N <= 256 && K % 16 == 0, "tc_gemm_wgmma_ss: N and K must be multiples of 16");
  const int g = tc_warp_uniform(warp / 4);
  const unsigned a_addr = tc_smem_addr(As);
  const unsigned long long db0 = tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(tc_smem_addr(Bs), 0);
  const unsigned long long da0[2] = {tc_wgmma_a_desc_2blocks<M, K, A_SWZ>(a_addr, g, 0),
                                     tc_wgmma_a_desc_2blocks<M, K, A_SWZ>(a_addr, g, 1)};
  tc_wgmma_fence_blocks<N, 2>(acc);
  tc_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    const unsigned long long db = tc_wgmma_desc_add(db0, tc_wgmma_b_step<N, K, B_SWZ, B_NK>(kk));
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      const tc_wgmma_block_acc<N> blk{acc + b * (N / 4)};
      tc_wgmma_m64k16<TAG, N, B_NK>(blk, tc_wgmma_desc_add(da0[b], tc_wgmma_a_step<M, K, A_SWZ, false>(kk)), db);
    }
  }
  tc_wgmma_commit();
  if constexpr (INFLIGHT != TC_WGMMA_ISSUE_ONLY) {
    tc_wgmma_wait<INFLIGHT>();
    tc_wgmma_fence_blocks<N, 2>(acc);
  }
}

/* The warpgroup index goes through tc_warp_uniform: ptxas then keeps A's
 * descriptors in uniform registers (no R2UR and no per-k-slice rebuild of
 * the high half; flash attention dim 128: -22 instructions per iteration). */
template <typename TAG, int M, int N, int K, int WARPS, int A_SWZ, int B_SWZ, bool B_NK, int INFLIGHT = 0,
          bool A_KM = false, int GN = 1>
TC_DEVICE void tc_gemm_wgmma_ss(const unsigned short *As, const unsigned short *Bs, float *acc, int warp) {
  static_assert(INFLIGHT == 0 || INFLIGHT == 1 || INFLIGHT == TC_WGMMA_ISSUE_ONLY,
                "tc_gemm_wgmma_ss: INFLIGHT is 0, 1 or TC_WGMMA_ISSUE_ONLY");
  TC_TILE_TAG_CHECK(TAG);
  if constexpr (GN == 1 && !A_KM && M == 32 * WARPS) {
    tc_gemm_wgmma_ss_2blocks<TAG, M, N, K, WARPS, A_SWZ, B_SWZ, B_NK, INFLIGHT>(As, Bs, acc, warp);
  } else {
    static_assert(GN >= 1 && WARPS % (4 * GN) == 0 && M * GN == 16 * WARPS,
                  "tc_gemm_wgmma_ss: M must be 64 per warpgroup row (M = 16 * WARPS / GN), or 128 with a K-major A");
    constexpr int NW = N / GN; /* one warpgroup's columns: its wgmma's N */
    static_assert(N % GN == 0 && NW % 16 == 0, "tc_gemm_wgmma_ss: N / GN must be a multiple of 16");
    static_assert(GN == 1 || B_NK || (B_SWZ >= 2 && NW % tc_wgmma_row_elems<N, B_SWZ>() == 0),
                  "tc_gemm_wgmma_ss: with GN > 1 an N-major B must be in panels that divide N / GN");
    static_assert(K % 16 == 0, "tc_gemm_wgmma_ss: K must be a multiple of 16");
    const int g = tc_warp_uniform(warp / 4); /* the warpgroup: rows g / GN, columns g % GN */
    const unsigned a_addr = tc_smem_addr(As);
    const unsigned b_base = tc_smem_addr(Bs) + tc_wgmma_b_slice<N, K, B_SWZ, B_NK>((g % GN) * NW);
    const unsigned long long da0 = tc_wgmma_a_desc<M, K, A_SWZ, A_KM>(a_addr, g / GN, 0);
    const unsigned long long db0 = tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(b_base, 0);
    tc_wgmma_fence_acc<NW>(acc);
    tc_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk)
      tc_wgmma_m64k16<TAG, NW, B_NK, A_KM>(acc, tc_wgmma_desc_add(da0, tc_wgmma_a_step<M, K, A_SWZ, A_KM>(kk)),
                                           tc_wgmma_desc_add(db0, tc_wgmma_b_step<N, K, B_SWZ, B_NK>(kk)));
    tc_wgmma_commit();
    if constexpr (INFLIGHT != TC_WGMMA_ISSUE_ONLY) {
      tc_wgmma_wait<INFLIGHT>();
      tc_wgmma_fence_acc<NW>(acc);
    }
  }
}

/* acc += A @ B with A from registers: a_frag is the 16-bit fragment of
 * [M, K] in the MMA_C layout with one 16-row slice per warp (K / 4 values
 * per row slot, as tc_gemm_rs takes it). B as in tc_gemm_wgmma_ss. Waits for
 * its wgmmas before returning (they read a_frag's registers), unless
 * INFLIGHT is TC_WGMMA_ISSUE_ONLY: then a_frag must stay unchanged until a
 * later wait has completed them. PAIRS: a_frag is read as 32-bit pairs
 * (tc_load_pair), for a fragment also written as pairs (tc_f32x2_to_*_at):
 * the compiler asks for it when an issue-only wgmma reads the fragment
 * (overlap-wgmma's P, converted at the end of one iteration and read in the
 * next), where re-packing 16-bit halves (tc_pack2) cost 48 register moves
 * per iteration at dim 128. Elsewhere it packs halves: a fragment also
 * written element by element (the backward's dS) read as pairs pushed
 * ptxas into spills. */
template <typename TAG, int M, int N, int K, int WARPS, int B_SWZ, bool B_NK, int INFLIGHT = 0, bool PAIRS = false>
TC_DEVICE void tc_gemm_wgmma_rs(const unsigned short *a_frag, const unsigned short *Bs, float *acc, int warp) {
  static_assert(INFLIGHT == 0 || INFLIGHT == TC_WGMMA_ISSUE_ONLY,
                "tc_gemm_wgmma_rs: INFLIGHT is 0 or TC_WGMMA_ISSUE_ONLY");
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
    if constexpr (PAIRS) {
      a[kk][0] = tc_load_pair(top);
      a[kk][1] = tc_load_pair(bot);
      a[kk][2] = tc_load_pair(top + 2);
      a[kk][3] = tc_load_pair(bot + 2);
    } else {
      a[kk][0] = tc_pack2(top[0], top[1]);
      a[kk][1] = tc_pack2(bot[0], bot[1]);
      a[kk][2] = tc_pack2(top[2], top[3]);
      a[kk][3] = tc_pack2(bot[2], bot[3]);
    }
  }
  const unsigned long long db0 = tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(b_base, 0);
  tc_wgmma_fence_acc<N>(acc);
  tc_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    tc_wgmma_rs_m64k16<TAG, N, B_NK>(acc, a[kk], tc_wgmma_desc_add(db0, tc_wgmma_b_step<N, K, B_SWZ, B_NK>(kk)));
  tc_wgmma_commit();
  if constexpr (INFLIGHT != TC_WGMMA_ISSUE_ONLY) {
    tc_wgmma_wait<0>();
    tc_wgmma_fence_acc<N>(acc);
  }
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

/* One m64nNk32 into acc (N / 2 floats), A and B from descriptors:
 * acc += A @ B, or acc = A @ B when scale_d is 0 (acc is not read). */
#define TC_WGMMA_FP8_ONE(NN, TA, TB) \
  if constexpr (N == NN) TC_WGMMA_FP8_M64N##NN##K32(TA, TB, acc, da, db, scale_d);
#define TC_WGMMA_FP8_EACH_N(TA, TB) TC_WGMMA_FOR_N(TC_WGMMA_FP8_ONE, TA, TB)
template <typename TA, typename TB, int N>
TC_DEVICE void tc_wgmma_fp8_m64k32(float *acc, unsigned long long da, unsigned long long db, int scale_d) {
  static_assert(N % 16 == 0 && N >= 16 && N <= 256, "tc_gemm_wgmma_fp8_ss: N must be a multiple of 16 up to 256");
  TC_WGMMA_N_ON_CHECK("tc_gemm_wgmma_fp8_ss")
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
#undef TC_WGMMA_FP8_ONE

/* Promotion. Hopper's FP8 wgmma does not accumulate in full f32: inside a
 * chain of m64nNk32 steps on one accumulator the sums keep about 14
 * significant bits (DeepSeek-V3 measured this on the H800; tilec's GPU
 * tests saw 1e-3 to 2e-3 of max|ref| at K = 1000 .. 4000), so the error
 * grows with K. The FP8 gemm therefore never lets wgmma accumulate into
 * acc: each chunk of TC_FP8_PROMOTE_K codes (default 128, four k32 steps;
 * a tile with K below that is one chunk) goes into a fresh register array
 * part (scale-d 0 on its first step) and, once complete, is added into acc
 * with ordinary f32 adds. Across chunks and k-tiles acc is then a true f32
 * sum; only the chunk's own partial sum carries the reduced precision, and
 * its error no longer grows with K. -DTC_FP8_PROMOTE_K=32 promotes after
 * every k32 step (most precise, slowest).
 *
 * Two forms. Without a tc_fp8_pending state (INFLIGHT 0, TC_WGMMA_ISSUE_ONLY,
 * hand-written code) the gemm waits for each chunk (wait_group 0) and adds
 * it: it always returns with its wgmmas complete, and the tensor cores idle
 * while the warpgroup drains and adds. With one (the pipelined loop's
 * INFLIGHT 1 gemm, tc_gemm_wgmma_fp8_ss(..., pend)), the promotion overlaps
 * the next chunk, as DeepGEMM / CUTLASS do: chunk c runs into
 * pend.part[c % 2], then wait_group 1 completes chunk c - 1, whose part is
 * added while chunk c runs; the last chunk stays in flight across the
 * return (and the loop's back edge) and tc_wgmma_fp8_drain adds it after
 * the loop. The sums are the same, in the same order, as the waiting form.
 * Costs: N / 2 floats per part per thread (one part waiting, two
 * overlapped). */
#ifndef TC_FP8_PROMOTE_K
#define TC_FP8_PROMOTE_K 128
#endif

/* The promotion state an in-flight FP8 gemm carries from one call to the
 * next (the compiler declares one per accumulator, beside it). part[next]
 * receives the next chunk; part[next ^ 1] holds the chunk still in flight
 * or complete but not yet added, or zeros (so the first call of a loop adds
 * zeros, exactly, instead of testing whether a chunk is pending). next only
 * changes when a call runs an odd number of chunks (K = 128: every call);
 * a register array cannot be indexed by a run-time value, so each call
 * site is told its part (PART below). */
template <int N>
struct tc_fp8_pending {
  float part[2][N / 2];
  int next;
  __device__ __forceinline__ tc_fp8_pending() : next(0) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) part[1][i] = 0.0f;
  }
};

/* An FP8 tile of K codes per row is, byte for byte, a 16-bit tile of K / 2
 * elements per row: the same 16-byte chunks, the same swizzle, the same
 * panels (tc_panel_cols<K, 1>() = 2 * tc_panel_cols<K / 2>(): both pick the
 * widest of 128, 64, 32 bytes dividing the row), and a k32 step of FP8 is
 * the 32 bytes of a k16 step of 16-bit elements. So the FP8 gemm takes its
 * descriptors and their k-slice steps from the 16-bit K-major helpers at
 * K / 2 (tc_wgmma_a_desc / b_desc with B_NK, tc_wgmma_a_step / b_step). */
template <typename TA, typename TB, int M, int N, int K, int WARPS, int A_SWZ, int B_SWZ, int INFLIGHT>
TC_DEVICE void tc_fp8_check() {
  static_assert(tc_fp8_traits<TA>::valid && tc_fp8_traits<TB>::valid,
                "tc_gemm_wgmma_fp8_ss: TA and TB must be tc_e4m3_t or tc_e5m2_t");
  static_assert(INFLIGHT == 0 || INFLIGHT == 1 || INFLIGHT == TC_WGMMA_ISSUE_ONLY,
                "tc_gemm_wgmma_fp8_ss: INFLIGHT is 0, 1 or TC_WGMMA_ISSUE_ONLY");
  static_assert(WARPS % 4 == 0 && M == 16 * WARPS, "tc_gemm_wgmma_fp8_ss: M must be 64 per warpgroup");
  static_assert(K % 32 == 0, "tc_gemm_wgmma_fp8_ss: K must be a multiple of 32");
  static_assert(A_SWZ != 0 && B_SWZ != 0, "tc_gemm_wgmma_fp8_ss: A and B must be swizzled");
  static_assert((A_SWZ >= 2 || K == 32 || K == 64 || K == 128) && (B_SWZ >= 2 || K == 32 || K == 64 || K == 128),
                "tc_gemm_wgmma_fp8_ss: rows must be 32, 64 or 128 bytes, or panels (SWZ 2)");
  static_assert(TC_FP8_PROMOTE_K % 32 == 0 && TC_FP8_PROMOTE_K >= 32, "TC_FP8_PROMOTE_K must be a multiple of 32");
}

/* k32 steps per chunk, and chunks per call, of a tile of K codes. */
template <int K>
TC_DEVICE constexpr int tc_fp8_chunk_steps() {
  return TC_FP8_PROMOTE_K / 32 < K / 32 ? TC_FP8_PROMOTE_K / 32 : K / 32;
}
template <int K>
TC_DEVICE constexpr int tc_fp8_chunks() {
  return (K / 32 + tc_fp8_chunk_steps<K>() - 1) / tc_fp8_chunk_steps<K>();
}

/* Issues chunk c (k32 steps [c * CHUNK, ...)) of the tile into part and
 * commits it as one wgmma group: m64nNIk32 steps over NI of the tile's N
 * rows of B, db0 the descriptor of the first of them (NI < N: a column
 * slice, tc_fp8_part_cols). */
template <typename TA, typename TB, int M, int N, int K, int A_SWZ, int B_SWZ, int NI = N>
TC_DEVICE void tc_fp8_issue_chunk(float *part, unsigned long long da0, unsigned long long db0, int c) {
  constexpr int KH = K / 2, STEPS = K / 32, CHUNK = tc_fp8_chunk_steps<K>();
  tc_wgmma_fence();
#pragma unroll
  for (int kk = c * CHUNK; kk < (c + 1) * CHUNK && kk < STEPS; ++kk)
    tc_wgmma_fp8_m64k32<TA, TB, NI>(part, tc_wgmma_desc_add(da0, tc_wgmma_a_step<M, KH, A_SWZ, false>(kk)),
                                    tc_wgmma_desc_add(db0, tc_wgmma_b_step<N, KH, B_SWZ, true>(kk)), kk != c * CHUNK);
  tc_wgmma_commit();
}

/* The columns one promotion part covers in the waiting form. Up to 128
 * the whole tile; wider (a 128 x 256 tile: 128 accumulator floats per
 * thread) a part as wide as acc would not fit beside it in the 240
 * registers a consumer has, so the form runs each chunk as two column
 * halves (where they are wgmma widths, multiples of 16) through one part
 * of N / 4 floats: issue half 0, wait, add it into acc's floats of those
 * columns (tc_fp8_promote_cols), then half 1. The warpgroup's tensor work
 * stops while it adds; a second consumer warpgroup's wgmmas run then.
 * (The CUDA backend notes the N / 2 wgmma width by the same rule,
 * emit_gemm_fp8.) */
template <int N>
TC_DEVICE constexpr int tc_fp8_part_cols() {
  return N > 128 && (N / 2) % 16 == 0 ? N / 2 : N;
}

/* Column slice h (NP of the tile's N columns, tc_fp8_part_cols): the
 * descriptor of B's rows [h NP, (h + 1) NP) at k = 0, and the float of an
 * N-column accumulator that float i of the slice's NP-column accumulator
 * holds. A thread's floats are numbered row half first (i / (N / 4)),
 * then column position (tc_wgmma_block_acc), so a column slice is one run
 * of NP / 4 floats in each row half. */
template <int N, int NP, int KH, int B_SWZ>
TC_DEVICE unsigned long long tc_fp8_slice_b_desc(unsigned b_addr, int h) {
  return tc_wgmma_b_desc<N, KH, B_SWZ, true>(b_addr + tc_wgmma_b_slice<N, KH, B_SWZ, true>(h * NP), 0);
}
template <int N, int NP>
TC_DEVICE constexpr int tc_fp8_slice_float(int h, int i) {
  return (i / (NP / 4)) * (N / 4) + h * (NP / 4) + i % (NP / 4);
}

/* acc's columns of slice h += part, once part's wgmmas are complete (the
 * caller waited); NP = N: the whole accumulator, acc += part. */
template <int N, int NP = N>
TC_DEVICE void tc_fp8_promote_cols(float *acc, float *part, int h) {
  tc_wgmma_fence_acc<NP>(part);
  tc_wgmma_fence_acc<N>(acc);
#pragma unroll
  for (int i = 0; i < NP / 2; ++i) acc[tc_fp8_slice_float<N, NP>(h, i)] += part[i];
}

template <typename TA, typename TB, int M, int N, int K, int WARPS, int A_SWZ, int B_SWZ, int INFLIGHT = 0>
TC_DEVICE void tc_gemm_wgmma_fp8_ss(const unsigned char *As, const unsigned char *Bs, float *acc, int warp) {
  tc_fp8_check<TA, TB, M, N, K, WARPS, A_SWZ, B_SWZ, INFLIGHT>();
  constexpr int KH = K / 2; /* the rows as 16-bit elements */
  const unsigned long long da0 = tc_wgmma_a_desc<M, KH, A_SWZ>(tc_smem_addr(As), tc_warp_uniform(warp / 4), 0);
  /* Any of this warpgroup's wgmmas still writing acc (an earlier gemm's)
   * complete before acc is added to; none is in flight after this form. */
  tc_wgmma_fence_acc<N>(acc);
  constexpr int NP = tc_fp8_part_cols<N>();
  float part[NP / 2];
#pragma unroll
  for (int c = 0; c < tc_fp8_chunks<K>(); ++c) {
#pragma unroll
    for (int h = 0; h < N / NP; ++h) {
      const unsigned long long db = tc_fp8_slice_b_desc<N, NP, KH, B_SWZ>(tc_smem_addr(Bs), h);
      tc_fp8_issue_chunk<TA, TB, M, N, K, A_SWZ, B_SWZ, NP>(part, da0, db, c);
      tc_wgmma_wait<0>();
      tc_fp8_promote_cols<N, NP>(acc, part, h);
    }
  }
}

/* The overlapped chunks of one call, the first into part[FIRST]: each
 * chunk's issue is followed by wait_group 1, which completes the chunk
 * before it (this call's, or the one the last call left in flight) and
 * adds that. Returns with the last chunk in flight. */
template <typename TA, typename TB, int M, int N, int K, int A_SWZ, int B_SWZ, int FIRST>
TC_DEVICE void tc_fp8_overlapped(float *acc, tc_fp8_pending<N> &pend, unsigned long long da0,
                                 unsigned long long db0) {
#pragma unroll
  for (int c = 0; c < tc_fp8_chunks<K>(); ++c) {
    tc_fp8_issue_chunk<TA, TB, M, N, K, A_SWZ, B_SWZ>(pend.part[(FIRST + c) & 1], da0, db0, c);
    tc_wgmma_wait<1>();
    tc_fp8_promote_cols<N>(acc, pend.part[(FIRST + c + 1) & 1], 0);
  }
}

/* The in-flight form (INFLIGHT 1, see "Promotion"): acc += A @ B^T, except
 * that the last chunk is left running in pend; acc and pend must not be
 * touched, nor these tiles overwritten, until the next call has returned
 * (which completes it; for the tiles: then released / barrier) or
 * tc_wgmma_fp8_drain(acc, pend) has run. Every other group of this
 * warpgroup issued before the call is complete when it returns.
 * PART: the part the first chunk goes into. A tile of an even number of
 * chunks always starts in part 0 (PART is ignored). With an odd number the
 * part alternates from call to call: PART 0 / 1 is the caller's promise
 * that pend.next says the same (the compiler emits the loop body twice,
 * parts 0 and 1, so every call site has its own part: frame.c,
 * emit_fp8_pair_loop); PART -1 reads pend.next at run time. That form is
 * correct but slow: ptxas (CUDA 13.0) does not follow wgmma registers
 * through the branch and serializes the wgmmas (C7514). It did the same
 * with two chunks per call (K = 256), so the compiler uses this form only
 * at one chunk per call (gemm.c, fp8_in_flight). */
template <typename TA, typename TB, int M, int N, int K, int WARPS, int A_SWZ, int B_SWZ, int INFLIGHT, int PART = -1>
TC_DEVICE void tc_gemm_wgmma_fp8_ss(const unsigned char *As, const unsigned char *Bs, float *acc, int warp,
                                    tc_fp8_pending<N> &pend) {
  tc_fp8_check<TA, TB, M, N, K, WARPS, A_SWZ, B_SWZ, INFLIGHT>();
  static_assert(INFLIGHT == 1, "tc_gemm_wgmma_fp8_ss: the pending-state form is the in-flight one (INFLIGHT 1)");
  constexpr int NCH = tc_fp8_chunks<K>();
  static_assert(PART >= -1 && PART <= 1, "tc_gemm_wgmma_fp8_ss: PART is -1, 0 or 1");
  constexpr int KH = K / 2;
  const unsigned long long da0 = tc_wgmma_a_desc<M, KH, A_SWZ>(tc_smem_addr(As), tc_warp_uniform(warp / 4), 0);
  const unsigned long long db0 = tc_wgmma_b_desc<N, KH, B_SWZ, true>(tc_smem_addr(Bs), 0);
  tc_wgmma_fence_acc<N>(acc);
  if constexpr (NCH % 2 == 0) {
    tc_fp8_overlapped<TA, TB, M, N, K, A_SWZ, B_SWZ, 0>(acc, pend, da0, db0); /* next stays 0 */
  } else if constexpr (PART >= 0) {
    tc_fp8_overlapped<TA, TB, M, N, K, A_SWZ, B_SWZ, PART>(acc, pend, da0, db0);
    pend.next = PART ^ 1;
  } else {
    if (pend.next)
      tc_fp8_overlapped<TA, TB, M, N, K, A_SWZ, B_SWZ, 1>(acc, pend, da0, db0);
    else
      tc_fp8_overlapped<TA, TB, M, N, K, A_SWZ, B_SWZ, 0>(acc, pend, da0, db0);
    pend.next ^= 1;
  }
}

/* Ends a loop of in-flight FP8 gemms: waits for the last chunk and adds it
 * to acc (part[next ^ 1]; a branch, but after wait_group 0 ptxas needs no
 * wgmma bookkeeping), then resets pend to its fresh state (next 0, part 1
 * zero: the chunk there, if any, has been added), for the next loop on it,
 * e.g. a persistent kernel's next tile. */
template <int N>
TC_DEVICE void tc_wgmma_fp8_drain(float *acc, tc_fp8_pending<N> &pend) {
  tc_wgmma_wait<0>();
  if (pend.next)
    tc_fp8_promote_cols<N>(acc, pend.part[0], 0);
  else
    tc_fp8_promote_cols<N>(acc, pend.part[1], 0);
#pragma unroll
  for (int i = 0; i < N / 2; ++i) pend.part[1][i] = 0.0f;
  pend.next = 0;
}

/* Waits for every wgmma of this warpgroup; acc (N / 2 floats, MB times
 * that where the warpgroup owns MB m64 blocks) may then be read. Ends a
 * loop of tc_gemm_wgmma_ss<..., INFLIGHT = 1>. */
template <int N, int MB = 1>
TC_DEVICE void tc_wgmma_drain(float *acc) {
  tc_wgmma_wait<0>();
  tc_wgmma_fence_blocks<N, MB>(acc);
}

/* Makes the N floats of x count as used here: their values are computed
 * before this point (register-only arithmetic could otherwise be moved past
 * a following wgmma wait, out of the window where it overlaps the wgmmas). */
template <int N>
TC_DEVICE void tc_pin_regs(float *x) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(x[i])::"memory");
}

/* Waits until at most PENDING of this warpgroup's wgmma groups are in
 * flight (groups complete in issue order), then acc (N / 2 floats per m64
 * block, MB blocks), which an older group wrote, may be read. */
template <int PENDING, int N, int MB = 1>
TC_DEVICE void tc_wgmma_wait_acc(float *acc) {
  tc_wgmma_wait<PENDING>();
  tc_wgmma_fence_blocks<N, MB>(acc);
}

#endif
