/* rasterize.c - pass "rasterize" (GPU): use_swizzle -> block rasterization.
 *
 * Needs: fold-constants (a constant panel size).
 * Guarantees: USE_SWIZZLE statements are gone; the kernel's raster_panel and
 * raster_column_major say how the backend remaps (bx, by): blocks are walked
 * in panels of raster_panel rows (or columns) so consecutive blocks share
 * operand tiles in L2. At most one use_swizzle per kernel, at top level. */
#include "passes.h"

bool pass_rasterize(IrModule *m, const PassOptions *opts, Diag *diag) {
  bool ok = true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    IrStmt *body = k->body;
    int out = 0;
    for (int j = 0; j < body->u.seq.n; j++) {
      IrStmt *s = body->u.seq.items[j];
      if (s->kind != IR_STMT_USE_SWIZZLE) {
        body->u.seq.items[out++] = s;
        continue;
      }
      int64_t panel;
      if (!ir_expr_is_int_const(s->u.swizzle.panel_size, &panel) || panel < 1) {
        diag_error(diag, s->loc, "use_swizzle: panel_size must be a positive compile-time constant");
        ok = false;
      } else if (k->raster_panel) {
        diag_error(diag, s->loc, "use_swizzle: only one per kernel");
        ok = false;
      } else if (k->ngrid < 2) {
        diag_error(diag, s->loc, "use_swizzle: needs a grid of at least 2 dimensions");
        ok = false;
      } else {
        k->raster_panel = (int)panel;
        k->raster_column_major = s->u.swizzle.column_major;
      }
    }
    body->u.seq.n = out;
  }
  return ok;
}
