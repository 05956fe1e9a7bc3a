/* test_nvrtc_compile.c - NVRTC builds helpers_kernel.cu for sm_80 and sm_90a.
 *
 * Needs libnvrtc, no GPU: the CI check that tilec_device.cuh compiles, with
 * no include path, for both targets tilec emits. It also asserts that the
 * test kernel calls every helper the header defines (so a new helper cannot
 * go untested), that the result is an ELF cubin, and that the NVRTC-only
 * handle refuses device calls with a clear message. Exit 77 (skip) when
 * libnvrtc cannot be opened.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "cuda_test.h"

/* Every `TC_DEVICE <type> name(` in the header must appear as `name(` in
 * the kernel source. */
static void check_every_helper_used(const char *header, const char *kernel) {
  int helpers = 0;
  for (const char *p = strstr(header, "\nTC_DEVICE "); p; p = strstr(p + 1, "\nTC_DEVICE ")) {
    const char *paren = strchr(p, '(');
    const char *eol = strchr(p + 1, '\n');
    if (!paren || (eol && paren > eol)) continue;
    const char *start = paren;
    while (start > p && (isalnum((unsigned char)start[-1]) || start[-1] == '_')) start--;
    char name[64];
    size_t n = (size_t)(paren - start);
    if (n == 0 || n >= sizeof name - 1) continue;
    memcpy(name, start, n);
    name[n] = '\0';
    helpers++;
    /* Templates are called as name<N>(. */
    char call[80], tcall[80];
    snprintf(call, sizeof call, "%s(", name);
    snprintf(tcall, sizeof tcall, "%s<", name);
    CHECK_MSG(strstr(kernel, call) || strstr(kernel, tcall),
              "helper %s of tilec_device.cuh is not exercised by helpers_kernel.cu", name);
  }
  printf("tilec_device.cuh defines %d helpers\n", helpers);
  CHECK(helpers >= 30);
}

int main(void) {
  char why[512];
  RtCuda *cu = rt_cuda_open(RT_CUDA_NVRTC_ONLY, 0, why, sizeof why);
  if (!cu) {
    printf("skipped: %s\n", why);
    return TEST_SKIP;
  }
  printf("NVRTC %d\n", rt_cuda_nvrtc_version(cu));
  CHECK(rt_cuda_nvrtc_version(cu) >= 11000);
  const char *header = rt_cuda_device_header("tilec_device.cuh");
  CHECK(header != NULL && strstr(header, "#ifndef TILEC_DEVICE_CUH") != NULL);
  CHECK(rt_cuda_device_header("no_such.cuh") == NULL);
  if (header) check_every_helper_used(header, test_helpers_kernel_text);
  /* The embedded copy is the file, byte for byte (the escaping in
   * embed_header.cmake loses nothing). */
  FILE *f = fopen(TILEC_DEVICE_HEADER_PATH, "rb");
  CHECK_MSG(f != NULL, "cannot open %s", TILEC_DEVICE_HEADER_PATH);
  if (f && header) {
    static char disk[1 << 20];
    size_t n = fread(disk, 1, sizeof disk - 1, f);
    disk[n] = '\0';
    CHECK_MSG(n == strlen(header) && memcmp(disk, header, n) == 0,
              "embedded tilec_device.cuh differs from %s", TILEC_DEVICE_HEADER_PATH);
  }
  if (f) fclose(f);

  static const char *const archs[] = {"sm_80", "sm_90a"};
  const char *opts[] = {"-lineinfo"};
  for (int i = 0; i < 2; i++) {
    void *cubin = NULL;
    size_t size = 0;
    bool ok = rt_cuda_compile(cu, test_helpers_kernel_text, "helpers_kernel.cu", archs[i], opts, 1,
                              &cubin, &size);
    CHECK_MSG(ok, "%s: %s", archs[i], rt_cuda_last_error(cu));
    if (ok) {
      printf("%s: cubin of %zu bytes\n", archs[i], size);
      CHECK(size > 0);
      CHECK(size >= 4 && memcmp(cubin, "\x7f" "ELF", 4) == 0);
      /* The kernels are extern "C": their names are in the image verbatim. */
      CHECK(memmem(cubin, size, "tc_test_mma_bf16", 16) != NULL);
      /* A clean build: the header and kernel must not produce warnings. */
      CHECK_MSG(strstr(rt_cuda_compile_log(cu), "warning") == NULL, "%s", rt_cuda_compile_log(cu));
    }
    free(cubin);
  }

  /* A virtual architecture gives PTX, not a cubin: refused up front. */
  void *cubin = NULL;
  size_t size = 1;
  CHECK(!rt_cuda_compile(cu, "", "empty.cu", "compute_80", NULL, 0, &cubin, &size));
  CHECK(cubin == NULL && size == 0);
  CHECK(strstr(rt_cuda_last_error(cu), "compute_80") != NULL);

  /* NVRTC-only handles say so instead of crashing. */
  RtCuDevPtr p = 1;
  CHECK(!rt_cuda_has_device(cu));
  CHECK(rt_cuda_arch(cu) == 0);
  CHECK(!rt_cuda_malloc(cu, 64, &p));
  CHECK(p == 0);
  CHECK(strstr(rt_cuda_last_error(cu), "NVRTC only") != NULL);

  /* The target for each device generation. */
  char t[16];
  rt_cuda_target(80, t);
  CHECK(strcmp(t, "sm_80") == 0);
  rt_cuda_target(86, t);
  CHECK(strcmp(t, "sm_86") == 0);
  rt_cuda_target(90, t);
  CHECK(strcmp(t, "sm_90a") == 0);

  rt_cuda_close(cu);
  rt_cuda_close(NULL);
  return test_failures ? 1 : 0;
}
