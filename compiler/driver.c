/* driver.c - the compiler library entry point (include/tilec.h).
 *
 * parse -> sema -> pass pipeline (verified after each pass, dumped on
 * request) -> backend. The result keeps the arena alive so the kernel
 * signatures and the IR can be queried after compilation. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ast.h"
#include "backend/backend.h"
#include "include/tilec.h"
#include "ir.h"
#include "passes/passes.h"
#include "sema.h"
#include "simplify.h"
#include "strbuf.h"

struct TilecResult {
  Arena *arena;
  Diag *diag;
  IrModule *module;
  char *output;
  size_t output_size;
  char *specialized_ir;
  TilecKernelInfo *kernels;
  int nkernels;
};

void tilec_options_init(TilecOptions *o) {
  memset(o, 0, sizeof *o);
  o->emit = TILEC_EMIT_C;
  o->target = TILEC_TARGET_CPU;
  o->fast_division = true;
}

const char *tilec_version(void) { return TILEC_VERSION_STRING; }
int tilec_num_passes(void) { return pass_count; }
const char *tilec_pass_name(int i) { return i >= 0 && i < pass_count ? pass_table[i].name : NULL; }
const char *tilec_pass_summary(int i) { return i >= 0 && i < pass_count ? pass_table[i].summary : NULL; }
const char *tilec_pass_targets(int i) {
  if (i < 0 || i >= pass_count) return NULL;
  return pass_table[i].targets == PASS_ALL ? "all" : pass_table[i].targets == PASS_CPU ? "cpu" : "gpu";
}

/* ---- dumps --------------------------------------------------------------- */

typedef struct DumpCtx {
  const TilecOptions *opts;
  TilecResult *result;
  Diag *diag;
  bool failed;
} DumpCtx;

static bool mkdir_p(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return false;
    buf[i] = c;
  }
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void observe(const IrModule *m, int index, const char *pass_name, void *vctx) {
  DumpCtx *ctx = vctx;
  const TilecOptions *o = ctx->opts;
  char *text = NULL;
  if (strcmp(pass_name, "fold-constants") == 0) {
    text = ir_module_to_string(m);
    free(ctx->result->specialized_ir);
    ctx->result->specialized_ir = strdup(text);
  }
  bool print = o->print_after && (strcmp(o->print_after, "all") == 0 || strcmp(o->print_after, pass_name) == 0);
  if (!o->dump_dir && !print) {
    free(text);
    return;
  }
  if (!text) text = ir_module_to_string(m);
  if (print) {
    FILE *out = o->print_stream ? o->print_stream : stderr;
    fprintf(out, "// ----- IR Dump After %s (%02d) -----\n%s\n", pass_name, index, text);
  }
  if (o->dump_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%02d-%s.tir", o->dump_dir, index, pass_name);
    FILE *f = fopen(path, "wb");
    if (!f) {
      diag_error(ctx->diag, (SrcLoc){0}, "cannot write %s: %s", path, strerror(errno));
      ctx->failed = true;
    } else {
      fprintf(f, "// ----- IR Dump After %s (%02d) -----\n%s", pass_name, index, text);
      fclose(f);
    }
  }
  free(text);
}

/* ---- signatures ------------------------------------------------------------ */

/* A dim or stride of a tensor parameter: a dynamic symbol or a constant. */
static void dim_info(const IrExpr *e, const char *name, TilecDim *dim) {
  dim->name = name;
  if (e->kind == IR_EXPR_VAR && !e->u.var->bound) {
    dim->is_dynamic = true;
    dim->symbol = e->u.var->dynamic_index;
  } else {
    ir_expr_is_int_const(e, &dim->value);
  }
}

typedef struct TmaUses {
  const IrBuffer *buf;
  int tma, other; /* TMA copies of buf; every other reference to it */
} TmaUses;

static void count_tma_use(IrStmt *s, void *ctx) {
  TmaUses *u = ctx;
  int refs = ir_stmt_buffer_refs(s, u->buf);
  if (s->kind == IR_STMT_COPY && s->u.copy.tma && (s->u.copy.src.buf == u->buf || s->u.copy.dst.buf == u->buf)) {
    u->tma++;
    refs--; /* the copy's global operand; a load of buf in its index expressions still counts */
  }
  u->other += refs;
}

/* TilecParamInfo.tma_only: global buffer b is named by TMA copies and by
 * nothing else in k's final body (ir_visit_stmts reaches every statement:
 * sequences, loops, branches, both warp roles). */
static bool tma_only(const IrKernel *k, const IrBuffer *b) {
  if (k->ntma_maps == 0) return false;
  TmaUses u = {b, 0, 0};
  ir_visit_stmts(k->body, count_tma_use, &u);
  return u.tma > 0 && u.other == 0;
}

static void build_infos(TilecResult *r, bool fast_division) {
  IrModule *m = r->module;
  r->nkernels = m->nkernels;
  r->kernels = ARENA_NEW_ARRAY(r->arena, TilecKernelInfo, m->nkernels ? m->nkernels : 1);
  for (int ki = 0; ki < m->nkernels; ki++) {
    const IrKernel *k = m->kernels[ki];
    TilecKernelInfo *info = &r->kernels[ki];
    info->name = k->name;
    info->entry = arena_printf(r->arena, "tilec_%s", k->name);
    TilecParamInfo *params = ARENA_NEW_ARRAY(r->arena, TilecParamInfo, k->nparams ? k->nparams : 1);
    for (int i = 0; i < k->nparams; i++) {
      const IrParam *p = &k->params[i];
      params[i].name = p->name;
      params[i].is_tensor = p->is_tensor;
      params[i].dtype = (TilecDType)(p->is_tensor ? p->buffer->dtype : p->scalar->dtype);
      if (!p->is_tensor) continue;
      params[i].rank = p->buffer->rank;
      for (int d = 0; d < p->buffer->rank; d++) {
        dim_info(p->buffer->shape[d], p->dim_names[d], &params[i].dims[d]);
        if (p->buffer->strides) dim_info(p->buffer->strides[d], p->stride_names[d], &params[i].strides[d]);
      }
      params[i].has_strides = p->buffer->strides != NULL;
      params[i].tma_only = tma_only(k, p->buffer);
    }
    info->params = params;
    info->nparams = k->nparams;
    int ndyn = 0;
    for (int i = 0; i < k->nsymbols; i++) ndyn += !k->symbols[i]->bound;
    const char **names = ARENA_NEW_ARRAY(r->arena, const char *, ndyn ? ndyn : 1);
    for (int i = 0; i < k->nsymbols; i++)
      if (!k->symbols[i]->bound) names[k->symbols[i]->dynamic_index] = k->symbols[i]->name;
    info->dynamic_symbols = names;
    info->ndynamic = ndyn;
    int64_t threads = 0;
    ir_expr_is_int_const(k->threads, &threads);
    info->threads = (int)threads;
    info->shared_bytes = ir_shared_bytes(k->body, IR_SHARED_ALL);
    TilecTensorMapInfo *maps = ARENA_NEW_ARRAY(r->arena, TilecTensorMapInfo, k->ntma_maps ? k->ntma_maps : 1);
    for (int i = 0; i < k->ntma_maps; i++) {
      maps[i].param = k->tma_maps[i].param;
      maps[i].swizzle_bytes = k->tma_maps[i].swizzle_bytes;
      maps[i].store = k->tma_maps[i].store;
      for (int d = 0; d < IR_MAX_RANK && d < TILEC_MAX_RANK; d++) maps[i].box[d] = k->tma_maps[i].box[d];
    }
    info->tensor_maps = maps;
    info->ntensor_maps = k->ntma_maps;
    info->persistent = k->persistent;
    info->cluster = k->cluster;
    info->pdl_sync = k->pdl_sync;
    /* A persistent kernel with tile splits to serve gets its divisor table
     * after its own shared memory (the CUDA backend's fast division). */
    const int fastdiv_table = fast_division && k->persistent ? cuda_fastdiv_table_offset(k) : -1;
    info->fast_division = fastdiv_table >= 0;
    if (info->fast_division) info->shared_bytes = fastdiv_table + CUDA_FASTDIV_TABLE_BYTES;
    info->stream_k = cuda_stream_k_fixup(k) != NULL;
    info->stream_k_able = k->stream_k_able;
  }
}

typedef struct DynEnv {
  const IrKernel *k;
  const int64_t *dyn;
  const int64_t *params; /* by parameter index, or NULL */
  int64_t sm_count;      /* the builtin sm_count's value (shape choices only) */
} DynEnv;

static bool dyn_value(const IrVar *v, void *ctx, int64_t *out) {
  DynEnv *env = ctx;
  if (v->kind == IR_VAR_SCALAR_PARAM && env->params && v->param_index >= 0) {
    *out = env->params[v->param_index];
    return true;
  }
  if (v == env->k->sm_count) {
    *out = env->sm_count;
    return true;
  }
  if (v->kind != IR_VAR_SYMBOL || v->bound || v->dynamic_index < 0) return false;
  *out = env->dyn[v->dynamic_index];
  return true;
}

bool tilec_result_grid_of(const TilecResult *r, int kernel, const int64_t *dyn, const int64_t *params,
                          int64_t grid[3]) {
  const IrKernel *k = r->module->kernels[kernel];
  DynEnv env = {k, dyn, params};
  bool ok = true;
  for (int g = 0; g < 3; g++)
    if (!ir_eval_int(k->grid[g], dyn_value, &env, &grid[g])) grid[g] = 0, ok = false;
  return ok;
}

bool tilec_result_stream_k_iters_of(const TilecResult *r, int kernel, const int64_t *dyn, const int64_t *params,
                                    int64_t *iters) {
  const IrKernel *k = r->module->kernels[kernel];
  DynEnv env = {k, dyn, params};
  return k->stream_k_iters && ir_eval_int(k->stream_k_iters, dyn_value, &env, iters);
}

bool tilec_result_shape_class_of(const TilecResult *r, int kernel, const int64_t *dyn, const int64_t *params,
                                 int64_t sm_count, unsigned *holds, unsigned *owned) {
  const IrKernel *k = r->module->kernels[kernel];
  DynEnv env = {k, dyn, params, sm_count};
  *holds = *owned = 0;
  for (int i = 0; i < k->nshape_choices; i++) {
    int64_t v = 0;
    if (!ir_eval_int(k->shape_choice[i], dyn_value, &env, &v)) return false;
    *owned |= 1u << k->shape_choice_bit[i];
    if (v) *holds |= 1u << k->shape_choice_bit[i];
  }
  return true;
}

unsigned tilec_result_shape_class_bits(const TilecResult *r) {
  unsigned bits = 0;
  for (int ki = 0; r && r->module && ki < r->module->nkernels; ki++) {
    const IrKernel *k = r->module->kernels[ki];
    for (int i = 0; i < k->nshape_choices; i++) bits |= 1u << k->shape_choice_bit[i];
  }
  return bits;
}

int tilec_result_num_shape_choices(const TilecResult *r, int kernel) {
  return r && r->module && kernel >= 0 && kernel < r->module->nkernels ? r->module->kernels[kernel]->nshape_choices : 0;
}

unsigned tilec_result_shape_class(const TilecResult *r) { return r && r->module ? r->module->shape_class : 0; }

void tilec_result_grid(const TilecResult *r, int kernel, const int64_t *dyn, int64_t grid[3]) {
  tilec_result_grid_of(r, kernel, dyn, NULL, grid);
}

/* ---- shape choices --------------------------------------------------------- */

/* The runtime picks a build by evaluating the conditions of the loaded one
 * (every choice false: class 0), folded as that build folds its consts. A
 * condition that names a const which is itself a choice (seq_len % block_N
 * with block_N 128 or 176) folds differently in another class, which would
 * then run for launches its own condition rules out. So every class's
 * conditions must read as class 0's, bit for bit; sema runs once per class
 * (consts only matter here; at most 2^8 runs, 4 for the examples). */
static bool shape_choices_agree(TilecResult *r, const AstModule *ast, const TilecOptions *o, TilecTarget target) {
  const IrModule *m = r->module;
  const int n = m->nshape_choices;
  if (n == 0) return true;
  const IrModule *base = m;
  Arena *scratch = arena_create();
  Diag *quiet = diag_create(NULL);
  bool ok = true;
  if (o->shape_class != 0) base = sema_build(scratch, quiet, ast, o->defines, o->ndefines, target, 0);
  for (unsigned c = 0; ok && base && c < (1u << n); c++) {
    const IrModule *other = c == o->shape_class ? m : sema_build(scratch, quiet, ast, o->defines, o->ndefines, target, c);
    if (!other || other->nkernels != base->nkernels) continue; /* that build reports its own errors */
    for (int ki = 0; ok && ki < other->nkernels; ki++) {
      const IrKernel *k = other->kernels[ki], *k0 = base->kernels[ki];
      for (int i = 0; ok && i < k->nshape_choices; i++) {
        int j = 0;
        while (j < k0->nshape_choices && k0->shape_choice_bit[j] != k->shape_choice_bit[i]) j++;
        /* By their text: the two builds have variables of their own. */
        if (j < k0->nshape_choices && strcmp(ir_expr_to_string(scratch, k0->shape_choice[j]),
                                             ir_expr_to_string(scratch, k->shape_choice[i])) == 0)
          continue;
        diag_error(r->diag, k->shape_choice[i]->loc,
                   "kernel '%s': shape choice #%d is '%s' in the build for choices 0x%x, but '%s' in the one the "
                   "runtime tests launches with (every choice false): a condition must not name a const that "
                   "another shape choice sets; write it in the shape symbols and fixed consts",
                   k->name, k->shape_choice_bit[i], ir_expr_to_string(scratch, k->shape_choice[i]), c,
                   j < k0->nshape_choices ? ir_expr_to_string(scratch, k0->shape_choice[j]) : "no condition");
        ok = false;
      }
    }
  }
  diag_destroy(quiet);
  arena_destroy(scratch);
  return ok;
}

/* ---- options ----------------------------------------------------------------- */

static bool define_is_known(const AstModule *ast, const char *name) {
  for (const AstKernel *k = ast->kernels; k; k = k->next) {
    for (const AstConst *c = k->consts; c; c = c->next)
      if (strcmp(c->name, name) == 0) return true;
    for (const AstParam *p = k->params; p; p = p->next) {
      for (const AstArg *d = p->dims; d; d = d->next)
        if (d->value->kind == AST_EXPR_NAME && strcmp(d->value->u.name, name) == 0) return true;
      for (const AstArg *d = p->strides; d; d = d->next)
        if (d->value->kind == AST_EXPR_NAME && strcmp(d->value->u.name, name) == 0) return true;
    }
  }
  return false;
}

static bool pass_name_known(const char *name) {
  if (strcmp(name, "all") == 0 || strcmp(name, "sema") == 0) return true;
  for (int i = 0; i < pass_count; i++)
    if (strcmp(pass_table[i].name, name) == 0) return true;
  return false;
}

int tilec_compile(const char *file, const char *text, size_t len, const TilecOptions *options,
                  TilecResult **out) {
  TilecOptions defaults;
  if (!options) {
    tilec_options_init(&defaults);
    options = &defaults;
  }
  TilecResult *r = calloc(1, sizeof *r);
  if (!r) abort();
  *out = r;
  r->arena = arena_create();
  r->diag = diag_create(options->diag_echo);
  if (!file) file = "<input>";
  SrcLoc none = {0};

  TilecTarget target = options->target;
  if (options->emit == TILEC_EMIT_C && target != TILEC_TARGET_CPU) {
    diag_error(r->diag, none, "--emit=c needs --target=cpu");
    return 2;
  }
  if (options->emit == TILEC_EMIT_CUDA && target == TILEC_TARGET_CPU) {
    diag_error(r->diag, none, "--emit=cuda needs a GPU target (sm_80 or sm_90a)");
    return 2;
  }
  if (options->print_after && !pass_name_known(options->print_after)) {
    diag_error(r->diag, none, "--print-ir-after=%s: no such pass (see --list-passes)", options->print_after);
    return 2;
  }
  if (options->dump_dir && !mkdir_p(options->dump_dir)) {
    diag_error(r->diag, none, "--dump-ir=%s: cannot create the directory: %s", options->dump_dir, strerror(errno));
    return 2;
  }

  AstModule *ast = parse_tile(r->arena, r->diag, file, text, len);
  if (!ast) return 1;
  for (int i = 0; i < options->ndefines; i++)
    if (strcmp(options->defines[i].name, "target_sm") == 0) {
      diag_error(r->diag, none,
                 "-D target_sm: target_sm follows the compilation target (--target: sm_80 gives 80, "
                 "sm_90a 90, cpu 0) and cannot be set with -D; set the consts that depend on it instead");
      return 2;
    } else if (strcmp(options->defines[i].name, "sm_count") == 0) {
      diag_error(r->diag, none,
                 "-D sm_count: sm_count is the SM count of the GPU a launch runs on, known only at launch; "
                 "pick the build with --shape-class or set the consts that depend on it instead");
      return 2;
    } else if (!define_is_known(ast, options->defines[i].name)) {
      diag_error(r->diag, none, "-D %s: the program has no constant, shape or stride symbol named '%s'",
                 options->defines[i].name, options->defines[i].name);
      return 2;
    }
  r->module = sema_build(r->arena, r->diag, ast, options->defines, options->ndefines, target,
                         options->shape_class);
  if (!r->module) return 1;
  if (!shape_choices_agree(r, ast, options, target)) return 1;

  DumpCtx ctx = {options, r, r->diag, false};
  /* Dump 00 is sema's output, before any pass. */
  observe(r->module, 0, "sema", &ctx);
  PassOptions popts = {target, options->defines, options->ndefines, options->no_tma, options->cluster_multicast,
                       options->stream_k};
  if (!pass_run_pipeline(r->module, &popts, r->diag, observe, &ctx) || ctx.failed) return 1;
  build_infos(r, options->fast_division && options->emit == TILEC_EMIT_CUDA);

  StrBuf sb;
  sb_init(&sb);
  switch (options->emit) {
  case TILEC_EMIT_IR: {
    char *ir = ir_module_to_string(r->module);
    sb_puts(&sb, ir);
    free(ir);
    break;
  }
  case TILEC_EMIT_C:
    if (!emit_c_module(r->module, &sb, r->diag)) {
      sb_free(&sb);
      return 1;
    }
    break;
  case TILEC_EMIT_CUDA:
    if (!emit_cuda_module(r->module, &sb, r->diag, options->fast_division)) {
      sb_free(&sb);
      return 1;
    }
    break;
  }
  r->output_size = sb.len;
  r->output = sb_take(&sb);
  return 0;
}

const char *tilec_result_output(const TilecResult *r) { return r && r->output ? r->output : ""; }
size_t tilec_result_output_size(const TilecResult *r) { return r ? r->output_size : 0; }
const char *tilec_result_diagnostics(const TilecResult *r) { return r ? diag_text(r->diag) : ""; }
const char *tilec_result_specialized_ir(const TilecResult *r) {
  return r && r->specialized_ir ? r->specialized_ir : "";
}
int tilec_result_num_kernels(const TilecResult *r) { return r ? r->nkernels : 0; }
const TilecKernelInfo *tilec_result_kernel(const TilecResult *r, int i) {
  return r && i >= 0 && i < r->nkernels ? &r->kernels[i] : NULL;
}

void tilec_result_destroy(TilecResult *r) {
  if (!r) return;
  free(r->output);
  free(r->specialized_ir);
  diag_destroy(r->diag);
  arena_destroy(r->arena);
  free(r);
}
