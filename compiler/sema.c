/* sema.c - semantic analysis: AST -> tile IR.
 *
 * One walk over each kernel resolves every name against a scope stack
 * (consts, shape symbols, parameters, block indices, buffers, loop variables,
 * lets), types every expression (integers are i64, float literals f32,
 * arithmetic on f16/bf16 happens in f32), checks builtin arity and the operand
 * kinds of tile ops, and builds the IR. Implicit conversions become explicit
 * IR casts here, so later passes and the backends see operands of one dtype.
 *
 * Errors are reported and the walk continues (an erroneous expression yields
 * a placeholder), so one run reports as many problems as possible. */
#include "sema.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "name_table.h"
#include "simplify.h"

typedef enum EntityKind {
  ENTITY_VAR,    /* symbol, scalar param, block index, loop var, let */
  ENTITY_BUFFER, /* tensor parameter or allocated buffer */
  ENTITY_DTYPE,  /* a const naming a dtype: const (dtype = f16) */
} EntityKind;

typedef struct Entity {
  const char *name;
  EntityKind kind;
  IrVar *var;
  IrBuffer *buf;
  DType dtype;
  SrcLoc loc;
} Entity;

typedef struct Sema {
  Arena *arena;
  Diag *diag;
  IrModule *m;
  IrKernel *k;
  const TilecDefine *defines;
  int ndefines;
  int target_sm; /* the value of the builtin const target_sm (80, 90; 0 on the CPU) */
  bool in_const_default; /* sema of a const's default: sm_count may appear (a shape choice) */
  Entity *scope;
  int nscope, capscope;
  /* Hash index over scope, entry i naming scope[i], so a name lookup does
   * not scan every name in scope. */
  NameTable names;
  int capsymbols; /* of k->symbols, grown by doubling */
  int depth; /* expression nesting, bounded so later recursive walks are too */
  unsigned shape_class; /* TilecOptions.shape_class: which way each shape choice goes */
  /* Shape symbols declared before the consts (so const defaults can test
   * them) but listed in k->symbols only where a parameter first names them,
   * which keeps the dynamic symbols' order. */
  IrVar *unlisted[64];
  int nunlisted;
  int parallel; /* parallel loops around the statement being built */
  IrStmt *top;   /* the kernel body's SEQ, while it is being built */
} Sema;

/* Deeper expressions are rejected: the parser's stack limit does not catch a
 * left-leaning chain like 1+1+1+..., and every pass walks expressions
 * recursively. */
enum { SEMA_MAX_EXPR_DEPTH = 256 };

/* ---- scopes ------------------------------------------------------------- */

static Entity *lookup(Sema *s, const char *name) {
  int i = name_table_find(&s->names, name);
  return i >= 0 ? &s->scope[i] : NULL;
}

/* Leaves a block: forgets every name declared since `mark`. */
static void scope_pop(Sema *s, int mark) {
  if (s->nscope > mark) s->nscope = mark;
  name_table_truncate(&s->names, s->nscope);
}

/* Names a user may not take: they would collide with generated code. */
static bool is_reserved(const char *name) {
  static const char *const words[] = {
      "auto", "break", "case", "char", "continue", "default", "do", "double",
      "enum", "extern", "float", "goto", "int", "long", "register", "return",
      "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
      "union", "unsigned", "void", "volatile", "while", "inline", "restrict",
      "bool", "half", "main", "args", "dyn", "threadIdx", "blockIdx",
      "blockDim", "gridDim", "INFINITY", "NAN"};
  if (strncmp(name, "tc_", 3) == 0 || strncmp(name, "__", 2) == 0) return true;
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (strcmp(words[i], name) == 0) return true;
  return false;
}

static bool is_builtin_name(const char *name) {
  DType t;
  return dtype_from_name(name, &t) || strcmp(name, "inf") == 0 || strcmp(name, "target_sm") == 0 ||
         strcmp(name, "sm_count") == 0;
}

/* Declares a name in the innermost scope; a redefinition anywhere in the
 * visible scopes is an error (shadowing hides bugs in tile programs). */
static Entity *declare(Sema *s, const char *name, EntityKind kind, SrcLoc loc) {
  Entity *old = lookup(s, name);
  if (old) {
    diag_error(s->diag, loc, "redefinition of '%s'", name);
    if (old->loc.line) diag_note(s->diag, old->loc, "'%s' was defined here", name);
  } else if (is_reserved(name)) {
    diag_error(s->diag, loc, "'%s' is a reserved name", name);
  } else if (is_builtin_name(name)) {
    diag_error(s->diag, loc, "'%s' is a builtin name and cannot be redefined", name);
  }
  s->scope = arena_grow(s->arena, s->scope, &s->capscope, s->nscope + 1, sizeof(Entity));
  Entity *e = &s->scope[s->nscope++];
  memset(e, 0, sizeof *e);
  e->name = name;
  name_table_push(&s->names, name);
  e->kind = kind;
  e->loc = loc;
  return e;
}

static const TilecDefine *find_define(Sema *s, const char *name) {
  for (int i = 0; i < s->ndefines; i++)
    if (strcmp(s->defines[i].name, name) == 0) return &s->defines[i];
  return NULL;
}

static void add_symbol(Sema *s, IrVar *v);

/* The builtin const `target_sm`: the SM version the kernel is compiled for
 * (80 for sm_80, 90 for sm_90a, 0 for the CPU backend), so const defaults
 * can follow the target: block_N = if_then_else(target_sm >= 90, 256, 128).
 * It becomes a const symbol of the kernel (bound by specialize like any
 * other, printed in the IR dumps) the first time the kernel names it; a
 * kernel that never names it is unchanged. */
static IrVar *target_sm_symbol(Sema *s, SrcLoc loc) {
  if (!s->k->target_sm) {
    IrVar *var = ir_var_new(s->m, "target_sm", IR_VAR_SYMBOL, DTYPE_I64, loc);
    var->default_value = ir_int(s->m, s->target_sm, loc);
    var->is_const_decl = true;
    var->dynamic_index = -1;
    s->k->target_sm = var;
    add_symbol(s, var);
  }
  return s->k->target_sm;
}

/* The builtin `sm_count`: the SM count of the GPU a launch runs on, known
 * only then. A const default may test it in a condition, as it tests a
 * launch-time shape (a shape choice: the runtime evaluates the condition at
 * each launch, tilec_result_shape_class_of), so a tile can follow how many
 * tiles fill the GPU's waves. It is no kernel parameter (not in symbols)
 * and means nothing in the body. */
static IrVar *sm_count_symbol(Sema *s, SrcLoc loc) {
  if (!s->k->sm_count) {
    IrVar *var = ir_var_new(s->m, "sm_count", IR_VAR_SYMBOL, DTYPE_I64, loc);
    var->dynamic_index = -1;
    s->k->sm_count = var;
  }
  return s->k->sm_count;
}

/* ---- expressions -------------------------------------------------------- */

static IrExpr *expr(Sema *s, const AstExpr *e);

static IrExpr *poison(Sema *s, SrcLoc loc) { return ir_int(s->m, 0, loc); }

static DType arith_type(DType a, DType b) {
  bool fa = dtype_is_float(a), fb = dtype_is_float(b);
  if (!fa && !fb) return DTYPE_I64;
  if (a == DTYPE_F64 || b == DTYPE_F64) return DTYPE_F64;
  return DTYPE_F32;
}

static IrExpr *convert(Sema *s, IrExpr *e, DType t) {
  if (e->dtype == t) return e;
  return ir_cast(s->m, t, e, e->loc);
}

static IrExpr *as_bool(Sema *s, IrExpr *e) {
  if (e->dtype == DTYPE_BOOL) return e;
  if (dtype_is_float(e->dtype)) {
    diag_error(s->diag, e->loc, "condition must be an integer or bool, not %s", dtype_name(e->dtype));
    return ir_bool(s->m, false, e->loc);
  }
  return ir_binary(s->m, IR_OP_NE, e, ir_int(s->m, 0, e->loc), e->loc);
}

static IrOp ast_to_ir_op(AstOp op) {
  switch (op) {
#define X(name, spelling) \
  case AST_OP_##name:     \
    return IR_OP_##name;
    AST_OPS(X)
#undef X
  default:
    break;
  }
  TILEC_UNREACHABLE("bad AST operator");
}

static IrExpr *binary(Sema *s, IrOp op, IrExpr *a, IrExpr *b, SrcLoc loc) {
  switch (op) {
  case IR_OP_AND:
  case IR_OP_OR:
    return ir_binary(s->m, op, as_bool(s, a), as_bool(s, b), loc);
  case IR_OP_BAND:
  case IR_OP_BOR:
  case IR_OP_XOR:
  case IR_OP_SHL:
  case IR_OP_SHR:
  case IR_OP_MOD:
    /* Integer-only operators; bools count as the integers 0 and 1. */
    if (dtype_is_float(a->dtype) || dtype_is_float(b->dtype)) {
      diag_error(s->diag, loc, "'%s' needs integer operands, not %s", ir_op_name(op),
                 dtype_name(dtype_is_float(a->dtype) ? a->dtype : b->dtype));
      return poison(s, loc);
    }
    /* fallthrough */
  default: {
    DType t = arith_type(a->dtype, b->dtype);
    return ir_binary(s->m, op, convert(s, a, t), convert(s, b, t), loc);
  }
  }
}

static IrExpr *call_expr(Sema *s, const AstExpr *e) {
  const char *fn = e->u.call.callee;
  int nargs = e->u.call.nargs;
  for (const AstArg *a = e->u.call.args; a; a = a->next)
    if (a->keyword) {
      diag_error(s->diag, a->loc, "'%s' takes no keyword arguments", fn);
      return poison(s, e->loc);
    }
  DType cast_to;
  if (dtype_from_name(fn, &cast_to) || (lookup(s, fn) && lookup(s, fn)->kind == ENTITY_DTYPE)) {
    if (lookup(s, fn)) cast_to = lookup(s, fn)->dtype;
    if (nargs != 1) {
      diag_error(s->diag, e->loc, "'%s' takes 1 argument, got %d", fn, nargs);
      return poison(s, e->loc);
    }
    return ir_cast(s->m, cast_to, expr(s, e->u.call.args->value), e->loc);
  }
  if (strcmp(fn, "if_then_else") == 0) {
    if (nargs != 3) {
      diag_error(s->diag, e->loc, "'if_then_else' takes 3 arguments, got %d", nargs);
      return poison(s, e->loc);
    }
    const AstArg *a = e->u.call.args;
    IrExpr *c = as_bool(s, expr(s, a->value));
    IrExpr *x = expr(s, a->next->value), *y = expr(s, a->next->next->value);
    DType t = arith_type(x->dtype, y->dtype);
    if (x->dtype == DTYPE_BOOL && y->dtype == DTYPE_BOOL) t = DTYPE_BOOL;
    return ir_select(s->m, c, convert(s, x, t), convert(s, y, t), e->loc);
  }
  for (int f = 0; f < IR_INTRINSIC_COUNT; f++) {
    if (strcmp(fn, ir_intrinsic_name((IrIntrinsic)f)) != 0) continue;
    int arity = ir_intrinsic_arity((IrIntrinsic)f);
    if (nargs != arity) {
      diag_error(s->diag, e->loc, "'%s' takes %d argument%s, got %d", fn, arity,
                 arity == 1 ? "" : "s", nargs);
      return poison(s, e->loc);
    }
    IrExpr *args[IR_MAX_CALL_ARGS] = {NULL};
    const AstArg *a = e->u.call.args;
    bool any_float = false, any_f64 = false;
    for (int i = 0; i < arity; i++, a = a->next) {
      args[i] = expr(s, a->value);
      any_float |= dtype_is_float(args[i]->dtype);
      any_f64 |= args[i]->dtype == DTYPE_F64;
    }
    /* The arguments' dtype, by the intrinsic's result column (ir_ops.def). */
    DType t;
    switch (ir_intrinsic_result((IrIntrinsic)f)) {
    case IR_RESULT_INDEX:
      if (any_float) {
        diag_error(s->diag, e->loc, "'%s' needs integer arguments", fn);
        return poison(s, e->loc);
      }
      t = DTYPE_I64;
      break;
    case IR_RESULT_COMMON:
      t = args[0]->dtype;
      for (int i = 1; i < arity; i++) t = arith_type(t, args[i]->dtype);
      break;
    case IR_RESULT_SAME: /* integers stay integers (as i64), floats as MATH */
      t = !any_float ? DTYPE_I64 : any_f64 ? DTYPE_F64 : DTYPE_F32;
      break;
    default: /* MATH: computes in f32, or f64 when given f64 */
      t = any_f64 ? DTYPE_F64 : DTYPE_F32;
      break;
    }
    for (int i = 0; i < arity; i++) args[i] = convert(s, args[i], t);
    return ir_call_n(s->m, (IrIntrinsic)f, args, e->loc);
  }
  static const char *const tile_ops[] = {"copy", "atomic_add", "fill", "clear", "gemm", "reduce_max",
                                         "reduce_sum", "reduce_min", "annotate_layout",
                                         "use_swizzle", "alloc_shared", "alloc_fragment",
                                         "alloc_local", "parallel", "pipelined", "serial", "pdl_sync",
                                         "pdl_trigger"};
  if (strcmp(fn, "atomic_add") == 0) {
    diag_error(s->diag, e->loc,
               "'atomic_add' is not a value and cannot be used in an expression (the old value of one "
               "element comes only as a whole assignment to a new scalar: `old = atomic_add(G[i], v);`)");
    return poison(s, e->loc);
  }
  for (size_t t = 0; t < sizeof tile_ops / sizeof *tile_ops; t++)
    if (strcmp(fn, tile_ops[t]) == 0) {
      diag_error(s->diag, e->loc, "'%s' is not a value and cannot be used in an expression", fn);
      return poison(s, e->loc);
    }
  diag_error(s->diag, e->loc, "unknown function '%s'", fn);
  return poison(s, e->loc);
}

static IrBuffer *buffer_of(Sema *s, const AstExpr *e) {
  if (e->kind != AST_EXPR_NAME) {
    diag_error(s->diag, e->loc, "expected a buffer name");
    return NULL;
  }
  Entity *ent = lookup(s, e->u.name);
  if (!ent) {
    diag_error(s->diag, e->loc, "unknown name '%s'", e->u.name);
    return NULL;
  }
  if (ent->kind != ENTITY_BUFFER) {
    diag_error(s->diag, e->loc, "'%s' is not a buffer", e->u.name);
    return NULL;
  }
  return ent->buf;
}

static IrExpr *index_expr(Sema *s, const AstExpr *e) {
  IrBuffer *buf = buffer_of(s, e->u.call.base);
  if (!buf) return poison(s, e->loc);
  if (e->u.call.nargs != buf->rank) {
    diag_error(s->diag, e->loc, "'%s' has rank %d but is indexed with %d indices", buf->name,
               buf->rank, e->u.call.nargs);
    return poison(s, e->loc);
  }
  IrExpr *idx[IR_MAX_RANK];
  int d = 0;
  for (const AstArg *a = e->u.call.args; a; a = a->next, d++) {
    if (a->value->kind == AST_EXPR_SLICE) {
      diag_error(s->diag, a->loc, "a slice is only allowed in a tile operation's operand");
      return poison(s, e->loc);
    }
    IrExpr *x = expr(s, a->value);
    if (dtype_is_float(x->dtype)) diag_error(s->diag, a->loc, "index must be an integer");
    idx[d] = convert(s, x, DTYPE_I64);
  }
  return ir_load(s->m, buf, idx, e->loc);
}

static IrExpr *expr_checked(Sema *s, const AstExpr *e);

static IrExpr *expr(Sema *s, const AstExpr *e) {
  if (s->depth >= SEMA_MAX_EXPR_DEPTH) {
    diag_error(s->diag, e->loc, "expression nested too deeply (more than %d levels)", SEMA_MAX_EXPR_DEPTH);
    return poison(s, e->loc);
  }
  s->depth++;
  IrExpr *r = expr_checked(s, e);
  s->depth--;
  return r;
}

static IrExpr *expr_checked(Sema *s, const AstExpr *e) {
  switch (e->kind) {
  case AST_EXPR_INT:
    return ir_int(s->m, e->u.int_value, e->loc);
  case AST_EXPR_FLOAT:
    return ir_float(s->m, e->u.float_value, DTYPE_F32, e->loc);
  case AST_EXPR_BOOL:
    return ir_bool(s->m, e->u.bool_value, e->loc);
  case AST_EXPR_NAME: {
    Entity *ent = lookup(s, e->u.name);
    if (ent && ent->kind == ENTITY_VAR) return ir_var_ref(s->m, ent->var, e->loc);
    if (ent && ent->kind == ENTITY_BUFFER) {
      diag_error(s->diag, e->loc, "buffer '%s' used as a value (index it: %s[...])", e->u.name, e->u.name);
      return poison(s, e->loc);
    }
    if (strcmp(e->u.name, "inf") == 0) return ir_float(s->m, INFINITY, DTYPE_F32, e->loc);
    if (strcmp(e->u.name, "target_sm") == 0) return ir_var_ref(s->m, target_sm_symbol(s, e->loc), e->loc);
    if (strcmp(e->u.name, "sm_count") == 0) {
      if (!s->in_const_default) {
        diag_error(s->diag, e->loc,
                   "sm_count (the GPU's SM count) is known only at launch: a const default may test it "
                   "in a condition (if_then_else(tiles %% sm_count == 0, ...)), the kernel body may not");
        return poison(s, e->loc);
      }
      return ir_var_ref(s->m, sm_count_symbol(s, e->loc), e->loc);
    }
    DType t;
    if ((ent && ent->kind == ENTITY_DTYPE) || dtype_from_name(e->u.name, &t)) {
      diag_error(s->diag, e->loc, "dtype '%s' used as a value", e->u.name);
      return poison(s, e->loc);
    }
    diag_error(s->diag, e->loc, "unknown name '%s'", e->u.name);
    return poison(s, e->loc);
  }
  case AST_EXPR_UNARY: {
    IrExpr *a = expr(s, e->u.op.lhs);
    if (e->u.op.op == AST_OP_NOT) return ir_unary(s->m, IR_OP_NOT, as_bool(s, a), e->loc);
    if (e->u.op.op == AST_OP_BNOT && dtype_is_float(a->dtype)) {
      diag_error(s->diag, e->loc, "'~' needs an integer operand, not %s", dtype_name(a->dtype));
      return poison(s, e->loc);
    }
    if (a->dtype == DTYPE_BOOL) a = convert(s, a, DTYPE_I64);
    if (dtype_is_low_float(a->dtype)) a = convert(s, a, DTYPE_F32);
    if (dtype_is_int(a->dtype)) a = convert(s, a, DTYPE_I64);
    return ir_unary(s->m, ast_to_ir_op(e->u.op.op), a, e->loc);
  }
  case AST_EXPR_BINARY:
    return binary(s, ast_to_ir_op(e->u.op.op), expr(s, e->u.op.lhs), expr(s, e->u.op.rhs), e->loc);
  case AST_EXPR_TERNARY: {
    IrExpr *c = as_bool(s, expr(s, e->u.op.cond));
    IrExpr *x = expr(s, e->u.op.lhs), *y = expr(s, e->u.op.rhs);
    DType t = (x->dtype == DTYPE_BOOL && y->dtype == DTYPE_BOOL) ? DTYPE_BOOL : arith_type(x->dtype, y->dtype);
    return ir_select(s->m, c, convert(s, x, t), convert(s, y, t), e->loc);
  }
  case AST_EXPR_CALL:
    return call_expr(s, e);
  case AST_EXPR_INDEX:
    return index_expr(s, e);
  case AST_EXPR_SLICE:
    diag_error(s->diag, e->loc, "a slice is only allowed as an index of a tile operand");
    return poison(s, e->loc);
  case AST_EXPR_LIST:
    diag_error(s->diag, e->loc, "a list is only allowed as a shape");
    return poison(s, e->loc);
  }
  TILEC_UNREACHABLE("bad AST expression");
}

static IrExpr *int_expr(Sema *s, const AstExpr *e, const char *what) {
  IrExpr *x = expr(s, e);
  if (dtype_is_float(x->dtype)) {
    diag_error(s->diag, e->loc, "%s must be an integer, not %s", what, dtype_name(x->dtype));
    return poison(s, e->loc);
  }
  return convert(s, x, DTYPE_I64);
}

/* ---- types and regions --------------------------------------------------- */

static bool resolve_dtype(Sema *s, const char *name, SrcLoc loc, DType *out) {
  Entity *ent = lookup(s, name);
  if (ent && ent->kind == ENTITY_DTYPE) {
    *out = ent->dtype;
    return true;
  }
  if (dtype_from_name(name, out)) return true;
  diag_error(s->diag, loc, "unknown dtype '%s'", name);
  return false;
}

/* A tile operand: `buf` (whole buffer) or `buf[i, a:b, :]`. */
static bool region(Sema *s, const AstExpr *e, IrRegion *out) {
  memset(out, 0, sizeof *out);
  if (e->kind == AST_EXPR_NAME) {
    IrBuffer *buf = buffer_of(s, e);
    if (!buf) return false;
    *out = ir_region_whole(s->m, buf, e->loc);
    return true;
  }
  if (e->kind != AST_EXPR_INDEX) {
    diag_error(s->diag, e->loc, "expected a buffer or a buffer slice");
    return false;
  }
  IrBuffer *buf = buffer_of(s, e->u.call.base);
  if (!buf) return false;
  if (e->u.call.nargs != buf->rank) {
    diag_error(s->diag, e->loc, "'%s' has rank %d but is indexed with %d indices", buf->name,
               buf->rank, e->u.call.nargs);
    return false;
  }
  out->buf = buf;
  out->rank = buf->rank;
  out->loc = e->loc;
  int d = 0;
  for (const AstArg *a = e->u.call.args; a; a = a->next, d++) {
    const AstExpr *ix = a->value;
    if (ix->kind == AST_EXPR_SLICE) {
      IrExpr *lo = ix->u.slice.lo ? int_expr(s, ix->u.slice.lo, "slice bound") : ir_int(s->m, 0, ix->loc);
      IrExpr *hi = ix->u.slice.hi ? int_expr(s, ix->u.slice.hi, "slice bound")
                                  : ir_expr_clone(s->m, buf->shape[d]);
      out->start[d] = lo;
      /* Folded later: (bx+1)*64 - bx*64 becomes 64. */
      out->extent[d] = ir_binary(s->m, IR_OP_SUB, hi, ir_expr_clone(s->m, lo), ix->loc);
    } else {
      out->start[d] = int_expr(s, ix, "index");
      out->extent[d] = ir_int(s->m, 1, ix->loc);
      out->is_index[d] = true;
    }
  }
  return true;
}

/* ---- tile operations ----------------------------------------------------- */

typedef struct CallArgs {
  const AstArg *pos[8];
  int npos;
  const AstArg *kw[8];
  int nkw;
} CallArgs;

/* Splits arguments into positional and keyword ones; checks each keyword is
 * one the op accepts and no positional follows a keyword. */
static bool split_args(Sema *s, const AstExpr *call, const char *const *keywords, int max_pos,
                       CallArgs *out) {
  memset(out, 0, sizeof *out);
  bool ok = true;
  for (const AstArg *a = call->u.call.args; a; a = a->next) {
    if (!a->keyword) {
      if (out->nkw) {
        diag_error(s->diag, a->loc, "positional argument after a keyword argument");
        ok = false;
      } else if (out->npos < 8) {
        out->pos[out->npos++] = a;
      }
      continue;
    }
    bool known = false;
    for (const char *const *k = keywords; k && *k; k++) known |= strcmp(*k, a->keyword) == 0;
    if (!known) {
      diag_error(s->diag, a->loc, "'%s' has no argument named '%s'", call->u.call.callee, a->keyword);
      ok = false;
    } else if (out->nkw < 8) {
      out->kw[out->nkw++] = a;
    }
  }
  if (out->npos > max_pos) {
    diag_error(s->diag, call->loc, "'%s' takes at most %d positional arguments, got %d",
               call->u.call.callee, max_pos, out->npos);
    ok = false;
  }
  return ok;
}

static const AstArg *keyword(const CallArgs *a, const char *name) {
  for (int i = 0; i < a->nkw; i++)
    if (strcmp(a->kw[i]->keyword, name) == 0) return a->kw[i];
  return NULL;
}

/* The value of an option given by position `pos` or by keyword `name`. */
static const AstExpr *option(const CallArgs *a, int pos, const char *name) {
  const AstArg *k = keyword(a, name);
  if (k) return k->value;
  return pos >= 0 && pos < a->npos ? a->pos[pos]->value : NULL;
}

/* The value a const will have after specialize, known already in sema:
 * its -D binding, else its default evaluated over the consts before it
 * (target_sm is known from the target). For num_stages, which sema needs. */
typedef struct ConstEval {
  Sema *s;
  int depth;
} ConstEval;

static bool const_var_value(const IrVar *v, void *ctx, int64_t *out) {
  ConstEval *ce = ctx;
  if (v->kind != IR_VAR_SYMBOL || ce->depth > 64) return false;
  const TilecDefine *d = find_define(ce->s, v->name);
  if (d) {
    if (strcmp(d->value, "true") == 0 || strcmp(d->value, "false") == 0) return *out = d->value[0] == 't', true;
    char *end;
    errno = 0;
    long long x = strtoll(d->value, &end, 0);
    return *d->value && *end == '\0' && errno == 0 ? (*out = x, true) : false;
  }
  if (!v->default_value) return false;
  ce->depth++;
  bool ok = ir_eval_int(v->default_value, const_var_value, ce, out);
  ce->depth--;
  return ok;
}

static bool sema_const_value(Sema *s, const IrExpr *e, int64_t *out) {
  ConstEval ce = {s, 0};
  return ir_eval_int(e, const_var_value, &ce, out);
}

static bool const_bool(Sema *s, const AstExpr *e, bool *out) {
  if (e->kind == AST_EXPR_BOOL) return *out = e->u.bool_value, true;
  if (e->kind == AST_EXPR_INT) return *out = e->u.int_value != 0, true;
  diag_error(s->diag, e->loc, "expected true or false");
  return false;
}

static bool const_int(Sema *s, const AstExpr *e, int64_t *out) {
  if (e->kind == AST_EXPR_INT) return *out = e->u.int_value, true;
  diag_error(s->diag, e->loc, "expected an integer literal");
  return false;
}

static bool require_args(Sema *s, const AstExpr *call, const CallArgs *a, int n) {
  if (a->npos >= n) return true;
  diag_error(s->diag, call->loc, "'%s' takes %d argument%s, got %d", call->u.call.callee, n,
             n == 1 ? "" : "s", a->npos);
  return false;
}

/* An element access: `A[i, j]` with no slice among its indices. */
static bool is_element(const AstExpr *e) {
  if (e->kind != AST_EXPR_INDEX) return false;
  for (const AstArg *a = e->u.call.args; a; a = a->next)
    if (a->value->kind == AST_EXPR_SLICE) return false;
  return true;
}

/* atomic_add(G[i, j], value): a STORE marked atomic, G[i, j] += value, with
 * G a global f32 tensor and value a number (converted to f32). */
static IrStmt *atomic_add_element(Sema *s, const AstExpr *target, const AstExpr *value, SrcLoc loc) {
  IrExpr *lhs = index_expr(s, target);
  if (lhs->kind != IR_EXPR_LOAD) return NULL; /* error already reported */
  IrBuffer *buf = lhs->u.load.buf;
  if (buf->scope != IR_SCOPE_GLOBAL || buf->dtype != DTYPE_F32) {
    diag_error(s->diag, target->loc,
               "atomic_add: the target '%s' must be an element of a global f32 tensor (it is %s %s)", buf->name,
               ir_scope_name(buf->scope), dtype_name(buf->dtype));
    return NULL;
  }
  IrExpr *v = expr(s, value);
  if (v->dtype == DTYPE_BOOL) {
    diag_error(s->diag, value->loc, "atomic_add: the value added must be a number, not bool");
    return NULL;
  }
  IrStmt *st = ir_store_new(s->m, buf, lhs->u.load.idx, convert(s, v, DTYPE_F32), loc);
  st->u.store.atomic = true;
  return st;
}

/* NAME = atomic_add(G[i, j], value);  the returning form: NAME is G[i, j]'s
 * value before the addition (Triton's tl.atomic_add with sem="acq_rel").
 * Once per block: never in a parallel loop (the GPU runs it on thread 0 and
 * hands the value to every thread through a shared slot, allocated here).
 * G a global i32 or f32 tensor; value converted to its dtype. */
static void atomic_fetch_stmt(Sema *s, const AstStmt *st, IrStmt *seq) {
  const AstExpr *target = st->u.assign.target, *call = st->u.assign.value;
  CallArgs a;
  if (!split_args(s, call, NULL, 2, &a) || !require_args(s, call, &a, 2)) return;
  const AstExpr *elem = a.pos[0]->value, *value = a.pos[1]->value;
  if (s->parallel > 0) {
    diag_error(s->diag, call->loc,
               "atomic_add: the form that returns the old value runs once per block and cannot be inside a "
               "parallel loop (add there with the statement form `atomic_add(G[i], v);`)");
    return;
  }
  if (!is_element(elem)) {
    diag_error(s->diag, elem->loc,
               "atomic_add: the form that returns the old value takes one element of a global tensor "
               "(`old = atomic_add(Counters[i], 1);`), not a slice or a whole buffer");
    return;
  }
  IrExpr *lhs = index_expr(s, elem);
  if (lhs->kind != IR_EXPR_LOAD) return; /* error already reported */
  IrBuffer *buf = lhs->u.load.buf;
  if (buf->scope != IR_SCOPE_GLOBAL || (buf->dtype != DTYPE_I32 && buf->dtype != DTYPE_F32)) {
    diag_error(s->diag, elem->loc,
               "atomic_add: the target '%s' must be an element of a global i32 or f32 tensor (it is %s %s)",
               buf->name, ir_scope_name(buf->scope), dtype_name(buf->dtype));
    return;
  }
  IrExpr *v = expr(s, value);
  if (v->dtype == DTYPE_BOOL || (buf->dtype == DTYPE_I32 && dtype_is_float(v->dtype))) {
    diag_error(s->diag, value->loc, "atomic_add: the value added to %s '%s' must be %s, not %s",
               dtype_name(buf->dtype), buf->name, buf->dtype == DTYPE_I32 ? "an integer" : "a number",
               dtype_name(v->dtype));
    return;
  }
  /* The shared slot that carries the old value from thread 0 to the block. */
  char name[160];
  snprintf(name, sizeof name, "tc_fetch_%s", target->u.name);
  IrExpr *one = ir_int(s->m, 1, call->loc);
  IrBuffer *slot = ir_buffer_new(s->m, arena_strdup(s->arena, name), buf->dtype, IR_SCOPE_SHARED, 1, &one, call->loc);
  IrStmt *al = ir_stmt_new(s->m, IR_STMT_ALLOC, call->loc);
  al->u.alloc = slot;
  ir_seq_push(s->m, seq, al);
  IrVar *var = ir_var_new(s->m, target->u.name, IR_VAR_LET, buf->dtype, target->loc);
  declare(s, target->u.name, ENTITY_VAR, target->loc)->var = var;
  IrStmt *f = ir_stmt_new(s->m, IR_STMT_ATOMIC_FETCH_ADD, st->loc);
  f->u.store.buf = buf;
  f->u.store.nidx = buf->rank;
  for (int i = 0; i < buf->rank; i++) f->u.store.idx[i] = lhs->u.load.idx[i];
  f->u.store.value = convert(s, v, buf->dtype);
  f->u.store.result = var;
  f->u.store.slot = slot;
  ir_seq_push(s->m, seq, f);
}

static IrStmt *tile_op(Sema *s, const AstExpr *call) {
  const char *op = call->u.call.callee;
  SrcLoc loc = call->loc;
  CallArgs a;
  IrStmt *st;
  if (strcmp(op, "copy") == 0) {
    if (!split_args(s, call, NULL, 2, &a) || !require_args(s, call, &a, 2)) return NULL;
    st = ir_stmt_new(s->m, IR_STMT_COPY, loc);
    if (!region(s, a.pos[0]->value, &st->u.copy.src) || !region(s, a.pos[1]->value, &st->u.copy.dst))
      return NULL;
    if (st->u.copy.src.buf == st->u.copy.dst.buf) {
      diag_error(s->diag, loc, "copy: source and destination are the same buffer '%s'", st->u.copy.src.buf->name);
      return NULL;
    }
    return st;
  }
  if (strcmp(op, "atomic_add") == 0) {
    /* atomic_add(src, G[slice]): G[slice] += src, each element atomically
     * (TileLang's T.atomic_add). With an element G[i, j] first (every index
     * a scalar): the element form, G[i, j] += value, one atomic addition. */
    if (!split_args(s, call, NULL, 2, &a) || !require_args(s, call, &a, 2)) return NULL;
    if (is_element(a.pos[0]->value)) return atomic_add_element(s, a.pos[0]->value, a.pos[1]->value, loc);
    st = ir_stmt_new(s->m, IR_STMT_ATOMIC_ADD, loc);
    if (!region(s, a.pos[0]->value, &st->u.copy.src) || !region(s, a.pos[1]->value, &st->u.copy.dst))
      return NULL;
    const IrBuffer *src = st->u.copy.src.buf, *dst = st->u.copy.dst.buf;
    if (dst->scope != IR_SCOPE_GLOBAL || dst->dtype != DTYPE_F32) {
      diag_error(s->diag, a.pos[1]->value->loc,
                 "atomic_add: the destination '%s' must be a global f32 tensor (it is %s %s)", dst->name,
                 ir_scope_name(dst->scope), dtype_name(dst->dtype));
      return NULL;
    }
    if (src->scope == IR_SCOPE_GLOBAL) {
      diag_error(s->diag, a.pos[0]->value->loc,
                 "atomic_add: the source '%s' must be a fragment or a shared tile, not a global tensor", src->name);
      return NULL;
    }
    return st;
  }
  if (strcmp(op, "fill") == 0 || strcmp(op, "clear") == 0) {
    bool is_clear = op[0] == 'c';
    int n = is_clear ? 1 : 2;
    if (!split_args(s, call, NULL, n, &a) || !require_args(s, call, &a, n)) return NULL;
    st = ir_stmt_new(s->m, IR_STMT_FILL, loc);
    if (!region(s, a.pos[0]->value, &st->u.fill.dst)) return NULL;
    DType t = st->u.fill.dst.buf->dtype;
    IrExpr *v = is_clear ? ir_int(s->m, 0, loc) : expr(s, a.pos[1]->value);
    if (dtype_is_float(t) && !dtype_is_float(v->dtype)) v = convert(s, v, DTYPE_F32);
    st->u.fill.value = v;
    return st;
  }
  if (strcmp(op, "gemm") == 0) {
    static const char *const kws[] = {"transpose_A", "transpose_B", "policy", NULL};
    if (!split_args(s, call, kws, 6, &a) || !require_args(s, call, &a, 3)) return NULL;
    st = ir_stmt_new(s->m, IR_STMT_GEMM, loc);
    if (!region(s, a.pos[0]->value, &st->u.gemm.a) || !region(s, a.pos[1]->value, &st->u.gemm.b) ||
        !region(s, a.pos[2]->value, &st->u.gemm.c))
      return NULL;
    const AstExpr *ta = option(&a, 3, "transpose_A"), *tb = option(&a, 4, "transpose_B");
    const AstExpr *pol = option(&a, 5, "policy");
    if (ta && !const_bool(s, ta, &st->u.gemm.trans_a)) return NULL;
    if (tb && !const_bool(s, tb, &st->u.gemm.trans_b)) return NULL;
    st->u.gemm.policy = IR_GEMM_POLICY_SQUARE;
    if (pol) {
      bool found = false;
      for (int p = 0; p < IR_GEMM_POLICY_COUNT && pol->kind == AST_EXPR_NAME; p++)
        if (strcmp(pol->u.name, ir_gemm_policy_name((IrGemmPolicy)p)) == 0)
          st->u.gemm.policy = (IrGemmPolicy)p, found = true;
      if (!found) {
        diag_error(s->diag, pol->loc, "gemm: policy must be full_row, full_col or square");
        return NULL;
      }
    }
    DType da = st->u.gemm.a.buf->dtype, db = st->u.gemm.b.buf->dtype, dc = st->u.gemm.c.buf->dtype;
    /* One operand dtype, except the FP8 pairs (e4m3 x e5m2, as wgmma and
     * torch._scaled_mm take them). */
    if (da != db && !(dtype_is_fp8(da) && dtype_is_fp8(db))) {
      diag_error(s->diag, loc, "gemm: A is %s but B is %s", dtype_name(da), dtype_name(db));
      return NULL;
    }
    if (!dtype_is_float(dc) || !dtype_is_float(da)) {
      diag_error(s->diag, loc, "gemm: operands must be floating point");
      return NULL;
    }
    if (st->u.gemm.c.buf->scope == IR_SCOPE_GLOBAL) {
      diag_error(s->diag, loc, "gemm: the accumulator '%s' must be a fragment or shared buffer",
                 st->u.gemm.c.buf->name);
      return NULL;
    }
    return st;
  }
  if (strncmp(op, "reduce_", 7) == 0) {
    IrReduceKind kind = IR_REDUCE_COUNT;
    for (int r = 0; r < IR_REDUCE_COUNT; r++)
      if (strcmp(op, ir_reduce_name((IrReduceKind)r)) == 0) kind = (IrReduceKind)r;
    if (kind == IR_REDUCE_COUNT) goto unknown;
    static const char *const kws[] = {"dim", "clear", NULL};
    if (!split_args(s, call, kws, 4, &a) || !require_args(s, call, &a, 2)) return NULL;
    st = ir_stmt_new(s->m, IR_STMT_REDUCE, loc);
    st->u.reduce.kind = kind;
    st->u.reduce.src = buffer_of(s, a.pos[0]->value);
    st->u.reduce.dst = buffer_of(s, a.pos[1]->value);
    if (!st->u.reduce.src || !st->u.reduce.dst) return NULL;
    int64_t dim = 1;
    const AstExpr *de = option(&a, 2, "dim"), *ce = option(&a, 3, "clear");
    if (de && !const_int(s, de, &dim)) return NULL;
    st->u.reduce.clear = true;
    if (ce && !const_bool(s, ce, &st->u.reduce.clear)) return NULL;
    IrBuffer *src = st->u.reduce.src, *dst = st->u.reduce.dst;
    if (dim < 0 || dim >= src->rank) {
      diag_error(s->diag, de ? de->loc : loc, "%s: dim %lld is out of range for rank-%d '%s'", op,
                 (long long)dim, src->rank, src->name);
      return NULL;
    }
    if (dst->rank != src->rank - 1 && !(src->rank == 1 && dst->rank == 1)) {
      diag_error(s->diag, loc, "%s: destination '%s' must have rank %d, has %d", op, dst->name,
                 src->rank - 1, dst->rank);
      return NULL;
    }
    if (src->scope == IR_SCOPE_GLOBAL || dst->scope == IR_SCOPE_GLOBAL) {
      diag_error(s->diag, loc, "%s: operands must be fragment or shared buffers", op);
      return NULL;
    }
    st->u.reduce.dim = (int)dim;
    return st;
  }
  if (strcmp(op, "annotate_layout") == 0) {
    if (!split_args(s, call, NULL, 2, &a) || !require_args(s, call, &a, 2)) return NULL;
    st = ir_stmt_new(s->m, IR_STMT_ANNOTATE_LAYOUT, loc);
    st->u.annotate.buf = buffer_of(s, a.pos[0]->value);
    if (!st->u.annotate.buf) return NULL;
    const AstExpr *lay = a.pos[1]->value;
    if (lay->kind != AST_EXPR_NAME || strcmp(lay->u.name, "swizzled") != 0) {
      diag_error(s->diag, lay->loc, "annotate_layout: unknown layout (expected 'swizzled')");
      return NULL;
    }
    if (st->u.annotate.buf->scope != IR_SCOPE_SHARED) {
      diag_error(s->diag, loc, "annotate_layout: '%s' is not a shared buffer", st->u.annotate.buf->name);
      return NULL;
    }
    st->u.annotate.layout = IR_LAYOUT_SWIZZLED;
    return st;
  }
  if (strcmp(op, "use_swizzle") == 0) {
    static const char *const kws[] = {"panel_size", "order", NULL};
    if (!split_args(s, call, kws, 2, &a)) return NULL;
    const AstExpr *panel = option(&a, 0, "panel_size"), *order = option(&a, 1, "order");
    if (!panel) {
      diag_error(s->diag, loc, "use_swizzle: missing panel_size");
      return NULL;
    }
    st = ir_stmt_new(s->m, IR_STMT_USE_SWIZZLE, loc);
    st->u.swizzle.panel_size = int_expr(s, panel, "panel_size");
    if (order) {
      if (order->kind != AST_EXPR_NAME ||
          (strcmp(order->u.name, "row") != 0 && strcmp(order->u.name, "col") != 0)) {
        diag_error(s->diag, order->loc, "use_swizzle: order must be row or col");
        return NULL;
      }
      st->u.swizzle.column_major = strcmp(order->u.name, "col") == 0;
    }
    return st;
  }
unknown:
  if (lookup(s, op) || is_builtin_name(op)) {
    diag_error(s->diag, loc, "'%s' is not a tile operation", op);
    return NULL;
  }
  for (int f = 0; f < IR_INTRINSIC_COUNT; f++)
    if (strcmp(op, ir_intrinsic_name((IrIntrinsic)f)) == 0 || strcmp(op, "if_then_else") == 0) {
      diag_error(s->diag, loc, "the value of '%s' is unused", op);
      return NULL;
    }
  diag_error(s->diag, loc, "unknown tile operation '%s'", op);
  return NULL;
}

/* ---- statements ------------------------------------------------------------ */

static void stmt(Sema *s, const AstStmt *st, IrStmt *seq);

/* The statements of body into seq, in a scope of their own. */
static void block_into(Sema *s, const AstStmt *body, IrStmt *seq) {
  int mark = s->nscope;
  if (body->kind == AST_STMT_BLOCK)
    for (const AstStmt *c = body->u.block.stmts; c; c = c->next) stmt(s, c, seq);
  else
    stmt(s, body, seq);
  scope_pop(s, mark);
}

static IrStmt *block_of(Sema *s, const AstStmt *body) {
  IrStmt *seq = ir_seq_new(s->m, body->loc);
  block_into(s, body, seq);
  return seq;
}

static void alloc_stmt(Sema *s, const AstStmt *st, const AstExpr *call, IrScope scope, IrStmt *seq) {
  const char *name = st->u.assign.target->u.name;
  if (st->u.assign.op != AST_OP_COUNT) {
    diag_error(s->diag, st->loc, "a buffer is allocated with '=', not a compound assignment");
    return;
  }
  if (call->u.call.nargs != 2 || call->u.call.args->keyword || call->u.call.args->next->keyword) {
    diag_error(s->diag, call->loc, "'%s' takes 2 arguments (shape, dtype), got %d",
               call->u.call.callee, call->u.call.nargs);
    return;
  }
  const AstExpr *shape = call->u.call.args->value, *dt = call->u.call.args->next->value;
  if (shape->kind != AST_EXPR_LIST) {
    diag_error(s->diag, shape->loc, "expected a shape list like [64, 64]");
    return;
  }
  if (shape->u.list.nitems < 1 || shape->u.list.nitems > IR_MAX_RANK) {
    diag_error(s->diag, shape->loc, "a buffer has 1 to %d dimensions, not %d", IR_MAX_RANK,
               shape->u.list.nitems);
    return;
  }
  DType dtype;
  if (dt->kind != AST_EXPR_NAME) {
    diag_error(s->diag, dt->loc, "expected a dtype");
    return;
  }
  if (!resolve_dtype(s, dt->u.name, dt->loc, &dtype)) return;
  IrExpr *dims[IR_MAX_RANK];
  int n = 0;
  for (const AstArg *a = shape->u.list.items; a; a = a->next) dims[n++] = int_expr(s, a->value, "a dimension");
  IrBuffer *buf = ir_buffer_new(s->m, name, dtype, scope, n, dims, st->loc);
  Entity *ent = declare(s, name, ENTITY_BUFFER, st->u.assign.target->loc);
  ent->buf = buf;
  IrStmt *al = ir_stmt_new(s->m, IR_STMT_ALLOC, st->loc);
  al->u.alloc = buf;
  ir_seq_push(s->m, seq, al);
}

static void assign_stmt(Sema *s, const AstStmt *st, IrStmt *seq) {
  const AstExpr *target = st->u.assign.target, *value = st->u.assign.value;
  if (target->kind == AST_EXPR_NAME) {
    if (value->kind == AST_EXPR_CALL) {
      static const struct { const char *name; IrScope scope; } allocs[] = {
          {"alloc_shared", IR_SCOPE_SHARED}, {"alloc_fragment", IR_SCOPE_FRAGMENT},
          {"alloc_local", IR_SCOPE_LOCAL}};
      for (size_t i = 0; i < sizeof allocs / sizeof *allocs; i++)
        if (strcmp(value->u.call.callee, allocs[i].name) == 0) {
          alloc_stmt(s, st, value, allocs[i].scope, seq);
          return;
        }
    }
    Entity *old = lookup(s, target->u.name);
    if (old && old->kind == ENTITY_BUFFER) {
      diag_error(s->diag, target->loc, "cannot assign to buffer '%s' (assign its elements: %s[...] = ...)",
                 target->u.name, target->u.name);
      return;
    }
    if (old) {
      diag_error(s->diag, target->loc, "'%s' is already defined and cannot be reassigned", target->u.name);
      return;
    }
    if (st->u.assign.op != AST_OP_COUNT) {
      diag_error(s->diag, target->loc, "unknown name '%s'", target->u.name);
      return;
    }
    if (value->kind == AST_EXPR_CALL && strcmp(value->u.call.callee, "atomic_add") == 0) {
      atomic_fetch_stmt(s, st, seq);
      return;
    }
    IrExpr *v = expr(s, value);
    IrVar *var = ir_var_new(s->m, target->u.name, IR_VAR_LET, v->dtype, target->loc);
    declare(s, target->u.name, ENTITY_VAR, target->loc)->var = var;
    IrStmt *let = ir_stmt_new(s->m, IR_STMT_LET, st->loc);
    let->u.let.var = var;
    let->u.let.value = v;
    ir_seq_push(s->m, seq, let);
    return;
  }
  if (target->kind != AST_EXPR_INDEX) {
    diag_error(s->diag, target->loc, "cannot assign to this expression");
    return;
  }
  IrExpr *lhs = index_expr(s, target);
  if (lhs->kind != IR_EXPR_LOAD) return; /* error already reported */
  IrBuffer *buf = lhs->u.load.buf;
  if (value->kind == AST_EXPR_CALL && strcmp(value->u.call.callee, "atomic_add") == 0) {
    diag_error(s->diag, value->loc,
               "atomic_add's old value can only be assigned to a new scalar (`old = atomic_add(G[i], v);`), "
               "not stored into '%s'", buf->name);
    return;
  }
  IrExpr *v = expr(s, value);
  if (st->u.assign.op != AST_OP_COUNT) v = binary(s, ast_to_ir_op(st->u.assign.op), lhs, v, st->loc);
  if (dtype_is_float(v->dtype) && !dtype_is_float(buf->dtype)) {
    diag_error(s->diag, value->loc, "cannot store a %s value into %s buffer '%s' without a cast",
               dtype_name(v->dtype), dtype_name(buf->dtype), buf->name);
    return;
  }
  ir_seq_push(s->m, seq, ir_store_new(s->m, buf, lhs->u.load.idx, convert(s, v, buf->dtype), st->loc));
}

static void for_stmt(Sema *s, const AstStmt *st, IrStmt *seq) {
  const AstExpr *it = st->u.for_.iter;
  if (it->kind != AST_EXPR_CALL) {
    diag_error(s->diag, it->loc, "expected parallel(...), pipelined(...) or serial(...)");
    return;
  }
  const char *kind_name = it->u.call.callee;
  IrForKind kind;
  if (strcmp(kind_name, "parallel") == 0) kind = IR_FOR_PARALLEL;
  else if (strcmp(kind_name, "pipelined") == 0) kind = IR_FOR_PIPELINED;
  else if (strcmp(kind_name, "serial") == 0) kind = IR_FOR_SERIAL;
  else {
    diag_error(s->diag, it->loc, "unknown loop kind '%s' (expected parallel, pipelined or serial)", kind_name);
    return;
  }
  CallArgs a;
  static const char *const pipe_kws[] = {"num_stages", NULL};
  if (!split_args(s, it, kind == IR_FOR_PIPELINED ? pipe_kws : NULL, kind == IR_FOR_PARALLEL ? 8 : 1, &a))
    return;
  int nvars = st->u.for_.nvars;
  if (kind != IR_FOR_PARALLEL && nvars != 1) {
    diag_error(s->diag, st->loc, "a %s loop has one variable, not %d", kind_name, nvars);
    return;
  }
  if (a.npos != nvars) {
    diag_error(s->diag, it->loc, "%s(...) has %d extent%s but the loop has %d variable%s", kind_name,
               a.npos, a.npos == 1 ? "" : "s", nvars, nvars == 1 ? "" : "s");
    return;
  }
  int num_stages = 1;
  if (kind == IR_FOR_PIPELINED) {
    const AstArg *ns = keyword(&a, "num_stages");
    if (ns) {
      IrExpr *v = int_expr(s, ns->value, "num_stages");
      /* num_stages may name a const; it is resolved by specialize. Until then
       * keep the literal when there is one. */
      int64_t c;
      if (ir_expr_is_int_const(v, &c)) {
        if (c < 1 || c > IR_MAX_STAGES) {
          diag_error(s->diag, ns->loc, "num_stages must be between 1 and %d, got %lld", IR_MAX_STAGES, (long long)c);
          return;
        }
        num_stages = (int)c;
      } else if (sema_const_value(s, v, &c)) {
        /* A const, or an expression of consts (target_sm included), as
         * specialize will bind it: -D values first, then the defaults. */
        if (c < 1 || c > IR_MAX_STAGES) {
          diag_error(s->diag, ns->loc, "num_stages must be between 1 and %d, got %lld", IR_MAX_STAGES, (long long)c);
          return;
        }
        num_stages = (int)c;
      } else {
        diag_error(s->diag, ns->loc, "num_stages must be a compile-time constant");
        return;
      }
    }
  }
  IrExpr *extents[8];
  for (int i = 0; i < a.npos; i++) extents[i] = int_expr(s, a.pos[i]->value, "a loop extent");
  int mark = s->nscope;
  IrVar *vars[8];
  int i = 0;
  for (const AstName *v = st->u.for_.vars; v && i < 8; v = v->next, i++) {
    vars[i] = ir_var_new(s->m, v->name, IR_VAR_LOOP, DTYPE_I64, v->loc);
    declare(s, v->name, ENTITY_VAR, v->loc)->var = vars[i];
  }
  s->parallel += kind == IR_FOR_PARALLEL;
  IrStmt *body = block_of(s, st->u.for_.body);
  s->parallel -= kind == IR_FOR_PARALLEL;
  scope_pop(s, mark);
  /* for i, j in parallel(M, N) is a nest of single-variable parallel loops. */
  for (int d = nvars - 1; d >= 0; d--) {
    IrStmt *loop = ir_for_new(s->m, kind, vars[d], extents[d], body, st->loc);
    loop->u.for_.num_stages = num_stages;
    if (d == 0) {
      ir_seq_push(s->m, seq, loop);
    } else {
      body = ir_seq_new(s->m, st->loc);
      ir_seq_push(s->m, body, loop);
    }
  }
}

/* ---- programmatic dependent launch ------------------------------------------ */

static void note_global_load(const IrExpr *e, void *ctx) {
  if (e->kind == IR_EXPR_LOAD && e->u.load.buf->scope == IR_SCOPE_GLOBAL) *(bool *)ctx = true;
}

static bool is_global(const IrBuffer *b) { return b && b->scope == IR_SCOPE_GLOBAL; }

/* Whether st reads or writes a global tensor anywhere inside it: in its own
 * expressions (element loads), as a tile operand or store target, or in a
 * nested statement. */
static bool touches_global(IrStmt *st) {
  if (!st) return false;
  bool loads = false;
  ir_stmt_visit_exprs(st, note_global_load, &loads);
  if (loads) return true;
  switch (st->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < st->u.seq.n; i++)
      if (touches_global(st->u.seq.items[i])) return true;
    return false;
  case IR_STMT_FOR: return touches_global(st->u.for_.body);
  case IR_STMT_IF: return touches_global(st->u.if_.then_) || touches_global(st->u.if_.else_);
  case IR_STMT_COPY:
  case IR_STMT_ATOMIC_ADD: return is_global(st->u.copy.src.buf) || is_global(st->u.copy.dst.buf);
  case IR_STMT_FILL: return is_global(st->u.fill.dst.buf);
  case IR_STMT_STORE:
  case IR_STMT_ATOMIC_FETCH_ADD: return is_global(st->u.store.buf);
  default: return false;
  }
}

/* pdl_sync() / pdl_trigger() (TileLang's T.pdl_sync / T.pdl_trigger): kernel
 * flags on sm_90a, emitted at the kernel's start (griddepcontrol.wait /
 * .launch_dependents), no-ops on other targets. Written where they take
 * effect: in the kernel body itself, before any statement that reads or
 * writes a global tensor (so the wait comes before every access to what the
 * previous kernel writes, and a trigger is not mistaken for one placed after
 * the work). */
static bool pdl_stmt(Sema *s, const AstExpr *call, IrStmt *seq) {
  const char *op = call->u.call.callee;
  const bool sync = strcmp(op, "pdl_sync") == 0;
  if (!sync && strcmp(op, "pdl_trigger") != 0) return false;
  if (call->u.call.nargs != 0) {
    diag_error(s->diag, call->loc, "'%s' takes no arguments", op);
    return true;
  }
  if (seq != s->top) {
    diag_error(s->diag, call->loc, "'%s' must be a statement of the kernel body itself, not inside a loop, if or block", op);
    return true;
  }
  for (int i = 0; i < seq->u.seq.n; i++)
    if (touches_global(seq->u.seq.items[i])) {
      diag_error(s->diag, call->loc,
                 "'%s' must come before the kernel's first access to a global tensor (line %d); it takes "
                 "effect at the kernel's start",
                 op, seq->u.seq.items[i]->loc.line);
      return true;
    }
  if (s->target_sm >= 90) {
    if (sync) s->k->pdl_sync = true;
    else s->k->pdl_trigger = true;
  }
  return true;
}

static void stmt(Sema *s, const AstStmt *st, IrStmt *seq) {
  switch (st->kind) {
  case AST_STMT_ASSIGN:
    assign_stmt(s, st, seq);
    return;
  case AST_STMT_EXPR: {
    const AstExpr *e = st->u.expr;
    if (e->kind != AST_EXPR_CALL) {
      diag_error(s->diag, e->loc, "expression statement must be a tile operation call");
      return;
    }
    if (pdl_stmt(s, e, seq)) return;
    IrStmt *op = tile_op(s, e);
    if (op) ir_seq_push(s->m, seq, op);
    return;
  }
  case AST_STMT_FOR:
    for_stmt(s, st, seq);
    return;
  case AST_STMT_IF: {
    IrExpr *c = as_bool(s, expr(s, st->u.if_.cond));
    IrStmt *then_ = block_of(s, st->u.if_.then_);
    IrStmt *else_ = st->u.if_.else_ ? block_of(s, st->u.if_.else_) : NULL;
    ir_seq_push(s->m, seq, ir_if_new(s->m, c, then_, else_, st->loc));
    return;
  }
  case AST_STMT_BLOCK:
    ir_seq_push(s->m, seq, block_of(s, st));
    return;
  }
}

/* ---- kernels ---------------------------------------------------------------- */

static void add_symbol(Sema *s, IrVar *v) {
  IrKernel *k = s->k;
  /* Doubling: a copy per symbol was quadratic memory (finding F6). */
  k->symbols = arena_grow(s->arena, k->symbols, &s->capsymbols, k->nsymbols + 1, sizeof(IrVar *));
  k->symbols[k->nsymbols++] = v;
}

/* ---- shape choices ----------------------------------------------------------- */

/* The children of e, for the walks below (NULL where there are fewer). */
static int expr_children(IrExpr *e, IrExpr ***kids) {
  switch (e->kind) {
  case IR_EXPR_UNARY:
    kids[0] = &e->u.op.a;
    return 1;
  case IR_EXPR_BINARY:
    kids[0] = &e->u.op.a, kids[1] = &e->u.op.b;
    return 2;
  case IR_EXPR_SELECT:
    kids[0] = &e->u.select.cond, kids[1] = &e->u.select.then_, kids[2] = &e->u.select.else_;
    return 3;
  case IR_EXPR_CALL:
    for (int i = 0; i < e->u.call.nargs; i++) kids[i] = &e->u.call.args[i];
    return e->u.call.nargs;
  case IR_EXPR_CAST:
    kids[0] = &e->u.cast_src;
    return 1;
  default:
    return 0;
  }
}

/* A shape symbol e names that no -D binds (its value comes at launch), or NULL. */
static const IrVar *launch_shape_symbol(Sema *s, IrExpr *e) {
  if (!e) return NULL;
  if (e->kind == IR_EXPR_VAR) {
    const IrVar *v = e->u.var;
    bool shape = v->kind == IR_VAR_SYMBOL && !v->is_const_decl && !v->default_value;
    return shape && !find_define(s, v->name) ? v : NULL;
  }
  IrExpr **kids[IR_MAX_CALL_ARGS];
  int n = expr_children(e, kids);
  for (int i = 0; i < n; i++) {
    const IrVar *v = launch_shape_symbol(s, *kids[i]);
    if (v) return v;
  }
  return NULL;
}

/* Replaces each largest condition in a const default that tests a shape
 * symbol known only at launch (seq_len >= 8192) by the way this build takes
 * it: bit i of shape_class for the kernel's i-th distinct condition. The
 * kernel keeps the conditions; the runtime evaluates them at launch and
 * picks (or compiles) the build whose bits agree, so each build's consts
 * stay compile-time constants. */
static bool sema_const_value(Sema *s, const IrExpr *e, int64_t *out);

/* e with every part that does not need a launch-time shape replaced by its
 * value where sema knows it (-D values, then the consts' defaults), then
 * simplified: branches dead for this build's consts go, so a condition
 * under them is no choice (dim = 128 never tests seq_len in the flagship). */
static IrExpr *fold_known(Sema *s, IrExpr *e) {
  int64_t c;
  if (!launch_shape_symbol(s, e)) {
    if (e->dtype == DTYPE_BOOL && sema_const_value(s, e, &c)) return ir_bool(s->m, c != 0, e->loc);
    if (e->dtype == DTYPE_I64 && sema_const_value(s, e, &c)) return ir_int(s->m, c, e->loc);
    return e;
  }
  IrExpr **kids[IR_MAX_CALL_ARGS];
  int n = expr_children(e, kids);
  for (int i = 0; i < n; i++) *kids[i] = fold_known(s, *kids[i]);
  return e;
}

static IrExpr *take_shape_choices(Sema *s, IrExpr *e) {
  if (!launch_shape_symbol(s, e)) return e;
  if (e->dtype != DTYPE_BOOL) {
    IrExpr **kids[IR_MAX_CALL_ARGS];
    int n = expr_children(e, kids);
    for (int i = 0; i < n; i++) *kids[i] = take_shape_choices(s, *kids[i]);
    return e;
  }
  IrKernel *k = s->k;
  int i = 0;
  while (i < k->nshape_choices && !ir_expr_equal(k->shape_choice[i], e)) i++;
  if (i == k->nshape_choices) {
    if (i == IR_MAX_SHAPE_CHOICES || s->m->nshape_choices == IR_MAX_SHAPE_CHOICES) {
      diag_error(s->diag, e->loc, "more than %d shape choices in one module", IR_MAX_SHAPE_CHOICES);
      return ir_bool(s->m, false, e->loc);
    }
    k->shape_choice[i] = e;
    k->shape_choice_bit[i] = s->m->nshape_choices++;
    k->nshape_choices++;
  }
  return ir_bool(s->m, (s->shape_class >> k->shape_choice_bit[i]) & 1u, e->loc);
}

/* The i-th argument of a call (its arguments are a list). */
static const AstExpr *call_arg(const AstExpr *call, int i) {
  const AstArg *a = call->u.call.args;
  while (a && i-- > 0) a = a->next;
  return a ? a->value : NULL;
}

/* Whether e names a dtype: a dtype, a dtype const, or if_then_else(c, X, Y)
 * of two such (a dtype that follows the target). */
static bool names_dtype(Sema *s, const AstExpr *e) {
  DType t;
  if (e->kind == AST_EXPR_NAME)
    return dtype_from_name(e->u.name, &t) || (lookup(s, e->u.name) && lookup(s, e->u.name)->kind == ENTITY_DTYPE);
  if (e->kind != AST_EXPR_CALL || strcmp(e->u.call.callee, "if_then_else") != 0 || e->u.call.nargs != 3) return false;
  for (const AstArg *a = e->u.call.args; a; a = a->next)
    if (a->keyword) return false; /* the value path reports it */
  return names_dtype(s, call_arg(e, 1)) && names_dtype(s, call_arg(e, 2));
}

/* The dtype a names_dtype expression picks; the condition of an
 * if_then_else must be known when the kernel compiles (target_sm, consts):
 * a dtype cannot change with a launch's shapes. */
static bool dtype_choice(Sema *s, const AstExpr *e, DType *out) {
  if (e->kind == AST_EXPR_NAME) return resolve_dtype(s, e->u.name, e->loc, out);
  int64_t c = 0;
  IrExpr *cond = expr(s, call_arg(e, 0));
  /* Both branches name dtypes on every target, not only the one taken. */
  DType when_true, when_false;
  /* Both checked, so both report their errors. */
  const bool true_ok = dtype_choice(s, call_arg(e, 1), &when_true);
  const bool false_ok = dtype_choice(s, call_arg(e, 2), &when_false);
  if (!true_ok || !false_ok) return false;
  if (dtype_is_float(cond->dtype)) {
    diag_error(s->diag, call_arg(e, 0)->loc, "a dtype choice's condition must be an integer or bool, not %s",
               dtype_name(cond->dtype));
    return false;
  }
  if (!sema_const_value(s, cond, &c)) {
    diag_error(s->diag, call_arg(e, 0)->loc,
               "a dtype choice must be known at compile time (target_sm, consts, -D), not at launch");
    return false;
  }
  *out = c ? when_true : when_false;
  return true;
}

static void const_decl(Sema *s, const AstConst *c) {
  const TilecDefine *def = find_define(s, c->name);
  DType t;
  /* A const whose value (or -D binding) names a dtype is a dtype alias. */
  if (names_dtype(s, c->value)) {
    if (def) {
      Entity *alias = lookup(s, def->value);
      if (alias && alias->kind == ENTITY_DTYPE) t = alias->dtype;
      else if (!dtype_from_name(def->value, &t)) {
        diag_error(s->diag, c->loc, "-D %s=%s: '%s' is not a dtype", c->name, def->value, def->value);
        t = DTYPE_F32;
      }
    } else if (!dtype_choice(s, c->value, &t)) {
      t = DTYPE_F32;
    }
    declare(s, c->name, ENTITY_DTYPE, c->loc)->dtype = t;
    return;
  }
  s->in_const_default = true;
  IrExpr *v = expr(s, c->value);
  s->in_const_default = false;
  if (launch_shape_symbol(s, v)) v = take_shape_choices(s, ir_simplify(s->m, fold_known(s, v)));
  const IrVar *dyn = launch_shape_symbol(s, v);
  if (dyn && dyn == s->k->sm_count)
    diag_error(s->diag, c->loc,
               "const '%s' depends on sm_count, the GPU's SM count known only at launch: a default may test "
               "it in a condition (if_then_else(tiles %% sm_count == 0, ...))",
               c->name);
  else if (dyn)
    diag_error(s->diag, c->loc,
               "const '%s' depends on the shape symbol '%s', known only at launch: a default may "
               "test it in a condition (if_then_else(%s >= 8192, ...)), or bind it with -D",
               c->name, dyn->name, dyn->name);
  if (v->dtype != DTYPE_BOOL && !dtype_is_float(v->dtype)) v = convert(s, v, DTYPE_I64);
  IrVar *var = ir_var_new(s->m, c->name, IR_VAR_SYMBOL, v->dtype, c->loc);
  var->default_value = v;
  var->is_const_decl = true;
  var->dynamic_index = -1;
  declare(s, c->name, ENTITY_VAR, c->loc)->var = var;
  add_symbol(s, var);
}

static IrVar *shape_symbol_new(Sema *s, const char *name, SrcLoc loc) {
  IrVar *v = ir_var_new(s->m, name, IR_VAR_SYMBOL, DTYPE_I64, loc);
  v->dynamic_index = -1;
  return v;
}

/* A shape symbol declared early (declare_shape_symbols) joins k->symbols at
 * its first mention in a parameter, where it would have been declared. */
static void list_early_symbol(Sema *s, IrVar *v) {
  for (int i = 0; i < s->nunlisted; i++)
    if (s->unlisted[i] == v) {
      add_symbol(s, v);
      s->unlisted[i] = s->unlisted[--s->nunlisted];
      return;
    }
}

/* Declares the shape and stride symbols the parameters name (those that are
 * not consts) before the consts, so a const default can test them (a shape
 * choice: block_M = if_then_else(seq_len >= 8192, 192, 64)). Names a shape
 * symbol may not take are left to dim_or_stride, which reports them. */
static void declare_shape_symbols(Sema *s, const AstKernel *ak) {
  for (const AstParam *p = ak->params; p; p = p->next)
    for (int list = 0; list < 2; list++)
      for (const AstArg *d = list ? p->strides : p->dims; d; d = d->next) {
        const char *name = d->value->kind == AST_EXPR_NAME ? d->value->u.name : NULL;
        if (!name || lookup(s, name) || is_reserved(name) || is_builtin_name(name)) continue;
        bool is_const = false;
        for (const AstConst *c = ak->consts; c && !is_const; c = c->next) is_const = strcmp(c->name, name) == 0;
        if (is_const || s->nunlisted == (int)(sizeof s->unlisted / sizeof *s->unlisted)) continue;
        Entity *ent = declare(s, name, ENTITY_VAR, d->loc);
        ent->var = shape_symbol_new(s, name, d->loc);
        s->unlisted[s->nunlisted++] = ent->var;
      }
}

/* One entry of a tensor's shape or strides: a positive integer or a symbol
 * name (a const, or a shape/stride symbol: dynamic unless -D binds it). */
static IrExpr *dim_or_stride(Sema *s, const AstExpr *d, const char *what, const char **name_out) {
  if (d->kind == AST_EXPR_INT) {
    if (d->u.int_value < 1) diag_error(s->diag, d->loc, "a %s must be positive", what);
    return ir_int(s->m, d->u.int_value, d->loc);
  }
  if (d->kind != AST_EXPR_NAME) {
    diag_error(s->diag, d->loc, "a tensor %s must be an integer or a symbol name", what);
    return ir_int(s->m, 1, d->loc);
  }
  Entity *ent = lookup(s, d->u.name);
  if (!ent) {
    /* First mention of a shape or stride symbol: dynamic unless -D binds it. */
    if (is_reserved(d->u.name) || is_builtin_name(d->u.name))
      diag_error(s->diag, d->loc, "'%s' cannot name a %s symbol", d->u.name, strcmp(what, "stride") == 0 ? "stride" : "shape");
    ent = declare(s, d->u.name, ENTITY_VAR, d->loc);
    ent->var = shape_symbol_new(s, d->u.name, d->loc);
    add_symbol(s, ent->var);
  } else if (ent->kind == ENTITY_VAR) {
    list_early_symbol(s, ent->var);
  }
  if (ent->kind != ENTITY_VAR || ent->var->kind != IR_VAR_SYMBOL || ent->var->dtype != DTYPE_I64) {
    diag_error(s->diag, d->loc, "'%s' cannot be used as a %s", d->u.name, what);
    return ir_int(s->m, 1, d->loc);
  }
  *name_out = ent->var->name;
  return ir_var_ref(s->m, ent->var, d->loc);
}

static void param_decl(Sema *s, const AstParam *p, IrParam *out, int index) {
  out->name = p->name;
  out->loc = p->loc;
  out->is_tensor = p->is_tensor;
  DType t = DTYPE_F32;
  resolve_dtype(s, p->dtype, p->loc, &t);
  if (!p->is_tensor && (t > DTYPE_F64 || t < DTYPE_BOOL)) { /* the storage-only dtypes */
    diag_error(s->diag, p->loc,
               "scalar parameter '%s' cannot be %s (scalars are bool, i32, i64, f16, bf16, f32 or f64; "
               "pass an i32 or f32 and convert it)", p->name, dtype_name(t));
    t = DTYPE_I64;
  }
  if (!p->is_tensor) {
    out->scalar = ir_var_new(s->m, p->name, IR_VAR_SCALAR_PARAM, t, p->loc);
    out->scalar->param_index = index;
    declare(s, p->name, ENTITY_VAR, p->loc)->var = out->scalar;
    return;
  }
  if (p->ndims < 1 || p->ndims > IR_MAX_RANK) {
    diag_error(s->diag, p->loc, "tensor '%s' must have 1 to %d dimensions", p->name, IR_MAX_RANK);
    return;
  }
  IrExpr *dims[IR_MAX_RANK];
  int n = 0;
  for (const AstArg *a = p->dims; a; a = a->next, n++) dims[n] = dim_or_stride(s, a->value, "dimension", &out->dim_names[n]);
  out->buffer = ir_buffer_new(s->m, p->name, t, IR_SCOPE_GLOBAL, n, dims, p->loc);
  if (p->strides) {
    if (p->nstrides != p->ndims) {
      diag_error(s->diag, p->strides_loc, "'%s' has %d dimension%s but strides (...) lists %d", p->name, p->ndims,
                 p->ndims == 1 ? "" : "s", p->nstrides);
    } else {
      out->buffer->strides = ARENA_NEW_ARRAY(s->arena, IrExpr *, n);
      int d = 0;
      for (const AstArg *a = p->strides; a; a = a->next, d++) {
        out->buffer->strides[d] = dim_or_stride(s, a->value, "stride", &out->stride_names[d]);
        if (d == n - 1 && !(a->value->kind == AST_EXPR_INT && a->value->u.int_value == 1))
          diag_error(s->diag, a->value->loc,
                     "the innermost stride of '%s' must be 1 (tensors need a contiguous last dimension)", p->name);
      }
    }
  }
  out->buffer->param_index = index;
  declare(s, p->name, ENTITY_BUFFER, p->loc)->buf = out->buffer;
}

static IrKernel *kernel(Sema *s, const AstKernel *ak) {
  IrKernel *k = ARENA_NEW(s->arena, IrKernel);
  s->k = k;
  s->capsymbols = 0;
  scope_pop(s, 0);
  k->name = ak->name;
  k->loc = ak->loc;
  k->shape_class = s->shape_class;
  if (is_reserved(ak->name)) diag_error(s->diag, ak->loc, "'%s' is a reserved name", ak->name);
  s->nunlisted = 0;
  declare_shape_symbols(s, ak);
  for (const AstConst *c = ak->consts; c; c = c->next) const_decl(s, c);
  k->nparams = ak->nparams;
  k->params = ARENA_NEW_ARRAY(s->arena, IrParam, ak->nparams ? ak->nparams : 1);
  int i = 0;
  for (const AstParam *p = ak->params; p; p = p->next, i++) param_decl(s, p, &k->params[i], i);
  if (ak->ngrid < 1 || ak->ngrid > IR_MAX_GRID) {
    diag_error(s->diag, ak->loc, "grid has 1 to 3 dimensions, not %d", ak->ngrid);
    return k;
  }
  if (ak->nblock_vars != ak->ngrid) {
    diag_error(s->diag, ak->loc, "grid has %d dimension%s but 'as (...)' names %d block indices",
               ak->ngrid, ak->ngrid == 1 ? "" : "s", ak->nblock_vars);
    return k;
  }
  k->ngrid = ak->ngrid;
  i = 0;
  for (const AstArg *g = ak->grid; g; g = g->next, i++) k->grid[i] = int_expr(s, g->value, "a grid extent");
  for (; i < IR_MAX_GRID; i++) k->grid[i] = ir_int(s->m, 1, ak->loc);
  k->threads = int_expr(s, ak->threads, "the thread count");
  i = 0;
  for (const AstName *b = ak->block_vars; b; b = b->next, i++) {
    k->block_vars[i] = ir_var_new(s->m, b->name, IR_VAR_BLOCK_INDEX, DTYPE_I64, b->loc);
    k->block_vars[i]->grid_dim = i;
    declare(s, b->name, ENTITY_VAR, b->loc)->var = k->block_vars[i];
  }
  k->body = s->top = ir_seq_new(s->m, ak->body->loc);
  block_into(s, ak->body, k->body);
  s->top = NULL;
  return k;
}

IrModule *sema_build(Arena *arena, Diag *diag, const AstModule *ast, const TilecDefine *defines,
                     int ndefines, TilecTarget target, unsigned shape_class) {
  Sema s = {.arena = arena, .diag = diag, .defines = defines, .ndefines = ndefines, .shape_class = shape_class,
            .target_sm = target == TILEC_TARGET_SM90A ? 90 : target == TILEC_TARGET_SM80 ? 80 : 0};
  name_table_init(&s.names, arena, NAME_KEY_STRING);
  s.m = ir_module_new(arena, ast->file);
  s.m->shape_class = shape_class;
  int errors = diag_error_count(diag);
  s.m->kernels = ARENA_NEW_ARRAY(arena, IrKernel *, ast->nkernels ? ast->nkernels : 1);
  NameTable kernel_names;
  name_table_init(&kernel_names, arena, NAME_KEY_STRING);
  for (const AstKernel *ak = ast->kernels; ak; ak = ak->next) {
    /* One error per earlier kernel of the name, as a scan of them gave. */
    int i = name_table_push(&kernel_names, ak->name);
    while ((i = name_table_find_older(&kernel_names, i)) >= 0)
      diag_error(diag, ak->loc, "redefinition of kernel '%s'", ak->name);
    s.m->kernels[s.m->nkernels++] = kernel(&s, ak);
  }
  if (ast->nkernels == 0) diag_error(diag, (SrcLoc){ast->file, 0, 0}, "no kernel in the input");
  return diag_error_count(diag) > errors ? NULL : s.m;
}
