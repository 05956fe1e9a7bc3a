/* test_fastdiv.c - runtime/device/tilec_fastdiv.cuh on the host: for
 * divisors d across [1, 2^31) (all up to 5000, powers of two and their
 * neighbours, random ones), tc_fastdiv_div / tc_fastdiv_mod equal C's `/`
 * and `%` on dividends 0 .. 2^31 - 1 (every x below 2^16 for d below 2^12;
 * multiples of d and their neighbours; the largest x; random x). Also: the
 * multiplier fits in 32 bits, the shift is 31 + ceil(log2 d), and a divisor
 * outside [1, 2^31) gets multiplier 0.
 *
 * The header is included as it is, its functions made host functions. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TC_DEVICE static inline
#include "../../runtime/device/tilec_fastdiv.cuh"

static long failures;

static void check(long long x, long long d, const tc_fastdiv *f) {
  const long long q = tc_fastdiv_div(x, *f), r = tc_fastdiv_mod(x, *f, d);
  if (q != x / d || r != x % d) {
    if (failures++ < 10)
      fprintf(stderr, "FAILED: %lld / %lld: fast %lld rem %lld, C %lld rem %lld\n", x, d, q, r, x / d, x % d);
  }
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) { /* xorshift64* */
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

static void check_divisor(long long d) {
  const tc_fastdiv f = tc_fastdiv_make(d);
  const long long top = (1LL << 31) - 1;
  if (d >= 1 && d <= top) {
    unsigned l = 0;
    while ((1LL << l) < d) ++l;
    if (f.mul == 0 || f.shift != 31 + l) {
      if (failures++ < 10) fprintf(stderr, "FAILED: d %lld: shift %u mul %u\n", d, f.shift, f.mul);
    }
    /* m = ceil(2^p / d) must fit the 32-bit field (no truncation). */
    const unsigned long long m = ((1ULL << f.shift) + (unsigned long long)d - 1) / (unsigned long long)d;
    if (m > 0xffffffffULL || m != f.mul) {
      if (failures++ < 10) fprintf(stderr, "FAILED: d %lld: multiplier %llu\n", d, m);
    }
  } else if (f.mul != 0) {
    if (failures++ < 10) fprintf(stderr, "FAILED: d %lld took the fast path\n", d);
  }
  if (d < 1 || d > top) return; /* not a divisor the kernels divide by */
  if (d < 4096)
    for (long long x = 0; x < 65536; x++) check(x, d, &f);
  /* Multiples of d and their neighbours up to the largest dividend. */
  for (long long k = 1; k < 64; k++) {
    const long long q = (long long)(next() % (uint64_t)(top / d + 1));
    for (long long x = q * d - 1; x <= q * d + 1; x++)
      if (x >= 0 && x <= top) check(x, d, &f);
  }
  check(top, d, &f);
  check(top - 1, d, &f);
  for (int i = 0; i < 2000; i++) check((long long)(next() >> 33), d, &f);
}

int main(void) {
  long long count = 0;
  for (long long d = 1; d <= 5000; d++, count++) check_divisor(d);
  for (int l = 1; l <= 31; l++)
    for (long long dd = -2; dd <= 2; dd++) {
      const long long d = (1LL << l) + dd;
      if (d >= 1) check_divisor(d), count++;
    }
  for (int i = 0; i < 3000; i++, count++) check_divisor(1 + (long long)(next() % ((1ULL << 31) - 1)));
  const long long odd[] = {0, -1, -7, -(1LL << 31), (1LL << 31), (1LL << 31) + 5, 1LL << 40};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++, count++) check_divisor(odd[i]);
  if (failures) {
    fprintf(stderr, "test_fastdiv: %ld failure(s) over %lld divisors\n", failures, count);
    return 1;
  }
  printf("test_fastdiv: %lld divisors, all quotients and remainders equal C's\n", count);
  return 0;
}
