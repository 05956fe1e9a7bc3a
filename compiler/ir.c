/* ir.c - construction of the tile IR (see ir.h): the name tables expanded
 * from ir_ops.def, node constructors, and the small generic utilities every
 * pass shares (clone, substitution, structural equality, the per-statement
 * expression rewriter).
 *
 * All nodes live in the module's arena. Result dtypes are computed here, in
 * one place (ir_binary_dtype and friends), so that sema, the passes and the
 * verifier agree on them. */
#include "ir.h"

#include <string.h>

/* ---- Name tables ------------------------------------------------------- */

static const struct {
  const char *name;
  int size;
  bool is_float;
} dtype_table[] = {
#define X(name, spelling, size, is_float) {spelling, size, is_float},
    IR_DTYPES(X)
#undef X
};

static const struct {
  const char *name;
  int arity;
  IrPrec prec;
} op_table[] = {
#define X(name, spelling, arity, prec) {spelling, arity, IR_PREC_##prec},
    IR_OPS(X)
#undef X
};

static const struct {
  const char *name;
  int arity;
  IrIntrinsicResult result;
} intrinsic_table[] = {
#define X(name, spelling, arity, result, fold, c_int, c_f32, c_f64, cuda_int, cuda_f32, cuda_f64) \
  {spelling, arity, IR_RESULT_##result},
    IR_INTRINSICS(X)
#undef X
};

#define X(name, spelling) spelling,
static const char *const stmt_kind_names[] = {IR_STMT_KINDS(X)};
static const char *const for_kind_names[] = {IR_FOR_KINDS(X)};
static const char *const scope_names[] = {IR_SCOPES(X)};
static const char *const layout_names[] = {IR_LAYOUTS(X)};
static const char *const reduce_names[] = {IR_REDUCE_KINDS(X)};
static const char *const gemm_policy_names[] = {IR_GEMM_POLICIES(X)};
#undef X

/* Out-of-range values only come from corrupted IR; printing "?" keeps the
 * printer usable while debugging such IR. */
#define TABLE_NAME(table, i) \
  ((unsigned)(i) < sizeof(table) / sizeof(table[0]) ? (table)[i] : "?")

const char *dtype_name(DType t) {
  return (unsigned)t < DTYPE_COUNT ? dtype_table[t].name : "?";
}
int dtype_size(DType t) { return (unsigned)t < DTYPE_COUNT ? dtype_table[t].size : 0; }
bool dtype_is_float(DType t) { return (unsigned)t < DTYPE_COUNT && dtype_table[t].is_float; }
bool dtype_is_int(DType t) { return (unsigned)t < DTYPE_COUNT && t != DTYPE_BOOL && !dtype_table[t].is_float; }
bool dtype_is_fp8(DType t) { return t == DTYPE_F8E4M3 || t == DTYPE_F8E5M2; }
bool dtype_is_low_float(DType t) { return t == DTYPE_F16 || t == DTYPE_BF16 || dtype_is_fp8(t); }

int64_t dtype_wrap_int(DType t, int64_t v) {
  switch (t) {
  case DTYPE_BOOL: return v != 0;
  case DTYPE_I8: return (int8_t)(uint8_t)v;
  case DTYPE_U8: return (uint8_t)v;
  case DTYPE_I16: return (int16_t)(uint16_t)v;
  case DTYPE_U16: return (uint16_t)v;
  case DTYPE_I32: return (int32_t)(uint32_t)v;
  case DTYPE_U32: return (uint32_t)v;
  default: return v;
  }
}

bool ir_op_is_bitop(IrOp op) {
  return op == IR_OP_BAND || op == IR_OP_BOR || op == IR_OP_XOR || op == IR_OP_SHL || op == IR_OP_SHR ||
         op == IR_OP_BNOT;
}

int64_t ir_int_bitop(IrOp op, int64_t a, int64_t b) {
  switch (op) {
  case IR_OP_BAND: return a & b;
  case IR_OP_BOR: return a | b;
  case IR_OP_XOR: return a ^ b;
  case IR_OP_SHL: return (int64_t)((uint64_t)a << (b & 63));
  case IR_OP_SHR: return a < 0 ? ~(~a >> (b & 63)) : a >> (b & 63); /* arithmetic */
  case IR_OP_BNOT: return ~a;
  default: return 0;
  }
}

bool dtype_from_name(const char *name, DType *out) {
  for (int i = 0; i < DTYPE_COUNT; i++) {
    if (strcmp(name, dtype_table[i].name) == 0) {
      if (out) *out = (DType)i;
      return true;
    }
  }
  return false;
}

const char *ir_op_name(IrOp op) { return (unsigned)op < IR_OP_COUNT ? op_table[op].name : "?"; }
int ir_op_arity(IrOp op) { return (unsigned)op < IR_OP_COUNT ? op_table[op].arity : 0; }
const char *ir_intrinsic_name(IrIntrinsic fn) {
  return (unsigned)fn < IR_INTRINSIC_COUNT ? intrinsic_table[fn].name : "?";
}
int ir_intrinsic_arity(IrIntrinsic fn) {
  return (unsigned)fn < IR_INTRINSIC_COUNT ? intrinsic_table[fn].arity : 0;
}
IrIntrinsicResult ir_intrinsic_result(IrIntrinsic fn) {
  return (unsigned)fn < IR_INTRINSIC_COUNT ? intrinsic_table[fn].result : IR_RESULT_MATH;
}
/* A corrupted operator binds like a unary one: the printer then parenthesizes. */
IrPrec ir_op_prec(IrOp op) { return (unsigned)op < IR_OP_COUNT ? op_table[op].prec : IR_PREC_UNARY; }
const char *ir_stmt_kind_name(IrStmtKind k) { return TABLE_NAME(stmt_kind_names, k); }
const char *ir_for_kind_name(IrForKind k) { return TABLE_NAME(for_kind_names, k); }
const char *ir_scope_name(IrScope s) { return TABLE_NAME(scope_names, s); }
const char *ir_layout_name(IrLayoutKind k) { return TABLE_NAME(layout_names, k); }
const char *ir_reduce_name(IrReduceKind k) { return TABLE_NAME(reduce_names, k); }
const char *ir_gemm_policy_name(IrGemmPolicy p) { return TABLE_NAME(gemm_policy_names, p); }

/* ---- Result dtypes ------------------------------------------------------ */

static bool op_is_predicate(IrOp op) {
  switch (op) {
  case IR_OP_LT: case IR_OP_LE: case IR_OP_GT: case IR_OP_GE:
  case IR_OP_EQ: case IR_OP_NE: case IR_OP_AND: case IR_OP_OR: case IR_OP_NOT:
    return true;
  default:
    return false;
  }
}

/* Rank among floats: f64 > f32 > f16 == bf16 == f8e4m3 == f8e5m2. */
static int float_rank(DType t) {
  return t == DTYPE_F64 ? 3 : t == DTYPE_F32 ? 2 : 1;
}

/* The arithmetic promotion rule: float beats int; the wider float wins;
 * f16 with bf16 (or an FP8 type) meets in f32; any two integer (or bool)
 * types give i64. */
static DType promote(DType a, DType b) {
  bool fa = dtype_is_float(a), fb = dtype_is_float(b);
  if (fa && fb) {
    if (a == b) return a;
    int ra = float_rank(a), rb = float_rank(b);
    if (ra != rb) return ra > rb ? a : b;
    return DTYPE_F32; /* f16 with bf16 */
  }
  if (fa) return a;
  if (fb) return b;
  return DTYPE_I64;
}

DType ir_binary_dtype(IrOp op, DType a, DType b) {
  if (op_is_predicate(op)) return DTYPE_BOOL;
  return promote(a, b);
}

DType ir_unary_dtype(IrOp op, DType a) {
  if (op_is_predicate(op)) return DTYPE_BOOL;
  return a == DTYPE_BOOL ? DTYPE_I64 : a; /* -true is the integer -1 */
}

DType ir_select_dtype(DType then_, DType else_) {
  return then_ == else_ ? then_ : promote(then_, else_);
}

DType ir_call_dtype(IrIntrinsic fn, DType a, DType b) {
  switch (ir_intrinsic_result(fn)) {
  case IR_RESULT_INDEX:
    return DTYPE_I64;
  case IR_RESULT_COMMON:
    return ir_select_dtype(a, b);
  case IR_RESULT_SAME:
    return a == DTYPE_BOOL ? DTYPE_I64 : a;
  default: /* MATH: floating; integers compute in f32 */
    return dtype_is_float(a) ? a : DTYPE_F32;
  }
}

/* ---- Constructors ------------------------------------------------------- */

IrModule *ir_module_new(Arena *arena, const char *file) {
  IrModule *m = ARENA_NEW(arena, IrModule);
  m->arena = arena;
  m->file = file ? arena_strdup(arena, file) : NULL;
  m->next_id = 1;
  return m;
}

IrVar *ir_var_new(IrModule *m, const char *name, IrVarKind kind, DType dtype, SrcLoc loc) {
  IrVar *v = ARENA_NEW(m->arena, IrVar);
  v->name = arena_strdup(m->arena, name ? name : "");
  v->kind = kind;
  v->dtype = dtype;
  v->id = m->next_id++;
  v->loc = loc;
  v->dynamic_index = -1;
  v->param_index = -1;
  v->grid_dim = -1;
  return v;
}

IrBuffer *ir_buffer_new(IrModule *m, const char *name, DType dtype, IrScope scope,
                        int rank, IrExpr *const *shape, SrcLoc loc) {
  TILEC_ASSERT(rank >= 0 && rank <= IR_MAX_RANK);
  IrBuffer *b = ARENA_NEW(m->arena, IrBuffer);
  b->name = arena_strdup(m->arena, name ? name : "");
  b->dtype = dtype;
  b->scope = scope;
  b->rank = rank;
  for (int i = 0; i < rank; i++) b->shape[i] = shape ? shape[i] : NULL;
  b->layout.kind = IR_LAYOUT_ROW_MAJOR;
  b->param_index = -1;
  b->id = m->next_id++;
  b->loc = loc;
  return b;
}

static IrExpr *expr_new(IrModule *m, IrExprKind kind, DType dtype, SrcLoc loc) {
  IrExpr *e = ARENA_NEW(m->arena, IrExpr);
  e->kind = kind;
  e->dtype = dtype;
  e->loc = loc;
  return e;
}

IrExpr *ir_int(IrModule *m, int64_t v, SrcLoc loc) {
  IrExpr *e = expr_new(m, IR_EXPR_INT, DTYPE_I64, loc);
  e->u.int_value = v;
  return e;
}

IrExpr *ir_bool(IrModule *m, bool v, SrcLoc loc) {
  IrExpr *e = expr_new(m, IR_EXPR_INT, DTYPE_BOOL, loc);
  e->u.int_value = v ? 1 : 0;
  return e;
}

IrExpr *ir_float(IrModule *m, double v, DType t, SrcLoc loc) {
  IrExpr *e = expr_new(m, IR_EXPR_FLOAT, t, loc);
  e->u.float_value = v;
  return e;
}

IrExpr *ir_var_ref(IrModule *m, IrVar *v, SrcLoc loc) {
  IrExpr *e = expr_new(m, IR_EXPR_VAR, v->dtype, loc);
  e->u.var = v;
  return e;
}

IrExpr *ir_unary(IrModule *m, IrOp op, IrExpr *a, SrcLoc loc) {
  IrExpr *e = expr_new(m, IR_EXPR_UNARY, ir_unary_dtype(op, a ? a->dtype : DTYPE_I64), loc);
  e->u.op.op = op;
  e->u.op.a = a;
  return e;
}

IrExpr *ir_binary(IrModule *m, IrOp op, IrExpr *a, IrExpr *b, SrcLoc loc) {
  DType t = ir_binary_dtype(op, a ? a->dtype : DTYPE_I64, b ? b->dtype : DTYPE_I64);
  IrExpr *e = expr_new(m, IR_EXPR_BINARY, t, loc);
  e->u.op.op = op;
  e->u.op.a = a;
  e->u.op.b = b;
  return e;
}

IrExpr *ir_select(IrModule *m, IrExpr *cond, IrExpr *then_, IrExpr *else_, SrcLoc loc) {
  DType t = ir_select_dtype(then_ ? then_->dtype : DTYPE_I64, else_ ? else_->dtype : DTYPE_I64);
  IrExpr *e = expr_new(m, IR_EXPR_SELECT, t, loc);
  e->u.select.cond = cond;
  e->u.select.then_ = then_;
  e->u.select.else_ = else_;
  return e;
}

IrExpr *ir_call_n(IrModule *m, IrIntrinsic fn, IrExpr *const *args, SrcLoc loc) {
  int arity = ir_intrinsic_arity(fn);
  IrExpr *a = args[0], *b = arity > 1 ? args[1] : NULL;
  DType t = ir_call_dtype(fn, a ? a->dtype : DTYPE_I64, b ? b->dtype : a ? a->dtype : DTYPE_I64);
  IrExpr *e = expr_new(m, IR_EXPR_CALL, t, loc);
  e->u.call.fn = fn;
  for (int i = 0; i < arity; i++) e->u.call.args[i] = args[i];
  e->u.call.nargs = arity;
  return e;
}

IrExpr *ir_call(IrModule *m, IrIntrinsic fn, IrExpr *a, IrExpr *b, SrcLoc loc) {
  IrExpr *args[IR_MAX_CALL_ARGS] = {a, b, NULL};
  return ir_call_n(m, fn, args, loc);
}

IrExpr *ir_load(IrModule *m, IrBuffer *buf, IrExpr *const *idx, SrcLoc loc) {
  IrExpr *e = expr_new(m, IR_EXPR_LOAD, buf->dtype, loc);
  e->u.load.buf = buf;
  e->u.load.nidx = buf->rank;
  for (int i = 0; i < buf->rank; i++) e->u.load.idx[i] = idx ? idx[i] : NULL;
  return e;
}

IrExpr *ir_cast(IrModule *m, DType t, IrExpr *src, SrcLoc loc) {
  IrExpr *e = expr_new(m, IR_EXPR_CAST, t, loc);
  e->u.cast_src = src;
  return e;
}

IrStmt *ir_stmt_new(IrModule *m, IrStmtKind kind, SrcLoc loc) {
  IrStmt *s = ARENA_NEW(m->arena, IrStmt);
  s->kind = kind;
  s->loc = loc;
  return s;
}

IrStmt *ir_seq_new(IrModule *m, SrcLoc loc) { return ir_stmt_new(m, IR_STMT_SEQ, loc); }

void ir_seq_push(IrModule *m, IrStmt *seq, IrStmt *item) {
  TILEC_ASSERT(seq->kind == IR_STMT_SEQ);
  seq->u.seq.items = arena_grow(m->arena, seq->u.seq.items, &seq->u.seq.cap, seq->u.seq.n + 1,
                                sizeof(IrStmt *));
  seq->u.seq.items[seq->u.seq.n++] = item;
}

void ir_seq_insert(IrModule *m, IrStmt *seq, int at, IrStmt *item) {
  ir_seq_push(m, seq, item); /* grows the array; then shift into place */
  for (int i = seq->u.seq.n - 1; i > at; i--) seq->u.seq.items[i] = seq->u.seq.items[i - 1];
  seq->u.seq.items[at] = item;
}

void ir_seq_remove(IrStmt *seq, int at) {
  TILEC_ASSERT(seq->kind == IR_STMT_SEQ && at >= 0 && at < seq->u.seq.n);
  for (int i = at; i + 1 < seq->u.seq.n; i++) seq->u.seq.items[i] = seq->u.seq.items[i + 1];
  seq->u.seq.n--;
}

IrStmt *ir_for_new(IrModule *m, IrForKind kind, IrVar *var, IrExpr *extent, IrStmt *body,
                   SrcLoc loc) {
  IrStmt *s = ir_stmt_new(m, IR_STMT_FOR, loc);
  s->u.for_.kind = kind;
  s->u.for_.var = var;
  s->u.for_.extent = extent;
  s->u.for_.num_stages = kind == IR_FOR_PIPELINED ? 1 : 0;
  s->u.for_.body = body;
  return s;
}

IrStmt *ir_store_new(IrModule *m, IrBuffer *buf, IrExpr *const *idx, IrExpr *value, SrcLoc loc) {
  IrStmt *s = ir_stmt_new(m, IR_STMT_STORE, loc);
  s->u.store.buf = buf;
  s->u.store.nidx = buf->rank;
  for (int i = 0; i < buf->rank; i++) s->u.store.idx[i] = idx ? idx[i] : NULL;
  s->u.store.value = value;
  return s;
}

IrStmt *ir_if_new(IrModule *m, IrExpr *cond, IrStmt *then_, IrStmt *else_, SrcLoc loc) {
  IrStmt *s = ir_stmt_new(m, IR_STMT_IF, loc);
  s->u.if_.cond = cond;
  s->u.if_.then_ = then_;
  s->u.if_.else_ = else_;
  return s;
}

static void region_clone_exprs(IrModule *m, IrRegion *r) {
  for (int d = 0; d < r->rank; d++) {
    r->start[d] = ir_expr_clone(m, r->start[d]);
    r->extent[d] = ir_expr_clone(m, r->extent[d]);
  }
}

IrStmt *ir_stmt_clone_tile_op(IrModule *m, const IrStmt *s) {
  IrStmt *c = ir_stmt_new(m, s->kind, s->loc);
  c->u = s->u;
  switch (s->kind) {
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD:
    region_clone_exprs(m, &c->u.copy.src);
    region_clone_exprs(m, &c->u.copy.dst);
    if (s->u.copy.hold_stage) c->u.copy.hold_stage = ir_expr_clone(m, s->u.copy.hold_stage);
    break;
  case IR_STMT_FILL:
    region_clone_exprs(m, &c->u.fill.dst);
    c->u.fill.value = ir_expr_clone(m, s->u.fill.value);
    break;
  case IR_STMT_GEMM:
    region_clone_exprs(m, &c->u.gemm.a);
    region_clone_exprs(m, &c->u.gemm.b);
    region_clone_exprs(m, &c->u.gemm.c);
    break;
  default:
    TILEC_ASSERT(!"ir_stmt_clone_tile_op: not a tile op");
  }
  return c;
}

IrRegion ir_region_whole(IrModule *m, IrBuffer *buf, SrcLoc loc) {
  IrRegion r;
  memset(&r, 0, sizeof r);
  r.buf = buf;
  r.rank = buf->rank;
  r.loc = loc;
  for (int d = 0; d < buf->rank; d++) {
    r.start[d] = ir_int(m, 0, loc);
    /* A clone, so a pass rewriting the region never edits the buffer's shape. */
    r.extent[d] = ir_expr_clone(m, buf->shape[d]);
  }
  return r;
}

int ir_region_tile_shape(const IrRegion *r, IrExpr **out_extents) {
  int n = 0;
  for (int d = 0; d < r->rank; d++) {
    if (r->is_index[d]) continue;
    if (out_extents) out_extents[n] = r->extent[d];
    n++;
  }
  return n;
}

/* ---- Clone, substitution, equality -------------------------------------- */

/* One copy routine serves clone and subst: `var` NULL means plain clone. */
/* A copy of e with every node that matches (a reference to var, or a tree
 * equal to what) replaced by a copy of with. */
static IrExpr *copy_expr_matching(IrModule *m, const IrExpr *e, const IrVar *var, const IrExpr *what,
                                  const IrExpr *with) {
  if (!e) return NULL;
  if ((var && e->kind == IR_EXPR_VAR && e->u.var == var) || (what && ir_expr_equal(e, what)))
    return copy_expr_matching(m, with, NULL, NULL, NULL);
  IrExpr *c = ARENA_NEW(m->arena, IrExpr);
  *c = *e;
  switch (e->kind) {
  case IR_EXPR_UNARY:
  case IR_EXPR_BINARY:
    c->u.op.a = copy_expr_matching(m, e->u.op.a, var, what, with);
    c->u.op.b = copy_expr_matching(m, e->u.op.b, var, what, with);
    break;
  case IR_EXPR_SELECT:
    c->u.select.cond = copy_expr_matching(m, e->u.select.cond, var, what, with);
    c->u.select.then_ = copy_expr_matching(m, e->u.select.then_, var, what, with);
    c->u.select.else_ = copy_expr_matching(m, e->u.select.else_, var, what, with);
    break;
  case IR_EXPR_CALL:
    for (int i = 0; i < IR_MAX_CALL_ARGS; i++) c->u.call.args[i] = copy_expr_matching(m, e->u.call.args[i], var, what, with);
    break;
  case IR_EXPR_LOAD:
    for (int i = 0; i < e->u.load.nidx && i < IR_MAX_RANK; i++)
      c->u.load.idx[i] = copy_expr_matching(m, e->u.load.idx[i], var, what, with);
    break;
  case IR_EXPR_CAST:
    c->u.cast_src = copy_expr_matching(m, e->u.cast_src, var, what, with);
    break;
  default:
    break;
  }
  return c;
}

IrExpr *ir_expr_clone(IrModule *m, const IrExpr *e) { return copy_expr_matching(m, e, NULL, NULL, NULL); }

IrExpr *ir_expr_subst(IrModule *m, const IrExpr *e, const IrVar *var, const IrExpr *with) {
  return copy_expr_matching(m, e, var, NULL, with);
}

IrExpr *ir_expr_replace(IrModule *m, const IrExpr *e, const IrExpr *what, const IrExpr *with) {
  return copy_expr_matching(m, e, NULL, what, with);
}

bool ir_expr_is_int_const(const IrExpr *e, int64_t *out) {
  if (!e || e->kind != IR_EXPR_INT) return false;
  if (out) *out = e->u.int_value;
  return true;
}

bool ir_expr_equal(const IrExpr *a, const IrExpr *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
  case IR_EXPR_INT:
    return a->u.int_value == b->u.int_value;
  case IR_EXPR_FLOAT:
    /* Bitwise: -0.0 differs from 0.0, and a NaN equals the same NaN. */
    return memcmp(&a->u.float_value, &b->u.float_value, sizeof(double)) == 0;
  case IR_EXPR_VAR:
    return a->u.var == b->u.var;
  case IR_EXPR_UNARY:
    return a->u.op.op == b->u.op.op && ir_expr_equal(a->u.op.a, b->u.op.a);
  case IR_EXPR_BINARY:
    return a->u.op.op == b->u.op.op && ir_expr_equal(a->u.op.a, b->u.op.a) &&
           ir_expr_equal(a->u.op.b, b->u.op.b);
  case IR_EXPR_SELECT:
    return ir_expr_equal(a->u.select.cond, b->u.select.cond) &&
           ir_expr_equal(a->u.select.then_, b->u.select.then_) &&
           ir_expr_equal(a->u.select.else_, b->u.select.else_);
  case IR_EXPR_CALL:
    if (a->u.call.fn != b->u.call.fn || a->u.call.nargs != b->u.call.nargs) return false;
    for (int i = 0; i < a->u.call.nargs && i < IR_MAX_CALL_ARGS; i++)
      if (!ir_expr_equal(a->u.call.args[i], b->u.call.args[i])) return false;
    return true;
  case IR_EXPR_LOAD:
    if (a->u.load.buf != b->u.load.buf || a->u.load.nidx != b->u.load.nidx) return false;
    for (int i = 0; i < a->u.load.nidx && i < IR_MAX_RANK; i++)
      if (!ir_expr_equal(a->u.load.idx[i], b->u.load.idx[i])) return false;
    return true;
  case IR_EXPR_CAST:
    return ir_expr_equal(a->u.cast_src, b->u.cast_src);
  default:
    return false;
  }
}

/* ---- The per-statement expression rewriter ------------------------------ */

static void rewrite_slot(IrModule *m, IrExpr **slot, IrExprRewriter fn, void *ctx) {
  if (*slot) *slot = fn(m, *slot, ctx);
}

static void rewrite_region(IrModule *m, IrRegion *r, IrExprRewriter fn, void *ctx) {
  for (int d = 0; d < r->rank && d < IR_MAX_RANK; d++) {
    rewrite_slot(m, &r->start[d], fn, ctx);
    rewrite_slot(m, &r->extent[d], fn, ctx);
  }
}

void ir_stmt_rewrite_exprs(IrModule *m, IrStmt *s, IrExprRewriter fn, void *ctx) {
  if (!s) return;
  switch (s->kind) {
  case IR_STMT_LET:
    rewrite_slot(m, &s->u.let.value, fn, ctx);
    break;
  case IR_STMT_STORE:
  case IR_STMT_ATOMIC_FETCH_ADD:
    for (int i = 0; i < s->u.store.nidx && i < IR_MAX_RANK; i++)
      rewrite_slot(m, &s->u.store.idx[i], fn, ctx);
    rewrite_slot(m, &s->u.store.value, fn, ctx);
    rewrite_slot(m, &s->u.store.guard, fn, ctx);
    break;
  case IR_STMT_FOR:
    rewrite_slot(m, &s->u.for_.extent, fn, ctx);
    rewrite_slot(m, &s->u.for_.k_iters, fn, ctx);
    break;
  case IR_STMT_IF:
    rewrite_slot(m, &s->u.if_.cond, fn, ctx);
    break;
  case IR_STMT_EXIT:
    rewrite_slot(m, &s->u.exit_.cond, fn, ctx);
    break;
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD:
    rewrite_region(m, &s->u.copy.src, fn, ctx);
    rewrite_region(m, &s->u.copy.dst, fn, ctx);
    rewrite_slot(m, &s->u.copy.hold_stage, fn, ctx);
    break;
  case IR_STMT_FILL:
    rewrite_region(m, &s->u.fill.dst, fn, ctx);
    rewrite_slot(m, &s->u.fill.value, fn, ctx);
    break;
  case IR_STMT_GEMM:
    rewrite_region(m, &s->u.gemm.a, fn, ctx);
    rewrite_region(m, &s->u.gemm.b, fn, ctx);
    rewrite_region(m, &s->u.gemm.c, fn, ctx);
    break;
  case IR_STMT_USE_SWIZZLE:
    rewrite_slot(m, &s->u.swizzle.panel_size, fn, ctx);
    break;
  case IR_STMT_MBAR_ARRIVE:
    rewrite_slot(m, &s->u.mbar_wait.stage, fn, ctx);
    break;
  case IR_STMT_MBAR_WAIT:
    rewrite_slot(m, &s->u.mbar_wait.stage, fn, ctx);
    rewrite_slot(m, &s->u.mbar_wait.parity, fn, ctx);
    break;
  default: /* SEQ, ALLOC, REDUCE, ANNOTATE_LAYOUT, BARRIER: no expression slots */
    break;
  }
}
