/* test_tma_gpu.c - TMA loads (runtime/device/tilec_tma.cuh) and
 * rt_cuda_tensor_map_2d (runtime/cuda/cuda_driver.h).
 *
 *   test_tma_gpu            (label gpu) runs every case on an sm_90+ GPU
 *   test_tma_gpu --nvrtc    (CI) compiles the kernels for sm_90a (no
 *                           warning), checks that a kernel including the
 *                           header still compiles for sm_80 and that every
 *                           helper of the header is used by tma_kernels.cu
 * Both modes check the wrapper's argument rules (they come before any
 * driver call). Exit 77 (skip) without libnvrtc or an sm_90+ GPU.
 *
 * The global tensor holds distinct 16-bit values, value(idx) = 1 + (idx *
 * 40503) mod 65521 for idx = row * cols + col: never 0 (the out-of-bounds
 * fill), never TMA_POISON (0xFFFE, what the kernel writes into the tile
 * first) nor PAD (0xFFFF, the row padding beyond `cols`). Each kernel copies
 * its shared tile out raw; here element (r, c) of box p must sit at
 *   p * rows * box_c + swz(r, c / 8) * 8 + c % 8,
 *   swz(r, k) = r * cpr + (k ^ x), cpr = box_c / 8 chunks per row,
 *   x = r % 8 (cpr 8, 128B swizzle), (r / 2) % 4 (cpr 4, 64B),
 *       (r / 4) % 2 (cpr 2, 32B); swz(r, k) = r * cpr + k without swizzle
 * (tc_swizzle_offset's formula, written again here), holding the tensor's
 * element (y + r, x + p * box_c + c) or 0 outside the tensor. A mismatch
 * prints where the value found there came from in the tensor.
 * The copy kernels then store the tile back by TMA (tc_tma_store) into a
 * second tensor of the same layout, filled with PAD: its elements inside
 * the boxes and the tensor must equal the source's, every other one must
 * still be PAD, except that a row's last partial 16-byte chunk past the
 * tensor's columns is written whole (with the zeros the load put there):
 * the H100 does that, which is why the runtime takes a TMA store only for
 * tensors whose rows are a multiple of 16 bytes (rt_tma.c). A store at
 * negative coordinates faulted there (illegal instruction): the negative
 * case stores nothing and its second tensor must stay PAD.
 */
#include <stdint.h>

#include "cuda_driver.h"
#include "tile_test.h"

extern const char tma_kernels_name[];
extern const char tma_kernels_text[];

#define POISON 0xFFFEu
#define PAD 0xFFFFu
#define VALUE_MOD 65521u /* prime: idx -> value is one-to-one below it */
#define VALUE_MUL 40503u
#define THREADS 128

typedef struct TmaCase {
  const char *name;
  int swizzle;          /* bytes: 0, 32, 64, 128 */
  int rows, box_c;      /* one box: rows x box_c elements */
  int panels;           /* boxes side by side (64-column panels) */
  int t_rows, t_cols;   /* the tensor */
  int t_pitch;          /* elements per row in memory (>= t_cols) */
  int x, y;             /* first box's coordinates */
  int stages, iters;    /* > 0: the ring kernel (x, y unused) */
  int pair;             /* 1: the ring shared by a 2-block cluster (panels = 2) */
} TmaCase;

static const TmaCase cases[] = {
    {"tma_swz128_64x64", 128, 64, 64, 1, 192, 160, 160, 64, 64, 0, 0},
    {"tma_swz128_128x64", 128, 128, 64, 1, 256, 128, 128, 64, 128, 0, 0},
    {"tma_swz128_64x128_two_panels", 128, 64, 64, 2, 128, 256, 256, 64, 64, 0, 0},
    {"tma_swz64_64x32", 64, 64, 32, 1, 128, 96, 96, 32, 64, 0, 0},
    {"tma_swz32_32x16", 32, 32, 16, 1, 64, 48, 48, 16, 32, 0, 0},
    {"tma_plain_32x40", 0, 32, 40, 1, 64, 80, 80, 40, 32, 0, 0},
    /* 36 of 64 rows and 6 of 64 columns inside; the tensor's rows are padded
     * to 80 elements with PAD, which must not be read. */
    {"tma_swz128_edge", 128, 64, 64, 1, 100, 70, 80, 64, 64, 0, 0},
    /* Panel 1 is columns 64..127 of a 96-column tensor: half outside. */
    {"tma_swz128_edge_panels", 128, 32, 64, 2, 40, 96, 104, 0, 16, 0, 0},
    {"tma_swz128_negative", 128, 64, 64, 1, 64, 64, 64, -8, -3, 0, 0},
    /* Coordinates read from bad data: clamped (tc_tma_coord) to a box wholly
     * outside the tensor, all zeros. */
    {"tma_swz128_wild", 128, 64, 64, 1, 64, 64, 64, INT32_MIN, INT32_MIN + 7, 0, 0},
    /* 3 stages, 9 iterations: every stage's barriers go through phases
     * 0, 1, 0. */
    {"tma_ring_3stages_9iters", 128, 64, 64, 1, 9 * 64, 64, 64, 0, 0, 3, 9},
    /* The same shared by a cluster pair: stages of two 64-column panels,
     * one loaded by each block into both. */
    {"tma_pair_ring_3stages_7iters", 128, 32, 64, 2, 7 * 32, 128, 128, 0, 0, 3, 7, 1},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static uint16_t value(long idx) { return (uint16_t)(1u + (unsigned)((idx * VALUE_MUL) % VALUE_MOD)); }

/* The idx with value(idx) == v, or -1 (v outside the values' range). */
static long value_index(unsigned v) {
  static long inv = 0; /* VALUE_MUL^-1 mod VALUE_MOD, by Fermat */
  if (!inv) {
    long r = 1, b = VALUE_MUL, e = VALUE_MOD - 2;
    for (; e; e >>= 1, b = b * b % VALUE_MOD)
      if (e & 1) r = r * b % VALUE_MOD;
    inv = r;
  }
  if (v < 1 || v > VALUE_MOD) return -1;
  return (long)(v - 1) * inv % VALUE_MOD;
}

/* Shared-memory element index of (r, c) inside one box. */
static int box_index(const TmaCase *c, int r, int col) {
  int cpr = c->box_c / 8, k = col / 8, x = 0;
  if (c->swizzle == 128) x = r % 8;
  if (c->swizzle == 64) x = (r / 2) % 4;
  if (c->swizzle == 32) x = (r / 4) % 2;
  return (r * cpr + (k ^ x)) * 8 + col % 8;
}

/* The tensor as stored: t_rows x t_pitch, PAD beyond t_cols. */
static uint16_t *make_tensor(const TmaCase *c) {
  if ((long)c->t_rows * c->t_cols > (long)VALUE_MOD) {
    fprintf(stderr, "%s: the tensor has more elements than distinct values\n", c->name);
    return NULL;
  }
  uint16_t *t = malloc(2u * (size_t)c->t_rows * c->t_pitch);
  if (!t) return NULL;
  for (int r = 0; r < c->t_rows; r++)
    for (int col = 0; col < c->t_pitch; col++)
      t[(size_t)r * c->t_pitch + col] = col < c->t_cols ? value((long)r * c->t_cols + col) : PAD;
  return t;
}

static unsigned tensor_at(const TmaCase *c, const uint16_t *t, int r, int col) {
  if (r < 0 || r >= c->t_rows || col < 0 || col >= c->t_cols) return 0;
  return t[(size_t)r * c->t_pitch + col];
}

static void describe(unsigned v, const TmaCase *c, char *buf, size_t cap) {
  long idx = value_index(v);
  if (v == 0)
    snprintf(buf, cap, "zero");
  else if (v == POISON)
    snprintf(buf, cap, "the poison: TMA never wrote it");
  else if (v == PAD)
    snprintf(buf, cap, "row padding beyond the tensor's columns");
  else if (idx >= 0 && idx < (long)c->t_rows * c->t_cols)
    snprintf(buf, cap, "tensor (%ld, %ld)", idx / c->t_cols, idx % c->t_cols);
  else
    snprintf(buf, cap, "no tensor element");
}

static char *source(void) {
  TileSrc s = {0};
  char line[256];
  tile_src_add(&s, tma_kernels_text);
  tile_src_add(&s, "\n// ---- instantiations added by test_tma_gpu.c ----\n");
  for (int i = 0; i < NCASES; i++) {
    const TmaCase *c = &cases[i];
    if (c->stages)
      snprintf(line, sizeof line, "%s(%s, %d, %d, %d, %d)\n", c->pair ? "TMA_PAIR_RING" : "TMA_RING", c->name,
               c->rows, c->box_c, c->stages, c->iters);
    else
      snprintf(line, sizeof line, "TMA_COPY(%s, %d, %d, %d)\n", c->name, c->rows, c->box_c,
               c->panels);
    tile_src_add(&s, line);
  }
  return s.p;
}

/* The expected raw shared tile(s): 16-bit elements for a copy, 32-bit
 * weighted sums for the ring. */
static void expect(const TmaCase *c, const uint16_t *t, uint32_t *want) {
  const int box = c->rows * c->box_c;
  if (c->stages) {
    const int panels = c->pair ? 2 : 1, copies = c->pair ? 2 : 1; /* a pair: both blocks' sums */
    memset(want, 0, sizeof *want * (size_t)box * panels * copies);
    for (int b = 0; b < copies; b++)
      for (int i = 0; i < c->iters; i++)
        for (int p = 0; p < panels; p++)
          for (int r = 0; r < c->rows; r++)
            for (int col = 0; col < c->box_c; col++)
              want[(b * panels + p) * box + box_index(c, r, col)] +=
                  (uint32_t)(i + 1) * tensor_at(c, t, i * c->rows + r, p * c->box_c + col);
    return;
  }
  for (int p = 0; p < c->panels; p++)
    for (int r = 0; r < c->rows; r++)
      for (int col = 0; col < c->box_c; col++)
        want[p * box + box_index(c, r, col)] = tensor_at(c, t, c->y + r, c->x + p * c->box_c + col);
}

static void run_case(RtCuda *cu, RtCuModule mod, const TmaCase *c) {
  const int box = c->rows * c->box_c, n = c->stages ? box * c->panels * (c->pair ? 2 : 1) : box * c->panels;
  const size_t out_elem = c->stages ? 4 : 2, t_bytes = 2u * (size_t)c->t_rows * c->t_pitch;
  const size_t tiles = c->stages ? (size_t)c->stages * box * c->panels * 2 : (size_t)n * 2;
  const size_t smem = 1024 + tiles + 64; /* alignment slack, tiles, barriers */
  uint16_t *t = make_tensor(c);
  uint32_t *want = malloc(sizeof *want * (size_t)n);
  unsigned char *got = malloc(out_elem * (size_t)n);
  RtCuTensorMap map, back_map;
  RtCuDevPtr dt = 0, dout = 0, dback = 0;
  uint16_t *back = malloc(t_bytes);
  RtCuFunction fn = NULL;
  unsigned grid[3] = {c->pair ? 2 : 1, 1, 1}, block[3] = {THREADS, 1, 1};
  bool ok = t && want && got && back;
  CHECK_MSG(ok, "%s: out of memory", c->name);
  ok = ok && rt_cuda_malloc(cu, t_bytes, &dt) && rt_cuda_malloc(cu, out_elem * n, &dout) &&
       rt_cuda_memcpy_htod(cu, dt, t, t_bytes) && rt_cuda_memset(cu, dout, 0xFF, out_elem * n) &&
       rt_cuda_tensor_map_2d(cu, &map, dt, 2, (unsigned long long)c->t_cols,
                             (unsigned long long)c->t_rows, 2ull * (unsigned long long)c->t_pitch,
                             (unsigned)c->box_c, (unsigned)c->rows, c->swizzle) &&
       rt_cuda_get_function(cu, mod, c->name, &fn) && rt_cuda_set_max_dynamic_smem(cu, fn, smem);
  if (ok && !c->stages)
    ok = rt_cuda_malloc(cu, t_bytes, &dback) && rt_cuda_memset(cu, dback, 0xFF, t_bytes) &&
         rt_cuda_tensor_map_2d(cu, &back_map, dback, 2, (unsigned long long)c->t_cols,
                               (unsigned long long)c->t_rows, 2ull * (unsigned long long)c->t_pitch,
                               (unsigned)c->box_c, (unsigned)c->rows, c->swizzle);
  int x = c->x, y = c->y;
  void *copy_params[] = {&map, &back_map, &dout, &x, &y}, *ring_params[] = {&map, &dout};
  ok = ok &&
       rt_cuda_launch_kernel(cu, fn, grid, block, smem, NULL, c->stages ? ring_params : copy_params) &&
       rt_cuda_synchronize(cu) && rt_cuda_memcpy_dtoh(cu, got, dout, out_elem * n);
  CHECK_MSG(ok, "%s: %s", c->name, rt_cuda_last_error(cu));
  int bad = 0;
  if (ok) {
    expect(c, t, want);
    for (int p = 0; p < (c->stages ? n / box : c->panels); p++)
      for (int r = 0; r < c->rows; r++)
        for (int col = 0; col < c->box_c; col++) {
          int j = p * box + box_index(c, r, col);
          uint32_t g;
          if (c->stages) {
            memcpy(&g, got + 4u * j, 4);
          } else {
            uint16_t h;
            memcpy(&h, got + 2u * j, 2);
            g = h;
          }
          if (g == want[j]) continue;
          if (bad++ >= 8) continue;
          if (c->stages) {
            fprintf(stderr, "%s: row %d col %d (shared element %d): sum %u, want %u\n", c->name, r,
                    col, j, g, want[j]);
          } else {
            char gd[96], wd[96];
            describe(g, c, gd, sizeof gd);
            describe(want[j], c, wd, sizeof wd);
            fprintf(stderr,
                    "%s: box %d row %d col %d (shared element %d): got 0x%04x (%s), want 0x%04x "
                    "(%s)\n",
                    c->name, p, r, col, j, g, gd, want[j], wd);
          }
        }
  }
  CHECK_MSG(bad == 0, "%s: %d of %d elements wrong", c->name, bad, n);
  /* The stores back: the boxes' part inside the tensor, nothing else. */
  int bad_back = 0;
  if (ok && !c->stages && rt_cuda_memcpy_dtoh(cu, back, dback, t_bytes)) {
    for (int r = 0; r < c->t_rows; r++)
      for (int col = 0; col < c->t_pitch; col++) {
        const bool in_box = c->x >= 0 && c->y >= 0 && r >= c->y && r < c->y + c->rows && col >= c->x &&
                            col < c->x + c->panels * c->box_c; /* no store at negative coordinates */
        const int chunk_end = (c->t_cols + 7) / 8 * 8; /* whole 16-byte chunks */
        const unsigned want_v = !in_box || col >= chunk_end ? PAD : col < c->t_cols ? t[(size_t)r * c->t_pitch + col] : 0;
        const unsigned got_v = back[(size_t)r * c->t_pitch + col];
        if (got_v != want_v && bad_back++ < 8)
          fprintf(stderr, "%s (TMA store): tensor (%d, %d) is 0x%04x, want 0x%04x\n", c->name, r, col, got_v, want_v);
      }
    CHECK_MSG(bad_back == 0, "%s: the TMA store wrote %d elements wrong", c->name, bad_back);
  } else if (ok && !c->stages) {
    CHECK_MSG(false, "%s: %s", c->name, rt_cuda_last_error(cu));
  }
  if (ok && !bad && !bad_back) printf("ok %s%s\n", c->name, c->stages ? "" : " (and its TMA store back)");
  rt_cuda_free(cu, dt);
  rt_cuda_free(cu, dout);
  rt_cuda_free(cu, dback);
  free(t), free(want), free(got), free(back);
}

/* The wrapper refuses bad arguments, naming the rule, before touching the
 * driver; a good call then needs a device (NVRTC-only handle) or succeeds. */
static void check_wrapper_rules(RtCuda *cu) {
  static RtCuTensorMap map;
  _Static_assert(sizeof(RtCuTensorMap) == 128, "a CUtensorMap is 128 bytes");
  _Static_assert(_Alignof(RtCuTensorMap) == 64, "a CUtensorMap is 64-byte aligned");
  const RtCuDevPtr base = 0x100000; /* never dereferenced: these calls fail before the driver */
  struct {
    RtCuDevPtr base;
    int elem;
    unsigned long long inner, outer, stride;
    unsigned bi, bo;
    int swz;
    const char *msg;
  } bad[] = {
      {base + 8, 2, 64, 64, 128, 64, 64, 128, "not 16-byte aligned"},
      {base, 3, 64, 64, 192, 16, 16, 0, "element size 3"},
      {base, 2, 0, 64, 128, 64, 64, 128, "must each be in [1, 2^32]"},
      {base, 2, 64, 64, 136, 64, 64, 128, "not a multiple of 16"},
      {base, 2, 64, 64, 64, 64, 64, 128, "at least one row"},
      {base, 2, 512, 512, 1024, 16, 257, 0, "each side must be in [1, 256]"},
      {base, 2, 64, 64, 128, 0, 64, 0, "each side must be in [1, 256]"},
      {base, 2, 64, 64, 128, 12, 64, 0, "not a multiple of 16"},
      {base, 2, 64, 64, 128, 64, 64, 16, "swizzle 16 bytes"},
      {base, 2, 128, 64, 256, 128, 64, 128, "wider than the 128-byte swizzle span"},
      {base, 2, 64, 64, 128, 64, 64, 64, "wider than the 64-byte swizzle span"},
      {base, 2, 64, 64, 128, 32, 64, 32, "wider than the 32-byte swizzle span"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bool ok = rt_cuda_tensor_map_2d(cu, &map, bad[i].base, bad[i].elem, bad[i].inner, bad[i].outer,
                                    bad[i].stride, bad[i].bi, bad[i].bo, bad[i].swz);
    CHECK_MSG(!ok && strstr(rt_cuda_last_error(cu), bad[i].msg) &&
                  strstr(rt_cuda_last_error(cu), "rt_cuda_tensor_map_2d: "),
              "bad case %zu: want an error containing \"%s\", got %s \"%s\"", i, bad[i].msg,
              ok ? "success" : "failure", rt_cuda_last_error(cu));
  }
  /* A misaligned descriptor (a copy of the struct inside a byte buffer). */
  static _Alignas(64) unsigned char buf[256];
  CHECK(!rt_cuda_tensor_map_2d(cu, (RtCuTensorMap *)(void *)(buf + 16), base, 2, 64, 64, 128, 64,
                               64, 128) &&
        strstr(rt_cuda_last_error(cu), "must be 64-byte aligned"));
  RtCuDevPtr real = 0;
  if (rt_cuda_has_device(cu) && !rt_cuda_malloc(cu, 2 * 64 * 64, &real)) real = 0;
  bool ok = rt_cuda_tensor_map_2d(cu, &map, real ? real : base, 2, 64, 64, 128, 64, 64, 128);
  if (rt_cuda_has_device(cu)) {
    CHECK_MSG(ok, "a valid tensor map: %s", rt_cuda_last_error(cu));
    rt_cuda_free(cu, real);
  } else
    CHECK_MSG(!ok && strstr(rt_cuda_last_error(cu), "needs a CUDA device"),
              "NVRTC-only handle: %s", rt_cuda_last_error(cu));
  printf("ok wrapper argument rules (%zu refusals)\n", sizeof bad / sizeof bad[0] + 1);
}

/* Every `TC_DEVICE ... name(` of tilec_tma.cuh is called in tma_kernels.cu. */
static void check_every_helper_used(void) {
  const char *h = rt_cuda_device_header("tilec_tma.cuh");
  CHECK_MSG(h != NULL, "tilec_tma.cuh is not embedded");
  int helpers = 0;
  for (const char *p = h ? strstr(h, "\nTC_DEVICE ") : NULL; p; p = strstr(p + 1, "\nTC_DEVICE ")) {
    const char *paren = strchr(p, '('), *start = paren;
    while (start > p && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
                         (start[-1] >= '0' && start[-1] <= '9')))
      start--;
    char call[80];
    snprintf(call, sizeof call, "%.*s(", (int)(paren - start), start);
    helpers++;
    CHECK_MSG(strstr(tma_kernels_text, call) != NULL, "helper %s of tilec_tma.cuh is not used by tma_kernels.cu",
              call);
  }
  CHECK_MSG(helpers >= 10, "only %d helpers found in tilec_tma.cuh", helpers);
  printf("ok tilec_tma.cuh: %d helpers, all used by tma_kernels.cu\n", helpers);
}

/* An sm_80 build of a kernel that includes the header and takes a map. */
static void check_sm80(RtCuda *cu) {
  const char *src = "#include \"tilec_tma.cuh\"\n"
                    "extern \"C\" __global__ void k(const __grid_constant__ tc_tensor_map m, unsigned long long *o) {\n"
                    "  o[threadIdx.x] = m.opaque[threadIdx.x % 16] + sizeof(tc_tensor_map) + alignof(tc_tensor_map);\n"
                    "}\n";
  void *cubin = NULL;
  size_t size = 0;
  bool ok = tile_compile_clean(cu, src, "tma_sm80.cu", "sm_80", &cubin, &size);
  if (ok) printf("ok tilec_tma.cuh compiles for sm_80 (helpers left out)\n");
  free(cubin);
}

int main(int argc, char **argv) {
  bool nvrtc_only = argc > 1 && strcmp(argv[1], "--nvrtc") == 0;
  RtCuda *cu = tile_open_sm90(nvrtc_only, false, "TMA");
  if (!cu) return TEST_SKIP;
  char arch[16] = "sm_90a";
  if (!nvrtc_only) {
    rt_cuda_target(rt_cuda_arch(cu), arch);
    printf("device: %s (%s)\n", rt_cuda_device_name(cu), arch);
  }
  check_wrapper_rules(cu);
  if (nvrtc_only) {
    check_every_helper_used();
    check_sm80(cu);
  }
  char *src = source();
  void *cubin = NULL;
  size_t size = 0;
  RtCuModule mod = NULL;
  bool ok = tile_compile_clean(cu, src, "tma_kernels.cu", arch, &cubin, &size);
  if (ok) printf("ok tma_kernels.cu compiles for %s (%d kernels)\n", arch, NCASES);
  if (ok && !nvrtc_only) {
    ok = rt_cuda_module_load(cu, cubin, size, &mod);
    CHECK_MSG(ok, "load: %s", rt_cuda_last_error(cu));
    for (int i = 0; ok && i < NCASES; i++) run_case(cu, mod, &cases[i]);
    rt_cuda_module_unload(cu, mod);
  }
  free(cubin);
  free(src);
  rt_cuda_close(cu);
  printf("%s\n", test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
