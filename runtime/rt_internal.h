/* rt_internal.h - pieces of libtilert shared between its files and its
 * white-box tests (tests/runtime/): SHA-256, the disk cache, the C compiler
 * driver, the CUDA path (rt_gpu.c), launch validation, and the handle
 * structs.
 *
 * None of it is exported from libtilert.so (its version script exports
 * tilert_* and tilec_* only); the tests link the object files directly. */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include <stdarg.h>

#include "cuda_driver.h"
#include "tilert.h"

/* ---- handles ---- */

struct TilertContext {
  TilertDevice device;     /* resolved (AUTO is never stored) */
  bool device_ok;          /* false: CUDA was asked for and is not usable */
  const char *device_note; /* static text, or note[] */
  char note[384];
  RtCuda *cu;              /* device 0 and NVRTC when device == CUDA && device_ok; the
                              tests may attach an NVRTC-only handle to a CPU context */
  unsigned nvrtc_runs;     /* NVRTC compilations so far: a cache hit adds none */
  char *cache_dir;         /* resolved directory, or NULL when there is none */
  bool cache_disabled;
  bool cache_warned;       /* the "cache unusable" warning went out once */
  char *cc;                /* C compiler command line (may hold arguments) */
  char *last_error;
};

typedef void (*RtEntry)(void **args, const int64_t *dyn);

struct TilertKernel {
  TilertModule *mod;
  const TilecKernelInfo *info;
  int index;          /* in the module (and in its TilecResult) */
  RtEntry fn;         /* CPU */
  RtCuFunction cufn;  /* CUDA */
  struct RtTmaSlot *tma_slots; /* CUDA: its TMA descriptors of the last launch (rt_tma.h) */
};

struct TilertModule {
  TilertContext *ctx;
  TilecResult *result; /* owns the TilecKernelInfo the kernels point at (NULL in tests);
                          CUDA launches evaluate their grid with it */
  void *dl;            /* CPU: the dlopen'ed shared object */
  RtCuModule cumod;    /* CUDA: the loaded cubin */
  bool from_cache;
  int nkernels;
  TilertKernel *kernels;
};

/* ---- compiling and launching (tilert.c) ---- */

/* tilec_compile with the given emit/target; a failure becomes COMPILE_ERROR
 * (the diagnostics) or INVALID_ARGUMENT (bad -D names). */
TilertStatus rt_compile_tile(TilertContext *ctx, const char *name, const char *text, size_t len,
                             const TilecDefine *defines, int ndefines, TilecEmit emit,
                             TilecTarget target, TilecResult **out);

/* A scalar argument converted to its parameter's dtype (the bytes the
 * generated code reads: float for f32, uint16_t bits for f16/bf16, ...). */
typedef union RtScalar {
  float f32;
  double f64;
  int32_t i32;
  int64_t i64;
  uint16_t bits16;
  unsigned char b;
} RtScalar;
void rt_convert_scalar(const TilertArg *a, TilecDType t, RtScalar *out);

/* ---- errors ---- */

/* Formats the context's last error and returns `s`. */
TilertStatus rt_error(TilertContext *ctx, TilertStatus s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- SHA-256 (FIPS 180-4) ---- */

typedef struct RtSha256 {
  uint32_t h[8];
  uint64_t total; /* bytes hashed so far */
  unsigned char buf[64];
  size_t nbuf;
} RtSha256;

void rt_sha256_init(RtSha256 *s);
void rt_sha256_update(RtSha256 *s, const void *data, size_t len);
void rt_sha256_final(RtSha256 *s, unsigned char out[32]);
/* out: 64 hex digits and a NUL. */
void rt_sha256_hex(const void *data, size_t len, char out[65]);
void rt_hex(const unsigned char *bytes, size_t n, char *out);

/* ---- the C compiler ---- */

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

/* ---- the disk cache ---- */

/* Key for one build: SHA-256 over the version, target, compiler command and
 * flags, the specialized IR and the C text. out: 64 hex digits. */
void rt_cache_key(const char *cc, const char *ir, const char *c_src, size_t c_len,
                            char out[65]);
/* mkdir -p. Returns 0 or an errno. */
int rt_mkdir_p(const char *path);
/* True when <dir>/<key>.so exists and <dir>/<key>.sum matches its bytes. */
bool rt_cache_entry_valid(const char *dir, const char *key);
/* Publishes <dir>/<key>.<ext> ("so", "cubin") holding `data` (file mode
 * `mode`) and its <key>.sum: both are written to temp files in dir first,
 * then renamed, the binary first. A failed write (ENOSPC, EROFS, EACCES)
 * leaves no file behind. Returns 0 or an errno. */
int rt_cache_publish_bytes(const char *dir, const char *key, const char *ext, const void *data,
                           size_t size, unsigned mode);
/* Writes all of `data` to fd, a temp file in the cache directory; every
 * byte the cache writes goes through here. Returns 0 or an errno. */
int rt_cache_write_fd(int fd, const void *data, size_t len);
/* Test seam, for tests/runtime only (never set by the library, and not
 * exported from libtilert.so): when nonzero, rt_cache_write_fd writes half
 * of its bytes and then fails with this errno, as a disk that fills up
 * mid-write does (ENOSPC). */
extern int rt_cache_fault_errno;
/* Reads a whole file into a malloc'd buffer. Returns 0 or an errno. */
int rt_read_file(const char *path, void **data, size_t *size);
/* Reads <dir>/<key>.<ext> into a malloc'd buffer and checks its bytes (not
 * the file's, so nothing can change between check and use) against
 * <key>.sum. False on a miss or a mismatch. */
bool rt_cache_read_entry(const char *dir, const char *key, const char *ext, void **data,
                         size_t *size);
/* Key for a CUDA build: SHA-256 over the format, tilec_version(), "cuda",
 * the arch ("sm_90a"), the NVRTC version, the options, every embedded
 * device header, the specialized IR and the CUDA text. */
void rt_cache_key_cuda(const char *arch, int nvrtc_version, const char *const *opts, int nopts,
                       const char *ir, const char *src, size_t src_len, char out[65]);
/* The "cache directory not usable" warning, once per context. */
void rt_cache_warn(TilertContext *ctx, const char *dir, const char *why);
/* Size and SHA-256 of a file's bytes. Returns 0 or an errno. */
int rt_file_digest(const char *path, uint64_t *size, char hex[65]);

/* ---- modules ---- */

/* Builds (or fetches from the cache) the shared object for `c_src`, dlopens
 * it and resolves every kernel's entry. `ir` is the specialized IR text for
 * the key. Takes ownership of `result` (may be NULL), even on failure. */
TilertStatus rt_module_from_c(TilertContext *ctx, const char *name, const char *c_src,
                                        size_t c_len, const char *ir,
                                        const TilecKernelInfo *const *kernels, int nkernels,
                                        TilecResult *result, TilertModule **out);

/* ---- the CUDA path (rt_gpu.c) ---- */

/* NVRTC options of every build (part of the cache key). */
extern const char *const rt_gpu_nvrtc_opts[];
extern const int rt_gpu_nvrtc_nopts;

/* Opens device 0 into ctx->cu. On failure writes why (one sentence). */
bool rt_gpu_open(TilertContext *ctx, char *why, size_t why_cap);
/* Releases ctx->cu (the context's modules are gone by then). */
void rt_gpu_close(TilertContext *ctx);
/* tilec_compile (emit CUDA for the device's arch), cubin from the cache or
 * NVRTC, load, resolve every kernel. */
TilertStatus rt_gpu_load(TilertContext *ctx, const char *name, const char *text, size_t len,
                         const TilecDefine *defines, int ndefines, TilertModule **out);
/* The cubin for CUDA text `src` (NUL-terminated, len = strlen): <key>.cubin from the cache when it is
 * there and verified (*from_cache = true, NVRTC does not run), else NVRTC
 * (ctx->cu may be an NVRTC-only handle) and, with a usable cache, the entry
 * published. force_build skips the lookup (a cached cubin did not load).
 * NVRTC_FAILED leaves `name`, the target and the annotated log in the last
 * error. *cubin is malloc'd. */
TilertStatus rt_gpu_cubin(TilertContext *ctx, const char *name, const char *src, size_t len,
                          const char *ir, const char *arch, bool force_build, void **cubin,
                          size_t *size, bool *from_cache);
/* Validates against kDLCUDA:0, evaluates the grid, launches on `stream`
 * (NULL: the default stream, then waits and reports a kernel fault). */
TilertStatus rt_gpu_launch(TilertKernel *k, const TilertArg *args, int nargs, void *stream);
/* Unloads the module's cubin. */
void rt_gpu_module_unload(TilertModule *mod);
/* "scale.tile" -> "scale.cu" (base name, .tile replaced): the name NVRTC's
 * log uses for the generated source. out holds cap bytes. */
void rt_gpu_source_name(const char *tile_name, char *out, size_t cap);

/* ---- launch validation ---- */

/* Checks args against the kernel's signature; on success fills dyn[] (one per
 * dynamic symbol). Tensors must be on want_device and, when want_device_id
 * >= 0, on that device ordinal. On a mismatch writes the message to msg and
 * returns false. */
bool rt_validate(const TilecKernelInfo *info, const TilertArg *args, int nargs,
                 DLDeviceType want_device, int want_device_id, int64_t *dyn, char *msg,
                 size_t msg_size);
const char *rt_dtype_name(TilecDType t);

#endif
