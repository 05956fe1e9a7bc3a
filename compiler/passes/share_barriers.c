/* share_barriers.c - pass "share-barriers" (GPU, sm_90a): two TMA rings that
 * always fill and drain together share one pair of mbarriers.
 *
 * Needs: lower-tma (the full barriers, B->tma_bar), warp-specialize (the
 * empty ones, B->empty_bar, and the producer's waits on them) and persistent
 * (its cluster rings are final; they are left alone).
 * Guarantees: for TMA destinations X and Y of the same stage count where
 *   - every wait on Y's full barrier directly follows a wait on X's with the
 *     same stage and parity, and every such wait on X's is followed by one
 *     on Y's (the consumers wait for both before the same statement: a GEMM's
 *     A and B);
 *   - every release of Y's empty barrier is next to a release of X's for the
 *     same stage, and the other way round (one last reader);
 *   - every producer wait on Y's empty barrier (`if (c) mbar_wait Y_empty`)
 *     has an earlier twin on X's in the same sequence (same c, stage and
 *     parity), and every TMA copy into Y a twin copy into X in the same
 *     sequence filling the same stage;
 *   - nothing else names Y's barriers or writes Y, and neither ring is
 *     shared with a cluster partner;
 * Y's copies complete on X's full barrier, which now expects one arrival per
 * ring (each copy's arrive.expect_tx), Y's waits and releases go, and Y's
 * barriers are freed. Each consumer warp then polls one barrier and releases
 * one per k-tile instead of two (FP8 GEMM: 12 fewer instructions per k-tile
 * and warp). Rings whose readers differ (attention's K and V) keep their own
 * barriers, so V may still land while K's gemm runs. */

#include "passes.h"

enum { MAX_DSTS = 32 };

typedef struct Pair {
  IrBuffer *x, *y;
  bool ok;
  int refs_y; /* statements naming Y's barriers, each of which must be matched */
  int matched;
} Pair;

static bool is_wait_on(const IrStmt *s, const IrBuffer *bar) {
  return s && s->kind == IR_STMT_MBAR_WAIT && s->u.mbar_wait.bar == bar;
}
static bool is_arrive_on(const IrStmt *s, const IrBuffer *bar) {
  return s && s->kind == IR_STMT_MBAR_ARRIVE && s->u.mbar_wait.bar == bar;
}
static bool same_wait(const IrStmt *a, const IrStmt *b) {
  return ir_expr_equal(a->u.mbar_wait.stage, b->u.mbar_wait.stage) &&
         ((!a->u.mbar_wait.parity && !b->u.mbar_wait.parity) ||
          (a->u.mbar_wait.parity && b->u.mbar_wait.parity && ir_expr_equal(a->u.mbar_wait.parity, b->u.mbar_wait.parity)));
}

/* `if (c) { mbar_wait bar[...] }` with nothing else: the producer's wait
 * for a free stage. */
static const IrStmt *guarded_wait(const IrStmt *s, const IrBuffer *bar) {
  if (!s || s->kind != IR_STMT_IF || s->u.if_.else_ || s->u.if_.then_->u.seq.n != 1) return NULL;
  const IrStmt *w = s->u.if_.then_->u.seq.items[0];
  return is_wait_on(w, bar) ? w : NULL;
}

static bool is_tma_into(const IrStmt *s, const IrBuffer *b) {
  return s->kind == IR_STMT_COPY && s->u.copy.tma && !s->u.copy.prefetch_l2 && s->u.copy.dst.buf == b;
}

/* Checks one sequence's statements for the pair; counts Y's matched uses. */
static void check_seq(Pair *p, IrStmt *seq) {
  IrBuffer *xf = p->x->tma_bar, *yf = p->y->tma_bar, *xe = p->x->empty_bar, *ye = p->y->empty_bar;
  const int n = seq->u.seq.n;
  IrStmt **it = seq->u.seq.items;
  int copies_x = 0, copies_y = 0;
  for (int i = 0; i < n && p->ok; i++) {
    IrStmt *s = it[i];
    if (is_wait_on(s, xf) && !(i + 1 < n && is_wait_on(it[i + 1], yf) && same_wait(s, it[i + 1]))) p->ok = false;
    if (is_wait_on(s, yf)) {
      if (i > 0 && is_wait_on(it[i - 1], xf) && same_wait(s, it[i - 1])) p->matched++;
      else p->ok = false;
    }
    if (xe && (is_arrive_on(s, xe) || is_arrive_on(s, ye))) {
      const IrBuffer *twin = is_arrive_on(s, xe) ? ye : xe;
      bool paired = (i > 0 && is_arrive_on(it[i - 1], twin) && same_wait(s, it[i - 1])) ||
                    (i + 1 < n && is_arrive_on(it[i + 1], twin) && same_wait(s, it[i + 1]));
      if (!paired) p->ok = false;
      else if (is_arrive_on(s, ye)) p->matched++;
    }
    if (xe && (is_wait_on(s, xe) || is_wait_on(s, ye))) p->ok = false; /* an unguarded producer wait: not the shape we know */
    const IrStmt *wy = ye ? guarded_wait(s, ye) : NULL;
    if (wy) {
      bool twin = false;
      for (int j = i - 1; j >= 0 && !twin; j--) {
        const IrStmt *wx = guarded_wait(it[j], xe);
        twin = wx && same_wait(wx, wy) && ir_expr_equal(it[j]->u.if_.cond, s->u.if_.cond);
      }
      if (twin) p->matched++;
      else p->ok = false;
    }
    if (is_tma_into(s, p->x)) copies_x++;
    if (is_tma_into(s, p->y)) {
      bool twin = false;
      for (int j = 0; j < n && !twin; j++)
        twin = is_tma_into(it[j], p->x) && ir_expr_equal(it[j]->u.copy.dst.start[0], s->u.copy.dst.start[0]);
      if (twin) p->matched++, copies_y++;
      else p->ok = false;
    }
  }
  if (copies_x != copies_y) p->ok = false;
}

static void walk_seqs(Pair *p, IrStmt *s) {
  if (!s || !p->ok) return;
  switch (s->kind) {
  case IR_STMT_SEQ:
    check_seq(p, s);
    for (int i = 0; i < s->u.seq.n; i++) walk_seqs(p, s->u.seq.items[i]);
    break;
  case IR_STMT_FOR: walk_seqs(p, s->u.for_.body); break;
  case IR_STMT_IF:
    /* A producer's guarded wait was checked as a whole by its sequence. */
    if (p->x->empty_bar && (guarded_wait(s, p->x->empty_bar) || guarded_wait(s, p->y->empty_bar))) break;
    walk_seqs(p, s->u.if_.then_);
    walk_seqs(p, s->u.if_.else_);
    break;
  case IR_STMT_WARP_ROLES:
    walk_seqs(p, s->u.roles.producer);
    walk_seqs(p, s->u.roles.consumer);
    break;
  default: break;
  }
}

/* Every statement that names Y's barriers or writes Y. */
static void count_refs(IrStmt *s, void *ctx) {
  Pair *p = ctx;
  IrBuffer *yf = p->y->tma_bar, *ye = p->y->empty_bar;
  if (s->kind == IR_STMT_MBAR_WAIT || s->kind == IR_STMT_MBAR_ARRIVE) {
    if (s->u.mbar_wait.bar == yf || (ye && s->u.mbar_wait.bar == ye)) p->refs_y++;
  } else if (s->kind == IR_STMT_COPY && s->u.copy.dst.buf == p->y && !s->u.copy.prefetch_l2) {
    if (s->u.copy.tma) p->refs_y++;
    else p->ok = false; /* Y is also written another way */
  } else if (s->kind == IR_STMT_STORE && s->u.store.buf == p->y) {
    p->ok = false;
  }
}

static bool rings_alike(const IrBuffer *x, const IrBuffer *y) {
  int64_t sx = 0, sy = 0;
  if (!x->tma_bar || !y->tma_bar || x->tma_bar == y->tma_bar || x->tma_bar->mbar_cluster || y->tma_bar->mbar_cluster)
    return false;
  if (!ir_expr_is_int_const(x->tma_bar->shape[0], &sx) || !ir_expr_is_int_const(y->tma_bar->shape[0], &sy) || sx != sy)
    return false;
  if (y->tma_bar->mbar_count > 1) return false; /* Y already carries another ring */
  if (!x->empty_bar != !y->empty_bar) return false;
  if (x->empty_bar && (x->empty_bar->mbar_cluster || y->empty_bar->mbar_cluster ||
                       x->empty_bar->mbar_count != y->empty_bar->mbar_count || x->empty_bar == y->empty_bar))
    return false;
  return true;
}

/* Removes Y's waits, releases and guarded producer waits (the matched ones:
 * nothing else names them) and points Y at X's barriers. */
static void drop_y(IrStmt *s, void *ctx) {
  Pair *p = ctx;
  if (s->kind != IR_STMT_SEQ) return;
  IrBuffer *yf = p->y->tma_bar, *ye = p->y->empty_bar;
  int n = 0;
  for (int i = 0; i < s->u.seq.n; i++) {
    IrStmt *it = s->u.seq.items[i];
    bool drop = is_wait_on(it, yf) || (ye && (is_arrive_on(it, ye) || guarded_wait(it, ye)));
    if (!drop) s->u.seq.items[n++] = it;
  }
  s->u.seq.n = n;
}

static bool share_one(IrKernel *k, IrBuffer **dsts, int ndsts) {
  for (int a = 0; a < ndsts; a++)
    for (int b = 0; b < ndsts; b++) {
      if (a == b || !rings_alike(dsts[a], dsts[b])) continue;
      Pair p = {dsts[a], dsts[b], true, 0, 0};
      ir_visit_stmts(k->body, count_refs, &p);
      walk_seqs(&p, k->body);
      if (!p.ok || p.matched != p.refs_y || p.refs_y == 0) continue;
      IrBuffer *old_full = p.y->tma_bar, *old_empty = p.y->empty_bar;
      ir_visit_stmts(k->body, drop_y, &p);
      IrBuffer *xf = p.x->tma_bar;
      xf->mbar_count = (xf->mbar_count > 1 ? xf->mbar_count : 1) + 1; /* one arrive.expect_tx per ring */
      p.y->tma_bar = xf;
      p.y->empty_bar = p.x->empty_bar;
      pass_drop_alloc(k, old_full);
      if (old_empty) pass_drop_alloc(k, old_empty);
      return true;
    }
  return false;
}

bool pass_share_barriers(IrModule *m, const PassOptions *opts, Diag *diag) {
  (void)diag;
  if (opts->target != TILEC_TARGET_SM90A) return true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    IrBuffer *dsts[MAX_DSTS];
    int ndsts = 0;
    for (int j = 0; j < k->body->u.seq.n && ndsts < MAX_DSTS; j++) {
      IrStmt *s = k->body->u.seq.items[j];
      if (s->kind == IR_STMT_ALLOC && s->u.alloc->tma_bar) dsts[ndsts++] = s->u.alloc;
    }
    while (share_one(k, dsts, ndsts)) {
    }
  }
  return true;
}
