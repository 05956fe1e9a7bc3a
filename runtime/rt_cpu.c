/* rt_module.c - C text in, a loaded module out (the CPU path).
 *
 * With a usable cache directory: look up <key>.so (verified against
 * <key>.sum); on a hit dlopen it and run no compiler. On a miss, or a corrupt
 * entry, compile into a private temp directory, publish a copy into the
 * cache (complete temp files, then rename) and dlopen the published file.
 * When the copy cannot be written (read-only, full: one warning per
 * context) the private .so is loaded instead. Without a cache (disabled, or
 * the directory cannot be created: one warning), compile into a private
 * temp directory, dlopen, and delete the files at once (the mapping stays
 * valid). The .c file and the freshly built .so always live in a private
 * temp directory that is removed before the load returns, so the C
 * compiler never writes into the cache directory. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

static int write_file(const char *path, const char *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int err = 0;
  for (size_t done = 0; done < len;) {
    ssize_t w = write(fd, data + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : EIO;
      break;
    }
    done += (size_t)w;
  }
  if (close(fd) != 0 && !err) err = errno;
  return err;
}

/* A fresh private directory under $TMPDIR (or /tmp). */
static TilertStatus make_workdir(TilertContext *ctx, char **out) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  char *dir = str_printf("%s/tilert-XXXXXX", tmp);
  if (!dir) return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  if (!mkdtemp(dir)) {
    TilertStatus st = rt_error(ctx, TILERT_IO_ERROR, "cannot create a temporary directory '%s': %s",
                               dir, strerror(errno));
    free(dir);
    return st;
  }
  *out = dir;
  return TILERT_OK;
}

/* Writes the C text to a private temp dir and compiles it to so_path. */
static TilertStatus compile_c(TilertContext *ctx, const char *name, const char *c_src, size_t c_len,
                              const char *so_path) {
  char *work = NULL;
  TilertStatus st = make_workdir(ctx, &work);
  if (st != TILERT_OK) return st;
  char *c_path = str_printf("%s/kernel.c", work);
  if (!c_path) {
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  } else {
    int err = write_file(c_path, c_src, c_len);
    if (err) st = rt_error(ctx, TILERT_IO_ERROR, "cannot write '%s': %s", c_path, strerror(err));
    else st = rt_cc_build(ctx, ctx->cc, c_path, so_path);
    if (st == TILERT_CC_FAILED) {
      /* Say which module the compiler choked on, keeping its whole output. */
      char *prev = ctx->last_error;
      ctx->last_error = NULL;
      rt_error(ctx, st, "%s: %s", name, prev ? prev : "");
      free(prev);
    }
    unlink(c_path);
  }
  rmdir(work);
  free(c_path);
  free(work);
  return st;
}

static TilertStatus open_so(TilertContext *ctx, TilertModule *mod, const char *path,
                            const TilecKernelInfo *const *kernels) {
  dlerror();
  mod->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!mod->dl) return rt_error(ctx, TILERT_LOAD_FAILED, "cannot load '%s': %s", path, dlerror());
  for (int i = 0; i < mod->nkernels; i++) {
    const TilecKernelInfo *info = kernels[i];
    void *sym = info->entry ? dlsym(mod->dl, info->entry) : NULL;
    if (!sym)
      return rt_error(ctx, TILERT_LOAD_FAILED, "kernel '%s': no symbol '%s' in '%s'", info->name,
                      info->entry ? info->entry : "(null)", path);
    mod->kernels[i].mod = mod;
    mod->kernels[i].info = info;
    mod->kernels[i].index = i;
    /* dlsym hands back code as void *; POSIX guarantees the round trip. */
    memcpy(&mod->kernels[i].fn, &sym, sizeof sym);
  }
  return TILERT_OK;
}

/* Compiles into a private directory and loads; nothing stays on disk. */
static TilertStatus load_private(TilertContext *ctx, TilertModule *mod, const char *name,
                                 const char *c_src, size_t c_len,
                                 const TilecKernelInfo *const *kernels) {
  char *work = NULL;
  TilertStatus st = make_workdir(ctx, &work);
  if (st != TILERT_OK) return st;
  char *so = str_printf("%s/kernel.so", work);
  if (!so) st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  if (st == TILERT_OK) st = compile_c(ctx, name, c_src, c_len, so);
  if (st == TILERT_OK) st = open_so(ctx, mod, so, kernels);
  if (so) unlink(so);
  rmdir(work);
  free(so);
  free(work);
  return st;
}

void rt_cache_warn(TilertContext *ctx, const char *dir, const char *why) {
  if (ctx->cache_warned) return;
  ctx->cache_warned = true;
  fprintf(stderr,
          "tilert: warning: cache directory '%s' is not usable (%s); building without the "
          "cache\n",
          dir, why);
}

/* Cache path: a verified <key>.so is dlopened (a hit). Otherwise the .so is
 * compiled in a private directory, so that a cache directory that cannot be
 * written (read-only, full) never fails the compiler, and then published
 * into the cache (rt_cache_publish_bytes: complete temp files, then rename)
 * and loaded from there. If publishing fails the module is loaded from the
 * private copy and the context warns once; nothing is left in the cache. */
static TilertStatus load_cached(TilertContext *ctx, TilertModule *mod, const char *name,
                                const char *dir, const char *key, const char *c_src, size_t c_len,
                                const TilecKernelInfo *const *kernels) {
  char *so = str_printf("%s/%s.so", dir, key);
  if (!so) return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  if (rt_cache_entry_valid(dir, key)) {
    if (open_so(ctx, mod, so, kernels) == TILERT_OK) {
      mod->from_cache = true;
      free(so);
      return TILERT_OK;
    }
    /* Verified bytes that do not load (another machine's entry?): rebuild. */
    if (mod->dl) dlclose(mod->dl);
    mod->dl = NULL;
  }
  char *work = NULL, *built = NULL;
  TilertStatus st = make_workdir(ctx, &work);
  if (st == TILERT_OK && !(built = str_printf("%s/kernel.so", work)))
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  if (st == TILERT_OK) st = compile_c(ctx, name, c_src, c_len, built);
  if (st == TILERT_OK) {
    void *bytes = NULL;
    size_t size = 0;
    int err = rt_read_file(built, &bytes, &size);
    if (!err) err = rt_cache_publish_bytes(dir, key, "so", bytes, size, 0755);
    free(bytes);
    if (err) {
      rt_cache_warn(ctx, dir, strerror(err));
      st = open_so(ctx, mod, built, kernels);
    } else {
      st = open_so(ctx, mod, so, kernels);
    }
  }
  if (built) unlink(built);
  if (work) rmdir(work);
  free(built);
  free(work);
  free(so);
  return st;
}

TilertStatus rt_module_from_c(TilertContext *ctx, const char *name, const char *c_src,
                              size_t c_len, const char *ir, const TilecKernelInfo *const *kernels,
                              int nkernels, TilecResult *result, TilertModule **out) {
  *out = NULL;
  TilertModule *mod = calloc(1, sizeof *mod);
  if (mod) mod->kernels = calloc(nkernels > 0 ? (size_t)nkernels : 1, sizeof *mod->kernels);
  if (!mod || !mod->kernels) {
    if (mod) free(mod);
    tilec_result_destroy(result);
    return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  }
  mod->ctx = ctx;
  mod->result = result;
  mod->nkernels = nkernels;

  TilertStatus st = TILERT_OK;
  bool private_build = ctx->cache_disabled || !ctx->cache_dir;
  if (!private_build) {
    int err = rt_mkdir_p(ctx->cache_dir);
    if (err) {
      rt_cache_warn(ctx, ctx->cache_dir, strerror(err));
      private_build = true;
    }
  }
  if (!private_build) {
    char key[65];
    rt_cache_key(ctx->cc, ir, c_src, c_len, key);
    st = load_cached(ctx, mod, name, ctx->cache_dir, key, c_src, c_len, kernels);
  } else {
    st = load_private(ctx, mod, name, c_src, c_len, kernels);
  }
  if (st != TILERT_OK) {
    tilert_module_destroy(mod);
    return st;
  }
  *out = mod;
  return TILERT_OK;
}
