/* fold_constants.c - pass "fold-constants" (also run as "cleanup").
 *
 * Needs: nothing beyond a valid IR (most useful after specialize).
 * Guarantees: every expression is simplified (simplify.h): constant
 * arithmetic folded, index sums in canonical linear form, tile extents like
 * (bx+1)*64 - bx*64 reduced to constants. IFs with a constant condition are
 * replaced by the branch taken, loops with a zero extent are removed, and a
 * LET bound to a constant is substituted into the statements after it. */
#include "../simplify.h"
#include "passes.h"

static IrExpr *simplify_expr(IrModule *m, IrExpr *e, void *ctx) { return ir_simplify(m, e); }

typedef struct LetSubst {
  IrVar *var;
  IrExpr *value;
} LetSubst;

static IrExpr *subst_let(IrModule *m, IrExpr *e, void *ctx) {
  LetSubst *ls = ctx;
  return ir_simplify(m, ir_expr_subst(m, e, ls->var, ls->value));
}

static bool declares_names(const IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++)
    if (seq->u.seq.items[i]->kind == IR_STMT_LET || seq->u.seq.items[i]->kind == IR_STMT_ALLOC) return true;
  return false;
}

static void fold_seq(IrModule *m, IrStmt *seq);

/* Returns the statement to keep in place of s: s itself, a branch, or NULL
 * (dropped). */
static IrStmt *fold_stmt(IrModule *m, IrStmt *s) {
  int64_t v;
  switch (s->kind) {
  case IR_STMT_SEQ:
    fold_seq(m, s);
    return s;
  case IR_STMT_IF:
    if (ir_expr_is_int_const(s->u.if_.cond, &v)) {
      IrStmt *taken = v ? s->u.if_.then_ : s->u.if_.else_;
      if (!taken) return NULL;
      fold_seq(m, taken);
      return taken;
    }
    fold_seq(m, s->u.if_.then_);
    if (s->u.if_.else_) fold_seq(m, s->u.if_.else_);
    return s;
  case IR_STMT_FOR:
    if (ir_expr_is_int_const(s->u.for_.extent, &v) && v <= 0) return NULL;
    fold_seq(m, s->u.for_.body);
    return s;
  default:
    return s;
  }
}

static void fold_seq(IrModule *m, IrStmt *seq) {
  IrStmt **items = seq->u.seq.items;
  int n = seq->u.seq.n;
  seq->u.seq.items = NULL;
  seq->u.seq.n = seq->u.seq.cap = 0;
  for (int i = 0; i < n; i++) {
    IrStmt *s = items[i];
    if (s->kind == IR_STMT_LET && (s->u.let.value->kind == IR_EXPR_INT || s->u.let.value->kind == IR_EXPR_FLOAT)) {
      LetSubst ls = {s->u.let.var, s->u.let.value};
      for (int j = i + 1; j < n; j++) pass_rewrite_stmt(m, items[j], subst_let, &ls);
      continue;
    }
    IrStmt *kept = fold_stmt(m, s);
    if (!kept) continue;
    /* A branch or block with no declarations of its own merges into us. */
    if (kept->kind == IR_STMT_SEQ && !declares_names(kept)) {
      for (int j = 0; j < kept->u.seq.n; j++) ir_seq_push(m, seq, kept->u.seq.items[j]);
      continue;
    }
    ir_seq_push(m, seq, kept);
  }
}

bool pass_fold_constants(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    pass_rewrite_kernel(m, k, simplify_expr, NULL);
    fold_seq(m, k->body);
  }
  return true;
}
