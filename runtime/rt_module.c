/* rt_module.c - a module's shell (floor 1, rt_base.h): the TilertModule
 * both paths fill, with its kernel array and the compiler result it owns.
 *
 * Each path makes the shell with rt_module_new, loads its binary into its
 * own slots (CPU: dl and the kernels' fn; CUDA: cumod and cufn), and on
 * failure releases that binary itself before rt_module_free. So freeing a
 * half-built module never needs the public tilert_module_destroy above.
 * The shell also keeps the NVRTC log of the module's builds
 * (tilert_module_compile_log): the GPU path sets its load's, and each build
 * made later appends its own under a header line (rt_module_add_log). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_base.h"

TilertModule *rt_module_new(TilertContext *ctx, TilecResult *result, int nkernels) {
  TilertModule *mod = calloc(1, sizeof *mod);
  if (mod) mod->kernels = calloc(nkernels > 0 ? (size_t)nkernels : 1, sizeof *mod->kernels);
  if (!mod || !mod->kernels) {
    free(mod);
    tilec_result_destroy(result);
    rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  mod->ctx = ctx;
  mod->result = result;
  mod->nkernels = nkernels;
  return mod;
}

void rt_module_free(TilertModule *mod) {
  if (!mod) return;
  tilec_result_destroy(mod->result);
  free(mod->compile_log);
  free(mod->kernels);
  free(mod);
}

void rt_module_add_log(TilertModule *mod, const char *log, const char *fmt, ...) {
  if (!log || !*log) return;
  TilertModule *to = mod->log_to ? mod->log_to : mod;
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *old = to->compile_log ? to->compile_log : "";
  size_t n = strlen(old);
  const char *sep = n && old[n - 1] != '\n' ? "\n" : ""; /* each header on a line of its own */
  size_t cap = n + strlen(sep) + strlen(what) + strlen(log) + 16;
  char *joined = malloc(cap);
  if (!joined) return;
  snprintf(joined, cap, "%s%s--- %s ---\n%s", old, sep, what, log);
  free(to->compile_log);
  to->compile_log = joined;
}

RtSource *rt_source_keep(const char *name, const char *text, size_t len, const TilecDefine *defines,
                         int ndefines, unsigned shape_class) {
  RtSource *src = calloc(1, sizeof *src);
  if (!src) return NULL;
  src->shape_class = shape_class;
  src->len = len;
  src->name = strdup(name);
  src->text = malloc(len + 1);
  src->defines = calloc(ndefines > 0 ? (size_t)ndefines : 1, sizeof *src->defines);
  bool ok = src->name && src->text && src->defines;
  if (src->text) {
    memcpy(src->text, text, len);
    src->text[len] = '\0';
  }
  for (int i = 0; ok && i < ndefines; i++, src->ndefines++) {
    src->defines[i].name = strdup(defines[i].name);
    src->defines[i].value = strdup(defines[i].value);
    ok = src->defines[i].name && src->defines[i].value;
  }
  if (!ok) {
    if (src->ndefines < ndefines) src->ndefines++; /* the pair that failed half-way */
    rt_source_free(src);
    return NULL;
  }
  return src;
}

void rt_source_free(RtSource *src) {
  if (!src) return;
  for (int i = 0; i < src->ndefines; i++) {
    free((char *)src->defines[i].name);
    free((char *)src->defines[i].value);
  }
  free(src->defines);
  free(src->name);
  free(src->text);
  free(src);
}
