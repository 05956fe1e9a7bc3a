/* test_rt_gpu_ci.c - the runtime's CUDA path where no GPU is needed (CI).
 *
 *   - context creation: AUTO falls back to the CPU with "GPU path off: <why>"
 *     as the device note, CUDA by name gives NO_GPU with the same reason in
 *     the last error (on a GPU machine: both open device 0); the reason is
 *     checked against what the driver layer itself says;
 *   - device memory helpers are NO_GPU on a CPU context;
 *   - launch validation of devices: a CUDA tensor to a CPU kernel, a host
 *     tensor to a GPU kernel, a tensor on another GPU;
 *   - the cubin cache through rt_gpu_cubin with an NVRTC-only handle: a
 *     miss runs NVRTC and publishes <key>.cubin + .sum, a hit runs no NVRTC
 *     (ctx->nvrtc_runs) and returns the same bytes, the arch is part of the
 *     key, a corrupted entry or .sum is rebuilt, disabled and unusable
 *     caches; an NVRTC failure is NVRTC_FAILED with the log naming the
 *     generated file and line; the tests' .tile emitted for sm_80 and
 *     sm_90a builds through the same path;
 *   - a cubin cache that cannot be written: a full disk (injected ENOSPC,
 *     rt_cache_fault_errno) and a real read-only or full tmpfs (a private
 *     mount namespace, in a forked child; skipped where none can be made):
 *     the cubin still comes back, exactly one warning names the directory,
 *     nothing is left in it; a truncated, lengthened or .sum-less cubin
 *     entry is rebuilt;
 *   - shape classes with the same code share one cubin entry, and two
 *     threads building it at once (the load's prebuild) run NVRTC once.
 * The NVRTC part prints "skipped" (and the test still runs the rest) when
 * libnvrtc cannot be opened. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_gpu_kernels.h"
#include "rt_internal.h"
#include "rt_test.h"

static void test_context(void) {
  char why[256] = "";
  RtCuda *probe = rt_cuda_open(RT_CUDA_DEVICE, 0, why, sizeof why);
  bool have_gpu = probe != NULL;
  rt_cuda_close(probe);
  printf("this machine: %s\n", have_gpu ? "a usable CUDA GPU" : why);

  TilertContext *ctx = NULL;
  TilertConfig cfg = {TILERT_DEVICE_AUTO, NULL, true, NULL};
  CHECK_STATUS(tilert_context_create(&cfg, &ctx), TILERT_OK, ctx);
  if (!ctx) return;
  const char *note = tilert_context_device_note(ctx);
  if (have_gpu) {
    CHECK(tilert_context_device(ctx) == TILERT_DEVICE_CUDA,
          "AUTO with a GPU resolved to the CPU: %s", note);
    CHECK(!strncmp(note, "CUDA device 0: ", 15), "note: '%s'", note);
  } else {
    char want[300];
    snprintf(want, sizeof want, "GPU path off: %s", why);
    CHECK(tilert_context_device(ctx) == TILERT_DEVICE_CPU, "AUTO without a GPU is not the CPU");
    CHECK(strcmp(note, want) == 0, "note '%s', expected '%s'", note, want);
    CHECK(strlen(why) > 5, "the driver layer gave no reason");
    CHECK(ctx->cu == NULL, "a CPU context kept a CUDA handle");
    /* And it runs kernels (on the CPU). */
    TilertModule *mod = NULL;
    CHECK_STATUS(tilert_module_load_string(ctx, "gpu.tile", rt_gpu_tile_src,
                                           sizeof rt_gpu_tile_src - 1, NULL, 0, &mod),
                 TILERT_OK, ctx);
    tilert_module_destroy(mod);
  }
  tilert_context_destroy(ctx);

  cfg.device = TILERT_DEVICE_CUDA;
  ctx = NULL;
  TilertStatus st = tilert_context_create(&cfg, &ctx);
  CHECK(ctx != NULL, "no context handed back with %s", tilert_strerror(st));
  if (!ctx) return;
  if (have_gpu) {
    CHECK_STATUS(st, TILERT_OK, ctx);
  } else {
    CHECK_STATUS(st, TILERT_NO_GPU, ctx);
    CHECK_CONTAINS(tilert_last_error(ctx), why);
    CHECK_CONTAINS(tilert_last_error(ctx), "TILERT_DEVICE_CUDA was requested");
    CHECK_CONTAINS(tilert_context_device_note(ctx), why);
    TilertModule *mod = NULL;
    CHECK_STATUS(tilert_module_load_string(ctx, "gpu.tile", rt_gpu_tile_src,
                                           sizeof rt_gpu_tile_src - 1, NULL, 0, &mod),
                 TILERT_NO_GPU, ctx);
    CHECK(mod == NULL, "module from a context without a GPU");
    CHECK_CONTAINS(tilert_last_error(ctx), why);
    void *p = (void *)1;
    CHECK_STATUS(tilert_device_alloc(ctx, 64, &p), TILERT_NO_GPU, ctx);
    CHECK(p == NULL, "device_alloc left *dptr set");
  }
  tilert_context_destroy(ctx);

  /* The device memory helpers on a CPU context. */
  cfg.device = TILERT_DEVICE_CPU;
  tilert_context_create(&cfg, &ctx);
  void *p = (void *)1;
  float host[4] = {1, 2, 3, 4};
  CHECK_STATUS(tilert_device_alloc(ctx, 16, &p), TILERT_NO_GPU, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "tilert_device_alloc: the context has no GPU");
  CHECK(p == NULL, "device_alloc left *dptr set");
  CHECK_STATUS(tilert_copy_to_device(ctx, host, host, 16), TILERT_NO_GPU, ctx);
  CHECK_STATUS(tilert_copy_to_host(ctx, host, host, 16), TILERT_NO_GPU, ctx);
  CHECK_STATUS(tilert_device_free(ctx, host), TILERT_NO_GPU, ctx);
  CHECK_STATUS(tilert_device_free(ctx, NULL), TILERT_OK, ctx);
  CHECK(host[3] == 4.0f, "a refused copy touched memory");
  CHECK(tilert_device_alloc(NULL, 16, &p) == TILERT_INVALID_ARGUMENT, "alloc(NULL ctx)");
  tilert_context_destroy(ctx);
}

/* ---- devices in launch validation ---- */

static void test_validate_devices(void) {
  TilecParamInfo params[2] = {{0}};
  params[0].name = "A", params[0].is_tensor = true, params[0].dtype = TILEC_DTYPE_F32;
  params[0].rank = 1, params[0].dims[0].is_dynamic = true, params[0].dims[0].symbol = 0;
  params[1].name = "alpha", params[1].dtype = TILEC_DTYPE_F32;
  const char *syms[] = {"n"};
  TilecKernelInfo info = {"k", "tilec_k", 2, params, 1, syms, 64, 0};
  float data[8];
  int64_t n = 8, dyn[1];
  DLTensor t = {0};
  t.data = data, t.ndim = 1, t.shape = &n;
  t.dtype.code = kDLFloat, t.dtype.bits = 32, t.dtype.lanes = 1;
  TilertArg args[] = {tilert_arg_tensor(&t), tilert_arg_f32(1.0)};
  char msg[512];

  t.device.device_type = kDLCUDA;
  CHECK(!rt_validate(&info, args, 2, kDLCPU, -1, dyn, msg, sizeof msg),
        "CUDA tensor to a CPU kernel");
  CHECK_CONTAINS(msg, "k: argument 1 'A': device is CUDA:0, expected CPU");
  CHECK(rt_validate(&info, args, 2, kDLCUDA, 0, dyn, msg, sizeof msg) && dyn[0] == 8,
        "CUDA:0 tensor to a GPU kernel: %s", msg);
  t.device.device_id = 1;
  CHECK(!rt_validate(&info, args, 2, kDLCUDA, 0, dyn, msg, sizeof msg), "CUDA:1 tensor accepted");
  CHECK_CONTAINS(msg,
                 "k: argument 1 'A': device is CUDA:1, expected CUDA:0 (the context's device)");
  t.device.device_type = kDLCPU, t.device.device_id = 0;
  CHECK(!rt_validate(&info, args, 2, kDLCUDA, 0, dyn, msg, sizeof msg),
        "host tensor to a GPU kernel");
  CHECK_CONTAINS(msg, "k: argument 1 'A': device is CPU:0, expected CUDA");
  /* The CPU ignores the ordinal. */
  t.device.device_id = 3;
  CHECK(rt_validate(&info, args, 2, kDLCPU, -1, dyn, msg, sizeof msg), "CPU:3: %s", msg);
}

/* ---- names and keys ---- */

static void test_names_and_keys(void) {
  char out[64];
  rt_gpu_source_name("/a/b/scale.tile", out, sizeof out);
  CHECK(!strcmp(out, "scale.cu"), "'%s'", out);
  rt_gpu_source_name("kernels", out, sizeof out);
  CHECK(!strcmp(out, "kernels.cu"), "'%s'", out);
  rt_gpu_source_name("<string>", out, sizeof out);
  CHECK(!strcmp(out, "<string>.cu"), "'%s'", out);
  rt_gpu_source_name(".tile", out, sizeof out);
  CHECK(!strcmp(out, ".tile.cu"), "'%s'", out);

  const char *o1[] = {"-lineinfo"}, *o2[] = {"-lineinfo", "-G"};
  char k[6][65], cpu[65];
  rt_gpu_cache_key("sm_80", 13000, o1, 1, "ir", "src", 3, k[0]);
  rt_gpu_cache_key("sm_80", 13000, o1, 1, "ir", "src", 3, k[1]);
  CHECK(!strcmp(k[0], k[1]) && strlen(k[0]) == 64, "CUDA key not deterministic");
  rt_gpu_cache_key("sm_90a", 13000, o1, 1, "ir", "src", 3, k[1]);
  rt_gpu_cache_key("sm_80", 12080, o1, 1, "ir", "src", 3, k[2]);
  rt_gpu_cache_key("sm_80", 13000, o2, 2, "ir", "src", 3, k[3]);
  rt_gpu_cache_key("sm_80", 13000, o1, 1, "iR", "src", 3, k[4]);
  rt_gpu_cache_key("sm_80", 13000, o1, 1, "ir", "srC", 3, k[5]);
  for (int i = 1; i < 6; i++) CHECK(strcmp(k[0], k[i]) != 0, "CUDA key ignores ingredient %d", i);
  rt_cpu_cache_key("cc", "ir", "src", 3, cpu);
  CHECK(strcmp(cpu, k[0]) != 0, "CPU and CUDA keys collide");
}

/* ---- the cubin cache (NVRTC only) ---- */

static const char good_cu[] =
    "extern \"C\" __global__ void tilec_twice(float *x, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] *= 2.0f;\n"
    "}\n";
static const char bad_cu[] =
    "extern \"C\" __global__ void tilec_bad(float *x) {\n"
    "  x[0] = 1.0f;\n"
    "  x[1] = undeclared_thing + 1;\n"
    "}\n";

static TilertContext *nvrtc_ctx(const char *dir, bool disable, RtCuda **cu) {
  TilertConfig cfg = {TILERT_DEVICE_CPU, dir, disable, NULL};
  TilertContext *ctx = NULL;
  tilert_context_create(&cfg, &ctx);
  char why[256] = "";
  ctx->cu = rt_cuda_open(RT_CUDA_NVRTC_ONLY, 0, why, sizeof why);
  *cu = ctx->cu;
  if (!ctx->cu) {
    printf("skipped: the NVRTC part (%s)\n", why);
    tilert_context_destroy(ctx);
    return NULL;
  }
  return ctx;
}

static TilertStatus cubin(TilertContext *ctx, const char *src, const char *arch, bool force,
                          void **bin, size_t *size, bool *hit) {
  return rt_gpu_cubin(ctx, "t.tile", src, strlen(src), "ir", arch, force, bin, size, hit, NULL);
}

static void flip_byte(const char *path, long at) {
  FILE *f = fopen(path, "r+b");
  if (!f) return;
  fseek(f, at, SEEK_SET);
  int c = fgetc(f);
  fseek(f, at, SEEK_SET);
  fputc(c ^ 0x5a, f);
  fclose(f);
}

static void test_cubin_cache(void) {
  char *dir = rt_test_mkdtemp("cubins");
  RtCuda *cu;
  TilertContext *ctx = nvrtc_ctx(dir, false, &cu);
  if (!ctx) {
    free(dir);
    return;
  }
  void *b1 = NULL, *b2 = NULL;
  size_t n1 = 0, n2 = 0;
  bool hit = true;

  /* A compile error: the log names the generated file and quotes its line. */
  TilertStatus st = rt_gpu_cubin(ctx, "dir/bad.tile", bad_cu, strlen(bad_cu), "ir", "sm_80", false,
                                 &b1, &n1, &hit, NULL);
  CHECK_STATUS(st, TILERT_NVRTC_FAILED, ctx);
  CHECK(b1 == NULL && n1 == 0 && !hit, "failed build returned a cubin");
  CHECK_CONTAINS(tilert_last_error(ctx), "dir/bad.tile: ");
  CHECK_CONTAINS(tilert_last_error(ctx), "bad.cu(3): error");
  CHECK_CONTAINS(tilert_last_error(ctx), "undeclared_thing");
  CHECK_CONTAINS(tilert_last_error(ctx), "x[1] = undeclared_thing + 1;");
  CHECK(ctx->nvrtc_runs == 1, "nvrtc_runs %u", ctx->nvrtc_runs);
  CHECK(rt_test_count(dir, "") == 0, "a failed build left %d files", rt_test_count(dir, ""));

  /* Miss, then hit with the same bytes and no NVRTC. */
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b1, &n1, &hit), TILERT_OK, ctx);
  CHECK(!hit && b1 && n1 > 0 && ctx->nvrtc_runs == 2, "miss: hit %d, %zu bytes, %u runs", hit, n1,
        ctx->nvrtc_runs);
  /* The entry and the directory's NVRTC stamp (rt_gpu_nvrtc.c). */
  CHECK(rt_test_count(dir, ".cubin") == 1 && rt_test_count(dir, ".sum") == 1 &&
            rt_test_count(dir, ".id") == 1 && rt_test_count(dir, "") == 3,
        "cache dir has %d entries", rt_test_count(dir, ""));
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(hit && ctx->nvrtc_runs == 2, "second build: hit %d, %u NVRTC runs", hit, ctx->nvrtc_runs);
  CHECK(n1 == n2 && b2 && memcmp(b1, b2, n1) == 0, "the cached cubin differs (%zu vs %zu bytes)",
        n1, n2);
  free(b2);

  /* Another context (a fresh process) hits too. */
  RtCuda *cu2;
  TilertContext *ctx2 = nvrtc_ctx(dir, false, &cu2);
  if (ctx2) {
    CHECK_STATUS(cubin(ctx2, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx2);
    CHECK(hit && ctx2->nvrtc_runs == 0, "fresh context missed (%u runs)", ctx2->nvrtc_runs);
    free(b2);
    tilert_context_destroy(ctx2);
  }

  /* The arch is part of the key; force_build skips the lookup. */
  CHECK_STATUS(cubin(ctx, good_cu, "sm_90a", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(!hit && ctx->nvrtc_runs == 3 && rt_test_count(dir, ".cubin") == 2,
        "sm_90a: hit %d, %u runs, %d cubins", hit, ctx->nvrtc_runs, rt_test_count(dir, ".cubin"));
  free(b2);
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", true, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(!hit && ctx->nvrtc_runs == 4, "force_build: hit %d, %u runs", hit, ctx->nvrtc_runs);
  free(b2);

  /* A corrupted cubin, then a garbled .sum: rebuilt, not trusted. */
  char key[65], path[1024];
  rt_gpu_cache_key("sm_80", rt_cuda_nvrtc_version(cu), rt_gpu_nvrtc_opts, rt_gpu_nvrtc_nopts, "ir",
                    good_cu, strlen(good_cu), key);
  snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
  CHECK(access(path, R_OK) == 0, "no entry %s", path);
  flip_byte(path, (long)n1 / 2);
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(!hit && ctx->nvrtc_runs == 5 && n2 == n1 && memcmp(b1, b2, n1) == 0,
        "corrupt cubin: hit %d, %u runs", hit, ctx->nvrtc_runs);
  free(b2);
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(hit, "the rebuilt entry is not a hit");
  free(b2);
  snprintf(path, sizeof path, "%s/%s.sum", dir, key);
  FILE *f = fopen(path, "w");
  if (f) fputs("tilert-sum 1\nsize 12\n", f), fclose(f);
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(!hit && ctx->nvrtc_runs == 6, "garbled .sum: hit %d, %u runs", hit, ctx->nvrtc_runs);
  free(b2);
  /* Truncated, lengthened, and without its .sum: each a miss, rebuilt. */
  char cub[1024];
  snprintf(cub, sizeof cub, "%s/%s.cubin", dir, key);
  CHECK(truncate(cub, (off_t)n1 / 2) == 0, "truncate %s", cub);
  unsigned runs = ctx->nvrtc_runs;
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(!hit && ctx->nvrtc_runs == runs + 1 && n2 == n1 && memcmp(b1, b2, n1) == 0,
        "truncated cubin: hit %d, %u runs", hit, ctx->nvrtc_runs - runs);
  free(b2);
  f = fopen(cub, "ab");
  if (f) fputs("trailing bytes", f), fclose(f);
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(!hit && ctx->nvrtc_runs == runs + 2 && n2 == n1, "lengthened cubin: hit %d, %zu bytes", hit,
        n2);
  free(b2);
  unlink(path); /* the .sum */
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(!hit && ctx->nvrtc_runs == runs + 3, "cubin without .sum: hit %d", hit);
  free(b2);
  CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
  CHECK(hit && ctx->nvrtc_runs == runs + 3, "the rebuilt entry is not a hit");
  free(b2);
  CHECK(rt_test_count(dir, "") == 5, "stray files in the cache dir: %d", rt_test_count(dir, ""));
  tilert_context_destroy(ctx);

  /* Disabled: NVRTC every time, nothing written. */
  char *dir2 = rt_test_mkdtemp("cubins-off");
  ctx = nvrtc_ctx(dir2, true, &cu);
  if (ctx) {
    for (int i = 0; i < 2; i++) {
      CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
      CHECK(!hit, "hit with the cache disabled");
      free(b2);
    }
    CHECK(ctx->nvrtc_runs == 2 && rt_test_count(dir2, "") == 0, "disabled: %u runs, %d files",
          ctx->nvrtc_runs, rt_test_count(dir2, ""));
    tilert_context_destroy(ctx);
  }

  /* Unusable (under a regular file): the build still works, in memory. */
  char blocker[1024], under[1100];
  snprintf(blocker, sizeof blocker, "%s/file", dir2);
  f = fopen(blocker, "w");
  if (f) fclose(f);
  snprintf(under, sizeof under, "%s/cache", blocker);
  fflush(stderr);
  ctx = nvrtc_ctx(under, false, &cu);
  if (ctx) {
    CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &b2, &n2, &hit), TILERT_OK, ctx);
    CHECK(!hit && n2 == n1 && ctx->cache_warned, "unusable dir: hit %d, warned %d", hit,
          ctx->cache_warned);
    free(b2);
    tilert_context_destroy(ctx);
  }
  free(b1);
  free(dir);
  free(dir2);
  CHECK(rt_test_no_stray_temp(), "temp files left in $TMPDIR");
}

/* Two NVRTC builds in one context on a cache dir that cannot be written:
 * both succeed with the same bytes as `want`, no hit, exactly one warning
 * naming dir, and dir's entry count unchanged with no temp file. */
static void unwritable_cubin_dir(const char *dir, const void *want, size_t want_size,
                                 const char *what) {
  int before = rt_test_count(dir, "");
  RtCuda *cu;
  rt_test_stderr_begin();
  TilertContext *ctx = nvrtc_ctx(dir, false, &cu);
  if (ctx) {
    for (int i = 0; i < 2; i++) {
      void *bin = NULL;
      size_t size = 0;
      bool hit = true;
      CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &bin, &size, &hit), TILERT_OK, ctx);
      CHECK(!hit && size == want_size && bin && memcmp(bin, want, size) == 0,
            "%s: build %d: hit %d, %zu bytes (want %zu)", what, i, hit, size, want_size);
      free(bin);
    }
    tilert_context_destroy(ctx);
  }
  char *text = rt_test_stderr_end();
  if (ctx) {
    rt_test_check_one_cache_warning(text, dir, what);
    CHECK(rt_test_count(dir, "") == before && rt_test_count(dir, ".cubin") == 0 &&
              rt_test_count(dir, ".sum") == 0,
          "%s: the cache dir had %d entries, now %d", what, before, rt_test_count(dir, ""));
  }
  free(text);
}

/* The reference cubin of good_cu for sm_80, built without a cache. */
static void *reference_cubin(size_t *size) {
  RtCuda *cu;
  TilertContext *ctx = nvrtc_ctx(NULL, true, &cu);
  void *bin = NULL;
  bool hit;
  *size = 0;
  if (ctx) {
    CHECK_STATUS(cubin(ctx, good_cu, "sm_80", false, &bin, size, &hit), TILERT_OK, ctx);
    tilert_context_destroy(ctx);
  }
  return bin;
}

/* A full disk, injected: every cache write fails with ENOSPC half-way. */
static void test_cubin_full_injected(void) {
  size_t size;
  void *want = reference_cubin(&size);
  if (!want) return;
  char *dir = rt_test_mkdtemp("cubins-full");
  rt_cache_fault_errno = ENOSPC;
  unwritable_cubin_dir(dir, want, size, "injected ENOSPC");
  rt_cache_fault_errno = 0;
  free(want);
  free(dir);
}

/* A real read-only and a real full tmpfs, each in a forked child with its
 * own mount namespace. Run before anything else opens CUDA in this
 * process (the child must be able to enter a user namespace). */
static void test_cubin_real_fs(void) {
  const char *const opts[] = {"ro", "size=64k"};
  for (int c = 0; c < 2; c++) {
    char *dir = rt_test_mkdtemp("cubins-fs");
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      int err = rt_test_private_tmpfs(dir, opts[c]);
      if (err) {
        printf("skipped: the %s tmpfs cubin cache (%s)\n", c ? "full" : "read-only", strerror(err));
        fflush(stdout);
        _exit(77);
      }
      if (c == 1) CHECK(rt_test_fill_fs(dir, 0) > 0, "cannot fill %s", dir);
      size_t size;
      void *want = reference_cubin(&size);
      if (want) unwritable_cubin_dir(dir, want, size, c ? "full tmpfs" : "read-only tmpfs");
      free(want);
      fflush(stdout), fflush(stderr);
      _exit(rt_test_failures != 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    CHECK(rc == 0 || rc == 77, "the %s tmpfs cubin cache case failed (status %d)",
          c ? "full" : "read-only", rc);
    if (rc == 0) printf("%s tmpfs cubin cache: ok\n", c ? "full" : "read-only");
    free(dir);
  }
}

/* The tests' .tile through the compiler and NVRTC, for both targets. */
static void test_tile_through_nvrtc(void) {
  char *dir = rt_test_mkdtemp("tile-cubins");
  RtCuda *cu;
  TilertContext *ctx = nvrtc_ctx(dir, false, &cu);
  if (!ctx) {
    free(dir);
    return;
  }
  const struct {
    TilecTarget target;
    const char *arch;
  } targets[] = {
      {TILEC_TARGET_SM80, "sm_80"}, {TILEC_TARGET_SM80, "sm_86"}, {TILEC_TARGET_SM90A, "sm_90a"}};
  const char *srcs[] = {rt_gpu_tile_src, rt_gpu_mixed_src};
  for (int s = 0; s < 2; s++)
    for (int t = 0; t < 3; t++) {
      TilecResult *res = NULL;
      TilertStatus st =
          rt_compile_tile(ctx, s ? "mixed.tile" : "gpu.tile", srcs[s], strlen(srcs[s]), NULL, 0,
                          TILEC_EMIT_CUDA, targets[t].target, RT_BUILD_DEFAULT, 0, &res);
      CHECK_STATUS(st, TILERT_OK, ctx);
      if (!res) continue;
      void *bin = NULL;
      size_t size = 0;
      bool hit = true;
      unsigned runs = ctx->nvrtc_runs;
      st = rt_gpu_cubin(ctx, s ? "mixed.tile" : "gpu.tile", tilec_result_output(res),
                        tilec_result_output_size(res), tilec_result_specialized_ir(res),
                        targets[t].arch, false, &bin, &size, &hit, NULL);
      CHECK_STATUS(st, TILERT_OK, ctx);
      CHECK(!hit && size > 0 && ctx->nvrtc_runs == runs + 1, "%s for %s: hit %d, %zu bytes",
            s ? "mixed.tile" : "gpu.tile", targets[t].arch, hit, size);
      if (s == 0) {
        /* scale_big asks for the >48 KB opt-in. */
        const TilecKernelInfo *big = tilec_result_kernel(res, 2);
        CHECK(big && !strcmp(big->name, "scale_big") && big->shared_bytes >= 65536,
              "scale_big: %d bytes of shared memory", big ? big->shared_bytes : -1);
        CHECK(tilec_result_kernel(res, 1)->ndynamic == 2, "scale2d's dynamic symbols");
      }
      free(bin);
      tilec_result_destroy(res);
    }
  /* tilert_compile_aot's from_cache is optional (it once wrote through
   * NULL: the shape-class prebuild thread passes none). A hit here. */
  void *bin = NULL;
  size_t size = 0;
  TilertStatus st = tilert_compile_aot(ctx, "gpu.tile", rt_gpu_tile_src, strlen(rt_gpu_tile_src), NULL, 0,
                                       "sm_80", TILERT_BINARY_CUBIN, &bin, &size, NULL);
  CHECK_STATUS(st, TILERT_OK, ctx);
  CHECK(bin && size > 0, "tilert_compile_aot without from_cache: %zu bytes", size);
  free(bin);
  tilert_context_destroy(ctx);
  free(dir);
}

/* ---- shape classes with the same code, through NVRTC ---- */

/* factor is 2 for 10 <= n < 50 (class 0) and 3 otherwise: classes 1, 2
 * and 3 have the same code, up to the comment saying which way each choice
 * went. */
static const char *const same_src = rt_test_same_code_src;

/* One class's cubin into a cache directory, on a context of its own (as the
 * load's prebuild threads do, tilert.c). */
typedef struct AotJob {
  const char *dir;
  unsigned shape_class;
  pthread_barrier_t *start; /* NULL: none */
  TilertStatus st;
  unsigned nvrtc_runs;
  bool hit;
  void *bin;
  size_t size;
  char error[512]; /* the context's last error */
} AotJob;

static void *aot_job(void *arg) {
  AotJob *j = arg;
  TilertConfig cfg = {TILERT_DEVICE_CPU, j->dir, false, NULL};
  TilertContext *ctx = NULL;
  j->st = tilert_context_create(&cfg, &ctx);
  if (j->start) pthread_barrier_wait(j->start);
  if (j->st == TILERT_OK)
    j->st = tilert_compile_aot_class(ctx, "same.tile", same_src, strlen(same_src), NULL, 0, j->shape_class, "sm_80",
                                     TILERT_BINARY_CUBIN, &j->bin, &j->size, &j->hit);
  j->nvrtc_runs = ctx ? ctx->nvrtc_runs : 0;
  snprintf(j->error, sizeof j->error, "%s", tilert_last_error(ctx));
  tilert_context_destroy(ctx);
  return NULL;
}

/* Classes 1 and 3 built at once into one cache (two threads, as the
 * prebuild runs them): NVRTC runs once, for the one entry both keys name;
 * class 2 then hits it, and class 0 (other code) gets its own. */
static void test_same_code_classes(void) {
  char *dir = rt_test_mkdtemp("same-classes");
  RtCuda *cu;
  TilertContext *probe = nvrtc_ctx(dir, false, &cu);
  if (!probe) {
    free(dir);
    return;
  }
  tilert_context_destroy(probe);
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, 2);
  AotJob j[2] = {{.dir = dir, .shape_class = 1, .start = &start}, {.dir = dir, .shape_class = 3, .start = &start}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, aot_job, &j[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&start);
  for (int i = 0; i < 2; i++) CHECK(j[i].st == TILERT_OK, "class %u: %s", j[i].shape_class, j[i].error);
  CHECK(j[0].nvrtc_runs + j[1].nvrtc_runs == 1 && j[0].hit != j[1].hit,
        "classes 1 and 3 at once: %u + %u NVRTC runs, hits %d %d", j[0].nvrtc_runs, j[1].nvrtc_runs, j[0].hit,
        j[1].hit);
  CHECK(j[0].bin && j[0].size == j[1].size && j[1].bin && memcmp(j[0].bin, j[1].bin, j[0].size) == 0,
        "classes 1 and 3: different cubins (%zu, %zu bytes)", j[0].size, j[1].size);
  CHECK(rt_test_count(dir, ".cubin") == 1, "%d cubins for classes 1 and 3", rt_test_count(dir, ".cubin"));

  AotJob two = {.dir = dir, .shape_class = 2}, zero = {.dir = dir, .shape_class = 0};
  aot_job(&two);
  aot_job(&zero);
  CHECK(two.st == TILERT_OK && zero.st == TILERT_OK, "class 2: %s; class 0: %s", two.error, zero.error);
  CHECK(two.hit && two.nvrtc_runs == 0 && two.size == j[0].size && memcmp(two.bin, j[0].bin, two.size) == 0,
        "class 2: hit %d, %u NVRTC runs", two.hit, two.nvrtc_runs);
  CHECK(!zero.hit && zero.nvrtc_runs == 1 && rt_test_count(dir, ".cubin") == 2,
        "class 0: hit %d, %u NVRTC runs, %d cubins", zero.hit, zero.nvrtc_runs, rt_test_count(dir, ".cubin"));
  free(j[0].bin), free(j[1].bin), free(two.bin), free(zero.bin);
  free(dir);
}

int main(void) {
  rt_test_init();
  test_cubin_real_fs();
  test_context();
  test_validate_devices();
  test_names_and_keys();
  test_cubin_cache();
  test_cubin_full_injected();
  test_tile_through_nvrtc();
  test_same_code_classes();
  if (rt_test_failures) fprintf(stderr, "test_rt_gpu_ci: %d failure(s)\n", rt_test_failures);
  else printf("test_rt_gpu_ci: all passed\n");
  return rt_test_failures != 0;
}
