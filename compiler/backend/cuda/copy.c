/* copy.c - tile copies and fills.
 *
 * A copy is mapped to the cheapest form its operands allow:
 *   - global <-> whole shared tile of a 16-bit type, columns contiguous: the
 *     16-byte transfers tc_copy_g2s (cp.async, zero fill outside the tensor;
 *     left in flight when software-pipeline marked it async) and
 *     tc_copy_s2g of runtime/device/tilec_tile.cuh; global -> shared of an
 *     8-bit (FP8) tile of whole 16-byte rows: tc_copy_g2s too; FP8 codes
 *     into an f16/bf16 tile: tc_copy_g2s_fp8_widen (tilec_fp8.cuh: 8 codes
 *     per 8-byte load, widened exactly, 16-byte shared stores);
 *   - one side a fragment: every thread moves its own register slots;
 *   - anything else: one element per thread, strided over the tile.
 * Guards set by guard-bounds become bounds checks (rows/cols_valid for the
 * transfers, an `if` around strided stores; loads outside read zero); the
 * lower edge is tested where guard-bounds could not prove the start
 * non-negative (IR_GUARD_LOWER: rows/cols_lo for the transfers, `0 <= i`
 * beside `i < shape` elsewhere), so a start read from a tensor that turns
 * out negative reads zeros / writes nothing before the tensor, as the C
 * back end does. A fill is a register loop for fragments, a strided store
 * otherwise.
 * atomic_add (dst a global f32 slice) takes the fragment or strided path of
 * a copy with `atomicAdd(&dst[...], value)` in place of the store, under the
 * same guards; from a 1-D fragment, whose elements are replicated over
 * threads, only the first thread holding an element adds it (first_holder).
 * The element form, atomic_add(G[i, j], v) (a STORE marked atomic), is one
 * atomicAdd under a condition that picks one of the threads running the
 * same iteration (one_adder). */
#include <stdio.h>
#include <string.h>

#include "cuda_emit.h"

/* ---- tile operations ------------------------------------------------------------- */

/* Tile dims of a region: the non-index dimensions, in order. */
int cuda_tile_dims(const IrRegion *r, int *dims) {
  int n = 0;
  for (int d = 0; d < r->rank; d++)
    if (!r->is_index[d]) dims[n++] = d;
  return n;
}

/* Pointer expression to the region's first element of a staged/plain 2-D
 * shared tile, or of a staged 1-D one (the stage index, if any, selects the
 * tile). */
void cuda_tile_base(Cuda *C, StrBuf *sb, const IrRegion *r) {
  const IrBuffer *b = r->buf;
  int dims[IR_MAX_RANK];
  if (b->rank == 3 || (b->rank == 2 && r->is_index[0] && cuda_tile_dims(r, dims) == 1)) {
    int64_t tile = cuda_const(b->shape[1]) * (b->rank == 3 ? cuda_const(b->shape[2]) : 1);
    sb_printf(sb, "(%s + (", b->name);
    cuda_emit_expr(C, sb, r->start[0]);
    sb_printf(sb, ") * %lld)", (long long)tile);
  } else {
    sb_puts(sb, b->name);
  }
}


/* Global offset of the region's start (row-major over the tensor's shape). */
static void region_offset(Cuda *C, StrBuf *sb, const IrRegion *r) {
  cuda_linear_index(C, sb, r->buf, r->start);
}

/* The check of index idx of region r's guarded dimension d: idx < shape,
 * and 0 <= idx first where the start may be negative (IR_GUARD_LOWER). */
static IrExpr *guard_check(IrModule *m, const IrRegion *r, int d, IrExpr *idx, SrcLoc loc) {
  IrExpr *hi = ir_binary(m, IR_OP_LT, idx, r->buf->shape[d], loc);
  if (!(r->guard[d] & IR_GUARD_LOWER)) return hi;
  return ir_binary(m, IR_OP_AND, ir_binary(m, IR_OP_GE, idx, ir_int(m, 0, loc), loc), hi, loc);
}

/* `const int tc_<name>_lo = tc_before_tensor(start, n);` for a transfer's
 * rows or columns whose start may be negative; false (nothing written) for
 * the others, whose count before the tensor is 0. */
static bool emit_transfer_lo(Cuda *C, const IrRegion *glob, int d, int64_t n, const char *name, int depth) {
  if (d < 0 || !(glob->guard[d] & IR_GUARD_LOWER)) return false;
  cuda_indent(C, depth);
  sb_printf(C->out, "const int tc_%s_lo = tc_before_tensor(", name);
  cuda_emit_expr(C, C->out, glob->start[d]);
  sb_printf(C->out, ", %lld);\n", (long long)n);
  return true;
}

/* A 2-D tile moved between a global slice and a whole shared tile by all
 * threads in 16-byte chunks: tc_copy_g2s (global -> shared, cp.async, zero
 * fill outside the tensor) or tc_copy_s2g (shared -> global, skipping what
 * lies outside). The global side's guards become rows/cols_valid. */
static void emit_tile_transfer(Cuda *C, const IrStmt *s, int depth) {
  bool to_shared = s->u.copy.dst.buf->scope == IR_SCOPE_SHARED;
  const IrRegion *glob = to_shared ? &s->u.copy.src : &s->u.copy.dst;
  const IrRegion *shr = to_shared ? &s->u.copy.dst : &s->u.copy.src;
  int gd[IR_MAX_RANK];
  int n = cuda_tile_dims(glob, gd);
  const IrBuffer *g = glob->buf, *sh = shr->buf;
  int rows_dim = n == 2 ? gd[0] : -1, cols_dim = n == 2 ? gd[1] : gd[0];
  int64_t rows = n == 2 ? cuda_const(glob->extent[rows_dim]) : 1, cols = cuda_const(glob->extent[cols_dim]);
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  sb_printf(o, "{  // copy%s %s -> %s\n", s->u.copy.async ? ".async" : "", s->u.copy.src.buf->name,
            s->u.copy.dst.buf->name);
  /* Rows past the end (guarded dims) are zero-filled / skipped. */
  cuda_indent(C, depth + 1);
  sb_puts(o, "const int tc_rows_valid = ");
  bool any_index_guard = false;
  for (int d = 0; d < glob->rank; d++) any_index_guard |= glob->is_index[d] && glob->guard[d];
  if (any_index_guard) {
    sb_puts(o, "(");
    for (int d = 0, first = 1; d < glob->rank; d++) {
      if (!glob->is_index[d] || !glob->guard[d]) continue;
      sb_puts(o, first ? "" : " && ");
      first = 0;
      /* Both edges where the index may be negative (a page read from a
       * block table): one unsigned compare, the index written once. */
      const bool both = glob->guard[d] & IR_GUARD_LOWER;
      sb_puts(o, both ? "tc_index_in(" : "(");
      cuda_emit_expr(C, o, glob->start[d]);
      sb_puts(o, both ? ", " : ") < ");
      cuda_emit_expr(C, o, g->shape[d]);
      if (both) sb_puts(o, ")");
    }
    sb_puts(o, ") ? ");
  }
  if (rows_dim >= 0 && glob->guard[rows_dim]) {
    sb_printf(o, "(int)max(0LL, min((long long)%lld, ", (long long)rows);
    cuda_emit_expr(C, o, g->shape[rows_dim]);
    sb_puts(o, " - (");
    cuda_emit_expr(C, o, glob->start[rows_dim]);
    sb_puts(o, ")))");
  } else {
    sb_printf(o, "%lld", (long long)rows);
  }
  if (any_index_guard) sb_puts(o, " : 0");
  sb_puts(o, ";\n");
  cuda_indent(C, depth + 1);
  sb_puts(o, "const int tc_cols_valid = ");
  if (glob->guard[cols_dim]) {
    sb_printf(o, "(int)max(0LL, min((long long)%lld, ", (long long)cols);
    cuda_emit_expr(C, o, g->shape[cols_dim]);
    sb_puts(o, " - (");
    cuda_emit_expr(C, o, glob->start[cols_dim]);
    sb_puts(o, ")))");
  } else {
    sb_printf(o, "%lld", (long long)cols);
  }
  sb_puts(o, ";\n");
  /* Rows / columns before the tensor: a start that may be negative. */
  const bool rows_lo = emit_transfer_lo(C, glob, rows_dim, rows, "rows", depth + 1);
  const bool cols_lo = emit_transfer_lo(C, glob, cols_dim, cols, "cols", depth + 1);
  char lo_args[40] = "";
  if (rows_lo || cols_lo)
    snprintf(lo_args, sizeof lo_args, ", %s, %s", rows_lo ? "tc_rows_lo" : "0", cols_lo ? "tc_cols_lo" : "0");
  /* Row stride: the declared stride of the rows dim, else the product of
   * the tensor's dims after it. */
  cuda_indent(C, depth + 1);
  if (g->strides && rows_dim >= 0) {
    sb_puts(o, "const long long tc_row_stride = (long long)(");
    cuda_emit_expr(C, o, g->strides[rows_dim]);
    sb_puts(o, ")");
  } else {
    sb_puts(o, "const long long tc_row_stride = 1LL");
    for (int d = rows_dim + 1; rows_dim >= 0 && d < g->rank; d++) {
      sb_puts(o, " * ");
      cuda_emit_expr(C, o, g->shape[d]);
    }
  }
  sb_puts(o, ";\n");
  cuda_indent(C, depth + 1);
  /* FP8 codes into a 16-bit tile: the widening copy (tilec_fp8.cuh). */
  const bool widen = to_shared && dtype_is_fp8(g->dtype) && !dtype_is_fp8(sh->dtype);
  if (widen)
    sb_printf(o, "tc_copy_g2s_fp8_widen<%lld, %lld, %d, %s, %s, %s>(", (long long)rows, (long long)cols, C->threads,
              cuda_swizzle_arg(sh), g->dtype == DTYPE_F8E5M2 ? "true" : "false",
              sh->dtype == DTYPE_BF16 ? "true" : "false");
  else
    sb_printf(o, "%s<%lld, %lld, %d, %s>(", to_shared ? "tc_copy_g2s" : "tc_copy_s2g", (long long)rows,
              (long long)cols, C->threads, cuda_swizzle_arg(sh));
  if (to_shared) {
    cuda_tile_base(C, o, shr);
    sb_printf(o, ", %s + ", g->name);
    region_offset(C, o, glob);
    sb_printf(o, ", tc_row_stride, tc_rows_valid, tc_cols_valid, tc_tid%s);\n", lo_args);
  } else {
    sb_printf(o, "%s + ", g->name);
    region_offset(C, o, glob);
    sb_puts(o, ", tc_row_stride, tc_rows_valid, tc_cols_valid, ");
    cuda_tile_base(C, o, shr);
    sb_printf(o, ", tc_tid%s);\n", lo_args);
  }
  if (to_shared && !s->u.copy.async && !widen) {
    cuda_indent(C, depth + 1);
    sb_puts(o, "tc_cp_async_commit();\n");
    cuda_indent(C, depth + 1);
    sb_puts(o, "tc_cp_async_wait<0>();\n");
  }
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}

/* For a fragment layout whose elements are replicated over threads (a 1-D
 * fragment: a row vector, row i held by every thread of its row; a column
 * vector, column j by every row: docs/gpu-codegen.md), the condition that
 * picks the first thread holding each element; false (no condition) for a
 * 2-D layout, each element held once. What an atomic addition of the
 * element runs under, so that it is added once. */
static bool first_holder(const IrLayout *l, StrBuf *sb) {
  if (l->rows > 0 && l->cols > 0) return false;
  bool mma = l->frag == IR_FRAG_MMA_C;
  if (ir_layout_is_col_vector(l)) {
    /* Column j is held by every row slot's thread of that column. */
    if (mma) {
      cuda_warp_first(sb, l, true);
      sb_puts(sb, " && tc_lane < 4");
    } else if (l->rows_local == 1 && l->group > 1) sb_printf(sb, "tc_tid < %d", l->group);
    else sb_puts(sb, "tc_tid == 0");
    return true;
  }
  /* A row vector: row i is held by the lanes of a quad and the warps of a
   * row of warps (mma), or by the group of threads sharing it (row group). */
  if (mma) {
    sb_puts(sb, "(tc_lane & 3) == 0 && ");
    cuda_warp_first(sb, l, false);
    return true;
  }
  if (l->rows_local == 1 && l->group > 1) {
    sb_printf(sb, "tc_tid %% %d == 0", l->group);
    return true;
  }
  return false;
}

/* An f32 MMA_C fragment stored whole (no guard) into a 16-bit shared tile:
 * a thread's columns come in pairs (c, c + 1) with c even
 * (docs/gpu-codegen.md), and with an even first column the two elements are
 * adjacent in shared memory under every layout taken here (one 16-byte chunk
 * of a swizzled row or panel; a plain row of even length), so each pair is
 * converted and stored as one 32-bit value (tc_f32x2_to_*_at). Inside the
 * nest tc_lane is rebound as an unsigned remainder of tc_tid: NVVM then knows
 * it lies in [0, 32) and folds the swizzle's XOR once per pair, where the
 * kernel's signed tc_tid % 32 (of tc_opaque_tid in a persistent loop: no
 * known sign) left it a per-element computation. Issue 12: element by
 * element, this epilogue store was about half of gemm.tile's NVRTC time
 * and 14 % of the flagship's, and 1000 / 350 of their SASS instructions. */
static bool pair_store_ok(const IrRegion *frag, const IrRegion *other, const int *od, int n) {
  const IrLayout *l = &frag->buf->layout;
  const IrBuffer *b = other->buf;
  int last = other->rank - 1;
  int64_t c0 = 0;
  if (frag->buf->dtype != DTYPE_F32 || !cuda_is_16bit(b->dtype) || b->scope != IR_SCOPE_SHARED || b->strides)
    return false;
  if (l->kind != IR_LAYOUT_FRAGMENT || l->frag != IR_FRAG_MMA_C || !l->cols || ir_layout_is_col_vector(l) ||
      l->cols_local % 2 != 0 || ir_layout_cols_padded(l))
    return false;
  if (n != 2 || od[1] != last || !ir_expr_is_int_const(other->start[last], &c0) || c0 % 2 != 0) return false;
  for (int d = 0; d < other->rank; d++)
    if (other->guard[d]) return false;
  return b->layout.kind == IR_LAYOUT_SWIZZLED || cuda_const(b->shape[last]) % 2 == 0;
}

/* Opens the loops over a fragment's rows (tc_rs, binding tc_r) and its
 * column pairs tc_cs in [cs_begin, cs_end) (binding tc_c, less
 * col_offset); the body goes at depth + 2, close_pair_nest ends them. */
static void open_pair_nest(Cuda *C, const IrLayout *l, int cs_begin, int cs_end, long long col_offset,
                           const char *comment, int depth) {
  StrBuf *o = C->out;
  cuda_open_unrolled_for(C, depth, "tc_rs", 0, l->rows_local, 1, comment);
  cuda_indent(C, depth + 1);
  sb_puts(o, "[[maybe_unused]] const long long tc_r = ");
  cuda_row_of(C, o, l, "tc_rs");
  sb_puts(o, ";\n");
  cuda_open_unrolled_for(C, depth + 1, "tc_cs", cs_begin, cs_end, 2, NULL);
  cuda_indent(C, depth + 2);
  sb_puts(o, "[[maybe_unused]] const long long tc_c = ");
  cuda_col_of(C, o, l, "tc_cs");
  if (col_offset) sb_printf(o, " - %lld", col_offset);
  sb_puts(o, ";\n");
}

static void close_pair_nest(Cuda *C, int depth) {
  for (int d = depth + 1; d >= depth; d--) {
    cuda_indent(C, d);
    sb_puts(C->out, "}\n");
  }
}

void cuda_emit_pair_nest(Cuda *C, const IrBuffer *frag, const IrBuffer *dst, IrExpr *const *idx, int cs_begin,
                         int cs_end, long long col_offset, const char *comment, SrcLoc loc, int depth) {
  const IrLayout *l = &frag->layout;
  StrBuf *o = C->out;
  open_pair_nest(C, l, cs_begin, cs_end, col_offset, comment, depth);
  cuda_indent(C, depth + 2);
  sb_printf(o, "tc_f32x2_to_%s_at(%s[tc_rs * %d + tc_cs], %s[tc_rs * %d + tc_cs + 1], &",
            dst->dtype == DTYPE_F16 ? "f16x2" : "bf16x2", frag->name, l->cols_local, frag->name, l->cols_local);
  cuda_emit_element(C, o, dst, idx, dst->rank, loc);
  sb_puts(o, ");\n");
  close_pair_nest(C, depth);
}

static void emit_pair_store(Cuda *C, const IrStmt *s, const IrRegion *frag, const IrRegion *other, IrExpr *const *idx,
                            int depth) {
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  sb_printf(o, "{  // %s -> %s, 32-bit pairs\n", frag->buf->name, other->buf->name);
  cuda_indent(C, depth + 1);
  sb_puts(o, "const int tc_lane = (int)((unsigned)tc_tid % 32u);  // known non-negative: the swizzle folds\n");
  cuda_emit_pair_nest(C, frag->buf, other->buf, idx, 0, frag->buf->layout.cols_local, 0, NULL, s->loc, depth + 1);
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}

/* A copy or atomic_add of an f32 MMA_C fragment into a global tile whose
 * columns are the tensor's last dimension (compact f32 for atomic_add; f32
 * or 16-bit, strided or not, for a copy): each thread's two adjacent
 * columns (slots tc_cs, tc_cs + 1) are adjacent in memory, and
 * tc_atomic_add_f32x2 adds them with one 8-byte vector reduction on sm_90
 * where the pair is 8-byte aligned (half the reduction requests of the L2;
 * the attention backward's dQ accumulation), tc_store_f32x2 stores them
 * with one 8-byte store (whole 32-byte sectors per warp instruction where
 * single floats wrote half of each: split-K's partial sums), and into a
 * 16-bit tile tc_store_f16x2 / tc_store_bf16x2 convert the pair at once
 * and store 4 bytes. */
static bool pair_global_ok(const IrRegion *frag, const IrRegion *other, const int *od, int n, bool atomic) {
  const IrLayout *l = &frag->buf->layout;
  const IrBuffer *b = other->buf;
  if (frag->buf->dtype != DTYPE_F32 || b->scope != IR_SCOPE_GLOBAL) return false;
  if (atomic && (b->dtype != DTYPE_F32 || b->strides)) return false;
  /* Stores: f32 or 16-bit, declared strides too (the last is 1: a pair's
   * columns stay adjacent; the helpers check the alignment). */
  if (!atomic && b->dtype != DTYPE_F32 && !cuda_is_16bit(b->dtype)) return false;
  if (l->kind != IR_LAYOUT_FRAGMENT || l->frag != IR_FRAG_MMA_C || !l->cols || ir_layout_is_col_vector(l) ||
      l->cols_local % 2 != 0 || ir_layout_cols_padded(l))
    return false;
  /* A pair is added when its first column is inside the tensor; with a
   * start that may be negative, column 0 can be a pair's second (start
   * -1): the element path then. */
  return n == 2 && od[1] == other->rank - 1 && !(other->guard[other->rank - 1] & IR_GUARD_LOWER);
}

/* tilec_device.cuh's helper for one pair into a global tile of dtype. */
static const char *pair_helper(DType dtype, bool atomic) {
  if (atomic) return "tc_atomic_add_f32x2";
  return dtype == DTYPE_F32 ? "tc_store_f32x2" : dtype == DTYPE_F16 ? "tc_store_f16x2" : "tc_store_bf16x2";
}

static void emit_pair_global(Cuda *C, const IrStmt *s, const IrRegion *frag, const IrRegion *other,
                             IrExpr *const *idx, IrExpr *rows_ok, IrExpr *col_ok, bool atomic, int depth) {
  IrModule *m = (IrModule *)C->m;
  const IrLayout *l = &frag->buf->layout;
  const IrBuffer *g = other->buf;
  const int last = g->rank - 1;
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  sb_printf(o, "{  // %s%s -> %s, column pairs\n", atomic ? "atomic_add " : "", frag->buf->name, g->name);
  open_pair_nest(C, l, 0, l->cols_local, 0, NULL, depth + 1);
  /* The pair's first column inside the tensor (and its rows); the second
   * may lie past its end. */
  IrExpr *cond = rows_ok && col_ok ? ir_binary(m, IR_OP_AND, rows_ok, col_ok, s->loc) : rows_ok ? rows_ok : col_ok;
  cuda_indent(C, depth + 3);
  if (cond) {
    sb_puts(o, "if (");
    cuda_emit_expr(C, o, cond);
    sb_puts(o, ") ");
  }
  sb_printf(o, "%s(&", pair_helper(g->dtype, atomic));
  cuda_emit_element(C, o, g, idx, g->rank, s->loc);
  sb_printf(o, ", %s[tc_rs * %d + tc_cs], %s[tc_rs * %d + tc_cs + 1], ", frag->buf->name, l->cols_local,
            frag->buf->name, l->cols_local);
  if (col_ok) {
    cuda_emit_expr(C, o, ir_binary(m, IR_OP_LT, ir_binary(m, IR_OP_ADD, idx[last], ir_int(m, 1, s->loc), s->loc),
                                   g->shape[last], s->loc));
  } else {
    sb_puts(o, "true");
  }
  sb_puts(o, ");\n");
  close_pair_nest(C, depth + 1);
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}

/* Copies where one side is a fragment: every thread moves its own elements
 * (atomic: atomic_add, the fragment is the source; a 1-D fragment's
 * replicated elements are added by their first holder only). */
static void emit_copy_fragment(Cuda *C, const IrStmt *s, int depth, bool atomic) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  const IrRegion *frag = src->buf->scope == IR_SCOPE_FRAGMENT ? src : dst;
  const IrRegion *other = frag == src ? dst : src;
  const IrLayout *l = &frag->buf->layout;
  StrBuf *o = C->out;
  if (other->buf->scope == IR_SCOPE_FRAGMENT) {
    if (!ir_layout_same_rows(&src->buf->layout, &dst->buf->layout) ||
        src->buf->layout.cols_local != dst->buf->layout.cols_local) {
      cuda_fail(C, s->loc, "copy between fragments '%s' and '%s' of different layouts", src->buf->name, dst->buf->name);
      return;
    }
    int n = l->rows_local * l->cols_local;
    DType from = src->buf->dtype, to = dst->buf->dtype;
    cuda_indent(C, depth);
    sb_printf(o, "#pragma unroll\n");
    cuda_indent(C, depth);
    if (from == DTYPE_F32 && cuda_is_16bit(to) && n % 2 == 0) {
      /* f32 -> f16/bf16 two at a time (one packed cvt per pair); stored as
       * one 32-bit pair where an in-flight wgmma reads the result. */
      const char *cvt = to == DTYPE_F16 ? "f16x2" : "bf16x2";
      if (cuda_frag_pairs(C, dst->buf))
        sb_printf(o, "for (int tc_e = 0; tc_e < %d; tc_e += 2) tc_f32x2_to_%s_at(%s[tc_e], %s[tc_e + 1], %s + tc_e);\n",
                  n, cvt, src->buf->name, src->buf->name, dst->buf->name);
      else
        sb_printf(o, "for (int tc_e = 0; tc_e < %d; tc_e += 2) tc_f32x2_to_%s(%s[tc_e], %s[tc_e + 1], %s[tc_e], %s[tc_e + 1]);\n",
                  n, cvt, src->buf->name, src->buf->name, dst->buf->name, dst->buf->name);
      return;
    }
    sb_printf(o, "for (int tc_e = 0; tc_e < %d; ++tc_e) %s[tc_e] = ", n, dst->buf->name);
    if (to == from) sb_printf(o, "%s[tc_e];\n", src->buf->name);
    else if (cuda_is_low_float(to) && cuda_is_low_float(from)) sb_printf(o, "%s(%s(%s[tc_e]));\n", cuda_from_f32(to), cuda_to_f32(from), src->buf->name);
    else if (cuda_is_low_float(to)) sb_printf(o, "%s((float)%s[tc_e]);\n", cuda_from_f32(to), src->buf->name);
    else if (cuda_is_low_float(from)) sb_printf(o, "(%s)%s(%s[tc_e]);\n", cuda_storage_type(to), cuda_to_f32(from), src->buf->name);
    else sb_printf(o, "(%s)%s[tc_e];\n", cuda_storage_type(to), src->buf->name);
    return;
  }
  /* Fragment <-> global or shared: the other side's tile dims take the
   * fragment's logical (row, col). */
  int od[IR_MAX_RANK];
  int n = cuda_tile_dims(other, od);
  bool colvec = ir_layout_is_col_vector(l);
  if (n != frag->buf->rank || (frag->buf->rank == 2) != (l->cols != 0 && !colvec)) {
    cuda_fail(C, s->loc, "copy between fragment '%s' and '%s': tile ranks differ", frag->buf->name, other->buf->name);
    return;
  }
  IrModule *m = (IrModule *)C->m;
  IrVar rv = {.name = "tc_r", .kind = IR_VAR_LOOP, .dtype = DTYPE_I64};
  IrVar cv = {.name = "tc_c", .kind = IR_VAR_LOOP, .dtype = DTYPE_I64};
  IrExpr *idx[IR_MAX_RANK];
  IrExpr *cond = NULL, *rows_ok = NULL, *col_ok = NULL; /* every guard; the other dims'; the last dim's */
  for (int d = 0, t = 0; d < other->rank; d++) {
    if (other->is_index[d]) {
      idx[d] = other->start[d];
    } else {
      IrExpr *v = ir_var_ref(m, t++ == 0 ? &rv : &cv, s->loc);
      idx[d] = ir_binary(m, IR_OP_ADD, other->start[d], v, s->loc);
    }
    if (other->guard[d]) {
      IrExpr *c = guard_check(m, other, d, idx[d], s->loc);
      cond = cond ? ir_binary(m, IR_OP_AND, cond, c, s->loc) : c;
      if (d != other->rank - 1) rows_ok = rows_ok ? ir_binary(m, IR_OP_AND, rows_ok, c, s->loc) : c;
      else col_ok = c;
    }
  }
  if (frag == src && pair_global_ok(frag, other, od, n, atomic)) {
    emit_pair_global(C, s, frag, other, idx, rows_ok, col_ok, atomic, depth);
    return;
  }
  if (frag == src && !atomic && !cond && pair_store_ok(frag, other, od, n)) {
    emit_pair_store(C, s, frag, other, idx, depth);
    return;
  }
  /* Element stores into a tile in narrowed panels (the N-major B of a
   * gemm whose warpgroups split N: swizzle-layout's panels narrower than
   * tc_panel_cols, SWZ 32 / 64) rebind tc_lane as an unsigned remainder, as
   * the pair stores do: NVVM then folds each store's panel and swizzle
   * into the thread's base plus a constant. With the signed lane the
   * backward's dS^T store at dim 64 kept its addresses live across the
   * loop and ptxas spilled 116 bytes; with it, none. (Other swizzled
   * tiles would gain the same: 44 bytes -> 0 in that kernel before the
   * split, by ptxas; not applied to them here, which would change the
   * code of kernels the split does not touch.) */
  const char *swz = other->buf->scope == IR_SCOPE_SHARED ? cuda_swizzle_arg(other->buf) : "false";
  const bool unsigned_lane = frag == src && !atomic && (!strcmp(swz, "32") || !strcmp(swz, "64") || !strcmp(swz, "128"));
  if (unsigned_lane) {
    cuda_indent(C, depth);
    sb_printf(o, "{  // %s -> %s\n", frag->buf->name, other->buf->name);
    depth++;
    cuda_indent(C, depth);
    sb_puts(o, "const int tc_lane = (int)((unsigned)tc_tid % 32u);  // known non-negative: the swizzle folds\n");
  }
  /* A column vector's one dimension is its column: bound to tc_r too. */
  int inner = cuda_open_slots(C, l, "tc_r", l->cols && !colvec ? "tc_c" : NULL, depth);
  const char *slot = l->cols ? "[tc_rs * %d + tc_cs]" : "[tc_rs]";
  char slot_text[64];
  snprintf(slot_text, sizeof slot_text, slot, l->cols_local);
  IrExpr *elem = ir_load(m, other->buf, idx, s->loc);
  cuda_indent(C, inner);
  if (frag == dst) {
    /* global/shared -> fragment: zero outside the tensor. */
    sb_printf(o, "%s%s = ", dst->buf->name, slot_text);
    IrExpr *v = ir_cast(m, dst->buf->dtype, elem, s->loc);
    if (cond) v = ir_select(m, cond, v, ir_cast(m, dst->buf->dtype, ir_float(m, 0.0, DTYPE_F32, s->loc), s->loc), s->loc);
    if (cuda_is_low_float(dst->buf->dtype)) cuda_emit_stored_value(C, o, dst->buf->dtype, v);
    else cuda_emit_expr(C, o, v);
    sb_puts(o, ";\n");
  } else {
    StrBuf lead;
    sb_init(&lead);
    bool once = atomic && first_holder(l, &lead);
    if (cond || once) {
      sb_puts(o, "if (");
      if (once) sb_printf(o, cond ? "(%s) && " : "%s", lead.data);
      if (cond) cuda_emit_expr(C, o, cond);
      sb_puts(o, ") ");
    }
    sb_free(&lead);
    if (atomic) sb_puts(o, "atomicAdd(&");
    cuda_emit_element(C, o, other->buf, idx, other->rank, s->loc);
    sb_puts(o, atomic ? ", " : " = ");
    char val[128];
    if (cuda_is_low_float(src->buf->dtype))
      snprintf(val, sizeof val, "%s(%s%s)", cuda_to_f32(src->buf->dtype),
               src->buf->name, slot_text);
    else
      snprintf(val, sizeof val, "%s%s", src->buf->name, slot_text);
    DType to = other->buf->dtype;
    if (cuda_is_low_float(to)) sb_printf(o, "%s((float)%s)", cuda_from_f32(to), val);
    else sb_printf(o, "(%s)%s", cuda_storage_type(to), val);
    sb_puts(o, atomic ? ");\n" : ";\n");
  }
  cuda_close_slots(C, l, inner);
  if (unsigned_lane) {
    cuda_indent(C, depth - 1);
    sb_puts(o, "}\n");
  }
}

/* Opens a loop that strides the points of region r's tile (its non-index
 * dimensions of extent > 1) over the block's threads, binding one variable
 * per loop dimension in vars. The caller closes it with one "}". */
static void open_strided(Cuda *C, const IrRegion *r, IrVar *vars, int depth) {
  static const char *names[IR_MAX_RANK] = {"tc_t0", "tc_t1", "tc_t2", "tc_t3", "tc_t4", "tc_t5", "tc_t6", "tc_t7"};
  int64_t ext[IR_MAX_RANK], total = 1;
  int n = 0;
  for (int d = 0; d < r->rank; d++) {
    int64_t e = cuda_const(r->extent[d]);
    if (!r->is_index[d] && e != 1) ext[n++] = e, total *= e;
  }
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  sb_printf(o, "for (long long tc_f = tc_tid; tc_f < %lld; tc_f += %d) {\n", (long long)total, C->threads);
  int64_t stride = total;
  for (int t = 0; t < n; t++) {
    stride /= ext[t];
    cuda_indent(C, depth + 1);
    sb_printf(o, "const long long %s = tc_f / %lld %% %lld;\n", names[t], (long long)stride, (long long)ext[t]);
    vars[t] = (IrVar){.name = names[t], .kind = IR_VAR_LOOP, .dtype = DTYPE_I64};
  }
}

/* The indices of region r at the tile point given by vars (as bound by
 * open_strided), and the AND of its guards (NULL when none). */
static IrExpr *region_point(Cuda *C, const IrRegion *r, IrVar *vars, IrExpr **idx, SrcLoc loc) {
  IrModule *m = (IrModule *)C->m;
  IrExpr *cond = NULL;
  for (int d = 0, t = 0; d < r->rank; d++) {
    bool loops = !r->is_index[d] && cuda_const(r->extent[d]) != 1;
    idx[d] = loops ? ir_binary(m, IR_OP_ADD, r->start[d], ir_var_ref(m, &vars[t++], loc), loc) : r->start[d];
    if (r->guard[d]) {
      IrExpr *c = guard_check(m, r, d, idx[d], loc);
      cond = cond ? ir_binary(m, IR_OP_AND, cond, c, loc) : c;
    }
  }
  return cond;
}

/* dst[idx] = value (atomic: atomicAdd(&dst[idx], value)), under
 * `if (cond)` when there is a guard. */
static void guarded_store(Cuda *C, const IrBuffer *dst, IrExpr **idx, IrExpr *cond, const IrExpr *value, SrcLoc loc,
                          int depth, bool atomic) {
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  if (cond) {
    sb_puts(o, "if (");
    cuda_emit_expr(C, o, cond);
    sb_puts(o, ") ");
  }
  if (atomic) sb_puts(o, "atomicAdd(&");
  cuda_emit_element(C, o, dst, idx, dst->rank, loc);
  sb_puts(o, atomic ? ", " : " = ");
  cuda_emit_stored_value(C, o, dst->dtype, value);
  sb_puts(o, atomic ? ");\n" : ";\n");
}

/* Any other copy: one element per thread, strided over the tile. atomic:
 * atomic_add, which skips (adds nothing) where the source is outside. */
static void emit_copy_generic(Cuda *C, const IrStmt *s, int depth, bool atomic) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  IrModule *m = (IrModule *)C->m;
  IrVar vars[IR_MAX_RANK];
  IrExpr *si[IR_MAX_RANK], *di[IR_MAX_RANK];
  open_strided(C, dst, vars, depth);
  /* Both tiles have the same non-unit dimensions (check-shapes). */
  IrExpr *src_ok = region_point(C, src, vars, si, s->loc);
  IrExpr *dst_ok = region_point(C, dst, vars, di, s->loc);
  IrExpr *v = ir_cast(m, dst->buf->dtype, ir_load(m, src->buf, si, s->loc), s->loc);
  if (src_ok && atomic)
    dst_ok = dst_ok ? ir_binary(m, IR_OP_AND, dst_ok, src_ok, s->loc) : src_ok;
  else if (src_ok)
    v = ir_select(m, src_ok, v, ir_cast(m, dst->buf->dtype, ir_float(m, 0.0, DTYPE_F32, s->loc), s->loc), s->loc);
  guarded_store(C, dst->buf, di, dst_ok, v, s->loc, depth + 1, atomic);
  cuda_indent(C, depth);
  sb_puts(C->out, "}\n");
}

/* A global <-> whole-shared copy of a 16-bit 2-D (or 1-D) tile whose columns
 * are the tensor's contiguous last dimension: the 16-byte tile transfer.
 * 8-bit tiles (FP8 codes, 16 per chunk) and 32-bit ones (f32, i32: 4 per
 * chunk, e.g. a row of log-sum-exps) go global -> shared only. The shared
 * side is a 2-D tile, or a 1-D one, either of them staged (a leading stage
 * dimension, software-pipeline). */
static bool is_tile_transfer(const IrStmt *s) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  bool g2s = src->buf->scope == IR_SCOPE_GLOBAL && dst->buf->scope == IR_SCOPE_SHARED;
  bool s2g = src->buf->scope == IR_SCOPE_SHARED && dst->buf->scope == IR_SCOPE_GLOBAL;
  /* FP8 codes widened into an f16/bf16 tile: tc_copy_g2s_fp8_widen (8
   * codes -> one 16-byte chunk per thread step; synchronous, no cp.async). */
  bool widen = g2s && !s->u.copy.async && dtype_is_fp8(src->buf->dtype) &&
               (dst->buf->dtype == DTYPE_F16 || dst->buf->dtype == DTYPE_BF16);
  if (!(g2s || s2g) || (src->buf->dtype != dst->buf->dtype && !widen)) return false;
  int es = dtype_size(dst->buf->dtype);
  if (!(es == 2 || ((es == 1 || es == 4) && g2s))) return false;
  const IrRegion *glob = g2s ? src : dst, *shr = g2s ? dst : src;
  int gd[IR_MAX_RANK], sd[IR_MAX_RANK];
  int n = cuda_tile_dims(glob, gd);
  int r = shr->buf->rank;
  /* 32-bit tiles: plain row-major only (tc_copy_g2s). */
  if (es == 4 && shr->buf->layout.kind != IR_LAYOUT_ROW_MAJOR) return false;
  const bool one_d = n == 1 && (r == 1 || (r == 2 && shr->is_index[0] && cuda_tile_dims(shr, sd) == 1));
  return (n == 2 || n == 1) && gd[n - 1] == glob->buf->rank - 1 && (r == 2 || r == 3 || one_d) &&
         cuda_const(shr->buf->shape[r - 1]) % (16 / es) == 0;
}

void cuda_emit_copy(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  if (s->u.copy.tma) {
    cuda_emit_tma_copy(C, s, depth);
  } else if (src->buf->scope == IR_SCOPE_FRAGMENT || dst->buf->scope == IR_SCOPE_FRAGMENT) {
    emit_copy_fragment(C, s, depth, false);
  } else if (is_tile_transfer(s)) {
    emit_tile_transfer(C, s, depth);
  } else {
    if (s->u.copy.async) {
      cuda_fail(C, s->loc, "copy %s -> %s cannot be issued asynchronously", src->buf->name, dst->buf->name);
      return;
    }
    emit_copy_generic(C, s, depth, false);
  }
}

void cuda_emit_atomic_add(Cuda *C, const IrStmt *s, int depth) {
  const IrBuffer *src = s->u.copy.src.buf;
  if (src->scope == IR_SCOPE_FRAGMENT) {
    emit_copy_fragment(C, s, depth, true);
  } else {
    emit_copy_generic(C, s, depth, true);
  }
}

/* The condition under which this thread is the one, among the threads that
 * run the same iteration of the current statement, that adds it: outside
 * any parallel loop every thread runs the statement (thread 0 adds); a
 * parallel nest strided over the threads gives each iteration to one
 * thread; a nest over a fragment is as the fragment's layout
 * (first_holder). Writes the condition to sb; false when there is none. */
static bool one_adder(const Cuda *C, StrBuf *sb) {
  if (C->in_producer) return false; /* one elected thread already */
  if (!C->nest) {
    sb_puts(sb, "tc_tid == 0");
    return true;
  }
  return C->nest->layout && first_holder(C->nest->layout, sb);
}

/* atomic_add(G[i, j], v): atomicAdd(&G[...], v), by one thread per
 * iteration (one_adder). The bounds check is guard-elements' `if` around
 * the statement. */
void cuda_emit_atomic_store(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  cuda_indent(C, depth);
  StrBuf cond;
  sb_init(&cond);
  if (one_adder(C, &cond)) sb_printf(o, "if (%s) ", cond.data);
  sb_free(&cond);
  sb_puts(o, "atomicAdd(&");
  cuda_emit_element(C, o, s->u.store.buf, s->u.store.idx, s->u.store.nidx, s->loc);
  sb_puts(o, ", ");
  cuda_emit_stored_value(C, o, s->u.store.buf->dtype, s->u.store.value);
  sb_puts(o, ");\n");
}

/* result = atomic_add(G[i], v), the returning form (once per block, never
 * in a parallel loop): an acquire-release point of the whole block at
 * device scope, the pattern of CUDA's threadFenceReduction sample and of
 * CUTLASS's split-K semaphore:
 *     <block barrier>           every thread's earlier writes, then
 *     if (tc_tid == 0) {
 *       __threadfence();         release: they are visible before the count
 *       old = atomicAdd(&G[i], v);
 *       __threadfence();         acquire: what blocks that counted before wrote
 *       slot[0] = old;
 *     }
 *     <block barrier>           ... is visible to every thread after this
 *     const T result = slot[0];
 * The barriers are the kernel's (among the consumer warps after a
 * warp_roles split, whose thread 0 is a consumer). The guard (an index
 * outside G) skips the atomic and leaves old 0. */
void cuda_emit_atomic_fetch(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  const IrBuffer *b = s->u.store.buf, *slot = s->u.store.slot;
  const IrVar *r = s->u.store.result;
  if (C->nest || C->in_producer || !slot) {
    cuda_fail(C, s->loc, "atomic_add returning the old value must run once per block, outside parallel loops");
    return;
  }
  const char *ty = cuda_storage_type(b->dtype);
  cuda_indent(C, depth);
  sb_printf(o, "// %s = atomic_add(%s[...]): acq_rel at device scope, once per block\n", r->name, b->name);
  cuda_emit_barrier(C, depth);
  cuda_indent(C, depth);
  sb_puts(o, "if (tc_tid == 0) {\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "__threadfence();\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "%s tc_old = 0;\n", ty);
  cuda_indent(C, depth + 1);
  if (s->u.store.guard) {
    sb_puts(o, "if (");
    cuda_emit_expr(C, o, s->u.store.guard);
    sb_puts(o, ") ");
  }
  sb_puts(o, "tc_old = atomicAdd(&");
  cuda_emit_element(C, o, b, s->u.store.idx, s->u.store.nidx, s->loc);
  sb_printf(o, ", (%s)(", ty);
  cuda_emit_expr(C, o, s->u.store.value);
  sb_puts(o, "));\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "__threadfence();\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "%s[0] = tc_old;\n", slot->name);
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
  cuda_emit_barrier(C, depth);
  cuda_indent(C, depth);
  sb_printf(o, "const %s %s = %s[0];\n", cuda_value_type(r->dtype), r->name, slot->name);
}

void cuda_emit_fill(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *dst = &s->u.fill.dst;
  StrBuf *o = C->out;
  if (dst->buf->scope == IR_SCOPE_FRAGMENT) {
    const IrLayout *l = &dst->buf->layout;
    cuda_indent(C, depth);
    sb_printf(o, "#pragma unroll\n");
    cuda_indent(C, depth);
    sb_printf(o, "for (int tc_e = 0; tc_e < %d; ++tc_e) %s[tc_e] = ", l->rows_local * l->cols_local, dst->buf->name);
    cuda_emit_stored_value(C, o, dst->buf->dtype, s->u.fill.value);
    sb_puts(o, ";\n");
    return;
  }
  /* shared/global: every thread stores its share of the tile. */
  IrVar vars[IR_MAX_RANK];
  IrExpr *di[IR_MAX_RANK];
  open_strided(C, dst, vars, depth);
  IrExpr *ok = region_point(C, dst, vars, di, s->loc);
  guarded_store(C, dst->buf, di, ok, s->u.fill.value, s->loc, depth + 1, false);
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}
