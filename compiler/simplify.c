/* simplify.c - constant folding and linear normalization (see simplify.h).
 *
 * Integer sums and products by constants are flattened into
 * c0 + c1*t1 + c2*t2 + ... where each t is an "atom" (a variable or any
 * non-linear subexpression); equal atoms merge, zero coefficients vanish,
 * and the sum is rebuilt in order of first appearance. Float arithmetic is
 * folded only when every operand is a constant (x * 0.0 is not 0 for inf). */
#include "simplify.h"

#include <math.h>
#include <string.h>

enum { LINEAR_MAX_TERMS = 16 };

/* i64 arithmetic that reports overflow instead of wrapping (undefined in C):
 * an overflowing constant expression is left unfolded. */
static bool add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static bool sub_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_sub_overflow(a, b, r); }
static bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
/* a / b and a % b are defined unless b == 0 or INT64_MIN / -1. */
static bool div_ok(int64_t a, int64_t b) { return b != 0 && !(a == INT64_MIN && b == -1); }
/* ceil(a / b) for b > 0, without forming a + b - 1. */
static int64_t ceildiv_pos(int64_t a, int64_t b) { return a / b + (a % b > 0); }

typedef struct Linear {
  int64_t c;
  int n;
  IrExpr *atom[LINEAR_MAX_TERMS];
  int64_t coef[LINEAR_MAX_TERMS];
  bool overflow;
} Linear;

static bool is_int(const IrExpr *e) { return dtype_is_int(e->dtype); }

static void lin_add_term(Linear *l, IrExpr *atom, int64_t coef) {
  for (int i = 0; i < l->n; i++)
    if (ir_expr_equal(l->atom[i], atom)) {
      if (!add_ok(l->coef[i], coef, &l->coef[i])) l->overflow = true;
      return;
    }
  if (l->n == LINEAR_MAX_TERMS) {
    l->overflow = true;
    return;
  }
  l->atom[l->n] = atom;
  l->coef[l->n++] = coef;
}

static void lin_scale(Linear *l, int64_t k) {
  if (!mul_ok(l->c, k, &l->c)) l->overflow = true;
  for (int i = 0; i < l->n; i++)
    if (!mul_ok(l->coef[i], k, &l->coef[i])) l->overflow = true;
}

static void lin_merge(Linear *dst, const Linear *src, int64_t k) {
  int64_t t;
  if (!mul_ok(src->c, k, &t) || !add_ok(dst->c, t, &dst->c)) dst->overflow = true;
  for (int i = 0; i < src->n; i++) {
    if (!mul_ok(src->coef[i], k, &t)) dst->overflow = true;
    else lin_add_term(dst, src->atom[i], t);
  }
  dst->overflow |= src->overflow;
}

/* e's children are already simplified. */
static void to_linear(IrExpr *e, Linear *out) {
  memset(out, 0, sizeof *out);
  int64_t v;
  if (ir_expr_is_int_const(e, &v) && is_int(e)) {
    out->c = v;
    return;
  }
  if (e->kind == IR_EXPR_BINARY && is_int(e)) {
    IrOp op = e->u.op.op;
    if (op == IR_OP_ADD || op == IR_OP_SUB) {
      Linear b;
      to_linear(e->u.op.a, out);
      to_linear(e->u.op.b, &b);
      lin_merge(out, &b, op == IR_OP_ADD ? 1 : -1);
      return;
    }
    if (op == IR_OP_MUL) {
      Linear a, b;
      to_linear(e->u.op.a, &a);
      to_linear(e->u.op.b, &b);
      if (a.n == 0 && !a.overflow) {
        *out = b;
        lin_scale(out, a.c);
        return;
      }
      if (b.n == 0 && !b.overflow) {
        *out = a;
        lin_scale(out, b.c);
        return;
      }
    }
  }
  if (e->kind == IR_EXPR_UNARY && e->u.op.op == IR_OP_NEG && is_int(e)) {
    to_linear(e->u.op.a, out);
    lin_scale(out, -1);
    return;
  }
  lin_add_term(out, e, 1);
}

/* from_linear negates coefficients: INT64_MIN has no negation. */
static bool linear_usable(const Linear *l) {
  if (l->overflow || l->c == INT64_MIN) return false;
  for (int i = 0; i < l->n; i++)
    if (l->coef[i] == INT64_MIN) return false;
  return true;
}

static IrExpr *from_linear(IrModule *m, const Linear *l, SrcLoc loc) {
  IrExpr *sum = NULL;
  /* Positive terms first so the result reads `bx * 64 + i - 1`, not `-1 + ...`. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < l->n; i++) {
      int64_t c = l->coef[i];
      if (c == 0 || (pass == 0) != (c > 0)) continue;
      int64_t mag = c > 0 ? c : -c;
      IrExpr *t = mag == 1 ? l->atom[i] : ir_binary(m, IR_OP_MUL, l->atom[i], ir_int(m, mag, loc), loc);
      if (!sum) sum = c > 0 ? t : ir_unary(m, IR_OP_NEG, t, loc);
      else sum = ir_binary(m, c > 0 ? IR_OP_ADD : IR_OP_SUB, sum, t, loc);
    }
  if (!sum) return ir_int(m, l->c, loc);
  if (l->c > 0) sum = ir_binary(m, IR_OP_ADD, sum, ir_int(m, l->c, loc), loc);
  if (l->c < 0) sum = ir_binary(m, IR_OP_SUB, sum, ir_int(m, -l->c, loc), loc);
  return sum;
}

static bool float_const(const IrExpr *e, double *out) {
  if (e->kind == IR_EXPR_FLOAT) return *out = e->u.float_value, true;
  return false;
}


static IrExpr *fold_int_binary(IrModule *m, IrExpr *e, int64_t a, int64_t b) {
  SrcLoc loc = e->loc;
  switch (e->u.op.op) {
  int64_t r;
  case IR_OP_ADD: return add_ok(a, b, &r) ? ir_int(m, r, loc) : e;
  case IR_OP_SUB: return sub_ok(a, b, &r) ? ir_int(m, r, loc) : e;
  case IR_OP_MUL: return mul_ok(a, b, &r) ? ir_int(m, r, loc) : e;
  case IR_OP_DIV: return div_ok(a, b) ? ir_int(m, a / b, loc) : e;
  case IR_OP_MOD: return div_ok(a, b) ? ir_int(m, a % b, loc) : e;
  case IR_OP_LT: return ir_bool(m, a < b, loc);
  case IR_OP_LE: return ir_bool(m, a <= b, loc);
  case IR_OP_GT: return ir_bool(m, a > b, loc);
  case IR_OP_GE: return ir_bool(m, a >= b, loc);
  case IR_OP_EQ: return ir_bool(m, a == b, loc);
  case IR_OP_NE: return ir_bool(m, a != b, loc);
  case IR_OP_AND: return ir_bool(m, a && b, loc);
  case IR_OP_OR: return ir_bool(m, a || b, loc);
  default: return ir_op_is_bitop(e->u.op.op) ? ir_int(m, ir_int_bitop(e->u.op.op, a, b), loc) : e;
  }
}

static IrExpr *fold_float_binary(IrModule *m, IrExpr *e, double a, double b) {
  SrcLoc loc = e->loc;
  DType t = e->dtype;
  switch (e->u.op.op) {
  case IR_OP_ADD: return ir_float(m, a + b, t, loc);
  case IR_OP_SUB: return ir_float(m, a - b, t, loc);
  case IR_OP_MUL: return ir_float(m, a * b, t, loc);
  case IR_OP_DIV: return ir_float(m, a / b, t, loc);
  case IR_OP_LT: return ir_bool(m, a < b, loc);
  case IR_OP_LE: return ir_bool(m, a <= b, loc);
  case IR_OP_GT: return ir_bool(m, a > b, loc);
  case IR_OP_GE: return ir_bool(m, a >= b, loc);
  case IR_OP_EQ: return ir_bool(m, a == b, loc);
  case IR_OP_NE: return ir_bool(m, a != b, loc);
  default: return e;
  }
}

static IrExpr *simplify_binary(IrModule *m, IrExpr *e) {
  IrExpr *a = e->u.op.a, *b = e->u.op.b;
  int64_t ia, ib;
  double fa, fb;
  bool ca = ir_expr_is_int_const(a, &ia), cb = ir_expr_is_int_const(b, &ib);
  if (ca && cb) return fold_int_binary(m, e, ia, ib);
  if (float_const(a, &fa) && float_const(b, &fb)) return fold_float_binary(m, e, fa, fb);
  IrOp op = e->u.op.op;
  if (op == IR_OP_AND || op == IR_OP_OR) {
    bool is_and = op == IR_OP_AND;
    if (ca) return (ia != 0) == is_and ? b : ir_bool(m, !is_and, e->loc);
    if (cb) return (ib != 0) == is_and ? a : ir_bool(m, !is_and, e->loc);
    return e;
  }
  if (is_int(e) && (op == IR_OP_ADD || op == IR_OP_SUB || op == IR_OP_MUL)) {
    Linear l;
    to_linear(e, &l);
    if (linear_usable(&l)) return from_linear(m, &l, e->loc);
  }
  if (is_int(e) && cb && ib == 1 && (op == IR_OP_DIV)) return a;
  /* Integer comparisons: move everything to one side when that folds. */
  if (is_int(a) && is_int(b) && op >= IR_OP_LT && op <= IR_OP_NE) {
    Linear l, r;
    to_linear(a, &l);
    to_linear(b, &r);
    lin_merge(&l, &r, -1);
    bool all_zero = true;
    for (int i = 0; i < l.n; i++) all_zero &= l.coef[i] == 0;
    if (!l.overflow && all_zero) return fold_int_binary(m, e, l.c, 0);
  }
  return e;
}

static IrExpr *simplify_call(IrModule *m, IrExpr *e) {
  int64_t a, b;
  IrIntrinsic fn = e->u.call.fn;
  bool ints = e->u.call.nargs == 2 ? ir_expr_is_int_const(e->u.call.args[0], &a) &&
                                         ir_expr_is_int_const(e->u.call.args[1], &b)
                                   : ir_expr_is_int_const(e->u.call.args[0], &a);
  if (ints && is_int(e)) {
    switch (fn) {
    case IR_INTRINSIC_CEILDIV: return b > 0 && a >= 0 ? ir_int(m, ceildiv_pos(a, b), e->loc) : e;
    case IR_INTRINSIC_MAX: return ir_int(m, a > b ? a : b, e->loc);
    case IR_INTRINSIC_MIN: return ir_int(m, a < b ? a : b, e->loc);
    case IR_INTRINSIC_ABS: return a == INT64_MIN ? e : ir_int(m, a < 0 ? -a : a, e->loc);
    default: return e;
    }
  }
  double arg[IR_MAX_CALL_ARGS] = {0};
  for (int i = 0; i < e->u.call.nargs; i++)
    if (!float_const(e->u.call.args[i], &arg[i])) return e;
  double x = arg[0], y = arg[1], z = arg[2], v = 0.0;
  bool folds = true;
  /* The fold column of IR_INTRINSICS, in x, y, z. */
#define NO_FOLD (folds = false, 0.0)
  switch (fn) {
#define X(name, spelling, arity, result, fold, c_int, c_f32, c_f64, cuda_int, cuda_f32, cuda_f64) \
  case IR_INTRINSIC_##name: v = (fold); break;
    IR_INTRINSICS(X)
#undef X
  default: folds = false; break;
  }
#undef NO_FOLD
  return folds ? ir_float(m, v, e->dtype, e->loc) : e;
}

static IrExpr *simplify_cast(IrModule *m, IrExpr *e) {
  IrExpr *src = e->u.cast_src;
  int64_t i;
  double f;
  if (src->dtype == e->dtype) return src;
  bool to_float = dtype_is_float(e->dtype);
  if (ir_expr_is_int_const(src, &i)) {
    if (to_float) return ir_float(m, (double)i, e->dtype, e->loc);
    if (e->dtype == DTYPE_BOOL) return ir_bool(m, i != 0, e->loc);
    IrExpr *r = ir_int(m, dtype_wrap_int(e->dtype, i), e->loc);
    r->dtype = e->dtype;
    return r;
  }
  /* f32 constants into f16/bf16 stay casts: rounding is the backend's job. */
  if (float_const(src, &f) && (e->dtype == DTYPE_F32 || e->dtype == DTYPE_F64) && !dtype_is_low_float(src->dtype))
    return ir_float(m, e->dtype == DTYPE_F32 ? (double)(float)f : f, e->dtype, e->loc);
  return e;
}

IrExpr *ir_simplify(IrModule *m, IrExpr *e) {
  if (!e) return e;
  switch (e->kind) {
  case IR_EXPR_INT:
  case IR_EXPR_FLOAT:
  case IR_EXPR_VAR:
    return e;
  case IR_EXPR_UNARY: {
    IrExpr *a = ir_simplify(m, e->u.op.a);
    int64_t v;
    double f;
    if (e->u.op.op == IR_OP_NEG) {
      if (ir_expr_is_int_const(a, &v) && is_int(a) && v != INT64_MIN) return ir_int(m, -v, e->loc);
      if (float_const(a, &f)) return ir_float(m, -f, a->dtype, e->loc);
    } else if (e->u.op.op == IR_OP_BNOT) {
      if (ir_expr_is_int_const(a, &v) && is_int(a)) return ir_int(m, ~v, e->loc);
    } else if (ir_expr_is_int_const(a, &v)) {
      return ir_bool(m, !v, e->loc);
    }
    return a == e->u.op.a ? e : ir_unary(m, e->u.op.op, a, e->loc);
  }
  case IR_EXPR_BINARY: {
    IrExpr *a = ir_simplify(m, e->u.op.a), *b = ir_simplify(m, e->u.op.b);
    IrExpr *n = (a == e->u.op.a && b == e->u.op.b) ? e : ir_binary(m, e->u.op.op, a, b, e->loc);
    n->tile_split = e->tile_split; /* the same values: the same range */
    return simplify_binary(m, n);
  }
  case IR_EXPR_SELECT: {
    IrExpr *c = ir_simplify(m, e->u.select.cond);
    IrExpr *t = ir_simplify(m, e->u.select.then_), *f = ir_simplify(m, e->u.select.else_);
    int64_t v;
    if (ir_expr_is_int_const(c, &v)) return v ? t : f;
    if (c == e->u.select.cond && t == e->u.select.then_ && f == e->u.select.else_) return e;
    return ir_select(m, c, t, f, e->loc);
  }
  case IR_EXPR_CALL: {
    IrExpr *args[IR_MAX_CALL_ARGS] = {NULL};
    bool same = true;
    for (int i = 0; i < e->u.call.nargs; i++) {
      args[i] = ir_simplify(m, e->u.call.args[i]);
      same &= args[i] == e->u.call.args[i];
    }
    return simplify_call(m, same ? e : ir_call_n(m, e->u.call.fn, args, e->loc));
  }
  case IR_EXPR_LOAD: {
    IrExpr *idx[IR_MAX_RANK];
    bool changed = false;
    for (int i = 0; i < e->u.load.nidx; i++) {
      idx[i] = ir_simplify(m, e->u.load.idx[i]);
      changed |= idx[i] != e->u.load.idx[i];
    }
    return changed ? ir_load(m, e->u.load.buf, idx, e->loc) : e;
  }
  case IR_EXPR_CAST: {
    IrExpr *src = ir_simplify(m, e->u.cast_src);
    IrExpr *n = src == e->u.cast_src ? e : ir_cast(m, e->dtype, src, e->loc);
    return simplify_cast(m, n);
  }
  case IR_EXPR_COUNT:
    break;
  }
  TILEC_UNREACHABLE("bad expression kind");
}

bool ir_eval_int(const IrExpr *e, IrVarValueFn value_of, void *ctx, int64_t *out) {
  int64_t a, b;
  switch (e->kind) {
  case IR_EXPR_INT:
    *out = e->u.int_value;
    return true;
  case IR_EXPR_VAR:
    return value_of && value_of(e->u.var, ctx, out);
  case IR_EXPR_UNARY:
    if (!ir_eval_int(e->u.op.a, value_of, ctx, &a)) return false;
    if (e->u.op.op == IR_OP_NEG && a == INT64_MIN) return false;
    *out = e->u.op.op == IR_OP_NEG ? -a : e->u.op.op == IR_OP_BNOT ? ~a : !a;
    return true;
  case IR_EXPR_BINARY:
    if (!ir_eval_int(e->u.op.a, value_of, ctx, &a) || !ir_eval_int(e->u.op.b, value_of, ctx, &b)) return false;
    switch (e->u.op.op) {
    case IR_OP_ADD: return add_ok(a, b, out);
    case IR_OP_SUB: return sub_ok(a, b, out);
    case IR_OP_MUL: return mul_ok(a, b, out);
    case IR_OP_DIV: if (!div_ok(a, b)) return false; *out = a / b; return true;
    case IR_OP_MOD: if (!div_ok(a, b)) return false; *out = a % b; return true;
    case IR_OP_LT: *out = a < b; return true;
    case IR_OP_LE: *out = a <= b; return true;
    case IR_OP_GT: *out = a > b; return true;
    case IR_OP_GE: *out = a >= b; return true;
    case IR_OP_EQ: *out = a == b; return true;
    case IR_OP_NE: *out = a != b; return true;
    case IR_OP_AND: *out = a && b; return true;
    case IR_OP_OR: *out = a || b; return true;
    default:
      if (!ir_op_is_bitop(e->u.op.op)) return false;
      *out = ir_int_bitop(e->u.op.op, a, b);
      return true;
    }
  case IR_EXPR_SELECT:
    if (!ir_eval_int(e->u.select.cond, value_of, ctx, &a)) return false;
    return ir_eval_int(a ? e->u.select.then_ : e->u.select.else_, value_of, ctx, out);
  case IR_EXPR_CALL:
    if (!ir_eval_int(e->u.call.args[0], value_of, ctx, &a)) return false;
    if (e->u.call.nargs > 1 && !ir_eval_int(e->u.call.args[1], value_of, ctx, &b)) return false;
    switch (e->u.call.fn) {
    case IR_INTRINSIC_CEILDIV: if (b <= 0) return false; *out = a >= 0 ? ceildiv_pos(a, b) : a / b; return true;
    case IR_INTRINSIC_MAX: *out = a > b ? a : b; return true;
    case IR_INTRINSIC_MIN: *out = a < b ? a : b; return true;
    case IR_INTRINSIC_ABS: if (a == INT64_MIN) return false; *out = a < 0 ? -a : a; return true;
    default: return false;
    }
  case IR_EXPR_CAST:
    if (dtype_is_float(e->dtype) || dtype_is_float(e->u.cast_src->dtype)) return false;
    if (!ir_eval_int(e->u.cast_src, value_of, ctx, out)) return false;
    *out = dtype_wrap_int(e->dtype, *out);
    return true;
  default:
    return false;
  }
}

/* Interval arithmetic; enough for index expressions (sums, products by
 * constants, ceildiv/min/max of bounded values). */
bool ir_int_range(const IrExpr *e, IrVarRangeFn range_of, void *ctx, int64_t *lo, int64_t *hi) {
  int64_t alo, ahi, blo, bhi;
  switch (e->kind) {
  case IR_EXPR_INT:
    *lo = *hi = e->u.int_value;
    return true;
  case IR_EXPR_VAR:
    return range_of && range_of(e->u.var, ctx, lo, hi);
  case IR_EXPR_UNARY:
    if (e->u.op.op != IR_OP_NEG || !ir_int_range(e->u.op.a, range_of, ctx, &alo, &ahi)) return false;
    if (alo == INT64_MIN || ahi == INT64_MIN) return false;
    *lo = -ahi, *hi = -alo;
    return true;
  case IR_EXPR_BINARY:
    if (!ir_int_range(e->u.op.a, range_of, ctx, &alo, &ahi) ||
        !ir_int_range(e->u.op.b, range_of, ctx, &blo, &bhi))
      return false;
    switch (e->u.op.op) {
    case IR_OP_ADD: return add_ok(alo, blo, lo) && add_ok(ahi, bhi, hi);
    case IR_OP_SUB: return sub_ok(alo, bhi, lo) && sub_ok(ahi, blo, hi);
    case IR_OP_MUL: {
      int64_t c[4];
      if (!mul_ok(alo, blo, &c[0]) || !mul_ok(alo, bhi, &c[1]) || !mul_ok(ahi, blo, &c[2]) || !mul_ok(ahi, bhi, &c[3]))
        return false;
      *lo = *hi = c[0];
      for (int i = 1; i < 4; i++) *lo = c[i] < *lo ? c[i] : *lo, *hi = c[i] > *hi ? c[i] : *hi;
      return true;
    }
    case IR_OP_DIV:
      if (blo <= 0 || alo < 0) return false;
      *lo = alo / bhi, *hi = ahi / blo;
      return true;
    default:
      return false;
    }
  case IR_EXPR_CALL:
    if (e->u.call.nargs != 2 || !ir_int_range(e->u.call.args[0], range_of, ctx, &alo, &ahi) ||
        !ir_int_range(e->u.call.args[1], range_of, ctx, &blo, &bhi))
      return false;
    switch (e->u.call.fn) {
    case IR_INTRINSIC_MIN: *lo = alo < blo ? alo : blo, *hi = ahi < bhi ? ahi : bhi; return true;
    case IR_INTRINSIC_MAX: *lo = alo > blo ? alo : blo, *hi = ahi > bhi ? ahi : bhi; return true;
    case IR_INTRINSIC_CEILDIV:
      if (blo <= 0 || alo < 0) return false;
      *lo = ceildiv_pos(alo, bhi), *hi = ceildiv_pos(ahi, blo);
      return true;
    default:
      return false;
    }
  default:
    return false;
  }
}

bool ir_int_nonneg(const IrExpr *e, IrVarRangeFn range_of, IrVarNonnegFn nonneg_var, void *ctx) {
  int64_t lo, hi;
  if (ir_int_range(e, range_of, ctx, &lo, &hi) && lo >= 0) return true;
  switch (e->kind) {
  case IR_EXPR_INT:
    return e->u.int_value >= 0;
  case IR_EXPR_VAR: {
    const IrVar *v = e->u.var;
    if (v->kind == IR_VAR_BLOCK_INDEX || v->kind == IR_VAR_GRID_SIZE || v->kind == IR_VAR_LOOP ||
        v->kind == IR_VAR_WARPGROUP)
      return true;
    if (v->kind == IR_VAR_SYMBOL) { /* a dynamic size, or a bound value */
      int64_t c;
      return !v->bound || (v->value && ir_expr_is_int_const(v->value, &c) && c >= 0);
    }
    return v->kind == IR_VAR_LET && nonneg_var && nonneg_var(v, ctx);
  }
  case IR_EXPR_BINARY:
    switch (e->u.op.op) {
    case IR_OP_ADD: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_MOD:
      return ir_int_nonneg(e->u.op.a, range_of, nonneg_var, ctx) && ir_int_nonneg(e->u.op.b, range_of, nonneg_var, ctx);
    default:
      return false;
    }
  case IR_EXPR_CALL:
    switch (e->u.call.fn) {
    case IR_INTRINSIC_MIN: case IR_INTRINSIC_CEILDIV:
      return ir_int_nonneg(e->u.call.args[0], range_of, nonneg_var, ctx) &&
             ir_int_nonneg(e->u.call.args[1], range_of, nonneg_var, ctx);
    case IR_INTRINSIC_MAX:
      return ir_int_nonneg(e->u.call.args[0], range_of, nonneg_var, ctx) ||
             ir_int_nonneg(e->u.call.args[1], range_of, nonneg_var, ctx);
    default:
      return false;
    }
  case IR_EXPR_CAST:
    return ir_int_nonneg(e->u.cast_src, range_of, nonneg_var, ctx);
  default:
    return false;
  }
}

bool ir_int_multiple_of(const IrExpr *e, int64_t n) {
  switch (e->kind) {
  case IR_EXPR_INT:
    return e->u.int_value % n == 0;
  case IR_EXPR_BINARY:
    switch (e->u.op.op) {
    case IR_OP_ADD: case IR_OP_SUB:
      return ir_int_multiple_of(e->u.op.a, n) && ir_int_multiple_of(e->u.op.b, n);
    case IR_OP_MUL:
      return ir_int_multiple_of(e->u.op.a, n) || ir_int_multiple_of(e->u.op.b, n);
    default:
      return false;
    }
  case IR_EXPR_SELECT:
    return ir_int_multiple_of(e->u.select.then_, n) && ir_int_multiple_of(e->u.select.else_, n);
  case IR_EXPR_CALL:
    return (e->u.call.fn == IR_INTRINSIC_MIN || e->u.call.fn == IR_INTRINSIC_MAX) &&
           ir_int_multiple_of(e->u.call.args[0], n) && ir_int_multiple_of(e->u.call.args[1], n);
  case IR_EXPR_CAST:
    return ir_int_multiple_of(e->u.cast_src, n);
  default:
    return false;
  }
}

bool ir_linear_coefficient(IrModule *m, const IrExpr *e, const IrVar *var, int64_t *coef) {
  IrExpr *plus = ir_binary(m, IR_OP_ADD, ir_var_ref(m, (IrVar *)var, e->loc), ir_int(m, 1, e->loc), e->loc);
  IrExpr *d = ir_simplify(m, ir_binary(m, IR_OP_SUB, ir_expr_subst(m, e, var, plus), ir_expr_clone(m, e), e->loc));
  return ir_expr_is_int_const(d, coef);
}
