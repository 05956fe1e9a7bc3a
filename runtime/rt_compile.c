/* rt_compile.c - the compile step both paths start with (floor 1,
 * rt_base.h): tilec_compile on the .tile text for the path's emit and
 * target, its failure turned into a status and the diagnostics. */
#include <stdlib.h>
#include <string.h>

#include "rt_base.h"

TilertStatus rt_compile_tile(TilertContext *ctx, const char *name, const char *text, size_t len,
                             const TilecDefine *defines, int ndefines, TilecEmit emit,
                             TilecTarget target, RtBuild build, unsigned shape_class,
                             TilecResult **out) {
  *out = NULL;
  TilecOptions opt;
  tilec_options_init(&opt);
  opt.emit = emit;
  opt.target = target;
  opt.defines = defines;
  opt.ndefines = ndefines;
  opt.no_tma = build == RT_BUILD_NO_TMA;
  opt.shape_class = shape_class;
  /* 2-block clusters (TilecOptions.cluster_multicast); the generated source
   * differs, so the cache keeps the builds apart. */
  const char *cluster = getenv("TILEC_CLUSTER_MULTICAST");
  opt.cluster_multicast = build == RT_BUILD_CLUSTER || (cluster && strcmp(cluster, "1") == 0);
  /* Tile indices through multipliers (TilecOptions.fast_division, on by
   * default); $TILEC_FAST_DIVISION=0 builds hardware division instead. */
  const char *fastdiv = getenv("TILEC_FAST_DIVISION");
  opt.fast_division = !(fastdiv && strcmp(fastdiv, "0") == 0);
  /* Stream-K for a persistent GEMM's last wave (TilecOptions.stream_k):
   * $TILEC_STREAM_K=1 for every build; otherwise only the build
   * rt_gpu_launch makes for thin last waves (none with =0). */
  const char *stream_k = getenv("TILEC_STREAM_K");
  opt.stream_k = build == RT_BUILD_STREAM_K || (stream_k && strcmp(stream_k, "1") == 0);
  TilecResult *res = NULL;
  int rc = tilec_compile(name, text, len, &opt, &res);
  if (!res) return rt_error(ctx, TILERT_OUT_OF_MEMORY, "%s: the compiler returned no result", name);
  if (rc != 0) {
    const char *diag = tilec_result_diagnostics(res);
    TilertStatus st =
        rc == 2 ? rt_error(ctx, TILERT_INVALID_ARGUMENT, "%s: bad compile options\n%s", name,
                           diag ? diag : "")
        : diag && *diag ? rt_error(ctx, TILERT_COMPILE_ERROR, "%s", diag)
                        : rt_error(ctx, TILERT_COMPILE_ERROR, "%s: compilation failed", name);
    tilec_result_destroy(res);
    return st;
  }
  *out = res;
  return TILERT_OK;
}
