/* trim_masked_iterations.c - pass "trim-masked-iterations" (GPU, sm_90a):
 * each consumer warpgroup of a causal loop stops at its own rows' diagonal;
 * with one warpgroup, a last key block the mask half hides runs on half.
 *
 * Needs: warp-specialize (the consumers' `for k in pipelined(n)`, its
 * mbar_waits on full barriers and mbar_arrives on empty ones, in the order
 * it left them), specialize-masks (either form of the mask below).
 * Pattern: a kernel of C >= 2 consumer warpgroups whose loop body masks a
 * fragment with -inf (S after its gemm, or the gemm's start: v = S or 0),
 *     x[i, j] = if_then_else(P(i, j, k), v, -inf)
 * (or specialize-masks' narrowed `i32(L) CMP tc_mask_N`), P a comparison
 * linear in i, j and k whose kept side shrinks as k grows (causal
 * attention: bx * block_M + i >= k * block_N + j), and whose trip count is
 * the mask's own end for the block, `F` or `min(X, F)`, F the first k at
 * which P hides every element of the tile from every row. That bound is the
 * kernel saying a block its mask hides entirely contributes nothing (it
 * stops there); the pass applies the same to each warpgroup's rows, which
 * see their last key up to block_M - block_M / C rows earlier:
 *     consumers as (warpgroup) {
 *       let k_rows = min(n, F(warpgroup))      // the first k hidden from its rows
 *       for k in pipelined(k_rows) { ...unchanged... }
 *       for k_released in serial(n - k_rows) { // the stages the others still read
 *         mbar_wait B_full[...]; mbar_arrive B_empty[...]   // the body's, at k_rows + k_released
 *       }
 *     }
 * Waiting for a stage before releasing it keeps each empty barrier's
 * arrivals in their phase (an early arrival would count toward the stage's
 * previous fill). With 192-row causal tiles and 128-key blocks the first
 * two warpgroups skip up to a block per tile, 3 % of the tensor work at
 * seq_len 4096: on an H100 3-4 % faster there, 1-2 % at 8192
 * (bench/results/2026-11-25-nvidia-h100-session14-notes.md).
 * The masked fragment must feed an exp2 (or exp) in the loop, so a hidden
 * element weighs exactly 0: the softmax the bound's promise rests on.
 * Rows must not meet across warpgroups inside the loop, so the loop may
 * write only fragments whose rows the warpgroups split (MMA_C, warps only
 * along the rows, or row vectors of one), reduce only along the rows, run
 * only full_row wgmma gemms, and hold no block barrier; mbarriers aside it
 * writes no shared or global memory. Where no warpgroup's bound can differ
 * from the block's (a mask that ignores the row, such as the length mask of
 * the last key block; block_M a multiple of block_N with the warpgroup that
 * sees least still reaching the block's last key block: dim 128's 128 x 128
 * tiles), or anything above does not hold, the kernel is left as it is.
 *
 * One consumer warpgroup (the 64 x 128 dim 64 causal kernel, which
 * inline-producer folds back) has no rows to split, but a query tile with
 * an even index ends half-way into its last 128-key block: keys 64..127 of
 * it are hidden from every row, yet S, the softmax and P V ran over all
 * 128. The same checks hold, and then
 *     let k_half = (n > 0 && iteration n - 1 hides columns [N/2, N) from every row) ? 1 : 0
 *     for k in pipelined(n - k_half) { ...unchanged... }
 *     if (k_half > 0) { let k_last = n - 1; the body, on S and P halves
 *       ([rows, N/2], the first half of the layout's columns) and the first
 *       N/2 key rows of the K and V stages }
 * overlap-wgmma drains the loop's last P V before it; inline-producer
 * refills from the producer's trip count, so the last stage still loads.
 * Not where K or V is stored in panels (dims 48, 80, 96, 128 and up): a
 * gemm over half the rows would step between panels by the wrong stride.
 * Written as straight-line code after the loop, not as a predicated choice
 * between two wgmma shapes in it (ptxas then injected warpgroup.arrive:
 * 3-4 % slower, session 12). H100, dim 64 causal 2048: 0.98 -> 0.99x
 * cuDNN, 1024 0.97-0.99 -> 0.99-1.00 (session 14 notes, calls 12-14). */
#include <math.h>

#include "passes.h"
#include "../simplify.h"

enum { MAX_LETS = 256 };

typedef struct Lets {
  IrStmt *let[MAX_LETS];
  int n;
} Lets;

static void note_let(IrStmt *s, void *ctx) {
  Lets *l = ctx;
  if (s->kind == IR_STMT_LET && l->n < MAX_LETS) l->let[l->n++] = s;
}

static const IrExpr *let_value(const Lets *l, const IrVar *v) {
  for (int i = 0; i < l->n; i++)
    if (l->let[i]->u.let.var == v) return l->let[i]->u.let.value;
  return NULL;
}

/* An integer cast of an integer expression (specialize-masks' i32 narrowing)
 * stripped: the mask's values fit. */
static const IrExpr *uncast(const IrExpr *e) {
  while (e->kind == IR_EXPR_CAST && !dtype_is_float(e->dtype) && !dtype_is_float(e->u.cast_src->dtype)) e = e->u.cast_src;
  return e;
}

/* ---- the mask ------------------------------------------------------------ */

typedef struct Mask {
  IrVar *i, *j;       /* the nest's row and column variables */
  int64_t rows, cols; /* their extents */
  IrBuffer *frag;
  IrExpr *keep;       /* D: element (i, j) is kept iff D >= 0 */
  int found;          /* masks seen (one is wanted) */
  const Lets *lets;
  IrModule *m;
} Mask;

static bool nest_range(const IrVar *v, void *ctx, int64_t *lo, int64_t *hi) {
  const Mask *k = ctx;
  if (v == k->i || v == k->j) {
    *lo = 0, *hi = (v == k->i ? k->rows : k->cols) - 1;
    return true;
  }
  return false;
}

/* specialize-masks' narrowed bound `i32(max(lo, min(hi, E)))`, compared
 * with an L whose range over the nest lies strictly inside (lo, hi): the
 * clamp changes no outcome, so the comparison is one with E. */
static const IrExpr *unclamp(const Mask *k, const IrExpr *bound, const IrExpr *other) {
  const IrExpr *e = uncast(bound);
  if (e->kind == IR_EXPR_VAR && e->u.var->kind == IR_VAR_LET) {
    const IrExpr *v = let_value(k->lets, e->u.var);
    if (!v) return bound;
    e = uncast(v);
  }
  if (e->kind != IR_EXPR_CALL || e->u.call.fn != IR_INTRINSIC_MAX) return bound;
  const IrExpr *mn = e->u.call.args[1];
  int64_t lo, hi, olo, ohi;
  if (!ir_expr_is_int_const(e->u.call.args[0], &lo) || mn->kind != IR_EXPR_CALL || mn->u.call.fn != IR_INTRINSIC_MIN ||
      !ir_expr_is_int_const(mn->u.call.args[0], &hi) || !ir_int_range(other, nest_range, (void *)k, &olo, &ohi) ||
      !(lo < olo && ohi < hi))
    return bound;
  return mn->u.call.args[1];
}

/* D >= 0 for the comparison c that keeps an element, or NULL. */
static IrExpr *kept_difference(Mask *k, const IrExpr *c, bool negate) {
  if (c->kind == IR_EXPR_UNARY && c->u.op.op == IR_OP_NOT) return kept_difference(k, c->u.op.a, !negate);
  if (c->kind != IR_EXPR_BINARY || c->u.op.op < IR_OP_LT || c->u.op.op > IR_OP_GE) return NULL;
  IrModule *m = k->m;
  const IrExpr *a = uncast(c->u.op.a), *b = uncast(c->u.op.b);
  if (dtype_is_float(a->dtype) || dtype_is_float(b->dtype)) return NULL;
  b = uncast(unclamp(k, c->u.op.b, a));
  a = uncast(unclamp(k, c->u.op.a, b));
  IrOp op = c->u.op.op;
  if (negate) op = op == IR_OP_LT ? IR_OP_GE : op == IR_OP_LE ? IR_OP_GT : op == IR_OP_GT ? IR_OP_LE : IR_OP_LT;
  /* a >= b: a - b >= 0; a > b: a - b - 1 >= 0; a <= b: b - a >= 0; a < b: b - a - 1 >= 0 */
  bool ge = op == IR_OP_GE || op == IR_OP_GT;
  IrExpr *d = ge ? ir_binary(m, IR_OP_SUB, ir_expr_clone(m, a), ir_expr_clone(m, b), c->loc)
                 : ir_binary(m, IR_OP_SUB, ir_expr_clone(m, b), ir_expr_clone(m, a), c->loc);
  if (op == IR_OP_GT || op == IR_OP_LT) d = ir_binary(m, IR_OP_SUB, d, ir_int(m, 1, c->loc), c->loc);
  return ir_simplify(m, d);
}

static bool is_neg_inf(const IrExpr *e) {
  return e->kind == IR_EXPR_FLOAT && isinf(e->u.float_value) && e->u.float_value < 0;
}

/* for i in parallel(R) { for j in parallel(N) { x[i, j] = if_then_else(P, v, -inf) } } */
static void note_mask(IrStmt *s, void *ctx) {
  Mask *k = ctx;
  if (s->kind != IR_STMT_FOR || s->u.for_.kind != IR_FOR_PARALLEL) return;
  IrStmt *inner = s->u.for_.body->u.seq.n == 1 ? s->u.for_.body->u.seq.items[0] : NULL;
  if (!inner || inner->kind != IR_STMT_FOR || inner->u.for_.kind != IR_FOR_PARALLEL || inner->u.for_.body->u.seq.n != 1)
    return;
  IrStmt *st = inner->u.for_.body->u.seq.items[0];
  IrVar *i = s->u.for_.var, *j = inner->u.for_.var;
  if (st->kind != IR_STMT_STORE || st->u.store.atomic || st->u.store.buf->scope != IR_SCOPE_FRAGMENT) return;
  IrBuffer *x = st->u.store.buf;
  IrExpr *v = st->u.store.value;
  if (v->kind != IR_EXPR_SELECT || st->u.store.nidx != 2 || st->u.store.idx[0]->kind != IR_EXPR_VAR ||
      st->u.store.idx[0]->u.var != i || st->u.store.idx[1]->kind != IR_EXPR_VAR || st->u.store.idx[1]->u.var != j)
    return;
  /* -inf where hidden: on S after its gemm, or as the gemm's start (0 where
   * kept) */
  bool keep_then = is_neg_inf(v->u.select.else_) && !is_neg_inf(v->u.select.then_);
  bool keep_else = is_neg_inf(v->u.select.then_) && !is_neg_inf(v->u.select.else_);
  if (!keep_then && !keep_else) return;
  Mask probe = *k;
  probe.i = i, probe.j = j, probe.frag = x;
  if (!ir_expr_is_int_const(s->u.for_.extent, &probe.rows) || !ir_expr_is_int_const(inner->u.for_.extent, &probe.cols))
    return;
  IrExpr *d = kept_difference(&probe, v->u.select.cond, keep_else);
  k->found++;
  if (!d) return;
  k->i = i, k->j = j, k->frag = x, k->rows = probe.rows, k->cols = probe.cols, k->keep = d;
}

/* The masked fragment feeds a softmax: some store in the loop takes exp2 (or
 * exp) of an expression that reads it, so a hidden element weighs exactly 0
 * (exp2(-inf) = 0). A loop that uses the -inf otherwise (counts, sums of S)
 * is left alone even when its bound matches. */
typedef struct ExpUse {
  const IrBuffer *x;
  bool found;
} ExpUse;

static void note_exp(const IrExpr *e, void *ctx) {
  ExpUse *u = ctx;
  if (e->kind == IR_EXPR_CALL && (e->u.call.fn == IR_INTRINSIC_EXP2 || e->u.call.fn == IR_INTRINSIC_EXP) &&
      ir_expr_buffer_loads(e->u.call.args[0], u->x) > 0)
    u->found = true;
}

static void note_exp_store(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_STORE) ir_expr_visit(s->u.store.value, note_exp, ctx);
}

static bool feeds_softmax(IrStmt *body, const IrBuffer *x) {
  ExpUse u = {x, false};
  ir_visit_stmts(body, note_exp_store, &u);
  return u.found;
}

/* ---- rows stay within their warpgroup --------------------------------------- */

typedef struct Rows {
  int warps; /* consumer warps */
  int64_t rows;
  bool ok;
} Rows;

/* Split over the warps along its rows only, rows / warps each in warp order. */
static bool rows_by_warp(const IrBuffer *b, const Rows *r) {
  const IrLayout *l = &b->layout;
  return b->scope == IR_SCOPE_FRAGMENT && l->frag == IR_FRAG_MMA_C && l->warps_n == 1 && l->warps_m == r->warps &&
         l->warp_order == IR_WARP_ORDER_ROWS && l->rows == r->rows;
}

static void check_fragment(Rows *r, const IrBuffer *b) {
  if (b && b->scope == IR_SCOPE_FRAGMENT && !rows_by_warp(b, r)) r->ok = false;
}

static void check_load(const IrExpr *e, void *ctx) {
  if (e->kind == IR_EXPR_LOAD) check_fragment(ctx, e->u.load.buf);
}

static void check_rows(IrStmt *s, void *ctx) {
  Rows *r = ctx;
  ir_stmt_visit_exprs(s, check_load, r);
  switch (s->kind) {
  case IR_STMT_GEMM:
    if (!s->u.gemm.wgmma || s->u.gemm.policy != IR_GEMM_POLICY_FULL_ROW || s->u.gemm.trans_a) r->ok = false;
    check_fragment(r, s->u.gemm.a.buf);
    check_fragment(r, s->u.gemm.c.buf);
    break;
  case IR_STMT_REDUCE:
    if (s->u.reduce.dim != 1 || s->u.reduce.scratch) r->ok = false;
    check_fragment(r, s->u.reduce.src);
    check_fragment(r, s->u.reduce.dst);
    break;
  case IR_STMT_COPY: check_fragment(r, s->u.copy.src.buf); check_fragment(r, s->u.copy.dst.buf); break;
  case IR_STMT_FILL: check_fragment(r, s->u.fill.dst.buf); break;
  case IR_STMT_STORE: check_fragment(r, s->u.store.buf); break;
  case IR_STMT_WG_TURN: r->ok = false; break;
  default: break;
  }
}

/* Rows independent per warpgroup, no barrier, memory written only in
 * fragments (and the empty mbarriers' arrivals). */
static bool rows_stay(IrStmt *body, int warps, int64_t rows) {
  PassEffects e = pass_effects(body);
  if (e.barrier || e.overflow) return false;
  for (int i = 0; i < e.nwrites; i++) {
    const IrBuffer *b = e.writes[i];
    if (b->scope != IR_SCOPE_FRAGMENT && b->scope != IR_SCOPE_LOCAL && !b->is_mbarrier) return false;
  }
  Rows r = {warps, rows, true};
  ir_visit_stmts(body, check_rows, &r);
  return r.ok;
}

/* ---- the rewrite ------------------------------------------------------------ */

/* The mask as D(i, j, k) = ci i + cj j + a k + r, a < 0 (more of the tile
 * hidden as k grows), r free of i, j and k. */
typedef struct Form {
  int64_t ci, cj, a;
  IrExpr *r;
} Form;

static bool mask_form(IrModule *m, const Mask *mk, IrVar *kv, Form *f) {
  SrcLoc loc = mk->keep->loc;
  if (!ir_linear_coefficient(m, mk->keep, mk->i, &f->ci) || !ir_linear_coefficient(m, mk->keep, mk->j, &f->cj) ||
      !ir_linear_coefficient(m, mk->keep, kv, &f->a) || f->a >= 0)
    return false;
  IrExpr *zero = ir_int(m, 0, loc);
  f->r = ir_simplify(m, ir_expr_subst(m, ir_expr_subst(m, ir_expr_subst(m, mk->keep, mk->i, zero), mk->j, zero), kv, zero));
  /* exactly linear: D - (ci i + cj j + a k + r) folds to 0 */
  IrExpr *lin = ir_binary(m, IR_OP_MUL, ir_int(m, f->ci, loc), ir_var_ref(m, mk->i, loc), loc);
  lin = ir_binary(m, IR_OP_ADD, lin, ir_binary(m, IR_OP_MUL, ir_int(m, f->cj, loc), ir_var_ref(m, mk->j, loc), loc), loc);
  lin = ir_binary(m, IR_OP_ADD, lin, ir_binary(m, IR_OP_MUL, ir_int(m, f->a, loc), ir_var_ref(m, kv, loc), loc), loc);
  lin = ir_binary(m, IR_OP_ADD, lin, ir_expr_clone(m, f->r), loc);
  int64_t rest;
  return ir_expr_is_int_const(ir_simplify(m, ir_binary(m, IR_OP_SUB, ir_expr_clone(m, mk->keep), lin, loc)), &rest) &&
         rest == 0;
}

/* max over rows [lo, hi] and the tile's columns of ci i + cj j, plus 1:
 * with r, the numerator of the first hidden k. */
static IrExpr *reach(IrModule *m, const Mask *mk, const Form *f, IrExpr *lo, IrExpr *hi, SrcLoc loc) {
  IrExpr *row = ir_binary(m, IR_OP_MUL, ir_int(m, f->ci, loc), f->ci > 0 ? hi : lo, loc);
  return ir_simplify(m, ir_binary(m, IR_OP_ADD, row, ir_int(m, (f->cj > 0 ? f->cj * (mk->cols - 1) : 0) + 1, loc), loc));
}

/* The first k whose tile D hides from every row whose reach is `reach`:
 * a k + max(ci i + cj j) + r < 0 from k = ceildiv(r + reach, -a) on. NULL
 * when the numerator may be negative. */
static IrExpr *first_hidden(IrModule *m, const Form *f, IrExpr *reach, SrcLoc loc) {
  IrExpr *numer = ir_simplify(m, ir_binary(m, IR_OP_ADD, ir_expr_clone(m, f->r), reach, loc));
  if (!ir_int_nonneg(numer, NULL, NULL, NULL)) return NULL;
  return ir_simplify(m, ir_call(m, IR_INTRINSIC_CEILDIV, numer, ir_int(m, -f->a, loc), loc));
}

/* Whether some warpgroup can stop before the block: not when the mask
 * ignores the row (ci = 0: a length mask), nor when r is a multiple of -a
 * (ceildiv(r + c, -a) = r / -a + ceildiv(c, -a)) and the reach of the
 * warpgroup that sees least ends in the block's last key block. */
static bool may_gain(const Form *f, const IrExpr *least_reach, const IrExpr *block_reach) {
  int64_t c1, c2;
  if (f->ci == 0) return false;
  if (!ir_int_multiple_of(f->r, -f->a) || !ir_expr_is_int_const(least_reach, &c1) ||
      !ir_expr_is_int_const(block_reach, &c2))
    return true;
  return c1 <= 0 || c2 <= 0 || (c1 - 1) / -f->a != (c2 - 1) / -f->a;
}

/* n through the lets, when it is F or min(X, F) / min(F, X). */
static bool bound_is(const Lets *lets, const IrExpr *n, const IrExpr *f) {
  for (int depth = 0; depth < 8 && n->kind == IR_EXPR_VAR && n->u.var->kind == IR_VAR_LET; depth++) {
    const IrExpr *v = let_value(lets, n->u.var);
    if (!v) return false;
    n = v;
  }
  if (ir_expr_equal(n, f)) return true;
  return n->kind == IR_EXPR_CALL && n->u.call.fn == IR_INTRINSIC_MIN &&
         (ir_expr_equal(n->u.call.args[0], f) || ir_expr_equal(n->u.call.args[1], f));
}

/* The body's stage waits and releases, at iteration `at`. */
static IrStmt *releases(IrModule *m, IrStmt *body, IrVar *kv, IrExpr *at, SrcLoc loc) {
  IrStmt *seq = ir_seq_new(m, loc);
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (s->kind == IR_STMT_MBAR_WAIT || s->kind == IR_STMT_MBAR_ARRIVE) ir_seq_push(m, seq, pass_clone_stmt(m, s));
  }
  pass_subst_var(m, seq, kv, at);
  return seq;
}

/* Every wait and release of the body at its top level, each wait before
 * its stage's release: the release loop replays them. */
static bool barriers_at_top(IrStmt *body) {
  int waits = 0, arrives = 0, nested = 0;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (s->kind == IR_STMT_MBAR_WAIT) waits++;
    else if (s->kind == IR_STMT_MBAR_ARRIVE) arrives++;
    else {
      PassEffects e = pass_effects(s);
      for (int w = 0; w < e.nwrites; w++) nested += e.writes[w]->is_mbarrier;
      for (int w = 0; w < e.nreads; w++) nested += e.reads[w]->is_mbarrier;
    }
  }
  return waits > 0 && waits == arrives && nested == 0;
}

/* ---- one warpgroup: the half-hidden last key block ------------------------ */

/* S and P of a key block (the masked scores and the gemm operand made from
 * them) and their copies over the first half of the keys. */
typedef struct Narrow {
  IrBuffer *from[2], *to[2];
  int64_t cols;
  bool ok;
} Narrow;

static IrBuffer *narrowed(const Narrow *n, const IrBuffer *b) {
  for (int i = 0; i < 2; i++)
    if (n->from[i] == b) return n->to[i];
  return NULL;
}

/* A fragment [rows, cols / 2] laid out like b over its first columns. */
static IrBuffer *half_of(IrModule *m, IrBuffer *b) {
  int64_t rows, cols;
  if (b->rank != 2 || !ir_expr_is_int_const(b->shape[0], &rows) || !ir_expr_is_int_const(b->shape[1], &cols) ||
      b->layout.frag != IR_FRAG_MMA_C || b->layout.cols_local % 2)
    return NULL;
  IrExpr *shape[2] = {ir_int(m, rows, b->shape[0]->loc), ir_int(m, cols / 2, b->shape[1]->loc)};
  IrBuffer *h = ir_buffer_new(m, arena_printf(m->arena, "%s_half", b->name), b->dtype, IR_SCOPE_FRAGMENT, 2, shape, b->loc);
  h->layout = b->layout;
  h->layout.cols /= 2;
  h->layout.cols_local /= 2;
  return h;
}

/* A whole-buffer region of S or P moves to its half. */
static void narrow_region(IrModule *m, Narrow *n, IrRegion *r) {
  IrBuffer *h = narrowed(n, r->buf);
  if (!h) return;
  int64_t e, st;
  if (r->rank != 2 || !ir_expr_is_int_const(r->extent[1], &e) || e != n->cols ||
      !ir_expr_is_int_const(r->start[1], &st) || st != 0) {
    n->ok = false;
    return;
  }
  r->buf = h;
  r->extent[1] = ir_int(m, n->cols / 2, r->loc);
}

/* A gemm's B region (K or V) keeps the first half of its key rows: tile
 * dim `tile_dim` of the region. Not of a tile stored in panels (rows of
 * other than 32, 64 or 128 bytes: dims 48, 80, 96, 128 and up): the gemm
 * would step from panel to panel by the half's row count. */
static void narrow_keys(IrModule *m, Narrow *n, IrRegion *b, int tile_dim) {
  if (b->buf->layout.panel_cols) {
    n->ok = false;
    return;
  }
  int seen = 0;
  for (int d = 0; d < b->rank; d++) {
    if (b->is_index[d] || seen++ != tile_dim) continue;
    int64_t e;
    if (!ir_expr_is_int_const(b->extent[d], &e) || e != n->cols) break;
    b->extent[d] = ir_int(m, n->cols / 2, b->loc);
    return;
  }
  n->ok = false;
}

/* The peeled body's expressions are its own (pass_clone_stmt): loads of S and P
 * move to the halves in place. */
static void narrow_load(const IrExpr *e, void *ctx) {
  IrBuffer *h = e->kind == IR_EXPR_LOAD ? narrowed(ctx, e->u.load.buf) : NULL;
  if (h) ((IrExpr *)e)->u.load.buf = h;
}

typedef struct NarrowCtx {
  IrModule *m;
  Narrow *n;
  const IrVar *col; /* narrow_nests: the nest variable being classified */
  bool narrow, other;
} NarrowCtx;

static void narrow_stmt(IrStmt *s, void *ctx) {
  NarrowCtx *c = ctx;
  IrModule *m = c->m;
  Narrow *n = c->n;
  ir_stmt_visit_exprs(s, narrow_load, n);
  switch (s->kind) {
  case IR_STMT_COPY: narrow_region(m, n, &s->u.copy.src); narrow_region(m, n, &s->u.copy.dst); break;
  case IR_STMT_FILL: narrow_region(m, n, &s->u.fill.dst); break;
  case IR_STMT_GEMM: {
    const bool makes_s = narrowed(n, s->u.gemm.c.buf) != NULL, reads_p = narrowed(n, s->u.gemm.a.buf) != NULL;
    if (makes_s == reads_p) { /* each gemm makes S or reads P */
      n->ok = false;
      return;
    }
    /* S = A B^T with B [keys, K]; O += P B with B [keys, N] (tile dims) */
    narrow_keys(m, n, &s->u.gemm.b, makes_s != s->u.gemm.trans_b ? 1 : 0);
    narrow_region(m, n, &s->u.gemm.a);
    narrow_region(m, n, &s->u.gemm.c);
    break;
  }
  case IR_STMT_REDUCE:
    if (narrowed(n, s->u.reduce.dst)) n->ok = false;
    else if (narrowed(n, s->u.reduce.src)) s->u.reduce.src = narrowed(n, s->u.reduce.src);
    break;
  case IR_STMT_STORE:
    if (narrowed(n, s->u.store.buf)) s->u.store.buf = narrowed(n, s->u.store.buf);
    break;
  default: break;
  }
}

/* Whether buffer b, indexed [.., idx1], takes the nest variable as its
 * column: a half (narrow) or another buffer (other). */
static void classify_column(NarrowCtx *c, const IrBuffer *b, IrExpr *const *idx, int nidx) {
  if (nidx != 2 || idx[1]->kind != IR_EXPR_VAR || idx[1]->u.var != c->col) return;
  if (b == c->n->to[0] || b == c->n->to[1]) c->narrow = true;
  else c->other = true;
}

static void column_load(const IrExpr *e, void *ctx) {
  if (e->kind == IR_EXPR_LOAD) classify_column(ctx, e->u.load.buf, e->u.load.idx, e->u.load.nidx);
}

static void column_stmt(IrStmt *s, void *ctx) {
  ir_stmt_visit_exprs(s, column_load, ctx);
  if (s->kind == IR_STMT_STORE) classify_column(ctx, s->u.store.buf, s->u.store.idx, s->u.store.nidx);
}

/* A parallel nest whose variable is the column of S or P runs over half
 * of the keys (one that also indexes another buffer's columns stops the
 * peel). */
static void narrow_nests(IrStmt *s, void *ctx) {
  NarrowCtx *c = ctx;
  if (s->kind != IR_STMT_FOR || s->u.for_.kind != IR_FOR_PARALLEL) return;
  c->col = s->u.for_.var, c->narrow = c->other = false;
  ir_visit_stmts(s->u.for_.body, column_stmt, c);
  int64_t e;
  if (!c->narrow) return;
  if (c->other || !ir_expr_is_int_const(s->u.for_.extent, &e) || e != c->n->cols) c->n->ok = false;
  else s->u.for_.extent = ir_int(c->m, c->n->cols / 2, s->loc);
}

/* The fragment the body's second gemm reads: P, made from S by a copy. */
static IrBuffer *operand_of_scores(IrStmt *body, const IrBuffer *s_buf) {
  IrBuffer *p = NULL;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *st = body->u.seq.items[i];
    if (st->kind == IR_STMT_COPY && st->u.copy.src.buf == s_buf && st->u.copy.dst.buf->scope == IR_SCOPE_FRAGMENT)
      p = st->u.copy.dst.buf;
  }
  return p;
}

/* With one warpgroup, a last key block whose second half the mask hides
 * from every row runs on its first half: the loop stops one early where
 * `<k>_half` is 1 and the block's body follows, on S and P of half the
 * columns and the first half of the K and V stages. */
static bool peel_half(IrModule *m, IrKernel *k, IrStmt *consumer, int at, const Mask *mk, const Form *f) {
  IrStmt *loop = consumer->u.seq.items[at], *body = loop->u.for_.body;
  IrVar *kv = loop->u.for_.var;
  SrcLoc loc = loop->loc;
  IrBuffer *p_buf = operand_of_scores(body, mk->frag);
  /* the hidden half is the upper one (cj < 0), a wgmma width apart */
  if (f->cj >= 0 || mk->cols % 32 || !p_buf || pass_alloc_index(k, mk->frag) < 0 || pass_alloc_index(k, p_buf) < 0) return false;
  /* half: n > 0 and iteration n - 1 hides columns [cols / 2, cols) from
   * every row: r + max(ci i) + cj cols / 2 + a (n - 1) < 0 (not when that
   * folds to false: sizes bound by -D) */
  IrExpr *nx = loop->u.for_.extent;
  IrExpr *last = ir_binary(m, IR_OP_SUB, ir_expr_clone(m, nx), ir_int(m, 1, loc), loc);
  const int64_t c_max = (f->ci > 0 ? f->ci * (mk->rows - 1) : 0) + f->cj * (mk->cols / 2);
  IrExpr *top = ir_binary(m, IR_OP_ADD, ir_binary(m, IR_OP_ADD, ir_expr_clone(m, f->r), ir_int(m, c_max, loc), loc),
                          ir_binary(m, IR_OP_MUL, ir_int(m, f->a, loc), ir_expr_clone(m, last), loc), loc);
  IrExpr *cond = ir_simplify(m, ir_binary(m, IR_OP_AND, ir_binary(m, IR_OP_GT, ir_expr_clone(m, nx), ir_int(m, 0, loc), loc),
                                          ir_binary(m, IR_OP_LT, top, ir_int(m, 0, loc), loc), loc));
  int64_t never;
  if (ir_expr_is_int_const(cond, &never) && !never) return false;
  IrBuffer *half_s = half_of(m, mk->frag), *half_p = half_of(m, p_buf);
  IrStmt *peel = half_s && half_p ? pass_clone_stmt(m, body) : NULL;
  if (!peel) return false;
  Narrow n = {{mk->frag, p_buf}, {half_s, half_p}, mk->cols, true};
  NarrowCtx c = {m, &n, NULL, false, false};
  ir_visit_stmts(peel, narrow_stmt, &c);
  ir_visit_stmts(peel, narrow_nests, &c);
  if (!n.ok) return false;

  pass_alloc_after(m, k, mk->frag, half_s);
  pass_alloc_after(m, k, p_buf, half_p);
  IrVar *half = ir_var_new(m, arena_printf(m->arena, "%s_half", kv->name), IR_VAR_LET, DTYPE_I64, loc);
  IrStmt *let_half = pass_let(m, half, ir_select(m, cond, ir_int(m, 1, loc), ir_int(m, 0, loc), loc), loc);
  loop->u.for_.extent = ir_binary(m, IR_OP_SUB, ir_expr_clone(m, nx), ir_var_ref(m, half, loc), loc);

  IrVar *kl = ir_var_new(m, arena_printf(m->arena, "%s_last", kv->name), IR_VAR_LET, DTYPE_I64, loc);
  pass_subst_var(m, peel, kv, ir_var_ref(m, kl, loc));
  ir_seq_insert(m, peel, 0, pass_let(m, kl, last, loc));
  IrStmt *when = ir_if_new(m, ir_binary(m, IR_OP_GT, ir_var_ref(m, half, loc), ir_int(m, 0, loc), loc), peel, NULL, loc);
  ir_seq_insert(m, consumer, at, let_half);
  ir_seq_insert(m, consumer, at + 2, when);
  return true;
}

static void trim(IrModule *m, IrKernel *k, IrStmt *roles, const Lets *lets) {
  IrStmt *consumer = roles->u.roles.consumer;
  const int warps = roles->u.roles.producer_warp, groups = warps / 4;
  if (groups < 1 || warps % 4) return;
  for (int at = 0; at < consumer->u.seq.n; at++) {
    IrStmt *loop = consumer->u.seq.items[at];
    if (loop->kind != IR_STMT_FOR || loop->u.for_.kind != IR_FOR_PIPELINED) continue;
    IrStmt *body = loop->u.for_.body;
    IrVar *kv = loop->u.for_.var;
    SrcLoc loc = loop->loc;
    Mask mk = {.lets = lets, .m = m};
    ir_visit_stmts(body, note_mask, &mk);
    if (mk.found != 1 || !mk.keep || mk.rows % groups || !feeds_softmax(body, mk.frag) ||
        !rows_stay(body, warps, mk.rows) || !barriers_at_top(body))
      continue;
    const int64_t per = mk.rows / groups;
    Form f;
    if (!mask_form(m, &mk, kv, &f)) continue;
    IrExpr *block_reach = reach(m, &mk, &f, ir_int(m, 0, loc), ir_int(m, mk.rows - 1, loc), loc);
    IrExpr *whole = first_hidden(m, &f, block_reach, loc);
    if (!whole || !bound_is(lets, loop->u.for_.extent, whole)) continue;
    if (groups == 1) {
      peel_half(m, k, consumer, at, &mk, &f);
      return;
    }
    /* the warpgroup that sees least: the first when later rows see more */
    const int64_t least = f.ci > 0 ? 0 : mk.rows - per;
    IrExpr *least_reach = reach(m, &mk, &f, ir_int(m, least, loc), ir_int(m, least + per - 1, loc), loc);
    if (!may_gain(&f, least_reach, block_reach)) continue;

    IrVar *wg = ir_var_new(m, "warpgroup", IR_VAR_WARPGROUP, DTYPE_I64, roles->loc);
    /* its rows: [warpgroup * per, warpgroup * per + per - 1] */
    IrExpr *lo = ir_binary(m, IR_OP_MUL, ir_var_ref(m, wg, loc), ir_int(m, per, loc), loc);
    IrExpr *hi = ir_binary(m, IR_OP_ADD, ir_expr_clone(m, lo), ir_int(m, per - 1, loc), loc);
    IrExpr *own = first_hidden(m, &f, reach(m, &mk, &f, lo, hi, loc), loc);
    if (!own) continue;
    roles->u.roles.warpgroup = wg;
    IrExpr *n = loop->u.for_.extent;
    IrVar *rows_end = ir_var_new(m, arena_printf(m->arena, "%s_rows", kv->name), IR_VAR_LET, DTYPE_I64, loc);
    IrStmt *let = pass_let(m, rows_end, ir_call(m, IR_INTRINSIC_MIN, ir_expr_clone(m, n), own, loc), loc);
    loop->u.for_.extent = ir_var_ref(m, rows_end, loc);

    IrVar *kr = ir_var_new(m, arena_printf(m->arena, "%s_released", kv->name), IR_VAR_LOOP, DTYPE_I64, loc);
    IrExpr *kat = ir_binary(m, IR_OP_ADD, ir_var_ref(m, rows_end, loc), ir_var_ref(m, kr, loc), loc);
    IrStmt *rel = releases(m, body, kv, kat, loc);
    IrExpr *left = ir_binary(m, IR_OP_SUB, ir_expr_clone(m, n), ir_var_ref(m, rows_end, loc), loc);
    ir_seq_insert(m, consumer, at, let);
    ir_seq_insert(m, consumer, at + 2, ir_for_new(m, IR_FOR_SERIAL, kr, left, rel, loc));
    return; /* one loop per kernel has the shape */
  }
}

typedef struct Find {
  IrStmt *roles;
} Find;

static void note_roles(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_WARP_ROLES) ((Find *)ctx)->roles = s;
}

bool pass_trim_masked_iterations(IrModule *m, const PassOptions *opts, Diag *diag) {
  (void)diag;
  if (opts->target != TILEC_TARGET_SM90A) return true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    Find find = {NULL};
    ir_visit_stmts(k->body, note_roles, &find);
    if (!find.roles) continue;
    Lets lets = {.n = 0};
    ir_visit_stmts(k->body, note_let, &lets);
    trim(m, k, find.roles, &lets);
  }
  return true;
}
