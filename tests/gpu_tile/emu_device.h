/* emu_device.h - host emulation of the tilec_device.cuh helpers that
 * tilec_tile.cuh and tile_kernels.cu use, for the tile_emulated test (CI, no
 * GPU): the templates' fragment layouts, ldmatrix addressing, swizzle and
 * zero fill are checked on the CPU by the same checks as on the GPU.
 *
 * Included before tilec_tile.cuh, it defines TILEC_DEVICE_CUH, so the real
 * header's body is skipped. A block is 128 std::threads (emu_driver.cpp);
 * the warp-collective ops (ldmatrix, mma) exchange operands through per-warp
 * tables between two block-wide barriers, which is valid because every warp
 * of a tile template issues the same sequence of collective ops. Semantics
 * are the PTX ISA's as tilec_device.cuh documents them: for ldmatrix, lane
 * 8m+r gives the address of row r of matrix m; mma m16n8k16 fragments a[4],
 * b[2], d[4] as listed there. What the hardware would punish aborts:
 * unaligned ldmatrix / cp.async addresses, src-size > 16, an address
 * outside the shared window.
 */
#ifndef TILEC_DEVICE_CUH
#define TILEC_DEVICE_CUH

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(x)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__
#define TC_DEVICE static inline

typedef unsigned short tc_half;
typedef unsigned short tc_bf16;
struct alignas(16) tc_u32x4 {
  unsigned x, y, z, w;
};

/* Set up by emu_driver.cpp for each launch. */
struct EmuIdx {
  unsigned x, y, z;
};
extern thread_local EmuIdx emu_thread_idx;
#define threadIdx emu_thread_idx
extern pthread_barrier_t emu_block_barrier;
extern unsigned char emu_shared[];      /* the block's shared memory */
extern const unsigned emu_shared_bytes; /* its size */
extern unsigned emu_addr_table[4][32];  /* ldmatrix: each lane's row address */
extern unsigned emu_frag_table[4][32][6]; /* mma: each lane's a[4], b[2] */

static inline void emu_fail(const char *what) {
  fprintf(stderr, "emulated device: %s\n", what);
  abort();
}

inline void __syncthreads() { pthread_barrier_wait(&emu_block_barrier); }
TC_DEVICE void tc_syncthreads() { __syncthreads(); }

TC_DEVICE unsigned tc_smem_addr(const void *p) {
  const unsigned char *b = (const unsigned char *)p;
  if (b < emu_shared || b >= emu_shared + emu_shared_bytes) emu_fail("tc_smem_addr: not a shared pointer");
  return (unsigned)(b - emu_shared);
}

TC_DEVICE unsigned char *emu_at(unsigned smem, unsigned bytes) {
  if (smem + bytes > emu_shared_bytes) emu_fail("shared access out of the window");
  return emu_shared + smem;
}

/* ---- conversions (round to nearest even) ---- */

TC_DEVICE tc_half tc_f32_to_f16(float f) {
  unsigned short sign = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (a == 0) return sign;
  if (isnan(a)) return 0x7e00;
  if (a < 0x1p-14) return (tc_half)(sign | (unsigned short)nearbyint(a * 0x1p24));
  int e;
  frexp(a, &e);
  long bits = ((long)(e + 14) << 10) + (long)nearbyint(ldexp(a, 11 - e)) - 1024;
  return (tc_half)(sign | (bits >= 0x7c00 ? 0x7c00 : bits));
}

TC_DEVICE float tc_f16_to_f32(tc_half h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (float)((h & 0x8000) ? -v : v);
}

TC_DEVICE tc_bf16 tc_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (isnan(f)) return 0x7fc0;
  x += 0x7fffu + ((x >> 16) & 1u);
  return (tc_bf16)(x >> 16);
}

TC_DEVICE float tc_bf16_to_f32(tc_bf16 h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

TC_DEVICE unsigned tc_pack2(unsigned short lo, unsigned short hi) { return lo | (unsigned)hi << 16; }
TC_DEVICE unsigned tc_pack_f16x2(float lo, float hi) { return tc_pack2(tc_f32_to_f16(lo), tc_f32_to_f16(hi)); }
TC_DEVICE unsigned tc_pack_bf16x2(float lo, float hi) { return tc_pack2(tc_f32_to_bf16(lo), tc_f32_to_bf16(hi)); }
TC_DEVICE void tc_f32x2_to_f16x2(float lo, float hi, tc_half &out_lo, tc_half &out_hi) {
  out_lo = tc_f32_to_f16(lo);
  out_hi = tc_f32_to_f16(hi);
}
TC_DEVICE void tc_f32x2_to_bf16x2(float lo, float hi, tc_bf16 &out_lo, tc_bf16 &out_hi) {
  out_lo = tc_f32_to_bf16(lo);
  out_hi = tc_f32_to_bf16(hi);
}
TC_DEVICE int tc_warp_uniform(int x) { return x; }
TC_DEVICE unsigned tc_load_pair(const unsigned short *p) { return tc_pack2(p[0], p[1]); }
TC_DEVICE void tc_store_pair(unsigned short *p, unsigned r) {
  p[0] = (unsigned short)(r & 0xffffu);
  p[1] = (unsigned short)(r >> 16);
}
TC_DEVICE void tc_f32x2_to_f16x2_at(float lo, float hi, tc_half *out) { tc_store_pair(out, tc_pack_f16x2(lo, hi)); }
TC_DEVICE void tc_f32x2_to_bf16x2_at(float lo, float hi, tc_bf16 *out) { tc_store_pair(out, tc_pack_bf16x2(lo, hi)); }
TC_DEVICE unsigned short tc_unpack_lo(unsigned r) { return (unsigned short)(r & 0xffffu); }
TC_DEVICE unsigned short tc_unpack_hi(unsigned r) { return (unsigned short)(r >> 16); }

/* ---- ldmatrix ---- */

TC_DEVICE unsigned short emu_ld16(unsigned smem) {
  unsigned short v;
  memcpy(&v, emu_at(smem, 2), 2);
  return v;
}

template <int NMAT, bool TRANS>
inline void emu_ldmatrix(unsigned *r, unsigned smem) {
  const unsigned w = threadIdx.x / 32, l = threadIdx.x % 32, g = l / 4, t = l % 4;
  if (smem % 16) emu_fail("ldmatrix: row address not 16-byte aligned");
  emu_addr_table[w][l] = smem;
  __syncthreads();
  for (int m = 0; m < NMAT; m++) {
    const unsigned *rows = emu_addr_table[w] + 8 * m;
    if (!TRANS) /* M[g][2t], M[g][2t+1] */
      r[m] = tc_pack2(emu_ld16(rows[g] + 4 * t), emu_ld16(rows[g] + 4 * t + 2));
    else /* M[2t][g], M[2t+1][g] */
      r[m] = tc_pack2(emu_ld16(rows[2 * t] + 2 * g), emu_ld16(rows[2 * t + 1] + 2 * g));
  }
  __syncthreads();
}

TC_DEVICE void tc_ldmatrix_x4(unsigned r[4], unsigned s) { emu_ldmatrix<4, false>(r, s); }
TC_DEVICE void tc_ldmatrix_x4_trans(unsigned r[4], unsigned s) { emu_ldmatrix<4, true>(r, s); }
TC_DEVICE void tc_ldmatrix_x2(unsigned r[2], unsigned s) { emu_ldmatrix<2, false>(r, s); }
TC_DEVICE void tc_ldmatrix_x2_trans(unsigned r[2], unsigned s) { emu_ldmatrix<2, true>(r, s); }

/* ---- mma.sync m16n8k16, f32 accumulate ---- */

template <bool BF16>
inline void emu_mma(float d[4], const unsigned a[4], const unsigned b[2]) {
  const unsigned w = threadIdx.x / 32, l = threadIdx.x % 32, g = l / 4, t = l % 4;
  for (int i = 0; i < 4; i++) emu_frag_table[w][l][i] = a[i];
  emu_frag_table[w][l][4] = b[0];
  emu_frag_table[w][l][5] = b[1];
  __syncthreads();
  /* Element k of a register pair: low half for even k. */
  auto elem = [](unsigned reg, int k) -> double {
    unsigned short h = (unsigned short)(k & 1 ? reg >> 16 : reg & 0xffffu);
    return BF16 ? tc_bf16_to_f32(h) : tc_f16_to_f32(h);
  };
  for (int i = 0; i < 4; i++) {
    const int row = (int)g + 8 * (i / 2), col = 2 * (int)t + i % 2;
    double s = d[i];
    for (int k = 0; k < 16; k++) {
      /* A[row][k] is in lane 4*(row%8) + (k%8)/2, register row/8 + 2*(k/8);
       * B[k][col] in lane 4*col + (k%8)/2, register k/8. */
      double av = elem(emu_frag_table[w][4 * (row % 8) + (k % 8) / 2][row / 8 + 2 * (k / 8)], k);
      double bv = elem(emu_frag_table[w][4 * col + (k % 8) / 2][4 + k / 8], k);
      s += av * bv;
    }
    d[i] = (float)s;
  }
  __syncthreads();
}

TC_DEVICE void tc_mma_m16n8k16_f16f32(float d[4], const unsigned a[4], const unsigned b[2]) {
  emu_mma<false>(d, a, b);
}
TC_DEVICE void tc_mma_m16n8k16_bf16f32(float d[4], const unsigned a[4], const unsigned b[2]) {
  emu_mma<true>(d, a, b);
}

/* ---- copies (synchronous here) ---- */

TC_DEVICE void tc_cp_async_16_bytes(unsigned smem, const void *gmem, unsigned nbytes) {
  if (smem % 16 || (uintptr_t)gmem % 16) emu_fail("cp.async: address not 16-byte aligned");
  if (nbytes > 16) emu_fail("cp.async: src-size > 16");
  unsigned char *dst = emu_at(smem, 16);
  memcpy(dst, gmem, nbytes);
  memset(dst + nbytes, 0, 16 - nbytes);
}
TC_DEVICE void tc_cp_async_16_full(unsigned smem, const void *gmem) { tc_cp_async_16_bytes(smem, gmem, 16); }
TC_DEVICE void tc_cp_async_commit() {}
template <int N>
TC_DEVICE void tc_cp_async_wait() {}

TC_DEVICE void tc_st_shared_16(unsigned smem, tc_u32x4 v) {
  if (smem % 16) emu_fail("st.shared.v4: address not 16-byte aligned");
  memcpy(emu_at(smem, 16), &v, 16);
}

TC_DEVICE tc_u32x4 tc_ld_shared_16(unsigned smem) {
  if (smem % 16) emu_fail("ld.shared.v4: address not 16-byte aligned");
  tc_u32x4 v;
  memcpy(&v, emu_at(smem, 16), 16);
  return v;
}

TC_DEVICE void tc_st_global_16(void *p, tc_u32x4 v) {
  if ((unsigned long long)p % 16) emu_fail("st.global.v4: address not 16-byte aligned");
  memcpy(p, &v, 16);
}

/* The real header's function, verbatim in behaviour. */
#define TC_SWIZZLE_ROWS_OK(cpr) ((cpr) == 1 || (cpr) % 2 == 0)
TC_DEVICE unsigned tc_swizzle_offset(unsigned row, unsigned col_chunk, unsigned chunks_per_row) {
  const unsigned whole = chunks_per_row & ~7u;
  unsigned x;
  if (chunks_per_row % 8u == 0u || col_chunk < whole) {
    x = row & 7u;
  } else {
    const unsigned tail = chunks_per_row - whole;
    x = tail == 6u ? (row >> 2) & 1u : (row / (8u / tail)) & (tail - 1u);
  }
  return row * chunks_per_row + (col_chunk ^ x);
}

#endif
