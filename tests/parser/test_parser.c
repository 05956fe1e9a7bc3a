/* test_parser.c - unit test of the front end (grammar/tile.l, grammar/tile.y).
 *
 * Parses the flagship FlashAttention program (flash_attention.tile, copied
 * from the language sketch) and checks the tree's real structure; parses
 * inputs with known syntax errors and checks the count, lines and text of the
 * reports; feeds hostile inputs (binary, deep nesting, a 1 MB line) that must
 * be rejected without a crash; runs two parses at once on two threads.
 * Usage: test_parser FLASH_ATTENTION_TILE */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "ast.h"
#include "diag.h"

static int failures;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                        \
    }                                                                    \
  } while (0)
#define CHECK_STR(a, b) CHECK((a) && strcmp((a), (b)) == 0)

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) exit(2);
  buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static AstStmt *nth_stmt(AstStmt *s, int n) {
  while (s && n-- > 0) s = s->next;
  return s;
}

static AstArg *nth_arg(AstArg *a, int n) {
  while (a && n-- > 0) a = a->next;
  return a;
}

static int count_stmts(const AstStmt *s) {
  int n = 0;
  for (; s; s = s->next) n++;
  return n;
}

static void test_flagship(const char *text, size_t len) {
  Arena *arena = arena_create();
  Diag *diag = diag_create(stderr);
  AstModule *m = parse_tile(arena, diag, "fa.tile", text, len);
  CHECK(m != NULL);
  CHECK(diag_error_count(diag) == 0);
  if (!m) goto done;
  CHECK(m->nkernels == 1);
  CHECK_STR(m->file, "fa.tile");
  AstKernel *k = m->kernels;
  CHECK_STR(k->name, "flash_attention");
  CHECK(k->loc.line == 1 && k->loc.col == 1);
  CHECK(k->next == NULL);

  /* params: Q, K, V, Output: f16[4 dims]; scale: f32 scalar */
  CHECK(k->nparams == 5);
  int np = 0;
  for (AstParam *p = k->params; p; p = p->next) np++;
  CHECK(np == 5);
  AstParam *q = k->params;
  CHECK_STR(q->name, "Q");
  CHECK_STR(q->dtype, "f16");
  CHECK(q->is_tensor && q->ndims == 4);
  CHECK(q->loc.line == 2 && q->loc.col == 5);
  CHECK(q->dims->value->kind == AST_EXPR_NAME);
  CHECK_STR(q->dims->value->u.name, "batch");
  CHECK_STR(nth_arg(q->dims, 3)->value->u.name, "dim");
  AstParam *out = q->next->next->next;
  CHECK_STR(out->name, "Output");
  CHECK(out->ndims == 4);
  AstParam *scale = out->next;
  CHECK_STR(scale->name, "scale");
  CHECK_STR(scale->dtype, "f32");
  CHECK(!scale->is_tensor && scale->ndims == 0 && scale->dims == NULL);

  /* const (dim = 128, ..., threads = 128, is_causal = false) */
  int nconst = 0;
  AstConst *last = NULL;
  for (AstConst *c = k->consts; c; c = c->next) nconst++, last = c;
  CHECK(nconst == 6);
  CHECK_STR(k->consts->name, "dim");
  CHECK(k->consts->value->kind == AST_EXPR_INT && k->consts->value->u.int_value == 128);
  CHECK(k->consts->loc.line == 7 && k->consts->loc.col == 10);
  CHECK_STR(last->name, "is_causal");
  CHECK(last->value->kind == AST_EXPR_BOOL && last->value->u.bool_value == false);

  /* grid (ceildiv(seq_len, block_M), heads, batch) threads (threads) as (bx, by, bz) */
  CHECK(k->ngrid == 3);
  CHECK(k->grid->value->kind == AST_EXPR_CALL);
  CHECK_STR(k->grid->value->u.call.callee, "ceildiv");
  CHECK(k->grid->value->u.call.nargs == 2);
  CHECK(k->threads && k->threads->kind == AST_EXPR_NAME);
  CHECK_STR(k->threads->u.name, "threads");
  CHECK(k->nblock_vars == 3);
  CHECK_STR(k->block_vars->name, "bx");
  CHECK_STR(k->block_vars->next->next->name, "bz");
  CHECK(k->block_vars->next->next->next == NULL);

  /* body */
  CHECK(k->body && k->body->kind == AST_STMT_BLOCK);
  AstStmt *body = k->body->u.block.stmts;
  CHECK(count_stmts(body) == 20);

  AstStmt *s0 = body; /* Q_shared = alloc_shared([block_M, dim], f16); */
  CHECK(s0->kind == AST_STMT_ASSIGN && s0->u.assign.op == AST_OP_COUNT);
  CHECK(s0->loc.line == 11 && s0->loc.col == 5);
  CHECK_STR(s0->u.assign.target->u.name, "Q_shared");
  AstExpr *alloc = s0->u.assign.value;
  CHECK(alloc->kind == AST_EXPR_CALL && alloc->u.call.nargs == 2);
  CHECK_STR(alloc->u.call.callee, "alloc_shared");
  CHECK(alloc->u.call.args->value->kind == AST_EXPR_LIST);
  CHECK(alloc->u.call.args->value->u.list.nitems == 2);

  AstStmt *cp = nth_stmt(body, 12); /* copy(Q[bz, bx*block_M : (bx+1)*block_M, by, :], Q_shared); */
  CHECK(cp->kind == AST_STMT_EXPR);
  CHECK_STR(cp->u.expr->u.call.callee, "copy");
  AstExpr *qi = cp->u.expr->u.call.args->value;
  CHECK(qi->kind == AST_EXPR_INDEX && qi->u.call.nargs == 4);
  AstExpr *sl = nth_arg(qi->u.call.args, 1)->value;
  CHECK(sl->kind == AST_EXPR_SLICE && sl->u.slice.lo && sl->u.slice.hi);
  CHECK(sl->u.slice.lo->kind == AST_EXPR_BINARY && sl->u.slice.lo->u.op.op == AST_OP_MUL);
  CHECK(sl->u.slice.lo->loc.line == 24 && sl->u.slice.lo->loc.col == 18); /* the '*' */
  AstExpr *all = nth_arg(qi->u.call.args, 3)->value;
  CHECK(all->kind == AST_EXPR_SLICE && !all->u.slice.lo && !all->u.slice.hi);
  CHECK_STR(ast_expr_str(arena, qi), "Q[bz, bx * block_M:(bx + 1) * block_M, by, :]");

  AstStmt *fill = nth_stmt(body, 15); /* fill(scores_max, -inf); */
  AstExpr *neg = fill->u.expr->u.call.args->next->value;
  CHECK(neg->kind == AST_EXPR_UNARY && neg->u.op.op == AST_OP_NEG);
  CHECK(neg->u.op.lhs->kind == AST_EXPR_NAME);
  CHECK_STR(neg->u.op.lhs->u.name, "inf");

  AstStmt *lr = nth_stmt(body, 16); /* loop_range = is_causal ? ... : ...; */
  CHECK(lr->u.assign.value->kind == AST_EXPR_TERNARY);
  CHECK(lr->u.assign.value->u.op.cond->kind == AST_EXPR_NAME);

  AstStmt *loop = nth_stmt(body, 17); /* for k in pipelined(loop_range, num_stages = num_stages) */
  CHECK(loop->kind == AST_STMT_FOR);
  CHECK(loop->loc.line == 30 && loop->loc.col == 5);
  CHECK(loop->u.for_.nvars == 1);
  CHECK_STR(loop->u.for_.vars->name, "k");
  CHECK(loop->u.for_.iter->kind == AST_EXPR_CALL);
  CHECK_STR(loop->u.for_.iter->u.call.callee, "pipelined");
  CHECK(loop->u.for_.iter->u.call.nargs == 2);
  CHECK_STR(loop->u.for_.iter->u.call.args->next->keyword, "num_stages");
  CHECK(loop->u.for_.body->kind == AST_STMT_BLOCK);
  AstStmt *inner = loop->u.for_.body->u.block.stmts;
  CHECK(count_stmts(inner) == 15);

  AstStmt *iff = nth_stmt(inner, 1); /* if (is_causal) {...} else {...} */
  CHECK(iff->kind == AST_STMT_IF && iff->u.if_.else_ != NULL);
  CHECK(iff->u.if_.else_->kind == AST_STMT_BLOCK);
  AstStmt *pf = iff->u.if_.then_->u.block.stmts;
  CHECK(pf->kind == AST_STMT_FOR && pf->u.for_.nvars == 2);
  CHECK_STR(pf->u.for_.vars->next->name, "j");
  CHECK_STR(pf->u.for_.iter->u.call.callee, "parallel");
  CHECK(pf->u.for_.body->kind == AST_STMT_ASSIGN);
  AstExpr *ite = pf->u.for_.body->u.assign.value;
  CHECK_STR(ite->u.call.callee, "if_then_else");
  CHECK(ite->u.call.args->value->kind == AST_EXPR_BINARY);
  CHECK(ite->u.call.args->value->u.op.op == AST_OP_GE);
  CHECK(ite->u.call.args->value->loc.line == 34 && ite->u.call.args->value->loc.col == 59);

  AstStmt *gemm = nth_stmt(inner, 2); /* gemm(..., transpose_B = true, policy = full_row) */
  CHECK(gemm->u.expr->u.call.nargs == 5);
  CHECK_STR(nth_arg(gemm->u.expr->u.call.args, 3)->keyword, "transpose_B");
  CHECK(nth_arg(gemm->u.expr->u.call.args, 3)->value->kind == AST_EXPR_BOOL);

  AstStmt *mul = nth_stmt(inner, 4); /* for i, j in parallel(...) acc_s[i, j] *= scale; */
  CHECK(mul->kind == AST_STMT_FOR && mul->u.for_.body->u.assign.op == AST_OP_MUL);
  CHECK(mul->u.for_.body->u.assign.target->kind == AST_EXPR_INDEX);

  AstStmt *div = nth_stmt(body, 18); /* acc_o[i, j] /= logsum[i]; */
  CHECK(div->u.for_.body->u.assign.op == AST_OP_DIV);
  AstStmt *lastcp = nth_stmt(body, 19);
  CHECK(lastcp->kind == AST_STMT_EXPR && lastcp->next == NULL);
  CHECK(lastcp->loc.line == 55);
done:
  diag_destroy(diag);
  arena_destroy(arena);
}

/* Parses `text` expecting failure; returns the diagnostics text (malloc'd). */
static char *parse_errors(const char *text, size_t len, int *nerrors) {
  Arena *arena = arena_create();
  Diag *diag = diag_create(NULL);
  AstModule *m = parse_tile(arena, diag, "t.tile", text, len);
  CHECK(m == NULL);
  *nerrors = diag_error_count(diag);
  char *out = strdup(diag_text(diag));
  diag_destroy(diag);
  arena_destroy(arena);
  return out;
}

static void expect_error(const char *text, const char *needle) {
  int n;
  char *msgs = parse_errors(text, strlen(text), &n);
  if (!strstr(msgs, needle)) {
    fprintf(stderr, "expected \"%s\" in:\n%s\n", needle, msgs);
    failures++;
  }
  free(msgs);
}

static const char three_errors[] =
    "kernel k(A: f32[N])\n"                          /* 1 */
    "  grid (N) threads (128) as (bx)\n"             /* 2 */
    "{\n"                                            /* 3 */
    "  x = (1 + ;\n"                                 /* 4: missing operand */
    "  fill(A, 0);\n"                                /* 5 */
    "  for i in parallel(N) {\n"                     /* 6 */
    "    A[i] = 1 2;\n"                              /* 7: missing operator */
    "  }\n"                                          /* 8 */
    "  copy(A, A);\n"                                /* 9 */
    "  if (x > ) { clear(A); }\n"                    /* 10: missing operand */
    "}\n";

static void test_errors(void) {
  int n;
  char *msgs = parse_errors(three_errors, strlen(three_errors), &n);
  CHECK(n == 3);
  CHECK(strstr(msgs, "t.tile:4:12: error: syntax error, unexpected ';'") != NULL);
  CHECK(strstr(msgs, "t.tile:7:14: error: syntax error, unexpected integer literal '2'") != NULL);
  CHECK(strstr(msgs, "t.tile:10:11: error: syntax error, unexpected ')'") != NULL);
  free(msgs);

  const char *head = "kernel k() grid (1) threads (1) as (b) {\n";
  char buf[256];
  snprintf(buf, sizeof buf, "%s  copy(a, b;\n}\n", head);
  expect_error(buf, "t.tile:2:12: error: syntax error, unexpected ';', expecting ')'"
                    " (to close '(' at line 2)");
  snprintf(buf, sizeof buf, "%s  if (x) {\n    fill(a, 0);\n", head);
  expect_error(buf, "unexpected end of file, expecting '}' (to close '{' at line 2)");
  expect_error("kernel k() grud (1) threads (1) as (b) { }", "t.tile:1:12: error: expected 'grid', found 'grud'");
  expect_error("kernel k() grid (1) thread (1) as (b) { }", "1:21: error: expected 'threads', found 'thread'");
  snprintf(buf, sizeof buf, "%s  x = 9223372036854775808;\n}\n", head);
  expect_error(buf, "t.tile:2:7: error: integer literal out of range");
  snprintf(buf, sizeof buf, "%s  x = 0x7fffffffffffffff + 1e999;\n}\n", head);
  expect_error(buf, "t.tile:2:28: error: float literal out of range");
  snprintf(buf, sizeof buf, "%s  x = 1; /* open\n\n}\n", head);
  expect_error(buf, "t.tile:2:10: error: unterminated /* comment");
  snprintf(buf, sizeof buf, "%s  caf\xc3\xa9 = 1;\n}\n", head);
  expect_error(buf, "t.tile:2:6: error: stray byte 0xC3 in input");
  snprintf(buf, sizeof buf, "%s  x = a @ b;\n}\n", head);
  expect_error(buf, "stray '@' in input");
  snprintf(buf, sizeof buf, "%s  f(x) = 1;\n}\n", head);
  expect_error(buf, "t.tile:2:3: error: cannot assign to 'f(x)'");
  snprintf(buf, sizeof buf, "%s  a[1];\n}\n", head);
  expect_error(buf, "t.tile:2:3: error: expression statement must be a call, found 'a[1]'");
  snprintf(buf, sizeof buf, "%s  for i in x { }\n}\n", head);
  expect_error(buf, "unexpected '{', expecting '('");
  expect_error("kernel k(A f32) grid (1) threads (1) as (b) { }",
               "t.tile:1:12: error: syntax error, unexpected identifier 'f32', expecting ':'");

  /* A NUL byte (strlen would stop at it). */
  static const char nul[] = "kernel k() grid (1) threads (1) as (b) { x\0 = 1; }";
  msgs = parse_errors(nul, sizeof nul - 1, &n);
  CHECK(n == 1 && strstr(msgs, "t.tile:1:43: error: NUL byte in input"));
  free(msgs);

  /* Errors in two kernels: recovery at kernel level reports both. */
  const char *two = "kernel a(X: f32 grid (1) threads (1) as (b) { fill(X, 0); }\n"
                    "kernel b() grid (1) threads (1) as (b) { fill(X, 0) }\n";
  msgs = parse_errors(two, strlen(two), &n);
  CHECK(n == 2 && strstr(msgs, "t.tile:1:17:") && strstr(msgs, "t.tile:2:53:"));
  free(msgs);
}

/* Inputs that must be rejected (or accepted) without crashing or hanging. */
static void test_hostile(void) {
  int n;
  enum { DEEP = 200000 };
  char *deep = malloc(DEEP * 2 + 64);
  strcpy(deep, "kernel k() grid (1) threads (1) as (b) { x = ");
  size_t at = strlen(deep);
  for (int i = 0; i < DEEP; i++) deep[at++] = '(';
  deep[at] = '\0';
  char *msgs = parse_errors(deep, at, &n);
  CHECK(n >= 1 && strstr(msgs, "nesting too deep"));
  free(msgs);
  at = 0;
  for (int i = 0; i < DEEP; i++) deep[at++] = '{';
  msgs = parse_errors(deep, at, &n);
  CHECK(n >= 1);
  free(msgs);
  free(deep);

  /* A 1 MB line: one long identifier, shown cut short. */
  size_t big = 1 << 20;
  char *line = malloc(big + 128);
  strcpy(line, "kernel k() grid (1) threads (1) as (b) { x = 1 ");
  size_t pre = strlen(line);
  memset(line + pre, 'a', big);
  strcpy(line + pre + big, " }");
  msgs = parse_errors(line, strlen(line), &n);
  CHECK(n == 1 && strstr(msgs, "t.tile:1:48: error: syntax error, unexpected identifier "
                               "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'"));
  free(msgs);
  free(line);

  /* Pseudo-random bytes. */
  unsigned state = 12345;
  char *noise = malloc(65536);
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < 65536; i++) {
      state = state * 1103515245u + 12345u;
      noise[i] = (char)(state >> 16);
    }
    msgs = parse_errors(noise, 65536, &n);
    CHECK(n >= 1);
    free(msgs);
  }
  free(noise);

  /* The empty module is fine. */
  Arena *arena = arena_create();
  Diag *diag = diag_create(stderr);
  AstModule *m = parse_tile(arena, diag, "empty.tile", "", 0);
  CHECK(m && m->nkernels == 0);
  m = parse_tile(arena, diag, "c.tile", "// only a comment\n/* and */", 27);
  CHECK(m && m->nkernels == 0);
  diag_destroy(diag);
  arena_destroy(arena);
}

typedef struct Job {
  const char *text;
  size_t len;
  int kernels;
} Job;

static void *parse_job(void *arg) {
  Job *job = arg;
  for (int i = 0; i < 50; i++) {
    Arena *arena = arena_create();
    Diag *diag = diag_create(NULL);
    AstModule *m = parse_tile(arena, diag, "fa.tile", job->text, job->len);
    if (m) job->kernels += m->nkernels;
    diag_destroy(diag);
    arena_destroy(arena);
  }
  return NULL;
}

static void test_threads(const char *text, size_t len) {
  Job jobs[2] = {{text, len, 0}, {text, len, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, parse_job, &jobs[i]) == 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK(jobs[0].kernels == 50 && jobs[1].kernels == 50);
}

/* The bit operators bind as in C: | ^ & below ==, << >> between < and +;
 * ~ is unary; &= and <<= are compound assignments. */
static void test_bit_operators(void) {
  static const char text[] =
      "kernel k(A: i32[N])\n"
      "  grid (1) threads (32) as (bx)\n"
      "{\n"
      "  x = 1 | 2 ^ 3 & 4 == 5 << 6 + 7;\n"
      "  y = ~x >> 1 < 2;\n"
      "  A[0] &= 3;\n"
      "  A[0] <<= x;\n"
      "}\n";
  Arena *arena = arena_create();
  Diag *diag = diag_create(NULL);
  AstModule *m = parse_tile(arena, diag, "bits.tile", text, sizeof text - 1);
  CHECK(m != NULL);
  if (m) {
    AstStmt *s = m->kernels->body->u.block.stmts;
    AstExpr *e = s->u.assign.value; /* 1 | (2 ^ (3 & (4 == (5 << (6 + 7))))) */
    CHECK(e->kind == AST_EXPR_BINARY && e->u.op.op == AST_OP_BOR);
    e = e->u.op.rhs;
    CHECK(e->u.op.op == AST_OP_XOR);
    e = e->u.op.rhs;
    CHECK(e->u.op.op == AST_OP_BAND);
    e = e->u.op.rhs;
    CHECK(e->u.op.op == AST_OP_EQ);
    e = e->u.op.rhs;
    CHECK(e->u.op.op == AST_OP_SHL && e->u.op.rhs->u.op.op == AST_OP_ADD);
    AstExpr *y = s->next->u.assign.value; /* ((~x) >> 1) < 2 */
    CHECK(y->u.op.op == AST_OP_LT && y->u.op.lhs->u.op.op == AST_OP_SHR);
    CHECK(y->u.op.lhs->u.op.lhs->kind == AST_EXPR_UNARY && y->u.op.lhs->u.op.lhs->u.op.op == AST_OP_BNOT);
    CHECK(s->next->next->u.assign.op == AST_OP_BAND);
    CHECK(s->next->next->next->u.assign.op == AST_OP_SHL);
    CHECK_STR(ast_expr_str(arena, s->u.assign.value), "1 | 2 ^ 3 & 4 == 5 << 6 + 7");
  }
  diag_destroy(diag);
  arena_destroy(arena);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_parser flash_attention.tile\n");
    return 2;
  }
  size_t len;
  char *text = read_file(argv[1], &len);
  test_flagship(text, len);
  test_errors();
  test_hostile();
  test_threads(text, len);
  test_bit_operators();
  free(text);
  if (failures) {
    fprintf(stderr, "test_parser: %d check(s) failed\n", failures);
    return 1;
  }
  printf("test_parser: ok\n");
  return 0;
}
