/* rt_base.h - FLOOR 1 of 3 (the base) of libtilert: the pieces both paths
 * share. Nothing here calls anything above it.
 *
 *   floor 3  tilert.c                      the public API (include/tilert.h)
 *   floor 2  rt_cpu.h | rt_gpu.h           the CPU path | the GPU path
 *   floor 1  rt_base.h (this header)       handles, errors, the compile step,
 *                                          the cache, validation, SHA-256, f16
 *
 * A file may call into its own floor's column and the floors below it, never
 * up and never across (CPU <-> GPU). tests/runtime/check_layers.sh holds the
 * table and checks it on the object files; docs/runtime.md draws it.
 *
 * Defined in: rt_error.c, rt_compile.c, rt_module.c, rt_sha256.c,
 * rt_cache.c, rt_validate.c (rt_half.c's conversions are public: tilert.h).
 * None of it is exported from libtilert.so (its version script exports
 * tilert_* and tilec_* only); the white-box tests link the object files. */
#ifndef RT_BASE_H
#define RT_BASE_H

#include "tilert.h"

/* ---- handles ----
 * Defined down here because every floor reads them. Each path owns its own
 * slots (marked CPU / CUDA) and only that path's files touch them; the GPU
 * slots are typed without cuda_driver.h (RtCuda, and RtCuModule /
 * RtCuFunction, which are void *). */

struct TilertContext {
  TilertDevice device;     /* resolved (AUTO is never stored) */
  bool device_ok;          /* false: CUDA was asked for and is not usable */
  const char *device_note; /* static text, or note[] */
  char note[384];
  struct RtCuda *cu;       /* CUDA: device 0 and NVRTC when device == CUDA && device_ok; the
                              tests may attach an NVRTC-only handle to a CPU context */
  unsigned nvrtc_runs;     /* NVRTC compilations so far: a cache hit adds none */
  char *cache_dir;         /* resolved directory, or NULL when there is none */
  bool cache_disabled;
  bool cache_warned;       /* the "cache unusable" warning went out once */
  bool pdl_off;            /* $TILEC_PDL=0: pdl_sync kernels get plain launches (A/B runs) */
  long long persistent_cap; /* $TILEC_PERSISTENT_BLOCKS: at most this many blocks per persistent launch (0: none) */
  bool balance_off;        /* $TILEC_BALANCED_WAVES=0: uniform persistent launches get every slot (A/B runs) */
  bool stream_k_auto;       /* unless $TILEC_STREAM_K is 0 or 1: the stream-K build for launches with a thin last wave */
  char *cc;                /* C compiler command line (may hold arguments) */
  char *last_error;
  char *aot_log;           /* the NVRTC log of the last tilert_compile_aot* call; NULL: none */
  int open_modules;        /* modules tilert_module_load_* handed out, not yet destroyed */
  bool closing;            /* tilert_context_destroy ran while some were open: the
                              context goes with the last of them (tilert.c) */
};

typedef void (*RtEntry)(void **args, const int64_t *dyn);

struct TilertKernel {
  TilertModule *mod;
  const TilecKernelInfo *info;
  int index;   /* in the module (and in its TilecResult) */
  RtEntry fn;  /* CPU */
  void *cufn;  /* CUDA: RtCuFunction */
  struct RtTmaSlot *tma_slots; /* CUDA: the TMA descriptors of its last launch (rt_tma.h) */
  struct RtRepack *repack;     /* CUDA: scratch copies of tensors TMA cannot take (rt_repack.h) */
  int resident_blocks; /* CUDA, persistent kernels: blocks the GPU holds at once (0: not asked yet) */
  /* CUDA, stream-K kernels (TilecKernelInfo.stream_k): the end of the last
   * launch and its stream, so a launch on another stream waits for it (two
   * launches at once would share the module's workspace). */
  void *stream_k_done; /* RtCuEvent, NULL before the first launch */
  void *stream_k_stream;
};

struct TilertModule {
  TilertContext *ctx;
  TilecResult *result; /* owns the TilecKernelInfo the kernels point at (NULL in tests);
                          CUDA launches evaluate their grid with it */
  void *dl;            /* CPU: the dlopen'ed shared object */
  void *cumod;         /* CUDA: the loaded cubin (RtCuModule) */
  bool from_cache;
  int nkernels;
  TilertKernel *kernels;
  struct RtGpuRebuild *rebuild; /* CUDA, a module with TMA copies: how to build its
                                   cp.async variant, and that variant (rt_gpu.c) */
  unsigned shape_class;         /* the shape choices this build took (TilecOptions.shape_class) */
  bool handed_out;              /* returned by tilert_module_load_*: counted in ctx->open_modules */
  struct RtShapeBuilds *shape_builds; /* a module with shape choices: its source and the
                                         builds for other classes, made at the first
                                         launch that wants each (tilert.c) */
  char *compile_log;            /* CUDA: the NVRTC log of its build, then those of the builds
                                   made later (rt_module_add_log); NULL: none */
  TilertModule *log_to;         /* the module whose log gets this one's later builds' logs
                                   (a shape class's build: the loaded module); NULL: itself */
};

/* ---- errors (rt_error.c) ---- */

/* Formats the context's last error and returns `s`. */
TilertStatus rt_error(TilertContext *ctx, TilertStatus s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- the compile step (rt_compile.c) ---- */

/* Which build of a module (the GPU path keeps the source and makes the
 * others at the first launch that wants them, rt_gpu.c). */
typedef enum RtBuild {
  RT_BUILD_DEFAULT,
  RT_BUILD_NO_TMA,  /* TilecOptions.no_tma: for tensors TMA cannot take */
  RT_BUILD_CLUSTER, /* TilecOptions.cluster_multicast: for GEMMs whose rows split L2 lines */
  RT_BUILD_STREAM_K /* TilecOptions.stream_k: for GEMM launches with a thin last wave (unless $TILEC_STREAM_K=0) */
} RtBuild;

/* tilec_compile with the given emit/target and build; a failure becomes
 * COMPILE_ERROR (the diagnostics) or INVALID_ARGUMENT (bad -D names).
 * $TILEC_CLUSTER_MULTICAST=1 makes every build a cluster build. */
TilertStatus rt_compile_tile(TilertContext *ctx, const char *name, const char *text, size_t len,
                             const TilecDefine *defines, int ndefines, TilecEmit emit,
                             TilecTarget target, RtBuild build, unsigned shape_class,
                             TilecResult **out);

/* What a path's load calls between the front end and the back end (the
 * cache, the C compiler or NVRTC), with the front end's result: the caller
 * may start work that should overlap the compile (tilert.c's prebuild of
 * other shape classes), or find that it already has a build of the same
 * code (rt_code_digest) and return false: the load then stops with
 * TILERT_OK and no module. */
typedef bool (*RtFrontEndHook)(void *arg, const TilecResult *res);

/* ---- a module's shell (rt_module.c) ---- */

/* A module of ctx with room for nkernels kernels (zeroed), owning `result`
 * (may be NULL). Out of memory: destroys `result`, records the error and
 * returns NULL. The path that made it fills the kernels and its binary. */
TilertModule *rt_module_new(TilertContext *ctx, TilecResult *result, int nkernels);
/* Frees the shell and the result, once the path has released its binary
 * (rt_cpu_module_unload / rt_gpu_module_unload). Accepts NULL. */
void rt_module_free(TilertModule *mod);
/* Appends `log`, the NVRTC log of a build of mod made after its load (a
 * shape class, the cp.async or cluster build), to mod->log_to's log (mod's
 * own without one), after a line "--- <fmt...> ---". Nothing for an empty
 * or NULL log. Out of memory drops this part of the log, never the build. */
void rt_module_add_log(TilertModule *mod, const char *log, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What a module was loaded from, kept to build its other variants later
 * (the GPU path's cp.async and cluster builds, the shape classes). */
typedef struct RtSource {
  char *name, *text; /* text need not end in a NUL: len bytes */
  size_t len;
  TilecDefine *defines;
  int ndefines;
  unsigned shape_class;
} RtSource;

/* A copy of the arguments, or NULL when out of memory. */
RtSource *rt_source_keep(const char *name, const char *text, size_t len, const TilecDefine *defines,
                         int ndefines, unsigned shape_class);
void rt_source_free(RtSource *src); /* accepts NULL */

/* ---- SHA-256, FIPS 180-4 (rt_sha256.c) ---- */

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

/* ---- the disk cache (rt_cache.c) ---- */

/* A key is a SHA-256 over tagged fields: rt_cache_key_begin adds the entry
 * format, tilec_version() and the target ("cpu", "cuda"); each path then
 * adds what decides its binary (rt_cpu_cache_key, rt_gpu_cache_key), and
 * rt_cache_key_end writes 64 hex digits and a NUL. */
void rt_cache_key_begin(RtSha256 *s, const char *target);
void rt_cache_key_field(RtSha256 *s, const char *tag, const void *data, size_t len);
/* rt_cache_key_field for generated code or IR text, less the words that say
 * which way this build took each shape choice (" -> true" / " -> false" on
 * the compiler's shape-choice lines, and nowhere else): the shape classes
 * of a module whose code comes out the same get one key, while any other
 * difference in the text still changes it. */
void rt_cache_key_code(RtSha256 *s, const char *tag, const char *text, size_t len);
/* 64 hex digits over res's specialized IR and generated code, each as
 * rt_cache_key_code adds it: two results of one module (same context,
 * source, defines and build) with equal digests make the same binary. */
void rt_code_digest(const TilecResult *res, char out[65]);
void rt_cache_key_end(RtSha256 *s, char out[65]);
/* mkdir -p. Returns 0 or an errno. */
int rt_mkdir_p(const char *path);
/* True when <dir>/<key>.so exists and <dir>/<key>.sum matches its bytes. */
bool rt_cache_entry_valid(const char *dir, const char *key);
/* Publishes <dir>/<key>.<ext> ("so", "cubin") holding `data` (file mode
 * `mode`), its <key>.sum and, when `log` (NVRTC's log of the build; may be
 * NULL) is not empty, <key>.log: all are written to temp files in dir
 * first, then renamed, the log first and the .sum last. A failed write
 * (ENOSPC, EROFS, EACCES) leaves no file behind. Returns 0 or an errno. */
int rt_cache_publish_bytes(const char *dir, const char *key, const char *ext, const void *data,
                           size_t size, unsigned mode, const char *log);
/* The most of a <key>.log that rt_cache_read_log reads back. */
#define RT_CACHE_LOG_MAX ((size_t)1 << 20)
/* The text of <dir>/<key>.log (malloc'd, NUL-terminated), or NULL when
 * there is none, it is empty or it cannot be read. A file longer than
 * RT_CACHE_LOG_MAX gives its first RT_CACHE_LOG_MAX bytes and a line
 * saying the log is cut there. The text is not checked: it is what the
 * file holds, up to its first NUL. */
char *rt_cache_read_log(const char *dir, const char *key);
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
/* The "cache directory not usable" warning, once per context. */
void rt_cache_warn(TilertContext *ctx, const char *dir, const char *why);
/* Size and SHA-256 of a file's bytes. Returns 0 or an errno. */
int rt_file_digest(const char *path, uint64_t *size, char hex[65]);

/* ---- launch arguments (rt_validate.c) ---- */

/* Checks args against the kernel's signature; on success fills dyn[] (one per
 * dynamic symbol). Tensors must be on want_device and, when want_device_id
 * >= 0, on that device ordinal. On a mismatch writes the message to msg and
 * returns false. */
bool rt_validate(const TilecKernelInfo *info, const TilertArg *args, int nargs,
                 DLDeviceType want_device, int want_device_id, int64_t *dyn, char *msg,
                 size_t msg_size);
const char *rt_dtype_name(TilecDType t);
/* True when rt_validate reads the same signature in a and b (kernel and
 * parameter names, kinds, dtypes, ranks, dims, strides, dynamic symbols):
 * it then gives any arguments the same verdict, message and dyn[] for both. */
bool rt_same_signature(const TilecKernelInfo *a, const TilecKernelInfo *b);

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
/* `a` has passed rt_validate (an i32's range is checked there). */
void rt_convert_scalar(const TilertArg *a, TilecDType t, RtScalar *out);

#endif
