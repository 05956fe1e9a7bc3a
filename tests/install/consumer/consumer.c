/* consumer.c - a program outside this build that uses an installed tilec:
 * it includes <tilert.h>, links libtilert (shared or static), compiles a
 * scale_add kernel from text on the CPU back end and checks every element of
 * C = A * alpha + B against a value computed here. Exit 0 on success, 1 with
 * the runtime's error text otherwise. tests/install/check_install.sh builds
 * it with find_package(tilec) (shared and static) and with pkg-config. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <tilert.h>

static const char src[] =
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
    "}\n";

enum { N = 1000 };

static DLTensor vec(float *data, int64_t *n) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 1;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = n;
  return t;
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "?";
  TilertConfig cfg = {TILERT_DEVICE_CPU, NULL, true, NULL}; /* no cache: the compiler runs */
  TilertContext *ctx = NULL;
  TilertModule *mod = NULL;
  TilertKernel *k = NULL;
  TilertStatus st = tilert_context_create(&cfg, &ctx);
  if (st == TILERT_OK)
    st = tilert_module_load_string(ctx, "scale_add.tile", src, sizeof src - 1, NULL, 0, &mod);
  if (st == TILERT_OK) st = tilert_module_get_kernel(mod, "scale_add", &k);
  static float A[N], B[N], C[N];
  for (int i = 0; i < N; i++) A[i] = (float)i * 0.5f - 100.0f, B[i] = (float)(i % 7), C[i] = NAN;
  int64_t n = N;
  DLTensor ta = vec(A, &n), tb = vec(B, &n), tc = vec(C, &n);
  TilertArg args[] = {tilert_arg_tensor(&ta), tilert_arg_tensor(&tb), tilert_arg_tensor(&tc),
                      tilert_arg_f32(3.0)};
  if (st == TILERT_OK) st = tilert_launch(k, args, 4, NULL);
  if (st != TILERT_OK) {
    fprintf(stderr, "consumer (%s): %s: %s\n", how, tilert_strerror(st), tilert_last_error(ctx));
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
    return 1;
  }
  int bad = 0;
  for (int i = 0; i < N; i++) {
    float want = A[i] * 3.0f + B[i];
    if (!(fabsf(C[i] - want) <= 1e-5f * fabsf(want) + 1e-6f)) {
      if (bad++ < 5) fprintf(stderr, "consumer (%s): C[%d] = %g, want %g\n", how, i, C[i], want);
    }
  }
  printf("consumer (%s): tilert %s, tilec %s, C[999] = %g (want %g), %d wrong of %d\n", how,
         tilert_version(), tilec_version(), C[N - 1], A[N - 1] * 3.0f + B[N - 1], bad, N);
  tilert_module_destroy(mod);
  tilert_context_destroy(ctx);
  return bad ? 1 : 0;
}
