/* test_ir.c - unit tests of the IR library and the C backend.
 *
 * Builds IR by hand with the ir.h constructors (no front end involved):
 *  - vadd: C = alpha * (A + B) + f32(H), H = f16(A + B), with a dynamic n,
 *    a fragment buffer, a LET, a guarded parallel loop; verified, printed
 *    (substrings checked), emitted as C, compiled with the system compiler,
 *    dlopen'ed and run on n = 100 (not a multiple of the block) with exact
 *    checks, elements past n included (they must stay untouched);
 *  - verifier negatives: a load with the wrong index count, a variable used
 *    outside its loop, a binary node with a wrong dtype;
 *  - the C backend refusing an unlowered COPY;
 *  - printer details: precedence, float spelling, shadowed names;
 *  - the prelude's f16/bf16 conversions, compiled into a small program that
 *    checks every f16/bf16 bit pattern and a sweep of f32 values.
 * And small .tile strings compiled through the whole pipeline, their IR and
 * CUDA text checked: defer-wgmma-waits on sm_90a (test_defer_wgmma_waits),
 * a pipelined 1-D f32 shared tile on cp.async / TMA
 * (test_f32_vector_pipelined), fragment atomic_add by column pairs
 * (test_atomic_add_pairs), wgmma with the warpgroups splitting N
 * (test_nsplit: the layout fields after the pipeline, the CUDA's
 * formulas, the mma.sync cases).
 * The compiler command is $TILEC_CC, or "cc". TILEC_UNIT_KEEP=1 keeps the
 * generated files (their folder is printed). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "ast.h"
#include "backend/backend.h"
#include "diag.h"
#include "ir.h"
#include "passes/passes.h"
#include "simplify.h"
#include "sema.h"
#include "tilec.h"
#include "strbuf.h"

static int failures;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                             \
    }                                                                         \
  } while (0)

#define CHECK_CONTAINS(text, needle)                                                     \
  do {                                                                                   \
    if (!(text) || !strstr((text), (needle))) {                                          \
      fprintf(stderr, "%s:%d: expected to find \"%s\" in:\n%s\n", __FILE__, __LINE__,    \
              (needle), (text) ? (text) : "(null)");                                     \
      failures++;                                                                        \
    }                                                                                    \
  } while (0)

static SrcLoc at(int line, int col) { return (SrcLoc){"vadd.tile", line, col}; }

static const char *cc_command(void) {
  const char *cc = getenv("TILEC_CC");
  return cc && *cc ? cc : "cc";
}

/* A scratch directory, removed at exit by cleanup(). */
static char scratch[256];

static void cleanup(void) {
  if (!scratch[0]) return;
  if (getenv("TILEC_UNIT_KEEP")) { /* for debugging: keep the generated files */
    fprintf(stderr, "kept %s\n", scratch);
    return;
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", scratch);
}

static const char *scratch_path(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  return path;
}

static bool write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  fputs(text, f);
  return fclose(f) == 0;
}

/* Independent f16 encode/decode for exactly representable normal values
 * (frexp/ldexp), so the checks do not trust the helpers under test. */
static uint16_t f16_bits_exact(double x) {
  if (x == 0) return signbit(x) ? 0x8000 : 0;
  uint16_t sign = x < 0 ? 0x8000 : 0;
  int e;
  double f = frexp(fabs(x), &e);            /* x = f * 2^e, f in [0.5, 1) */
  int mant = (int)((f * 2 - 1) * 1024);     /* 10 fraction bits */
  return (uint16_t)(sign | ((e - 1 + 15) << 10) | mant);
}

static double f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* ---- vadd ----------------------------------------------------------------- */

enum { BLOCK = 64, N = 100, CAP = 128 };

typedef struct Vadd {
  IrModule *m;
  IrKernel *k;
  IrVar *n, *bx, *alpha;
  IrBuffer *A, *B, *C, *H, *frag;
  IrStmt *loop;
} Vadd;

static IrBuffer *tensor(IrModule *m, IrVar *n, const char *name, DType t, int index, int line) {
  IrExpr *shape[1] = {ir_var_ref(m, n, at(line, 20))};
  IrBuffer *b = ir_buffer_new(m, name, t, IR_SCOPE_GLOBAL, 1, shape, at(line, 5));
  b->param_index = index;
  return b;
}

/* kernel vadd(A: f32[n], B: f32[n], C: f32[n], H: f16[n], alpha: f32)
 *   grid(ceildiv(n, 64)) threads(64) as (bx)
 * { frag = alloc_fragment([64], f32);
 *   for i in parallel(64) { g = bx * 64 + i;
 *     if (g < n) { frag[i] = A[g] + B[g]; C[g] = alpha * frag[i] + f32(H[g]);
 *                  H[g] = f16(frag[i]); } } } */
static Vadd build_vadd(Arena *arena) {
  Vadd v;
  IrModule *m = v.m = ir_module_new(arena, "vadd.tile");
  IrKernel *k = v.k = ARENA_NEW(arena, IrKernel);
  k->name = "vadd";
  k->loc = at(1, 1);
  v.n = ir_var_new(m, "n", IR_VAR_SYMBOL, DTYPE_I64, at(1, 20));
  v.n->dynamic_index = 0;
  k->symbols = ARENA_NEW_ARRAY(arena, IrVar *, 1);
  k->symbols[0] = v.n;
  k->nsymbols = 1;

  v.A = tensor(m, v.n, "A", DTYPE_F32, 0, 2);
  v.B = tensor(m, v.n, "B", DTYPE_F32, 1, 3);
  v.C = tensor(m, v.n, "C", DTYPE_F32, 2, 4);
  v.H = tensor(m, v.n, "H", DTYPE_F16, 3, 5);
  v.alpha = ir_var_new(m, "alpha", IR_VAR_SCALAR_PARAM, DTYPE_F32, at(6, 5));
  v.alpha->param_index = 4;
  k->nparams = 5;
  k->params = ARENA_NEW_ARRAY(arena, IrParam, 5);
  IrBuffer *bufs[4] = {v.A, v.B, v.C, v.H};
  for (int i = 0; i < 4; i++)
    k->params[i] = (IrParam){.name = bufs[i]->name, .is_tensor = true, .buffer = bufs[i], .scalar = NULL, .loc = bufs[i]->loc};
  k->params[4] = (IrParam){.name = "alpha", .is_tensor = false, .buffer = NULL, .scalar = v.alpha, .loc = at(6, 5)};

  k->grid[0] = ir_call(m, IR_INTRINSIC_CEILDIV, ir_var_ref(m, v.n, at(7, 17)),
                       ir_int(m, BLOCK, at(7, 20)), at(7, 8));
  k->ngrid = 1;
  k->threads = ir_int(m, BLOCK, at(7, 33));
  v.bx = ir_var_new(m, "bx", IR_VAR_BLOCK_INDEX, DTYPE_I64, at(7, 41));
  v.bx->grid_dim = 0;
  k->block_vars[0] = v.bx;

  IrStmt *body = k->body = ir_seq_new(m, at(8, 1));
  IrExpr *fshape[1] = {ir_int(m, BLOCK, at(9, 27))};
  v.frag = ir_buffer_new(m, "frag", DTYPE_F32, IR_SCOPE_FRAGMENT, 1, fshape, at(9, 5));
  IrStmt *alloc = ir_stmt_new(m, IR_STMT_ALLOC, at(9, 5));
  alloc->u.alloc = v.frag;
  ir_seq_push(m, body, alloc);

  IrVar *i = ir_var_new(m, "i", IR_VAR_LOOP, DTYPE_I64, at(10, 9));
  IrStmt *lbody = ir_seq_new(m, at(10, 28));
  v.loop = ir_for_new(m, IR_FOR_PARALLEL, i, ir_int(m, BLOCK, at(10, 23)), lbody, at(10, 5));
  ir_seq_push(m, body, v.loop);

  IrVar *g = ir_var_new(m, "g", IR_VAR_LET, DTYPE_I64, at(11, 9));
  IrExpr *gval = ir_binary(m, IR_OP_ADD,
                           ir_binary(m, IR_OP_MUL, ir_var_ref(m, v.bx, at(11, 13)),
                                     ir_int(m, BLOCK, at(11, 18)), at(11, 16)),
                           ir_var_ref(m, i, at(11, 23)), at(11, 21));
  IrStmt *let = ir_stmt_new(m, IR_STMT_LET, at(11, 9));
  let->u.let.var = g;
  let->u.let.value = gval;
  ir_seq_push(m, lbody, let);

  IrStmt *then_ = ir_seq_new(m, at(12, 20));
  IrExpr *cond = ir_binary(m, IR_OP_LT, ir_var_ref(m, g, at(12, 13)),
                           ir_var_ref(m, v.n, at(12, 17)), at(12, 15));
  ir_seq_push(m, lbody, ir_if_new(m, cond, then_, NULL, at(12, 9)));

  IrExpr *gi[1], *ii[1];
  /* frag[i] = A[g] + B[g] */
  gi[0] = ir_var_ref(m, g, at(13, 24));
  IrExpr *a = ir_load(m, v.A, gi, at(13, 22));
  gi[0] = ir_var_ref(m, g, at(13, 31));
  IrExpr *b = ir_load(m, v.B, gi, at(13, 29));
  ii[0] = ir_var_ref(m, i, at(13, 18));
  ir_seq_push(m, then_, ir_store_new(m, v.frag, ii, ir_binary(m, IR_OP_ADD, a, b, at(13, 27)),
                                     at(13, 13)));
  /* C[g] = alpha * frag[i] + f32(H[g]) */
  ii[0] = ir_var_ref(m, i, at(14, 33));
  IrExpr *scaled = ir_binary(m, IR_OP_MUL, ir_var_ref(m, v.alpha, at(14, 20)),
                             ir_load(m, v.frag, ii, at(14, 28)), at(14, 26));
  gi[0] = ir_var_ref(m, g, at(14, 44));
  IrExpr *h = ir_cast(m, DTYPE_F32, ir_load(m, v.H, gi, at(14, 42)), at(14, 38));
  gi[0] = ir_var_ref(m, g, at(14, 15));
  ir_seq_push(m, then_,
              ir_store_new(m, v.C, gi, ir_binary(m, IR_OP_ADD, scaled, h, at(14, 36)), at(14, 13)));
  /* H[g] = f16(frag[i]) */
  ii[0] = ir_var_ref(m, i, at(15, 29));
  IrExpr *narrowed = ir_cast(m, DTYPE_F16, ir_load(m, v.frag, ii, at(15, 24)), at(15, 20));
  gi[0] = ir_var_ref(m, g, at(15, 15));
  ir_seq_push(m, then_, ir_store_new(m, v.H, gi, narrowed, at(15, 13)));

  m->kernels = ARENA_NEW_ARRAY(arena, IrKernel *, 1);
  m->kernels[0] = k;
  m->nkernels = 1;
  return v;
}

typedef void (*KernelFn)(void **args, const int64_t *dyn);

/* Compiles `source` into a shared object and returns the kernel, or NULL. */
static KernelFn compile_and_load(const char *source, const char *entry, void **handle) {
  char c_path[512], so_path[512];
  snprintf(c_path, sizeof c_path, "%s/%s.c", scratch, entry);
  snprintf(so_path, sizeof so_path, "%s/%s.so", scratch, entry);
  CHECK(write_file(c_path, source));
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -o '%s' '%s' -lm",
           cc_command(), so_path, c_path);
  int rc = system(cmd);
  CHECK(rc == 0);
  if (rc != 0) {
    fprintf(stderr, "command failed: %s\n--- source ---\n%s\n", cmd, source);
    return NULL;
  }
  *handle = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  CHECK(*handle != NULL);
  if (!*handle) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return NULL;
  }
  void *sym = dlsym(*handle, entry);
  CHECK(sym != NULL);
  KernelFn fn;
  memcpy(&fn, &sym, sizeof fn); /* object pointer -> function pointer, POSIX-style */
  return sym ? fn : NULL;
}

static void test_vadd(void) {
  Arena *arena = arena_create();
  Diag *diag = diag_create(stderr);
  Vadd v = build_vadd(arena);

  CHECK(ir_verify_module(v.m, "test", diag));
  CHECK(diag_error_count(diag) == 0);

  char *text = ir_module_to_string(v.m);
  CHECK_CONTAINS(text, "kernel vadd(A: f32[n] global, B: f32[n] global, C: f32[n] global, "
                       "H: f16[n] global, alpha: f32)  // @1:1\n");
  CHECK_CONTAINS(text, "  symbols(n dyn(0))\n");
  CHECK_CONTAINS(text, "  grid(ceildiv(n, 64)) threads(64) as (bx)\n{\n");
  CHECK_CONTAINS(text, "  alloc frag: f32[64] fragment layout(row_major)  // @9:5\n");
  CHECK_CONTAINS(text, "  for i in parallel(64) {  // @10:5\n");
  CHECK_CONTAINS(text, "    let g: i64 = bx * 64 + i  // @11:9\n");
  CHECK_CONTAINS(text, "    if (g < n) {  // @12:9\n");
  CHECK_CONTAINS(text, "      C[g] = alpha * frag[i] + f32(H[g])  // @14:13\n");
  CHECK_CONTAINS(text, "      H[g] = f16(frag[i])  // @15:13\n");
  char *again = ir_module_to_string(v.m);
  CHECK(strcmp(text, again) == 0); /* deterministic */
  free(again);
  free(text);

  StrBuf c;
  sb_init(&c);
  CHECK(emit_c_module(v.m, &c, diag));
  char *source = sb_take(&c);
  CHECK_CONTAINS(source, "/* Generated by tilec");
  CHECK_CONTAINS(source, "from vadd.tile");
  CHECK_CONTAINS(source, "void tilec_vadd(void **tc_args, const int64_t *tc_dyn)");
  CHECK_CONTAINS(source, "const int64_t n = tc_dyn[0];");
  CHECK_CONTAINS(source, "uint16_t *restrict H = (uint16_t *)tc_args[3];");

  void *handle = NULL;
  KernelFn fn = compile_and_load(source, "tilec_vadd", &handle);
  if (fn) {
    float A[CAP], B[CAP], C[CAP];
    uint16_t H[CAP];
    for (int j = 0; j < CAP; j++) {
      A[j] = j * 0.5f;
      B[j] = j * 1.25f;
      C[j] = -7.0f;                                   /* sentinel */
      H[j] = j < N ? f16_bits_exact((j - 50) * 0.25) : 0xabcd;
    }
    float alpha = 2.0f;
    void *args[5] = {A, B, C, H, &alpha};
    int64_t dyn[1] = {N};
    fn(args, dyn);
    int bad = 0;
    for (int j = 0; j < CAP && bad < 5; j++) {
      float want_c = j < N ? (float)(3.5 * j + (j - 50) * 0.25) : -7.0f;
      double want_h = j < N ? 1.75 * j : f16_value(0xabcd);
      if (C[j] != want_c || f16_value(H[j]) != want_h) {
        fprintf(stderr, "vadd: element %d: C = %.9g (want %.9g), H = %.9g (want %.9g)\n", j,
                C[j], want_c, f16_value(H[j]), want_h);
        bad++;
      }
    }
    CHECK(bad == 0);
    CHECK(C[99] == 3.5f * 99 + 49 * 0.25f && C[100] == -7.0f && H[100] == 0xabcd);
  }
  if (handle) dlclose(handle);
  free(source);
  diag_destroy(diag);
  arena_destroy(arena);
}

/* ---- rowmax: 2-D indexing, bound symbols, -inf, max, exp2, bf16, names ---- */

/* kernel rowmax(X: f32[rows, W], Y: f32[rows], Z: bf16[rows])
 *   const (W = 8, flag = true)  grid(rows) threads(32) as (bx)
 * { double = alloc_local([1], f32); double[0] = -inf;
 *   for int in pipelined(W, num_stages = 2) {
 *     bx = bx;                                // a LET shadowing the block index
 *     double[0] = max(double[0], if_then_else(flag, X[bx, int], 0.0)); }
 *   tc_maxf = exp2(double[0] - double[0]);    // 1, named like a prelude helper
 *   Y[bx] = double[0] + tc_maxf; Z[bx] = bf16(double[0]); }
 * The C keywords as names and the self-referencing LET must come out as
 * valid, correct C. */
static void test_rowmax(void) {
  Arena *arena = arena_create();
  IrModule *m = ir_module_new(arena, "rowmax.tile");
  SrcLoc L = {"rowmax.tile", 1, 1};
  IrKernel *k = ARENA_NEW(arena, IrKernel);
  k->name = "rowmax";
  k->loc = L;
  IrVar *rows = ir_var_new(m, "rows", IR_VAR_SYMBOL, DTYPE_I64, L);
  rows->dynamic_index = 0;
  IrVar *W = ir_var_new(m, "W", IR_VAR_SYMBOL, DTYPE_I64, L);
  W->is_const_decl = true;
  W->default_value = ir_int(m, 8, L);
  W->bound = true;
  W->value = ir_int(m, 8, L);
  IrVar *flag = ir_var_new(m, "flag", IR_VAR_SYMBOL, DTYPE_BOOL, L);
  flag->bound = true;
  flag->value = ir_bool(m, true, L);
  k->symbols = ARENA_NEW_ARRAY(arena, IrVar *, 3);
  k->symbols[0] = rows, k->symbols[1] = W, k->symbols[2] = flag;
  k->nsymbols = 3;
  IrExpr *xs[2] = {ir_var_ref(m, rows, L), ir_var_ref(m, W, L)};
  IrBuffer *X = ir_buffer_new(m, "X", DTYPE_F32, IR_SCOPE_GLOBAL, 2, xs, L);
  IrExpr *ys[1] = {ir_var_ref(m, rows, L)};
  IrBuffer *Y = ir_buffer_new(m, "Y", DTYPE_F32, IR_SCOPE_GLOBAL, 1, ys, L);
  ys[0] = ir_var_ref(m, rows, L);
  IrBuffer *Z = ir_buffer_new(m, "Z", DTYPE_BF16, IR_SCOPE_GLOBAL, 1, ys, L);
  k->nparams = 3;
  k->params = ARENA_NEW_ARRAY(arena, IrParam, 3);
  k->params[0] = (IrParam){.name = "X", .is_tensor = true, .buffer = X, .scalar = NULL, .loc = L};
  k->params[1] = (IrParam){.name = "Y", .is_tensor = true, .buffer = Y, .scalar = NULL, .loc = L};
  k->params[2] = (IrParam){.name = "Z", .is_tensor = true, .buffer = Z, .scalar = NULL, .loc = L};
  X->param_index = 0, Y->param_index = 1, Z->param_index = 2;
  k->grid[0] = ir_var_ref(m, rows, L);
  k->ngrid = 1;
  k->threads = ir_int(m, 32, L);
  IrVar *bx = ir_var_new(m, "bx", IR_VAR_BLOCK_INDEX, DTYPE_I64, L);
  bx->grid_dim = 0;
  k->block_vars[0] = bx;

  IrStmt *body = k->body = ir_seq_new(m, L);
  IrExpr *one[1] = {ir_int(m, 1, L)};
  IrBuffer *acc = ir_buffer_new(m, "double", DTYPE_F32, IR_SCOPE_LOCAL, 1, one, L);
  IrStmt *alloc = ir_stmt_new(m, IR_STMT_ALLOC, L);
  alloc->u.alloc = acc;
  ir_seq_push(m, body, alloc);
  IrExpr *zero[1] = {ir_int(m, 0, L)};
  ir_seq_push(m, body, ir_store_new(m, acc, zero, ir_float(m, -INFINITY, DTYPE_F32, L), L));

  IrVar *iv = ir_var_new(m, "int", IR_VAR_LOOP, DTYPE_I64, L);
  IrStmt *lb = ir_seq_new(m, L);
  IrStmt *loop = ir_for_new(m, IR_FOR_PIPELINED, iv, ir_var_ref(m, W, L), lb, L);
  loop->u.for_.num_stages = 2;
  ir_seq_push(m, body, loop);
  IrVar *bx2 = ir_var_new(m, "bx", IR_VAR_LET, DTYPE_I64, L);
  IrStmt *let = ir_stmt_new(m, IR_STMT_LET, L);
  let->u.let.var = bx2;
  let->u.let.value = ir_var_ref(m, bx, L);
  ir_seq_push(m, lb, let);
  IrExpr *xi[2] = {ir_var_ref(m, bx2, L), ir_var_ref(m, iv, L)};
  IrExpr *pick = ir_select(m, ir_var_ref(m, flag, L), ir_load(m, X, xi, L),
                           ir_float(m, 0.0, DTYPE_F32, L), L);
  zero[0] = ir_int(m, 0, L);
  IrExpr *cur = ir_load(m, acc, zero, L);
  zero[0] = ir_int(m, 0, L);
  ir_seq_push(m, lb, ir_store_new(m, acc, zero, ir_call(m, IR_INTRINSIC_MAX, cur, pick, L), L));

  IrVar *sv = ir_var_new(m, "tc_maxf", IR_VAR_LET, DTYPE_F32, L); /* a helper's name */
  zero[0] = ir_int(m, 0, L);
  IrExpr *d1 = ir_load(m, acc, zero, L);
  zero[0] = ir_int(m, 0, L);
  IrExpr *d2 = ir_load(m, acc, zero, L);
  IrStmt *lets = ir_stmt_new(m, IR_STMT_LET, L);
  lets->u.let.var = sv;
  lets->u.let.value = ir_call(m, IR_INTRINSIC_EXP2, ir_binary(m, IR_OP_SUB, d1, d2, L), NULL, L);
  ir_seq_push(m, body, lets);
  IrExpr *yi[1] = {ir_var_ref(m, bx, L)};
  zero[0] = ir_int(m, 0, L);
  ir_seq_push(m, body, ir_store_new(m, Y, yi,
                                    ir_binary(m, IR_OP_ADD, ir_load(m, acc, zero, L),
                                              ir_var_ref(m, sv, L), L), L));
  yi[0] = ir_var_ref(m, bx, L);
  zero[0] = ir_int(m, 0, L);
  ir_seq_push(m, body, ir_store_new(m, Z, yi, ir_cast(m, DTYPE_BF16, ir_load(m, acc, zero, L), L), L));
  m->kernels = ARENA_NEW_ARRAY(arena, IrKernel *, 1);
  m->kernels[0] = k;
  m->nkernels = 1;

  Diag *diag = diag_create(stderr);
  CHECK(ir_verify_module(m, "test", diag));
  char *text = ir_module_to_string(m);
  CHECK_CONTAINS(text, "  symbols(rows dyn(0), W = 8, flag = true)\n");
  CHECK_CONTAINS(text, "  for int in pipelined(W, num_stages = 2) {");
  CHECK_CONTAINS(text, "    let bx.1: i64 = bx  // @");
  CHECK_CONTAINS(text, "max(double[0], if_then_else(flag, X[bx.1, int], 0.0))");
  CHECK_CONTAINS(text, "  double[0] = -inf  // @");
  free(text);
  StrBuf c;
  sb_init(&c);
  CHECK(emit_c_module(m, &c, diag));
  char *source = sb_take(&c);
  void *handle = NULL;
  KernelFn fn = compile_and_load(source, "tilec_rowmax", &handle);
  if (fn) {
    enum { R = 5, RW = 8 };
    float Xv[R * RW], Yv[R + 1];
    uint16_t Zv[R + 1];
    for (int r = 0; r < R; r++)
      for (int j = 0; j < RW; j++) Xv[r * RW + j] = -(float)(r + 1) * (float)(1 + (j * 3) % RW) * 0.5f;
    Yv[R] = 42.0f, Zv[R] = 0x1234;
    void *args[3] = {Xv, Yv, Zv};
    int64_t dyn[1] = {R};
    fn(args, dyn);
    for (int r = 0; r < R; r++) {
      float want = -(float)(r + 1) * 0.5f; /* the row's max */
      CHECK(Yv[r] == want + 1.0f);
      uint32_t bits = (uint32_t)Zv[r] << 16;
      float z;
      memcpy(&z, &bits, 4);
      CHECK(z == want);
    }
    CHECK(Yv[R] == 42.0f && Zv[R] == 0x1234);
  }
  if (handle) dlclose(handle);
  free(source);
  diag_destroy(diag);
  arena_destroy(arena);
}

/* ---- Verifier and backend negatives ---------------------------------------- */

static void expect_invalid(IrModule *m, const char *what) {
  Diag *diag = diag_create(NULL);
  CHECK(!ir_verify_module(m, "neg-test", diag));
  CHECK(diag_error_count(diag) == 1);
  CHECK_CONTAINS(diag_text(diag), "internal error: IR invalid after pass 'neg-test': ");
  CHECK_CONTAINS(diag_text(diag), what);
  diag_destroy(diag);
}

static void test_verify_negative(void) {
  /* A load of the rank-1 A with two indices, at its own location. */
  {
    Arena *arena = arena_create();
    Vadd v = build_vadd(arena);
    IrStmt *then_ = v.loop->u.for_.body->u.seq.items[1]->u.if_.then_;
    IrExpr *load = then_->u.seq.items[0]->u.store.value->u.op.a;
    CHECK(load->kind == IR_EXPR_LOAD && load->u.load.buf == v.A);
    load->u.load.idx[1] = ir_int(v.m, 0, at(13, 26));
    load->u.load.nidx = 2;
    expect_invalid(v.m, "vadd.tile:13:22: error:");
    expect_invalid(v.m, "load of 'A' with 2 indices, but the buffer has rank 1");
    arena_destroy(arena);
  }
  /* The loop variable i used after its loop. */
  {
    Arena *arena = arena_create();
    Vadd v = build_vadd(arena);
    IrExpr *idx[1] = {ir_var_ref(v.m, v.loop->u.for_.var, at(20, 7))};
    ir_seq_push(v.m, v.k->body, ir_store_new(v.m, v.frag, idx, ir_float(v.m, 1.0, DTYPE_F32, at(20, 12)),
                                            at(20, 3)));
    expect_invalid(v.m, "variable 'i' used outside its scope");
    arena_destroy(arena);
  }
  /* A binary node whose dtype disagrees with its operands. */
  {
    Arena *arena = arena_create();
    Vadd v = build_vadd(arena);
    IrStmt *let = v.loop->u.for_.body->u.seq.items[0];
    let->u.let.value->dtype = DTYPE_F32;
    expect_invalid(v.m, "binary expression has dtype f32, expected i64");
    arena_destroy(arena);
  }
  /* pass early-exit's statement: at the top level it verifies and prints;
   * inside a loop (the block would leave some iterations' work half done)
   * it does not. */
  {
    Arena *arena = arena_create();
    Vadd v = build_vadd(arena);
    IrStmt *exit = ir_stmt_new(v.m, IR_STMT_EXIT, at(31, 5));
    exit->u.exit_.cond = ir_binary(v.m, IR_OP_GE, ir_var_ref(v.m, v.bx, at(31, 13)),
                                   ir_int(v.m, 4, at(31, 18)), at(31, 13));
    ir_seq_insert(v.m, v.k->body, 0, exit);
    Diag *diag = diag_create(NULL);
    CHECK(ir_verify_module(v.m, "test", diag));
    char *text = ir_module_to_string(v.m);
    CHECK_CONTAINS(text, "  exit if (bx >= 4)  // @31:5\n");
    free(text);
    diag_destroy(diag);
    ir_seq_remove(v.k->body, 0);
    ir_seq_push(v.m, v.loop->u.for_.body, exit);
    expect_invalid(v.m, "kernel 'vadd': an exit statement below the top level");
    arena_destroy(arena);
  }
  /* An unlowered COPY: verifies, but the C backend refuses it. */
  {
    Arena *arena = arena_create();
    Vadd v = build_vadd(arena);
    IrStmt *copy = ir_stmt_new(v.m, IR_STMT_COPY, at(30, 5));
    copy->u.copy.src = ir_region_whole(v.m, v.frag, at(30, 10));
    copy->u.copy.dst = ir_region_whole(v.m, v.frag, at(30, 16));
    ir_seq_push(v.m, v.k->body, copy);
    Diag *diag = diag_create(NULL);
    CHECK(ir_verify_module(v.m, "test", diag));
    char *text = ir_module_to_string(v.m);
    CHECK_CONTAINS(text, "  copy frag -> frag  // @30:5\n");
    free(text);
    StrBuf out;
    sb_init(&out);
    CHECK(!emit_c_module(v.m, &out, diag));
    CHECK(out.len == 0); /* nothing half-written */
    CHECK_CONTAINS(diag_text(diag), "vadd.tile:30:5: error: internal error: C backend: 'copy' "
                                    "was not lowered");
    sb_free(&out);
    diag_destroy(diag);
    arena_destroy(arena);
  }
}

/* ---- Printer details -------------------------------------------------------- */

static void check_expr_text(Arena *arena, const IrExpr *e, const char *want) {
  const char *got = ir_expr_to_string(arena, e);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "printed \"%s\", expected \"%s\"\n", got, want);
    failures++;
  }
}

static void test_printer(void) {
  Arena *arena = arena_create();
  IrModule *m = ir_module_new(arena, "p.tile");
  SrcLoc L = at(1, 1);
  IrVar *a = ir_var_new(m, "a", IR_VAR_LET, DTYPE_I64, L);
  IrVar *b = ir_var_new(m, "b", IR_VAR_LET, DTYPE_I64, L);
  IrVar *c = ir_var_new(m, "c", IR_VAR_LET, DTYPE_I64, L);
  IrVar *x = ir_var_new(m, "x", IR_VAR_LET, DTYPE_F32, L);
#define V(var) ir_var_ref(m, var, L)
  check_expr_text(arena, ir_binary(m, IR_OP_MUL, ir_binary(m, IR_OP_ADD, V(a), V(b), L), V(c), L),
                  "(a + b) * c");
  check_expr_text(arena, ir_binary(m, IR_OP_ADD, V(a), ir_binary(m, IR_OP_MUL, V(b), V(c), L), L),
                  "a + b * c");
  check_expr_text(arena, ir_binary(m, IR_OP_SUB, V(a), ir_binary(m, IR_OP_SUB, V(b), V(c), L), L),
                  "a - (b - c)");
  check_expr_text(arena, ir_binary(m, IR_OP_SUB, ir_binary(m, IR_OP_SUB, V(a), V(b), L), V(c), L),
                  "a - b - c");
  check_expr_text(arena,
                  ir_binary(m, IR_OP_AND, ir_binary(m, IR_OP_LT, V(a), V(b), L),
                            ir_binary(m, IR_OP_OR, ir_bool(m, true, L), ir_bool(m, false, L), L), L),
                  "a < b && (true || false)");
  check_expr_text(arena, ir_unary(m, IR_OP_NEG, ir_unary(m, IR_OP_NEG, V(x), L), L), "-(-x)");
  check_expr_text(arena, ir_float(m, 0.0, DTYPE_F32, L), "0.0");
  check_expr_text(arena, ir_float(m, 1.4426950408889634, DTYPE_F32, L), "1.4426950408889634");
  check_expr_text(arena, ir_float(m, -INFINITY, DTYPE_F32, L), "-inf");
  check_expr_text(arena, ir_float(m, INFINITY, DTYPE_F32, L), "inf");
  check_expr_text(arena, ir_float(m, 2.0, DTYPE_F64, L), "f64(2.0)");
  check_expr_text(arena, ir_binary(m, IR_OP_MUL, V(a), ir_float(m, -0.5, DTYPE_F32, L), L),
                  "a * -0.5");
  IrExpr *sel = ir_select(m, ir_binary(m, IR_OP_GE, V(a), V(b), L), ir_int(m, 0, L),
                          ir_float(m, -INFINITY, DTYPE_F32, L), L);
  check_expr_text(arena, sel, "if_then_else(a >= b, 0, -inf)");
  CHECK(sel->dtype == DTYPE_F32);
  check_expr_text(arena,
                  ir_call(m, IR_INTRINSIC_EXP2,
                          ir_binary(m, IR_OP_SUB, V(x), ir_cast(m, DTYPE_F32, V(a), L), L), NULL, L),
                  "exp2(x - f32(a))");
#undef V

  /* Dtype rules of the constructors. */
  CHECK(ir_binary_dtype(IR_OP_ADD, DTYPE_F16, DTYPE_BF16) == DTYPE_F32);
  CHECK(ir_binary_dtype(IR_OP_ADD, DTYPE_F16, DTYPE_F16) == DTYPE_F16);
  CHECK(ir_binary_dtype(IR_OP_MUL, DTYPE_I64, DTYPE_BF16) == DTYPE_BF16);
  CHECK(ir_binary_dtype(IR_OP_ADD, DTYPE_F64, DTYPE_F32) == DTYPE_F64);
  CHECK(ir_binary_dtype(IR_OP_ADD, DTYPE_I32, DTYPE_I32) == DTYPE_I64);
  CHECK(ir_binary_dtype(IR_OP_LE, DTYPE_F32, DTYPE_I64) == DTYPE_BOOL);

  /* Clone, subst, equality. */
  IrExpr *e = ir_binary(m, IR_OP_ADD, ir_var_ref(m, a, L), ir_int(m, 1, L), L);
  IrExpr *cl = ir_expr_clone(m, e);
  CHECK(cl != e && ir_expr_equal(cl, e));
  IrExpr *sub = ir_expr_subst(m, e, a, ir_int(m, 41, L));
  check_expr_text(arena, sub, "41 + 1");
  check_expr_text(arena, e, "a + 1"); /* e itself untouched */
  CHECK(!ir_expr_equal(sub, e));
  int64_t val = 0;
  CHECK(ir_expr_is_int_const(ir_int(m, -3, L), &val) && val == -3);
  CHECK(!ir_expr_is_int_const(e, &val));

  /* A loop variable shadowing another of the same name prints as i.1. */
  IrKernel *k = ARENA_NEW(arena, IrKernel);
  k->name = "shadow";
  k->ngrid = 1;
  k->grid[0] = ir_int(m, 1, L);
  k->threads = ir_int(m, 32, L);
  IrVar *i1 = ir_var_new(m, "i", IR_VAR_LOOP, DTYPE_I64, L);
  IrVar *i2 = ir_var_new(m, "i", IR_VAR_LOOP, DTYPE_I64, L);
  IrExpr *shape[2] = {ir_int(m, 4, L), ir_int(m, 4, L)};
  IrBuffer *t = ir_buffer_new(m, "t", DTYPE_F32, IR_SCOPE_LOCAL, 2, shape, at(2, 3));
  IrStmt *alloc = ir_stmt_new(m, IR_STMT_ALLOC, at(2, 3));
  alloc->u.alloc = t;
  IrStmt *inner = ir_seq_new(m, L);
  IrExpr *idx[2] = {ir_var_ref(m, i1, L), ir_var_ref(m, i2, L)};
  ir_seq_push(m, inner, ir_store_new(m, t, idx, ir_float(m, 1.0, DTYPE_F32, L), at(5, 7)));
  IrStmt *outer = ir_seq_new(m, L);
  ir_seq_push(m, outer, ir_for_new(m, IR_FOR_SERIAL, i2, ir_int(m, 4, L), inner, at(4, 5)));
  k->body = ir_seq_new(m, L);
  ir_seq_push(m, k->body, alloc);
  IrStmt *pipe = ir_for_new(m, IR_FOR_PIPELINED, i1, ir_int(m, 4, L), outer, at(3, 3));
  pipe->u.for_.num_stages = 3;
  ir_seq_push(m, k->body, pipe);
  m->kernels = ARENA_NEW_ARRAY(arena, IrKernel *, 1);
  m->kernels[0] = k;
  m->nkernels = 1;
  k->raster_panel = 8;
  Diag *diag = diag_create(stderr);
  CHECK(ir_verify_module(m, "test", diag));
  diag_destroy(diag);
  char *text = ir_module_to_string(m);
  CHECK_CONTAINS(text, "  raster(panel = 8, order = row)\n");
  CHECK_CONTAINS(text, "  for i in pipelined(4, num_stages = 3) {  // @3:3\n");
  CHECK_CONTAINS(text, "    for i.1 in serial(4) {  // @4:5\n");
  CHECK_CONTAINS(text, "      t[i, i.1] = 1.0  // @5:7\n");
  free(text);
  arena_destroy(arena);
}

/* ---- The prelude's conversions ------------------------------------------- */

static const char half_test_main[] =
    "#include <stdio.h>\n"
    "static double ref_bf16_value(uint32_t hi) { /* top 16 bits, inf as 2^128 */\n"
    "  if ((hi & 0x7f80u) == 0x7f80u) return (hi & 0x8000u) ? -ldexp(1, 128) : ldexp(1, 128);\n"
    "  return (double)tc_bits_f32(hi << 16);\n"
    "}\n"
    "static uint16_t ref_f32_to_bf16(float f) { /* nearest of two neighbours, ties even */\n"
    "  uint32_t x = tc_f32_bits(f), lo = x >> 16, hi = lo + 1;\n"
    "  double dl = fabs((double)f - ref_bf16_value(lo)), dh = fabs(ref_bf16_value(hi) - (double)f);\n"
    "  if (dl < dh || (dl == dh && !(lo & 1u))) return (uint16_t)lo;\n"
    "  return (uint16_t)hi;\n"
    "}\n"
    "int main(void) {\n"
    "  int bad = 0;\n"
    "  for (uint32_t h = 0; h < 65536u; h++) {\n"
    "    float f = tc_f16_to_f32((uint16_t)h);\n"
    "    uint32_t e = (h >> 10) & 31u, m = h & 1023u;\n"
    "    double want = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, (int)e - 25);\n"
    "    if (h & 0x8000u) want = -want;\n"
    "    uint16_t back = tc_f32_to_f16(f);\n"
    "    if (isnan(want) ? !isnan(f) || (back & 0x7c00u) != 0x7c00u || !(back & 0x3ffu)\n"
    "                    : ((double)f != want || back != h)) {\n"
    "      if (bad++ < 5) printf(\"f16 %04x: %g %04x\\n\", (unsigned)h, f, back);\n"
    "    }\n"
    "    float g = tc_bf16_to_f32((uint16_t)h);\n"
    "    uint16_t gb = tc_f32_to_bf16(g);\n"
    "    if (isnan(g) ? !((gb & 0x7f80u) == 0x7f80u && (gb & 0x7fu)) : gb != h) {\n"
    "      if (bad++ < 5) printf(\"bf16 %04x: %04x\\n\", (unsigned)h, gb);\n"
    "    }\n"
    "  }\n"
    "  struct { float f; uint16_t h; } cases[] = {\n"
    "    {65504.0f, 0x7bffu}, {65519.99f, 0x7bffu}, {65520.0f, 0x7c00u}, {1e9f, 0x7c00u},\n"
    "    {-INFINITY, 0xfc00u}, {0x1p-24f, 0x0001u}, {0x1p-25f, 0x0000u}, {0x1.8p-25f, 0x0001u},\n"
    "    {0x1.8p-24f, 0x0002u}, {0x1p-14f, 0x0400u}, {0x1.ff8p-15f, 0x03ffu}, {0x1.ffcp-15f, 0x0400u}, {0x1.ff4p-15f, 0x03feu},\n"
    "    {1.0f + 0x1p-11f, 0x3c00u}, {1.0f + 0x3p-11f, 0x3c02u}, {-0.0f, 0x8000u},\n"
    "    {0x1p-30f, 0x0000u}, {-2.5f, 0xc100u}, {0x1p-149f, 0x0000u}};\n"
    "  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)\n"
    "    if (tc_f32_to_f16(cases[i].f) != cases[i].h) {\n"
    "      if (bad++ < 10) printf(\"case %zu: %a -> %04x, want %04x\\n\", i, cases[i].f,\n"
    "                            tc_f32_to_f16(cases[i].f), cases[i].h);\n"
    "    }\n"
    "  if (tc_f32_to_bf16(1.0f + 0x1p-8f) != 0x3f80u || tc_f32_to_bf16(1.0f + 0x3p-8f) != 0x3f82u)\n"
    "    bad++;\n"
    "  for (uint64_t u = 0; u < 0x100000000ull; u += 2654435761ull % 9973u) {\n"
    "    float f = tc_bits_f32((uint32_t)u);\n"
    "    if (isnan(f)) continue;\n"
    "    if (tc_f32_to_bf16(f) != ref_f32_to_bf16(f)) {\n"
    "      if (bad++ < 10) printf(\"bf16 of %a: %04x, want %04x\\n\", f, tc_f32_to_bf16(f), ref_f32_to_bf16(f));\n"
    "    }\n"
    "#ifdef __FLT16_MAX__\n"
    "    _Float16 r = (_Float16)f;\n"
    "    uint16_t rb;\n"
    "    memcpy(&rb, &r, 2);\n"
    "    if (tc_f32_to_f16(f) != rb) {\n"
    "      if (bad++ < 10) printf(\"f16 of %a: %04x, want %04x\\n\", f, tc_f32_to_f16(f), rb);\n"
    "    }\n"
    "#endif\n"
    "  }\n"
    "  printf(\"%d bad\\n\", bad);\n"
    "  return bad != 0;\n"
    "}\n";

/* ir_seq_insert and ir_seq_remove keep the other items in order. */
static void test_seq_insert_remove(void) {
  Arena *arena = arena_create();
  IrModule *m = ir_module_new(arena, "seq.tile");
  SrcLoc L = {"seq.tile", 1, 1};
  IrStmt *seq = ir_seq_new(m, L), *item[4];
  for (int i = 0; i < 4; i++) item[i] = ir_seq_new(m, L);
  ir_seq_push(m, seq, item[0]);
  ir_seq_push(m, seq, item[2]);
  ir_seq_insert(m, seq, 1, item[1]);
  ir_seq_push(m, seq, item[3]);
  CHECK(seq->u.seq.n == 4);
  for (int i = 0; i < 4; i++) CHECK(seq->u.seq.items[i] == item[i]);
  ir_seq_remove(seq, 1); /* middle */
  CHECK(seq->u.seq.n == 3 && seq->u.seq.items[0] == item[0] && seq->u.seq.items[1] == item[2] &&
        seq->u.seq.items[2] == item[3]);
  ir_seq_remove(seq, 2); /* last */
  CHECK(seq->u.seq.n == 2 && seq->u.seq.items[1] == item[2]);
  ir_seq_remove(seq, 0); /* first */
  CHECK(seq->u.seq.n == 1 && seq->u.seq.items[0] == item[2]);
  arena_destroy(arena);
}

static void test_half_helpers(void) {
  StrBuf src;
  sb_init(&src);
  sb_puts(&src, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n");
  emit_c_prelude(&src);
  sb_puts(&src, half_test_main);
  char *text = sb_take(&src);
  CHECK(write_file(scratch_path("half.c"), text));
  free(text);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -Wall -Werror -o '%s/half' '%s' -lm && '%s/half'",
           cc_command(), scratch, scratch_path("half.c"), scratch);
  int rc = system(cmd);
  CHECK(rc == 0);
}

/* The C backend's FP8 helpers (emit_c_fp8_prelude) against the definition:
 * every code decoded by its formula and, when finite, encoded back to
 * itself (an infinity saturates to the largest finite); every 9973rd-ish f32 bit pattern
 * (~430k, all exponents) encoded and compared with a brute-force search for
 * the nearest finite code (ties to the even code, beyond the largest or
 * infinite: the largest, NaN: 0x7F). */
static const char fp8_test_main[] =
    "#include <stdio.h>\n"
    "static double ref_decode(int c, int e5) {\n"
    "  int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7, emax = e5 ? 31 : 15;\n"
    "  int e = (c & 0x7f) >> mb, m = c & ((1 << mb) - 1);\n"
    "  double s = (c & 0x80) ? -1.0 : 1.0;\n"
    "  if (e5 && e == emax) return m ? NAN : s * INFINITY;\n"
    "  if (!e5 && e == emax && m == 7) return NAN;\n"
    "  if (e == 0) return s * ldexp(m, 1 - bias - mb);\n"
    "  return s * ldexp(m + (1 << mb), e - bias - mb);\n"
    "}\n"
    "static int ref_encode(float f, int e5) {\n"
    "  if (f != f) return 0x7f;\n"
    "  int sign = signbit(f) ? 0x80 : 0, best = 0, top = e5 ? 0x7b : 0x7e;\n"
    "  double a = fabs((double)f), bd = INFINITY;\n"
    "  if (a >= ref_decode(top, e5)) return sign | top;\n"
    "  for (int c = 0; c <= top; c++) {\n"
    "    double d = fabs(ref_decode(c, e5) - a);\n"
    "    if (d < bd || (d == bd && !(c & 1))) bd = d, best = c;\n"
    "  }\n"
    "  return sign | best;\n"
    "}\n"
    "int main(void) {\n"
    "  int bad = 0;\n"
    "  for (int c = 0; c < 256; c++) {\n"
    "    double a = tc_e4m3_to_f32((uint8_t)c), b = ref_decode(c, 0);\n"
    "    double x = tc_e5m2_to_f32((uint8_t)c), y = ref_decode(c, 1);\n"
    "    if (!((a == b && signbit(a) == signbit(b)) || (a != a && b != b))) bad++, printf(\"e4m3 %02x: %g %g\\n\", c, a, b);\n"
    "    if (!((x == y && signbit(x) == signbit(y)) || (x != x && y != y))) bad++, printf(\"e5m2 %02x: %g %g\\n\", c, x, y);\n"
    "    if (a == a && tc_f32_to_e4m3((float)a) != c) bad++, printf(\"e4m3 roundtrip %02x\\n\", c);\n"
    "    if (isfinite(x) && tc_f32_to_e5m2((float)x) != c) bad++, printf(\"e5m2 roundtrip %02x\\n\", c);\n"
    "  }\n"
    "  long n = 0;\n"
    "  for (uint64_t u = 0; u < 0x100000000ull; u += 9973u, n++) {\n"
    "    float f = tc_bits_f32((uint32_t)u);\n"
    "    int g4 = tc_f32_to_e4m3(f), w4 = ref_encode(f, 0), g5 = tc_f32_to_e5m2(f), w5 = ref_encode(f, 1);\n"
    "    if (g4 != w4 && bad++ < 10) printf(\"e4m3(%a) = %02x, want %02x\\n\", f, g4, w4);\n"
    "    if (g5 != w5 && bad++ < 10) printf(\"e5m2(%a) = %02x, want %02x\\n\", f, g5, w5);\n"
    "  }\n"
    "  printf(\"fp8: 256 codes, %ld encodes, %d bad\\n\", n, bad);\n"
    "  return bad != 0;\n"
    "}\n";

static void test_fp8_helpers(void) {
  StrBuf src;
  sb_init(&src);
  sb_puts(&src, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n");
  emit_c_prelude(&src);
  emit_c_fp8_prelude(&src);
  sb_puts(&src, fp8_test_main);
  char *text = sb_take(&src);
  CHECK(write_file(scratch_path("fp8.c"), text));
  free(text);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -Wall -Werror -o '%s/fp8' '%s' -lm && '%s/fp8'",
           cc_command(), scratch, scratch_path("fp8.c"), scratch);
  int rc = system(cmd);
  CHECK(rc == 0);
}

/* A grid that names a scalar parameter (varlen attention's max_seqlen):
 * the GPU launcher evaluates it from the launch's arguments; without them
 * it reports that it cannot (it used to launch nothing, silently). */
static void test_grid_of_scalar(void) {
  static const char src[] = "kernel k(X: f32[n], m: i32)\n"
                            "  grid (ceildiv(m, 4), n, 1) threads (32) as (bx, by, bz)\n"
                            "{ for i in parallel(1) X[by] = 1.0; }\n";
  TilecOptions o;
  tilec_options_init(&o);
  o.emit = TILEC_EMIT_CUDA;
  o.target = TILEC_TARGET_SM90A;
  TilecResult *r = NULL;
  int rc = tilec_compile("grid.tile", src, sizeof src - 1, &o, &r);
  CHECK(rc == 0);
  if (rc == 0) {
    int64_t dyn[1] = {7}, params[2] = {0, 10}, grid[3] = {-1, -1, -1};
    CHECK(tilec_result_grid_of(r, 0, dyn, params, grid));
    CHECK(grid[0] == 3 && grid[1] == 7 && grid[2] == 1);
    CHECK(!tilec_result_grid_of(r, 0, dyn, NULL, grid));
    CHECK(grid[0] == 0 && grid[1] == 7);
  } else {
    fprintf(stderr, "%s", tilec_result_diagnostics(r));
  }
  tilec_result_destroy(r);
}

/* The builtin const target_sm: each target folds it to its value (80, 90,
 * 0 on the CPU), a const default follows it, num_stages may depend on it,
 * the IR dump and the generated code say what was chosen, -D overrides the
 * consts that depend on it, and -D target_sm itself is refused. */
static void test_target_sm(void) {
  static const char src[] =
      "kernel k(X: f32[M], Y: f32[M])\n"
      "  const (block = if_then_else(target_sm >= 90, 256, if_then_else(target_sm == 0, 32, 128)),\n"
      "         stages = if_then_else(target_sm >= 90, 4, 2), threads = 128)\n"
      "  grid (ceildiv(M, block)) threads (threads) as (bx)\n"
      "{\n"
      "  t = alloc_shared([block], f32);\n"
      "  for s in pipelined(2, num_stages = stages) copy(X[bx * block : (bx + 1) * block], t);\n"
      "  copy(t, Y[bx * block : (bx + 1) * block]);\n"
      "}\n";
  static const struct {
    TilecTarget target;
    TilecEmit emit;
    const char *symbols, *comment;
  } cases[] = {
      {TILEC_TARGET_CPU, TILEC_EMIT_C, "symbols(target_sm = 0, block = 32, stages = 2,",
       "// k: configuration for target_sm = 0: block = 32, stages = 2, threads = 128"},
      {TILEC_TARGET_SM80, TILEC_EMIT_CUDA, "symbols(target_sm = 80, block = 128, stages = 2,",
       "// k: configuration for target_sm = 80: block = 128, stages = 2, threads = 128"},
      {TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, "symbols(target_sm = 90, block = 256, stages = 4,",
       "// k: configuration for target_sm = 90: block = 256, stages = 4, threads = 128"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = cases[c].emit;
    o.target = cases[c].target;
    TilecResult *r = NULL;
    int rc = tilec_compile("target.tile", src, sizeof src - 1, &o, &r);
    CHECK(rc == 0);
    if (rc != 0) fprintf(stderr, "%s", tilec_result_diagnostics(r));
    CHECK(strstr(tilec_result_specialized_ir(r), cases[c].symbols) != NULL);
    CHECK(strstr(tilec_result_output(r), cases[c].comment) != NULL);
    tilec_result_destroy(r);
  }
  /* pipelined's stage count follows the target (sm_90a: 4 stages). */
  {
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_IR;
    o.target = TILEC_TARGET_SM90A;
    TilecResult *r = NULL;
    CHECK(tilec_compile("target.tile", src, sizeof src - 1, &o, &r) == 0);
    CHECK(strstr(tilec_result_specialized_ir(r), "num_stages = 4") != NULL);
    tilec_result_destroy(r);
  }
  /* -D of a dependent const wins over the target's choice. */
  {
    TilecDefine d[] = {{"block", "64"}, {"stages", "3"}};
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_CUDA;
    o.target = TILEC_TARGET_SM90A;
    o.defines = d;
    o.ndefines = 2;
    TilecResult *r = NULL;
    CHECK(tilec_compile("target.tile", src, sizeof src - 1, &o, &r) == 0);
    CHECK(strstr(tilec_result_output(r), "target_sm = 90: block = 64, stages = 3,") != NULL);
    tilec_result_destroy(r);
  }
  /* -D target_sm is refused (status 2) with a message naming --target. */
  {
    TilecDefine d[] = {{"target_sm", "90"}};
    TilecOptions o;
    tilec_options_init(&o);
    o.defines = d;
    o.ndefines = 1;
    TilecResult *r = NULL;
    CHECK(tilec_compile("target.tile", src, sizeof src - 1, &o, &r) == 2);
    CHECK(strstr(tilec_result_diagnostics(r), "-D target_sm: target_sm follows the compilation target (--target") != NULL);
    tilec_result_destroy(r);
  }
  /* A kernel that never names target_sm has no such symbol and no comment. */
  {
    static const char plain[] = "kernel p(X: f32[64])\n  grid (1) threads (32) as (bx)\n"
                                "{ for i in parallel(1) X[i] = 1.0; }\n";
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_CUDA;
    o.target = TILEC_TARGET_SM90A;
    TilecResult *r = NULL;
    CHECK(tilec_compile("plain.tile", plain, sizeof plain - 1, &o, &r) == 0);
    CHECK(strstr(tilec_result_specialized_ir(r), "target_sm") == NULL);
    CHECK(strstr(tilec_result_output(r), "configuration for") == NULL);
    tilec_result_destroy(r);
  }
}

/* Pass persistent: a warp-specialized GEMM (128 x 256 tiles over two
 * consumer warpgroups) is persistent on sm_90a, its C going out in rounds
 * of 64 columns through two 16 KB slots (3 stages: 144 + 32 KB; 4: 192 +
 * 32 KB, which fits 227 KB beside the 8-byte mbarriers of the barrier area;
 * in 1 KB slots each it took 32-column rounds); never on sm_80. TilecKernelInfo.persistent says so and the CUDA loops
 * over the tiles. */
static void test_persistent_info(void) {
  static const char src[] =
      "kernel g(A: f16[M, K], B: f16[K, N], C: f16[M, N])\n"
      "  const (stages = 3)\n"
      "  grid (ceildiv(N, 256), ceildiv(M, 128), 1) threads (256) as (bx, by, bz)\n"
      "{\n"
      "    A_s = alloc_shared([128, 64], f16);\n"
      "    B_s = alloc_shared([64, 256], f16);\n"
      "    C_l = alloc_fragment([128, 256], f32);\n"
      "    clear(C_l);\n"
      "    for k in pipelined(ceildiv(K, 64), num_stages = stages) {\n"
      "        copy(A[by * 128 : (by + 1) * 128, k * 64 : (k + 1) * 64], A_s);\n"
      "        copy(B[k * 64 : (k + 1) * 64, bx * 256 : (bx + 1) * 256], B_s);\n"
      "        gemm(A_s, B_s, C_l);\n"
      "    }\n"
      "    copy(C_l, C[by * 128 : (by + 1) * 128, bx * 256 : (bx + 1) * 256]);\n"
      "}\n";
  const struct {
    TilecTarget target;
    const char *stages;
    int persistent;
  } cases[] = {{TILEC_TARGET_SM90A, "3", 1}, {TILEC_TARGET_SM90A, "4", 1}, {TILEC_TARGET_SM80, "3", 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    TilecDefine d[] = {{"stages", cases[c].stages}};
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_CUDA;
    o.target = cases[c].target;
    o.defines = d;
    o.ndefines = 1;
    TilecResult *r = NULL;
    const int rc = tilec_compile("persistent.tile", src, sizeof src - 1, &o, &r);
    CHECK(rc == 0);
    if (rc != 0) {
      fprintf(stderr, "%s", tilec_result_diagnostics(r));
    } else {
      CHECK(tilec_result_kernel(r, 0)->persistent == cases[c].persistent);
      const bool loops = strstr(tilec_result_output(r), "tile += gridDim.x") != NULL;
      CHECK(loops == (cases[c].persistent == 1));
      /* Either stage count: the epilogue in rounds of 64 columns (with 4
       * stages these fit only because the mbarriers take no 1 KB slots). */
      const bool rounds = strstr(tilec_result_output(r), "in 4 rounds of 64 columns") != NULL;
      CHECK(rounds == (cases[c].target == TILEC_TARGET_SM90A));
      /* The grid still counts the tiles: the runtime launches fewer blocks. */
      int64_t dyn[3] = {1000, 64, 3000}, grid[3] = {0, 0, 0};
      tilec_result_grid(r, 0, dyn, grid);
      CHECK(grid[0] * grid[1] * grid[2] == 12 * 8);
    }
    tilec_result_destroy(r);
  }
}

/* examples/<name>'s text into buf (NUL-terminated); its length, 0 if unread. */
static size_t read_example(const char *name, char *buf, size_t cap) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", TILEC_EXAMPLES_DIR, name);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  if (!f) return 0;
  size_t len = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[len] = '\0';
  return len;
}

/* TilecParamInfo.tma_only: on sm_90a gemm.tile reaches A, B (TMA loads)
 * and C (TMA store) through tensor maps only; a kernel that also reads A
 * element by element does not (B still does); nothing on sm_80 or the CPU. */
static bool compile_tma_only(const char *name, const char *src, size_t len, TilecTarget target, bool want[3]) {
  TilecOptions o;
  tilec_options_init(&o);
  o.emit = target == TILEC_TARGET_CPU ? TILEC_EMIT_C : TILEC_EMIT_CUDA;
  o.target = target;
  TilecResult *r = NULL;
  const int rc = tilec_compile(name, src, len, &o, &r);
  bool ok = rc == 0 && tilec_result_kernel(r, 0)->nparams == 3;
  if (!ok) fprintf(stderr, "%s: %s", name, tilec_result_diagnostics(r));
  for (int i = 0; ok && i < 3; i++) {
    const TilecParamInfo *p = &tilec_result_kernel(r, 0)->params[i];
    if (p->tma_only != want[i]) {
      fprintf(stderr, "%s (target %d): %s.tma_only is %d, expected %d\n", name, (int)target, p->name, p->tma_only,
              want[i]);
      ok = false;
    }
  }
  tilec_result_destroy(r);
  return ok;
}

static void test_tma_only_info(void) {
  static const char loop[] =
      "kernel g(A: f16[M, K], B: f16[K, N], C: f16[M, N])\n"
      "  grid (ceildiv(N, 256), ceildiv(M, 128), 1) threads (256) as (bx, by, bz)\n"
      "{\n"
      "    A_s = alloc_shared([128, 64], f16);\n"
      "    B_s = alloc_shared([64, 256], f16);\n"
      "    C_l = alloc_fragment([128, 256], f32);\n"
      "    clear(C_l);\n"
      "    for k in pipelined(ceildiv(K, 64), num_stages = 3) {\n"
      "        copy(A[by * 128 : (by + 1) * 128, k * 64 : (k + 1) * 64], A_s);\n"
      "        copy(B[k * 64 : (k + 1) * 64, bx * 256 : (bx + 1) * 256], B_s);\n"
      "        gemm(A_s, B_s, C_l);\n"
      "    }\n";
  static const char store[] = "    copy(C_l, C[by * 128 : (by + 1) * 128, bx * 256 : (bx + 1) * 256]);\n}\n";
  static const char element[] = "    for i, j in parallel(128, 256) C_l[i, j] = C_l[i, j] + A[by * 128 + i, 0];\n";
  char src[4096];
  bool all[3] = {true, true, true}, none[3] = {false, false, false}, not_a[3] = {false, true, true};
  int n = snprintf(src, sizeof src, "%s%s", loop, store);
  CHECK(compile_tma_only("tma_only.tile", src, (size_t)n, TILEC_TARGET_SM90A, all));
  CHECK(compile_tma_only("tma_only.tile", src, (size_t)n, TILEC_TARGET_SM80, none));
  CHECK(compile_tma_only("tma_only.tile", src, (size_t)n, TILEC_TARGET_CPU, none));
  n = snprintf(src, sizeof src, "%s%s%s", loop, element, store);
  CHECK(compile_tma_only("tma_only_element.tile", src, (size_t)n, TILEC_TARGET_SM90A, not_a));
  /* examples/gemm.tile itself (its defaults on sm_90a: persistent, C in rounds). */
  static char text[16384];
  const size_t len = read_example("gemm.tile", text, sizeof text);
  if (len) CHECK(compile_tma_only("gemm.tile", text, len, TILEC_TARGET_SM90A, all));
}

/* CUDA sm_90a of text with these -D values, shape class and stream-K on or
 * off; checks that it compiled (diagnostics printed where not). The caller
 * destroys the result. */
static TilecResult *compile_sm90a(const char *name, const char *text, const TilecDefine *d, int nd,
                                  unsigned shape_class, bool stream_k) {
  TilecOptions o;
  tilec_options_init(&o);
  o.emit = TILEC_EMIT_CUDA;
  o.target = TILEC_TARGET_SM90A;
  o.defines = d;
  o.ndefines = nd;
  o.shape_class = shape_class;
  o.stream_k = stream_k;
  TilecResult *r = NULL;
  const int rc = tilec_compile(name, text, strlen(text), &o, &r);
  CHECK(rc == 0);
  if (rc != 0) fprintf(stderr, "%s: %s", name, tilec_result_diagnostics(r));
  return r;
}

/* examples/flash_attention.tile's CUDA for sm_90a with these -D values and
 * shape class; NULL when it does not compile. The caller destroys *r
 * either way. */
static const char *flagship_sm90a(const TilecDefine *d, int nd, unsigned shape_class, TilecResult **r) {
  static char text[16384];
  *r = NULL;
  if (!text[0] && !read_example("flash_attention.tile", text, sizeof text)) return NULL;
  *r = compile_sm90a("flash_attention.tile", text, d, nd, shape_class, false);
  return tilec_result_output(*r);
}

/* The flagship at dim 128 on sm_90a is persistent whether seq_len is
 * dynamic or bound with -D: bound, overlap-wgmma's last P V after the loop
 * is a constant iteration, which it names through a let (k_last) so that
 * its ring stage and parity keep the `E % S`, `E / S % 2` shape that pass
 * persistent shifts (a folded parity cannot be; such kernels stayed one
 * block per tile). */
static void test_persistent_bound_shapes(void) {
  static const char *const seq[] = {NULL, "2048", "512"};
  for (size_t c = 0; c < sizeof seq / sizeof seq[0]; c++) {
    TilecDefine d[] = {{"dtype", "bf16"}, {"seq_len", seq[c]}, {"batch", "2"}, {"heads", "3"}};
    TilecResult *r;
    const char *code = flagship_sm90a(d, seq[c] ? 4 : 1, 0, &r);
    if (code) {
      CHECK(tilec_result_kernel(r, 0)->persistent == 1);
      CHECK(strstr(code, "tile += gridDim.x") != NULL);
      CHECK((strstr(code, "const long long k_last = ") != NULL) == (seq[c] != NULL));
      if (seq[c]) CHECK(strstr(code, "(pipe_base + k_last) / 2LL) % 2LL") != NULL);
    }
    tilec_result_destroy(r);
  }
}

/* overlap-wgmma with the mask applied to S after the gemm (the flagship's
 * mask_after_gemm, FlashAttention-3's order): specialize-masks puts the
 * mask in an if whose masked branch holds a let, and that if still runs
 * under the late P V gemm, so P V is waited for after the softmax's row
 * max, not before it (a let inside a statement is local to it:
 * stmt_effects.c). Dim 128 and dim 64 (whose default it is); shape class 3,
 * every choice true: seq_len not a multiple of the key block (ragged_keys). */
static void test_overlap_post_gemm_mask(void) {
  static const char *const dims[] = {"128", "64"};
  for (int c = 0; c < 2; c++) {
    TilecDefine d[] = {{"dtype", "bf16"}, {"mask_after_gemm", "true"}, {"dim", dims[c]}};
    TilecResult *r;
    const char *code = flagship_sm90a(d, 3, 3, &r);
    if (code) {
      const char *rmax = strstr(code, "// reduce_max acc_s -> scores_max");
      const char *drain = strstr(code, c == 0 ? "tc_wgmma_drain<128>(acc_o);" : "tc_wgmma_drain<64>(acc_o);");
      if (!(rmax && drain && rmax < drain)) fprintf(stderr, "post-gemm mask, dim %s: P V waited for early\n", dims[c]);
      CHECK(rmax && drain && rmax < drain);
      CHECK(strstr(code, "? acc_s[") != NULL); /* the mask reads S: it comes after the gemm */
    }
    tilec_result_destroy(r);
  }
}

/* Pass inline-producer: the flagship at dim 64 causal below seq_len 4096
 * (64 x 128 blocks, one warpgroup) is split by warp-specialize, overlapped
 * by overlap-wgmma, and folded back: 128 threads, no setmaxnreg and no
 * empty mbarriers; S is waited for with P V in flight (FA3's overlap); each
 * release became a block barrier then its refill, K two iterations ahead,
 * V one (under the release's `k > 0`). At dim 128 (two consumer
 * warpgroups) the producer stays. */
static void test_inline_producer(void) {
  TilecDefine d[] = {{"dtype", "bf16"}, {"dim", "64"}, {"is_causal", "true"}};
  TilecResult *r;
  const char *code = flagship_sm90a(d, 3, 0, &r);
  if (code) {
    CHECK(tilec_result_kernel(r, 0)->threads == 128);
    CHECK(tilec_result_kernel(r, 0)->persistent == 0);
    CHECK(strstr(code, "setmaxnreg") == NULL);
    CHECK(strstr(code, "_empty") == NULL);
    const char *s_wait = strstr(code, "tc_wgmma_wait_acc<1, 128>(acc_s);");
    const char *k_bar = s_wait ? strstr(s_wait, "__syncthreads();") : NULL;
    const char *k_refill = k_bar ? strstr(k_bar, "if (((k + 2LL) < loop_range)) {") : NULL;
    const char *o_wait = k_refill ? strstr(k_refill, "tc_wgmma_drain<64>(acc_o);") : NULL;
    const char *v_bar = o_wait ? strstr(o_wait, "__syncthreads();") : NULL;
    const char *v_refill = v_bar ? strstr(v_bar, "if (((k > 0LL) && ((k + 1LL) < loop_range))) {") : NULL;
    if (!v_refill) fprintf(stderr, "inline-producer: the flagship's dim 64 causal loop is not in the folded form\n");
    CHECK(v_refill != NULL);
    /* Q's wait comes after the prologue's K and V loads (the producer never
     * waited for Q before issuing them), right before the loop. */
    const char *q_load = strstr(code, "// copy.tma Q -> Q_shared");
    const char *v1_load = q_load ? strstr(q_load, "if ((1LL < loop_range)) {") : NULL;
    const char *q_wait = v1_load ? strstr(v1_load, "tc_mbar_wait(tc_smem_addr(Q_shared_full") : NULL;
    /* (the loop stops one short where the last key block is half hidden:
     * trim-masked-iterations runs that block after it, on 64 keys) */
    const char *loop = q_wait ? strstr(q_wait, "for (long long k = 0; k < (loop_range - k_half); ++k)") : NULL;
    if (!loop) fprintf(stderr, "inline-producer: Q's wait is not between the K/V prologue and the loop\n");
    CHECK(loop != NULL);
    CHECK(q_load && strstr(code, "tc_mbar_wait(tc_smem_addr(Q_shared_full") == q_wait);
    const char *peel = loop ? strstr(loop, "if ((k_half > 0LL)) {") : NULL;
    CHECK(peel && strstr(peel, "tc_gemm_wgmma_ss<tc_bf16_t, 64, 64, 64, 4,") &&
          strstr(peel, "tc_gemm_wgmma_rs<tc_bf16_t, 64, 64, 64, 4,"));
  }
  tilec_result_destroy(r);
  TilecDefine d128[] = {{"dtype", "bf16"}, {"dim", "128"}, {"is_causal", "true"}};
  code = flagship_sm90a(d128, 3, 0, &r);
  if (code) {
    CHECK(tilec_result_kernel(r, 0)->threads == 384);
    CHECK(strstr(code, "setmaxnreg") != NULL);
  }
  tilec_result_destroy(r);
}

/* Counts non-overlapping occurrences of needle in hay. */
static int occurrences(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle)) n++;
  return n;
}


/* The persistent GEMM's epilogue store in rounds (cuda/tma.c,
 * emit_staged_store): thread 0 waits for a slot's earlier store only where a
 * round rewrites it, and the store opens with one wait for the last tile's
 * stores. gemm.tile's 128 x 256 bf16 C beside 4 stages: four 64-column
 * rounds through two slots, so rounds 1 and 2 wait (for rounds 0 and 1) and
 * round 3 does not; beside 3 stages the whole tile fits four slots: no wait
 * within the tile. The FP8 GEMM's 128 x 128 f16 C: two rounds, two slots,
 * no wait within the tile. */
static void test_epilogue_slot_waits(void) {
  static char text[16384];
  const char *const files[3] = {"gemm.tile", "gemm.tile", "gemm_fp8_nt.tile"};
  TilecDefine d4[] = {{"dtype", "bf16"}}, d3[] = {{"dtype", "bf16"}, {"num_stages", "3"}};
  const TilecDefine *defs[3] = {d4, d3, NULL};
  const int ndefs[3] = {1, 2, 0}, slots[3] = {2, 4, 2}, in_tile_waits[3] = {2, 0, 0};
  for (int c = 0; c < 3; c++) {
    const size_t len = read_example(files[c], text, sizeof text);
    if (!len) continue;
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_CUDA;
    o.target = TILEC_TARGET_SM90A;
    o.defines = defs[c];
    o.ndefines = ndefs[c];
    TilecResult *r = NULL;
    CHECK(tilec_compile(files[c], text, len, &o, &r) == 0);
    const char *code = tilec_result_output(r);
    const char *store = code ? strstr(code, "columns through tc_stage_") : NULL;
    CHECK(store != NULL);
    if (store) {
      /* The store's header line names its slots: "... through tc_stage_N's S slots". */
      char want[32], line[160];
      snprintf(want, sizeof want, "'s %d slots\n", slots[c]);
      const char *eol = strchr(store, '\n');
      snprintf(line, sizeof line, "%.*s", eol ? (int)(eol - store + 1) : 0, store);
      if (!strstr(line, want)) fprintf(stderr, "%s (%d): store header '%s', want '%s'\n", files[c], c, line, want);
      CHECK(strstr(line, want) != NULL);
      const char *opening = strstr(store, "if (tc_tid == 0) tc_tma_store_wait_read();  // the last tile's stores");
      CHECK(opening != NULL);
      const int waits = occurrences(store, "tc_tma_store_wait_read<0>();");
      if (waits != in_tile_waits[c])
        fprintf(stderr, "%s (%d): %d waits within the tile, want %d\n", files[c], c, waits, in_tile_waits[c]);
      CHECK(waits == in_tile_waits[c]);
    }
    tilec_result_destroy(r);
  }
}

/* Staggered starts (overlap-wgmma): two consumer warpgroups running the
 * loop alike get one stagger_wait, go and end each (the dim 128 default, the
 * dim 64 block_M=128 build); one warpgroup (dim 64 causal below 4096: the
 * 64-row kernel), three (the 192-row dim 64 build) and warpgroups with loops
 * of their own length (dim 256 causal: trim-masked-iterations' rows) none. */
static void test_stagger_warpgroups(void) {
  static char text[32768];
  const size_t len = read_example("flash_attention.tile", text, sizeof text);
  if (!len) return;
  static const struct {
    const char *dim, *causal, *block_M;
    int want;
  } cases[] = {{"128", "false", NULL, 1}, {"128", "true", NULL, 1}, {"64", "true", "128", 1},
               {"64", "true", NULL, 0},   {"64", "false", NULL, 0}, {"256", "true", NULL, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    TilecDefine defs[4] = {{"dtype", "bf16"}, {"dim", cases[c].dim}, {"is_causal", cases[c].causal},
                           {"block_M", cases[c].block_M}};
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_CUDA;
    o.target = TILEC_TARGET_SM90A;
    o.defines = defs;
    o.ndefines = cases[c].block_M ? 4 : 3;
    TilecResult *r = NULL;
    CHECK(tilec_compile("flash_attention.tile", text, len, &o, &r) == 0);
    const char *code = tilec_result_output(r);
    CHECK(code != NULL);
    if (code) {
      const int waits = occurrences(code, "tc_stagger_wait<2>("), gos = occurrences(code, "tc_stagger_go<2>("),
                ends = occurrences(code, "tc_stagger_end<2>("), any = occurrences(code, "tc_stagger_");
      if (waits != cases[c].want || gos != cases[c].want || ends != cases[c].want || any != 3 * cases[c].want)
        fprintf(stderr, "dim %s causal %s block_M %s: stagger wait/go/end %d/%d/%d of %d, want %d each\n",
                cases[c].dim, cases[c].causal, cases[c].block_M ? cases[c].block_M : "-", waits, gos, ends, any,
                cases[c].want);
      CHECK(waits == cases[c].want && gos == cases[c].want && ends == cases[c].want && any == 3 * cases[c].want);
    }
    tilec_result_destroy(r);
  }
}

/* examples/gemm.tile's shape choices: on sm_90a three conditions (M <= 64
 * || N <= 64; M <= 128; 192 x 192 tiles fill whole waves of sm_count SMs
 * where 128 x 256 ones do not) and eight classes, each a valid tile
 * whichever way the other conditions go (tilec.splitk.gemm_tile_for
 * mirrors the rule); none on sm_80, where the const defaults fold them
 * away. The third condition reads the launch's sm_count. */
static void test_gemm_shape_classes(void) {
  static char text[16384];
  const size_t len = read_example("gemm.tile", text, sizeof text);
  if (!len) return;
  static const char *const big = "block_M = 128, block_N = 256, block_K = 64, num_stages = 4, threads = 256";
  static const char *const m64 = "block_M = 64, block_N = 64, block_K = 64, num_stages = 12, threads = 128";
  static const char *const m128 = "block_M = 64, block_N = 128, block_K = 64, num_stages = 8, threads = 128";
  static const char *const waves = "block_M = 192, block_N = 192, block_K = 64, num_stages = 4, threads = 384";
  static const char *const want[8] = {big, m64, m128, m64, waves, m64, m128, m64};
  for (int c = 0; c < 8; c++) {
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_CUDA;
    o.target = TILEC_TARGET_SM90A;
    o.shape_class = (unsigned)c;
    TilecResult *r = NULL;
    const int rc = tilec_compile("gemm.tile", text, len, &o, &r);
    CHECK(rc == 0);
    if (rc == 0) {
      CHECK(tilec_result_num_shape_choices(r, 0) == 3);
      CHECK(tilec_result_shape_class(r) == (unsigned)c);
      const char *code = tilec_result_output(r);
      if (!strstr(code, want[c])) fprintf(stderr, "gemm.tile class %d: expected '%s'\n", c, want[c]);
      CHECK(strstr(code, want[c]) != NULL);
      /* The launch's shapes and SM count pick the class: 2304 x 2048 is 132
       * tiles of 192 x 192 (one wave on 132 SMs, 144 of 128 x 256), 2176 x
       * 4096 264 (two waves); 4096^3 (484 / 512 tiles) and 132 tiles on a
       * GPU of 114 SMs keep 128 x 256; M = 100 takes 64 x 128 first. */
      static const struct {
        int64_t m, n, sms;
        unsigned holds;
      } launch[] = {{2304, 2048, 132, 4}, {2176, 4096, 132, 4}, {4096, 4096, 132, 0},
                    {2304, 2048, 114, 0}, {100, 2048, 132, 2}, {2304, 64, 132, 1}};
      const TilecKernelInfo *info = tilec_result_kernel(r, 0);
      for (size_t i = 0; info && i < sizeof launch / sizeof launch[0]; i++) {
        int64_t dyn[8] = {0};
        for (int d = 0; d < info->ndynamic && d < 8; d++)
          dyn[d] = !strcmp(info->dynamic_symbols[d], "M") ? launch[i].m : !strcmp(info->dynamic_symbols[d], "N") ? launch[i].n : 4096;
        unsigned holds = 0, owned = 0;
        CHECK(tilec_result_shape_class_of(r, 0, dyn, NULL, launch[i].sms, &holds, &owned) && owned == 7);
        if (holds != launch[i].holds)
          fprintf(stderr, "gemm.tile %lld x %lld on %lld SMs: choices 0x%x, expected 0x%x\n", (long long)launch[i].m,
                  (long long)launch[i].n, (long long)launch[i].sms, holds, launch[i].holds);
        CHECK(holds == launch[i].holds);
      }
    } else {
      fprintf(stderr, "gemm.tile class %d: %s", c, tilec_result_diagnostics(r));
    }
    tilec_result_destroy(r);
  }
  TilecOptions o;
  tilec_options_init(&o);
  o.emit = TILEC_EMIT_CUDA;
  o.target = TILEC_TARGET_SM80;
  TilecResult *r = NULL;
  CHECK(tilec_compile("gemm.tile", text, len, &o, &r) == 0);
  CHECK(tilec_result_num_shape_choices(r, 0) == 0);
  tilec_result_destroy(r);
}

/* ---- tests of sm_90a/sm_80 code generation on small .tile strings ------- */

/* Compiles src for target (emit IR or CUDA); the output text (malloc'ed,
 * the caller frees it) and, if info is not NULL, a copy of kernel 0's
 * TMA maps count and the first two maps. NULL (and the diagnostics on
 * stderr) when the compilation fails. */
typedef struct MapsSeen {
  int ntensor_maps;
  TilecTensorMapInfo maps[2];
} MapsSeen;

static char *compile_text(const char *name, const char *src, TilecTarget target, TilecEmit emit, MapsSeen *info) {
  TilecOptions o;
  tilec_options_init(&o);
  o.emit = emit;
  o.target = target;
  TilecResult *r = NULL;
  const int rc = tilec_compile(name, src, strlen(src), &o, &r);
  CHECK(rc == 0);
  char *out = NULL;
  if (rc != 0) {
    fprintf(stderr, "%s (target %d): %s", name, (int)target, tilec_result_diagnostics(r));
  } else {
    out = strdup(tilec_result_output(r));
    if (info) {
      const TilecKernelInfo *k = tilec_result_kernel(r, 0);
      memset(info, 0, sizeof *info);
      info->ntensor_maps = k->ntensor_maps;
      for (int i = 0; i < k->ntensor_maps && i < 2; i++) info->maps[i] = k->tensor_maps[i];
    }
  }
  tilec_result_destroy(r);
  return out;
}

/* Pass persistent's L2 prefetch of the next tile's Q: after the producer's
 * K/V loop (before it, it held up the tile's first stages), one prefetch
 * per TMA box of Q (dim 128: two 64-column panels), guarded by the next
 * tile's existence and stepping by the kernel's gridDim.x; the causal
 * flagship walks tile pairs, so its next tile is the pair's other half or
 * the next pair's. gemm.tile has no per-tile copy and gets none. */
static void test_persistent_q_prefetch(void) {
  static const char *const causal[] = {"false", "true"};
  for (int c = 0; c < 2; c++) {
    TilecDefine d[] = {{"dtype", "bf16"}, {"is_causal", causal[c]}};
    TilecResult *r;
    const char *code = flagship_sm90a(d, 2, 0, &r);
    if (code) {
      CHECK(occurrences(code, "tc_tma_prefetch_l2(&tc_tmap_") == 2);
      CHECK(strstr(code, "const long long tc_num_blocks = gridDim.x;") != NULL);
      const char *loop = strstr(code, "for (long long k_fetch = 0;");
      const char *pf = strstr(code, "tc_tma_prefetch_l2(");
      if (!(loop && pf && loop < pf)) fprintf(stderr, "Q prefetch (causal %s): not after the producer's loop\n", causal[c]);
      CHECK(loop && pf && loop < pf);
      CHECK((strstr(code, "next_pair") != NULL) == (c == 1));
    }
    tilec_result_destroy(r);
  }
  static char text[16384];
  if (!read_example("gemm.tile", text, sizeof text)) return;
  char *code = compile_text("gemm.tile", text, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, NULL);
  CHECK(code && strstr(code, "tile += gridDim.x") && !strstr(code, "tc_tma_prefetch_l2("));
  free(code);
}

/* Stream-K (TilecOptions.stream_k, off by default): gemm.tile's sm_90a
 * default walks units, with the workspace, the fix-up and a 40-register
 * producer; without the option the kernel is the plain persistent one, and
 * the flagship (no GEMM shape) is the same either way. */
static void test_stream_k_option(void) {
  static char gemm[16384], fa[32768];
  if (!read_example("gemm.tile", gemm, sizeof gemm) || !read_example("flash_attention.tile", fa, sizeof fa)) return;
  const char *outputs[2][2] = {{NULL, NULL}, {NULL, NULL}};
  TilecResult *results[2][2] = {{NULL, NULL}, {NULL, NULL}};
  for (int on = 0; on < 2; on++)
    for (int which = 0; which < 2; which++) {
      TilecDefine d[] = {{"dtype", "bf16"}};
      results[on][which] = compile_sm90a(which ? "flash_attention.tile" : "gemm.tile", which ? fa : gemm, d, 1, 0, on);
      outputs[on][which] = tilec_result_output(results[on][which]);
    }
  const char *plain = outputs[0][0], *sk = outputs[1][0];
  CHECK(plain && strstr(plain, "tile += gridDim.x") && !strstr(plain, "tc_sk_"));
  CHECK(plain && strstr(plain, "tc_setmaxnreg_dec<24>()"));
  /* The default build's epilogue takes the k-loop's last stage as three of
   * its four rounds' slots (pass persistent, hold_last_stage); thread 0
   * gives it back at the next tile's k = 1, for all 8 consumer warps, once
   * its stores have read. No round waits for another. The stream-K build
   * keeps the plain rounds. */
  CHECK(plain && strstr(plain, "round 0: columns 0..63 -> the held stage of A_shared") &&
        strstr(plain, "round 2: columns 128..191 -> the held stage of B_shared") &&
        strstr(plain, "round 3: columns 192..255 -> slot 0") &&
        strstr(plain, "if ((k == 1LL)) {\n          if ((tc_held[((long long)(0LL))] > 0LL)) {\n            if (tc_tid == 0) "
                      "{ tc_tma_store_wait_read(); tc_mbar_arrive_count(tc_smem_addr(A_shared_empty + "
                      "((tc_held[((long long)(0LL))] - 1LL))), 8); }"));
  const char *held_rounds = plain ? strstr(plain, "-> the held stage of A_shared") : NULL;
  const char *plain_rounds = plain ? strstr(plain, "} else {") : NULL;
  CHECK(held_rounds && plain_rounds && held_rounds < plain_rounds);
  /* between the held store's first round and its else (the plain store for n = 0): no wait for a round */
  for (const char *w = held_rounds; w && plain_rounds && (w = strstr(w, "slot has been read")) && w < plain_rounds; w++)
    CHECK(!"a held-stage round waits for an earlier store");
  CHECK(sk && !strstr(sk, "held stage") && !strstr(sk, "tc_held"));
  CHECK(sk && strstr(sk, "while (tc_sk_next(&tc_sk, ") && !strstr(sk, "tile += gridDim.x"));
  CHECK(sk && strstr(sk, "static __device__ float4 tc_sk_partials_gemm[TC_SK_SLOTS * 8192];"));
  CHECK(sk && strstr(sk, "tc_sk_fixup<128, 256>(C_local, "));
  CHECK(sk && strstr(sk, "if (((k_begin + k_len) == tc_ceildiv(K, 64LL))) {"));
  CHECK(sk && strstr(sk, "tc_setmaxnreg_dec<40>()") && strstr(sk, "tc_setmaxnreg_inc<232>()"));
  CHECK(outputs[0][1] && outputs[1][1] && strcmp(outputs[0][1], outputs[1][1]) == 0);
  /* Either way the GEMM is marked as one stream-K serves (the runtime's
   * stream-K build for thin last waves), with its k-iterations per tile
   * for the runtime's choice; the flagship is not. */
  for (int on = 0; on < 2; on++) {
    const TilecKernelInfo *g = tilec_result_kernel(results[on][0], 0), *f = tilec_result_kernel(results[on][1], 0);
    CHECK(g && g->stream_k_able == 1 && g->stream_k == on);
    CHECK(f && f->stream_k_able == 0 && f->stream_k == 0);
    int64_t dyn[8] = {0}, iters = -1;
    for (int i = 0; g && i < g->ndynamic && i < 8; i++)
      dyn[i] = strcmp(g->dynamic_symbols[i], "K") == 0 ? 4000 : 1000;
    CHECK(tilec_result_stream_k_iters_of(results[on][0], 0, dyn, NULL, &iters) && iters == 63); /* ceil(4000 / 64) */
    CHECK(!tilec_result_stream_k_iters_of(results[on][1], 0, dyn, NULL, &iters));
  }
  for (int on = 0; on < 2; on++)
    for (int which = 0; which < 2; which++) tilec_result_destroy(results[on][which]);
  /* The FP8 GEMM splits with the option (the forced build the stream-K
   * tests run) but is not marked for the runtime's choice: whole tiles
   * were faster there (pass stream-k). Its k-iterations are known all the
   * same (the runtime's grid size reads them). */
  static char fp8[16384];
  if (!read_example("gemm_fp8_nt.tile", fp8, sizeof fp8)) return;
  for (int on = 0; on < 2; on++) {
    TilecResult *r = compile_sm90a("gemm_fp8_nt.tile", fp8, NULL, 0, 0, on);
    const TilecKernelInfo *g = r ? tilec_result_kernel(r, 0) : NULL;
    CHECK(g && g->persistent && g->stream_k_able == 0 && g->stream_k == on);
    int64_t dyn[8] = {0}, iters = -1;
    for (int i = 0; g && i < g->ndynamic && i < 8; i++)
      dyn[i] = strcmp(g->dynamic_symbols[i], "K") == 0 ? 4000 : 1000;
    CHECK(r && tilec_result_stream_k_iters_of(r, 0, dyn, NULL, &iters) && iters == 32); /* ceil(4000 / 128) */
    tilec_result_destroy(r);
  }
  /* K bound: the trip count n is a literal that fold-constants merged into
   * the release after the loop ((pipe_base + n - 1) % 4 became
   * (pipe_base + 3) % 4 for n = 16) and that may equal other literals (n = 4
   * = num_stages, n = 64 = block_K). Only the places where n is the trip
   * count follow k_len: the ring stays `% 4`, the copies 64 columns wide, and
   * the last release names the unit's last stage (a hang before). */
  static const char *const bound_k[] = {"256", "1000", "4096"};
  for (int i = 0; i < 3; i++) {
    TilecDefine d[] = {{"dtype", "bf16"}, {"K", bound_k[i]}};
    TilecResult *r = compile_sm90a("gemm.tile", gemm, d, 2, 0, true);
    const char *code = tilec_result_output(r);
    CHECK(code && strstr(code, "while (tc_sk_next(&tc_sk, "));
    CHECK(code && strstr(code, "A_shared_empty + (((pipe_base + (k_len - 1LL)) % 4LL))"));
    CHECK(code && strstr(code, "(k_begin * 64LL)") && strstr(code, "tc_pipe[((long long)(0LL))] = (long long)((pipe_base + k_len));"));
    CHECK(code && !strstr(code, "% k_len") && !strstr(code, "* k_len") && !strstr(code, "/ k_len"));
    tilec_result_destroy(r);
  }
}

static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text ? strstr(text, needle) : NULL; p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* Position of needle in text (its first occurrence), -1 if absent. */
static long pos_of(const char *text, const char *needle) {
  const char *p = text ? strstr(text, needle) : NULL;
  return p ? (long)(p - text) : -1;
}

/* The whole line of text holding needle's first occurrence, into buf ("" if absent). */
static const char *line_of(const char *text, const char *needle, char *buf, size_t cap) {
  buf[0] = '\0';
  const char *p = text ? strstr(text, needle) : NULL;
  if (!p) return buf;
  const char *b = p, *e = strchr(p, '\n');
  while (b > text && b[-1] != '\n') b--;
  size_t n = e ? (size_t)(e - b) : strlen(b);
  if (n >= cap) n = cap - 1;
  memcpy(buf, b, n);
  buf[n] = '\0';
  return buf;
}

/* Pass defer-wgmma-waits (sm_90a). G1 (acc1) and G2 (acc2) are independent
 * 16-bit wgmma gemms; the two statements after them read only acc1, the
 * third reads acc2. So G1 and G2 are both issue-only, acc1's wait comes
 * right after G2 with pending(1) (G2 may still run), and acc2's wait, with
 * pending 0, right before the statement that reads acc2, after the acc1
 * work (and pins acc1, written meanwhile). G3 (acc3) is read by the very
 * next statement: it keeps waiting in place (no issue-only, no separate
 * wait). On sm_80 (mma.sync, no wgmma) nothing of this appears. */
static const char defer_src[] =
    "kernel d(A: f16[M, K], B: f16[N, K], D: f16[N, K], C: f32[M, N], E: f32[M, N])\n"
    "  grid (1) threads (128) as (bx)\n"
    "{\n"
    "    A_s = alloc_shared([64, 64], f16);\n"
    "    B_s = alloc_shared([64, 64], f16);\n"
    "    D_s = alloc_shared([64, 64], f16);\n"
    "    acc1 = alloc_fragment([64, 64], f32);\n"
    "    acc2 = alloc_fragment([64, 64], f32);\n"
    "    acc3 = alloc_fragment([64, 64], f32);\n"
    "    copy(A[0 : 64, 0 : 64], A_s);\n"
    "    copy(B[0 : 64, 0 : 64], B_s);\n"
    "    copy(D[0 : 64, 0 : 64], D_s);\n"
    "    clear(acc1);\n"
    "    clear(acc2);\n"
    "    gemm(A_s, B_s, acc1, transpose_B = true);\n"
    "    gemm(A_s, D_s, acc2, transpose_B = true);\n"
    "    for i, j in parallel(64, 64) acc1[i, j] = exp2(acc1[i, j]);\n"
    "    for i, j in parallel(64, 64) acc1[i, j] = acc1[i, j] * 0.5;\n"
    "    for i, j in parallel(64, 64) acc2[i, j] = acc2[i, j] + acc1[i, j];\n"
    "    copy(acc2, C[0 : 64, 0 : 64]);\n"
    "    clear(acc3);\n"
    "    gemm(D_s, B_s, acc3, transpose_B = true);\n"
    "    for i, j in parallel(64, 64) acc3[i, j] = acc3[i, j] * 2.0;\n"
    "    copy(acc3, E[0 : 64, 0 : 64]);\n"
    "}\n";

static void test_defer_wgmma_waits(void) {
  char line[512];
  /* The final IR on sm_90a. */
  char *ir = compile_text("defer.tile", defer_src, TILEC_TARGET_SM90A, TILEC_EMIT_IR, NULL);
  if (ir) {
    CHECK_CONTAINS(line_of(ir, "gemm A_s, B_s -> acc1", line, sizeof line), " wgmma(issue)");
    CHECK_CONTAINS(line_of(ir, "gemm A_s, D_s -> acc2", line, sizeof line), " wgmma(issue)");
    /* G3: a wgmma that waits in place (not issue-only, not in flight). */
    const char *g3_line = line_of(ir, "gemm D_s, B_s -> acc3", line, sizeof line);
    CHECK_CONTAINS(g3_line, " wgmma");
    CHECK(strstr(g3_line, "wgmma(") == NULL);
    CHECK(count_of(ir, "wgmma(issue)") == 2);
    /* One wait each for acc1 (pending 1) and acc2 (pending 0), none for acc3. */
    CHECK(count_of(ir, "wgmma_wait acc1") == 1);
    CHECK_CONTAINS(ir, "wgmma_wait acc1 pending(1)");
    CHECK(count_of(ir, "wgmma_wait acc2") == 1);
    const char *w2_line = line_of(ir, "wgmma_wait acc2", line, sizeof line);
    CHECK(strstr(w2_line, "pending(") == NULL);
    CHECK_CONTAINS(w2_line, "after(acc1)");
    CHECK(count_of(ir, "wgmma_wait acc3") == 0);
    /* Order: G1, G2, wait acc1, the acc1 work, wait acc2, the acc2 read, G3. */
    const long g1 = pos_of(ir, "-> acc1"), g2 = pos_of(ir, "-> acc2"), w1 = pos_of(ir, "wgmma_wait acc1"),
               e1 = pos_of(ir, "exp2(acc1[i, j])"), e2 = pos_of(ir, "acc1[i, j] * 0.5"),
               w2 = pos_of(ir, "wgmma_wait acc2"), r2 = pos_of(ir, "acc2[i, j] + acc1[i, j]"),
               g3 = pos_of(ir, "-> acc3");
    CHECK(g1 >= 0 && g1 < g2 && g2 < w1 && w1 < e1 && e1 < e2 && e2 < w2 && w2 < r2 && r2 < g3);
    free(ir);
  }
  /* The CUDA on sm_90a says the same. */
  char *cu = compile_text("defer.tile", defer_src, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    const long g1 = pos_of(cu, "TC_WGMMA_ISSUE_ONLY>(A_s, B_s, acc1, tc_warp);"),
               g2 = pos_of(cu, "TC_WGMMA_ISSUE_ONLY>(A_s, D_s, acc2, tc_warp);"),
               w1 = pos_of(cu, "tc_wgmma_wait_acc<1, 64>(acc1);"), e1 = pos_of(cu, "exp2"),
               pin = pos_of(cu, "tc_pin_regs<32>(acc1);"), w2 = pos_of(cu, "tc_wgmma_drain<64>(acc2);"),
               g3 = pos_of(cu, "tc_gemm_wgmma_ss<tc_f16_t, 64, 64, 64, 4, true, true, true, 0>(D_s, B_s, acc3, tc_warp);");
    CHECK(g1 >= 0 && g1 < g2 && g2 < w1 && w1 < e1 && e1 < pin && pin < w2 && w2 < g3);
    CHECK(count_of(cu, "TC_WGMMA_ISSUE_ONLY") == 2);
    CHECK(count_of(cu, "tc_wgmma_wait_acc<") == 1);
    CHECK(count_of(cu, "tc_wgmma_drain<") == 1);
    CHECK(count_of(cu, "(acc3);") == 0);
    if (g1 < 0 || g2 < 0 || w1 < 0 || w2 < 0 || g3 < 0) fprintf(stderr, "defer.tile sm_90a CUDA:\n%s\n", cu);
    free(cu);
  }
  /* sm_80: mma.sync gemms that complete in place; nothing deferred. */
  cu = compile_text("defer.tile", defer_src, TILEC_TARGET_SM80, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    CHECK(count_of(cu, "tc_gemm_ss<") == 3);
    CHECK(strstr(cu, "TC_WGMMA_ISSUE_ONLY") == NULL);
    CHECK(strstr(cu, "tc_wgmma_") == NULL);
    free(cu);
  }
  ir = compile_text("defer.tile", defer_src, TILEC_TARGET_SM80, TILEC_EMIT_IR, NULL);
  if (ir) {
    CHECK(strstr(ir, "wgmma") == NULL);
    CHECK(count_of(ir, "gemm ") == 3);
    free(ir);
  }
}

/* Pass share-barriers (sm_90a). In g, A_s and B_s are filled by the same
 * producer iteration and read by the same gemm: one full and one empty
 * mbarrier serve both rings (the full one expecting two arrivals, one per
 * copy), and the consumers wait and release once per k-tile. In a, K_s is
 * read by the first gemm and V_s only by the second: their barriers stay
 * apart (V may still land while the first gemm runs). sm_80 has no
 * mbarriers at all. */
static const char share_src[] =
    "kernel g(A: f16[M, K], B: f16[K, N], C: f16[M, N])\n"
    "  grid (ceildiv(N, 128), ceildiv(M, 128)) threads (256) as (bx, by)\n"
    "{\n"
    "    A_s = alloc_shared([128, 64], f16);\n"
    "    B_s = alloc_shared([64, 128], f16);\n"
    "    acc = alloc_fragment([128, 128], f32);\n"
    "    clear(acc);\n"
    "    for k in pipelined(ceildiv(K, 64), num_stages = 3) {\n"
    "        copy(A[by * 128 : (by + 1) * 128, k * 64 : (k + 1) * 64], A_s);\n"
    "        copy(B[k * 64 : (k + 1) * 64, bx * 128 : (bx + 1) * 128], B_s);\n"
    "        gemm(A_s, B_s, acc);\n"
    "    }\n"
    "    copy(acc, C[by * 128 : (by + 1) * 128, bx * 128 : (bx + 1) * 128]);\n"
    "}\n"
    "kernel a(Q: f16[S, 64], K: f16[S, 64], V: f16[S, 64], O: f16[S, 64])\n"
    "  grid (ceildiv(S, 128)) threads (256) as (bx)\n"
    "{\n"
    "    Q_s = alloc_shared([128, 64], f16);\n"
    "    K_s = alloc_shared([64, 64], f16);\n"
    "    V_s = alloc_shared([64, 64], f16);\n"
    "    s = alloc_fragment([128, 64], f32);\n"
    "    p = alloc_fragment([128, 64], f16);\n"
    "    o = alloc_fragment([128, 64], f32);\n"
    "    copy(Q[bx * 128 : (bx + 1) * 128, :], Q_s);\n"
    "    clear(o);\n"
    "    for k in pipelined(ceildiv(S, 64), num_stages = 2) {\n"
    "        copy(K[k * 64 : (k + 1) * 64, :], K_s);\n"
    "        copy(V[k * 64 : (k + 1) * 64, :], V_s);\n"
    "        clear(s);\n"
    "        gemm(Q_s, K_s, s, transpose_B = true, policy = full_row);\n"
    "        for i, j in parallel(128, 64) s[i, j] = exp2(s[i, j]);\n"
    "        copy(s, p);\n"
    "        gemm(p, V_s, o);\n"
    "    }\n"
    "    copy(o, O[bx * 128 : (bx + 1) * 128, :]);\n"
    "}\n";

static void test_share_barriers(void) {
  char line[512];
  char *ir = compile_text("share.tile", share_src, TILEC_TARGET_SM90A, TILEC_EMIT_IR, NULL);
  if (ir) {
    /* g: A_s's barriers serve B_s too; B_s's are gone. */
    CHECK_CONTAINS(line_of(ir, "alloc A_s_full", line, sizeof line), "mbarrier(2)");
    CHECK(strstr(ir, "alloc A_s_empty") != NULL);
    CHECK(strstr(ir, "B_s_full") == NULL);
    CHECK(strstr(ir, "B_s_empty") == NULL);
    CHECK_CONTAINS(line_of(ir, "-> B_s[", line, sizeof line), "mbarrier(A_s_full)");
    CHECK(count_of(ir, "mbar_wait A_s_full") == count_of(ir, "gemm A_s"));
    /* a: K_s and V_s keep a pair each, waited before their own gemms. */
    CHECK_CONTAINS(line_of(ir, "alloc K_s_full", line, sizeof line), "mbarrier");
    CHECK(strstr(line_of(ir, "alloc K_s_full", line, sizeof line), "mbarrier(2)") == NULL);
    CHECK(strstr(ir, "alloc V_s_full") != NULL);
    CHECK(strstr(ir, "alloc V_s_empty") != NULL);
    CHECK_CONTAINS(line_of(ir, "-> V_s[", line, sizeof line), "mbarrier(V_s_full)");
    free(ir);
  }
  char *cu = compile_text("share.tile", share_src, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    CHECK_CONTAINS(cu, "tc_mbar_init(tc_smem_addr(A_s_full + tc_i), 2);");
    CHECK(strstr(cu, "B_s_full") == NULL);
    free(cu);
  }
  ir = compile_text("share.tile", share_src, TILEC_TARGET_SM80, TILEC_EMIT_IR, NULL);
  if (ir) {
    CHECK(strstr(ir, "mbar") == NULL);
    free(ir);
  }
}

/* A shared tile filled in two places (found by the fuzzing helper of
 * session 6). refill: a top-level copy and gemm, then a pipelined loop
 * refilling the same tiles. The loop's TMA waits count its own fills from
 * zero, so the top-level copy must not complete on the loop's mbarrier (it
 * stays a plain copy), and the loop's first fill must wait for the
 * top-level gemm's reads (a barrier before the loop: insert-barriers counts
 * async fills when a loop is entered). twoloops: two pipelines fill A_s;
 * only the first owns A_s's mbarrier, the second fills A_s by cp.async. */
static const char refill_src[] =
    "kernel refill(A: f16[M, K], B: f16[K, N], C: f16[M, N])\n"
    "  grid (ceildiv(N, 128), ceildiv(M, 128)) threads (256) as (bx, by)\n"
    "{\n"
    "    A_s = alloc_shared([128, 64], f16);\n"
    "    B_s = alloc_shared([64, 128], f16);\n"
    "    acc = alloc_fragment([128, 128], f32);\n"
    "    clear(acc);\n"
    "    copy(A[by * 128 : (by + 1) * 128, 0 : 64], A_s);\n"
    "    copy(B[0 : 64, bx * 128 : (bx + 1) * 128], B_s);\n"
    "    gemm(A_s, B_s, acc);\n"
    "    for k in pipelined(ceildiv(K, 64) - 1, num_stages = 3) {\n"
    "        copy(A[by * 128 : (by + 1) * 128, (k + 1) * 64 : (k + 2) * 64], A_s);\n"
    "        copy(B[(k + 1) * 64 : (k + 2) * 64, bx * 128 : (bx + 1) * 128], B_s);\n"
    "        gemm(A_s, B_s, acc);\n"
    "    }\n"
    "    copy(acc, C[by * 128 : (by + 1) * 128, bx * 128 : (bx + 1) * 128]);\n"
    "}\n"
    "kernel twoloops(A: f16[M, K], B: f16[K, N], D: f16[K, N], C: f16[M, N], E: f16[M, N])\n"
    "  grid (ceildiv(N, 128), ceildiv(M, 128)) threads (256) as (bx, by)\n"
    "{\n"
    "    A_s = alloc_shared([128, 64], f16);\n"
    "    B_s = alloc_shared([64, 128], f16);\n"
    "    D_s = alloc_shared([64, 128], f16);\n"
    "    c1 = alloc_fragment([128, 128], f32);\n"
    "    c2 = alloc_fragment([128, 128], f32);\n"
    "    clear(c1);\n"
    "    clear(c2);\n"
    "    for k in pipelined(ceildiv(K, 64), num_stages = 3) {\n"
    "        copy(A[by * 128 : (by + 1) * 128, k * 64 : (k + 1) * 64], A_s);\n"
    "        copy(B[k * 64 : (k + 1) * 64, bx * 128 : (bx + 1) * 128], B_s);\n"
    "        gemm(A_s, B_s, c1);\n"
    "    }\n"
    "    for k in pipelined(ceildiv(K, 64), num_stages = 3) {\n"
    "        copy(A[by * 128 : (by + 1) * 128, k * 64 : (k + 1) * 64], A_s);\n"
    "        copy(D[k * 64 : (k + 1) * 64, bx * 128 : (bx + 1) * 128], D_s);\n"
    "        gemm(A_s, D_s, c2);\n"
    "    }\n"
    "    copy(c1, C[by * 128 : (by + 1) * 128, bx * 128 : (bx + 1) * 128]);\n"
    "    copy(c2, E[by * 128 : (by + 1) * 128, bx * 128 : (bx + 1) * 128]);\n"
    "}\n";

static void test_fills_in_two_places(void) {
  char *ir = compile_text("refill.tile", refill_src, TILEC_TARGET_SM90A, TILEC_EMIT_IR, NULL);
  if (!ir) return;
  const char *refill = strstr(ir, "kernel refill"), *two = strstr(ir, "kernel twoloops");
  CHECK(refill && two && refill < two);
  if (refill && two) {
    /* refill: the top-level copies are plain; a barrier between the top-level gemm and the loop. */
    const long top_copy = pos_of(refill, "copy A[by * 128 :+ 128 guard, 0 :+ 64 guard] -> A_s");
    const long top_gemm = pos_of(refill, "gemm A_s, B_s -> acc");
    const long loop = pos_of(refill, "for k in pipelined");
    CHECK(top_copy >= 0 && top_gemm > top_copy && loop > top_gemm);
    if (top_gemm >= 0 && loop > top_gemm) {
      char between[2048];
      size_t n = (size_t)(loop - top_gemm) < sizeof between - 1 ? (size_t)(loop - top_gemm) : sizeof between - 1;
      memcpy(between, refill + top_gemm, n);
      between[n] = '\0';
      CHECK(strstr(between, "barrier") != NULL);
    }
    /* The loop's own fills are TMA on A_s's mbarrier, waited with parity counted from 0. */
    CHECK(pos_of(refill, "mbarrier(A_s_full)") > loop);
    /* twoloops: the second loop fills A_s by cp.async; A_s_full is the first loop's. */
    const long second = pos_of(two, "copy.async A[");
    CHECK(second >= 0);
    const long first_loop = pos_of(two, "for k in pipelined"), tma_a = pos_of(two, "-> A_s map(");
    CHECK(tma_a > first_loop && (second < 0 || tma_a < second));
    if (second >= 0) CHECK(strstr(two + second, "A_s_full") == NULL); /* the second loop waits on no A_s barrier */
    /* Each pipeline is lowered once: one wait on D_s's barrier, not two. */
    CHECK(count_of(two, "mbar_wait D_s_full") == 1);
  }
  free(ir);
}

/* A 1-D f32 shared tile copied in a pipelined loop is the pipeline's
 * (software-pipeline, 32-bit rows of 16-byte multiples): double-buffered
 * ([2, 32]); on sm_80 fetched by cp.async (tc_copy_g2s, one row of 32
 * columns) rather than element by element; on sm_90a by TMA (a 1-D tensor
 * map of box 32, expecting 32 * 4 = 128 bytes on the tile's full
 * mbarrier). A [6] tile (24 bytes, not whole 16-byte chunks) stays a plain
 * element copy on both targets. */
static const char vec_src[] =
    "kernel v(X: f16[M, N], L: f32[M], Y: f32[M, N])\n"
    "  grid (1) threads (128) as (bx)\n"
    "{\n"
    "    x_s = alloc_shared([32, 64], f16);\n"
    "    l_s = alloc_shared([32], f32);\n"
    "    acc = alloc_fragment([32, 64], f32);\n"
    "    clear(acc);\n"
    "    for k in pipelined(ceildiv(M, 32), num_stages = 2) {\n"
    "        copy(X[k * 32 : (k + 1) * 32, 0 : 64], x_s);\n"
    "        copy(L[k * 32 : (k + 1) * 32], l_s);\n"
    "        for i, j in parallel(32, 64) acc[i, j] += x_s[i, j] * l_s[i];\n"
    "    }\n"
    "    copy(acc, Y[0 : 32, 0 : 64]);\n"
    "}\n";

static const char vec6_src[] =
    "kernel v(X: f16[M, N], L: f32[M], Y: f32[M, N])\n"
    "  grid (1) threads (128) as (bx)\n"
    "{\n"
    "    x_s = alloc_shared([32, 64], f16);\n"
    "    l_s = alloc_shared([6], f32);\n"
    "    acc = alloc_fragment([32, 64], f32);\n"
    "    clear(acc);\n"
    "    for k in pipelined(ceildiv(M, 32), num_stages = 2) {\n"
    "        copy(X[k * 32 : (k + 1) * 32, 0 : 64], x_s);\n"
    "        copy(L[k * 6 : (k + 1) * 6], l_s);\n"
    "        for i, j in parallel(32, 64) acc[i, j] += x_s[i, j] * l_s[i % 6];\n"
    "    }\n"
    "    copy(acc, Y[0 : 32, 0 : 64]);\n"
    "}\n";

static void test_f32_vector_pipelined(void) {
  char line[512];
  /* sm_80: cp.async. */
  char *ir = compile_text("vec.tile", vec_src, TILEC_TARGET_SM80, TILEC_EMIT_IR, NULL);
  if (ir) {
    CHECK_CONTAINS(ir, "alloc l_s: f32[2, 32] shared");
    CHECK_CONTAINS(ir, "copy.async L[");
    free(ir);
  }
  char *cu = compile_text("vec.tile", vec_src, TILEC_TARGET_SM80, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    /* The prologue's fetch and the loop's two (whole tile, guarded tail). */
    CHECK(count_of(cu, "// copy.async L -> l_s") == 3);
    CHECK(count_of(cu, "tc_copy_g2s<1, 32, 128, false>((l_s + ") == 3);
    CHECK_CONTAINS(cu, "tc_copy_g2s<1, 32, 128, false>((l_s + (((k + 1LL) % 2LL)) * 32), L + ");
    CHECK_CONTAINS(cu, "tc_cp_async_wait<1>();");
    /* No element-by-element store into the tile. */
    CHECK(strstr(cu, "l_s[((long long)") == NULL);
    free(cu);
  }
  /* sm_90a: TMA. */
  MapsSeen maps;
  ir = compile_text("vec.tile", vec_src, TILEC_TARGET_SM90A, TILEC_EMIT_IR, NULL);
  if (ir) {
    CHECK_CONTAINS(ir, "alloc l_s: f32[2, 32] shared");
    /* l_s and x_s are read by the same statement: they share x_s's
     * barriers (share-barriers), two arrivals per phase. */
    CHECK_CONTAINS(line_of(ir, "alloc x_s_full: i64[2] shared", line, sizeof line), "mbarrier(2)");
    CHECK(strstr(ir, "l_s_full") == NULL);
    CHECK_CONTAINS(line_of(ir, "copy.tma L[(k + 1) * 32 :+ 32]", line, sizeof line), "-> l_s[(k + 1) % 2, 0 :+ 32] map(1) mbarrier(x_s_full)");
    free(ir);
  }
  cu = compile_text("vec.tile", vec_src, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, &maps);
  if (cu) {
    CHECK(maps.ntensor_maps == 2);
    CHECK(maps.maps[1].param == 1 && maps.maps[1].box[0] == 32 && !maps.maps[1].store);
    CHECK(maps.maps[0].param == 0 && maps.maps[0].box[0] == 32 && maps.maps[0].box[1] == 64);
    CHECK(count_of(cu, "// copy.tma L -> l_s") == 2); /* the prologue's and the loop's */
    CHECK(count_of(cu, "tc_copy_g2s") == 0);
    /* The loop's fetch: the next stage's full mbarrier expects 128 bytes,
     * then one 1-D TMA load (map 1) into that stage's buffer. */
    const long c = pos_of(cu, "if (tc_tid == 0) {  // copy.tma L -> l_s\n          const unsigned tc_bar = tc_smem_addr(x_s_full + (((k + 1LL) % 2LL)));");
    const long x = pos_of(cu, "tc_mbar_arrive_expect_tx(tc_bar, 128);\n          tc_tma_load(tc_smem_addr((l_s + (((k + 1LL) % 2LL)) * 32)), &tc_tmap_1, {(int)(((k + 1LL) * 32LL))}, tc_bar);");
    CHECK(c >= 0 && x > c);
    CHECK(count_of(cu, "tc_mbar_arrive_expect_tx(tc_bar, 128);") == 2);
    CHECK(count_of(cu, "tc_mbar_arrive_expect_tx(tc_bar, 4096);") == 2); /* x_s: 32 * 64 * 2 bytes */
    CHECK_CONTAINS(cu, "tc_mbar_wait(tc_smem_addr(x_s_full + ((k % 2LL))), ");
    CHECK(strstr(cu, "l_s_full") == NULL);
    if (c < 0 || x < 0) fprintf(stderr, "vec.tile sm_90a CUDA:\n%s\n", cu);
    free(cu);
  }
  /* The [6] tile: neither cp.async nor TMA; X still is. */
  cu = compile_text("vec6.tile", vec6_src, TILEC_TARGET_SM80, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    CHECK(strstr(cu, "copy.async L") == NULL);
    CHECK(strstr(cu, "(l_s + ") == NULL);
    CHECK_CONTAINS(cu, "l_s[((long long)((0LL + tc_t0)))] = ");
    CHECK(count_of(cu, "// copy.async X -> x_s") == 3);
    free(cu);
  }
  cu = compile_text("vec6.tile", vec6_src, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, &maps);
  if (cu) {
    CHECK(maps.ntensor_maps == 1 && maps.maps[0].param == 0);
    CHECK(strstr(cu, "copy.tma L") == NULL);
    CHECK(strstr(cu, "l_s_full") == NULL);
    CHECK_CONTAINS(cu, "l_s[((long long)((0LL + tc_t0)))] = ");
    free(cu);
  }
}

/* atomic_add of an f32 gemm accumulator (MMA_C fragment) into a compact
 * global f32 slice whose last dim is the fragment's column dim: column
 * pairs through tc_atomic_add_f32x2 (the second column guarded by its own
 * bound), on both GPU targets. Into a slice whose last dim is a fixed
 * index (the columns one dim further out), or into a tensor with declared
 * strides: plain atomicAdd per element, no pairs. */
static const char atomic_head[] =
    "  grid (1) threads (128) as (bx)\n"
    "{\n"
    "    A_s = alloc_shared([64, 64], f16);\n"
    "    B_s = alloc_shared([64, 64], f16);\n"
    "    acc = alloc_fragment([64, 64], f32);\n"
    "    copy(A[0 : 64, 0 : 64], A_s);\n"
    "    copy(B[0 : 64, 0 : 64], B_s);\n"
    "    clear(acc);\n"
    "    gemm(A_s, B_s, acc, transpose_B = true);\n";

static char *compile_atomic(const char *params, const char *add, TilecTarget target) {
  char src[2048];
  snprintf(src, sizeof src, "kernel a(A: f16[M, K], B: f16[N, K], %s)\n%s    %s\n}\n", params, atomic_head, add);
  return compile_text("atomic.tile", src, target, TILEC_EMIT_CUDA, NULL);
}

static void test_atomic_add_pairs(void) {
  const TilecTarget targets[2] = {TILEC_TARGET_SM80, TILEC_TARGET_SM90A};
  for (int t = 0; t < 2; t++) {
    char *cu = compile_atomic("G: f32[M, N]", "atomic_add(acc, G[0 : 64, 0 : 64]);", targets[t]);
    if (cu) {
      CHECK(count_of(cu, "// atomic_add acc -> G, column pairs") == 1);
      CHECK(count_of(cu, "tc_atomic_add_f32x2(&G[") == 1);
      char line[1024];
      const char *pair = line_of(cu, "tc_atomic_add_f32x2(&G[", line, sizeof line);
      CHECK_CONTAINS(pair, "tc_atomic_add_f32x2(&G[(((long long)((0LL + tc_r))) * (N) + ((0LL + tc_c)))], acc[");
      CHECK_CONTAINS(pair, "+ tc_cs + 1], (((0LL + tc_c) + 1LL) < N));");
      CHECK(strstr(cu, "atomicAdd(") == NULL);
      free(cu);
    }
    cu = compile_atomic("H: f32[M, N, 4]", "atomic_add(acc, H[0 : 64, 0 : 64, 1]);", targets[t]);
    if (cu) {
      CHECK(strstr(cu, "tc_atomic_add_f32x2(") == NULL);
      CHECK(strstr(cu, "column pairs") == NULL);
      CHECK_CONTAINS(cu, "atomicAdd(&H[((((long long)((0LL + tc_r))) * (N) + ((0LL + tc_c))) * (4LL) + (1LL))], (float)acc[");
      free(cu);
    }
    cu = compile_atomic("S: f32[M, N] strides (s_m, 1)", "atomic_add(acc, S[0 : 64, 0 : 64]);", targets[t]);
    if (cu) {
      CHECK(strstr(cu, "tc_atomic_add_f32x2(") == NULL);
      CHECK_CONTAINS(cu, "atomicAdd(&S[");
      free(cu);
    }
  }
}

/* A plain copy of the same accumulator into a global f32 tile: column pairs
 * through tc_store_f32x2 (one 8-byte store where aligned), the second
 * column guarded by its own bound; with declared strides too (the last
 * stride is 1); into a 16-bit tensor through tc_store_f16x2 /
 * tc_store_bf16x2; with the columns one dim further out, element by
 * element. */
static void test_store_pairs(void) {
  const TilecTarget targets[2] = {TILEC_TARGET_SM80, TILEC_TARGET_SM90A};
  for (int t = 0; t < 2; t++) {
    char *cu = compile_atomic("G: f32[M, N]", "copy(acc, G[0 : 64, 0 : 64]);", targets[t]);
    if (cu) {
      CHECK(count_of(cu, "// acc -> G, column pairs") == 1);
      CHECK(count_of(cu, "tc_store_f32x2(&G[") == 1);
      char line[1024];
      const char *pair = line_of(cu, "tc_store_f32x2(&G[", line, sizeof line);
      CHECK_CONTAINS(pair, "tc_store_f32x2(&G[(((long long)((0LL + tc_r))) * (N) + ((0LL + tc_c)))], acc[");
      CHECK_CONTAINS(pair, "+ tc_cs + 1], (((0LL + tc_c) + 1LL) < N));");
      free(cu);
    }
    cu = compile_atomic("S: f32[M, N] strides (s_m, 1)", "copy(acc, S[0 : 64, 0 : 64]);", targets[t]);
    if (cu) {
      CHECK_CONTAINS(cu, "tc_store_f32x2(&S[((long long)((0LL + tc_r)) * (s_m) + (long long)((0LL + tc_c)))], acc[");
      free(cu);
    }
    /* 16-bit: a 48-column accumulator (stage-stores stages rows of a
     * power-of-two number of 16-byte chunks through shared memory instead). */
    static const char *const narrow[2][2] = {{"f16", "tc_store_f16x2(&H["}, {"bf16", "tc_store_bf16x2(&H["}};
    for (int d = 0; d < 2; d++) {
      char src[1024];
      snprintf(src, sizeof src,
               "kernel a(A: f16[M, K], B: f16[N, K], H: %s[M, N])\n"
               "  grid (1) threads (128) as (bx)\n{\n"
               "    A_s = alloc_shared([64, 64], f16);\n    B_s = alloc_shared([48, 64], f16);\n"
               "    acc = alloc_fragment([64, 48], f32);\n"
               "    copy(A[0 : 64, 0 : 64], A_s);\n    copy(B[0 : 48, 0 : 64], B_s);\n    clear(acc);\n"
               "    gemm(A_s, B_s, acc, transpose_B = true);\n    copy(acc, H[0 : 64, 0 : 48]);\n}\n",
               narrow[d][0]);
      cu = compile_text("narrow.tile", src, targets[t], TILEC_EMIT_CUDA, NULL);
      if (cu) {
        CHECK(count_of(cu, narrow[d][1]) == 1);
        free(cu);
      }
    }
    cu = compile_atomic("H4: f32[M, N, 4]", "copy(acc, H4[0 : 64, 0 : 64, 1]);", targets[t]);
    if (cu) {
      CHECK(strstr(cu, "column pairs") == NULL);
      CHECK_CONTAINS(cu, "H4[((((long long)((0LL + tc_r))) * (N) + ((0LL + tc_c))) * (4LL) + (1LL))] = ");
      free(cu);
    }
  }
}

/* ---- wgmma with the warpgroups splitting N --------------------------------- */

/* The source through sema and the whole pass pipeline for target; the
 * module (in arena) or NULL, with the diagnostics printed. */
static IrModule *lower_text(Arena *arena, const char *src, TilecTarget target) {
  Diag *diag = diag_create(NULL);
  IrModule *m = NULL;
  AstModule *ast = parse_tile(arena, diag, "nsplit.tile", src, strlen(src));
  if (ast) m = sema_build(arena, diag, ast, NULL, 0, target, 0);
  PassOptions popts = {target, NULL, 0, false, false};
  if (m && !pass_run_pipeline(m, &popts, diag, NULL, NULL)) m = NULL;
  if (!m) fprintf(stderr, "nsplit.tile (target %d):\n%s", (int)target, diag_text(diag));
  diag_destroy(diag);
  return m;
}

typedef struct Found {
  const char *name;
  const IrBuffer *buf;
  const IrStmt *gemm; /* the gemm writing `name`, when it is an accumulator */
} Found;

static void find_named(IrStmt *s, void *ctx) {
  Found *f = ctx;
  if (s->kind == IR_STMT_ALLOC && !strcmp(s->u.alloc->name, f->name)) f->buf = s->u.alloc;
  if (s->kind == IR_STMT_GEMM && !strcmp(s->u.gemm.c.buf->name, f->name)) f->gemm = s;
}

static Found find(const IrModule *m, const char *name) {
  Found f = {name, NULL, NULL};
  if (m && m->nkernels) ir_visit_stmts(m->kernels[0]->body, find_named, &f);
  return f;
}

/* Eight warps (256 threads), a [64, 96] accumulator: K^T [128, 64] read
 * transposed times B [128, 96] N-major (the attention backward's dQ^T at
 * dim 64), then a row vector and a column vector beside it, and atomics of
 * all three (the pair atomic, first holders). */
static const char nsplit_src[] =
    "kernel ns(A: f16[K, M], B: f16[K, N], G: f32[M, N], R: f32[M], V: f32[N])\n"
    "  grid (1) threads (256) as (bx)\n"
    "{\n"
    "    a_s = alloc_shared([128, 64], f16);\n"
    "    b_s = alloc_shared([128, 96], f16);\n"
    "    acc = alloc_fragment([64, 96], f32);\n"
    "    rowv = alloc_fragment([64], f32);\n"
    "    colv = alloc_fragment([96], f32);\n"
    "    copy(A[0 : 128, 0 : 64], a_s);\n"
    "    copy(B[0 : 128, 0 : 96], b_s);\n"
    "    clear(acc);\n"
    "    fill(rowv, 1.0);\n"
    "    fill(colv, 2.0);\n"
    "    gemm(a_s, b_s, acc, transpose_A = true);\n"
    "    for i, j in parallel(64, 96) acc[i, j] = acc[i, j] * colv[j] + rowv[i];\n"
    "    atomic_add(acc, G[0 : 64, 0 : 96]);\n"
    "    atomic_add(rowv, R[0 : 64]);\n"
    "    atomic_add(colv, V[0 : 96]);\n"
    "}\n";

/* The same gemm with slices that are not wgmma widths (N 48 over two
 * warpgroups: 24 columns each), and with B also read by an mma.sync gemm
 * (a [32, 96] accumulator: 2 rows of 16 over 8 warps cannot be wgmma),
 * which keeps B in plain swizzled rows, where no slice starts a panel. */
static const char nsplit48_src[] =
    "kernel ns(A: f16[K, M], B: f16[K, N], G: f32[M, N])\n"
    "  grid (1) threads (256) as (bx)\n"
    "{\n"
    "    a_s = alloc_shared([128, 64], f16);\n"
    "    b_s = alloc_shared([128, 48], f16);\n"
    "    acc = alloc_fragment([64, 48], f32);\n"
    "    copy(A[0 : 128, 0 : 64], a_s);\n"
    "    copy(B[0 : 128, 0 : 48], b_s);\n"
    "    clear(acc);\n"
    "    gemm(a_s, b_s, acc, transpose_A = true);\n"
    "    copy(acc, G[0 : 64, 0 : 48]);\n"
    "}\n";

static const char nsplit_shared_b_src[] =
    "kernel ns(A: f16[K, M], B: f16[K, N], C: f16[P, K], G: f32[M, N], H: f32[P, N])\n"
    "  grid (1) threads (256) as (bx)\n"
    "{\n"
    "    a_s = alloc_shared([128, 64], f16);\n"
    "    b_s = alloc_shared([128, 96], f16);\n"
    "    c_s = alloc_shared([32, 128], f16);\n"
    "    acc = alloc_fragment([64, 96], f32);\n"
    "    acc2 = alloc_fragment([32, 96], f32);\n"
    "    copy(A[0 : 128, 0 : 64], a_s);\n"
    "    copy(B[0 : 128, 0 : 96], b_s);\n"
    "    copy(C[0 : 32, 0 : 128], c_s);\n"
    "    clear(acc);\n"
    "    clear(acc2);\n"
    "    gemm(a_s, b_s, acc, transpose_A = true);\n"
    "    gemm(c_s, b_s, acc2);\n"
    "    copy(acc, G[0 : 64, 0 : 96]);\n"
    "    copy(acc2, H[0 : 32, 0 : 96]);\n"
    "}\n";

/* A reduction over the accumulator's rows: the N split is not taken (the
 * kernel is inferred again without it) and the rows fold across warps as
 * before. */
static const char nsplit_reduce_src[] =
    "kernel ns(A: f16[K, M], B: f16[K, N], R: f32[M])\n"
    "  grid (1) threads (256) as (bx)\n"
    "{\n"
    "    a_s = alloc_shared([128, 64], f16);\n"
    "    b_s = alloc_shared([128, 96], f16);\n"
    "    acc = alloc_fragment([64, 96], f32);\n"
    "    rmax = alloc_fragment([64], f32);\n"
    "    copy(A[0 : 128, 0 : 64], a_s);\n"
    "    copy(B[0 : 128, 0 : 96], b_s);\n"
    "    clear(acc);\n"
    "    gemm(a_s, b_s, acc, transpose_A = true);\n"
    "    reduce_max(acc, rmax, dim = 1);\n"
    "    copy(rmax, R[0 : 64]);\n"
    "}\n";

/* A row vector read beside the split accumulator and beside another of
 * the same shape that cannot be split (its A is part of a tile): the two
 * would map rows differently, so the kernel is inferred without the split,
 * as before it (both 2 x 4 warps). */
static const char nsplit_rowvec_src[] =
    "kernel ns(A: f16[K, M], B: f16[K, N], C: f16[K, L], G: f32[M, N], H: f32[M, N])\n"
    "  grid (1) threads (256) as (bx)\n"
    "{\n"
    "    a_s = alloc_shared([128, 64], f16);\n"
    "    c_s = alloc_shared([128, 128], f16);\n"
    "    b_s = alloc_shared([128, 96], f16);\n"
    "    acc = alloc_fragment([64, 96], f32);\n"
    "    other = alloc_fragment([64, 96], f32);\n"
    "    rowv = alloc_fragment([64], f32);\n"
    "    copy(A[0 : 128, 0 : 64], a_s);\n"
    "    copy(C[0 : 128, 0 : 128], c_s);\n"
    "    copy(B[0 : 128, 0 : 96], b_s);\n"
    "    fill(rowv, 1.0);\n"
    "    clear(other);\n"
    "    gemm(c_s[0 : 128, 0 : 64], b_s, other, transpose_A = true);\n"
    "    for i, j in parallel(64, 96) other[i, j] = other[i, j] + rowv[i];\n"
    "    clear(acc);\n"
    "    gemm(a_s, b_s, acc, transpose_A = true);\n"
    "    for i, j in parallel(64, 96) acc[i, j] = acc[i, j] * rowv[i];\n"
    "    copy(acc, G[0 : 64, 0 : 96]);\n"
    "    copy(other, H[0 : 64, 0 : 96]);\n"
    "}\n";

static bool in_warpgroups(const IrBuffer *b) {
  return b && b->layout.kind == IR_LAYOUT_FRAGMENT && b->layout.frag == IR_FRAG_MMA_C &&
         b->layout.warp_order == IR_WARP_ORDER_WARPGROUPS;
}

/* ir_int_multiple_of, which keeps a TMA box whose first column may be
 * unaligned on cp.async (lower-tma): k * 64 + 128 is a multiple of 8, a
 * variable alone, k * 64 + 3 and a select with one odd branch are not. */
/* pdl_sync() / pdl_trigger(): on sm_90a the kernel info says pdl_sync (the
 * runtime's launch attribute) and the CUDA waits / triggers at the kernel's
 * start; on sm_80 and the CPU both are no-ops. */
static void test_pdl(void) {
  static const char src[] =
      "kernel k(A: f32[N], B: f32[N])\n"
      "  grid (ceildiv(N, 128)) threads (128) as (bx)\n"
      "{\n"
      "    a = alloc_fragment([128], f32);\n"
      "    pdl_sync();\n"
      "    pdl_trigger();\n"
      "    copy(A[bx * 128 : (bx + 1) * 128], a);\n"
      "    copy(a, B[bx * 128 : (bx + 1) * 128]);\n"
      "}\n";
  const struct {
    TilecTarget target;
    TilecEmit emit;
    int pdl;
  } cases[] = {{TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, 1}, {TILEC_TARGET_SM80, TILEC_EMIT_CUDA, 0},
               {TILEC_TARGET_CPU, TILEC_EMIT_C, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    TilecOptions o;
    tilec_options_init(&o);
    o.emit = cases[c].emit;
    o.target = cases[c].target;
    TilecResult *r = NULL;
    const int rc = tilec_compile("pdl.tile", src, sizeof src - 1, &o, &r);
    CHECK(rc == 0);
    if (rc == 0) {
      CHECK(tilec_result_kernel(r, 0)->pdl_sync == cases[c].pdl);
      const char *out = tilec_result_output(r);
      const char *wait = strstr(out, "tc_pdl_wait();"), *trigger = strstr(out, "tc_pdl_trigger();");
      CHECK((wait != NULL) == (cases[c].pdl == 1));
      CHECK((trigger != NULL) == (cases[c].pdl == 1));
      /* Both before the kernel's first statement (its fragment). */
      if (wait && trigger) CHECK(wait < trigger && trigger < strstr(out, "float a["));
    } else {
      fprintf(stderr, "%s", tilec_result_diagnostics(r));
    }
    tilec_result_destroy(r);
  }
}

static void test_multiple_of(void) {
  Arena *arena = arena_create();
  IrModule *m = ir_module_new(arena, "t");
  SrcLoc loc = {0};
  IrVar *k = ir_var_new(m, "k", IR_VAR_LOOP, DTYPE_I64, loc);
  IrExpr *k64 = ir_binary(m, IR_OP_MUL, ir_var_ref(m, k, loc), ir_int(m, 64, loc), loc);
  CHECK(ir_int_multiple_of(ir_binary(m, IR_OP_ADD, k64, ir_int(m, 128, loc), loc), 8));
  CHECK(ir_int_multiple_of(ir_binary(m, IR_OP_SUB, ir_int(m, 0, loc), k64, loc), 16));
  CHECK(!ir_int_multiple_of(ir_var_ref(m, k, loc), 8));
  CHECK(!ir_int_multiple_of(ir_binary(m, IR_OP_ADD, k64, ir_int(m, 3, loc), loc), 8));
  CHECK(!ir_int_multiple_of(k64, 128));
  arena_destroy(arena);
}

static void test_nsplit(void) {
  Arena *arena = arena_create();
  /* sm_90a: wgmma, two warpgroups of 64 rows x 48 columns. */
  IrModule *m = lower_text(arena, nsplit_src, TILEC_TARGET_SM90A);
  if (m) {
    const Found acc = find(m, "acc"), b = find(m, "b_s"), rowv = find(m, "rowv"), colv = find(m, "colv");
    CHECK(acc.buf && acc.gemm && acc.gemm->u.gemm.wgmma);
    if (acc.buf) {
      const IrLayout *l = &acc.buf->layout;
      CHECK(l->frag == IR_FRAG_MMA_C && l->rows == 64 && l->cols == 96);
      CHECK(l->warps_m == 4 && l->warps_n == 2 && l->warp_order == IR_WARP_ORDER_WARPGROUPS);
      CHECK(l->rows_local == 2 && l->cols_local == 12);
      CHECK(ir_layout_wgmma_n(l) == 48);
      /* Warp w: the 16-row slice w % 4 of its warpgroup, the warpgroup's
       * columns (warpgroup w / 4). */
      for (int w = 0; w < 8; w++) {
        int wm = -1, wn = -1;
        ir_layout_warp_pos(l, w, &wm, &wn);
        CHECK(wm == w % 4 && wn == w / 4);
      }
    }
    /* B in 16-column panels (32-byte swizzle): each slice of 48 starts one. */
    CHECK(b.buf && b.buf->layout.kind == IR_LAYOUT_SWIZZLED && b.buf->layout.panel_cols == 16 &&
          b.buf->layout.swizzle_bytes == 32);
    CHECK(in_warpgroups(rowv.buf) && rowv.buf->layout.cols == 0 && rowv.buf->layout.warps_n == 2);
    CHECK(in_warpgroups(colv.buf) && colv.buf->layout.rows == 0 && colv.buf->layout.cols_local == 12);
    CHECK(m->kernels[0]->wgmma);
  }
  char *ir = compile_text("nsplit.tile", nsplit_src, TILEC_TARGET_SM90A, TILEC_EMIT_IR, NULL);
  if (ir) {
    CHECK_CONTAINS(ir, "alloc acc: f32[64, 96] fragment layout(mma_c(64x96, warps 4x2 in warpgroups, local 2x12))");
    CHECK_CONTAINS(ir, "alloc b_s: f16[128, 96] shared layout(swizzled(32, panels 16))");
    CHECK_CONTAINS(ir, "layout(rows of mma_c(64, warps 4x2 in warpgroups, local 2))");
    CHECK_CONTAINS(ir, "layout(cols of mma_c(96, warps 4x2 in warpgroups, local 12))");
    free(ir);
  }
  char *cu = compile_text("nsplit.tile", nsplit_src, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    /* Each warpgroup an m64n48k16 on its slice: GN 2, B in 32-byte panels. */
    CHECK_CONTAINS(cu, "tc_gemm_wgmma_ss<tc_f16_t, 64, 96, 128, 8, true, 32, false, ");
    CHECK_CONTAINS(cu, ", true, 2>(a_s, b_s, acc, tc_warp);");
    CHECK_CONTAINS(cu, "#define TC_WGMMA_N48 1");
    CHECK(strstr(cu, "#define TC_WGMMA_N96") == NULL);
    CHECK(strstr(cu, "<96>(acc)") == NULL && strstr(cu, ", 96>(acc)") == NULL);
    /* The warp grid in warpgroup order, in every formula. */
    CHECK_CONTAINS(cu, "(((tc_warp / 8) * 4 + tc_warp % 4) * 16 + (tc_rs / 2) * 16");
    CHECK_CONTAINS(cu, "(((tc_warp / 4) % 2) * 48 + (tc_cs / 2) * 8");
    CHECK(count_of(cu, "tc_atomic_add_f32x2(&G[") == 1);
    CHECK_CONTAINS(cu, "(tc_lane & 3) == 0 && ((tc_warp / 4) % 2) == 0");
    CHECK_CONTAINS(cu, "((tc_warp / 8) * 4 + tc_warp % 4) == 0 && tc_lane < 4");
    CHECK(strstr(cu, "tc_warp / 2)") == NULL && strstr(cu, "tc_warp % 2)") == NULL); /* no row-major 4x2 */
    free(cu);
  }
  /* sm_80: mma.sync, warps in row-major order, no panels. */
  ir = compile_text("nsplit.tile", nsplit_src, TILEC_TARGET_SM80, TILEC_EMIT_IR, NULL);
  if (ir) {
    CHECK(strstr(ir, "in warpgroups") == NULL && strstr(ir, "wgmma") == NULL && strstr(ir, "panels") == NULL);
    CHECK_CONTAINS(ir, "alloc acc: f32[64, 96] fragment layout(mma_c(64x96, warps 2x4, local 4x6))");
    free(ir);
  }
  /* Slices of 24 columns: not a wgmma width; mma.sync as without the split. */
  m = lower_text(arena, nsplit48_src, TILEC_TARGET_SM90A);
  if (m) {
    const Found acc = find(m, "acc");
    CHECK(acc.gemm && !acc.gemm->u.gemm.wgmma && acc.buf && !in_warpgroups(acc.buf));
    CHECK(acc.buf && acc.buf->layout.warps_m * acc.buf->layout.warps_n == 8);
    CHECK(!m->kernels[0]->wgmma);
  }
  /* B shared with an mma.sync gemm: plain swizzled rows, in which no
   * descriptor starts at column 48, so the split gemm falls back to
   * mma.sync; its accumulator keeps the warpgroup order, which the
   * mma.sync template reads (WG_ORDER). */
  m = lower_text(arena, nsplit_shared_b_src, TILEC_TARGET_SM90A);
  if (m) {
    const Found acc = find(m, "acc"), acc2 = find(m, "acc2"), b = find(m, "b_s");
    CHECK(acc.gemm && !acc.gemm->u.gemm.wgmma && in_warpgroups(acc.buf));
    CHECK(acc2.gemm && !acc2.gemm->u.gemm.wgmma && acc2.buf && !in_warpgroups(acc2.buf));
    CHECK(b.buf && b.buf->layout.kind == IR_LAYOUT_SWIZZLED && b.buf->layout.panel_cols == 0);
  }
  cu = compile_text("nsplit.tile", nsplit_shared_b_src, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    CHECK_CONTAINS(cu, "tc_gemm_ss<tc_f16_t, 64, 96, 128, 4, 2, true, true, false, true, true>(a_s, b_s, acc, tc_warp, tc_lane);");
    CHECK(strstr(cu, "tc_gemm_wgmma") == NULL);
    free(cu);
  }
  /* A reduction over the rows: no N split, the cross-warp fold as before. */
  m = lower_text(arena, nsplit_reduce_src, TILEC_TARGET_SM90A);
  if (m) {
    const Found acc = find(m, "acc");
    CHECK(acc.gemm && !acc.gemm->u.gemm.wgmma && acc.buf && !in_warpgroups(acc.buf));
    CHECK(acc.buf && acc.buf->layout.warps_n > 1);
  }
  cu = compile_text("nsplit.tile", nsplit_reduce_src, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    CHECK(strstr(cu, "in warpgroups") == NULL);
    CHECK_CONTAINS(cu, "tc_reduce_");
    free(cu);
  }
  /* A row vector shared with an accumulator that cannot be split: none is. */
  cu = compile_text("nsplit.tile", nsplit_rowvec_src, TILEC_TARGET_SM90A, TILEC_EMIT_CUDA, NULL);
  if (cu) {
    CHECK(strstr(cu, "in warpgroups") == NULL);
    CHECK(count_of(cu, "mma_c(64x96, warps 2x4, local 4x6)") == 2);
    free(cu);
  }
  arena_destroy(arena);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(scratch, sizeof scratch, "%s/tilec-unit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(scratch)) {
    perror("mkdtemp");
    return 1;
  }
  atexit(cleanup);
  test_printer();
  test_seq_insert_remove();
  test_verify_negative();
  test_vadd();
  test_rowmax();
  test_half_helpers();
  test_fp8_helpers();
  test_grid_of_scalar();
  test_target_sm();
  test_persistent_info();
  test_persistent_bound_shapes();
  test_persistent_q_prefetch();
  test_stream_k_option();
  test_overlap_post_gemm_mask();
  test_inline_producer();
  test_tma_only_info();
  test_gemm_shape_classes();
  test_epilogue_slot_waits();
  test_stagger_warpgroups();
  test_defer_wgmma_waits();
  test_share_barriers();
  test_fills_in_two_places();
  test_f32_vector_pipelined();
  test_atomic_add_pairs();
  test_store_pairs();
  test_nsplit();
  test_multiple_of();
  test_pdl();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("unit: all checks passed\n");
  return 0;
}
