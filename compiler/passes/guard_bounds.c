/* guard_bounds.c - pass "guard-bounds": partial tiles at tensor edges.
 *
 * Needs: check-shapes (tile extents are constants).
 * Guarantees: in every tile operand that is a slice of a global tensor, each
 * dimension that cannot be proven to stay inside [0, shape) has guard[d] =
 * IR_GUARD_UPPER, plus IR_GUARD_LOWER when its start is not proven
 * non-negative either (a start read from a tensor: `K[off + k * 64 : ...]`
 * with off = cu_seqlens[b]). Lowering then reads zeros for out-of-range
 * elements of a source and skips out-of-range elements of a destination,
 * at both edges; the CUDA back end tests the lower edge only where
 * IR_GUARD_LOWER asks for it.
 *
 * The proof uses value ranges: block indices range over [0, grid-1], loop
 * variables over [0, extent-1] (when those are constants), and a dimension is
 * also safe when it is indexed by a block index whose grid extent is the very
 * expression of the tensor's dimension (bz over batch for a [batch, ...]
 * tensor), or by a slice `:` of the whole dimension. A start is non-negative
 * by ir_int_nonneg (block indices, loop variables, shape symbols and the
 * lets of such values, as guard-elements proves indices). */
#include "../simplify.h"
#include "passes.h"

enum { GUARD_MAX_VARS = 64 };

typedef struct Ranges {
  const IrKernel *k;
  const IrVar *var[GUARD_MAX_VARS];
  int64_t lo[GUARD_MAX_VARS], hi[GUARD_MAX_VARS];
  int n;
  /* Lets whose value is non-negative (in scope). */
  const IrVar *nonneg_let[GUARD_MAX_VARS];
  int nn;
} Ranges;

static bool range_of(const IrVar *v, void *ctx, int64_t *lo, int64_t *hi) {
  Ranges *r = ctx;
  for (int i = r->n - 1; i >= 0; i--)
    if (r->var[i] == v) return *lo = r->lo[i], *hi = r->hi[i], true;
  return false;
}

static bool let_nonneg(const IrVar *v, void *ctx) {
  const Ranges *r = ctx;
  for (int i = 0; i < r->nn; i++)
    if (r->nonneg_let[i] == v) return true;
  return false;
}

static bool dim_is_safe(const Ranges *r, const IrRegion *reg, int d) {
  const IrExpr *start = reg->start[d], *shape = reg->buf->shape[d];
  int64_t lo, hi, ext, size, zero;
  /* The whole dimension: start 0, extent == shape. */
  if (ir_expr_is_int_const(start, &zero) && zero == 0 && ir_expr_equal(reg->extent[d], shape)) return true;
  /* bz indexing a dimension whose size is bz's own grid extent. */
  if (reg->is_index[d] && start->kind == IR_EXPR_VAR && start->u.var->kind == IR_VAR_BLOCK_INDEX &&
      ir_expr_equal(r->k->grid[start->u.var->grid_dim], shape))
    return true;
  if (!ir_expr_is_int_const(reg->extent[d], &ext) || !ir_expr_is_int_const(shape, &size)) return false;
  if (!ir_int_range(start, range_of, (void *)r, &lo, &hi)) return false;
  return lo >= 0 && ext <= size && hi <= size - ext;
}

static void guard_region(const Ranges *r, IrRegion *reg) {
  if (!reg->buf || reg->buf->scope != IR_SCOPE_GLOBAL) return;
  for (int d = 0; d < reg->rank; d++) {
    reg->guard[d] = 0;
    if (dim_is_safe(r, reg, d)) continue;
    reg->guard[d] = IR_GUARD_UPPER;
    if (!ir_int_nonneg(reg->start[d], range_of, let_nonneg, (void *)r)) reg->guard[d] |= IR_GUARD_LOWER;
  }
}

static void walk(Ranges *r, IrStmt *s) {
  if (!s) return;
  switch (s->kind) {
  case IR_STMT_SEQ: {
    int nn = r->nn; /* lets scope to the end of their SEQ */
    for (int i = 0; i < s->u.seq.n; i++) walk(r, s->u.seq.items[i]);
    r->nn = nn;
    return;
  }
  case IR_STMT_LET:
    if (r->nn < GUARD_MAX_VARS && ir_int_nonneg(s->u.let.value, range_of, let_nonneg, r))
      r->nonneg_let[r->nn++] = s->u.let.var;
    return;
  case IR_STMT_FOR: {
    int64_t ext_lo, ext;
    /* A loop over `bx + 1` iterations still has a bounded variable. */
    bool known = ir_int_range(s->u.for_.extent, range_of, r, &ext_lo, &ext) && r->n < GUARD_MAX_VARS;
    if (known) {
      r->var[r->n] = s->u.for_.var;
      r->lo[r->n] = 0;
      r->hi[r->n++] = ext - 1;
    }
    walk(r, s->u.for_.body);
    if (known) r->n--;
    return;
  }
  case IR_STMT_IF:
    walk(r, s->u.if_.then_);
    walk(r, s->u.if_.else_);
    return;
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD:
    guard_region(r, &s->u.copy.src);
    guard_region(r, &s->u.copy.dst);
    return;
  case IR_STMT_FILL:
    guard_region(r, &s->u.fill.dst);
    return;
  case IR_STMT_GEMM:
    guard_region(r, &s->u.gemm.a);
    guard_region(r, &s->u.gemm.b);
    guard_region(r, &s->u.gemm.c);
    return;
  default:
    return;
  }
}

bool pass_guard_bounds(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    Ranges r = {.k = k};
    for (int g = 0; g < k->ngrid; g++) {
      int64_t ext;
      if (ir_expr_is_int_const(k->grid[g], &ext)) {
        r.var[r.n] = k->block_vars[g];
        r.lo[r.n] = 0;
        r.hi[r.n++] = ext - 1;
      }
    }
    walk(&r, k->body);
  }
  return true;
}
