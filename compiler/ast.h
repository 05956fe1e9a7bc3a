/* ast.h - the syntax tree the parser builds from a .tile file.
 *
 * The AST is a faithful, unchecked picture of the text: names are strings,
 * builtins (alloc_shared, copy, exp2, parallel, f16, inf, ...) are ordinary
 * names and calls, and nothing is resolved. sema.c checks it and builds the
 * tile IR (ir.h). Lists are singly linked through `next` (the parser appends
 * in source order). Every node carries the location of its first token
 * (for binary operators: the operator token). All nodes live in the Arena of
 * the compilation. */
#ifndef TILEC_AST_H
#define TILEC_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"

typedef enum AstExprKind {
  AST_EXPR_INT,     /* 42 */
  AST_EXPR_FLOAT,   /* 1.5, 1e-3 */
  AST_EXPR_BOOL,    /* true, false */
  AST_EXPR_NAME,    /* seq_len, inf, f16, swizzled (meaning decided by sema) */
  AST_EXPR_UNARY,   /* -x, !x */
  AST_EXPR_BINARY,  /* a + b, a < b, a && b */
  AST_EXPR_TERNARY, /* c ? a : b */
  AST_EXPR_CALL,    /* f(args, key = value) */
  AST_EXPR_INDEX,   /* A[i, j], A[bz, a:b, by, :] */
  AST_EXPR_SLICE,   /* a:b, a:, :b, :  (only as an index); lo/hi may be NULL */
  AST_EXPR_LIST,    /* [a, b] (shapes) */
} AstExprKind;

/* Operators, with their spelling. */
#define AST_OPS(X)                                                        \
  X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(MOD, "%")             \
  X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=") X(EQ, "==") X(NE, "!=")   \
  X(AND, "&&") X(OR, "||") X(NEG, "-") X(NOT, "!")                       \
  X(BAND, "&") X(BOR, "|") X(XOR, "^") X(SHL, "<<") X(SHR, ">>") X(BNOT, "~")

typedef enum AstOp {
#define X(name, spelling) AST_OP_##name,
  AST_OPS(X)
#undef X
  AST_OP_COUNT
} AstOp;

const char *ast_op_spelling(AstOp op);

typedef struct AstExpr AstExpr;

/* One argument of a call or index: positional (keyword == NULL) or
 * `keyword = value`. */
typedef struct AstArg {
  const char *keyword;
  AstExpr *value;
  SrcLoc loc;
  struct AstArg *next;
} AstArg;

struct AstExpr {
  AstExprKind kind;
  SrcLoc loc;
  union {
    int64_t int_value;   /* INT */
    double float_value;  /* FLOAT */
    bool bool_value;     /* BOOL */
    const char *name;    /* NAME */
    struct {             /* UNARY, BINARY, TERNARY */
      AstOp op;          /* unused for TERNARY */
      AstExpr *lhs, *rhs, *cond; /* unary: lhs; ternary: cond ? lhs : rhs */
    } op;
    struct {             /* CALL: callee is a name; INDEX: base is any expr */
      const char *callee;
      AstExpr *base;
      AstArg *args;      /* call arguments or index components */
      int nargs;
    } call;
    struct {             /* SLICE */
      AstExpr *lo, *hi;  /* NULL when omitted */
    } slice;
    struct {             /* LIST */
      AstArg *items;
      int nitems;
    } list;
  } u;
};

typedef enum AstStmtKind {
  AST_STMT_ASSIGN, /* target op= value; target is a NAME or an INDEX */
  AST_STMT_EXPR,   /* call(...);  (tile ops: copy, fill, gemm, ...) */
  AST_STMT_FOR,    /* for i, j in parallel(M, N) body */
  AST_STMT_IF,     /* if (cond) then [else otherwise] */
  AST_STMT_BLOCK,  /* { stmts } */
} AstStmtKind;

typedef struct AstName {
  const char *name;
  SrcLoc loc;
  struct AstName *next;
} AstName;

typedef struct AstStmt AstStmt;
struct AstStmt {
  AstStmtKind kind;
  SrcLoc loc;
  AstStmt *next;
  union {
    struct {
      AstExpr *target;
      AstOp op;           /* compound op for +=, -=, *=, /=; AST_OP_COUNT for '=' */
      AstExpr *value;
    } assign;
    AstExpr *expr;        /* EXPR */
    struct {
      AstName *vars;      /* i, j */
      int nvars;
      AstExpr *iter;      /* a CALL: parallel(...), pipelined(...), serial(...) */
      AstStmt *body;      /* a statement (often a BLOCK) */
    } for_;
    struct {
      AstExpr *cond;
      AstStmt *then_, *else_; /* else_ may be NULL */
    } if_;
    struct {
      AstStmt *stmts;
    } block;
  } u;
};

/* `Q: f16[batch, seq_len, heads, dim]` (a tensor) or `scale: f32` (a scalar). */
typedef struct AstParam {
  const char *name;
  const char *dtype;  /* as written: f16, bf16, f32, ... */
  AstArg *dims;       /* NULL for a scalar */
  int ndims;
  AstArg *strides;    /* `strides (...)`, or NULL: compact row-major */
  int nstrides;
  SrcLoc strides_loc;
  bool is_tensor;
  SrcLoc loc;
  struct AstParam *next;
} AstParam;

/* `dim = 128` inside `const (...)`. */
typedef struct AstConst {
  const char *name;
  AstExpr *value;
  SrcLoc loc;
  struct AstConst *next;
} AstConst;

typedef struct AstKernel {
  const char *name;
  SrcLoc loc;
  AstParam *params;
  int nparams;
  AstConst *consts;
  AstArg *grid;        /* 1 to 3 extents */
  int ngrid;
  AstExpr *threads;
  AstName *block_vars; /* `as (bx, by, bz)`: as many as grid extents */
  int nblock_vars;
  AstStmt *body;       /* a BLOCK */
  struct AstKernel *next;
} AstKernel;

typedef struct AstModule {
  const char *file;
  AstKernel *kernels;
  int nkernels;
} AstModule;

/* Parses `len` bytes of `text` (need not be NUL-terminated; may contain any
 * bytes). Returns the module, or NULL when there were syntax errors (all of
 * them reported to diag, with recovery so several are reported per run).
 * Registers the text with diag_add_source. Implemented in grammar/. */
AstModule *parse_tile(Arena *arena, Diag *diag, const char *file, const char *text,
                      size_t len);

/* Constructors used by the parser (ast.c). */
AstExpr *ast_expr_new(Arena *arena, AstExprKind kind, SrcLoc loc);
AstStmt *ast_stmt_new(Arena *arena, AstStmtKind kind, SrcLoc loc);

/* Debug printing of an expression back to .tile syntax (used in messages). */
const char *ast_expr_str(Arena *arena, const AstExpr *e);

#endif
