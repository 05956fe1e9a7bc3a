/* stream_k.c - stream-K units and their fix-up (pass stream-k, sm_90a).
 *
 * A STREAM_K loop is written as a walk over the units that
 * runtime/device/tilec_stream_k.cuh plans for this block (tc_sk_plan,
 * tc_sk_next): the same plan in the producer and the consumers, each role
 * keeping its own copy (tc_sk). The fix-up calls tc_sk_fixup with the
 * kernel's workspace: per kernel, one partial-sum slot per block (the
 * consumers' accumulator floats, thread-interleaved float4) and one flag
 * per block, both module-scope __device__ arrays that the driver zeroes at
 * load (cuda_stream_k_declare, before the kernel). */
#include "cuda_emit.h"

static void find_fixup(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_STREAM_K_FIXUP) *(const IrStmt **)ctx = s;
}

const IrStmt *cuda_stream_k_fixup(const IrKernel *k) {
  const IrStmt *fixup = NULL;
  ir_visit_stmts(k->body, find_fixup, &fixup);
  return fixup;
}

/* Floats of the accumulator each consumer thread holds. */
static int fixup_floats(const IrStmt *fixup) {
  const IrLayout *l = &fixup->u.stream_k.acc->layout;
  return l->rows_local * l->cols_local;
}

void cuda_stream_k_declare(Cuda *C, const IrKernel *k) {
  const IrStmt *fixup = cuda_stream_k_fixup(k);
  if (!fixup) return;
  C->stream_k_used = true;
  const int consumers = k->producer_warp * 32, floats = fixup_floats(fixup);
  sb_printf(C->out,
            "// stream-K workspace of tilec_%s (tilec_stream_k.cuh): a partial sum of %d x %d floats and a\n"
            "// flag per block; one launch of this kernel at a time uses it\n"
            "static __device__ float4 tc_sk_partials_%s[TC_SK_SLOTS * %d];\n"
            "static __device__ unsigned tc_sk_flags_%s[TC_SK_SLOTS];\n",
            k->name, consumers, floats, k->name, consumers * floats / 4, k->name);
}

/* The loop's tile count and k_iters, as arguments: `T, n`. */
static void emit_extents(Cuda *C, const IrStmt *loop) {
  cuda_emit_expr(C, C->out, loop->u.for_.extent);
  sb_puts(C->out, ", ");
  cuda_emit_expr(C, C->out, loop->u.for_.k_iters);
}

void cuda_emit_stream_k_loop(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  const char *tile = s->u.for_.var->name, *kb = s->u.for_.k_begin->name, *kl = s->u.for_.k_len->name;
  cuda_indent(C, depth);
  sb_puts(o, "{  // stream-K: this block's share of the last partial wave's k-iterations, then whole tiles\n");
  cuda_indent(C, depth + 1);
  sb_puts(o, "tc_stream_k tc_sk = tc_sk_plan(");
  emit_extents(C, s);
  sb_puts(o, ", gridDim.x, blockIdx.x);\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "int %s, %s, %s;  // below 2^31: tc_sk_split_of\n", tile, kb, kl);
  cuda_indent(C, depth + 1);
  sb_puts(o, "while (tc_sk_next(&tc_sk, ");
  emit_extents(C, s);
  sb_printf(o, ", gridDim.x, &%s, &%s, &%s)) {  // k-blocks [%s, %s + %s) of tile %s\n", tile, kb, kl, kb, kb, kl,
            tile);
  cuda_emit_tile_thread_ids(C, depth + 2);
  cuda_emit_seq(C, s->u.for_.body, depth + 2);
  cuda_indent(C, depth + 1);
  sb_puts(o, "}\n");
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}

void cuda_emit_stream_k_fixup(Cuda *C, const IrStmt *s, int depth) {
  const IrStmt *loop = s->u.stream_k.loop;
  if (!C->consumers_only) {
    cuda_fail(C, s->loc, "stream_k_fixup outside a warp-specialized kernel's consumers");
    return;
  }
  cuda_indent(C, depth);
  sb_printf(C->out, "tc_sk_fixup<%d, %d>(%s, ", fixup_floats(s), C->threads, s->u.stream_k.acc->name);
  emit_extents(C, loop);
  sb_printf(C->out, ", %s, %s, %s, tc_sk_partials_%s, tc_sk_flags_%s, tc_tid);\n", loop->u.for_.var->name,
            loop->u.for_.k_begin->name, loop->u.for_.k_len->name, C->k->name, C->k->name);
}
