/* rt_cpu.c - the CPU path (floor 2, rt_cpu.h): a .tile compiled to C, C
 * text in, a loaded module out; launches call the kernel's entry.
 *
 * Load: rt_compile_tile (emit C, target CPU) gives the C text, the
 * specialized IR (cache key) and the kernel signatures; the caller's
 * front-end hook sees them (tilert.c: a shape class whose code the module
 * already has a build of stops the load there); then:
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
 * compiler never writes into the cache directory.
 * Launch: every argument checked by rt_validate (kDLCPU; unless the caller
 * has, tilert.c for a kernel with shape choices), scalars converted
 * (rt_convert_scalar), then the kernel's entry
 * `void entry(void **args, const int64_t *dyn)` (ABI in tilec.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_cpu.h"

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

void rt_cpu_module_unload(TilertModule *mod) {
  if (mod->dl) dlclose(mod->dl);
  mod->dl = NULL;
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
    rt_cpu_module_unload(mod);
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
    if (!err) err = rt_cache_publish_bytes(dir, key, "so", bytes, size, 0755, NULL);
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

void rt_cpu_cache_key(const char *cc, const char *ir, const char *c_src, size_t c_len,
                      char out[65]) {
  /* Changing what goes in here (or its order) calls for a new RT_CACHE_FORMAT. */
  RtSha256 s;
  const char *flags = RT_CC_FLAGS " " RT_CC_LIBS;
  rt_cache_key_begin(&s, "cpu");
  rt_cache_key_field(&s, "cc", cc, strlen(cc));
  rt_cache_key_field(&s, "flags", flags, strlen(flags));
  rt_cache_key_code(&s, "ir", ir ? ir : "", ir ? strlen(ir) : 0);
  /* The C text too: a compiler change that keeps its version string but
   * emits different code must not hit an old entry. */
  rt_cache_key_code(&s, "c", c_src, c_len);
  rt_cache_key_end(&s, out);
}

TilertStatus rt_cpu_module_from_c(TilertContext *ctx, const char *name, const char *c_src,
                                  size_t c_len, const char *ir,
                                  const TilecKernelInfo *const *kernels, int nkernels,
                                  TilecResult *result, TilertModule **out) {
  *out = NULL;
  TilertModule *mod = rt_module_new(ctx, result, nkernels);
  if (!mod) return TILERT_OUT_OF_MEMORY;

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
    rt_cpu_cache_key(ctx->cc, ir, c_src, c_len, key);
    st = load_cached(ctx, mod, name, ctx->cache_dir, key, c_src, c_len, kernels);
  } else {
    st = load_private(ctx, mod, name, c_src, c_len, kernels);
  }
  if (st != TILERT_OK) {
    rt_cpu_module_unload(mod);
    rt_module_free(mod);
    return st;
  }
  *out = mod;
  return TILERT_OK;
}

TilertStatus rt_cpu_load(TilertContext *ctx, const char *name, const char *text, size_t len,
                         const TilecDefine *defines, int ndefines, unsigned shape_class,
                         RtFrontEndHook front_end_done, void *hook_arg, TilertModule **out) {
  *out = NULL;
  TilecResult *res = NULL;
  TilertStatus cst = rt_compile_tile(ctx, name, text, len, defines, ndefines, TILEC_EMIT_C,
                                     TILEC_TARGET_CPU, RT_BUILD_DEFAULT, shape_class, &res);
  if (cst != TILERT_OK) return cst;
  if (front_end_done && !front_end_done(hook_arg, res)) {
    tilec_result_destroy(res);
    return TILERT_OK;
  }

  int n = tilec_result_num_kernels(res);
  const TilecKernelInfo **kernels = calloc(n > 0 ? (size_t)n : 1, sizeof *kernels);
  if (!kernels) {
    tilec_result_destroy(res);
    return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < n; i++) kernels[i] = tilec_result_kernel(res, i);
  /* The module owns res from here: the kernel infos live in it. */
  TilertStatus st = rt_cpu_module_from_c(ctx, name, tilec_result_output(res),
                                         tilec_result_output_size(res),
                                         tilec_result_specialized_ir(res), kernels, n, res, out);
  if (st == TILERT_OK) (*out)->shape_class = shape_class;
  free(kernels);
  return st;
}

/* ---- launch ---- */

enum { RT_STACK_ARGS = 32 };

TilertStatus rt_cpu_launch(TilertKernel *k, const TilertArg *args, int nargs, const int64_t *checked) {
  TilertContext *ctx = k->mod->ctx;
  const TilecKernelInfo *info = k->info;
  int np = info->nparams, nd = info->ndynamic;
  int64_t dyn_stack[RT_STACK_ARGS];
  void *argv_stack[RT_STACK_ARGS];
  RtScalar scalar_stack[RT_STACK_ARGS];
  int64_t *dyn = checked ? NULL : nd <= RT_STACK_ARGS ? dyn_stack : malloc((size_t)nd * sizeof *dyn);
  void **argv = np <= RT_STACK_ARGS ? argv_stack : malloc((size_t)np * sizeof *argv);
  RtScalar *scalars = np <= RT_STACK_ARGS ? scalar_stack : malloc((size_t)np * sizeof *scalars);
  TilertStatus st = TILERT_OK;
  char msg[1024];
  if ((!checked && !dyn) || !argv || !scalars) {
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  } else if (!checked && !rt_validate(info, args, nargs, kDLCPU, -1, dyn, msg, sizeof msg)) {
    st = rt_error(ctx, TILERT_LAUNCH_MISMATCH, "%s", msg);
  } else {
    for (int i = 0; i < np; i++) {
      if (info->params[i].is_tensor) {
        const DLTensor *t = args[i].tensor;
        argv[i] = t->data ? (char *)t->data + t->byte_offset : NULL;
      } else {
        rt_convert_scalar(&args[i], info->params[i].dtype, &scalars[i]);
        argv[i] = &scalars[i];
      }
    }
    k->fn(argv, checked ? checked : dyn);
  }
  if (dyn != dyn_stack) free(dyn);
  if (argv != argv_stack) free(argv);
  if (scalars != scalar_stack) free(scalars);
  return st;
}
