/* expr.c - CUDA expressions and element access.
 *
 * Scalar expressions become CUDA C++ in which f16/bf16 values are computed
 * as float: loads of 16-bit elements and f16/bf16 scalar parameters widen
 * through tc_f16_to_f32/tc_bf16_to_f32, casts to them round, and a stored
 * value is narrowed (cuda_emit_stored_value). Elements are addressed by
 * scope: a global or unswizzled tile by a row-major (Horner) index (a
 * tensor declared with strides: sum of index times stride), a
 * swizzled shared tile through tc_smem_index<rows, cols, SWZ>, a fragment by
 * its register slot in the enclosing parallel loop (fragment.c).
 * The expression walk itself is compiler/expr_writer.c's; this file is the
 * CUDA dialect of it: literals, 16-bit loads and casts, the CUDA columns of
 * IR_INTRINSICS (ir_ops.def) and the 2-ulp f32 division. */
#include <math.h>

#include "cuda_emit.h"
#include "expr_writer.h"

/* ---- element access -------------------------------------------------------------- */

/* Linear index of idx in a row-major buffer, Horner style:
 * ((i0 * s1 + i1) * s2 + i2) ..., or for a tensor declared with strides
 * the sum of index times stride. */
void cuda_linear_index(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx) {
  if (b->strides) {
    /* A tensor with declared strides: i0 * s0 + ... + i_last (stride 1). */
    sb_puts(sb, "(");
    for (int d = 0; d < b->rank; d++) {
      sb_puts(sb, d ? " + (long long)(" : "(long long)(");
      cuda_emit_expr(C, sb, idx[d]);
      sb_puts(sb, ")");
      if (d < b->rank - 1) {
        sb_puts(sb, " * (");
        cuda_emit_expr(C, sb, b->strides[d]);
        sb_puts(sb, ")");
      }
    }
    sb_puts(sb, ")");
    return;
  }
  for (int d = 0; d < b->rank; d++) sb_puts(sb, "(");
  sb_puts(sb, "(long long)(");
  cuda_emit_expr(C, sb, idx[0]);
  sb_puts(sb, ")");
  for (int d = 1; d < b->rank; d++) {
    sb_puts(sb, ") * (");
    cuda_emit_expr(C, sb, b->shape[d]);
    sb_puts(sb, ") + (");
    cuda_emit_expr(C, sb, idx[d]);
    sb_puts(sb, ")");
  }
  sb_puts(sb, ")");
}

/* The SWZ template argument of a shared tile: false (row-major), true
 * (swizzled rows) or 2 (panels, wgmma operands: the device header derives
 * the panel width from the tile's columns and element size, tc_panel_cols,
 * the same rule as swizzle-layout's); panels narrower than that rule's
 * (swizzle-layout's, for the slices of a gemm whose warpgroups split N)
 * name their width in bytes: 32, 64 (tc_swz_panel_cols). */
const char *cuda_swizzle_arg(const IrBuffer *b) {
  if (b->layout.kind != IR_LAYOUT_SWIZZLED) return "false";
  if (!b->layout.panel_cols) return "true";
  const int es = dtype_size(b->dtype), bytes = (int)cuda_const(b->shape[b->rank - 1]) * es;
  const int widest = bytes % 128 == 0 ? 128 : bytes % 64 == 0 ? 64 : 32; /* tc_panel_cols */
  const int panel = b->layout.panel_cols * es;
  if (panel == widest) return "2";
  return panel == 64 ? "64" : panel == 32 ? "32" : "128";
}

/* Element index of a 2-D (or staged 3-D) shared tile, swizzle applied. */
static void smem_index(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx) {
  int r = b->rank;
  if (b->layout.kind != IR_LAYOUT_SWIZZLED || r < 2) {
    cuda_linear_index(C, sb, b, idx);
    return;
  }
  int64_t rows = cuda_const(b->shape[r - 2]), cols = cuda_const(b->shape[r - 1]);
  sb_puts(sb, "(");
  if (r == 3) {
    sb_puts(sb, "(long long)(");
    cuda_emit_expr(C, sb, idx[0]);
    sb_printf(sb, ") * %lld + ", (long long)(rows * cols));
  }
  /* 8-bit tiles (FP8) name their element size; 16-bit ones take the default. */
  sb_printf(sb, "tc_smem_index<%lld, %lld, %s%s>((int)(", (long long)rows, (long long)cols, cuda_swizzle_arg(b),
            dtype_size(b->dtype) == 1 ? ", 1" : "");
  cuda_emit_expr(C, sb, idx[r - 2]);
  sb_puts(sb, "), (int)(");
  cuda_emit_expr(C, sb, idx[r - 1]);
  sb_puts(sb, ")))");
}

void cuda_emit_element(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx, int nidx, SrcLoc loc) {
  switch (b->scope) {
  case IR_SCOPE_FRAGMENT:
    cuda_fragment_slot(C, sb, b, idx, nidx, loc);
    return;
  case IR_SCOPE_SHARED:
    sb_printf(sb, "%s[", b->name);
    smem_index(C, sb, b, idx);
    sb_puts(sb, "]");
    return;
  default:
    sb_printf(sb, "%s[", b->name);
    cuda_linear_index(C, sb, b, idx);
    sb_puts(sb, "]");
    return;
  }
}

/* ---- The CUDA dialect of expressions (compiler/expr_writer.h) ------------- */

/* Broken IR writes a 0 (the verifier reports it before we get here). */
static bool cuda_check(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  if (e && (unsigned)e->kind < IR_EXPR_COUNT) return true;
  sb_puts(sb, "0");
  return false;
}

static void cuda_int_literal(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  if (e->dtype == DTYPE_BOOL) sb_puts(sb, e->u.int_value ? "true" : "false");
  else sb_printf(sb, "%lldLL", (long long)e->u.int_value);
}

static void cuda_float_literal(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  double v = e->u.float_value;
  const char *suffix = e->dtype == DTYPE_F64 ? "" : "f";
  if (isinf(v)) sb_printf(sb, "(%s__int_as_float(0x7f800000))", v < 0 ? "-" : "");
  else if (isnan(v)) sb_puts(sb, "__int_as_float(0x7fffffff)");
  else sb_printf(sb, "%.17g%s%s", v, (v == floor(v) && fabs(v) < 1e15) ? ".0" : "", suffix);
}

static void cuda_var(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  /* f16/bf16 scalar parameters arrive as their bits. */
  if (cuda_is_low_float(e->u.var->dtype))
    sb_printf(sb, "%s(%s)", cuda_to_f32(e->u.var->dtype), e->u.var->name);
  else
    sb_puts(sb, e->u.var->name);
}

/* f16/bf16 elements are stored as tc_half/tc_bf16: loads widen them. */
static void cuda_load(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  const IrBuffer *b = e->u.load.buf;
  if (cuda_is_low_float(b->dtype)) {
    sb_printf(sb, "%s(", cuda_to_f32(b->dtype));
    cuda_emit_element(w->ctx, sb, b, e->u.load.idx, e->u.load.nidx, e->loc);
    sb_puts(sb, ")");
  } else {
    cuda_emit_element(w->ctx, sb, b, e->u.load.idx, e->u.load.nidx, e->loc);
  }
}

static void cuda_cast(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  DType to = e->dtype;
  /* f16/bf16 values live as float: a cast to them rounds. */
  if (cuda_is_low_float(to)) sb_printf(sb, "%s(%s((float)(", cuda_to_f32(to), cuda_from_f32(to));
  /* A float to a narrow integer goes through long long (saturating, as
   * cvt.rzi.s64 does; the C backend's tc_f2i64), then wraps to the width. */
  else if (dtype_is_int(to) && to != DTYPE_I64 && to != DTYPE_I32 && dtype_is_float(e->u.cast_src->dtype))
    sb_printf(sb, "((%s)(long long)(", cuda_value_type(to));
  else sb_printf(sb, "((%s)(", cuda_value_type(to));
  expr_write(w, sb, e->u.cast_src);
  sb_puts(sb, cuda_is_low_float(to) ? ")))" : "))");
}

/* CUDA math and runtime/device helpers: the CUDA columns of IR_INTRINSICS. */
static const ExprSpellings cuda_intrinsics[] = {
#define X(name, spelling, arity, result, fold, c_int, c_f32, c_f64, cuda_int, cuda_f32, cuda_f64) \
  {cuda_int, cuda_f32, cuda_f64},
    IR_INTRINSICS(X)
#undef X
};

static const char *cuda_intrinsic(const ExprWriter *w, const IrExpr *e) {
  if ((unsigned)e->u.call.fn >= IR_INTRINSIC_COUNT) return "?";
  return expr_spelling(&cuda_intrinsics[e->u.call.fn], e->dtype);
}

/* 2-ulp division (docs/gpu-codegen.md); integer and f64 stay exact. */
/* Shifts: the count modulo 64, << on the unsigned bits, >> arithmetic (the
 * C backend's semantics, docs/language.md). */
static const char *cuda_binary_call(const ExprWriter *w, const IrExpr *e) {
  const char *fast = cuda_fastdiv_call(w->ctx, e);
  if (fast) return fast;
  if (e->u.op.op == IR_OP_SHL) return "((long long)((unsigned long long)($0) << (($1) & 63)))";
  if (e->u.op.op == IR_OP_SHR) return "((long long)($0) >> (($1) & 63))";
  return e->u.op.op == IR_OP_DIV && e->dtype == DTYPE_F32 ? "tc_fdiv" : NULL;
}

static const ExprDialect cuda_dialect = {
    .minimal_parens = false,
    .select = {"(", " ? ", " : ", ")"},
    .check = cuda_check,
    .int_literal = cuda_int_literal,
    .float_literal = cuda_float_literal,
    .var = cuda_var,
    .load = cuda_load,
    .cast = cuda_cast,
    .intrinsic = cuda_intrinsic,
    .binary_call = cuda_binary_call,
};

void cuda_emit_expr(Cuda *C, StrBuf *sb, const IrExpr *e) {
  ExprWriter w = {&cuda_dialect, C};
  expr_write(&w, sb, e);
}

/* value converted for storing into a buffer of dtype t */
void cuda_emit_stored_value(Cuda *C, StrBuf *sb, DType t, const IrExpr *v) {
  if (cuda_is_low_float(t)) {
    sb_printf(sb, "%s((float)(", cuda_from_f32(t));
    /* Skip the rounding cast the value may already carry. */
    if (v->kind == IR_EXPR_CAST && v->dtype == t) v = v->u.cast_src;
    cuda_emit_expr(C, sb, v);
    sb_puts(sb, "))");
  } else {
    sb_printf(sb, "(%s)(", cuda_storage_type(t));
    cuda_emit_expr(C, sb, v);
    sb_puts(sb, ")");
  }
}
