/* ir_print.c - the IR text format (docs/ir.md, "IR text format").
 *
 * One format for every pass dump, so `diff` of two dumps shows exactly what a
 * pass did. It reads like the .tile language: a kernel header with typed
 * parameters, the symbols and the launch grid, then one statement per line,
 * each ending with its source location as `// @LINE:COL`.
 *
 * Output is deterministic: no pointers or ids are printed. Names come from
 * the IR; only when a binder would shadow a different, still visible variable
 * of the same name (or two buffers share a name) does the printer add a
 * suffix (`i.1`), assigned in print order so it is stable across passes.
 * Expressions print with the fewest parentheses the precedence allows. The
 * printer never crashes on broken IR: missing slots print as `<null>`, so a
 * dump can be taken of IR the verifier rejected. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expr_writer.h"
#include "ir.h"
#include "name_table.h"
#include "strbuf.h"

/* ---- Naming ------------------------------------------------------------- */

typedef struct PrintName {
  const void *key; /* IrVar* or IrBuffer* */
  const char *name;
  bool is_buffer;
} PrintName;

/* Hash tables keep naming linear in the number of binders (finding F6). */
typedef struct Printer {
  StrBuf *sb;
  Arena *arena;         /* names made by the printer, and the tables */
  PrintName *names;     /* every binder seen in this kernel */
  int nnames, cap;
  NameTable keys;       /* entry i: names[i].key */
  NameTable buf_names;  /* the print names of the buffers in names */
  NameTable visible;    /* the print names of the variables in scope, a stack */
} Printer;

static const char *lookup_name(const Printer *p, const void *key) {
  if (!p) return NULL;
  int i = name_table_find(&p->keys, key);
  return i >= 0 ? p->names[i].name : NULL;
}

static bool name_taken(const Printer *p, const char *name, bool is_buffer) {
  /* buffers: one flat namespace per kernel */
  return name_table_find(is_buffer ? &p->buf_names : &p->visible, name) >= 0;
}

/* Gives key a print name (once) and, for variables, puts it in scope. */
static void bind(Printer *p, const void *key, const char *base, bool is_buffer) {
  int idx = name_table_find(&p->keys, key);
  if (idx < 0) {
    const char *name = base && *base ? base : "_";
    for (int k = 1; name_taken(p, name, is_buffer); k++)
      name = arena_printf(p->arena, "%s.%d", base && *base ? base : "_", k);
    p->names = arena_grow(p->arena, p->names, &p->cap, p->nnames + 1, sizeof(PrintName));
    p->names[p->nnames] = (PrintName){key, name, is_buffer};
    idx = p->nnames++;
    name_table_push(&p->keys, key);
    if (is_buffer) name_table_push(&p->buf_names, name);
  }
  if (!is_buffer) name_table_push(&p->visible, p->names[idx].name);
}

static const char *var_name(const Printer *p, const IrVar *v) {
  if (!v) return "<null>";
  const char *n = lookup_name(p, v);
  return n ? n : v->name;
}

static const char *buf_name(const Printer *p, const IrBuffer *b) {
  if (!b) return "<null>";
  const char *n = lookup_name(p, b);
  return n ? n : b->name;
}

/* ---- Expressions -------------------------------------------------------- */

/* Shortest text that reads back as the same double, always with a '.', an
 * exponent or inf/nan so it reads back as a float. */
static void format_float(char *out, size_t size, double v) {
  if (isnan(v)) {
    snprintf(out, size, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(out, size, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(out, size, "%.*g", prec, v);
    if (strtod(out, NULL) == v) break;
  }
  if (!strpbrk(out, ".e")) {
    size_t n = strlen(out);
    if (n + 3 <= size) memcpy(out + n, ".0", 3);
  }
}

/* The IR text is the C-family dialect with the fewest parentheses, select
 * spelled as the language's if_then_else and casts as dtype(x). */
static bool print_check(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  if (!e) {
    sb_puts(sb, "<null>");
    return false;
  }
  if ((unsigned)e->kind >= IR_EXPR_COUNT) {
    sb_printf(sb, "<bad expr kind %d>", (int)e->kind);
    return false;
  }
  return true;
}

static void print_int(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  if (e->dtype == DTYPE_BOOL)
    sb_puts(sb, e->u.int_value ? "true" : "false");
  else if (e->dtype == DTYPE_I64)
    sb_printf(sb, "%lld", (long long)e->u.int_value);
  else /* an i32 literal: shown as a cast so the dtype is visible */
    sb_printf(sb, "%s(%lld)", dtype_name(e->dtype), (long long)e->u.int_value);
}

static void print_float(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  char text[64];
  format_float(text, sizeof text, e->u.float_value);
  if (e->dtype == DTYPE_F32) /* the default float type: printed bare */
    sb_puts(sb, text);
  else
    sb_printf(sb, "%s(%s)", dtype_name(e->dtype), text);
}

static void print_var(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  sb_puts(sb, var_name(w->ctx, e->u.var));
}

static void print_load(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  sb_printf(sb, "%s[", buf_name(w->ctx, e->u.load.buf));
  for (int i = 0; i < e->u.load.nidx && i < IR_MAX_RANK; i++) {
    if (i) sb_puts(sb, ", ");
    expr_write(w, sb, e->u.load.idx[i]);
  }
  sb_puts(sb, "]");
}

static void print_cast(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  sb_printf(sb, "%s(", dtype_name(e->dtype));
  expr_write(w, sb, e->u.cast_src);
  sb_puts(sb, ")");
}

static const char *print_intrinsic(const ExprWriter *w, const IrExpr *e) {
  return ir_intrinsic_name(e->u.call.fn);
}

static const ExprDialect ir_text = {
    .minimal_parens = true,
    .select = {"if_then_else(", ", ", ", ", ")"},
    .check = print_check,
    .int_literal = print_int,
    .float_literal = print_float,
    .var = print_var,
    .load = print_load,
    .cast = print_cast,
    .intrinsic = print_intrinsic,
};

static void print_expr(Printer *p, StrBuf *sb, const IrExpr *e) {
  ExprWriter w = {&ir_text, p};
  expr_write(&w, sb, e);
}

/* ---- Statements --------------------------------------------------------- */

static void print_loc(StrBuf *sb, SrcLoc loc) {
  if (loc.line > 0)
    sb_printf(sb, "  // @%d:%d\n", loc.line, loc.col);
  else
    sb_puts(sb, "  // @?\n");
}

static void print_shape(Printer *p, StrBuf *sb, const IrBuffer *b) {
  sb_printf(sb, "%s[", dtype_name(b->dtype));
  for (int d = 0; d < b->rank && d < IR_MAX_RANK; d++) {
    if (d) sb_puts(sb, ", ");
    print_expr(p, sb, b->shape[d]);
  }
  sb_puts(sb, "]");
}

static void print_layout(StrBuf *sb, const IrLayout *l) {
  Arena *scratch = arena_create();
  sb_printf(sb, "layout(%s)", ir_layout_str(scratch, l));
  arena_destroy(scratch);
}

/* A region covering its whole buffer prints as the bare name. */
static bool region_is_whole(const IrRegion *r) {
  if (!r->buf || r->rank != r->buf->rank) return false;
  for (int d = 0; d < r->rank && d < IR_MAX_RANK; d++) {
    int64_t start;
    if (r->is_index[d] || r->guard[d]) return false;
    if (!ir_expr_is_int_const(r->start[d], &start) || start != 0) return false;
    if (!r->extent[d] || !ir_expr_equal(r->extent[d], r->buf->shape[d])) return false;
  }
  return true;
}

/* `Q[bz, bx * 64 :+ 64 guard, by, 0 :+ 64]`: an index dim prints its start,
 * a range dim `start :+ extent`, and guard-bounds marks dims with `guard`
 * (checked at the tensor's end) or `guard(both)` (a start that may be
 * negative: checked at both edges); a TMA copy's `clamp` is such a start,
 * whose coordinate is clamped (the hardware checks the edges). */
static void print_region(Printer *p, StrBuf *sb, const IrRegion *r) {
  sb_puts(sb, buf_name(p, r->buf));
  if (region_is_whole(r)) return;
  sb_puts(sb, "[");
  for (int d = 0; d < r->rank && d < IR_MAX_RANK; d++) {
    if (d) sb_puts(sb, ", ");
    print_expr(p, sb, r->start[d]);
    if (!r->is_index[d]) {
      sb_puts(sb, " :+ ");
      print_expr(p, sb, r->extent[d]);
    }
    if (r->guard[d] == IR_GUARD_LOWER) sb_puts(sb, " clamp"); /* a TMA coordinate from data */
    else if (r->guard[d]) sb_puts(sb, r->guard[d] & IR_GUARD_LOWER ? " guard(both)" : " guard");
  }
  sb_puts(sb, "]");
}

static void print_stmt(Printer *p, const IrStmt *s, int depth);

/* The statements of a SEQ, in a scope of their own (LETs end with it). */
static void print_items(Printer *p, const IrStmt *s, int depth) {
  if (!s) {
    sb_indent(p->sb, depth);
    sb_puts(p->sb, "<null>\n");
    return;
  }
  int saved = p->visible.n;
  if (s->kind == IR_STMT_SEQ) {
    for (int i = 0; i < s->u.seq.n; i++) print_stmt(p, s->u.seq.items[i], depth);
  } else {
    print_stmt(p, s, depth); /* a lone statement where a SEQ belongs */
  }
  name_table_truncate(&p->visible, saved);
}

static void print_stmt(Printer *p, const IrStmt *s, int depth) {
  StrBuf *sb = p->sb;
  sb_indent(sb, depth);
  if (!s) {
    sb_puts(sb, "<null>\n");
    return;
  }
  switch (s->kind) {
  case IR_STMT_SEQ:
    sb_puts(sb, "{");
    print_loc(sb, s->loc);
    print_items(p, s, depth + 1);
    sb_indent(sb, depth);
    sb_puts(sb, "}\n");
    return;
  case IR_STMT_ALLOC: {
    const IrBuffer *b = s->u.alloc;
    if (!b) {
      sb_puts(sb, "alloc <null>");
      break;
    }
    bind(p, b, b->name, true);
    sb_printf(sb, "alloc %s: ", buf_name(p, b));
    print_shape(p, sb, b);
    sb_printf(sb, " %s ", ir_scope_name(b->scope));
    print_layout(sb, &b->layout);
    if (b->alias_of) sb_printf(sb, " in(%s)", buf_name(p, b->alias_of));
    if (b->is_mbarrier) sb_puts(sb, " mbarrier");
    if (b->mbar_count > 1) sb_printf(sb, "(%d)", b->mbar_count);
    if (b->mbar_cluster) sb_puts(sb, " cluster");
    if (b->multicast) sb_puts(sb, " multicast");
    break;
  }
  case IR_STMT_LET: {
    const IrVar *v = s->u.let.var;
    /* The value is printed before the name is bound: it sees the outer scope. */
    StrBuf value;
    sb_init(&value);
    print_expr(p, &value, s->u.let.value);
    if (v) bind(p, v, v->name, false);
    sb_printf(sb, "let %s: %s = %s", var_name(p, v), v ? dtype_name(v->dtype) : "?",
              value.data);
    sb_free(&value);
    break;
  }
  case IR_STMT_STORE:
    sb_printf(sb, "%s%s[", s->u.store.atomic ? "atomic_add " : "", buf_name(p, s->u.store.buf));
    for (int i = 0; i < s->u.store.nidx && i < IR_MAX_RANK; i++) {
      if (i) sb_puts(sb, ", ");
      print_expr(p, sb, s->u.store.idx[i]);
    }
    sb_puts(sb, s->u.store.atomic ? "], " : "] = ");
    print_expr(p, sb, s->u.store.value);
    break;
  case IR_STMT_ATOMIC_FETCH_ADD: {
    /* let old: i32 = atomic_fetch_add(G[i], 1) acq_rel slot(S) [guard(c)]:
     * the operands are printed before the result's name is bound. */
    StrBuf rhs;
    sb_init(&rhs);
    sb_printf(&rhs, "atomic_fetch_add(%s[", buf_name(p, s->u.store.buf));
    for (int i = 0; i < s->u.store.nidx && i < IR_MAX_RANK; i++) {
      if (i) sb_puts(&rhs, ", ");
      print_expr(p, &rhs, s->u.store.idx[i]);
    }
    sb_puts(&rhs, "], ");
    print_expr(p, &rhs, s->u.store.value);
    sb_puts(&rhs, ") acq_rel");
    if (s->u.store.slot) sb_printf(&rhs, " slot(%s)", buf_name(p, s->u.store.slot));
    if (s->u.store.guard) {
      sb_puts(&rhs, " guard(");
      print_expr(p, &rhs, s->u.store.guard);
      sb_puts(&rhs, ")");
    }
    const IrVar *v = s->u.store.result;
    if (v) bind(p, v, v->name, false);
    sb_printf(sb, "let %s: %s = %s", var_name(p, v), v ? dtype_name(v->dtype) : "?", rhs.data);
    sb_free(&rhs);
    break;
  }
  case IR_STMT_FOR: {
    int saved = p->visible.n;
    StrBuf extent;
    sb_init(&extent);
    print_expr(p, &extent, s->u.for_.extent);
    if (s->u.for_.var) bind(p, s->u.for_.var, s->u.for_.var->name, false);
    sb_printf(sb, "for %s", var_name(p, s->u.for_.var));
    if (s->u.for_.kind == IR_FOR_STREAM_K) {
      /* for tile, k_begin, k_len in stream_k(tiles, k_iters = n) */
      StrBuf iters;
      sb_init(&iters);
      print_expr(p, &iters, s->u.for_.k_iters);
      bind(p, s->u.for_.k_begin, s->u.for_.k_begin->name, false);
      bind(p, s->u.for_.k_len, s->u.for_.k_len->name, false);
      sb_printf(sb, ", %s, %s in %s(%s, k_iters = %s", var_name(p, s->u.for_.k_begin),
                var_name(p, s->u.for_.k_len), ir_for_kind_name(s->u.for_.kind), extent.data, iters.data);
      sb_free(&iters);
    } else {
      sb_printf(sb, " in %s(%s", ir_for_kind_name(s->u.for_.kind), extent.data);
    }
    sb_free(&extent);
    if (s->u.for_.kind == IR_FOR_PIPELINED)
      sb_printf(sb, ", num_stages = %d", s->u.for_.num_stages);
    sb_puts(sb, ") {");
    print_loc(sb, s->loc);
    print_items(p, s->u.for_.body, depth + 1);
    name_table_truncate(&p->visible, saved);
    sb_indent(sb, depth);
    sb_puts(sb, "}\n");
    return;
  }
  case IR_STMT_WARP_ROLES:
    sb_printf(sb, "warp_roles producer(warps %d..%d, regs %d%s) {", s->u.roles.producer_warp,
              s->u.roles.producer_warp + 3, s->u.roles.producer_regs, s->u.roles.inline_producer ? ", inline" : "");
    print_loc(sb, s->loc);
    print_items(p, s->u.roles.producer, depth + 1);
    sb_indent(sb, depth);
    sb_printf(sb, "} consumers(regs %d)", s->u.roles.consumer_regs);
    {
      int saved = p->visible.n;
      const IrVar *wg = s->u.roles.warpgroup;
      if (wg) {
        bind(p, wg, wg->name, false);
        sb_printf(sb, " as (%s)", var_name(p, wg));
      }
      sb_puts(sb, " {\n");
      print_items(p, s->u.roles.consumer, depth + 1);
      name_table_truncate(&p->visible, saved);
    }
    sb_indent(sb, depth);
    sb_puts(sb, "}\n");
    return;
  case IR_STMT_EXIT:
    sb_puts(sb, "exit if (");
    print_expr(p, sb, s->u.exit_.cond);
    sb_puts(sb, ")");
    print_loc(sb, s->loc);
    return;
  case IR_STMT_IF:
    sb_puts(sb, s->u.if_.opaque ? "if opaque(" : "if (");
    print_expr(p, sb, s->u.if_.cond);
    sb_puts(sb, ") {");
    print_loc(sb, s->loc);
    print_items(p, s->u.if_.then_, depth + 1);
    if (s->u.if_.else_) {
      sb_indent(sb, depth);
      sb_puts(sb, "} else {\n");
      print_items(p, s->u.if_.else_, depth + 1);
    }
    sb_indent(sb, depth);
    sb_puts(sb, "}\n");
    return;
  case IR_STMT_COPY:
    sb_puts(sb, s->u.copy.tma ? "copy.tma " : s->u.copy.async ? "copy.async " : "copy ");
    print_region(p, sb, &s->u.copy.src);
    sb_puts(sb, " -> ");
    print_region(p, sb, &s->u.copy.dst);
    if (s->u.copy.tma && s->u.copy.dst.buf->scope == IR_SCOPE_GLOBAL) {
      sb_printf(sb, " map(%d)", s->u.copy.tma_map);
      if (s->u.copy.via) sb_printf(sb, " via(%s)", buf_name(p, s->u.copy.via));
      if (s->u.copy.nhold) {
        sb_puts(sb, " hold(");
        for (int i = 0; i < s->u.copy.nhold; i++) sb_printf(sb, "%s%s", i ? ", " : "", buf_name(p, s->u.copy.hold[i]));
        sb_puts(sb, ")[");
        print_expr(p, sb, s->u.copy.hold_stage);
        sb_puts(sb, "]");
      }
    }
    else if (s->u.copy.tma && s->u.copy.prefetch_l2)
      sb_printf(sb, " map(%d) prefetch(L2)", s->u.copy.tma_map);
    else if (s->u.copy.tma)
      sb_printf(sb, " map(%d) mbarrier(%s)", s->u.copy.tma_map, buf_name(p, s->u.copy.dst.buf->tma_bar));
    break;
  case IR_STMT_ATOMIC_ADD:
    sb_puts(sb, "atomic_add ");
    print_region(p, sb, &s->u.copy.src);
    sb_puts(sb, " -> ");
    print_region(p, sb, &s->u.copy.dst);
    break;
  case IR_STMT_FILL:
    sb_puts(sb, "fill ");
    print_region(p, sb, &s->u.fill.dst);
    sb_puts(sb, " = ");
    print_expr(p, sb, s->u.fill.value);
    break;
  case IR_STMT_GEMM:
    sb_puts(sb, "gemm ");
    print_region(p, sb, &s->u.gemm.a);
    sb_puts(sb, ", ");
    print_region(p, sb, &s->u.gemm.b);
    sb_puts(sb, " -> ");
    print_region(p, sb, &s->u.gemm.c);
    if (s->u.gemm.trans_a) sb_puts(sb, " transpose_A");
    if (s->u.gemm.trans_b) sb_puts(sb, " transpose_B");
    sb_printf(sb, " policy(%s)", ir_gemm_policy_name(s->u.gemm.policy));
    if (s->u.gemm.wgmma)
      sb_puts(sb, s->u.gemm.wgmma_issue_only ? " wgmma(issue)" : s->u.gemm.wgmma_async ? " wgmma(in_flight)" : " wgmma");
    break;
  case IR_STMT_REDUCE:
    sb_printf(sb, "%s %s -> %s dim(%d) clear(%s)", ir_reduce_name(s->u.reduce.kind),
              buf_name(p, s->u.reduce.src), buf_name(p, s->u.reduce.dst), s->u.reduce.dim,
              s->u.reduce.clear ? "true" : "false");
    if (s->u.reduce.scratch) sb_printf(sb, " across_warps(%s)", buf_name(p, s->u.reduce.scratch));
    break;
  case IR_STMT_ANNOTATE_LAYOUT:
    sb_printf(sb, "annotate_layout %s %s", buf_name(p, s->u.annotate.buf),
              ir_layout_name(s->u.annotate.layout));
    break;
  case IR_STMT_USE_SWIZZLE:
    sb_puts(sb, "use_swizzle(");
    print_expr(p, sb, s->u.swizzle.panel_size);
    sb_printf(sb, ", order = %s)", s->u.swizzle.column_major ? "col" : "row");
    break;
  case IR_STMT_BARRIER:
    sb_puts(sb, "barrier");
    break;
  case IR_STMT_ASYNC_COMMIT:
    sb_puts(sb, "cp_async_commit");
    break;
  case IR_STMT_ASYNC_WAIT:
    sb_printf(sb, "cp_async_wait(%d)", s->u.async_pending);
    break;
  case IR_STMT_WGMMA_WAIT:
    sb_printf(sb, "wgmma_wait %s", buf_name(p, s->u.wgmma_wait.acc));
    if (s->u.wgmma_wait.pending) sb_printf(sb, " pending(%d)", s->u.wgmma_wait.pending);
    for (int i = 0; i < s->u.wgmma_wait.npinned; i++)
      sb_printf(sb, "%s%s", i ? ", " : " after(", buf_name(p, s->u.wgmma_wait.pinned[i]));
    if (s->u.wgmma_wait.npinned) sb_puts(sb, ")");
    break;
  case IR_STMT_STREAM_K_FIXUP:
    sb_printf(sb, "stream_k_fixup %s", buf_name(p, s->u.stream_k.acc));
    break;
  case IR_STMT_WG_TURN: {
    static const char *const what[] = {"start", "wait", "pass", "end", "stagger_wait", "stagger_go", "stagger_end"};
    sb_printf(sb, "warpgroup_turn %s", what[s->u.turn]);
    break;
  }
  case IR_STMT_MBAR_ARRIVE:
    sb_printf(sb, "mbar_arrive %s[", buf_name(p, s->u.mbar_wait.bar));
    print_expr(p, sb, s->u.mbar_wait.stage);
    sb_puts(sb, s->u.mbar_wait.after_stores ? "] after_stores" : "]");
    break;
  case IR_STMT_MBAR_WAIT:
    sb_printf(sb, "mbar_wait %s[", buf_name(p, s->u.mbar_wait.bar));
    print_expr(p, sb, s->u.mbar_wait.stage);
    sb_puts(sb, "] parity(");
    print_expr(p, sb, s->u.mbar_wait.parity);
    sb_puts(sb, ")");
    break;
  default:
    sb_printf(sb, "<bad stmt kind %d>", (int)s->kind);
    break;
  }
  print_loc(sb, s->loc);
}

/* ---- Kernels and modules ------------------------------------------------ */

static void print_symbol(Printer *p, StrBuf *sb, const IrVar *v) {
  sb_puts(sb, var_name(p, v));
  if (!v) return;
  if (v->bound) {
    sb_puts(sb, " = ");
    print_expr(p, sb, v->value);
  } else if (v->default_value) {
    sb_puts(sb, " ?= ");
    print_expr(p, sb, v->default_value);
  }
  if (v->dynamic_index >= 0) sb_printf(sb, " dyn(%d)", v->dynamic_index);
}

/* "#0: seq_len >= 8192 -> false, ...": each shape choice and the way this
 * build takes it. */
static void print_shape_choices(Printer *p, StrBuf *sb, const IrKernel *k) {
  for (int i = 0; i < k->nshape_choices; i++) {
    int bit = k->shape_choice_bit[i];
    sb_printf(sb, "%s#%d: ", i ? ", " : "", bit);
    print_expr(p, sb, k->shape_choice[i]);
    sb_puts(sb, (k->shape_class >> bit) & 1u ? " -> true" : " -> false");
  }
}

static void print_kernel(StrBuf *sb, const IrKernel *k) {
  Printer pr = {0};
  Printer *p = &pr;
  p->sb = sb;
  p->arena = arena_create();
  name_table_init(&p->keys, p->arena, NAME_KEY_POINTER);
  name_table_init(&p->buf_names, p->arena, NAME_KEY_STRING);
  name_table_init(&p->visible, p->arena, NAME_KEY_STRING);

  /* Kernel-level names first: symbols, params, block variables. */
  for (int i = 0; i < k->nsymbols; i++)
    if (k->symbols[i]) bind(p, k->symbols[i], k->symbols[i]->name, false);
  for (int i = 0; i < k->nparams; i++) {
    const IrParam *prm = &k->params[i];
    if (prm->is_tensor && prm->buffer) bind(p, prm->buffer, prm->buffer->name, true);
    if (!prm->is_tensor && prm->scalar) bind(p, prm->scalar, prm->scalar->name, false);
  }
  for (int i = 0; i < k->ngrid && i < IR_MAX_GRID; i++)
    if (k->block_vars[i]) bind(p, k->block_vars[i], k->block_vars[i]->name, false);

  sb_printf(sb, "kernel %s(", k->name ? k->name : "<null>");
  for (int i = 0; i < k->nparams; i++) {
    const IrParam *prm = &k->params[i];
    if (i) sb_puts(sb, ", ");
    if (prm->is_tensor && prm->buffer) {
      const IrBuffer *b = prm->buffer;
      sb_printf(sb, "%s: ", buf_name(p, b));
      print_shape(p, sb, b);
      if (b->strides) {
        sb_puts(sb, " strides(");
        for (int d = 0; d < b->rank && d < IR_MAX_RANK; d++) {
          if (d) sb_puts(sb, ", ");
          print_expr(p, sb, b->strides[d]);
        }
        sb_puts(sb, ")");
      }
      sb_printf(sb, " %s", ir_scope_name(b->scope));
      if (b->layout.kind != IR_LAYOUT_ROW_MAJOR) {
        sb_puts(sb, " ");
        print_layout(sb, &b->layout);
      }
    } else if (!prm->is_tensor && prm->scalar) {
      sb_printf(sb, "%s: %s", var_name(p, prm->scalar), dtype_name(prm->scalar->dtype));
    } else {
      sb_printf(sb, "%s: <null>", prm->name ? prm->name : "?");
    }
  }
  sb_puts(sb, ")");
  print_loc(sb, k->loc);

  if (k->nsymbols > 0) {
    sb_puts(sb, "  symbols(");
    for (int i = 0; i < k->nsymbols; i++) {
      if (i) sb_puts(sb, ", ");
      print_symbol(p, sb, k->symbols[i]);
    }
    sb_puts(sb, ")\n");
  }
  if (k->nshape_choices > 0) {
    sb_puts(sb, "  shape_choices(");
    print_shape_choices(p, sb, k);
    sb_puts(sb, ")\n");
  }

  sb_puts(sb, "  grid(");
  for (int i = 0; i < k->ngrid && i < IR_MAX_GRID; i++) {
    if (i) sb_puts(sb, ", ");
    print_expr(p, sb, k->grid[i]);
  }
  sb_puts(sb, ") threads(");
  print_expr(p, sb, k->threads);
  sb_puts(sb, ") as (");
  for (int i = 0; i < k->ngrid && i < IR_MAX_GRID; i++) {
    if (i) sb_puts(sb, ", ");
    sb_puts(sb, k->block_vars[i] ? var_name(p, k->block_vars[i]) : "_");
  }
  sb_puts(sb, ")\n");
  if (k->raster_panel != 0)
    sb_printf(sb, "  raster(panel = %d, order = %s)\n", k->raster_panel,
              k->raster_column_major ? "col" : "row");
  if (k->pdl_sync || k->pdl_trigger)
    sb_printf(sb, "  pdl(%s%s%s)\n", k->pdl_sync ? "sync: waits for the previous kernel at its start" : "",
              k->pdl_sync && k->pdl_trigger ? "; " : "", k->pdl_trigger ? "trigger: lets the next kernel start" : "");
  if (k->persistent) sb_puts(sb, "  persistent(one block per resident slot, tiles in a loop)\n");
  if (k->cluster > 1)
    sb_printf(sb, "  cluster(%d blocks: tiles paired along y, multicast rings loaded once per pair)\n", k->cluster);
  for (int i = 0; i < k->ntma_maps; i++) {
    const IrTensorMap *t = &k->tma_maps[i];
    const IrParam *prm = &k->params[t->param];
    sb_printf(sb, "  tensor_map(%d) %s box(", i, prm->name);
    for (int d = 0; d < prm->buffer->rank; d++) sb_printf(sb, "%s%d", d ? ", " : "", t->box[d]);
    sb_printf(sb, ") swizzle(%d)%s\n", t->swizzle_bytes, t->store ? " store" : "");
  }

  sb_puts(sb, "{\n");
  print_items(p, k->body, 1);
  sb_puts(sb, "}\n");
  arena_destroy(p->arena);
}

static char *module_text(const IrModule *m) {
  StrBuf sb;
  sb_init(&sb);
  for (int i = 0; m && i < m->nkernels; i++) {
    if (i) sb_puts(&sb, "\n");
    if (m->kernels[i])
      print_kernel(&sb, m->kernels[i]);
    else
      sb_puts(&sb, "kernel <null>\n");
  }
  return sb_take(&sb);
}

void ir_print_module(FILE *out, const IrModule *m) {
  char *text = module_text(m);
  fputs(text, out);
  free(text);
}

char *ir_module_to_string(const IrModule *m) { return module_text(m); }

void ir_print_expr(FILE *out, const IrExpr *e) {
  StrBuf sb;
  sb_init(&sb);
  print_expr(NULL, &sb, e);
  char *text = sb_take(&sb);
  fputs(text, out);
  free(text);
}

char *ir_expr_to_string(Arena *arena, const IrExpr *e) {
  StrBuf sb;
  sb_init(&sb);
  print_expr(NULL, &sb, e);
  char *text = arena_strdup(arena, sb.data ? sb.data : "");
  sb_free(&sb);
  return text;
}

void ir_print_kernel_config(StrBuf *sb, const char *comment, const IrKernel *k) {
  if (k->nshape_choices > 0) {
    sb_printf(sb, "%s %s: shape choices (the runtime runs the build whose choices hold at launch): ",
              comment, k->name);
    print_shape_choices(NULL, sb, k);
    sb_puts(sb, "\n");
  }
  if (!k->target_sm) return;
  sb_printf(sb, "%s %s: configuration for target_sm = ", comment, k->name);
  print_expr(NULL, sb, k->target_sm->bound ? k->target_sm->value : k->target_sm->default_value);
  bool first = true;
  for (int i = 0; i < k->nsymbols; i++) {
    const IrVar *v = k->symbols[i];
    if (v == k->target_sm || !v->is_const_decl || !v->bound) continue;
    sb_puts(sb, first ? ": " : ", ");
    first = false;
    sb_printf(sb, "%s = ", v->name);
    print_expr(NULL, sb, v->value);
  }
  sb_puts(sb, "\n");
}
