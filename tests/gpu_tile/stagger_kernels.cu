// stagger_kernels.cu - the staggered-start links of tilec_warp_roles.cuh
// (pass overlap-wgmma) under the warp order that once deadlocked them.
// Two consumer warpgroups run the links as a two-iteration loop uses them:
// warpgroup 0 passes its first gemm (tc_stagger_go), has nothing to wait for
// in a loop whose ring never needs warpgroup 1's releases, and reaches the
// end link (tc_stagger_end) while warpgroup 1 is still asleep before its
// start link (tc_stagger_wait). With the end link on the start's barrier,
// warpgroup 0's two uses completed a round alone and warpgroup 1 then
// waited forever (sanitizer.racecheck.gqa_attention_causal hung on an H100,
// twenty-second session); each warpgroup also meets the consumers' barrier
// afterwards, as the epilogue does. `rounds` tiles in a row; done[0] counts
// the threads that finished.
#include "tilec_warp_roles.cuh"

extern "C" __global__ void __launch_bounds__(256, 1) tc_test_stagger(int rounds, int sleep_us, int *done) {
  const int wg = threadIdx.x / 128;
  for (int r = 0; r < rounds; ++r) {
    if (wg == 1) {
      for (int i = 0; i < sleep_us / 100; ++i) __nanosleep(100000);
    }
    tc_stagger_wait<2>(wg); /* warpgroup 1 waits for 0's first gemm */
    tc_stagger_go<2>(wg);   /* warpgroup 0: its first gemm is done */
    tc_stagger_end<2>(wg);  /* after the loop: the links the other way */
    tc_consumer_sync<256>(); /* the epilogue's barrier among the consumers */
  }
  atomicAdd(done, 1);
}
