/* infer_layout.c - pass "infer-layout" (GPU): spreads fragments over threads.
 *
 * Needs: check-shapes (constant fragment shapes and thread count).
 * Guarantees: every FRAGMENT buffer has layout.kind == IR_LAYOUT_FRAGMENT with
 * the fields of docs/gpu-codegen.md filled in, or an error names the buffer:
 *  - a gemm accumulator gets the mma.sync m16n8k16 accumulator layout
 *    (MMA_C) for the warp split its policy asks for; a fragment used as gemm
 *    operand A gets MMA_C over [M, K] with the same warp rows;
 *  - copies between fragments, and parallel loops that index two 2-D
 *    fragments with the same [i, j], give both the same layout;
 *  - a 1-D fragment reduced into, or indexed [i] beside a 2-D fragment
 *    indexed [i, j], becomes a row vector of that fragment's row mapping;
 *  - a 1-D fragment indexed [j] beside a 2-D fragment indexed [i, j] (a
 *    bias or a norm weight broadcast over the rows) becomes a column vector
 *    of that fragment's column mapping: each thread holds the columns it
 *    reads, replicated over the threads that share them;
 *  - any 2-D fragment still without a layout gets ROWGROUP, padded (the
 *    last column slot of some threads lies past the edge, and is skipped)
 *    when its columns do not divide by the row group;
 *  - on sm_90a, a gemm whose operands wgmma can read (wgmma_fits)
 *    is marked gemm.wgmma and gets the one-slice-per-warp MMA_C split;
 *    with a K-major shared A, also a gemm of two 16-row slices per warp
 *    (wgmma_two_blocks: a warpgroup owns two m64 blocks);
 *  - on sm_90a, a 16-bit gemm of policy square that wgmma could run but
 *    for its rows (M = 64 gm over 4 gm x gn warps, gn > 1: the attention
 *    backward's dQ^T [64, 96] over 8 warps) is marked gemm.wgmma with the
 *    warpgroups splitting N (wgmma_n_split): MMA_C over (4 gm) x gn warps
 *    in warp_order WARPGROUPS (warpgroup g at (g / gn, g % gn), its warps
 *    the 16-row slices in order: wgmma's layout), each warpgroup's N / gn
 *    a wgmma width and its slice of B addressable by a descriptor (a
 *    [N, K] B: rows from a multiple of 8; a [K, N] B: from a whole panel,
 *    which swizzle-layout then guarantees, pass_nsplit_panel_cols). That
 *    order is kept only where every use of the fragments it reaches can
 *    take it: a layout conflict involving it (a row vector read beside
 *    fragments of both row mappings included), or a reduction over it,
 *    makes the pass start the kernel over without N splits, so no kernel
 *    is refused for it;
 *    an FP8 gemm that wgmma cannot read (B not [N, K] with transpose_B,
 *    the wrong warp split or K, ...) is an error that names the reason;
 *  - first, a gemm the GPU templates cannot read as written is given
 *    shared operands through staging statements inserted before it (and
 *    visible in this pass's dump): a transpose_A operand in a fragment is
 *    copied into a shared [K, M] tile (tc_a_*), a B operand in a fragment
 *    into a shared tile (tc_b_*). A shared transpose_A operand stays as it
 *    is: the templates read the [K, M] tile transposed (ldmatrix .trans;
 *    wgmma's transpose bit for A, M-major).
 * Constraints are propagated to a fixpoint, so statement order does not
 * matter. A thread count that is not a multiple of 32 is rounded up to
 * one (whole warps; the dumps show the count the kernel launches with). */
#include <string.h>

#include "passes.h"

typedef struct Infer {
  IrModule *m;
  IrKernel *k;
  Diag *diag;
  int threads, warps;
  bool sm90a; /* target has wgmma */
  bool changed;
  bool failed;
  /* Gemms whose staged operand is rewritten every iteration of a loop
   * software-pipeline may overlap (num_stages >= 3): they stay mma.sync, as
   * an in-flight wgmma would still read the staging tile the next iteration
   * overwrites. */
  const IrStmt *no_wgmma[16];
  int nno_wgmma;
  /* wgmma gemms whose warpgroups split N (wgmma_n_split) are allowed; a
   * fragment use that cannot take that layout sets nsplit_conflict (and
   * failed, without a diagnostic), and the kernel is inferred again with
   * this off. */
  bool nsplit;
  bool nsplit_conflict;
} Infer;

static bool is_fragment(const IrBuffer *b) { return b && b->scope == IR_SCOPE_FRAGMENT; }
static bool has_layout(const IrBuffer *b) { return b->layout.kind == IR_LAYOUT_FRAGMENT; }

static int dim_of(const IrBuffer *b, int d) {
  int64_t v = 0;
  if (d < b->rank) ir_expr_is_int_const(b->shape[d], &v);
  return (int)v;
}

static bool layouts_equal(const IrLayout *a, const IrLayout *b) {
  return a->frag == b->frag && a->rows == b->rows && a->cols == b->cols && a->warps_m == b->warps_m &&
         a->warps_n == b->warps_n && a->warp_order == b->warp_order && a->group == b->group &&
         a->rows_local == b->rows_local && a->cols_local == b->cols_local;
}

/* A use of a fragment in warpgroup order (an N-split wgmma accumulator)
 * that cannot take that layout: infer the kernel again without N splits. */
static void nsplit_refused(Infer *in) {
  in->nsplit_conflict = true;
  in->failed = true;
}

static bool in_warpgroups(const IrLayout *l) {
  return l->frag == IR_FRAG_MMA_C && l->warp_order == IR_WARP_ORDER_WARPGROUPS;
}

/* Gives b the layout l, or reports a conflict when it already has another. */
static void assign(Infer *in, IrBuffer *b, const IrLayout *l, SrcLoc loc, const char *why) {
  if (has_layout(b)) {
    if (!layouts_equal(&b->layout, l) && !in->failed && in->nsplit && (in_warpgroups(l) || in_warpgroups(&b->layout))) {
      nsplit_refused(in);
      return;
    }
    if (!layouts_equal(&b->layout, l) && !in->failed) {
      Arena *a = in->m->arena;
      diag_error(in->diag, loc, "%s: fragment '%s' needs layout %s here but already has %s", why, b->name,
                 ir_layout_str(a, l), ir_layout_str(a, &b->layout));
      in->failed = true;
    }
    return;
  }
  b->layout = *l;
  in->changed = true;
}

/* MMA_C over [M, N] with wm x wn warps; false when the tile does not split. */
static bool mma_layout(int M, int N, int wm, int wn, IrLayout *out) {
  if (wm < 1 || wn < 1 || M % (16 * wm) || N % (8 * wn)) return false;
  memset(out, 0, sizeof *out);
  out->kind = IR_LAYOUT_FRAGMENT;
  out->frag = IR_FRAG_MMA_C;
  out->rows = M;
  out->cols = N;
  out->warps_m = wm;
  out->warps_n = wn;
  out->rows_local = 2 * (M / wm / 16);
  out->cols_local = 2 * (N / wn / 8);
  return true;
}

/* The row vector that follows the rows of 2-D layout l. */
static IrLayout row_vector_of(const IrLayout *l) {
  IrLayout v = *l;
  v.cols = 0;
  v.cols_local = 1;
  return v;
}

/* The column vector that follows the columns of 2-D layout l. */
static IrLayout col_vector_of(const IrLayout *l) {
  IrLayout v = *l;
  v.rows = 0;
  v.rows_local = 1;
  return v;
}

/* A contiguous operand extent wgmma can read: rows of 32, 64 or 128 bytes,
 * or panels of 64, 32 or 16 columns (swizzle-layout stores other widths
 * that way: dim 96 as three 32-column panels). Any multiple of 16. */
static bool wgmma_row_ok(int cols) { return cols >= 16 && cols % 16 == 0; }

/* Why an FP8 gemm cannot be wgmma's FP8 form (m64nNk32 .e4m3/.e5m2, the
 * only FP8 tensor-core instruction tilec drives), or NULL when it can. FP8
 * wgmma has no transpose bits: A [M, K] and B [N, K] must both be K-major
 * shared tiles, so B comes as [N, K] with transpose_B = true. */
static const char *fp8_wgmma_unfit(const Infer *in, const IrStmt *s, int M, int N) {
  const IrBuffer *a = s->u.gemm.a.buf, *b = s->u.gemm.b.buf;
  if (!dtype_is_fp8(a->dtype) || !dtype_is_fp8(b->dtype))
    return "both operands must be FP8 (f8e4m3 or f8e5m2; they may differ), not one FP8 and one of another type";
  if (a->scope != IR_SCOPE_SHARED || b->scope != IR_SCOPE_SHARED || a->rank != 2 || b->rank != 2)
    return "A and B must be 2-D shared tiles (alloc_shared), not fragments";
  if (!s->u.gemm.trans_b)
    return "FP8 wgmma reads B K-major only (no transpose bit for 8-bit types): store B as an [N, K] tile "
           "(B^T row-major, as torch._scaled_mm takes it) and write gemm(A, B, C, transpose_B = true)";
  if (s->u.gemm.trans_a)
    return "FP8 wgmma reads A K-major only (no transpose bit for 8-bit types): store A as an [M, K] tile and "
           "drop transpose_A";
  if (s->u.gemm.policy == IR_GEMM_POLICY_FULL_COL)
    return "policy = full_col splits the columns over warps; wgmma needs full_row or square";
  if (in->warps % 4 || M != 16 * in->warps)
    return "wgmma needs the accumulator's rows M = 16 * warps with warps a multiple of 4 (e.g. block_M 128 "
           "with threads 256, or block_M 64 with threads 128)";
  if (N % 16 || N > 256) return "the accumulator's N must be a multiple of 16 up to 256";
  int K = dim_of(a, 1);
  if (K % 32)
    return "K (the tiles' row length) must be a multiple of 32 (wgmma steps K by 32; rows of 32, 64, 128 bytes, "
           "or panels of the widest of them that divides the row)";
  for (int i = 0; i < in->nno_wgmma; i++)
    if (in->no_wgmma[i] == s) return "an operand is staged through shared memory inside a pipelined loop";
  return NULL;
}

/* wgmma's rules for a 16-bit gemm but the one on rows per warp: B shared,
 * A shared or a fragment, widths wgmma can read, and no operand staged in
 * a pipelined loop. */
static bool wgmma_operands_fit(const Infer *in, const IrStmt *s, int M, int N) {
  const IrBuffer *a = s->u.gemm.a.buf, *b = s->u.gemm.b.buf;
  for (int i = 0; i < in->nno_wgmma; i++)
    if (in->no_wgmma[i] == s) return false;
  bool a_regs = a->scope == IR_SCOPE_FRAGMENT; /* A from registers (wgmma's RS form) */
  if ((!a_regs && a->scope != IR_SCOPE_SHARED) || b->scope != IR_SCOPE_SHARED || a->dtype != b->dtype ||
      (a->dtype != DTYPE_F16 && a->dtype != DTYPE_BF16) || a->rank != 2 || b->rank != 2)
    return false;
  if (N % 16 || N > 256) return false; /* m64nNk16 with N = 16, 32, ... 256 */
  /* transpose_A: A is the [K, M] tile, read M-major (wgmma's transpose bit). */
  int K = dim_of(a, s->u.gemm.trans_a ? 0 : 1);
  if (K % 16) return false;
  return (a_regs || wgmma_row_ok(s->u.gemm.trans_a ? M : K)) && wgmma_row_ok(s->u.gemm.trans_b ? K : N);
}

/* sm_90a: a gemm of 16-bit tiles whose operands fit (wgmma_operands_fit)
 * and whose accumulator splits as one 16-row slice per warp (M = 16 *
 * warps, warps a multiple of 4) runs as wgmma. That split is exactly
 * wgmma's accumulator layout (warpgroup g owns rows 64g.., warp w of it 16
 * rows), so nothing else in the kernel changes. FP8 tiles: when
 * fp8_wgmma_unfit finds nothing against it. */
static bool wgmma_fits(const Infer *in, const IrStmt *s, int M, int N) {
  if (!in->sm90a || s->u.gemm.policy == IR_GEMM_POLICY_FULL_COL) return false;
  if (ir_gemm_reads_fp8(s)) return fp8_wgmma_unfit(in, s, M, N) == NULL;
  return in->warps % 4 == 0 && M == 16 * in->warps && wgmma_operands_fit(in, s, M, N);
}

/* sm_90a: a 16-bit gemm with 32 accumulator rows per warp (M = 32 *
 * warps, warps a multiple of 4: block_M 256 over 256 threads) runs as
 * wgmma with each warpgroup owning two m64 blocks, 128 rows
 * (tc_gemm_wgmma_ss_2blocks): its descriptors interleave A's 8-row groups
 * so that the accumulator is the plain MMA_C split with 32 rows per warp.
 * Needs A K-major in shared memory (a register A would hold one m64
 * block's rows per warp) besides wgmma_operands_fit. */
static bool wgmma_two_blocks(const Infer *in, const IrStmt *s, int M, int N) {
  const IrBuffer *a = s->u.gemm.a.buf;
  if (!in->sm90a || s->u.gemm.policy == IR_GEMM_POLICY_FULL_COL) return false;
  if (a->scope != IR_SCOPE_SHARED || s->u.gemm.trans_a) return false;
  return in->warps % 4 == 0 && M == 32 * in->warps && wgmma_operands_fit(in, s, M, N);
}

/* The two tile extents of a 2-D operand region equal its buffer's last
 * two dimensions (a whole tile, or a whole stage of a staged one). */
static bool whole_tile(const IrRegion *r) {
  int n = 0, ext[2] = {0, 0};
  for (int d = 0; d < r->rank; d++) {
    int64_t e = 0;
    if (r->is_index[d]) continue;
    if (n == 2 || !ir_expr_is_int_const(r->extent[d], &e)) return false;
    ext[n++] = (int)e;
  }
  const IrBuffer *b = r->buf;
  return n == 2 && b->rank >= 2 && ext[0] == dim_of(b, b->rank - 2) && ext[1] == dim_of(b, b->rank - 1);
}

/* sm_90a: a gemm that wgmma_fits refuses only for its rows, M = 64 gm
 * with more warps than M / 16 (4 gm x gn warps, gn > 1: the backward's
 * dQ^T [64, 96] over 8 warps), runs as wgmma with the warpgroups
 * splitting N: warpgroup g takes rows [64 (g / gn), +64) and columns
 * [(g % gn) N / gn, +N / gn), one m64n(N/gn)k16 per k16 step, its B
 * descriptor starting at its slice (tc_gemm_wgmma_ss's GN). Needs, beside
 * wgmma_fits' operand rules: 16-bit tiles; policy square (full_row asks
 * for whole rows per warp); A in shared memory (wgmma's register A would
 * hold the warpgroup's rows, the same for the gn warpgroups of a row);
 * N / gn a multiple of 16 up to 256 (the widths tilec_wgmma.cuh emits);
 * B a whole tile whose slices a descriptor can start at: in a [N, K] B
 * (transpose_B) a slice is N / gn whole rows from a multiple of 8 (the
 * swizzle repeats every 8 rows); in a [K, N] B it must start a panel,
 * which a panel width dividing both N and N / gn gives
 * (pass_nsplit_panel_cols; swizzle-layout stores B so, or takes the gemm
 * back to mma.sync where B cannot be). Returns gn, or 0. */
static int wgmma_n_split(const Infer *in, const IrStmt *s, int M, int N) {
  const IrBuffer *a = s->u.gemm.a.buf, *b = s->u.gemm.b.buf;
  if (!in->sm90a || !in->nsplit || s->u.gemm.policy != IR_GEMM_POLICY_SQUARE) return 0;
  for (int i = 0; i < in->nno_wgmma; i++)
    if (in->no_wgmma[i] == s) return 0;
  if (a->scope != IR_SCOPE_SHARED || b->scope != IR_SCOPE_SHARED || a->dtype != b->dtype ||
      (a->dtype != DTYPE_F16 && a->dtype != DTYPE_BF16) || a->rank < 2 || b->rank < 2 ||
      !whole_tile(&s->u.gemm.a) || !whole_tile(&s->u.gemm.b))
    return 0;
  if (in->warps % 4 || M % 64 || M < 64) return 0;
  const int gm = M / 64, groups = in->warps / 4;
  if (groups % gm || groups / gm < 2) return 0;
  const int gn = groups / gm;
  if (N % gn) return 0;
  const int slice = N / gn;
  if (slice % 16 || slice > 256) return 0;
  int K = dim_of(a, s->u.gemm.trans_a ? a->rank - 2 : a->rank - 1);
  if (K % 16 || !wgmma_row_ok(s->u.gemm.trans_a ? M : K) || !wgmma_row_ok(s->u.gemm.trans_b ? K : N)) return 0;
  if (s->u.gemm.trans_b) return slice % 8 == 0 ? gn : 0;
  return pass_nsplit_panel_cols(N, slice, dtype_size(b->dtype)) ? gn : 0;
}

/* ---- staging of gemm operands the templates cannot read --------------------- */

/* A new shared [rows, cols] buffer of dtype t, allocated at the top of the
 * kernel body (as reduce_scratch does). */
static IrBuffer *stage_buffer(Infer *in, IrStmt *seq, int *at, const char *prefix, DType t, int rows, int cols,
                              SrcLoc loc) {
  IrModule *m = in->m;
  IrExpr *shape[2] = {ir_int(m, rows, loc), ir_int(m, cols, loc)};
  IrBuffer *b = ir_buffer_new(m, arena_printf(m->arena, "%s_%d", prefix, m->next_id), t, IR_SCOPE_SHARED, 2, shape, loc);
  IrStmt *alloc = ir_stmt_new(m, IR_STMT_ALLOC, loc);
  alloc->u.alloc = b;
  IrStmt *body = in->k->body;
  ir_seq_push(m, body, alloc);
  for (int i = body->u.seq.n - 1; i > 0; i--) body->u.seq.items[i] = body->u.seq.items[i - 1];
  body->u.seq.items[0] = alloc;
  if (seq == body) (*at)++; /* the statements of the body moved down one */
  return b;
}

/* The two tile dimensions of a 2-D operand region (its non-index dims). */
static bool region_tile(const IrRegion *r, int dims[2], int ext[2]) {
  int n = 0;
  for (int d = 0; d < r->rank; d++) {
    if (r->is_index[d]) continue;
    int64_t e = 0;
    if (n == 2 || !ir_expr_is_int_const(r->extent[d], &e)) return false;
    dims[n] = d, ext[n++] = (int)e;
  }
  return n == 2;
}

/* Inserts `item` into seq before position *at, advancing *at past it. */
static void insert_before(IrModule *m, IrStmt *seq, int *at, IrStmt *item) {
  ir_seq_push(m, seq, item);
  for (int i = seq->u.seq.n - 1; i > *at; i--) seq->u.seq.items[i] = seq->u.seq.items[i - 1];
  seq->u.seq.items[*at] = item;
  (*at)++;
}

static IrStmt *copy_stmt(IrModule *m, IrRegion src, IrRegion dst, SrcLoc loc) {
  IrStmt *c = ir_stmt_new(m, IR_STMT_COPY, loc);
  c->u.copy.src = src;
  c->u.copy.dst = dst;
  return c;
}

static void stage_gemm(Infer *in, IrStmt *seq, int *at, bool overlapped) {
  IrStmt *s = seq->u.seq.items[*at];
  int before = seq->u.seq.n;
  IrModule *m = in->m;
  IrRegion *a = &s->u.gemm.a, *b = &s->u.gemm.b;
  int dims[2], ext[2];
  if (s->u.gemm.trans_a && a->buf->scope == IR_SCOPE_FRAGMENT && region_tile(a, dims, ext)) {
    /* Registers are read in their own layout only: through shared first,
     * as the [K, M] tile the templates read transposed (ldmatrix .trans,
     * wgmma's transpose bit for A). */
    IrBuffer *sh = stage_buffer(in, seq, at, "tc_a", a->buf->dtype, ext[0], ext[1], s->loc);
    IrRegion dst = ir_region_whole(m, sh, s->loc);
    insert_before(m, seq, at, copy_stmt(m, *a, dst, s->loc));
    *a = dst;
  } else if (s->u.gemm.trans_a && a->buf->scope == IR_SCOPE_SHARED && !region_tile(a, dims, ext)) {
    diag_error(in->diag, s->loc, "gemm: transpose_A needs a 2-D tile of constant extents as A on the GPU");
    in->failed = true;
    return;
  }
  if (b->buf->scope == IR_SCOPE_FRAGMENT && region_tile(b, dims, ext)) {
    IrBuffer *sh = stage_buffer(in, seq, at, "tc_b", b->buf->dtype, ext[0], ext[1], s->loc);
    IrRegion dst = ir_region_whole(m, sh, s->loc);
    insert_before(m, seq, at, copy_stmt(m, *b, dst, s->loc));
    *b = dst;
  }
  if (overlapped && seq->u.seq.n != before) {
    if (in->nno_wgmma == 16) {
      diag_error(in->diag, s->loc, "gemm: more than 16 gemms with staged operands in pipelined loops");
      in->failed = true;
      return;
    }
    in->no_wgmma[in->nno_wgmma++] = s;
  }
}

/* overlapped: inside a pipelined loop of 3 or more stages. */
static void stage_operands(Infer *in, IrStmt *s, bool overlapped) {
  if (!s) return;
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) {
      IrStmt *it = s->u.seq.items[i];
      if (it->kind == IR_STMT_GEMM) stage_gemm(in, s, &i, overlapped); /* i now indexes the gemm */
      else stage_operands(in, it, overlapped);
    }
    break;
  case IR_STMT_FOR:
    stage_operands(in, s->u.for_.body,
                   overlapped || (s->u.for_.kind == IR_FOR_PIPELINED && s->u.for_.num_stages >= 3));
    break;
  case IR_STMT_IF:
    stage_operands(in, s->u.if_.then_, overlapped);
    stage_operands(in, s->u.if_.else_, overlapped);
    break;
  default:
    break;
  }
}

static void gemm_constraints(Infer *in, IrStmt *s) {
  IrBuffer *a = s->u.gemm.a.buf, *c = s->u.gemm.c.buf;
  if (!is_fragment(c)) {
    diag_error(in->diag, s->loc, "gemm: the accumulator '%s' must be a fragment on the GPU", c->name);
    in->failed = true;
    return;
  }
  if (s->u.gemm.trans_a && a->scope != IR_SCOPE_SHARED) {
    /* stage_gemm moved a fragment A of constant 2-D extents to shared. */
    diag_error(in->diag, s->loc, "gemm: a transpose_A operand '%s' must be a shared tile (or a 2-D fragment) on the GPU",
               a->name);
    in->failed = true;
    return;
  }
  int M = dim_of(c, 0), N = dim_of(c, 1);
  int wm = in->warps, wn = 1;
  switch (s->u.gemm.policy) {
  case IR_GEMM_POLICY_FULL_ROW: wm = in->warps, wn = 1; break;
  case IR_GEMM_POLICY_FULL_COL: wm = 1, wn = in->warps; break;
  default:
    /* Most balanced split whose warp tile still divides into atoms. */
    wm = 1, wn = in->warps;
    for (int cand = 1; cand <= in->warps; cand *= 2) {
      int cn = in->warps / cand;
      IrLayout probe;
      if (cand * cn != in->warps || !mma_layout(M, N, cand, cn, &probe)) continue;
      if (wm == 1 && wn == in->warps) wm = cand, wn = cn; /* first that fits */
      int best = (M / wm) > (N / wn) ? M / wm - N / wn : N / wn - M / wm;
      int now = (M / cand) > (N / cn) ? M / cand - N / cn : N / cn - M / cand;
      if (now < best) wm = cand, wn = cn;
    }
    break;
  }
  /* With A in registers, warps may only split rows (A is read from the
   * accumulator layout of the previous gemm). */
  if (is_fragment(a)) wm = in->warps, wn = 1;
  s->u.gemm.wgmma = wgmma_fits(in, s, M, N) || wgmma_two_blocks(in, s, M, N);
  if (s->u.gemm.wgmma) wm = in->warps, wn = 1;
  const int gn = s->u.gemm.wgmma ? 0 : wgmma_n_split(in, s, M, N);
  if (gn) {
    s->u.gemm.wgmma = true;
    wm = 4 * (M / 64), wn = gn;
  }
  if (in->sm90a && !s->u.gemm.wgmma && ir_gemm_reads_fp8(s)) {
    /* sm_90a's only FP8 tensor-core path is wgmma: say what keeps this one off it. */
    const char *why = fp8_wgmma_unfit(in, s, M, N);
    diag_error(in->diag, s->loc, "gemm: FP8 gemm on sm_90a runs only as wgmma (m64nNk32 .e4m3/.e5m2), and this one "
               "cannot: %s", why ? why : "no wgmma form fits it");
    in->failed = true;
    return;
  }
  IrLayout lc;
  if (!mma_layout(M, N, wm, wn, &lc)) {
    diag_error(in->diag, s->loc,
               "gemm: accumulator '%s' [%d, %d] cannot be spread over %d warps as %dx%d "
               "(each warp needs a multiple of 16 rows and 8 columns)",
               c->name, M, N, in->warps, wm, wn);
    in->failed = true;
    return;
  }
  if (gn) lc.warp_order = IR_WARP_ORDER_WARPGROUPS;
  assign(in, c, &lc, s->loc, "gemm");
  if (is_fragment(a)) {
    IrLayout la;
    int K = dim_of(a, 1);
    if (!mma_layout(dim_of(a, 0), K, wm, 1, &la) || K % 16) {
      diag_error(in->diag, s->loc, "gemm: operand '%s' [%d, %d] cannot be used from registers (K must be a multiple of 16)",
                 a->name, dim_of(a, 0), K);
      in->failed = true;
      return;
    }
    assign(in, a, &la, s->loc, "gemm operand A");
  }
  if (is_fragment(s->u.gemm.b.buf)) {
    diag_error(in->diag, s->loc, "gemm: operand B '%s' must be in shared memory on the GPU", s->u.gemm.b.buf->name);
    in->failed = true;
  }
}

static void copy_constraints(Infer *in, IrStmt *s) {
  IrBuffer *src = s->u.copy.src.buf, *dst = s->u.copy.dst.buf;
  if (!is_fragment(src) || !is_fragment(dst)) return;
  if (src->rank != dst->rank) return;
  if (has_layout(src)) assign(in, dst, &src->layout, s->loc, "copy");
  else if (has_layout(dst)) assign(in, src, &dst->layout, s->loc, "copy");
}

/* Shared f32 [warps_n, rows] for a reduction whose rows are split across
 * warps: each warp leaves its partial there and every warp combines them.
 * Allocated at the top of the kernel body (check-resources counts it). */
static IrBuffer *reduce_scratch(Infer *in, const IrLayout *l, SrcLoc loc) {
  IrModule *m = in->m;
  IrExpr *shape[2] = {ir_int(m, l->warps_n, loc), ir_int(m, l->rows, loc)};
  IrBuffer *b = ir_buffer_new(m, arena_printf(m->arena, "tc_reduce_%d", m->next_id), DTYPE_F32, IR_SCOPE_SHARED, 2,
                              shape, loc);
  IrStmt *alloc = ir_stmt_new(m, IR_STMT_ALLOC, loc);
  alloc->u.alloc = b;
  IrStmt *body = in->k->body;
  ir_seq_push(m, body, alloc); /* grow, then move it to the front */
  for (int i = body->u.seq.n - 1; i > 0; i--) body->u.seq.items[i] = body->u.seq.items[i - 1];
  body->u.seq.items[0] = alloc;
  in->changed = true;
  return b;
}

static void reduce_constraints(Infer *in, IrStmt *s) {
  IrBuffer *src = s->u.reduce.src, *dst = s->u.reduce.dst;
  if (!is_fragment(src) || !is_fragment(dst)) {
    diag_error(in->diag, s->loc, "%s: operands must be fragments on the GPU", ir_reduce_name(s->u.reduce.kind));
    in->failed = true;
    return;
  }
  if (src->rank != 2 || s->u.reduce.dim != 1) {
    diag_error(in->diag, s->loc, "%s: the GPU backend reduces 2-D fragments along dim 1 only",
               ir_reduce_name(s->u.reduce.kind));
    in->failed = true;
    return;
  }
  if (has_layout(src)) {
    if (in_warpgroups(&src->layout)) {
      /* The cross-warp fold of an N-split accumulator's rows is not
       * built (the CUDA backend refuses it): no N split here. */
      if (in->nsplit) nsplit_refused(in);
      return;
    }
    if (src->layout.frag == IR_FRAG_MMA_C && src->layout.warps_n > 1 && !s->u.reduce.scratch)
      s->u.reduce.scratch = reduce_scratch(in, &src->layout, s->loc);
    IrLayout v = row_vector_of(&src->layout);
    assign(in, dst, &v, s->loc, ir_reduce_name(s->u.reduce.kind));
  }
}

/* ---- parallel loops --------------------------------------------------------- */

typedef struct Access {
  IrBuffer *buf;
  bool by_loop_vars; /* indexed exactly by the nest's variables, in order */
  bool by_col;       /* a 1-D buffer indexed [j] by the nest's second variable */
} Access;

typedef struct Nest {
  IrVar *vars[2];
  int nvars;
  Access acc[32];
  int nacc;
} Nest;

static void note_access(Nest *n, IrBuffer *buf, IrExpr *const *idx, int nidx) {
  if (!is_fragment(buf) || n->nacc == 32) return;
  bool exact = nidx >= 1 && nidx <= n->nvars;
  for (int d = 0; d < nidx && exact; d++)
    exact = idx[d]->kind == IR_EXPR_VAR && idx[d]->u.var == n->vars[d];
  n->acc[n->nacc].buf = buf;
  n->acc[n->nacc].by_col = nidx == 1 && n->nvars == 2 && idx[0]->kind == IR_EXPR_VAR && idx[0]->u.var == n->vars[1];
  n->acc[n->nacc++].by_loop_vars = exact;
}

static void scan_load(const IrExpr *e, void *ctx) {
  if (e->kind == IR_EXPR_LOAD) note_access(ctx, e->u.load.buf, e->u.load.idx, e->u.load.nidx);
}

static void scan_stmt(IrStmt *s, void *ctx) {
  if (s->kind == IR_STMT_STORE) note_access(ctx, s->u.store.buf, s->u.store.idx, s->u.store.nidx);
  ir_stmt_visit_exprs(s, scan_load, ctx);
}

static void loop_constraints(Infer *in, IrStmt *s) {
  Nest n = {0};
  n.vars[n.nvars++] = s->u.for_.var;
  IrStmt *body = s->u.for_.body;
  /* for i, j in parallel(M, N): the inner loop is the body's only statement. */
  if (body->u.seq.n == 1 && body->u.seq.items[0]->kind == IR_STMT_FOR &&
      body->u.seq.items[0]->u.for_.kind == IR_FOR_PARALLEL) {
    n.vars[n.nvars++] = body->u.seq.items[0]->u.for_.var;
    body = body->u.seq.items[0]->u.for_.body;
  }
  ir_visit_stmts(body, scan_stmt, &n);
  /* The 2-D fragments indexed [i, j] share one layout; 1-D ones indexed [i]
   * follow its rows. */
  IrBuffer *driver2 = NULL, *driver1 = NULL;
  for (int i = 0; i < n.nacc; i++) {
    IrBuffer *b = n.acc[i].buf;
    if (!n.acc[i].by_loop_vars || !has_layout(b)) continue;
    if (b->rank == 2 && n.nvars == 2 && !driver2) driver2 = b;
    if (b->rank == 1 && !driver1) driver1 = b;
  }
  for (int i = 0; i < n.nacc; i++) {
    IrBuffer *b = n.acc[i].buf;
    if (n.acc[i].by_col && driver2) {
      IrLayout v = col_vector_of(&driver2->layout);
      assign(in, b, &v, s->loc, "parallel loop (column vector)");
    }
    if (!n.acc[i].by_loop_vars) continue;
    if (b->rank == 2 && n.nvars == 2 && driver2) assign(in, b, &driver2->layout, s->loc, "parallel loop");
    if (b->rank == 1) {
      if (driver2) {
        IrLayout v = row_vector_of(&driver2->layout);
        if (!has_layout(b)) assign(in, b, &v, s->loc, "parallel loop");
        /* A row vector read beside fragments of other row mappings is
         * refused by the CUDA backend; when the warpgroup order makes
         * the difference, infer the kernel without it instead. */
        else if (in->nsplit && !ir_layout_same_rows(&b->layout, &v) &&
                 (in_warpgroups(&b->layout) || in_warpgroups(&v)))
          nsplit_refused(in);
      } else if (driver1 && !has_layout(b)) {
        assign(in, b, &driver1->layout, s->loc, "parallel loop");
      }
    }
  }
}

static void collect(IrStmt *s, void *ctx) {
  Infer *in = ctx;
  switch (s->kind) {
  case IR_STMT_GEMM:
    gemm_constraints(in, s);
    break;
  case IR_STMT_COPY:
    copy_constraints(in, s);
    break;
  case IR_STMT_REDUCE:
    reduce_constraints(in, s);
    break;
  case IR_STMT_FOR:
    if (s->u.for_.kind == IR_FOR_PARALLEL) loop_constraints(in, s);
    break;
  default:
    break;
  }
}

/* ROWGROUP for a 2-D fragment no constraint reached. */
static bool rowgroup_layout(int R, int C, int threads, IrLayout *out) {
  memset(out, 0, sizeof *out);
  out->kind = IR_LAYOUT_FRAGMENT;
  out->frag = IR_FRAG_ROWGROUP;
  out->rows = R;
  out->cols = C;
  if (R < 1 || C < 1) return false;
  if (threads >= R) {
    /* The largest power-of-two group (at most 32) that fits R times in the
     * threads; when g * R < threads the rows tid / g >= R are padding
     * (their threads idle). C % g != 0: padded columns, ceil(C / g) slots,
     * the last one skipped where tid % g + g * cs >= C. */
    int g = 1;
    while (g < 32 && 2 * g * R <= threads) g *= 2;
    out->group = g;
    out->rows_local = 1;
    out->cols_local = (C + g - 1) / g;
  } else {
    /* R % threads != 0: ceil(R / threads) row slots, rows >= R padding. */
    out->group = 1;
    out->rows_local = (R + threads - 1) / threads;
    out->cols_local = C;
  }
  return true;
}

typedef struct Leftover {
  Infer *in;
  bool second_round;
} Leftover;

static void default_layouts(IrStmt *s, void *ctx) {
  Leftover *lo = ctx;
  Infer *in = lo->in;
  if (s->kind != IR_STMT_ALLOC || !is_fragment(s->u.alloc) || has_layout(s->u.alloc)) return;
  IrBuffer *b = s->u.alloc;
  if (b->rank == 2) {
    IrLayout l;
    if (!rowgroup_layout(dim_of(b, 0), dim_of(b, 1), in->threads, &l)) {
      diag_error(in->diag, s->loc,
                 "fragment '%s' [%d, %d] cannot be spread over %d threads (rows must divide the threads "
                 "into groups of a power of two up to 32, or be a multiple of the threads)",
                 b->name, dim_of(b, 0), dim_of(b, 1), in->threads);
      in->failed = true;
      return;
    }
    b->layout = l;
    in->changed = true;
  } else if (b->rank == 1 && lo->second_round) {
    /* A row vector no 2-D fragment relates to: spread its rows like a
     * [R, 1] row group, the threads of a group holding copies. */
    int R = dim_of(b, 0), T = in->threads;
    IrLayout l = {0};
    l.kind = IR_LAYOUT_FRAGMENT;
    l.frag = IR_FRAG_ROWGROUP;
    l.rows = R;
    l.cols_local = 1;
    IrLayout probe;
    if (rowgroup_layout(R, 1, T, &probe)) { /* the rows of an [R, 1] row group (padded rows included) */
      l.group = probe.group;
      l.rows_local = probe.rows_local;
    } else {
      diag_error(in->diag, s->loc, "fragment '%s' [%d] cannot be spread over %d threads (its length must divide "
                 "the threads into groups of at most 32, or be a multiple of the threads)", b->name, R, T);
      in->failed = true;
      return;
    }
    b->layout = l;
    in->changed = true;
  } else if (lo->second_round) {
    diag_error(in->diag, s->loc,
               "fragment '%s' of rank %d has no layout: on the GPU a fragment is 2-D, or a row vector "
               "reduced from (or used beside) a 2-D fragment",
               b->name, b->rank);
    in->failed = true;
  }
}

static void infer_kernel(Infer *in) {
  IrKernel *k = in->k;
  for (int round = 0; round < 2 && !in->failed; round++) {
    in->changed = true;
    for (int iter = 0; in->changed && !in->failed && iter < 64; iter++) {
      in->changed = false;
      ir_visit_stmts(k->body, collect, in);
    }
    Leftover lo = {in, round == 1};
    if (!in->failed) ir_visit_stmts(k->body, default_layouts, &lo);
  }
}

/* Undoes infer_kernel: no fragment has a layout, no reduction a scratch
 * buffer (reset_layouts also drops their allocations), no gemm a wgmma
 * mark. */
static void forget_layout(IrStmt *s, void *ctx) {
  (void)ctx;
  if (s->kind == IR_STMT_ALLOC && is_fragment(s->u.alloc)) {
    memset(&s->u.alloc->layout, 0, sizeof s->u.alloc->layout);
    s->u.alloc->layout.kind = IR_LAYOUT_ROW_MAJOR;
  } else if (s->kind == IR_STMT_REDUCE) {
    s->u.reduce.scratch = NULL;
  } else if (s->kind == IR_STMT_GEMM) {
    s->u.gemm.wgmma = false;
  }
}

typedef struct FindScratch {
  const IrBuffer *buf;
  bool found;
} FindScratch;

static void find_scratch(IrStmt *s, void *ctx) {
  FindScratch *f = ctx;
  if (s->kind == IR_STMT_REDUCE && s->u.reduce.scratch == f->buf) f->found = true;
}

static void reset_layouts(Infer *in) {
  IrStmt *body = in->k->body;
  int out = 0;
  for (int i = 0; i < body->u.seq.n; i++) {
    IrStmt *it = body->u.seq.items[i];
    FindScratch f = {it->kind == IR_STMT_ALLOC ? it->u.alloc : NULL, false};
    if (f.buf) ir_visit_stmts(body, find_scratch, &f);
    if (!f.found) body->u.seq.items[out++] = it; /* reduce_scratch's allocations go */
  }
  body->u.seq.n = out;
  ir_visit_stmts(body, forget_layout, NULL);
}

/* sm_90a: a 16-bit gemm that would run as wgmma but for its rows per warp
 * (more than 16 that wgmma_two_blocks cannot take: 48 or more, or 32 with
 * a transposed or register A) runs as mma.sync -- and its pipeline with
 * cp.async copies waited on in place -- at about half the speed (gemm.tile
 * 256 x 128 over 256 threads ran so at 0.48x cuBLAS at 4096^3 on an H100
 * before wgmma_two_blocks, twentieth session). Said once per gemm, after
 * the last inference. Fewer rows than 16 per warp (more warps than rows
 * need) are the N-split's or the kernel's choice. */
static void warn_mma_fallback(IrStmt *s, void *ctx) {
  const Infer *in = ctx;
  if (s->kind != IR_STMT_GEMM || s->u.gemm.wgmma || s->u.gemm.policy == IR_GEMM_POLICY_FULL_COL) return;
  const IrBuffer *c = s->u.gemm.c.buf;
  if (!is_fragment(c) || c->rank != 2) return;
  const int M = dim_of(c, 0), N = dim_of(c, 1);
  if (M <= 16 * in->warps || M % 64 || !wgmma_operands_fit(in, s, M, N)) return;
  diag_warning(in->diag, s->loc,
               "gemm: runs as mma.sync, not wgmma: its %d accumulator rows over %d warps are %d per warp, and "
               "wgmma takes 16 per warp (one warpgroup of 128 threads per 64 rows: %d threads here), or 32 with "
               "A a K-major shared tile",
               M, in->warps, M / in->warps, M * 2);
}

bool pass_infer_layout(IrModule *m, const PassOptions *opts, Diag *diag) {
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    int64_t threads = 0;
    ir_expr_is_int_const(k->threads, &threads);
    if (threads % 32) {
      /* No statement sees a thread index (tile ops and parallel loops are
       * block-wide), so a block of a partial warp runs as whole warps: the
       * kernel's thread count (and its launch) is rounded up, and the
       * layouts spread over the rounded count. */
      threads = (threads + 31) / 32 * 32;
      k->threads = ir_int(m, threads, k->threads->loc);
    }
    Infer in = {m, k, diag, (int)threads, (int)threads / 32, opts->target == TILEC_TARGET_SM90A, true, false, {0}, 0,
                true, false};
    stage_operands(&in, k->body, false);
    infer_kernel(&in);
    if (in.nsplit_conflict) {
      /* Some use of an N-split accumulator's layout cannot take it: the
       * whole kernel again, every gemm as it would be without N splits. */
      reset_layouts(&in);
      in.nsplit = false;
      in.nsplit_conflict = in.failed = false;
      infer_kernel(&in);
    }
    if (in.failed) return false;
    if (in.sm90a) ir_visit_stmts(k->body, warn_mma_fallback, &in);
  }
  return true;
}
