/* rt_cpu.h - FLOOR 2 of 3 of libtilert, the CPU column: a .tile compiled to
 * C, built by the system C compiler into a shared object (or fetched from
 * the cache), dlopen'ed, and its kernels called on host tensors.
 *
 *   rt_cpu.c   load (compile step, cache, dlopen), launch, unload
 *   rt_cc.c    runs the C compiler (posix_spawnp, output kept for errors)
 *
 * Calls down into rt_base.h (floor 1) only; never into tilert.c (floor 3)
 * nor the GPU column (rt_gpu.h). See rt_base.h for the whole table. */
#ifndef RT_CPU_H
#define RT_CPU_H

#include "rt_base.h"

/* ---- loading and launching (rt_cpu.c) ---- */

/* tilec_compile (emit C, target CPU), then rt_cpu_module_from_c.
 * `front_end_done` (may be NULL; RtFrontEndHook, rt_base.h) is called in
 * between: when it returns false the load stops there, with TILERT_OK and
 * *out NULL (no cache lookup, no C compiler). */
TilertStatus rt_cpu_load(TilertContext *ctx, const char *name, const char *text, size_t len,
                         const TilecDefine *defines, int ndefines, unsigned shape_class,
                         RtFrontEndHook front_end_done, void *hook_arg, TilertModule **out);
/* Builds (or fetches from the cache) the shared object for `c_src`, dlopens
 * it and resolves every kernel's entry. `ir` is the specialized IR text for
 * the key. Takes ownership of `result` (may be NULL), even on failure. */
TilertStatus rt_cpu_module_from_c(TilertContext *ctx, const char *name, const char *c_src,
                                  size_t c_len, const char *ir,
                                  const TilecKernelInfo *const *kernels, int nkernels,
                                  TilecResult *result, TilertModule **out);
/* Validates against kDLCPU and calls the kernel's entry (ABI in tilec.h).
 * `checked` (may be NULL): the dynamic symbols' values from an rt_validate of
 * args against k's signature (rt_same_signature) that the caller has run and
 * passed; the launch then does not check the arguments again. */
TilertStatus rt_cpu_launch(TilertKernel *k, const TilertArg *args, int nargs, const int64_t *checked);
/* dlcloses the module's shared object, if any. */
void rt_cpu_module_unload(TilertModule *mod);
/* Key for one build: SHA-256 over the version, target, compiler command and
 * flags, the specialized IR and the C text. out: 64 hex digits. */
void rt_cpu_cache_key(const char *cc, const char *ir, const char *c_src, size_t c_len,
                      char out[65]);

/* ---- the C compiler (rt_cc.c) ---- */

/* Fixed flags after the user's command; part of the cache key. */
#define RT_CC_FLAGS "-std=c11 -O2 -shared -fPIC"
#define RT_CC_LIBS "-lm"

/* Runs `cc` (a command line split on blanks, quotes respected) on `c_path`
 * producing `so_path`. On failure returns CC_FAILED (or IO_ERROR) with the
 * command and the compiler's output in ctx's last error. */
TilertStatus rt_cc_build(TilertContext *ctx, const char *cc, const char *c_path,
                         const char *so_path);
/* Splits a command line into a NULL-terminated argv (one malloc'd block). */
char **rt_split_command(const char *cmd, int *argc);

#endif
