/* guard_elements.c - pass "guard-elements": bounds checks on the element
 * accesses of global tensors.
 *
 * Needs: fold-constants (folded indices), guard-bounds (this is its
 * counterpart for single elements; tile operands keep their guard flags).
 * Guarantees: every load `T[i, ...]` of a global tensor whose indices cannot
 * be proven to lie in [0, shape) reads
 *     (0 <= i && i < shape && ...) ? T[i, ...] : 0
 * and every such store `T[i, ...] = v` becomes `if (...) T[i, ...] = v`. Both
 * back ends emit the select as C's `?:`, so the load is not executed when the
 * check fails. Indices computed from tensor data (`cu_seqlens[bz + 1]`,
 * `K[k_start + i, ...]`, block-table entries) are what this is for: an out
 * of range index reads 0 and writes nothing, like a tile copy's edges,
 * instead of touching memory outside the tensor.
 *
 * The proof, per dimension, as guard-bounds' plus two symbolic rules:
 *   lower: a value range with lo >= 0, or an expression built from block
 *          indices, loop variables, shape symbols, non-negative constants
 *          and lets of such expressions with + * / % min max ceildiv
 *          (ir_int_nonneg; guard-bounds proves slice starts the same way);
 *   upper: a value range with hi < shape (constant shape), or the index is
 *          a block index whose grid extent is the dimension itself, or a
 *          loop variable whose extent is the dimension itself
 *          (`for s in serial(num_split) ... LSE[.., s, ..]`).
 * Each check that cannot be proven is emitted, one comparison per bound. */
#include <string.h>

#include "../arena.h"
#include "../simplify.h"
#include "passes.h"

enum { GE_MAX_VARS = 128 };

typedef struct Facts {
  const IrKernel *k;
  /* Constant value ranges (block indices of constant grids, loops of
   * constant extent). */
  const IrVar *rvar[GE_MAX_VARS];
  int64_t lo[GE_MAX_VARS], hi[GE_MAX_VARS];
  int nr;
  /* Loop variables and their extents (any extent). */
  const IrVar *lvar[GE_MAX_VARS];
  const IrExpr *lext[GE_MAX_VARS];
  int nl;
  /* Lets whose value is non-negative. */
  const IrVar *nonneg_let[GE_MAX_VARS];
  int nn;
  IrModule *m;
} Facts;

static bool range_of(const IrVar *v, void *ctx, int64_t *lo, int64_t *hi) {
  Facts *f = ctx;
  for (int i = f->nr - 1; i >= 0; i--)
    if (f->rvar[i] == v) return *lo = f->lo[i], *hi = f->hi[i], true;
  return false;
}

static bool let_nonneg(const IrVar *v, void *ctx) {
  const Facts *f = ctx;
  for (int i = 0; i < f->nn; i++)
    if (f->nonneg_let[i] == v) return true;
  return false;
}

static bool nonneg(const Facts *f, const IrExpr *e) { return ir_int_nonneg(e, range_of, let_nonneg, (void *)f); }

static bool below(const Facts *f, const IrExpr *idx, const IrExpr *shape) {
  int64_t lo, hi, size;
  if (ir_expr_is_int_const(shape, &size) && ir_int_range(idx, range_of, (void *)f, &lo, &hi) && hi < size)
    return true;
  /* b + c with b a block index over grid extent G: fine when shape - G >= c
   * (cu_seqlens[bz + 1] under a grid of batch_p1 - 1). */
  int64_t c = 0, slack;
  if (idx->kind == IR_EXPR_BINARY && idx->u.op.op == IR_OP_ADD && idx->u.op.a->kind == IR_EXPR_VAR &&
      ir_expr_is_int_const(idx->u.op.b, &c))
    idx = idx->u.op.a;
  if (idx->kind != IR_EXPR_VAR) return false;
  const IrVar *v = idx->u.var;
  if (v->kind == IR_VAR_BLOCK_INDEX) {
    const IrExpr *grid = f->k->grid[v->grid_dim];
    if (c == 0 && ir_expr_equal(grid, shape)) return true;
    IrExpr *diff = ir_simplify(f->m, ir_binary(f->m, IR_OP_SUB, ir_expr_clone(f->m, shape),
                                               ir_expr_clone(f->m, grid), shape->loc));
    return ir_expr_is_int_const(diff, &slack) && slack >= c;
  }
  if (c != 0) return false;
  for (int i = f->nl - 1; i >= 0; i--)
    if (f->lvar[i] == v) return ir_expr_equal(f->lext[i], shape);
  return false;
}

static IrExpr *and_(IrModule *m, IrExpr *acc, IrExpr *c) {
  return acc ? ir_binary(m, IR_OP_AND, acc, c, c->loc) : c;
}

/* The unproven checks of buf[idx...], ANDed; NULL when all are proven. */
static IrExpr *check(Facts *f, const IrBuffer *buf, IrExpr *const *idx, int n, SrcLoc loc) {
  IrModule *m = f->m;
  IrExpr *cond = NULL;
  for (int d = 0; d < n; d++) {
    if (!nonneg(f, idx[d])) cond = and_(m, cond, ir_binary(m, IR_OP_GE, idx[d], ir_int(m, 0, loc), loc));
    if (!below(f, idx[d], buf->shape[d])) cond = and_(m, cond, ir_binary(m, IR_OP_LT, idx[d], buf->shape[d], loc));
  }
  return cond;
}

static IrExpr *guard_loads(IrModule *m, IrExpr *e, void *ctx);

/* Rewrites the children first (a load inside an index is checked too). */
static IrExpr *guard_expr(Facts *f, IrExpr *e) {
  if (!e) return e;
  switch (e->kind) {
  case IR_EXPR_UNARY:
    e->u.op.a = guard_expr(f, e->u.op.a);
    return e;
  case IR_EXPR_BINARY:
    e->u.op.a = guard_expr(f, e->u.op.a);
    e->u.op.b = guard_expr(f, e->u.op.b);
    return e;
  case IR_EXPR_SELECT:
    e->u.select.cond = guard_expr(f, e->u.select.cond);
    e->u.select.then_ = guard_expr(f, e->u.select.then_);
    e->u.select.else_ = guard_expr(f, e->u.select.else_);
    return e;
  case IR_EXPR_CALL:
    for (int i = 0; i < e->u.call.nargs; i++) e->u.call.args[i] = guard_expr(f, e->u.call.args[i]);
    return e;
  case IR_EXPR_CAST:
    e->u.cast_src = guard_expr(f, e->u.cast_src);
    return e;
  case IR_EXPR_LOAD: {
    for (int i = 0; i < e->u.load.nidx; i++) e->u.load.idx[i] = guard_expr(f, e->u.load.idx[i]);
    if (e->u.load.buf->scope != IR_SCOPE_GLOBAL) return e;
    IrExpr *cond = check(f, e->u.load.buf, e->u.load.idx, e->u.load.nidx, e->loc);
    if (!cond) return e;
    IrExpr *zero = dtype_is_float(e->dtype) ? ir_float(f->m, 0.0, DTYPE_F32, e->loc) : ir_int(f->m, 0, e->loc);
    return ir_select(f->m, cond, e, ir_cast(f->m, e->dtype, zero, e->loc), e->loc);
  }
  default:
    return e;
  }
}

static IrExpr *guard_loads(IrModule *m, IrExpr *e, void *ctx) {
  (void)m;
  return guard_expr(ctx, e);
}

static IrStmt *walk(Facts *f, IrStmt *s);

static void walk_seq(Facts *f, IrStmt *s) {
  int nn = f->nn; /* lets scope to the end of their SEQ */
  for (int i = 0; i < s->u.seq.n; i++) s->u.seq.items[i] = walk(f, s->u.seq.items[i]);
  f->nn = nn;
}

/* Returns the statement that replaces s (s itself, or an IF around it). */
static IrStmt *walk(Facts *f, IrStmt *s) {
  if (!s) return s;
  switch (s->kind) {
  case IR_STMT_SEQ:
    walk_seq(f, s);
    return s;
  case IR_STMT_FOR: {
    ir_stmt_rewrite_exprs(f->m, s, guard_loads, f);
    int64_t ext_lo, ext;
    bool known = f->nr < GE_MAX_VARS && ir_int_range(s->u.for_.extent, range_of, f, &ext_lo, &ext);
    if (known) {
      f->rvar[f->nr] = s->u.for_.var;
      f->lo[f->nr] = 0;
      f->hi[f->nr++] = ext - 1;
    }
    bool listed = f->nl < GE_MAX_VARS;
    if (listed) f->lvar[f->nl] = s->u.for_.var, f->lext[f->nl++] = s->u.for_.extent;
    walk(f, s->u.for_.body);
    if (listed) f->nl--;
    if (known) f->nr--;
    return s;
  }
  case IR_STMT_IF:
    ir_stmt_rewrite_exprs(f->m, s, guard_loads, f);
    walk(f, s->u.if_.then_);
    walk(f, s->u.if_.else_);
    return s;
  case IR_STMT_LET:
    ir_stmt_rewrite_exprs(f->m, s, guard_loads, f);
    if (f->nn < GE_MAX_VARS && nonneg(f, s->u.let.value)) f->nonneg_let[f->nn++] = s->u.let.var;
    return s;
  case IR_STMT_STORE: {
    ir_stmt_rewrite_exprs(f->m, s, guard_loads, f);
    if (s->u.store.buf->scope != IR_SCOPE_GLOBAL) return s;
    IrExpr *cond = check(f, s->u.store.buf, s->u.store.idx, s->u.store.nidx, s->loc);
    if (!cond) return s;
    IrStmt *body = ir_seq_new(f->m, s->loc);
    ir_seq_push(f->m, body, s);
    return ir_if_new(f->m, cond, body, NULL, s->loc);
  }
  case IR_STMT_ATOMIC_FETCH_ADD:
    /* Its result is in scope after it, so no `if` around it: the check
     * becomes its guard (outside the tensor: nothing added, result 0). */
    ir_stmt_rewrite_exprs(f->m, s, guard_loads, f);
    if (!s->u.store.guard) s->u.store.guard = check(f, s->u.store.buf, s->u.store.idx, s->u.store.nidx, s->loc);
    return s;
  default:
    /* Tile operations: loads inside their slice starts (`X[cu[b] : ...]`). */
    ir_stmt_rewrite_exprs(f->m, s, guard_loads, f);
    return s;
  }
}

bool pass_guard_elements(IrModule *m, const PassOptions *opts, Diag *diag) {
  (void)opts, (void)diag;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    Facts *f = arena_alloc(m->arena, sizeof *f);
    memset(f, 0, sizeof *f);
    f->k = k;
    f->m = m;
    for (int g = 0; g < k->ngrid; g++) {
      int64_t ext;
      if (ir_expr_is_int_const(k->grid[g], &ext)) {
        f->rvar[f->nr] = k->block_vars[g];
        f->lo[f->nr] = 0;
        f->hi[f->nr++] = ext - 1;
      }
    }
    walk(f, k->body);
  }
  return true;
}
