/* rt_module.c - a module's shell (floor 1, rt_base.h): the TilertModule
 * both paths fill, with its kernel array and the compiler result it owns.
 *
 * Each path makes the shell with rt_module_new, loads its binary into its
 * own slots (CPU: dl and the kernels' fn; CUDA: cumod and cufn), and on
 * failure releases that binary itself before rt_module_free. So freeing a
 * half-built module never needs the public tilert_module_destroy above. */
#include <stdlib.h>

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
  free(mod->kernels);
  free(mod);
}
