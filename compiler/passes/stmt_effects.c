/* stmt_effects.c - which buffers a statement tree reads and writes, for the
 * passes that move statements or waits past each other (overlap-wgmma,
 * defer-wgmma-waits), and the wgmma waits those passes place. A gemm reads A, B and C and writes C; an mbarrier
 * wait reads its barrier and an arrive writes it (so an arrive on a tile's
 * empty barrier counts as the release of that tile); a wgmma wait writes
 * its accumulator. Barriers, scopes and gemms are flagged, not listed. */
#include <string.h>

#include "passes.h"

static void add(const IrBuffer **set, int *n, bool *overflow, const IrBuffer *b) {
  if (!b) return;
  for (int i = 0; i < *n; i++)
    if (set[i] == b) return;
  if (*n == PASS_MAX_EFFECTS) {
    *overflow = true;
    return;
  }
  set[(*n)++] = b;
}

static void note_read(PassEffects *e, const IrBuffer *b) { add(e->reads, &e->nreads, &e->overflow, b); }
static void note_write(PassEffects *e, const IrBuffer *b) { add(e->writes, &e->nwrites, &e->overflow, b); }

static void note_load(const IrExpr *x, void *ctx) {
  if (x->kind == IR_EXPR_LOAD) note_read(ctx, x->u.load.buf);
}

static void effects_of_one(IrStmt *s, void *ctx) {
  PassEffects *e = ctx;
  switch (s->kind) {
  case IR_STMT_STORE: note_write(e, s->u.store.buf); break;
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD:
    note_read(e, s->u.copy.src.buf);
    note_write(e, s->u.copy.dst.buf);
    break;
  case IR_STMT_FILL: note_write(e, s->u.fill.dst.buf); break;
  case IR_STMT_GEMM:
    note_read(e, s->u.gemm.a.buf);
    note_read(e, s->u.gemm.b.buf);
    note_read(e, s->u.gemm.c.buf);
    note_write(e, s->u.gemm.c.buf);
    e->gemm = true;
    break;
  case IR_STMT_REDUCE:
    note_read(e, s->u.reduce.src);
    note_read(e, s->u.reduce.dst);
    note_write(e, s->u.reduce.dst);
    note_write(e, s->u.reduce.scratch);
    break;
  case IR_STMT_MBAR_WAIT: note_read(e, s->u.mbar_wait.bar); break;
  case IR_STMT_MBAR_ARRIVE: note_write(e, s->u.mbar_wait.bar); break;
  case IR_STMT_WGMMA_WAIT: note_write(e, s->u.wgmma_wait.acc); break;
  case IR_STMT_STREAM_K_FIXUP: /* reads and adds to acc between the consumers' barriers */
    note_read(e, s->u.stream_k.acc);
    note_write(e, s->u.stream_k.acc);
    e->barrier = true;
    break;
  case IR_STMT_BARRIER:
  case IR_STMT_ATOMIC_FETCH_ADD: /* its broadcast slot sits between block barriers */
    e->barrier = true;
    break;
  default: break;
  }
  ir_stmt_visit_exprs(s, note_load, e);
}

PassEffects pass_effects(IrStmt *s) {
  PassEffects e;
  memset(&e, 0, sizeof e);
  ir_visit_stmts(s, effects_of_one, &e);
  /* A let inside an if, a loop or a block is local to it (the back ends
   * open a scope there): only a statement that is itself a let or an alloc
   * names something for the statements after it. */
  e.scope = s->kind == IR_STMT_LET || s->kind == IR_STMT_ALLOC;
  return e;
}

static bool in_set(const IrBuffer *const *set, int n, const IrBuffer *b) {
  for (int i = 0; i < n; i++)
    if (set[i] == b) return true;
  return false;
}

bool pass_effects_writes(const PassEffects *e, const IrBuffer *b) { return in_set(e->writes, e->nwrites, b); }

bool pass_effects_references(const PassEffects *e, const IrBuffer *b) {
  return in_set(e->reads, e->nreads, b) || in_set(e->writes, e->nwrites, b);
}

bool pass_effects_conflict(const PassEffects *a, const PassEffects *b) {
  for (int i = 0; i < a->nwrites; i++)
    if (pass_effects_references(b, a->writes[i])) return true;
  for (int i = 0; i < b->nwrites; i++)
    if (in_set(a->reads, a->nreads, b->writes[i])) return true;
  return false;
}

IrStmt *pass_wgmma_wait(IrModule *m, IrBuffer *acc, int pending, SrcLoc loc) {
  IrStmt *w = ir_stmt_new(m, IR_STMT_WGMMA_WAIT, loc);
  w->u.wgmma_wait.acc = acc;
  w->u.wgmma_wait.pending = pending;
  return w;
}

void pass_wgmma_wait_pin(IrStmt *wait, const IrBuffer *b) {
  if (b->scope != IR_SCOPE_FRAGMENT || b->dtype != DTYPE_F32 || wait->u.wgmma_wait.npinned == 8) return;
  for (int i = 0; i < wait->u.wgmma_wait.npinned; i++)
    if (wait->u.wgmma_wait.pinned[i] == b) return;
  wait->u.wgmma_wait.pinned[wait->u.wgmma_wait.npinned++] = (IrBuffer *)b;
}
