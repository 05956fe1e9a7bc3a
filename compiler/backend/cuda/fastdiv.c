/* fastdiv.c - a persistent kernel's tile-index `/` and `%` through
 * multipliers computed once per block (TilecOptions.fast_division,
 * experimental; the device side and why its arithmetic is exact:
 * runtime/device/tilec_fastdiv.cuh).
 *
 * cuda_fastdiv_declare walks a kernel's statements: every i64 DIV or MOD
 * inside a loop that pass persistent marked as a tile split (IrExpr.
 * tile_split: dividend and divisor known to lie below 2^31) and whose
 * divisor is fixed for the launch -- literals, dynamic shape symbols,
 * integer scalar parameters and the grid size, combined by operators,
 * selects, casts and intrinsics, at least one of them not a literal --
 * gets a slot, keyed by the divisor's CUDA text. At the kernel's start
 * thread 0 computes each slot's multiplier and shift into a small static
 * shared array (`tc_fd[N]`) and a block barrier publishes them;
 * cuda_fastdiv_call then spells such a division as tc_fastdiv_div /
 * tc_fastdiv_mod reading its slot from there (one shared load per tile).
 * Why this shape (ptxas -v, session 18): divisions by any launch-invariant
 * divisor with a plain-division fallback for out-of-range dividends made
 * ptxas spill 144-352 bytes in the causal persistent flagship builds (the
 * fallback inlined at each site), and slots kept in registers stayed live
 * across the consumers' main loop and into the producer's 24 registers;
 * tile splits need no fallback, and with the table in shared memory no
 * build spills and the causal builds' cubins shrink. A kernel whose
 * dynamic shared memory leaves no room for the table keeps its divisions. */
#include <string.h>

#include "cuda_emit.h"

/* Whether e is the same value for the whole launch; *varies: it names
 * something that is not a literal (else the C++ compiler folds it). */
static bool launch_invariant(const IrExpr *e, bool *varies) {
  if (!e) return false;
  switch (e->kind) {
  case IR_EXPR_INT: return true;
  case IR_EXPR_VAR: {
    const IrVar *v = e->u.var;
    if ((v->kind == IR_VAR_SYMBOL && !v->bound) || v->kind == IR_VAR_GRID_SIZE ||
        (v->kind == IR_VAR_SCALAR_PARAM && dtype_is_int(v->dtype))) {
      *varies = true;
      return true;
    }
    return false;
  }
  case IR_EXPR_UNARY: return launch_invariant(e->u.op.a, varies);
  case IR_EXPR_BINARY: return launch_invariant(e->u.op.a, varies) && launch_invariant(e->u.op.b, varies);
  case IR_EXPR_SELECT:
    return launch_invariant(e->u.select.cond, varies) && launch_invariant(e->u.select.then_, varies) &&
           launch_invariant(e->u.select.else_, varies);
  case IR_EXPR_CALL:
    for (int i = 0; i < e->u.call.nargs; i++)
      if (!launch_invariant(e->u.call.args[i], varies)) return false;
    return true;
  case IR_EXPR_CAST: return dtype_is_int(e->dtype) && launch_invariant(e->u.cast_src, varies);
  default: return false;
  }
}

/* The i64 DIV or MOD node e's divisor, when a slot may serve it (a tile
 * split by launch-invariant extents); else NULL. */
static const IrExpr *fast_divisor(const IrExpr *e) {
  if (e->kind != IR_EXPR_BINARY || e->dtype != DTYPE_I64 || !e->tile_split ||
      (e->u.op.op != IR_OP_DIV && e->u.op.op != IR_OP_MOD))
    return NULL;
  bool varies = false;
  return launch_invariant(e->u.op.b, &varies) && varies ? e->u.op.b : NULL;
}

/* The slot whose divisor prints as text, or -1. */
static int slot_of(const Cuda *C, const char *text) {
  for (int i = 0; i < C->nfastdiv; i++)
    if (strcmp(C->fastdiv[i].divisor, text) == 0) return i;
  return -1;
}

static void divisor_text(Cuda *C, const IrExpr *d, StrBuf *sb) {
  /* The divisor itself, written with no slots: its own divisions (rare:
   * ceildiv is a call) stay plain, as tc_fastdiv_make's argument must. */
  const int saved = C->nfastdiv;
  C->nfastdiv = 0;
  cuda_emit_expr(C, sb, d);
  C->nfastdiv = saved;
}

static void note_division(const IrExpr *e, void *ctx) {
  Cuda *C = ctx;
  const IrExpr *d = fast_divisor(e);
  if (!d || C->nfastdiv == CUDA_MAX_FASTDIV) return;
  StrBuf sb;
  sb_init(&sb);
  divisor_text(C, d, &sb);
  if (sb.len < sizeof C->fastdiv[0].divisor && slot_of(C, sb.data) < 0) {
    memcpy(C->fastdiv[C->nfastdiv].divisor, sb.data, sb.len + 1);
    C->nfastdiv++;
  }
  sb_free(&sb);
}

static void collect(Cuda *C, const IrStmt *s, int loops) {
  if (!s) return;
  /* ir_stmt_visit_exprs only reads; it takes the pointer its rewriting twin does. */
  if (loops > 0) ir_stmt_visit_exprs((IrStmt *)s, note_division, C);
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) collect(C, s->u.seq.items[i], loops);
    break;
  case IR_STMT_FOR: collect(C, s->u.for_.body, loops + 1); break;
  case IR_STMT_IF:
    collect(C, s->u.if_.then_, loops);
    collect(C, s->u.if_.else_, loops);
    break;
  case IR_STMT_WARP_ROLES:
    collect(C, s->u.roles.producer, loops);
    collect(C, s->u.roles.consumer, loops);
    break;
  default: break;
  }
}

void cuda_fastdiv_declare(Cuda *C, const IrKernel *k, int shared_bytes, int shared_limit) {
  C->nfastdiv = 0;
  if (!C->fast_division) return;
  collect(C, k->body, 0);
  if (C->nfastdiv == 0) return;
  if (shared_bytes + C->nfastdiv * 8 > shared_limit) { /* no room beside the kernel's own */
    C->nfastdiv = 0;
    return;
  }
  StrBuf *o = C->out;
  sb_printf(o, "  __shared__ tc_fastdiv tc_fd[%d];  // divisors fixed for the launch (tilec_fastdiv.cuh)\n",
            C->nfastdiv);
  sb_puts(o, "  if (tc_tid == 0) {\n");
  for (int i = 0; i < C->nfastdiv; i++) {
    sb_printf(o, "    tc_fd[%d] = tc_fastdiv_make(%s);\n", i, C->fastdiv[i].divisor);
    snprintf(C->fastdiv[i].div_call, sizeof C->fastdiv[i].div_call, "tc_fastdiv_div($0, tc_fd[%d])", i);
    snprintf(C->fastdiv[i].mod_call, sizeof C->fastdiv[i].mod_call, "tc_fastdiv_mod($0, tc_fd[%d], $1)", i);
  }
  sb_puts(o, "  }\n  __syncthreads();\n");
  C->fastdiv_used = true;
}

const char *cuda_fastdiv_call(Cuda *C, const IrExpr *e) {
  if (C->nfastdiv == 0) return NULL;
  const IrExpr *d = fast_divisor(e);
  if (!d) return NULL;
  StrBuf sb;
  sb_init(&sb);
  divisor_text(C, d, &sb);
  const int slot = slot_of(C, sb.data ? sb.data : "");
  sb_free(&sb);
  if (slot < 0) return NULL;
  return e->u.op.op == IR_OP_DIV ? C->fastdiv[slot].div_call : C->fastdiv[slot].mod_call;
}
