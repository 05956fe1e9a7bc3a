/* test_nvrtc_errors.c - a broken kernel fails to compile, and the error text
 * holds NVRTC's full log with each error followed by the source line it
 * names (what a tilec user sees when generated CUDA does not build).
 * Needs libnvrtc, no GPU; exit 77 (skip) without it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "cuda_test.h"

static const char broken[] =
    "#include \"tilec_device.cuh\"\n"                           /* 1 */
    "extern \"C\" __global__ void k(float *out) {\n"            /* 2 */
    "  float v = tc_exp2(out[0]);\n"                            /* 3 */
    "  out[1] = v + undefined_name;\n"                          /* 4 */
    "  unsigned a[4], b[2];\n"                                  /* 5 */
    "  tc_mma_m16n8k16_f16f32(out, a, b, 7);\n"                 /* 6 */
    "}\n";

/* True when the log line starting with `msg` is followed by a line that
 * contains `src_line`. */
static bool line_after(const char *log, const char *msg, const char *src_line) {
  const char *m = strstr(log, msg);
  if (!m) return false;
  const char *next = strchr(m, '\n');
  if (!next) return false;
  next++;
  const char *end = strchr(next, '\n');
  const char *hit = strstr(next, src_line);
  return hit && (!end || hit < end);
}

/* The log annotation on its own, with logs written here: exact output. */
static void check_annotation(void) {
  const char *src = "first\n  b = 1;\nthird";
  char *out = rt_cuda_annotate_log("x.cu(2): error: bad b\n1 error\n", "x.cu", src);
  CHECK(out && strcmp(out, "x.cu(2): error: bad b\n      2 |   b = 1;\n1 error\n") == 0);
  free(out);
  /* NVRTC quoted the line itself: nothing added. */
  const char *quoted = "x.cu(2): error: bad b\n    b = 1;\n        ^\n";
  out = rt_cuda_annotate_log(quoted, "x.cu", src);
  CHECK(out && strcmp(out, quoted) == 0);
  free(out);
  /* Lines of the embedded header are quoted too; unknown files and line
   * numbers past the end are left alone. */
  out = rt_cuda_annotate_log("tilec_device.cuh(1): warning: w\ny.cu(2): error\nx.cu(9): error\n",
                             "x.cu", src);
  const char *h = rt_cuda_device_header("tilec_device.cuh");
  char want[512];
  const char *eol = h ? strchr(h, '\n') : NULL;
  snprintf(want, sizeof want, "tilec_device.cuh(1): warning: w\n      1 | %.*s\ny.cu(2): error\nx.cu(9): error\n",
           eol ? (int)(eol - h) : 0, h ? h : "");
  CHECK_MSG(out && strcmp(out, want) == 0, "got:\n%s", out ? out : "(null)");
  free(out);
}

int main(void) {
  check_annotation();
  char why[512];
  RtCuda *cu = rt_cuda_open(RT_CUDA_NVRTC_ONLY, 0, why, sizeof why);
  if (!cu) {
    printf("skipped: %s\n", why);
    return TEST_SKIP;
  }
  void *cubin = (void *)1;
  size_t size = 1;
  bool ok = rt_cuda_compile(cu, broken, "broken.cu", "sm_80", NULL, 0, &cubin, &size);
  const char *err = rt_cuda_last_error(cu);
  printf("--- error text ---\n%s------------------\n", err);
  CHECK(!ok);
  CHECK(cubin == NULL && size == 0);
  CHECK(strstr(err, "NVRTC failed to compile broken.cu for sm_80") != NULL);
  /* Both errors, by line, each followed on the next line by the source line
   * it names (quoted by NVRTC itself, or added by the runtime as "  N | "). */
  CHECK(strstr(err, "undefined_name\" is undefined") != NULL);
  CHECK(line_after(err, "broken.cu(4): error", "out[1] = v + undefined_name;"));
  CHECK(line_after(err, "broken.cu(6): error", "tc_mma_m16n8k16_f16f32(out, a, b, 7);"));
  /* The log is also kept on its own. */
  CHECK(strstr(rt_cuda_compile_log(cu), "broken.cu(4): error") != NULL);

  /* A good compile afterwards succeeds and clears nothing it should not. */
  ok = rt_cuda_compile(cu,
                       "#include \"tilec_device.cuh\"\n"
                       "extern \"C\" __global__ void k(float *o) { o[0] = tc_exp2(o[0]); }\n",
                       "good.cu", "sm_80", NULL, 0, &cubin, &size);
  CHECK_MSG(ok, "%s", rt_cuda_last_error(cu));
  CHECK(ok && size > 0);
  free(ok ? cubin : NULL);
  rt_cuda_close(cu);
  return test_failures ? 1 : 0;
}
