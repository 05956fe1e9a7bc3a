/* rt_internal.h - pieces of libtilert shared between its files and its
 * white-box tests (tests/runtime/): SHA-256, the disk cache, the C compiler
 * driver, launch validation, and the handle structs.
 *
 * None of it is exported from libtilert.so (its version script exports
 * tilert_* and tilec_* only); the tests link the object files directly. */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include <stdarg.h>

#include "tilert.h"

/* ---- handles ---- */

struct TilertContext {
  TilertDevice device;     /* resolved: CPU until runtime/cuda/ lands */
  bool device_ok;          /* false: CUDA was asked for and is not usable */
  const char *device_note; /* static text */
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
  RtEntry fn;
};

struct TilertModule {
  TilertContext *ctx;
  TilecResult *result; /* owns the TilecKernelInfo the kernels point at (NULL in tests) */
  void *dl;
  bool from_cache;
  int nkernels;
  TilertKernel *kernels;
};

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
/* Writes <dir>/<key>.sum for the file at `so_tmp`, then renames `so_tmp` to
 * <dir>/<key>.so; both by temp file + rename. Returns 0 or an errno. */
int rt_cache_publish(const char *dir, const char *key, const char *so_tmp);
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

/* ---- launch validation ---- */

/* Checks args against the kernel's signature; on success fills dyn[] (one per
 * dynamic symbol). On a mismatch writes the message to msg and returns false. */
bool rt_validate(const TilecKernelInfo *info, const TilertArg *args, int nargs,
                           DLDeviceType want_device, int64_t *dyn, char *msg, size_t msg_size);
const char *rt_dtype_name(TilecDType t);

#endif
