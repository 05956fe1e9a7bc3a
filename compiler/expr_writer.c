/* expr_writer.c - the C-family expression walk shared by the IR printer and
 * both backends (expr_writer.h says what a dialect decides).
 *
 * One switch over the expression kinds: operators are spelled by IR_OPS
 * (ir_op_name), their parentheses follow IR_OPS' precedence column or
 * enclose every operator, select follows the dialect's four pieces, calls
 * get their function from the dialect's intrinsic hook, and the leaves,
 * loads and casts go to the dialect's hooks. */
#include <math.h>
#include <string.h>

#include "expr_writer.h"

IrPrec expr_prec(const IrExpr *e) {
  if (!e) return IR_PREC_PRIMARY;
  switch (e->kind) {
  case IR_EXPR_BINARY: return ir_op_prec(e->u.op.op);
  case IR_EXPR_UNARY: return IR_PREC_UNARY;
  case IR_EXPR_INT: /* a negative literal reads like a unary minus */
    return e->dtype != DTYPE_BOOL && e->u.int_value < 0 ? IR_PREC_UNARY : IR_PREC_PRIMARY;
  case IR_EXPR_FLOAT:
    return signbit(e->u.float_value) && !isnan(e->u.float_value) ? IR_PREC_UNARY : IR_PREC_PRIMARY;
  default: return IR_PREC_PRIMARY;
  }
}

const char *expr_spelling(const ExprSpellings *s, DType t) {
  return t == DTYPE_F64 ? s->f64 : dtype_is_float(t) ? s->f32 : s->int_;
}

static void write_operand(const ExprWriter *w, StrBuf *sb, const IrExpr *e, bool parens) {
  if (parens) sb_puts(sb, "(");
  expr_write(w, sb, e);
  if (parens) sb_puts(sb, ")");
}

void expr_write_call(const ExprWriter *w, StrBuf *sb, const char *fn, IrExpr *const *args, int nargs) {
  if (nargs > IR_MAX_CALL_ARGS) nargs = IR_MAX_CALL_ARGS; /* broken IR still prints */
  if (!strchr(fn, '$')) {
    sb_printf(sb, "%s(", fn);
    for (int i = 0; i < nargs; i++) {
      if (i) sb_puts(sb, ", ");
      expr_write(w, sb, args[i]);
    }
    sb_puts(sb, ")");
    return;
  }
  for (const char *p = fn; *p; p++) {
    int i = p[0] == '$' && p[1] >= '0' && p[1] <= '9' ? p[1] - '0' : -1;
    if (i < 0) {
      sb_putn(sb, p, 1);
    } else {
      if (i < nargs) expr_write(w, sb, args[i]);
      p++;
    }
  }
}

static void write_unary(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  const char *op = ir_op_name(e->u.op.op);
  if (w->dialect->minimal_parens) {
    sb_puts(sb, op);
    /* Any unary operand gets parentheses: -(-x) rather than --x. */
    write_operand(w, sb, e->u.op.a, expr_prec(e->u.op.a) <= IR_PREC_UNARY);
    return;
  }
  sb_printf(sb, "(%s", op);
  expr_write(w, sb, e->u.op.a);
  sb_puts(sb, ")");
}

static void write_binary(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  const ExprDialect *d = w->dialect;
  const char *fn = d->binary_call ? d->binary_call(w, e) : NULL;
  if (fn) {
    IrExpr *args[2] = {e->u.op.a, e->u.op.b};
    expr_write_call(w, sb, fn, args, 2);
    return;
  }
  const char *op = ir_op_name(e->u.op.op);
  if (d->minimal_parens) {
    IrPrec prec = ir_op_prec(e->u.op.op);
    /* Left-associative: equal precedence needs parentheses on the right only. */
    write_operand(w, sb, e->u.op.a, expr_prec(e->u.op.a) < prec);
    sb_printf(sb, " %s ", op);
    write_operand(w, sb, e->u.op.b, expr_prec(e->u.op.b) <= prec);
    return;
  }
  sb_puts(sb, "(");
  if (d->binary_prefix) sb_puts(sb, d->binary_prefix(w, e));
  expr_write(w, sb, e->u.op.a);
  sb_printf(sb, " %s ", op);
  expr_write(w, sb, e->u.op.b);
  sb_puts(sb, ")");
}

void expr_write(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  const ExprDialect *d = w->dialect;
  if (!d->check(w, sb, e)) return;
  switch (e->kind) {
  case IR_EXPR_INT: d->int_literal(w, sb, e); return;
  case IR_EXPR_FLOAT: d->float_literal(w, sb, e); return;
  case IR_EXPR_VAR: d->var(w, sb, e); return;
  case IR_EXPR_UNARY: write_unary(w, sb, e); return;
  case IR_EXPR_BINARY: write_binary(w, sb, e); return;
  case IR_EXPR_SELECT:
    sb_puts(sb, d->select[0]);
    expr_write(w, sb, e->u.select.cond);
    sb_puts(sb, d->select[1]);
    expr_write(w, sb, e->u.select.then_);
    sb_puts(sb, d->select[2]);
    expr_write(w, sb, e->u.select.else_);
    sb_puts(sb, d->select[3]);
    return;
  case IR_EXPR_CALL:
    expr_write_call(w, sb, d->intrinsic(w, e), e->u.call.args, e->u.call.nargs);
    return;
  case IR_EXPR_LOAD: d->load(w, sb, e); return;
  case IR_EXPR_CAST: d->cast(w, sb, e); return;
  default: return; /* the dialect's check reports bad kinds */
  }
}
