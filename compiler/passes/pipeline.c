/* pipeline.c - the pass table (from pipeline.def), the runner that verifies
 * the IR after each pass, and the shared statement/expression walkers. */
#include "passes.h"
#include "../name_table.h"
#include "../simplify.h"

#include <string.h>

const PassInfo pass_table[] = {
#define PASS(c_name, name, targets, summary) {name, pass_##c_name, targets, summary},
#include "pipeline.def"
#undef PASS
};
const int pass_count = (int)(sizeof pass_table / sizeof pass_table[0]);

bool pass_runs_on(const PassInfo *p, TilecTarget target) {
  if (p->targets == PASS_ALL) return true;
  return (p->targets == PASS_CPU) == (target == TILEC_TARGET_CPU);
}

bool pass_run_pipeline(IrModule *m, const PassOptions *opts, Diag *diag, PassObserver observe, void *ctx) {
  int index = 0;
  for (int i = 0; i < pass_count; i++) {
    const PassInfo *p = &pass_table[i];
    if (!pass_runs_on(p, opts->target)) continue;
    int errors = diag_error_count(diag);
    bool ok = p->run(m, opts, diag);
    if (!ok || diag_error_count(diag) > errors) return false;
    if (!ir_verify_module(m, p->name, diag)) return false;
    index++;
    if (observe) observe(m, index, p->name, ctx);
  }
  return true;
}

void pass_rewrite_stmt(IrModule *m, IrStmt *s, IrExprRewriter fn, void *ctx) {
  if (!s) return;
  ir_stmt_rewrite_exprs(m, s, fn, ctx);
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) pass_rewrite_stmt(m, s->u.seq.items[i], fn, ctx);
    break;
  case IR_STMT_ALLOC:
    for (int d = 0; d < s->u.alloc->rank; d++) s->u.alloc->shape[d] = fn(m, s->u.alloc->shape[d], ctx);
    break;
  case IR_STMT_FOR:
    pass_rewrite_stmt(m, s->u.for_.body, fn, ctx);
    break;
  case IR_STMT_IF:
    pass_rewrite_stmt(m, s->u.if_.then_, fn, ctx);
    pass_rewrite_stmt(m, s->u.if_.else_, fn, ctx);
    break;
  case IR_STMT_WARP_ROLES:
    pass_rewrite_stmt(m, s->u.roles.producer, fn, ctx);
    pass_rewrite_stmt(m, s->u.roles.consumer, fn, ctx);
    break;
  default:
    break;
  }
}

void pass_rewrite_kernel(IrModule *m, IrKernel *k, IrExprRewriter fn, void *ctx) {
  for (int i = 0; i < k->nparams; i++) {
    IrBuffer *b = k->params[i].buffer;
    if (!b) continue;
    for (int d = 0; d < b->rank; d++) b->shape[d] = fn(m, b->shape[d], ctx);
    for (int d = 0; b->strides && d < b->rank; d++) b->strides[d] = fn(m, b->strides[d], ctx);
  }
  for (int g = 0; g < IR_MAX_GRID; g++)
    if (k->grid[g]) k->grid[g] = fn(m, k->grid[g], ctx);
  if (k->threads) k->threads = fn(m, k->threads, ctx);
  pass_rewrite_stmt(m, k->body, fn, ctx);
}

typedef struct Reads {
  const IrBuffer *buf;
  int count;
} Reads;

static void count_read(IrStmt *s, void *ctx) {
  Reads *r = ctx;
  if (s->kind == IR_STMT_COPY && s->u.copy.tma && s->u.copy.dst.buf->scope == IR_SCOPE_SHARED) return; /* a load */
  if (s->kind == IR_STMT_MBAR_WAIT || s->kind == IR_STMT_MBAR_ARRIVE) return;
  r->count += ir_stmt_buffer_refs(s, r->buf);
}

int pass_count_reads(IrStmt *s, const IrBuffer *b) {
  Reads r = {b, 0};
  ir_visit_stmts(s, count_read, &r);
  return r.count;
}

typedef struct VarAt {
  IrVar *var;
  const IrExpr *at;
} VarAt;

static IrExpr *var_at(IrModule *m, IrExpr *e, void *ctx) {
  VarAt *v = ctx;
  return ir_simplify(m, ir_expr_subst(m, e, v->var, v->at));
}

IrStmt *pass_let(IrModule *m, IrVar *var, IrExpr *value, SrcLoc loc) {
  IrStmt *s = ir_stmt_new(m, IR_STMT_LET, loc);
  s->u.let.var = var;
  s->u.let.value = value;
  return s;
}

void pass_subst_var(IrModule *m, IrStmt *s, IrVar *var, const IrExpr *at) {
  VarAt v = {var, at};
  pass_rewrite_stmt(m, s, var_at, &v);
}

IrStmt *pass_mbar_stmt(IrModule *m, IrStmtKind kind, IrBuffer *bar, IrExpr *stage, IrExpr *parity, SrcLoc loc) {
  IrStmt *w = ir_stmt_new(m, kind, loc);
  w->u.mbar_wait.bar = bar;
  w->u.mbar_wait.stage = stage;
  w->u.mbar_wait.parity = parity;
  return w;
}

void pass_drop_alloc(IrKernel *k, const IrBuffer *b) {
  IrStmt *body = k->body;
  int n = 0;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (!(s->kind == IR_STMT_ALLOC && s->u.alloc == b)) body->u.seq.items[n++] = s;
  }
  body->u.seq.n = n;
}

int pass_alloc_index(const IrKernel *k, const IrBuffer *b) {
  for (int i = 0; i < k->body->u.seq.n; i++)
    if (k->body->u.seq.items[i]->kind == IR_STMT_ALLOC && k->body->u.seq.items[i]->u.alloc == b) return i;
  return -1;
}

void pass_alloc_after(IrModule *m, IrKernel *k, const IrBuffer *after, IrBuffer *b) {
  IrStmt *alloc = ir_stmt_new(m, IR_STMT_ALLOC, b->loc);
  alloc->u.alloc = b;
  ir_seq_insert(m, k->body, pass_alloc_index(k, after) + 1, alloc);
}

IrBuffer *pass_add_mbarriers(IrModule *m, IrKernel *k, const IrBuffer *after, const char *name, int stages,
                             int count) {
  if (pass_alloc_index(k, after) < 0) return NULL;
  IrExpr *shape[1] = {ir_int(m, stages, after->loc)};
  IrBuffer *bar = ir_buffer_new(m, name, DTYPE_I64, IR_SCOPE_SHARED, 1, shape, after->loc);
  bar->is_mbarrier = true;
  bar->mbar_count = count;
  bar->smem_align = 8; /* in the barrier area (ir_shared_bytes) */
  pass_alloc_after(m, k, after, bar);
  return bar;
}

IrStmt *pass_clone_stmt(IrModule *m, const IrStmt *s) {
  switch (s->kind) {
  case IR_STMT_SEQ: {
    IrStmt *seq = ir_seq_new(m, s->loc);
    for (int i = 0; i < s->u.seq.n; i++) {
      IrStmt *c = pass_clone_stmt(m, s->u.seq.items[i]);
      if (!c) return NULL;
      ir_seq_push(m, seq, c);
    }
    /* later statements name the copies' lets */
    for (int i = 0; i < s->u.seq.n; i++) {
      const IrStmt *o = s->u.seq.items[i];
      if (o->kind != IR_STMT_LET) continue;
      for (int j = i + 1; j < seq->u.seq.n; j++)
        pass_subst_var(m, seq->u.seq.items[j], o->u.let.var, ir_var_ref(m, seq->u.seq.items[i]->u.let.var, o->loc));
    }
    return seq;
  }
  case IR_STMT_LET: {
    IrVar *v = ir_var_new(m, s->u.let.var->name, IR_VAR_LET, s->u.let.var->dtype, s->loc);
    return pass_let(m, v, ir_expr_clone(m, s->u.let.value), s->loc);
  }
  case IR_STMT_STORE: {
    if (s->u.store.atomic || s->u.store.guard) return NULL;
    IrExpr *idx[IR_MAX_RANK];
    for (int d = 0; d < s->u.store.nidx; d++) idx[d] = ir_expr_clone(m, s->u.store.idx[d]);
    return ir_store_new(m, s->u.store.buf, idx, ir_expr_clone(m, s->u.store.value), s->loc);
  }
  case IR_STMT_FOR: {
    IrStmt *body = pass_clone_stmt(m, s->u.for_.body);
    if (!body) return NULL;
    IrVar *v = ir_var_new(m, s->u.for_.var->name, IR_VAR_LOOP, s->u.for_.var->dtype, s->loc);
    pass_subst_var(m, body, s->u.for_.var, ir_var_ref(m, v, s->loc));
    IrStmt *f = ir_for_new(m, s->u.for_.kind, v, ir_expr_clone(m, s->u.for_.extent), body, s->loc);
    f->u.for_.num_stages = s->u.for_.num_stages;
    return f;
  }
  case IR_STMT_IF: {
    IrStmt *t = pass_clone_stmt(m, s->u.if_.then_), *e = s->u.if_.else_ ? pass_clone_stmt(m, s->u.if_.else_) : NULL;
    if (!t || (s->u.if_.else_ && !e)) return NULL;
    IrStmt *c = ir_if_new(m, ir_expr_clone(m, s->u.if_.cond), t, e, s->loc);
    c->u.if_.opaque = s->u.if_.opaque;
    return c;
  }
  case IR_STMT_COPY:
  case IR_STMT_FILL:
  case IR_STMT_GEMM: return ir_stmt_clone_tile_op(m, s);
  case IR_STMT_REDUCE: {
    IrStmt *r = ir_stmt_new(m, IR_STMT_REDUCE, s->loc);
    r->u.reduce = s->u.reduce;
    return r;
  }
  case IR_STMT_MBAR_WAIT:
  case IR_STMT_MBAR_ARRIVE:
    return pass_mbar_stmt(m, s->kind, s->u.mbar_wait.bar, ir_expr_clone(m, s->u.mbar_wait.stage),
                          s->u.mbar_wait.parity ? ir_expr_clone(m, s->u.mbar_wait.parity) : NULL, s->loc);
  default: return NULL;
  }
}

/* ---- lets nothing reads ---------------------------------------------------
 * One count of reads per LET variable over the whole tree, then a walk in
 * reverse program order: a let still unread is dropped and its own reads are
 * taken back, so the lets only it read (all earlier) go too. Linear in the
 * tree's size (fold-constants runs it on kernels of 10000 lets). */
typedef struct LetReads {
  NameTable vars; /* the kernel's LET variables */
  int *count;
  int cap;
  Arena *arena;
  int delta; /* +1 while counting, -1 while taking a dropped let's reads back */
} LetReads;

static void note_let_var(IrStmt *s, void *ctx) {
  LetReads *r = ctx;
  if (s->kind != IR_STMT_LET || name_table_find(&r->vars, s->u.let.var) >= 0) return;
  r->count = arena_grow(r->arena, r->count, &r->cap, r->vars.n + 1, sizeof(int));
  r->count[name_table_push(&r->vars, s->u.let.var)] = 0;
}

static void count_let_read(const IrExpr *e, void *ctx) {
  LetReads *r = ctx;
  int i = e->kind == IR_EXPR_VAR ? name_table_find(&r->vars, e->u.var) : -1;
  if (i >= 0) r->count[i] += r->delta;
}

static void count_stmt_reads(IrStmt *s, void *ctx) {
  ir_stmt_visit_exprs(s, count_let_read, ctx);
  if (s->kind == IR_STMT_ALLOC)
    for (int d = 0; d < s->u.alloc->rank; d++) ir_expr_visit(s->u.alloc->shape[d], count_let_read, ctx);
}

static void drop_unread(IrStmt *s, LetReads *r);

static void drop_unread_in_seq(IrStmt *seq, LetReads *r) {
  int n = seq->u.seq.n, kept = n;
  for (int i = n - 1; i >= 0; i--) {
    IrStmt *s = seq->u.seq.items[i];
    if (s->kind == IR_STMT_LET && r->count[name_table_find(&r->vars, s->u.let.var)] == 0) {
      r->delta = -1;
      ir_expr_visit(s->u.let.value, count_let_read, r);
      continue; /* dropped */
    }
    drop_unread(s, r);
    seq->u.seq.items[--kept] = s;
  }
  for (int i = kept; i < n; i++) seq->u.seq.items[i - kept] = seq->u.seq.items[i];
  seq->u.seq.n = n - kept;
}

static void drop_unread(IrStmt *s, LetReads *r) {
  switch (s->kind) {
  case IR_STMT_SEQ: drop_unread_in_seq(s, r); break;
  case IR_STMT_FOR: drop_unread_in_seq(s->u.for_.body, r); break;
  case IR_STMT_IF:
    if (s->u.if_.else_) drop_unread_in_seq(s->u.if_.else_, r);
    drop_unread_in_seq(s->u.if_.then_, r);
    break;
  case IR_STMT_WARP_ROLES:
    drop_unread_in_seq(s->u.roles.consumer, r);
    drop_unread_in_seq(s->u.roles.producer, r);
    break;
  default: break;
  }
}

void pass_drop_unread_lets(IrModule *m, IrStmt *s) {
  LetReads r = {.arena = m->arena, .delta = 1};
  name_table_init(&r.vars, m->arena, NAME_KEY_POINTER);
  ir_visit_stmts(s, note_let_var, &r);
  if (r.vars.n == 0) return;
  ir_visit_stmts(s, count_stmt_reads, &r);
  drop_unread(s, &r);
}
