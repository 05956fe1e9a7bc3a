/* warp_roles.c - producer and consumer warpgroups (sm_90a; pass
 * warp-specialize; device side in runtime/device/tilec_warp_roles.cuh).
 *
 *     if (tc_warp >= W) {                  // the producer warpgroup
 *       tc_setmaxnreg_dec<R_p>();          // gives its registers back
 *       if (tc_warp == W && tc_lane == 0) { <producer role> }
 *       return;                            // nothing after the split is its business
 *     }
 *     tc_setmaxnreg_inc<R_c>();            // the consumers take them
 *     <consumer role>
 * In a 2-block cluster both roles end with tc_cluster_sync() (the blocks
 * use each other's barriers until then).
 * From there on a block barrier is a named barrier among the consumer
 * threads (the producer has left), and cooperative copies use the consumer
 * thread count (C->threads). */
#include "cuda_emit.h"

void cuda_emit_warp_roles(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  const int w = s->u.roles.producer_warp;
  cuda_indent(C, depth);
  sb_printf(o, "if (tc_warp >= %d) {  // producer warpgroup: issues the TMA copies\n", w);
  cuda_indent(C, depth + 1);
  sb_printf(o, "tc_setmaxnreg_dec<%d>();\n", s->u.roles.producer_regs);
  cuda_indent(C, depth + 1);
  sb_printf(o, "if (tc_warp == %d && tc_lane == 0) {\n", w);
  C->in_producer = true;
  cuda_emit_seq(C, s->u.roles.producer, depth + 2);
  C->in_producer = false;
  cuda_indent(C, depth + 1);
  sb_puts(o, "}\n");
  if (C->k->cluster > 1) {
    /* A cluster's blocks leave together: the other block may still arrive
     * on this one's barriers until its consumers are done. */
    cuda_indent(C, depth + 1);
    sb_puts(o, "tc_cluster_sync();\n");
  }
  cuda_indent(C, depth + 1);
  sb_puts(o, "return;\n");
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
  cuda_indent(C, depth);
  sb_printf(o, "tc_setmaxnreg_inc<%d>();  // consumer warpgroups\n", s->u.roles.consumer_regs);
  C->consumers_only = true;
  if (s->u.roles.warpgroup) {
    /* warp-uniform, so ptxas keeps what depends on it (trip counts) in uniform registers */
    cuda_indent(C, depth);
    sb_printf(o, "const long long %s = tc_warp_uniform(tc_warp / 4);  // this consumer warpgroup\n",
              s->u.roles.warpgroup->name);
  }
  cuda_emit_seq(C, s->u.roles.consumer, depth);
  if (cuda_has_staged_store(s->u.roles.consumer)) {
    /* The last TMA stores in rounds still read their slots: not past the block's end. */
    cuda_indent(C, depth);
    sb_puts(o, "if (tc_tid == 0) tc_tma_store_wait_read();  // the epilogue's last stores have read their slots\n");
  }
  if (C->k->cluster > 1) {
    cuda_indent(C, depth);
    sb_puts(o, "tc_cluster_sync();  // with the producer warps and the other block\n");
  }
}

void cuda_emit_barrier(Cuda *C, int depth) {
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  /* wgmma and TMA read shared memory through the async proxy: the threads'
   * writes (cp.async or plain) must be fenced for it before the barrier. */
  if (C->k->wgmma) sb_puts(o, "tc_fence_proxy_async(); ");
  if (C->consumers_only) sb_printf(o, "tc_consumer_sync<%d>();\n", C->threads);
  else sb_puts(o, "__syncthreads();\n");
}

/* Ping-pong and staggered starts among the consumer warpgroups
 * (tilec_warp_roles.cuh); a single warpgroup (the inline-producer kernels)
 * has nobody to take turns with, and the templates need two or more. */
void cuda_emit_turn(Cuda *C, const IrStmt *s, int depth) {
  static const char *const fn[] = {"tc_turn_start", "tc_turn_wait",    "tc_turn_pass",
                                   "tc_turn_end",   "tc_stagger_wait", "tc_stagger_go",
                                   "tc_stagger_end"};
  if (C->threads / 128 < 2) return;
  cuda_indent(C, depth);
  sb_printf(C->out, "%s<%d>(tc_warp / 4);\n", fn[s->u.turn], C->threads / 128);
}
