/* tilec_warp_roles.cuh - producer/consumer warpgroups on sm_90a (the
 * compiler's pass warp-specialize, compiler/backend/cuda/warp_roles.c).
 *
 * setmaxnreg moves registers between warpgroups of a running block: the
 * producer (which only issues TMA copies) drops to a few, the consumers
 * (wgmma accumulators, softmax) rise. It needs a register cap at kernel
 * entry (__launch_bounds__(threads, 1)) and every warp of a warpgroup
 * executing it. After the producer has left, the consumers synchronize on
 * a named barrier of their own (id 1) instead of __syncthreads. */
#ifndef TILEC_WARP_ROLES_CUH
#define TILEC_WARP_ROLES_CUH

#include "tilec_device.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

template <int REGS>
TC_DEVICE void tc_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

template <int REGS>
TC_DEVICE void tc_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

/* A barrier among the first THREADS threads of the block (the consumers). */
template <int THREADS>
TC_DEVICE void tc_consumer_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS) : "memory");
}

/* Ping-pong: NWG consumer warpgroups take turns issuing their gemms, so one
 * warpgroup's softmax runs while the tensor cores work on the next one's
 * gemms. Warpgroup w waits on named barrier 2 + w, which warpgroup w - 1
 * (mod NWG) arrives on when it has issued: 128 waiting + 128 arriving
 * threads. The barrier numbers are immediates (one branch per warpgroup,
 * uniform in a warpgroup): with a register operand ptxas reserves all 16
 * hardware barriers. Off by default (PINGPONG_TURNS in
 * compiler/passes/overlap_wgmma.c): measured slower than the overlap alone. */
template <int ID>
TC_DEVICE void tc_named_bar_sync256() {
  asm volatile("bar.sync %0, 256;\n" ::"n"(ID) : "memory");
}
template <int ID>
TC_DEVICE void tc_named_bar_arrive256() {
  asm volatile("bar.arrive %0, 256;\n" ::"n"(ID) : "memory");
}

template <int NWG>
TC_DEVICE void tc_turn_wait(int wg) {
  static_assert(NWG >= 2 && NWG <= 4, "tc_turn_*: 2 to 4 consumer warpgroups");
  if (wg == 0) tc_named_bar_sync256<2>();
  else if (wg == 1) tc_named_bar_sync256<3>();
  else if (wg == 2) tc_named_bar_sync256<4>();
  else tc_named_bar_sync256<5>();
}

template <int NWG>
TC_DEVICE void tc_turn_pass(int wg) {
  static_assert(NWG >= 2 && NWG <= 4, "tc_turn_*: 2 to 4 consumer warpgroups");
  const int next = (wg + 1) % NWG;
  if (next == 0) tc_named_bar_arrive256<2>();
  else if (next == 1) tc_named_bar_arrive256<3>();
  else if (next == 2) tc_named_bar_arrive256<4>();
  else tc_named_bar_arrive256<5>();
}

/* Before the loop the last warpgroup hands the first its turn. After it one
 * more round: each warpgroup takes its turn and passes it on, the last
 * keeps it. Every arrival is then matched, and every warpgroup has synced
 * and arrived equally often (n + 1 times each for n iterations): with the
 * one-sided ending (the first warpgroup only taking back the last hand-over)
 * compute-sanitizer's racecheck reported hazards on the epilogue's
 * shared-memory stores, which a barrier among all consumers orders. */
template <int NWG>
TC_DEVICE void tc_turn_start(int wg) {
  if (wg == NWG - 1) tc_turn_pass<NWG>(wg);
}

template <int NWG>
TC_DEVICE void tc_turn_end(int wg) {
  tc_turn_wait<NWG>(wg);
  if (wg != NWG - 1) tc_turn_pass<NWG>(wg);
}

/* Staggered warpgroups (pass overlap-wgmma; it staggers two consumer
 * warpgroups today): warpgroup w > 0 issues the first gemm of its loop
 * only after warpgroup w - 1's first gemm has completed (named barrier
 * 5 + w: 128 waiting + 128 arriving threads). Warpgroups that share every
 * ring stage otherwise run in lockstep, their softmax phases together and
 * the tensor cores idle meanwhile; started apart, one's softmax runs under
 * the other's gemms. Both calls sit on the loop's first iteration, so a
 * loop of no iterations (all warpgroups share its extent) leaves no
 * arrival unmatched. */
/* Link w (1 <= w < NWG) between warpgroups w - 1 and w is named barrier
 * BASE + w; links past NWG are not emitted (their barriers stay free). */
template <int NWG, bool SYNC, int BASE>
TC_DEVICE void tc_stagger_link(int w) {
  static_assert(NWG >= 2 && NWG <= 4, "tc_stagger_*: 2 to 4 consumer warpgroups");
  if (w == 1) {
    if (SYNC) tc_named_bar_sync256<BASE + 1>(); else tc_named_bar_arrive256<BASE + 1>();
  } else if (NWG > 2 && w == 2) {
    if (SYNC) tc_named_bar_sync256<BASE + 2>(); else tc_named_bar_arrive256<BASE + 2>();
  } else if (NWG > 3 && w == 3) {
    if (SYNC) tc_named_bar_sync256<BASE + 3>(); else tc_named_bar_arrive256<BASE + 3>();
  }
}

/* The loop's start links are barriers 6..8. */
template <int NWG>
TC_DEVICE void tc_stagger_wait(int wg) {
  tc_stagger_link<NWG, true, 5>(wg);
}

template <int NWG>
TC_DEVICE void tc_stagger_go(int wg) {
  tc_stagger_link<NWG, false, 5>(wg + 1);
}

/* After the loop: the same links the other way (w syncs, w + 1 arrives),
 * so every warpgroup syncs and arrives equally often; racecheck misreads
 * one-sided named barriers (see the ping-pong turns above). On barriers of
 * their own, 9..11: a named barrier counts arrivals, not who arrives, so
 * with the start's barrier reused, warpgroup w - 1's arrive and end sync
 * could complete a round by themselves when its loop needs nothing from w
 * (two iterations or fewer: the ring never waits for w's releases), and
 * w's start sync then waited for a round nobody completes (a hang seen
 * under racecheck, gqa_attention causal at seq_len 200). */
template <int NWG>
TC_DEVICE void tc_stagger_end(int wg) {
  tc_stagger_link<NWG, true, 8>(wg + 1);
  tc_stagger_link<NWG, false, 8>(wg);
}

#endif /* __CUDA_ARCH__ >= 900 */
#endif /* TILEC_WARP_ROLES_CUH */
