/* fastdiv.c - a persistent kernel's tile-index `/` and `%` through
 * multipliers computed once per block (TilecOptions.fast_division,
 * on by default; the device side and why its arithmetic is exact:
 * runtime/device/tilec_fastdiv.cuh).
 *
 * cuda_fastdiv_declare walks a kernel's statements: every i64 DIV or MOD
 * that pass persistent marked as a tile split (IrExpr.tile_split: inside
 * its tile loop, dividend and divisor known to lie below 2^31, the divisor
 * an expression of the grid's extents, so of kernel parameters) whose
 * divisor is not a literal gets a slot, keyed by the divisor's CUDA text.
 * At the kernel's start thread 0 computes each slot's multiplier and shift
 * into a small table (`tc_fd`) at the end of the kernel's dynamic shared
 * memory (cuda_fastdiv_table_offset; the driver adds its bytes to
 * TilecKernelInfo.shared_bytes) and the set-up's block barrier
 * (cuda_emit_setup_sync) publishes them;
 * cuda_fastdiv_call then spells such a division as tc_fastdiv_div /
 * tc_fastdiv_mod reading its slot from there (one shared load per tile).
 * Why this shape (ptxas -v, session 18; the table is in
 * bench/results/2026-12-06-cpu-host-session18-notes.md): divisions by any
 * launch-invariant divisor with a plain-division fallback at each site made
 * ptxas spill 336 bytes or more in the causal persistent flagship builds,
 * and slots kept in registers stayed live across the consumers' main loop
 * and into the producer's 24 registers; tile splits need no fallback, and
 * with the table in shared memory no build spills. A kernel whose dynamic
 * shared memory leaves no room for the table keeps its divisions. Not a
 * static __shared__ array: built with one (session 18), every gpu test of
 * examples/flash_attention_bwd.tile failed on an H100 (session 19). That
 * module mixes wgmma kernels with others, and NVRTC kept one alignment for
 * the module's `extern __shared__` array: `.align 128` in its PTX (frame.c
 * now declares 1024 everywhere). With a static array before it, the
 * dynamic base then need only sit on a 128-byte boundary, off the swizzled
 * tiles' 1024-byte pattern: the likely cause (the PTX is seen, the
 * placement on the GPU was not). */
#include <string.h>

#include "cuda_emit.h"

/* The i64 DIV or MOD node e's divisor when a slot serves it: a tile split
 * (its divisor an expression of the grid's extents, fixed for the launch;
 * IrExpr.tile_split) by a divisor that is not a literal (a literal one the
 * C++ compiler already turns into a multiply). Else NULL. */
static const IrExpr *fast_divisor(const IrExpr *e) {
  if (e->kind != IR_EXPR_BINARY || e->dtype != DTYPE_I64 || !e->tile_split ||
      (e->u.op.op != IR_OP_DIV && e->u.op.op != IR_OP_MOD) || e->u.op.b->kind == IR_EXPR_INT)
    return NULL;
  return e->u.op.b;
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

static void note_divisions(IrStmt *s, void *ctx) { ir_stmt_visit_exprs(s, note_division, ctx); }

/* Tile splits exist in persistent kernels only, which are sm_90a's: a
 * block has 227 KB of shared memory there. */
enum { SHARED_LIMIT_SM90 = 227 * 1024 };
_Static_assert(CUDA_MAX_FASTDIV * 8 <= CUDA_FASTDIV_TABLE_BYTES, "a slot is a tc_fastdiv: 8 bytes");

static void find_split(const IrExpr *e, void *ctx) {
  if (fast_divisor(e)) *(bool *)ctx = true;
}
static void find_splits(IrStmt *s, void *ctx) { ir_stmt_visit_exprs(s, find_split, ctx); }

int cuda_fastdiv_table_offset(const IrKernel *k) {
  bool any = false;
  ir_visit_stmts(k->body, find_splits, &any);
  if (!any) return -1;
  const int offset = (int)((ir_shared_bytes(k->body, IR_SHARED_ALL) + 15) / 16 * 16);
  return offset + CUDA_FASTDIV_TABLE_BYTES <= SHARED_LIMIT_SM90 ? offset : -1; /* else no room */
}

void cuda_fastdiv_declare(Cuda *C, const IrKernel *k) {
  C->nfastdiv = 0;
  if (!C->fast_division) return;
  const int offset = cuda_fastdiv_table_offset(k);
  if (offset < 0) return;
  ir_visit_stmts(k->body, note_divisions, C);
  if (C->nfastdiv == 0) return;
  StrBuf *o = C->out;
  sb_printf(o, "  tc_fastdiv *const tc_fd = (tc_fastdiv *)(tc_smem + %d);  // divisors fixed for the launch "
               "(tilec_fastdiv.cuh)\n", offset);
  sb_puts(o, "  if (tc_tid == 0) {\n");
  for (int i = 0; i < C->nfastdiv; i++) {
    sb_printf(o, "    tc_fd[%d] = tc_fastdiv_make(%s);\n", i, C->fastdiv[i].divisor);
    snprintf(C->fastdiv[i].div_call, sizeof C->fastdiv[i].div_call, "tc_fastdiv_div($0, tc_fd[%d])", i);
    snprintf(C->fastdiv[i].mod_call, sizeof C->fastdiv[i].mod_call, "tc_fastdiv_mod($0, tc_fd[%d], $1)", i);
  }
  sb_puts(o, "  }\n");
  if (C->setup_sync < 1) C->setup_sync = 1; /* cuda_emit_setup_sync */
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
