/* layout.c - spelling and comparison of buffer layouts (ir.h). The formulas
 * behind the fragment fields are in docs/gpu-codegen.md. */
#include "ir.h"

#define X(name, spelling) spelling,
static const char *const warp_order_spellings[] = {IR_WARP_ORDERS(X)};
#undef X

static const char *warp_order_str(const IrLayout *l) {
  return (unsigned)l->warp_order < IR_WARP_ORDER_COUNT ? warp_order_spellings[l->warp_order] : " ?";
}

const char *ir_layout_str(Arena *arena, const IrLayout *l) {
  switch (l->kind) {
  case IR_LAYOUT_SWIZZLED:
    if (l->panel_cols) return arena_printf(arena, "swizzled(%d, panels %d)", l->swizzle_bytes, l->panel_cols);
    return l->swizzle_bytes ? arena_printf(arena, "swizzled(%d)", l->swizzle_bytes) : "swizzled";
  case IR_LAYOUT_FRAGMENT:
    switch (l->frag) {
    case IR_FRAG_MMA_C:
      if (ir_layout_is_col_vector(l))
        return arena_printf(arena, "cols of mma_c(%d, warps %dx%d%s, local %d)", l->cols, l->warps_m, l->warps_n,
                            warp_order_str(l), l->cols_local);
      if (!l->cols)
        return arena_printf(arena, "rows of mma_c(%d, warps %dx%d%s, local %d)", l->rows, l->warps_m, l->warps_n,
                            warp_order_str(l), l->rows_local);
      return arena_printf(arena, "mma_c(%dx%d, warps %dx%d%s, local %dx%d)", l->rows, l->cols, l->warps_m,
                          l->warps_n, warp_order_str(l), l->rows_local, l->cols_local);
    case IR_FRAG_ROWGROUP:
      if (ir_layout_is_col_vector(l))
        return arena_printf(arena, "cols of rowgroup(%d, group %d, local %d)", l->cols, l->group, l->cols_local);
      if (!l->cols)
        return arena_printf(arena, "rows of rowgroup(%d, group %d, local %d)", l->rows, l->group, l->rows_local);
      return arena_printf(arena, "rowgroup(%dx%d, group %d, local %dx%d)", l->rows, l->cols, l->group,
                          l->rows_local, l->cols_local);
    default:
      return "fragment";
    }
  default:
    return ir_layout_name(l->kind);
  }
}

bool ir_layout_same_rows(const IrLayout *a, const IrLayout *b) {
  if (a->kind != IR_LAYOUT_FRAGMENT || b->kind != IR_LAYOUT_FRAGMENT || a->frag != b->frag) return false;
  if (a->rows != b->rows || a->rows_local != b->rows_local) return false;
  if (a->frag == IR_FRAG_MMA_C)
    return a->warps_m == b->warps_m && a->warps_n == b->warps_n && a->warp_order == b->warp_order;
  return a->group == b->group;
}

bool ir_layout_is_col_vector(const IrLayout *l) {
  return l->kind == IR_LAYOUT_FRAGMENT && l->rows == 0 && l->cols > 0;
}

/* The column formula (docs/gpu-codegen.md) depends on the warp columns for
 * MMA_C (their number and the warp order) and on the row group for
 * ROWGROUP (col = tid % G + G * cs, or cs). */
bool ir_layout_same_cols(const IrLayout *a, const IrLayout *b) {
  if (a->kind != IR_LAYOUT_FRAGMENT || b->kind != IR_LAYOUT_FRAGMENT || a->frag != b->frag) return false;
  if (a->cols != b->cols || a->cols_local != b->cols_local || !a->cols) return false;
  if (a->frag == IR_FRAG_MMA_C) return a->warps_n == b->warps_n && a->warp_order == b->warp_order;
  return a->group == b->group;
}

void ir_layout_warp_pos(const IrLayout *l, int warp, int *wm, int *wn) {
  const int n = l->warps_n > 0 ? l->warps_n : 1;
  if (l->warp_order == IR_WARP_ORDER_WARPGROUPS) {
    const int g = warp / 4; /* the warpgroup */
    *wm = (g / n) * 4 + warp % 4;
    *wn = g % n;
  } else {
    *wm = warp / n;
    *wn = warp % n;
  }
}

int ir_layout_wgmma_n(const IrLayout *l) { return l->warps_n > 1 ? l->cols / l->warps_n : l->cols; }

int ir_layout_wgmma_blocks(const IrLayout *l) { return l->warps_n == 1 && l->rows == 32 * l->warps_m ? 2 : 1; }

bool ir_layout_cols_padded(const IrLayout *l) {
  return l->kind == IR_LAYOUT_FRAGMENT && l->frag == IR_FRAG_ROWGROUP && l->cols > 0 && l->group > 1 &&
         l->group * l->cols_local > l->cols;
}

int64_t ir_buffer_bytes_aligned(const IrBuffer *b) {
  if (b->alias_of) return 0; /* shares another buffer's storage */
  int64_t bytes = dtype_size(b->dtype);
  for (int i = 0; i < b->rank; i++) {
    int64_t d = 0;
    ir_expr_is_int_const(b->shape[i], &d);
    bytes = d <= 0 ? 0 : bytes > INT64_MAX / 4 / d ? INT64_MAX / 4 : bytes * d;
  }
  /* mbarriers live in the barrier area after the data buffers, 8 bytes each
   * (their alignment), not in a 128- or 1024-byte slot of their own. */
  const int64_t align = b->is_mbarrier ? 8 : b->smem_align > 128 ? b->smem_align : 128;
  return (bytes + align - 1) / align * align;
}

/* a + b, capped at INT32_MAX (TilecKernelInfo.shared_bytes is an int). */
static int64_t add_capped_int32(int64_t a, int64_t b) { return b > INT32_MAX - a ? INT32_MAX : a + b; }

int64_t ir_shared_bytes(const IrStmt *s, IrSharedPart part) {
  if (!s) return 0;
  int64_t total = 0;
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++) total = add_capped_int32(total, ir_shared_bytes(s->u.seq.items[i], part));
    break;
  case IR_STMT_ALLOC: {
    const IrBuffer *b = s->u.alloc;
    const bool wanted = part == IR_SHARED_ALL || (part == IR_SHARED_MBARRIERS) == b->is_mbarrier;
    if (b->scope == IR_SCOPE_SHARED && wanted) total = add_capped_int32(0, ir_buffer_bytes_aligned(b));
    break;
  }
  case IR_STMT_FOR:
    total = ir_shared_bytes(s->u.for_.body, part);
    break;
  case IR_STMT_IF:
    total = add_capped_int32(ir_shared_bytes(s->u.if_.then_, part), ir_shared_bytes(s->u.if_.else_, part));
    break;
  case IR_STMT_WARP_ROLES:
    total = add_capped_int32(ir_shared_bytes(s->u.roles.producer, part), ir_shared_bytes(s->u.roles.consumer, part));
    break;
  default:
    break;
  }
  return total;
}
