/* lower_tile_ops.c - pass "lower-tile-ops" (C backend): tile ops -> loops.
 *
 * Needs: check-shapes (constant, agreeing tile shapes) and guard-bounds
 * (guard flags on global slices).
 * Guarantees: no COPY, FILL, GEMM, REDUCE or ATOMIC_ADD remains. Each becomes a nest of
 * parallel loops over its tile (serial loops for the reduced/contracted
 * dimension) around scalar loads and stores:
 *   copy   dst[d] = src[s]        (zero when a guarded source index is out of
 *                                  range; skipped when a guarded destination is)
 *   fill   dst[d] = value
 *   atomic_add dst[d] = dst[d] + src[s]   (skipped where a guarded index of
 *                                  either side is out of range)
 *   gemm   C[i, j] = C[i, j] + A[i, k] * B[k, j]   (k serial, in C's dtype)
 *   reduce dst[i] = op(dst[i], src[i, r])           (r serial; identity first
 *                                                    when clear)
 * Arithmetic on f16/bf16 happens in f32, as everywhere in the IR. Generated
 * loop variables are named tc_<n> (sema reserves the tc_ prefix). */
#include <math.h>

#include "passes.h"

typedef struct Lower {
  IrModule *m;
  int next_var;
} Lower;

static IrVar *fresh_var(Lower *l, SrcLoc loc) {
  return ir_var_new(l->m, arena_printf(l->m->arena, "tc_%d", l->next_var++), IR_VAR_LOOP, DTYPE_I64, loc);
}

static DType compute_type(DType t) {
  if (t == DTYPE_F16 || t == DTYPE_BF16) return DTYPE_F32;
  if (t == DTYPE_I32 || t == DTYPE_BOOL) return DTYPE_I64;
  return t;
}

static IrExpr *convert(IrModule *m, IrExpr *e, DType t) {
  return e->dtype == t ? e : ir_cast(m, t, e, e->loc);
}

/* Loop dimensions of a tile: its non-index dimensions with extent > 1. */
typedef struct TileLoops {
  int n;
  int64_t extent[IR_MAX_RANK];
  IrVar *var[IR_MAX_RANK];
} TileLoops;

static void tile_loops(Lower *l, const IrRegion *r, SrcLoc loc, TileLoops *out) {
  out->n = 0;
  for (int d = 0; d < r->rank; d++) {
    int64_t e = 1;
    if (r->is_index[d] || !ir_expr_is_int_const(r->extent[d], &e) || e == 1) continue;
    out->extent[out->n] = e;
    out->var[out->n++] = fresh_var(l, loc);
  }
}

/* Indices of region r when its loop dimensions take the given variables in
 * order (unit and index dimensions stay at their start). */
static void region_indices(IrModule *m, const IrRegion *r, IrVar *const *vars, IrExpr **idx) {
  int v = 0;
  for (int d = 0; d < r->rank; d++) {
    int64_t e = 1;
    bool loops = !r->is_index[d] && ir_expr_is_int_const(r->extent[d], &e) && e != 1;
    idx[d] = loops ? ir_binary(m, IR_OP_ADD, ir_expr_clone(m, r->start[d]), ir_var_ref(m, vars[v++], r->loc), r->loc)
                   : ir_expr_clone(m, r->start[d]);
  }
}

/* AND of 0 <= idx < shape over the guarded dimensions; NULL when none. */
static IrExpr *guard_cond(IrModule *m, const IrRegion *r, IrExpr *const *idx) {
  IrExpr *cond = NULL;
  for (int d = 0; d < r->rank; d++) {
    if (!r->guard[d]) continue;
    IrExpr *lo = ir_binary(m, IR_OP_GE, ir_expr_clone(m, idx[d]), ir_int(m, 0, r->loc), r->loc);
    IrExpr *hi = ir_binary(m, IR_OP_LT, ir_expr_clone(m, idx[d]), ir_expr_clone(m, r->buf->shape[d]), r->loc);
    IrExpr *both = ir_binary(m, IR_OP_AND, lo, hi, r->loc);
    cond = cond ? ir_binary(m, IR_OP_AND, cond, both, r->loc) : both;
  }
  return cond;
}

static IrStmt *wrap_loops(Lower *l, const TileLoops *t, int from, IrStmt *inner, IrForKind kind, SrcLoc loc) {
  for (int i = t->n - 1; i >= from; i--) {
    IrStmt *body = inner->kind == IR_STMT_SEQ ? inner : NULL;
    if (!body) {
      body = ir_seq_new(l->m, loc);
      ir_seq_push(l->m, body, inner);
    }
    inner = ir_for_new(l->m, kind, t->var[i], ir_int(l->m, t->extent[i], loc), body, loc);
  }
  return inner;
}

static IrStmt *seq_of(IrModule *m, IrStmt *s, SrcLoc loc) {
  IrStmt *seq = ir_seq_new(m, loc);
  ir_seq_push(m, seq, s);
  return seq;
}

/* dst[d] = dst[d] + src[s], skipped where a guarded index of either side is
 * out of range. The C backend runs one block at a time, so a plain
 * read-modify-write is the atomic add. */
static IrStmt *lower_atomic_add(Lower *l, IrStmt *s) {
  IrModule *m = l->m;
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  TileLoops t;
  tile_loops(l, dst, s->loc, &t);
  IrExpr *si[IR_MAX_RANK], *di[IR_MAX_RANK], *old[IR_MAX_RANK];
  region_indices(m, src, t.var, si);
  region_indices(m, dst, t.var, di);
  for (int d = 0; d < dst->rank; d++) old[d] = ir_expr_clone(m, di[d]);
  DType dt = dst->buf->dtype;
  IrExpr *sum = ir_binary(m, IR_OP_ADD, ir_load(m, dst->buf, old, s->loc),
                          convert(m, ir_load(m, src->buf, si, s->loc), dt), s->loc);
  IrStmt *body = ir_store_new(m, dst->buf, di, sum, s->loc);
  IrExpr *ok = guard_cond(m, dst, di), *src_ok = guard_cond(m, src, si);
  if (src_ok) ok = ok ? ir_binary(m, IR_OP_AND, ok, src_ok, s->loc) : src_ok;
  if (ok) body = ir_if_new(m, ok, seq_of(m, body, s->loc), NULL, s->loc);
  return wrap_loops(l, &t, 0, body, IR_FOR_PARALLEL, s->loc);
}

static IrStmt *lower_copy(Lower *l, IrStmt *s) {
  IrModule *m = l->m;
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  TileLoops t;
  tile_loops(l, dst, s->loc, &t);
  IrExpr *si[IR_MAX_RANK], *di[IR_MAX_RANK];
  region_indices(m, src, t.var, si);
  region_indices(m, dst, t.var, di);
  DType dt = dst->buf->dtype;
  IrExpr *value = convert(m, ir_load(m, src->buf, si, s->loc), dt);
  IrStmt *body = ir_store_new(m, dst->buf, di, value, s->loc);
  IrExpr *src_ok = guard_cond(m, src, si);
  if (src_ok) {
    IrExpr *zero = dtype_is_float(dt) ? ir_cast(m, dt, ir_float(m, 0.0, DTYPE_F32, s->loc), s->loc)
                                      : convert(m, ir_int(m, 0, s->loc), dt);
    IrStmt *fill_zero = ir_store_new(m, dst->buf, di, zero, s->loc);
    body = ir_if_new(m, src_ok, seq_of(m, body, s->loc), seq_of(m, fill_zero, s->loc), s->loc);
  }
  IrExpr *dst_ok = guard_cond(m, dst, di);
  if (dst_ok) body = ir_if_new(m, dst_ok, seq_of(m, body, s->loc), NULL, s->loc);
  return wrap_loops(l, &t, 0, body, IR_FOR_PARALLEL, s->loc);
}

static IrStmt *lower_fill(Lower *l, IrStmt *s) {
  IrModule *m = l->m;
  const IrRegion *dst = &s->u.fill.dst;
  TileLoops t;
  tile_loops(l, dst, s->loc, &t);
  IrExpr *di[IR_MAX_RANK];
  region_indices(m, dst, t.var, di);
  IrStmt *body = ir_store_new(m, dst->buf, di, convert(m, ir_expr_clone(m, s->u.fill.value), dst->buf->dtype), s->loc);
  IrExpr *ok = guard_cond(m, dst, di);
  if (ok) body = ir_if_new(m, ok, seq_of(m, body, s->loc), NULL, s->loc);
  return wrap_loops(l, &t, 0, body, IR_FOR_PARALLEL, s->loc);
}

/* Index list for a 2-D tile operand whose tile coordinates are (r, c). */
static void tile2_indices(IrModule *m, const IrRegion *reg, IrExpr *r, IrExpr *c, IrExpr **idx) {
  IrExpr *coords[2] = {r, c};
  int v = 0;
  for (int d = 0; d < reg->rank; d++) {
    if (reg->is_index[d] || v >= 2) {
      idx[d] = ir_expr_clone(m, reg->start[d]);
      continue;
    }
    idx[d] = ir_binary(m, IR_OP_ADD, ir_expr_clone(m, reg->start[d]), coords[v++], reg->loc);
  }
}

static IrExpr *guarded_load(IrModule *m, const IrRegion *reg, IrExpr **idx, DType t, SrcLoc loc) {
  IrExpr *v = convert(m, ir_load(m, reg->buf, idx, loc), t);
  IrExpr *ok = guard_cond(m, reg, idx);
  if (!ok) return v;
  IrExpr *zero = dtype_is_float(t) ? ir_float(m, 0.0, t, loc) : ir_int(m, 0, loc);
  return ir_select(m, ok, v, zero, loc);
}

static int64_t tile_dim(const IrRegion *r, int which) {
  int v = 0;
  for (int d = 0; d < r->rank; d++) {
    if (r->is_index[d]) continue;
    int64_t e = 0;
    if (v++ == which) return ir_expr_is_int_const(r->extent[d], &e) ? e : 0;
  }
  return 0;
}

static IrStmt *lower_gemm(Lower *l, IrStmt *s) {
  IrModule *m = l->m;
  const IrRegion *a = &s->u.gemm.a, *b = &s->u.gemm.b, *c = &s->u.gemm.c;
  bool ta = s->u.gemm.trans_a, tb = s->u.gemm.trans_b;
  int64_t M = tile_dim(c, 0), N = tile_dim(c, 1), K = tile_dim(a, ta ? 0 : 1);
  IrVar *i = fresh_var(l, s->loc), *j = fresh_var(l, s->loc), *k = fresh_var(l, s->loc);
  DType acc = compute_type(c->buf->dtype);
  IrExpr *ai[IR_MAX_RANK], *bi[IR_MAX_RANK], *ci[IR_MAX_RANK], *cj[IR_MAX_RANK];
  IrExpr *vi = ir_var_ref(m, i, s->loc), *vj = ir_var_ref(m, j, s->loc), *vk = ir_var_ref(m, k, s->loc);
  tile2_indices(m, a, ta ? vk : vi, ta ? ir_var_ref(m, i, s->loc) : ir_var_ref(m, k, s->loc), ai);
  tile2_indices(m, b, tb ? vj : ir_var_ref(m, k, s->loc), tb ? ir_var_ref(m, k, s->loc) : ir_var_ref(m, j, s->loc), bi);
  tile2_indices(m, c, ir_var_ref(m, i, s->loc), ir_var_ref(m, j, s->loc), ci);
  tile2_indices(m, c, ir_var_ref(m, i, s->loc), ir_var_ref(m, j, s->loc), cj);
  IrExpr *prod = ir_binary(m, IR_OP_MUL, guarded_load(m, a, ai, acc, s->loc), guarded_load(m, b, bi, acc, s->loc), s->loc);
  IrExpr *sum = ir_binary(m, IR_OP_ADD, convert(m, ir_load(m, c->buf, cj, s->loc), acc), prod, s->loc);
  IrStmt *st = ir_store_new(m, c->buf, ci, convert(m, sum, c->buf->dtype), s->loc);
  IrStmt *kl = ir_for_new(m, IR_FOR_SERIAL, k, ir_int(m, K, s->loc), seq_of(m, st, s->loc), s->loc);
  IrStmt *jl = ir_for_new(m, IR_FOR_PARALLEL, j, ir_int(m, N, s->loc), seq_of(m, kl, s->loc), s->loc);
  return ir_for_new(m, IR_FOR_PARALLEL, i, ir_int(m, M, s->loc), seq_of(m, jl, s->loc), s->loc);
}

static int64_t const_dim(const IrBuffer *b, int d) {
  int64_t v = 1;
  ir_expr_is_int_const(b->shape[d], &v);
  return v;
}

static IrStmt *lower_reduce(Lower *l, IrStmt *s) {
  IrModule *m = l->m;
  IrBuffer *src = s->u.reduce.src, *dst = s->u.reduce.dst;
  int dim = s->u.reduce.dim;
  SrcLoc loc = s->loc;
  DType t = compute_type(dst->dtype);
  /* One parallel loop per destination dimension (none for a rank-1 source,
   * whose result lands in dst[0]). */
  TileLoops outer = {0};
  if (src->rank > 1)
    for (int d = 0; d < dst->rank; d++) {
      outer.extent[outer.n] = const_dim(dst, d);
      outer.var[outer.n++] = fresh_var(l, loc);
    }
  IrVar *r = fresh_var(l, loc);
  IrExpr *di[IR_MAX_RANK], *di2[IR_MAX_RANK], *di3[IR_MAX_RANK], *si[IR_MAX_RANK];
  for (int d = 0; d < dst->rank; d++) {
    di[d] = outer.n ? ir_var_ref(m, outer.var[d], loc) : ir_int(m, 0, loc);
    di2[d] = ir_expr_clone(m, di[d]);
    di3[d] = ir_expr_clone(m, di[d]);
  }
  for (int d = 0, o = 0; d < src->rank; d++)
    si[d] = d == dim ? ir_var_ref(m, r, loc) : ir_var_ref(m, outer.var[o++], loc);
  IrExpr *acc = convert(m, ir_load(m, dst, di, loc), t);
  IrExpr *x = convert(m, ir_load(m, src, si, loc), t);
  IrExpr *combined;
  switch (s->u.reduce.kind) {
  case IR_REDUCE_SUM: combined = ir_binary(m, IR_OP_ADD, acc, x, loc); break;
  case IR_REDUCE_MAX: combined = ir_call(m, IR_INTRINSIC_MAX, acc, x, loc); break;
  default: combined = ir_call(m, IR_INTRINSIC_MIN, acc, x, loc); break;
  }
  IrStmt *step = ir_store_new(m, dst, di2, convert(m, combined, dst->dtype), loc);
  IrStmt *inner = ir_for_new(m, IR_FOR_SERIAL, r, ir_int(m, const_dim(src, dim), loc), seq_of(m, step, loc), loc);
  IrStmt *body = ir_seq_new(m, loc);
  if (s->u.reduce.clear) {
    IrExpr *identity;
    bool is_float = dtype_is_float(t);
    switch (s->u.reduce.kind) {
    case IR_REDUCE_SUM: identity = is_float ? ir_float(m, 0.0, t, loc) : ir_int(m, 0, loc); break;
    case IR_REDUCE_MAX: identity = is_float ? ir_float(m, -INFINITY, t, loc) : ir_int(m, INT64_MIN, loc); break;
    default: identity = is_float ? ir_float(m, INFINITY, t, loc) : ir_int(m, INT64_MAX, loc); break;
    }
    ir_seq_push(m, body, ir_store_new(m, dst, di3, convert(m, identity, dst->dtype), loc));
  }
  ir_seq_push(m, body, inner);
  return wrap_loops(l, &outer, 0, body, IR_FOR_PARALLEL, loc);
}

static IrStmt *lower_stmt(Lower *l, IrStmt *s);

static void lower_seq(Lower *l, IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++) seq->u.seq.items[i] = lower_stmt(l, seq->u.seq.items[i]);
}

static IrStmt *lower_stmt(Lower *l, IrStmt *s) {
  if (!s) return s;
  switch (s->kind) {
  case IR_STMT_SEQ:
    lower_seq(l, s);
    return s;
  case IR_STMT_FOR:
    lower_seq(l, s->u.for_.body);
    return s;
  case IR_STMT_IF:
    lower_seq(l, s->u.if_.then_);
    if (s->u.if_.else_) lower_seq(l, s->u.if_.else_);
    return s;
  case IR_STMT_COPY:
    return lower_copy(l, s);
  case IR_STMT_ATOMIC_ADD:
    return lower_atomic_add(l, s);
  case IR_STMT_FILL:
    return lower_fill(l, s);
  case IR_STMT_GEMM:
    return lower_gemm(l, s);
  case IR_STMT_REDUCE:
    return lower_reduce(l, s);
  default:
    return s;
  }
}

bool pass_lower_tile_ops(IrModule *m, const PassOptions *opts, Diag *diag) {
  Lower l = {m, 0};
  for (int i = 0; i < m->nkernels; i++) lower_seq(&l, m->kernels[i]->body);
  return true;
}
