/* rt_gpu.h - FLOOR 2 of 3 of libtilert, the GPU column: a .tile compiled to
 * CUDA, built by NVRTC into a cubin (or fetched from the cache), loaded on
 * device 0 and launched; device memory.
 *
 *   rt_gpu.c              contexts on a GPU, load, cubins, launch, memory
 *   rt_gpu_nvrtc.c        the NVRTC version of a cache key without opening
 *                         libnvrtc (the cache directory's stamp)
 *   cuda/cuda_driver.c    the dlopen'ed libcuda + libnvrtc (cuda_driver.h),
 *                         with the embedded device headers it generates
 *
 * Calls down into rt_base.h (floor 1) only; never into tilert.c (floor 3)
 * nor the CPU column (rt_cpu.h). See rt_base.h for the whole table. */
#ifndef RT_GPU_H
#define RT_GPU_H

#include "rt_base.h"

/* NVRTC options of every build (part of the cache key). */
extern const char *const rt_gpu_nvrtc_opts[];
extern const int rt_gpu_nvrtc_nopts;

/* Opens device 0 into ctx->cu (libnvrtc waits for the first compile). On
 * success ctx->note describes the device ("CUDA device 0: <name> (sm_90);
 * kernels built for sm_90a by NVRTC"); on failure writes why (one sentence). */
bool rt_gpu_open(TilertContext *ctx, char *why, size_t why_cap);
/* The arch NVRTC builds for on ctx's device ("sm_90a"), into arch[16];
 * false without a usable device. */
bool rt_gpu_arch_name(const TilertContext *ctx, char arch[16]);
/* The SM count of ctx's device (the builtin sm_count of shape choices), 0
 * without a usable device. */
int rt_gpu_sm_count(const TilertContext *ctx);
/* Releases ctx->cu (the context's modules are gone by then). */
void rt_gpu_close(TilertContext *ctx);
/* tilec_compile (emit CUDA for the device's arch), cubin from the cache or
 * NVRTC, load, resolve every kernel. `front_end_done` (may be NULL;
 * RtFrontEndHook, rt_base.h) is called once the front end has run, before
 * the cache or NVRTC: when it returns false the load stops there, with
 * TILERT_OK and *out NULL. */
TilertStatus rt_gpu_load(TilertContext *ctx, const char *name, const char *text, size_t len,
                         const TilecDefine *defines, int ndefines, unsigned shape_class,
                         RtFrontEndHook front_end_done, void *hook_arg, TilertModule **out);
/* The cubin for CUDA text `src` (NUL-terminated, len = strlen): <key>.cubin from the cache when it is
 * there and verified (*from_cache = true, NVRTC does not run), else NVRTC
 * (ctx->cu may be an NVRTC-only handle) and, with a usable cache, the entry
 * published; while another thread of the process builds the same entry,
 * this one waits for it and looks again (rt_gpu.c: the prebuild threads of
 * two shape classes with the same code run NVRTC once). force_build skips
 * the lookup (a cached cubin did not load).
 * NVRTC_FAILED leaves `name`, the target and the annotated log in the last
 * error. *cubin is malloc'd. *log (log may be NULL): NVRTC's annotated log
 * when NVRTC ran, failing or not, and wrote one (rt_gpu_log_copy); on a
 * hit, the log the entry's build stored beside it (rt_cache_read_log);
 * else NULL. The caller frees it. A published entry stores NVRTC's log
 * whether or not the caller asked for it. */
TilertStatus rt_gpu_cubin(TilertContext *ctx, const char *name, const char *src, size_t len,
                          const char *ir, const char *arch, bool force_build, void **cubin,
                          size_t *size, bool *from_cache, char **log);
/* The PTX text of CUDA text `src` (NUL-terminated, len = strlen) for the
 * virtual arch of `arch` ("sm_90a" -> compute_90a), with a cubin's options
 * and $TILEC_CUDA_OVERRIDE as rt_gpu_cubin has them; never cached. *ptx is
 * malloc'd and NUL-terminated, *size counts the text only. NO_GPU without
 * libnvrtc, NVRTC_FAILED with the log; *log as rt_gpu_cubin's. */
TilertStatus rt_gpu_ptx(TilertContext *ctx, const char *name, const char *src, size_t len, const char *arch,
                        char **ptx, size_t *size, char **log);
/* A malloc'd copy of the log of cu's last compile (rt_cuda_compile_log),
 * NULL when it is empty or memory is short: what a module or an
 * ahead-of-time build keeps (tilert_module_compile_log). */
char *rt_gpu_log_copy(const struct RtCuda *cu);
/* The NVRTC version for a cache lookup in dir (rt_gpu_nvrtc.c): libnvrtc's
 * own when it is open, else the one dir's stamp records while the stamp
 * still holds (same $TILEC_NVRTC_LIB, $LD_LIBRARY_PATH, /etc/ld.so.cache
 * and library file), else libnvrtc is opened for it and the stamp written.
 * When libnvrtc cannot be opened (the reason in rt_cuda_last_error): the
 * newest stamp's version as it stands (cubins shipped in dir still hit),
 * 0 without one. */
int rt_gpu_nvrtc_version(struct RtCuda *cu, const char *dir);
/* Records the open libnvrtc (path, file identity, version) as dir's stamp;
 * nothing when it is already there or cannot be written. */
void rt_gpu_nvrtc_stamp(struct RtCuda *cu, const char *dir);
/* Key for a CUDA build: SHA-256 over the format, tilec_version(), "cuda",
 * the arch ("sm_90a"), the NVRTC version, the options, every embedded
 * device header, the specialized IR and the CUDA text. */
void rt_gpu_cache_key(const char *arch, int nvrtc_version, const char *const *opts, int nopts,
                      const char *ir, const char *src, size_t src_len, char out[65]);
/* Validates against kDLCUDA:0, evaluates the grid, launches on `stream`
 * (NULL: the default stream, then waits and reports a kernel fault).
 * `checked` (may be NULL): the dynamic symbols' values from an rt_validate of
 * args against k's signature (rt_same_signature) that the caller has run and
 * passed; the launch then does not check the arguments again. */
TilertStatus rt_gpu_launch(TilertKernel *k, const TilertArg *args, int nargs, const int64_t *checked,
                           void *stream);
/* The blocks of a persistent launch of `tiles` tiles on `slots` resident
 * slots, `iters` k-iterations each (tilec_result_stream_k_iters_of; -1
 * where unknown): min(tiles, slots), or for tiles of RT_BALANCE_MIN_ITERS
 * or more the fewest that keep the rounds of tiles per block (rt_gpu.c
 * says what was measured). */
enum { RT_BALANCE_MIN_ITERS = 32 };
int64_t rt_persistent_blocks(int64_t tiles, int64_t slots, int64_t iters);
/* Unloads the module's cubin, if any. */
void rt_gpu_module_unload(TilertModule *mod);
/* "scale.tile" -> "scale.cu" (base name, .tile replaced): the name NVRTC's
 * log uses for the generated source. out holds cap bytes. */
void rt_gpu_source_name(const char *tile_name, char *out, size_t cap);

/* The public device memory calls (tilert_device_alloc, _free,
 * tilert_copy_to_device, _to_host) are defined in rt_gpu.c too: they are
 * this path's own entries and need nothing from the floor above. */

#endif
