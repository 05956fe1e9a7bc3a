/* tilec_stream_k.cuh - stream-K for a persistent GEMM's last wave (pass
 * stream-k, compiler/backend/cuda/stream_k.c).
 *
 * A persistent GEMM of T tiles on P blocks runs T / P whole waves and then a
 * last wave of R = T % P tiles that leaves P - R blocks idle while the others
 * run a whole tile's k-loop (512 tiles of 128 x 256 on 132 SMs: 3.88 waves
 * that cost 4). Here the R tiles' R n k-iterations (n per tile) are split
 * evenly over all P blocks first (where R < P / 2, the last R + P tiles
 * are: tc_sk_split_tiles): block b takes iterations
 * [R n b / P, R n (b + 1) / P) of them as units (tile, k_begin, k_len),
 * walking its range BACKWARDS a tile at a time (its last tile's part
 * first, from k = 0); then it takes whole tiles R + b, R + b + P, ... as
 * before. Every block does the same work, give or take one iteration.
 *
 * Why backwards: blocks whose units start at different k ask the L2 for
 * different k-slices of the operand panels they share, where the
 * whole-tile waves ask for each k-slice together. Walked forwards, block
 * b's first unit started at its own offset k_b inside a tile (k_b = b
 * times the share, mod n: every offset at once), and the split phase ran
 * slow (H100, 4096^3: 65 % more L2 read sectors; 2304 x 2048 x 8192,
 * where every tile is split, 0.77-0.85x cuBLAS). Walked backwards, every
 * first unit that starts a tile starts at k = 0 at time 0, and a block's
 * last unit, the rest [k_b, n) of its first tile, starts at time
 * share - (n - k_b), which is k_b + share - n: all blocks run at k = t or
 * k = t - (share - n), two slices apart by a constant. Only a block whose
 * whole range lies inside one tile (share < n) starts elsewhere.
 *
 * The split tiles are also handed out in phase order
 * (tc_sk_tile_of_position), which made raster neighbours (sharing A's or
 * B's panel) start their parts at nearly the same k when the walk went
 * forwards (ncu, H100 4096^3: DRAM reads 269 MB in plain order, 207 in
 * phase order, 187 without the split). With the backward walk the offsets
 * no longer depend on the tile; the order is kept (a bijection, no cost)
 * and has not been measured against the plain one since.
 *
 * A finisher (the unit that ends a tile: the last of its block's walk)
 * needs the earlier blocks' parts of the tile, which are their first units
 * (or a block's whole range): with every block at the same rate it waits
 * at most the one iteration by which shares differ (unit.stream_k checks
 * it on the host).
 *
 * The reduction: a unit that does not end its tile (k_begin + k_len < n)
 * can only be the first unit of its block's walk (its later units end at
 * tile boundaries). It stores its accumulator as the block's partial sum
 * and raises the block's flag. The unit that ends the tile after starting
 * inside it finishes the tile: it waits for the flags of the blocks before
 * it whose ranges end inside the tile, adds their partials in block order
 * (descending; so the sum does not depend on timing: the same bits every
 * run on a GPU of the same SM count), and runs the epilogue. No block
 * waits on a unit that comes later in another block's walk, so there is
 * no cycle; the blocks a finisher waits on must be resident or become so,
 * which a grid of at most one block per resident slot (the runtime's
 * persistent grid) gives on a GPU other kernels do not hold forever.
 *
 * The workspace (TC_SK_SLOTS partial sums and flags) is a pair of
 * __device__ arrays of the generated module, zeroed when it loads. A
 * finisher re-arms (zeroes) each flag it consumed, so the next launch finds
 * them clear. Two launches of one loaded kernel must therefore not run at
 * the same time; the runtime orders launches on different streams
 * (rt_gpu.c, TilertKernel.stream_k_done): docs/gpu-codegen.md, "Stream-K".
 *
 * Split only where it pays (tc_sk_pays): each block saves n (P - R) / P
 * iterations (R the last wave's tiles; with the +1-wave rule the same),
 * and the split costs TC_SK_MIN_SAVED iterations (publishing and adding a
 * partial) plus n / TC_SK_SLOW_DIV (the split phase ran slower than whole
 * tiles when walked forwards: its blocks no longer asked for the same
 * k-slice together). The defaults, 12 and 2, fit what an H100 measured on
 * 128 x 256 bf16 tiles with the forward walk (session 24: gains at n = 64
 * and 128 with R / P up to 0.24, losses at n = 16 and 32); rechecked after
 * the backward walk (session 31: without the n / 2 term the two shapes it
 * would add split and lose, 0.898 and 0.892 against 0.931 and 0.935). Tests that need small splits build with
 * -DTC_SK_MIN_SAVED=4 -DTC_SK_SLOW_DIV=0 ($TILEC_NVRTC_FLAGS). And only
 * with P <= TC_SK_SLOTS blocks (one partial slot each).
 *
 * The runtime runs the stream-K build by default for the launches with a
 * thin last wave ($TILEC_STREAM_K unset or auto; 1 builds every kernel
 * with it, 0 none): docs/gpu-codegen.md, "Stream-K".
 *
 * The scheduling half is C-compatible: tests/unit/test_stream_k.c includes
 * it on the host (TC_DEVICE = static inline) and checks every split covers
 * each tile's iterations once, with partials only where a finisher reads. */
#ifndef TILEC_STREAM_K_CUH
#define TILEC_STREAM_K_CUH

#ifndef TC_DEVICE
#define TC_DEVICE static __device__ __forceinline__
#endif

#define TC_SK_SLOTS 160
#define TC_SK_DEFAULT_MIN_SAVED 12
#define TC_SK_DEFAULT_SLOW_DIV 2
#ifndef TC_SK_MIN_SAVED
#define TC_SK_MIN_SAVED TC_SK_DEFAULT_MIN_SAVED
#endif
#ifndef TC_SK_SLOW_DIV
#define TC_SK_SLOW_DIV TC_SK_DEFAULT_SLOW_DIV
#endif

/* The split of one launch: T tiles of n k-iterations on P blocks, of which
 * the first R are split. In 32-bit unsigned arithmetic (a 64-bit division
 * is a call that costs registers the roles do not have): no split unless
 * T and R n are below 2^31. Recomputed where needed rather than kept in
 * registers across the k-loop. */
typedef struct tc_sk_split {
  unsigned k_iters, blocks;
  unsigned split_iters;      /* R n (0: no split) */
  unsigned per_block, spare; /* R n = per_block P + spare */
} tc_sk_split;

/* How many tiles are split, given a split: the last partial wave's R = T % P,
 * or with fewer than P / 2 of those (each tile would be cut into three or
 * more parts, and a finisher adds its parts one after another) one whole
 * wave more, R + P, so every block's share is at least a tile. */
TC_DEVICE unsigned tc_sk_split_tiles(unsigned tiles, unsigned blocks) {
  const unsigned r = tiles % blocks;
  return 2 * r < blocks ? r + blocks : r;
}

/* Whether splitting pays for a last wave of r tiles of n iterations on p
 * blocks: the saving n (p - r) / p at least min_saved + n / slow_div
 * (slow_div 0: no such term). In 64 bits: n up to 2^31, p up to
 * TC_SK_SLOTS. */
TC_DEVICE int tc_sk_pays(long long n, long long p, long long r, long long min_saved, long long slow_div) {
  if (slow_div <= 0) return (p - r) * n >= min_saved * p;
  return slow_div * (p - r) * n >= p * (slow_div * min_saved + n);
}

TC_DEVICE tc_sk_split tc_sk_split_of(long long tiles, long long k_iters, long long blocks) {
  tc_sk_split p = {(unsigned)k_iters, (unsigned)blocks, 0, 0, 0};
  if (tiles > blocks && blocks <= TC_SK_SLOTS && k_iters > 0 && tiles < (1LL << 31) && k_iters < (1LL << 31)) {
    const unsigned r = (unsigned)tiles % (unsigned)blocks;
    const long long split_iters = (long long)tc_sk_split_tiles((unsigned)tiles, (unsigned)blocks) * k_iters;
    if (r > 0 && split_iters < (1LL << 31) && tc_sk_pays(k_iters, blocks, r, TC_SK_MIN_SAVED, TC_SK_SLOW_DIV)) {
      p.split_iters = (unsigned)split_iters;
      p.per_block = (unsigned)split_iters / (unsigned)blocks;
      p.spare = (unsigned)split_iters % (unsigned)blocks;
    }
  }
  return p;
}

/* Where block b's share of the split iterations begins (b == blocks: their
 * end): floor(R n b / P) = per_block b + floor(spare b / P). */
TC_DEVICE unsigned tc_sk_range_begin(const tc_sk_split *p, unsigned b) {
  return p->per_block * b + p->spare * b / p->blocks;
}

/* Which tile split position p (the p-th of the R split tiles in the order
 * the blocks' ranges walk them) computes. Positions are ranked by phase --
 * where p's start falls in its block's range, n ((p P) mod R) / P
 * iterations -- so tiles whose k-slices load at about the same time are
 * raster neighbours. With g = gcd(P, R) and L = R / g, v(p) = (p P mod R) / g
 * = p (P / g) mod L is a bijection of [0, L) (P / g and L are coprime) and
 * repeats with period L, so rank = v g + p / L is a bijection of [0, R).
 * TC_SK_PHASE_ORDER=0 (e.g. $TILEC_NVRTC_FLAGS=-DTC_SK_PHASE_ORDER=0) gives
 * the plain order, for comparison. */
#ifndef TC_SK_PHASE_ORDER
#define TC_SK_PHASE_ORDER 1
#endif
TC_DEVICE unsigned tc_sk_gcd(unsigned a, unsigned b) {
  while (b) {
    const unsigned t = a % b;
    a = b;
    b = t;
  }
  return a;
}
TC_DEVICE int tc_sk_tile_of_position(int p, long long tiles, long long blocks) {
  if (!TC_SK_PHASE_ORDER) return p;
  const unsigned P = (unsigned)blocks, R = tc_sk_split_tiles((unsigned)tiles, P), g = tc_sk_gcd(P, R), L = R / g;
  const unsigned v = ((unsigned)p * P % R) / g;
  return (int)(v * g + (unsigned)p / L);
}

/* a^-1 mod m for gcd(a, m) = 1 (m >= 1; 0 when m = 1), by extended
 * Euclid: a few divisions. */
TC_DEVICE unsigned tc_sk_inverse_mod(unsigned a, unsigned m) {
  int t = 0, t_next = 1;
  unsigned r = m, r_next = a % m;
  while (r_next) {
    const unsigned q = r / r_next, r_new = r - q * r_next;
    const int t_new = t - (int)q * t_next;
    r = r_next, r_next = r_new, t = t_next, t_next = t_new;
  }
  return (unsigned)(t < 0 ? t + (int)m : t);
}

/* The inverse (a finisher's tile -> its position): p0 solves
 * p0 (P / g) = v mod L, so p0 = v (P / g)^-1 mod L. It replaced a search
 * over p0 (up to L modulo steps on every consumer thread, twice per
 * finisher), which made the finishers' fix-up grow with L: session 31,
 * H100, 4096^3 split over one wave more (L = 62): 8.9-10.6 us, then
 * 6.2-7.2. */
TC_DEVICE int tc_sk_position_of_tile(int tile, const tc_sk_split *sp) {
  if (!TC_SK_PHASE_ORDER) return tile;
  const unsigned P = sp->blocks, R = sp->split_iters / sp->k_iters, g = tc_sk_gcd(P, R), L = R / g;
  const unsigned v = (unsigned)tile / g, j = (unsigned)tile % g, step = P / g % L;
  const unsigned p0 = v * tc_sk_inverse_mod(step, L) % L; /* v, the inverse < L <= TC_SK_SLOTS: no overflow */
  return (int)(p0 + j * L);
}

/* One role's walk over its block's units: `left` split iterations ending
 * at iteration k (exclusive) of split position `tile`, walked backwards a
 * tile at a time, then whole tiles from whole_tile on. Ints,
 * and no division per whole-tile unit (a split unit's phase order takes a
 * few): the producer runs this beside its k-loop in the 40 registers pass
 * stream-k gives it. */
typedef struct tc_stream_k {
  int left, tile, k, whole_tile;
} tc_stream_k;

TC_DEVICE tc_stream_k tc_sk_plan(long long tiles, long long k_iters, long long blocks, long long block) {
  const tc_sk_split p = tc_sk_split_of(tiles, k_iters, blocks);
  const unsigned g = tc_sk_range_begin(&p, (unsigned)block), e = tc_sk_range_begin(&p, (unsigned)block + 1);
  tc_stream_k s = {0, 0, 0, (int)block};
  if (p.split_iters) {
    s.left = (int)(e - g);
    if (e > g) { /* the walk starts from the range's end: its last tile, up to e */
      s.tile = (int)((e - 1) / p.k_iters);
      s.k = (int)(e - (unsigned)s.tile * p.k_iters);
    }
    s.whole_tile += (int)(p.split_iters / p.k_iters); /* R */
  }
  return s;
}

/* The next unit of the launch's T tiles of n iterations on P blocks, or 0
 * when the block is done. */
TC_DEVICE int tc_sk_next(tc_stream_k *s, long long tiles, long long k_iters, long long blocks, int *tile,
                         int *k_begin, int *k_len) {
  if (s->left > 0) {
    const int begin = s->k > s->left ? s->k - s->left : 0;
    *tile = tc_sk_tile_of_position(s->tile, tiles, blocks);
    *k_begin = begin;
    *k_len = s->k - begin;
    s->left -= *k_len;
    s->tile -= 1;
    s->k = (int)k_iters;
    return 1;
  }
  if (s->whole_tile < tiles) {
    *tile = s->whole_tile;
    *k_begin = 0;
    *k_len = (int)k_iters;
    s->whole_tile += (int)blocks;
    return 1;
  }
  return 0;
}

/* The blocks whose partials the finisher of the split tile at position
 * `tile_begin / n` (the unit that ends the tile, k_begin > 0, the last of
 * its block's walk) adds: b = block - 1, block - 2, ... while their ranges
 * end inside the tile; a block with an empty range has none. Returns the
 * next such block below `before`, or -1. */
TC_DEVICE int tc_sk_next_part_from(const tc_sk_split *p, unsigned tile_begin, int before) {
  for (int b = before - 1; b >= 0; --b) {
    const unsigned end = tc_sk_range_begin(p, (unsigned)b + 1);
    if (end <= tile_begin) return -1;
    if (tc_sk_range_begin(p, (unsigned)b) < end) return b;
  }
  return -1;
}

#if defined(__CUDACC__)
TC_DEVICE void tc_sk_flag_raise(unsigned *flag) {
  asm volatile("fence.acq_rel.gpu;\n\tst.relaxed.gpu.global.u32 [%0], 1;" ::"l"(flag) : "memory");
}

TC_DEVICE void tc_sk_flag_wait_and_clear(unsigned *flag) {
  unsigned v;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  } while (v == 0);
  *(volatile unsigned *)flag = 0; /* re-armed for the next launch */
}

/* The i-th float4 of a part, in wgmma's register order: an m64nN
 * accumulator's operand list runs (row r, columns 2c, 2c + 1), (row r + 8,
 * the same columns), c = 0, 1, ..., which is acc[2c], acc[2c + 1],
 * acc[H + 2c], acc[H + 2c + 1] with H = NACC / 2 floats per row
 * (tilec_wgmma_ops.cuh). Each STG.128 then reads four consecutive
 * accumulator registers; the logical order (acc[4i .. 4i + 3]) needed a
 * MOV per float to gather them, where ncu found the store's stalls
 * (session 31). Any order is correct while the finisher adds in the same
 * one: each thread reads back what the same thread of another block
 * wrote. */
template <int NACC>
TC_DEVICE float4 tc_sk_part_quad(const float *acc, int i) {
  return make_float4(acc[2 * i], acc[2 * i + 1], acc[NACC / 2 + 2 * i], acc[NACC / 2 + 2 * i + 1]);
}

/* After a unit's k-loop, on every consumer thread (ctid < THREADS) with its
 * NACC accumulator floats; partials: TC_SK_SLOTS slots of THREADS * NACC / 4
 * float4, stored thread-interleaved (coalesced, and each thread reads back
 * exactly what the same thread of another block wrote: the same layout). */
template <int NACC, int THREADS>
TC_DEVICE void tc_sk_fixup(float *acc, long long tiles, long long k_iters, int tile, int k_begin, int k_len,
                           float4 *partials, unsigned *flags, int ctid) {
  static_assert(NACC % 4 == 0, "stream-K partials move in float4");
  constexpr long long SLOT = THREADS * NACC / 4;
  if (k_len == k_iters) return;        /* a whole tile */
  if (k_begin + k_len < k_iters) { /* an earlier part of a tile another block finishes: publish it */
    float4 *slot = partials + blockIdx.x * SLOT;
#pragma unroll
    for (int i = 0; i < NACC / 4; ++i)
      __stcg(slot + i * THREADS + ctid, tc_sk_part_quad<NACC>(acc, i));
    tc_consumer_sync<THREADS>(); /* every consumer's stores precede the flag */
    if (ctid == 0) tc_sk_flag_raise(flags + blockIdx.x);
    return;
  }
  const tc_sk_split p = tc_sk_split_of(tiles, k_iters, gridDim.x);
  const unsigned tile_begin = (unsigned)tc_sk_position_of_tile(tile, &p) * p.k_iters; /* once per finisher */
  for (int b = tc_sk_next_part_from(&p, tile_begin, (int)blockIdx.x); b >= 0;
       b = tc_sk_next_part_from(&p, tile_begin, b)) {
    if (ctid == 0) tc_sk_flag_wait_and_clear(flags + b);
    tc_consumer_sync<THREADS>(); /* thread 0's acquire covers the others' reads */
    const float4 *slot = partials + b * SLOT;
#pragma unroll
    for (int i = 0; i < NACC / 4; ++i) {
      const float4 v = __ldcg(slot + i * THREADS + ctid);
      acc[2 * i] += v.x; /* tc_sk_part_quad's order */
      acc[2 * i + 1] += v.y;
      acc[NACC / 2 + 2 * i] += v.z;
      acc[NACC / 2 + 2 * i + 1] += v.w;
    }
  }
}
#endif

#endif
