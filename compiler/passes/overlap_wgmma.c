/* overlap_wgmma.c - pass "overlap-wgmma" (GPU, sm_90a): keeps the tensor
 * cores busy through the elementwise work of a warp-specialized loop with two
 * gemms (FlashAttention-3's intra-warpgroup overlap).
 *
 * Needs: warp-specialize (the consumers' loop: no fetches, no block barrier;
 * mbar_waits on full barriers and mbar_arrives on empty ones), infer-layout
 * (which gemms are wgmma).
 * Pattern, the body of a consumer `for k in pipelined(n)`:
 *     ... G1: a wgmma gemm (or an if whose branches end in one) -> C1
 *     X:  statements
 *     mbar_wait B2_full[k % S]; G2: a wgmma gemm A2 (fragment), B2[k % S] -> C2;
 *     mbar_arrive B2_empty[k % S]
 *     Y:  statements
 * Without this pass each warpgroup waits for G1, computes X while its
 * tensor-core work is done, then waits for G2. After it, iteration k runs
 *     ...; G1(k) issued
 *     if (k > 0) { mbar_wait B2_full(k-1); G2(k-1) issued; wgmma_wait C1 pending(1) }
 *     else wgmma_wait C1                      // G1(k) done, G2(k-1) may run on
 *     X and Y statements that touch neither C2, A2 nor B2 (nor what the
 *       held-back ones below write or read), in order: they run under G2(k-1)
 *     wgmma_wait C2 after(<the fragments they wrote>)   // G2(k-1) done
 *     if (k > 0) mbar_arrive B2_empty(k-1)
 *     the held-back statements, in order (e.g. C2 *= rescale; A2 = cast(..))
 * and after the loop: if (n > 0) { mbar_wait B2_full(n-1); G2(n-1);
 * mbar_arrive B2_empty(n-1) }. G2 thus runs one iteration late, issued right
 * behind G1, and the statements between them overlap it: the dependences
 * between statements decide what moves, not the kernel's names. The wait
 * pins the registers written under G2 (nvcc would otherwise sink that
 * arithmetic past the wait). In a kernel of two consumer warpgroups that
 * run the loop alike, the second starts it staggered (above
 * walk). With PINGPONG_TURNS on, each consumer
 * warpgroup also takes its turn before issuing (warpgroup_turn wait) and
 * hands it on right after (warpgroup_turn pass): FA3's ping-pong, off
 * because it measured slower (below). Loops that do not match are left as
 * they are.
 * The issue and its wait<1> sit on one path (if k > 0 { issue; wait })
 * because ptxas serializes every wgmma (C7514) when it cannot prove the
 * accumulator is not read between start and end of a pipeline stage. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "../simplify.h"

/* ---- finding the pattern -------------------------------------------------------- */

static bool is_wgmma(const IrStmt *s) { return s->kind == IR_STMT_GEMM && s->u.gemm.wgmma; }

/* The wgmma gemms that end statement s (itself, or the last statement of
 * each branch of an if); 0 when s is not such a statement. */
static int ending_gemms(IrStmt *s, IrStmt **out) {
  if (is_wgmma(s)) {
    out[0] = s;
    return 1;
  }
  if (s->kind != IR_STMT_IF || !s->u.if_.else_) return 0;
  IrStmt *t = s->u.if_.then_, *e = s->u.if_.else_;
  if (t->u.seq.n == 0 || e->u.seq.n == 0) return 0;
  IrStmt *a = t->u.seq.items[t->u.seq.n - 1], *b = e->u.seq.items[e->u.seq.n - 1];
  if (!is_wgmma(a) || !is_wgmma(b) || a->u.gemm.c.buf != b->u.gemm.c.buf) return 0;
  out[0] = a, out[1] = b;
  return 2;
}

typedef struct Pattern {
  int g1, g2, wait2, arrive2; /* top-level positions in the body */
  IrStmt *g1_gemms[2];
  int ng1;
} Pattern;

static bool find_pattern(IrStmt *loop, Pattern *p) {
  IrStmt *body = loop->u.for_.body;
  const int n = body->u.seq.n;
  memset(p, 0, sizeof *p);
  if (n < 4 || n > 60) return false;
  for (int i = 0; i < n; i++) {
    IrStmtKind k = body->u.seq.items[i]->kind;
    if (k == IR_STMT_BARRIER || k == IR_STMT_ASYNC_WAIT || k == IR_STMT_WGMMA_WAIT) return false;
  }
  p->g2 = -1;
  for (int i = n - 1; i >= 0 && p->g2 < 0; i--) {
    IrStmt *s = body->u.seq.items[i];
    if (is_wgmma(s) && s->u.gemm.a.buf->scope == IR_SCOPE_FRAGMENT && !s->u.gemm.wgmma_async) p->g2 = i;
  }
  if (p->g2 < 2 || p->g2 + 1 >= n) return false;
  IrStmt *g2 = body->u.seq.items[p->g2];
  const IrBuffer *b2 = g2->u.gemm.b.buf;
  if (!b2->tma_bar || !b2->empty_bar || b2->rank != g2->u.gemm.b.rank) return false;
  IrStmt *w = body->u.seq.items[p->g2 - 1], *a = body->u.seq.items[p->g2 + 1];
  if (w->kind != IR_STMT_MBAR_WAIT || w->u.mbar_wait.bar != b2->tma_bar) return false;
  if (a->kind != IR_STMT_MBAR_ARRIVE || a->u.mbar_wait.bar != b2->empty_bar) return false;
  p->wait2 = p->g2 - 1;
  p->arrive2 = p->g2 + 1;
  p->g1 = -1;
  for (int i = 0; i < p->wait2 && p->g1 < 0; i++) {
    p->ng1 = ending_gemms(body->u.seq.items[i], p->g1_gemms);
    if (p->ng1) p->g1 = i;
  }
  return p->g1 >= 0 && p->g1_gemms[0]->u.gemm.c.buf != g2->u.gemm.c.buf;
}

/* ---- the transformation ----------------------------------------------------------- */

/* A copy of G2 (or of its mbarrier wait or release) for iteration `at`. */
static IrStmt *at_iteration(IrModule *m, const IrStmt *s, IrVar *k, const IrExpr *at) {
  IrStmt *c = pass_clone_stmt(m, s);
  pass_subst_var(m, c, k, at);
  return c;
}

/* Ping-pong turns between the consumer warpgroups: built, racecheck-clean,
 * and measured SLOWER than the overlap alone on an H100 (bf16, dim 128,
 * seq 2048/8192, causal and not: 513-563 against 555-598 TFLOP/s, one
 * device call; bench/results/2026-11-23-nvidia-h100-session2-notes.md).
 * Off: turn() then makes nothing and the dumps show no warpgroup_turn.
 * Measured again at dim 64 (2026-11-24, tenth session, call 3): 192-row
 * blocks 1.007x cuDNN against 1.091x without, dim 128 causal 0.963 against
 * 1.048. Switched on, a one-warpgroup kernel gets no turns (the CUDA back
 * end's cuda_emit_turn); checked by compiling the flagship's builds. */
enum { PINGPONG_TURNS = 0 };

static IrStmt *wg_turn(IrModule *m, IrTurn t, SrcLoc loc) {
  IrStmt *s = ir_stmt_new(m, IR_STMT_WG_TURN, loc);
  s->u.turn = t;
  return s;
}

/* A ping-pong turn, or NULL while they are off. */
static IrStmt *turn(IrModule *m, IrTurn t, SrcLoc loc) { return PINGPONG_TURNS ? wg_turn(m, t, loc) : NULL; }

static void push(IrModule *m, IrStmt *seq, IrStmt *s) {
  if (s) ir_seq_push(m, seq, s);
}

static IrStmt *seq_of(IrModule *m, SrcLoc loc, IrStmt *a, IrStmt *b) {
  IrStmt *s = ir_seq_new(m, loc);
  if (a) ir_seq_push(m, s, a);
  if (b) ir_seq_push(m, s, b);
  return s;
}

/* Rewrites loop (see the top of the file); returns the statement to put
 * right after it (G2 of the last iteration). */
static IrStmt *overlap_loop(IrModule *m, IrStmt *loop, const Pattern *p, bool stagger) {
  IrStmt *body = loop->u.for_.body;
  const int n = body->u.seq.n;
  IrVar *kv = loop->u.for_.var;
  SrcLoc loc = loop->loc;
  IrStmt *g2 = body->u.seq.items[p->g2], *wait2 = body->u.seq.items[p->wait2], *arrive2 = body->u.seq.items[p->arrive2];
  IrBuffer *c1 = p->g1_gemms[0]->u.gemm.c.buf, *c2 = g2->u.gemm.c.buf;
  const IrBuffer *a2 = g2->u.gemm.a.buf, *b2 = g2->u.gemm.b.buf;
  IrStmt *out = ir_seq_new(m, body->loc);

  /* Up to G1, which is now only issued, in this warpgroup's turn. */
  for (int i = 0; i < p->g1; i++) ir_seq_push(m, out, body->u.seq.items[i]);
  for (int j = 0; j < p->ng1; j++) p->g1_gemms[j]->u.gemm.wgmma_issue_only = true;
  push(m, out, turn(m, IR_TURN_WAIT, loc));
  if (stagger) {
    IrExpr *first = ir_binary(m, IR_OP_EQ, ir_var_ref(m, kv, loc), ir_int(m, 0, loc), loc);
    ir_seq_push(m, out, ir_if_new(m, first, seq_of(m, loc, wg_turn(m, IR_TURN_STAGGER_WAIT, loc), NULL), NULL, loc));
  }
  ir_seq_push(m, out, body->u.seq.items[p->g1]);

  /* G2 of the previous iteration, issued behind G1; the next warpgroup's
   * turn; then G1 completes. */
  IrExpr *prev = ir_binary(m, IR_OP_SUB, ir_var_ref(m, kv, loc), ir_int(m, 1, loc), loc);
  IrStmt *late = ir_seq_new(m, loc);
  ir_seq_push(m, late, at_iteration(m, wait2, kv, prev));
  IrStmt *g2_prev = at_iteration(m, g2, kv, prev);
  g2_prev->u.gemm.wgmma_issue_only = true;
  ir_seq_push(m, late, g2_prev);
  push(m, late, turn(m, IR_TURN_PASS, loc));
  ir_seq_push(m, late, pass_wgmma_wait(m, c1, 1, loc));
  /* The issue and its wait<1> stay on one path: ptxas serializes every
   * wgmma (C7514) when some path could read C1 with only G1 in flight. */
  IrExpr *not_first = ir_binary(m, IR_OP_GT, ir_var_ref(m, kv, loc), ir_int(m, 0, loc), loc);
  IrStmt *first_done = seq_of(m, loc, turn(m, IR_TURN_PASS, loc), pass_wgmma_wait(m, c1, 0, loc));
  if (stagger) ir_seq_push(m, first_done, wg_turn(m, IR_TURN_STAGGER_GO, loc));
  ir_seq_push(m, out, ir_if_new(m, not_first, late, first_done, loc));

  /* The statements after G1: those independent of G2(k-1) run under it;
   * the wait for G2(k-1) pins the fragments they write. */
  IrStmt *overlap_done = pass_wgmma_wait(m, c2, 0, loc);
  PassEffects held_back[64];
  IrStmt *held[64];
  int nheld = 0;
  for (int i = p->g1 + 1; i < n; i++) {
    if (i == p->g2 || i == p->wait2 || i == p->arrive2) continue;
    IrStmt *s = body->u.seq.items[i];
    PassEffects e = pass_effects(s);
    /* Scopes and barriers are not moved. */
    bool hold = e.overflow || e.scope || e.barrier || pass_effects_references(&e, c2) ||
                pass_effects_references(&e, a2) || pass_effects_references(&e, b2);
    for (int j = 0; j < nheld && !hold; j++) hold = pass_effects_conflict(&e, &held_back[j]);
    if (hold) {
      held_back[nheld] = e;
      held[nheld++] = s;
    } else {
      ir_seq_push(m, out, s);
      for (int j = 0; j < e.nwrites; j++) pass_wgmma_wait_pin(overlap_done, e.writes[j]);
    }
  }
  ir_seq_push(m, out, overlap_done);
  /* G2(k-1) is done with its stage of B2: the producer may refill it. */
  IrStmt *release = seq_of(m, loc, at_iteration(m, arrive2, kv, prev), NULL);
  ir_seq_push(m, out, ir_if_new(m, ir_expr_clone(m, not_first), release, NULL, loc));
  for (int j = 0; j < nheld; j++) ir_seq_push(m, out, held[j]);
  loop->u.for_.body = out;

  /* After the loop: G2 of the last iteration (waiting in place). With the
   * extent bound (-D) the last iteration is a constant; it goes through a
   * let so that its ring stage and parity stay `k_last % S` and
   * `k_last / S % 2`, the form pass persistent shifts by the tile's ring
   * position (a parity folded to a number cannot be shifted). */
  IrExpr *last = ir_binary(m, IR_OP_SUB, ir_expr_clone(m, loop->u.for_.extent), ir_int(m, 1, loc), loc);
  IrStmt *tail = ir_seq_new(m, loc);
  int64_t last_value;
  if (ir_expr_is_int_const(ir_simplify(m, ir_expr_clone(m, last)), &last_value)) {
    char name[96];
    snprintf(name, sizeof name, "%s_last", kv->name);
    IrVar *v = ir_var_new(m, name, IR_VAR_LET, DTYPE_I64, loc);
    ir_seq_push(m, tail, pass_let(m, v, ir_int(m, last_value, loc), loc));
    last = ir_var_ref(m, v, loc);
  }
  ir_seq_push(m, tail, at_iteration(m, wait2, kv, last));
  ir_seq_push(m, tail, at_iteration(m, g2, kv, last));
  ir_seq_push(m, tail, at_iteration(m, arrive2, kv, last));
  if (stagger) ir_seq_push(m, tail, wg_turn(m, IR_TURN_STAGGER_END, loc));
  IrExpr *any = ir_binary(m, IR_OP_GT, ir_expr_clone(m, loop->u.for_.extent), ir_int(m, 0, loc), loc);
  return ir_if_new(m, any, tail, NULL, loc);
}

/* Staggered starts, for two consumer warpgroups: the second issues its
 * first G1 of the loop once the first one's first G1 has completed.
 * Warpgroups that share every ring stage otherwise start each tile
 * together and stay in step, softmax against softmax with the tensor
 * cores idle between; apart, one's elementwise work runs under the other's
 * gemms. H100, bf16, causal 2048, same process (bench/results/
 * 2026-11-25-nvidia-h100-session16-notes.md): dim 128 default 1.038 ->
 * 1.070x cuDNN flush-timed, 1.071 -> 1.091 sustained; the two-warpgroup
 * dim 64 build 0.875 -> 0.907 (169 -> 184-192 TFLOP/s per GHz). Builds
 * with seq_len bound by -D showed no change per clock. Three warpgroups
 * (the 192-row dim 64 builds) staggered as a chain lost 3 % at causal
 * 4096 and gained at most 1 % elsewhere: they start together.
 * After a loop that ran, the same links are crossed the other way
 * (STAGGER_END): with arrivals on one side only, compute-sanitizer's
 * racecheck reported the epilogue's staging stores as racing with the
 * copy-out that a consumer barrier orders, as it did for one-sided turns.
 * The way back uses barriers of its own (tc_stagger_end says why: sharing
 * the start's let a short loop's first warpgroup complete a round alone,
 * a hang racecheck's scheduling found).
 *
 * walk finds the consumers' pipelined loops: at the top level, in a SEQ
 * there, or in the consumer role of a warp split. */
static void walk(IrModule *m, IrStmt *seq, bool stagger) {
  for (int i = 0; i < seq->u.seq.n; i++) {
    IrStmt *s = seq->u.seq.items[i];
    if (s->kind == IR_STMT_SEQ) {
      walk(m, s, stagger);
      continue;
    }
    if (s->kind == IR_STMT_WARP_ROLES) {
      /* Warpgroups that stop at their own rows' diagonal (a warpgroup
       * variable: trim-masked-iterations) run loops of different lengths:
       * no staggered start there (compute-sanitizer's racecheck hung on
       * dim 256 causal with one). */
      walk(m, s->u.roles.consumer, stagger && !s->u.roles.warpgroup);
      continue;
    }
    Pattern p;
    if (s->kind != IR_STMT_FOR || s->u.for_.kind != IR_FOR_PIPELINED || !find_pattern(s, &p)) continue;
    IrStmt *after = overlap_loop(m, s, &p, stagger);
    ir_seq_insert(m, seq, i + 1, after);
    i += 1;
    if (PINGPONG_TURNS) {
      ir_seq_insert(m, seq, i + 1, turn(m, IR_TURN_END, s->loc));
      ir_seq_insert(m, seq, i - 1, turn(m, IR_TURN_START, s->loc));
      i += 2;
    }
  }
}

/* The turns use one named barrier per consumer warpgroup (2..5 in
 * tilec_warp_roles.cuh): kernels of more than four are left alone. */
enum { MAX_TURN_WARPGROUPS = 4 };

bool pass_overlap_wgmma(IrModule *m, const PassOptions *opts, Diag *diag) {
  if (opts->target != TILEC_TARGET_SM90A) return true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    if (k->producer_warp == 0 || k->producer_warp > 4 * MAX_TURN_WARPGROUPS) continue;
    /* The producer warpgroup follows the consumers: producer_warp / 4 of them. */
    walk(m, k->body, k->producer_warp / 4 == 2);
  }
  return true;
}
