/* pipeline.c - the pass table (from pipeline.def), the runner that verifies
 * the IR after each pass, and the shared statement/expression walkers. */
#include "passes.h"

#include <string.h>

const PassInfo pass_table[] = {
#define PASS(c_name, name, targets, summary) {name, pass_##c_name, targets, summary},
#include "pipeline.def"
#undef PASS
};
const int pass_count = (int)(sizeof pass_table / sizeof pass_table[0]);

bool pass_runs_on(const PassInfo *p, TilecTarget target) {
  if (p->targets == PASS_ALL) return true;
  return (p->targets == PASS_CPU) == (target == TILEC_TARGET_CPU);
}

bool pass_run_pipeline(IrModule *m, const PassOptions *opts, Diag *diag, PassObserver observe, void *ctx) {
  int index = 0;
  for (int i = 0; i < pass_count; i++) {
    const PassInfo *p = &pass_table[i];
    if (!pass_runs_on(p, opts->target)) continue;
    int errors = diag_error_count(diag);
    bool ok = p->run(m, opts, diag);
    if (!ok || diag_error_count(diag) > errors) return false;
    if (!ir_verify_module(m, p->name, diag)) return false;
    index++;
    if (observe) observe(m, index, p->name, ctx);
  }
  return true;
}

void pass_rewrite_stmt(IrModule *m, IrStmt *s, IrExprRewriter fn, void *ctx) {
  if (!s) return;
  ir_stmt_rewrite_exprs(m, s, fn, ctx);
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) pass_rewrite_stmt(m, s->u.seq.items[i], fn, ctx);
    break;
  case IR_STMT_ALLOC:
    for (int d = 0; d < s->u.alloc->rank; d++) s->u.alloc->shape[d] = fn(m, s->u.alloc->shape[d], ctx);
    break;
  case IR_STMT_FOR:
    pass_rewrite_stmt(m, s->u.for_.body, fn, ctx);
    break;
  case IR_STMT_IF:
    pass_rewrite_stmt(m, s->u.if_.then_, fn, ctx);
    pass_rewrite_stmt(m, s->u.if_.else_, fn, ctx);
    break;
  case IR_STMT_WARP_ROLES:
    pass_rewrite_stmt(m, s->u.roles.producer, fn, ctx);
    pass_rewrite_stmt(m, s->u.roles.consumer, fn, ctx);
    break;
  default:
    break;
  }
}

void pass_rewrite_kernel(IrModule *m, IrKernel *k, IrExprRewriter fn, void *ctx) {
  for (int i = 0; i < k->nparams; i++) {
    IrBuffer *b = k->params[i].buffer;
    if (!b) continue;
    for (int d = 0; d < b->rank; d++) b->shape[d] = fn(m, b->shape[d], ctx);
  }
  for (int g = 0; g < IR_MAX_GRID; g++)
    if (k->grid[g]) k->grid[g] = fn(m, k->grid[g], ctx);
  if (k->threads) k->threads = fn(m, k->threads, ctx);
  pass_rewrite_stmt(m, k->body, fn, ctx);
}

void pass_visit_stmts(IrStmt *s, IrStmtVisitor fn, void *ctx) {
  if (!s) return;
  fn(s, ctx);
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) pass_visit_stmts(s->u.seq.items[i], fn, ctx);
    break;
  case IR_STMT_FOR:
    pass_visit_stmts(s->u.for_.body, fn, ctx);
    break;
  case IR_STMT_IF:
    pass_visit_stmts(s->u.if_.then_, fn, ctx);
    pass_visit_stmts(s->u.if_.else_, fn, ctx);
    break;
  case IR_STMT_WARP_ROLES:
    pass_visit_stmts(s->u.roles.producer, fn, ctx);
    pass_visit_stmts(s->u.roles.consumer, fn, ctx);
    break;
  default:
    break;
  }
}
