/* tile.y - the .tile grammar (GNU Bison, pure, with locations): builds the
 * AST of ast.h and implements parse_tile().
 *
 * How it works: parse_tile() registers the text with the Diag, creates a
 * reentrant flex scanner (tile.l) over a private copy of the bytes and runs
 * this pure parser. All state lives in a ParseState on parse_tile's stack
 * (Arena, Diag, file name, bracket stack, scanner position), handed to the
 * scanner as yyextra and to the parser as %parse-param, so two parses can run
 * at once. Nodes are allocated in the Arena; flex's buffers are freed with
 * yylex_destroy before returning.
 *
 * Lists are left-recursive (constant parser stack depth however long they are)
 * and carried as {head, tail, count} so they stay in source order.
 *
 * Errors: syntax errors are reported by yyreport_syntax_error (parse.error
 * custom + LAC, so the expected-token list is exact) as "syntax error,
 * unexpected X, expecting Y or Z", with "(to close '{' at line N)" when the
 * innermost open bracket is the likely culprit. Recovery happens at statement
 * level (`error ';'`, `error block`, `'{' stmts error '}'`), at kernel level (`kernel error
 * block`) and at module level, so one run reports several errors. A few rules
 * the grammar cannot say (grid/threads are not keywords, assignment targets,
 * call statements) are checked in the actions and reported through the Diag;
 * parse_tile returns NULL when any error was reported. Nesting deeper than
 * YYMAXDEPTH parser states is an error ("nesting too deep"), which also bounds
 * the recursion depth of every later walk over the tree. */

%require "3.6"
%define api.pure full
%define api.prefix {tile_yy}
%define api.token.prefix {TOK_}
%define parse.error custom
%define parse.lac full
%locations
%lex-param {yyscan_t scanner}
%parse-param {yyscan_t scanner} {ParseState *ps}

%code requires {
#include <stddef.h>
#include <stdint.h>

#include "ast.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif

/* An open bracket not yet closed, for "(to close '(' at line N)". */
typedef struct ParseBracket {
  char open;
  int line, col;
} ParseBracket;

/* Everything one parse needs; shared by the scanner (yyextra) and parser. */
typedef struct ParseState {
  Arena *arena;
  Diag *diag;
  const char *file; /* arena copy, used in every SrcLoc */
  AstModule *module;
  AstKernel **kernels_tail; /* where the next kernel is linked: appends in O(1) */
  ParseBracket *brackets; /* arena array, innermost last */
  int nbrackets, capbrackets;
  const char *tok_text;   /* text of the last token scanned (valid until the next) */
  size_t tok_len;
  int line, col;          /* scanner position of the next byte */
  SrcLoc comment_start;   /* where the current block comment opened */
  int stray_line, stray_col; /* end of the last stray byte reported */
} ParseState;

typedef struct ParseArgs { AstArg *head, *tail; int n; } ParseArgs;
typedef struct ParseStmts { AstStmt *head, *tail; } ParseStmts;
typedef struct ParseNames { AstName *head, *tail; int n; } ParseNames;
typedef struct ParseParams { AstParam *head, *tail; int n; } ParseParams;
typedef struct ParseConsts { AstConst *head, *tail; } ParseConsts;

/* Bracket bookkeeping, called by the scanner (tile.l). */
void parse_bracket_open(ParseState *ps, char c, int line, int col);
void parse_bracket_close(ParseState *ps, char c);
}

%union {
  int64_t ival;
  double fval;
  const char *str;
  AstOp op;
  AstExpr *expr;
  AstArg *arg;
  AstStmt *stmt;
  AstParam *param;
  AstConst *cnst;
  AstKernel *kernel;
  ParseArgs args;
  ParseStmts stmts;
  ParseNames names;
  ParseParams params;
  ParseConsts consts;
}

%code {
#include <string.h>

#include "strbuf.h"
#include "tile.lex.h"

/* Deep enough for any real kernel; shallow enough that recursive walks over
 * the tree (sema, printers) cannot overflow the C stack. */
#define YYMAXDEPTH 1000

static SrcLoc parse_loc(const ParseState *ps, const YYLTYPE *l) {
  SrcLoc loc = {ps->file, l->first_line, l->first_column};
  return loc;
}
#define LOC(l) parse_loc(ps, &(l))

static void yyerror(YYLTYPE *loc, yyscan_t scanner, ParseState *ps, const char *msg);

static AstArg *parse_arg(ParseState *ps, const char *keyword, AstExpr *value, SrcLoc loc) {
  AstArg *a = ARENA_NEW(ps->arena, AstArg);
  a->keyword = keyword;
  a->value = value;
  a->loc = loc;
  return a;
}

static void args_push(ParseArgs *l, AstArg *a) {
  if (l->tail) l->tail->next = a; else l->head = a;
  l->tail = a;
  l->n++;
}

static ParseArgs args_one(AstArg *a) {
  ParseArgs l = {a, a, 1};
  return l;
}

static void names_push(ParseState *ps, ParseNames *l, const char *name, SrcLoc loc) {
  AstName *n = ARENA_NEW(ps->arena, AstName);
  n->name = name;
  n->loc = loc;
  if (l->tail) l->tail->next = n; else l->head = n;
  l->tail = n;
  l->n++;
}

static AstExpr *parse_binary(ParseState *ps, AstOp op, AstExpr *lhs, AstExpr *rhs, SrcLoc loc) {
  AstExpr *e = ast_expr_new(ps->arena, AST_EXPR_BINARY, loc);
  e->u.op.op = op;
  e->u.op.lhs = lhs;
  e->u.op.rhs = rhs;
  return e;
}

static AstExpr *parse_unary(ParseState *ps, AstOp op, AstExpr *operand, SrcLoc loc) {
  AstExpr *e = ast_expr_new(ps->arena, AST_EXPR_UNARY, loc);
  e->u.op.op = op;
  e->u.op.lhs = operand;
  return e;
}

static AstExpr *parse_slice(ParseState *ps, AstExpr *lo, AstExpr *hi, SrcLoc loc) {
  AstExpr *e = ast_expr_new(ps->arena, AST_EXPR_SLICE, loc);
  e->u.slice.lo = lo;
  e->u.slice.hi = hi;
  return e;
}

/* After error recovery skipped the tokens in `span`, brackets opened inside
 * it will never be closed by the parser: forget them so later messages do
 * not point at them. */
static void parse_forget_brackets(ParseState *ps, const YYLTYPE *span) {
  int keep = 0;
  for (int i = 0; i < ps->nbrackets; i++) {
    const ParseBracket *b = &ps->brackets[i];
    bool after_start = b->line > span->first_line ||
                       (b->line == span->first_line && b->col >= span->first_column);
    bool before_end = b->line < span->last_line ||
                      (b->line == span->last_line && b->col < span->last_column);
    if (!(after_start && before_end)) ps->brackets[keep++] = *b;
  }
  ps->nbrackets = keep;
}
}

%token <str> IDENT "identifier"
%token <ival> INT "integer literal"
%token <fval> FLOAT "float literal"
%token KERNEL "kernel" CONST "const" FOR "for" IN "in" IF "if" ELSE "else"
%token TRUE "true" FALSE "false" AS "as"
%token PLUS_EQ "+=" MINUS_EQ "-=" STAR_EQ "*=" SLASH_EQ "/="
%token EQ_EQ "==" NOT_EQ "!=" LESS_EQ "<=" GREATER_EQ ">=" AND_AND "&&" OR_OR "||"
%token SHL "<<" SHR ">>"
%token AND_EQ "&=" OR_EQ "|=" XOR_EQ "^=" SHL_EQ "<<=" SHR_EQ ">>="

%type <kernel> kernel grid_clause
%type <params> param_list_opt param_list
%type <param> param
%type <consts> const_opt const_list
%type <cnst> const_item
%type <names> name_list
%type <stmt> block stmt
%type <stmts> stmt_list
%type <op> assign_op
%type <expr> expr postfix primary call
%type <args> expr_list arg_list_opt arg_list index_list
%type <arg> arg index_arg

/* `if (c) if (d) s else t`: the else binds to the nearest if. */
%precedence THEN
%precedence ELSE
%right '?'
%left OR_OR
%left AND_AND
%left '|'
%left '^'
%left '&'
%left EQ_EQ NOT_EQ
%left '<' LESS_EQ '>' GREATER_EQ
%left SHL SHR
%left '+' '-'
%left '*' '/' '%'
%precedence UNARY

%start module

%%

/* module := kernel* */
module:
    %empty
  | module kernel {
      if ($2) {
        *ps->kernels_tail = $2;
        ps->kernels_tail = &$2->next;
        ps->module->nkernels++;
      }
    }
  | module error { }
  ;

/* kernel := 'kernel' IDENT '(' params ')' [const_block] grid_clause block */
kernel:
    KERNEL IDENT '(' param_list_opt ')' const_opt grid_clause block {
      AstKernel *k = $7;
      k->name = $2;
      k->loc = LOC(@1);
      k->params = $4.head;
      k->nparams = $4.n;
      k->consts = $6.head;
      k->body = $8;
      $$ = k;
    }
  | KERNEL error block { parse_forget_brackets(ps, &@2); yyerrok; $$ = NULL; }
  ;

param_list_opt:
    %empty { $$ = (ParseParams){0}; }
  | param_list
  | param_list ','
  ;

param_list:
    param { $$ = (ParseParams){$1, $1, 1}; }
  | param_list ',' param { $$ = $1; $$.tail->next = $3; $$.tail = $3; $$.n++; }
  ;

/* param := IDENT ':' IDENT [ '[' expr {',' expr} ']' [ 'strides' '(' expr {',' expr} ')' ] ]
 * strides is a plain identifier, like grid and threads. */
param:
    IDENT ':' IDENT {
      $$ = ARENA_NEW(ps->arena, AstParam);
      $$->name = $1;
      $$->dtype = $3;
      $$->loc = LOC(@1);
    }
  | IDENT ':' IDENT '[' expr_list ']' {
      $$ = ARENA_NEW(ps->arena, AstParam);
      $$->name = $1;
      $$->dtype = $3;
      $$->dims = $5.head;
      $$->ndims = $5.n;
      $$->is_tensor = true;
      $$->loc = LOC(@1);
    }
  | IDENT ':' IDENT '[' expr_list ']' IDENT '(' expr_list ')' {
      if (strcmp($7, "strides") != 0)
        diag_error(ps->diag, LOC(@7), "expected 'strides' or ',' after the shape of '%s', found '%s'", $1, $7);
      $$ = ARENA_NEW(ps->arena, AstParam);
      $$->name = $1;
      $$->dtype = $3;
      $$->dims = $5.head;
      $$->ndims = $5.n;
      $$->strides = $9.head;
      $$->nstrides = $9.n;
      $$->strides_loc = LOC(@7);
      $$->is_tensor = true;
      $$->loc = LOC(@1);
    }
  ;

/* const_block := 'const' '(' IDENT '=' expr {',' IDENT '=' expr} [','] ')' */
const_opt:
    %empty { $$ = (ParseConsts){0}; }
  | CONST '(' const_list ')' { $$ = $3; }
  | CONST '(' const_list ',' ')' { $$ = $3; }
  ;

const_list:
    const_item { $$ = (ParseConsts){$1, $1}; }
  | const_list ',' const_item { $$ = $1; $$.tail->next = $3; $$.tail = $3; }
  ;

const_item:
    IDENT '=' expr {
      $$ = ARENA_NEW(ps->arena, AstConst);
      $$->name = $1;
      $$->value = $3;
      $$->loc = LOC(@1);
    }
  ;

/* grid_clause := 'grid' '(' expr {',' expr} ')' 'threads' '(' expr ')'
 *                'as' '(' IDENT {',' IDENT} ')'
 * grid and threads are plain identifiers (a const may be named threads). */
grid_clause:
    IDENT '(' expr_list ')' IDENT '(' expr ')' AS '(' name_list ')' {
      if (strcmp($1, "grid") != 0)
        diag_error(ps->diag, LOC(@1), "expected 'grid', found '%s'", $1);
      if (strcmp($5, "threads") != 0)
        diag_error(ps->diag, LOC(@5), "expected 'threads', found '%s'", $5);
      $$ = ARENA_NEW(ps->arena, AstKernel);
      $$->grid = $3.head;
      $$->ngrid = $3.n;
      $$->threads = $7;
      $$->block_vars = $11.head;
      $$->nblock_vars = $11.n;
    }
  ;

name_list:
    IDENT { $$ = (ParseNames){0}; names_push(ps, &$$, $1, LOC(@1)); }
  | name_list ',' IDENT { $$ = $1; names_push(ps, &$$, $3, LOC(@3)); }
  ;

/* block := '{' stmt* '}' */
block:
    '{' stmt_list '}' {
      $$ = ast_stmt_new(ps->arena, AST_STMT_BLOCK, LOC(@1));
      $$->u.block.stmts = $2.head;
    }
  | '{' stmt_list error '}' {
      parse_forget_brackets(ps, &@$);
      yyerrok;
      $$ = ast_stmt_new(ps->arena, AST_STMT_BLOCK, LOC(@1));
      $$->u.block.stmts = $2.head;
    }
  ;

stmt_list:
    %empty { $$ = (ParseStmts){0}; }
  | stmt_list stmt {
      $$ = $1;
      if ($2) {
        if ($$.tail) $$.tail->next = $2; else $$.head = $2;
        $$.tail = $2;
      }
    }
  ;

stmt:
    block
  | postfix assign_op expr ';' {
      if ($1->kind != AST_EXPR_NAME && $1->kind != AST_EXPR_INDEX)
        diag_error(ps->diag, LOC(@1), "cannot assign to '%s' (not a name or an element)",
                   ast_expr_str(ps->arena, $1));
      $$ = ast_stmt_new(ps->arena, AST_STMT_ASSIGN, LOC(@1));
      $$->u.assign.target = $1;
      $$->u.assign.op = $2;
      $$->u.assign.value = $3;
    }
  | postfix ';' {
      if ($1->kind != AST_EXPR_CALL)
        diag_error(ps->diag, LOC(@1), "expression statement must be a call, found '%s'",
                   ast_expr_str(ps->arena, $1));
      $$ = ast_stmt_new(ps->arena, AST_STMT_EXPR, LOC(@1));
      $$->u.expr = $1;
    }
    /* The iterator is a call by grammar: parallel(...), pipelined(...), serial(...). */
  | FOR name_list IN call stmt {
      $$ = ast_stmt_new(ps->arena, AST_STMT_FOR, LOC(@1));
      $$->u.for_.vars = $2.head;
      $$->u.for_.nvars = $2.n;
      $$->u.for_.iter = $4;
      $$->u.for_.body = $5;
    }
  | IF '(' expr ')' stmt %prec THEN {
      $$ = ast_stmt_new(ps->arena, AST_STMT_IF, LOC(@1));
      $$->u.if_.cond = $3;
      $$->u.if_.then_ = $5;
    }
  | IF '(' expr ')' stmt ELSE stmt {
      $$ = ast_stmt_new(ps->arena, AST_STMT_IF, LOC(@1));
      $$->u.if_.cond = $3;
      $$->u.if_.then_ = $5;
      $$->u.if_.else_ = $7;
    }
  | error ';' {
      /* The statement is over: report the next error even if it is close. */
      parse_forget_brackets(ps, &@$);
      yyerrok;
      $$ = NULL;
    }
    /* `if (x > ) { ... }`: resume at the block, so its '}' is not taken for
     * the end of the enclosing one. */
  | error block {
      parse_forget_brackets(ps, &@1);
      yyerrok;
      $$ = $2;
    }
  ;

assign_op:
    '=' { $$ = AST_OP_COUNT; }
  | PLUS_EQ { $$ = AST_OP_ADD; }
  | MINUS_EQ { $$ = AST_OP_SUB; }
  | STAR_EQ { $$ = AST_OP_MUL; }
  | SLASH_EQ { $$ = AST_OP_DIV; }
  | AND_EQ { $$ = AST_OP_BAND; }
  | OR_EQ { $$ = AST_OP_BOR; }
  | XOR_EQ { $$ = AST_OP_XOR; }
  | SHL_EQ { $$ = AST_OP_SHL; }
  | SHR_EQ { $$ = AST_OP_SHR; }
  ;

expr:
    postfix
  | '-' expr %prec UNARY { $$ = parse_unary(ps, AST_OP_NEG, $2, LOC(@1)); }
  | '!' expr %prec UNARY { $$ = parse_unary(ps, AST_OP_NOT, $2, LOC(@1)); }
  | '~' expr %prec UNARY { $$ = parse_unary(ps, AST_OP_BNOT, $2, LOC(@1)); }
  | expr '*' expr { $$ = parse_binary(ps, AST_OP_MUL, $1, $3, LOC(@2)); }
  | expr '/' expr { $$ = parse_binary(ps, AST_OP_DIV, $1, $3, LOC(@2)); }
  | expr '%' expr { $$ = parse_binary(ps, AST_OP_MOD, $1, $3, LOC(@2)); }
  | expr '+' expr { $$ = parse_binary(ps, AST_OP_ADD, $1, $3, LOC(@2)); }
  | expr '-' expr { $$ = parse_binary(ps, AST_OP_SUB, $1, $3, LOC(@2)); }
  | expr '<' expr { $$ = parse_binary(ps, AST_OP_LT, $1, $3, LOC(@2)); }
  | expr LESS_EQ expr { $$ = parse_binary(ps, AST_OP_LE, $1, $3, LOC(@2)); }
  | expr '>' expr { $$ = parse_binary(ps, AST_OP_GT, $1, $3, LOC(@2)); }
  | expr GREATER_EQ expr { $$ = parse_binary(ps, AST_OP_GE, $1, $3, LOC(@2)); }
  | expr EQ_EQ expr { $$ = parse_binary(ps, AST_OP_EQ, $1, $3, LOC(@2)); }
  | expr NOT_EQ expr { $$ = parse_binary(ps, AST_OP_NE, $1, $3, LOC(@2)); }
  | expr AND_AND expr { $$ = parse_binary(ps, AST_OP_AND, $1, $3, LOC(@2)); }
  | expr OR_OR expr { $$ = parse_binary(ps, AST_OP_OR, $1, $3, LOC(@2)); }
  | expr '&' expr { $$ = parse_binary(ps, AST_OP_BAND, $1, $3, LOC(@2)); }
  | expr '|' expr { $$ = parse_binary(ps, AST_OP_BOR, $1, $3, LOC(@2)); }
  | expr '^' expr { $$ = parse_binary(ps, AST_OP_XOR, $1, $3, LOC(@2)); }
  | expr SHL expr { $$ = parse_binary(ps, AST_OP_SHL, $1, $3, LOC(@2)); }
  | expr SHR expr { $$ = parse_binary(ps, AST_OP_SHR, $1, $3, LOC(@2)); }
  | expr '?' expr ':' expr %prec '?' {
      $$ = ast_expr_new(ps->arena, AST_EXPR_TERNARY, LOC(@1));
      $$->u.op.cond = $1;
      $$->u.op.lhs = $3;
      $$->u.op.rhs = $5;
    }
  ;

/* postfix := primary | postfix '[' index_arg {',' index_arg} ']' */
postfix:
    primary
  | postfix '[' index_list ']' {
      $$ = ast_expr_new(ps->arena, AST_EXPR_INDEX, LOC(@1));
      $$->u.call.base = $1;
      $$->u.call.args = $3.head;
      $$->u.call.nargs = $3.n;
    }
  ;

primary:
    INT {
      $$ = ast_expr_new(ps->arena, AST_EXPR_INT, LOC(@1));
      $$->u.int_value = $1;
    }
  | FLOAT {
      $$ = ast_expr_new(ps->arena, AST_EXPR_FLOAT, LOC(@1));
      $$->u.float_value = $1;
    }
  | TRUE {
      $$ = ast_expr_new(ps->arena, AST_EXPR_BOOL, LOC(@1));
      $$->u.bool_value = true;
    }
  | FALSE {
      $$ = ast_expr_new(ps->arena, AST_EXPR_BOOL, LOC(@1));
      $$->u.bool_value = false;
    }
  | IDENT {
      $$ = ast_expr_new(ps->arena, AST_EXPR_NAME, LOC(@1));
      $$->u.name = $1;
    }
  | call
  | '(' expr ')' { $$ = $2; }
  | '[' expr_list ']' {
      $$ = ast_expr_new(ps->arena, AST_EXPR_LIST, LOC(@1));
      $$->u.list.items = $2.head;
      $$->u.list.nitems = $2.n;
    }
  ;

call:
    IDENT '(' arg_list_opt ')' {
      $$ = ast_expr_new(ps->arena, AST_EXPR_CALL, LOC(@1));
      $$->u.call.callee = $1;
      $$->u.call.args = $3.head;
      $$->u.call.nargs = $3.n;
    }
  ;

expr_list:
    expr { $$ = args_one(parse_arg(ps, NULL, $1, LOC(@1))); }
  | expr_list ',' expr { $$ = $1; args_push(&$$, parse_arg(ps, NULL, $3, LOC(@3))); }
  ;

arg_list_opt:
    %empty { $$ = (ParseArgs){0}; }
  | arg_list
  ;

arg_list:
    arg { $$ = args_one($1); }
  | arg_list ',' arg { $$ = $1; args_push(&$$, $3); }
  ;

/* arg := expr | IDENT '=' expr */
arg:
    expr { $$ = parse_arg(ps, NULL, $1, LOC(@1)); }
  | IDENT '=' expr { $$ = parse_arg(ps, $1, $3, LOC(@1)); }
  ;

index_list:
    index_arg { $$ = args_one($1); }
  | index_list ',' index_arg { $$ = $1; args_push(&$$, $3); }
  ;

/* index_arg := expr | [expr] ':' [expr] */
index_arg:
    expr { $$ = parse_arg(ps, NULL, $1, LOC(@1)); }
  | expr ':' expr { $$ = parse_arg(ps, NULL, parse_slice(ps, $1, $3, LOC(@1)), LOC(@1)); }
  | expr ':' { $$ = parse_arg(ps, NULL, parse_slice(ps, $1, NULL, LOC(@1)), LOC(@1)); }
  | ':' expr { $$ = parse_arg(ps, NULL, parse_slice(ps, NULL, $2, LOC(@1)), LOC(@1)); }
  | ':' { $$ = parse_arg(ps, NULL, parse_slice(ps, NULL, NULL, LOC(@1)), LOC(@1)); }
  ;

%%

/* ---- error reporting ---------------------------------------------------- */

static char parse_closer(char open) {
  return open == '(' ? ')' : open == '[' ? ']' : '}';
}

/* Appends how the user sees a token kind: 'for', ';', identifier, ... */
static void parse_describe(StrBuf *sb, yysymbol_kind_t sym) {
  switch (sym) {
  case YYSYMBOL_YYEOF: sb_puts(sb, "end of file"); return;
  case YYSYMBOL_IDENT: sb_puts(sb, "identifier"); return;
  case YYSYMBOL_INT: sb_puts(sb, "integer literal"); return;
  case YYSYMBOL_FLOAT: sb_puts(sb, "float literal"); return;
  default: break;
  }
  const char *name = yysymbol_name(sym);
  if (name[0] == '\'')
    sb_puts(sb, name); /* ';' is already quoted */
  else
    sb_printf(sb, "'%s'", name); /* aliases come unquoted: kernel, += */
}

/* The one-character token of symbol `sym`, or 0 (for ';' and brackets). */
static char parse_char_token(yysymbol_kind_t sym) {
  const char *name = yysymbol_name(sym);
  return name[0] == '\'' && name[1] && name[2] == '\'' ? name[1] : 0;
}

/* "syntax error, unexpected X[ 'text'], expecting A or B[ (to close '(' at line N)]" */
static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner, ParseState *ps) {
  (void)scanner;
  enum { MAX_EXPECTED = 64, MAX_LISTED = 4 };
  yysymbol_kind_t expected[MAX_EXPECTED];
  int nexp = yypcontext_expected_tokens(ctx, expected, MAX_EXPECTED);
  if (nexp < 0) return nexp; /* LAC ran out of memory */
  yysymbol_kind_t tok = yypcontext_token(ctx);
  const YYLTYPE *where = yypcontext_location(ctx);

  StrBuf sb;
  sb_init(&sb);
  sb_puts(&sb, "syntax error, unexpected ");
  parse_describe(&sb, tok);
  if (tok == YYSYMBOL_IDENT || tok == YYSYMBOL_INT || tok == YYSYMBOL_FLOAT) {
    enum { SHOWN = 40 };
    int n = ps->tok_len > SHOWN ? SHOWN : (int)ps->tok_len;
    sb_printf(&sb, " '%.*s%s'", n, ps->tok_text, ps->tok_len > SHOWN ? "..." : "");
  }

  /* The innermost bracket opened before the offending token. */
  const ParseBracket *open = NULL;
  for (int i = ps->nbrackets - 1; i >= 0 && !open; i--) {
    const ParseBracket *b = &ps->brackets[i];
    if (b->line < where->first_line ||
        (b->line == where->first_line && b->col < where->first_column))
      open = b;
  }
  bool closer_expected = false;
  if (open)
    for (int i = 0; i < nexp; i++)
      if (parse_char_token(expected[i]) == parse_closer(open->open)) closer_expected = true;

  if (nexp > 0 && nexp <= MAX_LISTED) {
    for (int i = 0; i < nexp; i++) {
      sb_puts(&sb, i == 0 ? ", expecting " : " or ");
      parse_describe(&sb, expected[i]);
    }
  } else {
    /* Too many to list (an operator could also follow): name only the
     * tokens that would end what is open, the usual fix. */
    const char *enders = closer_expected ? ";" : ";)]}";
    int listed = 0;
    for (const char *c = enders; *c; c++)
      for (int i = 0; i < nexp; i++)
        if (parse_char_token(expected[i]) == *c)
          sb_printf(&sb, "%s'%c'", listed++ ? " or " : ", expecting ", *c);
    if (closer_expected)
      sb_printf(&sb, "%s'%c'", listed ? " or " : ", expecting ", parse_closer(open->open));
  }
  if (closer_expected)
    sb_printf(&sb, " (to close '%c' at line %d)", open->open, open->line);
  diag_error(ps->diag, LOC(*where), "%s", sb.data);
  sb_free(&sb);
  return 0;
}

static void yyerror(YYLTYPE *loc, yyscan_t scanner, ParseState *ps, const char *msg) {
  (void)scanner;
  if (strcmp(msg, "memory exhausted") == 0)
    msg = "nesting too deep (parser stack exhausted)";
  diag_error(ps->diag, LOC(*loc), "%s", msg);
}

/* ---- scanner support (called from tile.l) ------------------------------- */

void parse_bracket_open(ParseState *ps, char c, int line, int col) {
  if (ps->nbrackets == ps->capbrackets)
    ps->brackets = arena_grow(ps->arena, ps->brackets, &ps->capbrackets, ps->nbrackets + 1,
                              sizeof(ParseBracket));
  ps->brackets[ps->nbrackets++] = (ParseBracket){c, line, col};
}

void parse_bracket_close(ParseState *ps, char c) {
  /* A closer that does not match the innermost opener is left to the parser
   * to report; the stack stays as it is. */
  if (ps->nbrackets > 0 && parse_closer(ps->brackets[ps->nbrackets - 1].open) == c)
    ps->nbrackets--;
}

/* ---- entry point -------------------------------------------------------- */

AstModule *parse_tile(Arena *arena, Diag *diag, const char *file, const char *text,
                      size_t len) {
  if (!file) file = "<input>";
  if (!text) text = "", len = 0;
  diag_add_source(diag, file, text, len);
  int errors_before = diag_error_count(diag);

  ParseState ps = {0};
  ps.arena = arena;
  ps.diag = diag;
  ps.file = arena_strdup(arena, file);
  ps.module = ARENA_NEW(arena, AstModule);
  ps.module->file = ps.file;
  ps.kernels_tail = &ps.module->kernels;
  ps.line = 1;
  ps.col = 1;

  /* flex takes an int length. */
  if (len > (size_t)INT32_MAX - 2) {
    SrcLoc loc = {ps.file, 0, 0};
    diag_error(diag, loc, "input too large (%zu bytes)", len);
    return NULL;
  }
  yyscan_t scanner;
  if (tile_yylex_init_extra(&ps, &scanner) != 0) TILEC_UNREACHABLE("out of memory creating the scanner");
  YY_BUFFER_STATE buf = tile_yy_scan_bytes(text, (int)len, scanner);
  int rc = yyparse(scanner, &ps);
  tile_yy_delete_buffer(buf, scanner);
  tile_yylex_destroy(scanner);

  if (rc != 0 && diag_error_count(diag) == errors_before) {
    SrcLoc loc = {ps.file, ps.line, ps.col};
    diag_error(diag, loc, "syntax error");
  }
  if (rc != 0 || diag_error_count(diag) != errors_before) return NULL;
  return ps.module;
}
