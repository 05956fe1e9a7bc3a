/* tilec_fastdiv.cuh - integer division by a divisor fixed for the launch,
 * through a multiplier computed once (TilecOptions.fast_division).
 *
 * A persistent kernel splits every tile's index over the grid's extents
 * (tile % ceildiv(seq_len, 128), ... / heads): divisors that do not change
 * during the launch, divided by at every tile on every consumer warp. A
 * run-time 64-bit `/` or `%` compiles to a 32-bit unsigned division of
 * about 45 SASS instructions when the operands fit (an H200's ncu source
 * page of the 128-row dim 64 causal flagship: three of them are 3.7 % of
 * the kernel's samples). Here the kernel computes, once per block, a
 * multiplier m and shift p for each such divisor d, and a quotient costs a
 * 32 x 32 -> 64-bit multiply and a shift.
 *
 * The arithmetic (for 1 <= d < 2^31, dividends 0 <= x < 2^31): l =
 * ceil(log2 d), p = 31 + l, m = ceil(2^p / d), which is below 2^32. Then
 * floor(x m / 2^p) = floor(x / d): with m d = 2^p + e, 0 <= e < d,
 * x m / 2^p = x / d + x e / (d 2^p), and the error term is below
 * 2^31 / 2^p = 2^-l <= 1 / d, too little to reach the next integer from
 * x / d, whose fractional part is at most (d - 1) / d. Nothing is
 * checked at a division: a plain-division fallback inlined at each call
 * site made ptxas spill in the causal persistent flagship builds (session
 * 18), so only divisions whose operands are known to be in range use it
 * (IrExpr.tile_split: a persistent kernel's tile index over its grid). tests/unit/test_fastdiv.c checks the same code on the host
 * against `/` and `%`.
 *
 * C-compatible (the host test includes it with TC_DEVICE = static inline). */
#ifndef TILEC_FASTDIV_CUH
#define TILEC_FASTDIV_CUH

#ifndef TC_DEVICE
#define TC_DEVICE static __device__ __forceinline__
#endif

/* The multiplier and shift of one divisor d (mul == 0 for d outside
 * [1, 2^31), which no caller divides by). Two 32-bit words: d itself is not
 * kept (tc_fastdiv_mod's callers pass it again, an expression of kernel
 * parameters the compiler reloads rather than holds in a register). */
typedef struct tc_fastdiv {
  unsigned mul;   /* m = ceil(2^shift / d), in [2^31, 2^32) */
  unsigned shift; /* p = 31 + ceil(log2 d) */
} tc_fastdiv;

TC_DEVICE tc_fastdiv tc_fastdiv_make(long long d) {
  tc_fastdiv f;
  f.mul = 0;
  f.shift = 31;
  if (d >= 1 && d < (1LL << 31)) {
    unsigned l = 0;
    while ((1LL << l) < d) ++l;
    f.shift = 31 + l;
    f.mul = (unsigned)(((1ULL << f.shift) + (unsigned long long)d - 1) / (unsigned long long)d);
  }
  return f;
}

/* x / d for 0 <= x < 2^31 and f = tc_fastdiv_make(d), 1 <= d < 2^31 (the
 * caller's promise: IrExpr.tile_split's range; nothing is checked here). */
TC_DEVICE long long tc_fastdiv_div(long long x, tc_fastdiv f) {
  return (long long)(((unsigned long long)(unsigned)x * f.mul) >> f.shift);
}

/* x % d, under the same promise. */
TC_DEVICE long long tc_fastdiv_mod(long long x, tc_fastdiv f, long long d) { return x - tc_fastdiv_div(x, f) * d; }

#endif
