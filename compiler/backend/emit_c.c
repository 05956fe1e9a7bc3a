/* emit_c.c - the CPU backend: lowered tile IR -> self-contained C11.
 *
 * Each kernel becomes `void tilec_K(void **tc_args, const int64_t *tc_dyn)`
 * (ABI in compiler/include/tilec.h). The function unpacks its arguments
 * (tensors as typed `restrict` pointers, scalars by value, dynamic symbols
 * from tc_dyn, bound symbols as constants), computes the grid, and runs the
 * block body once per grid point, grid[2] outermost, grid[0] innermost. Every
 * FOR kind runs sequentially; barriers and layout requests are no-ops, since
 * one CPU thread plays the whole block.
 *
 * Buffers: GLOBAL tensors are compact row-major, indexed by a Horner flat
 * index over their (possibly symbolic) shape, unless declared with
 * `strides (...)`: then by the sum of index times stride (same expressions
 * as the CUDA backend, compiler/backend/cuda/expr.c); SHARED/FRAGMENT/LOCAL buffers
 * are C arrays with constant dimensions declared at their ALLOC. Layouts
 * (swizzled, fragment) describe GPU placement only and do not change the
 * logical element a CPU index names, so they are ignored here.
 *
 * Values: f16/bf16 are stored as uint16_t bit patterns and computed in
 * float; they are rounded when stored, and by an explicit cast (f16(x)). Bool
 * is stored as uint8_t and computed as int. Integer `/` and `%` are C's
 * (truncating). Expressions are written by compiler/expr_writer.c in the C
 * dialect defined here (literals, loads, casts, the C columns of
 * IR_INTRINSICS, fmod for a float %, the i64 widening of int arithmetic).
 *
 * Names: IR names are kept when they are valid and unambiguous C. A name
 * that is a C keyword, a libc name (or ends in _t, or starts with '_'), a
 * prelude helper (tc_maxf, ...) or starts with tc__ is emitted as
 * tc__u_<name>; a binder that would shadow a visible name of another variable
 * as tc__v<id>_<name>. Temporaries the emitter invents start with tc__ too.
 * User names never start with tc_; names made by passes (tc_0, ...) stay as
 * they are, since only the tc__ prefix and the helper names are taken. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "backend.h"
#include "expr_writer.h"
#include "name_table.h"
#include "tilec.h"

typedef struct CName {
  const void *key; /* IrVar* or IrBuffer* */
  const char *name;
} CName;

typedef struct Emitter {
  const IrModule *m;
  StrBuf *out;
  Diag *diag;
  bool failed;
  Arena *arena;  /* names made by the emitter */
  CName *scope;  /* visible C names, a stack */
  int nscope, cap;
  NameTable by_key, by_name; /* hashed over scope, entry i = scope[i] (F6) */
  int ntemps;    /* counter for tc_<k> temporaries */
  bool uses_fp8; /* an FP8 conversion was written: the FP8 helpers go in */
  SrcLoc loc;    /* the statement being emitted, for diagnostics */
} Emitter;

static void fail(Emitter *E, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(Emitter *E, SrcLoc loc, const char *fmt, ...) {
  if (E->failed) return; /* one error per module: later ones are follow-ups */
  E->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (loc.line <= 0) loc = E->loc;
  diag_error(E->diag, loc, "internal error: C backend: %s", msg);
}

/* ---- Names -------------------------------------------------------------- */

/* libm and the prelude's tc_ helpers: the C columns of IR_INTRINSICS. */
static const ExprSpellings c_intrinsics[] = {
#define X(name, spelling, arity, result, fold, c_int, c_f32, c_f64, cuda_int, cuda_f32, cuda_f64) \
  {c_int, c_f32, c_f64},
    IR_INTRINSICS(X)
#undef X
};

static bool is_reserved(const char *n) {
  static const char *const words[] = {
      /* C11 keywords */
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
      "typedef", "union", "unsigned", "void", "volatile", "while",
      /* names the generated code uses or its headers may define as macros */
      "NULL", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "math_errhandling",
      "errno", "bool", "true", "false", "exp2", "exp2f", "exp", "expf", "log2", "log2f", "log",
      "logf", "sqrt", "sqrtf", "fabs", "fabsf", "fmax", "fmaxf", "fmin", "fminf", "fmod",
      "fmodf", "memcpy", "memset", "isnan", "isinf", "signbit", "fpclassify", "isfinite",
      "isnormal",
      /* the function's parameters and the prelude's helpers */
      "tc_args", "tc_dyn", "tc_f32_bits", "tc_bits_f32", "tc_f16_to_f32", "tc_f32_to_f16",
      "tc_bf16_to_f32", "tc_f32_to_bf16", "tc_round_f16", "tc_round_bf16", "tc_maxf", "tc_minf",
      "tc_maxd", "tc_mind", "tc_maxi", "tc_mini", "tc_absi", "tc_ceildiv", "tc_f2i64",
      "tc_f2i32", "tc_e4m3_to_f32", "tc_e5m2_to_f32", "tc_f32_to_e4m3", "tc_f32_to_e5m2",
      "tc_round_e4m3", "tc_round_e5m2", "tc_fp8_decode", "tc_fp8_encode"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcmp(n, words[i]) == 0) return true;
  for (int i = 0; i < IR_INTRINSIC_COUNT; i++) { /* the functions intrinsics call */
    const ExprSpellings *f = &c_intrinsics[i];
    if (strcmp(n, f->int_) == 0 || strcmp(n, f->f32) == 0 || strcmp(n, f->f64) == 0) return true;
  }
  size_t len = strlen(n);
  if (strncmp(n, "tc__", 4) == 0) return true; /* the emitter's own names */
  if (n[0] == '_' || (len >= 2 && strcmp(n + len - 2, "_t") == 0)) return true;
  /* Object-like macros of <math.h>/<stdint.h>: FP_*, M_*, INT*_MAX, ... */
  static const char *const prefixes[] = {"FP_", "M_", "INT", "UINT", "SIZE_", "PTRDIFF_",
                                         "SIG_ATOMIC_", "WCHAR_", "WINT_", "MATH_", "HUGE_"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(n, prefixes[i], strlen(prefixes[i])) == 0) return true;
  return false;
}

static bool visible(const Emitter *E, const char *name) {
  return name_table_find(&E->by_name, name) >= 0;
}

/* Leaves a scope: forgets the names bound since the stack was `height`. */
static void scope_pop(Emitter *E, int height) {
  if (E->nscope > height) E->nscope = height;
  name_table_truncate(&E->by_key, E->nscope);
  name_table_truncate(&E->by_name, E->nscope);
}

/* Declares key's C name in the current scope and returns it. */
static const char *bind(Emitter *E, const void *key, const char *user, int id) {
  const char *name = user && *user ? user : "tc__anon";
  if (is_reserved(name)) name = arena_printf(E->arena, "tc__u_%s", name);
  if (visible(E, name)) name = arena_printf(E->arena, "tc__v%d_%s", id, user ? user : "");
  E->scope = arena_grow(E->arena, E->scope, &E->cap, E->nscope + 1, sizeof(CName));
  E->scope[E->nscope++] = (CName){key, name};
  name_table_push(&E->by_key, key);
  name_table_push(&E->by_name, name);
  return name;
}

static const char *lookup(Emitter *E, const void *key, const char *user, SrcLoc loc) {
  int i = name_table_find(&E->by_key, key);
  if (i >= 0) return E->scope[i].name;
  fail(E, loc, "'%s' is used outside its scope", user ? user : "?");
  return "tc__undefined";
}

static const char *temp(Emitter *E, const char *what) {
  return arena_printf(E->arena, "tc__%s%d", what, E->ntemps++);
}

/* ---- Types -------------------------------------------------------------- */

/* The C type a value of dtype t is computed in. */
static const char *value_type(DType t) {
  switch (t) {
  case DTYPE_BOOL: return "int";
  case DTYPE_I32: return "int32_t";
  case DTYPE_I64: return "int64_t";
  case DTYPE_I8: return "int8_t";
  case DTYPE_U8: return "uint8_t";
  case DTYPE_I16: return "int16_t";
  case DTYPE_U16: return "uint16_t";
  case DTYPE_U32: return "uint32_t";
  case DTYPE_F64: return "double";
  default: return "float"; /* f16, bf16, f8e4m3, f8e5m2, f32 */
  }
}

/* The C type an element of dtype t is stored as. */
static const char *storage_type(DType t) {
  switch (t) {
  case DTYPE_BOOL: return "uint8_t";
  case DTYPE_F16: case DTYPE_BF16: return "uint16_t";
  case DTYPE_F8E4M3: case DTYPE_F8E5M2: return "uint8_t";
  default: return value_type(t);
  }
}

static bool is_int(DType t) { return dtype_is_int(t); }

/* The FP8 helpers of the C prelude (emit_c_fp8_prelude), by dtype. */
static const char *fp8_name(DType t) { return t == DTYPE_F8E4M3 ? "e4m3" : "e5m2"; }

/* ---- Constants ------------------------------------------------------------ */

/* Evaluates an integer expression made of literals and bound symbols. */
static bool eval_const(const IrExpr *e, int64_t *out, int depth) {
  if (!e || depth > 64) return false;
  int64_t a, b;
  switch (e->kind) {
  case IR_EXPR_INT:
    *out = e->u.int_value;
    return true;
  case IR_EXPR_VAR:
    return e->u.var && e->u.var->kind == IR_VAR_SYMBOL && e->u.var->bound &&
           eval_const(e->u.var->value, out, depth + 1);
  case IR_EXPR_UNARY:
    if (e->u.op.op != IR_OP_NEG || !eval_const(e->u.op.a, &a, depth + 1)) return false;
    *out = -a;
    return true;
  case IR_EXPR_BINARY:
    if (!eval_const(e->u.op.a, &a, depth + 1) || !eval_const(e->u.op.b, &b, depth + 1))
      return false;
    switch (e->u.op.op) {
    case IR_OP_ADD: *out = a + b; return true;
    case IR_OP_SUB: *out = a - b; return true;
    case IR_OP_MUL: *out = a * b; return true;
    case IR_OP_DIV: if (b == 0) return false; *out = a / b; return true;
    case IR_OP_MOD: if (b == 0) return false; *out = a % b; return true;
    default:
      if (!ir_op_is_bitop(e->u.op.op)) return false;
      *out = ir_int_bitop(e->u.op.op, a, b);
      return true;
    }
  case IR_EXPR_CALL:
    if (e->u.call.nargs != 2 || !eval_const(e->u.call.args[0], &a, depth + 1) ||
        !eval_const(e->u.call.args[1], &b, depth + 1))
      return false;
    switch (e->u.call.fn) {
    case IR_INTRINSIC_MAX: *out = a > b ? a : b; return true;
    case IR_INTRINSIC_MIN: *out = a < b ? a : b; return true;
    case IR_INTRINSIC_CEILDIV:
      if (b == 0) return false;
      *out = a / b + ((a % b != 0) && ((a < 0) == (b < 0)));
      return true;
    default: return false;
    }
  default:
    return false;
  }
}

/* Appends the literal text for a float of dtype t (without rounding to
 * f16/bf16: the caller wraps those). */
static void emit_float_literal(StrBuf *sb, double v, DType t) {
  bool f64 = t == DTYPE_F64;
  if (!f64) v = (float)v; /* an f32 literal names exactly this float */
  if (isnan(v)) {
    sb_puts(sb, "NAN");
    return;
  }
  if (isinf(v)) {
    sb_puts(sb, v < 0 ? "(-INFINITY)" : "INFINITY");
    return;
  }
  char text[64];
  snprintf(text, sizeof text, f64 ? "%.17g" : "%.9g", v);
  if (!strpbrk(text, ".e")) strcat(text, ".0");
  if (v < 0 || (v == 0 && signbit(v))) sb_printf(sb, "(%s%s)", text, f64 ? "" : "f");
  else sb_printf(sb, "%s%s", text, f64 ? "" : "f");
}

/* ---- Expressions ---------------------------------------------------------- */

static void emit_expr(Emitter *E, StrBuf *sb, const IrExpr *e);
static void emit_top(Emitter *E, StrBuf *sb, const IrExpr *e);

/* True when e's C type is narrower than int64_t (int or int32_t), so that
 * integer arithmetic on two such operands would overflow at 32 bits while the
 * IR computes in i64. */
static bool is_narrow(const IrExpr *e) {
  if (!e) return false;
  switch (e->kind) {
  case IR_EXPR_INT:
    return e->dtype == DTYPE_BOOL || (e->u.int_value >= -2147483647 && e->u.int_value <= 2147483647);
  case IR_EXPR_UNARY:
    return e->dtype != DTYPE_I64 || is_narrow(e->u.op.a);
  case IR_EXPR_SELECT:
    return is_narrow(e->u.select.then_) && is_narrow(e->u.select.else_);
  default:
    return e->dtype == DTYPE_BOOL || (dtype_is_int(e->dtype) && e->dtype != DTYPE_I64);
  }
}

/* e's value converted to dtype `to` (an explicit cast, a LET, a stored value). */
static void emit_convert(Emitter *E, StrBuf *sb, DType to, const IrExpr *e) {
  if (e && e->dtype == to) {
    emit_top(E, sb, e);
    return;
  }
  bool from_float = e && dtype_is_float(e->dtype);
  switch (to) {
  case DTYPE_F16: sb_puts(sb, "tc_round_f16((float)"); break;
  case DTYPE_BF16: sb_puts(sb, "tc_round_bf16((float)"); break;
  case DTYPE_F32: sb_puts(sb, "((float)"); break;
  case DTYPE_F64: sb_puts(sb, "((double)"); break;
  case DTYPE_I64: sb_puts(sb, from_float ? "tc_f2i64(" : "((int64_t)"); break;
  case DTYPE_I32: sb_puts(sb, from_float ? "tc_f2i32(" : "((int32_t)"); break;
  case DTYPE_BOOL: sb_puts(sb, "(0 != "); break;
  case DTYPE_I8: case DTYPE_U8: case DTYPE_I16: case DTYPE_U16: case DTYPE_U32:
    /* Through i64 (saturating from a float), then wrapped to the width. */
    sb_printf(sb, "((%s)%s", value_type(to), from_float ? "tc_f2i64(" : "(");
    emit_expr(E, sb, e);
    sb_puts(sb, "))");
    return;
  case DTYPE_F8E4M3: case DTYPE_F8E5M2:
    E->uses_fp8 = true;
    sb_printf(sb, "tc_round_%s((float)", fp8_name(to));
    break;
  default: sb_puts(sb, "("); break;
  }
  emit_expr(E, sb, e);
  sb_puts(sb, ")");
}

/* The element `buf[idx...]` as an lvalue of its storage type. */
static void emit_element(Emitter *E, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx,
                         int nidx, SrcLoc loc) {
  if (!b) {
    fail(E, loc, "access to a NULL buffer");
    return;
  }
  if (nidx != b->rank) {
    fail(E, loc, "'%s' indexed with %d indices, but it has rank %d", b->name, nidx, b->rank);
    return;
  }
  sb_puts(sb, lookup(E, b, b->name, loc));
  if (b->scope != IR_SCOPE_GLOBAL) {
    if (b->rank == 0) sb_puts(sb, "[0]");
    for (int d = 0; d < b->rank; d++) {
      sb_puts(sb, "[");
      emit_expr(E, sb, idx[d]);
      sb_puts(sb, "]");
    }
    return;
  }
  if (b->strides) {
    /* Declared strides: i0 * s0 + i1 * s1 + ... + i_last (its stride is 1). */
    sb_puts(sb, "[");
    for (int d = 0; d < b->rank; d++) {
      if (d > 0) sb_puts(sb, " + ");
      emit_expr(E, sb, idx[d]);
      if (d < b->rank - 1) {
        sb_puts(sb, " * ");
        emit_expr(E, sb, b->strides[d]);
      }
    }
    sb_puts(sb, "]");
    return;
  }
  /* Row-major flat index, Horner form: ((i0 * d1 + i1) * d2 + i2). */
  sb_puts(sb, "[");
  if (b->rank == 0) sb_puts(sb, "0");
  for (int d = 1; d < b->rank; d++) sb_puts(sb, "(");
  for (int d = 0; d < b->rank; d++) {
    if (d > 0) {
      sb_puts(sb, " * ");
      emit_expr(E, sb, b->shape[d]);
      sb_puts(sb, " + ");
    }
    emit_expr(E, sb, idx[d]);
    if (d > 0) sb_puts(sb, ")");
  }
  sb_puts(sb, "]");
}

/* ---- The C dialect of expressions (compiler/expr_writer.h) ---------------- */

/* Broken IR is reported here, before anything of the node is written. */
static bool c_check(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  Emitter *E = w->ctx;
  if (E->failed) return false;
  if (!e) {
    fail(E, E->loc, "NULL expression");
    return false;
  }
  switch (e->kind) {
  case IR_EXPR_INT: case IR_EXPR_FLOAT: case IR_EXPR_UNARY: case IR_EXPR_SELECT: case IR_EXPR_LOAD:
    return true;
  case IR_EXPR_VAR:
    if (!e->u.var) fail(E, e->loc, "variable reference with no variable");
    return !E->failed;
  case IR_EXPR_BINARY:
    if (ir_op_arity(e->u.op.op) != 2)
      fail(E, e->loc, "binary expression with operator '%s'", ir_op_name(e->u.op.op));
    return !E->failed;
  case IR_EXPR_CALL:
    if ((unsigned)e->u.call.fn >= IR_INTRINSIC_COUNT)
      fail(E, e->loc, "unknown intrinsic %d", (int)e->u.call.fn);
    else if (e->u.call.nargs != ir_intrinsic_arity(e->u.call.fn))
      fail(E, e->loc, "%s called with %d arguments", ir_intrinsic_name(e->u.call.fn), e->u.call.nargs);
    return !E->failed;
  case IR_EXPR_CAST:
    if (!e->u.cast_src) fail(E, e->loc, "cast of a NULL expression");
    return !E->failed;
  default:
    fail(E, e->loc, "bad expression kind %d", (int)e->kind);
    return false;
  }
}

static void c_int_literal(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  if (e->dtype == DTYPE_BOOL) sb_puts(sb, e->u.int_value ? "1" : "0");
  else if (e->u.int_value == INT64_MIN) sb_puts(sb, "(-INT64_MAX - 1)");
  else if (e->u.int_value < 0) sb_printf(sb, "(%lld)", (long long)e->u.int_value);
  else sb_printf(sb, "%lld", (long long)e->u.int_value);
}

static void c_float_literal(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  if (dtype_is_fp8(e->dtype)) {
    ((Emitter *)w->ctx)->uses_fp8 = true;
    sb_printf(sb, "tc_round_%s(", fp8_name(e->dtype));
    emit_float_literal(sb, e->u.float_value, DTYPE_F32);
    sb_puts(sb, ")");
  } else if (e->dtype == DTYPE_F16 || e->dtype == DTYPE_BF16) {
    sb_puts(sb, e->dtype == DTYPE_F16 ? "tc_round_f16(" : "tc_round_bf16(");
    emit_float_literal(sb, e->u.float_value, DTYPE_F32);
    sb_puts(sb, ")");
  } else {
    emit_float_literal(sb, e->u.float_value, e->dtype);
  }
}

static void c_var(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  sb_puts(sb, lookup(w->ctx, e->u.var, e->u.var->name, e->loc));
}

/* f16/bf16 elements are bit patterns and bools bytes: loads widen them. */
static void c_load(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  const IrBuffer *b = e->u.load.buf;
  DType t = b ? b->dtype : e->dtype;
  const char *wrap = t == DTYPE_F16 ? "tc_f16_to_f32(" : t == DTYPE_BF16 ? "tc_bf16_to_f32("
                   : t == DTYPE_F8E4M3 ? "tc_e4m3_to_f32(" : t == DTYPE_F8E5M2 ? "tc_e5m2_to_f32("
                   : t == DTYPE_BOOL ? "((int)" : NULL;
  if (dtype_is_fp8(t)) ((Emitter *)w->ctx)->uses_fp8 = true;
  if (wrap) sb_puts(sb, wrap);
  emit_element(w->ctx, sb, b, e->u.load.idx, e->u.load.nidx, e->loc);
  if (wrap) sb_puts(sb, ")");
}

static void c_cast(const ExprWriter *w, StrBuf *sb, const IrExpr *e) {
  emit_convert(w->ctx, sb, e->dtype, e->u.cast_src);
}

static const char *c_intrinsic(const ExprWriter *w, const IrExpr *e) {
  return expr_spelling(&c_intrinsics[e->u.call.fn], e->dtype);
}

/* C has no % for floats; shifts take their count modulo 64 and shift the
 * unsigned bits left (C leaves counts >= 64 and negative left shifts
 * undefined); >> of a negative int64_t is arithmetic in gcc and clang. */
static const char *c_binary_call(const ExprWriter *w, const IrExpr *e) {
  if (e->u.op.op == IR_OP_SHL) return "((int64_t)((uint64_t)($0) << (($1) & 63)))";
  if (e->u.op.op == IR_OP_SHR) return "((int64_t)($0) >> (($1) & 63))";
  if (e->u.op.op != IR_OP_MOD || !dtype_is_float(e->dtype)) return NULL;
  return e->dtype == DTYPE_F64 ? "fmod" : "fmodf";
}

/* Integer arithmetic is i64 in the IR: widen when C would compute in int. */
static const char *c_binary_prefix(const ExprWriter *w, const IrExpr *e) {
  IrOp op = e->u.op.op;
  bool arith = op == IR_OP_ADD || op == IR_OP_SUB || op == IR_OP_MUL || op == IR_OP_DIV ||
               op == IR_OP_MOD || op == IR_OP_BAND || op == IR_OP_BOR || op == IR_OP_XOR;
  return arith && e->dtype == DTYPE_I64 && is_narrow(e->u.op.a) && is_narrow(e->u.op.b)
             ? "(int64_t)" : "";
}

static const ExprDialect c_dialect = {
    .minimal_parens = false,
    .select = {"(", " ? ", " : ", ")"},
    .check = c_check,
    .int_literal = c_int_literal,
    .float_literal = c_float_literal,
    .var = c_var,
    .load = c_load,
    .cast = c_cast,
    .intrinsic = c_intrinsic,
    .binary_call = c_binary_call,
    .binary_prefix = c_binary_prefix,
};

static void emit_expr(Emitter *E, StrBuf *sb, const IrExpr *e) {
  ExprWriter w = {&c_dialect, E};
  expr_write(&w, sb, e);
}

/* e as a full expression (an if condition, an initializer, a stored value):
 * the outer parentheses emit_expr puts around an operator are dropped. */
static void emit_top(Emitter *E, StrBuf *sb, const IrExpr *e) {
  StrBuf t;
  sb_init(&t);
  emit_expr(E, &t, e);
  const char *s = t.data ? t.data : "";
  size_t n = t.len;
  bool strip = n >= 2 && s[0] == '(' && s[n - 1] == ')';
  for (size_t i = 0, depth = 0; strip && i < n; i++) { /* does s[0] close at s[n-1]? */
    if (s[i] == '(') depth++;
    else if (s[i] == ')' && --depth == 0 && i != n - 1) strip = false;
  }
  if (strip) sb_putn(sb, s + 1, n - 2);
  else sb_putn(sb, s, n);
  sb_free(&t);
}

/* ---- Statements ----------------------------------------------------------- */

static void emit_stmt(Emitter *E, const IrStmt *s, int depth);

static void line(Emitter *E, int depth) { sb_indent(E->out, depth); }

/* The items of a SEQ (or a lone statement) in a C scope opened by the caller. */
static void emit_items(Emitter *E, const IrStmt *s, int depth) {
  if (!s) {
    fail(E, E->loc, "NULL statement list");
    return;
  }
  int saved = E->nscope;
  if (s->kind == IR_STMT_SEQ) {
    for (int i = 0; i < s->u.seq.n && !E->failed; i++) emit_stmt(E, s->u.seq.items[i], depth);
  } else {
    emit_stmt(E, s, depth);
  }
  scope_pop(E, saved);
}

static void emit_alloc(Emitter *E, const IrBuffer *b, SrcLoc loc, int depth) {
  if (!b) {
    fail(E, loc, "alloc of a NULL buffer");
    return;
  }
  if (b->scope == IR_SCOPE_GLOBAL) {
    fail(E, loc, "alloc of '%s' in global memory", b->name);
    return;
  }
  int64_t dims[IR_MAX_RANK];
  int64_t total = 1;
  for (int d = 0; d < b->rank; d++) {
    if (!eval_const(b->shape[d], &dims[d], 0) || dims[d] <= 0) {
      fail(E, loc, "buffer '%s' has a non-constant or non-positive dimension %d "
                   "(specialization did not run?)", b->name, d);
      return;
    }
    total *= dims[d];
    if (total > ((int64_t)1 << 28)) {
      fail(E, loc, "buffer '%s' is too large for a C local array", b->name);
      return;
    }
  }
  const char *name = bind(E, b, b->name, b->id);
  line(E, depth);
  sb_printf(E->out, "%s %s", storage_type(b->dtype), name);
  if (b->rank == 0) sb_puts(E->out, "[1]");
  for (int d = 0; d < b->rank; d++) sb_printf(E->out, "[%lld]", (long long)dims[d]);
  sb_printf(E->out, "; /* %s */\n", ir_scope_name(b->scope));
  /* Zeroed: a read before the first write is then the same on every run
   * (and not undefined behaviour). */
  line(E, depth);
  sb_printf(E->out, "memset(%s, 0, sizeof %s);\n", name, name);
}

static void emit_stmt(Emitter *E, const IrStmt *s, int depth) {
  if (E->failed) return;
  if (!s) {
    fail(E, E->loc, "NULL statement");
    return;
  }
  if (s->loc.line > 0) E->loc = s->loc;
  StrBuf *o = E->out;
  switch (s->kind) {
  case IR_STMT_SEQ:
    line(E, depth);
    sb_puts(o, "{\n");
    emit_items(E, s, depth + 1);
    line(E, depth);
    sb_puts(o, "}\n");
    return;
  case IR_STMT_ALLOC:
    emit_alloc(E, s->u.alloc, s->loc, depth);
    return;
  case IR_STMT_LET: {
    const IrVar *v = s->u.let.var;
    if (!v) {
      fail(E, s->loc, "let without a variable");
      return;
    }
    StrBuf value;
    sb_init(&value);
    emit_convert(E, &value, v->dtype, s->u.let.value); /* before the name exists */
    const char *name = bind(E, v, v->name, v->id);
    line(E, depth);
    sb_printf(o, "const %s %s = %s;\n", value_type(v->dtype), name, value.data ? value.data : "");
    line(E, depth);
    sb_printf(o, "(void)%s;\n", name);
    sb_free(&value);
    return;
  }
  case IR_STMT_STORE: {
    const IrBuffer *b = s->u.store.buf;
    line(E, depth);
    emit_element(E, o, b, s->u.store.idx, s->u.store.nidx, s->loc);
    if (E->failed) return;
    if (s->u.store.atomic) {
      /* The element form of atomic_add (an f32 element): blocks run one
       * at a time, so a plain addition. */
      sb_puts(o, " += ");
      emit_convert(E, o, DTYPE_F32, s->u.store.value);
      sb_puts(o, ";\n");
      return;
    }
    sb_puts(o, " = ");
    if (dtype_is_low_float(b->dtype)) {
      /* Storing rounds: an explicit cast to the same type adds nothing. */
      const IrExpr *v = s->u.store.value;
      if (v && v->kind == IR_EXPR_CAST && v->dtype == b->dtype && v->u.cast_src) v = v->u.cast_src;
      if (dtype_is_fp8(b->dtype) && v && v->kind == IR_EXPR_LOAD && v->u.load.buf &&
          v->u.load.buf->dtype == b->dtype) { /* a copy of the same FP8 type: the byte itself */
        emit_element(E, o, v->u.load.buf, v->u.load.idx, v->u.load.nidx, v->loc);
        sb_puts(o, ";\n");
        return;
      }
      if (dtype_is_fp8(b->dtype)) {
        E->uses_fp8 = true;
        sb_printf(o, "tc_f32_to_%s((float)", fp8_name(b->dtype));
      } else {
        sb_puts(o, b->dtype == DTYPE_F16 ? "tc_f32_to_f16((float)" : "tc_f32_to_bf16((float)");
      }
      emit_expr(E, o, v);
      sb_puts(o, ")");
    } else if (b->dtype == DTYPE_BOOL) {
      sb_puts(o, "(uint8_t)(0 != ");
      emit_expr(E, o, s->u.store.value);
      sb_puts(o, ")");
    } else {
      emit_convert(E, o, b->dtype, s->u.store.value);
    }
    sb_puts(o, ";\n");
    return;
  }
  case IR_STMT_ATOMIC_FETCH_ADD: {
    /* old = atomic_add(G[i], v): blocks run one at a time, in grid order,
     * so a plain read-modify-write (i32 wraps as the GPU's atomicAdd does);
     * outside the tensor (guard false) nothing is added and old is 0. */
    const IrBuffer *b = s->u.store.buf;
    const IrVar *v = s->u.store.result;
    if (!v) {
      fail(E, s->loc, "atomic_fetch_add without a result");
      return;
    }
    const char *ty = value_type(b->dtype), *old = temp(E, "old");
    StrBuf elem, add, guard;
    sb_init(&elem), sb_init(&add), sb_init(&guard);
    emit_element(E, &elem, b, s->u.store.idx, s->u.store.nidx, s->loc);
    emit_convert(E, &add, b->dtype, s->u.store.value);
    if (s->u.store.guard) emit_top(E, &guard, s->u.store.guard);
    if (E->failed) return;
    line(E, depth);
    sb_printf(o, "%s %s = 0;\n", ty, old);
    line(E, depth);
    if (s->u.store.guard) sb_printf(o, "if (%s) ", guard.data);
    if (b->dtype == DTYPE_I32)
      sb_printf(o, "{ %s = %s; %s = (int32_t)((uint32_t)%s + (uint32_t)(%s)); }\n", old, elem.data, elem.data, old,
                add.data);
    else
      sb_printf(o, "{ %s = %s; %s = %s + (%s); }\n", old, elem.data, elem.data, old, add.data);
    sb_free(&elem), sb_free(&add), sb_free(&guard);
    const char *name = bind(E, v, v->name, v->id);
    line(E, depth);
    sb_printf(o, "const %s %s = %s;\n", value_type(v->dtype), name, old);
    line(E, depth);
    sb_printf(o, "(void)%s;\n", name);
    return;
  }
  case IR_STMT_FOR: {
    const IrVar *v = s->u.for_.var;
    if (!v) {
      fail(E, s->loc, "for without a variable");
      return;
    }
    int64_t n;
    StrBuf extent;
    sb_init(&extent);
    if (ir_expr_is_int_const(s->u.for_.extent, &n)) {
      sb_printf(&extent, "%lld", (long long)n);
    } else {
      /* Evaluated once, before the loop variable exists (it may share a name
       * with a variable the extent uses). */
      const char *t = temp(E, "n");
      StrBuf value;
      sb_init(&value);
      emit_convert(E, &value, DTYPE_I64, s->u.for_.extent);
      line(E, depth);
      sb_printf(o, "const int64_t %s = %s;\n", t, value.data ? value.data : "");
      sb_free(&value);
      sb_puts(&extent, t);
    }
    int saved = E->nscope;
    const char *name = bind(E, v, v->name, v->id);
    const char *ty = is_int(v->dtype) ? value_type(v->dtype) : "int64_t";
    line(E, depth);
    sb_printf(o, "for (%s %s = 0; %s < %s; %s++) { /* %s", ty, name, name,
              extent.data ? extent.data : "0", name, ir_for_kind_name(s->u.for_.kind));
    if (s->u.for_.kind == IR_FOR_PIPELINED)
      sb_printf(o, ", num_stages = %d", s->u.for_.num_stages);
    sb_puts(o, " */\n");
    sb_free(&extent);
    emit_items(E, s->u.for_.body, depth + 1);
    scope_pop(E, saved);
    line(E, depth);
    sb_puts(o, "}\n");
    return;
  }
  case IR_STMT_IF:
    line(E, depth);
    sb_puts(o, "if (");
    emit_top(E, o, s->u.if_.cond);
    sb_puts(o, ") {\n");
    emit_items(E, s->u.if_.then_, depth + 1);
    if (s->u.if_.else_) {
      line(E, depth);
      sb_puts(o, "} else {\n");
      emit_items(E, s->u.if_.else_, depth + 1);
    }
    line(E, depth);
    sb_puts(o, "}\n");
    return;
  case IR_STMT_BARRIER:
    line(E, depth);
    sb_puts(o, "/* barrier: one CPU thread runs the block */\n");
    return;
  case IR_STMT_ANNOTATE_LAYOUT:
    line(E, depth);
    sb_printf(o, "/* annotate_layout(%s): no effect on the CPU */\n",
              s->u.annotate.buf ? s->u.annotate.buf->name : "?");
    return;
  case IR_STMT_USE_SWIZZLE:
    line(E, depth);
    sb_puts(o, "/* use_swizzle: every block runs; the order does not matter */\n");
    return;
  case IR_STMT_COPY: case IR_STMT_FILL: case IR_STMT_GEMM: case IR_STMT_REDUCE: case IR_STMT_ATOMIC_ADD:
    fail(E, s->loc, "'%s' was not lowered (lower-tile-ops must run before the C backend)",
         ir_stmt_kind_name(s->kind));
    return;
  default:
    fail(E, s->loc, "bad statement kind %d", (int)s->kind);
    return;
  }
}

/* ---- Kernels -------------------------------------------------------------- */

static void emit_kernel(Emitter *E, const IrKernel *k) {
  StrBuf *o = E->out;
  scope_pop(E, 0);
  E->loc = k->loc;
  if (!k->name || !k->body) {
    fail(E, k->loc, "kernel without a name or a body");
    return;
  }
  if (k->ngrid < 1 || k->ngrid > IR_MAX_GRID) {
    fail(E, k->loc, "kernel '%s' has %d grid dimensions", k->name, k->ngrid);
    return;
  }
  sb_printf(o, "\n/* kernel %s */\n", k->name);
  ir_print_kernel_config(o, "//", k); /* which target_sm-dependent defaults were chosen */
  sb_printf(o, "void tilec_%s(void **tc_args, const int64_t *tc_dyn) {\n", k->name);
  sb_puts(o, "  (void)tc_args;\n  (void)tc_dyn;\n");

  /* Symbols: dynamic ones from tc_dyn, bound ones as constants. */
  for (int i = 0; i < k->nsymbols && !E->failed; i++) {
    const IrVar *v = k->symbols[i];
    if (!v) {
      fail(E, k->loc, "kernel '%s': NULL symbol", k->name);
      return;
    }
    StrBuf value;
    sb_init(&value);
    if (!v->bound && v->dynamic_index >= 0) {
      sb_printf(&value, "tc_dyn[%d]", v->dynamic_index);
    } else if (v->bound || v->default_value) {
      emit_convert(E, &value, v->dtype, v->bound ? v->value : v->default_value);
    } else {
      sb_free(&value);
      fail(E, v->loc, "symbol '%s' is neither bound nor dynamic (specialization did not run?)",
           v->name);
      return;
    }
    const char *name = bind(E, v, v->name, v->id);
    const char *ty = v->dynamic_index >= 0 && !v->bound ? "int64_t" : value_type(v->dtype);
    sb_printf(o, "  const %s %s = %s;\n  (void)%s;\n", ty, name, value.data ? value.data : "0",
              name);
    sb_free(&value);
  }

  /* Parameters: tensors as typed pointers, scalars by value. */
  for (int i = 0; i < k->nparams && !E->failed; i++) {
    const IrParam *p = &k->params[i];
    if (p->is_tensor && p->buffer) {
      const IrBuffer *b = p->buffer;
      const char *name = bind(E, b, b->name, b->id);
      const char *ty = storage_type(b->dtype);
      sb_printf(o, "  %s *restrict %s = (%s *)tc_args[%d];\n  (void)%s;\n", ty, name, ty, i,
                name);
    } else if (!p->is_tensor && p->scalar) {
      const IrVar *v = p->scalar;
      const char *name = bind(E, v, v->name, v->id);
      switch (v->dtype) {
      case DTYPE_F16: case DTYPE_BF16:
        sb_printf(o, "  const float %s = tc_%s_to_f32(*(const uint16_t *)tc_args[%d]);\n", name,
                  v->dtype == DTYPE_F16 ? "f16" : "bf16", i);
        break;
      case DTYPE_BOOL:
        sb_printf(o, "  const int %s = 0 != *(const unsigned char *)tc_args[%d];\n", name, i);
        break;
      default:
        sb_printf(o, "  const %s %s = *(const %s *)tc_args[%d];\n", value_type(v->dtype), name,
                  value_type(v->dtype), i);
        break;
      }
      sb_printf(o, "  (void)%s;\n", name);
    } else {
      fail(E, p->loc, "parameter '%s' has no buffer or variable", p->name ? p->name : "?");
      return;
    }
  }

  /* The grid, evaluated once; then one block per grid point. */
  const char *gname[IR_MAX_GRID];
  for (int d = 0; d < k->ngrid && !E->failed; d++) {
    gname[d] = temp(E, "grid");
    StrBuf value;
    sb_init(&value);
    emit_convert(E, &value, DTYPE_I64, k->grid[d]);
    sb_printf(o, "  const int64_t %s = %s;\n", gname[d], value.data ? value.data : "0");
    sb_free(&value);
  }
  if (E->failed) return;
  int depth = 1;
  for (int d = k->ngrid - 1; d >= 0; d--) {
    const IrVar *bv = k->block_vars[d];
    const char *name = bv ? bind(E, bv, bv->name, bv->id) : temp(E, "block");
    line(E, depth);
    sb_printf(o, "for (int64_t %s = 0; %s < %s; %s++) {\n", name, name, gname[d], name);
    depth++;
  }
  emit_items(E, k->body, depth);
  for (int d = 0; d < k->ngrid; d++) {
    line(E, --depth);
    sb_puts(o, "}\n");
  }
  sb_puts(o, "}\n");
}

/* ---- Prelude -------------------------------------------------------------- */

/* The helpers, as C text. Written for clarity over speed: they run on the
 * CPU reference path, where correctness of every bit is what matters. */
static const char prelude[] =
    "/* Helpers may go unused; clang would warn about that in a .c file. */\n"
    "#if defined(__GNUC__) || defined(__clang__)\n"
    "#define tc__helper static inline __attribute__((unused))\n"
    "#else\n"
    "#define tc__helper static inline\n"
    "#endif\n"
    "tc__helper uint32_t tc_f32_bits(float x) {\n"
    "  uint32_t u;\n"
    "  memcpy(&u, &x, sizeof u);\n"
    "  return u;\n"
    "}\n"
    "tc__helper float tc_bits_f32(uint32_t u) {\n"
    "  float x;\n"
    "  memcpy(&x, &u, sizeof x);\n"
    "  return x;\n"
    "}\n"
    "/* f16 -> f32 is exact: normals rebias the exponent, subnormals are\n"
    " * mantissa * 2^-24, inf/nan keep their payload. */\n"
    "tc__helper float tc_f16_to_f32(uint16_t h) {\n"
    "  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;\n"
    "  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  if (e == 0x1fu) return tc_bits_f32(sign | 0x7f800000u | (m << 13));\n"
    "  if (e != 0) return tc_bits_f32(sign | ((e + 112u) << 23) | (m << 13));\n"
    "  float v = (float)m * 0x1p-24f;\n"
    "  return sign ? -v : v;\n"
    "}\n"
    "/* f32 -> f16, round to nearest even; overflow gives inf, nan stays a\n"
    " * quiet nan, results below 2^-14 become subnormals (or zero). */\n"
    "tc__helper uint16_t tc_f32_to_f16(float f) {\n"
    "  uint32_t x = tc_f32_bits(f);\n"
    "  uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;\n"
    "  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));\n"
    "  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 */\n"
    "  if (ax >= 0x38800000u) { /* normal f16: rebias, round 13 bits away */\n"
    "    uint32_t r = ax - 0x38000000u;\n"
    "    r += 0xfffu + ((r >> 13) & 1u);\n"
    "    return (uint16_t)(sign | (r >> 13));\n"
    "  }\n"
    "  uint32_t e = ax >> 23;\n"
    "  if (e < 102u) return (uint16_t)sign; /* below half the smallest subnormal */\n"
    "  uint32_t m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e; /* 14..24 */\n"
    "  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);\n"
    "  if (rem > half || (rem == half && (q & 1u))) q++;\n"
    "  return (uint16_t)(sign | q);\n"
    "}\n"
    "tc__helper float tc_bf16_to_f32(uint16_t h) { return tc_bits_f32((uint32_t)h << 16); }\n"
    "/* f32 -> bf16, round to nearest even; nan stays a quiet nan. */\n"
    "tc__helper uint16_t tc_f32_to_bf16(float f) {\n"
    "  uint32_t x = tc_f32_bits(f);\n"
    "  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);\n"
    "  x += 0x7fffu + ((x >> 16) & 1u);\n"
    "  return (uint16_t)(x >> 16);\n"
    "}\n"
    "tc__helper float tc_round_f16(float x) { return tc_f16_to_f32(tc_f32_to_f16(x)); }\n"
    "tc__helper float tc_round_bf16(float x) { return tc_bf16_to_f32(tc_f32_to_bf16(x)); }\n"
    "/* fmax/fmin order -inf below everything and ignore a nan operand. */\n"
    "tc__helper float tc_maxf(float a, float b) { return fmaxf(a, b); }\n"
    "tc__helper float tc_minf(float a, float b) { return fminf(a, b); }\n"
    "tc__helper double tc_maxd(double a, double b) { return fmax(a, b); }\n"
    "tc__helper double tc_mind(double a, double b) { return fmin(a, b); }\n"
    "tc__helper int64_t tc_maxi(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "tc__helper int64_t tc_mini(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "tc__helper int64_t tc_absi(int64_t a) { return a < 0 ? -a : a; }\n"
    "/* Rounds the quotient toward +infinity, for any signs. */\n"
    "tc__helper int64_t tc_ceildiv(int64_t a, int64_t b) {\n"
    "  int64_t q = a / b;\n"
    "  return q + ((a % b != 0) && ((a < 0) == (b < 0)));\n"
    "}\n"
    "/* float -> int saturates and maps nan to 0 (C leaves those undefined). */\n"
    "tc__helper int64_t tc_f2i64(double x) {\n"
    "  if (x != x) return 0;\n"
    "  if (x >= 9223372036854775807.0) return INT64_MAX;\n"
    "  if (x <= -9223372036854775808.0) return INT64_MIN;\n"
    "  return (int64_t)x;\n"
    "}\n"
    "tc__helper int32_t tc_f2i32(double x) {\n"
    "  if (x != x) return 0;\n"
    "  if (x >= 2147483647.0) return INT32_MAX;\n"
    "  if (x <= -2147483648.0) return INT32_MIN;\n"
    "  return (int32_t)x;\n"
    "}\n"
    "#undef tc__helper\n";

void emit_c_prelude(StrBuf *out) { sb_puts(out, prelude); }

/* FP8 (OCP 8-bit floating point, v1.0): E4M3FN (bias 7, no infinities, the
 * NaN S.1111.111, largest 448) and E5M2 (bias 15, IEEE-like: infinities and
 * NaNs, largest 57344). Decoding is exact. Encoding rounds to nearest, ties
 * to even, with subnormals, and saturates like CUDA's __NV_SATFINITE and
 * PTX cvt.rn.satfinite: a finite value or an infinity beyond the largest
 * finite gives +-largest; a NaN gives 0x7F (a NaN in both formats).
 * Emitted only into modules that convert to or from FP8, so other kernels'
 * C is unchanged; docs/language.md ("FP8") says the same. */
static const char fp8_prelude[] =
    "/* FP8 (OCP E4M3FN, E5M2): decode exactly; encode round-to-nearest-even,\n"
    " * saturating to the largest finite, NaN -> 0x7F. */\n"
    "#if defined(__GNUC__) || defined(__clang__)\n"
    "#define tc__helper static inline __attribute__((unused))\n"
    "#else\n"
    "#define tc__helper static inline\n"
    "#endif\n"
    "tc__helper float tc_fp8_decode(uint8_t b, int mbits, int bias, int has_inf) {\n"
    "  int ebits = 7 - mbits, e = (b >> mbits) & ((1 << ebits) - 1), m = b & ((1 << mbits) - 1);\n"
    "  float s = (b & 0x80u) ? -1.0f : 1.0f;\n"
    "  if (has_inf && e == (1 << ebits) - 1) return m ? NAN : s * INFINITY;\n"
    "  if (!has_inf && e == (1 << ebits) - 1 && m == (1 << mbits) - 1) return NAN;\n"
    "  if (e == 0) return s * ldexpf((float)m, 1 - bias - mbits);\n"
    "  return s * ldexpf((float)(m | (1 << mbits)), e - bias - mbits);\n"
    "}\n"
    "tc__helper uint8_t tc_fp8_encode(float f, int mbits, int bias, float maxv) {\n"
    "  if (f != f) return 0x7Fu;\n"
    "  uint8_t sign = signbit(f) ? 0x80u : 0u;\n"
    "  double a = fabs((double)f);\n"
    "  if (a == 0.0) return sign;\n"
    "  if (a > (double)maxv) a = (double)maxv; /* saturate (also infinities) */\n"
    "  int emin = 1 - bias, e;\n"
    "  (void)frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */\n"
    "  int qe = (e - 1 < emin ? emin : e - 1) - mbits; /* the quantum's exponent */\n"
    "  double t = ldexp(a, -qe), fl = floor(t), rem = t - fl; /* exact: powers of 2 */\n"
    "  if (rem > 0.5 || (rem == 0.5 && fmod(fl, 2.0) != 0.0)) fl += 1.0;\n"
    "  double r = ldexp(fl, qe);\n"
    "  if (r == 0.0) return sign;\n"
    "  (void)frexp(r, &e);\n"
    "  if (e - 1 < emin) return (uint8_t)(sign | (uint8_t)ldexp(r, bias - 1 + mbits));\n"
    "  int mant = (int)ldexp(r, mbits - (e - 1)) - (1 << mbits);\n"
    "  return (uint8_t)(sign | ((e - 1 + bias) << mbits) | mant);\n"
    "}\n"
    "tc__helper float tc_e4m3_to_f32(uint8_t b) { return tc_fp8_decode(b, 3, 7, 0); }\n"
    "tc__helper float tc_e5m2_to_f32(uint8_t b) { return tc_fp8_decode(b, 2, 15, 1); }\n"
    "tc__helper uint8_t tc_f32_to_e4m3(float f) { return tc_fp8_encode(f, 3, 7, 448.0f); }\n"
    "tc__helper uint8_t tc_f32_to_e5m2(float f) { return tc_fp8_encode(f, 2, 15, 57344.0f); }\n"
    "tc__helper float tc_round_e4m3(float x) { return tc_e4m3_to_f32(tc_f32_to_e4m3(x)); }\n"
    "tc__helper float tc_round_e5m2(float x) { return tc_e5m2_to_f32(tc_f32_to_e5m2(x)); }\n"
    "#undef tc__helper\n";

void emit_c_fp8_prelude(StrBuf *out) { sb_puts(out, fp8_prelude); }

/* The source file name inside a C comment: no "*" "/" and no control bytes. */
static void put_comment_text(StrBuf *sb, const char *s) {
  for (; s && *s; s++) {
    char c = *s;
    if ((unsigned char)c < 0x20 || (c == '*' && s[1] == '/')) c = '?';
    sb_putn(sb, &c, 1);
  }
}

bool emit_c_module(const IrModule *m, StrBuf *out, Diag *diag) {
  Emitter E = {0};
  E.m = m;
  E.diag = diag;
  E.arena = arena_create();
  name_table_init(&E.by_key, E.arena, NAME_KEY_POINTER);
  name_table_init(&E.by_name, E.arena, NAME_KEY_STRING);
  StrBuf body; /* built aside, so a failure appends nothing to out */
  sb_init(&body);
  E.out = &body;

  sb_puts(&body, "/* Generated by tilec " TILEC_VERSION_STRING " from ");
  put_comment_text(&body, m && m->file ? m->file : "<input>");
  sb_puts(&body, ". Do not edit.\n"
                 " * ABI (compiler/include/tilec.h): void tilec_<kernel>(void **args, "
                 "const int64_t *dyn);\n"
                 " * Tensor arguments must not overlap (they are restrict). "
                 "Link with -lm. */\n"
                 "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n");
  emit_c_prelude(&body);
  StrBuf kernels; /* after the prelude, which depends on what they use */
  sb_init(&kernels);
  E.out = &kernels;
  for (int i = 0; m && i < m->nkernels && !E.failed; i++) {
    if (!m->kernels[i]) {
      fail(&E, E.loc, "NULL kernel");
      break;
    }
    emit_kernel(&E, m->kernels[i]);
  }
  if (E.uses_fp8) emit_c_fp8_prelude(&body);
  sb_putn(&body, kernels.data ? kernels.data : "", kernels.len);
  sb_free(&kernels);
  bool ok = !E.failed;
  if (ok) sb_putn(out, body.data, body.len);
  sb_free(&body);
  arena_destroy(E.arena);
  return ok;
}
