/* inline_producer.c - pass "inline-producer" (GPU, sm_90a): a kernel of one
 * consumer warpgroup gives its producer warpgroup back; the consumers issue
 * their own TMA refills.
 *
 * Needs: warp-specialize (which splits a one-warpgroup kernel only where its
 * loop has the attention shape, and marks the split `inline`), overlap-wgmma
 * (done with the consumers' loop: the releases are where they stay).
 * Why: a block of one warpgroup runs three to an SM (flash attention at dim
 * 64: 141-154 registers, 74 KB of shared memory), so the SM overlaps one
 * block's softmax with another's gemms; a producer warpgroup would cost a
 * third of the threads and, through the launch bound setmaxnreg needs, the
 * registers of two of those blocks. But the consumers' loop is the one
 * overlap-wgmma arranged: S = Q K^T of k issued with P V of k - 1, the
 * softmax under P V. So the split is kept for that pass and undone here:
 *     warp_roles producer { for pk in serial(n) { [wait B_empty]; copy.tma B(pk) ... } }
 *       consumers { for k in pipelined(n, S) { ... mbar_arrive B_empty[E % S] ... } ... }
 * becomes
 *     if (0 < n) { copy.tma B(0) ... } ... if (S - 1 < n) { copy.tma B(S - 1) ... }
 *     for k in pipelined(n, S) {
 *       ...
 *       barrier                              // each release's place
 *       if (E + S < n) copy.tma B(E + S)     // under the release's own guard
 *       ...
 *     } ...
 * The barrier stands for the empty mbarrier: every warp is past its reads
 * of the stage before the one thread refills it, as soon as the producer
 * would have. (One barrier for all the refills, where the last release was,
 * measured the same for flash attention and 3-9 % slower for the decoding
 * split kernel with GQA at 8k-32k keys, whose K then loaded later: H100,
 * bench/results/2026-11-24-nvidia-h100-session8-notes.md, call 6.)
 * Releases after the loop free stages no iteration refills: they go, and
 * so do the empty mbarriers. The producer never waited for the tiles
 * loaded once before the split (Q), so neither does the folded prologue:
 * their wait moves after it (wait_after_prologue).
 * A split this pass cannot fold (a release it does not find at the loop's
 * top level or alone under an if) stays a warp-specialized kernel. */
#include <string.h>

#include "passes.h"
#include "../simplify.h"

enum { MAX_RINGS = 8 };

typedef struct Ring {
  IrBuffer *buf;          /* the TMA destination (K_shared, ...) */
  IrStmt *copy;           /* the producer's copy of iteration pk */
} Ring;

typedef struct Fold {
  Ring rings[MAX_RINGS];
  int nrings;
  IrVar *pk;              /* the producer's loop variable */
  IrExpr *n;              /* the pipeline's length */
  int stages;
} Fold;

static Ring *ring_of_empty(Fold *f, const IrBuffer *bar) {
  for (int i = 0; i < f->nrings; i++)
    if (f->rings[i].buf->empty_bar == bar) return &f->rings[i];
  return NULL;
}

/* The producer: for pk in serial(n) { if (pk >= S) mbar_wait ...; copy.tma ... }. */
static bool read_producer(IrStmt *producer, Fold *f) {
  if (producer->u.seq.n != 1) return false;
  IrStmt *loop = producer->u.seq.items[0];
  if (loop->kind != IR_STMT_FOR || loop->u.for_.kind != IR_FOR_SERIAL) return false;
  f->pk = loop->u.for_.var;
  f->n = loop->u.for_.extent;
  IrStmt *body = loop->u.for_.body;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (s->kind == IR_STMT_IF) continue; /* the empty-barrier wait */
    if (s->kind != IR_STMT_COPY || !s->u.copy.tma || !s->u.copy.dst.buf->empty_bar || f->nrings == MAX_RINGS)
      return false;
    f->rings[f->nrings++] = (Ring){s->u.copy.dst.buf, s};
  }
  return f->nrings > 0;
}

/* A release `mbar_arrive B_empty[E % S]` of a known ring: E, else NULL. */
static IrExpr *released_iteration(Fold *f, const IrStmt *s) {
  if (s->kind != IR_STMT_MBAR_ARRIVE || !ring_of_empty(f, s->u.mbar_wait.bar)) return NULL;
  const IrExpr *st = s->u.mbar_wait.stage;
  int64_t S = 0;
  if (st->kind != IR_EXPR_BINARY || st->u.op.op != IR_OP_MOD || !ir_expr_is_int_const(st->u.op.b, &S) ||
      S != f->stages)
    return NULL;
  return st->u.op.a;
}

/* The copy of ring r for iteration `it`, under `if (guard && it < n)`. */
static IrStmt *refill(IrModule *m, Fold *f, Ring *r, IrExpr *it, IrExpr *guard, SrcLoc loc) {
  IrStmt *c = ir_stmt_clone_tile_op(m, r->copy);
  pass_subst_var(m, c, f->pk, ir_simplify(m, it));
  IrExpr *cond = ir_binary(m, IR_OP_LT, ir_expr_clone(m, it), ir_expr_clone(m, f->n), loc);
  if (guard) cond = ir_binary(m, IR_OP_AND, ir_expr_clone(m, guard), cond, loc);
  IrStmt *then_ = ir_seq_new(m, loc);
  ir_seq_push(m, then_, c);
  return ir_if_new(m, ir_simplify(m, cond), then_, NULL, loc);
}

typedef struct Release {
  Ring *ring;
  IrExpr *iteration, *guard;
} Release;

/* Releases of the rings anywhere in s. */
static void note_release(IrStmt *s, void *ctx) {
  Fold *f = ((void **)ctx)[0];
  int *count = ((void **)ctx)[1];
  if (s->kind == IR_STMT_MBAR_ARRIVE && ring_of_empty(f, s->u.mbar_wait.bar)) ++*count;
}

static int count_releases(Fold *f, IrStmt *s) {
  int count = 0;
  void *ctx[2] = {f, &count};
  ir_visit_stmts(s, note_release, ctx);
  return count;
}

/* Replaces each release in the loop's body (at its top level, or alone in
 * an if with no else) by a barrier and the stage's refill. Changes nothing
 * unless every release in the body is of that form. */
static bool fold_loop(IrModule *m, Fold *f, IrStmt *loop) {
  IrStmt *body = loop->u.for_.body;
  Release rel[MAX_RINGS * 2];
  int at[MAX_RINGS * 2], nrel = 0;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    IrStmt *only = s;
    IrExpr *guard = NULL;
    if (s->kind == IR_STMT_IF && !s->u.if_.else_ && s->u.if_.then_->u.seq.n == 1) {
      only = s->u.if_.then_->u.seq.items[0];
      guard = s->u.if_.cond;
    }
    IrExpr *it = released_iteration(f, only);
    if (!it) continue;
    if (nrel == MAX_RINGS * 2) return false;
    at[nrel] = i;
    rel[nrel++] = (Release){ring_of_empty(f, only->u.mbar_wait.bar), it, guard};
  }
  if (nrel == 0 || count_releases(f, body) != nrel) return false;
  /* Each release becomes a barrier and its refill, in place (from the back,
   * so the positions before stay valid). */
  SrcLoc loc = loop->loc;
  for (int r = nrel - 1; r >= 0; r--) {
    ir_seq_remove(body, at[r]);
    IrExpr *next = ir_binary(m, IR_OP_ADD, ir_expr_clone(m, rel[r].iteration), ir_int(m, f->stages, loc), loc);
    ir_seq_insert(m, body, at[r], refill(m, f, rel[r].ring, next, rel[r].guard, loc));
    ir_seq_insert(m, body, at[r], ir_stmt_new(m, IR_STMT_BARRIER, loc));
  }
  return true;
}

/* Drops the releases from the statements after the loop (recursively in ifs). */
static void drop_releases(Fold *f, IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++) {
    IrStmt *s = seq->u.seq.items[i];
    if (s->kind == IR_STMT_IF) {
      drop_releases(f, s->u.if_.then_);
      if (s->u.if_.else_) drop_releases(f, s->u.if_.else_);
    } else if (s->kind == IR_STMT_SEQ) {
      drop_releases(f, s);
    } else if (s->kind == IR_STMT_MBAR_ARRIVE && ring_of_empty(f, s->u.mbar_wait.bar)) {
      ir_seq_remove(seq, i);
      i--;
    }
  }
}

/* May a wait on mbarrier `bar` move past statement s: s touches neither
 * the barrier nor a tile it fills, and holds no barrier or gemm? */
static bool wait_may_pass(IrStmt *s, const IrBuffer *bar) {
  PassEffects e = pass_effects(s);
  if (e.overflow || e.barrier || e.gemm) return false;
  for (int i = 0; i < e.nreads + e.nwrites; i++) {
    const IrBuffer *b = i < e.nreads ? e.reads[i] : e.writes[i - e.nreads];
    if (b == bar || b->tma_bar == bar) return false;
  }
  return true;
}

/* The producer issued its first stages without waiting for anything; the
 * consumers' wait for a tile loaded once before the split (flash
 * attention's Q: `copy.tma Q; mbar_wait Q_full` at the top) must not hold
 * those loads back now that the consumers issue them. The nearest
 * mbar_wait before the split in the kernel's top-level sequence (body[j],
 * or outer[r] inside the top-level SEQ body[j]) moves to just before the
 * loop (folded[nprologue]) when nothing it passes needs its tile. Saves a
 * memory round trip per block (Q's) before the first K and V loads. */
static void wait_after_prologue(IrModule *m, IrKernel *k, int j, IrStmt *outer, int r, IrStmt *folded,
                                int nprologue) {
  IrStmt *body = k->body;
  int w = j - 1;
  while (w >= 0 && body->u.seq.items[w]->kind != IR_STMT_MBAR_WAIT) w--;
  if (w < 0) return;
  IrStmt *wait = body->u.seq.items[w];
  const IrBuffer *bar = wait->u.mbar_wait.bar;
  for (int i = w + 1; i < j; i++)
    if (!wait_may_pass(body->u.seq.items[i], bar)) return;
  for (int i = 0; outer && i < r; i++)
    if (!wait_may_pass(outer->u.seq.items[i], bar)) return;
  for (int i = 0; i < nprologue; i++)
    if (!wait_may_pass(folded->u.seq.items[i], bar)) return;
  ir_seq_remove(body, w);
  ir_seq_insert(m, folded, nprologue, wait);
}

/* Folds the split at seq[at]; seq is the kernel's body (top == at) or the
 * top-level SEQ body[top]. */
static bool inline_roles(IrModule *m, IrKernel *k, IrStmt *seq, int at, int top) {
  IrStmt *roles = seq->u.seq.items[at];
  IrStmt *consumer = roles->u.roles.consumer;
  Fold f;
  memset(&f, 0, sizeof f);
  if (!read_producer(roles->u.roles.producer, &f)) return false;
  /* The consumers: lets (trim-masked-iterations' k_half), the pipelined
   * loop, then what follows it. */
  int first = 0;
  while (first < consumer->u.seq.n && consumer->u.seq.items[first]->kind == IR_STMT_LET) first++;
  if (first == consumer->u.seq.n) return false;
  IrStmt *loop = consumer->u.seq.items[first];
  if (loop->kind != IR_STMT_FOR || loop->u.for_.kind != IR_FOR_PIPELINED || loop->u.for_.num_stages < 2) return false;
  f.stages = loop->u.for_.num_stages;
  if (!fold_loop(m, &f, loop)) return false;
  drop_releases(&f, consumer);

  /* The prologue: the first S iterations of every ring, in the producer's order. */
  SrcLoc loc = roles->loc;
  IrStmt *folded = ir_seq_new(m, loc);
  for (int it = 0; it < f.stages; it++) {
    IrStmt *then_ = ir_seq_new(m, loc);
    for (int r = 0; r < f.nrings; r++) {
      IrStmt *c = ir_stmt_clone_tile_op(m, f.rings[r].copy);
      pass_subst_var(m, c, f.pk, ir_int(m, it, loc));
      ir_seq_push(m, then_, c);
    }
    IrExpr *cond = ir_binary(m, IR_OP_LT, ir_int(m, it, loc), ir_expr_clone(m, f.n), loc);
    ir_seq_push(m, folded, ir_if_new(m, ir_simplify(m, cond), then_, NULL, loc));
  }
  for (int i = 0; i < consumer->u.seq.n; i++) ir_seq_push(m, folded, consumer->u.seq.items[i]);
  seq->u.seq.items[at] = folded;
  wait_after_prologue(m, k, top, seq == k->body ? NULL : seq, at, folded, f.stages);

  for (int r = 0; r < f.nrings; r++) {
    pass_drop_alloc(k, f.rings[r].buf->empty_bar);
    f.rings[r].buf->empty_bar = NULL;
  }
  k->threads = ir_int(m, k->producer_warp * 32, k->threads->loc);
  k->producer_warp = 0;
  return true;
}

bool pass_inline_producer(IrModule *m, const PassOptions *opts, Diag *diag) {
  (void)diag;
  if (opts->target != TILEC_TARGET_SM90A) return true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    if (k->producer_warp != 4) continue; /* one consumer warpgroup */
    /* At the top level or in a SEQ there, where warp-specialize put it
     * (one split per kernel: the scan ends at the first fold, which may
     * move a statement of the body). */
    bool folded = false;
    for (int j = 0; j < k->body->u.seq.n && !folded; j++) {
      IrStmt *s = k->body->u.seq.items[j], *seq = s->kind == IR_STMT_SEQ ? s : k->body;
      const int from = s->kind == IR_STMT_SEQ ? 0 : j, to = s->kind == IR_STMT_SEQ ? s->u.seq.n : j + 1;
      for (int r = from; r < to && !folded; r++) {
        IrStmt *roles = seq->u.seq.items[r];
        if (roles->kind == IR_STMT_WARP_ROLES && roles->u.roles.inline_producer) folded = inline_roles(m, k, seq, r, j);
      }
    }
  }
  return true;
}
