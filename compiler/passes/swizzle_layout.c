/* swizzle_layout.c - pass "swizzle-layout" (GPU): bank-conflict-free shared tiles.
 *
 * Needs: check-shapes.
 * Guarantees: every shared buffer that is a gemm operand, or that an
 * annotate_layout(x, swizzled) asks for, is IR_LAYOUT_SWIZZLED with
 * swizzle_bytes = its row size, when it is a 2-D tile of a 16-bit or 8-bit
 * (FP8) type whose rows are one or an even number of 16-byte chunks
 * (tc_swizzle_offset; 192-byte rows of dim 96 included). An annotated buffer whose rows are an odd
 * number of chunks stays row-major (already conflict free); any other
 * annotated buffer is an error, an unannotated one stays row-major. ANNOTATE_LAYOUT statements are
 * consumed. The swizzle itself (tc_swizzle_offset in the device header)
 * permutes the 16-byte chunks of each row so the 8 rows one ldmatrix reads
 * land in 8 different bank groups. On sm_90a the operands of a wgmma gemm
 * (infer-layout's gemm.wgmma) whose rows are not one of wgmma's swizzled
 * rows (32, 64 or 128 bytes) are stored as panels instead: panels of the
 * widest of 128, 64, 32 bytes that divides the row (swizzle_bytes = that
 * width; panel_cols = 64, 32 or 16 for 16-bit elements, 128, 64 or 32 for
 * FP8; dim 96 = three 32-column panels), as tc_panel_cols in the device
 * header. Every shared buffer of such a kernel gets smem_align = 1024; a
 * gemm whose operands cannot be laid out for wgmma loses its wgmma mark
 * (the MMA_C split it got still works for mma.sync; an FP8 gemm then fails
 * check-resources, having no other form), and so on until no gemm changes.
 * A gemm whose warpgroups split N (infer-layout's warp_order WARPGROUPS on
 * its accumulator) reads B in slices of N / gn columns, one per
 * warpgroup, and a descriptor starts only at a whole swizzle atom: an
 * N-major B ([K, N]) whose panels (or rows of 32, 64, 128 bytes) do not
 * divide the slice gets narrower panels, the widest of 128, 64, 32 bytes
 * dividing both its row and the slice (pass_nsplit_panel_cols: the
 * backward's dS^T [128, 96] in slices of 48 columns is six 16-column
 * panels, the 32-byte swizzle, where 32-column ones would do without the
 * split); a B that cannot be so (shared with an mma.sync gemm, which
 * unpanels it), or an M-major A (transpose_A) not in 128-byte rows or
 * panels after such a narrowing, takes the gemm back to mma.sync, which
 * reads the accumulator in the same warp order. */
#include "passes.h"

/* 16-bit elements, or 8-bit ones (FP8 codes): the swizzle moves 16-byte
 * chunks, whatever they hold. */
static bool swizzle_dtype(DType t) { return dtype_size(t) == 2 || dtype_size(t) == 1; }

static bool can_swizzle(const IrBuffer *b, int *row_bytes) {
  int64_t cols;
  if (b->scope != IR_SCOPE_SHARED || b->rank != 2 || !swizzle_dtype(b->dtype)) return false;
  if (!ir_expr_is_int_const(b->shape[1], &cols)) return false;
  *row_bytes = (int)cols * dtype_size(b->dtype);
  int cpr = *row_bytes / 16;
  /* tc_swizzle_offset's rows (TC_SWIZZLE_ROWS_OK): one chunk or an even
   * number of chunks (192-byte rows of dim 96 included). */
  return *row_bytes % 16 == 0 && (cpr == 1 || cpr % 2 == 0);
}

/* Rows an ldmatrix reads without conflicts as they are: an odd number of
 * 16-byte chunks (8 consecutive rows start in 8 distinct bank groups). */
static bool conflict_free_as_is(const IrBuffer *b) {
  int64_t cols;
  if (b->scope != IR_SCOPE_SHARED || b->rank != 2 || !swizzle_dtype(b->dtype)) return false;
  if (!ir_expr_is_int_const(b->shape[1], &cols)) return false;
  int64_t bytes = cols * dtype_size(b->dtype);
  return bytes % 16 == 0 && (bytes / 16) % 2 == 1;
}

static void swizzle(IrBuffer *b) {
  int bytes;
  if (b->layout.kind == IR_LAYOUT_SWIZZLED || !can_swizzle(b, &bytes)) return;
  b->layout.kind = IR_LAYOUT_SWIZZLED;
  b->layout.swizzle_bytes = bytes;
}

/* Rows wgmma's 32/64/128-byte swizzle modes read as they are. */
static bool wgmma_rows(const IrLayout *l) {
  return l->kind == IR_LAYOUT_SWIZZLED &&
         (l->panel_cols || l->swizzle_bytes == 32 || l->swizzle_bytes == 64 || l->swizzle_bytes == 128);
}

/* A wgmma operand: swizzled rows of 32, 64 or 128 bytes are already what
 * wgmma's swizzle modes read; other rows of a multiple of 32 bytes become
 * panels of the widest of 128, 64, 32 bytes that divides them (64, 32, 16
 * columns of a 16-bit type; 128, 64, 32 of FP8). */
static void swizzle_for_wgmma(IrBuffer *b) {
  swizzle(b);
  IrLayout *l = &b->layout;
  if (l->kind != IR_LAYOUT_SWIZZLED || wgmma_rows(l)) return;
  int bytes = l->swizzle_bytes; /* the row's bytes */
  if (bytes % 32) return;       /* drop_wgmma_on_plain_rows takes the gemm back */
  int panel_bytes = bytes % 128 == 0 ? 128 : bytes % 64 == 0 ? 64 : 32;
  l->panel_cols = panel_bytes / dtype_size(b->dtype);
  l->swizzle_bytes = panel_bytes;
}

int pass_nsplit_panel_cols(int cols, int slice, int es) {
  if (es <= 0) return 0;
  for (int bytes = 128; bytes >= 32; bytes /= 2) {
    const int p = bytes / es;
    if (cols % p == 0 && slice % p == 0) return p;
  }
  return 0;
}

static int cols_of(const IrBuffer *b) {
  int64_t cols = 0;
  ir_expr_is_int_const(b->shape[b->rank - 1], &cols);
  return (int)cols;
}

/* The columns of one warpgroup's slice of B when the gemm's warpgroups
 * split N; 0 otherwise. */
static int nsplit_slice(const IrStmt *s) {
  const IrLayout *lc = &s->u.gemm.c.buf->layout;
  if (lc->frag != IR_FRAG_MMA_C || lc->warp_order != IR_WARP_ORDER_WARPGROUPS || lc->warps_n < 2) return 0;
  return lc->cols / lc->warps_n;
}

/* Columns one descriptor's swizzle atom spans in a wgmma operand tile: a
 * panel, or the whole swizzled row. */
static int atom_cols(const IrBuffer *b) { return b->layout.panel_cols ? b->layout.panel_cols : cols_of(b); }

/* An N-split gemm's N-major B: every slice must start a panel. Narrows
 * the panels (never widens them), so a tile read in slices by several
 * gemms ends with panels that divide every slice. */
static void panels_for_slices(IrBuffer *b, int slice) {
  IrLayout *l = &b->layout;
  if (l->kind != IR_LAYOUT_SWIZZLED || b->rank < 2 || slice % atom_cols(b) == 0) return;
  const int es = dtype_size(b->dtype), p = pass_nsplit_panel_cols(cols_of(b), slice, es);
  if (!p || p > atom_cols(b)) return; /* drop_wgmma_on_plain_rows takes the gemm back */
  l->panel_cols = p;
  l->swizzle_bytes = p * es;
}

/* After every layout decision: an N-split gemm's N-major B starts each
 * slice at a panel, and an M-major A (transpose_A, tc_wgmma_a_desc) is in
 * 128-byte rows or panels. */
static bool slices_fit(const IrStmt *s) {
  const IrBuffer *a = s->u.gemm.a.buf, *b = s->u.gemm.b.buf;
  const int slice = nsplit_slice(s);
  if (slice && !s->u.gemm.trans_b && slice % atom_cols(b)) return false;
  return !s->u.gemm.trans_a || a->scope != IR_SCOPE_SHARED || a->layout.swizzle_bytes == 128;
}

typedef struct Ctx {
  IrModule *m;
  Diag *diag;
  bool ok;
  bool has_wgmma;  /* the kernel being visited asks for wgmma */
  bool kept_wgmma; /* ... and some gemm still runs as wgmma after layouts */
  bool dropped;    /* drop_wgmma_on_plain_rows took a gemm off wgmma */
} Ctx;

/* The ldmatrix gemm cannot read panels: a tile shared by a wgmma gemm and
 * an mma.sync gemm keeps plain swizzled rows, so the wgmma one falls back. */
static void unpanel_mma_sync_operands(IrStmt *s, void *vctx) {
  (void)vctx;
  if (s->kind != IR_STMT_GEMM || s->u.gemm.wgmma) return;
  IrBuffer *ops[2] = {s->u.gemm.a.buf, s->u.gemm.b.buf};
  for (int i = 0; i < 2; i++) {
    IrLayout *l = &ops[i]->layout;
    if (!l->panel_cols) continue;
    l->panel_cols = 0;
    l->kind = IR_LAYOUT_ROW_MAJOR;
    swizzle(ops[i]); /* back to swizzled rows of the full width */
  }
}

static void drop_wgmma_on_plain_rows(IrStmt *s, void *vctx) {
  Ctx *c = vctx;
  if (s->kind != IR_STMT_GEMM || !s->u.gemm.wgmma) return;
  const IrLayout *la = &s->u.gemm.a.buf->layout, *lb = &s->u.gemm.b.buf->layout;
  bool a_regs = s->u.gemm.a.buf->scope == IR_SCOPE_FRAGMENT;
  if ((!a_regs && !wgmma_rows(la)) || !wgmma_rows(lb) || !slices_fit(s))
    s->u.gemm.wgmma = false, c->dropped = true;
  else
    c->kept_wgmma = true;
}

/* In a kernel with wgmma every shared buffer's size is a multiple of 1024
 * bytes, so every tile starts where the hardware swizzle pattern starts. */
static void align_shared(IrStmt *s, void *vctx) {
  (void)vctx;
  if (s->kind == IR_STMT_ALLOC && s->u.alloc->scope == IR_SCOPE_SHARED) s->u.alloc->smem_align = 1024;
}

static void visit(IrStmt *s, void *vctx) {
  Ctx *c = vctx;
  if (s->kind == IR_STMT_GEMM && s->u.gemm.wgmma) {
    swizzle_for_wgmma(s->u.gemm.a.buf);
    swizzle_for_wgmma(s->u.gemm.b.buf);
    if (nsplit_slice(s) && !s->u.gemm.trans_b) panels_for_slices(s->u.gemm.b.buf, nsplit_slice(s));
    c->has_wgmma = true;
  } else if (s->kind == IR_STMT_GEMM) {
    swizzle(s->u.gemm.a.buf);
    swizzle(s->u.gemm.b.buf);
  } else if (s->kind == IR_STMT_ANNOTATE_LAYOUT) {
    int bytes;
    IrBuffer *b = s->u.annotate.buf;
    if (!can_swizzle(b, &bytes)) {
      if (conflict_free_as_is(b)) return;
      diag_error(c->diag, s->loc,
                 "annotate_layout: '%s' cannot be swizzled (needs a 2-D shared tile of a 16-bit or 8-bit type whose "
                 "rows are a multiple of 16 bytes)",
                 b->name);
      c->ok = false;
      return;
    }
    swizzle(b);
  }
}

static void drop_annotations(IrModule *m, IrStmt *s) {
  if (!s) return;
  if (s->kind == IR_STMT_SEQ) {
    int out = 0;
    for (int i = 0; i < s->u.seq.n; i++) {
      IrStmt *it = s->u.seq.items[i];
      if (it->kind == IR_STMT_ANNOTATE_LAYOUT) continue;
      drop_annotations(m, it);
      s->u.seq.items[out++] = it;
    }
    s->u.seq.n = out;
  } else if (s->kind == IR_STMT_FOR) {
    drop_annotations(m, s->u.for_.body);
  } else if (s->kind == IR_STMT_IF) {
    drop_annotations(m, s->u.if_.then_);
    drop_annotations(m, s->u.if_.else_);
  }
}

bool pass_swizzle_layout(IrModule *m, const PassOptions *opts, Diag *diag) {
  Ctx c = {m, diag, true, false, false};
  for (int i = 0; i < m->nkernels; i++) {
    IrStmt *body = m->kernels[i]->body;
    c.has_wgmma = c.kept_wgmma = false;
    ir_visit_stmts(body, visit, &c);
    /* A gemm taken off wgmma becomes an mma.sync one whose other operand
     * may still be in panels for a third gemm: repeat until nothing moves
     * (the backward's dQ = dS K on mma.sync unpanels K, so K Q^T falls back,
     * which unpanels Q, ...). */
    c.dropped = c.has_wgmma;
    while (c.dropped) {
      c.dropped = c.kept_wgmma = false;
      ir_visit_stmts(body, unpanel_mma_sync_operands, &c);
      ir_visit_stmts(body, drop_wgmma_on_plain_rows, &c);
    }
    if (c.kept_wgmma) ir_visit_stmts(body, align_shared, &c);
    m->kernels[i]->wgmma = c.kept_wgmma;
    drop_annotations(m, body);
  }
  return c.ok;
}
