/* ir_walk.c - read-only visits of expressions (ir.h). Passes and backends
 * that only look at expressions (which buffers are loaded, is there a
 * division by zero, ...) use these instead of their own recursion. */
#include "ir.h"

void ir_expr_visit(const IrExpr *e, IrExprVisitor fn, void *ctx) {
  if (!e) return;
  fn(e, ctx);
  switch (e->kind) {
  case IR_EXPR_UNARY:
    ir_expr_visit(e->u.op.a, fn, ctx);
    break;
  case IR_EXPR_BINARY:
    ir_expr_visit(e->u.op.a, fn, ctx);
    ir_expr_visit(e->u.op.b, fn, ctx);
    break;
  case IR_EXPR_SELECT:
    ir_expr_visit(e->u.select.cond, fn, ctx);
    ir_expr_visit(e->u.select.then_, fn, ctx);
    ir_expr_visit(e->u.select.else_, fn, ctx);
    break;
  case IR_EXPR_CALL:
    for (int i = 0; i < e->u.call.nargs; i++) ir_expr_visit(e->u.call.args[i], fn, ctx);
    break;
  case IR_EXPR_LOAD:
    for (int i = 0; i < e->u.load.nidx; i++) ir_expr_visit(e->u.load.idx[i], fn, ctx);
    break;
  case IR_EXPR_CAST:
    ir_expr_visit(e->u.cast_src, fn, ctx);
    break;
  default:
    break;
  }
}

typedef struct VisitAdapter {
  IrExprVisitor fn;
  void *ctx;
} VisitAdapter;

static IrExpr *visit_slot(IrModule *m, IrExpr *e, void *ctx) {
  VisitAdapter *a = ctx;
  ir_expr_visit(e, a->fn, a->ctx);
  return e;
}

void ir_stmt_visit_exprs(IrStmt *s, IrExprVisitor fn, void *ctx) {
  VisitAdapter a = {fn, ctx};
  ir_stmt_rewrite_exprs(NULL, s, visit_slot, &a);
}
