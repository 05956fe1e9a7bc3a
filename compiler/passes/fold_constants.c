/* fold_constants.c - pass "fold-constants" (also run as "cleanup").
 *
 * Needs: nothing beyond a valid IR (most useful after specialize).
 * Guarantees: every expression is simplified (simplify.h): constant
 * arithmetic folded, index sums in canonical linear form, tile extents like
 * (bx+1)*64 - bx*64 reduced to constants. IFs with a constant condition are
 * replaced by the branch taken, loops with a zero extent are removed, a
 * LET bound to a constant is substituted into the statements after it, and
 * a LET nothing reads any more is dropped (a value only a removed branch
 * used: varlen's q_pos without the causal mask; NVRTC would warn).
 *
 * The constant LETs of the enclosing SEQs are kept in a map hashed by
 * variable; each statement is rewritten once, when the walk reaches it, with
 * the LETs its expressions use (in program order, simplifying after each,
 * which is what substituting every LET into every later statement as soon as
 * it is seen gives, since simplifying is idempotent). Substituting eagerly
 * copied every later statement once per LET: 10000 LETs took a minute and
 * gigabytes (finding F6 in docs/robustness.md). */
#include <stdlib.h>

#include "../name_table.h"
#include "../simplify.h"
#include "passes.h"

static IrExpr *simplify_expr(IrModule *m, IrExpr *e, void *ctx) { return ir_simplify(m, e); }

/* The constant LETs in scope, oldest first: entry i of vars is a LET's
 * IrVar, values[i] its constant. */
typedef struct LetMap {
  NameTable vars;
  IrExpr **values;
  int cap;
  int *uses; /* scratch: the entries one expression uses */
  int nuses, capuses;
  Arena *arena;
} LetMap;

static void note_use(const IrExpr *e, void *ctx) {
  LetMap *lm = ctx;
  if (e->kind != IR_EXPR_VAR) return;
  int i = name_table_find(&lm->vars, e->u.var);
  if (i < 0) return;
  lm->uses = arena_grow(lm->arena, lm->uses, &lm->capuses, lm->nuses + 1, sizeof(int));
  lm->uses[lm->nuses++] = i;
}

static int by_index(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static IrExpr *subst_lets(IrModule *m, IrExpr *e, void *ctx) {
  LetMap *lm = ctx;
  lm->nuses = 0;
  ir_expr_visit(e, note_use, lm);
  if (lm->nuses == 0) return e;
  qsort(lm->uses, (size_t)lm->nuses, sizeof(int), by_index);
  for (int k = 0; k < lm->nuses; k++) {
    int i = lm->uses[k];
    if (k > 0 && i == lm->uses[k - 1]) continue;
    e = ir_simplify(m, ir_expr_subst(m, e, lm->vars.entries[i].key, lm->values[i]));
  }
  return e;
}

/* Rewrites the expressions of s itself (not of its child statements, which
 * are rewritten when fold_seq reaches them). */
static void subst_own_exprs(IrModule *m, IrStmt *s, LetMap *lm) {
  if (lm->vars.n == 0) return;
  ir_stmt_rewrite_exprs(m, s, subst_lets, lm);
  if (s->kind == IR_STMT_ALLOC)
    for (int d = 0; d < s->u.alloc->rank; d++)
      s->u.alloc->shape[d] = subst_lets(m, s->u.alloc->shape[d], lm);
}

static bool declares_names(const IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++)
    if (seq->u.seq.items[i]->kind == IR_STMT_LET || seq->u.seq.items[i]->kind == IR_STMT_ALLOC ||
        seq->u.seq.items[i]->kind == IR_STMT_ATOMIC_FETCH_ADD)
      return true;
  return false;
}

static void fold_seq(IrModule *m, IrStmt *seq, LetMap *lm);

/* Returns the statement to keep in place of s: s itself, a branch, or NULL
 * (dropped). */
static IrStmt *fold_stmt(IrModule *m, IrStmt *s, LetMap *lm) {
  int64_t v;
  switch (s->kind) {
  case IR_STMT_SEQ:
    fold_seq(m, s, lm);
    return s;
  case IR_STMT_IF:
    if (ir_expr_is_int_const(s->u.if_.cond, &v)) {
      IrStmt *taken = v ? s->u.if_.then_ : s->u.if_.else_;
      if (!taken) return NULL;
      fold_seq(m, taken, lm);
      return taken;
    }
    fold_seq(m, s->u.if_.then_, lm);
    if (s->u.if_.else_) fold_seq(m, s->u.if_.else_, lm);
    return s;
  case IR_STMT_FOR:
    if (ir_expr_is_int_const(s->u.for_.extent, &v) && v <= 0) return NULL;
    fold_seq(m, s->u.for_.body, lm);
    return s;
  default:
    return s;
  }
}

static void fold_seq(IrModule *m, IrStmt *seq, LetMap *lm) {
  IrStmt **items = seq->u.seq.items;
  int n = seq->u.seq.n;
  int mark = lm->vars.n;
  seq->u.seq.items = NULL;
  seq->u.seq.n = seq->u.seq.cap = 0;
  for (int i = 0; i < n; i++) {
    IrStmt *s = items[i];
    subst_own_exprs(m, s, lm);
    if (s->kind == IR_STMT_LET && (s->u.let.value->kind == IR_EXPR_INT || s->u.let.value->kind == IR_EXPR_FLOAT)) {
      /* A variable bound twice keeps its first constant, as when each LET
       * was substituted at once: the first one left no use for the second. */
      if (name_table_find(&lm->vars, s->u.let.var) < 0) {
        lm->values = arena_grow(lm->arena, lm->values, &lm->cap, lm->vars.n + 1, sizeof(IrExpr *));
        lm->values[name_table_push(&lm->vars, s->u.let.var)] = s->u.let.value;
      }
      continue;
    }
    IrStmt *kept = fold_stmt(m, s, lm);
    if (!kept) continue;
    /* A branch or block with no declarations of its own merges into us. */
    if (kept->kind == IR_STMT_SEQ && !declares_names(kept)) {
      for (int j = 0; j < kept->u.seq.n; j++) ir_seq_push(m, seq, kept->u.seq.items[j]);
      continue;
    }
    ir_seq_push(m, seq, kept);
  }
  name_table_truncate(&lm->vars, mark);
}

bool pass_fold_constants(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    pass_rewrite_kernel(m, k, simplify_expr, NULL);
    LetMap lm = {.arena = m->arena};
    name_table_init(&lm.vars, m->arena, NAME_KEY_POINTER);
    fold_seq(m, k->body, &lm);
    pass_drop_unread_lets(m, k->body);
  }
  return true;
}
