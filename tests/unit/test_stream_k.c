/* test_stream_k.c - the scheduling half of runtime/device/tilec_stream_k.cuh
 * on the host. For launches of T tiles of n k-iterations on P blocks (small
 * and large, with and without a split), every block's units (tc_sk_plan,
 * tc_sk_next) together cover each (tile, k) exactly once; a unit that does
 * not end its tile is its block's first; each split tile has one unit that
 * ends it, the last of its block's split units, and tc_sk_next_part_from it
 * names exactly the other blocks holding parts of that tile, in descending
 * order; the split happens only where the header's rule says, and then
 * every block runs floor or ceil(R n / P) split iterations plus whole tiles
 * T - R dealt round robin; (all blocks at one rate) no finisher waits more
 * than one iteration for a part; and the blocks run in lockstep: every
 * split unit but a middle part (a block's whole range inside one tile)
 * starts at a time t with t - k_begin between 0 and share - n (give or take
 * the iteration by which shares differ), so all blocks ask for one of two
 * k-slices at a time (the forward walk fails that check). Mutating the
 * header (an off-by-one in a range or a part walk) fails it.
 *
 * The header is included as it is, its functions made host functions, with
 * the split rule the GPU tests use (small splits pay: TC_SK_MIN_SAVED 4, no
 * slowdown term); the default rule's choices on shapes measured on an H100
 * are checked apart (check_default_rule). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TC_DEVICE static inline
#define TC_SK_MIN_SAVED 4
#define TC_SK_SLOW_DIV 0
#include "../../runtime/device/tilec_stream_k.cuh"

static long failures;
#define EXPECT(c, ...)                                           \
  do {                                                           \
    if (!(c) && failures++ < 20) {                               \
      fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);     \
      fprintf(stderr, __VA_ARGS__);                              \
      fputc('\n', stderr);                                       \
    }                                                            \
  } while (0)

typedef struct Unit {
  int block, tile, k_begin, k_len, index; /* index: the unit's position in its block's walk */
} Unit;

static void check_launch(int T, int n, int P) {
  const tc_sk_split sp = tc_sk_split_of(T, n, P);
  if (sp.split_iters) /* a finisher's tile -> position inverts position -> tile */
    for (int pos = 0; pos < (int)(sp.split_iters / sp.k_iters); pos++) {
      const int tile = tc_sk_tile_of_position(pos, T, P);
      if (tc_sk_position_of_tile(tile, &sp) != pos) {
        fprintf(stderr, "T=%d n=%d P=%d: position %d -> tile %d -> position %d\n", T, n, P, pos, tile,
                tc_sk_position_of_tile(tile, &sp));
        failures++;
      }
    }
  const int r = T % P;
  const int expect_split = T > P && P <= TC_SK_SLOTS && n > 0 && r > 0 && (long long)(P - r) * n >= 4LL * P;
  EXPECT((sp.split_iters != 0) == expect_split, "T %d n %d P %d: split %u, expected %d", T, n, P, sp.split_iters,
         expect_split);
  /* split tiles: the last partial wave's, or with fewer than P / 2 of them one whole wave more */
  const int R = sp.split_iters ? (2 * r < P ? r + P : r) : 0;
  /* cover[tile * n + k]: how many units hold iteration k of tile */
  unsigned char *cover = calloc((size_t)T * (n ? n : 1), 1);
  Unit *units = malloc(sizeof(Unit) * ((size_t)T * 2 + (size_t)P * 4 + 16));
  /* done_at[u]: when unit u ends, in iterations since its block started
   * (every block starts at once and runs its units back to back) */
  long *done_at = malloc(sizeof(long) * ((size_t)T * 2 + (size_t)P * 4 + 16));
  const long share = sp.split_iters ? (long)(sp.split_iters / (unsigned)P) : 0;
  const long lag_lo = (share < n ? share - n : 0) - 1, lag_hi = (share > n ? share - n : 0) + 1;
  int nunits = 0;
  for (int b = 0; b < P; b++) {
    tc_stream_k s = tc_sk_plan(T, n, P, b);
    int tile, kb, kl, index = 0, split_iters = 0;
    long clock = 0;
    while (tc_sk_next(&s, T, n, P, &tile, &kb, &kl)) {
      EXPECT(tile >= 0 && tile < T && kb >= 0 && kl >= 0 && kb + kl <= n, "T %d n %d P %d block %d: unit (%d, %d, %d)",
             T, n, P, b, tile, kb, kl);
      if (tile < 0 || tile >= T || kb < 0 || kl < 0 || kb + kl > n) break;
      if (kl < n) EXPECT(tile < R, "T %d n %d P %d: a partial unit of unsplit tile %d", T, n, P, tile);
      if (tile < R) split_iters += kl;
      else EXPECT((tile - R) % P == b, "T %d P %d: whole tile %d on block %d", T, P, tile, b);
      for (int k = kb; k < kb + kl; k++) cover[(size_t)tile * n + k]++;
      if (kb + kl < n) EXPECT(index == 0, "T %d n %d P %d block %d: a part [%d, %d) in unit %d", T, n, P, b, kb, kb + kl,
                              index);
      /* lockstep: k = clock - lag with lag in [0, share - n], but for a middle part */
      if (tile < R && !(kb > 0 && kb + kl < n))
        EXPECT(clock - kb >= lag_lo && clock - kb <= lag_hi,
               "T %d n %d P %d block %d: unit (%d, %d, %d) starts at %ld: lag %ld outside [%ld, %ld]", T, n, P, b, tile,
               kb, kl, clock, clock - kb, lag_lo, lag_hi);
      clock += kl;
      done_at[nunits] = clock;
      units[nunits++] = (Unit){b, tile, kb, kl, index++};
      if (nunits > T * 2 + P * 4) break;
    }
    EXPECT(split_iters <= (int)((sp.split_iters + P - 1) / P), "T %d n %d P %d block %d: %d split iterations", T, n,
           P, b, split_iters);
    EXPECT(split_iters >= (int)(sp.split_iters / P), "T %d n %d P %d block %d: %d split iterations", T, n, P, b,
           split_iters);
  }
  for (long i = 0; i < (long)T * n; i++)
    EXPECT(cover[i] == 1, "T %d n %d P %d: tile %ld iteration %ld covered %d times", T, n, P, i / n, i % n, cover[i]);
  /* Finishers and their parts. */
  for (int t = 0; t < R; t++) {
    int finishers = 0, fin = -1;
    for (int u = 0; u < nunits; u++)
      if (units[u].tile == t && units[u].k_begin + units[u].k_len == n) finishers++, fin = u;
    EXPECT(finishers == 1, "T %d n %d P %d: split tile %d has %d units that end it", T, n, P, t, finishers);
    if (fin < 0) continue;
    const Unit *f = &units[fin];
    if (f->k_len == n) { /* whole: no other block holds a part */
      for (int u = 0; u < nunits; u++)
        EXPECT(units[u].tile != t || u == fin, "T %d n %d P %d: tile %d whole and split", T, n, P, t);
      continue;
    }
    /* the finisher ends its block's split units */
    for (int u = 0; u < nunits; u++)
      EXPECT(!(units[u].block == f->block && units[u].tile < R && units[u].index > f->index),
             "T %d n %d P %d: block %d has a split unit after finishing tile %d", T, n, P, f->block, t);
    int expect_parts[TC_SK_SLOTS + 1], nexpect = 0;
    for (int u = nunits - 1; u >= 0; u--) /* descending blocks, as the finisher adds them */
      if (units[u].tile == t && u != fin) {
        expect_parts[nexpect++] = units[u].block;
        /* every part ends within its block's share, so at equal rates a
         * finisher waits at most the one iteration shares differ by */
        EXPECT(done_at[u] <= done_at[fin] + 1, "T %d n %d P %d: tile %d's part on block %d ends at %ld, after its "
               "finisher (block %d) at %ld", T, n, P, t, units[u].block, done_at[u], f->block, done_at[fin]);
      }
    int got = 0;
    /* as tc_sk_fixup walks them: the tile's position found once */
    const unsigned tile_begin = (unsigned)tc_sk_position_of_tile(t, &sp) * sp.k_iters;
    for (int b = tc_sk_next_part_from(&sp, tile_begin, f->block); b >= 0; b = tc_sk_next_part_from(&sp, tile_begin, b)) {
      EXPECT(got < nexpect && expect_parts[got] == b, "T %d n %d P %d: tile %d part %d from block %d", T, n, P, t, got,
             b);
      got++;
      if (got > nexpect) break;
    }
    EXPECT(got == nexpect, "T %d n %d P %d: tile %d: %d parts named, %d held", T, n, P, t, got, nexpect);
  }
  free(cover);
  free(units);
  free(done_at);
}

/* The default rule (TC_SK_DEFAULT_*) splits where the H100 measured a gain
 * and not where it measured a loss (session 24, 128 x 256 bf16 tiles on
 * 132 SMs, time against the whole-tile build): M x N x K -> T tiles, R the
 * last wave's, n = K / 64. */
static void check_default_rule(void) {
  static const struct {
    const char *shape;
    int T, n, pays;
  } cases[] = {
      {"4352x4096x4096 (-3.2 %)", 544, 64, 1},  {"2176x4096x4096 (-6.8 %)", 272, 64, 1},
      {"4352x8192x8192 (-1.3 %)", 1088, 128, 1}, {"2304x2048x8192 (-21 %)", 144, 128, 1},
      {"4608x4096x2048 (+6.0 %)", 576, 32, 0},  {"4352x4096x1024 (+8.1 %)", 544, 16, 0},
      {"4096x4096x4096 (R 116)", 512, 64, 0},   {"8192x8192x8192 (R 68)", 2048, 128, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int P = 132, R = cases[i].T % P;
    const int pays = tc_sk_pays(cases[i].n, P, R, TC_SK_DEFAULT_MIN_SAVED, TC_SK_DEFAULT_SLOW_DIV);
    EXPECT(pays == cases[i].pays, "%s: the default rule %s", cases[i].shape, pays ? "splits" : "does not split");
  }
}

/* tc_sk_inverse_mod against its definition, for every coprime pair up to
 * m = 2 TC_SK_SLOTS (L, the phase order's cycle, is at most the blocks). */
static void check_inverse_mod(void) {
  for (unsigned m = 1; m <= 2 * TC_SK_SLOTS; m++)
    for (unsigned a = 0; a < m; a++)
      if (tc_sk_gcd(a, m) == 1) {
        const unsigned inv = tc_sk_inverse_mod(a, m);
        EXPECT(inv < m && a * inv % m == 1 % m, "inverse of %u mod %u: %u", a, m, inv);
      }
}

int main(void) {
  check_default_rule();
  check_inverse_mod();
  /* The shapes the benchmarks run (128 x 256 tiles, 64-wide k-blocks, 132 SMs). */
  check_launch(512, 64, 132);  /* 4096^3: 116 split tiles (with the tests' rule) */
  check_launch(544, 64, 132);  /* 4352 x 4096 x 4096: 16 split tiles over 132 blocks */
  check_launch(528, 64, 132);  /* 4224: whole waves, no split */
  check_launch(2048, 128, 132);
  check_launch(133, 16, 132);  /* one split tile of 16 iterations: most blocks empty */
  check_launch(131, 64, 132);  /* fewer tiles than blocks: no split */
  check_launch(20, 3, 7);
  check_launch(1000, 0, 132);  /* K = 0 */
  for (int P = 1; P <= 40; P++)
    for (int T = 1; T <= 3 * P + 5; T += (T < 2 * P ? 1 : 3))
      for (int n = 0; n <= 13; n++) check_launch(T, n, P);
  check_launch(300, 9, TC_SK_SLOTS);
  check_launch(300, 9, TC_SK_SLOTS + 1); /* more blocks than slots: no split */
  if (failures) {
    fprintf(stderr, "%ld check(s) failed\n", failures);
    return 1;
  }
  printf("stream-K schedules: ok\n");
  return 0;
}
