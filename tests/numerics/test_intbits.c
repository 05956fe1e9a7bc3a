/* test_intbits.c - integer bit operations, narrow integer tensors and FP8
 * conversions (tests/numerics/intbits.tile) against C references.
 *
 *   test_intbits --file intbits.tile [--device cpu|cuda]
 *
 * unpack_int4 at ragged sizes (N, K not multiples of the blocks, K odd):
 * exact (int4 * f16 scale, rounded once to f16: the reference rounds the
 * same product). bitops: every result exact, the language's integer rules
 * (docs/language.md, "Integers"): loads widen to i64, shift counts modulo 64,
 * >> arithmetic, stores wrap; float -> integer truncates, saturating to i64
 * (NaN -> 0). FP8: V holds every finite value of both formats, the
 * midpoints between neighbours (ties: round to even), points just off the
 * midpoints, values past the largest finite, infinities, NaN, -0 and a
 * random log-uniform sweep; E and G must equal host_fp8_encode (a brute-force
 * nearest-even search) byte for byte, NaN -> 0x7F; D and D5 hold all 256
 * codes and must decode exactly. */
#include "numerics.h"

#include <math.h>

static int64_t ref_f2i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)x;
}

static bool same_value(double a, double b) { return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)); }

static void test_unpack(NumEnv *env, TilertModule *mod, int64_t N, int64_t K) {
  TilertKernel *kern = NULL;
  NUM_CHECK(tilert_module_get_kernel(mod, "unpack_int4", &kern) == TILERT_OK, "no kernel unpack_int4");
  if (!kern) return;
  int64_t K2 = (K + 1) / 2;
  DLDataType u8 = {kDLUInt, 8, 1}, f16 = {kDLFloat, 16, 1};
  HostTensor w, s, o;
  bool ok = host_tensor_init(&w, u8, 2, (int64_t[]){N, K2}, env->ctx) &&
            host_tensor_init(&s, f16, 1, (int64_t[]){N}, env->ctx) &&
            host_tensor_init(&o, f16, 2, (int64_t[]){N, K}, env->ctx);
  NUM_CHECK(ok, "allocating");
  if (!ok) return;
  for (size_t i = 0; i < w.numel; i++) ((uint8_t *)w.host)[i] = (uint8_t)(host_rng_uniform(&env->rng, 0, 256));
  host_tensor_fill_uniform(&s, &env->rng, -0.1, 0.1);
  host_tensor_poison(&o);
  NUM_CHECK(host_tensor_upload(&w) && host_tensor_upload(&s) && host_tensor_upload(&o), "upload");
  TilertArg args[] = {tilert_arg_tensor(&w.dl), tilert_arg_tensor(&s.dl), tilert_arg_tensor(&o.dl)};
  TilertStatus st = tilert_launch(kern, args, 3, NULL);
  NUM_CHECK(st == TILERT_OK, "launch: %s", tilert_last_error(env->ctx));
  if (st == TILERT_OK && host_tensor_download(&o)) {
    int bad = 0;
    for (int64_t r = 0; r < N; r++)
      for (int64_t c = 0; c < K; c++) {
        uint8_t byte = ((uint8_t *)w.host)[r * K2 + c / 2];
        int q = c % 2 ? byte >> 4 : byte & 15;
        q = q >= 8 ? q - 16 : q;
        double want = tilert_f16_to_f32(tilert_f32_to_f16((float)(q * (float)host_tensor_get(&s, (size_t)r))));
        double got = host_tensor_get(&o, (size_t)(r * K + c));
        if (!same_value(got, want) && !(want == 0 && got == 0) && bad++ < 5)
          NUM_CHECK(false, "unpack %lldx%lld: O[%lld, %lld] = %g, want %g (byte 0x%02x)", (long long)N, (long long)K,
                    (long long)r, (long long)c, got, want, byte);
      }
    NUM_CHECK(bad == 0, "unpack %lldx%lld: %d wrong elements", (long long)N, (long long)K, bad);
    printf("  unpack_int4 %lld x %lld: %s\n", (long long)N, (long long)K, bad ? "FAILED" : "exact");
  }
  host_tensor_free(&w), host_tensor_free(&s), host_tensor_free(&o);
}

/* The FP8 sweep: finite values, midpoints, just-off midpoints, specials, random. */
static size_t fp8_inputs(double *v, size_t cap, HostRng *rng) {
  size_t n = 0;
  for (int fmt = 0; fmt < 2; fmt++) {
    for (int c = 0; c < 256; c++) {
      double x = host_fp8_decode((uint8_t)c, fmt == 1);
      if (!isfinite(x) || n + 4 > cap) continue;
      v[n++] = x;
      double y = host_fp8_decode((uint8_t)(c + 1), fmt == 1);
      if ((c & 0x7f) != 0x7f && isfinite(y) && (c & 0x80) == ((c + 1) & 0x80)) {
        double mid = (x + y) / 2;
        v[n++] = mid;
        v[n++] = nextafter((float)mid, INFINITY);
        v[n++] = nextafter((float)mid, -INFINITY);
      }
    }
  }
  static const double special[] = {0.0, -0.0, 448.0, 449.0, 464.0, 465.0, 480.0, 1e6, -1e6, 57344.0, 61439.0,
                                   61440.0, 65536.0, 1e30, INFINITY, -INFINITY, NAN, 1e-30, -1e-30, 0x1p-10,
                                   0x1p-17, 0x3p-11, 0x1p-18, 0x1.8p-17};
  for (size_t i = 0; i < sizeof special / sizeof *special && n < cap; i++) v[n++] = special[i];
  while (n < cap) {
    double m = exp2(host_rng_uniform(rng, -20, 17));
    v[n++] = host_rng_uniform(rng, 0, 1) < 0.5 ? -m : m;
  }
  return n;
}

static void test_bitops(NumEnv *env, TilertModule *mod) {
  TilertKernel *kern = NULL;
  NUM_CHECK(tilert_module_get_kernel(mod, "bitops", &kern) == TILERT_OK, "no kernel bitops");
  if (!kern) return;
  enum { N = 2999 };
  int64_t n = N;
  DLDataType u32 = {kDLUInt, 32, 1}, i16 = {kDLInt, 16, 1}, i8 = {kDLInt, 8, 1}, f32 = {kDLFloat, 32, 1},
             i64 = {kDLInt, 64, 1}, u8 = {kDLUInt, 8, 1}, u16 = {kDLUInt, 16, 1},
             e4 = {HOST_DL_F8E4M3FN, 8, 1}, e5 = {HOST_DL_F8E5M2, 8, 1};
  HostTensor X, Y, Z, V, D, D5, O, P, Q, R, U, E, G, F;
  bool ok = host_tensor_init(&X, u32, 1, &n, env->ctx) && host_tensor_init(&Y, i16, 1, &n, env->ctx) &&
            host_tensor_init(&Z, i8, 1, &n, env->ctx) && host_tensor_init(&V, f32, 1, &n, env->ctx) &&
            host_tensor_init(&D, e4, 1, &n, env->ctx) && host_tensor_init(&D5, e5, 1, &n, env->ctx) &&
            host_tensor_init(&O, i64, 2, (int64_t[]){10, N}, env->ctx) && host_tensor_init(&P, u8, 1, &n, env->ctx) &&
            host_tensor_init(&Q, i8, 1, &n, env->ctx) && host_tensor_init(&R, u16, 1, &n, env->ctx) &&
            host_tensor_init(&U, u32, 1, &n, env->ctx) && host_tensor_init(&E, e4, 1, &n, env->ctx) &&
            host_tensor_init(&G, e5, 1, &n, env->ctx) && host_tensor_init(&F, f32, 2, (int64_t[]){4, N}, env->ctx);
  NUM_CHECK(ok, "allocating");
  if (!ok) return;
  static double v[N];
  fp8_inputs(v, N, &env->rng);
  for (int i = 0; i < N; i++) {
    ((uint32_t *)X.host)[i] = i < 4 ? (uint32_t[]){0u, 0xffffffffu, 0x80000000u, 1u}[i]
                                    : (uint32_t)host_rng_uniform(&env->rng, 0, 4294967296.0);
    ((int16_t *)Y.host)[i] = i < 4 ? (int16_t[]){-1, 63, 64, -32768}[i] : (int16_t)host_rng_uniform(&env->rng, -32768, 32768);
    ((int8_t *)Z.host)[i] = i < 4 ? (int8_t[]){-128, 127, -1, 0}[i] : (int8_t)host_rng_uniform(&env->rng, -128, 128);
    ((float *)V.host)[i] = (float)v[i];
    ((uint8_t *)D.host)[i] = (uint8_t)i;
    ((uint8_t *)D5.host)[i] = (uint8_t)i;
  }
  /* R's conversion must stay in i64 and be defined: clamp V's huge values out of it. */
  host_tensor_poison(&O), host_tensor_poison(&F);
  HostTensor *all[] = {&X, &Y, &Z, &V, &D, &D5, &O, &P, &Q, &R, &U, &E, &G, &F};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) NUM_CHECK(host_tensor_upload(all[i]), "upload");
  TilertArg args[14];
  for (int i = 0; i < 14; i++) args[i] = tilert_arg_tensor(&all[i]->dl);
  TilertStatus st = tilert_launch(kern, args, 14, NULL);
  NUM_CHECK(st == TILERT_OK, "launch: %s", tilert_last_error(env->ctx));
  if (st != TILERT_OK) return;
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) NUM_CHECK(host_tensor_download(all[i]), "download");
  static const char *const rows[10] = {"x & y", "x | z", "x ^ y", "~z", "x << (z & 31)", "y >> 3", "z << 60",
                                       "x >> y", "(x | 1 << 40) >> 8 & 65535", "-z + x % 7"};
  int bad[10] = {0}, bad_store[4] = {0}, bad_fp8[6] = {0};
  for (int i = 0; i < N; i++) {
    int64_t x = ((uint32_t *)X.host)[i], y = ((int16_t *)Y.host)[i], z = ((int8_t *)Z.host)[i];
    int64_t ref[10] = {x & y, x | z, x ^ y, ~z, (int64_t)((uint64_t)x << ((z & 31) & 63)),
                       y < 0 ? ~(~y >> 3) : y >> 3, (int64_t)((uint64_t)z << 60),
                       x >> (y & 63), ((x | (int64_t)1 << 40) >> 8) & 0xffff, -z + x % 7};
    for (int r = 0; r < 10; r++) {
      int64_t got = ((int64_t *)O.host)[(size_t)r * N + i];
      if (got != ref[r] && bad[r]++ < 3)
        NUM_CHECK(false, "%s at x %lld y %lld z %lld: %lld, want %lld", rows[r], (long long)x, (long long)y,
                  (long long)z, (long long)got, (long long)ref[r]);
    }
    float fv = ((float *)V.host)[i];
    bad_store[0] += ((uint8_t *)P.host)[i] != (uint8_t)(x + y);
    bad_store[1] += ((int8_t *)Q.host)[i] != (int8_t)(uint8_t)x;
    bad_store[2] += ((uint16_t *)R.host)[i] != (uint16_t)ref_f2i64(fv);
    bad_store[3] += ((uint32_t *)U.host)[i] != (uint32_t)y;
    uint8_t e4want = host_fp8_encode(fv, false), e5want = host_fp8_encode(fv, true);
    uint8_t e4got = ((uint8_t *)E.host)[i], e5got = ((uint8_t *)G.host)[i];
    if (e4got != e4want && bad_fp8[0]++ < 5)
      NUM_CHECK(false, "e4m3(%a) = 0x%02x, want 0x%02x", fv, e4got, e4want);
    if (e5got != e5want && bad_fp8[1]++ < 5)
      NUM_CHECK(false, "e5m2(%a) = 0x%02x, want 0x%02x", fv, e5got, e5want);
    double f[4];
    for (int r = 0; r < 4; r++) f[r] = ((float *)F.host)[(size_t)r * N + i];
    double w[4] = {host_fp8_decode(e4want, false) + 0.0, host_fp8_decode(e5want, true),
                   host_fp8_decode((uint8_t)i, false), host_fp8_decode((uint8_t)i, true)};
    for (int r = 0; r < 4; r++)
      if (!same_value(f[r], w[r]) && bad_fp8[2 + r]++ < 5)
        NUM_CHECK(false, "FP8 row %d at %d (V %a): %a, want %a", r, i, fv, f[r], w[r]);
  }
  for (int r = 0; r < 10; r++) NUM_CHECK(bad[r] == 0, "%s: %d wrong", rows[r], bad[r]);
  static const char *const stores[4] = {"u8 = x + y", "i8 = x", "u16 = u16(v)", "u32 = y"};
  for (int r = 0; r < 4; r++) NUM_CHECK(bad_store[r] == 0, "store %s: %d wrong", stores[r], bad_store[r]);
  for (int r = 0; r < 6; r++) NUM_CHECK(bad_fp8[r] == 0, "FP8 check %d: %d wrong", r, bad_fp8[r]);
  printf("  bitops n %d: 10 operations, 4 wrapping stores, FP8 encode/decode of %d values and all 256 codes\n", N, N);
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) host_tensor_free(all[i]);
}

int main(int argc, char **argv) {
  const char *file;
  TilertDevice device;
  int bad = num_args_file_device(argc, argv, "test_intbits --file intbits.tile [--device cpu|cuda]", &file, &device);
  if (bad) return bad;
  NumEnv env;
  int rc = num_open(&env, device);
  if (rc != 0) return rc;
  TilertModule *mod = num_load_path(&env, file, NULL, 0);
  if (mod) {
    static const int64_t shapes[][2] = {{1, 1}, {7, 33}, {37, 129}, {64, 64}, {100, 255}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) test_unpack(&env, mod, shapes[i][0], shapes[i][1]);
    test_bitops(&env, mod);
  }
  tilert_module_destroy(mod);
  num_close(&env);
  return num_result("test_intbits");
}
