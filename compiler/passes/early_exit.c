/* early_exit.c - pass "early-exit" (GPU): a kernel whose remaining work
 * sits under one block-uniform `if` ends the block there instead.
 *
 * A kernel often skips blocks with nothing to do by wrapping the rest of
 * its body in a condition on data (varlen attention: `if (bx * block_M <
 * q_len) { ... }` for the blocks past their sequence's end). The Hopper
 * passes (lower-tma, warp-specialize, inline-producer, persistent) take a
 * pipelined loop at the kernel's top level only, so under that `if` the
 * loop kept cp.async copies waited on in place. This pass lifts the body
 * out: the block ends where the condition fails, and what followed runs at
 * the top level.
 *
 * Needs: guard-elements (the condition's element loads are guarded); runs
 * before infer-layout and every pass that looks for top-level loops.
 * Guarantees: where the kernel's top level is allocations, lets and layout
 * annotations followed by `if (c) {B}` (no else; so the block has issued
 * nothing when it leaves), B holds a pipelined loop, and c is
 * block-uniform (block indices, dynamic symbols, scalar parameters,
 * top-level lets of such values, and element loads of global tensors at
 * such indices), the `if` becomes `exit if (!c)` followed by B's
 * statements at the top level. Anything else is left as it was. The
 * CUDA back end writes `if (cond) return;`: every thread of the block takes
 * it together, so no barrier after it waits for a missing thread. Pass
 * persistent leaves a kernel with an exit alone (its tile loop would end
 * with the block). */
#include "../simplify.h"
#include "passes.h"

typedef struct Uniform {
  const IrStmt *top; /* the kernel body: where a uniform let lives */
  int depth;         /* lets followed, against a cycle */
  bool ok;
} Uniform;

static bool uniform_expr(Uniform *u, const IrExpr *e);

/* A let of the kernel's top level whose value is block-uniform. */
static bool uniform_let(Uniform *u, const IrVar *v) {
  if (u->depth > 64) return false;
  for (int i = 0; i < u->top->u.seq.n; i++) {
    const IrStmt *s = u->top->u.seq.items[i];
    if (s->kind != IR_STMT_LET || s->u.let.var != v) continue;
    u->depth++;
    bool ok = uniform_expr(u, s->u.let.value);
    u->depth--;
    return ok;
  }
  return false;
}

static void check_node(const IrExpr *e, void *ctx) {
  Uniform *u = ctx;
  if (!u->ok) return;
  if (e->kind == IR_EXPR_VAR) {
    switch (e->u.var->kind) {
    case IR_VAR_SYMBOL:
    case IR_VAR_SCALAR_PARAM:
    case IR_VAR_BLOCK_INDEX: break;
    case IR_VAR_LET: u->ok = uniform_let(u, e->u.var); break;
    default: u->ok = false; break;
    }
  } else if (e->kind == IR_EXPR_LOAD) {
    /* a fragment or a local holds each thread's own values */
    u->ok = e->u.load.buf->scope == IR_SCOPE_GLOBAL;
  }
}

static bool uniform_expr(Uniform *u, const IrExpr *e) {
  ir_expr_visit(e, check_node, u);
  return u->ok;
}

/* Only names before the if: a block that leaves has issued no copy, store
 * or barrier that could still be running. */
static bool only_names_before(const IrStmt *body, int n) {
  for (int i = 0; i < n; i++) {
    IrStmtKind kind = body->u.seq.items[i]->kind;
    if (kind != IR_STMT_ALLOC && kind != IR_STMT_LET && kind != IR_STMT_ANNOTATE_LAYOUT &&
        kind != IR_STMT_USE_SWIZZLE)
      return false;
  }
  return true;
}

static void note_pipelined(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_FOR && s->u.for_.kind == IR_FOR_PIPELINED) *(bool *)ctx = true;
}

bool pass_early_exit(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    IrStmt *body = k->body;
    const int n = body->u.seq.n;
    IrStmt *s = n > 0 ? body->u.seq.items[n - 1] : NULL;
    if (!s || s->kind != IR_STMT_IF || s->u.if_.else_ || s->u.if_.opaque || !only_names_before(body, n - 1)) continue;
    bool pipelined = false;
    ir_visit_stmts(s->u.if_.then_, note_pipelined, &pipelined);
    if (!pipelined) continue; /* nothing for the Hopper passes to find */
    Uniform u = {body, 0, true};
    if (!uniform_expr(&u, s->u.if_.cond)) continue;
    IrStmt *exit = ir_stmt_new(m, IR_STMT_EXIT, s->loc);
    exit->u.exit_.cond = ir_simplify(m, ir_unary(m, IR_OP_NOT, s->u.if_.cond, s->u.if_.cond->loc));
    body->u.seq.items[n - 1] = exit;
    IrStmt *then_ = s->u.if_.then_;
    for (int j = 0; j < then_->u.seq.n; j++) ir_seq_push(m, body, then_->u.seq.items[j]);
  }
  return true;
}
