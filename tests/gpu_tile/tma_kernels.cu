// tma_kernels.cu - test kernels for tilec_tma.cuh (driven by test_tma_gpu.c).
//
// One block of TMA_THREADS threads. The shared tiles start at the first
// 1024-byte aligned address of the dynamic buffer (the launch adds 1 KB of
// slack, so this holds wherever the buffer lands); the mbarriers follow the
// tiles. Every kernel writes the shared tiles out RAW, in shared-memory
// order: the host decides where each element should have landed.
//
// TMA_COPY(name, ROWS, BOX_C, PANELS): PANELS boxes of ROWS x BOX_C 16-bit
//   elements, box p at (x + p * BOX_C, y) (x and y through tc_tma_coord,
//   so a wild coordinate loads zeros) into dst + p * ROWS * BOX_C
//   elements (64-column panels when PANELS > 1). The tile is first filled
//   with TMA_POISON, so zeros must have been written by the TMA unit. Then
//   the tile goes back out by TMA stores to the same coordinates of a
//   second tensor (map `back`): only the box elements inside it are written.
// TMA_RING(name, ROWS, BOX_C, STAGES, ITERS): an S-stage ring; iteration i
//   loads rows [i * ROWS, i * ROWS + ROWS) of the tensor into stage i % S and
//   every thread adds (i + 1) * element to its own 32-bit sums, kept per
//   shared position. "full" barriers carry the TMA bytes (phase (i / S) & 1),
//   "empty" barriers collect every thread's arrival before thread 0 reloads a
//   stage, so a wrong phase reads a stale or half-written stage and shows.
//   The lower half of the threads arrives one by one, the upper half's warps
//   once each for their 32 lanes (tc_mbar_arrive_count).
// TMA_PAIR_RING(name, ROWS, BOX_C, STAGES, ITERS): the ring in a cluster of
//   two blocks (grid 2) sharing it: a stage is two ROWS x BOX_C panels, block
//   r loads panel r into both blocks (multicast), and a stage is refilled
//   once all threads of BOTH blocks released it (tc_mbar_arrive_pair, empty
//   barriers counting 2 x TMA_THREADS). Block r writes its sums at out + r *
//   (2 ROWS BOX_C): both must see both panels.
#include "tilec_tma.cuh"

#define TMA_THREADS 128
#define TMA_POISON 0xFFFEu

extern __shared__ __align__(1024) unsigned char tma_smem[];

// The 1024-byte aligned .shared address of the tiles, and a generic pointer
// to it.
__device__ __forceinline__ unsigned tma_base(unsigned short **tile) {
  const unsigned raw = tc_smem_addr(tma_smem);
  const unsigned base = (raw + 1023u) & ~1023u;
  *tile = (unsigned short *)(tma_smem + (base - raw));
  return base;
}

template <int ROWS, int BOX_C, int PANELS>
__device__ void tma_copy_body(const tc_tensor_map *map, const tc_tensor_map *back, unsigned short *out, int x,
                              int y) {
  constexpr int BOX_ELEMS = ROWS * BOX_C, ELEMS = PANELS * BOX_ELEMS;
  constexpr unsigned BOX_BYTES = 2u * BOX_ELEMS;
  static_assert(PANELS == 1 || BOX_BYTES % 1024 == 0, "every box must start 1024-byte aligned");
  unsigned short *tile;
  const unsigned base = tma_base(&tile);
  const unsigned bar = base + PANELS * BOX_BYTES;
  for (int i = threadIdx.x; i < ELEMS; i += TMA_THREADS) tile[i] = (unsigned short)TMA_POISON;
  tc_tma_fence_proxy_async(); // the poison stores come before the TMA writes
  if (threadIdx.x == 0) {
    tc_mbar_init(bar, 1);
    tc_mbar_fence_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    tc_tma_prefetch_desc(map);
    tc_mbar_arrive_expect_tx(bar, PANELS * BOX_BYTES);
    /* the rank-generic form the compiler emits (coordinates innermost
     * first), each clamped as the compiler clamps a start read from data
     * (the tensors here are far smaller than 2^24 elements a side) */
    const int cx = tc_tma_coord(x, 1 << 24, PANELS * BOX_C), cy = tc_tma_coord(y, 1 << 24, ROWS);
    /* the boxes pulled into L2 first (a persistent producer's prefetch of
     * its next tile): no shared write, no barrier, the loads read the same */
    for (int p = 0; p < PANELS; ++p) tc_tma_prefetch_l2(map, {cx + p * BOX_C, cy});
    for (int p = 0; p < PANELS; ++p) tc_tma_load(base + p * BOX_BYTES, map, {cx + p * BOX_C, cy}, bar);
  }
  if ((threadIdx.x / 32) % 2 == 0) {
    tc_mbar_wait(bar, 0);
  } else {
    while (!tc_mbar_try_wait(bar, 0)) { // the same, spelled out (odd warps)
    }
  }
  for (int i = threadIdx.x; i < ELEMS; i += TMA_THREADS) out[i] = tile[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    tc_mbar_inval(bar);
    /* The tile was written by TMA (the async proxy): no fence needed. A
     * store at negative coordinates faults on the H100 (illegal
     * instruction); the compiler's stores start at block offsets >= 0. */
    if (x >= 0 && y >= 0) {
      for (int p = 0; p < PANELS; ++p) tc_tma_store(base + p * BOX_BYTES, back, {x + p * BOX_C, y});
      tc_tma_store_commit();
      tc_tma_store_wait_read();
    }
  }
}

// PAIR: the ring of TMA_PAIR_RING (two panels per stage, one loaded by each
// block of the cluster into both, released in both).
template <int ROWS, int BOX_C, int STAGES, int ITERS, bool PAIR>
__device__ void tma_ring_body(const tc_tensor_map *map, unsigned *out) {
  constexpr int PANELS = PAIR ? 2 : 1, ELEMS = PANELS * ROWS * BOX_C, PER_THREAD = ELEMS / TMA_THREADS;
  constexpr unsigned BYTES = 2u * ELEMS;
  static_assert(BYTES % (1024 * PANELS) == 0 && ELEMS % TMA_THREADS == 0, "stage size");
  unsigned short *tile;
  const unsigned base = tma_base(&tile);
  const unsigned full = base + STAGES * BYTES, empty = full + 8u * STAGES;
  const int tid = threadIdx.x;
  const unsigned rank = PAIR ? tc_cluster_rank() : 0u;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      tc_mbar_init(full + 8u * s, 1);
      tc_mbar_init(empty + 8u * s, PANELS * TMA_THREADS); // a pair: both blocks' threads
    }
    tc_mbar_fence_init();
  }
  if constexpr (PAIR)
    tc_cluster_sync(); // the other block's barriers exist from here on
  else
    __syncthreads();
  auto load = [&](int s, int i) { // stage s <- rows of iteration i (a pair: this block's panel, into both)
    tc_mbar_arrive_expect_tx(full + 8u * s, BYTES);
    if constexpr (PAIR)
      tc_tma_load_multicast(base + s * BYTES + rank * (BYTES / 2), map, {(int)rank * BOX_C, i * ROWS}, full + 8u * s);
    else
      tc_tma_load_2d(base + s * BYTES, map, 0, i * ROWS, full + 8u * s);
  };
  if (tid == 0) {
    tc_tma_prefetch_desc(map);
    for (int s = 0; s < STAGES && s < ITERS; ++s) load(s, s);
  }
  unsigned acc[PER_THREAD];
#pragma unroll
  for (int k = 0; k < PER_THREAD; ++k) acc[k] = 0;
  for (int i = 0; i < ITERS; ++i) {
    const int s = i % STAGES;
    const unsigned phase = (unsigned)(i / STAGES) & 1u;
    tc_mbar_wait(full + 8u * s, phase);
    const unsigned short *st = tile + s * ELEMS;
#pragma unroll
    for (int k = 0; k < PER_THREAD; ++k) acc[k] += (unsigned)(i + 1) * st[tid + k * TMA_THREADS];
    if constexpr (PAIR)
      tc_mbar_arrive_pair(empty + 8u * s); // done reading stage s, here and for the other block
    else if (tid < TMA_THREADS / 2)
      tc_mbar_arrive(empty + 8u * s); // this thread is done reading stage s
    else {
      __syncwarp(); // the warps of the upper half arrive once for all 32 lanes
      if (tid % 32 == 0) tc_mbar_arrive_count(empty + 8u * s, 32);
    }
    if (tid == 0 && i + STAGES < ITERS) {
      tc_mbar_wait(empty + 8u * s, phase); // ... and so is everyone else
      load(s, i + STAGES);
    }
  }
#pragma unroll
  for (int k = 0; k < PER_THREAD; ++k) out[rank * ELEMS + tid + k * TMA_THREADS] = acc[k];
  if constexpr (PAIR) {
    tc_cluster_sync(); // the other block may still arrive on this one's barriers until here
    return;
  }
  __syncthreads();
  if (tid == 0)
    for (int s = 0; s < STAGES; ++s) {
      tc_mbar_inval(full + 8u * s);
      tc_mbar_inval(empty + 8u * s);
    }
}

#define TMA_COPY(name, ROWS, BOX_C, PANELS)                                                          \
  extern "C" __global__ void __launch_bounds__(TMA_THREADS)                                          \
      name(const __grid_constant__ tc_tensor_map map, const __grid_constant__ tc_tensor_map back,     \
           unsigned short *out, int x, int y) {                                                      \
    tma_copy_body<ROWS, BOX_C, PANELS>(&map, &back, out, x, y);                                      \
  }

#define TMA_RING(name, ROWS, BOX_C, STAGES, ITERS)                                                   \
  extern "C" __global__ void __launch_bounds__(TMA_THREADS)                                          \
      name(const __grid_constant__ tc_tensor_map map, unsigned *out) {                               \
    tma_ring_body<ROWS, BOX_C, STAGES, ITERS, false>(&map, out);                                            \
  }

#define TMA_PAIR_RING(name, ROWS, BOX_C, STAGES, ITERS)                                              \
  extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(TMA_THREADS)                \
      name(const __grid_constant__ tc_tensor_map map, unsigned *out) {                               \
    tma_ring_body<ROWS, BOX_C, STAGES, ITERS, true>(&map, out);                                       \
  }
