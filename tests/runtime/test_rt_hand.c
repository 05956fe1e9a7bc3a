/* test_rt_hand.c - the runtime's cache, C compiler driver, dlopen and launch
 * validation, driven by hand-written C (the generated-code ABI of tilec.h)
 * and hand-written kernel signatures through rt_module_from_c, so these
 * parts are tested without the compiler. Also: CC_FAILED carries the C
 * compiler's output, the cache key's ingredients, device selection. */
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
  return rt_module_from_c(ctx, "hand.c", hand_c, sizeof hand_c - 1, "hand-written", kernels, 2,
                          NULL, out);
}

static void test_cc_failure(void) {
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, NULL};
  TilertContext *ctx = NULL;
  CHECK(tilert_context_create(&cfg, &ctx) == TILERT_OK, "context");
  static const char broken[] = "void tilec_scale_add(void **a, const long *d) { return 1 +; }\n";
  TilertModule *mod = NULL;
  TilertStatus st = rt_module_from_c(ctx, "broken.c", broken, sizeof broken - 1, "x", kernels, 1,
                                     NULL, &mod);
  CHECK_STATUS(st, TILERT_CC_FAILED, ctx);
  CHECK(mod == NULL, "module on failure");
  const char *e = tilert_last_error(ctx);
  CHECK_CONTAINS(e, "broken.c: the C compiler failed");
  CHECK_CONTAINS(e, "error");                       /* the compiler's own words */
  CHECK_CONTAINS(e, "-std=c11 -O2 -shared -fPIC"); /* the command line */

  /* A missing entry symbol is LOAD_FAILED, not a crash at launch. */
  static const char other[] = "void something_else(void) {}\n";
  st = rt_module_from_c(ctx, "other.c", other, sizeof other - 1, "y", kernels, 1, NULL, &mod);
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
  st = rt_module_from_c(ctx, "flag.c", needs_flag, sizeof needs_flag - 1, "z", kernels, 1, NULL, &mod);
  CHECK_STATUS(st, TILERT_OK, ctx);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  CHECK(rt_test_no_stray_temp(), "temp files left in $TMPDIR");
}

static void test_key(void) {
  char k1[65], k2[65], k3[65], k4[65], k5[65];
  rt_cache_key("cc", "ir", "c", 1, k1);
  rt_cache_key("cc", "ir", "c", 1, k2);
  CHECK(strcmp(k1, k2) == 0 && strlen(k1) == 64, "key not deterministic");
  rt_cache_key("gcc", "ir", "c", 1, k3);
  rt_cache_key("cc", "ir2", "c", 1, k4);
  rt_cache_key("cc", "ir", "d", 1, k5);
  CHECK(strcmp(k1, k3) && strcmp(k1, k4) && strcmp(k1, k5), "key ignores an ingredient");
  /* Field boundaries are part of the key: ("cc", "xir") != ("ccx", "ir"). */
  rt_cache_key("ccx", "ir", "c", 1, k3);
  rt_cache_key("cc", "xir", "c", 1, k4);
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
  if (rt_test_failures) fprintf(stderr, "test_rt_hand: %d failure(s)\n", rt_test_failures);
  else printf("test_rt_hand: all passed\n");
  return rt_test_failures != 0;
}
