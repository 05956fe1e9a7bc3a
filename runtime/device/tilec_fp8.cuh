/* tilec_fp8.cuh - FP8 storage types and conversions (OCP E4M3FN and E5M2).
 *
 * Included by the generated CUDA of a module that uses f8e4m3 or f8e5m2
 * (cuda/frame.c). Elements are stored as their byte (tc_fp8_e4m3,
 * tc_fp8_e5m2) and computed in f32, like f16. The conversions are the C
 * backend's (compiler/backend/emit_c.c, emit_c_fp8_prelude), bit for bit:
 *   decode: exact (E4M3FN: bias 7, no infinities, 0x7F/0xFF NaN;
 *           E5M2: bias 15, IEEE-like infinities and NaNs).
 *   encode: round to nearest, ties to even, subnormals kept; anything beyond
 *           the largest finite (448, 57344), infinities included, saturates
 *           to +-largest; a NaN gives 0x7F. On sm_89+ this is PTX
 *           cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32; below, the same rule in
 *           integer arithmetic.
 * No includes: NVRTC sees this text as an in-memory header. */
#ifndef TILEC_FP8_CUH
#define TILEC_FP8_CUH

#ifndef TC_DEVICE
#define TC_DEVICE static __device__ __forceinline__
#endif

typedef unsigned char tc_fp8_e4m3; /* OCP E4M3FN bits */
typedef unsigned char tc_fp8_e5m2; /* OCP E5M2 bits */

/* Software encode: mbits mantissa bits, bias, the largest finite and its code. */
TC_DEVICE unsigned char tc_fp8_encode_sw(float f, int mbits, int bias, float maxv, unsigned maxcode) {
  unsigned u = __float_as_uint(f), sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7Fu;
  float af = __uint_as_float(a);
  if (af >= maxv) return (unsigned char)(sign | maxcode);
  int E = (int)(a >> 23) - 127, emin = 1 - bias;
  int qe = (E < emin ? emin : E) - mbits;
  float t = af * __uint_as_float((unsigned)(127 - qe) << 23); /* exact: a power of 2 */
  unsigned n = (unsigned)t;
  float rem = t - (float)n;
  if (rem > 0.5f || (rem == 0.5f && (n & 1u))) n++;
  if (n == 0) return (unsigned char)sign;
  /* Subnormal range: the code is n (n == 2^mbits is the smallest normal);
   * normal: the carry of n into the exponent is the next binade. */
  return (unsigned char)(sign | ((unsigned)((E < emin ? emin : E) + bias - 1) << mbits) + n);
}

TC_DEVICE float tc_fp8_decode(unsigned char b, int mbits, int bias, bool has_inf) {
  unsigned sign = (unsigned)(b & 0x80u) << 24, e = (b & 0x7fu) >> mbits, m = b & ((1u << mbits) - 1u);
  unsigned emax = (1u << (7 - mbits)) - 1u;
  if (has_inf && e == emax) return __uint_as_float(sign | (m ? 0x7fc00000u : 0x7f800000u));
  if (!has_inf && e == emax && m == (1u << mbits) - 1u) return __uint_as_float(0x7fc00000u);
  if (e == 0) { /* m * 2^(1 - bias - mbits) */
    float v = (float)m * __uint_as_float((unsigned)(127 + 1 - bias - mbits) << 23);
    return sign ? -v : v;
  }
  return __uint_as_float(sign | ((e - bias + 127u) << 23) | (m << (23 - mbits)));
}

TC_DEVICE float tc_e4m3_to_f32(tc_fp8_e4m3 b) { return tc_fp8_decode(b, 3, 7, false); }
TC_DEVICE float tc_e5m2_to_f32(tc_fp8_e5m2 b) { return tc_fp8_decode(b, 2, 15, true); }

TC_DEVICE tc_fp8_e4m3 tc_f32_to_e4m3(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return (tc_fp8_e4m3)(r & 0xffu);
#else
  return tc_fp8_encode_sw(x, 3, 7, 448.0f, 0x7eu);
#endif
}

TC_DEVICE tc_fp8_e5m2 tc_f32_to_e5m2(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short r;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return (tc_fp8_e5m2)(r & 0xffu);
#else
  return tc_fp8_encode_sw(x, 2, 15, 57344.0f, 0x7bu);
#endif
}

/* ---- widening global -> shared copy (FP8 codes into a 16-bit tile) ------
 * tc_copy_g2s_fp8_widen<ROWS, COLS, THREADS, SWZ, E5M2, BF16>(smem, g,
 *     g_row_stride, rows_valid, cols_valid, tid[, rows_lo, cols_lo])
 * The copy of an FP8 global slice into an f16 (BF16 false) or bf16 shared
 * tile, [ROWS][COLS] in the layout SWZ of tc_copy_g2s, COLS a multiple of
 * 8: each thread takes 8 codes of a row at a time (one 8-byte load when the
 * slice is 8-byte aligned, row by row, and the 8 lie inside cols_valid;
 * else byte loads), widens them exactly (every E4M3 and E5M2 value is an f16
 * and a bf16) and stores the 16-byte chunk; zeros outside rows_valid /
 * cols_valid, and before rows_lo / cols_lo (default 0; as tc_copy_g2s's, a
 * slice starting before its tensor, taken by byte loads out of line).
 * Synchronous: the tile is written when the threads pass the next barrier.
 * Only with tilec_tile.cuh (included before this header). */
#ifdef TILEC_TILE_CUH
/* Two codes (low byte first) -> two f16 values (low half first). */
template <bool E5M2>
TC_DEVICE unsigned tc_fp8x2_to_f16x2(unsigned two) {
  if constexpr (E5M2) {
    return ((two & 0xffu) << 8) | ((two & 0xff00u) << 16); /* E5M2 is f16's upper byte */
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    unsigned r;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"((unsigned short)two));
    return r;
#else
    return (unsigned)tc_f32_to_f16(tc_e4m3_to_f32((unsigned char)two)) |
           ((unsigned)tc_f32_to_f16(tc_e4m3_to_f32((unsigned char)(two >> 8))) << 16);
#endif
  }
}
template <bool E5M2, bool BF16>
TC_DEVICE unsigned tc_fp8x2_widen(unsigned two) {
  const unsigned h = tc_fp8x2_to_f16x2<E5M2>(two);
  if constexpr (!BF16) return h;
  else
    return (unsigned)tc_f32_to_bf16(tc_f16_to_f32((tc_half)(h & 0xffffu))) |
           ((unsigned)tc_f32_to_bf16(tc_f16_to_f32((tc_half)(h >> 16))) << 16);
}
/* Eight codes (lo: 0-3, hi: 4-7, little-endian) widened to 16 bits, stored
 * as one 16-byte chunk at .shared address addr. */
template <bool E5M2, bool BF16>
TC_DEVICE void tc_fp8x8_widen_store(unsigned addr, unsigned lo, unsigned hi) {
  tc_u32x4 w;
  w.x = tc_fp8x2_widen<E5M2, BF16>(lo & 0xffffu);
  w.y = tc_fp8x2_widen<E5M2, BF16>(lo >> 16);
  w.z = tc_fp8x2_widen<E5M2, BF16>(hi & 0xffffu);
  w.w = tc_fp8x2_widen<E5M2, BF16>(hi >> 16);
  tc_st_shared_16(addr, w);
}
/* The path of a slice starting before its tensor: byte loads of the codes
 * in [rows_lo, rows_valid) x [cols_lo, cols_valid), zeros elsewhere. */
template <int ROWS, int COLS, int THREADS, int SWZ, bool E5M2, bool BF16>
TC_COLD void tc_copy_g2s_fp8_widen_edges(unsigned base, const unsigned char *g, long long g_row_stride, int rows_valid,
                                         int cols_valid, int tid, int rows_lo, int cols_lo) {
  constexpr int CPR = COLS / 8, CHUNKS = ROWS * CPR, ITERS = (CHUNKS + THREADS - 1) / THREADS;
  for (int j = 0; j < ITERS; ++j) {
    const int i = tid + j * THREADS;
    if (CHUNKS % THREADS != 0 && i >= CHUNKS) break;
    const int r = i / CPR, c0 = (i % CPR) * 8;
    unsigned lo = 0, hi = 0; /* codes c0 .. c0 + 7, little-endian */
    if (r >= rows_lo && r < rows_valid)
      for (int e = 0; e < 8; ++e)
        if (c0 + e >= cols_lo && c0 + e < cols_valid)
          (e < 4 ? lo : hi) |= (unsigned)g[(long long)r * g_row_stride + c0 + e] << (8 * (e & 3));
    tc_fp8x8_widen_store<E5M2, BF16>(tc_tile_chunk_addr<ROWS, COLS, SWZ, 2>(base, r, c0), lo, hi);
  }
}
template <int ROWS, int COLS, int THREADS, int SWZ, bool E5M2, bool BF16>
TC_DEVICE void tc_copy_g2s_fp8_widen(unsigned short *smem, const unsigned char *g, long long g_row_stride,
                                     int rows_valid, int cols_valid, int tid, int rows_lo = 0, int cols_lo = 0) {
  static_assert(ROWS > 0 && COLS > 0 && COLS % 8 == 0, "tc_copy_g2s_fp8_widen: rows must be a multiple of 16 bytes");
  constexpr int CPR = COLS / 8, CHUNKS = ROWS * CPR, ITERS = (CHUNKS + THREADS - 1) / THREADS;
  const unsigned base = tc_smem_addr(smem);
  if (rows_lo > 0 || cols_lo > 0) { /* folds away for the default 0s */
    tc_copy_g2s_fp8_widen_edges<ROWS, COLS, THREADS, SWZ, E5M2, BF16>(base, g, g_row_stride, rows_valid, cols_valid,
                                                                      tid, rows_lo, cols_lo);
    return;
  }
  const bool vec = ((unsigned long long)g & 7ull) == 0 && g_row_stride % 8 == 0;
#pragma unroll
  for (int j = 0; j < ITERS; ++j) {
    const int i = tid + j * THREADS;
    if (CHUNKS % THREADS != 0 && i >= CHUNKS) break;
    const int r = i / CPR, c0 = (i % CPR) * 8;
    unsigned lo = 0, hi = 0; /* codes c0 .. c0 + 7, little-endian */
    if (r < rows_valid) {
      const unsigned char *p = g + (long long)r * g_row_stride + c0;
      if (vec && c0 + 8 <= cols_valid) {
        const uint2 v = *(const uint2 *)p;
        lo = v.x;
        hi = v.y;
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (c0 + e < cols_valid) (e < 4 ? lo : hi) |= (unsigned)p[e] << (8 * (e & 3));
      }
    }
    tc_fp8x8_widen_store<E5M2, BF16>(tc_tile_chunk_addr<ROWS, COLS, SWZ, 2>(base, r, c0), lo, hi);
  }
}
#endif

#endif /* TILEC_FP8_CUH */
