/* stage_stores.c - pass "stage-stores" (GPU): 16-byte stores of fragments.
 *
 * Needs: infer-layout and software-pipeline (final shared buffer shapes).
 * Guarantees: a top-level `copy(fragment -> global slice)` of a 16-bit tile
 * whose columns are the tensor's contiguous last dimension goes through
 * shared memory when a shared buffer that is dead from there on can hold the
 * tile:
 *     cp_async_wait(0)                       // nothing still lands in it
 *     alloc S: T[rows, cols] shared swizzled in(<dead buffer>)
 *     copy fragment -> S                     // each thread its elements
 *     copy S -> global                       // 16 bytes per thread and step
 * so the global writes are whole 16-byte chunks instead of one store per
 * element. insert-barriers (after this pass) puts the barriers around S,
 * treating it as the buffer it reuses. The flash-attention output reuses
 * Q_shared and the GEMM's C tile reuses A_shared, so shared memory does not
 * grow.
 * On sm_90a, in kernels with wgmma (every shared buffer 1024-byte aligned),
 * S is laid out as TMA reads it (swizzled rows of 32/64/128 bytes, or
 * panels of 64 columns with the 128-byte swizzle) and, where the global
 * slice is a TMA box (pass_tma_box), `copy S -> global` becomes a TMA store
 * `copy.tma S -> global map(i)`: one thread issues it once every thread's
 * writes to S are fenced for the async proxy and past the barrier, and
 * waits only until S has been read, so the block can finish while the
 * bytes drain to memory; the box's parts outside the tensor are not
 * written. Not under --no-tma. Only in kernels whose main loop keeps a
 * gemm in flight (GEMMs) or that pass persistent will make persistent (one
 * block per SM looping over tiles: no other block runs while this one
 * stores, and the next tile starts while the bytes drain). Measured on an H100
 * (bench/results/2026-11-23-nvidia-h100-session3-notes.md), the TMA store
 * of the GEMM's C tile gained 1-2 %, that of flash attention's O lost 2.5
 * % at causal seq 2048 in the one-block-per-tile kernel of the time (three
 * blocks per SM cover each other's stores), which keeps the cooperative
 * store (the 64-row dim 64 causal kernel, inline-producer folds its
 * roles); in the persistent attention kernels the TMA store does 0.5-3 %
 * more work per clock (H200, bench/results/2026-11-25-nvidia-h200-
 * session17-notes.md). A copy before a returning atomic_add
 * (ATOMIC_FETCH_ADD, an acquire-release point whose release covers the
 * block's earlier global writes) keeps the cooperative store too: a TMA
 * store's bytes still drain after the block moved on, outside what the
 * atomic's fences order.
 * A row that is not a power of two of 16-byte chunks (144, 112, 80
 * columns) cannot be one swizzled row. In a GEMM (a gemm in flight, so a
 * TMA store follows) it is staged as panels of the widest of 64, 32, 16
 * columns that divides it: TMA stores a box per panel, pass persistent a
 * round per panel, and a tile TMA cannot take (a bound row length that is
 * not a multiple of 16 bytes) goes out cooperatively through the same
 * panels. Elsewhere such a row keeps the column-pair store (whether
 * staging would pay there is not measured). */
#include "passes.h"

static void find_use(IrStmt *s, void *ctx) {
  const IrBuffer **want = ctx;
  if (ir_stmt_buffer_refs(s, want[0])) want[1] = want[0];
}

static void find_fetch(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_ATOMIC_FETCH_ADD) *(bool *)ctx = true;
}

static bool used_from(IrStmt *body, int from, const IrBuffer *b) {
  const IrBuffer *want[2] = {b, NULL};
  for (int i = from; i < body->u.seq.n && !want[1]; i++) ir_visit_stmts(body->u.seq.items[i], find_use, want);
  return want[1] != NULL;
}

/* A top-level shared buffer allocated before item `at`, unused from `at` on,
 * of at least `bytes`. */
static IrBuffer *dead_shared(IrStmt *body, int at, int64_t bytes) {
  for (int i = 0; i < at; i++) {
    IrStmt *s = body->u.seq.items[i];
    if (s->kind != IR_STMT_ALLOC) continue;
    IrBuffer *b = s->u.alloc;
    if (b->scope != IR_SCOPE_SHARED || b->alias_of || ir_buffer_bytes_aligned(b) < bytes) continue;
    if (!used_from(body, at, b)) return b;
  }
  return NULL;
}

/* Whether `s` is a staged-store candidate: rows x cols of a 16-bit tile,
 * cols a multiple of 8 (whole 16-byte chunks). */
static bool stageable(const IrStmt *s, int64_t *rows, int64_t *cols) {
  if (s->kind != IR_STMT_COPY) return false;
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  if (src->buf->scope != IR_SCOPE_FRAGMENT || src->buf->layout.frag != IR_FRAG_MMA_C) return false;
  if (dst->buf->scope != IR_SCOPE_GLOBAL || dtype_size(dst->buf->dtype) != 2) return false;
  int dims[IR_MAX_RANK], n = 0;
  for (int d = 0; d < dst->rank; d++)
    if (!dst->is_index[d]) dims[n++] = d;
  if (n != 2 || dims[1] != dst->rank - 1) return false;
  if (!ir_expr_is_int_const(dst->extent[dims[0]], rows) || !ir_expr_is_int_const(dst->extent[dims[1]], cols))
    return false;
  return *cols % 8 == 0 && *cols > 0;
}

/* One swizzled row holds a power-of-two number of 16-byte chunks. */
static bool one_swizzled_row(int64_t cols) {
  const int64_t chunks = cols / 8;
  return (chunks & (chunks - 1)) == 0;
}

/* S's layout as TMA reads it; false when its rows fit none. */
static bool tma_layout(IrBuffer *tile, int64_t cols) {
  if (tile->layout.panel_cols) return true; /* set with the tile */
  const int64_t row_bytes = cols * 2;
  if (row_bytes == 32 || row_bytes == 64 || row_bytes == 128) {
    tile->layout.swizzle_bytes = (int)row_bytes;
    return true;
  }
  if (cols % 64 != 0) return false;
  tile->layout.swizzle_bytes = 128;
  tile->layout.panel_cols = 64;
  return true;
}

static void note_in_flight(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_GEMM && s->u.gemm.wgmma_async) *(bool *)ctx = true;
}

/* Does the kernel keep a gemm in flight across a loop (a GEMM's main loop)? */
static bool has_in_flight_gemm(IrKernel *k) {
  bool found = false;
  ir_visit_stmts(k->body, note_in_flight, &found);
  return found;
}

/* to_global (S -> global) as a TMA store, where its slice is a box whose
 * start cannot be negative: a TMA store at a negative coordinate faults
 * (illegal instruction on an H100) where a load fills zeros, so a start
 * read from data (IR_GUARD_LOWER) keeps the cooperative store, which skips
 * both edges. */
static void make_tma_store(IrKernel *k, IrStmt *to_global) {
  IrTensorMap map;
  for (int d = 0; d < to_global->u.copy.dst.rank; d++)
    if (to_global->u.copy.dst.guard[d] & IR_GUARD_LOWER) return;
  if (!pass_tma_box(k, &to_global->u.copy.dst, &to_global->u.copy.src, &map)) return;
  /* TMA stores whole 16-byte chunks of a row: past the tensor's last
   * column, up to the chunk's end, it writes too (seen on an H100). A row
   * length that is not a multiple of 16 bytes keeps the cooperative store;
   * a dynamic one is checked by the runtime (map.store). */
  const IrBuffer *g = to_global->u.copy.dst.buf;
  int64_t row = 0;
  if (ir_expr_is_int_const(g->shape[g->rank - 1], &row) && row * dtype_size(g->dtype) % 16 != 0) return;
  map.store = true;
  int index = pass_tensor_map_index(k, &map);
  if (index < 0) return;
  to_global->u.copy.tma = true;
  to_global->u.copy.tma_map = index;
  for (int d = 0; d < to_global->u.copy.dst.rank; d++) to_global->u.copy.dst.guard[d] = 0;
}

bool pass_stage_stores(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int ki = 0; ki < m->nkernels; ki++) {
    IrKernel *k = m->kernels[ki];
    const bool tma_target = opts->target == TILEC_TARGET_SM90A && !opts->no_tma && k->wgmma;
    const bool in_flight = tma_target && has_in_flight_gemm(k);
    IrStmt *body = k->body;
    /* Staged stores TMA may take (no returning atomic after them): at most one per statement. */
    IrStmt **tma_candidates = ARENA_NEW_ARRAY(m->arena, IrStmt *, body->u.seq.n);
    int ncandidates = 0;
    int last_fetch = -1; /* the last top-level statement that holds a returning atomic */
    for (int i = 0; i < body->u.seq.n; i++) {
      bool found = false;
      ir_visit_stmts(body->u.seq.items[i], find_fetch, &found);
      if (found) last_fetch = i;
    }
    for (int i = 0; i < body->u.seq.n; i++) {
      IrStmt *s = body->u.seq.items[i];
      int64_t rows, cols;
      if (!stageable(s, &rows, &cols)) continue;
      /* Other rows as panels of the widest of 64, 32, 16 columns that
       * divides them (swizzle-layout's rule for a whole row), for a GEMM's
       * TMA store only; 0 where none does (24, 40 columns: odd chunks). */
      int64_t panel = 0;
      if (!one_swizzled_row(cols) &&
          (!in_flight || i <= last_fetch || !(panel = pass_nsplit_panel_cols((int)cols, (int)cols, 2))))
        continue;
      const IrBuffer *dstbuf = s->u.copy.dst.buf;
      IrBuffer *home = dead_shared(body, i, rows * cols * 2);
      if (!home) continue;
      IrExpr *shape[2] = {ir_int(m, rows, s->loc), ir_int(m, cols, s->loc)};
      IrBuffer *tile = ir_buffer_new(m, arena_printf(m->arena, "tc_stage_%d", m->next_id), dstbuf->dtype,
                                     IR_SCOPE_SHARED, 2, shape, s->loc);
      tile->alias_of = home;
      tile->layout.kind = IR_LAYOUT_SWIZZLED;
      tile->layout.swizzle_bytes = (int)(panel ? panel : cols) * 2;
      tile->layout.panel_cols = (int)panel;
      IrStmt *wait = ir_stmt_new(m, IR_STMT_ASYNC_WAIT, s->loc);
      wait->u.async_pending = 0;
      IrStmt *alloc = ir_stmt_new(m, IR_STMT_ALLOC, s->loc);
      alloc->u.alloc = tile;
      IrStmt *to_tile = ir_stmt_new(m, IR_STMT_COPY, s->loc);
      to_tile->u.copy.src = s->u.copy.src;
      to_tile->u.copy.dst = ir_region_whole(m, tile, s->loc);
      IrStmt *to_global = ir_stmt_new(m, IR_STMT_COPY, s->loc);
      to_global->u.copy.src = ir_region_whole(m, tile, s->loc);
      to_global->u.copy.dst = s->u.copy.dst;
      if (tma_target && i > last_fetch) tma_candidates[ncandidates++] = to_global;
      /* Replace item i by the four statements. */
      IrStmt *seq4[4] = {wait, alloc, to_tile, to_global};
      for (int k = 0; k < 3; k++) ir_seq_push(m, body, NULL);
      for (int k = body->u.seq.n - 1; k > i + 3; k--) body->u.seq.items[k] = body->u.seq.items[k - 3];
      for (int k = 0; k < 4; k++) body->u.seq.items[i + k] = seq4[k];
      if (last_fetch > i) last_fetch += 3;
      i += 3;
    }
    /* Asked once the staging buffers exist: persistent's plan counts them
     * (it streams one behind the next tile; more would each wait for their
     * read in place). */
    if (ncandidates == 0 || !(in_flight || pass_persistent_plans(m, k))) continue;
    for (int c = 0; c < ncandidates; c++) {
      IrStmt *to_global = tma_candidates[c];
      IrBuffer *tile = to_global->u.copy.src.buf;
      int64_t cols = 0;
      if (ir_expr_is_int_const(tile->shape[1], &cols) && tma_layout(tile, cols)) make_tma_store(k, to_global);
    }
  }
  return true;
}
