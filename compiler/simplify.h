/* simplify.h - expression simplification shared by the passes.
 *
 * ir_simplify folds constants (integer, float, bool), drops identities
 * (x + 0, x * 1, true && c), picks constant-condition selects, and puts
 * integer sums into a canonical linear form so that tile extents written as
 * `(bx + 1) * 64 - bx * 64` become the constant 64. */
#ifndef TILEC_SIMPLIFY_H
#define TILEC_SIMPLIFY_H

#include "ir.h"

IrExpr *ir_simplify(IrModule *m, IrExpr *e);

/* Integer evaluation with an environment for variables; false when e is not
 * an integer expression over the given vars (or divides by zero). */
typedef bool (*IrVarValueFn)(const IrVar *v, void *ctx, int64_t *out);
bool ir_eval_int(const IrExpr *e, IrVarValueFn value_of, void *ctx, int64_t *out);

/* Bounds of an integer expression when every var has a known [lo, hi] range;
 * false when some var is unbounded or the expression is not monotone-safe. */
typedef bool (*IrVarRangeFn)(const IrVar *v, void *ctx, int64_t *lo, int64_t *hi);
bool ir_int_range(const IrExpr *e, IrVarRangeFn range_of, void *ctx, int64_t *lo, int64_t *hi);

/* Whether an integer expression is never negative: its range (range_of)
 * says so, or it is built from block indices, loop variables, shape symbols
 * (dynamic sizes; bound ones by their value), non-negative constants and
 * the lets nonneg_var vouches for (may be NULL), with + * / % min max
 * ceildiv and casts (max needs one such operand). Scalar parameters and
 * values read from tensors are not known to be. */
typedef bool (*IrVarNonnegFn)(const IrVar *v, void *ctx);
bool ir_int_nonneg(const IrExpr *e, IrVarRangeFn range_of, IrVarNonnegFn nonneg_var, void *ctx);

/* Whether an integer expression is a multiple of n (> 0) whatever its
 * variables' values: constants, sums and differences of multiples, products
 * with a multiple, selects, min and max of multiples. A variable alone is
 * not known to be one. */
bool ir_int_multiple_of(const IrExpr *e, int64_t n);

/* The coefficient of var in e when e is linear in var with a constant one
 * (computed by differencing, e(var + 1) - e(var), which ir_simplify folds);
 * false otherwise. */
bool ir_linear_coefficient(IrModule *m, const IrExpr *e, const IrVar *var, int64_t *coef);

#endif
