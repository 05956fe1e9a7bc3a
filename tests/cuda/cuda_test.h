/* cuda_test.h - tiny assertion helpers shared by the tests in tests/cuda.
 * CHECK prints file:line and the failed condition and counts the failure;
 * a test returns test_failures ? 1 : 0 at the end, or TEST_SKIP (77, the
 * ctest SKIP_RETURN_CODE) when the machine lacks what it needs. */
#ifndef TILEC_CUDA_TEST_H
#define TILEC_CUDA_TEST_H

#include <stdio.h>

#define TEST_SKIP 77

static int test_failures;

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      test_failures++;                                                    \
    }                                                                     \
  } while (0)

#define CHECK_MSG(cond, ...)                                              \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
      test_failures++;                                                    \
    }                                                                     \
  } while (0)

/* Generated from tests/cuda/helpers_kernel.cu by embed_header.cmake. */
extern const char test_helpers_kernel_name[];
extern const char test_helpers_kernel_text[];

#endif
