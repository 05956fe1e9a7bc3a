/* check_shapes.c - pass "check-shapes": shape agreement of tile programs.
 *
 * Needs: specialize and fold-constants (extents are literals where they can
 * be). Guarantees, or reports an error at the offending statement:
 *  - threads is a constant in [1, 1024]; shared/fragment/local buffers have
 *    constant positive shapes;
 *  - copy/fill operands have constant tile shapes and copy's agree (unit
 *    dimensions aside); gemm's A, B, C agree as [M,K] @ [K,N] -> [M,N]
 *    (after transposes); a reduction's destination is its source without the
 *    reduced dimension;
 *  - a parallel loop has a constant extent, equal to every dimension of a
 *    non-global buffer that it indexes directly with its variable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct Shape {
  int n;
  int64_t d[IR_MAX_RANK];
} Shape;

static const char *shape_str(char *buf, size_t len, const Shape *s) {
  size_t at = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < s->n && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? ", " : "", (long long)s->d[i]);
  if (at < len) snprintf(buf + at, len - at, "]");
  return buf;
}

/* The region's tile shape; false (after an error) when not constant. */
static bool tile_shape(const IrRegion *r, const char *op, SrcLoc loc, Diag *diag, Shape *out) {
  out->n = 0;
  for (int d = 0; d < r->rank; d++) {
    if (r->is_index[d]) continue;
    int64_t v;
    if (!ir_expr_is_int_const(r->extent[d], &v)) {
      Arena *a = arena_create();
      const char *text = ir_expr_to_string(a, r->extent[d]);
      diag_error(diag, loc, "%s: the extent of dimension %d of '%s' (%s) is not a compile-time constant",
                 op, d, r->buf->name, text);
      arena_destroy(a);
      return false;
    }
    if (v < 1) {
      diag_error(diag, loc, "%s: dimension %d of '%s' has extent %lld", op, d, r->buf->name, (long long)v);
      return false;
    }
    out->d[out->n++] = v;
  }
  return true;
}

static Shape drop_units(const Shape *s) {
  Shape r = {0};
  for (int i = 0; i < s->n; i++)
    if (s->d[i] != 1) r.d[r.n++] = s->d[i];
  return r;
}

static bool shape_eq(const Shape *a, const Shape *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->d[i] != b->d[i]) return false;
  return true;
}

static bool buffer_shape(const IrBuffer *b, Shape *out) {
  out->n = b->rank;
  for (int d = 0; d < b->rank; d++)
    if (!ir_expr_is_int_const(b->shape[d], &out->d[d])) return false;
  return true;
}

/* copy and atomic_add: the two tiles agree (unit dimensions aside). */
static void check_copy(const IrStmt *s, Diag *diag) {
  Shape a, b;
  char sa[96], sb[96];
  const char *op = ir_stmt_kind_name(s->kind);
  if (!tile_shape(&s->u.copy.src, op, s->loc, diag, &a) || !tile_shape(&s->u.copy.dst, op, s->loc, diag, &b))
    return;
  Shape ua = drop_units(&a), ub = drop_units(&b);
  if (!shape_eq(&ua, &ub))
    diag_error(diag, s->loc, "%s: shapes differ: '%s' tile is %s but '%s' tile is %s", op, s->u.copy.src.buf->name,
               shape_str(sa, sizeof sa, &a), s->u.copy.dst.buf->name, shape_str(sb, sizeof sb, &b));
}

static void check_gemm(const IrStmt *s, Diag *diag) {
  Shape a, b, c;
  char sa[96], sb[96], sc[96];
  if (!tile_shape(&s->u.gemm.a, "gemm", s->loc, diag, &a) || !tile_shape(&s->u.gemm.b, "gemm", s->loc, diag, &b) ||
      !tile_shape(&s->u.gemm.c, "gemm", s->loc, diag, &c))
    return;
  if (a.n != 2 || b.n != 2 || c.n != 2) {
    diag_error(diag, s->loc, "gemm: operands must be 2-D tiles (A is %s, B is %s, C is %s)",
               shape_str(sa, sizeof sa, &a), shape_str(sb, sizeof sb, &b), shape_str(sc, sizeof sc, &c));
    return;
  }
  int64_t m = s->u.gemm.trans_a ? a.d[1] : a.d[0], ka = s->u.gemm.trans_a ? a.d[0] : a.d[1];
  int64_t kb = s->u.gemm.trans_b ? b.d[1] : b.d[0], n = s->u.gemm.trans_b ? b.d[0] : b.d[1];
  if (ka != kb) {
    diag_error(diag, s->loc, "gemm: inner dimensions differ: A%s is %s and B%s is %s",
               s->u.gemm.trans_a ? "^T" : "", shape_str(sa, sizeof sa, &a), s->u.gemm.trans_b ? "^T" : "",
               shape_str(sb, sizeof sb, &b));
    return;
  }
  if (c.d[0] != m || c.d[1] != n)
    diag_error(diag, s->loc, "gemm: C is %s but A @ B is [%lld, %lld]", shape_str(sc, sizeof sc, &c),
               (long long)m, (long long)n);
}

static void check_reduce(const IrStmt *s, Diag *diag) {
  const IrBuffer *src = s->u.reduce.src, *dst = s->u.reduce.dst;
  Shape a, b, want = {0};
  char sa[96], sb[96];
  if (!buffer_shape(src, &a) || !buffer_shape(dst, &b)) return; /* reported at the alloc */
  for (int d = 0; d < a.n; d++)
    if (d != s->u.reduce.dim) want.d[want.n++] = a.d[d];
  if (want.n == 0) want.d[want.n++] = 1;
  if (!shape_eq(&want, &b))
    diag_error(diag, s->loc, "%s: '%s' is %s; reducing dim %d needs a destination of shape %s, but '%s' is %s",
               ir_reduce_name(s->u.reduce.kind), src->name, shape_str(sa, sizeof sa, &a), s->u.reduce.dim,
               shape_str(sb, sizeof sb, &want), dst->name, shape_str(sa, sizeof sa, &b));
}

typedef struct LoopCheck {
  const IrStmt *loop;
  int64_t extent;
  Diag *diag;
  bool reported;
} LoopCheck;

static void check_index_use(LoopCheck *lc, const IrBuffer *buf, IrExpr *const *idx, int n) {
  if (buf->scope == IR_SCOPE_GLOBAL || lc->reported) return;
  for (int d = 0; d < n; d++) {
    int64_t dim;
    if (idx[d]->kind != IR_EXPR_VAR || idx[d]->u.var != lc->loop->u.for_.var) continue;
    if (!ir_expr_is_int_const(buf->shape[d], &dim) || dim == lc->extent) continue;
    diag_error(lc->diag, lc->loop->loc,
               "parallel loop extent %lld of '%s' does not match dimension %d of '%s' (%lld)",
               (long long)lc->extent, lc->loop->u.for_.var->name, d, buf->name, (long long)dim);
    lc->reported = true;
  }
}

static void scan_load(const IrExpr *e, void *ctx) {
  if (e->kind == IR_EXPR_LOAD) check_index_use(ctx, e->u.load.buf, e->u.load.idx, e->u.load.nidx);
}

static void scan_loop_body(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_STORE) {
    LoopCheck *lc = ctx;
    check_index_use(lc, s->u.store.buf, s->u.store.idx, s->u.store.nidx);
  }
  /* Loads: every expression slot of the statement. */
  ir_stmt_visit_exprs(s, scan_load, ctx);
}

typedef struct Checker {
  Diag *diag;
} Checker;

static void check_stmt(IrStmt *s, void *ctx) {
  Checker *c = ctx;
  switch (s->kind) {
  case IR_STMT_ALLOC: {
    IrBuffer *b = s->u.alloc;
    for (int d = 0; d < b->rank; d++) {
      int64_t v;
      if (!ir_expr_is_int_const(b->shape[d], &v)) {
        diag_error(c->diag, s->loc, "the shape of '%s' must be a compile-time constant (bind its symbols with -D)",
                   b->name);
        break;
      }
      if (v < 1) {
        diag_error(c->diag, s->loc, "dimension %d of '%s' is %lld; it must be positive", d, b->name, (long long)v);
        break;
      }
    }
    /* A block's buffers live on a thread's stack (C) or on chip (GPU):
     * anything near this size is a mistake, and would overflow later. */
    if (ir_buffer_bytes_aligned(b) > ((int64_t)64 << 20))
      diag_error(c->diag, s->loc, "'%s' needs more than 64 MB; block buffers must be far smaller", b->name);
    break;
  }
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD:
    check_copy(s, c->diag);
    break;
  case IR_STMT_FILL: {
    Shape sh;
    tile_shape(&s->u.fill.dst, "fill", s->loc, c->diag, &sh);
    break;
  }
  case IR_STMT_GEMM:
    check_gemm(s, c->diag);
    break;
  case IR_STMT_REDUCE:
    check_reduce(s, c->diag);
    break;
  case IR_STMT_FOR:
    if (s->u.for_.kind == IR_FOR_PARALLEL) {
      LoopCheck lc = {s, 0, c->diag, false};
      if (!ir_expr_is_int_const(s->u.for_.extent, &lc.extent)) {
        diag_error(c->diag, s->loc, "parallel loop extent of '%s' must be a compile-time constant",
                   s->u.for_.var->name);
        break;
      }
      ir_visit_stmts(s->u.for_.body, scan_loop_body, &lc);
    }
    break;
  default:
    break;
  }
}

/* Integer division by a constant zero (or ceildiv by a constant <= 0) would
 * be undefined at run time: report it at the operator. */
static void check_division(const IrExpr *e, void *ctx) {
  Diag *diag = ctx;
  int64_t v;
  if (e->kind == IR_EXPR_BINARY && (e->u.op.op == IR_OP_DIV || e->u.op.op == IR_OP_MOD) &&
      !dtype_is_float(e->dtype) && ir_expr_is_int_const(e->u.op.b, &v) && v == 0)
    diag_error(diag, e->loc, "integer division by zero");
  if (e->kind == IR_EXPR_CALL && e->u.call.fn == IR_INTRINSIC_CEILDIV && ir_expr_is_int_const(e->u.call.args[1], &v) &&
      v <= 0)
    diag_error(diag, e->loc, "ceildiv by %lld (the divisor must be positive)", (long long)v);
}

static IrExpr *division_visitor(IrModule *m, IrExpr *e, void *ctx) {
  ir_expr_visit(e, check_division, ctx);
  return e;
}

bool pass_check_shapes(IrModule *m, const PassOptions *opts, Diag *diag) {
  int errors = diag_error_count(diag);
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    int64_t threads;
    if (!ir_expr_is_int_const(k->threads, &threads))
      diag_error(diag, k->loc, "kernel '%s': threads must be a compile-time constant", k->name);
    else if (threads < 1 || threads > 1024)
      diag_error(diag, k->loc, "kernel '%s': threads is %lld; it must be between 1 and 1024", k->name,
                 (long long)threads);
    Checker c = {diag};
    ir_visit_stmts(k->body, check_stmt, &c);
    pass_rewrite_kernel(m, k, division_visitor, diag);
  }
  return diag_error_count(diag) == errors;
}
