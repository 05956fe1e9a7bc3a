/* expr_writer.h - one walker that writes IR expressions as C-family text.
 *
 * The IR printer (ir_print.c), the C backend (backend/emit_c.c) and the
 * CUDA backend (backend/cuda/expr.c) all spell expressions the same way at
 * heart: operators from IR_OPS, calls from IR_INTRINSICS, select, literals,
 * loads and casts. The walk lives here once; what a target spells its own
 * way is an ExprDialect: choices (parentheses, select) and hooks (leaves,
 * loads, casts, the function of a call, a binary operator written as a call).
 * An operator or intrinsic added to ir_ops.def then reaches all three. */
#ifndef TILEC_EXPR_WRITER_H
#define TILEC_EXPR_WRITER_H

#include <stdbool.h>

#include "ir.h"
#include "strbuf.h"

typedef struct ExprWriter ExprWriter;

typedef struct ExprDialect {
  /* true: the fewest parentheses C's precedence allows (ir_op_prec), as the
   * IR printer writes; false: every operator node in parentheses of its own,
   * as generated code is written (then `(a op b)`, `(-a)`). */
  bool minimal_parens;
  /* select c ? t : e: the text before c, between c and t, between t and e,
   * and after e (C: "(", " ? ", " : ", ")"). */
  const char *select[4];

  /* Called first on every node (e may be NULL, its kind out of range).
   * Returns false to write nothing further for it (after writing what it
   * likes, e.g. "<null>", or after reporting broken IR). */
  bool (*check)(const ExprWriter *w, StrBuf *sb, const IrExpr *e);
  /* The leaves and the nodes only the target knows how to spell. */
  void (*int_literal)(const ExprWriter *w, StrBuf *sb, const IrExpr *e);
  void (*float_literal)(const ExprWriter *w, StrBuf *sb, const IrExpr *e);
  void (*var)(const ExprWriter *w, StrBuf *sb, const IrExpr *e);
  void (*load)(const ExprWriter *w, StrBuf *sb, const IrExpr *e);
  void (*cast)(const ExprWriter *w, StrBuf *sb, const IrExpr *e);
  /* The function a call is written with: a name (written name(args)) or a
   * template where $0, $1, $2 stand for the arguments (ir_ops.def). */
  const char *(*intrinsic)(const ExprWriter *w, const IrExpr *e);
  /* Optional: a binary node the target writes as a call fn(a, b) (C: fmodf
   * for a float %; CUDA: tc_fdiv for an f32 /); NULL keeps the operator. */
  const char *(*binary_call)(const ExprWriter *w, const IrExpr *e);
  /* Optional: text right after the `(` of a fully parenthesized binary node
   * (C: "(int64_t)" where C would compute an i64 operation in int). */
  const char *(*binary_prefix)(const ExprWriter *w, const IrExpr *e);
} ExprDialect;

struct ExprWriter {
  const ExprDialect *dialect;
  void *ctx; /* the target's state (Printer, Emitter, Cuda), for its hooks */
};

/* A backend's spellings of one intrinsic (its IR_INTRINSICS columns), and
 * the one for a call of dtype t: f64, else f32 for any float (f16/bf16
 * compute in float), else the integer one. */
typedef struct ExprSpellings {
  const char *int_, *f32, *f64;
} ExprSpellings;
const char *expr_spelling(const ExprSpellings *s, DType t);

/* Appends e in w's dialect. */
void expr_write(const ExprWriter *w, StrBuf *sb, const IrExpr *e);
/* Appends fn(args...) or, when fn is a template, fn with $i replaced by
 * args[i]; each argument is written by expr_write. */
void expr_write_call(const ExprWriter *w, StrBuf *sb, const char *fn, IrExpr *const *args, int nargs);
/* The precedence an expression presents to its parent in the IR text: a
 * negative literal reads like a unary minus. */
IrPrec expr_prec(const IrExpr *e);

#endif
