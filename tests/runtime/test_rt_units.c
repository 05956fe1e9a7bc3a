/* test_rt_units.c - the runtime's small pieces: SHA-256 against the FIPS
 * 180-4 / NIST example vectors (one-shot and streamed in odd chunks), the
 * f16/bf16 conversions (rounding, overflow, subnormals, NaN, exhaustive
 * round trips), splitting the C compiler command, mkdir -p, and the TMA
 * stride check of rt_tma.c (a view whose row pitch is not a multiple of 16
 * bytes is refused before the driver is asked, so no GPU is needed), and
 * the staging plan of rt_repack.c (which tensors are staged through scratch
 * copies, their pitches, views and 2-D copies; pure host work), its
 * scratch cache growing where no device memory can be had; the code
 * fields of a cache key (only the way each shape choice went is left out)
 * and rt_same_signature (what lets a launch check its arguments once), and
 * how many blocks a persistent launch gets (rt_persistent_blocks). */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "rt_internal.h"
#include "rt_repack.h"
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

/* gemm(A[M, K], B[K, N], C[M, N]) as the compiler describes it on sm_90a:
 * A and B loaded by TMA, C stored by TMA, all three tma_only. */
typedef struct GemmInfo {
  TilecParamInfo p[3];
  TilecTensorMapInfo m[3];
  TilecKernelInfo info;
  int64_t shape[3][2];
  DLTensor t[3];
  TilertArg args[3];
} GemmInfo;

static void gemm_info(GemmInfo *g, int64_t M, int64_t N, int64_t K) {
  memset(g, 0, sizeof *g);
  static const char *names[3] = {"A", "B", "C"};
  const int64_t shapes[3][2] = {{M, K}, {K, N}, {M, N}};
  for (int i = 0; i < 3; i++) {
    g->p[i].name = names[i];
    g->p[i].is_tensor = true;
    g->p[i].dtype = TILEC_DTYPE_BF16;
    g->p[i].rank = 2;
    g->p[i].tma_only = true;
    g->m[i].param = i;
    g->m[i].box[0] = 64, g->m[i].box[1] = 64;
    g->m[i].swizzle_bytes = 128;
    g->m[i].store = i == 2;
    g->shape[i][0] = shapes[i][0], g->shape[i][1] = shapes[i][1];
    g->t[i].data = (void *)(uintptr_t)(0x1000000 * (i + 1));
    g->t[i].device.device_type = kDLCUDA;
    g->t[i].ndim = 2;
    g->t[i].dtype = (DLDataType){kDLBfloat, 16, 1};
    g->t[i].shape = g->shape[i];
    g->args[i] = tilert_arg_tensor(&g->t[i]);
  }
  g->info.name = "gemm";
  g->info.nparams = 3;
  g->info.params = g->p;
  g->info.ntensor_maps = 3;
  g->info.tensor_maps = g->m;
}

static void test_repack_plan(void) {
  /* Pitches: rows rounded up to 128 bytes, at least 128. */
  CHECK(rt_repack_pitch(1) == 128 && rt_repack_pitch(128) == 128 && rt_repack_pitch(129) == 256 &&
            rt_repack_pitch(9998) == 10112,
        "rt_repack_pitch: %zu %zu %zu %zu", rt_repack_pitch(1), rt_repack_pitch(128), rt_repack_pitch(129),
        rt_repack_pitch(9998));
  GemmInfo g;
  RtRepackPlan *p = NULL;
  char why[512];
  /* 4001 x 3001 x 4999 bf16: A's rows 9998 bytes, B's 6002, C's 6002 (a
   * TMA store's rows must be whole chunks): all three staged. */
  gemm_info(&g, 4001, 3001, 4999);
  for (int i = 0; i < 3; i++) CHECK(!rt_tma_fits(&g.m[i], &g.t[i]), "tensor %d of 4001x3001x4999 fits TMA", i);
  CHECK(rt_repack_plan(&g.info, g.args, 3, &p, why, sizeof why) && p, "no plan: %s", why);
  if (p) {
    CHECK(p->n == 3, "%d tensors staged, expected 3", p->n);
    const size_t want_pitch[3] = {10112, 6016, 6016}, want_rows[3] = {4001, 4999, 4001};
    for (int i = 0; i < p->n && i < 3; i++) {
      const RtRepackTensor *r = &p->t[i];
      CHECK(r->param == i && p->staged[i], "staged tensor %d is parameter %d", i, r->param);
      CHECK(r->pitch == want_pitch[i] && r->width == (size_t)g.shape[i][1] * 2 && r->user_pitch == r->width,
            "tensor %d: pitch %zu width %zu user pitch %zu", i, r->pitch, r->width, r->user_pitch);
      CHECK(r->ncopies == 1 && r->rows == want_rows[i] && r->bytes == want_rows[i] * want_pitch[i],
            "tensor %d: %d copies of %zu rows, %zu bytes", i, r->ncopies, r->rows, r->bytes);
      CHECK(r->in, "tensor %d is not copied in (a write-only one must be too)", i);
      CHECK(r->out == (i == 2), "tensor %d copied out: %d", i, r->out);
      CHECK(r->user == (RtCuDevPtr)(0x1000000 * (i + 1)), "tensor %d: user pointer", i);
      CHECK(p->args[i].tensor == &r->view && r->view.shape == g.shape[i] && r->view.strides[0] == (int64_t)want_pitch[i] / 2 &&
                r->view.strides[1] == 1 && r->view.ndim == 2,
            "tensor %d: the view is not the scratch's layout", i);
      /* The view, once it has its scratch (256-byte aligned), fits TMA: a
       * store's map too, as the staged flag lets it write into the pitch. */
      RtRepackTensor v = *r;
      v.view.data = (void *)(uintptr_t)0x7000000;
      CHECK(g.m[i].store || rt_tma_fits(&g.m[i], &v.view), "tensor %d's staged view does not fit TMA", i);
    }
    rt_repack_plan_free(p);
    p = NULL;
  }
  /* 4096^3: nothing to stage. */
  gemm_info(&g, 4096, 4096, 4096);
  CHECK(rt_repack_plan(&g.info, g.args, 3, &p, why, sizeof why) && !p, "a plan for aligned tensors");
  /* Only A unfit (K = 4999, N = 4096): only A staged; B untouched. */
  gemm_info(&g, 301, 4096, 4999);
  g.shape[2][1] = 4096;
  CHECK(rt_repack_plan(&g.info, g.args, 3, &p, why, sizeof why) && p && p->n == 1 && p->t[0].param == 0 &&
            !p->staged[1] && p->args[1].tensor == &g.t[1],
        "A alone should be staged: %s", why);
  rt_repack_plan_free(p);
  p = NULL;
  /* An A the kernel also reads element by element: not staged (cp.async build). */
  gemm_info(&g, 301, 203, 499);
  g.p[0].tma_only = false;
  CHECK(!rt_repack_plan(&g.info, g.args, 3, &p, why, sizeof why) && !p, "a non-tma_only tensor was staged");
  CHECK_CONTAINS(why, "gemm: tensor 'A' is also accessed other than through its tensor maps");
  /* ... unless it fits as it is: then only the unfit ones matter. */
  gemm_info(&g, 301, 203, 512);
  g.p[0].tma_only = false;
  CHECK(rt_repack_plan(&g.info, g.args, 3, &p, why, sizeof why) && p && p->n == 2 && p->t[0].param == 1 &&
            p->t[1].param == 2,
        "B and C should be staged: %s", why);
  rt_repack_plan_free(p);
  p = NULL;
  /* A misaligned base alone (compact, aligned pitch): staged too. */
  gemm_info(&g, 256, 256, 256);
  g.t[1].byte_offset = 2;
  CHECK(rt_repack_plan(&g.info, g.args, 3, &p, why, sizeof why) && p && p->n == 1 && p->t[0].param == 1 &&
            p->t[0].pitch == 512 && p->t[0].user == 0x2000002,
        "B at an odd address should be staged: %s", why);
  rt_repack_plan_free(p);
  p = NULL;
  /* Rank 3, a strided view [4, 5, 99] whose outer dims do not collapse
   * (dim 0 steps 1000 rows of 100, not 5): one 2-D copy per outer index. */
  {
    TilecParamInfo pi = {0};
    TilecTensorMapInfo m = {0};
    TilecKernelInfo info = {0};
    pi.name = "X", pi.is_tensor = true, pi.dtype = TILEC_DTYPE_F16, pi.rank = 3, pi.has_strides = true;
    pi.tma_only = true;
    m.box[0] = 1, m.box[1] = 64, m.box[2] = 64;
    info.name = "k", info.nparams = 1, info.params = &pi, info.ntensor_maps = 1, info.tensor_maps = &m;
    int64_t shape[3] = {4, 5, 99}, strides[3] = {100000, 100, 1};
    DLTensor t = {0};
    t.data = (void *)(uintptr_t)0x100000;
    t.ndim = 3;
    t.dtype = (DLDataType){kDLFloat, 16, 1};
    t.shape = shape;
    t.strides = strides;
    TilertArg a = tilert_arg_tensor(&t);
    CHECK(rt_repack_plan(&info, &a, 1, &p, why, sizeof why) && p && p->n == 1, "no rank-3 plan: %s", why);
    if (p) {
      const RtRepackTensor *r = &p->t[0];
      CHECK(r->ncopies == 4 && r->rows == 5 && r->user_pitch == 200 && r->pitch == 256 && r->bytes == 20 * 256,
            "rank 3: %d copies of %zu rows, pitches %zu/%zu, %zu bytes", r->ncopies, r->rows, r->user_pitch, r->pitch,
            r->bytes);
      CHECK(r->user_offset[0] == 0 && r->user_offset[3] == 600000, "rank 3: copy offsets %zu, %zu", r->user_offset[0],
            r->user_offset[3]);
      CHECK(r->strides[0] == 5 * 128 && r->strides[1] == 128 && r->strides[2] == 1, "rank 3: view strides");
      rt_repack_plan_free(p);
      p = NULL;
    }
    /* Collapsible outer dims ([4, 5] rows of one pitch): one copy of 20 rows. */
    strides[0] = 500;
    CHECK(rt_repack_plan(&info, &a, 1, &p, why, sizeof why) && p && p->t[0].ncopies == 1 && p->t[0].rows == 20,
          "rank 3 collapsible: %s", why);
    rt_repack_plan_free(p);
    p = NULL;
    /* 65 outer indices that do not collapse: not staged. */
    shape[0] = 65;
    strides[0] = 100000;
    CHECK(!rt_repack_plan(&info, &a, 1, &p, why, sizeof why) && !p, "65 copies were planned");
    CHECK_CONTAINS(why, "it would take 65 2-D copies (at most 64)");
  }
  /* TILEC_TMA_STAGING=0 turns it off, =require makes it mandatory;
   * anything else leaves it on. */
  setenv("TILEC_TMA_STAGING", "0", 1);
  CHECK(rt_repack_mode() == RT_REPACK_OFF, "TILEC_TMA_STAGING=0 left staging on");
  setenv("TILEC_TMA_STAGING", "require", 1);
  CHECK(rt_repack_mode() == RT_REPACK_REQUIRE, "TILEC_TMA_STAGING=require not seen");
  setenv("TILEC_TMA_STAGING", "1", 1);
  CHECK(rt_repack_mode() == RT_REPACK_ON, "TILEC_TMA_STAGING=1 turned staging off");
  unsetenv("TILEC_TMA_STAGING");
  CHECK(rt_repack_mode() == RT_REPACK_ON, "staging is off by default");
}

/* $TILEC_TMA_L2_PROMOTION is checked before anything else of the device
 * open (so without a GPU too): a value other than none/64/128/256 refuses
 * the device with a message naming the variable; the four values and an
 * empty one get past the check (on a machine without a GPU the open then
 * fails for the device, not for the variable). */
static void test_tma_l2_promotion_env(void) {
  const char *bad[] = {"512", "128B", "yes", "-1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char why[256] = "";
    setenv("TILEC_TMA_L2_PROMOTION", bad[i], 1);
    RtCuda *cu = rt_cuda_open(RT_CUDA_DEVICE, 0, why, sizeof why);
    CHECK(cu == NULL, "TILEC_TMA_L2_PROMOTION=%s opened a device", bad[i]);
    rt_cuda_close(cu);
    CHECK_CONTAINS(why, "TILEC_TMA_L2_PROMOTION");
    CHECK_CONTAINS(why, "expected none, 64, 128 or 256");
  }
  const char *good[] = {"none", "64", "128", "256", ""};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char why[256] = "";
    setenv("TILEC_TMA_L2_PROMOTION", good[i], 1);
    RtCuda *cu = rt_cuda_open(RT_CUDA_DEVICE, 0, why, sizeof why);
    CHECK(cu != NULL || strstr(why, "TILEC_TMA_L2_PROMOTION") == NULL, "TILEC_TMA_L2_PROMOTION=%s refused: %s",
          good[i], why);
    rt_cuda_close(cu);
  }
  unsetenv("TILEC_TMA_L2_PROMOTION");
}

/* rt_repack_alloc where no device memory can be had (a handle opened for
 * nothing): each (stream, parameter) still gets its entry in the kernel's
 * cache before the allocation fails, so nine streams grow the array past
 * its first four entries, twice over; the second call of a stream finds its
 * entry. Nothing crashes or leaks (ASan in the sanitizer build). */
static void test_repack_alloc_no_device(void) {
  char why[256] = "";
  RtCuda *cu = rt_cuda_open(RT_CUDA_NVRTC_LAZY, 0, why, sizeof why);
  CHECK(cu != NULL, "a lazy handle: %s", why);
  if (!cu) return;
  RtRepackTensor t = {0};
  t.param = 1;
  t.bytes = 4096;
  RtRepackPlan p = {0};
  p.n = 1;
  p.t = &t;
  RtRepack *cache = NULL;
  for (int round = 0; round < 2; round++)
    for (uintptr_t s = 1; s <= 9; s++)
      CHECK(!rt_repack_alloc(cu, &cache, (RtCuStream)s, &p), "stream %zu: scratch without a device", (size_t)s);
  CHECK(cache != NULL && t.scratch == 0, "no cache, or a scratch pointer set");
  CHECK_CONTAINS(rt_cuda_last_error(cu), "needs a CUDA device");
  rt_repack_free(cu, cache);
  rt_cuda_close(cu);
}

/* The code fields of a cache key (rt_cache_key_code) leave out only the
 * way each shape choice went, on the compiler's shape-choice lines. */
static void test_code_key(void) {
#define CHOICES "// k: shape choices (the runtime runs the build whose choices hold at launch): "
  static const char base[] = "int a;\n" CHOICES "#0: n >= 8 -> true, #1: m < 2 -> false\nint b;\n";
  static const struct {
    const char *code;
    bool same;
  } v[] = {
      {"int a;\n" CHOICES "#0: n >= 8 -> false, #1: m < 2 -> true\nint b;\n", true},
      {"int a;\n" CHOICES "#0: n >= 8 -> false, #1: m < 2 -> false\nint b;\n", true},
      {"int a;\n" CHOICES "#0: n >= 8 -> true, #1: m < 2 -> false\nint c;\n", false}, /* the code */
      {"int a;\n" CHOICES "#0: n >= 9 -> true, #1: m < 2 -> false\nint b;\n", false}, /* a condition */
      {"int a;\n\nint b;\n", false},                                                   /* no such line */
      {"int a;\n" CHOICES "#0: n >= 8 -> true, #1: m < 2 -> false\nint b;", false},    /* a newline */
  };
  char want[65], got[65];
  rt_cpu_cache_key("cc", "ir", base, strlen(base), want);
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    rt_cpu_cache_key("cc", "ir", v[i].code, strlen(v[i].code), got);
    CHECK((strcmp(want, got) == 0) == v[i].same, "variant %zu: key %s", i, v[i].same ? "differs" : "is the same");
  }
  /* " -> true" elsewhere, and a comment whose backslash swallows the next
   * line, are code like any other. */
  static const char *const pairs[][2] = {
      {"// note: x -> true\n", "// note: x -> false\n"},
      {CHOICES "#0: n >= 8 -> true \\\nint b;\n", CHOICES "#0: n >= 8 -> false \\\nint b;\n"},
      {"s = \"" CHOICES "#0: n -> true\";\n", "s = \"" CHOICES "#0: n -> false\";\n"},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
    rt_cpu_cache_key("cc", "ir", pairs[i][0], strlen(pairs[i][0]), want);
    rt_cpu_cache_key("cc", "ir", pairs[i][1], strlen(pairs[i][1]), got);
    CHECK(strcmp(want, got) != 0, "pair %zu: one key", i);
  }
  /* The IR's header line; and the CUDA key does the same. */
  static const char ir1[] = "kernel k(A: f32[n])\n  shape_choices(#0: n >= 8 -> true)\n  grid(1)\n",
                    ir2[] = "kernel k(A: f32[n])\n  shape_choices(#0: n >= 8 -> false)\n  grid(1)\n",
                    ir3[] = "kernel k(A: f32[n])\n  shape_choices(#0: n >= 8 -> false)\n  grid(2)\n";
  const char *opts[] = {"-lineinfo"};
  char k1[65], k2[65], k3[65];
  rt_gpu_cache_key("sm_90a", 13000, opts, 1, ir1, v[0].code, strlen(v[0].code), k1);
  rt_gpu_cache_key("sm_90a", 13000, opts, 1, ir2, base, strlen(base), k2);
  rt_gpu_cache_key("sm_90a", 13000, opts, 1, ir3, base, strlen(base), k3);
  CHECK(strcmp(k1, k2) == 0 && strcmp(k2, k3) != 0, "CUDA keys: choices %s, grid %s",
        strcmp(k1, k2) ? "differ" : "same", strcmp(k2, k3) ? "differ" : "same");
#undef CHOICES
}

/* rt_same_signature: equal where every field rt_validate reads is. */
static void test_same_signature(void) {
  const char *syms[] = {"n", "m"}, *syms2[] = {"n", "k"};
  TilecParamInfo pa[2] = {{0}, {0}}, pb[2];
  pa[0].name = "A", pa[0].is_tensor = true, pa[0].dtype = TILEC_DTYPE_F32, pa[0].rank = 2;
  pa[0].dims[0] = (TilecDim){true, 0, 0, NULL};
  pa[0].dims[1] = (TilecDim){false, 64, 0, "block"};
  pa[0].has_strides = true;
  pa[0].strides[0] = (TilecDim){true, 0, 1, NULL};
  pa[0].strides[1] = (TilecDim){false, 1, 0, NULL};
  pa[1].name = "alpha", pa[1].dtype = TILEC_DTYPE_F32;
  TilecKernelInfo a = {0}, b;
  a.name = "k", a.nparams = 2, a.params = pa, a.ndynamic = 2, a.dynamic_symbols = syms;
  char name_copy[] = "k", block_copy[] = "block";
  for (int change = 0; change <= 9; change++) {
    memcpy(pb, pa, sizeof pa);
    b = a;
    b.params = pb;
    b.name = name_copy;         /* equal text, other pointers */
    pb[0].dims[1].name = block_copy;
    pb[0].tma_only = true;      /* not read by rt_validate */
    switch (change) {
    case 1: b.nparams = 1; break;
    case 2: b.dynamic_symbols = syms2; break;
    case 3: pb[0].dtype = TILEC_DTYPE_F16; break;
    case 4: pb[0].dims[1].value = 128; break;
    case 5: pb[0].dims[1].name = "other"; break;
    case 6: pb[0].strides[0].symbol = 0; break;
    case 7: pb[0].has_strides = false; break;
    case 8: pb[1].dtype = TILEC_DTYPE_I32; break;
    case 9: pb[1].name = "beta"; break;
    }
    CHECK(rt_same_signature(&a, &b) == (change == 0), "change %d: %s", change,
          change ? "not told apart" : "equal signatures told apart");
  }
  /* Strides a parameter does not declare are not read. */
  pa[0].has_strides = false;
  memcpy(pb, pa, sizeof pa);
  b = a, b.params = pb;
  pb[0].strides[0].symbol = 0;
  CHECK(rt_same_signature(&a, &b), "undeclared strides compared");
}

/* rt_persistent_blocks: for tiles of RT_BALANCE_MIN_ITERS k-iterations or
 * more, the fewest blocks that finish in the same rounds of tiles as one
 * per slot; for shorter or unknown ones, min(tiles, slots). */
static void test_persistent_blocks(void) {
  static const int64_t known[][4] = {
      {512, 132, 64, 128},  /* 4096^3, 128 x 256 tiles, on 132 SMs */
      {512, 132, 32, 128},  /* 4096^2 x 2048 */
      {512, 132, 16, 132},  /* 4096^2 x 1024: slower balanced */
      {512, 132, -1, 132},  /* not a GEMM */
      {2048, 132, 128, 128}, /* 8192^3 */
      {3648, 132, 64, 131}, /* 8192^3, FP8's 128 x 144 tiles */
      {116, 132, 64, 116}, {264, 132, 64, 132}, {133, 132, 64, 67}, {1, 132, 64, 1},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    const int64_t got = rt_persistent_blocks(known[i][0], known[i][1], known[i][2]);
    CHECK(got == known[i][3], "%lld tiles of %lld iterations on %lld slots: %lld blocks, expected %lld",
          (long long)known[i][0], (long long)known[i][2], (long long)known[i][1], (long long)got, (long long)known[i][3]);
  }
  int bad = 0;
  for (int64_t slots = 1; slots <= 300 && bad < 5; slots++)
    for (int64_t tiles = 1; tiles <= 4000 && bad < 5; tiles++) {
      const int64_t whole = tiles < slots ? tiles : slots, b = rt_persistent_blocks(tiles, slots, RT_BALANCE_MIN_ITERS);
      const int64_t rounds = (tiles + slots - 1) / slots;
      const bool ok = rt_persistent_blocks(tiles, slots, RT_BALANCE_MIN_ITERS - 1) == whole && b >= 1 && b <= whole &&
                      (tiles + b - 1) / b == rounds && (b == 1 || (tiles + b - 2) / (b - 1) > rounds);
      if (!ok) bad++;
      CHECK(ok, "%lld tiles on %lld slots: %lld blocks", (long long)tiles, (long long)slots, (long long)b);
    }
}

int main(void) {
  rt_test_init();
  test_persistent_blocks();
  test_code_key();
  test_same_signature();
  test_repack_plan();
  test_repack_alloc_no_device();
  test_tma_l2_promotion_env();
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
