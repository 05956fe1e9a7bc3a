/* persistent.c - pass "persistent" (GPU, sm_90a): a warp-specialized kernel
 * keeps its blocks resident and loops over the tiles of its grid.
 *
 * Needs: warp-specialize (one WARP_ROLES at the kernel's top level, the
 * producer a single serial loop of TMA copies), overlap-wgmma and
 * stage-stores (the epilogue is final). Guarantees, for a kernel of the shape
 *     allocs
 *     pre:   copy.tma X -> Xs; mbar_wait Xs_full[0] parity(0); fills; lets
 *     warp_roles producer { for kf in serial(n) {...} } consumers { ...loop over k... }
 *     post:  the epilogue (runs on the consumers)
 * the body
 *     warp_roles producer {
 *       for tile in persistent(gx * gy * gz) {
 *         let bx, by, bz = the tile's block indices (rasterized like the grid)
 *         let pipe_base = tc_pipe[0], tile_iter = tc_pipe[1]
 *         if (tile_iter >= 1) mbar_wait Xs_empty[0] parity((tile_iter + 1) % 2)
 *         copy.tma X -> Xs
 *         for kf in serial(n) {...}       // ring positions pipe_base + kf
 *         tc_pipe = {pipe_base + n, tile_iter + 1}
 *       }
 *     } consumers {
 *       for tile in persistent(...) {
 *         lets; mbar_wait Xs_full[0] parity(tile_iter % 2); fills
 *         ...loop over k...                // ring positions pipe_base + k
 *         mbar_arrive Xs_empty[0]          // Xs free for the next tile
 *         post
 *         tc_pipe = {...}
 *       }
 *     }
 * and the runtime launches min(tiles, resident blocks) blocks
 * (TilecKernelInfo.persistent). Each role counts the ring positions it has
 * used (tc_pipe, a per-thread register pair), so stage and parity of every
 * ring access continue across tiles: `E % S` becomes `(pipe_base + E) % S`
 * and `(E / S + c) % 2` becomes `((pipe_base + E) / S + c) % 2`, whatever
 * E is (k, k - 1, n - 1). The producer runs ahead into the next tile while
 * the consumers finish this one: the next tile's X and first ring stages
 * load under the epilogue, which is what a block per tile pays in full
 * (pipeline fill, epilogue with the tensor cores idle). A staging buffer of
 * the epilogue that reuses a TMA destination (stage-stores) gets storage of
 * its own, since the producer is refilling those; kernels where that does
 * not fit in shared memory, or whose shape differs, stay as they are.
 * Tiles of different pipeline lengths would leave a static round-robin
 * unbalanced: where x alone sets the length (causal attention), the loop
 * walks pairs of tiles t and T - 1 - t of the flattened grid (x fastest:
 * their x are x and gx - 1 - x), the longer first, with an inner
 * `for tile_half in serial(2)` (1 for the middle tile of an odd T); any
 * other dependence on the tile keeps the kernel as it is (plan_lengths).
 * After its loop for a tile the producer pulls the next tile's one-stage
 * boxes (attention's Q) into L2 (next_tile_prefetch; the loop's step is
 * the kernel's grid_size, gridDim.x), so the next tile starts without a
 * DRAM round trip.
 * An in-flight GEMM loop also releases its last stage after its final
 * wgmma_wait (release_last_stage): with one tile per block nothing refilled
 * it. tile_iter and its counter exist only where a per-tile buffer needs
 * them. */
#include <stdlib.h>

#include "passes.h"
#include "../simplify.h"

enum { SMEM_LIMIT_SM90 = 227 * 1024, MAX_PER_TILE = 4, MAX_LETS = 64 };

typedef struct Plan {
  IrStmt *roles;
  IrStmt *pre, *post, *allocs; /* new SEQs: the body's statements sorted */
  IrBuffer *per_tile[MAX_PER_TILE]; /* TMA destinations loaded once per tile (pre) */
  int nper_tile, nlets;
  bool paired;                 /* the tile loop walks pairs of x tiles (plan_lengths) */
  bool cluster;                /* 2-CTA clusters along y (plan_cluster) */
  IrBuffer *multicast[MAX_PER_TILE]; /* the rings both blocks of a cluster read */
  int nmulticast;
  IrStmt *consumer_loop;       /* the consumers' pipelined loop */
} Plan;

static bool is_ring(const IrBuffer *b) { return b->empty_bar && b->tma_bar; }

static int64_t ring_stages(const IrBuffer *b) {
  int64_t s = 1;
  ir_expr_is_int_const(b->tma_bar->shape[0], &s);
  return s;
}

/* The ring whose full or empty barrier bar is, or NULL. */
static IrBuffer *ring_of_barrier(IrKernel *k, const IrBuffer *bar) {
  for (int i = 0; i < k->body->u.seq.n; i++) {
    IrStmt *s = k->body->u.seq.items[i];
    if (s->kind != IR_STMT_ALLOC) continue;
    IrBuffer *b = s->u.alloc;
    if (is_ring(b) && (b->tma_bar == bar || b->empty_bar == bar)) return b;
  }
  return NULL;
}

static bool is_per_tile(const Plan *P, const IrBuffer *b) {
  for (int i = 0; i < P->nper_tile; i++)
    if (P->per_tile[i] == b || P->per_tile[i]->tma_bar == b) return true;
  return false;
}

/* ---- ring positions ------------------------------------------------------ */

typedef struct Shift {
  IrModule *m;
  IrKernel *k;
  IrVar *base;  /* pipe_base */
  bool apply;   /* false: only check that every access has a known shape */
  bool ok;
} Shift;

static bool is_binary(const IrExpr *e, IrOp op, int64_t rhs) {
  int64_t v;
  return e && e->kind == IR_EXPR_BINARY && e->u.op.op == op && ir_expr_is_int_const(e->u.op.b, &v) && v == rhs;
}

static IrExpr *plus_base(Shift *sh, IrExpr *e) {
  return ir_binary(sh->m, IR_OP_ADD, ir_var_ref(sh->m, sh->base, e->loc), e, e->loc);
}

/* A stage index: `E % S`, or the constant 0 of a one-stage ring. */
static IrExpr *shift_stage(Shift *sh, IrExpr *e, int64_t S) {
  int64_t zero;
  if (S == 1) {
    if (!ir_expr_is_int_const(e, &zero) || zero != 0) sh->ok = false;
    return e;
  }
  int64_t c;
  if (ir_expr_is_int_const(e, &c) && c >= 0 && c < S) {
    /* A stage folded to a constant, e.g. the last stage's release (n - 1)
     * % S with n bound by -D: (pipe_base + n - 1) % S is (pipe_base + c) % S. */
    return sh->apply ? ir_simplify(sh->m, ir_binary(sh->m, IR_OP_MOD, plus_base(sh, e), ir_int(sh->m, S, e->loc), e->loc)) : e;
  }
  if (!is_binary(e, IR_OP_MOD, S)) {
    sh->ok = false;
    return e;
  }
  if (sh->apply) e->u.op.a = plus_base(sh, e->u.op.a);
  return e;
}

/* A parity: `(E / S) % 2` or `(E / S + c) % 2`; `(E [+ c]) % 2` when S == 1. */
static IrExpr *shift_parity(Shift *sh, IrExpr *e, int64_t S) {
  if (!is_binary(e, IR_OP_MOD, 2)) {
    sh->ok = false;
    return e;
  }
  IrExpr *x = e->u.op.a;
  if (S == 1) {
    if (sh->apply) e->u.op.a = plus_base(sh, x);
    return e;
  }
  IrExpr *div = is_binary(x, IR_OP_DIV, S) ? x
                : x->kind == IR_EXPR_BINARY && x->u.op.op == IR_OP_ADD && is_binary(x->u.op.a, IR_OP_DIV, S) ? x->u.op.a
                                                                                                         : NULL;
  if (!div) {
    sh->ok = false;
    return e;
  }
  if (sh->apply) div->u.op.a = plus_base(sh, div->u.op.a);
  return e;
}

static void shift_region(Shift *sh, IrRegion *r) {
  if (!is_ring(r->buf)) return;
  const int64_t S = ring_stages(r->buf);
  if (S > 1) r->start[0] = shift_stage(sh, r->start[0], S);
}

/* `if (E >= S) { mbar_wait <empty barriers> }`: the producer's refill guard. */
static bool is_refill_guard(Shift *sh, IrStmt *s) {
  if (s->u.if_.else_ || !s->u.if_.then_->u.seq.n || s->u.if_.cond->kind != IR_EXPR_BINARY ||
      s->u.if_.cond->u.op.op != IR_OP_GE)
    return false;
  for (int i = 0; i < s->u.if_.then_->u.seq.n; i++) {
    const IrStmt *w = s->u.if_.then_->u.seq.items[i];
    if (w->kind != IR_STMT_MBAR_WAIT) return false;
    const IrBuffer *ring = ring_of_barrier(sh->k, w->u.mbar_wait.bar);
    if (!ring || ring->empty_bar != w->u.mbar_wait.bar) return false;
  }
  return true;
}

/* An element load of a ring, B[E % S, ...] (a row of log-sum-exps read
 * element by element): its stage index shifts like a copy's. */
static void shift_ring_load(const IrExpr *e, void *ctx) {
  Shift *sh = ctx;
  if (e->kind != IR_EXPR_LOAD || !is_ring(e->u.load.buf) || !sh->ok) return;
  IrExpr *x = (IrExpr *)e; /* the statement's own tree: shifted in place, as the stages above */
  const int64_t S = ring_stages(e->u.load.buf);
  if (S > 1) x->u.load.idx[0] = shift_stage(sh, x->u.load.idx[0], S);
}

static void shift_stmt(Shift *sh, IrStmt *s) {
  if (!s || !sh->ok) return;
  ir_stmt_visit_exprs(s, shift_ring_load, sh);
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) shift_stmt(sh, s->u.seq.items[i]);
    return;
  case IR_STMT_FOR:
    shift_stmt(sh, s->u.for_.body);
    return;
  case IR_STMT_IF:
    if (is_refill_guard(sh, s) && sh->apply) s->u.if_.cond->u.op.a = plus_base(sh, s->u.if_.cond->u.op.a);
    shift_stmt(sh, s->u.if_.then_);
    shift_stmt(sh, s->u.if_.else_);
    return;
  case IR_STMT_MBAR_WAIT:
  case IR_STMT_MBAR_ARRIVE: {
    IrBuffer *ring = ring_of_barrier(sh->k, s->u.mbar_wait.bar);
    if (!ring) {
      if (!sh->apply) sh->ok = false; /* applying: a per-tile buffer's, set by make_persistent */
      return;
    }
    const int64_t S = ring_stages(ring);
    s->u.mbar_wait.stage = shift_stage(sh, s->u.mbar_wait.stage, S);
    if (s->kind == IR_STMT_MBAR_WAIT) s->u.mbar_wait.parity = shift_parity(sh, s->u.mbar_wait.parity, S);
    return;
  }
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD:
    shift_region(sh, &s->u.copy.src);
    shift_region(sh, &s->u.copy.dst);
    return;
  case IR_STMT_GEMM:
    shift_region(sh, &s->u.gemm.a);
    shift_region(sh, &s->u.gemm.b);
    return;
  case IR_STMT_WG_TURN:
    /* A staggered start repeats on each tile's first iteration; ping-pong
     * turns are not handled. */
    if (s->u.turn < IR_TURN_STAGGER_WAIT) sh->ok = false;
    return;
  case IR_STMT_WARP_ROLES:
    sh->ok = false; /* nested roles: not handled */
    return;
  default:
    return;
  }
}

/* Other references to a ring buffer (stores, fills) have no stage pattern
 * this pass knows: such kernels stay as they are. */
static void note_odd_ring_use(IrStmt *s, void *ctx) {
  Shift *sh = ctx;
  if (s->kind == IR_STMT_COPY || s->kind == IR_STMT_ATOMIC_ADD || s->kind == IR_STMT_GEMM ||
      s->kind == IR_STMT_ALLOC || s->kind == IR_STMT_MBAR_WAIT || s->kind == IR_STMT_MBAR_ARRIVE)
    return;
  for (int i = 0; i < sh->k->body->u.seq.n; i++) {
    IrStmt *a = sh->k->body->u.seq.items[i];
    if (a->kind != IR_STMT_ALLOC || !is_ring(a->u.alloc)) continue;
    if (ir_stmt_buffer_refs(s, a->u.alloc) > ir_stmt_buffer_loads(s, a->u.alloc)) sh->ok = false;
  }
}

static bool shifts_apply(IrModule *m, IrKernel *k, IrStmt *role) {
  Shift sh = {m, k, NULL, false, true};
  shift_stmt(&sh, role);
  ir_visit_stmts(role, note_odd_ring_use, &sh);
  return sh.ok;
}

/* ---- the plan -------------------------------------------------------------- */

static IrStmt *find_pipelined(IrStmt *s) {
  if (!s) return NULL;
  if (s->kind == IR_STMT_FOR && s->u.for_.kind == IR_FOR_PIPELINED) return s;
  if (s->kind == IR_STMT_SEQ)
    for (int i = 0; i < s->u.seq.n; i++) {
      IrStmt *f = find_pipelined(s->u.seq.items[i]);
      if (f) return f;
    }
  if (s->kind == IR_STMT_IF) return find_pipelined(s->u.if_.then_);
  return NULL;
}

typedef struct VarUse {
  const IrVar *var;
  bool used;
} VarUse;

static void note_var_expr(const IrExpr *e, void *ctx) {
  VarUse *u = ctx;
  if (e->kind == IR_EXPR_VAR && e->u.var == u->var) u->used = true;
}

static void note_var_stmt(IrStmt *s, void *ctx) { ir_stmt_visit_exprs(s, note_var_expr, ctx); }

static bool expr_uses_var(const IrExpr *e, const IrVar *v) {
  VarUse u = {v, false};
  ir_expr_visit(e, note_var_expr, &u);
  return u.used;
}

static bool uses_var(IrStmt *s, const IrVar *v) {
  VarUse u = {v, false};
  ir_visit_stmts(s, note_var_stmt, &u);
  return u.used;
}

/* Whether n names block index d, directly or through the lets before the
 * roles (causal attention's loop_range). */
static bool depends_on_block(const IrKernel *k, const Plan *P, const IrExpr *n, int d) {
  if (!k->block_vars[d]) return false;
  const IrVar *dep[MAX_LETS + 1];
  int ndep = 0;
  dep[ndep++] = k->block_vars[d];
  for (int i = 0; i < P->pre->u.seq.n; i++) {
    const IrStmt *s = P->pre->u.seq.items[i];
    if (s->kind != IR_STMT_LET) continue;
    for (int j = 0; j < ndep; j++)
      if (expr_uses_var(s->u.let.value, dep[j])) {
        dep[ndep++] = s->u.let.var;
        break;
      }
  }
  for (int j = 0; j < ndep; j++)
    if (expr_uses_var(n, dep[j])) return true;
  return false;
}

/* The producer's loop (make_plan checks it is the role's only statement):
 * its trip count is the ring positions a tile uses. A consumer
 * warpgroup's own loop may stop earlier (trim-masked-iterations). */
static IrStmt *producer_loop(const Plan *P) { return P->roles->u.roles.producer->u.seq.items[0]; }

/* Tiles of different lengths: a static round-robin of them leaves some
 * blocks with far more work than others (measured: causal attention 4-16 %
 * slower than one block per tile, where the hardware's block scheduler
 * balances). Where only x sets the length (causal: query block x reads
 * x + 1 key blocks), the loop walks pairs of tiles whose x are x and
 * gx - 1 - x, of equal total length (Plan.paired, role_begin); any other
 * dependence keeps the kernel as it is (a dynamic tile scheduler would take
 * those; not built). */
static bool plan_lengths(const IrKernel *k, Plan *P) {
  const IrExpr *n = producer_loop(P)->u.for_.extent;
  for (int d = 1; d < k->ngrid; d++)
    if (depends_on_block(k, P, n, d)) return false;
  P->paired = depends_on_block(k, P, n, 0);
  return !P->paired || !k->raster_panel;
}

/* Sorts the body into allocs / pre / roles / post; false when some statement
 * before the roles is not one this pass knows how to place. */
static bool make_plan(IrModule *m, IrKernel *k, Plan *P) {
  SrcLoc loc = k->body->loc;
  P->allocs = ir_seq_new(m, loc);
  P->pre = ir_seq_new(m, loc);
  P->post = ir_seq_new(m, loc);
  /* Flatten one level of SEQ around the roles. */
  IrStmt *items[512];
  int n = 0;
  for (int i = 0; i < k->body->u.seq.n; i++) {
    IrStmt *s = k->body->u.seq.items[i];
    bool holds_roles = false;
    if (s->kind == IR_STMT_SEQ)
      for (int j = 0; j < s->u.seq.n; j++) holds_roles |= s->u.seq.items[j]->kind == IR_STMT_WARP_ROLES;
    const int cnt = holds_roles ? s->u.seq.n : 1;
    if (n + cnt > (int)(sizeof items / sizeof *items)) return false;
    for (int j = 0; j < cnt; j++) items[n++] = holds_roles ? s->u.seq.items[j] : s;
  }
  for (int i = 0; i < n; i++) {
    IrStmt *s = items[i];
    if (s->kind == IR_STMT_EXIT) return false; /* ending the block would end its tile loop */
    if (s->kind == IR_STMT_WARP_ROLES) {
      if (P->roles) return false;
      P->roles = s;
      continue;
    }
    if (s->kind == IR_STMT_ALLOC) {
      ir_seq_push(m, P->allocs, s);
      continue;
    }
    if (P->roles) {
      ir_seq_push(m, P->post, s);
      continue;
    }
    switch (s->kind) {
    case IR_STMT_LET:
      if (++P->nlets > MAX_LETS) return false;
      break;
    case IR_STMT_FILL:
      if (s->u.fill.dst.buf->scope == IR_SCOPE_SHARED) return false;
      break;
    case IR_STMT_COPY: {
      IrBuffer *d = s->u.copy.dst.buf;
      if (!s->u.copy.tma || d->scope != IR_SCOPE_SHARED || !d->tma_bar || d->empty_bar || ring_stages(d) != 1 ||
          P->nper_tile == MAX_PER_TILE)
        return false;
      P->per_tile[P->nper_tile++] = d;
      break;
    }
    case IR_STMT_MBAR_WAIT:
      if (!is_per_tile(P, s->u.mbar_wait.bar)) return false;
      break;
    default:
      return false;
    }
    ir_seq_push(m, P->pre, s);
  }
  if (!P->roles) return false;
  IrStmt *prod = P->roles->u.roles.producer;
  if (prod->u.seq.n != 1 || prod->u.seq.items[0]->kind != IR_STMT_FOR ||
      prod->u.seq.items[0]->u.for_.kind != IR_FOR_SERIAL)
    return false;
  P->consumer_loop = find_pipelined(P->roles->u.roles.consumer);
  return P->consumer_loop && plan_lengths(k, P) && shifts_apply(m, k, prod) && shifts_apply(m, k, P->roles->u.roles.consumer);
}

/* ---- 2-CTA clusters ---------------------------------------------------------- */

/* A GEMM's tiles at (x, y) and (x, y + 1) read the same B tiles: with the two
 * blocks in one cluster, each loads half of every B stage with a multicast
 * TMA copy into both blocks' shared memory, so L2 serves that operand once
 * per pair (measured on an H100: the 4096^3 GEMM's consumers waited on
 * their full barriers for a quarter of their time with narrower tiles
 * slower in proportion to their L2 traffic, bench/results/
 * 2026-11-24-nvidia-h100-cluster-notes.md; cuBLAS's kernel there runs 2-CTA
 * clusters). The plan: tiles go in pairs along y (the persistent loop walks
 * x * 2 ceil(y / 2) * z slots; slot t is pair t / 2, rank t % 2), a ring is
 * multicast when its copy names neither y nor a let derived from it and its
 * tile is an even number of TMA boxes (each rank takes half the boxes), and
 * its empty barrier counts the consumer warps of both blocks. The second
 * tile of the last pair lies past the grid when y is odd: it computes on
 * TMA's zero fill and stores nothing, which holds only where every global
 * access of the consumers is a tile copy (clipped at the tensor's edge). */

typedef struct GlobalUse {
  bool element; /* an element load, store or atomic of a global tensor */
} GlobalUse;

static void note_global_expr(const IrExpr *e, void *ctx) {
  GlobalUse *u = ctx;
  if (e->kind == IR_EXPR_LOAD && e->u.load.buf->scope == IR_SCOPE_GLOBAL) u->element = true;
}

static void note_global_stmt(IrStmt *s, void *ctx) {
  GlobalUse *u = ctx;
  if ((s->kind == IR_STMT_STORE && s->u.store.buf->scope == IR_SCOPE_GLOBAL) || s->kind == IR_STMT_ATOMIC_ADD ||
      s->kind == IR_STMT_ATOMIC_FETCH_ADD)
    u->element = true;
  ir_stmt_visit_exprs(s, note_global_expr, ctx);
}

/* TMA boxes in the tile copy s moves (panels of box columns). */
static int64_t copy_boxes(const IrKernel *k, const IrStmt *s) {
  const IrRegion *g = &s->u.copy.src;
  const int inner = g->buf->rank - 1;
  const int box = k->tma_maps[s->u.copy.tma_map].box[inner];
  int64_t cols;
  if (box <= 0 || !ir_expr_is_int_const(g->extent[inner], &cols) || cols % box) return 0;
  return cols / box;
}

typedef struct ClusterScan {
  const IrKernel *k;
  const Plan *P;
  IrBuffer **shared_rings; /* out: rings the pair can share */
  int n;
  bool any_other;          /* some ring depends on y */
} ClusterScan;

static void note_cluster_copy(IrStmt *s, void *ctx) {
  ClusterScan *c = ctx;
  if (s->kind != IR_STMT_COPY || !s->u.copy.tma || !is_ring(s->u.copy.dst.buf)) return;
  const IrRegion *g = &s->u.copy.src;
  bool names_y = false;
  for (int d = 0; d < g->rank; d++)
    names_y |= depends_on_block(c->k, c->P, g->start[d], 1) || depends_on_block(c->k, c->P, g->extent[d], 1);
  const int64_t boxes = copy_boxes(c->k, s);
  if (names_y || boxes < 2 || boxes % 2) {
    c->any_other = true;
    return;
  }
  for (int i = 0; i < c->n; i++)
    if (c->shared_rings[i] == s->u.copy.dst.buf) return;
  if (c->n < MAX_PER_TILE) c->shared_rings[c->n++] = s->u.copy.dst.buf;
}

static void plan_cluster(const IrKernel *k, Plan *P) {
  P->cluster = false;
  P->nmulticast = 0;
  if (P->paired || P->nper_tile || k->ngrid < 2 || !k->block_vars[1]) return;
  GlobalUse u = {false};
  ir_visit_stmts(P->roles->u.roles.consumer, note_global_stmt, &u);
  ir_visit_stmts(P->post, note_global_stmt, &u);
  if (u.element) return;
  ClusterScan c = {k, P, P->multicast, 0, false};
  ir_visit_stmts(P->roles->u.roles.producer, note_cluster_copy, &c);
  if (!c.n || !c.any_other) return;
  P->nmulticast = c.n;
  P->cluster = true;
}

/* Is the kernel's TMA map `index` used by any statement but `except`? */
typedef struct MapUse {
  int index;
  const IrStmt *except;
  bool used;
} MapUse;

static void note_map_use(IrStmt *s, void *ctx) {
  MapUse *u = ctx;
  if (s != u->except && s->kind == IR_STMT_COPY && s->u.copy.tma && s->u.copy.tma_map == u->index) u->used = true;
}

/* The epilogue's staged TMA store `copy F -> S; copy.tma S -> G` (stage-stores,
 * S reusing a TMA destination) as one statement that sends the tile out in
 * rounds of w columns through n slots of S (`copy.tma F -> G via(S)`, S
 * now [n, rows, w]): as many of the tile's columns as fit in the kernel's
 * shared memory (`others` bytes besides S) go into slots, the wider rounds
 * (128/64/32-byte rows) on ties. gemm.tile's 128 x 256 bf16 C is 64 KB:
 * beside a 4-stage ring (192 KB) two 64-column slots fit (32 KB), beside 3
 * stages the whole tile in four. The slots let the threads write one panel
 * while TMA reads others, and thread 0 waits for a slot's earlier store
 * only where a round is about to rewrite it; a tile that fits its slots
 * never waits within the tile, its writes drain under the next tile's main
 * loop (cuda/tma.c's emit_staged_store). Why rounds rather than the
 * alternatives: stores straight from registers would write 4-byte pieces
 * of 512-byte rows where TMA writes whole boxes and clips the tile's edges
 * itself. The fragment's columns must split into rounds by column slot: an
 * f32 MMA_C accumulator whose warps split only the rows (every wgmma
 * accumulator), stored into a 16-bit tile. Returns false (nothing changed)
 * where any of that does not hold. */
static bool stage_in_rounds(IrModule *m, IrKernel *k, const Plan *P, int64_t others) {
  IrStmt *post = P->post;
  for (int i = 0; i + 1 < post->u.seq.n; i++) {
    IrStmt *to_tile = post->u.seq.items[i], *store = post->u.seq.items[i + 1];
    if (to_tile->kind != IR_STMT_COPY || store->kind != IR_STMT_COPY || !store->u.copy.tma) continue;
    IrBuffer *S = to_tile->u.copy.dst.buf;
    const IrRegion *F = &to_tile->u.copy.src, *G = &store->u.copy.dst;
    if (!k->wgmma || S->scope != IR_SCOPE_SHARED || !S->alias_of || !S->alias_of->tma_bar || S->rank != 2 ||
        store->u.copy.src.buf != S || G->buf->scope != IR_SCOPE_GLOBAL || G->buf->dtype != S->dtype)
      continue;
    const IrLayout *l = &F->buf->layout;
    int64_t rows = 0, cols = 0;
    if (F->buf->scope != IR_SCOPE_FRAGMENT || F->buf->dtype != DTYPE_F32 || dtype_size(S->dtype) != 2 ||
        l->kind != IR_LAYOUT_FRAGMENT || l->frag != IR_FRAG_MMA_C || l->warps_n != 1 ||
        !ir_expr_is_int_const(S->shape[0], &rows) || !ir_expr_is_int_const(S->shape[1], &cols) ||
        l->rows != rows || l->cols != cols || (int64_t)l->cols_local * 4 != cols || rows % 8 != 0 || rows > 256)
      return false;
    /* Slots start 1 KB aligned, as TMA's swizzle wants (every offset is, in a wgmma kernel). */
    const int64_t align = 1024;
    int64_t w = 0, nslots = 0;
    for (int64_t width = 64; width >= 16; width /= 2) {
      if (cols % width != 0) continue;
      const int64_t nrounds = cols / width;
      /* Two slots at least, so that a round's writes overlap the last store's read. */
      for (int64_t n = nrounds; n >= (nrounds == 1 ? 1 : 2); n--) {
        if (others + (n * rows * width * 2 + align - 1) / align * align > SMEM_LIMIT_SM90) continue;
        if (n * width > nslots * w) w = width, nslots = n;
        break;
      }
    }
    if (w) {
      /* The box of one round: G's rows, w columns (TMA clips it at the edges). */
      IrRegion gw = *G;
      gw.extent[G->rank - 1] = ir_int(m, w, store->loc);
      IrExpr *shape[3] = {ir_int(m, nslots, S->loc), ir_int(m, rows, S->loc), ir_int(m, w, S->loc)};
      IrBuffer slot = *S;
      slot.rank = 3;
      for (int d = 0; d < 3; d++) slot.shape[d] = shape[d];
      slot.alias_of = NULL;
      slot.layout.swizzle_bytes = (int)(w * 2);
      slot.layout.panel_cols = 0;
      slot.smem_align = (int)align;
      IrRegion sr = ir_region_whole(m, &slot, store->loc);
      sr.is_index[0] = true;
      IrTensorMap map;
      if (!pass_tma_box(k, &gw, &sr, &map)) return false;
      map.store = true;
      MapUse u = {store->u.copy.tma_map, store, false};
      ir_visit_stmts(k->body, note_map_use, &u);
      int index = store->u.copy.tma_map;
      if (u.used) index = pass_tensor_map_index(k, &map);
      else k->tma_maps[index] = map; /* the whole tile's map has no other user */
      if (index < 0) return false;
      *S = slot;
      store->u.copy.src = *F;
      store->u.copy.via = S;
      store->u.copy.tma_map = index;
      ir_seq_remove(post, i); /* to_tile: the store takes F itself now */
      return true;
    }
    return false;
  }
  return false;
}

/* The shared bytes of P's buffers once the staging buffers that reuse a TMA
 * destination have storage of their own; *staging of it theirs. */
static int64_t unaliased_bytes(const Plan *P, int64_t *staging, int *nstaged) {
  /* The per-tile buffers' empty barriers come on top: one 8-byte mbarrier
   * each in the barrier area (pass_add_mbarriers, ir_shared_bytes). */
  int64_t bytes = (int64_t)P->nper_tile * 8;
  *staging = 0, *nstaged = 0;
  for (int i = 0; i < P->allocs->u.seq.n; i++) {
    IrBuffer *b = P->allocs->u.seq.items[i]->u.alloc;
    if (b->scope != IR_SCOPE_SHARED) continue;
    IrBuffer *home = b->alias_of;
    if (home && home->tma_bar) b->alias_of = NULL; /* its size once it has storage of its own */
    bytes += ir_buffer_bytes_aligned(b);
    if (home && home->tma_bar) *staging += ir_buffer_bytes_aligned(b), ++*nstaged;
    b->alias_of = home;
  }
  return bytes;
}

/* The epilogue's staging buffers that reuse a TMA destination get their own
 * storage (the producer refills those during the epilogue); where the whole
 * tile does not fit beside the ring, it goes out in rounds through two
 * panels (stage_in_rounds); false when the kernel's shared memory would
 * pass the limit either way. */
static bool unalias_staging(IrModule *m, IrKernel *k, const Plan *P) {
  int64_t staging;
  int nstaged;
  const int64_t bytes = unaliased_bytes(P, &staging, &nstaged);
  const bool rounds = nstaged == 1 && stage_in_rounds(m, k, P, bytes - staging);
  if (!rounds && bytes > SMEM_LIMIT_SM90) return false;
  for (int i = 0; i < P->allocs->u.seq.n; i++) {
    IrBuffer *b = P->allocs->u.seq.items[i]->u.alloc;
    if (b->alias_of && b->alias_of->tma_bar) b->alias_of = NULL;
  }
  return true;
}

/* ---- building -------------------------------------------------------------- */

static IrExpr *let_ref(IrModule *m, IrStmt *seq, const char *name, IrExpr *value, SrcLoc loc) {
  IrVar *v = ir_var_new(m, name, IR_VAR_LET, DTYPE_I64, loc);
  ir_seq_push(m, seq, pass_let(m, v, ir_simplify(m, value), loc));
  return ir_var_ref(m, v, loc);
}

#define BIN(op, a, b) ir_binary(m, IR_OP_##op, (a), (b), loc)
#define CLONE(e) ir_expr_clone(m, (e))

/* e (a DIV or MOD of a tile index by grid extents), marked as such
 * (IrExpr.tile_split: its operands' range is known). */
static IrExpr *split(IrExpr *e) {
  e->tile_split = true;
  return e;
}

/* Lets binding fresh block indices to the tile's, in seq; out[g] refers to
 * them. Without rasterization x runs fastest, as blockIdx does; with it, the
 * panels of the grid's rasterization (cuda/frame.c's emit_block_indices).
 * cluster: tile is a slot of the pair grid (x, ceil(y / 2), z): slot / 2
 * picks the pair as above, slot % 2 (the block's rank in its cluster, the
 * loop stepping by an even gridDim.x) its y within the pair. */
static void tile_indices(IrModule *m, const IrKernel *k, IrVar *tile, bool cluster, IrStmt *seq,
                         IrVar *out[IR_MAX_GRID]) {
  SrcLoc loc = k->loc;
  IrExpr *g[IR_MAX_GRID];
  for (int d = 0; d < IR_MAX_GRID; d++) g[d] = d < k->ngrid && k->grid[d] ? k->grid[d] : ir_int(m, 1, loc);
  IrExpr *t = ir_var_ref(m, tile, loc);
  IrExpr *rank = NULL;
  int64_t panel_size = k->raster_panel;
  if (cluster) {
    g[1] = ir_call(m, IR_INTRINSIC_CEILDIV, CLONE(g[1]), ir_int(m, 2, loc), loc);
    rank = BIN(MOD, CLONE(t), ir_int(m, 2, loc));
    t = let_ref(m, seq, "tile_pair", BIN(DIV, CLONE(t), ir_int(m, 2, loc)), loc);
    panel_size = (panel_size + 1) / 2; /* the same footprint in tiles */
  }
  IrExpr *value[IR_MAX_GRID];
  IrExpr *plane = BIN(MUL, CLONE(g[0]), CLONE(g[1]));
  int64_t gz = 0;
  const bool flat = k->ngrid < 3 || (ir_expr_is_int_const(g[2], &gz) && gz == 1);
  value[2] = flat ? ir_int(m, 0, loc) : split(BIN(DIV, CLONE(t), CLONE(plane)));
  IrExpr *lin = flat ? t : let_ref(m, seq, "tile_in_plane", split(BIN(MOD, CLONE(t), plane)), loc);
  if (panel_size) {
    const int major = k->raster_column_major ? 0 : 1, minor = 1 - major;
    IrExpr *P = ir_int(m, panel_size, loc);
    IrExpr *span = BIN(MUL, CLONE(P), CLONE(g[minor]));
    /* The span divides by up to 16 times the tiles only with panels of up
     * to 16 (IrExpr.tile_split's bound); wider panels keep plain division. */
    IrExpr *panel = BIN(DIV, CLONE(lin), CLONE(span)), *in_panel = BIN(MOD, CLONE(lin), span);
    if (panel_size <= 16) split(panel), split(in_panel);
    panel = let_ref(m, seq, "tile_panel", panel, loc);
    in_panel = let_ref(m, seq, "tile_in_panel", in_panel, loc);
    IrExpr *rows = let_ref(m, seq, "tile_panel_rows",
                           ir_call(m, IR_INTRINSIC_MIN, CLONE(P), BIN(SUB, CLONE(g[major]), BIN(MUL, CLONE(panel), CLONE(P))), loc),
                           loc);
    value[major] = BIN(ADD, BIN(MUL, CLONE(panel), CLONE(P)), BIN(MOD, CLONE(in_panel), CLONE(rows)));
    value[minor] = BIN(DIV, CLONE(in_panel), CLONE(rows));
  } else {
    value[0] = split(BIN(MOD, CLONE(lin), CLONE(g[0])));
    value[1] = split(BIN(DIV, CLONE(lin), CLONE(g[0])));
  }
  if (cluster) value[1] = BIN(ADD, BIN(MUL, value[1], ir_int(m, 2, loc)), rank);
  for (int d = 0; d < k->ngrid; d++) {
    const IrVar *bv = k->block_vars[d];
    out[d] = ir_var_new(m, bv ? bv->name : "tile_index", IR_VAR_LET, DTYPE_I64, loc);
    ir_seq_push(m, seq, pass_let(m, out[d], ir_simplify(m, d == 0 && k->ngrid == 1 ? CLONE(t) : value[d]), loc));
  }
}

static IrExpr *pipe_at(IrModule *m, IrBuffer *pipe, int i, SrcLoc loc) {
  IrExpr *idx[1] = {ir_int(m, i, loc)};
  return ir_load(m, pipe, idx, loc);
}

static IrStmt *pipe_set(IrModule *m, IrBuffer *pipe, int i, IrExpr *v, SrcLoc loc) {
  IrExpr *idx[1] = {ir_int(m, i, loc)};
  return ir_store_new(m, pipe, idx, v, loc);
}

/* One role's tile loop around `work` (a SEQ it fills): block indices,
 * pipe_base / tile_iter, then the caller's statements, then the counters'
 * update by `n` ring positions. Returns the role's new SEQ. */
typedef struct Role {
  IrStmt *seq, *tile_body, *body, *work; /* body: tile_body, or the pair loop's */
  IrVar *blocks[IR_MAX_GRID];
  IrVar *base, *iter;
  IrVar *loop, *half; /* the tile (or pair) loop's variable; paired: the half's */
  IrExpr *tiles;      /* the flattened grid's tile count */
} Role;

/* A paired loop's tile count at pair t (mirror: T - 1 - t): 1 for the
 * middle tile of an odd T, else 2. */
static IrExpr *pair_halves(IrModule *m, const IrExpr *t, IrExpr *mirror, SrcLoc loc) {
  return ir_select(m, BIN(EQ, CLONE(t), mirror), ir_int(m, 1, loc), ir_int(m, 2, loc), loc);
}

/* The tile a paired loop runs at (pair t, half h): the pair's longer tile
 * first (t's x is the longer one when 2x >= gx - 1), then the other. */
static IrExpr *pair_tile(IrModule *m, const IrKernel *k, const IrExpr *t, IrExpr *h, IrExpr *mirror, SrcLoc loc) {
  IrExpr *x = split(BIN(MOD, CLONE(t), CLONE(k->grid[0])));
  IrExpr *t_longer = BIN(GE, BIN(MUL, x, ir_int(m, 2, loc)), BIN(SUB, CLONE(k->grid[0]), ir_int(m, 1, loc)));
  IrExpr *first = BIN(EQ, h, ir_int(m, 0, loc));
  return ir_select(m, BIN(EQ, first, t_longer), CLONE(t), mirror, loc);
}

/* paired: the loop walks pairs of tiles t and T - 1 - t of the flattened
 * grid (T tiles, x fastest), the longer one first. Their x are x and
 * gx - 1 - x, so every step of the loop does the same work where a tile's
 * length grows linearly with x (causal attention), and a static round-robin
 * of such steps keeps the blocks balanced. (Pairs within one row, (x, y)
 * with (gx - 1 - x, y), left the middle tile of an odd gx alone: one
 * half-length step per row, which fell on the same few blocks whenever the
 * resident blocks were a multiple of the steps per row -- dim 64 causal
 * 192-row tiles at seq_len 2048: 11 x tiles, 6 steps per row, 132 SMs.) */
/* count_tiles: the role also counts its tiles (tile_iter, tc_pipe[1]), which
 * only the per-tile buffers' barrier parities need. */
static void role_begin(IrModule *m, IrKernel *k, IrBuffer *pipe, const Plan *P, bool count_tiles, Role *r) {
  const bool paired = P->paired;
  SrcLoc loc = k->loc;
  r->seq = ir_seq_new(m, loc);
  ir_seq_push(m, r->seq, pipe_set(m, pipe, 0, ir_int(m, 0, loc), loc));
  if (count_tiles) ir_seq_push(m, r->seq, pipe_set(m, pipe, 1, ir_int(m, 0, loc), loc));
  IrVar *tile = ir_var_new(m, paired ? "tile_pair" : "tile", IR_VAR_LOOP, DTYPE_I64, loc);
  r->tile_body = ir_seq_new(m, loc);
  IrExpr *tiles = CLONE(k->grid[0]);
  for (int d = 1; d < k->ngrid; d++) {
    IrExpr *g = CLONE(k->grid[d]);
    if (d == 1 && P->cluster) /* 2 ceil(y / 2): whole pairs */
      g = BIN(MUL, ir_call(m, IR_INTRINSIC_CEILDIV, g, ir_int(m, 2, loc), loc), ir_int(m, 2, loc));
    tiles = BIN(MUL, tiles, g);
  }
  IrExpr *steps = paired ? ir_call(m, IR_INTRINSIC_CEILDIV, CLONE(tiles), ir_int(m, 2, loc), loc) : tiles;
  ir_seq_push(m, r->seq, ir_for_new(m, IR_FOR_PERSISTENT, tile, ir_simplify(m, steps), r->tile_body, loc));
  r->loop = tile;
  r->half = NULL;
  r->tiles = tiles;
  if (!paired) {
    tile_indices(m, k, tile, P->cluster, r->tile_body, r->blocks);
    r->body = r->tile_body;
  } else {
    /* for half in serial(t == T - 1 - t ? 1 : 2):
     *   tile = (half == 0) == (x of t is the longer) ? t : T - 1 - t */
    IrExpr *t = ir_var_ref(m, tile, loc);
    IrExpr *mirror = let_ref(m, r->tile_body, "tile_mirror", BIN(SUB, BIN(SUB, tiles, ir_int(m, 1, loc)), CLONE(t)), loc);
    IrVar *half = ir_var_new(m, "tile_half", IR_VAR_LOOP, DTYPE_I64, loc);
    r->half = half;
    r->body = ir_seq_new(m, loc);
    ir_seq_push(m, r->tile_body, ir_for_new(m, IR_FOR_SERIAL, half, ir_simplify(m, pair_halves(m, t, CLONE(mirror), loc)), r->body, loc));
    IrVar *this_tile = ir_var_new(m, "tile", IR_VAR_LET, DTYPE_I64, loc);
    IrExpr *at = pair_tile(m, k, t, ir_var_ref(m, half, loc), mirror, loc);
    ir_seq_push(m, r->body, pass_let(m, this_tile, ir_simplify(m, at), loc));
    tile_indices(m, k, this_tile, false, r->body, r->blocks);
  }
  r->base = ir_var_new(m, "pipe_base", IR_VAR_LET, DTYPE_I64, loc);
  r->iter = count_tiles ? ir_var_new(m, "tile_iter", IR_VAR_LET, DTYPE_I64, loc) : NULL;
  r->base->counter = true;
  if (r->iter) r->iter->counter = true;
  ir_seq_push(m, r->body, pass_let(m, r->base, pipe_at(m, pipe, 0, loc), loc));
  if (count_tiles) ir_seq_push(m, r->body, pass_let(m, r->iter, pipe_at(m, pipe, 1, loc), loc));
  r->work = ir_seq_new(m, loc);
}

/* Drops the LET of v (a block index the role never names: a 1-deep grid z). */
static void drop_unused_index(IrStmt *tile_body, const IrVar *v) {
  for (int i = 0; i < tile_body->u.seq.n; i++) {
    IrStmt *s = tile_body->u.seq.items[i];
    if (s->kind != IR_STMT_LET || s->u.let.var != v) continue;
    ir_seq_remove(tile_body, i);
    return;
  }
}

static void role_end(IrModule *m, IrKernel *k, IrBuffer *pipe, Role *r, IrExpr *n) {
  SrcLoc loc = k->loc;
  for (int d = 0; d < k->ngrid; d++)
    if (!k->block_vars[d] || !uses_var(r->work, k->block_vars[d])) drop_unused_index(r->body, r->blocks[d]);
  for (int d = 0; d < k->ngrid; d++)
    if (k->block_vars[d]) pass_subst_var(m, r->work, k->block_vars[d], ir_var_ref(m, r->blocks[d], loc));
  Shift sh = {m, k, r->base, true, true};
  shift_stmt(&sh, r->work);
  if (!sh.ok) { /* make_plan checked every access's shape: a bug here */
    fprintf(stderr, "tilec: internal error: pass persistent met a ring access it cannot shift in '%s'\n", k->name);
    abort();
  }
  for (int i = 0; i < r->work->u.seq.n; i++) ir_seq_push(m, r->body, r->work->u.seq.items[i]);
  for (int d = 0; d < k->ngrid; d++)
    if (k->block_vars[d]) n = ir_expr_subst(m, n, k->block_vars[d], ir_var_ref(m, r->blocks[d], loc));
  ir_seq_push(m, r->body, pipe_set(m, pipe, 0, ir_simplify(m, BIN(ADD, ir_var_ref(m, r->base, loc), n)), loc));
  if (!r->iter) return;
  ir_seq_push(m, r->body,
              pipe_set(m, pipe, 1, BIN(ADD, ir_var_ref(m, r->iter, loc), ir_int(m, 1, loc)), loc));
}

/* The in-flight GEMM loop (`if opaque(n > 0) { for k {...; if (k >= 1)
 * { mbar_arrive E[(k - 1) % S] } } wgmma_wait acc }`) never released its
 * last stage: nothing refilled it. Now the next tile does. */
static void release_last_stage(IrModule *m, const Plan *P) {
  IrStmt *loop = P->consumer_loop, *body = loop->u.for_.body;
  IrStmt *cons = P->roles->u.roles.consumer;
  for (int i = 0; i < cons->u.seq.n; i++) {
    IrStmt *g = cons->u.seq.items[i];
    if (g->kind != IR_STMT_IF || !g->u.if_.opaque || g->u.if_.then_->u.seq.n != 2 ||
        g->u.if_.then_->u.seq.items[0] != loop || g->u.if_.then_->u.seq.items[1]->kind != IR_STMT_WGMMA_WAIT)
      continue;
    IrStmt *lagged = body->u.seq.items[body->u.seq.n - 1];
    if (lagged->kind != IR_STMT_IF || lagged->u.if_.else_) return;
    for (int j = 0; j < lagged->u.if_.then_->u.seq.n; j++) {
      const IrStmt *a = lagged->u.if_.then_->u.seq.items[j];
      if (a->kind != IR_STMT_MBAR_ARRIVE) return;
      /* (k - 1) % S at k = n; with n bound by -D it folds to a constant,
       * which the ring-position shift turns into (pipe_base + c) % S (a
       * constant left as it was released the wrong stage whenever n % S
       * != 0 and a block ran several tiles: a hang, seen with FP8 and 5
       * stages). */
      IrExpr *stage = ir_simplify(m, ir_expr_subst(m, a->u.mbar_wait.stage, loop->u.for_.var, loop->u.for_.extent));
      ir_seq_push(m, g->u.if_.then_, pass_mbar_stmt(m, IR_STMT_MBAR_ARRIVE, a->u.mbar_wait.bar, stage, NULL, a->loc));
    }
  }
}

/* `if (tc_held[0] > 0) { mbar_arrive E[tc_held[0] - 1] after_stores (one per
 * ring of `arrives`); tc_held[0] = 0 }`: the release of the stage an
 * epilogue held (hold_last_stage), a fresh tree each time. */
static IrStmt *release_held(IrModule *m, IrBuffer *mark, IrStmt *const *arrives, int n, SrcLoc loc) {
  IrStmt *rel = ir_seq_new(m, loc);
  for (int i = 0; i < n; i++) {
    IrExpr *at[1] = {ir_int(m, 0, loc)};
    IrExpr *stage = BIN(SUB, ir_load(m, mark, at, loc), ir_int(m, 1, loc));
    IrStmt *a = pass_mbar_stmt(m, IR_STMT_MBAR_ARRIVE, arrives[i]->u.mbar_wait.bar, stage, NULL, loc);
    a->u.mbar_wait.after_stores = true;
    ir_seq_push(m, rel, a);
  }
  IrExpr *at[1] = {ir_int(m, 0, loc)}, *at2[1] = {ir_int(m, 0, loc)};
  ir_seq_push(m, rel, ir_store_new(m, mark, at, ir_int(m, 0, loc), loc));
  return ir_if_new(m, BIN(GT, ir_load(m, mark, at2, loc), ir_int(m, 0, loc)), rel, NULL, loc);
}

/* The k-loop's last ring stage as more slots of the epilogue's rounds
 * (`copy.tma F -> G via(S) hold(R...)[stage]`): where the tile has more
 * rounds than S has slots, round p + slots would wait for round p's store to
 * have read its slot (on an H100 the 4096^3 GEMM's epilogue took 1.4-1.9 us
 * a tile, two such waits). The stage is free by then but for the producer,
 * which would refill it with the next tile's fourth stage. So its release
 * after the k-loop becomes `tc_held[0] = stage + 1` after the store, which
 * fills that stage's slots first; the next tile releases it at k = 1 (or
 * after a shorter loop): thread 0 waits until its stores have read and
 * arrives for every warp (`mbar_arrive ... after_stores`), by when the
 * reads are long done and the next tile's first three stages, released
 * during the loop, are loading or loaded. A release at the end of the
 * store instead, after waiting for the reads, was slower than no hold at
 * all (H100: 4096^3 0.983, 4096^2 x 1024 0.967, against 0.989 / 0.979; the
 * release at k = 1, as a hand edit: 0.996 / 0.988; built: 0.995 / 0.985,
 * session 26). Needs the store right
 * after the loop's guard `if opaque(n > 0) { for k ...; wgmma_wait;
 * mbar_arrive E[last]... }`, rings of the staging dtype whose stages hold
 * whole slots, and every round then in a slot of its own; with n = 0 (no
 * stage taken) the store keeps its plain form, in the guard's else. Not
 * for the stream-K build (pass stream-k rewrites the releases after the
 * loop) or cluster pairs (the other block's producer waits on the release
 * too). */
static void hold_last_stage(IrModule *m, IrKernel *k, const Plan *P) {
  IrStmt *cons = P->roles->u.roles.consumer, *tiles = NULL;
  int ti = 0;
  for (; ti < cons->u.seq.n && !tiles; ti++)
    if (cons->u.seq.items[ti]->kind == IR_STMT_FOR && cons->u.seq.items[ti]->u.for_.kind == IR_FOR_PERSISTENT)
      tiles = cons->u.seq.items[ti];
  if (!tiles) return;
  IrStmt *body = tiles->u.for_.body, *loop = P->consumer_loop;
  int gi = -1;
  for (int i = 0; i < body->u.seq.n && gi < 0; i++) {
    const IrStmt *g = body->u.seq.items[i];
    if (g->kind == IR_STMT_IF && g->u.if_.opaque && !g->u.if_.else_ && g->u.if_.then_->u.seq.n > 2 &&
        g->u.if_.then_->u.seq.items[0] == loop && g->u.if_.then_->u.seq.items[1]->kind == IR_STMT_WGMMA_WAIT)
      gi = i;
  }
  if (gi < 0) return;
  IrStmt *guard = body->u.seq.items[gi], *then_ = guard->u.if_.then_;
  /* the store: after the guard, only cp_async_wait between */
  int si = gi + 1;
  while (si < body->u.seq.n && body->u.seq.items[si]->kind == IR_STMT_ASYNC_WAIT) si++;
  if (si >= body->u.seq.n) return;
  IrStmt *store = body->u.seq.items[si];
  const IrBuffer *via = store->kind == IR_STMT_COPY && store->u.copy.tma ? store->u.copy.via : NULL;
  if (!via || store->u.copy.nhold) return;
  int64_t slots = 0, rows = 0, w = 0, cols = 0;
  const IrRegion *G = &store->u.copy.dst;
  if (!ir_expr_is_int_const(via->shape[0], &slots) || !ir_expr_is_int_const(via->shape[1], &rows) ||
      !ir_expr_is_int_const(via->shape[2], &w) || !ir_expr_is_int_const(G->extent[G->rank - 1], &cols) || w <= 0)
    return;
  const int64_t rounds = cols / w, slot_bytes = rows * w * dtype_size(via->dtype);
  if (rounds <= slots) return; /* no round waits */
  /* The releases after the loop: the rings they free, all at one stage. */
  IrBuffer *held[2];
  int nheld = 0;
  int64_t held_slots = 0;
  const IrExpr *stage = NULL;
  for (int i = 2; i < then_->u.seq.n; i++) {
    const IrStmt *a = then_->u.seq.items[i];
    if (a->kind != IR_STMT_MBAR_ARRIVE || nheld == 2 || (stage && !ir_expr_equal(stage, a->u.mbar_wait.stage))) return;
    stage = a->u.mbar_wait.stage;
    IrBuffer *ring = NULL;
    for (int j = 0; j < P->allocs->u.seq.n && !ring; j++) {
      IrBuffer *b = P->allocs->u.seq.items[j]->u.alloc;
      if (b->scope == IR_SCOPE_SHARED && is_ring(b) && b->empty_bar == a->u.mbar_wait.bar) ring = b;
    }
    if (!ring || ring->dtype != via->dtype || ring->rank < 2) return;
    int64_t stage_bytes = dtype_size(ring->dtype);
    for (int d = 1; d < ring->rank; d++) {
      int64_t e = 0;
      if (!ir_expr_is_int_const(ring->shape[d], &e)) return;
      stage_bytes *= e;
    }
    if (stage_bytes % slot_bytes != 0 || stage_bytes % 1024 != 0) return;
    held[nheld++] = ring;
    held_slots += stage_bytes / slot_bytes;
  }
  if (!nheld || rounds > held_slots + slots) return;
  const SrcLoc loc = store->loc;
  /* tc_held[0]: the held stage + 1 across tiles (0: none) */
  IrExpr *one[1] = {ir_int(m, 1, loc)};
  IrBuffer *mark = ir_buffer_new(m, "tc_held", DTYPE_I64, IR_SCOPE_LOCAL, 1, one, loc);
  IrStmt *alloc = ir_stmt_new(m, IR_STMT_ALLOC, loc);
  alloc->u.alloc = mark;
  ir_seq_insert(m, k->body, 0, alloc);
  IrExpr *at0[1] = {ir_int(m, 0, loc)};
  ir_seq_insert(m, cons, ti - 1, ir_store_new(m, mark, at0, ir_int(m, 0, loc), loc));
  IrStmt *const *arrives = then_->u.seq.items + 2;
  const int narrives = then_->u.seq.n - 2;
  IrStmt *in_loop = release_held(m, mark, arrives, narrives, loc);
  IrStmt *after_loop = release_held(m, mark, arrives, narrives, loc);
  IrStmt *on_empty = release_held(m, mark, arrives, narrives, loc);
  /* in the k-loop at k = 1 (the previous tile's stores issued a main-loop
   * iteration ago), and after the loop when it ran once */
  IrStmt *at_k1 = ir_seq_new(m, loc);
  ir_seq_push(m, at_k1, in_loop);
  ir_seq_push(m, loop->u.for_.body,
              ir_if_new(m, BIN(EQ, ir_var_ref(m, loop->u.for_.var, loc), ir_int(m, 1, loc)), at_k1, NULL, loc));
  IrStmt *keep = ir_seq_new(m, loc), *otherwise = ir_seq_new(m, loc);
  IrStmt *with_hold = ir_stmt_clone_tile_op(m, store);
  for (int i = 0; i < nheld; i++) with_hold->u.copy.hold[i] = held[i];
  with_hold->u.copy.nhold = nheld;
  with_hold->u.copy.hold_stage = ir_expr_clone(m, stage);
  then_->u.seq.n = 2;
  ir_seq_push(m, then_, after_loop);
  ir_seq_push(m, keep, with_hold);
  IrExpr *at[1] = {ir_int(m, 0, loc)};
  ir_seq_push(m, keep, ir_store_new(m, mark, at, ir_simplify(m, BIN(ADD, ir_expr_clone(m, stage), ir_int(m, 1, loc))), loc));
  ir_seq_push(m, otherwise, on_empty);
  ir_seq_push(m, otherwise, store);
  IrStmt *test = ir_if_new(m, ir_expr_clone(m, guard->u.if_.cond), keep, otherwise, loc);
  test->u.if_.opaque = true;
  body->u.seq.items[si] = test;
}

/* A copy whose region names only block indices, symbols and constants: the
 * same copy for another tile is the copy with other block indices. */
static void note_let_use(const IrExpr *e, void *ctx) {
  if (e->kind == IR_EXPR_VAR && e->u.var->kind == IR_VAR_LET) *(bool *)ctx = true;
}

static bool region_by_block_only(IrStmt *copy) {
  bool uses_let = false;
  ir_stmt_visit_exprs(copy, note_let_use, &uses_let);
  return !uses_let;
}

/* `if (next tile exists) { its block indices; copy.tma ... prefetch(L2) }`
 * for the per-tile copies (attention's Q): the producer pulls the boxes
 * of the tile it runs next into L2 while this tile's loop runs, so the
 * consumers do not wait for them from DRAM at the next tile's start (dim
 * 64 causal, two consumer warpgroups, bf16 on an H100: +13 % at 2048, +6 %
 * at 4096, bench/results/2026-11-25-nvidia-h100-session12-notes.md). The
 * next tile is this one + gridDim.x, or for paired loops the pair's other
 * half, else the next pair's first (the order role_begin walks). */
static IrStmt *next_tile_prefetch(IrModule *m, IrKernel *k, const Role *r, IrStmt *const *copies, int n) {
  SrcLoc loc = copies[0]->loc;
  if (!k->grid_size) k->grid_size = ir_var_new(m, "tc_num_blocks", IR_VAR_GRID_SIZE, DTYPE_I64, loc);
  IrExpr *step = ir_var_ref(m, k->grid_size, loc), *t = ir_var_ref(m, r->loop, loc);
  IrStmt *out = ir_seq_new(m, loc), *then_ = ir_seq_new(m, loc);
  IrExpr *exists, *next;
  if (!r->half) {
    next = BIN(ADD, CLONE(t), step);
    exists = BIN(LT, CLONE(next), CLONE(r->tiles));
  } else {
    /* (pair, half + 1) while the pair has another half, else (pair + gridDim.x, 0) */
    IrExpr *h = ir_var_ref(m, r->half, loc);
    IrExpr *mirror = BIN(SUB, BIN(SUB, CLONE(r->tiles), ir_int(m, 1, loc)), CLONE(t));
    IrExpr *last_half = BIN(GE, BIN(ADD, CLONE(h), ir_int(m, 1, loc)), pair_halves(m, t, mirror, loc));
    IrExpr *pair = let_ref(m, out, "next_pair", ir_select(m, CLONE(last_half), BIN(ADD, CLONE(t), step), CLONE(t), loc), loc);
    IrExpr *nh = ir_select(m, last_half, ir_int(m, 0, loc), BIN(ADD, h, ir_int(m, 1, loc)), loc);
    next = pair_tile(m, k, pair, nh, BIN(SUB, BIN(SUB, CLONE(r->tiles), ir_int(m, 1, loc)), CLONE(pair)), loc);
    exists = BIN(LT, CLONE(pair), ir_call(m, IR_INTRINSIC_CEILDIV, CLONE(r->tiles), ir_int(m, 2, loc), loc));
  }
  IrVar *nt = ir_var_new(m, "next_tile", IR_VAR_LET, DTYPE_I64, loc);
  ir_seq_push(m, then_, pass_let(m, nt, ir_simplify(m, next), loc));
  IrVar *blocks[IR_MAX_GRID];
  tile_indices(m, k, nt, false, then_, blocks);
  for (int i = 0; i < n; i++) {
    IrStmt *c = ir_stmt_clone_tile_op(m, copies[i]);
    c->u.copy.prefetch_l2 = true;
    for (int d = 0; d < k->ngrid; d++)
      if (k->block_vars[d]) pass_subst_var(m, c, k->block_vars[d], ir_var_ref(m, blocks[d], loc));
    ir_seq_push(m, then_, c);
  }
  IrStmt *test = ir_if_new(m, ir_simplify(m, exists), then_, NULL, loc);
  if (!out->u.seq.n) return test; /* no next_pair let to go before it */
  ir_seq_push(m, out, test);
  return out;
}

static void make_persistent(IrModule *m, IrKernel *k, Plan *P) {
  SrcLoc loc = k->loc;
  IrStmt *prod_loop = producer_loop(P);
  /* A tile's ring positions, in the lets the consumers keep (the producer
   * gets its own copies of them below). */
  IrExpr *positions = ir_expr_clone(m, prod_loop->u.for_.extent);
  release_last_stage(m, P);

  IrExpr *two[1] = {ir_int(m, 2, loc)};
  IrBuffer *pipe = ir_buffer_new(m, "tc_pipe", DTYPE_I64, IR_SCOPE_LOCAL, 1, two, loc);
  IrStmt *pipe_alloc = ir_stmt_new(m, IR_STMT_ALLOC, loc);
  pipe_alloc->u.alloc = pipe;
  ir_seq_push(m, P->allocs, pipe_alloc);

  /* Empty barriers of the per-tile buffers: one arrival per consumer warp. */
  IrBuffer *empty[MAX_PER_TILE];
  for (int i = 0; i < P->nper_tile; i++) {
    IrBuffer *b = P->per_tile[i];
    empty[i] = pass_add_mbarriers(m, k, b->tma_bar, arena_printf(m->arena, "%s_empty", b->name), 1, k->producer_warp);
  }

  /* Producer: the per-tile copies (after their release), then its loop. */
  Role pr;
  role_begin(m, k, pipe, P, P->nper_tile > 0, &pr);
  IrVar *renamed[MAX_LETS][2];
  int nrenamed = 0;
  IrStmt *prefetched[MAX_PER_TILE];
  int nprefetched = 0;
  for (int i = 0; i < P->pre->u.seq.n; i++) {
    IrStmt *s = P->pre->u.seq.items[i];
    if (s->kind == IR_STMT_LET) { /* the producer's own copy of the value */
      IrVar *v = ir_var_new(m, s->u.let.var->name, IR_VAR_LET, s->u.let.var->dtype, s->loc);
      ir_seq_push(m, pr.work, pass_let(m, v, ir_expr_clone(m, s->u.let.value), s->loc));
      renamed[nrenamed][0] = s->u.let.var;
      renamed[nrenamed++][1] = v;
      continue;
    }
    if (s->kind != IR_STMT_COPY) continue;
    int e = 0;
    while (P->per_tile[e] != s->u.copy.dst.buf) e++;
    IrStmt *wait = ir_seq_new(m, s->loc);
    IrExpr *parity = BIN(MOD, BIN(ADD, ir_var_ref(m, pr.iter, loc), ir_int(m, 1, loc)), ir_int(m, 2, loc));
    ir_seq_push(m, wait, pass_mbar_stmt(m, IR_STMT_MBAR_WAIT, empty[e], ir_int(m, 0, loc), parity, s->loc));
    ir_seq_push(m, pr.work, ir_if_new(m, BIN(GE, ir_var_ref(m, pr.iter, loc), ir_int(m, 1, loc)), wait, NULL, s->loc));
    ir_seq_push(m, pr.work, s);
    if (!P->cluster && region_by_block_only(s) && nprefetched < MAX_PER_TILE) prefetched[nprefetched++] = s;
  }
  ir_seq_push(m, pr.work, prod_loop);
  /* After this tile's loads: ahead of the loop they held up its first
   * stages (dim 128, 32 KB of Q: 1-2 % slower, session 12 call 18). */
  if (nprefetched) ir_seq_push(m, pr.work, next_tile_prefetch(m, k, &pr, prefetched, nprefetched));
  for (int i = 0; i < nrenamed; i++) pass_subst_var(m, pr.work, renamed[i][0], ir_var_ref(m, renamed[i][1], loc));
  role_end(m, k, pipe, &pr, ir_expr_clone(m, prod_loop->u.for_.extent));

  /* Consumers: lets, waits for the per-tile buffers, fills; their role; the
   * per-tile buffers released; the epilogue. */
  Role co;
  role_begin(m, k, pipe, P, P->nper_tile > 0, &co);
  for (int i = 0; i < P->pre->u.seq.n; i++) {
    IrStmt *s = P->pre->u.seq.items[i];
    if (s->kind == IR_STMT_COPY) continue;
    if (s->kind == IR_STMT_MBAR_WAIT)
      s->u.mbar_wait.parity = BIN(MOD, ir_var_ref(m, co.iter, loc), ir_int(m, 2, loc));
    ir_seq_push(m, co.work, s);
  }
  IrStmt *cons = P->roles->u.roles.consumer;
  for (int i = 0; i < cons->u.seq.n; i++) ir_seq_push(m, co.work, cons->u.seq.items[i]);
  IrStmt *release = ir_seq_new(m, loc);
  bool read_later = false;
  for (int i = 0; i < P->nper_tile; i++) {
    ir_seq_push(m, release, pass_mbar_stmt(m, IR_STMT_MBAR_ARRIVE, empty[i], ir_int(m, 0, loc), NULL, loc));
    read_later |= pass_count_reads(P->post, P->per_tile[i]) > 0;
  }
  if (!read_later)
    for (int i = 0; i < release->u.seq.n; i++) ir_seq_push(m, co.work, release->u.seq.items[i]);
  for (int i = 0; i < P->post->u.seq.n; i++) ir_seq_push(m, co.work, P->post->u.seq.items[i]);
  if (read_later)
    for (int i = 0; i < release->u.seq.n; i++) ir_seq_push(m, co.work, release->u.seq.items[i]);
  role_end(m, k, pipe, &co, positions);
  for (int i = 0; i < P->nper_tile; i++) P->per_tile[i]->empty_bar = empty[i];

  P->roles->u.roles.producer = pr.seq;
  P->roles->u.roles.consumer = co.seq;
  /* The body: the allocations (mbarriers added above sit among them), then the roles. */
  IrStmt *body = ir_seq_new(m, k->body->loc);
  for (int i = 0; i < k->body->u.seq.n; i++)
    if (k->body->u.seq.items[i]->kind == IR_STMT_ALLOC) ir_seq_push(m, body, k->body->u.seq.items[i]);
  for (int i = 0; i < P->allocs->u.seq.n; i++) {
    IrStmt *a = P->allocs->u.seq.items[i];
    bool listed = false;
    for (int j = 0; j < body->u.seq.n && !listed; j++) listed = body->u.seq.items[j] == a;
    if (!listed) ir_seq_push(m, body, a);
  }
  ir_seq_push(m, body, P->roles);
  k->body = body;
  k->persistent = true;
  /* Each role got every per-tile let; the one the other role alone reads
   * (gqa's kv_head in the consumers) would only draw an NVRTC warning. */
  pass_drop_unread_lets(m, k->body);
  k->raster_panel = 0;
  if (!P->cluster) return;
  k->cluster = 2;
  for (int i = 0; i < P->nmulticast; i++) {
    IrBuffer *b = P->multicast[i];
    b->multicast = true;
    b->empty_bar->mbar_cluster = true;
    b->empty_bar->mbar_count *= 2; /* both blocks' consumer warps release it */
  }
}

bool pass_persistent_plans(IrModule *m, IrKernel *k) {
  Plan P = {0};
  if (!k->producer_warp || !make_plan(m, k, &P)) return false; /* make_plan only reads k */
  /* unalias_staging's test, without the rounds it may fall back on; one
   * staged store, the one stage_in_rounds streams behind the next tile
   * (two, as the backward's dK and dV, would each wait for their read in
   * place as TMA stores: 2-3 % slower at dim 64 on an H200 than the
   * cooperative store). */
  int64_t staging;
  int nstaged;
  return unaliased_bytes(&P, &staging, &nstaged) <= SMEM_LIMIT_SM90 && nstaged == 1;
}

bool pass_persistent(IrModule *m, const PassOptions *opts, Diag *diag) {
  (void)diag;
  if (opts->target != TILEC_TARGET_SM90A) return true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    if (!k->producer_warp) continue;
    Plan P = {0};
    if (!make_plan(m, k, &P) || !unalias_staging(m, k, &P)) continue;
    if (opts->cluster_multicast) plan_cluster(k, &P);
    make_persistent(m, k, &P);
    if (!opts->stream_k && !P.cluster) hold_last_stage(m, k, &P);
  }
  return true;
}
