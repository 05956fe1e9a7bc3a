/* rt_aot.c - ahead-of-time compilation: a .tile file to a cubin (or PTX) for
 * a named GPU target, with no GPU (tilert.h: tilert_compile_aot).
 *
 * How: the same two steps as a load on a GPU context (rt_gpu.c), minus the
 * driver. The front end runs for the target a GPU of that arch gets
 * (sm_90 and newer: the sm_90a code path, else sm_80), then rt_gpu_cubin
 * looks the cubin up in the context's cache or runs NVRTC and publishes the
 * entry. Both are the functions rt_gpu_load calls, so the entry has the key a
 * later load on a GPU of that arch computes (same tilec, NVRTC version,
 * options and $TILEC_NVRTC_FLAGS, and the same `name`, which the generated
 * text quotes): populating a cache ahead of time is this call on a context
 * whose cache directory is the one the program will use. A context without
 * NVRTC (a CPU context) gets an NVRTC-only handle for the call.
 * PTX is never cached: it is NVRTC's text for the virtual arch
 * (compute_90a), for tools and for drivers newer than the cubin's, built
 * with the cubin's options. Each call keeps NVRTC's log in the context
 * (tilert_compile_aot_log): ptxas advisories come with a successful build. */
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "rt_base.h"
#include "rt_gpu.h"

/* "sm_90a" -> 90; 0 when arch is not sm_<digits>[a|f]. */
static int aot_arch_number(const char *arch) {
  if (!arch || strncmp(arch, "sm_", 3) != 0) return 0;
  char *end = NULL;
  long n = strtol(arch + 3, &end, 10);
  if (end == arch + 3 || n < 10 || n > 1000) return 0;
  if (*end == 'a' || *end == 'f') end++;
  return *end == '\0' ? (int)n : 0;
}

TilertStatus tilert_compile_aot(TilertContext *ctx, const char *name, const char *text, size_t len,
                                const TilecDefine *defines, int ndefines, const char *arch,
                                TilertBinaryKind kind, void **binary, size_t *size,
                                bool *from_cache) {
  return tilert_compile_aot_class(ctx, name, text, len, defines, ndefines, 0, arch, kind, binary, size,
                                  from_cache);
}

TilertStatus tilert_compile_aot_class(TilertContext *ctx, const char *name, const char *text, size_t len,
                                      const TilecDefine *defines, int ndefines, unsigned shape_class,
                                      const char *arch, TilertBinaryKind kind, void **binary, size_t *size,
                                      bool *from_cache) {
  if (!ctx) return TILERT_INVALID_ARGUMENT;
  free(ctx->aot_log); /* the log is this call's, or none */
  ctx->aot_log = NULL;
  if (binary) *binary = NULL;
  if (size) *size = 0;
  bool hit_unused;
  if (!from_cache) from_cache = &hit_unused; /* documented as optional; rt_gpu_cubin writes it */
  *from_cache = false;
  if (!binary || !size || (!text && len))
    return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_compile_aot: NULL argument");
  if (ndefines < 0 || (ndefines > 0 && !defines))
    return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_compile_aot: bad defines");
  if (kind != TILERT_BINARY_CUBIN && kind != TILERT_BINARY_PTX)
    return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_compile_aot: unknown binary kind %d",
                    (int)kind);
  int cc = aot_arch_number(arch);
  if (cc < 80)
    return rt_error(ctx, TILERT_INVALID_ARGUMENT,
                    "tilert_compile_aot: '%s' is not a GPU target tilec supports (sm_80 or newer, "
                    "e.g. sm_80, sm_86, sm_90a)",
                    arch ? arch : "(null)");
  if (!name) name = "<string>";

  /* NVRTC: the context's own handle, or one made for this call (lazy: a
   * cubin found in the cache needs no libnvrtc). */
  RtCuda *own = NULL;
  if (!ctx->cu) {
    char why[256] = "";
    own = rt_cuda_open(RT_CUDA_NVRTC_LAZY, 0, why, sizeof why);
    if (!own)
      return rt_error(ctx, TILERT_NO_GPU, "%s: ahead-of-time compilation needs NVRTC: %s", name,
                      why);
    ctx->cu = own;
  }
  TilecTarget target = cc >= 90 ? TILEC_TARGET_SM90A : TILEC_TARGET_SM80;
  TilecResult *res = NULL;
  TilertStatus st = rt_compile_tile(ctx, name, text ? text : "", len, defines, ndefines,
                                    TILEC_EMIT_CUDA, target, RT_BUILD_DEFAULT, shape_class, &res);
  if (st == TILERT_OK && kind == TILERT_BINARY_CUBIN) {
    st = rt_gpu_cubin(ctx, name, tilec_result_output(res), tilec_result_output_size(res),
                      tilec_result_specialized_ir(res), arch, false, binary, size, from_cache,
                      &ctx->aot_log);
  } else if (st == TILERT_OK) {
    char *ptx = NULL;
    st = rt_gpu_ptx(ctx, name, tilec_result_output(res), tilec_result_output_size(res), arch, &ptx, size,
                    &ctx->aot_log);
    *binary = ptx;
  }
  tilec_result_destroy(res);
  if (own) {
    ctx->cu = NULL;
    rt_cuda_close(own);
  }
  return st;
}

const char *tilert_compile_aot_log(const TilertContext *ctx) {
  return ctx && ctx->aot_log ? ctx->aot_log : "";
}
