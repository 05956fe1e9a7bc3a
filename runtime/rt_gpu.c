/* rt_gpu.c - the CUDA path of libtilert (floor 2, rt_gpu.h): contexts on a
 * GPU, loading a .tile through NVRTC with a disk cache of cubins, launching,
 * device memory.
 *
 * Everything CUDA goes through runtime/cuda/cuda_driver.h (libcuda and
 * libnvrtc are dlopen'ed there), so this file needs no CUDA header and the
 * library still runs on machines without CUDA.
 *
 * Load:   tilec_compile(emit CUDA, sm_90a for compute capability >= 9.0,
 *         else sm_80) -> CUDA text + kernel signatures + specialized IR
 *         -> the caller's front-end hook (tilert.c: a shape class whose
 *            code the module already has a build of stops here)
 *         -> cubin: <key>.cubin from the cache (verified against <key>.sum,
 *            NVRTC does not run; the module's compile log is <key>.log's),
 *            or NVRTC for the device's arch (rt_cuda_target: "sm_90a",
 *            "sm_86", ...) and the entry, with NVRTC's log when it wrote
 *            one, published atomically (rt_cache_publish_bytes: complete temp
 *            files, then rename; a read-only or full cache directory only
 *            costs a warning, once per context, as the cubin is in memory;
 *            a thread of this process already building the same entry is
 *            waited for, and its entry read, instead of a second NVRTC run)
 *         -> cuModuleLoadData, cuModuleGetFunction(tilec_<kernel>) for every
 *            kernel, the >48 KB dynamic shared memory attribute when needed.
 *         A cached cubin that the driver refuses is rebuilt once.
 *         A module whose kernels take TMA descriptors keeps its source and
 *         defines: a launch whose tensors TMA cannot take (a row pitch not a
 *         multiple of 16 bytes, a misaligned base; rt_tma.c) stages them
 *         through aligned scratch copies where the kernel touches them only
 *         through its tensor maps (rt_repack.c: copies in, the TMA kernel,
 *         copies out, all on the launch's stream), and otherwise runs the
 *         same kernel from the module's cp.async variant (TilecOptions.no_tma),
 *         built (or read from the cache) at the first such launch. A
 *         persistent kernel whose TMA loads read rows that do not start on
 *         128-byte L2 lines (rt_tma_rows_split_lines) runs from the
 *         module's cluster build (TilecOptions.cluster_multicast) where
 *         that build has a cluster form of it: such launches are bound by
 *         L2 reads, which the pair's multicast halves for one operand.
 * Launch: rt_validate against kDLCUDA:0, the grid from the kernel's grid
 *         expressions (tilec_result_grid), parameters in the generated
 *         kernel's order (tilec.h / backend.h): each tensor's device pointer
 *         (data + byte_offset), each scalar by value in its dtype, then each
 *         dynamic symbol as a long long, then the TMA descriptors (rt_tma.c). block = (threads, 1, 1), dynamic
 *         shared memory = shared_bytes. On the default stream (NULL) the
 *         launch is waited for, so a kernel fault comes back from this launch
 *         as CUDA_ERROR naming the kernel; on a caller's stream it is
 *         asynchronous and a fault shows up at the caller's next sync.
 * A context, its modules and its launches belong to the thread that created
 * the context (the driver layer makes device 0's primary context current on
 * that thread). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "rt_gpu.h"
#include "rt_repack.h"
#include "rt_tma.h"

/* The stream-K schedule's host-side half (C-compatible): which launches
 * the stream-K build serves (stream_k_serves). */
#define TC_DEVICE static inline
#include "device/tilec_stream_k.cuh"

/* -lineinfo: profilers and compute-sanitizer map SASS back to the generated
 * lines; it changes no code. No --use_fast_math: results must match the C
 * backend's within ordinary float rounding. */
const char *const rt_gpu_nvrtc_opts[] = {"-lineinfo"};
const int rt_gpu_nvrtc_nopts = (int)(sizeof rt_gpu_nvrtc_opts / sizeof rt_gpu_nvrtc_opts[0]);

enum { RT_GPU_DEFAULT_SMEM = 48 * 1024, RT_GPU_MAX_OPTS = 32 };

/* The NVRTC options: the defaults plus $TILEC_NVRTC_FLAGS (blank-separated,
 * e.g. "-DTC_SOME_SWITCH=1 -maxrregcount=200"), which also enter the cache
 * key. Returns the count; words point into buf. */
static int nvrtc_options(const char **opts, char *buf, size_t cap) {
  int n = 0;
  for (int i = 0; i < rt_gpu_nvrtc_nopts; i++) opts[n++] = rt_gpu_nvrtc_opts[i];
  const char *extra = getenv("TILEC_NVRTC_FLAGS");
  if (!extra || !*extra) return n;
  snprintf(buf, cap, "%s", extra);
  char *save = NULL; /* the load's prebuild threads get here at once */
  for (char *tok = strtok_r(buf, " \t", &save); tok && n < RT_GPU_MAX_OPTS; tok = strtok_r(NULL, " \t", &save))
    opts[n++] = tok;
  return n;
}

/* ---- contexts ---- */

bool rt_gpu_open(TilertContext *ctx, char *why, size_t why_cap) {
  ctx->cu = rt_cuda_open(RT_CUDA_DEVICE, 0, why, why_cap);
  if (!ctx->cu) return false;
  /* libnvrtc is not opened here: the first compile does (rt_gpu_cubin). */
  int arch = rt_cuda_arch(ctx->cu);
  char target[16];
  rt_cuda_target(arch, target);
  snprintf(ctx->note, sizeof ctx->note, "CUDA device 0: %s (sm_%d); kernels built for %s by NVRTC",
           rt_cuda_device_name(ctx->cu), arch, target);
  return true;
}

void rt_gpu_close(TilertContext *ctx) {
  rt_cuda_close(ctx->cu);
  ctx->cu = NULL;
}

/* ---- cubins ---- */

void rt_gpu_cache_key(const char *arch, int nvrtc_version, const char *const *opts, int nopts,
                      const char *ir, const char *src, size_t src_len, char out[65]) {
  /* Changing what goes in here (or its order) calls for a new RT_CACHE_FORMAT. */
  RtSha256 s;
  char nvrtc[32];
  int n = snprintf(nvrtc, sizeof nvrtc, "%d", nvrtc_version);
  rt_cache_key_begin(&s, "cuda");
  rt_cache_key_field(&s, "arch", arch, strlen(arch));
  /* Another NVRTC may generate other code for the same text. */
  rt_cache_key_field(&s, "nvrtc", nvrtc, (size_t)n);
  for (int i = 0; i < nopts; i++) rt_cache_key_field(&s, "opt", opts[i], strlen(opts[i]));
  /* The device headers are compiled into the cubin as much as the source. */
  for (const RtCudaHeader *h = rt_cuda_device_headers; h->name; h++) {
    rt_cache_key_field(&s, "header", h->name, strlen(h->name));
    rt_cache_key_field(&s, "text", h->text, strlen(h->text));
  }
  rt_cache_key_code(&s, "ir", ir ? ir : "", ir ? strlen(ir) : 0);
  rt_cache_key_code(&s, "cuda", src, src_len);
  rt_cache_key_end(&s, out);
}

void rt_gpu_source_name(const char *tile_name, char *out, size_t cap) {
  const char *base = strrchr(tile_name, '/');
  base = base ? base + 1 : tile_name;
  size_t n = strlen(base);
  if (n > 5 && strcmp(base + n - 5, ".tile") == 0) n -= 5;
  snprintf(out, cap, "%.*s.cu", (int)n, base);
}

/* Threads of this process that would build the same cache entry (directory
 * and key) at once, as the prebuild threads of two shape classes whose code
 * is the same do (tilert.c): the first to miss builds it, the others wait
 * for that build and then look the entry up again. A build that failed or
 * could not be published leaves them a miss: each then builds its own, as
 * it would have without waiting. */
typedef struct RtBuilding {
  struct RtBuilding *next;
  const char *dir;
  char key[65];
} RtBuilding;
static pthread_mutex_t building_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t building_cv = PTHREAD_COND_INITIALIZER;
static RtBuilding *building; /* under building_mu */

/* True, with `me` on the list, when no other thread is building (dir, key);
 * false once another thread's build of it has finished (the caller looks
 * the entry up again). */
static bool building_claim(RtBuilding *me, const char *dir, const char *key) {
  pthread_mutex_lock(&building_mu);
  bool waited = false;
  for (;;) {
    const RtBuilding *b = building;
    while (b && (strcmp(b->key, key) != 0 || strcmp(b->dir, dir) != 0)) b = b->next;
    if (!b) break;
    waited = true;
    pthread_cond_wait(&building_cv, &building_mu);
  }
  if (!waited) {
    me->dir = dir;
    memcpy(me->key, key, sizeof me->key);
    me->next = building;
    building = me;
  }
  pthread_mutex_unlock(&building_mu);
  return !waited;
}

static void building_done(RtBuilding *me) {
  pthread_mutex_lock(&building_mu);
  RtBuilding **p = &building;
  while (*p != me) p = &(*p)->next;
  *p = me->next;
  pthread_cond_broadcast(&building_cv);
  pthread_mutex_unlock(&building_mu);
}

/* A developer's switch for measuring hand edits of generated code:
 * TILEC_CUDA_OVERRIDE="GENERATED.cu:EDITED.cu" compiles EDITED.cu wherever
 * the generated text is byte for byte GENERATED.cu (the host side -- launch,
 * tensor maps, arguments -- stays the generated kernel's, so the edit must
 * keep its signature). Several pairs, comma-separated, let one process
 * compare several edits (each of a copy of the .tile at its own path, whose
 * generated text differs by the path in its first line); the first pair
 * whose GENERATED.cu matches applies. Returns the edited text (malloc'ed),
 * after a note on stderr, or NULL. */
static char *cuda_override(const char *name, const char *src, size_t len, size_t *out_len) {
  const char *spec = getenv("TILEC_CUDA_OVERRIDE");
  const char *next = NULL;
  for (const char *pair = spec; pair && *pair; pair = next) {
    const char *comma = strchr(pair, ',');
    const size_t pair_len = comma ? (size_t)(comma - pair) : strlen(pair);
    const char *colon = memchr(pair, ':', pair_len);
    next = comma ? comma + 1 : NULL;
    if (!colon) continue;
    char orig_path[1024], edit_path[1024];
    snprintf(orig_path, sizeof orig_path, "%.*s", (int)(colon - pair), pair);
    snprintf(edit_path, sizeof edit_path, "%.*s", (int)(pair + pair_len - colon - 1), colon + 1);
    void *orig = NULL, *edit = NULL;
    size_t orig_len = 0, edit_len = 0;
    bool same = rt_read_file(orig_path, &orig, &orig_len) == 0 && orig_len == len && memcmp(orig, src, len) == 0;
    free(orig);
    if (!same) continue;
    if (rt_read_file(edit_path, &edit, &edit_len) != 0) return NULL;
    char *text = realloc(edit, edit_len + 1);
    if (!text) return free(edit), NULL;
    text[edit_len] = '\0';
    *out_len = edit_len;
    fprintf(stderr, "tilec: %s: compiling $TILEC_CUDA_OVERRIDE's edited CUDA (%s)\n", name, edit_path);
    return text;
  }
  return NULL;
}

char *rt_gpu_log_copy(const RtCuda *cu) {
  const char *log = rt_cuda_compile_log(cu);
  return *log ? strdup(log) : NULL;
}

/* What one NVRTC compile of a kernel's source needs, for cubins and PTX
 * alike: the source ($TILEC_CUDA_OVERRIDE's edit where it applies), the
 * options and the file name NVRTC's messages give. */
typedef struct NvrtcJob {
  const char *src;
  size_t len;
  char *edited; /* owned: the override's text, or NULL */
  const char *opts[RT_GPU_MAX_OPTS];
  int nopts;
  char opt_buf[1024]; /* opts point into it */
  char cu_name[256];
} NvrtcJob;

static void nvrtc_job_init(NvrtcJob *j, const char *name, const char *src, size_t len) {
  size_t edited_len = 0;
  j->edited = cuda_override(name, src, len, &edited_len);
  j->src = j->edited ? j->edited : src;
  j->len = j->edited ? edited_len : len;
  j->nopts = nvrtc_options(j->opts, j->opt_buf, sizeof j->opt_buf);
  rt_gpu_source_name(name, j->cu_name, sizeof j->cu_name);
}

static void nvrtc_job_free(NvrtcJob *j) { free(j->edited); }

/* Runs NVRTC (loaded by the caller) on the job: a cubin, or PTX text when
 * `ptx`; *log gets NVRTC's log either way. */
static TilertStatus nvrtc_run(TilertContext *ctx, const char *name, const NvrtcJob *j, const char *arch, bool ptx,
                              void **out, size_t *size, char **log) {
  ctx->nvrtc_runs++;
  char *text = NULL;
  bool ok = ptx ? rt_cuda_compile_ptx(ctx->cu, j->src, j->cu_name, arch, j->opts, j->nopts, &text, size)
                : rt_cuda_compile(ctx->cu, j->src, j->cu_name, arch, j->opts, j->nopts, out, size);
  if (ptx) *out = text;
  TilertStatus st = ok ? TILERT_OK : rt_error(ctx, TILERT_NVRTC_FAILED, "%s: %s", name, rt_cuda_last_error(ctx->cu));
  if (log) *log = rt_gpu_log_copy(ctx->cu);
  return st;
}

TilertStatus rt_gpu_cubin(TilertContext *ctx, const char *name, const char *src, size_t len,
                          const char *ir, const char *arch, bool force_build, void **cubin,
                          size_t *size, bool *from_cache, char **log) {
  *cubin = NULL;
  *size = 0;
  *from_cache = false;
  if (log) *log = NULL;
  if (!ctx->cu) return rt_error(ctx, TILERT_NO_GPU, "%s: NVRTC is not loaded", name);
  NvrtcJob job;
  nvrtc_job_init(&job, name, src, len);

  const char *dir = NULL;
  if (!ctx->cache_disabled && ctx->cache_dir) {
    int err = rt_mkdir_p(ctx->cache_dir);
    if (err) rt_cache_warn(ctx, ctx->cache_dir, strerror(err));
    else dir = ctx->cache_dir;
  }
  char key[65];
  RtBuilding me;
  bool claimed = false;
  /* The key's NVRTC version comes from the cache's stamp while it holds
   * (rt_gpu_nvrtc.c): a hit then never opens libnvrtc. */
  int nv = dir ? rt_gpu_nvrtc_version(ctx->cu, dir) : 0;
  if (dir && nv > 0) {
    rt_gpu_cache_key(arch, nv, job.opts, job.nopts, ir, job.src, job.len, key);
    while (!claimed) {
      if (!force_build && rt_cache_read_entry(dir, key, "cubin", cubin, size)) {
        *from_cache = true;
        if (log) *log = rt_cache_read_log(dir, key); /* the log of the build that made it */
        nvrtc_job_free(&job);
        return TILERT_OK;
      }
      claimed = building_claim(&me, dir, key);
    }
  }
  TilertStatus st = TILERT_OK;
  if (!rt_cuda_nvrtc_load(ctx->cu)) {
    st = rt_error(ctx, TILERT_NO_GPU, "%s: no cached cubin, and building one needs NVRTC: %s", name,
                  rt_cuda_last_error(ctx->cu));
  } else {
    st = nvrtc_run(ctx, name, &job, arch, false, cubin, size, log);
  }
  if (st == TILERT_OK && dir) {
    /* The stamp said one version and the library opened says another: the
     * entry goes under the true one. */
    if (nv != rt_cuda_nvrtc_version(ctx->cu))
      rt_gpu_cache_key(arch, rt_cuda_nvrtc_version(ctx->cu), job.opts, job.nopts, ir, job.src, job.len, key);
    rt_gpu_nvrtc_stamp(ctx->cu, dir);
    int err = rt_cache_publish_bytes(dir, key, "cubin", *cubin, *size, 0644, rt_cuda_compile_log(ctx->cu));
    /* The cubin is in memory: an unwritable cache only costs the next load. */
    if (err) rt_cache_warn(ctx, dir, strerror(err));
  }
  if (claimed) building_done(&me);
  nvrtc_job_free(&job);
  return st;
}

TilertStatus rt_gpu_ptx(TilertContext *ctx, const char *name, const char *src, size_t len, const char *arch,
                        char **ptx, size_t *size, char **log) {
  *ptx = NULL;
  *size = 0;
  if (log) *log = NULL;
  if (!ctx->cu) return rt_error(ctx, TILERT_NO_GPU, "%s: NVRTC is not loaded", name);
  if (!rt_cuda_nvrtc_load(ctx->cu))
    return rt_error(ctx, TILERT_NO_GPU, "%s: ahead-of-time compilation needs NVRTC: %s", name,
                    rt_cuda_last_error(ctx->cu));
  NvrtcJob job;
  nvrtc_job_init(&job, name, src, len);
  void *text = NULL;
  TilertStatus st = nvrtc_run(ctx, name, &job, arch, true, &text, size, log);
  *ptx = text;
  if (st == TILERT_OK && *size > 0 && (*ptx)[*size - 1] == '\0') (*size)--; /* the text, not its NUL */
  nvrtc_job_free(&job);
  return st;
}

/* ---- modules ---- */

/* cuModuleLoadData and the kernels' functions. */
static TilertStatus load_cubin(TilertContext *ctx, TilertModule *mod, const char *name,
                               const char *arch, const void *cubin, size_t size) {
  RtCuda *cu = ctx->cu;
  if (!rt_cuda_module_load(cu, cubin, size, &mod->cumod)) {
    mod->cumod = NULL;
    return rt_error(ctx, TILERT_CUDA_ERROR, "%s: cannot load the %zu-byte %s cubin: %s", name, size,
                    arch, rt_cuda_last_error(cu));
  }
  for (int i = 0; i < mod->nkernels; i++) {
    TilertKernel *k = &mod->kernels[i];
    if (!rt_cuda_get_function(cu, mod->cumod, k->info->entry, &k->cufn))
      return rt_error(ctx, TILERT_LOAD_FAILED, "%s: kernel '%s': %s", name, k->info->name,
                      rt_cuda_last_error(cu));
    if (!rt_cuda_set_max_dynamic_smem(cu, k->cufn, (size_t)k->info->shared_bytes))
      return rt_error(ctx, TILERT_CUDA_ERROR, "%s: kernel '%s': %s", name, k->info->name,
                      rt_cuda_last_error(cu));
  }
  return TILERT_OK;
}

/* The other builds of a module with TMA copies (rt_gpu_launch), each made
 * at the first launch that needs it. */
typedef struct RtGpuRebuild {
  RtSource *src;
  TilertModule *cp_async; /* RT_BUILD_NO_TMA */
  TilertModule *cluster;  /* RT_BUILD_CLUSTER */
  TilertModule *stream_k; /* RT_BUILD_STREAM_K */
  bool cluster_failed;    /* its build failed once: an optimization, so the
                             default build runs instead, without retrying */
  bool stream_k_none;     /* the stream-K build failed, or pass stream-k left
                             the kernel as it was: not tried again */
} RtGpuRebuild;

static void rebuild_free(RtGpuRebuild *r) {
  if (!r) return;
  TilertModule *builds[3] = {r->cp_async, r->cluster, r->stream_k};
  for (int i = 0; i < 3; i++)
    if (builds[i]) {
      rt_gpu_module_unload(builds[i]);
      rt_module_free(builds[i]);
    }
  rt_source_free(r->src);
  free(r);
}

void rt_gpu_module_unload(TilertModule *mod) {
  rebuild_free(mod->rebuild);
  mod->rebuild = NULL;
  bool staged = false;
  for (int i = 0; i < mod->nkernels; i++) staged |= mod->kernels[i].repack != NULL;
  /* Copies or kernels still in flight may use the scratch buffers. */
  if (staged && mod->ctx->cu) (void)rt_cuda_synchronize(mod->ctx->cu);
  for (int i = 0; i < mod->nkernels; i++) {
    rt_tma_free(mod->kernels[i].tma_slots);
    mod->kernels[i].tma_slots = NULL;
    /* Only a kernel that staged touches the context: a CPU module may be
     * destroyed after its context (the Python binding's collection order). */
    if (mod->kernels[i].repack) rt_repack_free(mod->ctx->cu, mod->kernels[i].repack);
    mod->kernels[i].repack = NULL;
    if (mod->kernels[i].stream_k_done) rt_cuda_event_destroy(mod->ctx->cu, mod->kernels[i].stream_k_done);
    mod->kernels[i].stream_k_done = NULL;
  }
  if (mod->cumod && mod->ctx->cu) rt_cuda_module_unload(mod->ctx->cu, mod->cumod);
  mod->cumod = NULL;
}

bool rt_gpu_arch_name(const TilertContext *ctx, char arch[16]) {
  if (!ctx->cu || !rt_cuda_has_device(ctx->cu)) return false;
  rt_cuda_target(rt_cuda_arch(ctx->cu), arch);
  return true;
}

int rt_gpu_sm_count(const TilertContext *ctx) {
  return rt_cuda_sm_count(ctx->cu); /* 0 for no context or no device */
}

static TilertStatus gpu_load(TilertContext *ctx, const char *name, const char *text, size_t len,
                             const TilecDefine *defines, int ndefines, RtBuild build, unsigned shape_class,
                             RtFrontEndHook front_end_done, void *hook_arg, TilertModule **out) {
  *out = NULL;
  RtCuda *cu = ctx->cu;
  if (!cu || !rt_cuda_has_device(cu)) return rt_error(ctx, TILERT_NO_GPU, "%s", ctx->device_note);
  int cc = rt_cuda_arch(cu);
  TilecTarget target = cc >= 90 ? TILEC_TARGET_SM90A : TILEC_TARGET_SM80;
  const char *target_name = target == TILEC_TARGET_SM90A ? "sm_90a" : "sm_80";
  char arch[16];
  rt_cuda_target(cc, arch);

  TilecResult *res = NULL;
  TilertStatus st =
      rt_compile_tile(ctx, name, text, len, defines, ndefines, TILEC_EMIT_CUDA, target, build, shape_class, &res);
  if (st != TILERT_OK) return st;
  if (front_end_done && !front_end_done(hook_arg, res)) {
    tilec_result_destroy(res);
    return TILERT_OK;
  }

  int n = tilec_result_num_kernels(res);
  TilertModule *mod = rt_module_new(ctx, res, n);
  if (!mod) return TILERT_OUT_OF_MEMORY;
  int smem_max = rt_cuda_max_smem_optin(cu);
  bool has_tma = false;
  for (int i = 0; i < n; i++) {
    TilertKernel *k = &mod->kernels[i];
    k->mod = mod;
    k->info = tilec_result_kernel(res, i);
    k->index = i;
    has_tma |= k->info->ntensor_maps > 0;
    /* Before any NVRTC work: no build makes this kernel fit the device. */
    if (k->info->shared_bytes > RT_GPU_DEFAULT_SMEM && k->info->shared_bytes > smem_max) {
      st = rt_error(ctx, TILERT_LOAD_FAILED,
                    "%s: kernel '%s' needs %d bytes of shared memory; %s (sm_%d) allows at most "
                    "%d per block",
                    name, k->info->name, k->info->shared_bytes, rt_cuda_device_name(cu), cc,
                    smem_max);
      rt_module_free(mod);
      return st;
    }
  }

  const char *src = tilec_result_output(res);
  size_t src_len = tilec_result_output_size(res);
  const char *ir = tilec_result_specialized_ir(res);
  void *cubin = NULL;
  size_t size = 0;
  bool hit = false;
  st = rt_gpu_cubin(ctx, name, src, src_len, ir, arch, false, &cubin, &size, &hit, &mod->compile_log);
  if (st == TILERT_OK) st = load_cubin(ctx, mod, name, arch, cubin, size);
  if (st != TILERT_OK && hit) {
    /* A verified entry the driver refuses (written by another driver?):
     * rebuild it once rather than fail forever; the rebuild brings its own log. */
    rt_gpu_module_unload(mod);
    free(cubin);
    cubin = NULL;
    free(mod->compile_log);
    mod->compile_log = NULL;
    st = rt_gpu_cubin(ctx, name, src, src_len, ir, arch, true, &cubin, &size, &hit, &mod->compile_log);
    if (st == TILERT_OK) st = load_cubin(ctx, mod, name, arch, cubin, size);
  }
  free(cubin);
  if (st == TILERT_NVRTC_FAILED) {
    /* Point at the text the log's line numbers refer to. */
    char *prev = ctx->last_error;
    ctx->last_error = NULL;
    rt_error(ctx, st, "%s\n(the generated CUDA source: tilec %s --emit=cuda --target=%s)",
             prev ? prev : "", name, target_name);
    free(prev);
  }
  if (st != TILERT_OK) {
    rt_gpu_module_unload(mod);
    rt_module_free(mod);
    return st;
  }
  /* Only the default build makes the others. */
  if (has_tma && build == RT_BUILD_DEFAULT) {
    mod->rebuild = calloc(1, sizeof *mod->rebuild);
    if (mod->rebuild) mod->rebuild->src = rt_source_keep(name, text, len, defines, ndefines, shape_class);
    if (!mod->rebuild || !mod->rebuild->src) {
      rt_gpu_module_unload(mod);
      rt_module_free(mod);
      return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
    }
  }
  mod->from_cache = hit;
  mod->shape_class = shape_class;
  *out = mod;
  return TILERT_OK;
}

TilertStatus rt_gpu_load(TilertContext *ctx, const char *name, const char *text, size_t len,
                         const TilecDefine *defines, int ndefines, unsigned shape_class,
                         RtFrontEndHook front_end_done, void *hook_arg, TilertModule **out) {
  return gpu_load(ctx, name, text, len, defines, ndefines, RT_BUILD_DEFAULT, shape_class, front_end_done, hook_arg,
                  out);
}

/* Whether a persistent launch of `tiles` tiles of `iters` k-iterations
 * (-1: unknown) on `slots` blocks is one the stream-K build serves: its
 * last wave is thin (stream-K would split one whole wave more than the
 * last: tc_sk_split_tiles) and the device's rule (tc_sk_split_of, the
 * header's default rule) splits it. The header is the one place of both. */
static bool stream_k_serves(int64_t tiles, int64_t iters, int64_t slots) {
  if (tiles <= slots || tiles % slots == 0 || tiles >= (1LL << 31) ||
      tc_sk_split_tiles((unsigned)tiles, (unsigned)slots) == (unsigned)(tiles % slots))
    return false;
  return iters < 0 || tc_sk_split_of(tiles, iters, slots).split_iters != 0;
}

/* The blocks of a persistent launch of `tiles` tiles on `slots` resident
 * slots, `iters` k-iterations each (-1: unknown, or tiles of unequal
 * length): min(tiles, slots), but where the tiles are long, the fewest
 * blocks that still finish in the same number of rounds, ceil(tiles /
 * rounds): 4096^3 bf16 (512 tiles of 128 x 256, 132 slots) runs 128 blocks
 * of 4 tiles rather than 116 of 4 and 16 of 3. Measured on an H100
 * (thirty-second session; bench/results/2026-12-07-nvidia-h100-session32-
 * notes.md), alternation against cuBLAS: 64 k-iterations 0.990-0.993 ->
 * 0.999-1.001 (bf16, 4096^3), 0.991-0.994 -> 1.002-1.003 (f16), FP8 0.900-
 * 0.906 -> 0.914-0.920; 32: 0.984-0.985 -> 1.000 (4096^2 x 2048); but 16:
 * 0.986-0.992 -> 0.972-0.975 (4096^2 x 1024, 8192 x 4096 x 1024). Why, by
 * ncu at 4096^3: each round of 128 tiles is one raster panel (8 x 16
 * tiles), where 132 straddle two, and DRAM reads drop from 187 to 167 MB
 * (L2 hits 64 -> 70 %); run back to back at 700 W that is 2 % less energy
 * per GEMM and a 2.7 % higher SM clock. */
int64_t rt_persistent_blocks(int64_t tiles, int64_t slots, int64_t iters) {
  if (tiles <= slots) return tiles;
  if (iters < RT_BALANCE_MIN_ITERS) return slots;
  const int64_t rounds = (tiles + slots - 1) / slots;
  return (tiles + rounds - 1) / rounds;
}

static const char *build_name(RtBuild build) {
  return build == RT_BUILD_NO_TMA ? "cp.async" : build == RT_BUILD_CLUSTER ? "cluster" : "stream-K";
}

/* Kernel k of its module's build `build` (cp.async, cluster or stream-K),
 * made on first need. */
static TilertStatus other_build_kernel(TilertKernel *k, RtBuild build, TilertKernel **out) {
  RtGpuRebuild *r = k->mod->rebuild;
  TilertModule **m = build == RT_BUILD_NO_TMA ? &r->cp_async : build == RT_BUILD_CLUSTER ? &r->cluster : &r->stream_k;
  if (!*m) {
    const RtSource *src = r->src;
    TilertStatus st =
        gpu_load(k->mod->ctx, src->name, src->text, src->len, src->defines, src->ndefines, build, src->shape_class,
                 NULL, NULL, m);
    if (st != TILERT_OK) return st;
    const char *which = build_name(build);
    if (src->shape_class)
      rt_module_add_log(k->mod, (*m)->compile_log, "the %s build of shape class %u", which, src->shape_class);
    else
      rt_module_add_log(k->mod, (*m)->compile_log, "the %s build", which);
  }
  if ((*m)->nkernels != k->mod->nkernels || strcmp((*m)->kernels[k->index].info->name, k->info->name))
    return rt_error(k->mod->ctx, TILERT_LOAD_FAILED, "%s: its %s build has other kernels", k->info->name,
                    build_name(build));
  *out = &(*m)->kernels[k->index];
  return TILERT_OK;
}

/* ---- launch ---- */

/* One kernel parameter's bytes: a device pointer, a scalar, or a dynamic
 * symbol's value. */
typedef union RtGpuParam {
  unsigned long long ptr; /* CUdeviceptr */
  RtScalar scalar;
  long long dyn;
} RtGpuParam;

enum { RT_GPU_STACK_PARAMS = 32 };

/* The launch on `alt`, another build's kernel k, of arguments that have
 * passed k's check with dynamic symbols dyn: not checked again where alt's
 * signature is k's. */
static TilertStatus launch_other(TilertKernel *k, TilertKernel *alt, const TilertArg *args, int nargs,
                                 const int64_t *dyn, void *stream) {
  return rt_gpu_launch(alt, args, nargs, rt_same_signature(alt->info, k->info) ? dyn : NULL, stream);
}

/* The launch on k's module's cp.async build (TilecOptions.no_tma). */
static TilertStatus launch_cp_async(TilertKernel *k, const TilertArg *args, int nargs, const int64_t *dyn,
                                    void *stream) {
  TilertKernel *alt = NULL;
  TilertStatus st = other_build_kernel(k, RT_BUILD_NO_TMA, &alt);
  return st == TILERT_OK ? launch_other(k, alt, args, nargs, dyn, stream) : st;
}

TilertStatus rt_gpu_launch(TilertKernel *k, const TilertArg *args, int nargs, const int64_t *checked,
                           void *stream) {
  TilertModule *mod = k->mod;
  TilertContext *ctx = mod->ctx;
  const TilecKernelInfo *info = k->info;
  RtRepackPlan *plan = NULL;     /* the tensors staged through scratch copies (rt_repack.c) */
  const TilertArg *kargs = args; /* the tensors the TMA maps describe: args, staged ones replaced */
  if (!ctx->cu || !mod->cumod || !k->cufn)
    return rt_error(ctx, TILERT_NO_GPU, "%s: the kernel is not loaded on a GPU", info->name);
  if (!mod->result)
    return rt_error(ctx, TILERT_INVALID_ARGUMENT, "%s: the module has no grid expressions",
                    info->name);
  int np = info->nparams, nd = info->ndynamic, total = np + nd + info->ntensor_maps;
  int64_t dyn_stack[RT_GPU_STACK_PARAMS];
  RtGpuParam val_stack[RT_GPU_STACK_PARAMS];
  void *ptr_stack[RT_GPU_STACK_PARAMS];
  int64_t *dyn = checked ? NULL : nd <= RT_GPU_STACK_PARAMS ? dyn_stack : malloc((size_t)nd * sizeof *dyn);
  const int64_t *dv = checked ? checked : dyn; /* the dynamic symbols' values */
  RtGpuParam *vals =
      total <= RT_GPU_STACK_PARAMS ? val_stack : malloc((size_t)total * sizeof *vals);
  void **params = total <= RT_GPU_STACK_PARAMS ? ptr_stack : malloc((size_t)total * sizeof *params);
  TilertStatus st = TILERT_OK;
  char msg[1024];
  int64_t grid[3] = {0, 0, 0};
  if (!dv || !vals || !params) {
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if (!checked && !rt_validate(info, args, nargs, kDLCUDA, 0, dyn, msg, sizeof msg)) {
    st = rt_error(ctx, TILERT_LAUNCH_MISMATCH, "%s", msg);
    goto done;
  }
  /* The grid may name integer scalar parameters (varlen: max_seqlen). */
  int64_t scalar_stack[RT_GPU_STACK_PARAMS];
  int64_t *scalars = np <= RT_GPU_STACK_PARAMS ? scalar_stack : malloc((size_t)np * sizeof *scalars);
  if (!scalars) {
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < np; i++)
    scalars[i] = args[i].kind == TILERT_ARG_INT ? args[i].i : args[i].kind == TILERT_ARG_FLOAT ? (int64_t)args[i].f : 0;
  bool grid_ok = tilec_result_grid_of(mod->result, k->index, dv, scalars, grid);
  const bool sk_choice = ctx->stream_k_auto && info->persistent && info->stream_k_able && !info->stream_k;
  /* A persistent GEMM's k-iterations per tile, the same for every tile (-1:
   * unknown, or not a GEMM): the stream-K choice and the grid's size read
   * them. */
  int64_t tile_iters = -1;
  if (!info->persistent || !tilec_result_stream_k_iters_of(mod->result, k->index, dv, scalars, &tile_iters))
    tile_iters = -1;
  if (scalars != scalar_stack) free(scalars);
  if (!grid_ok) {
    st = rt_error(ctx, TILERT_INVALID_ARGUMENT, "%s: its grid could not be evaluated from the launch's arguments",
                  info->name);
    goto done;
  }
  for (int g = 0; g < 3; g++)
    if (grid[g] <= 0) goto done; /* an empty grid: nothing to do */
  if (grid[0] > 2147483647LL || grid[1] > 65535 || grid[2] > 65535) {
    st = rt_error(ctx, TILERT_LAUNCH_MISMATCH,
                  "%s: grid (%lld, %lld, %lld) exceeds CUDA's limits (2147483647, 65535, 65535)",
                  info->name, (long long)grid[0], (long long)grid[1], (long long)grid[2]);
    goto done;
  }

  for (int i = 0; i < np; i++) {
    if (info->params[i].is_tensor) {
      const DLTensor *t = args[i].tensor;
      vals[i].ptr = t->data ? (unsigned long long)(uintptr_t)t->data + t->byte_offset : 0;
    } else {
      rt_convert_scalar(&args[i], info->params[i].dtype, &vals[i].scalar);
    }
    params[i] = &vals[i];
  }
  for (int j = 0; j < nd; j++) {
    vals[np + j].dyn = (long long)dv[j];
    params[np + j] = &vals[np + j];
  }
  /* TMA descriptors last (by value: params point at the cached maps). */
  RtTmaStatus tma = rt_tma_params(ctx->cu, info, args, NULL, &k->tma_slots, params + np + nd, msg, sizeof msg);
  const RtRepackMode staging = tma == RT_TMA_UNFIT ? rt_repack_mode() : RT_REPACK_OFF;
  if (staging != RT_REPACK_OFF) {
    /* Tensors TMA cannot take as they are, touched by the kernel only
     * through its maps: the maps describe aligned scratch copies of them
     * (rt_repack.c). A tensor that cannot be staged, or no memory for the
     * scratch: the cp.async build below, as without staging. */
    char why[512] = "";
    if (rt_repack_plan(info, args, nargs, &plan, why, sizeof why) && plan) {
      if (rt_repack_alloc(ctx->cu, &k->repack, stream, plan)) {
        kargs = plan->args;
        for (int i = 0; i < plan->n; i++) vals[plan->t[i].param].ptr = plan->t[i].scratch;
        tma = rt_tma_params(ctx->cu, info, kargs, plan->staged, &k->tma_slots, params + np + nd, msg, sizeof msg);
      } else {
        snprintf(why, sizeof why, "%s: no scratch memory: %s", info->name, rt_cuda_last_error(ctx->cu));
      }
    }
    if (tma == RT_TMA_UNFIT) {
      rt_repack_plan_free(plan);
      plan = NULL;
      kargs = args;
      if (staging == RT_REPACK_REQUIRE) {
        st = rt_error(ctx, TILERT_LAUNCH_MISMATCH, "%s (TILEC_TMA_STAGING=require: not staged%s%s)", msg,
                      why[0] ? ": " : "", why);
        goto done;
      }
    }
  }
  if (tma == RT_TMA_UNFIT && mod->rebuild) {
    /* Tensors TMA cannot take: the same kernel, built with cp.async copies. */
    st = launch_cp_async(k, args, nargs, dv, stream);
    goto done;
  }
  if (tma != RT_TMA_OK) {
    st = rt_error(ctx, TILERT_LAUNCH_MISMATCH, "%s", msg);
    goto done;
  }
  if (mod->rebuild && !mod->rebuild->cluster_failed && info->persistent && info->cluster <= 1 &&
      rt_tma_rows_split_lines(info, kargs)) {
    /* Measured on an H100 (bench/results/2026-11-24-nvidia-h100-cluster-notes.md,
     * call 18): 3000 x 5000 x 2000 bf16 +14-25 %, aligned squares 0-3 %
     * slower with clusters; a kernel the cluster build leaves alone runs here.
     * Staged tensors start their rows on lines (kargs): only another
     * tensor's rows send a staged launch here, and the cluster kernel then
     * stages the same tensors itself (from args). */
    TilertKernel *alt = NULL;
    st = other_build_kernel(k, RT_BUILD_CLUSTER, &alt);
    if (st != TILERT_OK) {
      mod->rebuild->cluster_failed = true; /* last_error keeps why */
      st = TILERT_OK;
    } else if (alt->info->cluster > 1) {
      st = launch_other(k, alt, args, nargs, dv, stream);
      goto done;
    }
  }

  unsigned g3[3] = {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
  unsigned b3[3] = {(unsigned)info->threads, 1, 1};
  if (info->persistent) {
    /* One block per resident slot, each walking the tiles blockIdx.x,
     * blockIdx.x + gridDim.x, ... of the x * y * z tile grid. */
    /* A cluster kernel gets only as many clusters as run at once: a static
     * share of the tiles handed to a cluster that waits for a free GPC
     * would double the time. */
    if (!k->resident_blocks)
      k->resident_blocks =
          info->cluster > 1
              ? info->cluster * rt_cuda_resident_clusters(ctx->cu, k->cufn, info->cluster, info->threads,
                                                          (size_t)info->shared_bytes)
              : rt_cuda_resident_blocks(ctx->cu, k->cufn, info->threads, (size_t)info->shared_bytes);
    if (k->resident_blocks <= 0) {
      st = rt_error(ctx, TILERT_CUDA_ERROR, "%s: cannot size the persistent grid: %s", info->name,
                    rt_cuda_last_error(ctx->cu));
      goto done;
    }
    int64_t tiles = grid[0] * grid[1] * grid[2], slots = k->resident_blocks;
    /* $TILEC_PERSISTENT_BLOCKS=N caps the grid at N blocks (tests: a
     * stream-K split at small sizes; a GPU of fewer SMs). */
    if (ctx->persistent_cap && info->cluster <= 1 && ctx->persistent_cap < slots) slots = ctx->persistent_cap;
    if (sk_choice && mod->rebuild && !mod->rebuild->stream_k_none && info->cluster <= 1 &&
        stream_k_serves(tiles, tile_iters, slots)) {
      /* By default ($TILEC_STREAM_K unset or auto) a GEMM whose last wave
       * fills fewer than half the slots (a whole wave for a few tiles) runs
       * the stream-K build where it splits the last R + P tiles: where the
       * saving outweighs the split's cost (tc_sk_split_of; the k-iterations
       * from the kernel's stream_k_iters). Elsewhere whole tiles are
       * faster. Measured on an H100, docs/gpu-codegen.md "Stream-K". */
      TilertKernel *alt = NULL;
      st = other_build_kernel(k, RT_BUILD_STREAM_K, &alt);
      if (st != TILERT_OK || !alt->info->stream_k) {
        mod->rebuild->stream_k_none = true; /* last_error keeps why a build failed */
        st = TILERT_OK;
      } else {
        st = launch_other(k, alt, args, nargs, dv, stream);
        goto done;
      }
    }
    if (info->cluster > 1) {
      /* Pairs of tiles along y, one per 2-block cluster: the loop runs over
       * whole pairs, and the grid is a whole number of clusters. */
      tiles = grid[0] * ((grid[1] + 1) / 2 * 2) * grid[2];
    }
    if (info->fast_division && tiles >= TILEC_MAX_PERSISTENT_TILES) {
      st = rt_error(ctx, TILERT_INVALID_ARGUMENT,
                    "%s: %lld tiles; a persistent kernel built with fast division takes fewer than %d "
                    "(set $TILEC_FAST_DIVISION=0 for hardware division)",
                    info->name, (long long)tiles, (int)TILEC_MAX_PERSISTENT_TILES);
      goto done;
    }
    /* A stream-K build spreads its split over every slot; a cluster grid
     * must stay a whole number of clusters. */
    const bool balance = !info->stream_k && info->cluster <= 1 && !ctx->balance_off;
    g3[0] = (unsigned)rt_persistent_blocks(tiles, slots, balance ? tile_iters : -1);
    g3[1] = g3[2] = 1;
  }
  if (plan && !rt_repack_copy_in(ctx->cu, plan, stream)) {
    /* A copy the driver refused (nothing ran yet; copies already queued
     * only wrote scratch): the cp.async build, as without staging. */
    st = mod->rebuild && staging != RT_REPACK_REQUIRE ? launch_cp_async(k, args, nargs, dv, stream)
                      : rt_error(ctx, TILERT_CUDA_ERROR, "%s: staging a tensor for TMA: %s", info->name,
                                 rt_cuda_last_error(ctx->cu));
    goto done;
  }
  /* pdl_sync kernels may start under the previous kernel's tail (they wait
   * for it in griddepcontrol.wait); not after a staging copy, which is no
   * kernel to overlap, nor with $TILEC_PDL=0 (ctx->pdl_off). */
  const bool pdl = info->pdl_sync && !plan && !ctx->pdl_off;
  if (info->stream_k && k->stream_k_done && k->stream_k_stream != stream &&
      !rt_cuda_stream_wait_event(ctx->cu, stream, k->stream_k_done)) {
    st = rt_error(ctx, TILERT_CUDA_ERROR, "%s: ordering after its launch on another stream: %s", info->name,
                  rt_cuda_last_error(ctx->cu));
    goto done;
  }
  const size_t smem = (size_t)info->shared_bytes;
  const bool launched = pdl ? rt_cuda_launch_kernel_pdl(ctx->cu, k->cufn, g3, b3, smem, stream, params)
                            : rt_cuda_launch_kernel(ctx->cu, k->cufn, g3, b3, smem, stream, params);
  if (!launched) {
    st = rt_error(ctx, TILERT_CUDA_ERROR,
                  "%s: launch failed (grid %u x %u x %u, %u threads, %d bytes of shared "
                  "memory): %s",
                  info->name, g3[0], g3[1], g3[2], b3[0], info->shared_bytes,
                  rt_cuda_last_error(ctx->cu));
    goto done;
  }
  if (info->stream_k) {
    /* The next launch, if on another stream, waits for this one. */
    if (!rt_cuda_event_record(ctx->cu, &k->stream_k_done, stream)) {
      st = rt_error(ctx, TILERT_CUDA_ERROR, "%s: recording its end: %s", info->name, rt_cuda_last_error(ctx->cu));
      goto done;
    }
    k->stream_k_stream = stream;
  }
  if (plan && !rt_repack_copy_out(ctx->cu, plan, stream)) {
    st = rt_error(ctx, TILERT_CUDA_ERROR, "%s: copying a staged tensor back: %s", info->name,
                  rt_cuda_last_error(ctx->cu));
    goto done;
  }
  if (!stream && !rt_cuda_synchronize(ctx->cu))
    st = rt_error(ctx, TILERT_CUDA_ERROR, "kernel '%s' failed on the GPU: %s", info->name,
                  rt_cuda_last_error(ctx->cu));

done:
  rt_repack_plan_free(plan);
  if (dyn != dyn_stack) free(dyn);
  if (vals != val_stack) free(vals);
  if (params != ptr_stack) free(params);
  return st;
}

/* ---- device memory (public: tilert.h) ---- */

static TilertStatus need_gpu(TilertContext *ctx, const char *what) {
  if (ctx->device == TILERT_DEVICE_CUDA && ctx->device_ok && rt_cuda_has_device(ctx->cu))
    return TILERT_OK;
  return rt_error(ctx, TILERT_NO_GPU, "%s: the context has no GPU (%s)", what,
                  ctx->device_note ? ctx->device_note : "");
}

TilertStatus tilert_device_alloc(TilertContext *ctx, size_t bytes, void **dptr) {
  if (!ctx) return TILERT_INVALID_ARGUMENT;
  if (!dptr) return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_device_alloc: dptr is NULL");
  *dptr = NULL;
  TilertStatus st = need_gpu(ctx, "tilert_device_alloc");
  if (st != TILERT_OK || bytes == 0) return st;
  RtCuDevPtr p = 0;
  if (!rt_cuda_malloc(ctx->cu, bytes, &p)) {
    const char *err = rt_cuda_last_error(ctx->cu);
    return rt_error(
        ctx, strstr(err, "CUDA_ERROR_OUT_OF_MEMORY") ? TILERT_OUT_OF_MEMORY : TILERT_CUDA_ERROR,
        "tilert_device_alloc(%zu bytes): %s", bytes, err);
  }
  *dptr = (void *)(uintptr_t)p;
  return TILERT_OK;
}

TilertStatus tilert_device_free(TilertContext *ctx, void *dptr) {
  if (!ctx) return TILERT_INVALID_ARGUMENT;
  if (!dptr) return TILERT_OK;
  TilertStatus st = need_gpu(ctx, "tilert_device_free");
  if (st != TILERT_OK) return st;
  rt_cuda_free(ctx->cu, (RtCuDevPtr)(uintptr_t)dptr);
  return TILERT_OK;
}

TilertStatus tilert_copy_to_device(TilertContext *ctx, void *dst, const void *src, size_t bytes) {
  if (!ctx) return TILERT_INVALID_ARGUMENT;
  TilertStatus st = need_gpu(ctx, "tilert_copy_to_device");
  if (st != TILERT_OK || bytes == 0) return st;
  if (!dst || !src)
    return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_copy_to_device: NULL pointer");
  if (!rt_cuda_memcpy_htod(ctx->cu, (RtCuDevPtr)(uintptr_t)dst, src, bytes))
    return rt_error(ctx, TILERT_CUDA_ERROR, "tilert_copy_to_device(%zu bytes): %s", bytes,
                    rt_cuda_last_error(ctx->cu));
  return TILERT_OK;
}

TilertStatus tilert_copy_to_host(TilertContext *ctx, void *dst, const void *src, size_t bytes) {
  if (!ctx) return TILERT_INVALID_ARGUMENT;
  TilertStatus st = need_gpu(ctx, "tilert_copy_to_host");
  if (st != TILERT_OK || bytes == 0) return st;
  if (!dst || !src)
    return rt_error(ctx, TILERT_INVALID_ARGUMENT, "tilert_copy_to_host: NULL pointer");
  if (!rt_cuda_memcpy_dtoh(ctx->cu, dst, (RtCuDevPtr)(uintptr_t)src, bytes))
    return rt_error(ctx, TILERT_CUDA_ERROR, "tilert_copy_to_host(%zu bytes): %s", bytes,
                    rt_cuda_last_error(ctx->cu));
  return TILERT_OK;
}
