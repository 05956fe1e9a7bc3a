/* tilert.h - the tilec runtime: load a .tile file, compile it for the CPU (C
 * backend + the system C compiler) or the GPU (CUDA backend + NVRTC), cache the
 * binary on disk, and launch kernels on DLPack tensors.
 *
 * Conventions (sqlite/libuv): opaque handles; create/destroy pairs whose
 * destroy accepts NULL; every call returns a TilertStatus; the full text of
 * the last error (compiler diagnostics, C compiler or NVRTC log included) is
 * kept in the context and read with tilert_last_error(). The library never
 * calls exit().
 *
 *   TilertContext *ctx;  tilert_context_create(NULL, &ctx);
 *   TilecDefine defs[] = {{"seq_len", "1000"}};
 *   TilertModule *mod;   tilert_module_load_file(ctx, "fa.tile", defs, 1, &mod);
 *   TilertKernel *k;     tilert_module_get_kernel(mod, "flash_attention", &k);
 *   TilertArg args[] = {tilert_arg_tensor(&q), ..., tilert_arg_f32(scale)};
 *   if (tilert_launch(k, args, 5, NULL) != TILERT_OK) puts(tilert_last_error(ctx));
 *   tilert_module_destroy(mod); tilert_context_destroy(ctx);
 */
#ifndef TILERT_H
#define TILERT_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, message) */
#define TILERT_STATUSES(X)                                               \
  X(OK, "ok")                                                            \
  X(INVALID_ARGUMENT, "invalid argument")                                \
  X(IO_ERROR, "cannot read or write a file")                             \
  X(COMPILE_ERROR, "the .tile source has errors")                        \
  X(CC_FAILED, "the C compiler failed")                                  \
  X(LOAD_FAILED, "cannot load the compiled kernel")                      \
  X(NOT_FOUND, "no such kernel")                                         \
  X(LAUNCH_MISMATCH, "arguments do not match the kernel's signature")    \
  X(NO_GPU, "no usable CUDA GPU")                                        \
  X(NVRTC_FAILED, "NVRTC failed to compile the kernel")                  \
  X(CUDA_ERROR, "a CUDA driver call failed")                             \
  X(OUT_OF_MEMORY, "out of memory")

typedef enum TilertStatus {
#define X(name, msg) TILERT_##name,
  TILERT_STATUSES(X)
#undef X
  TILERT_STATUS_COUNT
} TilertStatus;

const char *tilert_strerror(TilertStatus s);
const char *tilert_version(void);

typedef enum TilertDevice {
  TILERT_DEVICE_AUTO, /* CUDA when a GPU and the CUDA libraries are usable, else CPU */
  TILERT_DEVICE_CPU,
  TILERT_DEVICE_CUDA,
} TilertDevice;

typedef struct TilertConfig {
  TilertDevice device;
  const char *cache_dir; /* NULL: $TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec, else ~/.cache/tilec */
  bool disable_cache;    /* also when $TILEC_CACHE_DISABLE=1 */
  const char *cc;        /* C compiler for the CPU path; NULL: $TILEC_CC, else "cc" */
} TilertConfig;

typedef struct TilertContext TilertContext;
typedef struct TilertModule TilertModule;
typedef struct TilertKernel TilertKernel; /* owned by its module */

/* cfg may be NULL (all defaults). $TILEC_CC, $TILEC_CACHE_DIR and
 * $TILEC_CACHE_DISABLE are read here, once. On NO_GPU (CUDA asked for by
 * name, not usable) *out is still set, sqlite3_open style, so that
 * tilert_last_error() can say why; its loads fail the same way; destroy it.
 * A CUDA context does not open libnvrtc: its first load that misses the
 * cache does (a load that cannot compile for want of it is NO_GPU). */
TilertStatus tilert_context_create(const TilertConfig *cfg, TilertContext **out);
/* Modules may outlive the call: a context destroyed while some of its
 * modules are open goes when the last of them is destroyed (they stay
 * usable until then), so the two may be destroyed in either order. */
void tilert_context_destroy(TilertContext *ctx);
const char *tilert_last_error(const TilertContext *ctx);
/* The device modules of this context run on (AUTO resolved), and, when the
 * GPU path is off, a sentence saying why. */
TilertDevice tilert_context_device(const TilertContext *ctx);
const char *tilert_context_device_note(const TilertContext *ctx);

/* Compile (or fetch from the cache) every kernel of a .tile file with the
 * given constant bindings (like tilec -D). */
TilertStatus tilert_module_load_file(TilertContext *ctx, const char *path,
                                     const TilecDefine *defines, int ndefines,
                                     TilertModule **out);
TilertStatus tilert_module_load_string(TilertContext *ctx, const char *name,
                                       const char *text, size_t len,
                                       const TilecDefine *defines, int ndefines,
                                       TilertModule **out);
void tilert_module_destroy(TilertModule *mod);
/* True when the module's binary came from the disk cache (no compiler ran). */
bool tilert_module_from_cache(const TilertModule *mod);
/* NVRTC's log of the compiles that built the module: its warnings and
 * ptxas's advisories, which a successful build may carry -- "Potential
 * Performance Loss: wgmma.mma_async instructions are serialized ..."
 * means right results from a much slower kernel. The text is NVRTC's, with
 * the source line quoted after each `FILE(LINE): ...` message as in an
 * NVRTC_FAILED error. A cubin from the disk cache (one put there ahead of
 * time by tilert_compile_aot or tilec --emit=cubin included) comes with the
 * log of the build that stored it: the cache keeps a non-empty log beside
 * the cubin (<key>.log; at most its first 1 MiB is read back). Never NULL:
 * "" for a CPU module, when NVRTC wrote nothing, and for a cached cubin
 * without a log file (stored before the cache kept logs, or its log
 * deleted). The load's own compile comes first, as it
 * stands. A build made later, at the first launch that needs it (another
 * shape class, the cp.async or cluster build), appends its log, if it has
 * one, after a line "--- the build for shape class 1 ---" (or "--- the
 * cp.async build ---", ...); a shape class whose cubin the load's
 * background compile made finds that compile's log in the cache. Valid until the
 * next tilert_launch of one of the module's kernels (which may append) or
 * tilert_module_destroy. Where an NVIDIA driver is installed, NVRTC keeps
 * ptxas's output in the driver's compute cache (~/.nv/ComputeCache) and a
 * compile that hits it logs no ptxas line; $CUDA_CACHE_DISABLE=1 in the
 * process's environment turns that cache off (tilec --emit=cubin does). */
const char *tilert_module_compile_log(const TilertModule *mod);
/* tilec's own warnings for the module's text, as `tilec` prints them
 * (file:line:col, the source line and a caret): performance traps the
 * compiler saw, e.g. a gemm that runs as mma.sync where wgmma was one
 * define away, a pipelined loop that keeps cp.async on sm_90a. Those of
 * the load's compile (the builds made at later launches are the same
 * source for another shape class or copy path and are not repeated).
 * "" when there are none, never NULL. Valid until tilert_module_destroy. */
const char *tilert_module_warnings(const TilertModule *mod);

TilertStatus tilert_module_get_kernel(TilertModule *mod, const char *name, TilertKernel **out);
const TilecKernelInfo *tilert_kernel_info(const TilertKernel *k);

/* One launch argument: a tensor, or a scalar (converted to the parameter's
 * dtype; a float parameter takes `f`, an integer or bool one takes `i`). */
typedef enum TilertArgKind { TILERT_ARG_TENSOR, TILERT_ARG_FLOAT, TILERT_ARG_INT } TilertArgKind;
typedef struct TilertArg {
  TilertArgKind kind;
  const DLTensor *tensor;
  double f;
  int64_t i;
} TilertArg;

static inline TilertArg tilert_arg_tensor(const DLTensor *t) {
  TilertArg a = {TILERT_ARG_TENSOR, t, 0.0, 0};
  return a;
}
static inline TilertArg tilert_arg_f32(double v) {
  TilertArg a = {TILERT_ARG_FLOAT, NULL, v, 0};
  return a;
}
static inline TilertArg tilert_arg_int(int64_t v) {
  TilertArg a = {TILERT_ARG_INT, NULL, 0.0, v};
  return a;
}

/* Checks every argument against the kernel's signature (count, kind, dtype,
 * rank, shape incl. symbols shared between tensors, compact strides, device,
 * non-null data) and runs the kernel. CPU: to completion. CUDA: tensors
 * must be kDLCUDA device 0 (a host tensor is a LAUNCH_MISMATCH); stream is
 * a CUstream, or NULL for the default stream, in which case the launch is
 * waited for and a kernel fault is returned as CUDA_ERROR naming the kernel;
 * on a caller's stream the launch is asynchronous. A grid with a zero
 * dimension (e.g. n = 0) launches nothing and returns OK. */
TilertStatus tilert_launch(TilertKernel *k, const TilertArg *args, int nargs, void *stream);

/* Device memory of a CUDA context (device 0), so that a host program can
 * run on the GPU without CUDA headers or libraries of its own. A device
 * pointer is the CUdeviceptr value as a void *, what DLTensor.data holds for
 * a kDLCUDA tensor (device_id 0). Each returns NO_GPU on a CPU context (the
 * last error says why), CUDA_ERROR (OUT_OF_MEMORY for an allocation) with
 * the driver's message otherwise. Allocating 0 bytes gives NULL; freeing
 * NULL and copying 0 bytes do nothing. Copies are synchronous and ordered
 * after work on the default stream. */
TilertStatus tilert_device_alloc(TilertContext *ctx, size_t bytes, void **dptr);
TilertStatus tilert_device_free(TilertContext *ctx, void *dptr);
TilertStatus tilert_copy_to_device(TilertContext *ctx, void *dst, const void *src, size_t bytes);
TilertStatus tilert_copy_to_host(TilertContext *ctx, void *dst, const void *src, size_t bytes);

/* f16 / bf16 conversions for host programs preparing inputs (round to
 * nearest even). */
uint16_t tilert_f32_to_f16(float x);
float tilert_f16_to_f32(uint16_t h);
uint16_t tilert_f32_to_bf16(float x);
float tilert_bf16_to_f32(uint16_t h);

/* ---- ahead-of-time compilation (rt_aot.c) ----
 * Compiles every kernel of a .tile source for GPU target `arch` ("sm_80",
 * "sm_86", "sm_90a"; sm_90 and newer get the wgmma/TMA code path) with
 * NVRTC, on any machine: no GPU or driver is needed, only libnvrtc (a context
 * of any device will do; libnvrtc is opened only when something compiles:
 * a cubin found in the cache needs none).
 * CUBIN: the cubin a load on a GPU of that arch would build, looked up in
 * and, on a miss, stored into the context's cache under the key that load
 * computes. So running this on a context whose cache directory the program
 * later uses (same tilec build, NVRTC version and $TILEC_NVRTC_FLAGS, and
 * the same `name`: tilert_module_load_file passes the path as given) makes
 * that program's first load a cache hit: no NVRTC at run time.
 * *from_cache (may be NULL) says whether the cache had it already.
 * PTX: the PTX text for the virtual arch (compute_90a), not cached.
 * *binary is malloc'd (release it with free()); NO_GPU when libnvrtc is
 * missing and the binary must be built, NVRTC_FAILED with the log as for a
 * load. The log of a build that succeeds is tilert_compile_aot_log's. */
typedef enum TilertBinaryKind { TILERT_BINARY_CUBIN, TILERT_BINARY_PTX } TilertBinaryKind;
TilertStatus tilert_compile_aot(TilertContext *ctx, const char *name, const char *text, size_t len,
                                const TilecDefine *defines, int ndefines, const char *arch,
                                TilertBinaryKind kind, void **binary, size_t *size,
                                bool *from_cache);
/* The same for the build of shape class `shape_class` (bit i: the module's
 * shape choice #i holds; docs/language.md "Shape choices"): the cubin a
 * launch whose shapes choose that class would build at run time, under the
 * same key. tilert_compile_aot is this with class 0, the build a load makes. */
TilertStatus tilert_compile_aot_class(TilertContext *ctx, const char *name, const char *text, size_t len,
                                      const TilecDefine *defines, int ndefines, unsigned shape_class,
                                      const char *arch, TilertBinaryKind kind, void **binary, size_t *size,
                                      bool *from_cache);
/* NVRTC's log of the last tilert_compile_aot* call on ctx, in the form of
 * tilert_module_compile_log (for a cubin, ptxas's advisories included; PTX
 * runs no ptxas). When the call found its cubin in the cache, the log the
 * build that stored it kept there (as for a module). Never NULL: "" when
 * the call failed before NVRTC ran, NVRTC wrote nothing, or a cached cubin
 * has no log file; on NVRTC_FAILED it is the log that tilert_last_error
 * quotes. Valid until the next
 * tilert_compile_aot* call on ctx or tilert_context_destroy. */
const char *tilert_compile_aot_log(const TilertContext *ctx);

#ifdef __cplusplus
}
#endif
#endif
