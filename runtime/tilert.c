/* tilert.c - the public runtime API (runtime/include/tilert.h): contexts,
 * errors, loading .tile files and strings, kernels, launches.
 *
 * Loading runs tilec_compile (emit C, target CPU) and hands the C text, the
 * specialized IR (cache key) and the kernel signatures to rt_module_from_c
 * (rt_module.c), which builds or fetches the shared object. A launch checks
 * every argument with rt_validate (rt_validate.c), then calls the kernel's
 * entry `void entry(void **args, const int64_t *dyn)` (ABI in tilec.h).
 *
 * The CUDA path lives in rt_gpu.c: a context on device AUTO or CUDA opens
 * device 0 through runtime/cuda/ (dlopen'ed libcuda + libnvrtc); when that
 * fails AUTO falls back to the CPU and keeps the reason as the device note,
 * CUDA asked for by name gives NO_GPU. Loads and launches on a CUDA context
 * go to rt_gpu_load / rt_gpu_launch. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* ---- errors ---- */

static const char *const status_text[] = {
#define X(name, msg) msg,
    TILERT_STATUSES(X)
#undef X
};

const char *tilert_strerror(TilertStatus s) {
  if ((unsigned)s >= TILERT_STATUS_COUNT) return "unknown status";
  return status_text[s];
}

const char *tilert_version(void) { return TILEC_VERSION_STRING; }

TilertStatus rt_error(TilertContext *ctx, TilertStatus s, const char *fmt, ...) {
  if (!ctx) return s;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (text) {
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  free(ctx->last_error);
  ctx->last_error = text; /* NULL (out of memory) reads as "" */
  return s;
}

const char *tilert_last_error(const TilertContext *ctx) {
  if (!ctx) return "no context";
  return ctx->last_error ? ctx->last_error : "";
}

/* ---- contexts ---- */

static bool env_true(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

static const char *env_nonempty(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* config, $TILEC_CACHE_DIR, $XDG_CACHE_HOME/tilec, $HOME/.cache/tilec, or NULL. */
static char *resolve_cache_dir(const TilertConfig *cfg) {
  if (cfg && cfg->cache_dir && *cfg->cache_dir) return strdup(cfg->cache_dir);
  const char *v = env_nonempty("TILEC_CACHE_DIR");
  if (v) return strdup(v);
  const char *base = env_nonempty("XDG_CACHE_HOME");
  const char *tail = "/tilec";
  if (!base) {
    base = env_nonempty("HOME");
    tail = "/.cache/tilec";
  }
  if (!base) return NULL;
  char *dir = malloc(strlen(base) + strlen(tail) + 1);
  if (dir) strcat(strcpy(dir, base), tail);
  return dir;
}

TilertStatus tilert_context_create(const TilertConfig *cfg, TilertContext **out) {
  if (!out) return TILERT_INVALID_ARGUMENT;
  *out = NULL;
  TilertContext *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return TILERT_OUT_OF_MEMORY;
  const char *cc = cfg && cfg->cc && *cfg->cc ? cfg->cc : env_nonempty("TILEC_CC");
  ctx->cc = strdup(cc ? cc : "cc");
  ctx->cache_disabled = (cfg && cfg->disable_cache) || env_true("TILEC_CACHE_DISABLE");
  ctx->cache_dir = resolve_cache_dir(cfg);
  if (!ctx->cc) {
    tilert_context_destroy(ctx);
    return TILERT_OUT_OF_MEMORY;
  }

  TilertDevice want = cfg ? cfg->device : TILERT_DEVICE_AUTO;
  ctx->device_ok = true;
  TilertStatus st = TILERT_OK;
  if (want == TILERT_DEVICE_CPU) {
    ctx->device = TILERT_DEVICE_CPU;
    ctx->device_note = "the CPU was requested (TilertConfig.device = TILERT_DEVICE_CPU)";
  } else if (want == TILERT_DEVICE_AUTO || want == TILERT_DEVICE_CUDA) {
    char why[256] = "";
    ctx->device_note = ctx->note;
    bool opened = rt_gpu_open(ctx, why, sizeof why);
    if (!why[0]) snprintf(why, sizeof why, "unknown reason");
    if (opened) {
      int arch = rt_cuda_arch(ctx->cu), nv = rt_cuda_nvrtc_version(ctx->cu);
      char target[16];
      rt_cuda_target(arch, target);
      ctx->device = TILERT_DEVICE_CUDA;
      snprintf(ctx->note, sizeof ctx->note,
               "CUDA device 0: %s (sm_%d); kernels built for %s by NVRTC %d.%d",
               rt_cuda_device_name(ctx->cu), arch, target, nv / 1000, nv % 1000 / 10);
    } else if (want == TILERT_DEVICE_AUTO) {
      ctx->device = TILERT_DEVICE_CPU;
      snprintf(ctx->note, sizeof ctx->note, "GPU path off: %s", why);
    } else {
      /* CUDA was asked for by name: no silent CPU fallback. The context is
       * still handed out (sqlite3_open style) so the caller can read why. */
      ctx->device = TILERT_DEVICE_CUDA;
      ctx->device_ok = false;
      snprintf(ctx->note, sizeof ctx->note, "GPU path off: %s", why);
      st = rt_error(ctx, TILERT_NO_GPU,
                    "TILERT_DEVICE_CUDA was requested, but the GPU path is off: %s", why);
    }
  } else {
    tilert_context_destroy(ctx);
    return TILERT_INVALID_ARGUMENT;
  }
  *out = ctx;
  return st;
}

void tilert_context_destroy(TilertContext *ctx) {
  if (!ctx) return;
  rt_gpu_close(ctx);
  free(ctx->cache_dir);
  free(ctx->cc);
  free(ctx->last_error);
  free(ctx);
}

TilertDevice tilert_context_device(const TilertContext *ctx) {
  return ctx ? ctx->device : TILERT_DEVICE_CPU;
}

const char *tilert_context_device_note(const TilertContext *ctx) {
  return ctx && ctx->device_note ? ctx->device_note : "";
}

/* ---- modules ---- */

TilertStatus rt_compile_tile(TilertContext *ctx, const char *name, const char *text, size_t len,
                             const TilecDefine *defines, int ndefines, TilecEmit emit,
                             TilecTarget target, TilecResult **out) {
  *out = NULL;
  TilecOptions opt;
  tilec_options_init(&opt);
  opt.emit = emit;
  opt.target = target;
  opt.defines = defines;
  opt.ndefines = ndefines;
  TilecResult *res = NULL;
  int rc = tilec_compile(name, text, len, &opt, &res);
  if (!res) return rt_error(ctx, TILERT_OUT_OF_MEMORY, "%s: the compiler returned no result", name);
  if (rc != 0) {
    const char *diag = tilec_result_diagnostics(res);
    TilertStatus st =
        rc == 2 ? rt_error(ctx, TILERT_INVALID_ARGUMENT, "%s: bad compile options\n%s", name,
                           diag ? diag : "")
        : diag && *diag ? rt_error(ctx, TILERT_COMPILE_ERROR, "%s", diag)
                        : rt_error(ctx, TILERT_COMPILE_ERROR, "%s: compilation failed", name);
    tilec_result_destroy(res);
    return st;
  }
  *out = res;
  return TILERT_OK;
}

TilertStatus tilert_module_load_string(TilertContext *ctx, const char *name, const char *text,
                                       size_t len, const TilecDefine *defines, int ndefines,
                                       TilertModule **out) {
  if (!ctx) return TILERT_INVALID_ARGUMENT;
  if (!out) return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_module_load_string: out is NULL");
  *out = NULL;
  if (!text && len) return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_module_load_string: text is NULL");
  if (ndefines < 0 || (ndefines > 0 && !defines))
    return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_module_load_string: bad defines");
  if (!name) name = "<string>";
  if (!ctx->device_ok) return rt_error(ctx, TILERT_NO_GPU, "%s", ctx->device_note);
  if (ctx->device == TILERT_DEVICE_CUDA)
    return rt_gpu_load(ctx, name, text ? text : "", len, defines, ndefines, out);

  TilecResult *res = NULL;
  TilertStatus cst = rt_compile_tile(ctx, name, text ? text : "", len, defines, ndefines,
                                     TILEC_EMIT_C, TILEC_TARGET_CPU, &res);
  if (cst != TILERT_OK) return cst;

  int n = tilec_result_num_kernels(res);
  const TilecKernelInfo **kernels = calloc(n > 0 ? (size_t)n : 1, sizeof *kernels);
  if (!kernels) {
    tilec_result_destroy(res);
    return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < n; i++) kernels[i] = tilec_result_kernel(res, i);
  /* The module owns res from here: the kernel infos live in it. */
  TilertStatus st = rt_module_from_c(ctx, name, tilec_result_output(res),
                                     tilec_result_output_size(res), tilec_result_specialized_ir(res),
                                     kernels, n, res, out);
  free(kernels);
  return st;
}

TilertStatus tilert_module_load_file(TilertContext *ctx, const char *path,
                                     const TilecDefine *defines, int ndefines,
                                     TilertModule **out) {
  if (!ctx) return TILERT_INVALID_ARGUMENT;
  if (!out || !path) return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_module_load_file: NULL argument");
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return rt_error(ctx, TILERT_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
  size_t len = 0, cap = 8192;
  char *text = malloc(cap);
  while (text) {
    len += fread(text + len, 1, cap - len, f);
    if (len < cap) break;
    char *grown = realloc(text, cap * 2);
    if (!grown) free(text);
    text = grown;
    cap *= 2;
  }
  bool failed = ferror(f);
  int err = errno;
  fclose(f);
  if (!text) return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory reading '%s'", path);
  if (failed) {
    free(text);
    return rt_error(ctx, TILERT_IO_ERROR, "cannot read '%s': %s", path, strerror(err));
  }
  TilertStatus st = tilert_module_load_string(ctx, path, text, len, defines, ndefines, out);
  free(text);
  return st;
}

void tilert_module_destroy(TilertModule *mod) {
  if (!mod) return;
  if (mod->dl) dlclose(mod->dl);
  if (mod->cumod) rt_gpu_module_unload(mod);
  tilec_result_destroy(mod->result);
  free(mod->kernels);
  free(mod);
}

bool tilert_module_from_cache(const TilertModule *mod) { return mod && mod->from_cache; }

TilertStatus tilert_module_get_kernel(TilertModule *mod, const char *name, TilertKernel **out) {
  if (!mod) return TILERT_INVALID_ARGUMENT;
  if (!out || !name)
    return rt_error(mod->ctx, TILERT_INVALID_ARGUMENT, "tilert_module_get_kernel: NULL argument");
  *out = NULL;
  for (int i = 0; i < mod->nkernels; i++)
    if (strcmp(mod->kernels[i].info->name, name) == 0) {
      *out = &mod->kernels[i];
      return TILERT_OK;
    }
  char have[512];
  size_t len = 0;
  have[0] = '\0';
  for (int i = 0; i < mod->nkernels && len < sizeof have; i++)
    len += (size_t)snprintf(have + len, sizeof have - len, "%s%s", i ? ", " : "",
                            mod->kernels[i].info->name);
  return rt_error(mod->ctx, TILERT_NOT_FOUND, "no kernel '%s' in the module (it has: %s)", name,
                  mod->nkernels ? have : "no kernels");
}

const TilecKernelInfo *tilert_kernel_info(const TilertKernel *k) { return k ? k->info : NULL; }

/* ---- launch ---- */

void rt_convert_scalar(const TilertArg *a, TilecDType t, RtScalar *out) {
  double f = a->kind == TILERT_ARG_FLOAT ? a->f : (double)a->i;
  switch (t) {
  case TILEC_DTYPE_F32: out->f32 = (float)f; break;
  case TILEC_DTYPE_F64: out->f64 = f; break;
  case TILEC_DTYPE_F16: out->bits16 = tilert_f32_to_f16((float)f); break;
  case TILEC_DTYPE_BF16: out->bits16 = tilert_f32_to_bf16((float)f); break;
  case TILEC_DTYPE_I32: out->i32 = (int32_t)a->i; break; /* range checked */
  case TILEC_DTYPE_I64: out->i64 = a->i; break;
  case TILEC_DTYPE_BOOL: out->b = a->i != 0; break;
  }
}

enum { RT_STACK_ARGS = 32 };

TilertStatus tilert_launch(TilertKernel *k, const TilertArg *args, int nargs, void *stream) {
  if (!k) return TILERT_INVALID_ARGUMENT;
  TilertContext *ctx = k->mod->ctx;
  if (ctx->device == TILERT_DEVICE_CUDA) return rt_gpu_launch(k, args, nargs, stream);

  const TilecKernelInfo *info = k->info;
  int np = info->nparams, nd = info->ndynamic;
  int64_t dyn_stack[RT_STACK_ARGS];
  void *argv_stack[RT_STACK_ARGS];
  RtScalar scalar_stack[RT_STACK_ARGS];
  int64_t *dyn = nd <= RT_STACK_ARGS ? dyn_stack : malloc((size_t)nd * sizeof *dyn);
  void **argv = np <= RT_STACK_ARGS ? argv_stack : malloc((size_t)np * sizeof *argv);
  RtScalar *scalars = np <= RT_STACK_ARGS ? scalar_stack : malloc((size_t)np * sizeof *scalars);
  TilertStatus st = TILERT_OK;
  char msg[1024];
  if (!dyn || !argv || !scalars) {
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  } else if (!rt_validate(info, args, nargs, kDLCPU, -1, dyn, msg, sizeof msg)) {
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
    k->fn(argv, dyn);
  }
  if (dyn != dyn_stack) free(dyn);
  if (argv != argv_stack) free(argv);
  if (scalars != scalar_stack) free(scalars);
  return st;
}
