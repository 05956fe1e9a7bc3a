/* sema.h - checks the AST and builds the tile IR (names, types, arity, tile-op
 * operands). Shape agreement that needs constants (copy/gemm tiles) is checked
 * later by the check-shapes pass, after specialization and folding. */
#ifndef TILEC_SEMA_H
#define TILEC_SEMA_H

#include "ast.h"
#include "include/tilec.h"
#include "ir.h"

/* Builds the IR module of `ast`. `defines` are the -D bindings: sema uses the
 * ones that name dtype constants (`const (dtype = f16)`); specialize binds the
 * rest. `target` gives the builtin const target_sm (80, 90, or 0 for the
 * CPU). `shape_class` says which way each shape choice goes (bit i: the
 * module's i-th condition on a launch-time shape holds; TilecOptions).
 * Returns NULL after reporting errors. */
IrModule *sema_build(Arena *arena, Diag *diag, const AstModule *ast,
                     const TilecDefine *defines, int ndefines, TilecTarget target,
                     unsigned shape_class);

#endif
