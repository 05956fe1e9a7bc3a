/* ir_walk.c - read-only visits of expressions and statements (ir.h).
 * Passes and backends that only look (which buffers are loaded, is there a
 * division by zero, where the pipelined loops are, ...) use these instead
 * of their own recursion. */
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

typedef struct Contains {
  const IrExpr *sub;
  bool found;
} Contains;

static void note_equal(const IrExpr *e, void *ctx) {
  Contains *c = ctx;
  if (!c->found && ir_expr_equal(e, c->sub)) c->found = true;
}

bool ir_expr_contains(const IrExpr *e, const IrExpr *sub) {
  Contains c = {sub, false};
  ir_expr_visit(e, note_equal, &c);
  return c.found;
}

typedef struct RefCount {
  const IrBuffer *buf;
  int count;
} RefCount;

static void count_load(const IrExpr *e, void *ctx) {
  RefCount *rc = ctx;
  if (e->kind == IR_EXPR_LOAD && e->u.load.buf == rc->buf) rc->count++;
}

int ir_stmt_buffer_refs(IrStmt *s, const IrBuffer *b) {
  RefCount rc = {b, 0};
  switch (s->kind) {
  case IR_STMT_STORE: rc.count += s->u.store.buf == b; break;
  case IR_STMT_ATOMIC_FETCH_ADD: rc.count += (s->u.store.buf == b) + (s->u.store.slot && s->u.store.slot == b); break;
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD:
    rc.count += (s->u.copy.src.buf == b) + (s->u.copy.dst.buf == b) + (s->u.copy.via && s->u.copy.via == b);
    for (int i = 0; i < s->u.copy.nhold; i++) rc.count += s->u.copy.hold[i] == b;
    break;
  case IR_STMT_FILL: rc.count += s->u.fill.dst.buf == b; break;
  case IR_STMT_GEMM:
    rc.count += (s->u.gemm.a.buf == b) + (s->u.gemm.b.buf == b) + (s->u.gemm.c.buf == b);
    break;
  case IR_STMT_REDUCE:
    rc.count += (s->u.reduce.src == b) + (s->u.reduce.dst == b) + (s->u.reduce.scratch == b);
    break;
  case IR_STMT_WGMMA_WAIT: rc.count += s->u.wgmma_wait.acc == b; break;
  case IR_STMT_STREAM_K_FIXUP: rc.count += s->u.stream_k.acc == b; break;
  case IR_STMT_MBAR_WAIT:
  case IR_STMT_MBAR_ARRIVE: rc.count += s->u.mbar_wait.bar == b; break;
  default: break;
  }
  return rc.count + ir_stmt_buffer_loads(s, b);
}

int ir_stmt_buffer_loads(IrStmt *s, const IrBuffer *b) {
  RefCount rc = {b, 0};
  ir_stmt_visit_exprs(s, count_load, &rc);
  return rc.count;
}

int ir_expr_buffer_loads(const IrExpr *e, const IrBuffer *b) {
  RefCount rc = {b, 0};
  ir_expr_visit(e, count_load, &rc);
  return rc.count;
}

void ir_visit_stmts(IrStmt *s, IrStmtVisitor fn, void *ctx) {
  if (!s) return;
  fn(s, ctx);
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) ir_visit_stmts(s->u.seq.items[i], fn, ctx);
    break;
  case IR_STMT_FOR:
    ir_visit_stmts(s->u.for_.body, fn, ctx);
    break;
  case IR_STMT_IF:
    ir_visit_stmts(s->u.if_.then_, fn, ctx);
    ir_visit_stmts(s->u.if_.else_, fn, ctx);
    break;
  case IR_STMT_WARP_ROLES:
    ir_visit_stmts(s->u.roles.producer, fn, ctx);
    ir_visit_stmts(s->u.roles.consumer, fn, ctx);
    break;
  default:
    break;
  }
}

bool ir_gemm_reads_fp8(const IrStmt *gemm) {
  return dtype_is_fp8(gemm->u.gemm.a.buf->dtype) || dtype_is_fp8(gemm->u.gemm.b.buf->dtype);
}
