/* specialize.c - pass "specialize": binds compile-time values.
 *
 * Needs: the IR from sema (symbols with optional const defaults).
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

static IrExpr *substitute_bound(IrModule *m, IrExpr *e, void *ctx) {
  IrKernel *k = ctx;
  for (int i = 0; i < k->nsymbols; i++)
    if (k->symbols[i]->bound) e = ir_expr_subst(m, e, k->symbols[i], k->symbols[i]->value);
  return e;
}

bool pass_specialize(IrModule *m, const PassOptions *opts, Diag *diag) {
  bool ok = true;
  for (int ki = 0; ki < m->nkernels; ki++) {
    IrKernel *k = m->kernels[ki];
    int ndynamic = 0;
    for (int i = 0; i < k->nsymbols; i++) {
      IrVar *sym = k->symbols[i];
      const TilecDefine *def = NULL;
      for (int d = 0; d < opts->ndefines; d++)
        if (strcmp(opts->defines[d].name, sym->name) == 0) def = &opts->defines[d];
      IrExpr *value = NULL;
      if (def) {
        value = parse_define(m, sym, def->value, diag);
        if (!value) {
          ok = false;
          continue;
        }
      } else if (sym->default_value) {
        /* Defaults may mention earlier symbols (block_N = block_M). */
        value = ir_simplify(m, substitute_bound(m, sym->default_value, k));
      }
      if (value) {
        sym->bound = true;
        sym->value = value;
        sym->dynamic_index = -1;
      } else {
        sym->bound = false;
        sym->dynamic_index = ndynamic++;
      }
    }
    pass_rewrite_kernel(m, k, substitute_bound, k);
  }
  return ok;
}
