/* test_examples_nvrtc.c - every example's CUDA output compiles with NVRTC.
 *
 *   test_examples_nvrtc FILE.tile TARGET [NAME=VALUE ...] [--expect-error=TEXT]
 *
 * Runs the compiler library (emit cuda, TARGET sm_80 or sm_90a) with the
 * given -D bindings, then NVRTC in NVRTC-only mode (no GPU needed) and
 * asserts a non-empty cubin. Exits 77 (skip) when libnvrtc cannot be opened.
 * --expect-error=TEXT: the compilation must instead fail with a located
 * error containing TEXT (a target limit; NVRTC is not needed then).
 *
 * The compile log must not report a "Potential Performance Loss" (ptxas
 * C7510-C7515: wgmma serialized, e.g. because a non-wgmma instruction touches
 * an accumulator while its wgmma is in flight): the kernel would still be
 * right but run its tensor cores one instruction at a time, which only a GPU
 * benchmark would otherwise notice. --allow-serialized-wgmma lets a case
 * through that serializes on purpose.
 * --no-fast-division: TilecOptions.fast_division off (it is on by default);
 * --expect-text=TEXT / --expect-no-text=TEXT: the generated CUDA must
 * (must not) contain TEXT (e.g. that the option took effect). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/cuda/cuda_driver.h"
#include "tilec.h"

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(buf);
    return NULL;
  }
  fclose(f);
  buf[n] = '\0';
  *len = (size_t)n;
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FILE.tile sm_80|sm_90a [NAME=VALUE...]\n", argv[0]);
    return 2;
  }
  const char *path = argv[1], *arch = argv[2], *expect = NULL, *expect_text = NULL, *expect_no_text = NULL;
  bool allow_serialized = false, fast_division = true;
  for (int i = 3; i < argc; i++) {
    if (strncmp(argv[i], "--expect-error=", 15) == 0) expect = argv[i] + 15;
    if (strcmp(argv[i], "--allow-serialized-wgmma") == 0) allow_serialized = true;
    if (strcmp(argv[i], "--no-fast-division") == 0) fast_division = false;
    if (strncmp(argv[i], "--expect-text=", 14) == 0) expect_text = argv[i] + 14;
    if (strncmp(argv[i], "--expect-no-text=", 17) == 0) expect_no_text = argv[i] + 17;
  }
  char why[256] = "";
  /* With a driver installed, NVRTC reuses ptxas output from its compute
   * cache, and a cached compile's log has no ptxas lines: the advisory
   * check below would pass on a rerun (docs/cuda-runtime.md, "The compile log"). */
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  RtCuda *cu = expect ? NULL : rt_cuda_open(RT_CUDA_NVRTC_ONLY, 0, why, sizeof why);
  if (!cu && !expect) {
    printf("SKIP: NVRTC unavailable: %s\n", why);
    return 77;
  }
  size_t len = 0;
  char *text = read_all(path, &len);
  if (!text) {
    fprintf(stderr, "FAIL: cannot read %s\n", path);
    return 1;
  }
  TilecDefine defs[16];
  int ndefs = 0;
  char *owned[16];
  for (int i = 3; i < argc && ndefs < 16; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq || argv[i][0] == '-') continue;
    owned[ndefs] = strndup(argv[i], (size_t)(eq - argv[i]));
    defs[ndefs].name = owned[ndefs];
    defs[ndefs++].value = eq + 1;
  }
  TilecOptions o;
  tilec_options_init(&o);
  o.emit = TILEC_EMIT_CUDA;
  o.target = strcmp(arch, "sm_90a") == 0 ? TILEC_TARGET_SM90A : TILEC_TARGET_SM80;
  o.defines = defs;
  o.ndefines = ndefs;
  o.fast_division = fast_division;
  TilecResult *r = NULL;
  int rc = tilec_compile(path, text, len, &o, &r);
  int status = 0;
  if (expect) {
    /* The error must be reported at a location (FILE:LINE:COL: error: ...). */
    const char *diags = tilec_result_diagnostics(r);
    char located[512];
    snprintf(located, sizeof located, "%s:", path);
    if (rc == 0 || !diags || !strstr(diags, expect) || !strstr(diags, located) || !strstr(diags, ": error: ")) {
      fprintf(stderr, "FAIL: expected a located error containing \"%s\" for %s, got rc %d:\n%s\n", expect, arch, rc,
              diags ? diags : "(none)");
      status = 1;
    } else {
      printf("ok: %s for %s fails as expected:\n%s", path, arch, diags);
    }
  } else if (rc != 0) {
    fprintf(stderr, "FAIL: tilec_compile returned %d:\n%s", rc, tilec_result_diagnostics(r));
    status = 1;
  } else if (expect_text && !strstr(tilec_result_output(r), expect_text)) {
    fprintf(stderr, "FAIL: the generated CUDA (%s) has no \"%s\"\n", arch, expect_text);
    status = 1;
  } else if (expect_no_text && strstr(tilec_result_output(r), expect_no_text)) {
    fprintf(stderr, "FAIL: the generated CUDA (%s) has \"%s\"\n", arch, expect_no_text);
    status = 1;
  } else {
    void *cubin = NULL;
    size_t size = 0;
    if (!rt_cuda_compile(cu, tilec_result_output(r), "example.cu", arch, NULL, 0, &cubin, &size) || size == 0) {
      fprintf(stderr, "FAIL: NVRTC (%s):\n%s\n", arch, rt_cuda_last_error(cu));
      status = 1;
    } else if (!allow_serialized && strstr(rt_cuda_compile_log(cu), "Potential Performance Loss")) {
      fprintf(stderr, "FAIL: ptxas serialized wgmmas (%s):\n%s\n", arch, rt_cuda_compile_log(cu));
      status = 1;
    } else {
      const TilecKernelInfo *k = tilec_result_kernel(r, 0);
      printf("ok: %s for %s: cubin %zu bytes, %d threads, %d bytes of shared memory\n", path, arch, size,
             k ? k->threads : 0, k ? k->shared_bytes : 0);
    }
    free(cubin);
  }
  tilec_result_destroy(r);
  for (int i = 0; i < ndefs; i++) free(owned[i]);
  free(text);
  rt_cuda_close(cu);
  return status;
}
