/* stream_k.c - pass "stream-k" (GPU, sm_90a): a persistent GEMM splits the
 * k-iterations of its last partial wave of tiles evenly over its blocks.
 *
 * Needs: persistent (both roles loop over the tiles; ring positions run on
 * across tiles through pipe_base), stage-stores (the epilogue is final).
 * Applies to a kernel of the shape persistent builds for a GEMM, and no
 * other: no per-tile boxes, no paired or clustered tiles, the producer's
 * tile body a serial loop of TMA copies into rings, the consumers'
 *     fill acc = 0
 *     if opaque(n > 0) { for k in pipelined(n) { mbar_wait; gemm -> acc;
 *                        if (...) { mbar_arrive } }  wgmma_wait acc; mbar_arrive }
 *     post (the epilogue: reads acc)
 *     tc_pipe[...] = ...
 * Guarantees: both tile loops become
 *     for tile, k_begin, k_len in stream_k(tiles, k_iters = n)
 * (runtime/device/tilec_stream_k.cuh: the last wave's R tiles' iterations
 * split evenly over the P blocks, then whole tiles), k_len takes n's place
 * where n means the trip count (the k-loops, the releases after the
 * consumers' loop, the ring advance; and, where n is symbolic, every use
 * of it), the producer's copies read k-block k_fetch + k_begin, and the
 * consumers run
 *     stream_k_fixup acc        // a part that does not end its tile: publish; else add the earlier parts
 *     if (k_begin + k_len == n) { post }
 * The ring positions stay correct unchanged: each role still advances
 * pipe_base by its loop's trip count, now k_len. A constant n (K bound
 * with -D) is replaced only in those places, found by their shape: by
 * then fold-constants has merged it into other literals ((pipe_base + 8)
 * % 4 became pipe_base % 4) and the same number may mean something else
 * (n = num_stages = 4: the ring's `% 4`). Whether a launch splits at
 * all is the device's choice (the grid and tile count are known only
 * there): without a split every unit is a whole tile and the fix-up does
 * nothing, so the kernel runs as before.
 * Rewrites only with TilecOptions.stream_k (off in the compiler: whole
 * tiles are faster where the last wave is full); without it, records the
 * k-iterations of the kernels it would rewrite (IrKernel.stream_k_iters)
 * and marks those but FP8 GEMMs (IrKernel.stream_k_able), for which the
 * runtime makes a stream-K build to run launches with a thin last wave
 * (docs/gpu-codegen.md "Stream-K"). */
#include "passes.h"
#include "../simplify.h"

enum { STREAM_K_PRODUCER_REGS = 40 };

typedef struct Unit {
  IrStmt *loop;     /* a role's PERSISTENT tile loop */
  IrStmt *k_loop;   /* its loop over the k-iterations (producer: serial, consumers: pipelined) */
  int k_guard;      /* consumers: index of the `if opaque(n > 0)` holding k_loop in the tile body */
} Unit;

/* The role's only top-level tile loop, or NULL. */
static IrStmt *tile_loop(IrStmt *role) {
  IrStmt *found = NULL;
  for (int i = 0; i < role->u.seq.n; i++) {
    IrStmt *s = role->u.seq.items[i];
    if (s->kind == IR_STMT_FOR) {
      if (found || s->u.for_.kind != IR_FOR_PERSISTENT) return NULL;
      found = s;
    }
  }
  return found;
}

static bool all_of_kinds(const IrStmt *seq, IrStmtKind a, IrStmtKind b) {
  for (int i = 0; i < seq->u.seq.n; i++)
    if (seq->u.seq.items[i]->kind != a && seq->u.seq.items[i]->kind != b) return false;
  return true;
}

/* The producer's tile body: lets, one serial k-loop of ring refill guards
 * and TMA copies, then the ring counter's update (stores). */
static bool plan_producer(Unit *u) {
  IrStmt *body = u->loop->u.for_.body;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (s->kind == IR_STMT_LET || s->kind == IR_STMT_STORE) continue;
    if (s->kind != IR_STMT_FOR || s->u.for_.kind != IR_FOR_SERIAL || u->k_loop) return false;
    u->k_loop = s;
  }
  if (!u->k_loop) return false;
  IrStmt *kb = u->k_loop->u.for_.body;
  for (int i = 0; i < kb->u.seq.n; i++) {
    const IrStmt *s = kb->u.seq.items[i];
    if (s->kind == IR_STMT_COPY ? !s->u.copy.tma || s->u.copy.prefetch_l2 || !s->u.copy.dst.buf->empty_bar
        : s->kind == IR_STMT_IF ? s->u.if_.else_ || !all_of_kinds(s->u.if_.then_, IR_STMT_MBAR_WAIT, IR_STMT_MBAR_WAIT)
                                : true)
      return false;
  }
  return true;
}

/* `if (tc_held[0] > 0) { mbar_arrive ... after_stores...; tc_held[0] = 0 }`,
 * or an `if` around it: pass persistent's release of a stage the last
 * epilogue held (hold_last_stage). Only in builds without TilecOptions.
 * stream_k, where this pass only marks the kernel; the stream-K build has
 * the plain releases it rewrites. */
static bool held_release(const IrStmt *s) {
  if (s->kind != IR_STMT_IF || s->u.if_.else_) return false;
  const IrStmt *t = s->u.if_.then_;
  if (t->u.seq.n == 1 && t->u.seq.items[0]->kind == IR_STMT_IF) return held_release(t->u.seq.items[0]);
  for (int i = 0; i < t->u.seq.n; i++) {
    const IrStmt *a = t->u.seq.items[i];
    if (!(a->kind == IR_STMT_MBAR_ARRIVE && a->u.mbar_wait.after_stores) &&
        !(i == t->u.seq.n - 1 && a->kind == IR_STMT_STORE && a->u.store.buf->scope == IR_SCOPE_LOCAL))
      return false;
  }
  return t->u.seq.n >= 2;
}

/* The consumers' loop body: full-barrier waits, wgmma gemms into acc whose
 * operands are ring tiles, and releases (conditional on k or not). */
static bool k_body_accumulates(const IrStmt *body, IrBuffer **acc) {
  for (int i = 0; i < body->u.seq.n; i++) {
    const IrStmt *s = body->u.seq.items[i];
    switch (s->kind) {
    case IR_STMT_MBAR_WAIT:
    case IR_STMT_MBAR_ARRIVE: break;
    case IR_STMT_IF:
      if (held_release(s)) break;
      if (s->u.if_.else_ || !all_of_kinds(s->u.if_.then_, IR_STMT_MBAR_ARRIVE, IR_STMT_MBAR_ARRIVE)) return false;
      break;
    case IR_STMT_GEMM: {
      IrBuffer *c = s->u.gemm.c.buf;
      if (!s->u.gemm.wgmma || !s->u.gemm.a.buf->empty_bar || !s->u.gemm.b.buf->empty_bar ||
          c->scope != IR_SCOPE_FRAGMENT || c->dtype != DTYPE_F32 || (*acc && *acc != c))
        return false;
      *acc = c;
      break;
    }
    default: return false;
    }
  }
  return *acc != NULL;
}

/* The consumers' tile body: the shape in the header comment. */
static bool plan_consumer(Unit *u, IrBuffer **acc) {
  IrStmt *body = u->loop->u.for_.body;
  u->k_guard = -1;
  for (int i = 0; i < body->u.seq.n && u->k_guard < 0; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (s->kind == IR_STMT_IF && s->u.if_.opaque && !s->u.if_.else_ && s->u.if_.then_->u.seq.n >= 1) {
      IrStmt *f = s->u.if_.then_->u.seq.items[0];
      if (f->kind == IR_STMT_FOR && f->u.for_.kind == IR_FOR_PIPELINED) {
        u->k_guard = i;
        u->k_loop = f;
      }
    }
  }
  if (u->k_guard < 0 || !k_body_accumulates(u->k_loop->u.for_.body, acc)) return false;
  const IrStmt *guard = body->u.seq.items[u->k_guard];
  for (int i = 1; i < guard->u.if_.then_->u.seq.n; i++) {
    const IrStmt *s = guard->u.if_.then_->u.seq.items[i];
    if (!(s->kind == IR_STMT_MBAR_ARRIVE || (s->kind == IR_STMT_WGMMA_WAIT && s->u.wgmma_wait.acc == *acc) ||
          held_release(s)))
      return false;
  }
  /* Before the loop: lets and the accumulator's clearing only (a per-tile
   * wait or copy would be a tile's, not a unit's). */
  bool cleared = false;
  for (int i = 0; i < u->k_guard; i++) {
    const IrStmt *s = body->u.seq.items[i];
    if (s->kind == IR_STMT_FILL && s->u.fill.dst.buf == *acc) {
      int64_t zero;
      cleared = ir_expr_is_int_const(s->u.fill.value, &zero) ? zero == 0
                : s->u.fill.value->kind == IR_EXPR_FLOAT && s->u.fill.value->u.float_value == 0.0;
    } else if (s->kind != IR_STMT_LET) {
      return false;
    } else if (!ir_expr_is_int_const(u->k_loop->u.for_.extent, NULL) &&
               ir_expr_contains(s->u.let.value, u->k_loop->u.for_.extent)) {
      return false; /* a let of the tile's trip count would become the unit's */
    }
  }
  /* The tile body ends with the ring counter's update. */
  const IrStmt *last = body->u.seq.items[body->u.seq.n - 1];
  return cleared && last->kind == IR_STMT_STORE && last->u.store.buf->scope == IR_SCOPE_LOCAL &&
         u->k_guard < body->u.seq.n - 1;
}

/* ---- the rewrite ------------------------------------------------------------------ */

/* The places where n is the trip count, each paired with what replaces it
 * (planned before anything is rewritten, so a kernel that does not fit is
 * left whole). */
enum { MAX_TAIL_RELEASES = 8, MAX_RELEASE_LAG = 4 };

typedef struct TailRelease {
  IrStmt *arrive;       /* after the consumers' k-loop: releases stage n - lag ... */
  const IrExpr *stage;  /* ... which the in-loop release on its barrier, at k, writes as this */
  int lag;              /* k = n + lag - 1 in it */
} TailRelease;

typedef struct Plan {
  TailRelease tail[MAX_TAIL_RELEASES];
  int ntail;
} Plan;

/* The in-loop release of `bar` (directly in the k-loop's body or under an
 * `if`), or NULL. */
static const IrStmt *loop_release(const IrStmt *k_body, const IrBuffer *bar) {
  for (int i = 0; i < k_body->u.seq.n; i++) {
    const IrStmt *s = k_body->u.seq.items[i];
    if (s->kind == IR_STMT_MBAR_ARRIVE && s->u.mbar_wait.bar == bar) return s;
    if (s->kind == IR_STMT_IF)
      for (int j = 0; j < s->u.if_.then_->u.seq.n; j++) {
        const IrStmt *t = s->u.if_.then_->u.seq.items[j];
        if (t->kind == IR_STMT_MBAR_ARRIVE && t->u.mbar_wait.bar == bar) return t;
      }
  }
  return NULL;
}

/* The in-loop release's stage with k = at + lag - 1, simplified. */
static IrExpr *release_stage_at(IrModule *m, const Unit *u, const IrExpr *stage, const IrExpr *at, int lag) {
  const SrcLoc loc = u->k_loop->loc;
  IrExpr *k = ir_binary(m, IR_OP_ADD, ir_expr_clone(m, at), ir_int(m, lag - 1, loc), loc);
  return ir_simplify(m, ir_expr_subst(m, stage, u->k_loop->u.for_.var, ir_simplify(m, k)));
}

/* A ring stage `(x + c) % S` (or `x % S`): x, c and S. */
static bool ring_stage(const IrExpr *e, const IrExpr **x, int64_t *c, int64_t *S) {
  if (e->kind != IR_EXPR_BINARY || e->u.op.op != IR_OP_MOD || !ir_expr_is_int_const(e->u.op.b, S) || *S <= 0)
    return false;
  const IrExpr *a = e->u.op.a;
  *x = a;
  *c = 0;
  if (a->kind == IR_EXPR_BINARY && a->u.op.op == IR_OP_ADD && ir_expr_is_int_const(a->u.op.b, c)) *x = a->u.op.a;
  return true;
}

/* Whether two simplified stage expressions name the same stage: equal, or
 * the same ring position up to a multiple of the ring's size (a constant n
 * was reduced modulo it: (pipe_base + 8) % 4 is pipe_base % 4). */
static bool same_stage(const IrExpr *a, const IrExpr *b) {
  const IrExpr *xa, *xb;
  int64_t ca, cb, Sa, Sb;
  if (ir_expr_equal(a, b)) return true;
  return ring_stage(a, &xa, &ca, &Sa) && ring_stage(b, &xb, &cb, &Sb) && Sa == Sb && ir_expr_equal(xa, xb) &&
         (ca - cb) % Sa == 0;
}

/* Each release after the consumers' k-loop is the in-loop release of its
 * barrier run on past the loop's end, at k = n + lag - 1 (lag 1: the last
 * iteration's stage). Matched by the stage it names (same_stage), so it
 * holds whether or not fold-constants merged a constant n into it. */
static bool plan_tail_releases(IrModule *m, const Unit *cons, const IrExpr *n, Plan *plan) {
  const IrStmt *guard = cons->loop->u.for_.body->u.seq.items[cons->k_guard];
  for (int i = 1; i < guard->u.if_.then_->u.seq.n; i++) {
    IrStmt *s = guard->u.if_.then_->u.seq.items[i];
    if (s->kind != IR_STMT_MBAR_ARRIVE) continue;
    const IrStmt *in_loop = loop_release(cons->k_loop->u.for_.body, s->u.mbar_wait.bar);
    if (!in_loop || plan->ntail == MAX_TAIL_RELEASES) return false;
    IrExpr *want = ir_simplify(m, ir_expr_clone(m, s->u.mbar_wait.stage));
    int lag = 1;
    while (lag <= MAX_RELEASE_LAG &&
           !same_stage(release_stage_at(m, cons, in_loop->u.mbar_wait.stage, n, lag), want))
      lag++;
    if (lag > MAX_RELEASE_LAG) return false;
    plan->tail[plan->ntail++] = (TailRelease){s, in_loop->u.mbar_wait.stage, lag};
  }
  return true;
}

/* Where the tile body's trailing ring-counter stores (local stores) begin. */
static int ring_stores_begin(const IrStmt *body) {
  int i = body->u.seq.n;
  while (i > 0 && body->u.seq.items[i - 1]->kind == IR_STMT_STORE &&
         body->u.seq.items[i - 1]->u.store.buf->scope == IR_SCOPE_LOCAL)
    i--;
  return i;
}

/* The role's ring-counter stores advance by n: `x + n`. */
static bool ring_advances_by(const Unit *u, const IrExpr *n) {
  const IrStmt *body = u->loop->u.for_.body;
  for (int i = ring_stores_begin(body); i < body->u.seq.n; i++) {
    const IrExpr *v = body->u.seq.items[i]->u.store.value;
    if (v->kind != IR_EXPR_BINARY || v->u.op.op != IR_OP_ADD || !ir_expr_equal(v->u.op.b, n) ||
        ir_expr_contains(v->u.op.a, n))
      return false;
  }
  return true;
}

typedef struct ToLen {
  const IrExpr *n, *k_len;
} ToLen;

static IrExpr *n_to_len(IrModule *m, IrExpr *e, void *ctx) {
  const ToLen *t = ctx;
  return ir_expr_contains(e, t->n) ? ir_expr_replace(m, e, t->n, t->k_len) : e;
}

/* The role's tile loop walks units; k_len replaces n as the k-loop's trip
 * count and the ring's advance (and, n symbolic, everywhere in the body). */
static void make_units(IrModule *m, Unit *u, const IrExpr *n) {
  IrStmt *loop = u->loop;
  const SrcLoc loc = loop->loc;
  loop->u.for_.kind = IR_FOR_STREAM_K;
  loop->u.for_.k_iters = ir_expr_clone(m, n);
  loop->u.for_.k_begin = ir_var_new(m, "k_begin", IR_VAR_LOOP, DTYPE_I64, loc);
  loop->u.for_.k_len = ir_var_new(m, "k_len", IR_VAR_LOOP, DTYPE_I64, loc);
  IrExpr *k_len = ir_var_ref(m, loop->u.for_.k_len, loc);
  u->k_loop->u.for_.extent = ir_expr_clone(m, k_len);
  IrStmt *body = loop->u.for_.body;
  for (int i = ring_stores_begin(body); i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    s->u.store.value = ir_binary(m, IR_OP_ADD, ir_expr_clone(m, s->u.store.value->u.op.a), ir_expr_clone(m, k_len), loc);
  }
  if (!ir_expr_is_int_const(n, NULL)) {
    ToLen t = {n, k_len};
    pass_rewrite_stmt(m, body, n_to_len, &t);
  }
}

/* The releases after the consumers' k-loop follow the unit's k_len. */
static void rewrite_tail_releases(IrModule *m, const Unit *cons, const Plan *plan) {
  IrExpr *k_len = ir_var_ref(m, cons->loop->u.for_.k_len, cons->loop->loc);
  for (int i = 0; i < plan->ntail; i++) {
    const TailRelease *t = &plan->tail[i];
    IrExpr *k = ir_binary(m, IR_OP_ADD, k_len, ir_int(m, t->lag - 1, t->arrive->loc), t->arrive->loc);
    t->arrive->u.mbar_wait.stage = ir_expr_subst(m, t->stage, cons->k_loop->u.for_.var, ir_simplify(m, k));
  }
}

/* The producer's copies read k-block k_fetch + k_begin (their ring stages
 * stay at pipe_base + k_fetch: the destination is not touched). */
static void offset_copies(IrModule *m, Unit *u) {
  IrVar *kf = u->k_loop->u.for_.var;
  IrExpr *at = ir_binary(m, IR_OP_ADD, ir_var_ref(m, kf, u->k_loop->loc),
                         ir_var_ref(m, u->loop->u.for_.k_begin, u->k_loop->loc), u->k_loop->loc);
  IrStmt *body = u->k_loop->u.for_.body;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (s->kind != IR_STMT_COPY) continue;
    IrRegion *r = &s->u.copy.src;
    for (int d = 0; d < r->rank; d++) {
      r->start[d] = ir_simplify(m, ir_expr_subst(m, r->start[d], kf, at));
      r->extent[d] = ir_simplify(m, ir_expr_subst(m, r->extent[d], kf, at));
    }
  }
}

/* After the consumers' k-loop: the fix-up, then the epilogue only where the
 * unit finishes its tile (it ends it: k_begin + k_len == n; the device
 * walks each block's range backwards, tilec_stream_k.cuh). */
static void guard_epilogue(IrModule *m, Unit *u, IrBuffer *acc) {
  IrStmt *body = u->loop->u.for_.body;
  const SrcLoc loc = body->u.seq.items[u->k_guard]->loc;
  /* the trailing ring-counter stores stay unconditional */
  int end = ring_stores_begin(body);
  if (end < u->k_guard + 1) end = u->k_guard + 1;
  IrStmt *post = ir_seq_new(m, loc);
  for (int i = u->k_guard + 1; i < end; i++) ir_seq_push(m, post, body->u.seq.items[i]);
  for (int i = end - 1; i > u->k_guard; i--) ir_seq_remove(body, i);
  IrStmt *fixup = ir_stmt_new(m, IR_STMT_STREAM_K_FIXUP, loc);
  fixup->u.stream_k.acc = acc;
  fixup->u.stream_k.loop = u->loop;
  ir_seq_insert(m, body, u->k_guard + 1, fixup);
  if (post->u.seq.n) {
    IrExpr *end = ir_binary(m, IR_OP_ADD, ir_var_ref(m, u->loop->u.for_.k_begin, loc),
                            ir_var_ref(m, u->loop->u.for_.k_len, loc), loc);
    IrExpr *last = ir_binary(m, IR_OP_EQ, end, ir_expr_clone(m, u->loop->u.for_.k_iters), loc);
    ir_seq_insert(m, body, u->k_guard + 2, ir_if_new(m, last, post, NULL, loc));
  }
}

/* Everything the rewrite needs, found without changing the kernel. */
typedef struct Split {
  IrStmt *roles;
  Unit prod, cons;
  IrBuffer *acc;
  const IrExpr *n;  /* a clone: the loops' own trees are rewritten */
  Plan plan;
} Split;

static bool plan_split(IrModule *m, const IrKernel *k, Split *sp) {
  if (!k->persistent || k->cluster > 1) return false;
  sp->roles = NULL;
  for (int i = 0; i < k->body->u.seq.n; i++)
    if (k->body->u.seq.items[i]->kind == IR_STMT_WARP_ROLES) sp->roles = k->body->u.seq.items[i];
  if (!sp->roles) return false;
  sp->prod = (Unit){tile_loop(sp->roles->u.roles.producer), NULL, -1};
  sp->cons = (Unit){tile_loop(sp->roles->u.roles.consumer), NULL, -1};
  sp->acc = NULL;
  if (!sp->prod.loop || !sp->cons.loop || !plan_producer(&sp->prod) || !plan_consumer(&sp->cons, &sp->acc))
    return false;
  const IrExpr *n = sp->cons.k_loop->u.for_.extent;
  if (!ir_expr_equal(n, sp->prod.k_loop->u.for_.extent) ||
      !ir_expr_equal(sp->prod.loop->u.for_.extent, sp->cons.loop->u.for_.extent))
    return false;
  /* The fix-up moves acc as float4 per thread (tc_sk_fixup). */
  if ((sp->acc->layout.rows_local * sp->acc->layout.cols_local) % 4) return false;
  sp->n = ir_expr_clone(m, n);
  sp->plan = (Plan){0};
  return ring_advances_by(&sp->prod, sp->n) && ring_advances_by(&sp->cons, sp->n) &&
         plan_tail_releases(m, &sp->cons, sp->n, &sp->plan);
}

static void split_kernel(IrModule *m, const IrKernel *k, Split *sp) {
  /* The producer's unit walk (tc_sk_next) needs registers its 24 do not
   * hold (ptxas spilled in the k-loop): 40, as CUTLASS's producers keep. */
  sp->roles->u.roles.producer_regs = STREAM_K_PRODUCER_REGS;
  sp->roles->u.roles.consumer_regs = pass_consumer_registers(k->producer_warp * 32, STREAM_K_PRODUCER_REGS);
  make_units(m, &sp->prod, sp->n);
  make_units(m, &sp->cons, sp->n);
  rewrite_tail_releases(m, &sp->cons, &sp->plan);
  offset_copies(m, &sp->prod);
  guard_epilogue(m, &sp->cons, sp->acc);
}

/* Whether the consumers' k-loop multiplies FP8 codes. */
static bool k_loop_reads_fp8(const Unit *cons) {
  const IrStmt *body = cons->k_loop->u.for_.body;
  for (int i = 0; i < body->u.seq.n; i++) {
    const IrStmt *s = body->u.seq.items[i];
    if (s->kind == IR_STMT_GEMM && ir_gemm_reads_fp8(s)) return true;
  }
  return false;
}

/* Without the option the kernels stay whole; those the pass would split
 * carry their k-iterations (IrKernel.stream_k_iters: the runtime's grid
 * size reads them too, rt_persistent_blocks) and are marked stream_k_able,
 * so the runtime knows which launches its stream-K build serves. FP8 GEMMs
 * are not marked (the option still splits them): their 128 x 128 tiles read
 * L2 at its limit, and the split phase, which lost the blocks' lockstep
 * on each k-slice, cost more than the last wave it fills (8192^3 on an
 * H100, alternation: 0.850x torch._scaled_mm split, 0.902x whole tiles;
 * docs/gpu-codegen.md "Stream-K"). That was the forward walk; the
 * backward walk (session 30) keeps the lockstep and has not been measured
 * on FP8. */
bool pass_stream_k(IrModule *m, const PassOptions *opts, Diag *diag) {
  (void)diag;
  if (opts->target != TILEC_TARGET_SM90A) return true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    Split sp;
    const bool able = plan_split(m, k, &sp);
    k->stream_k_iters = able ? ir_expr_clone(m, sp.n) : NULL;
    k->stream_k_able = able && !k_loop_reads_fp8(&sp.cons);
    if (able && opts->stream_k) split_kernel(m, k, &sp);
  }
  return true;
}
