/* test_swizzle.c - tc_swizzle_offset (runtime/device/tilec_device.cuh) on
 * the host, for every chunks-per-row count it accepts (TC_SWIZZLE_ROWS_OK):
 *  - each row's chunks are a permutation of that row's slots;
 *  - ldmatrix reads the same logical chunk of 8 consecutive rows (rows
 *    8k .. 8k+7): those 8 chunks land in 8 distinct bank groups (16-byte
 *    chunk address mod 8), i.e. no bank conflict;
 *  - the power-of-two counts keep the formula of old (the generated code of
 *    existing kernels reads the same addresses).
 * The function is compiled here from a copy, and the test first checks that
 * the copy is, token for token, the header's own text.
 *
 *   test_swizzle PATH/tilec_device.cuh */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COPY(...)                                                 \
  __VA_ARGS__                                                     \
  static const char *copy_text = #__VA_ARGS__;

#define TC_DEVICE static
COPY(
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
)
#define TC_SWIZZLE_ROWS_OK(cpr) ((cpr) == 1 || (cpr) % 2 == 0)

/* Keeps only what is not a comment or whitespace. */
static void squeeze(const char *s, char *out) {
  while (*s) {
    if (s[0] == '/' && s[1] == '*') {
      const char *e = strstr(s + 2, "*/");
      s = e ? e + 2 : s + strlen(s);
    } else if (isspace((unsigned char)*s)) {
      s++;
    } else {
      *out++ = *s++;
    }
  }
  *out = 0;
}

static int failures;
#define CHECK(c, ...)                            \
  do {                                           \
    if (!(c)) {                                  \
      fprintf(stderr, "FAILED: " __VA_ARGS__);   \
      fputc('\n', stderr);                       \
      failures++;                                \
    }                                            \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_swizzle PATH/tilec_device.cuh\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  static char text[1 << 20], hdr[1 << 20], cpy[8192];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  /* The header's function, to its closing brace, and its macro's line. */
  char *fn = strstr(text, "TC_DEVICE unsigned tc_swizzle_offset");
  char *from = fn;
  char *end = fn ? strstr(fn, "\n}\n") : NULL;
  CHECK(end, "tc_swizzle_offset not found in %s", argv[1]);
  if (!end) return 1;
  end[2] = 0;
  squeeze(from, hdr);
  squeeze(copy_text, cpy);
  CHECK(strcmp(hdr, cpy) == 0, "the copy differs from the header:\n%s\n%s", hdr, cpy);
  CHECK(strstr(text, "#define TC_SWIZZLE_ROWS_OK(cpr) ((cpr) == 1 || (cpr) % 2 == 0)\n"),
        "TC_SWIZZLE_ROWS_OK differs from the header's");

  int swizzled = 0;
  for (unsigned cpr = 1; cpr <= 64; cpr++) {
    if (!TC_SWIZZLE_ROWS_OK(cpr)) continue;
    swizzled++;
    for (unsigned r = 0; r < 64; r++) {
      unsigned seen[64] = {0};
      for (unsigned c = 0; c < cpr; c++) {
        unsigned p = tc_swizzle_offset(r, c, cpr);
        CHECK(p >= r * cpr && p < (r + 1) * cpr, "cpr %u: row %u chunk %u leaves its row (%u)", cpr, r, c, p);
        if (p >= r * cpr && p < (r + 1) * cpr) seen[p - r * cpr]++;
      }
      for (unsigned c = 0; c < cpr; c++) CHECK(seen[c] == 1, "cpr %u: row %u slot %u used %u times", cpr, r, c, seen[c]);
    }
    for (unsigned r0 = 0; r0 < 64; r0 += 8)
      for (unsigned c = 0; c < cpr; c++) {
        unsigned groups = 0;
        for (unsigned i = 0; i < 8; i++) groups |= 1u << (tc_swizzle_offset(r0 + i, c, cpr) % 8);
        CHECK(groups == 0xffu || cpr == 1, "cpr %u: chunk %u of rows %u..%u conflicts (bank groups %#x)", cpr, c, r0,
              r0 + 7, groups);
      }
    if ((cpr & (cpr - 1)) == 0)
      for (unsigned r = 0; r < 64; r++)
        for (unsigned c = 0; c < cpr; c++) {
          unsigned x = cpr >= 8 ? (r & 7u) : (r / (8u / cpr)) & (cpr - 1u);
          CHECK(tc_swizzle_offset(r, c, cpr) == r * cpr + (c ^ x), "cpr %u: row %u chunk %u moved", cpr, r, c);
        }
  }
  printf("tc_swizzle_offset: %d chunk counts checked (permutation, conflict free, power-of-two unchanged)\n",
         swizzled);
  if (failures) return 1;
  printf("test_swizzle: all checks passed\n");
  return 0;
}
