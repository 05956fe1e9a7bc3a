/* test_rt_hand.c - the runtime's cache, C compiler driver, dlopen and launch
 * validation, driven by hand-written C (the generated-code ABI of tilec.h)
 * and hand-written kernel signatures through rt_cpu_module_from_c, so these
 * parts are tested without the compiler. Also: CC_FAILED carries the C
 * compiler's output, the cache key's ingredients, device selection. */
#include <errno.h>
#include <stdlib.h>

#include "rt_internal.h"
#include "rt_test.h"

static const char hand_c[] =
    "#include <stdint.h>\n"
    "void tilec_scale_add(void **args, const int64_t *dyn) {\n"
    "  const float *A = args[0], *B = args[1];\n"
    "  float *C = args[2];\n"
    "  float alpha = *(const float *)args[3];\n"
    "  for (int64_t i = 0; i < dyn[0]; i++) C[i] = A[i] * alpha + B[i];\n"
    "}\n"
    "void tilec_scale2d(void **args, const int64_t *dyn) {\n"
    "  const float *X = args[0];\n"
    "  float *Y = args[1];\n"
    "  float s = *(const float *)args[2];\n"
    "  for (int64_t i = 0; i < dyn[0] * 8; i++) Y[i] = X[i] * s;\n"
    "}\n";

static const char *const sa_syms[] = {"n"};
static const TilecParamInfo sa_params[] = {
    {"A", true, TILEC_DTYPE_F32, 1, {{true, 0, 0, NULL}}},
    {"B", true, TILEC_DTYPE_F32, 1, {{true, 0, 0, NULL}}},
    {"C", true, TILEC_DTYPE_F32, 1, {{true, 0, 0, NULL}}},
    {"alpha", false, TILEC_DTYPE_F32, 0, {{false, 0, 0, NULL}}},
};
static const TilecKernelInfo sa_info = {"scale_add", "tilec_scale_add", 4, sa_params, 1, sa_syms, 64, 0};

static const char *const s2_syms[] = {"m"};
static const TilecParamInfo s2_params[] = {
    {"X", true, TILEC_DTYPE_F32, 2, {{true, 0, 0, NULL}, {false, 8, 0, "k"}}},
    {"Y", true, TILEC_DTYPE_F32, 2, {{true, 0, 0, NULL}, {false, 8, 0, "k"}}},
    {"s", false, TILEC_DTYPE_F32, 0, {{false, 0, 0, NULL}}},
};
static const TilecKernelInfo s2_info = {"scale2d", "tilec_scale2d", 3, s2_params, 1, s2_syms, 16, 0};

static const TilecKernelInfo *const kernels[] = {&sa_info, &s2_info};

static TilertStatus load_hand(TilertContext *ctx, TilertModule **out) {
  return rt_cpu_module_from_c(ctx, "hand.c", hand_c, sizeof hand_c - 1, "hand-written", kernels,
                              2, NULL, out);
}

static void test_cc_failure(void) {
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, NULL};
  TilertContext *ctx = NULL;
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  static const char broken[] = "void tilec_scale_add(void **a, const long *d) { return 1 +; }\n";
  TilertModule *mod = NULL;
  TilertStatus st = rt_cpu_module_from_c(ctx, "broken.c", broken, sizeof broken - 1, "x",
                                         kernels, 1, NULL, &mod);
  CHECK_STATUS(st, TILERT_CC_FAILED, ctx);
  CHECK(mod == NULL, "module on failure");
  const char *e = tilert_last_error(ctx);
  CHECK_CONTAINS(e, "broken.c: the C compiler failed");
  CHECK_CONTAINS(e, "error");                       /* the compiler's own words */
  CHECK_CONTAINS(e, "-std=c11 -O2 -shared -fPIC"); /* the command line */

  /* A missing entry symbol is LOAD_FAILED, not a crash at launch. */
  static const char other[] = "void something_else(void) {}\n";
  st = rt_cpu_module_from_c(ctx, "other.c", other, sizeof other - 1, "y", kernels, 1, NULL, &mod);
  CHECK_STATUS(st, TILERT_LOAD_FAILED, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "no symbol 'tilec_scale_add'");
  tilert_context_destroy(ctx);

  /* $TILEC_CC is honoured: a command that does not exist. */
  setenv("TILEC_CC", "/nonexistent/tilec-cc --flag", 1);
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  unsetenv("TILEC_CC");
  st = load_hand(ctx, &mod);
  CHECK_STATUS(st, TILERT_CC_FAILED, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "cannot run the C compiler '/nonexistent/tilec-cc'");
  tilert_context_destroy(ctx);

  /* A command with arguments: the extra -D must reach the compiler. */
  cfg.cc = "cc -DTILERT_TEST_FLAG=1 -Werror";
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  static const char needs_flag[] =
      "#if !TILERT_TEST_FLAG\n#error flag missing\n#endif\n"
      "#include <stdint.h>\nvoid tilec_scale_add(void **a, const int64_t *d) {(void)a; (void)d;}\n";
  st = rt_cpu_module_from_c(ctx, "flag.c", needs_flag, sizeof needs_flag - 1, "z", kernels, 1,
                            NULL, &mod);
  CHECK_STATUS(st, TILERT_OK, ctx);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  CHECK(rt_test_no_stray_temp(), "temp files left in $TMPDIR");
}

static void test_key(void) {
  char k1[65], k2[65], k3[65], k4[65], k5[65];
  rt_cpu_cache_key("cc", "ir", "c", 1, k1);
  rt_cpu_cache_key("cc", "ir", "c", 1, k2);
  CHECK(strcmp(k1, k2) == 0 && strlen(k1) == 64, "key not deterministic");
  rt_cpu_cache_key("gcc", "ir", "c", 1, k3);
  rt_cpu_cache_key("cc", "ir2", "c", 1, k4);
  rt_cpu_cache_key("cc", "ir", "d", 1, k5);
  CHECK(strcmp(k1, k3) && strcmp(k1, k4) && strcmp(k1, k5), "key ignores an ingredient");
  /* Field boundaries are part of the key: ("cc", "xir") != ("ccx", "ir"). */
  rt_cpu_cache_key("ccx", "ir", "c", 1, k3);
  rt_cpu_cache_key("cc", "xir", "c", 1, k4);
  CHECK(strcmp(k3, k4), "key fields run together");
}

static void test_context(void) {
  TilertContext *ctx = NULL;
  /* AUTO and CUDA on this machine: test_rt_gpu_ci.c checks both ways (with
   * and without a usable GPU); here only what holds everywhere. */
  CHECK(tilert_context_create(NULL, &ctx) == TILERT_OK, "default context");
  if (tilert_context_device(ctx) == TILERT_DEVICE_CPU)
    CHECK_CONTAINS(tilert_context_device_note(ctx), "GPU path off: ");
  else
    CHECK_CONTAINS(tilert_context_device_note(ctx), "CUDA device 0: ");
  CHECK(strcmp(tilert_last_error(ctx), "") == 0, "fresh context has an error");
  tilert_context_destroy(ctx);

  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, false, NULL};
  TilertStatus st = tilert_context_create(&cfg, &ctx);
  CHECK(st == TILERT_OK && tilert_context_device(ctx) == TILERT_DEVICE_CPU, "CPU request: %s",
        tilert_strerror(st));
  CHECK_CONTAINS(tilert_context_device_note(ctx), "the CPU was requested");
  CHECK(ctx->cu == NULL, "a CPU context opened CUDA");
  TilertModule *mod = NULL;
  tilert_context_destroy(ctx);

  /* IO_ERROR names the path and the reason. */
  tilert_context_create(NULL, &ctx);
  st = tilert_module_load_file(ctx, "/nonexistent/dir/k.tile", NULL, 0, &mod);
  CHECK_STATUS(st, TILERT_IO_ERROR, ctx);
  CHECK_CONTAINS(tilert_last_error(ctx), "'/nonexistent/dir/k.tile': No such file or directory");
  tilert_context_destroy(ctx);

  /* Status names, NULL handles. */
  CHECK(!strcmp(tilert_strerror(TILERT_OK), "ok"), "strerror(OK)");
  CHECK(!strcmp(tilert_strerror(TILERT_LAUNCH_MISMATCH), "arguments do not match the kernel's signature"),
        "strerror(LAUNCH_MISMATCH)");
  CHECK(!strcmp(tilert_strerror((TilertStatus)999), "unknown status"), "strerror(999)");
  CHECK(!strcmp(tilert_version(), TILEC_VERSION_STRING), "version");
  tilert_context_destroy(NULL);
  tilert_module_destroy(NULL);
  CHECK(tilert_launch(NULL, NULL, 0, NULL) == TILERT_INVALID_ARGUMENT, "launch(NULL)");
  CHECK(!tilert_module_from_cache(NULL), "from_cache(NULL)");
}

/* A full disk, through the test seam: every write into the cache fails
 * with ENOSPC after half its bytes (runtime_cache_fs does it on a real full
 * tmpfs where a mount namespace can be made). */
static void test_full_cache(void) {
  char *dir = rt_test_mkdtemp("full");
  rt_cache_fault_errno = ENOSPC;
  rt_scenario_unwritable_dir(load_hand, dir, "injected ENOSPC");
  rt_cache_fault_errno = 0;
  /* The same directory works again once there is space. */
  TilertConfig cfg = {TILERT_DEVICE_CPU, dir, false, NULL};
  TilertContext *ctx = NULL;
  TilertModule *mod = NULL;
  tilert_context_create(&cfg, &ctx);
  CHECK_STATUS(load_hand(ctx, &mod), TILERT_OK, ctx);
  CHECK(rt_test_count(dir, ".so") == 1 && rt_test_count(dir, ".sum") == 1,
        "no entry written after the fault was lifted");
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);

  /* rt_cache_publish_bytes itself: a failure leaves no file at all. */
  static const char bytes[] = "0123456789abcdef";
  rt_cache_fault_errno = EIO;
  CHECK(rt_cache_publish_bytes(dir, "k1", "bin", bytes, sizeof bytes, 0644, NULL) == EIO,
        "the injected EIO was not reported");
  rt_cache_fault_errno = 0;
  CHECK(rt_test_count(dir, "") == 2, "a failed publish left files: %d entries", rt_test_count(dir, ""));
  CHECK(rt_cache_publish_bytes(dir, "k1", "bin", bytes, sizeof bytes, 0644, NULL) == 0, "publish");
  void *back = NULL;
  size_t n = 0;
  CHECK(rt_cache_read_entry(dir, "k1", "bin", &back, &n) && n == sizeof bytes &&
            memcmp(back, bytes, n) == 0,
        "published entry does not read back");
  free(back);
  free(dir);
}

/* rt_validate on signatures the two test kernels do not have: symbols shared
 * by rank-4 tensors (attention's Q, K, V: [batch, seq_len, heads, dim]) and
 * integer / bool scalars. */
static void test_validate_signatures(void) {
  static const char *const syms[] = {"batch", "seq_len", "heads"};
  const TilecDim bshd[4] = {{true, 0, 0, NULL}, {true, 0, 1, NULL}, {true, 0, 2, NULL},
                            {false, 64, 0, "dim"}};
  TilecParamInfo params[6] = {
      {"Q", true, TILEC_DTYPE_F16, 4, {{0}}},   {"K", true, TILEC_DTYPE_F16, 4, {{0}}},
      {"V", true, TILEC_DTYPE_F16, 4, {{0}}},   {"causal", false, TILEC_DTYPE_BOOL, 0, {{0}}},
      {"steps", false, TILEC_DTYPE_I32, 0, {{0}}}, {"scale", false, TILEC_DTYPE_F32, 0, {{0}}},
  };
  for (int p = 0; p < 3; p++) memcpy(params[p].dims, bshd, sizeof bshd);
  TilecKernelInfo info = {"attn", "tilec_attn", 6, params, 3, syms, 128, 0};

  uint16_t buf[4];
  int64_t shape[3][4] = {{2, 100, 4, 64}, {2, 100, 4, 64}, {2, 100, 4, 64}}, dyn[3];
  DLTensor t[3];
  for (int i = 0; i < 3; i++) {
    memset(&t[i], 0, sizeof t[i]);
    t[i].data = buf, t[i].device.device_type = kDLCPU, t[i].ndim = 4, t[i].shape = shape[i];
    t[i].dtype.code = kDLFloat, t[i].dtype.bits = 16, t[i].dtype.lanes = 1;
  }
  TilertArg args[6] = {tilert_arg_tensor(&t[0]), tilert_arg_tensor(&t[1]), tilert_arg_tensor(&t[2]),
                       tilert_arg_int(1), tilert_arg_int(7), tilert_arg_f32(0.125)};
  char msg[512];
  CHECK(rt_validate(&info, args, 6, kDLCPU, -1, dyn, msg, sizeof msg) && dyn[0] == 2 &&
            dyn[1] == 100 && dyn[2] == 4,
        "a good attention launch was refused: %s", msg);
  struct {
    int arg, dim;
    int64_t value;
    const char *want;
  } shapes[] = {
      {1, 1, 99, "attn: argument 2 'K': dim 1 is 99 but seq_len = 100 from argument 1 'Q'"},
      {2, 0, 3, "attn: argument 3 'V': dim 0 is 3 but batch = 2 from argument 1 'Q'"},
      {2, 2, 8, "attn: argument 3 'V': dim 2 is 8 but heads = 4 from argument 1 'Q'"},
      {1, 3, 128, "attn: argument 2 'K': dim 3 is 128, expected 64 (dim)"},
  };
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    int64_t saved = shape[shapes[c].arg][shapes[c].dim];
    shape[shapes[c].arg][shapes[c].dim] = shapes[c].value;
    CHECK(!rt_validate(&info, args, 6, kDLCPU, -1, dyn, msg, sizeof msg), "accepted: %s",
          shapes[c].want);
    CHECK_CONTAINS(msg, shapes[c].want);
    shape[shapes[c].arg][shapes[c].dim] = saved;
  }
  /* bf16 for f16 is a dtype mismatch, not a silent reinterpretation. */
  t[2].dtype.code = kDLBfloat;
  CHECK(!rt_validate(&info, args, 6, kDLCPU, -1, dyn, msg, sizeof msg), "bf16 accepted");
  CHECK_CONTAINS(msg, "attn: argument 3 'V': dtype is bfloat16, expected f16");
  t[2].dtype.code = kDLFloat;

  struct {
    int arg;
    TilertArg value;
    const char *want;
  } scalars[] = {
      {3, tilert_arg_int(2), "argument 4 'causal': value 2 is not a bool (0 or 1)"},
      {3, tilert_arg_f32(1.0), "argument 4 'causal': expected an integer scalar (bool), got a float"},
      {4, tilert_arg_int(1LL << 40), "argument 5 'steps': value 1099511627776 does not fit in i32"},
      {4, tilert_arg_f32(7.0), "argument 5 'steps': expected an integer scalar (i32), got a float (7); use tilert_arg_int"},
  };
  for (size_t c = 0; c < sizeof scalars / sizeof scalars[0]; c++) {
    TilertArg saved = args[scalars[c].arg];
    args[scalars[c].arg] = scalars[c].value;
    CHECK(!rt_validate(&info, args, 6, kDLCPU, -1, dyn, msg, sizeof msg), "accepted: %s",
          scalars[c].want);
    CHECK_CONTAINS(msg, scalars[c].want);
    args[scalars[c].arg] = saved;
  }
  /* A symbol that no tensor binds (a broken signature) is reported, not read
   * uninitialized. */
  TilecParamInfo only_scalar[1] = {{"s", false, TILEC_DTYPE_F32, 0, {{0}}}};
  TilecKernelInfo unbound = {"unbound", "tilec_unbound", 1, only_scalar, 1, syms, 32, 0};
  TilertArg one = tilert_arg_f32(1.0);
  CHECK(!rt_validate(&unbound, &one, 1, kDLCPU, -1, dyn, msg, sizeof msg), "unbound symbol accepted");
  CHECK_CONTAINS(msg, "unbound: dynamic symbol 'batch' is not a dim of any tensor argument");
}

int main(void) {
  rt_test_init();
  test_key();
  test_context();
  test_cc_failure();
  rt_scenario_cache_hit(load_hand);
  rt_scenario_corrupt_entry(load_hand);
  rt_scenario_unusable_dir(load_hand);
  rt_scenario_cache_disabled(load_hand);
  rt_scenario_validation(load_hand, true);
  rt_scenario_null_handles(load_hand);
  test_validate_signatures();
  test_full_cache();
  if (rt_test_failures) fprintf(stderr, "test_rt_hand: %d failure(s)\n", rt_test_failures);
  else printf("test_rt_hand: all passed\n");
  return rt_test_failures != 0;
}
