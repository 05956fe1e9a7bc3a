/* specialize.c - pass "specialize": binds compile-time values.
 *
 * Needs: the IR from sema (symbols with optional const defaults; a default
 * that tested a launch-time shape already has that condition replaced by
 * this build's shape class, so every default is a compile-time value once
 * the -D values are in: those are bound first, the defaults after, in
 * declaration order).
 * Guarantees: every symbol bound by a -D or a const default is marked bound,
 * holds its value, and no expression refers to it any more (the value is
 * substituted everywhere). Every other symbol is dynamic: it gets a slot in
 * the kernel's dynamic-symbol list (dynamic_index, in declaration order) and
 * is read from the tensor shapes at launch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../simplify.h"
#include "passes.h"

/* Parses a -D value: integer, true/false, or a float literal. */
static IrExpr *parse_define(IrModule *m, const IrVar *sym, const char *text, Diag *diag) {
  SrcLoc loc = {0};
  if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
    if (sym->dtype != DTYPE_BOOL) {
      diag_error(diag, loc, "-D %s=%s: '%s' is an integer, not a bool", sym->name, text, sym->name);
      return NULL;
    }
    return ir_bool(m, text[0] == 't', sym->loc);
  }
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 0);
  if (*text && *end == '\0' && errno == 0) {
    if (sym->dtype == DTYPE_BOOL) {
      if (v != 0 && v != 1) {
        diag_error(diag, loc, "-D %s=%s: expected true, false, 0 or 1", sym->name, text);
        return NULL;
      }
      return ir_bool(m, v != 0, sym->loc);
    }
    if (dtype_is_float(sym->dtype)) return ir_float(m, (double)v, sym->dtype, sym->loc);
    if (!sym->is_const_decl && v < 1) {
      diag_error(diag, loc, "-D %s=%s: a dimension must be positive", sym->name, text);
      return NULL;
    }
    return ir_int(m, v, sym->loc);
  }
  errno = 0;
  double f = strtod(text, &end);
  if (*text && *end == '\0' && errno == 0 && dtype_is_float(sym->dtype)) return ir_float(m, f, sym->dtype, sym->loc);
  diag_error(diag, loc, "-D %s=%s: expected %s", sym->name, text,
             sym->dtype == DTYPE_BOOL ? "true or false" : dtype_is_float(sym->dtype) ? "a number" : "an integer");
  return NULL;
}

/* Replaces every bound symbol in e by its value, in one walk; subtrees
 * without bound symbols are shared, not copied (linear time and memory in
 * the number of symbols). */
static IrExpr *subst_bound(IrModule *m, IrExpr *e) {
  if (!e) return e;
  switch (e->kind) {
  case IR_EXPR_VAR:
    return e->u.var->kind == IR_VAR_SYMBOL && e->u.var->bound ? ir_expr_clone(m, e->u.var->value) : e;
  case IR_EXPR_UNARY: {
    IrExpr *a = subst_bound(m, e->u.op.a);
    return a == e->u.op.a ? e : ir_unary(m, e->u.op.op, a, e->loc);
  }
  case IR_EXPR_BINARY: {
    IrExpr *a = subst_bound(m, e->u.op.a), *b = subst_bound(m, e->u.op.b);
    return a == e->u.op.a && b == e->u.op.b ? e : ir_binary(m, e->u.op.op, a, b, e->loc);
  }
  case IR_EXPR_SELECT: {
    IrExpr *c = subst_bound(m, e->u.select.cond), *t = subst_bound(m, e->u.select.then_),
           *f = subst_bound(m, e->u.select.else_);
    return c == e->u.select.cond && t == e->u.select.then_ && f == e->u.select.else_ ? e
                                                                                  : ir_select(m, c, t, f, e->loc);
  }
  case IR_EXPR_CALL: {
    IrExpr *args[IR_MAX_CALL_ARGS] = {NULL};
    bool same = true;
    for (int i = 0; i < e->u.call.nargs; i++) {
      args[i] = subst_bound(m, e->u.call.args[i]);
      same &= args[i] == e->u.call.args[i];
    }
    return same ? e : ir_call_n(m, e->u.call.fn, args, e->loc);
  }
  case IR_EXPR_LOAD: {
    IrExpr *idx[IR_MAX_RANK];
    bool changed = false;
    for (int i = 0; i < e->u.load.nidx; i++) {
      idx[i] = subst_bound(m, e->u.load.idx[i]);
      changed |= idx[i] != e->u.load.idx[i];
    }
    return changed ? ir_load(m, e->u.load.buf, idx, e->loc) : e;
  }
  case IR_EXPR_CAST: {
    IrExpr *a = subst_bound(m, e->u.cast_src);
    return a == e->u.cast_src ? e : ir_cast(m, e->dtype, a, e->loc);
  }
  default:
    return e;
  }
}

static IrExpr *substitute_bound(IrModule *m, IrExpr *e, void *ctx) { return subst_bound(m, e); }

bool pass_specialize(IrModule *m, const PassOptions *opts, Diag *diag) {
  bool ok = true;
  for (int ki = 0; ki < m->nkernels; ki++) {
    IrKernel *k = m->kernels[ki];
    int ndynamic = 0;
    /* -D values first: a default may test a shape symbol declared after it
     * (block_M = if_then_else(seq_len >= 8192, ...) with -D seq_len=...). */
    for (int i = 0; i < k->nsymbols; i++) {
      IrVar *sym = k->symbols[i];
      const TilecDefine *def = NULL;
      for (int d = 0; d < opts->ndefines; d++)
        if (strcmp(opts->defines[d].name, sym->name) == 0) def = &opts->defines[d];
      sym->bound = false;
      sym->value = def ? parse_define(m, sym, def->value, diag) : NULL;
      if (def && !sym->value) ok = false;
      sym->bound = sym->value != NULL;
    }
    for (int i = 0; i < k->nsymbols; i++) {
      IrVar *sym = k->symbols[i];
      /* Defaults may mention earlier symbols (block_N = block_M). */
      if (!sym->bound && sym->default_value) {
        sym->value = ir_simplify(m, subst_bound(m, sym->default_value));
        sym->bound = true;
      }
      sym->dynamic_index = sym->bound ? -1 : ndynamic++;
    }
    pass_rewrite_kernel(m, k, substitute_bound, NULL);
  }
  return ok;
}
