/* software_pipeline.c - pass "software-pipeline" (GPU): multi-stage cp.async.
 *
 * Needs: guard-bounds (guards of the copies), infer-layout/swizzle-layout
 * (layouts are kept; this pass only adds a stage dimension in front).
 * Guarantees: in every `for k in pipelined(n, num_stages = S)`, the
 * global->shared copies at the top level of the body whose source depends
 * only on k and values from outside the loop (the "producer" copies) are
 * issued S-1 iterations ahead as cp.async:
 *
 *     for s in unrolled(S-1) { if (s < n) copy.async ...[k := s] -> buf[s]; cp_async_commit }
 *     for k in pipelined(n) {
 *       if (k + S-1 < n) copy.async ...[k := k+S-1] -> buf[(k+S-1) % S]
 *       cp_async_commit
 *       cp_async_wait(S-1)      // this iteration's tiles have landed
 *       barrier                 // ... for every thread
 *       <rest of the body, reading buf[k % S]>
 *       barrier                 // all reads done before the stage is refilled
 *     }
 *
 * Each producer's shared destination gets a leading stage dimension of S
 * (S * tile bytes of shared memory); every use of it inside the loop reads
 * stage k % S. With S == 1 the copies stay in place, as cp.async waited for
 * at once. A destination used outside its loop is not multi-buffered (S = 1
 * for that loop).
 *
 * wgmma (sm_90a) overlap: when S >= 3 and the loop body holds a wgmma gemm
 * whose accumulator nothing else in the body touches, the gemm is marked
 * wgmma_async: it returns with this iteration's wgmmas still running (it
 * waits only for the previous iteration's), so the tensor cores stay busy
 * through the barriers and the next fetch. The fetch then runs S-2 ahead
 * (prologue S-2 stages, cp_async_wait(S-2)): the stage it refills was last
 * read by the wgmmas of iteration k-2, which every warpgroup has waited for
 * before the previous iteration's closing barrier. When the gemm is the
 * whole body, the loop is
 *     cp_async_wait(S-3); barrier; fetch k+S-2; cp_async_commit; gemm(k)
 * with one barrier per iteration. A `wgmma_wait acc` right after the loop
 * waits for the last wgmmas before anything reads acc.
 *
 * When a fetch has guarded dimensions (dynamic shapes), it is versioned:
 *     if (k+ahead < n && <the tiles lie wholly inside their tensors>)
 *       <the copies without guards>   // no per-copy bounds arithmetic
 *     else if (k+ahead < n) <the guarded copies> */
#include <string.h>

#include "passes.h"

/* ---- does an expression depend on anything the loop body defines? --------- */

typedef struct Defs {
  IrVar *vars[64];
  int nvars;
  IrStmt *kernel_body; /* to tell the tensors the kernel never writes */
} Defs;

static bool written_in(IrStmt *s, const IrBuffer *b);

static void collect_defs(IrStmt *s, void *ctx) {
  Defs *d = ctx;
  if (d->nvars == 64) return;
  if (s->kind == IR_STMT_LET) d->vars[d->nvars++] = s->u.let.var;
  if (s->kind == IR_STMT_ATOMIC_FETCH_ADD) d->vars[d->nvars++] = s->u.store.result;
  if (s->kind == IR_STMT_FOR) d->vars[d->nvars++] = s->u.for_.var;
}

static bool expr_uses(const IrExpr *e, const Defs *d) {
  if (!e) return false;
  switch (e->kind) {
  case IR_EXPR_VAR:
    for (int i = 0; i < d->nvars; i++)
      if (d->vars[i] == e->u.var) return true;
    return false;
  case IR_EXPR_LOAD:
    /* A value read from memory may change during the loop, unless it comes
     * from a global tensor the kernel never writes (a block table): then
     * only its indices matter, and the fetch may run ahead. */
    if (e->u.load.buf->scope != IR_SCOPE_GLOBAL || !d->kernel_body || written_in(d->kernel_body, e->u.load.buf))
      return true;
    for (int i = 0; i < e->u.load.nidx; i++)
      if (expr_uses(e->u.load.idx[i], d)) return true;
    return false;
  case IR_EXPR_UNARY:
    return expr_uses(e->u.op.a, d);
  case IR_EXPR_BINARY:
    return expr_uses(e->u.op.a, d) || expr_uses(e->u.op.b, d);
  case IR_EXPR_SELECT:
    return expr_uses(e->u.select.cond, d) || expr_uses(e->u.select.then_, d) || expr_uses(e->u.select.else_, d);
  case IR_EXPR_CALL:
    for (int i = 0; i < e->u.call.nargs; i++)
      if (expr_uses(e->u.call.args[i], d)) return true;
    return false;
  case IR_EXPR_CAST:
    return expr_uses(e->u.cast_src, d);
  default:
    return false;
  }
}

static bool is_producer(const IrStmt *s, const Defs *body_defs) {
  if (s->kind != IR_STMT_COPY) return false;
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  if (src->buf->scope != IR_SCOPE_GLOBAL || dst->buf->scope != IR_SCOPE_SHARED) return false;
  if (src->buf->dtype != dst->buf->dtype) return false;
  /* 16-bit tiles, or 8-bit (FP8) and 32-bit (f32, i32; plain rows) ones
   * of whole 16-byte rows (the CUDA backend's 16-byte transfers,
   * tc_copy_g2s). */
  int es = dtype_size(dst->buf->dtype);
  int64_t cols = 0;
  if ((es == 1 || es == 4) &&
      (dst->buf->rank < 1 || !ir_expr_is_int_const(dst->buf->shape[dst->buf->rank - 1], &cols) || cols * es % 16))
    return false;
  if (es == 4 && dst->buf->layout.kind != IR_LAYOUT_ROW_MAJOR) return false;
  if (es != 2 && es != 1 && es != 4) return false;
  for (int d = 0; d < src->rank; d++)
    if (expr_uses(src->start[d], body_defs) || expr_uses(src->extent[d], body_defs)) return false;
  for (int d = 0; d < dst->rank; d++) {
    int64_t zero;
    if (!ir_expr_is_int_const(dst->start[d], &zero) || zero != 0 || !ir_expr_equal(dst->extent[d], dst->buf->shape[d]))
      return false; /* only whole-buffer destinations are multi-buffered */
  }
  return true;
}

/* ---- references to a buffer ------------------------------------------------- */

typedef struct Uses {
  const IrBuffer *buf;
  int count;
} Uses;

static void count_in_stmt(IrStmt *s, void *ctx) {
  Uses *u = ctx;
  u->count += ir_stmt_buffer_refs(s, u->buf);
}

static int count_uses(IrStmt *s, const IrBuffer *b) {
  Uses u = {b, 0};
  ir_visit_stmts(s, count_in_stmt, &u);
  return u.count;
}

/* ---- adding the stage dimension ------------------------------------------------ */

typedef struct Stage {
  IrModule *m;
  IrBuffer *buf;
  const IrExpr *stage; /* expression of the stage index */
} Stage;

static void region_add_stage(Stage *st, IrRegion *r) {
  if (r->buf != st->buf || r->rank == st->buf->rank) return;
  for (int d = r->rank; d > 0; d--) {
    r->start[d] = r->start[d - 1];
    r->extent[d] = r->extent[d - 1];
    r->is_index[d] = r->is_index[d - 1];
    r->guard[d] = r->guard[d - 1];
  }
  r->start[0] = ir_expr_clone(st->m, st->stage);
  r->extent[0] = ir_int(st->m, 1, r->loc);
  r->is_index[0] = true;
  r->guard[0] = 0;
  r->rank++;
}

static IrExpr *stage_expr(IrModule *m, IrExpr *e, void *ctx);

static IrExpr *stage_load(Stage *st, IrExpr *e) {
  if (e->u.load.buf != st->buf || e->u.load.nidx == st->buf->rank) return e;
  IrExpr *idx[IR_MAX_RANK];
  idx[0] = ir_expr_clone(st->m, st->stage);
  for (int i = 0; i < e->u.load.nidx; i++) idx[i + 1] = e->u.load.idx[i];
  return ir_load(st->m, st->buf, idx, e->loc);
}

static IrExpr *stage_expr(IrModule *m, IrExpr *e, void *ctx) {
  Stage *st = ctx;
  if (!e) return e;
  switch (e->kind) {
  case IR_EXPR_LOAD:
    for (int i = 0; i < e->u.load.nidx; i++) e->u.load.idx[i] = stage_expr(m, e->u.load.idx[i], ctx);
    return stage_load(st, e);
  case IR_EXPR_UNARY: e->u.op.a = stage_expr(m, e->u.op.a, ctx); return e;
  case IR_EXPR_BINARY:
    e->u.op.a = stage_expr(m, e->u.op.a, ctx);
    e->u.op.b = stage_expr(m, e->u.op.b, ctx);
    return e;
  case IR_EXPR_SELECT:
    e->u.select.cond = stage_expr(m, e->u.select.cond, ctx);
    e->u.select.then_ = stage_expr(m, e->u.select.then_, ctx);
    e->u.select.else_ = stage_expr(m, e->u.select.else_, ctx);
    return e;
  case IR_EXPR_CALL:
    for (int i = 0; i < e->u.call.nargs; i++) e->u.call.args[i] = stage_expr(m, e->u.call.args[i], ctx);
    return e;
  case IR_EXPR_CAST: e->u.cast_src = stage_expr(m, e->u.cast_src, ctx); return e;
  default: return e;
  }
}

static void stage_stmt(IrStmt *s, void *ctx) {
  Stage *st = ctx;
  switch (s->kind) {
  case IR_STMT_STORE:
    if (s->u.store.buf == st->buf && s->u.store.nidx < st->buf->rank) {
      for (int d = s->u.store.nidx; d > 0; d--) s->u.store.idx[d] = s->u.store.idx[d - 1];
      s->u.store.idx[0] = ir_expr_clone(st->m, st->stage);
      s->u.store.nidx++;
    }
    break;
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD: region_add_stage(st, &s->u.copy.src), region_add_stage(st, &s->u.copy.dst); break;
  case IR_STMT_FILL: region_add_stage(st, &s->u.fill.dst); break;
  case IR_STMT_GEMM:
    region_add_stage(st, &s->u.gemm.a), region_add_stage(st, &s->u.gemm.b), region_add_stage(st, &s->u.gemm.c);
    break;
  default: break;
  }
  ir_stmt_rewrite_exprs(st->m, s, stage_expr, ctx);
}

/* Gives `buf` a leading dimension of `stages` and makes every reference in
 * `scope` use stage `stage`. */
static void add_stage_dim(IrModule *m, IrBuffer *buf, int stages, IrStmt *scope, const IrExpr *stage) {
  for (int d = buf->rank; d > 0; d--) buf->shape[d] = buf->shape[d - 1];
  buf->shape[0] = ir_int(m, stages, buf->loc);
  buf->rank++;
  Stage st = {m, buf, stage};
  ir_visit_stmts(scope, stage_stmt, &st);
}

/* ---- the transformation ------------------------------------------------------------ */

/* A copy of producer `p` with the loop variable replaced by `at`. */
static IrStmt *producer_at(IrModule *m, const IrStmt *p, IrVar *k, const IrExpr *at) {
  IrStmt *c = ir_stmt_new(m, IR_STMT_COPY, p->loc);
  c->u.copy = p->u.copy;
  c->u.copy.async = true;
  IrRegion *regs[2] = {&c->u.copy.src, &c->u.copy.dst};
  for (int r = 0; r < 2; r++)
    for (int d = 0; d < regs[r]->rank; d++) {
      regs[r]->start[d] = ir_expr_subst(m, regs[r]->start[d], k, at);
      regs[r]->extent[d] = ir_expr_subst(m, regs[r]->extent[d], k, at);
    }
  return c;
}

static IrStmt *marker(IrModule *m, IrStmtKind kind, SrcLoc loc) { return ir_stmt_new(m, kind, loc); }

/* Waits for the wgmmas an in-flight gemm left running on acc. */

/* The condition under which every guarded dimension of the copies in `seq`
 * lies wholly inside its tensor (start <= size - extent, and 0 <= start
 * where the start may be negative: IR_GUARD_LOWER), or NULL when no
 * dimension is guarded. */
static IrExpr *all_in_bounds(IrModule *m, const IrStmt *seq, SrcLoc loc) {
  IrExpr *cond = NULL;
  IrExpr *terms[32];
  int nterms = 0;
  for (int i = 0; i < seq->u.seq.n; i++) {
    const IrRegion *r = &seq->u.seq.items[i]->u.copy.src;
    for (int d = 0; d < r->rank; d++) {
      if (!r->guard[d]) continue;
      /* start <= size - extent: no overflow for any start (size >= 1 and
       * the extent is a tile size), unlike start + extent <= size. */
      IrExpr *last = ir_binary(m, IR_OP_SUB, ir_expr_clone(m, r->buf->shape[d]), ir_expr_clone(m, r->extent[d]), loc);
      IrExpr *t[2] = {ir_binary(m, IR_OP_LE, ir_expr_clone(m, r->start[d]), last, loc), NULL};
      if (r->guard[d] & IR_GUARD_LOWER) t[1] = ir_binary(m, IR_OP_GE, ir_expr_clone(m, r->start[d]), ir_int(m, 0, loc), loc);
      for (int e = 0; e < 2 && t[e]; e++) {
        bool seen = false;
        for (int j = 0; j < nterms && !seen; j++) seen = ir_expr_equal(terms[j], t[e]);
        if (seen) continue;
        if (nterms == 32) return NULL;
        terms[nterms++] = t[e];
        cond = cond ? ir_binary(m, IR_OP_AND, cond, t[e], loc) : t[e];
      }
    }
  }
  return cond;
}

/* The copies of `seq` again, without guards (the caller tested the bounds). */
static IrStmt *unguarded_copies(IrModule *m, const IrStmt *seq, SrcLoc loc) {
  IrStmt *out = ir_seq_new(m, loc);
  for (int i = 0; i < seq->u.seq.n; i++) {
    IrStmt *u = ir_stmt_clone_tile_op(m, seq->u.seq.items[i]);
    for (int d = 0; d < u->u.copy.src.rank; d++) u->u.copy.src.guard[d] = 0;
    ir_seq_push(m, out, u);
  }
  return out;
}

typedef struct Writes {
  const IrBuffer *buf;
  bool found;
} Writes;

static void find_write(IrStmt *s, void *ctx) {
  Writes *w = ctx;
  if ((s->kind == IR_STMT_STORE && s->u.store.buf == w->buf) || (s->kind == IR_STMT_COPY && s->u.copy.dst.buf == w->buf) ||
      (s->kind == IR_STMT_FILL && s->u.fill.dst.buf == w->buf))
    w->found = true;
}

static bool written_in(IrStmt *s, const IrBuffer *b) {
  Writes w = {b, false};
  ir_visit_stmts(s, find_write, &w);
  return w.found;
}

/* The one wgmma gemm of `rest` that may stay in flight across iterations:
 * its accumulator is referenced by nothing else in the body, and no
 * statement of the body writes its operand tiles (only the pipeline's
 * fetches, which are not in `rest`, refill those, stages apart). */
static IrStmt *async_wgmma_candidate(IrStmt *rest) {
  IrStmt *found = NULL;
  for (int i = 0; i < rest->u.seq.n; i++) {
    IrStmt *s = rest->u.seq.items[i];
    if (s->kind != IR_STMT_GEMM || !s->u.gemm.wgmma) continue;
    if (found || count_uses(rest, s->u.gemm.c.buf) != 1) return NULL;
    if (written_in(rest, s->u.gemm.a.buf) || written_in(rest, s->u.gemm.b.buf)) return NULL;
    found = s;
  }
  return found;
}

/* Rewrites one pipelined loop; returns the statements replacing it. */
static IrStmt *pipeline_loop(IrModule *m, IrKernel *k, IrStmt *loop) {
  SrcLoc loc = loop->loc;
  IrStmt *body = loop->u.for_.body;
  IrVar *kv = loop->u.for_.var;
  Defs defs = {{0}, 0, k->body};
  ir_visit_stmts(body, collect_defs, &defs);
  IrStmt *producers[16];
  int np = 0;
  for (int i = 0; i < body->u.seq.n && np < 16; i++)
    if (is_producer(body->u.seq.items[i], &defs)) producers[np++] = body->u.seq.items[i];
  if (np == 0) return NULL;

  int stages = loop->u.for_.num_stages;
  for (int i = 0; i < np && stages > 1; i++) {
    IrBuffer *b = producers[i]->u.copy.dst.buf;
    if (count_uses(k->body, b) != count_uses(body, b)) stages = 1;
  }
  loop->u.for_.num_stages = stages;

  /* Body without the producers. */
  IrStmt *rest = ir_seq_new(m, body->loc);
  for (int i = 0; i < body->u.seq.n; i++) {
    bool prod = false;
    for (int j = 0; j < np; j++) prod |= body->u.seq.items[i] == producers[j];
    if (!prod) ir_seq_push(m, rest, body->u.seq.items[i]);
  }

  IrExpr *n = loop->u.for_.extent;
  IrStmt *out = ir_seq_new(m, loc);
  IrStmt *new_body = ir_seq_new(m, body->loc);
  IrStmt *async_gemm = NULL; /* the gemm left in flight, if any: waited for after the loop */
  if (stages == 1) {
    for (int j = 0; j < np; j++) {
      producers[j]->u.copy.async = true;
      ir_seq_push(m, new_body, producers[j]);
    }
    ir_seq_push(m, new_body, marker(m, IR_STMT_ASYNC_COMMIT, loc));
    IrStmt *w = marker(m, IR_STMT_ASYNC_WAIT, loc);
    w->u.async_pending = 0;
    ir_seq_push(m, new_body, w);
  } else {
    /* Fetch distance: S-1 stages ahead, S-2 when a wgmma stays in flight. */
    async_gemm = stages >= 3 ? async_wgmma_candidate(rest) : NULL;
    int ahead_by = async_gemm ? stages - 2 : stages - 1;
    if (async_gemm) async_gemm->u.gemm.wgmma_async = true;
    /* Stage index of iteration k: k % S (leading dim of every producer buffer). */
    IrExpr *cur = ir_binary(m, IR_OP_MOD, ir_var_ref(m, kv, loc), ir_int(m, stages, loc), loc);
    for (int j = 0; j < np; j++) add_stage_dim(m, producers[j]->u.copy.dst.buf, stages, rest, cur);

    /* Prologue: stages 0 .. ahead_by-1. */
    IrVar *s = ir_var_new(m, arena_printf(m->arena, "tc_prologue_%s", kv->name), IR_VAR_LOOP, DTYPE_I64, loc);
    IrStmt *pro_body = ir_seq_new(m, loc);
    IrStmt *pro_copies = ir_seq_new(m, loc);
    IrExpr *sref = ir_var_ref(m, s, loc);
    for (int j = 0; j < np; j++) {
      IrStmt *c = producer_at(m, producers[j], kv, sref);
      Stage st = {m, producers[j]->u.copy.dst.buf, sref};
      region_add_stage(&st, &c->u.copy.dst);
      ir_seq_push(m, pro_copies, c);
    }
    ir_seq_push(m, pro_body,
                ir_if_new(m, ir_binary(m, IR_OP_LT, ir_var_ref(m, s, loc), ir_expr_clone(m, n), loc), pro_copies,
                          NULL, loc));
    ir_seq_push(m, pro_body, marker(m, IR_STMT_ASYNC_COMMIT, loc));
    ir_seq_push(m, out, ir_for_new(m, IR_FOR_UNROLLED, s, ir_int(m, ahead_by, loc), pro_body, loc));

    /* Steady state: fetch k + ahead_by while computing k. */
    IrExpr *ahead = ir_binary(m, IR_OP_ADD, ir_var_ref(m, kv, loc), ir_int(m, ahead_by, loc), loc);
    IrExpr *ahead_stage = ir_binary(m, IR_OP_MOD, ir_expr_clone(m, ahead), ir_int(m, stages, loc), loc);
    IrStmt *fetch = ir_seq_new(m, loc);
    for (int j = 0; j < np; j++) {
      IrStmt *c = producer_at(m, producers[j], kv, ahead);
      Stage st = {m, producers[j]->u.copy.dst.buf, ahead_stage};
      region_add_stage(&st, &c->u.copy.dst);
      ir_seq_push(m, fetch, c);
    }
    IrStmt *guarded_fetch =
        ir_if_new(m, ir_binary(m, IR_OP_LT, ir_expr_clone(m, ahead), ir_expr_clone(m, n), loc), fetch, NULL, loc);
    /* Dynamic bounds: most fetches are whole tiles. Test that once and copy
     * without per-copy bounds arithmetic; only the edge tiles take the
     * guarded copies. */
    IrExpr *in_bounds = all_in_bounds(m, fetch, loc);
    if (in_bounds) {
      IrExpr *whole = ir_binary(m, IR_OP_AND,
                                ir_binary(m, IR_OP_LT, ir_expr_clone(m, ahead), ir_expr_clone(m, n), loc),
                                in_bounds, loc);
      IrStmt *edge = ir_seq_new(m, loc);
      ir_seq_push(m, edge, guarded_fetch);
      guarded_fetch = ir_if_new(m, whole, unguarded_copies(m, fetch, loc), edge, loc);
    }
    if (async_gemm && rest->u.seq.n == 1) {
      /* The body is just the in-flight gemm: wait for stage k, one barrier
       * (after it every warpgroup has waited for the wgmmas of k-2, the
       * readers of the stage fetched next), fetch, compute. No closing
       * barrier is needed. */
      IrStmt *w = marker(m, IR_STMT_ASYNC_WAIT, loc);
      w->u.async_pending = ahead_by - 1;
      ir_seq_push(m, new_body, w);
      ir_seq_push(m, new_body, marker(m, IR_STMT_BARRIER, loc));
      ir_seq_push(m, new_body, guarded_fetch);
      ir_seq_push(m, new_body, marker(m, IR_STMT_ASYNC_COMMIT, loc));
      ir_seq_push(m, new_body, async_gemm);
      loop->u.for_.body = new_body;
      ir_seq_push(m, out, loop);
      ir_seq_push(m, out, pass_wgmma_wait(m, async_gemm->u.gemm.c.buf, 0, loc));
      return out;
    }
    ir_seq_push(m, new_body, guarded_fetch);
    ir_seq_push(m, new_body, marker(m, IR_STMT_ASYNC_COMMIT, loc));
    IrStmt *w = marker(m, IR_STMT_ASYNC_WAIT, loc);
    w->u.async_pending = ahead_by;
    ir_seq_push(m, new_body, w);
  }
  ir_seq_push(m, new_body, marker(m, IR_STMT_BARRIER, loc));
  for (int i = 0; i < rest->u.seq.n; i++) ir_seq_push(m, new_body, rest->u.seq.items[i]);
  ir_seq_push(m, new_body, marker(m, IR_STMT_BARRIER, loc));
  loop->u.for_.body = new_body;
  ir_seq_push(m, out, loop);
  if (async_gemm) ir_seq_push(m, out, pass_wgmma_wait(m, async_gemm->u.gemm.c.buf, 0, loc));
  return out;
}

static void walk(IrModule *m, IrKernel *k, IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++) {
    IrStmt *s = seq->u.seq.items[i];
    if (s->kind == IR_STMT_FOR) {
      walk(m, k, s->u.for_.body);
      if (s->u.for_.kind == IR_FOR_PIPELINED) {
        IrStmt *rep = pipeline_loop(m, k, s);
        if (rep) seq->u.seq.items[i] = rep;
      }
    } else if (s->kind == IR_STMT_IF) {
      walk(m, k, s->u.if_.then_);
      if (s->u.if_.else_) walk(m, k, s->u.if_.else_);
    } else if (s->kind == IR_STMT_SEQ) {
      walk(m, k, s);
    }
  }
}

bool pass_software_pipeline(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int i = 0; i < m->nkernels; i++) walk(m, m->kernels[i], m->kernels[i]->body);
  return true;
}
