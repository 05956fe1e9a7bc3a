/* tilec_tma.cuh - Hopper (sm_90) bulk tensor copies: TMA loads and mbarriers.
 *
 * The Tensor Memory Accelerator copies a box of a 2-D global tensor into
 * shared memory on its own, described by a tensor map the host encodes
 * (rt_cuda_tensor_map_2d, runtime/cuda/cuda_driver.h) and passes by value as
 * a kernel parameter `const __grid_constant__ tc_tensor_map map`. Completion
 * is signalled on an mbarrier in shared memory by transaction bytes.
 *
 * Protocol (one mbarrier per shared buffer; S buffers make an S-stage ring):
 *   setup     ONE thread: tc_mbar_init(bar, 1); tc_mbar_fence_init(); then a
 *             block barrier, so no thread waits on an uninitialised barrier
 *             (the fence publishes the init to the TMA unit, which is not an
 *             ordinary thread: it acts in the "async proxy").
 *   issue     ONE thread: tc_mbar_arrive_expect_tx(bar, bytes), bytes = the
 *             sum of the whole boxes it loads (zero-filled parts count), then
 *             tc_tma_load_2d(dst, &map, x, y, bar) per box. That arrive is the
 *             barrier's single expected arrival; the phase completes once the
 *             copies have delivered all `bytes`.
 *   wait      EVERY thread that reads the buffer: tc_mbar_wait(bar, phase),
 *             phase = number of phases this barrier has completed so far, mod
 *             2: load n (n = 0, 1, ...) into a buffer waits on n & 1; in a
 *             ring, iteration i uses buffer i % S and phase (i / S) & 1. The
 *             wait acquires: the box's bytes are visible after it, no fence.
 *   reuse     before the next load into a buffer, all its readers must be done:
 *             a block barrier between their last read and the issuing
 *             thread's next tc_tma_load_2d into it, or an "empty" mbarrier
 *             (count = readers) each reader tc_mbar_arrive()s on and the
 *             issuing thread tc_mbar_wait()s for. Where threads WROTE the
 *             buffer with ordinary stores (or cp.async) and TMA writes it
 *             next, the writers also run tc_tma_fence_proxy_async() before
 *             that barrier (ordinary and async-proxy writes are not ordered
 *             otherwise).
 *   teardown  after a final block barrier, one thread may tc_mbar_inval(bar)
 *             before its 8 bytes are reused as ordinary shared memory.
 *
 * Shared layout of a box (box_outer rows of box_inner 16-bit elements,
 * row-major, 2 * box_inner bytes per row): without swizzle, element (r, c)
 * is at r * box_inner + c. With the 128/64/32-byte swizzle (box rows of
 * exactly 64/32/16 elements) the 16-byte chunk c / 8 of row r moves to
 * chunk tc_swizzle_offset(r, c / 8, 8 / 4 / 2) (tilec_device.cuh), i.e.
 * element (r, c) is at tc_swizzle_offset(r, c / 8, box_inner / 8) * 8 + c % 8:
 * tilec's own swizzle, which is what wgmma's descriptors read. The hardware
 * swizzles by shared-memory address bits, so the box's destination must be
 * 1024-byte aligned (128 bytes without swizzle). Tiles wider than 64
 * columns are stored as 64-column panels (tc_smem_index, SWZ 2): one box
 * per panel, panel p at dst + p * rows * 128 bytes with column x + 64p.
 *
 * Coordinates are in elements, x along the row (inner), y the row index
 * (outer); they may be negative or run past the tensor: those elements of
 * the box are written as zeros. sm_90 and newer only: the helpers are
 * absent below (__CUDA_ARCH__ < 900); tc_tensor_map exists everywhere so a
 * kernel signature compiles for any target.
 */
#ifndef TILEC_TMA_CUH
#define TILEC_TMA_CUH

#include "tilec_device.cuh"

/* The host's RtCuTensorMap (the driver's CUtensorMap), bit for bit. */
struct alignas(64) tc_tensor_map {
  unsigned long long opaque[16];
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

/* mbarrier at .shared address `mbar` (8 bytes, 8-byte aligned): a phase
 * completes after `count` arrivals (and all expected transaction bytes). */
TC_DEVICE void tc_mbar_init(unsigned mbar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mbar), "r"(count) : "memory");
}

/* After tc_mbar_init, by the initialising thread: makes the init visible to
 * the async proxy (TMA's complete_tx) and the cluster. A block barrier must
 * follow before anyone else uses the barrier. */
TC_DEVICE void tc_mbar_fence_init() {
  asm volatile(
      "fence.mbarrier_init.release.cluster;\n\t"
      "fence.proxy.async.shared::cta;" ::
          : "memory");
}

/* One arrival that also expects `bytes` more transaction bytes this phase. */
TC_DEVICE void tc_mbar_arrive_expect_tx(unsigned mbar, unsigned bytes) {
  asm volatile(
      "{ .reg .b64 tc_state;\n\t"
      "  mbarrier.arrive.expect_tx.shared::cta.b64 tc_state, [%0], %1; }" ::"r"(mbar),
      "r"(bytes)
      : "memory");
}

/* A plain arrival (release): e.g. consumers announcing a buffer is free. */
TC_DEVICE void tc_mbar_arrive(unsigned mbar) {
  asm volatile(
      "{ .reg .b64 tc_state;\n\t"
      "  mbarrier.arrive.shared::cta.b64 tc_state, [%0]; }" ::"r"(mbar)
      : "memory");
}

/* count arrivals at once (one thread releasing a stage for every warp). */
TC_DEVICE void tc_mbar_arrive_count(unsigned mbar, unsigned count) {
  asm volatile(
      "{ .reg .b64 tc_state;\n\t"
      "  mbarrier.arrive.shared::cta.b64 tc_state, [%0], %1; }" ::"r"(mbar), "r"(count)
      : "memory");
}

/* True once the phase with parity `phase` (0 or 1) has completed; may
 * return false after a bounded hardware wait. Acquire semantics. */
TC_DEVICE bool tc_mbar_try_wait(unsigned mbar, unsigned phase) {
  unsigned done;
  asm volatile(
      "{ .reg .pred tc_p;\n\t"
      "  mbarrier.try_wait.parity.shared::cta.b64 tc_p, [%1], %2;\n\t"
      "  selp.u32 %0, 1, 0, tc_p; }"
      : "=r"(done)
      : "r"(mbar), "r"(phase)
      : "memory");
  return done != 0;
}

/* Blocks until the phase with parity `phase` has completed. */
TC_DEVICE void tc_mbar_wait(unsigned mbar, unsigned phase) {
  while (!tc_mbar_try_wait(mbar, phase)) {
  }
}

/* ---- 2-block clusters (__cluster_dims__(2, 1, 1); pass persistent) ----
 * The two blocks of a cluster share multicast rings: each block's producer
 * loads half of a stage into both blocks' shared memory (same offsets), so
 * a stage may be refilled only once the consumers of BOTH blocks released
 * it: they arrive on the empty barrier here and in the other block (which
 * counts both blocks' arrivals). */

/* This block's rank in its cluster (0 or 1). */
TC_DEVICE unsigned tc_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

/* Every thread of both blocks: after it, barriers created before it are
 * usable from the other block, and accesses before it are complete. Not the
 * .aligned form: the producer warps arrive from divergent code. */
TC_DEVICE void tc_cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release;\n\t"
      "barrier.cluster.wait.acquire;" ::
          : "memory");
}

/* One arrival on the barrier at .shared offset mbar in this block and one
 * on the same barrier in the other block of the pair (mapa maps the offset
 * into its shared memory window). Release at CTA scope, as for the local
 * one: what it orders is this block's reads of the stage (complete once
 * the wgmmas reading it are waited for) before the refill. A .cluster
 * scope release fences all of the thread's memory traffic: measured on an
 * H100 it halved the GEMM's speed (membar stalls on every arrival). */
TC_DEVICE void tc_mbar_arrive_pair(unsigned mbar) {
  asm volatile(
      "{ .reg .b64 tc_state;\n\t"
      "  .reg .b32 tc_peer;\n\t"
      "  mbarrier.arrive.shared::cta.b64 tc_state, [%0];\n\t"
      "  mapa.shared::cluster.u32 tc_peer, %0, %1;\n\t"
      "  mbarrier.arrive.shared::cluster.b64 _, [tc_peer]; }" ::"r"(mbar),
      "r"(tc_cluster_rank() ^ 1u)
      : "memory");
}

/* Ends the barrier's life: its 8 bytes may then be ordinary shared memory. */
TC_DEVICE void tc_mbar_inval(unsigned mbar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(mbar) : "memory");
}

/* Orders this thread's earlier ordinary shared-memory writes before later
 * async-proxy accesses (TMA, wgmma) that a block barrier makes them precede.
 * The same instruction as tilec_wgmma.cuh's tc_fence_proxy_async. */
TC_DEVICE void tc_tma_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* A load's box coordinate from a start read from data, for a dimension of
 * `size` elements and a box of `extent`: clamped into [-extent, size], where
 * a box wholly outside the tensor stays wholly outside (the load then fills
 * zeros, as for the start itself) and the value fits the instruction's
 * signed 32 bits (a plain cast of a 64-bit start could wrap back inside the
 * tensor). Loads only: a TMA store at a negative coordinate faults (the
 * compiler keeps such stores cooperative, pass stage-stores). */
TC_DEVICE int tc_tma_coord(long long start, long long size, int extent) {
  const long long hi = size < 0x7fffffffLL - 4096 ? size : 0x7fffffffLL - 4096;
  return (int)(start < -(long long)extent ? -(long long)extent : start > hi ? hi : start);
}

/* Brings the tensor map into the descriptor cache ahead of the first load
 * (optional; any thread, typically the issuing one). */
TC_DEVICE void tc_tma_prefetch_desc(const tc_tensor_map *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map))
               : "memory");
}

/* Starts the copy of the box whose first element is (x = c_inner, y =
 * c_outer) to .shared address smem_dst; its bytes complete on mbar. One
 * thread issues; see the protocol above. map must point at the kernel's
 * __grid_constant__ parameter (or a tensor map in global memory). */
TC_DEVICE void tc_tma_load_2d(unsigned smem_dst, const tc_tensor_map *map, int c_inner, int c_outer,
                              unsigned mbar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c_inner), "r"(c_outer), "r"(mbar)
      : "memory");
}

/* The same for a tensor of rank RANK (1 to 5), coordinates c innermost
 * first: what the compiler's TMA copies (lower-tma) call, e.g.
 * tc_tma_load(dst, &map, {col, head, row, batch}, bar) for a tile of a
 * [batch, seq, heads, dim] tensor (box extent 1 along head and batch). */
template <int RANK>
TC_DEVICE void tc_tma_load(unsigned smem_dst, const tc_tensor_map *map, const int (&c)[RANK],
                           unsigned mbar) {
  static_assert(RANK >= 1 && RANK <= 5, "TMA tensors have rank 1 to 5");
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  if constexpr (RANK == 1)
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2}], [%3];" ::"r"(smem_dst), "l"(m), "r"(c[0]), "r"(mbar)
                 : "memory");
  else if constexpr (RANK == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_dst), "l"(m), "r"(c[0]), "r"(c[1]),
                 "r"(mbar)
                 : "memory");
  else if constexpr (RANK == 3)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_dst), "l"(m), "r"(c[0]), "r"(c[1]),
                 "r"(c[2]), "r"(mbar)
                 : "memory");
  else if constexpr (RANK == 4)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(smem_dst), "l"(m), "r"(c[0]),
                 "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(mbar)
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(smem_dst), "l"(m), "r"(c[0]),
                 "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(mbar)
                 : "memory");
}

/* tc_tma_load into the same offset in both blocks of a 2-block cluster:
 * the bytes complete on the barrier at mbar's offset in each block. */
template <int RANK>
TC_DEVICE void tc_tma_load_multicast(unsigned smem_dst, const tc_tensor_map *map, const int (&c)[RANK],
                                     unsigned mbar) {
  static_assert(RANK >= 2 && RANK <= 4, "multicast TMA loads: rank 2 to 4 here");
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  const unsigned short both = 3;
  if constexpr (RANK == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_dst), "l"(m), "r"(c[0]), "r"(c[1]),
                 "r"(mbar), "h"(both)
                 : "memory");
  else if constexpr (RANK == 3)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(smem_dst), "l"(m), "r"(c[0]), "r"(c[1]),
                 "r"(c[2]), "r"(mbar), "h"(both)
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;" ::"r"(smem_dst), "l"(m), "r"(c[0]),
                 "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(mbar), "h"(both)
                 : "memory");
}

/* The reverse direction, a TMA store: the box at coordinates c (innermost
 * first) of the tensor gets the shared tile at smem_src, laid out as a load
 * would have written it; box elements outside the tensor are not written.
 * ONE thread issues it, after the threads that wrote the tile have run
 * tc_tma_fence_proxy_async() and a barrier; then tc_tma_store_commit() and,
 * before the tile is written again or the block exits,
 * tc_tma_store_wait_read() (the tile has been read; the global writes may
 * still be on their way, which kernel completion covers). */
template <int RANK>
TC_DEVICE void tc_tma_store(unsigned smem_src, const tc_tensor_map *map, const int (&c)[RANK]) {
  static_assert(RANK >= 1 && RANK <= 5, "TMA tensors have rank 1 to 5");
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  if constexpr (RANK == 1)
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(m),
                 "r"(smem_src), "r"(c[0])
                 : "memory");
  else if constexpr (RANK == 2)
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(m),
                 "r"(smem_src), "r"(c[0]), "r"(c[1])
                 : "memory");
  else if constexpr (RANK == 3)
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(m),
                 "r"(smem_src), "r"(c[0]), "r"(c[1]), "r"(c[2])
                 : "memory");
  else if constexpr (RANK == 4)
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(m),
                 "r"(smem_src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];" ::"l"(m),
                 "r"(smem_src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
                 : "memory");
}

/* Pulls one box of the tensor into L2 without writing shared memory or
 * completing any mbarrier (a later tc_tma_load of the same box then hits
 * L2): a persistent kernel's producer fetches the next tile's per-tile
 * boxes so while the consumers work on this one. */
template <int RANK>
TC_DEVICE void tc_tma_prefetch_l2(const tc_tensor_map *map, const int (&c)[RANK]) {
  static_assert(RANK >= 1 && RANK <= 5, "TMA tensors have rank 1 to 5");
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  if constexpr (RANK == 1)
    asm volatile("cp.async.bulk.prefetch.tensor.1d.L2.global.tile [%0, {%1}];" ::"l"(m), "r"(c[0]) : "memory");
  else if constexpr (RANK == 2)
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(m), "r"(c[0]), "r"(c[1])
                 : "memory");
  else if constexpr (RANK == 3)
    asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];" ::"l"(m), "r"(c[0]), "r"(c[1]),
                 "r"(c[2])
                 : "memory");
  else if constexpr (RANK == 4)
    asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];" ::"l"(m), "r"(c[0]),
                 "r"(c[1]), "r"(c[2]), "r"(c[3])
                 : "memory");
  else
    asm volatile("cp.async.bulk.prefetch.tensor.5d.L2.global.tile [%0, {%1, %2, %3, %4, %5}];" ::"l"(m), "r"(c[0]),
                 "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
                 : "memory");
}

/* Closes this thread's TMA stores issued so far into one bulk group. */
TC_DEVICE void tc_tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

/* Waits until all but the PENDING most recent bulk groups of this thread
 * have READ their shared tiles (PENDING 0: every group). */
template <int PENDING = 0>
TC_DEVICE void tc_tma_store_wait_read() {
  static_assert(PENDING >= 0 && PENDING <= 63, "wait_group takes 0..63");
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(PENDING) : "memory");
}

#endif /* __CUDA_ARCH__ >= 900 */
#endif /* TILEC_TMA_CUH */
