/* specialize_masks.c - pass "specialize-masks": masks only where they bite.
 *
 * Needs: fold-constants (linear index arithmetic), check-shapes (constant
 * parallel extents).
 * Guarantees: a parallel nest whose body is one store of
 *     x[i, j] = if_then_else(lhs CMP rhs, a, b)
 * with lhs - rhs linear in the nest's variables (i, j), or of a conjunction
 * of such comparisons (`c1 && c2`: the attention backward's causal mask and
 * its length mask), is versioned on the condition being true for the whole
 * tile (each comparison at its own worst corner):
 *     if (<condition at the tile's worst corner>) { x[i, j] = a }   // no mask
 *     else                                       { original nest }
 * The test depends only on values outside the nest (k, bx, seq_len), so the
 * branch is uniform over the block. For flash attention this leaves the
 * causal mask to the diagonal blocks and the length mask to the last key
 * block; every other block runs the plain fill.
 * A gemm right after the nest that accumulates into x moves into both
 * branches (each gets its own copy): the unmasked branch then holds
 * `x = 0; x += A @ B`, which the CUDA compiler turns into a gemm that starts
 * from zero instead of zeroing the accumulator registers every iteration.
 * The masked nest (the else branch) compares a small 32-bit value per
 * element: with lhs - rhs = L(i, j) + R, L the nest variables' part
 * (ci * i + cj * j) and R the rest, the condition is L CMP -R, and -R is
 * bound once before the nest, clamped to [min L - 1, max L + 1] (which
 * keeps every comparison's outcome) and narrowed to i32:
 *     let tc_mask_N: i32 = i32(max(min L - 1, min(max L + 1, -R)))
 *     x[i, j] = if_then_else(i32(L) CMP tc_mask_N, a, b)
 * (flash attention's causal mask: i32(i - j) >= tc_mask_N, one compare per
 * element instead of a 64-bit one on bx * block_M + i and k * block_N + j);
 * a conjunction's masked nest is left as written.
 * Not when the selected values load from a global tensor: guard-elements
 * then tests those indices with the same comparison, which the backends'
 * compilers share with the mask only while both are written alike. */
#include "../simplify.h"
#include "passes.h"

typedef struct Nest {
  IrVar *var[2];
  int64_t extent[2];
  int n;
  IrStmt *store;
} Nest;

/* An integer comparison (<, <=, >, >=). */
static bool is_compare(const IrExpr *c) {
  return c->kind == IR_EXPR_BINARY && c->u.op.op >= IR_OP_LT && c->u.op.op <= IR_OP_GE &&
         !dtype_is_float(c->u.op.a->dtype) && !dtype_is_float(c->u.op.b->dtype);
}

/* A comparison, or a conjunction of them. */
static bool is_mask(const IrExpr *c) {
  if (c->kind == IR_EXPR_BINARY && c->u.op.op == IR_OP_AND) return is_mask(c->u.op.a) && is_mask(c->u.op.b);
  return is_compare(c);
}

static bool match_nest(IrStmt *s, Nest *n) {
  n->n = 0;
  IrStmt *cur = s;
  while (cur->kind == IR_STMT_FOR && cur->u.for_.kind == IR_FOR_PARALLEL && n->n < 2) {
    if (!ir_expr_is_int_const(cur->u.for_.extent, &n->extent[n->n])) return false;
    n->var[n->n++] = cur->u.for_.var;
    IrStmt *body = cur->u.for_.body;
    if (body->u.seq.n != 1) return false;
    cur = body->u.seq.items[0];
  }
  if (n->n == 0 || cur->kind != IR_STMT_STORE) return false;
  IrExpr *v = cur->u.store.value;
  if (v->kind == IR_EXPR_CAST) v = v->u.cast_src;
  if (v->kind != IR_EXPR_SELECT || !is_mask(v->u.select.cond)) return false;
  n->store = cur;
  return true;
}

/* The condition that holds iff cond holds for every point of the nest, or
 * NULL when it cannot be derived. */
static IrExpr *uniform_condition(IrModule *m, const Nest *n, IrExpr *cond) {
  IrOp op = cond->u.op.op;
  if (op == IR_OP_AND) {
    IrExpr *a = uniform_condition(m, n, cond->u.op.a), *b = a ? uniform_condition(m, n, cond->u.op.b) : NULL;
    return b ? ir_simplify(m, ir_binary(m, IR_OP_AND, a, b, cond->loc)) : NULL;
  }
  IrExpr *d = ir_binary(m, IR_OP_SUB, ir_expr_clone(m, cond->u.op.a), ir_expr_clone(m, cond->u.op.b), cond->loc);
  /* lhs < rhs for all points  <=>  max(d) < 0; lhs > rhs  <=>  min(d) > 0. */
  bool want_max = op == IR_OP_LT || op == IR_OP_LE;
  for (int v = 0; v < n->n; v++) {
    int64_t coef;
    if (!ir_linear_coefficient(m, d, n->var[v], &coef)) return NULL;
    int64_t corner = (coef > 0) == want_max ? n->extent[v] - 1 : 0;
    d = ir_simplify(m, ir_expr_subst(m, d, n->var[v], ir_int(m, corner, cond->loc)));
  }
  return ir_simplify(m, ir_binary(m, op, d, ir_int(m, 0, cond->loc), cond->loc));
}

/* A copy of the nest, with fresh loop variables, whose store writes the
 * select's `then` value. */
static IrStmt *unmasked_copy(IrModule *m, IrStmt *s, const Nest *n) {
  IrStmt *store = n->store;
  IrExpr *v = store->u.store.value;
  IrExpr *sel = v->kind == IR_EXPR_CAST ? v->u.cast_src : v;
  IrExpr *value = sel->u.select.then_;
  if (v->kind == IR_EXPR_CAST) value = ir_cast(m, v->dtype, value, v->loc);
  IrExpr *idx[IR_MAX_RANK];
  for (int d = 0; d < store->u.store.nidx; d++) idx[d] = store->u.store.idx[d];
  IrVar *fresh[2];
  for (int d = 0; d < n->n; d++) {
    fresh[d] = ir_var_new(m, n->var[d]->name, IR_VAR_LOOP, n->var[d]->dtype, n->var[d]->loc);
    IrExpr *ref = ir_var_ref(m, fresh[d], s->loc);
    value = ir_expr_subst(m, value, n->var[d], ref);
    for (int x = 0; x < store->u.store.nidx; x++) idx[x] = ir_expr_subst(m, idx[x], n->var[d], ref);
  }
  IrStmt *inner = ir_store_new(m, store->u.store.buf, idx, value, store->loc);
  inner->u.store.atomic = store->u.store.atomic;
  for (int d = n->n - 1; d >= 0; d--) {
    IrStmt *body = ir_seq_new(m, s->loc);
    ir_seq_push(m, body, inner);
    inner = ir_for_new(m, IR_FOR_PARALLEL, fresh[d], ir_int(m, n->extent[d], s->loc), body, s->loc);
  }
  return inner;
}

static void find_global_load(const IrExpr *e, void *ctx) {
  if (e->kind == IR_EXPR_LOAD && e->u.load.buf->scope == IR_SCOPE_GLOBAL) *(bool *)ctx = true;
}

/* Rewrites the masked nest's condition into a 32-bit comparison of the
 * nest variables' part against a bound computed once (see the top); returns
 * the LET to put before the nest, or NULL when the condition is not linear
 * with constant coefficients (the nest is then left as it is). */
static IrStmt *narrow_condition(IrModule *m, const Nest *n) {
  IrExpr *v = n->store->u.store.value;
  IrExpr *sel = v->kind == IR_EXPR_CAST ? v->u.cast_src : v;
  IrExpr *cond = sel->u.select.cond;
  SrcLoc loc = cond->loc;
  if (!is_compare(cond)) return NULL; /* a conjunction stays as written */
  /* A global load in the selected values gets guard-elements' test on its
   * indices, which usually is this very condition (a key past seq_len):
   * written the same, the two are one compare; narrowed, they are two. */
  bool global_load = false;
  ir_expr_visit(sel->u.select.then_, find_global_load, &global_load);
  ir_expr_visit(sel->u.select.else_, find_global_load, &global_load);
  if (global_load) return NULL;
  IrExpr *d = ir_simplify(m, ir_binary(m, IR_OP_SUB, ir_expr_clone(m, cond->u.op.a), ir_expr_clone(m, cond->u.op.b), loc));
  IrExpr *part = NULL;
  int64_t lo = 0, hi = 0;
  for (int k = 0; k < n->n; k++) {
    int64_t coef;
    if (!ir_linear_coefficient(m, d, n->var[k], &coef)) return NULL;
    if (coef == 0) continue;
    int64_t far = coef * (n->extent[k] - 1);
    lo += far < 0 ? far : 0;
    hi += far > 0 ? far : 0;
    IrExpr *t = ir_binary(m, IR_OP_MUL, ir_int(m, coef, loc), ir_var_ref(m, n->var[k], loc), loc);
    part = part ? ir_binary(m, IR_OP_ADD, part, t, loc) : t;
  }
  if (!part) return NULL; /* no nest variable: the condition is uniform */
  part = ir_simplify(m, part);
  IrExpr *rest = ir_simplify(m, ir_binary(m, IR_OP_SUB, ir_expr_clone(m, d), ir_expr_clone(m, part), loc));
  for (int k = 0; k < n->n; k++) { /* rest must not depend on the nest */
    int64_t coef;
    if (!ir_linear_coefficient(m, rest, n->var[k], &coef) || coef != 0) return NULL;
  }
  IrExpr *bound = ir_simplify(m, ir_binary(m, IR_OP_SUB, ir_int(m, 0, loc), rest, loc));
  bound = ir_call(m, IR_INTRINSIC_MIN, ir_int(m, hi + 1, loc), bound, loc);
  bound = ir_call(m, IR_INTRINSIC_MAX, ir_int(m, lo - 1, loc), bound, loc);
  IrVar *var = ir_var_new(m, arena_printf(m->arena, "tc_mask_%d", m->next_id), IR_VAR_LET, DTYPE_I32, loc);
  IrStmt *let = ir_stmt_new(m, IR_STMT_LET, loc);
  let->u.let.var = var;
  let->u.let.value = ir_cast(m, DTYPE_I32, bound, loc);
  sel->u.select.cond = ir_binary(m, cond->u.op.op, ir_cast(m, DTYPE_I32, part, loc), ir_var_ref(m, var, loc), loc);
  return let;
}

static void version(IrModule *m, IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++) {
    IrStmt *s = seq->u.seq.items[i];
    switch (s->kind) {
    case IR_STMT_FOR:
      if (s->u.for_.kind != IR_FOR_PARALLEL) {
        version(m, s->u.for_.body);
        break;
      }
      {
        Nest n;
        if (!match_nest(s, &n)) break;
        IrExpr *v = n.store->u.store.value;
        IrExpr *sel = v->kind == IR_EXPR_CAST ? v->u.cast_src : v;
        IrExpr *u = uniform_condition(m, &n, sel->u.select.cond);
        int64_t known;
        if (!u || ir_expr_is_int_const(u, &known)) break; /* constant: fold-constants' job */
        IrStmt *then_ = ir_seq_new(m, s->loc), *else_ = ir_seq_new(m, s->loc);
        ir_seq_push(m, then_, unmasked_copy(m, s, &n));
        IrStmt *let = narrow_condition(m, &n);
        if (let) ir_seq_push(m, else_, let);
        ir_seq_push(m, else_, s);
        IrStmt *next = i + 1 < seq->u.seq.n ? seq->u.seq.items[i + 1] : NULL;
        if (next && next->kind == IR_STMT_GEMM && next->u.gemm.c.buf == n.store->u.store.buf) {
          ir_seq_push(m, then_, next);
          ir_seq_push(m, else_, ir_stmt_clone_tile_op(m, next));
          ir_seq_remove(seq, i + 1);
        }
        seq->u.seq.items[i] = ir_if_new(m, u, then_, else_, s->loc);
      }
      break;
    case IR_STMT_IF:
      version(m, s->u.if_.then_);
      if (s->u.if_.else_) version(m, s->u.if_.else_);
      break;
    case IR_STMT_SEQ:
      version(m, s);
      break;
    default:
      break;
    }
  }
}

bool pass_specialize_masks(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int i = 0; i < m->nkernels; i++) version(m, m->kernels[i]->body);
  return true;
}
