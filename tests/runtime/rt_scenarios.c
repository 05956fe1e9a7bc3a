/* rt_scenarios.c - the runtime's behaviour checks, run against a loader
 * (rt_test.h): disk cache miss / hit / corrupt entry / unusable directory /
 * disabled, and launch validation. Every run poisons its outputs with NaN
 * first and compares them with a reference computed here, so a kernel that
 * did not run, or ran on rejected arguments, is caught. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_test.h"

int rt_test_failures;

static char *test_base;   /* everything the tests make */
static char *runtime_tmp; /* the runtime's $TMPDIR: must stay empty */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static void cleanup(void) {
  if (test_base) nftw(test_base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void rt_test_init(void) {
  char tmpl[] = "/tmp/tilert-test-XXXXXX";
  if (!mkdtemp(tmpl)) {
    perror("mkdtemp");
    exit(2);
  }
  test_base = strdup(tmpl);
  atexit(cleanup);
  runtime_tmp = malloc(strlen(test_base) + 8);
  sprintf(runtime_tmp, "%s/rttmp", test_base);
  mkdir(runtime_tmp, 0755);
  setenv("TMPDIR", runtime_tmp, 1);
  unsetenv("TILEC_CACHE_DIR");
  unsetenv("TILEC_CACHE_DISABLE");
  unsetenv("TILEC_CC");
}

char *rt_test_mkdtemp(const char *tag) {
  char *p = malloc(strlen(test_base) + strlen(tag) + 16);
  sprintf(p, "%s/%s-XXXXXX", test_base, tag);
  if (!mkdtemp(p)) {
    perror("mkdtemp");
    exit(2);
  }
  return p;
}

int rt_test_count(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  size_t sl = strlen(suffix);
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (l >= sl && !strcmp(e->d_name + l - sl, suffix)) n++;
  }
  closedir(d);
  return n;
}

bool rt_test_no_stray_temp(void) { return rt_test_count(runtime_tmp, "") == 0; }

static int saved_stderr = -1;
static char stderr_path[1100];

void rt_test_stderr_begin(void) {
  snprintf(stderr_path, sizeof stderr_path, "%s/stderr-XXXXXX", test_base);
  int fd = mkstemp(stderr_path);
  fflush(stderr);
  saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
}

char *rt_test_stderr_end(void) {
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  saved_stderr = -1;
  FILE *f = fopen(stderr_path, "r");
  char *text = calloc(1, 65536);
  if (f) {
    fread(text, 1, 65535, f);
    fclose(f);
  }
  unlink(stderr_path);
  /* Echo it, so a failing test's log still shows it. */
  fputs(text, stderr);
  return text;
}

int rt_test_occurrences(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return errno;
  fputs(text, f);
  return fclose(f) == 0 ? 0 : errno;
}

int rt_test_private_tmpfs(const char *dir, const char *opts) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (uid != 0) {
    /* An unprivileged user namespace in which we are root. */
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return errno;
    char map[64];
    write_text("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
    if (write_text("/proc/self/uid_map", map)) return errno ? errno : EPERM;
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
    if (write_text("/proc/self/gid_map", map)) return errno ? errno : EPERM;
  } else if (unshare(CLONE_NEWNS) != 0) {
    return errno;
  }
  /* Nothing mounted here may leak to the rest of the system. */
  if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return errno;
  unsigned long flags = 0;
  char data[128];
  snprintf(data, sizeof data, "%s", opts);
  if (!strcmp(opts, "ro")) flags = MS_RDONLY, data[0] = '\0';
  if (mount("tmpfs", dir, "tmpfs", flags, data) != 0) return errno;
  return 0;
}

long rt_test_fill_fs(const char *dir, long leave) {
  char path[1100];
  snprintf(path, sizeof path, "%s/filler", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  static char block[4096];
  long total = 0;
  for (;;) {
    ssize_t w = write(fd, block, sizeof block);
    if (w <= 0) break;
    total += w;
  }
  /* Full now; give back `leave` bytes (whole pages on tmpfs). */
  if (leave > 0 && total > leave) {
    total -= leave;
    if (ftruncate(fd, total) != 0) total = -1;
  }
  close(fd);
  return total;
}

/* The one file in dir ending in suffix. Caller frees. */
static char *only_file(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  char *found = NULL;
  size_t sl = strlen(suffix);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l >= sl && !strcmp(e->d_name + l - sl, suffix) && e->d_name[0] != '.') {
      found = malloc(strlen(dir) + l + 2);
      sprintf(found, "%s/%s", dir, e->d_name);
      break;
    }
  }
  if (d) closedir(d);
  return found;
}

/* ---- tensors ---- */

enum { N = 100, M2 = 5, K2 = 8 };

typedef struct Tensor1 {
  DLTensor t;
  int64_t shape[2];
  int64_t strides[2];
} Tensor1;

static void make_tensor(Tensor1 *x, void *data, int ndim, const int64_t *shape) {
  memset(x, 0, sizeof *x);
  x->t.data = data;
  x->t.device.device_type = kDLCPU;
  x->t.ndim = ndim;
  x->t.dtype.code = kDLFloat;
  x->t.dtype.bits = 32;
  x->t.dtype.lanes = 1;
  for (int i = 0; i < ndim; i++) x->shape[i] = shape[i];
  x->t.shape = x->shape;
}

static float a_val(int i) { return (float)i * 0.5f - 7.0f; }
static float b_val(int i) { return 3.0f - (float)i * 0.25f; }
static const float alpha = 1.5f;

static void poison(float *p, int n) {
  for (int i = 0; i < n; i++) p[i] = NAN;
}

static bool all_nan(const float *p, int n) {
  for (int i = 0; i < n; i++)
    if (!isnan(p[i])) return false;
  return true;
}

/* |got - want| within a few ulps; NaN never passes. */
static bool close_to(float got, float want) {
  return fabsf(got - want) <= 1e-5f * (1.0f + fabsf(want));
}

/* Runs scale_add on n = N with fresh inputs; checks every output element. */
static void run_scale_add(TilertModule *mod, TilertContext *ctx, const char *what) {
  TilertKernel *k = NULL;
  TilertStatus st = tilert_module_get_kernel(mod, "scale_add", &k);
  CHECK_STATUS(st, TILERT_OK, ctx);
  if (!k) return;
  float A[N], B[N], C[N];
  for (int i = 0; i < N; i++) A[i] = a_val(i), B[i] = b_val(i);
  poison(C, N);
  int64_t n = N;
  Tensor1 ta, tb, tc;
  make_tensor(&ta, A, 1, &n), make_tensor(&tb, B, 1, &n), make_tensor(&tc, C, 1, &n);
  TilertArg args[] = {tilert_arg_tensor(&ta.t), tilert_arg_tensor(&tb.t), tilert_arg_tensor(&tc.t),
                      tilert_arg_f32(alpha)};
  st = tilert_launch(k, args, 4, NULL);
  CHECK_STATUS(st, TILERT_OK, ctx);
  int bad = 0;
  for (int i = 0; i < N; i++)
    if (!close_to(C[i], a_val(i) * alpha + b_val(i))) {
      if (bad++ < 3)
        CHECK(false, "%s: C[%d] = %g, expected %g", what, i, C[i], a_val(i) * alpha + b_val(i));
    }
  CHECK(bad == 0, "%s: %d of %d outputs wrong", what, bad, N);
}

static TilertContext *make_ctx(const char *cache_dir, const char *cc, bool disable) {
  TilertConfig cfg = {TILERT_DEVICE_CPU, cache_dir, disable, cc};
  TilertContext *ctx = NULL;
  TilertStatus st = tilert_context_create(&cfg, &ctx);
  CHECK(st == TILERT_OK && ctx, "tilert_context_create: %s", tilert_strerror(st));
  if (!ctx) exit(1);
  return ctx;
}

/* One load in a fresh context (like a fresh process); runs scale_add. */
static bool load_and_run(RtLoader load, const char *cache_dir, const char *cc, bool disable,
                         const char *what) {
  TilertContext *ctx = make_ctx(cache_dir, cc, disable);
  TilertModule *mod = NULL;
  TilertStatus st = load(ctx, &mod);
  CHECK_STATUS(st, TILERT_OK, ctx);
  bool hit = tilert_module_from_cache(mod);
  if (mod) run_scale_add(mod, ctx, what);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  return hit;
}

/* ---- cache ---- */

void rt_scenario_cache_hit(RtLoader load) {
  char *dir = rt_test_mkdtemp("cache");
  CHECK(!load_and_run(load, dir, NULL, false, "first load"), "first load came from the cache");
  CHECK(rt_test_count(dir, ".so") == 1 && rt_test_count(dir, ".sum") == 1,
        "cache dir should hold one .so and one .sum, has %d entries", rt_test_count(dir, ""));
  CHECK(rt_test_count(dir, "") == 2, "stray files in the cache dir: %d entries",
        rt_test_count(dir, ""));
  CHECK(load_and_run(load, dir, NULL, false, "second load"), "second load missed the cache");

  /* Third load: "cc" on $PATH is now a fake that leaves a mark and fails,
   * so a hit must not run it. (The command is part of the key, so it must
   * stay "cc"; /bin/false as the command would be a different key.) */
  char *bin = rt_test_mkdtemp("fakebin");
  char script[1024], marker[1024], path[1024];
  snprintf(marker, sizeof marker, "%s/compiler-ran", bin);
  snprintf(script, sizeof script, "%s/cc", bin);
  FILE *f = fopen(script, "w");
  fprintf(f, "#!/bin/sh\nPATH=/usr/bin:/bin touch '%s'\nexit 1\n", marker);
  fclose(f);
  chmod(script, 0755);
  const char *old_path = getenv("PATH");
  snprintf(path, sizeof path, "%s", old_path ? old_path : "/usr/bin:/bin");
  setenv("PATH", bin, 1);
  CHECK(load_and_run(load, dir, NULL, false, "third load (fake cc)"),
        "third load missed the cache");
  CHECK(access(marker, F_OK) != 0, "the C compiler ran on a cache hit");
  /* Sanity: the fake compiler does fail when a build is needed. */
  {
    TilertContext *ctx = make_ctx(dir, NULL, true);
    TilertModule *mod = NULL;
    CHECK_STATUS(load(ctx, &mod), TILERT_CC_FAILED, ctx);
    CHECK(access(marker, F_OK) == 0, "the fake compiler did not run on a forced build");
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
  }
  setenv("PATH", path, 1);

  /* A different compiler command is a different key: /bin/false must build. */
  {
    TilertContext *ctx = make_ctx(dir, "/bin/false", false);
    TilertModule *mod = NULL;
    CHECK_STATUS(load(ctx, &mod), TILERT_CC_FAILED, ctx);
    CHECK(mod == NULL, "module handed out on failure");
    CHECK_CONTAINS(tilert_last_error(ctx), "/bin/false");
    tilert_context_destroy(ctx);
  }
  CHECK(rt_test_count(dir, "") == 2, "failed builds left files in the cache dir: %d entries",
        rt_test_count(dir, ""));
  CHECK(rt_test_no_stray_temp(), "temp files left in $TMPDIR");
  free(bin);
  free(dir);
}

void rt_scenario_corrupt_entry(RtLoader load) {
  char *dir = rt_test_mkdtemp("corrupt");
  CHECK(!load_and_run(load, dir, NULL, false, "fill"), "fresh dir hit");
  char *so = only_file(dir, ".so"), *sum = only_file(dir, ".sum");
  CHECK(so && sum, "no cache entry");
  if (!so || !sum) return;

  /* Overwrite bytes in the middle of the .so (no module holds it open). */
  struct stat st;
  stat(so, &st);
  int fd = open(so, O_WRONLY);
  unsigned char junk[64];
  memset(junk, 0xAB, sizeof junk);
  CHECK(pwrite(fd, junk, sizeof junk, st.st_size / 2) == (ssize_t)sizeof junk, "pwrite");
  close(fd);
  CHECK(!load_and_run(load, dir, NULL, false, "after corrupting the .so"),
        "a corrupted .so was trusted");
  CHECK(load_and_run(load, dir, NULL, false, "after the rebuild"), "the rebuilt entry missed");

  /* A truncated .so. */
  CHECK(truncate(so, 100) == 0, "truncate");
  CHECK(!load_and_run(load, dir, NULL, false, "after truncating the .so"),
        "a truncated .so was trusted");
  /* A garbled .sum. */
  FILE *f = fopen(sum, "w");
  fputs("tilert-sum 1\nsize 12\nsha256 00\n", f);
  fclose(f);
  CHECK(!load_and_run(load, dir, NULL, false, "after garbling the .sum"),
        "a bad .sum was trusted");
  /* A .so without its .sum. */
  unlink(sum);
  CHECK(!load_and_run(load, dir, NULL, false, "without a .sum"), "an entry without .sum was trusted");
  CHECK(load_and_run(load, dir, NULL, false, "final"), "the rebuilt entry missed");
  CHECK(rt_test_count(dir, "") == 2, "cache dir has %d entries, expected 2", rt_test_count(dir, ""));
  CHECK(rt_test_no_stray_temp(), "temp files left in $TMPDIR");
  free(so);
  free(sum);
  free(dir);
}

void rt_scenario_unusable_dir(RtLoader load) {
  char *base = rt_test_mkdtemp("unusable");
  char file[900], dir[1024], errpath[1024];
  snprintf(file, sizeof file, "%s/regular-file", base);
  snprintf(dir, sizeof dir, "%s/sub/cache", file);
  snprintf(errpath, sizeof errpath, "%s/stderr.txt", base);
  FILE *f = fopen(file, "w");
  fputs("not a directory\n", f);
  fclose(f);

  /* Catch stderr to count the warnings. */
  fflush(stderr);
  int saved = dup(2);
  int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(efd, 2);
  close(efd);
  TilertContext *ctx = make_ctx(dir, NULL, false);
  for (int round = 0; round < 2; round++) {
    TilertModule *mod = NULL;
    TilertStatus st = load(ctx, &mod);
    CHECK_STATUS(st, TILERT_OK, ctx);
    CHECK(!tilert_module_from_cache(mod), "from_cache with no usable cache");
    if (mod) run_scale_add(mod, ctx, "unusable cache dir");
    tilert_module_destroy(mod);
  }
  tilert_context_destroy(ctx);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);

  char text[4096] = "";
  f = fopen(errpath, "r");
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  text[n] = '\0';
  if (f) fclose(f);
  CHECK_CONTAINS(text, "warning: cache directory");
  CHECK_CONTAINS(text, "not usable");
  const char *first = strstr(text, "warning");
  CHECK(first && !strstr(first + 1, "warning"), "expected exactly one warning, got:\n%s", text);
  CHECK(rt_test_no_stray_temp(), "temp files left in $TMPDIR");
  free(base);
}

/* Entries of dir whose name starts with prefix. */
static int count_prefix(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (!strncmp(e->d_name, prefix, strlen(prefix)) && strcmp(e->d_name, ".") &&
        strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

/* The scale_add and scale2d kernels every RtLoader provides, as .tile text. */
const char rt_test_tile_src[] =
    "kernel scale_add(A: f32[n], B: f32[n], C: f32[n], alpha: f32)\n"
    "  const (block = 64)\n"
    "  grid (ceildiv(n, block)) threads (block) as (bx)\n"
    "{\n"
    "    a = alloc_fragment([block], f32);\n"
    "    b = alloc_fragment([block], f32);\n"
    "    copy(A[bx*block : (bx+1)*block], a);\n"
    "    copy(B[bx*block : (bx+1)*block], b);\n"
    "    for i in parallel(block) a[i] = a[i] * alpha + b[i];\n"
    "    copy(a, C[bx*block : (bx+1)*block]);\n"
    "}\n"
    "\n"
    "kernel scale2d(X: f32[m, k], Y: f32[m, k], s: f32)\n"
    "  const (k = 8, block = 16)\n"
    "  grid (ceildiv(m, block)) threads (block) as (bx)\n"
    "{\n"
    "    x = alloc_fragment([block, k], f32);\n"
    "    copy(X[bx*block : (bx+1)*block, :], x);\n"
    "    for i, j in parallel(block, k) x[i, j] = x[i, j] * s;\n"
    "    copy(x, Y[bx*block : (bx+1)*block, :]);\n"
    "}\n";


TilertStatus rt_test_load_tile(TilertContext *ctx, TilertModule **out) {
  return tilert_module_load_string(ctx, "scale.tile", rt_test_tile_src, strlen(rt_test_tile_src), NULL, 0, out);
}

void rt_test_check_one_cache_warning(const char *text, const char *dir, const char *what) {
  char want[1200];
  snprintf(want, sizeof want, "warning: cache directory '%s' is not usable", dir);
  CHECK(rt_test_occurrences(text, "warning") == 1 && rt_test_occurrences(text, want) == 1,
        "%s: expected exactly one warning containing \"%s\", got:\n%s", what, want, text);
}

void rt_scenario_unwritable_dir(RtLoader load, const char *dir, const char *what) {
  int before = rt_test_count(dir, "");
  rt_test_stderr_begin();
  TilertContext *ctx = make_ctx(dir, NULL, false);
  for (int round = 0; round < 2; round++) {
    TilertModule *mod = NULL;
    TilertStatus st = load(ctx, &mod);
    CHECK_STATUS(st, TILERT_OK, ctx);
    CHECK(!tilert_module_from_cache(mod), "%s: from_cache with an unwritable cache", what);
    if (mod) run_scale_add(mod, ctx, what);
    tilert_module_destroy(mod);
  }
  tilert_context_destroy(ctx);
  char *text = rt_test_stderr_end();
  rt_test_check_one_cache_warning(text, dir, what);
  CHECK(rt_test_count(dir, "") == before, "%s: the cache dir had %d entries, now %d", what, before,
        rt_test_count(dir, ""));
  CHECK(rt_test_count(dir, ".so") == 0 && rt_test_count(dir, ".sum") == 0 &&
            count_prefix(dir, ".tmp") == 0,
        "%s: a partial entry or temp file was left in %s", what, dir);
  CHECK(rt_test_no_stray_temp(), "%s: temp files left in $TMPDIR", what);
  free(text);
}

void rt_scenario_null_handles(RtLoader load) {
  TilertContext *ctx = make_ctx(NULL, NULL, true);
  TilertModule *mod = NULL;
  TilertKernel *k = NULL;
  /* Every destroy accepts NULL. */
  tilert_context_destroy(NULL);
  tilert_module_destroy(NULL);
  CHECK(tilert_device_free(ctx, NULL) == TILERT_OK, "device_free(ctx, NULL)");
  /* NULL handles: INVALID_ARGUMENT (there is no context to hold a message). */
  CHECK(tilert_context_create(NULL, NULL) == TILERT_INVALID_ARGUMENT, "context_create(NULL out)");
  CHECK(tilert_module_load_string(NULL, "x", "", 0, NULL, 0, &mod) == TILERT_INVALID_ARGUMENT &&
            mod == NULL,
        "load_string(NULL ctx)");
  CHECK(tilert_module_load_file(NULL, "x.tile", NULL, 0, &mod) == TILERT_INVALID_ARGUMENT,
        "load_file(NULL ctx)");
  CHECK(tilert_module_get_kernel(NULL, "scale_add", &k) == TILERT_INVALID_ARGUMENT && k == NULL,
        "get_kernel(NULL module)");
  CHECK(tilert_launch(NULL, NULL, 0, NULL) == TILERT_INVALID_ARGUMENT, "launch(NULL kernel)");
  CHECK(tilert_device_alloc(NULL, 16, (void **)&k) == TILERT_INVALID_ARGUMENT, "device_alloc(NULL)");
  CHECK(tilert_device_free(NULL, NULL) == TILERT_INVALID_ARGUMENT, "device_free(NULL ctx)");
  CHECK(tilert_copy_to_device(NULL, NULL, NULL, 0) == TILERT_INVALID_ARGUMENT, "copy_to_device(NULL)");
  CHECK(tilert_copy_to_host(NULL, NULL, NULL, 0) == TILERT_INVALID_ARGUMENT, "copy_to_host(NULL)");
  CHECK(!strcmp(tilert_last_error(NULL), "no context"), "last_error(NULL)");
  CHECK(!strcmp(tilert_context_device_note(NULL), ""), "device_note(NULL)");
  CHECK(tilert_kernel_info(NULL) == NULL, "kernel_info(NULL)");
  CHECK(!tilert_module_from_cache(NULL), "from_cache(NULL)");
  /* NULL out-pointers and names: INVALID_ARGUMENT with the call named. */
  CHECK_STATUS(tilert_module_load_string(ctx, "x", "", 0, NULL, 0, NULL), TILERT_INVALID_ARGUMENT, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "tilert_module_load_string: out is NULL");
  CHECK_STATUS(tilert_module_load_string(ctx, "x", NULL, 5, NULL, 0, &mod), TILERT_INVALID_ARGUMENT, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "tilert_module_load_string: text is NULL");
  CHECK_STATUS(tilert_module_load_string(ctx, "x", "", 0, NULL, 2, &mod), TILERT_INVALID_ARGUMENT, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "tilert_module_load_string: bad defines");
  CHECK_STATUS(tilert_module_load_file(ctx, NULL, NULL, 0, &mod), TILERT_INVALID_ARGUMENT, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "tilert_module_load_file: NULL argument");
  CHECK(mod == NULL, "a module handed out on a bad call");
  CHECK_STATUS(load(ctx, &mod), TILERT_OK, ctx);
  if (mod) {
    CHECK_STATUS(tilert_module_get_kernel(mod, NULL, &k), TILERT_INVALID_ARGUMENT, ctx);
    CHECK_CONTAINS(tilert_last_error(ctx), "tilert_module_get_kernel: NULL argument");
    CHECK_STATUS(tilert_module_get_kernel(mod, "scale_add", NULL), TILERT_INVALID_ARGUMENT, ctx);
    CHECK_STATUS(tilert_module_get_kernel(mod, "scale_add", &k), TILERT_OK, ctx);
  }
  if (k) {
    /* nargs says 4, args is NULL. */
    CHECK_STATUS(tilert_launch(k, NULL, 4, NULL), TILERT_LAUNCH_MISMATCH, ctx);
    CHECK_CONTAINS(tilert_last_error(ctx), "scale_add: args is NULL");
    CHECK_STATUS(tilert_launch(k, NULL, -1, NULL), TILERT_LAUNCH_MISMATCH, ctx);
    CHECK_CONTAINS(tilert_last_error(ctx), "scale_add: expected 4 arguments, got -1");
  }
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
}

void rt_scenario_cache_disabled(RtLoader load) {
  char *dir = rt_test_mkdtemp("disabled");
  CHECK(!load_and_run(load, dir, NULL, true, "disabled 1"), "hit with the cache disabled");
  CHECK(!load_and_run(load, dir, NULL, true, "disabled 2"), "hit with the cache disabled");
  setenv("TILEC_CACHE_DISABLE", "1", 1);
  CHECK(!load_and_run(load, dir, NULL, false, "TILEC_CACHE_DISABLE=1"), "hit with the env switch");
  unsetenv("TILEC_CACHE_DISABLE");
  CHECK(rt_test_count(dir, "") == 0, "disabled cache wrote %d files", rt_test_count(dir, ""));

  /* $TILEC_CACHE_DIR is where entries go when the config names none. */
  setenv("TILEC_CACHE_DIR", dir, 1);
  CHECK(!load_and_run(load, NULL, NULL, false, "TILEC_CACHE_DIR 1"), "hit in an empty dir");
  CHECK(load_and_run(load, NULL, NULL, false, "TILEC_CACHE_DIR 2"), "miss after filling");
  unsetenv("TILEC_CACHE_DIR");
  CHECK(rt_test_count(dir, ".so") == 1, "TILEC_CACHE_DIR not used");
  CHECK(rt_test_no_stray_temp(), "temp files left in $TMPDIR");
  free(dir);
}

/* ---- validation ---- */

/* Launches, expects LAUNCH_MISMATCH whose message contains `want`, and the
 * output `out` (n floats) untouched. */
static void expect_mismatch(TilertContext *ctx, TilertKernel *k, const TilertArg *args, int nargs,
                            const float *out, int n, const char *want) {
  TilertStatus st = tilert_launch(k, args, nargs, NULL);
  CHECK_STATUS(st, TILERT_LAUNCH_MISMATCH, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), want);
  CHECK(all_nan(out, n), "a rejected launch wrote its output (case: %s)", want);
}

void rt_scenario_validation(RtLoader load, bool exact) {
  char *dir = rt_test_mkdtemp("validate");
  TilertContext *ctx = make_ctx(dir, NULL, false);
  TilertModule *mod = NULL;
  CHECK_STATUS(load(ctx, &mod), TILERT_OK, ctx);
  if (!mod) return;
  TilertKernel *k = NULL, *k2 = NULL;
  CHECK_STATUS(tilert_module_get_kernel(mod, "scale_add", &k), TILERT_OK, ctx);
  CHECK_STATUS(tilert_module_get_kernel(mod, "scale2d", &k2), TILERT_OK, ctx);
  CHECK_STATUS(tilert_module_get_kernel(mod, "nope", &k), TILERT_NOT_FOUND, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "no kernel 'nope'");
  tilert_module_get_kernel(mod, "scale_add", &k);
  if (!k || !k2) return;
  const TilecKernelInfo *info = tilert_kernel_info(k);
  CHECK(info->nparams == 4 && info->ndynamic == 1 && !strcmp(info->dynamic_symbols[0], "n"),
        "scale_add's signature: %d params, %d dynamic", info->nparams, info->ndynamic);

  float A[N + 4], B[N], C[N];
  double B64[N];
  for (int i = 0; i < N + 4; i++) A[i] = a_val(i);
  for (int i = 0; i < N; i++) B[i] = b_val(i), B64[i] = b_val(i);
  poison(C, N);
  int64_t n = N, n99 = N - 1, shape2[2] = {N, 1};
  Tensor1 ta, tb, tc, bad;
  make_tensor(&ta, A, 1, &n), make_tensor(&tb, B, 1, &n), make_tensor(&tc, C, 1, &n);
  TilertArg args[5] = {tilert_arg_tensor(&ta.t), tilert_arg_tensor(&tb.t),
                       tilert_arg_tensor(&tc.t), tilert_arg_f32(alpha), tilert_arg_f32(0)};

  expect_mismatch(ctx, k, args, 3, C, N, "scale_add: expected 4 arguments, got 3");
  expect_mismatch(ctx, k, args, 5, C, N, "scale_add: expected 4 arguments, got 5");

  /* Wrong dtype: B as f64. */
  make_tensor(&bad, B64, 1, &n);
  bad.t.dtype.bits = 64;
  args[1] = tilert_arg_tensor(&bad.t);
  expect_mismatch(ctx, k, args, 4, C, N, "scale_add: argument 2 'B': dtype is float64, expected f32");
  bad.t.dtype.bits = 32, bad.t.dtype.lanes = 4;
  expect_mismatch(ctx, k, args, 4, C, N, "argument 2 'B': dtype is float32x4, expected f32");

  /* Wrong rank: A as [N, 1]. */
  make_tensor(&bad, A, 2, shape2);
  args[0] = tilert_arg_tensor(&bad.t), args[1] = tilert_arg_tensor(&tb.t);
  expect_mismatch(ctx, k, args, 4, C, N, "scale_add: argument 1 'A': rank is 2, expected 1 (f32[n])");

  /* A symbol bound by A, contradicted by B. */
  make_tensor(&bad, B, 1, &n99);
  args[0] = tilert_arg_tensor(&ta.t), args[1] = tilert_arg_tensor(&bad.t);
  expect_mismatch(ctx, k, args, 4, C, N,
                  "scale_add: argument 2 'B': dim 0 is 99 but n = 100 from argument 1 'A'");
  args[1] = tilert_arg_tensor(&tb.t);

  /* Non-compact strides on the output. */
  make_tensor(&bad, C, 1, &n);
  bad.strides[0] = 2;
  bad.t.strides = bad.strides;
  args[2] = tilert_arg_tensor(&bad.t);
  expect_mismatch(ctx, k, args, 4, C, N,
                  "scale_add: argument 3 'C': strides are not compact row-major: dim 0 has stride "
                  "2, expected 1");

  /* NULL data. */
  make_tensor(&bad, NULL, 1, &n);
  args[0] = tilert_arg_tensor(&bad.t), args[2] = tilert_arg_tensor(&tc.t);
  expect_mismatch(ctx, k, args, 4, C, N, "scale_add: argument 1 'A': data is NULL");

  /* Wrong device, a scalar for a tensor, a tensor for a scalar, a NULL DLTensor. */
  make_tensor(&bad, C, 1, &n);
  bad.t.device.device_type = kDLCUDA;
  args[0] = tilert_arg_tensor(&ta.t), args[2] = tilert_arg_tensor(&bad.t);
  expect_mismatch(ctx, k, args, 4, C, N, "scale_add: argument 3 'C': device is CUDA:0, expected CPU");
  args[2] = tilert_arg_f32(1.0);
  expect_mismatch(ctx, k, args, 4, C, N, "argument 3 'C': expected a tensor f32[n], got a scalar");
  args[2] = tilert_arg_tensor(&tc.t), args[3] = tilert_arg_tensor(&ta.t);
  expect_mismatch(ctx, k, args, 4, C, N, "argument 4 'alpha': expected a scalar f32, got a tensor");
  args[2] = tilert_arg_tensor(NULL), args[3] = tilert_arg_f32(alpha);
  expect_mismatch(ctx, k, args, 4, C, N, "argument 3 'C': the DLTensor pointer is NULL");

  /* A NULL shape, a negative dim, misaligned data. */
  make_tensor(&bad, B, 1, &n);
  bad.t.shape = NULL;
  args[1] = tilert_arg_tensor(&bad.t), args[2] = tilert_arg_tensor(&tc.t), args[3] = tilert_arg_f32(alpha);
  expect_mismatch(ctx, k, args, 4, C, N, "scale_add: argument 2 'B': shape is NULL");
  int64_t minus = -3;
  make_tensor(&bad, B, 1, &minus);
  expect_mismatch(ctx, k, args, 4, C, N, "scale_add: argument 2 'B': dim 0 is -3 (negative)");
  make_tensor(&bad, B, 1, &n);
  bad.t.byte_offset = 2; /* half a float in */
  expect_mismatch(ctx, k, args, 4, C, N, "scale_add: argument 2 'B': data + byte_offset");
  CHECK_CONTAINS(tilert_last_error(ctx), "is not aligned to 4 bytes");
  /* An unknown argument kind for the scalar. */
  args[1] = tilert_arg_tensor(&tb.t);
  args[3].kind = (TilertArgKind)42;
  expect_mismatch(ctx, k, args, 4, C, N, "scale_add: argument 4 'alpha': unknown argument kind 42");
  args[3] = tilert_arg_f32(alpha);

  /* Accepted: explicit compact strides, an int for a float scalar, byte_offset. */
  make_tensor(&bad, C, 1, &n);
  bad.strides[0] = 1;
  bad.t.strides = bad.strides;
  make_tensor(&ta, A, 1, &n);
  ta.t.byte_offset = 3 * sizeof(float); /* A[3..] */
  args[0] = tilert_arg_tensor(&ta.t), args[2] = tilert_arg_tensor(&bad.t), args[3] = tilert_arg_int(2);
  CHECK_STATUS(tilert_launch(k, args, 4, NULL), TILERT_OK, ctx);
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += !close_to(C[i], a_val(i + 3) * 2.0f + b_val(i));
  CHECK(wrong == 0, "byte_offset / int scalar launch: %d wrong outputs", wrong);

  /* Zero elements: NULL data is fine and nothing runs out of bounds. */
  int64_t zero = 0;
  Tensor1 z[3];
  for (int i = 0; i < 3; i++) make_tensor(&z[i], NULL, 1, &zero);
  TilertArg zargs[] = {tilert_arg_tensor(&z[0].t), tilert_arg_tensor(&z[1].t),
                       tilert_arg_tensor(&z[2].t), tilert_arg_f32(alpha)};
  CHECK_STATUS(tilert_launch(k, zargs, 4, NULL), TILERT_OK, ctx);

  /* scale2d: a constant dim, 2-D strides, size-1 dims. */
  float X[M2 * K2 * 2], Y[M2 * K2];
  for (int i = 0; i < M2 * K2 * 2; i++) X[i] = (float)i - 11.0f;
  poison(Y, M2 * K2);
  int64_t sx[2] = {M2, K2}, s7[2] = {M2, 7};
  Tensor1 tx, ty;
  make_tensor(&tx, X, 2, sx), make_tensor(&ty, Y, 2, sx);
  make_tensor(&bad, X, 2, s7);
  TilertArg a2[3] = {tilert_arg_tensor(&bad.t), tilert_arg_tensor(&ty.t), tilert_arg_f32(-2.0)};
  expect_mismatch(ctx, k2, a2, 3, Y, M2 * K2,
                  exact ? "scale2d: argument 1 'X': dim 1 is 7, expected 8 (k)"
                        : "scale2d: argument 1 'X': dim 1 is 7, expected 8");
  make_tensor(&bad, X, 2, sx);
  bad.strides[0] = 2 * K2, bad.strides[1] = 1; /* every other row */
  bad.t.strides = bad.strides;
  a2[0] = tilert_arg_tensor(&bad.t);
  expect_mismatch(ctx, k2, a2, 3, Y, M2 * K2,
                  "argument 1 'X': strides are not compact row-major: dim 0 has stride 16, expected 8");
  a2[0] = tilert_arg_tensor(&tx.t);
  CHECK_STATUS(tilert_launch(k2, a2, 3, NULL), TILERT_OK, ctx);
  wrong = 0;
  for (int i = 0; i < M2 * K2; i++) wrong += !close_to(Y[i], X[i] * -2.0f);
  CHECK(wrong == 0, "scale2d: %d wrong outputs", wrong);

  /* One row: the stride of a size-1 dim is ignored. */
  int64_t s1[2] = {1, K2};
  poison(Y, M2 * K2);
  make_tensor(&bad, X + K2, 2, s1);
  bad.strides[0] = 12345, bad.strides[1] = 1;
  bad.t.strides = bad.strides;
  make_tensor(&ty, Y, 2, s1);
  a2[0] = tilert_arg_tensor(&bad.t), a2[1] = tilert_arg_tensor(&ty.t);
  CHECK_STATUS(tilert_launch(k2, a2, 3, NULL), TILERT_OK, ctx);
  wrong = 0;
  for (int i = 0; i < K2; i++) wrong += !close_to(Y[i], X[K2 + i] * -2.0f);
  CHECK(wrong == 0 && all_nan(Y + K2, (M2 - 1) * K2), "scale2d one row: %d wrong outputs", wrong);

  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  free(dir);
}

const char rt_test_same_code_src[] =
    "kernel same(A: f32[n], C: f32[n])\n"
    "  const (factor = if_then_else(n < 10 || n >= 100, 3, if_then_else(n >= 50, 3, 2)), block = 32)\n"
    "  grid (ceildiv(n, block)) threads (block) as (bx)\n"
    "{\n"
    "    a = alloc_fragment([block], f32);\n"
    "    copy(A[bx*block : (bx+1)*block], a);\n"
    "    for i in parallel(block) a[i] = a[i] * factor;\n"
    "    copy(a, C[bx*block : (bx+1)*block]);\n"
    "}\n";
