/* lower_tma.c - pass "lower-tma" (GPU, sm_90a): global->shared tile copies as
 * TMA bulk tensor copies completing on mbarriers.
 *
 * Needs: software-pipeline (its pipelined loops, in the shape its contract
 * describes: a prologue `for tc_prologue_k in unrolled(..)` right before the
 * pipelined loop, copy.async fetches, cp_async_commit/cp_async_wait) and
 * swizzle-layout (the destination layouts; in kernels with wgmma every shared
 * buffer is 1024-byte aligned, which the hardware swizzle needs).
 * Guarantees, on sm_90a only (other targets: nothing changes):
 *   - a copy whose tile is a TMA box (below) becomes `copy.tma ... map(i)
 *     mbarrier(B_full)`: one thread issues it; its bytes complete on the
 *     destination's mbarrier for that stage. The kernel gets tensor map i
 *     (tensor parameter, box, swizzle), which the runtime encodes at launch
 *     and passes as a __grid_constant__ parameter. Guards are dropped: TMA
 *     fills the parts of a box outside the tensor with zeros.
 *   - where the pipeline waited for its cp.async groups (cp_async_wait in
 *     the body of a pipelined loop over k with S stages), every thread waits
 *     on each TMA destination's mbarrier instead:
 *         mbar_wait B_full[k % S] parity((k / S) % 2)
 *     (stage k % S has been filled k / S times before); with no cp.async
 *     copy left in the kernel, the commits go and the waits are replaced.
 *     The pipeline's versioned fetch (whole tiles vs. guarded edge tiles)
 *     collapses to one version: TMA needs no guards.
 *   - a copy at the kernel's top level that is the first reference to its
 *     destination is followed by `mbar_wait B_full[0] parity(0)`.
 *   - each TMA destination B gets an mbarrier buffer B_full (i64[stages],
 *     allocated right after B; the CUDA backend initialises it there).
 * A box is: global source of rank <= 5 in 16-bit, 8-bit (FP8) or 32-bit
 * (f32, i32: into a row-major tile) elements
 * whose innermost dimension is the tile's columns and a constant whose
 * bytes are a multiple of 16 (then every compact row stride is too; of
 * declared strides, every constant one must be a multiple of 16 bytes and a
 * dynamic one is checked by the runtime when it encodes the map); at most
 * one other non-index dimension (the rows); extents <= 256; destination a
 * whole shared tile of the same dtype laid out as TMA writes it: row-major
 * rows of a multiple of 16 bytes, or swizzled rows of exactly 32/64/128
 * bytes, or panels of 128, 64 or 32 bytes (64, 32 or 16 columns of a 16-bit
 * type, 128, 64 or 32 of FP8; swizzled rows, one box per panel; a multiple
 * of 8 rows, so every panel starts where its swizzle pattern does).
 * Only pipelines at the kernel's top level (or in a SEQ there) are looked
 * at: inside another loop the parity formula, which counts fills from the
 * start of the kernel, would be wrong; under an `if`, warp-specialize and
 * inline-producer (which look at the top level too) would not split the
 * loop. Both keep cp.async (pass early-exit lifts the body of a
 * kernel-wide uniform `if` to the top level before this pass), and the
 * pass warns at such a loop: the user asked for a pipeline and gets the
 * Ampere-style one. */
#include <string.h>

#include "../simplify.h"
#include "passes.h"

/* ---- which copies are TMA boxes ------------------------------------------- */

/* The tensor map a copy between global region `src` and the shared tile
 * `dst` needs (either direction: TMA loads, and stage-stores' TMA stores),
 * or false when it is not a TMA box. */
bool pass_tma_box(const IrKernel *k, const IrRegion *src, const IrRegion *dst, IrTensorMap *map) {
  const IrBuffer *g = src->buf, *sh = dst->buf;
  if (g->scope != IR_SCOPE_GLOBAL || sh->scope != IR_SCOPE_SHARED || g->dtype != sh->dtype) return false;
  const int es = dtype_size(g->dtype); /* 2 (f16/bf16), 1 (FP8 codes) or 4 (f32, i32) */
  if (es == 4 && sh->layout.kind != IR_LAYOUT_ROW_MAJOR) return false;
  /* An alias starts where its home does: 1024-byte aligned in wgmma kernels. */
  if ((es != 2 && es != 1 && es != 4) || g->rank > 5 || g->param_index < 0 || (sh->alias_of && !k->wgmma)) return false;
  int inner = g->rank - 1;
  int64_t inner_size = 0;
  if (src->is_index[inner]) return false;
  /* The box's first element along the rows must be 16-byte aligned: a
   * start that is not (a column read from data, say) faults the copy
   * (illegal instruction on an H100), so unless the start is provably a
   * multiple of 16 bytes the copy stays on cp.async. */
  if (!ir_int_multiple_of(src->start[inner], 16 / es)) return false;
  /* A dynamic row length gives a row pitch known only at launch: the
   * runtime checks it when it encodes the map, and launches the kernel's
   * cp.async build (TilecOptions.no_tma) when it is not a multiple of 16
   * bytes. */
  /* (n % 16) * es: n * es can overflow for a -D as large as INT64_MAX. */
  if (ir_expr_is_int_const(g->shape[inner], &inner_size) && inner_size % 16 * es % 16 != 0) return false;
  /* Declared strides: a constant one that is not a multiple of 16 bytes
   * keeps the copy on cp.async; a dynamic one is checked at launch
   * (runtime/rt_tma.c finds such a tensor unfit, and the runtime launches
   * the kernel's cp.async build). */
  for (int d = 0; g->strides && d < inner; d++) {
    int64_t st = 0;
    if (ir_expr_is_int_const(g->strides[d], &st) && st % 16 * es % 16 != 0) return false;
  }
  memset(map, 0, sizeof *map);
  map->param = g->param_index;
  int ranges = 0;
  for (int d = 0; d < g->rank; d++) {
    int64_t e = 1;
    if (!src->is_index[d]) {
      if (!ir_expr_is_int_const(src->extent[d], &e) || e < 1 || e > 256) return false;
      ranges++;
    }
    map->box[d] = (int)e;
  }
  if (ranges > 2) return false;
  /* The destination: a whole tile (a stage of a staged buffer, or the buffer). */
  int tile_rank = ir_region_tile_shape(dst, NULL);
  if (tile_rank != ranges) return false;
  for (int d = 0; d < dst->rank; d++) {
    int64_t zero = -1;
    if (dst->is_index[d]) continue;
    if (!ir_expr_is_int_const(dst->start[d], &zero) || zero != 0 || !ir_expr_equal(dst->extent[d], sh->shape[d]))
      return false;
  }
  const int cols = map->box[inner], row_bytes = cols * es;
  const IrLayout *l = &sh->layout;
  if (l->kind == IR_LAYOUT_ROW_MAJOR) {
    if (row_bytes % 16 != 0) return false;
  } else if (l->kind == IR_LAYOUT_SWIZZLED) {
    if (!k->wgmma) return false; /* the hardware swizzle needs 1024-byte aligned tiles */
    if (l->panel_cols) {
      const int pb = l->panel_cols * es; /* a panel's row bytes = its swizzle span */
      int64_t rows = 1;
      for (int d = 0; d < inner; d++)
        if (!src->is_index[d]) rows = map->box[d];
      if ((pb != 32 && pb != 64 && pb != 128) || cols % l->panel_cols != 0 || rows % 8 != 0) return false;
      map->box[inner] = l->panel_cols;
      map->swizzle_bytes = pb;
    } else {
      if (row_bytes != l->swizzle_bytes || (row_bytes != 32 && row_bytes != 64 && row_bytes != 128)) return false;
      map->swizzle_bytes = row_bytes;
    }
  } else {
    return false;
  }
  return true;
}

/* Index of `map` in the kernel's tensor maps (added if new), or -1 when
 * the table is full. */
int pass_tensor_map_index(IrKernel *k, const IrTensorMap *map) {
  for (int i = 0; i < k->ntma_maps; i++)
    if (memcmp(&k->tma_maps[i], map, sizeof *map) == 0) return i;
  if (k->ntma_maps == IR_MAX_TENSOR_MAPS) return -1;
  k->tma_maps[k->ntma_maps] = *map;
  return k->ntma_maps++;
}

/* ---- the mbarriers of a destination -------------------------------------- */

enum { MAX_FILLED = 64 };

typedef struct Lower {
  IrModule *m;
  IrKernel *k;
  /* Which fill place (a pipelined loop, or a top-level copy) owns each
   * destination's mbarriers: a waiter's parity counts the fills of its own
   * place only, so a second place filling the same buffer would wait on a
   * phase the first already completed. Such copies stay cp.async / plain. */
  const IrBuffer *filled[MAX_FILLED];
  const IrStmt *owner[MAX_FILLED];
  int nfilled;
} Lower;

/* The mbarriers of TMA destination b for fill place `owner` (created and
 * allocated right after b on first use), or NULL when b is not allocated at
 * the top level or another place fills it by TMA already. */
static IrBuffer *mbarriers_of(Lower *L, IrBuffer *b, int stages, const IrStmt *owner) {
  for (int i = 0; i < L->nfilled; i++)
    if (L->filled[i] == b) return L->owner[i] == owner ? b->tma_bar : NULL;
  if (L->nfilled == MAX_FILLED || b->tma_bar) return NULL;
  b->tma_bar = pass_add_mbarriers(L->m, L->k, b, arena_printf(L->m->arena, "%s_full", b->name), stages, 1);
  if (b->tma_bar) L->filled[L->nfilled] = b, L->owner[L->nfilled++] = owner;
  return b->tma_bar;
}

/* Turns copy s, filled at place `owner`, into a TMA copy if it is a box;
 * false otherwise. */
static bool make_tma(Lower *L, IrStmt *s, int stages, const IrStmt *owner) {
  IrTensorMap map;
  if (s->kind != IR_STMT_COPY || !pass_tma_box(L->k, &s->u.copy.src, &s->u.copy.dst, &map)) return false;
  int index = pass_tensor_map_index(L->k, &map);
  if (index < 0 || !mbarriers_of(L, s->u.copy.dst.buf, stages, owner)) return false;
  s->u.copy.tma = true;
  s->u.copy.async = true;
  s->u.copy.tma_map = index;
  /* The hardware fills what lies outside the tensor; a start read from
   * data keeps IR_GUARD_LOWER alone: the CUDA back end clamps its
   * coordinate, since the instruction's 32 bits would otherwise truncate a
   * 64-bit start, which could wrap back inside the tensor. */
  for (int d = 0; d < s->u.copy.src.rank; d++) s->u.copy.src.guard[d] &= IR_GUARD_LOWER;
  return true;
}

/* ---- pipelines ------------------------------------------------------------ */

typedef struct Fetches {
  IrStmt *copies[32];
  int n;
} Fetches;

static void collect_async(IrStmt *s, void *ctx) {
  Fetches *f = ctx;
  if (s->kind == IR_STMT_COPY && s->u.copy.async && f->n < 32) f->copies[f->n++] = s;
}

static bool all_tma(const IrStmt *seq) {
  for (int i = 0; i < seq->u.seq.n; i++)
    if (seq->u.seq.items[i]->kind != IR_STMT_COPY || !seq->u.seq.items[i]->u.copy.tma) return false;
  return seq->u.seq.n > 0;
}

/* `if (whole) {copies} else {if (fetch) {copies}}` with TMA copies on both
 * sides is `if (fetch) {copies}`: the box's zero fill is the edge path. */
static IrStmt *collapse_versions(IrStmt *s) {
  if (s->kind != IR_STMT_IF || !s->u.if_.else_ || s->u.if_.else_->u.seq.n != 1) return s;
  IrStmt *edge = s->u.if_.else_->u.seq.items[0];
  if (edge->kind != IR_STMT_IF || edge->u.if_.else_ || !all_tma(s->u.if_.then_) || !all_tma(edge->u.if_.then_))
    return s;
  return edge;
}

/* The body of pipelined loop `loop` (S stages, variable k) after its fetches
 * became TMA copies into the buffers `dsts`: where it waited for cp.async
 * groups, each thread waits on every destination's mbarrier, each wait
 * placed right before the first statement that reads that buffer (so the
 * work on K runs while V still lands). */
static void rewrite_waits(Lower *L, IrStmt *loop, IrBuffer **dsts, int ndsts, bool cp_async_left) {
  IrModule *m = L->m;
  IrStmt *body = loop->u.for_.body;
  const int S = loop->u.for_.num_stages;
  IrVar *kv = loop->u.for_.var;
  bool closing = body->u.seq.n > 0 && body->u.seq.items[body->u.seq.n - 1]->kind == IR_STMT_BARRIER;
  IrStmt *out = ir_seq_new(m, body->loc);
  bool pending[32] = {false};
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = collapse_versions(body->u.seq.items[i]);
    if (s->kind == IR_STMT_ASYNC_COMMIT && !cp_async_left) continue;
    if (s->kind == IR_STMT_ASYNC_WAIT) {
      if (cp_async_left) ir_seq_push(m, out, s);
      for (int j = 0; j < ndsts; j++) pending[j] = true;
      /* The barrier after the wait only published other threads' cp.async
       * bytes; each thread now waits for the TMA bytes itself. Where the
       * body ends in a barrier (readers done before a stage is refilled),
       * that one stays and this one goes. */
      if (!cp_async_left && closing && i + 1 < body->u.seq.n - 1 && body->u.seq.items[i + 1]->kind == IR_STMT_BARRIER)
        i++;
      continue;
    }
    for (int j = 0; j < ndsts; j++) {
      if (!pending[j] || (pass_count_reads(s, dsts[j]) == 0 && i + 1 < body->u.seq.n)) continue;
      SrcLoc loc = s->loc;
      IrExpr *stage = S > 1 ? ir_binary(m, IR_OP_MOD, ir_var_ref(m, kv, loc), ir_int(m, S, loc), loc) : ir_int(m, 0, loc);
      IrExpr *fills = ir_binary(m, IR_OP_DIV, ir_var_ref(m, kv, loc), ir_int(m, S, loc), loc);
      IrExpr *parity = ir_binary(m, IR_OP_MOD, fills, ir_int(m, 2, loc), loc);
      ir_seq_push(m, out, pass_mbar_stmt(m, IR_STMT_MBAR_WAIT, dsts[j]->tma_bar, stage, parity, loc));
      pending[j] = false;
    }
    ir_seq_push(m, out, s);
  }
  loop->u.for_.body = out;
}

static void drop_commits(IrStmt *seq) {
  int n = 0;
  for (int i = 0; i < seq->u.seq.n; i++)
    if (seq->u.seq.items[i]->kind != IR_STMT_ASYNC_COMMIT) seq->u.seq.items[n++] = seq->u.seq.items[i];
  seq->u.seq.n = n;
}

/* Lowers the fetches of one pipeline (optional prologue + pipelined loop). */
static void lower_pipeline(Lower *L, IrStmt *prologue, IrStmt *loop) {
  Fetches f = {{0}, 0};
  if (prologue) ir_visit_stmts(prologue, collect_async, &f);
  ir_visit_stmts(loop, collect_async, &f);
  IrBuffer *dsts[32];
  int ndsts = 0;
  bool cp_async_left = false;
  for (int i = 0; i < f.n; i++) {
    IrBuffer *dst = f.copies[i]->u.copy.dst.buf;
    if (!make_tma(L, f.copies[i], loop->u.for_.num_stages, loop)) {
      cp_async_left = true;
      continue;
    }
    bool seen = false;
    for (int j = 0; j < ndsts; j++) seen |= dsts[j] == dst;
    if (!seen) dsts[ndsts++] = dst;
  }
  if (ndsts == 0) return;
  rewrite_waits(L, loop, dsts, ndsts, cp_async_left);
  if (prologue && !cp_async_left) drop_commits(prologue->u.for_.body);
}

/* Does any statement of the kernel's top level before position `at`
 * reference b? */
static bool referenced_before(const IrKernel *k, const IrBuffer *b, int at) {
  for (int i = 0; i < at; i++) {
    const IrStmt *s = k->body->u.seq.items[i];
    if (s->kind == IR_STMT_ALLOC) continue;
    if (ir_stmt_buffer_refs((IrStmt *)s, b)) return true;
  }
  return false;
}

enum { MAX_PIPELINES = 32 };

/* The pipelines this pass lowers: those at the top level (software-pipeline
 * put each in a SEQ of its own: prologue, loop, then maybe a wgmma_wait),
 * with their prologues (or NULL). Returns how many. */
static int top_level_pipelines(IrStmt *body, IrStmt *loops[MAX_PIPELINES], IrStmt *prologues[MAX_PIPELINES]) {
  int npipes = 0;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    IrStmt *items1[1] = {s};
    IrStmt **items = s->kind == IR_STMT_SEQ ? s->u.seq.items : items1;
    int n = s->kind == IR_STMT_SEQ ? s->u.seq.n : 1;
    for (int j = 0; j < n && npipes < MAX_PIPELINES; j++) {
      IrStmt *loop = items[j];
      if (loop->kind != IR_STMT_FOR || loop->u.for_.kind != IR_FOR_PIPELINED) continue;
      IrStmt *prev = j > 0 ? items[j - 1] : NULL;
      prologues[npipes] = prev && prev->kind == IR_STMT_FOR && prev->u.for_.kind == IR_FOR_UNROLLED ? prev : NULL;
      loops[npipes++] = loop;
    }
  }
  return npipes;
}

/* A pipelined loop this pass leaves alone (not one of the top level's:
 * inside another loop or an `if`) keeps cp.async copies waited on in
 * place, and so gets neither warp specialization nor the overlapped
 * schedule: say so, at the loop. */
typedef struct NestedPipelines {
  Diag *diag;
  IrStmt *top[MAX_PIPELINES];
  int ntop;
} NestedPipelines;

static void warn_if_nested(IrStmt *s, void *ctx) {
  NestedPipelines *w = ctx;
  if (s->kind != IR_STMT_FOR || s->u.for_.kind != IR_FOR_PIPELINED) return;
  for (int i = 0; i < w->ntop; i++)
    if (w->top[i] == s) return;
  diag_warning(w->diag, s->loc,
               "this pipelined loop keeps cp.async copies waited on in place on sm_90a: TMA, warp "
               "specialization and the overlapped schedule take only pipelines at the kernel's top level "
               "(pass early-exit lifts the body of one trailing block-uniform `if`)");
}

static void lower_kernel(Lower *L, Diag *diag) {
  IrStmt *body = L->k->body;
  /* Found first, lowered after: lowering inserts mbarrier allocations into
   * the top level, which would shift a walk over it onto the same loop
   * again. Every other pipelined loop draws the warning. */
  NestedPipelines w = {diag, {0}, 0};
  IrStmt *prologues[MAX_PIPELINES];
  w.ntop = top_level_pipelines(body, w.top, prologues);
  ir_visit_stmts(body, warn_if_nested, &w);
  for (int p = 0; p < w.ntop; p++) lower_pipeline(L, prologues[p], w.top[p]);
  /* Copies at the top level that first fill their destination. */
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (s->kind != IR_STMT_COPY || s->u.copy.async) continue;
    if (referenced_before(L->k, s->u.copy.dst.buf, i) || !make_tma(L, s, 1, s)) continue;
    /* make_tma may have inserted the mbarrier ALLOC before s: find s again. */
    int at = i;
    while (body->u.seq.items[at] != s) at++;
    ir_seq_insert(L->m, body, at + 1,
               pass_mbar_stmt(L->m, IR_STMT_MBAR_WAIT, s->u.copy.dst.buf->tma_bar, ir_int(L->m, 0, s->loc), ir_int(L->m, 0, s->loc), s->loc));
    i = at + 1;
  }
}

bool pass_lower_tma(IrModule *m, const PassOptions *opts, Diag *diag) {
  if (opts->target != TILEC_TARGET_SM90A || opts->no_tma) return true;
  for (int i = 0; i < m->nkernels; i++) {
    Lower L = {m, m->kernels[i], {0}, {0}, 0};
    lower_kernel(&L, diag);
  }
  return true;
}
