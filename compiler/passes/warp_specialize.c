/* warp_specialize.c - pass "warp-specialize" (GPU, sm_90a): a producer
 * warpgroup issues a pipelined loop's TMA copies; the compute warps only
 * wait for data and release it.
 *
 * Needs: lower-tma (every fetch of the loop is a copy.tma and the loop's
 * waits are mbar_waits on the full barriers; no cp.async left in the loop),
 * in the shape software-pipeline gives a loop over k with S stages:
 *     for s in unrolled(..) { if (s < n) { copy.tma ... -> B[s] } }   (prologue)
 *     for k in pipelined(n) {
 *       if (k + a < n) { copy.tma ... -> B[(k + a) % S] ... }        (the fetch)
 *       ... mbar_wait B_full[k % S] ... readers of B ...
 *       barrier                                                    (closing)
 *     }
 * Guarantees: the kernel gets one more warpgroup (threads + 128), and the
 * prologue and loop become
 *     warp_roles producer(warps W..W+3) {            // one thread of warp W
 *       for k in serial(n) {
 *         if (k >= S) mbar_wait B_empty[k % S] parity((k / S + 1) % 2)
 *         copy.tma ... -> B[k % S]                   // for every B
 *       }
 *     } consumers {
 *       for k in pipelined(n) {                      // no fetch, no closing barrier
 *         ... mbar_wait B_full[k % S] ... readers of B ...
 *         mbar_arrive B_empty[k % S]                 // after B's last reader
 *       }
 *     }
 * so the consumer warpgroups never wait on each other inside the loop (each
 * waits only for its data), the producer runs up to S tiles ahead, and
 * setmaxnreg moves registers from the producer to the consumers.
 * A loop whose gemm software-pipeline left in flight (a GEMM loop:
 *     for k in pipelined(n) { barrier; fetch; ... mbar_waits; gemm(in_flight) }
 *     wgmma_wait acc) becomes, on the consumer side,
 *     if opaque(n > 0) {
 *       for k in pipelined(n) {
 *         ... mbar_wait B_full[k % S] ...; gemm(in_flight)
 *         if (k >= 1) mbar_arrive B_empty[(k - 1) % S]   // k-1's wgmmas are done
 *       }
 *       wgmma_wait acc
 *     }
 * (the gemm returns once the previous iteration's wgmmas have completed, so
 * that iteration's stage is the one released; the opaque guard keeps ptxas
 * from serializing the wgmmas, see guard_in_flight()). An in-flight gemm
 * loop the pass leaves alone (copies still on cp.async: a start read from
 * data, the --no-tma build) gets the same guard around it and its wait. Every
 * barrier after the split is among the consumers only (the CUDA backend
 * emits a named barrier). A kernel of one warpgroup relies on several
 * blocks per SM to overlap its gemms and softmax, and a producer warpgroup
 * would cost more than it brings: it is split only where its loop has
 * attention's shape (a second gemm from a fragment, which overlap-wgmma
 * reorders), marked `inline`, and pass inline-producer folds the producer
 * back into the consumers after overlap-wgmma. */
#include <string.h>

#include "passes.h"
#include "../simplify.h"

enum { PRODUCER_REGS = 24, MAX_CONSUMER_REGS = 240, REGS_PER_SM = 65536 };

typedef struct Loop {
  IrStmt *seq;      /* the SEQ holding prologue and loop */
  int prologue_at;  /* position of the prologue in seq, or -1 */
  int loop_at;
  IrStmt *loop;
  IrStmt *fetch;    /* the loop's fetch (an IF of copy.tma) */
  IrStmt *in_flight; /* a gemm left in flight (wgmma_async) at the body's end, or NULL */
} Loop;

static bool all_tma_copies(const IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++) {
    const IrStmt *s = seq->u.seq.items[i];
    if (s->kind != IR_STMT_COPY || !s->u.copy.tma) return false;
  }
  return seq->u.seq.n > 0;
}

static bool no_cp_async(IrStmt *body) {
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmtKind k = body->u.seq.items[i]->kind;
    if (k == IR_STMT_ASYNC_WAIT || k == IR_STMT_ASYNC_COMMIT || k == IR_STMT_WGMMA_WAIT) return false;
  }
  return true;
}

/* The gemm software-pipeline left in flight at the end of loop's body, or NULL. */
static IrStmt *in_flight_gemm(const IrStmt *loop) {
  const IrStmt *b = loop->u.for_.body;
  IrStmt *last = b->u.seq.n ? b->u.seq.items[b->u.seq.n - 1] : NULL;
  return last && last->kind == IR_STMT_GEMM && last->u.gemm.wgmma_async ? last : NULL;
}

/* The wait for `gemm`, the in-flight gemm of the loop at seq[at], when it
 * follows the loop (software-pipeline puts it there), else NULL. */
static IrStmt *in_flight_wait(IrStmt *seq, int at, const IrStmt *gemm) {
  IrStmt *wait = at + 1 < seq->u.seq.n ? seq->u.seq.items[at + 1] : NULL;
  return gemm && wait && wait->kind == IR_STMT_WGMMA_WAIT && wait->u.wgmma_wait.acc == gemm->u.gemm.c.buf ? wait
                                                                                                           : NULL;
}

/* The first pipelined loop at the kernel's top level (or in a SEQ there)
 * that has the shape above. */
static bool find_loop(IrStmt *body, Loop *L) {
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    IrStmt *seq = s->kind == IR_STMT_SEQ ? s : body;
    int from = s->kind == IR_STMT_SEQ ? 0 : i, to = s->kind == IR_STMT_SEQ ? s->u.seq.n : i + 1;
    for (int j = from; j < to; j++) {
      IrStmt *loop = seq->u.seq.items[j];
      if (loop->kind != IR_STMT_FOR || loop->u.for_.kind != IR_FOR_PIPELINED) continue;
      IrStmt *b = loop->u.for_.body;
      if (b->u.seq.n < 3 || !no_cp_async(b)) continue;
      /* Two shapes: fetch first and a closing barrier, or (a gemm kept in
       * flight) a barrier, the fetch, ..., the in-flight gemm last. */
      IrStmt *last = b->u.seq.items[b->u.seq.n - 1];
      const bool in_flight = in_flight_gemm(loop) && b->u.seq.items[0]->kind == IR_STMT_BARRIER;
      if (!in_flight && last->kind != IR_STMT_BARRIER) continue;
      IrStmt *f = b->u.seq.items[in_flight ? 1 : 0];
      if (f->kind != IR_STMT_IF || f->u.if_.else_ || !all_tma_copies(f->u.if_.then_)) continue;
      L->in_flight = in_flight ? last : NULL;
      L->seq = seq;
      L->loop_at = j;
      L->loop = loop;
      L->fetch = f;
      IrStmt *prev = j > 0 ? seq->u.seq.items[j - 1] : NULL;
      L->prologue_at = prev && prev->kind == IR_STMT_FOR && prev->u.for_.kind == IR_FOR_UNROLLED ? j - 1 : -1;
      return true;
    }
  }
  return false;
}

/* The empty barriers of TMA destination b: one arrival per consumer warp. */
static IrBuffer *empty_barriers(IrModule *m, IrKernel *k, IrBuffer *b, int consumer_warps) {
  int64_t stages = 1;
  ir_expr_is_int_const(b->tma_bar->shape[0], &stages);
  if (!b->empty_bar)
    b->empty_bar = pass_add_mbarriers(m, k, b->tma_bar, arena_printf(m->arena, "%s_empty", b->name), (int)stages,
                                      consumer_warps);
  return b->empty_bar;
}

/* What setmaxnreg gives each of `consumers` threads. setmaxnreg only moves
 * registers inside the block's launch allocation: (consumers + 128) threads
 * times the per-thread count the launch bounds allow (65536 / threads,
 * rounded down to 8, which ptxas allocates in full in these kernels). The
 * producer gives back all but PRODUCER_REGS; asking the consumers for more
 * than that frees blocks their setmaxnreg.inc forever (seen at 512 + 128
 * threads: 96 at launch, 120 asked, a hang). */
int pass_consumer_registers(int consumers, int producer_regs) {
  const int total = consumers + 128;
  const int at_launch = REGS_PER_SM / total / 8 * 8;
  const int regs = (total * at_launch - 128 * producer_regs) / consumers / 8 * 8;
  return regs > MAX_CONSUMER_REGS ? MAX_CONSUMER_REGS : regs;
}

/* `if opaque(n > 0) body`, body being an in-flight gemm loop over n
 * and the wait after it: where a path that issued no wgmma meets the loop's
 * exit with one in flight, ptxas cannot tell what is in flight at the
 * accumulator's next reader and serializes every wgmma (C7514, C7515). The
 * guard is opaque, so it stays where n is a constant too. */
static IrStmt *guard_in_flight(IrModule *m, const IrStmt *loop, IrStmt *body) {
  SrcLoc loc = loop->loc;
  IrExpr *any = ir_binary(m, IR_OP_GT, ir_expr_clone(m, loop->u.for_.extent), ir_int(m, 0, loc), loc);
  IrStmt *guard = ir_if_new(m, any, body, NULL, loc);
  guard->u.if_.opaque = true;
  return guard;
}

/* The in-flight gemm loops left unspecialized (their copies stay on
 * cp.async: a start read from data, or the --no-tma build) get the same
 * guard, loop and wait together. Warp roles are done already. Here rather
 * than in software-pipeline, which makes the in-flight form: lower-tma and
 * this pass find a pipeline by its top-level shape (prologue, loop, wait),
 * which the guard would hide. */
static void guard_unspecialized(IrModule *m, IrStmt *s) {
  if (s->kind == IR_STMT_FOR) {
    guard_unspecialized(m, s->u.for_.body);
  } else if (s->kind == IR_STMT_IF) {
    guard_unspecialized(m, s->u.if_.then_);
    if (s->u.if_.else_) guard_unspecialized(m, s->u.if_.else_);
  } else if (s->kind == IR_STMT_SEQ) {
    for (int i = 0; i < s->u.seq.n; i++) {
      IrStmt *c = s->u.seq.items[i];
      IrStmt *gemm = c->kind == IR_STMT_FOR && c->u.for_.kind == IR_FOR_PIPELINED ? in_flight_gemm(c) : NULL;
      IrStmt *wait = gemm ? in_flight_wait(s, i, gemm) : NULL;
      if (!wait) {
        guard_unspecialized(m, c);
        continue;
      }
      IrStmt *body = ir_seq_new(m, c->loc);
      ir_seq_push(m, body, c);
      ir_seq_push(m, body, wait);
      s->u.seq.items[i] = guard_in_flight(m, c, body);
      ir_seq_remove(s, i + 1);
    }
  }
}

static void specialize(IrModule *m, IrKernel *k, const Loop *L, int threads) {
  IrStmt *loop = L->loop, *body = loop->u.for_.body;
  IrVar *kv = loop->u.for_.var;
  SrcLoc loc = loop->loc;
  const int S = loop->u.for_.num_stages, consumer_warps = threads / 32;
  IrStmt *fetches = L->fetch->u.if_.then_;

  /* The producer: every tile, S ahead at most (the empty barriers). */
  IrVar *pk = ir_var_new(m, arena_printf(m->arena, "%s_fetch", kv->name), IR_VAR_LOOP, DTYPE_I64, loc);
  IrStmt *pbody = ir_seq_new(m, loc);
  /* The fetch loads iteration k + a; the producer's iteration pk loads pk. */
  IrExpr *ahead = NULL;
  {
    const IrStmt *c = fetches->u.seq.items[0];
    const IrExpr *stage = c->u.copy.dst.start[0]; /* (k + a) % S, or the buffer's only stage */
    ahead = stage->kind == IR_EXPR_BINARY && stage->u.op.op == IR_OP_MOD ? stage->u.op.a : NULL;
  }
  for (int i = 0; i < fetches->u.seq.n; i++) {
    IrStmt *c = ir_stmt_clone_tile_op(m, fetches->u.seq.items[i]);
    /* pk = k + a  <=>  k = pk - (ahead - k) */
    IrExpr *k_of_pk = ir_var_ref(m, pk, loc);
    if (ahead)
      k_of_pk = ir_binary(m, IR_OP_SUB, k_of_pk, ir_binary(m, IR_OP_SUB, ir_expr_clone(m, ahead), ir_var_ref(m, kv, loc), loc), loc);
    pass_subst_var(m, c, kv, ir_simplify(m, k_of_pk));
    IrBuffer *b = c->u.copy.dst.buf;
    IrBuffer *empty = empty_barriers(m, k, b, consumer_warps);
    IrExpr *stage = S > 1 ? ir_binary(m, IR_OP_MOD, ir_var_ref(m, pk, loc), ir_int(m, S, loc), loc) : ir_int(m, 0, loc);
    IrExpr *fills = ir_binary(m, IR_OP_DIV, ir_var_ref(m, pk, loc), ir_int(m, S, loc), loc);
    IrExpr *parity = ir_binary(m, IR_OP_MOD, ir_binary(m, IR_OP_ADD, fills, ir_int(m, 1, loc), loc), ir_int(m, 2, loc), loc);
    IrStmt *wait = ir_seq_new(m, loc);
    ir_seq_push(m, wait, pass_mbar_stmt(m, IR_STMT_MBAR_WAIT, empty, stage, parity, loc));
    IrExpr *refill = ir_binary(m, IR_OP_GE, ir_var_ref(m, pk, loc), ir_int(m, S, loc), loc);
    ir_seq_push(m, pbody, ir_if_new(m, refill, wait, NULL, loc));
    ir_seq_push(m, pbody, c);
  }
  IrStmt *producer = ir_seq_new(m, loc);
  ir_seq_push(m, producer, ir_for_new(m, IR_FOR_SERIAL, pk, ir_expr_clone(m, loop->u.for_.extent), pbody, loc));

  /* The consumers: the loop without its fetch and closing barrier, each
   * buffer released after its last reader. */
  IrStmt *cbody = ir_seq_new(m, body->loc);
  const int n = body->u.seq.n;
  /* Kept: what lies between the fetch and the closing barrier, or between
   * the fetch and the end when a gemm stays in flight. */
  const int from = L->in_flight ? 2 : 1, to = L->in_flight ? n : n - 1;
  IrStmt *lagged = NULL; /* the releases behind the in-flight gemm, under k >= 1 */
  for (int i = from; i < to; i++) {
    IrStmt *s = body->u.seq.items[i];
    ir_seq_push(m, cbody, s);
    for (int j = 0; j < fetches->u.seq.n; j++) {
      IrBuffer *b = fetches->u.seq.items[j]->u.copy.dst.buf;
      bool last = pass_count_reads(s, b) > 0;
      for (int r = i + 1; r < to && last; r++) last = pass_count_reads(body->u.seq.items[r], b) == 0;
      if (!last) continue;
      if (s != L->in_flight) {
        IrExpr *stage = S > 1 ? ir_binary(m, IR_OP_MOD, ir_var_ref(m, kv, loc), ir_int(m, S, loc), loc) : ir_int(m, 0, loc);
        ir_seq_push(m, cbody, pass_mbar_stmt(m, IR_STMT_MBAR_ARRIVE, b->empty_bar, stage, NULL, loc));
        continue;
      }
      /* The in-flight gemm returns once the previous iteration's wgmmas are
       * done: that iteration's stage is the one free now. */
      IrExpr *prev = ir_binary(m, IR_OP_SUB, ir_var_ref(m, kv, loc), ir_int(m, 1, loc), loc);
      IrExpr *stage = S > 1 ? ir_binary(m, IR_OP_MOD, prev, ir_int(m, S, loc), loc) : ir_int(m, 0, loc);
      if (!lagged) {
        lagged = ir_seq_new(m, loc);
        ir_seq_push(m, cbody, ir_if_new(m, ir_binary(m, IR_OP_GE, ir_var_ref(m, kv, loc), ir_int(m, 1, loc), loc),
                                        lagged, NULL, loc));
      }
      ir_seq_push(m, lagged, pass_mbar_stmt(m, IR_STMT_MBAR_ARRIVE, b->empty_bar, stage, NULL, loc));
    }
  }
  loop->u.for_.body = cbody;
  IrStmt *consumer = ir_seq_new(m, loc);
  ir_seq_push(m, consumer, loop);
  IrStmt *wait = L->in_flight ? in_flight_wait(L->seq, L->loop_at, L->in_flight) : NULL;
  if (wait) {
    /* The wait for the last in-flight gemm joins the loop, both under the
     * guard (guard_in_flight). */
    ir_seq_push(m, consumer, wait);
    ir_seq_remove(L->seq, L->loop_at + 1);
    IrStmt *guarded = ir_seq_new(m, loc);
    ir_seq_push(m, guarded, guard_in_flight(m, loop, consumer));
    consumer = guarded;
  }

  IrStmt *roles = ir_stmt_new(m, IR_STMT_WARP_ROLES, loc);
  roles->u.roles.producer = producer;
  roles->u.roles.consumer = consumer;
  roles->u.roles.producer_warp = consumer_warps;
  roles->u.roles.producer_regs = PRODUCER_REGS;
  roles->u.roles.consumer_regs = pass_consumer_registers(threads, PRODUCER_REGS);
  roles->u.roles.inline_producer = threads == 128;

  /* Replace prologue + loop by the roles. */
  IrStmt *seq = L->seq;
  int at = L->prologue_at >= 0 ? L->prologue_at : L->loop_at, drop = L->prologue_at >= 0 ? 2 : 1;
  seq->u.seq.items[at] = roles;
  for (int i = at + drop; i < seq->u.seq.n; i++) seq->u.seq.items[i - drop + 1] = seq->u.seq.items[i];
  seq->u.seq.n -= drop - 1;
  k->threads = ir_int(m, threads + 128, k->threads->loc);
  k->producer_warp = consumer_warps;
}

/* Shared memory written by the threads themselves (not by TMA) before the
 * split would be written by the producer warps too, with a thread count the
 * cooperative copies were not laid out for. */
static void note_thread_smem_write(IrStmt *s, void *ctx) {
  bool *found = ctx;
  if (s->kind == IR_STMT_COPY && !s->u.copy.tma && s->u.copy.dst.buf->scope == IR_SCOPE_SHARED) *found = true;
  if (s->kind == IR_STMT_FILL && s->u.fill.dst.buf->scope == IR_SCOPE_SHARED) *found = true;
  if (s->kind == IR_STMT_STORE && s->u.store.buf->scope == IR_SCOPE_SHARED) *found = true;
  if (s->kind == IR_STMT_ATOMIC_FETCH_ADD) *found = true; /* its broadcast slot, and block barriers */
  if (s->kind == IR_STMT_REDUCE && s->u.reduce.scratch) *found = true;
}

/* A wgmma gemm at the loop's top level whose A is a fragment (attention's
 * P V): the loop overlap-wgmma reorders. */
static bool gemm_from_fragment(const IrStmt *body) {
  for (int i = 0; i < body->u.seq.n; i++) {
    const IrStmt *s = body->u.seq.items[i];
    if (s->kind == IR_STMT_GEMM && s->u.gemm.wgmma && s->u.gemm.a.buf->scope == IR_SCOPE_FRAGMENT) return true;
  }
  return false;
}

static bool threads_write_smem_before(IrKernel *k, const Loop *L) {
  bool found = false;
  for (int i = 0; i < k->body->u.seq.n; i++) {
    IrStmt *s = k->body->u.seq.items[i];
    if (s == L->seq || s == L->loop) break;
    ir_visit_stmts(s, note_thread_smem_write, &found);
  }
  return found;
}

bool pass_warp_specialize(IrModule *m, const PassOptions *opts, Diag *diag) {
  if (opts->target != TILEC_TARGET_SM90A) return true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    int64_t threads = 0;
    Loop L;
    if (ir_expr_is_int_const(k->threads, &threads) && threads % 128 == 0 && threads >= 128 &&
        find_loop(k->body, &L) && !threads_write_smem_before(k, &L) &&
        (threads != 128 || gemm_from_fragment(L.loop->u.for_.body)))
      specialize(m, k, &L, (int)threads);
    guard_unspecialized(m, k->body);
  }
  return true;
}
