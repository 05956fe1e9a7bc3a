/* tilec_tile.cuh - block-level tile templates the generated CUDA calls.
 *
 * Built on tilec_device.cuh (mma.sync, ldmatrix, cp.async, the swizzle). The
 * layouts are the ones of docs/gpu-codegen.md; this block states only what a
 * caller must know. All templates are header-only and fully unrolled (every
 * loop bound is a template constant), so register arrays passed by pointer
 * (acc, a_frag) stay in registers once inlined. NVRTC, -std=c++17, sm_80+.
 *
 * Element types. tc_half and tc_bf16 are both `unsigned short`, so the
 * element type cannot choose the mma variant. The gemm templates therefore
 * take a TAG as their first template argument:
 *     tc_f16_t   -> mma ...f32.f16.f16.f32
 *     tc_bf16_t  -> mma ...f32.bf16.bf16.f32
 * and their pointer arguments are 16-bit storage (`const unsigned short *`,
 * i.e. tc_half* or tc_bf16*). Passing anything else as TAG (tc_half, say) is
 * a compile error that names the two tags.
 *
 * tc_smem_index<ROWS, COLS, SWZ, ES = 2>(r, c)
 *   Element index of (r, c) in a row-major [ROWS][COLS] shared tile of
 *   ES-byte elements (2: f16/bf16, 1: FP8; a 16-byte chunk holds E = 16 / ES
 *   of them); with SWZ 1 the 16-byte chunks are permuted by
 *   tc_swizzle_offset(r, c / E, COLS / E) (COLS / E must then be 1 or even);
 *   with SWZ 2 and COLS wider than P = tc_panel_cols<COLS, ES>() (the widest
 *   of 128, 64, 32 bytes that divides a row: 64, 32 or 16 columns of 16-bit
 *   elements, 128, 64 or 32 of FP8) the tile is COLS / P panels of
 *   [ROWS][P], each swizzled with P * ES-byte rows (wgmma operands,
 *   tilec_wgmma.cuh; dim 96: three 32-column panels with 64-byte rows).
 *   SWZ 32, 64 or 128: panels of that many bytes, narrower than SWZ 2's
 *   (the compiler's choice for the N-major B of a gemm whose warpgroups
 *   split N: each warpgroup's slice must start a panel; tc_swz_panel_cols).
 *   SWZ 0 (false): plain rows.
 *
 * tc_ceildiv(a, b)
 *   ceil(a / b) for b != 0, exact for negative operands too.
 *
 * tc_index_in(i, n), tc_before_tensor(start, n)
 *   Both edges of a tensor dimension of size n, for indices and slice
 *   starts that may be negative (read from a tensor): whether 0 <= i < n;
 *   how many of the n rows (or columns) of a slice starting at `start` lie
 *   before the tensor (0 for start >= 0, -start capped at n otherwise).
 *
 * tc_copy_g2s<ROWS, COLS, THREADS, SWZ>(smem, g, g_row_stride, rows_valid,
 *                                       cols_valid, tid[, rows_lo, cols_lo])
 *   All THREADS threads (tid in [0, THREADS)) must call it. Copies element
 *   (r, c) = g[r * g_row_stride + c] to smem[tc_smem_index<..>(r, c)] for
 *   rows_lo <= r < rows_valid, cols_lo <= c < cols_valid; the rest of the
 *   tile becomes +0 and its global memory is never read nor addressed
 *   (either count may be <= 0). rows_lo / cols_lo (default 0) are the rows
 *   and columns before the tensor of a slice whose start may be negative
 *   (tc_before_tensor; a start read from a tensor): when one is positive
 *   the copy takes tc_copy_g2s_edges, a scalar path checking both edges.
 *   Vector path: 16-byte cp.async per chunk (zero-fill form for the padding;
 *   no predicates at all for a whole tile, rows_valid >= ROWS and cols_valid
 *   >= COLS) when g is 16-byte aligned and g_row_stride % 8 == 0; then the caller must
 *   tc_cp_async_commit / tc_cp_async_wait, then __syncthreads. Otherwise a
 *   scalar path (plain loads, 16-byte shared stores) that only needs the
 *   __syncthreads. smem must be 16-byte aligned; rows a multiple of 16
 *   bytes. T is a 16-bit type or an 8-bit one (FP8 codes: the chunks hold
 *   16 elements, g_row_stride % 16 == 0 for the vector path).
 *
 * tc_gemm_ss<TAG, M, N, K, WM, WN, A_SWZ, B_SWZ, B_NK, A_KM, WG_ORDER>(As, Bs, acc, warp, lane)
 *   acc += A @ B over WM x WN warps (the warps 0 .. WM*WN-1 must all call it,
 *   full warps, no divergence). A is the shared tile [M][K], or [K][M] with
 *   A_KM (transpose_A; read with ldmatrix .trans); B is the shared
 *   tile [N][K] when B_NK (B transposed, as in Q K^T), else [K][N]. acc is the
 *   thread's 4 * MI * NI floats in the MMA_C layout of [M, N] (MI = M/WM/16,
 *   NI = N/WN/8), the warps in the grid order of tc_warp_pos<WN, WG_ORDER>
 *   (row-major, or wgmma's warpgroup order with WG_ORDER: the accumulator
 *   of a gemm whose warpgroups split N, on mma.sync where wgmma could not
 *   read its tiles). Reads shared memory only: the caller synchronises.
 *
 * tc_gemm_rs<TAG, M, N, K, WM, B_SWZ, B_NK>(a_frag, Bs, acc, warp, lane)
 *   As tc_gemm_ss with WN = 1, but A comes from registers: a_frag is the
 *   16-bit fragment of [M, K] in the MMA_C layout over WM x 1 warps (K / 4
 *   values per row slot), e.g. an f32 accumulator converted element-wise.
 */
#ifndef TILEC_TILE_CUH
#define TILEC_TILE_CUH

#include "tilec_device.cuh"

/* ---------------------------------------------------------------------------
 * Element tags and what they select.
 * ------------------------------------------------------------------------- */
struct tc_f16_t {};
struct tc_bf16_t {};

template <typename TAG>
struct tc_mma_traits {
  static constexpr bool valid = false;
};

template <>
struct tc_mma_traits<tc_f16_t> {
  static constexpr bool valid = true;
  static __device__ __forceinline__ void mma(float d[4], const unsigned a[4], const unsigned b[2]) {
    tc_mma_m16n8k16_f16f32(d, a, b);
  }
  static __device__ __forceinline__ unsigned short from_f32(float x) { return tc_f32_to_f16(x); }
  static __device__ __forceinline__ float to_f32(unsigned short x) { return tc_f16_to_f32(x); }
};

template <>
struct tc_mma_traits<tc_bf16_t> {
  static constexpr bool valid = true;
  static __device__ __forceinline__ void mma(float d[4], const unsigned a[4], const unsigned b[2]) {
    tc_mma_m16n8k16_bf16f32(d, a, b);
  }
  static __device__ __forceinline__ unsigned short from_f32(float x) { return tc_f32_to_bf16(x); }
  static __device__ __forceinline__ float to_f32(unsigned short x) { return tc_bf16_to_f32(x); }
};

#define TC_TILE_TAG_CHECK(TAG)                                                                   \
  static_assert(tc_mma_traits<TAG>::valid,                                                       \
                "tc_gemm_*: the first template argument must be tc_f16_t or tc_bf16_t "          \
                "(tc_half and tc_bf16 are the same C++ type and cannot select the mma)")

/* ---------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------- */

TC_DEVICE long long tc_ceildiv(long long a, long long b) {
  long long q = a / b; /* truncates toward zero */
  if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
  return q;
}

/* 0 <= i < n for a size n >= 0, in one compare: a negative i converts to
 * an unsigned value above every size. */
TC_DEVICE bool tc_index_in(long long i, long long n) { return (unsigned long long)i < (unsigned long long)n; }

/* The slice's rows (or columns) before its tensor; never negates a start
 * below -n, so any long long is fine. */
TC_DEVICE int tc_before_tensor(long long start, int n) {
  return start >= 0 ? 0 : start <= -(long long)n ? n : (int)-start;
}

/* The panel width (in elements) of a SWZ 2 tile of COLS ES-byte elements:
 * the widest of wgmma's swizzled rows (128, 64 or 32 bytes; 64, 32 or 16
 * columns of a 16-bit type, 128, 64 or 32 of FP8) that divides a row of
 * COLS * ES bytes. The compiler's swizzle-layout pass picks the same width. */
template <int COLS, int ES = 2>
TC_DEVICE constexpr int tc_panel_cols() {
  return (COLS * ES) % 128 == 0 ? 128 / ES : (COLS * ES) % 64 == 0 ? 64 / ES : 32 / ES;
}

/* The panel width (in elements) of a tile stored in the layout SWZ >= 2:
 * tc_panel_cols for SWZ 2, else SWZ bytes (32, 64, 128: narrower panels the
 * compiler names, see tc_smem_index). */
template <int COLS, int SWZ, int ES = 2>
TC_DEVICE constexpr int tc_swz_panel_cols() {
  return SWZ >= 32 ? SWZ / ES : tc_panel_cols<COLS, ES>();
}
#define TC_SWZ_OK(SWZ) ((SWZ) >= 0 && ((SWZ) <= 2 || (SWZ) == 32 || (SWZ) == 64 || (SWZ) == 128))

template <int ROWS, int COLS, int SWZ, int ES = 2>
TC_DEVICE int tc_smem_index(int r, int c) {
  static_assert(ES == 1 || ES == 2 || (ES == 4 && SWZ == 0),
                "tc_smem_index: ES (bytes per element) is 1 (FP8), 2 (f16/bf16) or 4 (f32/i32, plain rows only)");
  constexpr int EPC = 16 / ES; /* elements per 16-byte chunk */
  static_assert(COLS % EPC == 0, "tc_smem_index: rows must be a multiple of 16 bytes (16-byte chunks)");
  static_assert(SWZ != 1 || TC_SWIZZLE_ROWS_OK(COLS / EPC),
                "tc_smem_index: a swizzled tile needs one or an even number of chunks per row");
  static_assert(TC_SWZ_OK(SWZ), "tc_smem_index: SWZ is 0 (plain), 1 (swizzled rows), 2 (panels) or 32/64/128 "
                                "(panels of that many bytes)");
  /* Panels: columns [Pp, Pp + P) of every row form panel p, a swizzled
   * [ROWS][P] tile of its own (the layout wgmma reads, tilec_wgmma.cuh). */
  constexpr int P = tc_swz_panel_cols<COLS, SWZ, ES>(), PC = P / EPC; /* panel width in elements, in chunks */
  static_assert(SWZ < 2 || ((COLS * ES) % 32 == 0 && COLS % P == 0),
                "tc_smem_index: a tile of panels needs rows of a multiple of 32 bytes, and of its panels");
  constexpr int PSHIFT = P == 128 ? 7 : P == 64 ? 6 : P == 32 ? 5 : 4, ESHIFT = EPC == 16 ? 4 : 3;
  if constexpr (SWZ >= 2 && COLS > P)
    return (c >> PSHIFT) * (ROWS * P) +
           (int)tc_swizzle_offset((unsigned)r, ((unsigned)c >> ESHIFT) & (unsigned)(PC - 1), PC) * EPC +
           (c & (EPC - 1));
  if constexpr (SWZ)
    return (int)tc_swizzle_offset((unsigned)r, (unsigned)c >> ESHIFT, COLS / EPC) * EPC + (c & (EPC - 1));
  return r * COLS + c;
}

/* .shared byte address of element (r, c), c a chunk start (a multiple of 16 / ES). */
template <int ROWS, int COLS, int SWZ, int ES = 2>
TC_DEVICE unsigned tc_tile_chunk_addr(unsigned base, int r, int c) {
  return base + (unsigned)ES * (unsigned)tc_smem_index<ROWS, COLS, SWZ, ES>(r, c);
}

/* ---------------------------------------------------------------------------
 * Global -> shared tile copy
 * ------------------------------------------------------------------------- */

/* The scalar path of tc_copy_g2s: plain loads, zero outside, 16-byte
 * shared stores; with EDGES, rows below rows_lo and columns below cols_lo
 * are outside too (a slice starting before its tensor). */
template <int ROWS, int COLS, int THREADS, int SWZ, typename T, bool EDGES>
TC_DEVICE void tc_copy_g2s_scalar_body(unsigned base, const T *g, long long g_row_stride, int rows_valid,
                                       int cols_valid, int tid, int rows_lo, int cols_lo) {
  constexpr int ES = (int)sizeof(T), EPC = 16 / ES; /* bytes per element, elements per chunk */
  constexpr int CPR = COLS / EPC, CHUNKS = ROWS * CPR, ITERS = (CHUNKS + THREADS - 1) / THREADS;
  for (int j = 0; j < ITERS; ++j) {
    const int i = tid + j * THREADS;
    if (CHUNKS % THREADS != 0 && i >= CHUNKS) break;
    const int r = i / CPR, c0 = (i % CPR) * EPC;
    unsigned v[EPC]; /* each element's bits */
#pragma unroll
    for (int e = 0; e < EPC; ++e) v[e] = 0;
    if (r < rows_valid && (!EDGES || r >= rows_lo)) {
      const T *row = g + (long long)r * g_row_stride;
#pragma unroll
      for (int e = 0; e < EPC; ++e) {
        if (c0 + e >= cols_valid || (EDGES && c0 + e < cols_lo)) continue;
        if constexpr (ES == 4) v[e] = *reinterpret_cast<const unsigned *>(&row[c0 + e]); /* an f32's bits, not its value */
        else v[e] = (unsigned)row[c0 + e];
      }
    }
    unsigned word[4]; /* little-endian: element e at byte ES * e of the chunk */
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if constexpr (ES == 4) word[q] = v[q];
      else if constexpr (ES == 2) word[q] = tc_pack2((unsigned short)v[2 * q], (unsigned short)v[2 * q + 1]);
      else word[q] = v[4 * q] | (v[4 * q + 1] << 8) | (v[4 * q + 2] << 16) | (v[4 * q + 3] << 24);
    }
    tc_u32x4 w;
    w.x = word[0];
    w.y = word[1];
    w.z = word[2];
    w.w = word[3];
    tc_st_shared_16(tc_tile_chunk_addr<ROWS, COLS, SWZ, ES>(base, r, c0), w);
  }
}

/* The unaligned path of tc_copy_g2s, and (tc_copy_g2s_edges) the path of a
 * slice starting before its tensor. Both are rare (a misaligned tensor or
 * row stride; bad offsets), so they are out-of-line functions: inlined at
 * every copy they made kernels larger and NVRTC slower for nothing. */
#ifndef TC_COLD
#if defined(__CUDACC__)
#define TC_COLD static __device__ __noinline__
#else
#define TC_COLD static inline
#endif
#endif
template <int ROWS, int COLS, int THREADS, int SWZ, typename T>
TC_COLD void tc_copy_g2s_scalar(unsigned base, const T *g, long long g_row_stride, int rows_valid, int cols_valid,
                                int tid) {
  tc_copy_g2s_scalar_body<ROWS, COLS, THREADS, SWZ, T, false>(base, g, g_row_stride, rows_valid, cols_valid, tid, 0, 0);
}
template <int ROWS, int COLS, int THREADS, int SWZ, typename T>
TC_COLD void tc_copy_g2s_edges(unsigned base, const T *g, long long g_row_stride, int rows_valid, int cols_valid,
                               int tid, int rows_lo, int cols_lo) {
  tc_copy_g2s_scalar_body<ROWS, COLS, THREADS, SWZ, T, true>(base, g, g_row_stride, rows_valid, cols_valid, tid,
                                                             rows_lo, cols_lo);
}

template <int ROWS, int COLS, int THREADS, int SWZ, typename T>
TC_DEVICE void tc_copy_g2s(T *smem, const T *g, long long g_row_stride, int rows_valid,
                           int cols_valid, int tid, int rows_lo = 0, int cols_lo = 0) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 1 || sizeof(T) == 4,
                "tc_copy_g2s: 16-bit, 8-bit (FP8) or 32-bit (f32/i32, SWZ 0) elements only");
  constexpr int ES = (int)sizeof(T), EPC = 16 / ES; /* bytes per element, elements per 16-byte chunk */
  static_assert(ROWS > 0 && COLS > 0 && COLS % EPC == 0, "tc_copy_g2s: rows must be a multiple of 16 bytes");
  static_assert(THREADS > 0, "tc_copy_g2s: THREADS must be positive");
  /* A slice starting before its tensor (bad offsets read from a tensor):
   * the scalar path, which checks both edges. With the default 0s of a
   * start known non-negative this test folds away. */
  if (rows_lo > 0 || cols_lo > 0) {
    tc_copy_g2s_edges<ROWS, COLS, THREADS, SWZ, T>(tc_smem_addr(smem), g, g_row_stride, rows_valid, cols_valid, tid,
                                                   rows_lo, cols_lo);
    return;
  }
  /* Panels narrower than 128 bytes: one copy per panel, each a swizzled
   * [ROWS][P] tile of its own. In row-major chunk order the same row of two
   * panels would share bank groups (every panel starts on a 128-byte
   * boundary); panel by panel, 8 consecutive chunks fill whole 128-byte
   * lines. */
  constexpr int P = tc_swz_panel_cols<COLS, SWZ, ES>(); /* the panel width of SWZ >= 2, in elements */
  if constexpr (SWZ >= 2 && COLS > P && P * ES < 128) {
#pragma unroll
    for (int p = 0; p < COLS / P; ++p)
      /* A panel past cols_valid reads nothing and is given g itself: no
       * address past the tensor is formed. */
      tc_copy_g2s<ROWS, P, THREADS, 1, T>(smem + p * ROWS * P, p * P < cols_valid ? g + p * P : g, g_row_stride,
                                          rows_valid, cols_valid - p * P, tid);
    return;
  }
  constexpr int CPR = COLS / EPC, CHUNKS = ROWS * CPR;
  constexpr int ITERS = (CHUNKS + THREADS - 1) / THREADS;
  const unsigned base = tc_smem_addr(smem);
  const bool vec = ((unsigned long long)g & 15ull) == 0 && g_row_stride % EPC == 0;
  /* When every thread owns the same column chunk in each of its rows (the
   * threads cover whole rows) and the swizzle pattern repeats every RS rows,
   * the per-chunk work is one pointer step and one shared-address step. */
  constexpr int RS = THREADS % CPR == 0 ? THREADS / CPR : 0;
  constexpr int PITCH = SWZ >= 2 && COLS > P ? P : COLS; /* elements between rows */
  constexpr bool REGULAR = CHUNKS % THREADS == 0 && RS > 0 && RS % 8 == 0 && (CPR >= 8 || (THREADS / 8) % CPR == 0);
  if constexpr (REGULAR) {
    if (vec && rows_valid >= ROWS && cols_valid >= COLS) {
      /* Interior tile (the steady state of a gemm): no predicates, one
       * pointer step per chunk. */
      const T *gp = g + (long long)(tid / CPR) * g_row_stride + (tid % CPR) * EPC;
      const long long gstep = (long long)RS * g_row_stride;
      const unsigned s0 = tc_tile_chunk_addr<ROWS, COLS, SWZ, ES>(base, tid / CPR, (tid % CPR) * EPC);
#pragma unroll
      for (int j = 0; j < ITERS; ++j, gp += gstep)
        tc_cp_async_16_full(s0 + (unsigned)ES * (unsigned)(j * RS * PITCH), gp);
      return;
    }
    if (vec) {
      const int r0 = tid / CPR, c0 = (tid % CPR) * EPC, left = cols_valid - c0;
      const unsigned full = left >= EPC ? 16u : left > 0 ? (unsigned)ES * (unsigned)left : 0u;
      const T *gp = g + (long long)r0 * g_row_stride + c0;
      const long long gstep = (long long)RS * g_row_stride;
      const unsigned s0 = tc_tile_chunk_addr<ROWS, COLS, SWZ, ES>(base, r0, c0);
#pragma unroll
      for (int j = 0; j < ITERS; ++j) {
        const bool in = r0 + j * RS < rows_valid && full > 0;
        /* Out-of-range chunks read 0 bytes from g itself. */
        tc_cp_async_16_bytes(s0 + (unsigned)ES * (unsigned)(j * RS * PITCH), in ? gp + j * gstep : g, in ? full : 0u);
      }
      return;
    }
  }
  if (vec) {
#pragma unroll
    for (int j = 0; j < ITERS; ++j) {
      const int i = tid + j * THREADS;
      if (CHUNKS % THREADS == 0 || i < CHUNKS) {
        const int r = i / CPR, c0 = (i % CPR) * EPC;
        const int left = cols_valid - c0;
        const bool in = r < rows_valid && left > 0;
        /* Out-of-range chunks read 0 bytes from g itself: no address past
         * the tensor is ever formed. */
        const T *src = in ? g + (long long)r * g_row_stride + c0 : g;
        const unsigned nbytes = in ? (left >= EPC ? 16u : (unsigned)ES * (unsigned)left) : 0u;
        tc_cp_async_16_bytes(tc_tile_chunk_addr<ROWS, COLS, SWZ, ES>(base, r, c0), src, nbytes);
      }
    }
  } else {
    tc_copy_g2s_scalar<ROWS, COLS, THREADS, SWZ, T>(base, g, g_row_stride, rows_valid, cols_valid, tid);
  }
}

/* tc_copy_s2g's path for a slice starting before its tensor: element by
 * element, rows in [rows_lo, rows_valid) and columns in [cols_lo,
 * cols_valid) only. Out of line: bad offsets, never a hot path. */
template <int ROWS, int COLS, int THREADS, int SWZ, typename T>
TC_COLD void tc_copy_s2g_edges(T *g, long long g_row_stride, int rows_valid, int cols_valid, unsigned base, int tid,
                               int rows_lo, int cols_lo) {
  constexpr int CPR = COLS / 8, CHUNKS = ROWS * CPR, ITERS = (CHUNKS + THREADS - 1) / THREADS;
  for (int j = 0; j < ITERS; ++j) {
    const int i = tid + j * THREADS;
    if (CHUNKS % THREADS != 0 && i >= CHUNKS) break;
    const int r = i / CPR, c0 = (i % CPR) * 8;
    if (r < rows_lo || r >= rows_valid) continue;
    const tc_u32x4 v = tc_ld_shared_16(tc_tile_chunk_addr<ROWS, COLS, SWZ>(base, r, c0));
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
    for (int e = 0; e < 8; ++e)
      if (c0 + e >= cols_lo && c0 + e < cols_valid)
        g[(long long)r * g_row_stride + c0 + e] = (T)(e & 1 ? tc_unpack_hi(w[e / 2]) : tc_unpack_lo(w[e / 2]));
  }
}

/* All THREADS threads copy a [ROWS][COLS] shared tile of 16-bit elements to
 * global memory (element (r, c) to g[r * g_row_stride + c]), 16 bytes per
 * chunk (ld.shared.v4 + st.global.v4) when g is 16-byte aligned and
 * g_row_stride % 8 == 0; rows >= rows_valid and columns >= cols_valid are
 * not written, nor rows < rows_lo and columns < cols_lo (default 0: the
 * rows and columns before the tensor of a slice whose start may be
 * negative, tc_before_tensor; positive ones take tc_copy_s2g_edges). The
 * caller puts a barrier between the writes of the tile and this call. */
template <int ROWS, int COLS, int THREADS, int SWZ, typename T>
TC_DEVICE void tc_copy_s2g(T *g, long long g_row_stride, int rows_valid, int cols_valid, const T *smem, int tid,
                           int rows_lo = 0, int cols_lo = 0) {
  static_assert(sizeof(T) == 2 && COLS % 8 == 0, "tc_copy_s2g: 16-bit elements, COLS a multiple of 8");
  constexpr int CPR = COLS / 8, CHUNKS = ROWS * CPR, ITERS = (CHUNKS + THREADS - 1) / THREADS;
  const unsigned base = tc_smem_addr(smem);
  if (rows_lo > 0 || cols_lo > 0) { /* folds away for the default 0s */
    tc_copy_s2g_edges<ROWS, COLS, THREADS, SWZ, T>(g, g_row_stride, rows_valid, cols_valid, base, tid, rows_lo, cols_lo);
    return;
  }
  const bool vec = ((unsigned long long)g & 15ull) == 0 && g_row_stride % 8 == 0;
#pragma unroll
  for (int j = 0; j < ITERS; ++j) {
    const int i = tid + j * THREADS;
    if (CHUNKS % THREADS != 0 && i >= CHUNKS) break;
    const int r = i / CPR, c0 = (i % CPR) * 8;
    if (r >= rows_valid || c0 >= cols_valid) continue;
    const tc_u32x4 v = tc_ld_shared_16(tc_tile_chunk_addr<ROWS, COLS, SWZ>(base, r, c0));
    T *dst = g + (long long)r * g_row_stride + c0;
    if (vec && c0 + 8 <= cols_valid) {
      tc_st_global_16(dst, v);
    } else {
      const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (c0 + e < cols_valid) dst[e] = (T)(e & 1 ? tc_unpack_hi(w[e / 2]) : tc_unpack_lo(w[e / 2]));
    }
  }
}

/* ---------------------------------------------------------------------------
 * Warp-level operand loads (ldmatrix)
 * ------------------------------------------------------------------------- */

/* A fragment of the 16x16 atom at rows row0.., k columns k0.. of the [M][K]
 * shared tile: lane supplies row (lane % 16), chunk (lane / 16), so the four
 * matrices are (rows 0-7, k 0-7), (rows 8-15, k 0-7), (0-7, 8-15), (8-15, 8-15):
 * exactly a[0..3] of the mma. */
template <int M, int K, bool SWZ>
TC_DEVICE void tc_load_a_frag(unsigned a[4], unsigned base, int row0, int k0, int lane) {
  tc_ldmatrix_x4(a, tc_tile_chunk_addr<M, K, SWZ>(base, row0 + (lane & 15), k0 + ((lane >> 4) << 3)));
}

/* The same fragment from the [K][M] tile of transpose_A (ldmatrix .trans):
 * lane 8j + r supplies k-row k0 + 8 * (j >> 1) + r at column row0 +
 * 8 * (j & 1), so matrix j is (rows 8 * (j & 1).., k 8 * (j >> 1)..) as
 * above, each transposed on the way in. */
template <int M, int K, bool SWZ>
TC_DEVICE void tc_load_a_frag_km(unsigned a[4], unsigned base, int row0, int k0, int lane) {
  const int j = lane >> 3;
  tc_ldmatrix_x4_trans(a, tc_tile_chunk_addr<K, M, SWZ>(base, k0 + 8 * (j >> 1) + (lane & 7), row0 + 8 * (j & 1)));
}

/* B fragments for NI atoms of 8 columns starting at column n0, k-step at k0.
 * b[ni][0] holds k0..k0+7, b[ni][1] k0+8..k0+15. Pairs of atoms use one x4
 * (matrices (ni, k lo), (ni, k hi), (ni+1, k lo), (ni+1, k hi)); an odd last
 * atom uses x2. B_NK: tile [N][K], rows along n, plain ldmatrix.
 * Otherwise tile [K][N], rows along k, ldmatrix .trans. */
template <int N, int K, bool SWZ, bool B_NK, int NI>
TC_DEVICE void tc_load_b_frags(unsigned (&b)[NI][2], unsigned base, int n0, int k0, int lane) {
  const int m = (lane >> 3) & 3, r = lane & 7;
#pragma unroll
  for (int p = 0; p + 1 < NI; p += 2) {
    unsigned q[4];
    const int n = n0 + 8 * (p + (m >> 1)), k = k0 + 8 * (m & 1);
    if constexpr (B_NK)
      tc_ldmatrix_x4(q, tc_tile_chunk_addr<N, K, SWZ>(base, n + r, k));
    else
      tc_ldmatrix_x4_trans(q, tc_tile_chunk_addr<K, N, SWZ>(base, k + r, n));
    b[p][0] = q[0];
    b[p][1] = q[1];
    b[p + 1][0] = q[2];
    b[p + 1][1] = q[3];
  }
  if (NI % 2 == 1) {
    /* lanes 16-31 repeat lanes 0-15's addresses (ignored, but valid). */
    const int n = n0 + 8 * (NI - 1), k = k0 + 8 * (m & 1);
    if constexpr (B_NK)
      tc_ldmatrix_x2(b[NI - 1], tc_tile_chunk_addr<N, K, SWZ>(base, n + r, k));
    else
      tc_ldmatrix_x2_trans(b[NI - 1], tc_tile_chunk_addr<K, N, SWZ>(base, k + r, n));
  }
}

/* acc[atom (mi, ni)] += a[mi] * b[ni] for every atom of the warp tile, with
 * the MMA_C register order (COLS_LOCAL = 2 * NI). */
template <typename TAG, int MI, int NI>
TC_DEVICE void tc_mma_atoms(float *acc, const unsigned (&a)[MI][4], const unsigned (&b)[NI][2]) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      float *top = acc + (2 * mi) * (2 * NI) + 2 * ni;
      float *bot = acc + (2 * mi + 1) * (2 * NI) + 2 * ni;
      float d[4] = {top[0], top[1], bot[0], bot[1]};
      tc_mma_traits<TAG>::mma(d, a[mi], b[ni]);
      top[0] = d[0];
      top[1] = d[1];
      bot[0] = d[2];
      bot[1] = d[3];
    }
  }
}

/* ---------------------------------------------------------------------------
 * Block gemms
 * ------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------
 * ldmatrix addressing of swizzled tiles without per-load integer work.
 *
 * In a swizzled tile with a multiple of 8 chunks per row (only then: a tail
 * of 2 or 4 chunks is swizzled otherwise), logical chunk c = 8h + 2q + b
 * of row r is stored at chunk 8h + ((2q + b) ^ (r & 7)) = 8h + 2(q ^ (x>>1))
 * + (b ^ (x & 1)) with x = r & 7. In the gemms below every lane's x and b are
 * fixed (rows move in steps of 8, and b is a lane bit), while h and q come
 * from compile-time loop indices. So four per-lane byte offsets, one per q,
 * plus compile-time constants give every ldmatrix address: one add (or an
 * immediate offset) instead of a multiply-xor-shift chain per load.
 * ------------------------------------------------------------------------- */
TC_DEVICE void tc_swz_lane_offsets(unsigned (&off)[4], int x, int b) {
#pragma unroll
  for (int q = 0; q < 4; ++q) off[q] = 16u * (2u * (unsigned)(q ^ (x >> 1)) + (unsigned)((b ^ x) & 1));
}

/* Byte address of the lane's ldmatrix row for chunk 8h + 2q + b, given the
 * lane's row address (tile base + row * COLS * 2) and its offsets. */
TC_DEVICE unsigned tc_swz_addr(unsigned row_addr, const unsigned (&off)[4], int h, int q) {
  return row_addr + 128u * (unsigned)h + off[q];
}

/* B fragments of k-step kk from a swizzled tile by the per-lane offsets:
 * pairs of 8-column atoms per ldmatrix.x4 ([N][K] plain when B_NK, [K][N]
 * with .trans otherwise). row/off come from the lane setup of the caller. */
template <int N, int K, bool B_NK, int NI>
TC_DEVICE void tc_load_b_swz(unsigned (&b)[NI][2], unsigned row, const unsigned (&off)[4], int kk) {
#pragma unroll
  for (int p = 0; p < NI; p += 2) {
    unsigned q[4];
    if constexpr (B_NK)
      tc_ldmatrix_x4(q, tc_swz_addr(row + 2u * 8u * K * p, off, kk >> 2, kk & 3));
    else
      tc_ldmatrix_x4_trans(q, tc_swz_addr(row + 2u * 16u * N * kk, off, p >> 3, (p & 7) >> 1));
    b[p][0] = q[0];
    b[p][1] = q[1];
    b[p + 1][0] = q[2];
    b[p + 1][1] = q[3];
  }
}

/* An MMA_C warp's place (wm, wn) in its WM x WN warp grid (the compiler's
 * ir_layout_warp_pos): row-major, warp = wm * WN + wn; or, WG_ORDER,
 * wgmma's order when the warpgroups split N: warpgroup g = warp / 4 sits
 * at (g / WN, g % WN) of the (WM / 4) x WN warpgroups and its warps take
 * the warpgroup's 16-row slices in order. */
template <int WN, bool WG_ORDER>
TC_DEVICE void tc_warp_pos(int warp, int &wm, int &wn) {
  if constexpr (WG_ORDER) {
    wm = (warp / (4 * WN)) * 4 + warp % 4;
    wn = (warp / 4) % WN;
  } else {
    wm = warp / WN;
    wn = warp % WN;
  }
}

template <typename TAG, int M, int N, int K, int WM, int WN, bool A_SWZ, bool B_SWZ, bool B_NK, bool A_KM = false,
          bool WG_ORDER = false>
TC_DEVICE void tc_gemm_ss(const unsigned short *As, const unsigned short *Bs, float *acc, int warp,
                          int lane) {
  TC_TILE_TAG_CHECK(TAG);
  static_assert(WM > 0 && WN > 0, "tc_gemm_ss: WM and WN must be positive");
  static_assert(!WG_ORDER || WM % 4 == 0, "tc_gemm_ss: in warpgroup order WM is 4 warps per warpgroup row");
  static_assert(M % (16 * WM) == 0, "tc_gemm_ss: M / WM must be a multiple of 16");
  static_assert(N % (8 * WN) == 0, "tc_gemm_ss: N / WN must be a multiple of 8");
  static_assert(K % 16 == 0, "tc_gemm_ss: K must be a multiple of 16");
  constexpr int MW = M / WM, NW = N / WN, MI = MW / 16, NI = NW / 8;
  /* Fast addressing needs a multiple of 8 chunks per swizzled row, an even atom count
   * for B, and (for a [K][N] B) warp column offsets that are whole 8-chunk
   * groups. */
  constexpr bool FAST_A = !A_KM && A_SWZ && K / 8 >= 8 && (K / 8) % 8 == 0;
  constexpr bool FAST_B = B_SWZ && NI % 2 == 0 &&
                          (B_NK ? K / 8 >= 8 && (K / 8) % 8 == 0 : (N / 8 >= 8 && (N / 8) % 8 == 0 && (WN == 1 || NW % 64 == 0)));
  int wm, wn;
  tc_warp_pos<WN, WG_ORDER>(warp, wm, wn);
  const int row0 = wm * MW, n0 = wn * NW;
  const unsigned a_base = tc_smem_addr(As), b_base = tc_smem_addr(Bs);
  const int m4 = (lane >> 3) & 3, r8 = lane & 7;
  unsigned a_off[4], b_off[4], a_row = 0, b_row = 0;
  if constexpr (FAST_A) {
    tc_swz_lane_offsets(a_off, lane & 7, lane >> 4);
    a_row = a_base + 2u * (unsigned)((row0 + (lane & 15)) * K);
  }
  if constexpr (FAST_B) {
    if constexpr (B_NK) {
      tc_swz_lane_offsets(b_off, r8, m4 & 1);
      b_row = b_base + 2u * (unsigned)((n0 + 8 * (m4 >> 1) + r8) * K);
    } else {
      tc_swz_lane_offsets(b_off, r8, m4 >> 1);
      b_row = b_base + 2u * (unsigned)((8 * (m4 & 1) + r8) * N + n0);
    }
  }
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    unsigned a[MI][4], b[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      if constexpr (FAST_A)
        tc_ldmatrix_x4(a[mi], tc_swz_addr(a_row + 2u * 16u * K * mi, a_off, kk >> 2, kk & 3));
      else if constexpr (A_KM)
        tc_load_a_frag_km<M, K, A_SWZ>(a[mi], a_base, row0 + 16 * mi, 16 * kk, lane);
      else
        tc_load_a_frag<M, K, A_SWZ>(a[mi], a_base, row0 + 16 * mi, 16 * kk, lane);
    }
    if constexpr (FAST_B) {
      tc_load_b_swz<N, K, B_NK, NI>(b, b_row, b_off, kk);
    } else {
      tc_load_b_frags<N, K, B_SWZ, B_NK, NI>(b, b_base, n0, 16 * kk, lane);
    }
    tc_mma_atoms<TAG, MI, NI>(acc, a, b);
  }
}

/* B operand loads of the register-A gemms (every warp covers all N columns). */
template <int N, int K, bool B_SWZ, bool B_NK, int NI>
struct tc_b_rs_fast {
  static constexpr bool value = B_SWZ && NI % 2 == 0 && (B_NK ? K / 8 >= 8 && (K / 8) % 8 == 0 : N / 8 >= 8 && (N / 8) % 8 == 0);
};

template <int N, int K, bool B_SWZ, bool B_NK, int NI>
TC_DEVICE void tc_b_rs_setup(unsigned (&off)[4], unsigned &row, unsigned b_base, int lane) {
  const int m4 = (lane >> 3) & 3, r8 = lane & 7;
  row = b_base;
#pragma unroll
  for (int q = 0; q < 4; ++q) off[q] = 0;
  if constexpr (tc_b_rs_fast<N, K, B_SWZ, B_NK, NI>::value) {
    if constexpr (B_NK) {
      tc_swz_lane_offsets(off, r8, m4 & 1);
      row = b_base + 2u * (unsigned)((8 * (m4 >> 1) + r8) * K);
    } else {
      tc_swz_lane_offsets(off, r8, m4 >> 1);
      row = b_base + 2u * (unsigned)((8 * (m4 & 1) + r8) * N);
    }
  }
}

template <int N, int K, bool B_SWZ, bool B_NK, int NI>
TC_DEVICE void tc_load_b_rs(unsigned (&b)[NI][2], unsigned b_base, unsigned row, const unsigned (&off)[4], int kk,
                            int lane) {
  if constexpr (tc_b_rs_fast<N, K, B_SWZ, B_NK, NI>::value) {
    tc_load_b_swz<N, K, B_NK, NI>(b, row, off, kk);
  } else {
    tc_load_b_frags<N, K, B_SWZ, B_NK, NI>(b, b_base, 0, 16 * kk, lane);
  }
}

template <typename TAG, int M, int N, int K, int WM, bool B_SWZ, bool B_NK>
TC_DEVICE void tc_gemm_rs(const unsigned short *a_frag, const unsigned short *Bs, float *acc, int warp,
                          int lane) {
  TC_TILE_TAG_CHECK(TAG);
  static_assert(WM > 0, "tc_gemm_rs: WM must be positive");
  static_assert(M % (16 * WM) == 0, "tc_gemm_rs: M / WM must be a multiple of 16");
  static_assert(N % 8 == 0, "tc_gemm_rs: N must be a multiple of 8");
  static_assert(K % 16 == 0, "tc_gemm_rs: K must be a multiple of 16");
  constexpr int MI = M / WM / 16, NI = N / 8, KC = K / 4; /* KC: COLS_LOCAL of a_frag */
  (void)warp; /* WN = 1: every warp covers all N columns; rows are in a_frag */
  const unsigned b_base = tc_smem_addr(Bs);
  unsigned b_off[4], b_row;
  tc_b_rs_setup<N, K, B_SWZ, B_NK, NI>(b_off, b_row, b_base, lane);
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    unsigned a[MI][4], b[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const unsigned short *top = a_frag + (2 * mi) * KC + 4 * kk;
      const unsigned short *bot = a_frag + (2 * mi + 1) * KC + 4 * kk;
      a[mi][0] = tc_pack2(top[0], top[1]);
      a[mi][1] = tc_pack2(bot[0], bot[1]);
      a[mi][2] = tc_pack2(top[2], top[3]);
      a[mi][3] = tc_pack2(bot[2], bot[3]);
    }
    tc_load_b_rs<N, K, B_SWZ, B_NK, NI>(b, b_base, b_row, b_off, kk, lane);
    tc_mma_atoms<TAG, MI, NI>(acc, a, b);
  }
}

#endif /* TILEC_TILE_CUH */
