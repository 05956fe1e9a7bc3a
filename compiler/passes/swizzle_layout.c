/* swizzle_layout.c - pass "swizzle-layout" (GPU): bank-conflict-free shared tiles.
 *
 * Needs: check-shapes.
 * Guarantees: every shared buffer that is a gemm operand, or that an
 * annotate_layout(x, swizzled) asks for, is IR_LAYOUT_SWIZZLED with
 * swizzle_bytes = its row size, when it is a 2-D tile of a 16-bit type whose
 * rows are a multiple of 16 bytes (else an annotated buffer is an error and
 * an unannotated one stays row-major). ANNOTATE_LAYOUT statements are
 * consumed. The swizzle itself (tc_swizzle_offset in the device header)
 * permutes the 16-byte chunks of each row so the 8 rows one ldmatrix reads
 * land in 8 different bank groups. */
#include "passes.h"

static bool can_swizzle(const IrBuffer *b, int *row_bytes) {
  int64_t cols;
  if (b->scope != IR_SCOPE_SHARED || b->rank != 2 || dtype_size(b->dtype) != 2) return false;
  if (!ir_expr_is_int_const(b->shape[1], &cols)) return false;
  *row_bytes = (int)cols * 2;
  return *row_bytes % 16 == 0 && ((*row_bytes / 16) & (*row_bytes / 16 - 1)) == 0;
}

static void swizzle(IrBuffer *b) {
  int bytes;
  if (b->layout.kind == IR_LAYOUT_SWIZZLED || !can_swizzle(b, &bytes)) return;
  b->layout.kind = IR_LAYOUT_SWIZZLED;
  b->layout.swizzle_bytes = bytes;
}

typedef struct Ctx {
  IrModule *m;
  Diag *diag;
  bool ok;
} Ctx;

static void visit(IrStmt *s, void *vctx) {
  Ctx *c = vctx;
  if (s->kind == IR_STMT_GEMM) {
    swizzle(s->u.gemm.a.buf);
    swizzle(s->u.gemm.b.buf);
  } else if (s->kind == IR_STMT_ANNOTATE_LAYOUT) {
    int bytes;
    IrBuffer *b = s->u.annotate.buf;
    if (!can_swizzle(b, &bytes)) {
      diag_error(c->diag, s->loc,
                 "annotate_layout: '%s' cannot be swizzled (needs a 2-D shared tile of a 16-bit type whose rows are a "
                 "power-of-two multiple of 16 bytes)",
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
  Ctx c = {m, diag, true};
  for (int i = 0; i < m->nkernels; i++) {
    pass_visit_stmts(m->kernels[i]->body, visit, &c);
    drop_annotations(m, m->kernels[i]->body);
  }
  return c.ok;
}
