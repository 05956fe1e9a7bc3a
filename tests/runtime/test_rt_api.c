/* test_rt_api.c - the runtime end to end through its public API and the
 * shared library: a .tile source compiled by tilec (emit C), built by the C
 * compiler, cached, and launched. The same scenarios as test_rt_hand.c
 * (cache miss/hit, corrupt entry, unusable dir, disabled cache, validation),
 * plus compile errors and -D bindings, and parameters declared with
 * strides (...): views accepted, bad layouts refused; shape choices: each
 * launch runs the build its shapes choose, and classes whose code is the
 * same are compiled once (a counting C compiler). */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_test.h"

/* "name:LINE:COL: error" somewhere in text. */
static bool has_location_error(const char *text, const char *name) {
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
    const char *q = p + strlen(name);
    if (*q++ != ':' || !isdigit((unsigned char)*q)) continue;
    while (isdigit((unsigned char)*q)) q++;
    if (*q++ != ':' || !isdigit((unsigned char)*q)) continue;
    while (isdigit((unsigned char)*q)) q++;
    if (!strncmp(q, ": error", 7)) return true;
  }
  return false;
}

/* A 1-D f32 tensor of *n elements at data, on the CPU. */
static void cpu_f32_vector(DLTensor *t, float *data, int64_t *n) {
  memset(t, 0, sizeof *t);
  t->data = data;
  t->device.device_type = kDLCPU;
  t->ndim = 1;
  t->dtype.code = kDLFloat, t->dtype.bits = 32, t->dtype.lanes = 1;
  t->shape = n;
}

static void test_compile_error(void) {
  TilertContext *ctx = NULL;
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, NULL};
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  static const char bad[] =
      "kernel broken(A: f32[n])\n"
      "  grid (1) threads (32) as (bx)\n"
      "{\n"
      "    a = alloc_fragment([32], f32)\n" /* missing ';' */
      "    copy(A[0 : 32], a);\n"
      "}\n";
  TilertModule *mod = NULL;
  TilertStatus st = tilert_module_load_string(ctx, "bad.tile", bad, sizeof bad - 1, NULL, 0, &mod);
  CHECK_STATUS(st, TILERT_COMPILE_ERROR, ctx);
  CHECK(mod == NULL, "module on a compile error");
  CHECK(has_location_error(tilert_last_error(ctx), "bad.tile"),
        "no 'bad.tile:line:col: error' in:\n%s", tilert_last_error(ctx));

  /* From a file: the path is the diagnostics' file name. */
  char *dir = rt_test_mkdtemp("tilefile");
  char path[1024];
  snprintf(path, sizeof path, "%s/broken.tile", dir);
  FILE *f = fopen(path, "w");
  fwrite(bad, 1, sizeof bad - 1, f);
  fclose(f);
  st = tilert_module_load_file(ctx, path, NULL, 0, &mod);
  CHECK_STATUS(st, TILERT_COMPILE_ERROR, ctx);
  CHECK(has_location_error(tilert_last_error(ctx), path), "no '%s:line:col: error' in:\n%s", path,
        tilert_last_error(ctx));

  /* The good source from a file, with n bound by -D: the signature has no
   * dynamic symbol left and the launch checks the constant. */
  snprintf(path, sizeof path, "%s/scale.tile", dir);
  f = fopen(path, "w");
  fwrite(rt_test_tile_src, 1, strlen(rt_test_tile_src), f);
  fclose(f);
  TilecDefine defs[] = {{"n", "100"}};
  st = tilert_module_load_file(ctx, path, defs, 1, &mod);
  CHECK_STATUS(st, TILERT_OK, ctx);
  TilertKernel *k = NULL;
  if (mod) CHECK_STATUS(tilert_module_get_kernel(mod, "scale_add", &k), TILERT_OK, ctx);
  if (k) {
    const TilecKernelInfo *info = tilert_kernel_info(k);
    CHECK(info->ndynamic == 0, "n bound by -D is still dynamic (%d symbols)", info->ndynamic);
    CHECK(!info->params[0].dims[0].is_dynamic && info->params[0].dims[0].value == 100,
          "A's dim is not the constant 100");
    float A[99], B[99], C[99];
    for (int i = 0; i < 99; i++) A[i] = B[i] = 1.0f, C[i] = -1.0f;
    int64_t n = 99;
    DLTensor t[3];
    float *bufs[3] = {A, B, C};
    for (int i = 0; i < 3; i++) cpu_f32_vector(&t[i], bufs[i], &n);
    TilertArg args[] = {tilert_arg_tensor(&t[0]), tilert_arg_tensor(&t[1]),
                        tilert_arg_tensor(&t[2]), tilert_arg_f32(2.0)};
    CHECK_STATUS(tilert_launch(k, args, 4, NULL), TILERT_LAUNCH_MISMATCH, ctx);
    CHECK_CONTAINS(tilert_last_error(ctx), "scale_add: argument 1 'A': dim 0 is 99, expected 100");
    CHECK(C[0] == -1.0f && C[98] == -1.0f, "rejected launch wrote C");
  }
  tilert_module_destroy(mod);
  mod = NULL;

  /* A -D name the source does not have: INVALID_ARGUMENT with the
   * compiler's words; a device the enum does not have: no context. */
  TilecDefine nope[] = {{"no_such", "1"}};
  st = tilert_module_load_string(ctx, "scale.tile", rt_test_tile_src, strlen(rt_test_tile_src), nope, 1, &mod);
  CHECK_STATUS(st, TILERT_INVALID_ARGUMENT, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "scale.tile: bad compile options");
  CHECK_CONTAINS(tilert_last_error(ctx), "no_such");
  CHECK(mod == NULL, "module on bad defines");
  tilert_context_destroy(ctx);
  TilertConfig weird = {(TilertDevice)7, NULL, true, NULL};
  ctx = (TilertContext *)1;
  CHECK(tilert_context_create(&weird, &ctx) == TILERT_INVALID_ARGUMENT && ctx == NULL,
        "an unknown device was accepted");
  free(dir);
}

/* ---- strides (...) ----------------------------------------------------------- */

static const char strided_src[] =
    "kernel add(X: f32[m, k] strides(sx, 1), Z: f32[m, k] strides(sx, 1), Y: f32[m, k] strides(sy, 1))\n"
    "  const (k = 8, block = 16)\n"
    "  grid (ceildiv(m, block)) threads (block) as (bx)\n"
    "{\n"
    "    x = alloc_fragment([block, k], f32);\n"
    "    z = alloc_fragment([block, k], f32);\n"
    "    copy(X[bx*block : (bx+1)*block, :], x);\n"
    "    copy(Z[bx*block : (bx+1)*block, :], z);\n"
    "    for i, j in parallel(block, k) x[i, j] = x[i, j] + z[i, j];\n"
    "    copy(x, Y[bx*block : (bx+1)*block, :]);\n"
    "}\n";

enum { SM = 21, SK = 8, PITCH = 12, MAXEL = SM * 16 };

/* A 2-D f32 view [m, SK] over `base` with the given strides (NULL: none). */
typedef struct View2 {
  DLTensor t;
  int64_t shape[2], strides[2];
} View2;

static void view2(View2 *v, float *base, int64_t m, const int64_t *strides) {
  memset(v, 0, sizeof *v);
  v->shape[0] = m, v->shape[1] = SK;
  v->t.data = base;
  v->t.device.device_type = kDLCPU;
  v->t.ndim = 2;
  v->t.dtype = (DLDataType){kDLFloat, 32, 1};
  v->t.shape = v->shape;
  if (strides) {
    v->strides[0] = strides[0], v->strides[1] = strides[1];
    v->t.strides = v->strides;
  }
}

static TilertStatus launch3(TilertKernel *k, View2 *x, View2 *z, View2 *y) {
  TilertArg a[3] = {tilert_arg_tensor(&x->t), tilert_arg_tensor(&z->t), tilert_arg_tensor(&y->t)};
  return tilert_launch(k, a, 3, NULL);
}

static void test_strides(void) {
  TilertContext *ctx = NULL;
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, NULL};
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  TilertModule *mod = NULL;
  TilertKernel *k = NULL;
  CHECK_STATUS(tilert_module_load_string(ctx, "strided.tile", strided_src, sizeof strided_src - 1, NULL, 0, &mod),
               TILERT_OK, ctx);
  if (!mod) return;
  CHECK_STATUS(tilert_module_get_kernel(mod, "add", &k), TILERT_OK, ctx);
  const TilecKernelInfo *info = tilert_kernel_info(k);
  CHECK(info->ndynamic == 3 && info->params[0].has_strides && info->params[0].strides[0].is_dynamic &&
            !info->params[0].strides[1].is_dynamic && info->params[0].strides[1].value == 1,
        "kernel info of a strided parameter: ndynamic %d", info->ndynamic);

  static float X[MAXEL], Z[MAXEL], Y[MAXEL];
  for (int i = 0; i < MAXEL; i++) X[i] = (float)i * 0.5f, Z[i] = 1000.0f - (float)i;
  /* X and Z: rows padded to PITCH (Z starting at column 2: a slice); Y: compact. */
  View2 x, z, y;
  view2(&x, X, SM, (int64_t[]){PITCH, 1});
  view2(&z, Z + 2, SM, (int64_t[]){PITCH, 1});
  for (int i = 0; i < MAXEL; i++) Y[i] = NAN;
  view2(&y, Y, SM, NULL);
  CHECK_STATUS(launch3(k, &x, &z, &y), TILERT_OK, ctx);
  int wrong = 0;
  for (int i = 0; i < SM; i++)
    for (int j = 0; j < SK; j++) wrong += Y[i * SK + j] != X[i * PITCH + j] + Z[2 + i * PITCH + j];
  CHECK(wrong == 0 && isnan(Y[SM * SK]), "padded inputs, compact output: %d wrong", wrong);

  /* Y padded to 10 (dim 0 of stride 10): its pads stay NaN. */
  for (int i = 0; i < MAXEL; i++) Y[i] = NAN;
  view2(&y, Y, SM, (int64_t[]){10, 1});
  CHECK_STATUS(launch3(k, &x, &z, &y), TILERT_OK, ctx);
  wrong = 0;
  int pads = 0;
  for (int i = 0; i < SM; i++) {
    for (int j = 0; j < SK; j++) wrong += Y[i * 10 + j] != X[i * PITCH + j] + Z[2 + i * PITCH + j];
    pads += !isnan(Y[i * 10 + 8]) + !isnan(Y[i * 10 + 9]);
  }
  CHECK(wrong == 0 && pads == 0, "padded output: %d wrong, %d pads written", wrong, pads);

  /* Refused layouts; the output stays untouched. */
  struct {
    int64_t strides[2];
    int which; /* 0: X, 2: Y */
    const char *want;
  } bad[] = {
      {{PITCH, 2}, 0, "add: argument 1 'X': the innermost dim 1 has stride 2; tensors need a contiguous last dim"},
      {{-PITCH, 1}, 0, "add: argument 1 'X': dim 0 has stride -12; strides must be positive"},
      {{0, 1}, 2, "add: argument 3 'Y': dim 0 has stride 0; strides must be positive"},
      {{4, 1}, 2, "add: argument 3 'Y': strides overlap: dim 0 (stride 4) steps inside dim 1 (stride 1 x 8 elements)"},
  };
  for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    for (int i = 0; i < MAXEL; i++) Y[i] = NAN;
    View2 b, yy;
    view2(&b, bad[c].which == 0 ? X + 4 * PITCH : Y, SM, bad[c].strides);
    view2(&yy, Y, SM, NULL);
    TilertStatus st = bad[c].which == 0 ? launch3(k, &b, &z, &yy) : launch3(k, &x, &z, &b);
    CHECK_STATUS(st, TILERT_LAUNCH_MISMATCH, ctx);
    CHECK_CONTAINS(tilert_last_error(ctx), bad[c].want);
    int written = 0;
    for (int i = 0; i < MAXEL; i++) written += !isnan(Y[i]);
    CHECK(written == 0, "a refused launch wrote %d elements (%s)", written, bad[c].want);
  }
  /* X and Z share sx: a Z of another pitch is refused. */
  View2 z10;
  view2(&z10, Z, SM, (int64_t[]){10, 1});
  view2(&y, Y, SM, NULL);
  CHECK_STATUS(launch3(k, &x, &z10, &y), TILERT_LAUNCH_MISMATCH, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "add: argument 2 'Z': stride 0 is 10 but sx = 12 from argument 1 'X'");
  /* One row: its stride is never stepped, so any value goes. */
  View2 x1, z1, y1;
  view2(&x1, X, 1, (int64_t[]){99999, 1});
  view2(&z1, Z, 1, NULL);
  for (int i = 0; i < MAXEL; i++) Y[i] = NAN;
  view2(&y1, Y, 1, (int64_t[]){-5, 1});
  CHECK_STATUS(launch3(k, &x1, &z1, &y1), TILERT_OK, ctx);
  wrong = 0;
  for (int j = 0; j < SK; j++) wrong += Y[j] != X[j] + Z[j];
  CHECK(wrong == 0 && isnan(Y[SK]), "one row: %d wrong", wrong);
  tilert_module_destroy(mod);

  /* -D sy=8 binds Y's row stride: compact Y only, and sy is not dynamic. */
  TilecDefine sy = {"sy", "8"};
  mod = NULL;
  CHECK_STATUS(tilert_module_load_string(ctx, "strided.tile", strided_src, sizeof strided_src - 1, &sy, 1, &mod),
               TILERT_OK, ctx);
  if (mod) {
    CHECK_STATUS(tilert_module_get_kernel(mod, "add", &k), TILERT_OK, ctx);
    CHECK(tilert_kernel_info(k)->ndynamic == 2, "sy bound with -D is still dynamic");
    view2(&y, Y, SM, (int64_t[]){10, 1});
    CHECK_STATUS(launch3(k, &x, &z, &y), TILERT_LAUNCH_MISMATCH, ctx);
    CHECK_CONTAINS(tilert_last_error(ctx), "add: argument 3 'Y': stride 0 is 10, expected 8 (sy)");
    view2(&y, Y, SM, NULL);
    CHECK_STATUS(launch3(k, &x, &z, &y), TILERT_OK, ctx);
  }
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
}

/* ---- shape choices ----------------------------------------------------------- */

/* factor and block follow n, known only at launch: each launch must run the
 * build whose conditions hold for its n (the factor shows which one ran). */
static const char choice_src[] =
    "kernel pick(A: f32[n], C: f32[n])\n"
    "  const (factor = if_then_else(n >= 100, 3, 2), block = if_then_else(n >= 1000 && n < 5000, 128, 32))\n"
    "  grid (ceildiv(n, block)) threads (block) as (bx)\n"
    "{\n"
    "    a = alloc_fragment([block], f32);\n"
    "    copy(A[bx*block : (bx+1)*block], a);\n"
    "    for i in parallel(block) a[i] = a[i] * factor;\n"
    "    copy(a, C[bx*block : (bx+1)*block]);\n"
    "}\n";

/* Launches pick on n elements; true when C = A * want_factor everywhere. */
static bool run_pick(TilertContext *ctx, TilertKernel *k, int64_t n, float want_factor) {
  float *A = malloc((size_t)n * sizeof *A), *C = malloc((size_t)n * sizeof *C);
  for (int64_t i = 0; i < n; i++) A[i] = (float)(i % 97) - 40.0f, C[i] = NAN;
  DLTensor t[2];
  cpu_f32_vector(&t[0], A, &n);
  cpu_f32_vector(&t[1], C, &n);
  TilertArg args[] = {tilert_arg_tensor(&t[0]), tilert_arg_tensor(&t[1])};
  TilertStatus st = tilert_launch(k, args, 2, NULL);
  CHECK_STATUS(st, TILERT_OK, ctx);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (!(C[i] == A[i] * want_factor)) {
      if (bad++ < 2) CHECK(false, "n = %lld: C[%lld] = %g, expected %g", (long long)n, (long long)i, C[i], A[i] * want_factor);
    }
  free(A), free(C);
  return st == TILERT_OK && bad == 0;
}

static void test_shape_choices(void) {
  TilertContext *ctx = NULL;
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, NULL};
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  TilertModule *mod = NULL;
  TilertStatus st = tilert_module_load_string(ctx, "pick.tile", choice_src, strlen(choice_src), NULL, 0, &mod);
  CHECK_STATUS(st, TILERT_OK, ctx);
  TilertKernel *k = NULL;
  if (mod) CHECK_STATUS(tilert_module_get_kernel(mod, "pick", &k), TILERT_OK, ctx);
  if (k) {
    /* Both ways of each condition, in an order that goes back to builds
     * made before; n = 1000..4999 also takes the 128-element blocks. */
    const int64_t ns[] = {1, 99, 100, 1000, 4999, 5000, 37, 2049, 100};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
      CHECK(run_pick(ctx, k, ns[i], ns[i] >= 100 ? 3.0f : 2.0f), "shape choice at n = %lld", (long long)ns[i]);
  }
  tilert_module_destroy(mod);
  mod = NULL;

  /* n bound by -D: the conditions fold, one build, no choice left. */
  TilecDefine defs[] = {{"n", "150"}};
  st = tilert_module_load_string(ctx, "pick.tile", choice_src, strlen(choice_src), defs, 1, &mod);
  CHECK_STATUS(st, TILERT_OK, ctx);
  if (mod) CHECK_STATUS(tilert_module_get_kernel(mod, "pick", &k), TILERT_OK, ctx);
  if (mod && k) CHECK(run_pick(ctx, k, 150, 3.0f), "n bound by -D");
  tilert_module_destroy(mod);
  mod = NULL;

  /* A const that uses a launch-time shape outside a condition: an error at
   * the const, saying what is allowed. */
  static const char bad[] =
      "kernel half(A: f32[n], C: f32[n])\n"
      "  const (block = n / 2)\n"
      "  grid (1) threads (32) as (bx)\n"
      "{\n"
      "    a = alloc_fragment([32], f32);\n"
      "    copy(A[0 : 32], a);\n"
      "    copy(a, C[0 : 32]);\n"
      "}\n";
  st = tilert_module_load_string(ctx, "half.tile", bad, strlen(bad), NULL, 0, &mod);
  CHECK_STATUS(st, TILERT_COMPILE_ERROR, ctx);
  CHECK(has_location_error(tilert_last_error(ctx), "half.tile"), "no location in:\n%s", tilert_last_error(ctx));
  CHECK_CONTAINS(tilert_last_error(ctx), "const 'block' depends on the shape symbol 'n'");
  tilert_context_destroy(ctx);
}

/* ---- shape classes with the same code ----------------------------------------- */

/* factor is 2 for 10 <= n < 50 (class 0) and 3 otherwise: class 1 (n < 10),
 * class 2 (50 <= n < 100) and class 3 (n >= 100) all take factor 3, and
 * their generated code differs only in the comment that says which way
 * each choice went. */
static const char *const same_src = rt_test_same_code_src;

/* A C compiler command that counts its runs: <dir>/cc appends a line to
 * <dir>/runs, then runs cc. */
static void counting_cc(const char *dir, char *cmd, size_t cap) {
  snprintf(cmd, cap, "%s/cc", dir);
  FILE *f = fopen(cmd, "w");
  if (f) {
    fprintf(f, "#!/bin/sh\necho run >> '%s/runs'\nexec cc \"$@\"\n", dir);
    fclose(f);
  }
  chmod(cmd, 0755);
}

static int cc_runs(const char *dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/runs", dir);
  FILE *f = fopen(path, "r");
  int n = 0;
  for (int c; f && (c = fgetc(f)) != EOF;) n += c == '\n';
  if (f) fclose(f);
  return n;
}

static void remove_files(const char *dir) {
  DIR *d = opendir(dir);
  char path[1024];
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
}

/* Loads same_src in a context whose C compiler is `cc`; NULL on failure. */
static TilertKernel *load_same(TilertContext *ctx, TilertModule **mod) {
  TilertKernel *k = NULL;
  CHECK_STATUS(tilert_module_load_string(ctx, "same.tile", same_src, strlen(same_src), NULL, 0, mod), TILERT_OK,
               ctx);
  if (*mod) CHECK_STATUS(tilert_module_get_kernel(*mod, "same", &k), TILERT_OK, ctx);
  return k;
}

/* Shape classes whose code is the same are compiled once: the first launch
 * of class 2 or 3 after class 1 was built runs class 1's build, with no C
 * compiler run and no cache lookup or write (its files are deleted first:
 * a lookup would miss and compile, a write would leave a file); and a
 * class's cache entry serves the classes with its code in a later context. */
static void test_shape_class_sharing(void) {
  char *tools = rt_test_mkdtemp("counting-cc");
  char cc[1024];
  counting_cc(tools, cc, sizeof cc);
  const int64_t ns[] = {5, 60, 150, 20, 7, 99, 1000};
  const float factors[] = {3, 3, 3, 2, 3, 3, 3};

  /* No cache: every build is a compile. */
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, cc};
  TilertContext *ctx = NULL;
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  TilertModule *mod = NULL;
  TilertKernel *k = load_same(ctx, &mod);
  CHECK(cc_runs(tools) == 1, "the load compiled %d times", cc_runs(tools));
  for (size_t i = 0; k && i < sizeof ns / sizeof *ns; i++) {
    CHECK(run_pick(ctx, k, ns[i], factors[i]), "same.tile at n = %lld", (long long)ns[i]);
    /* Class 0 at the load, class 1 at n = 5; classes 2 and 3 run class 1's build. */
    CHECK(cc_runs(tools) == 2, "after n = %lld: %d compiles, expected 2", (long long)ns[i], cc_runs(tools));
  }
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);

  /* A cache directory: after class 1 is built its files are removed. */
  char *dir = rt_test_mkdtemp("same-cache");
  cfg.cache_dir = dir;
  cfg.disable_cache = false;
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  mod = NULL;
  k = load_same(ctx, &mod);
  int runs = cc_runs(tools);
  if (k) {
    CHECK(run_pick(ctx, k, 5, 3.0f), "class 1");
    CHECK(cc_runs(tools) == runs + 1 && rt_test_count(dir, ".so") == 2, "class 1: %d compiles, %d entries",
          cc_runs(tools) - runs, rt_test_count(dir, ".so"));
    remove_files(dir);
    CHECK(run_pick(ctx, k, 60, 3.0f), "class 2");
    CHECK(run_pick(ctx, k, 150, 3.0f), "class 3");
    CHECK(cc_runs(tools) == runs + 1, "classes 2 and 3 compiled %d times", cc_runs(tools) - runs - 1);
    CHECK(rt_test_count(dir, "") == 0, "classes 2 and 3 wrote %d files into the cache", rt_test_count(dir, ""));
  }
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);

  /* One entry for the classes of one code: class 3 builds it, and a fresh
   * context's class 1 and 2 find it (the key leaves out which way the
   * choices went). */
  remove_files(dir);
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  mod = NULL;
  k = load_same(ctx, &mod);
  if (k) CHECK(run_pick(ctx, k, 150, 3.0f), "class 3 first");
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  runs = cc_runs(tools);
  CHECK(rt_test_count(dir, ".so") == 2, "classes 0 and 3: %d entries", rt_test_count(dir, ".so"));
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  mod = NULL;
  k = load_same(ctx, &mod);
  CHECK(mod && tilert_module_from_cache(mod), "class 0 missed the cache");
  if (k) {
    CHECK(run_pick(ctx, k, 5, 3.0f), "class 1 from class 3's entry");
    CHECK(run_pick(ctx, k, 60, 3.0f), "class 2 from class 3's entry");
  }
  CHECK(cc_runs(tools) == runs && rt_test_count(dir, ".so") == 2, "a fresh context compiled %d times, %d entries",
        cc_runs(tools) - runs, rt_test_count(dir, ".so"));
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  free(dir);
  free(tools);
}

/* A context destroyed before its modules (a garbage collector's order) stays
 * until the last of them goes: the module still launches, and destroying it
 * frees both (ASan/LSan in the sanitizer build check there is no read of
 * freed memory and no leak). */
static void test_destroy_order(void) {
  TilertContext *ctx = NULL;
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, NULL};
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  TilertModule *a = NULL, *b = NULL;
  CHECK_STATUS(tilert_module_load_string(ctx, "pick.tile", choice_src, strlen(choice_src), NULL, 0, &a), TILERT_OK, ctx);
  CHECK_STATUS(tilert_module_load_string(ctx, "pick.tile", choice_src, strlen(choice_src), NULL, 0, &b), TILERT_OK, ctx);
  tilert_context_destroy(ctx);
  tilert_module_destroy(a);
  TilertKernel *k = NULL;
  if (b && tilert_module_get_kernel(b, "pick", &k) == TILERT_OK)
    CHECK(run_pick(ctx, k, 150, 3.0f), "a module of a destroyed context no longer launches");
  else
    CHECK(false, "no kernel 'pick' in the second module");
  tilert_module_destroy(b);
}

int main(void) {
  rt_test_init();
  test_compile_error();
  test_shape_choices();
  test_shape_class_sharing();
  test_destroy_order();
  test_strides();
  rt_scenario_cache_hit(rt_test_load_tile);
  rt_scenario_corrupt_entry(rt_test_load_tile);
  rt_scenario_unusable_dir(rt_test_load_tile);
  rt_scenario_cache_disabled(rt_test_load_tile);
  rt_scenario_validation(rt_test_load_tile, false);
  rt_scenario_null_handles(rt_test_load_tile);
  if (rt_test_failures) fprintf(stderr, "test_rt_api: %d failure(s)\n", rt_test_failures);
  else printf("test_rt_api: all passed\n");
  return rt_test_failures != 0;
}
