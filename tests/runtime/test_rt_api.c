/* test_rt_api.c - the runtime end to end through its public API and the
 * shared library: a .tile source compiled by tilec (emit C), built by the C
 * compiler, cached, and launched. The same scenarios as test_rt_hand.c
 * (cache miss/hit, corrupt entry, unusable dir, disabled cache, validation),
 * plus compile errors and -D bindings. */
#include <ctype.h>
#include <stdlib.h>

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
    for (int i = 0; i < 3; i++) {
      memset(&t[i], 0, sizeof t[i]);
      t[i].data = bufs[i];
      t[i].device.device_type = kDLCPU;
      t[i].ndim = 1;
      t[i].dtype.code = kDLFloat, t[i].dtype.bits = 32, t[i].dtype.lanes = 1;
      t[i].shape = &n;
    }
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

int main(void) {
  rt_test_init();
  test_compile_error();
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
