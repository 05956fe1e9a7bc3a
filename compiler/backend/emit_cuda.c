/* emit_cuda.c - the CUDA backend: GPU-pass IR in, CUDA C++ out.
 *
 * Input: the IR after insert-barriers. Layouts are decided (fragments spread
 * over threads, swizzled shared tiles, pipeline stages, barriers), so this
 * file only translates:
 *   - a kernel becomes `extern "C" __global__ void tilec_<name>(tensors...,
 *     scalars..., dynamic symbols as long long)`; shared buffers are carved
 *     out of one dynamic shared-memory array (128-byte aligned offsets, 1 KB
 *     in kernels with wgmma);
 *   - fragments become per-thread register arrays; a parallel loop over a
 *     fragment becomes fully unrolled loops over the thread's row and column
 *     slots (docs/gpu-codegen.md gives the formulas), a parallel loop that
 *     touches no fragment is strided over the block's threads;
 *   - tile ops become the templates of runtime/device/tilec_tile.cuh
 *     (tc_copy_g2s, tc_gemm_ss, tc_gemm_rs), of tilec_wgmma.cuh for gemms
 *     marked wgmma (tc_gemm_wgmma_ss/_rs; barriers then fence the async
 *     proxy; WGMMA_WAIT becomes tc_wgmma_drain), or short per-thread loops
 *     (fragment <-> global/shared copies, fills, row reductions with
 *     warp shuffles).
 * The output includes only our own device headers. Anything the GPU path
 * cannot map is reported with the statement's location. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "backend.h"

typedef struct Nest {
  const IrVar *i, *j;     /* the loop variables of the parallel nest (j may be NULL) */
  const IrLayout *layout; /* the driving fragment layout, NULL when strided */
} Nest;

typedef struct Cuda {
  const IrModule *m;
  const IrKernel *k;
  StrBuf *out;
  Diag *diag;
  bool failed;
  int threads;
  int smem_offset;
  const Nest *nest; /* innermost parallel nest being emitted, or NULL */
  int tmp;
} Cuda;

static void fail(Cuda *C, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(Cuda *C, SrcLoc loc, const char *fmt, ...) {
  if (C->failed) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_error(C->diag, loc, "CUDA backend: %s", msg);
  C->failed = true;
}

static void ind(Cuda *C, int depth) { sb_indent(C->out, depth + 1); }

static const char *storage_type(DType t) {
  switch (t) {
  case DTYPE_BOOL: return "bool";
  case DTYPE_I32: return "int";
  case DTYPE_I64: return "long long";
  case DTYPE_F16: return "tc_half";
  case DTYPE_BF16: return "tc_bf16";
  case DTYPE_F32: return "float";
  case DTYPE_F64: return "double";
  default: return "float";
  }
}

static bool is_16bit(DType t) { return t == DTYPE_F16 || t == DTYPE_BF16; }

/* The type arithmetic on a value of t happens in. */
static const char *value_type(DType t) {
  return t == DTYPE_F16 || t == DTYPE_BF16 ? "float" : storage_type(t);
}

static int64_t const_of(const IrExpr *e) {
  int64_t v = 0;
  ir_expr_is_int_const(e, &v);
  return v;
}

static int elems_of(const IrBuffer *b) {
  int64_t n = 1;
  for (int d = 0; d < b->rank; d++) n *= const_of(b->shape[d]);
  return (int)n;
}

/* ---- layout formulas (docs/gpu-codegen.md) ---------------------------------- */

static void row_expr(StrBuf *sb, const IrLayout *l, const char *rs) {
  int mw = l->rows / l->warps_m;
  sb_printf(sb, "((tc_warp / %d) * %d + (%s / 2) * 16 + (%s %% 2) * 8 + tc_lane / 4)", l->warps_n, mw, rs, rs);
}

static void rowgroup_row(StrBuf *sb, const IrLayout *l, int threads, const char *rs) {
  if (l->rows_local == 1) sb_printf(sb, "(tc_tid / %d)", l->group);
  else sb_printf(sb, "(tc_tid + %d * %s)", threads, rs);
}

static void row_of(Cuda *C, StrBuf *sb, const IrLayout *l, const char *rs) {
  if (l->frag == IR_FRAG_MMA_C) row_expr(sb, l, rs);
  else rowgroup_row(sb, l, C->threads, rs);
}

static void col_of(Cuda *C, StrBuf *sb, const IrLayout *l, const char *cs) {
  if (l->frag == IR_FRAG_MMA_C) {
    int nw = l->cols / l->warps_n;
    sb_printf(sb, "((tc_warp %% %d) * %d + (%s / 2) * 8 + (tc_lane %% 4) * 2 + %s %% 2)", l->warps_n, nw, cs, cs);
  } else if (l->rows_local == 1 && l->group > 1) {
    sb_printf(sb, "(tc_tid %% %d + %d * %s)", l->group, l->group, cs);
  } else {
    sb_printf(sb, "%s", cs);
  }
}

/* ---- expressions ---------------------------------------------------------------- */

static void emit_expr(Cuda *C, StrBuf *sb, const IrExpr *e);

static void float_literal(StrBuf *sb, double v, DType t) {
  const char *suffix = t == DTYPE_F64 ? "" : "f";
  if (isinf(v)) sb_printf(sb, "(%s__int_as_float(0x7f800000))", v < 0 ? "-" : "");
  else if (isnan(v)) sb_puts(sb, "__int_as_float(0x7fffffff)");
  else sb_printf(sb, "%.17g%s%s", v, (v == floor(v) && fabs(v) < 1e15) ? ".0" : "", suffix);
}

/* Linear index of idx in a row-major buffer, Horner style:
 * ((i0 * s1 + i1) * s2 + i2) ... */
static void linear_index(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx) {
  for (int d = 0; d < b->rank; d++) sb_puts(sb, "(");
  sb_puts(sb, "(long long)(");
  emit_expr(C, sb, idx[0]);
  sb_puts(sb, ")");
  for (int d = 1; d < b->rank; d++) {
    sb_puts(sb, ") * (");
    emit_expr(C, sb, b->shape[d]);
    sb_puts(sb, ") + (");
    emit_expr(C, sb, idx[d]);
    sb_puts(sb, ")");
  }
  sb_puts(sb, ")");
}

/* The SWZ template argument of a shared tile: false (row-major), true
 * (swizzled rows) or 2 (64-column panels, wgmma operands). */
static const char *swz_arg(const IrBuffer *b) {
  if (b->layout.kind != IR_LAYOUT_SWIZZLED) return "false";
  return b->layout.panel_cols ? "2" : "true";
}

/* Element index of a 2-D (or staged 3-D) shared tile, swizzle applied. */
static void smem_index(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx) {
  int r = b->rank;
  if (b->layout.kind != IR_LAYOUT_SWIZZLED || r < 2) {
    linear_index(C, sb, b, idx);
    return;
  }
  int64_t rows = const_of(b->shape[r - 2]), cols = const_of(b->shape[r - 1]);
  sb_puts(sb, "(");
  if (r == 3) {
    sb_puts(sb, "(long long)(");
    emit_expr(C, sb, idx[0]);
    sb_printf(sb, ") * %lld + ", (long long)(rows * cols));
  }
  sb_printf(sb, "tc_smem_index<%lld, %lld, %s>((int)(", (long long)rows, (long long)cols, swz_arg(b));
  emit_expr(C, sb, idx[r - 2]);
  sb_puts(sb, "), (int)(");
  emit_expr(C, sb, idx[r - 1]);
  sb_puts(sb, ")))");
}

/* The register slot of a fragment element inside the current parallel nest. */
static bool fragment_slot(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx, int nidx, SrcLoc loc) {
  const Nest *n = C->nest;
  if (!n || !n->layout) {
    fail(C, loc, "fragment '%s' is indexed outside a parallel loop over it", b->name);
    return false;
  }
  bool by_i = nidx >= 1 && idx[0]->kind == IR_EXPR_VAR && idx[0]->u.var == n->i;
  bool by_j = nidx == 2 && n->j && idx[1]->kind == IR_EXPR_VAR && idx[1]->u.var == n->j;
  const IrLayout *l = &b->layout;
  if (b->rank == 2 && by_i && by_j && l->rows_local == n->layout->rows_local && l->frag == n->layout->frag &&
      ir_layout_same_rows(l, n->layout) && l->cols == n->layout->cols) {
    sb_printf(sb, "%s[tc_rs * %d + tc_cs]", b->name, l->cols_local);
    return true;
  }
  if (b->rank == 1 && by_i && ir_layout_same_rows(l, n->layout)) {
    sb_printf(sb, "%s[tc_rs]", b->name);
    return true;
  }
  fail(C, loc, "fragment '%s' is indexed in a way its layout (%s) cannot serve in this parallel loop", b->name,
       ir_layout_str(C->m->arena, l));
  return false;
}

static void emit_element(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx, int nidx, SrcLoc loc) {
  switch (b->scope) {
  case IR_SCOPE_FRAGMENT:
    fragment_slot(C, sb, b, idx, nidx, loc);
    return;
  case IR_SCOPE_SHARED:
    sb_printf(sb, "%s[", b->name);
    smem_index(C, sb, b, idx);
    sb_puts(sb, "]");
    return;
  default:
    sb_printf(sb, "%s[", b->name);
    linear_index(C, sb, b, idx);
    sb_puts(sb, "]");
    return;
  }
}

static void emit_load(Cuda *C, StrBuf *sb, const IrExpr *e) {
  const IrBuffer *b = e->u.load.buf;
  if (b->dtype == DTYPE_F16 || b->dtype == DTYPE_BF16) {
    sb_puts(sb, b->dtype == DTYPE_F16 ? "tc_f16_to_f32(" : "tc_bf16_to_f32(");
    emit_element(C, sb, b, e->u.load.idx, e->u.load.nidx, e->loc);
    sb_puts(sb, ")");
  } else {
    emit_element(C, sb, b, e->u.load.idx, e->u.load.nidx, e->loc);
  }
}

static void emit_call(Cuda *C, StrBuf *sb, const IrExpr *e) {
  bool f64 = e->dtype == DTYPE_F64;
  bool is_float = dtype_is_float(e->dtype);
  const char *fn = "?";
  switch (e->u.call.fn) {
  case IR_INTRINSIC_EXP2: fn = f64 ? "exp2" : "tc_exp2"; break;
  case IR_INTRINSIC_EXP: fn = f64 ? "exp" : "__expf"; break;
  case IR_INTRINSIC_LOG2: fn = f64 ? "log2" : "__log2f"; break;
  case IR_INTRINSIC_LOG: fn = f64 ? "log" : "__logf"; break;
  case IR_INTRINSIC_SQRT: fn = f64 ? "sqrt" : "sqrtf"; break;
  case IR_INTRINSIC_ABS: fn = is_float ? (f64 ? "fabs" : "fabsf") : "llabs"; break;
  case IR_INTRINSIC_MAX: fn = is_float ? (f64 ? "fmax" : "fmaxf") : "max"; break;
  case IR_INTRINSIC_MIN: fn = is_float ? (f64 ? "fmin" : "fminf") : "min"; break;
  case IR_INTRINSIC_CEILDIV: fn = "tc_ceildiv"; break;
  default: break;
  }
  sb_printf(sb, "%s(", fn);
  for (int i = 0; i < e->u.call.nargs; i++) {
    if (i) sb_puts(sb, ", ");
    emit_expr(C, sb, e->u.call.args[i]);
  }
  sb_puts(sb, ")");
}

static void emit_expr(Cuda *C, StrBuf *sb, const IrExpr *e) {
  if (!e) {
    sb_puts(sb, "0");
    return;
  }
  switch (e->kind) {
  case IR_EXPR_INT:
    if (e->dtype == DTYPE_BOOL) sb_puts(sb, e->u.int_value ? "true" : "false");
    else sb_printf(sb, "%lldLL", (long long)e->u.int_value);
    return;
  case IR_EXPR_FLOAT:
    float_literal(sb, e->u.float_value, e->dtype);
    return;
  case IR_EXPR_VAR:
    /* f16/bf16 scalar parameters arrive as their bits. */
    if (is_16bit(e->u.var->dtype))
      sb_printf(sb, "%s(%s)", e->u.var->dtype == DTYPE_F16 ? "tc_f16_to_f32" : "tc_bf16_to_f32", e->u.var->name);
    else
      sb_puts(sb, e->u.var->name);
    return;
  case IR_EXPR_UNARY:
    sb_puts(sb, e->u.op.op == IR_OP_NEG ? "(-" : "(!");
    emit_expr(C, sb, e->u.op.a);
    sb_puts(sb, ")");
    return;
  case IR_EXPR_BINARY:
    if (e->u.op.op == IR_OP_DIV && e->dtype == DTYPE_F32) {
      /* 2-ulp division (docs/gpu-codegen.md); integer and f64 stay exact. */
      sb_puts(sb, "tc_fdiv(");
      emit_expr(C, sb, e->u.op.a);
      sb_puts(sb, ", ");
      emit_expr(C, sb, e->u.op.b);
      sb_puts(sb, ")");
      return;
    }
    sb_puts(sb, "(");
    emit_expr(C, sb, e->u.op.a);
    sb_printf(sb, " %s ", ir_op_name(e->u.op.op));
    emit_expr(C, sb, e->u.op.b);
    sb_puts(sb, ")");
    return;
  case IR_EXPR_SELECT:
    sb_puts(sb, "(");
    emit_expr(C, sb, e->u.select.cond);
    sb_puts(sb, " ? ");
    emit_expr(C, sb, e->u.select.then_);
    sb_puts(sb, " : ");
    emit_expr(C, sb, e->u.select.else_);
    sb_puts(sb, ")");
    return;
  case IR_EXPR_CALL:
    emit_call(C, sb, e);
    return;
  case IR_EXPR_LOAD:
    emit_load(C, sb, e);
    return;
  case IR_EXPR_CAST: {
    DType to = e->dtype, from = e->u.cast_src->dtype;
    /* f16/bf16 values live as float: a cast to them rounds. */
    if (to == DTYPE_F16) sb_puts(sb, "tc_f16_to_f32(tc_f32_to_f16((float)(");
    else if (to == DTYPE_BF16) sb_puts(sb, "tc_bf16_to_f32(tc_f32_to_bf16((float)(");
    else sb_printf(sb, "((%s)(", value_type(to));
    emit_expr(C, sb, e->u.cast_src);
    sb_puts(sb, (to == DTYPE_F16 || to == DTYPE_BF16) ? "))))" : "))");
    (void)from;
    return;
  }
  default:
    sb_puts(sb, "0");
    return;
  }
}

/* value converted for storing into a buffer of dtype t */
static void emit_stored_value(Cuda *C, StrBuf *sb, DType t, const IrExpr *v) {
  if (t == DTYPE_F16 || t == DTYPE_BF16) {
    sb_puts(sb, t == DTYPE_F16 ? "tc_f32_to_f16((float)(" : "tc_f32_to_bf16((float)(");
    /* Skip the rounding cast the value may already carry. */
    if (v->kind == IR_EXPR_CAST && v->dtype == t) v = v->u.cast_src;
    emit_expr(C, sb, v);
    sb_puts(sb, "))");
  } else {
    sb_printf(sb, "(%s)(", storage_type(t));
    emit_expr(C, sb, v);
    sb_puts(sb, ")");
  }
}

/* ---- statements --------------------------------------------------------------- */

static void emit_stmt(Cuda *C, const IrStmt *s, int depth);

static void emit_seq(Cuda *C, const IrStmt *seq, int depth) {
  for (int i = 0; i < seq->u.seq.n && !C->failed; i++) emit_stmt(C, seq->u.seq.items[i], depth);
}

static void emit_mbarrier_init(Cuda *C, const IrBuffer *bar, int depth);

static void emit_alloc(Cuda *C, const IrBuffer *b, int depth) {
  const char *t = storage_type(b->dtype);
  switch (b->scope) {
  case IR_SCOPE_SHARED: {
    if (b->alias_of) {
      ind(C, depth);
      sb_printf(C->out, "%s *const %s = (%s *)%s;  // reuses %s (dead by now)\n", t, b->name, t, b->alias_of->name,
                b->alias_of->name);
      return;
    }
    ind(C, depth);
    sb_printf(C->out, "%s *const %s = (%s *)(tc_smem + %d);  // [", t, b->name, t, C->smem_offset);
    for (int d = 0; d < b->rank; d++) sb_printf(C->out, "%s%lld", d ? ", " : "", (long long)const_of(b->shape[d]));
    sb_printf(C->out, "] %s\n",
              b->is_mbarrier               ? "mbarriers"
              : b->layout.panel_cols       ? "64-column panels"
              : b->layout.kind == IR_LAYOUT_SWIZZLED ? "swizzled"
                                           : "row-major");
    C->smem_offset += (int)ir_buffer_bytes_aligned(b);
    if (b->is_mbarrier) emit_mbarrier_init(C, b, depth);
    return;
  }
  case IR_SCOPE_FRAGMENT: {
    const IrLayout *l = &b->layout;
    if (l->kind != IR_LAYOUT_FRAGMENT) {
      fail(C, b->loc, "fragment '%s' has no layout (infer-layout did not run)", b->name);
      return;
    }
    ind(C, depth);
    sb_printf(C->out, "%s %s[%d];  // %s\n", t, b->name, l->rows_local * l->cols_local,
              ir_layout_str(C->m->arena, l));
    return;
  }
  default:
    ind(C, depth);
    sb_printf(C->out, "%s %s[%d];\n", t, b->name, elems_of(b));
    return;
  }
}

/* Opens the unrolled loops over a layout's row and column slots, binding the
 * logical row/column to the given names. Returns the depth inside. */
static int open_slots(Cuda *C, const IrLayout *l, const char *row_name, const char *col_name, int depth) {
  ind(C, depth);
  sb_printf(C->out, "#pragma unroll\n");
  ind(C, depth);
  sb_printf(C->out, "for (int tc_rs = 0; tc_rs < %d; ++tc_rs) {\n", l->rows_local);
  if (row_name) {
    ind(C, depth + 1);
    sb_printf(C->out, "[[maybe_unused]] const long long %s = ", row_name);
    row_of(C, C->out, l, "tc_rs");
    sb_puts(C->out, ";\n");
  }
  if (!l->cols) return depth + 1;
  ind(C, depth + 1);
  sb_printf(C->out, "#pragma unroll\n");
  ind(C, depth + 1);
  sb_printf(C->out, "for (int tc_cs = 0; tc_cs < %d; ++tc_cs) {\n", l->cols_local);
  if (col_name) {
    ind(C, depth + 2);
    sb_printf(C->out, "[[maybe_unused]] const long long %s = ", col_name);
    col_of(C, C->out, l, "tc_cs");
    sb_puts(C->out, ";\n");
  }
  return depth + 2;
}

static void close_slots(Cuda *C, const IrLayout *l, int depth) {
  if (l->cols) {
    ind(C, depth - 1);
    sb_puts(C->out, "}\n");
    depth--;
  }
  ind(C, depth - 1);
  sb_puts(C->out, "}\n");
}

/* The fragment a parallel nest iterates over: one indexed exactly [i, j]
 * (or [i] for a 1-D nest). */
typedef struct FindDriver {
  const IrVar *i, *j;
  const IrBuffer *found;
} FindDriver;

static void check_driver(FindDriver *f, const IrBuffer *b, IrExpr *const *idx, int n) {
  if (f->found || b->scope != IR_SCOPE_FRAGMENT) return;
  if (f->j) {
    if (n == 2 && idx[0]->kind == IR_EXPR_VAR && idx[0]->u.var == f->i && idx[1]->kind == IR_EXPR_VAR &&
        idx[1]->u.var == f->j)
      f->found = b;
  } else if (n == 1 && idx[0]->kind == IR_EXPR_VAR && idx[0]->u.var == f->i) {
    f->found = b;
  }
}

static void driver_load(const IrExpr *e, void *ctx) {
  if (e->kind == IR_EXPR_LOAD) check_driver(ctx, e->u.load.buf, e->u.load.idx, e->u.load.nidx);
}

static void driver_stmt(const IrStmt *s, FindDriver *f) {
  if (!s) return;
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) driver_stmt(s->u.seq.items[i], f);
    return;
  case IR_STMT_STORE:
    check_driver(f, s->u.store.buf, s->u.store.idx, s->u.store.nidx);
    break;
  case IR_STMT_FOR:
    driver_stmt(s->u.for_.body, f);
    break;
  case IR_STMT_IF:
    driver_stmt(s->u.if_.then_, f);
    driver_stmt(s->u.if_.else_, f);
    break;
  default:
    break;
  }
  ir_stmt_visit_exprs((IrStmt *)s, driver_load, f);
}

static void emit_parallel(Cuda *C, const IrStmt *s, int depth) {
  const IrVar *i = s->u.for_.var, *j = NULL;
  const IrStmt *body = s->u.for_.body;
  int64_t ext_i = const_of(s->u.for_.extent), ext_j = 1;
  if (body->u.seq.n == 1 && body->u.seq.items[0]->kind == IR_STMT_FOR &&
      body->u.seq.items[0]->u.for_.kind == IR_FOR_PARALLEL) {
    j = body->u.seq.items[0]->u.for_.var;
    ext_j = const_of(body->u.seq.items[0]->u.for_.extent);
    body = body->u.seq.items[0]->u.for_.body;
  }
  FindDriver f = {i, j, NULL};
  driver_stmt(body, &f);
  const Nest *outer = C->nest;
  Nest n = {i, j, NULL};
  C->nest = &n;
  if (f.found) {
    n.layout = &f.found->layout;
    int inner = open_slots(C, n.layout, i->name, j ? j->name : NULL, depth);
    emit_seq(C, body, inner);
    close_slots(C, n.layout, inner);
  } else {
    /* No fragment: stride the flattened iteration space over the threads. */
    ind(C, depth);
    sb_printf(C->out, "for (long long tc_f = tc_tid; tc_f < %lld; tc_f += %d) {\n", (long long)(ext_i * ext_j),
              C->threads);
    ind(C, depth + 1);
    sb_printf(C->out, "const long long %s = tc_f / %lld;\n", i->name, (long long)ext_j);
    if (j) {
      ind(C, depth + 1);
      sb_printf(C->out, "const long long %s = tc_f %% %lld;\n", j->name, (long long)ext_j);
    }
    emit_seq(C, body, depth + 1);
    ind(C, depth);
    sb_puts(C->out, "}\n");
  }
  C->nest = outer;
}

/* ---- tile operations ------------------------------------------------------------- */

/* Tile dims of a region: the non-index dimensions, in order. */
static int tile_dims(const IrRegion *r, int *dims) {
  int n = 0;
  for (int d = 0; d < r->rank; d++)
    if (!r->is_index[d]) dims[n++] = d;
  return n;
}

/* Pointer expression to the region's first element of a staged/plain 2-D
 * shared tile (the stage index, if any, selects the tile). */
static void tile_base(Cuda *C, StrBuf *sb, const IrRegion *r) {
  const IrBuffer *b = r->buf;
  if (b->rank == 3) {
    int64_t tile = const_of(b->shape[1]) * const_of(b->shape[2]);
    sb_printf(sb, "(%s + (", b->name);
    emit_expr(C, sb, r->start[0]);
    sb_printf(sb, ") * %lld)", (long long)tile);
  } else {
    sb_puts(sb, b->name);
  }
}


/* Global offset of the region's start (row-major over the tensor's shape). */
static void region_offset(Cuda *C, StrBuf *sb, const IrRegion *r) {
  linear_index(C, sb, r->buf, r->start);
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
  int n = tile_dims(glob, gd);
  const IrBuffer *g = glob->buf, *sh = shr->buf;
  int rows_dim = n == 2 ? gd[0] : -1, cols_dim = n == 2 ? gd[1] : gd[0];
  int64_t rows = n == 2 ? const_of(glob->extent[rows_dim]) : 1, cols = const_of(glob->extent[cols_dim]);
  StrBuf *o = C->out;
  ind(C, depth);
  sb_printf(o, "{  // copy%s %s -> %s\n", s->u.copy.async ? ".async" : "", s->u.copy.src.buf->name,
            s->u.copy.dst.buf->name);
  /* Rows past the end (guarded dims) are zero-filled / skipped. */
  ind(C, depth + 1);
  sb_puts(o, "const int tc_rows_valid = ");
  bool any_index_guard = false;
  for (int d = 0; d < glob->rank; d++) any_index_guard |= glob->is_index[d] && glob->guard[d];
  if (any_index_guard) {
    sb_puts(o, "(");
    for (int d = 0, first = 1; d < glob->rank; d++) {
      if (!glob->is_index[d] || !glob->guard[d]) continue;
      sb_puts(o, first ? "" : " && ");
      first = 0;
      sb_puts(o, "(");
      emit_expr(C, o, glob->start[d]);
      sb_puts(o, ") < ");
      emit_expr(C, o, g->shape[d]);
    }
    sb_puts(o, ") ? ");
  }
  if (rows_dim >= 0 && glob->guard[rows_dim]) {
    sb_printf(o, "(int)max(0LL, min((long long)%lld, ", (long long)rows);
    emit_expr(C, o, g->shape[rows_dim]);
    sb_puts(o, " - (");
    emit_expr(C, o, glob->start[rows_dim]);
    sb_puts(o, ")))");
  } else {
    sb_printf(o, "%lld", (long long)rows);
  }
  if (any_index_guard) sb_puts(o, " : 0");
  sb_puts(o, ";\n");
  ind(C, depth + 1);
  sb_puts(o, "const int tc_cols_valid = ");
  if (glob->guard[cols_dim]) {
    sb_printf(o, "(int)max(0LL, min((long long)%lld, ", (long long)cols);
    emit_expr(C, o, g->shape[cols_dim]);
    sb_puts(o, " - (");
    emit_expr(C, o, glob->start[cols_dim]);
    sb_puts(o, ")))");
  } else {
    sb_printf(o, "%lld", (long long)cols);
  }
  sb_puts(o, ";\n");
  /* Row stride: product of the tensor's dims after the rows dim. */
  ind(C, depth + 1);
  sb_puts(o, "const long long tc_row_stride = 1LL");
  for (int d = rows_dim + 1; rows_dim >= 0 && d < g->rank; d++) {
    sb_puts(o, " * ");
    emit_expr(C, o, g->shape[d]);
  }
  sb_puts(o, ";\n");
  ind(C, depth + 1);
  sb_printf(o, "%s<%lld, %lld, %d, %s>(", to_shared ? "tc_copy_g2s" : "tc_copy_s2g", (long long)rows,
            (long long)cols, C->threads, swz_arg(sh));
  if (to_shared) {
    tile_base(C, o, shr);
    sb_printf(o, ", %s + ", g->name);
    region_offset(C, o, glob);
    sb_puts(o, ", tc_row_stride, tc_rows_valid, tc_cols_valid, tc_tid);\n");
  } else {
    sb_printf(o, "%s + ", g->name);
    region_offset(C, o, glob);
    sb_puts(o, ", tc_row_stride, tc_rows_valid, tc_cols_valid, ");
    tile_base(C, o, shr);
    sb_puts(o, ", tc_tid);\n");
  }
  if (to_shared && !s->u.copy.async) {
    ind(C, depth + 1);
    sb_puts(o, "tc_cp_async_commit();\n");
    ind(C, depth + 1);
    sb_puts(o, "tc_cp_async_wait<0>();\n");
  }
  ind(C, depth);
  sb_puts(o, "}\n");
}

/* Copies where one side is a fragment: every thread moves its own elements. */
static void emit_copy_fragment(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  const IrRegion *frag = src->buf->scope == IR_SCOPE_FRAGMENT ? src : dst;
  const IrRegion *other = frag == src ? dst : src;
  const IrLayout *l = &frag->buf->layout;
  StrBuf *o = C->out;
  if (other->buf->scope == IR_SCOPE_FRAGMENT) {
    if (!ir_layout_same_rows(&src->buf->layout, &dst->buf->layout) ||
        src->buf->layout.cols_local != dst->buf->layout.cols_local) {
      fail(C, s->loc, "copy between fragments '%s' and '%s' of different layouts", src->buf->name, dst->buf->name);
      return;
    }
    int n = l->rows_local * l->cols_local;
    ind(C, depth);
    sb_printf(o, "#pragma unroll\n");
    ind(C, depth);
    sb_printf(o, "for (int tc_e = 0; tc_e < %d; ++tc_e) %s[tc_e] = ", n, dst->buf->name);
    DType from = src->buf->dtype, to = dst->buf->dtype;
    if (to == from) sb_printf(o, "%s[tc_e];\n", src->buf->name);
    else if (is_16bit(to) && is_16bit(from)) sb_printf(o, "%s(%s(%s[tc_e]));\n", to == DTYPE_F16 ? "tc_f32_to_f16" : "tc_f32_to_bf16", from == DTYPE_F16 ? "tc_f16_to_f32" : "tc_bf16_to_f32", src->buf->name);
    else if (is_16bit(to)) sb_printf(o, "%s((float)%s[tc_e]);\n", to == DTYPE_F16 ? "tc_f32_to_f16" : "tc_f32_to_bf16", src->buf->name);
    else if (is_16bit(from)) sb_printf(o, "(%s)%s(%s[tc_e]);\n", storage_type(to), from == DTYPE_F16 ? "tc_f16_to_f32" : "tc_bf16_to_f32", src->buf->name);
    else sb_printf(o, "(%s)%s[tc_e];\n", storage_type(to), src->buf->name);
    return;
  }
  /* Fragment <-> global or shared: the other side's tile dims take the
   * fragment's logical (row, col). */
  int od[IR_MAX_RANK];
  int n = tile_dims(other, od);
  if (n != frag->buf->rank || (frag->buf->rank == 2) != (l->cols != 0)) {
    fail(C, s->loc, "copy between fragment '%s' and '%s': tile ranks differ", frag->buf->name, other->buf->name);
    return;
  }
  int inner = open_slots(C, l, "tc_r", l->cols ? "tc_c" : NULL, depth);
  IrModule *m = (IrModule *)C->m;
  IrVar rv = {.name = "tc_r", .kind = IR_VAR_LOOP, .dtype = DTYPE_I64};
  IrVar cv = {.name = "tc_c", .kind = IR_VAR_LOOP, .dtype = DTYPE_I64};
  IrExpr *idx[IR_MAX_RANK];
  IrExpr *cond = NULL;
  for (int d = 0, t = 0; d < other->rank; d++) {
    if (other->is_index[d]) {
      idx[d] = other->start[d];
    } else {
      IrExpr *v = ir_var_ref(m, t++ == 0 ? &rv : &cv, s->loc);
      idx[d] = ir_binary(m, IR_OP_ADD, other->start[d], v, s->loc);
    }
    if (other->guard[d]) {
      IrExpr *c = ir_binary(m, IR_OP_LT, idx[d], other->buf->shape[d], s->loc);
      cond = cond ? ir_binary(m, IR_OP_AND, cond, c, s->loc) : c;
    }
  }
  const char *slot = l->cols ? "[tc_rs * %d + tc_cs]" : "[tc_rs]";
  char slot_text[64];
  snprintf(slot_text, sizeof slot_text, slot, l->cols_local);
  IrExpr *elem = ir_load(m, other->buf, idx, s->loc);
  ind(C, inner);
  if (frag == dst) {
    /* global/shared -> fragment: zero outside the tensor. */
    sb_printf(o, "%s%s = ", dst->buf->name, slot_text);
    IrExpr *v = ir_cast(m, dst->buf->dtype, elem, s->loc);
    if (cond) v = ir_select(m, cond, v, ir_cast(m, dst->buf->dtype, ir_float(m, 0.0, DTYPE_F32, s->loc), s->loc), s->loc);
    if (is_16bit(dst->buf->dtype)) emit_stored_value(C, o, dst->buf->dtype, v);
    else emit_expr(C, o, v);
    sb_puts(o, ";\n");
  } else {
    if (cond) {
      sb_puts(o, "if (");
      emit_expr(C, o, cond);
      sb_puts(o, ") ");
    }
    emit_element(C, o, other->buf, idx, other->rank, s->loc);
    sb_puts(o, " = ");
    char val[128];
    if (is_16bit(src->buf->dtype))
      snprintf(val, sizeof val, "%s(%s%s)", src->buf->dtype == DTYPE_F16 ? "tc_f16_to_f32" : "tc_bf16_to_f32",
               src->buf->name, slot_text);
    else
      snprintf(val, sizeof val, "%s%s", src->buf->name, slot_text);
    DType to = other->buf->dtype;
    if (is_16bit(to)) sb_printf(o, "%s((float)%s);\n", to == DTYPE_F16 ? "tc_f32_to_f16" : "tc_f32_to_bf16", val);
    else sb_printf(o, "(%s)%s;\n", storage_type(to), val);
  }
  close_slots(C, l, inner);
}

/* Opens a loop that strides the points of region r's tile (its non-index
 * dimensions of extent > 1) over the block's threads, binding one variable
 * per loop dimension in vars. The caller closes it with one "}". */
static void open_strided(Cuda *C, const IrRegion *r, IrVar *vars, int depth) {
  static const char *names[IR_MAX_RANK] = {"tc_t0", "tc_t1", "tc_t2", "tc_t3", "tc_t4", "tc_t5", "tc_t6", "tc_t7"};
  int64_t ext[IR_MAX_RANK], total = 1;
  int n = 0;
  for (int d = 0; d < r->rank; d++) {
    int64_t e = const_of(r->extent[d]);
    if (!r->is_index[d] && e != 1) ext[n++] = e, total *= e;
  }
  StrBuf *o = C->out;
  ind(C, depth);
  sb_printf(o, "for (long long tc_f = tc_tid; tc_f < %lld; tc_f += %d) {\n", (long long)total, C->threads);
  int64_t stride = total;
  for (int t = 0; t < n; t++) {
    stride /= ext[t];
    ind(C, depth + 1);
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
    bool loops = !r->is_index[d] && const_of(r->extent[d]) != 1;
    idx[d] = loops ? ir_binary(m, IR_OP_ADD, r->start[d], ir_var_ref(m, &vars[t++], loc), loc) : r->start[d];
    if (r->guard[d]) {
      IrExpr *c = ir_binary(m, IR_OP_LT, idx[d], r->buf->shape[d], loc);
      cond = cond ? ir_binary(m, IR_OP_AND, cond, c, loc) : c;
    }
  }
  return cond;
}

/* dst[idx] = value, under `if (cond)` when there is a guard. */
static void guarded_store(Cuda *C, const IrBuffer *dst, IrExpr **idx, IrExpr *cond, const IrExpr *value, SrcLoc loc,
                          int depth) {
  StrBuf *o = C->out;
  ind(C, depth);
  if (cond) {
    sb_puts(o, "if (");
    emit_expr(C, o, cond);
    sb_puts(o, ") ");
  }
  emit_element(C, o, dst, idx, dst->rank, loc);
  sb_puts(o, " = ");
  emit_stored_value(C, o, dst->dtype, value);
  sb_puts(o, ";\n");
}

/* Any other copy: one element per thread, strided over the tile. */
static void emit_copy_generic(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  IrModule *m = (IrModule *)C->m;
  IrVar vars[IR_MAX_RANK];
  IrExpr *si[IR_MAX_RANK], *di[IR_MAX_RANK];
  open_strided(C, dst, vars, depth);
  /* Both tiles have the same non-unit dimensions (check-shapes). */
  IrExpr *src_ok = region_point(C, src, vars, si, s->loc);
  IrExpr *dst_ok = region_point(C, dst, vars, di, s->loc);
  IrExpr *v = ir_cast(m, dst->buf->dtype, ir_load(m, src->buf, si, s->loc), s->loc);
  if (src_ok)
    v = ir_select(m, src_ok, v, ir_cast(m, dst->buf->dtype, ir_float(m, 0.0, DTYPE_F32, s->loc), s->loc), s->loc);
  guarded_store(C, dst->buf, di, dst_ok, v, s->loc, depth + 1);
  ind(C, depth);
  sb_puts(C->out, "}\n");
}

/* A global <-> whole-shared copy of a 16-bit 2-D (or 1-D) tile whose columns
 * are the tensor's contiguous last dimension: the 16-byte tile transfer. */
static bool is_tile_transfer(const IrStmt *s) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  bool g2s = src->buf->scope == IR_SCOPE_GLOBAL && dst->buf->scope == IR_SCOPE_SHARED;
  bool s2g = src->buf->scope == IR_SCOPE_SHARED && dst->buf->scope == IR_SCOPE_GLOBAL;
  if (!(g2s || s2g) || !is_16bit(dst->buf->dtype) || src->buf->dtype != dst->buf->dtype) return false;
  const IrRegion *glob = g2s ? src : dst, *shr = g2s ? dst : src;
  int gd[IR_MAX_RANK];
  int n = tile_dims(glob, gd);
  int r = shr->buf->rank;
  return (n == 2 || n == 1) && gd[n - 1] == glob->buf->rank - 1 && (r == 2 || r == 3) &&
         const_of(shr->buf->shape[r - 1]) % 8 == 0;
}

/* ---- TMA (sm_90a, lower-tma): tensor-map copies and their mbarriers --------- */

/* One thread creates the stage mbarriers of a TMA destination (one arrival:
 * the issuing thread's arrive.expect_tx) and publishes them to the TMA unit;
 * the block barrier keeps everyone from waiting on them earlier. */
static void emit_mbarrier_init(Cuda *C, const IrBuffer *bar, int depth) {
  StrBuf *o = C->out;
  ind(C, depth);
  sb_puts(o, "if (tc_tid == 0) {\n");
  ind(C, depth + 1);
  sb_printf(o, "for (int tc_i = 0; tc_i < %lld; ++tc_i) tc_mbar_init(tc_smem_addr(%s + tc_i), 1);\n",
            (long long)const_of(bar->shape[0]), bar->name);
  ind(C, depth + 1);
  sb_puts(o, "tc_mbar_fence_init();\n");
  ind(C, depth);
  sb_puts(o, "}\n");
  ind(C, depth);
  sb_puts(o, "__syncthreads();\n");
}

/* The stage's mbarrier of a TMA copy's destination, as a .shared address. */
static void tma_barrier_addr(Cuda *C, StrBuf *sb, const IrRegion *dst) {
  const IrBuffer *bar = dst->buf->tma_bar;
  sb_printf(sb, "tc_smem_addr(%s + (", bar->name);
  if (const_of(bar->shape[0]) > 1) emit_expr(C, sb, dst->start[0]);
  else sb_puts(sb, "0");
  sb_puts(sb, "))");
}

/* One thread expects the tile's bytes on the stage's mbarrier and issues one
 * box per 64-column panel (or one box for the whole tile); coordinates are
 * the slice's starts, innermost first. */
static void emit_tma_copy(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  const IrTensorMap *map = &C->k->tma_maps[s->u.copy.tma_map];
  const IrBuffer *g = src->buf;
  const int inner = g->rank - 1;
  int gd[IR_MAX_RANK];
  int n = tile_dims(src, gd);
  int64_t rows = n == 2 ? const_of(src->extent[gd[0]]) : 1, cols = const_of(src->extent[inner]);
  int64_t panels = cols / map->box[inner];
  StrBuf *o = C->out;
  ind(C, depth);
  sb_printf(o, "if (tc_tid == 0) {  // copy.tma %s -> %s\n", g->name, dst->buf->name);
  ind(C, depth + 1);
  sb_puts(o, "const unsigned tc_bar = ");
  tma_barrier_addr(C, o, dst);
  sb_puts(o, ";\n");
  ind(C, depth + 1);
  sb_printf(o, "tc_mbar_arrive_expect_tx(tc_bar, %lld);\n", (long long)(rows * cols * dtype_size(g->dtype)));
  for (int64_t p = 0; p < panels; p++) {
    ind(C, depth + 1);
    sb_puts(o, "tc_tma_load(tc_smem_addr(");
    tile_base(C, o, dst);
    if (p) sb_printf(o, " + %lld", (long long)(p * rows * map->box[inner]));
    sb_printf(o, "), &tc_tmap_%d, {", s->u.copy.tma_map);
    for (int d = inner; d >= 0; d--) {
      sb_puts(o, d == inner ? "(int)(" : ", (int)(");
      emit_expr(C, o, src->start[d]);
      if (d == inner && p) sb_printf(o, " + %lld", (long long)(p * map->box[inner]));
      sb_puts(o, ")");
    }
    sb_puts(o, "}, tc_bar);\n");
  }
  ind(C, depth);
  sb_puts(o, "}\n");
}

static void emit_copy(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *src = &s->u.copy.src, *dst = &s->u.copy.dst;
  if (s->u.copy.tma) {
    emit_tma_copy(C, s, depth);
  } else if (src->buf->scope == IR_SCOPE_FRAGMENT || dst->buf->scope == IR_SCOPE_FRAGMENT) {
    emit_copy_fragment(C, s, depth);
  } else if (is_tile_transfer(s)) {
    emit_tile_transfer(C, s, depth);
  } else {
    if (s->u.copy.async) {
      fail(C, s->loc, "copy %s -> %s cannot be issued asynchronously", src->buf->name, dst->buf->name);
      return;
    }
    emit_copy_generic(C, s, depth);
  }
}

static void emit_fill(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *dst = &s->u.fill.dst;
  StrBuf *o = C->out;
  if (dst->buf->scope == IR_SCOPE_FRAGMENT) {
    const IrLayout *l = &dst->buf->layout;
    ind(C, depth);
    sb_printf(o, "#pragma unroll\n");
    ind(C, depth);
    sb_printf(o, "for (int tc_e = 0; tc_e < %d; ++tc_e) %s[tc_e] = ", l->rows_local * l->cols_local, dst->buf->name);
    emit_stored_value(C, o, dst->buf->dtype, s->u.fill.value);
    sb_puts(o, ";\n");
    return;
  }
  /* shared/global: every thread stores its share of the tile. */
  IrVar vars[IR_MAX_RANK];
  IrExpr *di[IR_MAX_RANK];
  open_strided(C, dst, vars, depth);
  IrExpr *ok = region_point(C, dst, vars, di, s->loc);
  guarded_store(C, dst->buf, di, ok, s->u.fill.value, s->loc, depth + 1);
  ind(C, depth);
  sb_puts(o, "}\n");
}

static void emit_gemm(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *a = &s->u.gemm.a, *b = &s->u.gemm.b, *c = &s->u.gemm.c;
  const IrLayout *lc = &c->buf->layout;
  if (c->buf->scope != IR_SCOPE_FRAGMENT || lc->frag != IR_FRAG_MMA_C || c->buf->dtype != DTYPE_F32) {
    fail(C, s->loc, "gemm: the accumulator '%s' must be an f32 fragment with the mma layout", c->buf->name);
    return;
  }
  if (!is_16bit(b->buf->dtype) || b->buf->scope != IR_SCOPE_SHARED) {
    fail(C, s->loc, "gemm: B '%s' must be an f16 or bf16 shared tile", b->buf->name);
    return;
  }
  int ad[IR_MAX_RANK];
  tile_dims(a, ad);
  int64_t K = const_of(a->extent[ad[1]]);
  /* tc_half and tc_bf16 are both 16-bit storage; the tag picks the mma. */
  const char *T = b->buf->dtype == DTYPE_F16 ? "tc_f16_t" : "tc_bf16_t";
  StrBuf *o = C->out;
  ind(C, depth);
  if (a->buf->scope == IR_SCOPE_FRAGMENT) {
    sb_printf(o, "%s<%s, %d, %d, %lld, %d, %s, %s%s>(%s, ", s->u.gemm.wgmma ? "tc_gemm_wgmma_rs" : "tc_gemm_rs", T,
              lc->rows, lc->cols, (long long)K, lc->warps_m, swz_arg(b->buf), s->u.gemm.trans_b ? "true" : "false",
              s->u.gemm.wgmma_issue_only ? ", TC_WGMMA_ISSUE_ONLY" : "", a->buf->name);
  } else {
    if (a->buf->dtype != b->buf->dtype || a->buf->scope != IR_SCOPE_SHARED) {
      fail(C, s->loc, "gemm: A '%s' must be a shared tile of B's dtype", a->buf->name);
      return;
    }
    if (s->u.gemm.wgmma) {
      /* Same accumulator layout (one 16-row slice per warp), issued as
       * wgmma by each warpgroup (tilec_wgmma.cuh). */
      sb_printf(o, "tc_gemm_wgmma_ss<%s, %d, %d, %lld, %d, %s, %s, %s, ", T, lc->rows, lc->cols, (long long)K,
                lc->warps_m, swz_arg(a->buf), swz_arg(b->buf), s->u.gemm.trans_b ? "true" : "false");
      if (s->u.gemm.wgmma_issue_only) sb_puts(o, "TC_WGMMA_ISSUE_ONLY>(");
      else sb_printf(o, "%d>(", s->u.gemm.wgmma_async ? 1 : 0);
    } else {
      sb_printf(o, "tc_gemm_ss<%s, %d, %d, %lld, %d, %d, %s, %s, %s>(", T, lc->rows, lc->cols, (long long)K,
                lc->warps_m, lc->warps_n, swz_arg(a->buf), swz_arg(b->buf), s->u.gemm.trans_b ? "true" : "false");
    }
    tile_base(C, o, a);
    sb_puts(o, ", ");
  }
  tile_base(C, o, b);
  sb_printf(o, s->u.gemm.wgmma ? ", %s, tc_warp);\n" : ", %s, tc_warp, tc_lane);\n", c->buf->name);
}

static void emit_reduce(Cuda *C, const IrStmt *s, int depth) {
  const IrBuffer *src = s->u.reduce.src, *dst = s->u.reduce.dst;
  const IrLayout *l = &src->layout;
  if (!ir_layout_same_rows(l, &dst->layout)) {
    fail(C, s->loc, "%s: '%s' does not hold the rows of '%s'", ir_reduce_name(s->u.reduce.kind), dst->name, src->name);
    return;
  }
  const char *op2 = s->u.reduce.kind == IR_REDUCE_SUM ? "tc_r + tc_x"
                    : s->u.reduce.kind == IR_REDUCE_MAX ? "fmaxf(tc_r, tc_x)"
                                                          : "fminf(tc_r, tc_x)";
  StrBuf *o = C->out;
  const char *val = src->dtype == DTYPE_F32 ? "" : "(float)";
  ind(C, depth);
  sb_printf(o, "#pragma unroll\n");
  ind(C, depth);
  sb_printf(o, "for (int tc_rs = 0; tc_rs < %d; ++tc_rs) {  // %s %s -> %s\n", l->rows_local,
            ir_reduce_name(s->u.reduce.kind), src->name, dst->name);
  ind(C, depth + 1);
  sb_printf(o, "float tc_r = %s%s[tc_rs * %d];\n", val, src->name, l->cols_local);
  ind(C, depth + 1);
  sb_printf(o, "#pragma unroll\n");
  ind(C, depth + 1);
  sb_printf(o, "for (int tc_cs = 1; tc_cs < %d; ++tc_cs) { const float tc_x = %s%s[tc_rs * %d + tc_cs]; tc_r = %s; }\n",
            l->cols_local, val, src->name, l->cols_local, op2);
  /* Lanes that share the row: the quad for mma, the row group otherwise. */
  int span = l->frag == IR_FRAG_MMA_C ? 4 : (l->rows_local == 1 ? l->group : 1);
  for (int mask = 1; mask < span; mask *= 2) {
    ind(C, depth + 1);
    sb_printf(o, "{ const float tc_x = tc_shfl_xor(tc_r, %d); tc_r = %s; }\n", mask, op2);
  }
  const IrBuffer *scratch = s->u.reduce.scratch;
  if (scratch) {
    /* Rows split across warps: each warp column leaves its partial in
     * shared memory (one lane per quad), then every thread folds the
     * partials of its rows in the same order, so all copies agree. */
    int wn = l->warps_n;
    ind(C, depth + 1);
    sb_printf(o, "if ((tc_lane & 3) == 0) %s[(tc_warp %% %d) * %d + ", scratch->name, wn, l->rows);
    row_of(C, o, l, "tc_rs");
    sb_puts(o, "] = tc_r;\n");
    ind(C, depth);
    sb_puts(o, "}\n");
    ind(C, depth);
    sb_puts(o, "__syncthreads();\n");
    ind(C, depth);
    sb_printf(o, "#pragma unroll\n");
    ind(C, depth);
    sb_printf(o, "for (int tc_rs = 0; tc_rs < %d; ++tc_rs) {\n", l->rows_local);
    ind(C, depth + 1);
    sb_puts(o, "const int tc_row = ");
    row_of(C, o, l, "tc_rs");
    sb_puts(o, ";\n");
    ind(C, depth + 1);
    sb_printf(o, "float tc_r = %s[tc_row];\n", scratch->name);
    ind(C, depth + 1);
    sb_printf(o, "#pragma unroll\n");
    ind(C, depth + 1);
    sb_printf(o, "for (int tc_w = 1; tc_w < %d; ++tc_w) { const float tc_x = %s[tc_w * %d + tc_row]; tc_r = %s; }\n",
              wn, scratch->name, l->rows, op2);
  }
  ind(C, depth + 1);
  if (s->u.reduce.clear) {
    sb_printf(o, "%s[tc_rs] = tc_r;\n", dst->name);
  } else {
    sb_printf(o, "{ const float tc_x = tc_r; tc_r = %s[tc_rs]; %s[tc_rs] = %s; }\n", dst->name, dst->name, op2);
  }
  ind(C, depth);
  sb_puts(o, "}\n");
  if (scratch) {
    /* The scratch may be written again by the next reduction. */
    ind(C, depth);
    sb_puts(o, "__syncthreads();\n");
  }
}

static void emit_stmt(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  switch (s->kind) {
  case IR_STMT_SEQ:
    ind(C, depth);
    sb_puts(o, "{\n");
    emit_seq(C, s, depth + 1);
    ind(C, depth);
    sb_puts(o, "}\n");
    return;
  case IR_STMT_ALLOC:
    emit_alloc(C, s->u.alloc, depth);
    return;
  case IR_STMT_LET:
    ind(C, depth);
    sb_printf(o, "const %s %s = ", value_type(s->u.let.var->dtype), s->u.let.var->name);
    emit_expr(C, o, s->u.let.value);
    sb_puts(o, ";\n");
    return;
  case IR_STMT_STORE:
    ind(C, depth);
    emit_element(C, o, s->u.store.buf, s->u.store.idx, s->u.store.nidx, s->loc);
    sb_puts(o, " = ");
    emit_stored_value(C, o, s->u.store.buf->dtype, s->u.store.value);
    sb_puts(o, ";\n");
    return;
  case IR_STMT_FOR:
    if (s->u.for_.kind == IR_FOR_PARALLEL) {
      emit_parallel(C, s, depth);
      return;
    }
    if (s->u.for_.kind == IR_FOR_UNROLLED) {
      ind(C, depth);
      sb_puts(o, "#pragma unroll\n");
    }
    ind(C, depth);
    sb_printf(o, "for (long long %s = 0; %s < ", s->u.for_.var->name, s->u.for_.var->name);
    emit_expr(C, o, s->u.for_.extent);
    sb_printf(o, "; ++%s) {", s->u.for_.var->name);
    if (s->u.for_.kind == IR_FOR_PIPELINED) sb_printf(o, "  // pipelined, %d stages", s->u.for_.num_stages);
    sb_puts(o, "\n");
    emit_seq(C, s->u.for_.body, depth + 1);
    ind(C, depth);
    sb_puts(o, "}\n");
    return;
  case IR_STMT_IF:
    ind(C, depth);
    sb_puts(o, "if (");
    emit_expr(C, o, s->u.if_.cond);
    sb_puts(o, ") {\n");
    emit_seq(C, s->u.if_.then_, depth + 1);
    ind(C, depth);
    if (s->u.if_.else_) {
      sb_puts(o, "} else {\n");
      emit_seq(C, s->u.if_.else_, depth + 1);
      ind(C, depth);
    }
    sb_puts(o, "}\n");
    return;
  case IR_STMT_COPY:
    emit_copy(C, s, depth);
    return;
  case IR_STMT_FILL:
    emit_fill(C, s, depth);
    return;
  case IR_STMT_GEMM:
    emit_gemm(C, s, depth);
    return;
  case IR_STMT_REDUCE:
    emit_reduce(C, s, depth);
    return;
  case IR_STMT_BARRIER:
    ind(C, depth);
    /* wgmma reads shared memory through the async proxy: the threads'
     * writes (cp.async or plain) must be fenced for it before the barrier. */
    sb_puts(o, C->k->wgmma ? "tc_fence_proxy_async(); __syncthreads();\n" : "__syncthreads();\n");
    return;
  case IR_STMT_ASYNC_COMMIT:
    ind(C, depth);
    sb_puts(o, "tc_cp_async_commit();\n");
    return;
  case IR_STMT_ASYNC_WAIT:
    ind(C, depth);
    sb_printf(o, "tc_cp_async_wait<%d>();\n", s->u.async_pending);
    return;
  case IR_STMT_WGMMA_WAIT:
    ind(C, depth);
    if (s->u.wgmma_wait.pending == 0)
      sb_printf(o, "tc_wgmma_drain<%d>(%s);\n", s->u.wgmma_wait.acc->layout.cols, s->u.wgmma_wait.acc->name);
    else
      sb_printf(o, "tc_wgmma_wait_acc<%d, %d>(%s);\n", s->u.wgmma_wait.pending, s->u.wgmma_wait.acc->layout.cols,
                s->u.wgmma_wait.acc->name);
    return;
  case IR_STMT_TMA_WAIT:
    ind(C, depth);
    sb_printf(o, "tc_mbar_wait(tc_smem_addr(%s + (", s->u.tma_wait.bar->name);
    emit_expr(C, o, s->u.tma_wait.stage);
    sb_puts(o, ")), (unsigned)(");
    emit_expr(C, o, s->u.tma_wait.parity);
    sb_puts(o, "));\n");
    return;
  case IR_STMT_ANNOTATE_LAYOUT:
  case IR_STMT_USE_SWIZZLE:
    return; /* consumed by swizzle-layout / rasterize */
  default:
    fail(C, s->loc, "statement '%s' is not supported", ir_stmt_kind_name(s->kind));
    return;
  }
}

/* ---- kernels ---------------------------------------------------------------------- */

static void emit_block_indices(Cuda *C, const IrKernel *k) {
  StrBuf *o = C->out;
  if (k->raster_panel) {
    /* Walk blocks in panels of `P` rows (cols) of the 2-D grid so that
     * blocks running together share tiles in L2. */
    const char *major = k->raster_column_major ? "x" : "y", *minor = k->raster_column_major ? "y" : "x";
    sb_printf(o,
              "  const long long tc_linear = (long long)blockIdx.x + (long long)blockIdx.y * gridDim.x;\n"
              "  const long long tc_panel_span = %dLL * gridDim.%s;\n"
              "  const long long tc_panel = tc_linear / tc_panel_span;\n"
              "  const long long tc_in_panel = tc_linear - tc_panel * tc_panel_span;\n"
              "  const long long tc_panel_rows = min(%dLL, (long long)gridDim.%s - tc_panel * %d);\n"
              "  const long long tc_block_%s = tc_panel * %d + tc_in_panel %% tc_panel_rows;\n"
              "  const long long tc_block_%s = tc_in_panel / tc_panel_rows;\n",
              k->raster_panel, minor, k->raster_panel, major, k->raster_panel, major, k->raster_panel, minor);
  }
  for (int g = 0; g < k->ngrid; g++) {
    const char *axis = g == 0 ? "x" : g == 1 ? "y" : "z";
    if (k->raster_panel && g < 2)
      sb_printf(o, "  [[maybe_unused]] const long long %s = tc_block_%s;\n", k->block_vars[g]->name, axis);
    else
      sb_printf(o, "  [[maybe_unused]] const long long %s = blockIdx.%s;\n", k->block_vars[g]->name, axis);
  }
}

static void emit_kernel(Cuda *C, const IrKernel *k) {
  StrBuf *o = C->out;
  C->k = k;
  C->smem_offset = 0;
  int64_t threads = const_of(k->threads);
  C->threads = (int)threads;
  sb_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) tilec_%s(", (int)threads, k->name);
  bool first = true;
  for (int i = 0; i < k->nparams; i++) {
    const IrParam *p = &k->params[i];
    if (p->is_tensor) sb_printf(o, "%s%s *__restrict__ %s", first ? "" : ", ", storage_type(p->buffer->dtype), p->name);
    else sb_printf(o, "%s%s %s", first ? "" : ", ", storage_type(p->scalar->dtype), p->name);
    first = false;
  }
  for (int i = 0; i < k->nsymbols; i++)
    if (!k->symbols[i]->bound) {
      sb_printf(o, "%slong long %s", first ? "" : ", ", k->symbols[i]->name);
      first = false;
    }
  /* TMA descriptors (lower-tma), encoded by the runtime at launch. */
  for (int i = 0; i < k->ntma_maps; i++) {
    sb_printf(o, "%sconst __grid_constant__ tc_tensor_map tc_tmap_%d", first ? "" : ", ", i);
    first = false;
  }
  sb_puts(o, ") {\n");
  sb_printf(o, "  extern __shared__ __align__(%d) unsigned char tc_smem[];\n", k->wgmma ? 1024 : 128);
  sb_puts(o, "  const int tc_tid = threadIdx.x, tc_warp = tc_tid / 32, tc_lane = tc_tid % 32;\n");
  sb_puts(o, "  (void)tc_warp; (void)tc_lane; (void)tc_smem;\n");
  emit_block_indices(C, k);
  emit_seq(C, k->body, 0);
  sb_puts(o, "}\n\n");
}

bool emit_cuda_module(const IrModule *m, StrBuf *out, Diag *diag) {
  StrBuf body;
  sb_init(&body);
  Cuda C = {.m = m, .out = &body, .diag = diag};
  sb_printf(&body, "// Generated by tilec %s from %s. Do not edit.\n", "0.1.0", m->file ? m->file : "<input>");
  sb_puts(&body, "// Kernel parameters: tensors (device pointers), scalars, then the dynamic\n"
                 "// shape symbols as long long. Launch with the dynamic shared memory the\n"
                 "// runtime reports (tilert) or TilecKernelInfo.shared_bytes.\n");
  bool wgmma = false, tma = false;
  for (int i = 0; i < m->nkernels; i++) wgmma |= m->kernels[i]->wgmma, tma |= m->kernels[i]->ntma_maps > 0;
  /* The wgmma header (a superset) only where needed: it is large for NVRTC. */
  sb_puts(&body, wgmma ? "#include \"tilec_wgmma.cuh\"\n" : "#include \"tilec_tile.cuh\"\n");
  sb_puts(&body, tma ? "#include \"tilec_tma.cuh\"\n\n" : "\n");
  for (int i = 0; i < m->nkernels && !C.failed; i++) emit_kernel(&C, m->kernels[i]);
  if (!C.failed) sb_puts(out, body.data);
  sb_free(&body);
  return !C.failed;
}
