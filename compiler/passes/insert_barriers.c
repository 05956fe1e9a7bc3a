/* insert_barriers.c - pass "insert-barriers" (GPU): __syncthreads where needed.
 *
 * Needs: software-pipeline (it places the barriers of its own cp.async
 * stages, and this pass leaves async copies to it).
 * Guarantees: between a statement that writes a shared buffer and a later
 * one that reads or writes it (and between a read and a later write), every
 * thread passes a BARRIER. Within a SEQ the pass tracks which shared buffers
 * were read and written since the last barrier and inserts one right before
 * the first conflicting statement. A loop whose body conflicts with itself
 * across iterations gets a barrier at the end of its body. Fragments and
 * locals are private to a thread and never need one. */
#include <string.h>

#include "passes.h"

enum { MAX_TRACKED = 32 };

typedef struct Set {
  const IrBuffer *b[MAX_TRACKED];
  int n;
} Set;

static void set_add(Set *s, const IrBuffer *b) {
  if (!b || b->scope != IR_SCOPE_SHARED) return;
  if (b->alias_of) b = b->alias_of; /* same storage, same hazards */
  for (int i = 0; i < s->n; i++)
    if (s->b[i] == b) return;
  if (s->n < MAX_TRACKED) s->b[s->n++] = b;
}

static bool set_meets(const Set *a, const Set *b) {
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++)
      if (a->b[i] == b->b[j]) return true;
  return false;
}

static void set_union(Set *a, const Set *b) {
  for (int i = 0; i < b->n; i++) set_add(a, b->b[i]);
}

typedef struct Access {
  Set reads, writes;
} Access;

static void note_load(const IrExpr *e, void *ctx) {
  Access *a = ctx;
  if (e->kind == IR_EXPR_LOAD) set_add(&a->reads, e->u.load.buf);
}

/* Shared buffers a statement (and everything under it) reads and writes.
 * Async copies are the pipeline's business and are left out (but see
 * async_fill_of). */
static void access_of(IrStmt *s, void *ctx) {
  Access *a = ctx;
  switch (s->kind) {
  case IR_STMT_STORE: set_add(&a->writes, s->u.store.buf); break;
  case IR_STMT_COPY:
    if (!s->u.copy.async) {
      set_add(&a->reads, s->u.copy.src.buf);
      set_add(&a->writes, s->u.copy.dst.buf);
    }
    break;
  case IR_STMT_ATOMIC_ADD: /* writes global memory only */
    set_add(&a->reads, s->u.copy.src.buf);
    break;
  case IR_STMT_FILL: set_add(&a->writes, s->u.fill.dst.buf); break;
  case IR_STMT_GEMM:
    set_add(&a->reads, s->u.gemm.a.buf);
    set_add(&a->reads, s->u.gemm.b.buf);
    set_add(&a->reads, s->u.gemm.c.buf);
    set_add(&a->writes, s->u.gemm.c.buf);
    break;
  case IR_STMT_REDUCE:
    set_add(&a->reads, s->u.reduce.src);
    set_add(&a->writes, s->u.reduce.dst);
    break;
  default: break;
  }
  ir_stmt_visit_exprs(s, note_load, ctx);
}

/* The shared tiles async copies (cp.async, TMA) fill. Inside a pipeline
 * the pipeline orders them itself; but a loop or block that starts filling
 * a tile which was read (or written) before it, since the last barrier,
 * needs one before it like any writer. */
static void async_fill_of(IrStmt *s, void *ctx) {
  Access *a = ctx;
  if (s->kind == IR_STMT_COPY && s->u.copy.async && !s->u.copy.prefetch_l2) set_add(&a->writes, s->u.copy.dst.buf);
}

typedef struct State {
  Set read, written; /* since the last barrier */
} State;

static IrStmt *barrier(IrModule *m, SrcLoc loc) { return ir_stmt_new(m, IR_STMT_BARRIER, loc); }

static void place(IrModule *m, IrStmt *seq, State *st);

/* Processes the children of s (loops and branches have their own SEQs). */
static void descend(IrModule *m, IrStmt *s, State *st) {
  if (s->kind == IR_STMT_FOR) {
    Access body = {0};
    ir_visit_stmts(s->u.for_.body, access_of, &body);
    /* Entering the loop: the body must not conflict with what came before. */
    State inner = *st;
    place(m, s->u.for_.body, &inner);
    /* Around the back edge: the end of one iteration against the start of
     * the next. */
    bool loops_back = set_meets(&inner.written, &body.reads) || set_meets(&inner.written, &body.writes) ||
                      set_meets(&inner.read, &body.writes);
    IrStmt *b = s->u.for_.body;
    bool ends_with_barrier = b->u.seq.n && b->u.seq.items[b->u.seq.n - 1]->kind == IR_STMT_BARRIER;
    if (loops_back && !ends_with_barrier) {
      ir_seq_push(m, b, barrier(m, s->loc));
      inner.read.n = inner.written.n = 0;
    }
    /* After the loop: anything the body left pending, plus what was pending
     * before when the loop runs zero times. */
    set_union(&inner.read, &st->read);
    set_union(&inner.written, &st->written);
    *st = inner;
  } else if (s->kind == IR_STMT_IF) {
    State a = *st, b = *st;
    place(m, s->u.if_.then_, &a);
    if (s->u.if_.else_) place(m, s->u.if_.else_, &b);
    set_union(&a.read, &b.read);
    set_union(&a.written, &b.written);
    *st = a;
  } else if (s->kind == IR_STMT_SEQ) {
    place(m, s, st);
  } else if (s->kind == IR_STMT_WARP_ROLES) {
    /* The producer only issues TMA copies and waits on mbarriers (no
     * shared accesses of its own); barriers go into the consumers' part. */
    State producer = *st;
    place(m, s->u.roles.producer, &producer);
    place(m, s->u.roles.consumer, st);
  }
}

static void place(IrModule *m, IrStmt *seq, State *st) {
  IrStmt **items = seq->u.seq.items;
  int n = seq->u.seq.n;
  seq->u.seq.items = NULL;
  seq->u.seq.n = seq->u.seq.cap = 0;
  for (int i = 0; i < n; i++) {
    IrStmt *s = items[i];
    /* A returning atomic_add is two block barriers around thread 0's
     * atomic and its broadcast slot (the CUDA backend's): a barrier here. */
    if (s->kind == IR_STMT_BARRIER || s->kind == IR_STMT_ATOMIC_FETCH_ADD) {
      st->read.n = st->written.n = 0;
      ir_seq_push(m, seq, s);
      continue;
    }
    /* A parallel loop is one step for the block: its iterations run on
     * different threads, so a barrier can only go around it, never inside. */
    bool parallel = s->kind == IR_STMT_FOR && s->u.for_.kind == IR_FOR_PARALLEL;
    bool compound = !parallel && (s->kind == IR_STMT_FOR || s->kind == IR_STMT_IF || s->kind == IR_STMT_SEQ ||
                                  s->kind == IR_STMT_WARP_ROLES);
    Access a = {0};
    if (compound || parallel) {
      /* Only what the compound touches before its own first barrier matters
       * here; approximating with everything it touches is safe. */
      ir_visit_stmts(s, access_of, &a);
      if (compound) ir_visit_stmts(s, async_fill_of, &a);
    } else {
      access_of(s, &a);
    }
    if (set_meets(&a.reads, &st->written) || set_meets(&a.writes, &st->written) || set_meets(&a.writes, &st->read)) {
      ir_seq_push(m, seq, barrier(m, s->loc));
      st->read.n = st->written.n = 0;
    }
    if (compound) {
      descend(m, s, st);
    } else {
      set_union(&st->read, &a.reads);
      set_union(&st->written, &a.writes);
    }
    ir_seq_push(m, seq, s);
  }
}

bool pass_insert_barriers(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int i = 0; i < m->nkernels; i++) {
    State st = {{{0}, 0}, {{0}, 0}};
    place(m, m->kernels[i]->body, &st);
  }
  return true;
}
