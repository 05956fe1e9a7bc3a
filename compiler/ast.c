/* ast.c - AST constructors and printing an expression back to .tile syntax.
 *
 * The parser (grammar/tile.y) builds the tree; this file only allocates nodes
 * in the Arena and prints expressions for diagnostics. The printer puts
 * parentheses only where precedence needs them, so `(a + b) * c` prints as
 * written and `a + b * c` gets none. */
#include "ast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

const char *ast_op_spelling(AstOp op) {
  static const char *const spelling[] = {
#define X(name, text) text,
      AST_OPS(X)
#undef X
  };
  if ((int)op < 0 || op >= AST_OP_COUNT) return "?";
  return spelling[op];
}

AstExpr *ast_expr_new(Arena *arena, AstExprKind kind, SrcLoc loc) {
  AstExpr *e = ARENA_NEW(arena, AstExpr);
  e->kind = kind;
  e->loc = loc;
  return e;
}

AstStmt *ast_stmt_new(Arena *arena, AstStmtKind kind, SrcLoc loc) {
  AstStmt *s = ARENA_NEW(arena, AstStmt);
  s->kind = kind;
  s->loc = loc;
  return s;
}

/* Binding strength, as in the grammar (C's): ?: 1, || 2, && 3, | 4, ^ 5,
 * & 6, == != 7, < <= > >= 8, << >> 9, + - 10, * / % 11, unary 12, postfix
 * and primaries 13. */
enum { PREC_TERNARY = 1, PREC_UNARY = 12, PREC_POSTFIX = 13 };

static int ast_binary_prec(AstOp op) {
  switch (op) {
  case AST_OP_OR: return 2;
  case AST_OP_AND: return 3;
  case AST_OP_BOR: return 4;
  case AST_OP_XOR: return 5;
  case AST_OP_BAND: return 6;
  case AST_OP_EQ: case AST_OP_NE: return 7;
  case AST_OP_LT: case AST_OP_LE: case AST_OP_GT: case AST_OP_GE: return 8;
  case AST_OP_SHL: case AST_OP_SHR: return 9;
  case AST_OP_ADD: case AST_OP_SUB: return 10;
  case AST_OP_MUL: case AST_OP_DIV: case AST_OP_MOD: return 11;
  default: return PREC_UNARY;
  }
}

static int ast_prec(const AstExpr *e) {
  switch (e->kind) {
  case AST_EXPR_TERNARY: return PREC_TERNARY;
  case AST_EXPR_BINARY: return ast_binary_prec(e->u.op.op);
  case AST_EXPR_UNARY: return PREC_UNARY;
  default: return PREC_POSTFIX;
  }
}

/* Shortest text that reads back as the same double, always with a '.' or an
 * exponent so it reads back as a float. */
static void ast_put_float(StrBuf *sb, double v) {
  if (isinf(v)) {
    sb_puts(sb, v < 0 ? "-inf" : "inf");
    return;
  }
  if (isnan(v)) {
    sb_puts(sb, "nan");
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".e")) strcat(buf, ".0");
  sb_puts(sb, buf);
}

static void ast_put(StrBuf *sb, const AstExpr *e, int min_prec);

static void ast_put_args(StrBuf *sb, const AstArg *a) {
  for (; a; a = a->next) {
    if (a->keyword) sb_printf(sb, "%s = ", a->keyword);
    ast_put(sb, a->value, PREC_TERNARY);
    if (a->next) sb_puts(sb, ", ");
  }
}

static void ast_put(StrBuf *sb, const AstExpr *e, int min_prec) {
  if (!e) {
    sb_puts(sb, "<?>");
    return;
  }
  bool paren = ast_prec(e) < min_prec;
  if (paren) sb_puts(sb, "(");
  switch (e->kind) {
  case AST_EXPR_INT: sb_printf(sb, "%lld", (long long)e->u.int_value); break;
  case AST_EXPR_FLOAT: ast_put_float(sb, e->u.float_value); break;
  case AST_EXPR_BOOL: sb_puts(sb, e->u.bool_value ? "true" : "false"); break;
  case AST_EXPR_NAME: sb_puts(sb, e->u.name); break;
  case AST_EXPR_UNARY:
    sb_puts(sb, ast_op_spelling(e->u.op.op));
    ast_put(sb, e->u.op.lhs, PREC_UNARY);
    break;
  case AST_EXPR_BINARY: {
    int p = ast_binary_prec(e->u.op.op); /* left-associative */
    ast_put(sb, e->u.op.lhs, p);
    sb_printf(sb, " %s ", ast_op_spelling(e->u.op.op));
    ast_put(sb, e->u.op.rhs, p + 1);
    break;
  }
  case AST_EXPR_TERNARY: /* right-associative */
    ast_put(sb, e->u.op.cond, PREC_TERNARY + 1);
    sb_puts(sb, " ? ");
    ast_put(sb, e->u.op.lhs, PREC_TERNARY);
    sb_puts(sb, " : ");
    ast_put(sb, e->u.op.rhs, PREC_TERNARY);
    break;
  case AST_EXPR_CALL:
    sb_printf(sb, "%s(", e->u.call.callee);
    ast_put_args(sb, e->u.call.args);
    sb_puts(sb, ")");
    break;
  case AST_EXPR_INDEX:
    ast_put(sb, e->u.call.base, PREC_POSTFIX);
    sb_puts(sb, "[");
    ast_put_args(sb, e->u.call.args);
    sb_puts(sb, "]");
    break;
  case AST_EXPR_SLICE:
    if (e->u.slice.lo) ast_put(sb, e->u.slice.lo, PREC_TERNARY + 1);
    sb_puts(sb, ":");
    if (e->u.slice.hi) ast_put(sb, e->u.slice.hi, PREC_TERNARY + 1);
    break;
  case AST_EXPR_LIST:
    sb_puts(sb, "[");
    ast_put_args(sb, e->u.list.items);
    sb_puts(sb, "]");
    break;
  }
  if (paren) sb_puts(sb, ")");
}

const char *ast_expr_str(Arena *arena, const AstExpr *e) {
  StrBuf sb;
  sb_init(&sb);
  ast_put(&sb, e, PREC_TERNARY);
  char *s = arena_strdup(arena, sb.data ? sb.data : "");
  sb_free(&sb);
  return s;
}
