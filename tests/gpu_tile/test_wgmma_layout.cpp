/* test_wgmma_layout.cpp - the wgmma operand layouts on the host (CI, no GPU).
 *
 * tc_gemm_wgmma_ss / _rs (runtime/device/tilec_wgmma.cuh) hand wgmma shared
 * memory descriptors (start address, LBO, SBO, swizzle mode) for tiles the
 * rest of tilec stores with tc_smem_index<ROWS, COLS, SWZ> (and TMA writes,
 * box by box). This test decodes the descriptors the header builds and walks
 * them the way the PTX ISA describes wgmma reading a canonical layout:
 *   - K-major (A [M][K], B [N][K]): the element (row m, k) of a k16 step is
 *     at start + (m / 8) * SBO + (m % 8) * S + 2 * k, S the swizzle span
 *     (32, 64 or 128 bytes, = the row bytes of the layout);
 *   - N-major B ([K][N]): element (n, k) is at start + (n / (S / 2)) * LBO +
 *     (k / 8) * SBO + (k % 8) * S + 2 * (n % (S / 2));
 *   - then the swizzle on the absolute address: the 16-byte chunk bits
 *     [4, 4 + b) are XOR-ed with bits [7, 7 + b), 2^b = S / 16 (tiles start
 *     1024-byte aligned; here at address 0).
 * Each element wgmma reads must be the one tc_smem_index stored there, for
 * every shape the compiler asks for: 16/32/64-wide rows, 64-column panels
 * (dims 128, 256) and the panels of other widths (dim 96: three 32-column
 * panels with 64-byte rows; 80: five 16-column ones; 160; 48), both B
 * layouts, one and two warpgroups. The existing 64-column cases ran on an
 * H100/H200 (test_wgmma_gpu), which is what ties this model to the hardware.
 * transpose_A's M-major A ([K][M], wgmma's transpose bit for A) is walked
 * as an N-major B. Also checks that panel tiles are free of shared-memory
 * bank conflicts for column reads of 8 rows and for tc_copy_g2s's cp.async
 * order, tc_panel_cols against swizzle-layout's rule and that a panel
 * tile is a bijection onto [0, ROWS * COLS). FP8 tiles (one-byte codes,
 * tc_smem_index<..., 1>) are walked as tc_gemm_wgmma_fp8_ss reads them.
 * Warpgroups splitting N (tc_gemm_wgmma_ss's GN, check_gemm_nsplit): each
 * warpgroup's descriptors, B started at its slice (tc_wgmma_b_slice), read
 * its rows of A and its columns of B, for B in the narrowed panels the
 * compiler gives such a B (SWZ 32 / 64) and K-major; the warps' places
 * (tc_warp_pos) are the rows and columns the accumulator's registers hold;
 * and a warp's element stores of an MMA_C fragment into the narrowed
 * panels are free of bank conflicts (the backward's dS^T store).
 */
#include "emu_device.h"
#include "tilec_tile.cuh"
#include "tilec_wgmma.cuh"

#include <vector>

/* The emulation's globals, unused here (emu_driver.cpp defines them for
 * tile_emulated). */
thread_local EmuIdx emu_thread_idx;
pthread_barrier_t emu_block_barrier;
unsigned char emu_shared[16];
const unsigned emu_shared_bytes = 16;
unsigned emu_addr_table[4][32];
unsigned emu_frag_table[4][32][6];

static int failures;
#define CHECK(c, ...)                          \
  do {                                         \
    if (!(c)) {                                \
      if (failures++ < 20) {                   \
        fprintf(stderr, "FAILED: " __VA_ARGS__); \
        fputc('\n', stderr);                   \
      }                                        \
    }                                          \
  } while (0)

struct Desc {
  unsigned addr, lbo, sbo, span;
};

static Desc decode(unsigned long long d) {
  Desc r;
  r.addr = (unsigned)(d & 0x3FFFu) << 4;
  r.lbo = (unsigned)((d >> 16) & 0x3FFFu) << 4;
  r.sbo = (unsigned)((d >> 32) & 0x3FFFu) << 4;
  const unsigned mode = (unsigned)(d >> 62);
  r.span = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
  return r;
}

/* The hardware swizzle of a byte address for a span of S bytes. */
static unsigned hw_swizzle(unsigned addr, unsigned span) {
  const unsigned mask = span / 16 - 1; /* 7, 3 or 1 */
  return addr ^ (((addr >> 7) & mask) << 4);
}

static unsigned kmajor_addr(const Desc &d, int m, int k) {
  return hw_swizzle(d.addr + (unsigned)(m / 8) * d.sbo + (unsigned)(m % 8) * d.span + 2u * (unsigned)k, d.span);
}

static unsigned nmajor_addr(const Desc &d, int n, int k) {
  const int pe = (int)d.span / 2; /* elements per swizzled row */
  return hw_swizzle(d.addr + (unsigned)(n / pe) * d.lbo + (unsigned)(k / 8) * d.sbo + (unsigned)(k % 8) * d.span +
                        2u * (unsigned)(n % pe),
                    d.span);
}

/* Byte address -> logical (row, col) of a [ROWS][COLS] tile stored with
 * tc_smem_index<ROWS, COLS, SWZ>; also checks the map is a bijection. */
template <int ROWS, int COLS, int SWZ>
static std::vector<int> inverse(const char *what) {
  std::vector<int> inv((size_t)ROWS * COLS, -1);
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) {
      const int i = tc_smem_index<ROWS, COLS, SWZ>(r, c);
      if (i < 0 || i >= ROWS * COLS) {
        CHECK(false, "%s [%d][%d] SWZ %d: (%d, %d) stored at %d, outside the tile", what, ROWS, COLS, SWZ, r, c, i);
        continue;
      }
      CHECK(inv[(size_t)i] < 0, "%s [%d][%d] SWZ %d: two elements stored at %d", what, ROWS, COLS, SWZ, i);
      inv[(size_t)i] = r * COLS + c;
    }
  return inv;
}

/* Swizzle mode of the compiler's layout: swizzled rows of 32/64/128 bytes
 * (SWZ 1) or panels (SWZ 2), as swizzle-layout picks it. */
template <int COLS>
constexpr int swz_of() {
  return (COLS == 16 || COLS == 32 || COLS == 64) ? 1 : 2;
}

/* acc += A @ B as tc_gemm_wgmma_ss issues it: every k16 step of every
 * warpgroup reads A [M][K] through tc_wgmma_a_desc and B through
 * tc_wgmma_b_desc; each element read must be the logical one. */
template <int M, int N, int K, bool B_NK, bool A_KM = false>
static void check_gemm() {
  constexpr int AR = A_KM ? K : M, AC = A_KM ? M : K, A_SWZ = swz_of<AC>();
  constexpr int BR = B_NK ? N : K, BC = B_NK ? K : N, B_SWZ = swz_of<BC>();
  char what[96];
  snprintf(what, sizeof what, "gemm %dx%dx%d %s %s", M, N, K, A_KM ? "A [K][M]" : "A [M][K]",
           B_NK ? "B [N][K]" : "B [K][N]");
  const std::vector<int> ia = inverse<AR, AC, A_SWZ>(what), ib = inverse<BR, BC, B_SWZ>(what);
  int bad = 0;
  for (int g = 0; g < M / 64; g++)
    for (int kk = 0; kk < K / 16; kk++) {
      const Desc da = decode(tc_wgmma_a_desc<M, K, A_SWZ, A_KM>(0u, g, kk));
      CHECK(da.span == (A_SWZ == 2 ? 2u * tc_panel_cols<AC>() : 2u * AC), "%s: A's swizzle span %u", what, da.span);
      for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++) {
          /* An M-major A is read as an N-major B is (wgmma's transpose bit). */
          const unsigned a = A_KM ? nmajor_addr(da, m, k) : kmajor_addr(da, m, k);
          const int want = A_KM ? (16 * kk + k) * M + 64 * g + m : (64 * g + m) * K + 16 * kk + k;
          if (a % 2 || a / 2 >= ia.size() || ia[a / 2] != want) bad++;
        }
      if (g) continue; /* B is the same for every warpgroup */
      const Desc db = decode(tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(0u, kk));
      CHECK(db.span == (B_SWZ == 2 ? 2u * tc_panel_cols<BC>() : 2u * BC), "%s: B's swizzle span %u", what, db.span);
      for (int n = 0; n < N; n++)
        for (int k = 0; k < 16; k++) {
          const unsigned a = B_NK ? kmajor_addr(db, n, k) : nmajor_addr(db, n, k);
          const int want = B_NK ? n * K + 16 * kk + k : (16 * kk + k) * N + n;
          if (a % 2 || a / 2 >= ib.size() || ib[a / 2] != want) bad++;
        }
    }
  CHECK(bad == 0, "%s: %d elements read where the tile does not hold them", what, bad);
}

/* acc += A @ B with 32 accumulator rows per warp, as
 * tc_gemm_wgmma_ss_2blocks issues it: warpgroup g's block b reads A
 * through tc_wgmma_a_desc_2blocks; its wgmma row m must be the logical row
 * 128 g + 16 (m / 8) + 8 b + m % 8, and the register holding wgmma row m
 * of warp w (m = 16 w + 8 h + lane / 4) must be, through
 * tc_wgmma_block_acc, the MMA_C slot whose row that is (32 rows per warp:
 * slot s at 16 (s / 2) + 8 (s % 2)). B is read as by check_gemm. */
template <int M, int N, int K>
static void check_gemm_2blocks() {
  constexpr int A_SWZ = swz_of<K>();
  char what[96];
  snprintf(what, sizeof what, "two m64 blocks %dx%dx%d", M, N, K);
  const std::vector<int> ia = inverse<M, K, A_SWZ>(what);
  int bad = 0;
  for (int g = 0; g < M / 128; g++)
    for (int b = 0; b < 2; b++) {
      const unsigned long long d0 = tc_wgmma_a_desc_2blocks<M, K, A_SWZ>(0u, g, b);
      for (int kk = 0; kk < K / 16; kk++) {
        const Desc da = decode(tc_wgmma_desc_add(d0, tc_wgmma_a_step<M, K, A_SWZ, false>(kk)));
        for (int m = 0; m < 64; m++)
          for (int k = 0; k < 16; k++) {
            const unsigned a = kmajor_addr(da, m, k);
            const int want = (128 * g + 16 * (m / 8) + 8 * b + m % 8) * K + 16 * kk + k;
            if (a % 2 || a / 2 >= ia.size() || ia[a / 2] != want) bad++;
          }
      }
    }
  CHECK(bad == 0, "%s: %d elements of A read where the tile does not hold them", what, bad);
  /* Registers: the TC_WGMMA_* macros number wgmma's register of row half h,
   * 8-column chunk j, element e as h * N / 4 + 2 j + e. */
  static float acc[N];
  int wrong = 0;
  for (int b = 0; b < 2; b++) {
    const tc_wgmma_block_acc<N> blk{acc + b * (N / 4)};
    for (int w = 0; w < 4; w++)
      for (int h = 0; h < 2; h++)
        for (int j = 0; j < N / 8; j++)
          for (int e = 0; e < 2; e++) {
            const int idx = (int)(&blk[h * (N / 4) + 2 * j + e] - acc);
            const int slot = idx / (N / 4), col = idx % (N / 4);
            const int m = 16 * w + 8 * h;                      /* lane 0's wgmma row */
            const int row = 16 * (m / 8) + 8 * b + m % 8;      /* in the warpgroup's 128 */
            const int mma_row = 32 * w + 16 * (slot / 2) + 8 * (slot % 2);
            if (idx < 0 || idx >= N / 2 * 2 || row != mma_row || col != 2 * j + e) wrong++;
          }
  }
  CHECK(wrong == 0, "%s: %d accumulator registers in the wrong MMA_C slot", what, wrong);
}

/* acc += A @ B with the warpgroups splitting N, as tc_gemm_wgmma_ss<...,
 * GN> issues it: warpgroup g = warp / 4 reads rows [64 (g / GN), +64) of A
 * (tc_wgmma_a_desc) and columns [(g % GN) NW, +NW) of B, NW = N / GN, its
 * B descriptor built at tc_wgmma_b_slice of that column and stepped as the
 * template steps it; B stored in the layout B_SWZ (1: swizzled rows; 2 or
 * 32/64/128 bytes: panels). Every element each warpgroup's wgmmas read must
 * be the logical one. Also: tc_warp_pos<GN, true> gives each warp the rows
 * of its 16-row slice inside its warpgroup's 64 rows and the warpgroup's
 * columns, which is where the m64nNWk16 accumulator registers are. */
template <int M, int N, int K, bool B_NK, bool A_KM, int GN, int B_SWZ>
static void check_gemm_nsplit() {
  constexpr int NW = N / GN, GROUPS = M / 64 * GN;
  constexpr int AR = A_KM ? K : M, AC = A_KM ? M : K, A_SWZ = swz_of<AC>();
  constexpr int BR = B_NK ? N : K, BC = B_NK ? K : N;
  char what[128];
  snprintf(what, sizeof what, "N split %dx%dx%d GN %d %s %s B_SWZ %d", M, N, K, GN, A_KM ? "A [K][M]" : "A [M][K]",
           B_NK ? "B [N][K]" : "B [K][N]", B_SWZ);
  const std::vector<int> ia = inverse<AR, AC, A_SWZ>(what), ib = inverse<BR, BC, B_SWZ>(what);
  int bad = 0;
  for (int g = 0; g < GROUPS; g++) {
    const int gm = g / GN, n0 = (g % GN) * NW;
    const unsigned long long da0 = tc_wgmma_a_desc<M, K, A_SWZ, A_KM>(0u, gm, 0);
    const unsigned long long db0 = tc_wgmma_b_desc<N, K, B_SWZ, B_NK>(tc_wgmma_b_slice<N, K, B_SWZ, B_NK>(n0), 0);
    for (int kk = 0; kk < K / 16; kk++) {
      const Desc da = decode(tc_wgmma_desc_add(da0, tc_wgmma_a_step<M, K, A_SWZ, A_KM>(kk)));
      const Desc db = decode(tc_wgmma_desc_add(db0, tc_wgmma_b_step<N, K, B_SWZ, B_NK>(kk)));
      const unsigned span = 2u * (unsigned)tc_wgmma_row_elems<BC, B_SWZ>();
      CHECK(db.span == span, "%s: B's swizzle span %u (want %u)", what, db.span, span);
      /* A slice starts where a swizzle pattern does (the descriptor's base
       * offset stays 0): at a multiple of 8 rows of the span. */
      CHECK(db.addr % (8u * span) == 0 || kk, "%s: warpgroup %d's B slice starts inside a swizzle pattern", what, g);
      for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++) {
          const unsigned a = A_KM ? nmajor_addr(da, m, k) : kmajor_addr(da, m, k);
          const int want = A_KM ? (16 * kk + k) * M + 64 * gm + m : (64 * gm + m) * K + 16 * kk + k;
          if (a % 2 || a / 2 >= ia.size() || ia[a / 2] != want) bad++;
        }
      for (int n = 0; n < NW; n++)
        for (int k = 0; k < 16; k++) {
          const unsigned a = B_NK ? kmajor_addr(db, n, k) : nmajor_addr(db, n, k);
          const int want = B_NK ? (n0 + n) * K + 16 * kk + k : (16 * kk + k) * N + n0 + n;
          if (a % 2 || a / 2 >= ib.size() || ib[a / 2] != want) bad++;
        }
    }
  }
  CHECK(bad == 0, "%s: %d elements read where the tile does not hold them", what, bad);
  /* The warp grid: warp w's MMA_C rows and columns are its warpgroup's
   * accumulator rows 16 (w % 4) .. of the warpgroup's 64, columns of its slice. */
  for (int w = 0; w < 4 * GROUPS; w++) {
    int wm = -1, wn = -1;
    tc_warp_pos<GN, true>(w, wm, wn);
    const int g = w / 4;
    CHECK(wm * 16 == 64 * (g / GN) + 16 * (w % 4) && wn * NW == (g % GN) * NW,
          "%s: warp %d at (%d, %d) of the warp grid, not where its warpgroup's wgmma writes", what, w, wm, wn);
  }
}

/* A warp storing an MMA_C fragment element by element into a [ROWS][COLS]
 * tile of layout SWZ (the copy of a 16-bit fragment into a gemm operand:
 * the backward's dS^T): for each slot, lane l writes row 8h + l / 4 of its
 * 16-row slice, column 8 ni + 2 (l % 4) + c (2 bytes). The 32 lanes touch
 * 16 distinct 4-byte words; a conflict is two words in one bank. */
template <int ROWS, int COLS, int SWZ>
static void check_fragment_store_banks(int warps_n) {
  const int NWC = COLS / warps_n; /* a warp's columns */
  int bad = 0;
  for (int row0 = 0; row0 + 16 <= ROWS; row0 += 16)
    for (int wn = 0; wn < warps_n; wn++)
      for (int h = 0; h < 2; h++)
        for (int col = 0; col < NWC; col += 8)
          for (int c = 0; c < 2; c++) {
            unsigned word_of_bank[32];
            for (int b = 0; b < 32; b++) word_of_bank[b] = ~0u;
            for (int l = 0; l < 32; l++) {
              const int r = row0 + 8 * h + l / 4, cc = wn * NWC + col + 2 * (l % 4) + c;
              const unsigned word = 2u * (unsigned)tc_smem_index<ROWS, COLS, SWZ>(r, cc) / 4u, bank = word % 32u;
              if (word_of_bank[bank] != ~0u && word_of_bank[bank] != word) bad++;
              word_of_bank[bank] = word;
            }
          }
  CHECK(bad == 0, "fragment stores into [%d][%d] SWZ %d over %d warp columns: %d bank conflicts", ROWS, COLS, SWZ,
        warps_n, bad);
}

/* The FP8 gemm (tc_gemm_wgmma_fp8_ss): A [M][K] and B [N][K] of one-byte
 * codes, both K-major, stored with tc_smem_index<ROWS, K, SWZ, 1> (SWZ 1
 * for rows of 32, 64, 128 bytes, else panels of tc_panel_cols<K, 1>()
 * codes). The template takes its descriptors from the 16-bit helpers at
 * K / 2 (same bytes); every k32 step reads code (m, k) at start + (m / 8) *
 * SBO + (m % 8) * S + k, which must be the code stored there. */
template <int ROWS, int K>
static std::vector<int> inverse8(const char *what) {
  constexpr int SWZ = K == 32 || K == 64 || K == 128 ? 1 : 2;
  std::vector<int> inv((size_t)ROWS * K, -1);
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < K; c++) {
      const int i = tc_smem_index<ROWS, K, SWZ, 1>(r, c);
      if (i < 0 || i >= ROWS * K) {
        CHECK(false, "%s [%d][%d] FP8: (%d, %d) stored at %d, outside the tile", what, ROWS, K, r, c, i);
        continue;
      }
      CHECK(inv[(size_t)i] < 0, "%s [%d][%d] FP8: two codes stored at %d", what, ROWS, K, i);
      inv[(size_t)i] = r * K + c;
    }
  return inv;
}

template <int M, int N, int K>
static void check_gemm_fp8() {
  constexpr int SWZ = K == 32 || K == 64 || K == 128 ? 1 : 2, KH = K / 2;
  char what[96];
  snprintf(what, sizeof what, "FP8 gemm %dx%dx%d", M, N, K);
  const std::vector<int> ia = inverse8<M, K>(what), ib = inverse8<N, K>(what);
  const unsigned span = SWZ == 2 ? (unsigned)tc_panel_cols<K, 1>() : (unsigned)K;
  int bad = 0;
  for (int g = 0; g < M / 64; g++) {
    const unsigned long long da0 = tc_wgmma_a_desc<M, KH, SWZ>(0u, g, 0);
    const unsigned long long db0 = tc_wgmma_b_desc<N, KH, SWZ, true>(0u, 0);
    for (int kk = 0; kk < K / 32; kk++) {
      const Desc da = decode(tc_wgmma_desc_add(da0, tc_wgmma_a_step<M, KH, SWZ, false>(kk)));
      const Desc db = decode(tc_wgmma_desc_add(db0, tc_wgmma_b_step<N, KH, SWZ, true>(kk)));
      CHECK(da.span == span && db.span == span, "%s: swizzle spans %u, %u (want %u)", what, da.span, db.span, span);
      for (int m = 0; m < 64; m++)
        for (int k = 0; k < 32; k++) {
          const unsigned a = hw_swizzle(da.addr + (unsigned)(m / 8) * da.sbo + (unsigned)(m % 8) * da.span + k, da.span);
          if (a >= ia.size() || ia[a] != (64 * g + m) * K + 32 * kk + k) bad++;
        }
      if (g) continue;
      for (int n = 0; n < N; n++)
        for (int k = 0; k < 32; k++) {
          const unsigned a = hw_swizzle(db.addr + (unsigned)(n / 8) * db.sbo + (unsigned)(n % 8) * db.span + k, db.span);
          if (a >= ib.size() || ib[a] != n * K + 32 * kk + k) bad++;
        }
    }
  }
  CHECK(bad == 0, "%s: %d codes read where the tile does not hold them", what, bad);
  /* The waiting form runs each column slice (the whole tile up to
   * tc_fp8_part_cols) with its own B descriptor (tc_fp8_slice_b_desc) and adds its
   * accumulator into acc's floats of the same row and column
   * (tc_fp8_slice_float), the column of float i of an n-column accumulator
   * in lane l being ((i % (n / 4)) / 2) * 8 + 2 (l % 4) + i % 2 and its row
   * half i / (n / 4). */
  constexpr int NP = tc_fp8_part_cols<N>();
  for (int h = 0; h < N / NP; h++) {
    const unsigned long long db0 = tc_fp8_slice_b_desc<N, NP, KH, SWZ>(0u, h);
    for (int kk = 0; kk < K / 32; kk++) {
      const Desc db = decode(tc_wgmma_desc_add(db0, tc_wgmma_b_step<N, KH, SWZ, true>(kk)));
      for (int n = 0; n < NP; n++)
        for (int k = 0; k < 32; k++) {
          const unsigned a = hw_swizzle(db.addr + (unsigned)(n / 8) * db.sbo + (unsigned)(n % 8) * db.span + k, db.span);
          if (a >= ib.size() || ib[a] != (h * NP + n) * K + 32 * kk + k) bad++;
        }
    }
  }
  CHECK(bad == 0, "%s: column slices of %d read %d codes of other columns", what, NP, bad);
  std::vector<int> hit((size_t)N / 2, 0);
  for (int h = 0; h < N / NP; h++)
    for (int i = 0; i < NP / 2; i++)
      for (int lane = 0; lane < 4; lane++) {
        const int t = tc_fp8_slice_float<N, NP>(h, i);
        const int col = h * NP + ((i % (NP / 4)) / 2) * 8 + 2 * lane + i % 2;
        const int tcol = ((t % (N / 4)) / 2) * 8 + 2 * lane + t % 2;
        if (t < 0 || t >= N / 2 || tcol != col || t / (N / 4) != i / (NP / 4)) bad++;
        else if (lane == 0) hit[(size_t)t]++;
      }
  for (int t = 0; t < N / 2; t++)
    if (hit[(size_t)t] != 1) bad++;
  CHECK(bad == 0, "%s: column slices of %d promote into the wrong floats (%d)", what, NP, bad);
}

/* A panel (box) written by TMA with the hardware swizzle lands where
 * tc_smem_index puts it: panel p at p * ROWS * P elements, each a [ROWS][P]
 * box with S = 2P-byte rows. */
template <int ROWS, int COLS, int ES = 2>
static void check_tma_panels() {
  constexpr int P = tc_panel_cols<COLS, ES>();
  int bad = 0;
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) {
      const unsigned plain = (unsigned)((c / P) * ROWS * P * ES + r * P * ES + (c % P) * ES);
      if (hw_swizzle(plain, ES * P) != (unsigned)ES * (unsigned)tc_smem_index<ROWS, COLS, 2, ES>(r, c)) bad++;
    }
  CHECK(bad == 0, "TMA panels [%d][%d] of %d-byte elements: %d elements disagree", ROWS, COLS, ES, bad);
}

/* Bank conflicts of a panel tile under the accesses threads make: 16-byte
 * chunks, 8 to a phase (128 bytes, the 32 banks once). (a) the same logical
 * chunk of 8 consecutive rows (an ldmatrix / column read); (b) tc_copy_g2s's
 * cp.async order, 8 consecutive chunks i = tid + j * THREADS per phase: at
 * (i / CPR, i % CPR) for 64-column panels, panel by panel for narrower ones
 * (tc_copy_g2s copies those one panel at a time; in row-major order the
 * rows of two 32-column panels would share bank groups). Each phase must
 * touch 8 distinct bank groups (16-byte address / 16 mod 8). */
template <int ROWS, int COLS>
static void check_panel_banks() {
  constexpr int CPR = COLS / 8;
  int bad = 0;
  for (int r0 = 0; r0 + 8 <= ROWS; r0 += 8)
    for (int c = 0; c < CPR; c++) {
      unsigned seen = 0;
      for (int r = r0; r < r0 + 8; r++) seen |= 1u << ((tc_smem_index<ROWS, COLS, 2>(r, 8 * c) / 8) % 8);
      if (seen != 0xFFu) bad++;
    }
  CHECK(bad == 0, "panels [%d][%d]: %d column reads of 8 rows with a bank conflict", ROWS, COLS, bad);
  bad = 0;
  constexpr int P = tc_panel_cols<COLS>(), PCPR = P / 8;
  for (int i0 = 0; i0 + 8 <= ROWS * CPR; i0 += 8) {
    unsigned seen = 0;
    for (int i = i0; i < i0 + 8; i++) {
      int r = i / CPR, c = i % CPR;
      if (P < 64) { /* panel i / (ROWS * PCPR), then row-major inside it */
        const int p = i / (ROWS * PCPR), in = i % (ROWS * PCPR);
        r = in / PCPR, c = p * PCPR + in % PCPR;
      }
      seen |= 1u << ((tc_smem_index<ROWS, COLS, 2>(r, 8 * c) / 8) % 8);
    }
    if (seen != 0xFFu) bad++;
  }
  CHECK(bad == 0, "panels [%d][%d]: %d cp.async phases with a bank conflict", ROWS, COLS, bad);
}

int main() {
  /* swizzle-layout's rule (compiler/passes/swizzle_layout.c). */
  CHECK(tc_panel_cols<128>() == 64 && tc_panel_cols<256>() == 64 && tc_panel_cols<192>() == 64, "panel width 64");
  CHECK(tc_panel_cols<96>() == 32 && tc_panel_cols<160>() == 32 && tc_panel_cols<224>() == 32, "panel width 32");
  CHECK(tc_panel_cols<80>() == 16 && tc_panel_cols<48>() == 16 && tc_panel_cols<112>() == 16, "panel width 16");
  /* FP8: the same rule in bytes (128, 64, 32 codes). */
  CHECK((tc_panel_cols<256, 1>()) == 128 && (tc_panel_cols<384, 1>()) == 128, "FP8 panel width 128");
  CHECK((tc_panel_cols<192, 1>()) == 64 && (tc_panel_cols<320, 1>()) == 64, "FP8 panel width 64");
  CHECK((tc_panel_cols<96, 1>()) == 32 && (tc_panel_cols<160, 1>()) == 32, "FP8 panel width 32");

  /* Shapes that ran on the GPU (test_wgmma_gpu's cases). */
  check_gemm<64, 64, 64, false>();
  check_gemm<128, 128, 64, false>();
  check_gemm<64, 256, 32, false>();
  check_gemm<64, 128, 16, false>();
  check_gemm<64, 32, 64, false>();
  check_gemm<64, 16, 64, false>();
  check_gemm<128, 64, 128, true>();
  check_gemm<64, 128, 64, true>();
  check_gemm<128, 128, 32, true>();
  check_gemm<128, 128, 128, false>();
  /* Panels of 32 and 16 columns. */
  check_gemm<128, 128, 96, true>();  /* flash attention d 96: S = Q K^T */
  check_gemm<128, 96, 128, false>(); /* ... O = P V, V [128][96] */
  check_gemm<64, 64, 160, true>();   /* d 160 */
  check_gemm<64, 160, 64, false>();
  check_gemm<64, 80, 80, true>();    /* 16-column panels */
  check_gemm<64, 80, 48, false>();
  check_gemm<64, 48, 96, false>();
  check_gemm<128, 224, 96, true>();
  /* transpose_A: A stored [K][M], M-major (64-column panels per warpgroup). */
  check_gemm<64, 64, 32, false, true>();
  check_gemm<128, 128, 32, false, true>();
  check_gemm<128, 96, 96, true, true>();
  check_gemm<256, 64, 64, true, true>();
  /* Two m64 blocks per warpgroup (32 accumulator rows per warp): gemm.tile
   * 256 x 128 over 256 threads; 128-byte rows, panels, 64- and 32-byte rows. */
  check_gemm_2blocks<256, 128, 64>();
  check_gemm_2blocks<128, 256, 128>();
  check_gemm_2blocks<128, 64, 32>();
  check_gemm_2blocks<256, 64, 16>();
  check_gemm_2blocks<128, 96, 96>();

  /* FP8 (test_wgmma_gpu's wg_fp8_* cases and more). */
  check_gemm_fp8<128, 128, 128>();
  check_gemm_fp8<64, 256, 128>();
  check_gemm_fp8<128, 256, 128>();
  check_gemm_fp8<128, 192, 128>();
  check_gemm_fp8<64, 64, 64>();
  check_gemm_fp8<64, 16, 32>();
  check_gemm_fp8<128, 64, 256>();
  check_gemm_fp8<128, 96, 192>();
  check_gemm_fp8<64, 80, 96>();
  check_gemm_fp8<64, 48, 384>();
  check_gemm_fp8<128, 128, 160>();

  /* Warpgroups splitting N (GN > 1): the attention backward's dQ^T = K^T
   * dS^T at dim 64 (A = K [128 keys][64] M-major, B = dS^T [128][N] N-major
   * in narrowed panels: 96 queries in 16-column panels for slices of 48,
   * 64 in 32-column panels for slices of 32, 32 in 16-column ones); a
   * K-major B (slices of rows); two warpgroup rows (GM 2) and four columns. */
  check_gemm_nsplit<64, 96, 128, false, true, 2, 32>();
  check_gemm_nsplit<64, 64, 128, false, true, 2, 64>();
  check_gemm_nsplit<64, 32, 128, false, true, 2, 32>();
  check_gemm_nsplit<64, 128, 64, true, false, 2, 1>();
  check_gemm_nsplit<64, 96, 96, true, false, 2, 2>();
  check_gemm_nsplit<128, 64, 32, false, false, 2, 64>();
  check_gemm_nsplit<64, 128, 64, false, false, 4, 64>();
  check_gemm_nsplit<64, 256, 64, false, true, 2, 2>();
  check_gemm_nsplit<128, 192, 64, true, true, 2, 2>();
  /* The slices' panels must start a whole panel: the compiler's rule
   * (pass_nsplit_panel_cols) for these shapes is the SWZ used above. */
  CHECK((tc_swz_panel_cols<96, 32>()) == 16 && (tc_swz_panel_cols<64, 64>()) == 32 &&
            (tc_swz_panel_cols<96, 2>()) == 32,
        "narrowed panel widths");
  /* dS^T's store from the fragment (p_cast, 8 warps x 1) into the
   * narrowed panels, and into the layouts before the split. */
  check_fragment_store_banks<128, 96, 32>(1);
  check_fragment_store_banks<128, 64, 64>(1);
  check_fragment_store_banks<128, 96, 1>(1);
  check_fragment_store_banks<128, 64, 1>(1);

  check_tma_panels<128, 128>();
  check_tma_panels<128, 256, 1>();
  check_tma_panels<64, 192, 1>();
  check_tma_panels<64, 96, 1>();
  check_tma_panels<128, 96>();
  check_tma_panels<64, 160>();
  check_tma_panels<64, 80>();
  check_tma_panels<8, 48>();

  check_panel_banks<128, 96>();
  check_panel_banks<128, 128>();
  check_panel_banks<64, 160>();
  check_panel_banks<64, 80>();
  check_panel_banks<64, 48>();
  check_panel_banks<64, 192>();

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("wgmma layouts: every descriptor walk reads the element tc_smem_index stored\n");
  return 0;
}
