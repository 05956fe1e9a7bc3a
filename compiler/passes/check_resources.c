/* check_resources.c - pass "check-resources" (GPU): limits of the target.
 *
 * Needs: software-pipeline (it multiplies the shared tiles by their stages).
 * Guarantees, or an error that names the buffers: the block's shared memory
 * (every shared buffer, 128-byte aligned, as the CUDA backend lays them out) fits
 * the target's per-block limit (sm_80: 163 KB, sm_90a: 227 KB), and the
 * registers the fragments need per thread stay under the 255-register cap
 * (a fragment that large would spill to local memory); an FP8 gemm is a
 * wgmma on sm_90a (infer-layout and swizzle-layout kept it one) and never
 * reaches sm_80, which has no FP8 tensor cores (the error says what to do). */
#include "passes.h"

typedef struct Usage {
  int64_t shared;
  int64_t fragment_words; /* 32-bit registers per thread for fragments */
  const IrBuffer *shared_bufs[32];
  int nshared;
  const IrBuffer *biggest_fragment;
  int64_t biggest_words;
} Usage;

static void count(IrStmt *s, void *ctx) {
  Usage *u = ctx;
  if (s->kind != IR_STMT_ALLOC) return;
  const IrBuffer *b = s->u.alloc;
  if (b->scope == IR_SCOPE_SHARED) {
    /* Saturating: a huge shape must fail the limit check, not wrap past it. */
    int64_t bytes = ir_buffer_bytes_aligned(b);
    u->shared = u->shared > INT64_MAX / 2 - bytes ? INT64_MAX / 2 : u->shared + bytes;
    if (u->nshared < 32) u->shared_bufs[u->nshared++] = b;
  } else if (b->scope == IR_SCOPE_FRAGMENT && b->layout.kind == IR_LAYOUT_FRAGMENT) {
    int64_t elems = (int64_t)b->layout.rows_local * b->layout.cols_local; /* ints: no overflow */
    int64_t words = (elems * dtype_size(b->dtype) + 3) / 4;
    u->fragment_words += words;
    if (words > u->biggest_words) u->biggest_words = words, u->biggest_fragment = b;
  }
}

typedef struct GemmCheck {
  const PassOptions *opts;
  Diag *diag;
  bool ok;
} GemmCheck;

static void check_gemm_dtypes(IrStmt *s, void *ctx) {
  GemmCheck *g = ctx;
  if (s->kind != IR_STMT_GEMM) return;
  const IrBuffer *ops[2] = {s->u.gemm.a.buf, s->u.gemm.b.buf};
  for (int i = 0; i < 2; i++) {
    const IrBuffer *b = ops[i];
    if (!b || !dtype_is_fp8(b->dtype)) continue;
    if (g->opts->target == TILEC_TARGET_SM90A && s->u.gemm.wgmma) return;
    if (g->opts->target == TILEC_TARGET_SM90A)
      diag_error(g->diag, s->loc, "gemm: operand '%s' is %s; FP8 gemm on sm_90a runs only as wgmma, whose "
                 "descriptors need each tile's rows swizzled as 32, 64 or 128 bytes or as panels of them "
                 "(swizzle-layout could not): use a block_K that is a multiple of 32",
                 b->name, dtype_name(b->dtype));
    else
      diag_error(g->diag, s->loc, "gemm: operand '%s' is %s; sm_80 has no FP8 tensor cores (FP8 gemm needs "
                 "sm_90a's wgmma): compile for cpu, or copy the tiles into f16/bf16 shared tiles", b->name,
                 dtype_name(b->dtype));
    g->ok = false;
    return; /* one report per gemm */
  }
}

bool pass_check_resources(IrModule *m, const PassOptions *opts, Diag *diag) {
  int64_t limit = opts->target == TILEC_TARGET_SM90A ? 227 * 1024 : 163 * 1024;
  const char *arch = opts->target == TILEC_TARGET_SM90A ? "sm_90a" : "sm_80";
  bool ok = true;
  for (int i = 0; i < m->nkernels; i++) {
    IrKernel *k = m->kernels[i];
    Usage u = {0};
    ir_visit_stmts(k->body, count, &u);
    if (u.shared > limit) {
      char names[512] = "";
      size_t at = 0;
      for (int b = 0; b < u.nshared && at < sizeof names - 64; b++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s'%s'", b ? ", " : "", u.shared_bufs[b]->name);
      diag_error(diag, k->loc, "kernel '%s' needs %lld bytes of shared memory (%s), more than the %lld %s allows",
                 k->name, (long long)u.shared, names, (long long)limit, arch);
      ok = false;
    }
    if (u.fragment_words > 255) {
      diag_error(diag, u.biggest_fragment->loc,
                 "kernel '%s': fragments need %lld registers per thread (largest: '%s', %lld), over the 255-register "
                 "limit; use more threads or smaller tiles",
                 k->name, (long long)u.fragment_words, u.biggest_fragment->name, (long long)u.biggest_words);
      ok = false;
    }
    GemmCheck g = {opts, diag, true};
    ir_visit_stmts(k->body, check_gemm_dtypes, &g);
    ok &= g.ok;
  }
  return ok;
}
