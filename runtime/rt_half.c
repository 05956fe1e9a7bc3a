/* rt_half.c - f32 <-> f16 / bf16 conversions for host programs.
 *
 * Bit-level, so the result does not depend on the host's FPU modes:
 * f32 -> f16 rounds to nearest even (through the subnormal range too),
 * overflows to infinity, keeps NaN a (quiet) NaN with its sign;
 * f32 -> bf16 is the top half of the f32 rounded to nearest even.
 * The widening directions are exact.
 *
 * Public (tilert.h), and on floor 1 (rt_base.h): rt_convert_scalar uses
 * them for f16 and bf16 scalar arguments. */
#include <string.h>

#include "rt_base.h"

static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static float bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

/* Shifts m right by `shift` (>= 1) rounding to nearest, ties to even. */
static uint32_t shift_rne(uint32_t m, int shift) {
  if (shift >= 32) return 0;
  uint32_t q = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  return q;
}

uint16_t tilert_f32_to_f16(float x) {
  uint32_t u = f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  int exp = (int)((u >> 23) & 0xff);
  uint32_t mant = u & 0x7fffff;
  if (exp == 0xff) /* inf, or NaN kept quiet with its top payload bits */
    return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  int e = exp - 127 + 15; /* f16 biased exponent */
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    /* f16 subnormal (or zero): value = m * 2^-24 with m the 11-bit significand
     * shifted right by 14 - e. f32 subnormals are far below and give 0. */
    if (exp == 0) return sign;
    return (uint16_t)(sign | shift_rne(mant | 0x800000, 14 - e));
  }
  /* A carry out of the mantissa bumps the exponent, up to infinity: right. */
  return (uint16_t)(sign | (((uint32_t)e << 10) + shift_rne(mant, 13)));
}

float tilert_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    float v = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24, exact */
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000 | (mant << 13));
  return bits_f32(sign | ((uint32_t)(exp + 112) << 23) | (mant << 13));
}

uint16_t tilert_f32_to_bf16(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7fffffff) > 0x7f800000) /* NaN: keep it NaN (quiet) */
    return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float tilert_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }
