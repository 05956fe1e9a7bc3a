/* fragment.c - fragments: per-thread register slices of block-wide tiles.
 *
 * infer-layout decided how each fragment spreads over the threads (MMA_C for
 * gemm accumulators, ROWGROUP otherwise; docs/gpu-codegen.md gives the
 * formulas, mirrored by row/col here). A parallel loop over a fragment
 * becomes fully unrolled loops over the thread's row and column slots
 * (tc_rs, tc_cs), binding the logical row and column; a parallel loop that
 * touches no fragment is strided over the block's threads. Inside such a
 * loop a fragment element is its register slot (cuda_fragment_slot): a 2-D
 * fragment of the nest's layout, a row vector [i] or a column vector [j] of
 * it. Slots of a padded layout that lie past the last column are skipped. Row
 * reductions fold each thread's slots, then the lanes sharing a row with
 * warp shuffles, then (when rows are split across warps) the warps through
 * a shared scratch buffer. */
#include "cuda_emit.h"

/* ---- layout formulas (docs/gpu-codegen.md) ---------------------------------- */

/* The warp's row and column in an MMA_C layout's warp grid, as expressions
 * of tc_warp: ir_layout_warp_pos written out. Every formula of the backend
 * that maps a warp to its rows or columns (slots, copies, atomics, first
 * holders, reduction scratch) goes through these two. */
void cuda_warp_m(StrBuf *sb, const IrLayout *l) {
  if (l->warp_order == IR_WARP_ORDER_WARPGROUPS)
    sb_printf(sb, "((tc_warp / %d) * 4 + tc_warp %% 4)", 4 * l->warps_n);
  else
    sb_printf(sb, "(tc_warp / %d)", l->warps_n);
}

void cuda_warp_n(StrBuf *sb, const IrLayout *l) {
  if (l->warp_order == IR_WARP_ORDER_WARPGROUPS)
    sb_printf(sb, "((tc_warp / 4) %% %d)", l->warps_n);
  else
    sb_printf(sb, "(tc_warp %% %d)", l->warps_n);
}

/* The warps of warp row 0 (first_m) or of warp column 0 (else): the first
 * holders of a column vector's or a row vector's elements. */
void cuda_warp_first(StrBuf *sb, const IrLayout *l, bool first_m) {
  if (l->warp_order == IR_WARP_ORDER_WARPGROUPS) {
    if (first_m) cuda_warp_m(sb, l);
    else cuda_warp_n(sb, l);
    sb_puts(sb, " == 0");
  } else if (first_m) {
    sb_printf(sb, "tc_warp < %d", l->warps_n);
  } else {
    sb_printf(sb, "tc_warp %% %d == 0", l->warps_n);
  }
}

static void row_expr(StrBuf *sb, const IrLayout *l, const char *rs) {
  int mw = l->rows / l->warps_m;
  sb_puts(sb, "(");
  cuda_warp_m(sb, l);
  sb_printf(sb, " * %d + (%s / 2) * 16 + (%s %% 2) * 8 + tc_lane / 4)", mw, rs, rs);
}

static void rowgroup_row(StrBuf *sb, const IrLayout *l, int threads, const char *rs) {
  if (l->rows_local == 1) sb_printf(sb, "(tc_tid / %d)", l->group);
  else sb_printf(sb, "(tc_tid + %d * %s)", threads, rs);
}

/* A ROWGROUP whose rows do not fill the threads (group * rows < threads) or
 * the row slots (rows_local * threads > rows): the rows past `rows` are
 * padding, skipped by every loop over the slots (not by reductions: their
 * shuffles need every lane). */
bool cuda_rows_padded(const Cuda *C, const IrLayout *l) {
  if (l->kind != IR_LAYOUT_FRAGMENT || l->frag != IR_FRAG_ROWGROUP || l->rows <= 0) return false;
  return l->rows_local == 1 ? C->threads / l->group > l->rows : l->rows_local * C->threads > l->rows;
}

void cuda_row_of(Cuda *C, StrBuf *sb, const IrLayout *l, const char *rs) {
  if (l->frag == IR_FRAG_MMA_C) row_expr(sb, l, rs);
  else rowgroup_row(sb, l, C->threads, rs);
}

void cuda_col_of(Cuda *C, StrBuf *sb, const IrLayout *l, const char *cs) {
  if (l->frag == IR_FRAG_MMA_C) {
    int nw = l->cols / l->warps_n;
    sb_puts(sb, "(");
    cuda_warp_n(sb, l);
    sb_printf(sb, " * %d + (%s / 2) * 8 + (tc_lane %% 4) * 2 + %s %% 2)", nw, cs, cs);
  } else if (l->rows_local == 1 && l->group > 1) {
    sb_printf(sb, "(tc_tid %% %d + %d * %s)", l->group, l->group, cs);
  } else {
    sb_printf(sb, "%s", cs);
  }
}

/* The register slot of a fragment element inside the current parallel nest. */
bool cuda_fragment_slot(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx, int nidx, SrcLoc loc) {
  const Nest *n = C->nest;
  if (!n || !n->layout) {
    cuda_fail(C, loc, "fragment '%s' is indexed outside a parallel loop over it", b->name);
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
  if (b->rank == 1 && by_i && !n->j && ir_layout_is_col_vector(l) && ir_layout_is_col_vector(n->layout) &&
      ir_layout_same_cols(l, n->layout)) {
    sb_printf(sb, "%s[tc_cs]", b->name); /* a 1-D nest over a column vector */
    return true;
  }
  if (b->rank == 1 && by_i && ir_layout_same_rows(l, n->layout)) {
    sb_printf(sb, "%s[tc_rs]", b->name);
    return true;
  }
  bool col_j = nidx == 1 && n->j && idx[0]->kind == IR_EXPR_VAR && idx[0]->u.var == n->j;
  if (b->rank == 1 && col_j && ir_layout_is_col_vector(l) && ir_layout_same_cols(l, n->layout)) {
    sb_printf(sb, "%s[tc_cs]", b->name);
    return true;
  }
  cuda_fail(C, loc, "fragment '%s' is indexed in a way its layout (%s) cannot serve in this parallel loop", b->name,
       ir_layout_str(C->m->arena, l));
  return false;
}

/* Opens the unrolled loops over a layout's row and column slots, binding the
 * logical row/column to the given names (a column vector has only column
 * slots: col_name, or row_name when it is the only name, takes its column).
 * A padded layout skips the slots past its last column. Returns the depth
 * inside. */
int cuda_open_slots(Cuda *C, const IrLayout *l, const char *row_name, const char *col_name, int depth) {
  if (ir_layout_is_col_vector(l)) {
    const char *name = col_name ? col_name : row_name;
    cuda_indent(C, depth);
    sb_printf(C->out, "#pragma unroll\n");
    cuda_indent(C, depth);
    sb_printf(C->out, "for (int tc_rs = 0; tc_rs < 1; ++tc_rs) {\n");
    cuda_indent(C, depth + 1);
    sb_printf(C->out, "#pragma unroll\n");
    cuda_indent(C, depth + 1);
    sb_printf(C->out, "for (int tc_cs = 0; tc_cs < %d; ++tc_cs) {\n", l->cols_local);
    cuda_indent(C, depth + 2);
    sb_printf(C->out, "[[maybe_unused]] const long long %s = ", name ? name : "tc_col");
    cuda_col_of(C, C->out, l, "tc_cs");
    sb_puts(C->out, ";\n");
    if (ir_layout_cols_padded(l)) {
      cuda_indent(C, depth + 2);
      sb_printf(C->out, "if (%s >= %d) continue;  // padding\n", name ? name : "tc_col", l->cols);
    }
    return depth + 2;
  }
  cuda_indent(C, depth);
  sb_printf(C->out, "#pragma unroll\n");
  cuda_indent(C, depth);
  sb_printf(C->out, "for (int tc_rs = 0; tc_rs < %d; ++tc_rs) {\n", l->rows_local);
  if (row_name || cuda_rows_padded(C, l)) {
    const char *name = row_name ? row_name : "tc_row";
    cuda_indent(C, depth + 1);
    sb_printf(C->out, "[[maybe_unused]] const long long %s = ", name);
    cuda_row_of(C, C->out, l, "tc_rs");
    sb_puts(C->out, ";\n");
    if (cuda_rows_padded(C, l)) {
      cuda_indent(C, depth + 1);
      sb_printf(C->out, "if (%s >= %d) continue;  // padding\n", name, l->rows);
    }
  }
  if (!l->cols) return depth + 1;
  cuda_indent(C, depth + 1);
  sb_printf(C->out, "#pragma unroll\n");
  cuda_indent(C, depth + 1);
  sb_printf(C->out, "for (int tc_cs = 0; tc_cs < %d; ++tc_cs) {\n", l->cols_local);
  if (col_name || ir_layout_cols_padded(l)) {
    const char *name = col_name ? col_name : "tc_col";
    cuda_indent(C, depth + 2);
    sb_printf(C->out, "[[maybe_unused]] const long long %s = ", name);
    cuda_col_of(C, C->out, l, "tc_cs");
    sb_puts(C->out, ";\n");
    if (ir_layout_cols_padded(l)) {
      cuda_indent(C, depth + 2);
      sb_printf(C->out, "if (%s >= %d) continue;  // padding\n", name, l->cols);
    }
  }
  return depth + 2;
}

void cuda_close_slots(Cuda *C, const IrLayout *l, int depth) {
  if (l->cols) {
    cuda_indent(C, depth - 1);
    sb_puts(C->out, "}\n");
    depth--;
  }
  cuda_indent(C, depth - 1);
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

/* idx is exactly [i, j] (or [i] when j is NULL). */
static bool indexed_by(IrExpr *const *idx, int n, const IrVar *i, const IrVar *j) {
  return n == (j ? 2 : 1) && idx[0]->kind == IR_EXPR_VAR && idx[0]->u.var == i &&
         (!j || (idx[1]->kind == IR_EXPR_VAR && idx[1]->u.var == j));
}

static bool is_index_load(const IrExpr *e, const IrBuffer *b, const IrVar *i, const IrVar *j) {
  return e && e->kind == IR_EXPR_LOAD && (!b || e->u.load.buf == b) && indexed_by(e->u.load.idx, e->u.load.nidx, i, j);
}

/* `X[i, j] = X[i, j] * v[i]` (either order), X an f32 fragment and v an f32
 * row vector holding the same rows: the row scale of an online softmax. The
 * row vector, or NULL when body is anything else. */
static const IrBuffer *row_scale_vector(const IrStmt *body, const IrVar *i, const IrVar *j) {
  if (!j || body->u.seq.n != 1 || body->u.seq.items[0]->kind != IR_STMT_STORE) return NULL;
  const IrStmt *st = body->u.seq.items[0];
  const IrBuffer *x = st->u.store.buf;
  const IrExpr *v = st->u.store.value;
  if (x->scope != IR_SCOPE_FRAGMENT || x->dtype != DTYPE_F32 || st->u.store.atomic || st->u.store.nidx != 2 ||
      v->kind != IR_EXPR_BINARY || v->u.op.op != IR_OP_MUL)
    return NULL;
  if (!indexed_by(st->u.store.idx, st->u.store.nidx, i, j)) return NULL;
  const IrExpr *a = v->u.op.a, *b = v->u.op.b;
  const IrExpr *row = is_index_load(a, x, i, j) ? b : is_index_load(b, x, i, j) ? a : NULL;
  if (!is_index_load(row, NULL, i, NULL)) return NULL;
  const IrBuffer *r = row->u.load.buf;
  if (r->scope != IR_SCOPE_FRAGMENT || r->dtype != DTYPE_F32 || r->layout.kind != IR_LAYOUT_FRAGMENT ||
      r->layout.cols != 0 || !ir_layout_same_rows(&r->layout, &x->layout))
    return NULL;
  return r;
}

void cuda_emit_parallel(Cuda *C, const IrStmt *s, int depth) {
  const IrVar *i = s->u.for_.var, *j = NULL;
  const IrStmt *body = s->u.for_.body;
  int64_t ext_i = cuda_const(s->u.for_.extent), ext_j = 1;
  if (body->u.seq.n == 1 && body->u.seq.items[0]->kind == IR_STMT_FOR &&
      body->u.seq.items[0]->u.for_.kind == IR_FOR_PARALLEL) {
    j = body->u.seq.items[0]->u.for_.var;
    ext_j = cuda_const(body->u.seq.items[0]->u.for_.extent);
    body = body->u.seq.items[0]->u.for_.body;
  }
  FindDriver f = {i, j, NULL};
  driver_stmt(body, &f);
  const Nest *outer = C->nest;
  Nest n = {i, j, NULL};
  C->nest = &n;
  if (f.found) {
    n.layout = &f.found->layout;
    /* x * 1 is x (NaN aside): a warp whose row scales are all 1 skips a row
     * scale of a fragment of 16 or more values per thread. An online softmax
     * that keeps a stale maximum (flash_attention.tile) rescales rarely;
     * every thread of the block runs fragment code, so the vote sees whole
     * warps. */
    const IrBuffer *scale = row_scale_vector(body, i, j);
    const bool skip_ones = scale && n.layout->rows_local * n.layout->cols_local >= 16;
    if (skip_ones) {
      cuda_indent(C, depth);
      sb_printf(C->out, "if (!tc_warp_all_one<%d>(%s)) {  // rows scaled by 1 stay as they are\n",
                scale->layout.rows_local, scale->name);
      depth++;
    }
    int inner = cuda_open_slots(C, n.layout, i->name, j ? j->name : NULL, depth);
    cuda_emit_seq(C, body, inner);
    cuda_close_slots(C, n.layout, inner);
    if (skip_ones) {
      depth--;
      cuda_indent(C, depth);
      sb_puts(C->out, "}\n");
    }
  } else {
    /* No fragment: stride the flattened iteration space over the threads. */
    cuda_indent(C, depth);
    sb_printf(C->out, "for (long long tc_f = tc_tid; tc_f < %lld; tc_f += %d) {\n", (long long)(ext_i * ext_j),
              C->threads);
    cuda_indent(C, depth + 1);
    sb_printf(C->out, "const long long %s = tc_f / %lld;\n", i->name, (long long)ext_j);
    if (j) {
      cuda_indent(C, depth + 1);
      sb_printf(C->out, "const long long %s = tc_f %% %lld;\n", j->name, (long long)ext_j);
    }
    cuda_emit_seq(C, body, depth + 1);
    cuda_indent(C, depth);
    sb_puts(C->out, "}\n");
  }
  C->nest = outer;
}

void cuda_emit_reduce(Cuda *C, const IrStmt *s, int depth) {
  const IrBuffer *src = s->u.reduce.src, *dst = s->u.reduce.dst;
  const IrLayout *l = &src->layout;
  if (l->frag == IR_FRAG_MMA_C && l->warp_order == IR_WARP_ORDER_WARPGROUPS) {
    /* infer-layout does not split N under a reduction; its cross-warp
     * fold (below) would also need the consumers' barrier. */
    cuda_fail(C, s->loc, "%s: '%s' is an accumulator whose warpgroups split the columns; reducing its rows is not "
              "supported", ir_reduce_name(s->u.reduce.kind), src->name);
    return;
  }
  if (!ir_layout_same_rows(l, &dst->layout)) {
    cuda_fail(C, s->loc, "%s: '%s' does not hold the rows of '%s'", ir_reduce_name(s->u.reduce.kind), dst->name, src->name);
    return;
  }
  const char *op2 = s->u.reduce.kind == IR_REDUCE_SUM ? "tc_r + tc_x"
                    : s->u.reduce.kind == IR_REDUCE_MAX ? "fmaxf(tc_r, tc_x)"
                                                          : "fminf(tc_r, tc_x)";
  StrBuf *o = C->out;
  const char *val = src->dtype == DTYPE_F32 ? "" : "(float)";
  cuda_indent(C, depth);
  sb_printf(o, "#pragma unroll\n");
  cuda_indent(C, depth);
  sb_printf(o, "for (int tc_rs = 0; tc_rs < %d; ++tc_rs) {  // %s %s -> %s\n", l->rows_local,
            ir_reduce_name(s->u.reduce.kind), src->name, dst->name);
  if (ir_layout_cols_padded(l)) {
    /* Start from the identity; the slots past the last column add nothing. */
    const char *id = s->u.reduce.kind == IR_REDUCE_SUM ? "0.0f" : s->u.reduce.kind == IR_REDUCE_MAX ? "(-__int_as_float(0x7f800000))" : "__int_as_float(0x7f800000)";
    cuda_indent(C, depth + 1);
    sb_printf(o, "float tc_r = %s;\n", id);
    cuda_indent(C, depth + 1);
    sb_printf(o, "#pragma unroll\n");
    cuda_indent(C, depth + 1);
    sb_puts(o, "for (int tc_cs = 0; tc_cs < ");
    sb_printf(o, "%d; ++tc_cs) if (", l->cols_local);
    cuda_col_of(C, o, l, "tc_cs");
    sb_printf(o, " < %d) { const float tc_x = %s%s[tc_rs * %d + tc_cs]; tc_r = %s; }\n", l->cols, val, src->name,
              l->cols_local, op2);
  } else {
    cuda_indent(C, depth + 1);
    sb_printf(o, "float tc_r = %s%s[tc_rs * %d];\n", val, src->name, l->cols_local);
    cuda_indent(C, depth + 1);
    sb_printf(o, "#pragma unroll\n");
    cuda_indent(C, depth + 1);
    sb_printf(o, "for (int tc_cs = 1; tc_cs < %d; ++tc_cs) { const float tc_x = %s%s[tc_rs * %d + tc_cs]; tc_r = %s; }\n",
              l->cols_local, val, src->name, l->cols_local, op2);
  }
  /* Lanes that share the row: the quad for mma, the row group otherwise. */
  int span = l->frag == IR_FRAG_MMA_C ? 4 : (l->rows_local == 1 ? l->group : 1);
  for (int mask = 1; mask < span; mask *= 2) {
    cuda_indent(C, depth + 1);
    sb_printf(o, "{ const float tc_x = tc_shfl_xor(tc_r, %d); tc_r = %s; }\n", mask, op2);
  }
  const IrBuffer *scratch = s->u.reduce.scratch;
  if (scratch) {
    /* Rows split across warps: each warp column leaves its partial in
     * shared memory (one lane per quad), then every thread folds the
     * partials of its rows in the same order, so all copies agree. */
    int wn = l->warps_n;
    cuda_indent(C, depth + 1);
    sb_printf(o, "if ((tc_lane & 3) == 0) %s[", scratch->name);
    cuda_warp_n(o, l);
    sb_printf(o, " * %d + ", l->rows);
    cuda_row_of(C, o, l, "tc_rs");
    sb_puts(o, "] = tc_r;\n");
    cuda_indent(C, depth);
    sb_puts(o, "}\n");
    cuda_indent(C, depth);
    sb_puts(o, "__syncthreads();\n");
    cuda_indent(C, depth);
    sb_printf(o, "#pragma unroll\n");
    cuda_indent(C, depth);
    sb_printf(o, "for (int tc_rs = 0; tc_rs < %d; ++tc_rs) {\n", l->rows_local);
    cuda_indent(C, depth + 1);
    sb_puts(o, "const int tc_row = ");
    cuda_row_of(C, o, l, "tc_rs");
    sb_puts(o, ";\n");
    cuda_indent(C, depth + 1);
    sb_printf(o, "float tc_r = %s[tc_row];\n", scratch->name);
    cuda_indent(C, depth + 1);
    sb_printf(o, "#pragma unroll\n");
    cuda_indent(C, depth + 1);
    sb_printf(o, "for (int tc_w = 1; tc_w < %d; ++tc_w) { const float tc_x = %s[tc_w * %d + tc_row]; tc_r = %s; }\n",
              wn, scratch->name, l->rows, op2);
  }
  cuda_indent(C, depth + 1);
  if (s->u.reduce.clear) {
    sb_printf(o, "%s[tc_rs] = tc_r;\n", dst->name);
  } else {
    sb_printf(o, "{ const float tc_x = tc_r; tc_r = %s[tc_rs]; %s[tc_rs] = %s; }\n", dst->name, dst->name, op2);
  }
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
  if (scratch) {
    /* The scratch may be written again by the next reduction. */
    cuda_indent(C, depth);
    sb_puts(o, "__syncthreads();\n");
  }
}
