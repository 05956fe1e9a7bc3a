/* tma.c - TMA copies and their mbarriers (sm_90a; pass lower-tma).
 *
 * A copy.tma is issued by one thread: it expects the tile's bytes on its
 * stage's mbarrier, then starts one box per panel of 64, 32 or 16 columns (or one for the
 * whole tile) through the kernel's __grid_constant__ tensor map tc_tmap_<i>
 * (runtime/device/tilec_tma.cuh; the runtime encodes the maps at launch,
 * runtime/rt_tma.c). An mbar_wait makes every thread wait for a stage's
 * bytes; the mbarriers are created where their buffer is allocated.
 * A TMA store (copy.tma from a shared tile to global, stage-stores) is
 * issued by one thread after the barrier that follows the threads' writes
 * (each writer fenced them for the async proxy before it): one box per
 * panel, a bulk group, and a wait until the tile has been READ, so the
 * tile may be reused and the block may exit while the bytes go out.
 * A fragment's store in rounds (IrStmt copy.via, pass persistent) writes
 * one panel at a time into its slots and stores each (emit_staged_store).
 * In a 2-block cluster (pass persistent) a multicast ring's tile is loaded
 * half by each block into both, and its empty barriers are released in
 * both blocks (tc_mbar_arrive_pair). */
#include "cuda_emit.h"
#include "../../simplify.h"

void cuda_emit_mbarrier_init(Cuda *C, const IrBuffer *bar, int depth) {
  /* One thread creates the stage mbarriers (one arrival each: the issuing
   * thread's arrive.expect_tx) and publishes them to the TMA unit; the block
   * barrier that cuda_emit_setup_sync emits before the first statement keeps
   * everyone from waiting on them earlier. */
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  sb_puts(o, "if (tc_tid == 0) {\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "for (int tc_i = 0; tc_i < %lld; ++tc_i) tc_mbar_init(tc_smem_addr(%s + tc_i), %d);\n",
            (long long)cuda_const(bar->shape[0]), bar->name, bar->mbar_count > 1 ? bar->mbar_count : 1);
  cuda_indent(C, depth + 1);
  sb_puts(o, "tc_mbar_fence_init();\n");
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
  /* In a cluster the other block arrives on and copies into this one's
   * barriers: both must have created theirs first. */
  const int sync = C->k->cluster > 1 ? 2 : 1;
  if (C->setup_sync < sync) C->setup_sync = sync;
}

void cuda_emit_setup_sync(Cuda *C, int depth) {
  if (!C->setup_sync) return;
  cuda_indent(C, depth);
  sb_puts(C->out, C->setup_sync == 2 ? "tc_cluster_sync();  // the set-up above is visible\n"
                                     : "__syncthreads();  // the set-up above is visible\n");
  C->setup_sync = 0;
}

/* The stage's mbarrier of a TMA copy's destination, as a .shared address. */
static void barrier_addr(Cuda *C, StrBuf *sb, const IrRegion *dst) {
  const IrBuffer *bar = dst->buf->tma_bar;
  sb_printf(sb, "tc_smem_addr(%s + (", bar->name);
  if (cuda_const(bar->shape[0]) > 1) cuda_emit_expr(C, sb, dst->start[0]);
  else sb_puts(sb, "0");
  sb_puts(sb, "))");
}

/* The coordinates (innermost first) of the box of global region g that
 * panel p covers. A start read from data (IR_GUARD_LOWER) is clamped into
 * [-extent, size] first (tc_tma_coord): a box wholly outside the tensor
 * stays wholly outside, where the plain (int) cast could wrap a 64-bit
 * start back inside it. */
static void box_coords(Cuda *C, StrBuf *o, const IrRegion *g, int64_t panel_cols, int64_t p) {
  const int inner = g->buf->rank - 1;
  sb_puts(o, "{");
  for (int d = inner; d >= 0; d--) {
    sb_puts(o, d == inner ? "" : ", ");
    if (g->guard[d] & IR_GUARD_LOWER) {
      sb_puts(o, "tc_tma_coord(");
      cuda_emit_expr(C, o, g->start[d]);
      sb_puts(o, ", ");
      cuda_emit_expr(C, o, g->buf->shape[d]);
      sb_printf(o, ", %lld)", (long long)cuda_const(g->extent[d]));
      if (d == inner && p) sb_printf(o, " + %lld", (long long)(p * panel_cols));
    } else {
      sb_puts(o, "(int)(");
      cuda_emit_expr(C, o, g->start[d]);
      if (d == inner && p) sb_printf(o, " + %lld", (long long)(p * panel_cols));
      sb_puts(o, ")");
    }
  }
  sb_puts(o, "}");
}

/* The rows and columns of the tile that TMA copy s moves through global
 * region g. */
static void tile_extent(const IrRegion *g, int64_t *rows, int64_t *cols) {
  int gd[IR_MAX_RANK];
  int n = cuda_tile_dims(g, gd);
  *rows = n == 2 ? cuda_const(g->extent[gd[0]]) : 1;
  *cols = cuda_const(g->extent[g->buf->rank - 1]);
}

/* One `fn(shared panel p, &map, box coordinates<tail>);` per panel of the
 * tile that TMA copy s moves between global region g and shared tile sh
 * (a load: tail ", tc_bar"; a store: none; sh NULL: no shared operand, a
 * prefetch into L2); half >= 0: only that half of the panels (a multicast
 * load's share of one block of a pair). */
static void emit_boxes(Cuda *C, const IrStmt *s, const IrRegion *g, const IrRegion *sh, const char *fn,
                       const char *tail, int depth, int half) {
  const IrTensorMap *map = &C->k->tma_maps[s->u.copy.tma_map];
  const int64_t box_cols = map->box[g->buf->rank - 1];
  int64_t rows, cols;
  tile_extent(g, &rows, &cols);
  StrBuf *o = C->out;
  const int64_t panels = cols / box_cols;
  for (int64_t p = 0; p < panels; p++) {
    if (half >= 0 && p * 2 / panels != half) continue;
    cuda_indent(C, depth);
    sb_printf(o, "%s(", fn);
    if (sh) {
      sb_puts(o, "tc_smem_addr(");
      cuda_tile_base(C, o, sh);
      if (p) sb_printf(o, " + %lld", (long long)(p * rows * box_cols));
      sb_puts(o, "), ");
    }
    sb_printf(o, "&tc_tmap_%d, ", s->u.copy.tma_map);
    box_coords(C, o, g, box_cols, p);
    sb_printf(o, "%s);\n", tail);
  }
}

/* The barrier among the threads that write the staging slots. */
static void writers_barrier(Cuda *C, int depth) {
  cuda_indent(C, depth);
  if (C->consumers_only) sb_printf(C->out, "tc_consumer_sync<%d>();\n", C->threads);
  else sb_puts(C->out, "__syncthreads();\n");
}

/* A fragment's TMA store in rounds (`copy.tma F -> G map(i) via(S)`, pass
 * persistent): S is [slots, rows, w], round p writes F's columns
 * [p w, (p + 1) w) into slot p % slots as 32-bit pairs (copy.c's pair
 * store, restricted to the column slots of that panel: an MMA_C fragment
 * whose warps split only the rows holds column c in slot (c / 8) * 2 + c %
 * 2), fences them for the async proxy, and after a barrier among the
 * writers thread 0 stores the panel (one box, tensor map i) and commits it.
 * Only the issuing thread can wait for its stores to have READ their slots,
 * and the others learn it at a barrier, so a slot's reuse is waited for as
 * late as a barrier allows:
 * - within the tile, round p + 1 rewrites the slot of round p + 1 - slots,
 *   and round p's barrier is the last before it: thread 0 waits there until
 *   at most slots - 2 newer stores are unread (none when the tile fits in
 *   the slots);
 * - the first rounds of the next tile rewrite this tile's slots: the store
 *   opens with thread 0 waiting for every earlier store and a barrier. Those
 *   stores were issued a main loop ago, so the wait is normally free, and
 *   the last rounds' global writes drain under the next tile's main loop
 *   instead of holding the tensor cores (when all blocks end their tiles
 *   together they write at once: on an H100 each exposed wait cost about a
 *   microsecond per tile, bench/results/2026-11-24-nvidia-h100-session9-notes.md).
 * When no slot is written twice in the tile (it fits the slots, or the
 * held stage's and S's), the rounds share one fence and one barrier, and
 * thread 0 then issues every round's store as one commit group.
 * The consumers' role ends with one more wait (the block must not exit
 * while TMA still reads its shared memory). */
enum { STAGED_ROUNDS_MAX = 64 }; /* 512 columns in rounds of 8 */

/* Whether a round of column slots [cs_begin, cs_end) of MMA_C fragment
 * `frag` can go out by stmatrix.x4: whole pairs of 8-row halves and pairs
 * of 8-column groups, into a 16-bit slot (tc_smem_index keeps each 8
 * columns' 16-byte chunk whole). */
static bool stmatrix_fits(const IrBuffer *frag, const IrBuffer *dst, int cs_begin, int cs_end) {
  const IrLayout *l = &frag->layout;
  return l->frag == IR_FRAG_MMA_C && l->rows_local % 2 == 0 && cs_begin % 4 == 0 && (cs_end - cs_begin) % 4 == 0 &&
         cuda_is_16bit(dst->dtype);
}

/* The round as stmatrix.x4 (tc_stmatrix_x4): one instruction stores 8 rows x
 * 16 columns of the warp's 16-row slice, which as pair stores took four a
 * thread. Tile i of the x4 is (8-row half i % 2, column group g + i / 2);
 * lane L gives row L % 8 of tile L / 8. Registers: the pairs (slots 2 g,
 * 2 g + 1) of each half, as the fragment holds them. */
static void emit_stmatrix_round(Cuda *C, const IrBuffer *frag, const IrBuffer *dst, IrExpr *const *idx, int cs_begin,
                                int cs_end, long long col_offset, const char *comment, SrcLoc loc, int depth) {
  const IrLayout *l = &frag->layout;
  StrBuf *o = C->out;
  const char *pack = dst->dtype == DTYPE_F16 ? "tc_pack_f16x2" : "tc_pack_bf16x2";
  const int cl = l->cols_local;
  char what[200];
  snprintf(what, sizeof what, "%s (stmatrix.x4: 8 rows x 16 columns each)", comment);
  cuda_open_unrolled_for(C, depth, "tc_q", 0, l->rows_local / 2, 1, what);
  cuda_indent(C, depth + 1);
  sb_puts(o, "[[maybe_unused]] const long long tc_r = (");
  cuda_warp_m(o, l);
  sb_printf(o, " * %d + tc_q * 16 + ((tc_lane / 8) %% 2) * 8 + tc_lane %% 8);\n", l->rows / l->warps_m);
  cuda_open_unrolled_for(C, depth + 1, "tc_cs", cs_begin, cs_end, 4, NULL);
  cuda_indent(C, depth + 2);
  sb_puts(o, "[[maybe_unused]] const long long tc_c = (");
  cuda_warp_n(o, l);
  sb_printf(o, " * %d + (tc_cs / 2 + tc_lane / 16) * 8)", l->cols / l->warps_n);
  if (col_offset) sb_printf(o, " - %lld", col_offset);
  sb_puts(o, ";\n");
  cuda_indent(C, depth + 2);
  sb_puts(o, "tc_stmatrix_x4(&");
  cuda_emit_element(C, o, dst, idx, dst->rank, loc);
  for (int i = 0; i < 4; i++) {
    const int half = i % 2, pair = 2 * (i / 2);
    sb_printf(o, ", %s(%s[(2 * tc_q + %d) * %d + tc_cs + %d], %s[(2 * tc_q + %d) * %d + tc_cs + %d])", pack,
              frag->name, half, cl, pair, frag->name, half, cl, pair + 1);
  }
  sb_puts(o, ");\n");
  for (int d = depth + 1; d >= depth; d--) {
    cuda_indent(C, d);
    sb_puts(o, "}\n");
  }
}

static void emit_staged_store(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *frag = &s->u.copy.src, *g = &s->u.copy.dst;
  const IrBuffer *via = s->u.copy.via;
  const IrLayout *l = &frag->buf->layout;
  StrBuf *o = C->out;
  const int64_t slots = cuda_const(via->shape[0]), rows = cuda_const(via->shape[1]), w = cuda_const(via->shape[2]);
  const int64_t cols = cuda_const(g->extent[g->buf->rank - 1]);
  const int64_t nrounds = w > 0 ? cols / w : 0;
  const IrTensorMap *map = &C->k->tma_maps[s->u.copy.tma_map];
  /* Two slots at least unless the tile is one round; no more than rounds. */
  if (frag->buf->dtype != DTYPE_F32 || !cuda_is_16bit(via->dtype) || l->kind != IR_LAYOUT_FRAGMENT ||
      l->frag != IR_FRAG_MMA_C || l->warps_n != 1 || w <= 0 || w % 8 != 0 || cols % w != 0 || slots > nrounds ||
      slots < (nrounds > 1 ? 2 : 1) || nrounds > STAGED_ROUNDS_MAX || (int64_t)l->cols_local * 4 != cols || l->rows != rows ||
      map->box[g->buf->rank - 1] != w) {
    cuda_fail(C, s->loc, "TMA store of fragment '%s' in rounds through '%s': unsupported layout", frag->buf->name,
              via->name);
    return;
  }
  /* Held ring stages (IrStmt copy.hold, pass persistent): their slots take
   * the first rounds, each ring's stage viewed as whole [rows, w] slots. */
  const int64_t slot_elems = rows * w;
  IrBuffer held_view[2];
  int64_t per_stage[2] = {0, 0}, nheld = 0;
  for (int i = 0; i < s->u.copy.nhold; i++) {
    const IrBuffer *ring = s->u.copy.hold[i];
    int64_t stage_elems = 1;
    for (int d = 1; d < ring->rank; d++) stage_elems *= cuda_const(ring->shape[d]);
    held_view[i] = *via;
    held_view[i].name = ring->name;
    per_stage[i] = stage_elems / slot_elems;
    nheld += per_stage[i];
  }
  if (nheld > nrounds) nheld = nrounds;
  if (nheld && nrounds - nheld > slots) {
    cuda_fail(C, s->loc, "TMA store of fragment '%s': the held stage and '%s' leave rounds without a slot",
              frag->buf->name, via->name);
    return;
  }
  IrModule *m = (IrModule *)C->m;
  IrVar rv = {.name = "tc_r", .kind = IR_VAR_LOOP, .dtype = DTYPE_I64};
  IrVar cv = {.name = "tc_c", .kind = IR_VAR_LOOP, .dtype = DTYPE_I64};
  const char *src = frag->buf->name;
  const int64_t per_round = w / 4; /* column slots of a thread per panel */
  cuda_indent(C, depth);
  sb_printf(o, "{  // copy.tma %s -> %s (store) in %lld rounds of %lld columns through %s's %lld slots\n", src,
            g->buf->name, (long long)nrounds, (long long)w, via->name, (long long)slots);
  cuda_indent(C, depth + 1);
  sb_puts(o, "const int tc_lane = (int)((unsigned)tc_tid % 32u);  // known non-negative: the swizzle folds\n");
  cuda_indent(C, depth + 1);
  sb_puts(o, "if (tc_tid == 0) tc_tma_store_wait_read();  // the last tile's stores have read the slots\n");
  writers_barrier(C, depth + 1);
  /* Every round in a slot of its own: one fence and barrier for all. */
  const bool one_barrier = nrounds - nheld <= slots;
  const IrBuffer *dst[STAGED_ROUNDS_MAX];
  IrExpr *slot[STAGED_ROUNDS_MAX];
  for (int64_t p = 0; p < nrounds; p++) {
    /* round p's slot: held slot p (ring i's stage, slot j of it), else via's */
    char where[64];
    if (p >= nheld) {
      dst[p] = via;
      slot[p] = ir_int(m, (p - nheld) % slots, s->loc);
      snprintf(where, sizeof where, "slot %lld", (long long)((p - nheld) % slots));
    } else {
      int i = 0;
      int64_t j = p;
      while (j >= per_stage[i]) j -= per_stage[i++];
      dst[p] = &held_view[i];
      slot[p] = ir_simplify(m, ir_binary(m, IR_OP_ADD,
                                         ir_binary(m, IR_OP_MUL, ir_expr_clone(m, s->u.copy.hold_stage),
                                                   ir_int(m, per_stage[i], s->loc), s->loc),
                                         ir_int(m, j, s->loc), s->loc));
      snprintf(where, sizeof where, "the held stage of %s", dst[p]->name);
    }
    IrExpr *idx[3] = {slot[p], ir_var_ref(m, &rv, s->loc), ir_var_ref(m, &cv, s->loc)};
    char round[160];
    snprintf(round, sizeof round, "round %lld: columns %lld..%lld -> %s", (long long)p, (long long)(p * w),
             (long long)(p * w + w - 1), where);
    const int cs_begin = (int)(p * per_round), cs_end = (int)((p + 1) * per_round);
    if (stmatrix_fits(frag->buf, dst[p], cs_begin, cs_end))
      emit_stmatrix_round(C, frag->buf, dst[p], idx, cs_begin, cs_end, (long long)(p * w), round, s->loc, depth + 1);
    else
      cuda_emit_pair_nest(C, frag->buf, dst[p], idx, cs_begin, cs_end, (long long)(p * w), round, s->loc, depth + 1);
    if (one_barrier && p + 1 < nrounds) continue;
    cuda_indent(C, depth + 1);
    sb_printf(o, "tc_fence_proxy_async();\n");
    if (!nheld && p + 1 < nrounds && p + 1 >= slots) {
      cuda_indent(C, depth + 1);
      sb_printf(o, "if (tc_tid == 0) tc_tma_store_wait_read<%lld>();  // round %lld's slot has been read\n",
                (long long)(slots - 2), (long long)(p + 1 - slots));
    }
    writers_barrier(C, depth + 1);
    cuda_indent(C, depth + 1);
    sb_printf(o, "if (tc_tid == 0) {\n");
    for (int64_t q = one_barrier ? 0 : p; q <= p; q++) {
      cuda_indent(C, depth + 2);
      if (dst[q] == via) {
        sb_printf(o, "tc_tma_store(tc_smem_addr(%s + %lld), &tc_tmap_%d, ", via->name,
                  (long long)((q - nheld) % slots * slot_elems), s->u.copy.tma_map);
      } else {
        sb_printf(o, "tc_tma_store(tc_smem_addr(%s + (", dst[q]->name);
        cuda_emit_expr(C, o, slot[q]);
        sb_printf(o, ") * %lld), &tc_tmap_%d, ", (long long)slot_elems, s->u.copy.tma_map);
      }
      box_coords(C, o, g, w, q);
      sb_puts(o, ");\n");
    }
    cuda_indent(C, depth + 2);
    sb_puts(o, "tc_tma_store_commit();\n");
    cuda_indent(C, depth + 1);
    sb_puts(o, "}\n");
  }
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}

bool cuda_has_staged_store(const IrStmt *s) {
  if (!s) return false;
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++)
      if (cuda_has_staged_store(s->u.seq.items[i])) return true;
    return false;
  case IR_STMT_FOR: return cuda_has_staged_store(s->u.for_.body);
  case IR_STMT_IF: return cuda_has_staged_store(s->u.if_.then_) || cuda_has_staged_store(s->u.if_.else_);
  case IR_STMT_COPY: return s->u.copy.tma && s->u.copy.via;
  default: return false;
  }
}

/* A prefetch (`copy.tma G -> S map(i) prefetch(L2)`): G's boxes into L2. */
static void emit_prefetch(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  sb_printf(o, "%s {  // copy.tma %s -> L2 (prefetch: the boxes %s will take)\n", C->in_producer ? "" : "if (tc_tid == 0)",
            s->u.copy.src.buf->name, s->u.copy.dst.buf->name);
  emit_boxes(C, s, &s->u.copy.src, NULL, "tc_tma_prefetch_l2", "", depth + 1, -1);
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}

void cuda_emit_tma_copy(Cuda *C, const IrStmt *s, int depth) {
  if (s->u.copy.prefetch_l2) {
    emit_prefetch(C, s, depth);
    return;
  }
  const bool store = s->u.copy.dst.buf->scope == IR_SCOPE_GLOBAL;
  if (store && s->u.copy.via) {
    emit_staged_store(C, s, depth);
    return;
  }
  const IrRegion *g = store ? &s->u.copy.dst : &s->u.copy.src, *sh = store ? &s->u.copy.src : &s->u.copy.dst;
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  if (store) {
    sb_printf(o, "if (tc_tid == 0) {  // copy.tma %s -> %s (store)\n", sh->buf->name, g->buf->name);
    emit_boxes(C, s, g, sh, "tc_tma_store", "", depth + 1, -1);
    cuda_indent(C, depth + 1);
    sb_puts(o, "tc_tma_store_commit();\n");
    cuda_indent(C, depth + 1);
    sb_puts(o, "tc_tma_store_wait_read();\n");
  } else {
    /* The producer role runs on one thread already. */
    sb_printf(o, "%s {  // copy.tma %s -> %s\n", C->in_producer ? "" : "if (tc_tid == 0)", g->buf->name, sh->buf->name);
    cuda_indent(C, depth + 1);
    sb_puts(o, "const unsigned tc_bar = ");
    barrier_addr(C, o, sh);
    sb_puts(o, ";\n");
    int64_t rows, cols;
    tile_extent(g, &rows, &cols);
    cuda_indent(C, depth + 1);
    sb_printf(o, "tc_mbar_arrive_expect_tx(tc_bar, %lld);\n", (long long)(rows * cols * dtype_size(g->buf->dtype)));
    if (sh->buf->multicast) {
      /* Each block of the pair loads half the boxes into both blocks; every
       * block's barrier expects the whole tile. */
      cuda_indent(C, depth + 1);
      sb_puts(o, "if (tc_cluster_rank() == 0) {\n");
      emit_boxes(C, s, g, sh, "tc_tma_load_multicast", ", tc_bar", depth + 2, 0);
      cuda_indent(C, depth + 1);
      sb_puts(o, "} else {\n");
      emit_boxes(C, s, g, sh, "tc_tma_load_multicast", ", tc_bar", depth + 2, 1);
      cuda_indent(C, depth + 1);
      sb_puts(o, "}\n");
    } else {
      emit_boxes(C, s, g, sh, "tc_tma_load", ", tc_bar", depth + 1, -1);
    }
  }
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}

/* One arrival per warp (lane 0, after the whole warp is done reading). */
void cuda_emit_mbar_arrive(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  /* A ring shared by a cluster pair is refilled by both blocks' producers:
   * release it in both blocks. */
  const char *fn = s->u.mbar_wait.bar->mbar_cluster ? "tc_mbar_arrive_pair" : "tc_mbar_arrive";
  if (s->u.mbar_wait.after_stores) { /* one thread for every warp, once its stores have read */
    sb_printf(o, "if (tc_tid == 0) { tc_tma_store_wait_read(); tc_mbar_arrive_count(tc_smem_addr(%s + (",
              s->u.mbar_wait.bar->name);
    cuda_emit_expr(C, o, s->u.mbar_wait.stage);
    sb_printf(o, ")), %d); }\n", s->u.mbar_wait.bar->mbar_count);
    return;
  }
  sb_printf(o, "__syncwarp(); if (tc_lane == 0) %s(tc_smem_addr(%s + (", fn, s->u.mbar_wait.bar->name);
  cuda_emit_expr(C, o, s->u.mbar_wait.stage);
  sb_puts(o, ")));\n");
}

void cuda_emit_mbar_wait(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  sb_printf(o, "tc_mbar_wait(tc_smem_addr(%s + (", s->u.mbar_wait.bar->name);
  cuda_emit_expr(C, o, s->u.mbar_wait.stage);
  sb_puts(o, ")), (unsigned)(");
  cuda_emit_expr(C, o, s->u.mbar_wait.parity);
  sb_puts(o, "));\n");
}
