/* defer_wgmma_waits.c - pass "defer-wgmma-waits" (GPU, sm_90a): a wgmma
 * gemm returns as soon as its wgmmas are issued, and the warpgroup waits for
 * them only where a later statement needs them done.
 *
 * Needs: insert-barriers (the barriers are final: one that separates a
 * gemm's shared reads from later writes ends the gemm's flight),
 * software-pipeline and overlap-wgmma (the gemms they keep in flight are
 * theirs: left alone), warp-specialize (empty mbarriers release tiles).
 * Guarantees: in every statement sequence, a wgmma gemm G of 16-bit tiles
 * that waits in place becomes issue-only when the statement after it does
 * not need it done (or another gemm is already in flight), and
 *     wgmma_wait C(G) pending(p)
 * goes right before the first later statement S of the sequence that
 *   - reads or writes C(G), or writes G's A fragment or tiles;
 *   - holds a barrier while G reads a shared tile that has no empty
 *     mbarrier (the barrier is what lets other threads, or a refill,
 *     overwrite it);
 *   - holds a gemm that is not issued this way, a wgmma wait, or a warp
 *     split;
 * or at the end of the sequence. p counts the gemms issued after G and
 * still in flight: wgmma groups complete in issue order, so the wait also
 * completes every older one, each of which gets its own wait (pending p
 * again: no cost) for the CUDA backend to fence its accumulator. An
 * mbarrier arrive that releases a tile an in-flight gemm reads (warp
 * specialization's "empty" arrive after the tile's last reader) moves to
 * just after that gemm's wait instead of ending its flight. The float
 * fragments written between a gemm's issue and its wait are pinned there
 * (nvcc would otherwise sink that arithmetic past the wait, out of the
 * overlap).
 * So two independent gemms run back to back (S = Q K^T and dP = dO V^T of
 * the attention backward), and a gemm whose result is needed only at the
 * loop's end (dV += P^T dO) runs under the elementwise work after it. A
 * sequence whose gemms are each read by the next statement is unchanged. */
#include <string.h>

#include "passes.h"

enum { MAX_IN_FLIGHT = 8, MAX_RELEASES = 8 };

typedef struct InFlight {
  IrStmt *gemm;
  IrStmt *releases[MAX_RELEASES]; /* arrives held back until the gemm is done */
  int nreleases;
  IrStmt *pins;                   /* a WGMMA_WAIT collecting the fragments written meanwhile */
} InFlight;

typedef struct Seq {
  IrModule *m;
  IrStmt *out;
  InFlight fl[MAX_IN_FLIGHT];
  int n;
} Seq;

/* A gemm this pass may issue and wait for later: a 16-bit wgmma that waits
 * in place (not one software-pipeline or overlap-wgmma keeps in flight). */
static bool deferrable(const IrStmt *s) {
  return s->kind == IR_STMT_GEMM && s->u.gemm.wgmma && !s->u.gemm.wgmma_async && !s->u.gemm.wgmma_issue_only &&
         !ir_gemm_reads_fp8(s);
}

static bool released_by_barrier(const IrBuffer *b) { return b->scope == IR_SCOPE_SHARED && !b->empty_bar; }

/* Does statement s (effects e) need gemm g done? */
static bool needs(const IrStmt *g, const IrStmt *s, const PassEffects *e) {
  const IrBuffer *a = g->u.gemm.a.buf, *b = g->u.gemm.b.buf, *c = g->u.gemm.c.buf;
  if (e->overflow || pass_effects_references(e, c) || pass_effects_writes(e, a) || pass_effects_writes(e, b))
    return true;
  if ((a->empty_bar && pass_effects_writes(e, a->empty_bar)) || (b->empty_bar && pass_effects_writes(e, b->empty_bar)))
    return true;
  if (e->barrier && (released_by_barrier(a) || released_by_barrier(b))) return true;
  return s->kind == IR_STMT_WARP_ROLES || (e->gemm && !deferrable(s));
}

static void note_wgmma_wait(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_WGMMA_WAIT) *(bool *)ctx = true;
}

/* Effects of s, overflowing when s waits for wgmmas itself (its waits
 * would complete ours with counts this pass did not make). */
static PassEffects effects_of(IrStmt *s) {
  PassEffects e = pass_effects(s);
  ir_visit_stmts(s, note_wgmma_wait, &e.overflow);
  return e;
}

static bool is_accumulator_in_flight(const Seq *q, const IrBuffer *b) {
  for (int i = 0; i < q->n; i++)
    if (q->fl[i].gemm->u.gemm.c.buf == b) return true;
  return false;
}

/* Completes the in-flight gemms 0..upto (the oldest ones): the wait for
 * gemm `upto` first, then one per older accumulator, then the releases
 * they held back. */
static void complete(Seq *q, int upto, SrcLoc loc) {
  const int pending = q->n - 1 - upto;
  for (int i = upto; i >= 0; i--) {
    IrStmt *w = pass_wgmma_wait(q->m, q->fl[i].gemm->u.gemm.c.buf, pending, loc);
    const IrStmt *pins = q->fl[upto].pins;
    for (int p = 0; i == upto && p < pins->u.wgmma_wait.npinned; p++)
      if (!is_accumulator_in_flight(q, pins->u.wgmma_wait.pinned[p])) pass_wgmma_wait_pin(w, pins->u.wgmma_wait.pinned[p]);
    ir_seq_push(q->m, q->out, w);
  }
  for (int i = 0; i <= upto; i++)
    for (int r = 0; r < q->fl[i].nreleases; r++) ir_seq_push(q->m, q->out, q->fl[i].releases[r]);
  for (int i = upto + 1; i < q->n; i++) q->fl[i - upto - 1] = q->fl[i];
  q->n -= upto + 1;
}

/* Is s an mbarrier arrive releasing one of gemm g's tiles? */
static bool releases_tile_of(const IrStmt *g, const IrStmt *s) {
  return s->kind == IR_STMT_MBAR_ARRIVE &&
         (g->u.gemm.a.buf->empty_bar == s->u.mbar_wait.bar || g->u.gemm.b.buf->empty_bar == s->u.mbar_wait.bar);
}

/* The newest in-flight gemm whose tile the arrive s releases, or -1. */
static int releases_operand(const Seq *q, const IrStmt *s) {
  for (int i = q->n - 1; i >= 0; i--)
    if (releases_tile_of(q->fl[i].gemm, s)) return i;
  return -1;
}

static void defer_in(IrModule *m, IrStmt *s);

static void defer_seq(IrModule *m, IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++) defer_in(m, seq->u.seq.items[i]);
  Seq q;
  memset(&q, 0, sizeof q);
  q.m = m;
  q.out = ir_seq_new(m, seq->loc);
  const int n = seq->u.seq.n;
  bool changed = false;
  for (int i = 0; i < n; i++) {
    IrStmt *s = seq->u.seq.items[i];
    const int held = releases_operand(&q, s);
    if (held >= 0 && q.fl[held].nreleases < MAX_RELEASES) {
      q.fl[held].releases[q.fl[held].nreleases++] = s;
      continue;
    }
    PassEffects e = effects_of(s);
    int need = -1;
    for (int j = 0; j < q.n; j++)
      if (needs(q.fl[j].gemm, s, &e)) need = j;
    if (need >= 0) complete(&q, need, s->loc);
    if (deferrable(s) && q.n < MAX_IN_FLIGHT) {
      /* Alone, a gemm whose result the next statement reads keeps waiting
       * in place: nothing would overlap it. (The releases of its tiles
       * right after it do not count: they would only move past the wait.) */
      bool next_needs = false;
      int next = i + 1;
      while (next < n && releases_tile_of(s, seq->u.seq.items[next])) next++;
      if (q.n == 0) {
        if (next == n) next_needs = true;
        else {
          PassEffects en = effects_of(seq->u.seq.items[next]);
          next_needs = needs(s, seq->u.seq.items[next], &en);
        }
      }
      if (!next_needs) {
        s->u.gemm.wgmma_issue_only = true;
        changed = true;
        ir_seq_push(m, q.out, s);
        InFlight *f = &q.fl[q.n++];
        memset(f, 0, sizeof *f);
        f->gemm = s;
        f->pins = pass_wgmma_wait(m, s->u.gemm.c.buf, 0, s->loc);
        continue;
      }
    }
    ir_seq_push(m, q.out, s);
    for (int j = 0; j < q.n; j++)
      for (int w = 0; w < e.nwrites; w++) pass_wgmma_wait_pin(q.fl[j].pins, e.writes[w]);
  }
  if (q.n) complete(&q, q.n - 1, seq->loc);
  if (changed) seq->u.seq = q.out->u.seq;
}

/* Every sequence under s, innermost first. */
static void defer_in(IrModule *m, IrStmt *s) {
  switch (s->kind) {
  case IR_STMT_SEQ: defer_seq(m, s); break;
  case IR_STMT_IF:
    defer_seq(m, s->u.if_.then_);
    if (s->u.if_.else_) defer_seq(m, s->u.if_.else_);
    break;
  case IR_STMT_FOR: defer_seq(m, s->u.for_.body); break;
  case IR_STMT_WARP_ROLES: defer_seq(m, s->u.roles.consumer); break;
  default: break;
  }
}

bool pass_defer_wgmma_waits(IrModule *m, const PassOptions *opts, Diag *diag) {
  (void)diag;
  if (opts->target != TILEC_TARGET_SM90A) return true;
  for (int i = 0; i < m->nkernels; i++) defer_seq(m, m->kernels[i]->body);
  return true;
}
