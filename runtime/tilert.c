/* tilert.c - the public runtime API (runtime/include/tilert.h), floor 3 of
 * libtilert: contexts, errors, loading .tile files and strings, kernels,
 * launches. It checks the caller's arguments and hands the work to the path
 * the context runs on; nothing below calls back up here.
 *
 *   floor 3  tilert.c (this file)
 *   floor 2  rt_cpu.h: load / launch on the CPU | rt_gpu.h: the same on CUDA
 *   floor 1  rt_base.h: handles, errors, compile step, cache, validation
 *
 * A context on device AUTO or CUDA opens device 0 (rt_gpu_open: dlopen'ed
 * libcuda + libnvrtc); when that fails AUTO falls back to the CPU and keeps
 * the reason as the device note, CUDA asked for by name gives NO_GPU. Loads
 * and launches then go to rt_cpu_* or rt_gpu_* by the context's device. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_cpu.h"
#include "rt_gpu.h"

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
  const char *pdl = getenv("TILEC_PDL");
  ctx->pdl_off = pdl && strcmp(pdl, "0") == 0;
  const char *balanced = getenv("TILEC_BALANCED_WAVES");
  ctx->balance_off = balanced && strcmp(balanced, "0") == 0;
  const char *cap = getenv("TILEC_PERSISTENT_BLOCKS");
  ctx->persistent_cap = cap && atoll(cap) > 0 ? atoll(cap) : 0;
  const char *stream_k = getenv("TILEC_STREAM_K");
  /* stream-K where it pays (rt_gpu.c) unless $TILEC_STREAM_K is 0 (never)
   * or 1 (every build: rt_compile.c) */
  ctx->stream_k_auto = !stream_k || (strcmp(stream_k, "0") != 0 && strcmp(stream_k, "1") != 0);
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
      ctx->device = TILERT_DEVICE_CUDA; /* rt_gpu_open wrote the note */
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

static void context_free(TilertContext *ctx) {
  rt_gpu_close(ctx);
  free(ctx->cache_dir);
  free(ctx->cc);
  free(ctx->last_error);
  free(ctx->aot_log);
  free(ctx);
}

/* With modules still open the context stays until the last of them is
 * destroyed (sqlite3_close_v2's order): a binding whose garbage collector
 * finalizes a context before its modules (Python's, at exit) frees nothing
 * twice and reads nothing freed. */
void tilert_context_destroy(TilertContext *ctx) {
  if (!ctx) return;
  if (ctx->open_modules > 0) {
    ctx->closing = true;
    return;
  }
  context_free(ctx);
}

TilertDevice tilert_context_device(const TilertContext *ctx) {
  return ctx ? ctx->device : TILERT_DEVICE_CPU;
}

const char *tilert_context_device_note(const TilertContext *ctx) {
  return ctx && ctx->device_note ? ctx->device_note : "";
}

/* ---- modules ---- */

/* A module whose kernels have shape choices (docs/language.md) keeps its
 * source and, per shape class a launch has asked for, the build for it.
 * The loaded module is class 0 (every condition false), so a load reports
 * compile errors at once; other classes load at their first launch. A class
 * whose code comes out the same as a build the module already has (gemm.tile
 * on sm_90a: classes 1, 3, 5 and 7 all take 64 x 64 tiles in 12 stages) runs
 * that build: its load stops after the front end (class_front_end_done),
 * before the cache and the compiler. On the
 * GPU with a disk cache, the load also starts a thread, as soon as the front
 * end has found the choices and before its own NVRTC compile, that compiles
 * the other classes' cubins into the cache (tilert_compile_aot_class on a
 * context of its own: nothing of the caller's is shared), one thread per
 * class. All the compiles then run at once; a launch that needs another
 * class waits for that class's thread only and finds the cubin in the
 * cache (one thread for all of them made a launch of the last class wait
 * for every compile before it). At most RT_PREBUILD_CLASSES other classes
 * are prebuilt (one to three choices: gemm.tile's three give seven threads,
 * of which classes with the same code share one NVRTC run, so three run);
 * $TILEC_SHAPE_PREBUILD=0 turns it off. */
enum { RT_MAX_SHAPE_BUILDS = 16, RT_PREBUILD_CLASSES = 7 };
typedef struct RtClassBuild {
  unsigned shape_class;
  TilertModule *build; /* one of RtShapeBuilds.builds, or the module itself (class 0's code) */
} RtClassBuild;
typedef struct RtShapeBuilds RtShapeBuilds;
typedef struct RtPrebuild {
  RtShapeBuilds *builds;
  unsigned shape_class;
  bool running;      /* thread started and not yet joined */
  pthread_t thread;
} RtPrebuild;
struct RtShapeBuilds {
  RtSource *src;
  int n, nclasses_run;
  TilertModule *builds[RT_MAX_SHAPE_BUILDS]; /* n builds made for other classes, owned here */
  RtClassBuild classes_run[RT_MAX_SHAPE_BUILDS]; /* each class launched so far and its build */
  RtPrebuild prebuild[RT_PREBUILD_CLASSES]; /* [c - 1]: class c */
  unsigned nclasses; /* classes the module has: 2^(bits its choices use) */
  char arch[16], *cache_dir;
};

static void *prebuild_class(void *arg) {
  const RtPrebuild *p = arg;
  const RtShapeBuilds *b = p->builds;
  TilertConfig cfg = {TILERT_DEVICE_CPU, b->cache_dir, false, NULL};
  TilertContext *ctx = NULL;
  if (tilert_context_create(&cfg, &ctx) == TILERT_OK) {
    const RtSource *src = b->src;
    void *bin = NULL;
    size_t size = 0;
    bool hit = false;
    /* A failure here is the launch's to report, when it compiles itself. */
    tilert_compile_aot_class(ctx, src->name, src->text, src->len, src->defines, src->ndefines, p->shape_class,
                             b->arch, TILERT_BINARY_CUBIN, &bin, &size, &hit);
    free(bin); /* the class's launch finds it in the cache, with its log (<key>.log) */
  }
  tilert_context_destroy(ctx);
  return NULL;
}

/* Waits for class c's prebuild (every class's when c is 0). */
static void join_prebuild(RtShapeBuilds *b, unsigned c) {
  for (int i = 0; i < RT_PREBUILD_CLASSES; i++) {
    RtPrebuild *p = &b->prebuild[i];
    if (p->running && (c == 0 || p->shape_class == c)) {
      pthread_join(p->thread, NULL);
      p->running = false;
    }
  }
}

static void module_free(TilertModule *mod);

static void shape_builds_free(RtShapeBuilds *b) {
  if (!b) return;
  join_prebuild(b, 0);
  free(b->cache_dir);
  for (int i = 0; i < b->n; i++) module_free(b->builds[i]);
  rt_source_free(b->src);
  free(b);
}

/* What a load keeps for its shape builds, made by the GPU path's front-end
 * hook (or after a CPU load): the source, and the prebuild thread. */
typedef struct RtLoadState {
  TilertContext *ctx;
  const char *name, *text;
  size_t len;
  const TilecDefine *defines;
  int ndefines;
  RtShapeBuilds *builds; /* NULL: no choices, or out of memory (oom set) */
  bool oom;
} RtLoadState;

static void keep_shape_builds(RtLoadState *ls, const TilecResult *res) {
  unsigned bits = tilec_result_shape_class_bits(res);
  if (!bits || ls->builds) return;
  RtShapeBuilds *b = calloc(1, sizeof *b);
  if (b) b->src = rt_source_keep(ls->name, ls->text, ls->len, ls->defines, ls->ndefines, 0);
  if (!b || !b->src) {
    free(b);
    ls->oom = true;
    return;
  }
  ls->builds = b;
  /* The prebuild, where it pays: a GPU context with a cache directory. */
  TilertContext *ctx = ls->ctx;
  const char *env = getenv("TILEC_SHAPE_PREBUILD");
  if ((env && strcmp(env, "0") == 0) || ctx->device != TILERT_DEVICE_CUDA || ctx->cache_disabled ||
      !ctx->cache_dir || !rt_gpu_arch_name(ctx, b->arch))
    return;
  int nbits = 0;
  for (; bits; bits >>= 1) nbits++;
  b->nclasses = 1u << nbits;
  if (b->nclasses - 1 > RT_PREBUILD_CLASSES || !(b->cache_dir = strdup(ctx->cache_dir))) return;
  for (unsigned c = 1; c < b->nclasses; c++) {
    RtPrebuild *p = &b->prebuild[c - 1];
    p->builds = b;
    p->shape_class = c;
    p->running = pthread_create(&p->thread, NULL, prebuild_class, p) == 0;
  }
}

static bool front_end_done(void *arg, const TilecResult *res) {
  keep_shape_builds(arg, res);
  return true;
}

/* A load of shape class `shape_class` of `mod`, at a launch that wants it. */
typedef struct RtClassLoad {
  TilertModule *mod;
  unsigned shape_class;
  TilertModule *same; /* set when the module has a build of the same code */
} RtClassLoad;

/* Between the class's front end and its back end: a build of the module
 * whose code is the same (rt_code_digest: only the way the shape choices
 * went differs) runs this class too, and nothing is compiled or read from
 * the cache; otherwise the class's prebuild, if any, must be done first. */
static bool class_front_end_done(void *arg, const TilecResult *res) {
  RtClassLoad *cl = arg;
  RtShapeBuilds *b = cl->mod->shape_builds;
  char want[65], have[65];
  rt_code_digest(res, want);
  for (int i = -1; i < b->n; i++) {
    TilertModule *m = i < 0 ? cl->mod : b->builds[i];
    rt_code_digest(m->result, have);
    if (strcmp(want, have) == 0) {
      cl->same = m;
      return false;
    }
  }
  join_prebuild(b, cl->shape_class); /* its cubin is in the cache once that is done */
  return true;
}

static TilertStatus load_build(TilertContext *ctx, const char *name, const char *text, size_t len,
                               const TilecDefine *defines, int ndefines, unsigned shape_class,
                               RtFrontEndHook hook, void *hook_arg, TilertModule **out) {
  if (ctx->device == TILERT_DEVICE_CUDA)
    return rt_gpu_load(ctx, name, text, len, defines, ndefines, shape_class, hook, hook_arg, out);
  return rt_cpu_load(ctx, name, text, len, defines, ndefines, shape_class, hook, hook_arg, out);
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
  if (!text) text = "";
  RtLoadState ls = {ctx, name, text, len, defines, ndefines, NULL, false};
  TilertStatus st = load_build(ctx, name, text, len, defines, ndefines, 0, front_end_done, &ls, out);
  if (st == TILERT_OK && ls.oom) {
    module_free(*out);
    *out = NULL;
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  }
  if (st != TILERT_OK) {
    shape_builds_free(ls.builds);
    return st;
  }
  (*out)->shape_builds = ls.builds;
  (*out)->handed_out = true;
  ctx->open_modules++;
  return TILERT_OK;
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

/* A module and the builds it keeps, whoever made it. */
static void module_free(TilertModule *mod) {
  if (!mod) return;
  shape_builds_free(mod->shape_builds);
  mod->shape_builds = NULL;
  rt_cpu_module_unload(mod);
  rt_gpu_module_unload(mod);
  rt_module_free(mod);
}

void tilert_module_destroy(TilertModule *mod) {
  if (!mod) return;
  TilertContext *ctx = mod->ctx;
  bool counted = mod->handed_out;
  module_free(mod);
  if (counted && --ctx->open_modules == 0 && ctx->closing) context_free(ctx);
}

bool tilert_module_from_cache(const TilertModule *mod) { return mod && mod->from_cache; }

const char *tilert_module_compile_log(const TilertModule *mod) {
  return mod && mod->compile_log ? mod->compile_log : "";
}

const char *tilert_module_warnings(const TilertModule *mod) {
  const char *text = mod && mod->result ? tilec_result_diagnostics(mod->result) : NULL;
  return text ? text : "";
}

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

enum { RT_SHAPE_STACK = 32 };

/* The build of k's module for shape class `want` (the module itself when
 * that is its own class, or when its code is), loaded at the first launch
 * that wants it. */
static TilertStatus class_build(TilertKernel *k, unsigned want, TilertModule **out) {
  TilertModule *mod = k->mod, *build = NULL;
  RtShapeBuilds *b = mod->shape_builds;
  TilertContext *ctx = mod->ctx;
  *out = mod;
  if (want == mod->shape_class) return TILERT_OK;
  for (int i = 0; i < b->nclasses_run && !build; i++)
    if (b->classes_run[i].shape_class == want) build = b->classes_run[i].build;
  if (!build) {
    if (b->nclasses_run == RT_MAX_SHAPE_BUILDS)
      return rt_error(ctx, TILERT_LOAD_FAILED, "%s: more than %d shape classes launched", k->info->name,
                      RT_MAX_SHAPE_BUILDS);
    const RtSource *src = b->src;
    RtClassLoad cl = {mod, want, NULL};
    TilertStatus st = load_build(ctx, src->name, src->text, src->len, src->defines, src->ndefines, want,
                                 class_front_end_done, &cl, &build);
    if (st != TILERT_OK) return st;
    if (build) {
      b->builds[b->n++] = build;
      /* Its log goes in the module's, and so do those of its own later
       * builds (log_to); a cubin the prebuild made comes from the cache
       * with the log that build stored. */
      rt_module_add_log(mod, build->compile_log, "the build for shape class %u", want);
      build->log_to = mod;
    } else {
      build = cl.same; /* the same code: nothing was compiled */
    }
    b->classes_run[b->nclasses_run++] = (RtClassBuild){want, build};
  }
  if (build->nkernels != mod->nkernels || strcmp(build->kernels[k->index].info->name, k->info->name) != 0)
    return rt_error(ctx, TILERT_LOAD_FAILED, "%s: its build for shape class %u has other kernels", k->info->name,
                    want);
  *out = build;
  return TILERT_OK;
}

static TilertStatus path_launch(TilertKernel *k, const TilertArg *args, int nargs, const int64_t *checked,
                                void *stream) {
  if (k->mod->ctx->device == TILERT_DEVICE_CUDA) return rt_gpu_launch(k, args, nargs, checked, stream);
  return rt_cpu_launch(k, args, nargs, checked);
}

/* A kernel with shape choices runs the kernel of the build whose choices
 * hold for this launch's shapes. Its arguments are checked once, here: the
 * check gives the dynamic symbols the choices read, and the chosen kernel
 * launches without a second one (the path's own check, with the same
 * message, where the chosen build's signature differs: a const in a
 * tensor's dims that a choice sets). */
TilertStatus tilert_launch(TilertKernel *k, const TilertArg *args, int nargs, void *stream) {
  if (!k) return TILERT_INVALID_ARGUMENT;
  TilertModule *mod = k->mod;
  if (!mod->shape_builds || tilec_result_num_shape_choices(mod->result, k->index) == 0)
    return path_launch(k, args, nargs, NULL, stream);
  TilertContext *ctx = mod->ctx;
  const TilecKernelInfo *info = k->info;
  int nd = info->ndynamic, np = info->nparams;
  int64_t dyn_stack[RT_SHAPE_STACK], scalar_stack[RT_SHAPE_STACK];
  int64_t *dyn = nd <= RT_SHAPE_STACK ? dyn_stack : malloc((size_t)nd * sizeof *dyn);
  int64_t *scalars = np <= RT_SHAPE_STACK ? scalar_stack : malloc((size_t)np * sizeof *scalars);
  TilertStatus st = TILERT_OK;
  char msg[1024];
  unsigned holds = 0, owned = 0;
  bool cuda = ctx->device == TILERT_DEVICE_CUDA;
  TilertModule *build = NULL;
  if (!dyn || !scalars) {
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  } else if (!rt_validate(info, args, nargs, cuda ? kDLCUDA : kDLCPU, cuda ? 0 : -1, dyn, msg, sizeof msg)) {
    st = rt_error(ctx, TILERT_LAUNCH_MISMATCH, "%s", msg);
  } else {
    for (int i = 0; i < np; i++)
      scalars[i] = args[i].kind == TILERT_ARG_INT ? args[i].i : args[i].kind == TILERT_ARG_FLOAT ? (int64_t)args[i].f : 0;
    /* sm_count: the builtin of shape choices (docs/language.md); 1 on the
     * CPU (and without a device), so a condition's `% sm_count` evaluates */
    const int64_t gpu_sms = cuda ? rt_gpu_sm_count(ctx) : 0;
    const int64_t sm_count = gpu_sms > 0 ? gpu_sms : 1;
    if (!tilec_result_shape_class_of(mod->result, k->index, dyn, scalars, sm_count, &holds, &owned))
      st = rt_error(ctx, TILERT_INVALID_ARGUMENT, "%s: its shape choices could not be evaluated from the launch's arguments",
                    info->name);
    else
      st = class_build(k, (mod->shape_class & ~owned) | holds, &build);
  }
  if (st == TILERT_OK) {
    TilertKernel *run = &build->kernels[k->index];
    st = path_launch(run, args, nargs, rt_same_signature(run->info, info) ? dyn : NULL, stream);
  }
  if (dyn != dyn_stack) free(dyn);
  if (scalars != scalar_stack) free(scalars);
  return st;
}
