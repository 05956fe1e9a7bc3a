/* ir_verify.c - structural checks of the tile IR, run between passes.
 *
 * Walks every kernel with a scope stack of the variables and buffers visible
 * at each point (kernel level: symbols, scalar params, block variables and
 * tensor params; then FOR variables, LETs and ALLOCs earlier in an enclosing
 * SEQ) and checks: no NULL slot, every VAR and buffer in scope, index counts
 * and region ranks equal to the buffer's rank, guard flags IR_GUARD_UPPER
 * alone or with IR_GUARD_LOWER (a TMA copy: IR_GUARD_LOWER alone, its
 * `clamp`, or none), integer indices / extents / shapes,
 * bool-or-int conditions, and every expression's dtype equal to what the
 * constructors in ir.c compute (ir_binary_dtype and friends).
 *
 * The first problem is reported as an internal error naming the pass that
 * broke the invariant, at the offending node's location (or the enclosing
 * statement's when the node has none), and the walk stops. */
#include <stdarg.h>
#include <stdlib.h>

#include "ir.h"
#include "name_table.h"

typedef struct Verifier {
  const char *pass;
  Diag *diag;
  bool failed;
  SrcLoc stmt_loc;       /* fallback location for nodes without one */
  NameTable scope;       /* visible IrVar* and IrBuffer*, a stack (hashed) */
  int parallel;          /* parallel loops around the statement being checked */
  int exits;             /* EXIT statements met (all must be at the top level) */
  const IrStmt *stream_k; /* the STREAM_K loop around the statement, or NULL */
} Verifier;

static void fail(Verifier *v, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(Verifier *v, SrcLoc loc, const char *fmt, ...) {
  if (v->failed) return;
  v->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (loc.line <= 0) loc = v->stmt_loc;
  diag_error(v->diag, loc, "internal error: IR invalid after pass '%s': %s", v->pass, msg);
}

static void push(Verifier *v, const void *item) { name_table_push(&v->scope, item); }

static bool in_scope(const Verifier *v, const void *item) {
  return name_table_find(&v->scope, item) >= 0;
}

static const char *expr_kind_name(IrExprKind k) {
  static const char *const names[] = {
#define X(name, spelling) spelling,
      IR_EXPR_KINDS(X)
#undef X
  };
  return (unsigned)k < IR_EXPR_COUNT ? names[k] : "?";
}

static bool is_int_dtype(DType t) { return dtype_is_int(t); }
static bool valid_dtype(DType t) { return (unsigned)t < DTYPE_COUNT; }

static void check_expr(Verifier *v, const IrExpr *e, const char *what);

/* An expression that must be an integer (index, extent, shape, grid). */
static void check_int_expr(Verifier *v, const IrExpr *e, const char *what) {
  check_expr(v, e, what);
  if (!v->failed && !is_int_dtype(e->dtype))
    fail(v, e->loc, "%s has dtype %s, expected an integer", what, dtype_name(e->dtype));
}

static void check_buffer_ref(Verifier *v, const IrBuffer *b, SrcLoc loc, const char *what) {
  if (!b) {
    fail(v, loc, "%s has no buffer", what);
    return;
  }
  if (!in_scope(v, b))
    fail(v, loc, "%s refers to buffer '%s' outside its scope (no ALLOC before it)", what,
         b->name);
}

static void check_expr(Verifier *v, const IrExpr *e, const char *what) {
  if (v->failed) return;
  if (!e) {
    fail(v, v->stmt_loc, "%s is a NULL expression", what);
    return;
  }
  if ((unsigned)e->kind >= IR_EXPR_COUNT) {
    fail(v, e->loc, "%s has a bad expression kind %d", what, (int)e->kind);
    return;
  }
  if (!valid_dtype(e->dtype)) {
    fail(v, e->loc, "%s has a bad dtype %d", what, (int)e->dtype);
    return;
  }
  DType want = e->dtype;
  switch (e->kind) {
  case IR_EXPR_INT:
    if (!is_int_dtype(e->dtype) && e->dtype != DTYPE_BOOL)
      fail(v, e->loc, "integer literal with dtype %s", dtype_name(e->dtype));
    return;
  case IR_EXPR_FLOAT:
    if (!dtype_is_float(e->dtype))
      fail(v, e->loc, "float literal with dtype %s", dtype_name(e->dtype));
    return;
  case IR_EXPR_VAR:
    if (!e->u.var) {
      fail(v, e->loc, "variable reference with no variable");
      return;
    }
    if (!in_scope(v, e->u.var)) {
      fail(v, e->loc, "variable '%s' used outside its scope", e->u.var->name);
      return;
    }
    want = e->u.var->dtype;
    break;
  case IR_EXPR_UNARY:
    if ((unsigned)e->u.op.op >= IR_OP_COUNT || ir_op_arity(e->u.op.op) != 1) {
      fail(v, e->loc, "unary expression with operator '%s'", ir_op_name(e->u.op.op));
      return;
    }
    check_expr(v, e->u.op.a, "operand");
    if (v->failed) return;
    if (e->u.op.op == IR_OP_BNOT && !is_int_dtype(e->u.op.a->dtype)) {
      fail(v, e->loc, "'~' of a %s operand", dtype_name(e->u.op.a->dtype));
      return;
    }
    want = ir_unary_dtype(e->u.op.op, e->u.op.a->dtype);
    break;
  case IR_EXPR_BINARY:
    if ((unsigned)e->u.op.op >= IR_OP_COUNT || ir_op_arity(e->u.op.op) != 2) {
      fail(v, e->loc, "binary expression with operator '%s'", ir_op_name(e->u.op.op));
      return;
    }
    check_expr(v, e->u.op.a, "left operand");
    check_expr(v, e->u.op.b, "right operand");
    if (v->failed) return;
    if (ir_op_is_bitop(e->u.op.op) && (!is_int_dtype(e->u.op.a->dtype) || !is_int_dtype(e->u.op.b->dtype))) {
      fail(v, e->loc, "'%s' of %s and %s operands (integers only)", ir_op_name(e->u.op.op),
           dtype_name(e->u.op.a->dtype), dtype_name(e->u.op.b->dtype));
      return;
    }
    want = ir_binary_dtype(e->u.op.op, e->u.op.a->dtype, e->u.op.b->dtype);
    break;
  case IR_EXPR_SELECT:
    check_expr(v, e->u.select.cond, "if_then_else condition");
    check_expr(v, e->u.select.then_, "if_then_else value");
    check_expr(v, e->u.select.else_, "if_then_else value");
    if (v->failed) return;
    if (e->u.select.cond->dtype != DTYPE_BOOL && !is_int_dtype(e->u.select.cond->dtype)) {
      fail(v, e->loc, "if_then_else condition has dtype %s",
           dtype_name(e->u.select.cond->dtype));
      return;
    }
    want = ir_select_dtype(e->u.select.then_->dtype, e->u.select.else_->dtype);
    break;
  case IR_EXPR_CALL: {
    IrIntrinsic fn = e->u.call.fn;
    if ((unsigned)fn >= IR_INTRINSIC_COUNT || e->u.call.nargs != ir_intrinsic_arity(fn)) {
      fail(v, e->loc, "call of '%s' with %d arguments", ir_intrinsic_name(fn), e->u.call.nargs);
      return;
    }
    for (int i = 0; i < e->u.call.nargs; i++) check_expr(v, e->u.call.args[i], "argument");
    if (v->failed) return;
    DType a = e->u.call.args[0]->dtype;
    DType b = e->u.call.nargs > 1 ? e->u.call.args[1]->dtype : a;
    if (ir_intrinsic_result(fn) == IR_RESULT_INDEX && (!is_int_dtype(a) || !is_int_dtype(b))) {
      fail(v, e->loc, "%s of %s and %s, expected integers", ir_intrinsic_name(fn), dtype_name(a), dtype_name(b));
      return;
    }
    want = ir_call_dtype(fn, a, b);
    break;
  }
  case IR_EXPR_LOAD: {
    const IrBuffer *b = e->u.load.buf;
    check_buffer_ref(v, b, e->loc, "load");
    if (v->failed) return;
    if (e->u.load.nidx != b->rank) {
      fail(v, e->loc, "load of '%s' with %d indices, but the buffer has rank %d", b->name,
           e->u.load.nidx, b->rank);
      return;
    }
    for (int i = 0; i < e->u.load.nidx; i++) check_int_expr(v, e->u.load.idx[i], "load index");
    want = b->dtype;
    break;
  }
  case IR_EXPR_CAST:
    check_expr(v, e->u.cast_src, "cast operand");
    return;
  default:
    return;
  }
  if (!v->failed && e->dtype != want)
    fail(v, e->loc, "%s expression has dtype %s, expected %s", expr_kind_name(e->kind),
         dtype_name(e->dtype), dtype_name(want));
}

/* tma: the region is a TMA copy's global side, whose only guard flag can
 * be IR_GUARD_LOWER (a coordinate to clamp). */
static void check_region_of(Verifier *v, const IrRegion *r, const char *what, bool tma) {
  if (v->failed) return;
  SrcLoc loc = r->loc.line > 0 ? r->loc : v->stmt_loc;
  check_buffer_ref(v, r->buf, loc, what);
  if (v->failed) return;
  if (r->rank != r->buf->rank) {
    fail(v, loc, "%s region of '%s' has rank %d, but the buffer has rank %d", what, r->buf->name,
         r->rank, r->buf->rank);
    return;
  }
  for (int d = 0; d < r->rank; d++) {
    check_int_expr(v, r->start[d], "region start");
    check_int_expr(v, r->extent[d], "region extent");
    const bool ok = tma ? r->guard[d] == 0 || r->guard[d] == IR_GUARD_LOWER
                        : r->guard[d] == 0 || r->guard[d] == IR_GUARD_UPPER ||
                              r->guard[d] == (IR_GUARD_UPPER | IR_GUARD_LOWER);
    if (!ok) {
      fail(v, loc, "%s region of '%s': dimension %d has guard flags %d", what, r->buf->name, d, r->guard[d]);
      return;
    }
  }
}

static void check_region(Verifier *v, const IrRegion *r, const char *what) { check_region_of(v, r, what, false); }

static void check_shape(Verifier *v, const IrBuffer *b) {
  if (b->rank < 0 || b->rank > IR_MAX_RANK) {
    fail(v, b->loc, "buffer '%s' has rank %d", b->name, b->rank);
    return;
  }
  if (!valid_dtype(b->dtype)) fail(v, b->loc, "buffer '%s' has a bad dtype", b->name);
  for (int d = 0; d < b->rank; d++) check_int_expr(v, b->shape[d], "buffer shape");
  if (b->strides && b->scope != IR_SCOPE_GLOBAL) fail(v, b->loc, "buffer '%s' has strides but is not a tensor", b->name);
  for (int d = 0; b->strides && d < b->rank; d++) check_int_expr(v, b->strides[d], "tensor stride");
}

static void check_stmt(Verifier *v, const IrStmt *s);

/* A child statement list: a SEQ with a scope of its own. */
static void check_block(Verifier *v, const IrStmt *s, const char *what) {
  if (v->failed) return;
  if (!s) {
    fail(v, v->stmt_loc, "%s is NULL", what);
    return;
  }
  if (s->kind != IR_STMT_SEQ) {
    fail(v, s->loc, "%s is a '%s' statement, expected a seq", what, ir_stmt_kind_name(s->kind));
    return;
  }
  check_stmt(v, s);
}

/* An element store's buffer, rank, indices and value (s a STORE or an
 * ATOMIC_FETCH_ADD: both keep them in u.store); false once one failed. */
static bool check_element_ref(Verifier *v, const IrStmt *s, const char *what, const char *rank_verb,
                              const char *idx_what, const char *value_what) {
  const IrBuffer *b = s->u.store.buf;
  check_buffer_ref(v, b, s->loc, what);
  if (v->failed) return false;
  if (s->u.store.nidx != b->rank) {
    fail(v, s->loc, "%s '%s' with %d indices, but the buffer has rank %d", rank_verb, b->name, s->u.store.nidx,
         b->rank);
    return false;
  }
  for (int i = 0; i < s->u.store.nidx; i++) check_int_expr(v, s->u.store.idx[i], idx_what);
  check_expr(v, s->u.store.value, value_what);
  return true;
}

static void check_stmt(Verifier *v, const IrStmt *s) {
  if (v->failed) return;
  if (!s) {
    fail(v, v->stmt_loc, "NULL statement");
    return;
  }
  if (s->loc.line > 0) v->stmt_loc = s->loc;
  switch (s->kind) {
  case IR_STMT_SEQ: {
    int saved = v->scope.n;
    if (s->u.seq.n > 0 && !s->u.seq.items) {
      fail(v, s->loc, "seq with %d items and no item array", s->u.seq.n);
      return;
    }
    for (int i = 0; i < s->u.seq.n && !v->failed; i++) check_stmt(v, s->u.seq.items[i]);
    name_table_truncate(&v->scope, saved); /* LETs and ALLOCs end with their SEQ */
    return;
  }
  case IR_STMT_ALLOC: {
    const IrBuffer *b = s->u.alloc;
    if (!b) {
      fail(v, s->loc, "alloc with no buffer");
      return;
    }
    if (b->scope == IR_SCOPE_GLOBAL) {
      fail(v, s->loc, "alloc of '%s' in global scope", b->name);
      return;
    }
    check_shape(v, b);
    push(v, b);
    return;
  }
  case IR_STMT_LET:
    if (!s->u.let.var || s->u.let.var->kind != IR_VAR_LET) {
      fail(v, s->loc, "let without a LET variable");
      return;
    }
    check_expr(v, s->u.let.value, "let value");
    push(v, s->u.let.var); /* visible after its own value */
    return;
  case IR_STMT_STORE: {
    const IrBuffer *b = s->u.store.buf;
    if (!check_element_ref(v, s, "store", "store to", "store index", "stored value")) return;
    if (!v->failed && s->u.store.atomic &&
        (b->scope != IR_SCOPE_GLOBAL || b->dtype != DTYPE_F32 || s->u.store.value->dtype != DTYPE_F32))
      fail(v, s->loc, "atomic_add into an element of '%s': needs a global f32 tensor and an f32 value", b->name);
    return;
  }
  case IR_STMT_ATOMIC_FETCH_ADD: {
    /* result = atomic_add(buf[idx], value): once per block, so never in a
     * parallel loop; buf a global i32/f32 tensor; result and value (and the
     * GPU's broadcast slot) of its dtype. */
    const IrBuffer *b = s->u.store.buf, *slot = s->u.store.slot;
    const IrVar *r = s->u.store.result;
    if (!check_element_ref(v, s, "atomic_fetch_add", "atomic_fetch_add on", "atomic_fetch_add index",
                           "atomic_fetch_add value")) return;
    if (s->u.store.guard) check_expr(v, s->u.store.guard, "atomic_fetch_add guard");
    if (v->failed) return;
    if (b->scope != IR_SCOPE_GLOBAL || (b->dtype != DTYPE_I32 && b->dtype != DTYPE_F32) ||
        s->u.store.value->dtype != b->dtype)
      fail(v, s->loc, "atomic_fetch_add on '%s': needs a global i32 or f32 tensor and a value of its dtype", b->name);
    else if (!r || r->kind != IR_VAR_LET || r->dtype != b->dtype)
      fail(v, s->loc, "atomic_fetch_add on '%s' without a LET result of dtype %s", b->name, dtype_name(b->dtype));
    else if (slot && (slot->scope != IR_SCOPE_SHARED || slot->dtype != b->dtype || !in_scope(v, slot)))
      fail(v, s->loc, "atomic_fetch_add on '%s': its slot '%s' is not a live shared %s buffer", b->name,
           slot->name, dtype_name(b->dtype));
    else if (s->u.store.guard && s->u.store.guard->dtype != DTYPE_BOOL)
      fail(v, s->loc, "atomic_fetch_add on '%s': the guard is not a bool", b->name);
    else if (v->parallel > 0)
      fail(v, s->loc, "atomic_fetch_add on '%s' inside a parallel loop", b->name);
    if (!v->failed) push(v, r); /* visible after the statement */
    return;
  }
  case IR_STMT_FOR: {
    if (!s->u.for_.var || s->u.for_.var->kind != IR_VAR_LOOP) {
      fail(v, s->loc, "for without a LOOP variable");
      return;
    }
    if ((unsigned)s->u.for_.kind >= IR_FOR_COUNT) {
      fail(v, s->loc, "for with a bad loop kind %d", (int)s->u.for_.kind);
      return;
    }
    check_int_expr(v, s->u.for_.extent, "for extent");
    if (s->u.for_.kind == IR_FOR_PIPELINED && s->u.for_.num_stages < 1)
      fail(v, s->loc, "pipelined loop with num_stages = %d", s->u.for_.num_stages);
    int saved = v->scope.n;
    push(v, s->u.for_.var);
    const IrStmt *outer_stream_k = v->stream_k;
    if (s->u.for_.kind == IR_FOR_STREAM_K) {
      const IrVar *kb = s->u.for_.k_begin, *kl = s->u.for_.k_len;
      if (!kb || !kl || kb->kind != IR_VAR_LOOP || kl->kind != IR_VAR_LOOP || !s->u.for_.k_iters) {
        fail(v, s->loc, "stream_k loop without its k_begin / k_len LOOP variables and k_iters");
        return;
      }
      if (outer_stream_k) fail(v, s->loc, "stream_k loop inside another");
      check_int_expr(v, s->u.for_.k_iters, "stream_k k_iters");
      push(v, kb);
      push(v, kl);
      v->stream_k = s;
    }
    v->parallel += s->u.for_.kind == IR_FOR_PARALLEL;
    check_block(v, s->u.for_.body, "for body");
    v->parallel -= s->u.for_.kind == IR_FOR_PARALLEL;
    v->stream_k = outer_stream_k;
    name_table_truncate(&v->scope, saved);
    return;
  }
  case IR_STMT_STREAM_K_FIXUP: {
    const IrBuffer *acc = s->u.stream_k.acc;
    if (!v->stream_k || s->u.stream_k.loop != v->stream_k)
      fail(v, s->loc, "stream_k_fixup outside its stream_k loop");
    else if (!acc || acc->scope != IR_SCOPE_FRAGMENT || acc->dtype != DTYPE_F32 || !in_scope(v, acc))
      fail(v, s->loc, "stream_k_fixup needs a live f32 fragment accumulator");
    return;
  }
  case IR_STMT_EXIT: {
    const IrExpr *c = s->u.exit_.cond;
    v->exits++;
    check_expr(v, c, "exit condition");
    if (!v->failed && c->dtype != DTYPE_BOOL && !is_int_dtype(c->dtype))
      fail(v, c->loc, "exit condition has dtype %s", dtype_name(c->dtype));
    return;
  }
  case IR_STMT_IF: {
    const IrExpr *c = s->u.if_.cond;
    check_expr(v, c, "if condition");
    if (v->failed) return;
    if (c->dtype != DTYPE_BOOL && !is_int_dtype(c->dtype)) {
      fail(v, c->loc, "if condition has dtype %s", dtype_name(c->dtype));
      return;
    }
    check_block(v, s->u.if_.then_, "then branch");
    if (s->u.if_.else_) check_block(v, s->u.if_.else_, "else branch");
    return;
  }
  case IR_STMT_WARP_ROLES: {
    check_block(v, s->u.roles.producer, "producer role");
    const IrVar *wg = s->u.roles.warpgroup;
    if (wg && wg->kind != IR_VAR_WARPGROUP) {
      fail(v, s->loc, "consumer role's warpgroup '%s' is not a WARPGROUP variable", wg->name);
      return;
    }
    int saved = v->scope.n;
    if (wg) push(v, wg); /* the consumers' statements only */
    check_block(v, s->u.roles.consumer, "consumer role");
    name_table_truncate(&v->scope, saved);
    return;
  }
  case IR_STMT_WG_TURN:
    if ((unsigned)s->u.turn > IR_TURN_STAGGER_END) fail(v, s->loc, "warpgroup_turn with a bad kind %d", (int)s->u.turn);
    return;
  case IR_STMT_MBAR_ARRIVE:
    if (!s->u.mbar_wait.bar || !s->u.mbar_wait.bar->is_mbarrier)
      fail(v, s->loc, "mbar_arrive needs an mbarrier buffer");
    check_int_expr(v, s->u.mbar_wait.stage, "mbar_arrive stage");
    return;
  case IR_STMT_COPY:
    check_region_of(v, &s->u.copy.src, "copy source", s->u.copy.tma);
    check_region_of(v, &s->u.copy.dst, "copy destination", s->u.copy.tma);
    if (v->failed || !s->u.copy.tma) return;
    if (s->u.copy.dst.buf->scope == IR_SCOPE_GLOBAL) { /* a TMA store */
      const IrBuffer *via = s->u.copy.via;
      const bool staged = s->u.copy.src.buf->scope == IR_SCOPE_FRAGMENT && via && via->scope == IR_SCOPE_SHARED &&
                          via->rank == 3 && via->dtype == s->u.copy.dst.buf->dtype;
      if ((s->u.copy.src.buf->scope != IR_SCOPE_SHARED && !staged) || s->u.copy.tma_map < 0)
        fail(v, s->loc, "TMA store into '%s' needs a shared source (or a fragment and a [slots, rows, cols] "
             "staging buffer of its dtype) and a tensor map", s->u.copy.dst.buf->name);
      if (s->u.copy.nhold < 0 || s->u.copy.nhold > 2 || (s->u.copy.nhold > 0) != (s->u.copy.hold_stage != NULL) ||
          (s->u.copy.nhold && !staged)) {
        fail(v, s->loc, "TMA store into '%s': a held ring stage needs a staged store and a stage",
             s->u.copy.dst.buf->name);
        return;
      }
      for (int i = 0; i < s->u.copy.nhold; i++) {
        const IrBuffer *h = s->u.copy.hold[i];
        if (!h || h->scope != IR_SCOPE_SHARED || !h->tma_bar || !h->empty_bar || h->dtype != via->dtype)
          fail(v, s->loc, "TMA store into '%s': held buffer %d is not a TMA ring of the staging dtype",
               s->u.copy.dst.buf->name, i);
      }
      if (s->u.copy.hold_stage) check_int_expr(v, s->u.copy.hold_stage, "held stage");
    } else if (!s->u.copy.dst.buf->tma_bar || s->u.copy.tma_map < 0) {
      fail(v, s->loc, "TMA copy into '%s' without an mbarrier or a tensor map", s->u.copy.dst.buf->name);
    }
    return;
  case IR_STMT_ATOMIC_ADD:
    check_region(v, &s->u.copy.src, "atomic_add source");
    check_region(v, &s->u.copy.dst, "atomic_add destination");
    if (!v->failed && (s->u.copy.dst.buf->scope != IR_SCOPE_GLOBAL || s->u.copy.dst.buf->dtype != DTYPE_F32))
      fail(v, s->loc, "atomic_add into '%s', which is not a global f32 tensor", s->u.copy.dst.buf->name);
    return;
  case IR_STMT_FILL:
    check_region(v, &s->u.fill.dst, "fill destination");
    check_expr(v, s->u.fill.value, "fill value");
    return;
  case IR_STMT_GEMM:
    check_region(v, &s->u.gemm.a, "gemm A");
    check_region(v, &s->u.gemm.b, "gemm B");
    check_region(v, &s->u.gemm.c, "gemm C");
    if (!v->failed && (unsigned)s->u.gemm.policy >= IR_GEMM_POLICY_COUNT)
      fail(v, s->loc, "gemm with a bad policy %d", (int)s->u.gemm.policy);
    return;
  case IR_STMT_REDUCE:
    check_buffer_ref(v, s->u.reduce.src, s->loc, "reduce source");
    check_buffer_ref(v, s->u.reduce.dst, s->loc, "reduce destination");
    if (v->failed) return;
    if ((unsigned)s->u.reduce.kind >= IR_REDUCE_COUNT)
      fail(v, s->loc, "reduce with a bad kind %d", (int)s->u.reduce.kind);
    else if (s->u.reduce.dim < 0 || s->u.reduce.dim >= s->u.reduce.src->rank)
      fail(v, s->loc, "reduce along dim %d of '%s', which has rank %d", s->u.reduce.dim,
           s->u.reduce.src->name, s->u.reduce.src->rank);
    return;
  case IR_STMT_ANNOTATE_LAYOUT:
    check_buffer_ref(v, s->u.annotate.buf, s->loc, "annotate_layout");
    if (!v->failed && (unsigned)s->u.annotate.layout >= IR_LAYOUT_COUNT)
      fail(v, s->loc, "annotate_layout with a bad layout %d", (int)s->u.annotate.layout);
    return;
  case IR_STMT_USE_SWIZZLE:
    check_int_expr(v, s->u.swizzle.panel_size, "use_swizzle panel size");
    return;
  case IR_STMT_BARRIER:
  case IR_STMT_ASYNC_COMMIT:
    return;
  case IR_STMT_ASYNC_WAIT:
    if (s->u.async_pending < 0) fail(v, s->loc, "cp_async_wait with %d pending groups", s->u.async_pending);
    return;
  case IR_STMT_WGMMA_WAIT:
    if (!s->u.wgmma_wait.acc || s->u.wgmma_wait.acc->scope != IR_SCOPE_FRAGMENT || s->u.wgmma_wait.pending < 0)
      fail(v, s->loc, "wgmma_wait needs a fragment accumulator");
    return;
  case IR_STMT_MBAR_WAIT:
    if (!s->u.mbar_wait.bar || !s->u.mbar_wait.bar->is_mbarrier)
      fail(v, s->loc, "mbar_wait needs an mbarrier buffer");
    check_int_expr(v, s->u.mbar_wait.stage, "mbar_wait stage");
    check_int_expr(v, s->u.mbar_wait.parity, "mbar_wait parity");
    return;
  default:
    fail(v, s->loc, "bad statement kind %d", (int)s->kind);
    return;
  }
}

static void check_kernel(Verifier *v, const IrKernel *k) {
  name_table_truncate(&v->scope, 0);
  v->stmt_loc = k->loc;
  /* Symbols first: shapes, the grid and const values may use any of them. */
  for (int i = 0; i < k->nsymbols; i++) {
    if (!k->symbols[i] || k->symbols[i]->kind != IR_VAR_SYMBOL) {
      fail(v, k->loc, "kernel '%s': symbol %d is not a SYMBOL variable", k->name, i);
      return;
    }
    push(v, k->symbols[i]);
  }
  for (int i = 0; i < k->nsymbols && !v->failed; i++) {
    const IrVar *s = k->symbols[i];
    v->stmt_loc = s->loc;
    if (s->bound) check_expr(v, s->value, "symbol value");
    if (s->default_value) check_expr(v, s->default_value, "symbol default");
  }
  for (int i = 0; i < k->nparams && !v->failed; i++) {
    const IrParam *p = &k->params[i];
    v->stmt_loc = p->loc;
    if (p->is_tensor) {
      if (!p->buffer || p->buffer->scope != IR_SCOPE_GLOBAL) {
        fail(v, p->loc, "tensor parameter '%s' without a global buffer", p->name);
        return;
      }
      check_shape(v, p->buffer);
      push(v, p->buffer);
    } else {
      if (!p->scalar || p->scalar->kind != IR_VAR_SCALAR_PARAM) {
        fail(v, p->loc, "scalar parameter '%s' without a SCALAR_PARAM variable", p->name);
        return;
      }
      push(v, p->scalar);
    }
  }
  if (v->failed) return;
  v->stmt_loc = k->loc;
  if (k->ngrid < 1 || k->ngrid > IR_MAX_GRID) {
    fail(v, k->loc, "kernel '%s' has %d grid dimensions", k->name, k->ngrid);
    return;
  }
  for (int i = 0; i < k->ngrid; i++) check_int_expr(v, k->grid[i], "grid dimension");
  check_int_expr(v, k->threads, "thread count");
  for (int i = 0; i < k->ngrid && !v->failed; i++) {
    const IrVar *b = k->block_vars[i];
    if (!b) continue;
    if (b->kind != IR_VAR_BLOCK_INDEX) {
      fail(v, b->loc, "block variable '%s' is not a BLOCK_INDEX variable", b->name);
      return;
    }
    push(v, b);
  }
  if (k->grid_size) {
    if (k->grid_size->kind != IR_VAR_GRID_SIZE || !k->persistent) {
      fail(v, k->grid_size->loc, "grid size '%s' of a kernel that is not persistent", k->grid_size->name);
      return;
    }
    push(v, k->grid_size);
  }
  const int exits_before = v->exits;
  check_block(v, k->body, "kernel body");
  if (v->failed || v->exits == exits_before) return;
  /* The block ends there, every thread at once: only at the top level, and
   * never in a kernel whose block runs on after it (persistent tiles, a
   * cluster partner still writing into this block). */
  int top = 0;
  for (int i = 0; i < k->body->u.seq.n; i++) top += k->body->u.seq.items[i]->kind == IR_STMT_EXIT;
  if (top != v->exits - exits_before)
    fail(v, k->loc, "kernel '%s': an exit statement below the top level", k->name);
  else if (k->persistent || k->cluster > 1)
    fail(v, k->loc, "kernel '%s': an exit statement in a persistent or clustered kernel", k->name);
}

bool ir_verify_module(const IrModule *m, const char *after_pass, Diag *diag) {
  Verifier v = {0};
  name_table_init(&v.scope, NULL, NAME_KEY_POINTER);
  v.pass = after_pass ? after_pass : "?";
  v.diag = diag;
  for (int i = 0; m && i < m->nkernels && !v.failed; i++) {
    if (!m->kernels[i]) {
      fail(&v, v.stmt_loc, "kernel %d is NULL", i);
      break;
    }
    check_kernel(&v, m->kernels[i]);
  }
  name_table_free(&v.scope);
  return !v.failed;
}
