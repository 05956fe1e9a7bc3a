/* test_rt_units.c - the runtime's small pieces: SHA-256 against the FIPS
 * 180-4 / NIST example vectors (one-shot and streamed in odd chunks), the
 * f16/bf16 conversions (rounding, overflow, subnormals, NaN, exhaustive
 * round trips), splitting the C compiler command, mkdir -p, and the TMA
 * stride check of rt_tma.c (a view whose row pitch is not a multiple of 16
 * bytes is refused before the driver is asked, so no GPU is needed). */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "rt_internal.h"
#include "rt_tma.h"
#include "rt_test.h"

static void test_sha256(void) {
  static const struct {
    const char *msg;
    const char *hex;
  } v[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
  };
  char hex[65];
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    rt_sha256_hex(v[i].msg, strlen(v[i].msg), hex);
    CHECK(!strcmp(hex, v[i].hex), "sha256('%s') = %s, expected %s", v[i].msg, hex, v[i].hex);
  }
  /* One million 'a', fed in chunks of 1, 7, 63, 64, 65... bytes. */
  char *a = malloc(1000000);
  memset(a, 'a', 1000000);
  RtSha256 s;
  rt_sha256_init(&s);
  size_t done = 0, step = 1;
  while (done < 1000000) {
    size_t n = step < 1000000 - done ? step : 1000000 - done;
    rt_sha256_update(&s, a + done, n);
    done += n;
    step = step * 3 % 131 + 1;
  }
  unsigned char d[32];
  rt_sha256_final(&s, d);
  rt_hex(d, 32, hex);
  CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        "sha256(10^6 'a') = %s", hex);
  /* Lengths around the padding boundary (55, 56, 63, 64 bytes) agree between
   * one-shot and byte-at-a-time hashing. */
  for (size_t len = 50; len < 70; len++) {
    char one[65];
    rt_sha256_hex(a, len, one);
    rt_sha256_init(&s);
    for (size_t i = 0; i < len; i++) rt_sha256_update(&s, a + i, 1);
    rt_sha256_final(&s, d);
    rt_hex(d, 32, hex);
    CHECK(!strcmp(one, hex), "streamed hash differs at length %zu", len);
  }
  char h55[65], h56[65];
  rt_sha256_hex(a, 55, h55);
  rt_sha256_hex(a, 56, h56);
  CHECK(strcmp(h55, h56) != 0, "lengths 55 and 56 collide");
  free(a);
}

static float pow2(int e) { return ldexpf(1.0f, e); }

static void test_half(void) {
  static const struct {
    float f;
    uint16_t h;
  } v[] = {
      {1.0f, 0x3c00},        {-2.0f, 0xc000},       {0.0f, 0x0000},         {-0.0f, 0x8000},
      {65504.0f, 0x7bff},    {65519.0f, 0x7bff},    {65520.0f, 0x7c00},     {1e10f, 0x7c00},
      {-1e10f, 0xfc00},      {INFINITY, 0x7c00},    {-INFINITY, 0xfc00},    {0.333333f, 0x3555},
      {6.103515625e-05f, 0x0400}, /* smallest normal */
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    uint16_t h = tilert_f32_to_f16(v[i].f);
    CHECK(h == v[i].h, "f16(%g) = 0x%04x, expected 0x%04x", v[i].f, h, v[i].h);
  }
  /* Ties to even in the normal range: 1 + 2^-11 is halfway between 1 and
   * 1 + 2^-10 (even: 1); 1 + 3*2^-11 is halfway to 1 + 2^-9 (even: 0x3c02). */
  CHECK(tilert_f32_to_f16(1.0f + pow2(-11)) == 0x3c00, "tie down");
  CHECK(tilert_f32_to_f16(1.0f + 3 * pow2(-11)) == 0x3c02, "tie up");
  CHECK(tilert_f32_to_f16(1.0f + pow2(-11) + pow2(-20)) == 0x3c01, "above tie");
  /* Subnormals: 2^-24 is the smallest; 2^-25 ties to 0; 1.5*2^-25 rounds up;
   * 3*2^-25 ties to even (2*2^-24 = 0x0002). */
  CHECK(tilert_f32_to_f16(pow2(-24)) == 0x0001, "min subnormal");
  CHECK(tilert_f32_to_f16(pow2(-25)) == 0x0000, "2^-25 ties to 0");
  CHECK(tilert_f32_to_f16(1.5f * pow2(-25)) == 0x0001, "1.5*2^-25");
  CHECK(tilert_f32_to_f16(3 * pow2(-25)) == 0x0002, "3*2^-25 ties to even");
  CHECK(tilert_f32_to_f16(-pow2(-30)) == 0x8000, "tiny negative -> -0");
  CHECK(tilert_f32_to_f16(pow2(-14) - pow2(-25)) == 0x0400, "rounds up into the normals");
  uint16_t hn = tilert_f32_to_f16(NAN);
  CHECK((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0, "f16(NaN) = 0x%04x", hn);
  CHECK(isnan(tilert_f16_to_f32(0x7e00)), "f16 NaN -> f32");
  CHECK(tilert_f16_to_f32(0x0001) == pow2(-24), "subnormal -> f32");
  CHECK(tilert_f16_to_f32(0x7bff) == 65504.0f, "max -> f32");
  CHECK(signbit(tilert_f16_to_f32(0x8000)) && tilert_f16_to_f32(0x8000) == 0.0f, "-0 -> f32");
  /* Every f16 survives the round trip through f32 (NaNs stay NaN). */
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = tilert_f16_to_f32((uint16_t)h);
    uint16_t back = tilert_f32_to_f16(f);
    bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (nan ? !isnan(f) || (back & 0x3ff) == 0 : back != h) bad++;
  }
  CHECK(bad == 0, "%d f16 values do not round-trip", bad);

  /* bf16 */
  CHECK(tilert_f32_to_bf16(1.0f) == 0x3f80, "bf16(1)");
  CHECK(tilert_f32_to_bf16(-2.0f) == 0xc000, "bf16(-2)");
  CHECK(tilert_f32_to_bf16(1.0f + pow2(-8)) == 0x3f80, "bf16 tie to even (down)");
  CHECK(tilert_f32_to_bf16(1.0f + 3 * pow2(-8)) == 0x3f82, "bf16 tie to even (up)");
  CHECK(tilert_f32_to_bf16(3.4e38f) == 0x7f80, "bf16 overflow to inf");
  uint16_t bn = tilert_f32_to_bf16(NAN);
  CHECK((bn & 0x7f80) == 0x7f80 && (bn & 0x7f), "bf16(NaN) = 0x%04x", bn);
  bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = tilert_bf16_to_f32((uint16_t)h);
    bool nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    if (nan ? !isnan(f) : tilert_f32_to_bf16(f) != h) bad++;
  }
  CHECK(bad == 0, "%d bf16 values do not round-trip", bad);
}

static void test_split(void) {
  int n;
  char **w = rt_split_command("  ccache gcc\t-O1 'a b' \"c d\"e  ", &n);
  CHECK(n == 5, "split: %d words", n);
  if (n == 5) {
    CHECK(!strcmp(w[0], "ccache") && !strcmp(w[1], "gcc") && !strcmp(w[2], "-O1"), "split words");
    CHECK(!strcmp(w[3], "a b") && !strcmp(w[4], "c de"), "split quotes: '%s' '%s'", w[3], w[4]);
    CHECK(w[5] == NULL, "argv not terminated");
  }
  free(w);
  w = rt_split_command("   ", &n);
  CHECK(n == 0 && w[0] == NULL, "blank command: %d words", n);
  free(w);
}

static void test_mkdir(void) {
  char *base = rt_test_mkdtemp("mkdir");
  char path[1024], file[1024];
  snprintf(path, sizeof path, "%s/a/b/c/", base);
  CHECK(rt_mkdir_p(path) == 0, "mkdir -p %s", path);
  struct stat st;
  CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "not created");
  CHECK(rt_mkdir_p(path) == 0, "mkdir -p of an existing dir");
  snprintf(file, sizeof file, "%s/f", base);
  fclose(fopen(file, "w"));
  snprintf(path, sizeof path, "%s/f/x", base);
  CHECK(rt_mkdir_p(path) != 0, "mkdir -p under a regular file succeeded");
  CHECK(rt_mkdir_p(file) != 0, "mkdir -p of a regular file succeeded");
  free(base);
}

/* A kernel "gemm" of one 2-D tensor parameter A read through one TMA map. */
static void one_map_kernel(TilecKernelInfo *info, TilecParamInfo *p, TilecTensorMapInfo *m, TilecDType dtype) {
  *p = (TilecParamInfo){0};
  p->name = "A";
  p->is_tensor = true;
  p->dtype = dtype;
  p->rank = 2;
  *m = (TilecTensorMapInfo){0};
  m->box[0] = 64, m->box[1] = 64;
  m->swizzle_bytes = 128;
  *info = (TilecKernelInfo){0};
  info->name = "gemm";
  info->nparams = 1;
  info->params = p;
  info->ntensor_maps = 1;
  info->tensor_maps = m;
}

static void test_tma_strides(void) {
  TilecParamInfo p;
  TilecTensorMapInfo m;
  TilecKernelInfo info;
  one_map_kernel(&info, &p, &m, TILEC_DTYPE_F16);
  p.has_strides = true;
  int64_t shape[2] = {300, 200}, strides[2] = {201, 1};
  DLTensor t = {0};
  t.data = (void *)(uintptr_t)0x10000;
  t.device.device_type = kDLCUDA;
  t.ndim = 2;
  t.dtype = (DLDataType){kDLFloat, 16, 1};
  t.shape = shape;
  t.strides = strides;
  TilertArg arg = tilert_arg_tensor(&t);
  RtTmaSlot *slots = NULL;
  void *params[1] = {NULL};
  char msg[512];
  /* No RtCuda: the stride check comes first and needs none. */
  RtTmaStatus st = rt_tma_params(NULL, &info, &arg, NULL, &slots, params, msg, sizeof msg);
  CHECK(st == RT_TMA_UNFIT, "an A of pitch 201 (402 bytes) was not found unfit for TMA (status %d)", (int)st);
  CHECK_CONTAINS(msg, "gemm: tensor 'A' cannot be loaded by TMA: dim 0 has stride 201 elements (402 bytes), "
                      "and TMA needs strides that are multiples of 16 bytes (pass a tensor whose row pitch is "
                      "a multiple of 8 elements");
  CHECK(params[0] == NULL, "a refused map was handed out");
  /* A compact A (pitch 200 elements, 400 bytes) at an address 8 bytes off. */
  t.strides = NULL;
  t.byte_offset = 8;
  st = rt_tma_params(NULL, &info, &arg, NULL, &slots, params, msg, sizeof msg);
  CHECK(st == RT_TMA_UNFIT, "an A at a misaligned address was not found unfit for TMA (status %d)", (int)st);
  CHECK_CONTAINS(msg, "gemm: tensor 'A' cannot be loaded by TMA: its address 0x10008 is not a multiple of 16 bytes");
  CHECK(params[0] == NULL, "a refused map was handed out");
  /* A TMA store's map: rows of 70 elements (140 bytes) in a pitch of 72. */
  int64_t shape70[2] = {300, 70}, strides72[2] = {72, 1};
  t.shape = shape70;
  t.strides = strides72;
  t.byte_offset = 0;
  m.store = true;
  rt_tma_free(slots);
  slots = NULL;
  st = rt_tma_params(NULL, &info, &arg, NULL, &slots, params, msg, sizeof msg);
  CHECK(st == RT_TMA_UNFIT, "a TMA store into rows of 140 bytes was not found unfit (status %d)", (int)st);
  CHECK_CONTAINS(msg, "its rows of 70 elements (140 bytes) are not a multiple of 16 bytes, and a TMA store "
                      "writes whole 16-byte chunks");
  rt_tma_free(slots);
}

/* Which launches the runtime sends to a GEMM's cluster build: rows that do
 * not start on 128-byte lines (rt_tma_rows_split_lines). */
static void test_tma_rows_split_lines(void) {
  TilecParamInfo p;
  TilecTensorMapInfo m;
  TilecKernelInfo info;
  one_map_kernel(&info, &p, &m, TILEC_DTYPE_BF16);
  int64_t shape[2] = {3000, 2000};
  DLTensor t = {0};
  t.data = (void *)(uintptr_t)0x100000;
  t.device.device_type = kDLCUDA;
  t.ndim = 2;
  t.dtype = (DLDataType){kDLBfloat, 16, 1};
  t.shape = shape;
  TilertArg arg = tilert_arg_tensor(&t);
  CHECK(rt_tma_rows_split_lines(&info, &arg), "rows of 4000 bytes were not found to split L2 lines");
  shape[1] = 4096;
  CHECK(!rt_tma_rows_split_lines(&info, &arg), "rows of 8192 bytes were found to split L2 lines");
  t.byte_offset = 64;
  CHECK(rt_tma_rows_split_lines(&info, &arg), "a base 64 bytes off a line was not found to split lines");
  t.byte_offset = 0;
  shape[0] = 1; /* one row: no second row to misplace */
  shape[1] = 2000;
  CHECK(!rt_tma_rows_split_lines(&info, &arg), "a single row was found to split lines");
  shape[0] = 3000;
  m.store = true; /* the store's rows are not what the loads read */
  CHECK(!rt_tma_rows_split_lines(&info, &arg), "a TMA store's tensor was counted");
}

int main(void) {
  rt_test_init();
  test_tma_strides();
  test_tma_rows_split_lines();
  test_sha256();
  test_half();
  test_split();
  test_mkdir();
  if (rt_test_failures) fprintf(stderr, "test_rt_units: %d failure(s)\n", rt_test_failures);
  else printf("test_rt_units: all passed\n");
  return rt_test_failures != 0;
}
