/* gemm.c - gemms: c += a @ b on tensor cores.
 *
 * The accumulator is an f32 MMA_C fragment; B a 16-bit shared tile; A the
 * same, or a fragment (the _rs forms: A from registers). Each gemm becomes one
 * call of a device template: tc_gemm_ss/tc_gemm_rs (mma.sync m16n8k16,
 * runtime/device/tilec_tile.cuh) or, where infer-layout marked it wgmma
 * (sm_90a), tc_gemm_wgmma_ss/_rs (tilec_wgmma.cuh), issued by each
 * warpgroup; an in-flight wgmma (wgmma_async) is drained later by the
 * WGMMA_WAIT statement that software-pipeline placed. Template arguments
 * carry the tile sizes, the warp split, the swizzle of each shared operand
 * and transpose_B (and transpose_A, a trailing `true`: A is the [K, M]
 * tile, read with ldmatrix .trans or wgmma's transpose bit for A); the tag
 * type (tc_f16_t / tc_bf16_t) picks the mma. A 16-bit fragment that an
 * issue-only wgmma reads (overlap-wgmma's P) is written and read as 32-bit
 * pairs (cuda_frag_pairs: the copy that fills it, every rs gemm on it).
 * FP8 tiles (sm_90a, wgmma only; infer-layout refuses the rest):
 * tc_gemm_wgmma_fp8_ss with one tag per operand (tc_e4m3_t / tc_e5m2_t),
 * A always [M, K] and B always [N, K] (transpose_B; FP8 wgmma has no
 * transpose bits). An in-flight FP8 gemm (the pipelined loop's) promotes
 * under the next chunk's wgmmas: its accumulator gets a tc_fp8_pending
 * state beside it (tc_pend_<acc>: two chunk parts), the gemm passes it, and
 * the WGMMA_WAIT after the loop becomes tc_wgmma_fp8_drain. Where a tile is
 * an odd number of chunks the part alternates between iterations: frame.c
 * then writes the loop body twice (cuda_fp8_alternating), and each copy
 * names its part (Cuda.fp8_gemm, fp8_part).
 * An accumulator whose warpgroups split N (warp order WARPGROUPS,
 * infer-layout) is written by tc_gemm_wgmma_ss with GN = its warp columns
 * (each warpgroup an m64n(N/GN)k16 on its slice of B), or, where
 * swizzle-layout took the gemm back to mma.sync, by tc_gemm_ss with
 * WG_ORDER (the same warp order); the register-A forms do not take it. */
#include "cuda_emit.h"

typedef bool (*GemmMatch)(const IrStmt *g, const IrBuffer *b);

/* Whether s (recursively, both roles included) holds a gemm g with
 * match(g, b). */
static bool holds_gemm(const IrStmt *s, GemmMatch match, const IrBuffer *b) {
  if (!s) return false;
  switch (s->kind) {
  case IR_STMT_SEQ:
    for (int i = 0; i < s->u.seq.n; i++)
      if (holds_gemm(s->u.seq.items[i], match, b)) return true;
    return false;
  case IR_STMT_FOR:
    return holds_gemm(s->u.for_.body, match, b);
  case IR_STMT_IF:
    return holds_gemm(s->u.if_.then_, match, b) || holds_gemm(s->u.if_.else_, match, b);
  case IR_STMT_WARP_ROLES:
    return holds_gemm(s->u.roles.producer, match, b) || holds_gemm(s->u.roles.consumer, match, b);
  case IR_STMT_GEMM:
    return match(s, b);
  default:
    return false;
  }
}

/* An issue-only wgmma gemm with fragment A b: overlap-wgmma's P, converted
 * in one iteration and read by a wgmma issued in the next. */
static bool reads_in_flight(const IrStmt *g, const IrBuffer *b) {
  return g->u.gemm.wgmma && g->u.gemm.wgmma_issue_only && g->u.gemm.a.buf == b;
}

bool cuda_frag_pairs(const Cuda *C, const IrBuffer *b) {
  return b->scope == IR_SCOPE_FRAGMENT && cuda_is_16bit(b->dtype) && holds_gemm(C->k->body, reads_in_flight, b);
}

static int64_t fp8_gemm_k(const IrStmt *g) {
  int ad[IR_MAX_RANK];
  cuda_tile_dims(&g->u.gemm.a, ad);
  return cuda_const(g->u.gemm.a.extent[ad[1]]);
}

/* An FP8 gemm that stays in flight (INFLIGHT 1) carries promotion state,
 * where its overlap pays and ptxas keeps it: a k-tile of one promotion
 * chunk (K <= 128, the header's default TC_FP8_PROMOTE_K), whose part then
 * alternates between iterations (frame.c doubles the loop), and N <= 144
 * (acc and two parts: 3 * N / 2 registers per thread, 216 of a consumer's
 * 240 at N = 144; ptxas spilled 56 bytes at N = 160, kilobytes at 256).
 * With two chunks per k-tile (K = 192, 256) the template's overlap within
 * the call made ptxas serialize the wgmmas (C7514, CUDA 13.0), so those
 * keep the waiting form. */
static bool fp8_in_flight(const IrStmt *s) {
  return s->kind == IR_STMT_GEMM && s->u.gemm.wgmma && s->u.gemm.wgmma_async && !s->u.gemm.wgmma_issue_only &&
         ir_gemm_reads_fp8(s) &&
         fp8_gemm_k(s) <= 128 && s->u.gemm.c.buf->layout.cols <= 144;
}

/* An in-flight FP8 gemm into acc. */
static bool fp8_in_flight_into(const IrStmt *g, const IrBuffer *acc) {
  return fp8_in_flight(g) && g->u.gemm.c.buf == acc;
}

bool cuda_fp8_pending(const Cuda *C, const IrBuffer *acc) {
  return acc->scope == IR_SCOPE_FRAGMENT && holds_gemm(C->k->body, fp8_in_flight_into, acc);
}

/* Every in-flight FP8 gemm is one chunk per k-tile (fp8_in_flight), so
 * its part alternates. With another TC_FP8_PROMOTE_K the emitted parts are
 * still correct: the template ignores them where a k-tile is an even number
 * of chunks and otherwise the state's part matches them. */
const IrStmt *cuda_fp8_alternating(const IrStmt *body) {
  for (int i = 0; i < body->u.seq.n; i++)
    if (fp8_in_flight(body->u.seq.items[i])) return body->u.seq.items[i];
  return NULL;
}

static const char *fp8_tag(DType t) { return t == DTYPE_F8E5M2 ? "tc_e5m2_t" : "tc_e4m3_t"; }

/* acc += A @ B^T of FP8 codes: m64nNk32 wgmma per warpgroup. */
static void emit_gemm_fp8(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *a = &s->u.gemm.a, *b = &s->u.gemm.b, *c = &s->u.gemm.c;
  const IrLayout *lc = &c->buf->layout;
  if (!s->u.gemm.wgmma || !s->u.gemm.trans_b || s->u.gemm.trans_a || a->buf->scope != IR_SCOPE_SHARED ||
      b->buf->scope != IR_SCOPE_SHARED || !dtype_is_fp8(a->buf->dtype) || !dtype_is_fp8(b->buf->dtype)) {
    cuda_fail(C, s->loc, "gemm: FP8 operands '%s' and '%s' need sm_90a's wgmma (A [M, K] and B [N, K] shared tiles, "
              "transpose_B = true, no transpose_A)", a->buf->name, b->buf->name);
    return;
  }
  if (lc->warp_order != IR_WARP_ORDER_ROWS) {
    cuda_fail(C, s->loc, "gemm: the FP8 gemm into '%s' cannot write an accumulator whose warpgroups split the columns",
              c->buf->name);
    return;
  }
  int ad[IR_MAX_RANK];
  cuda_tile_dims(a, ad);
  int64_t K = cuda_const(a->extent[ad[1]]);
  StrBuf *o = C->out;
  cuda_note_wgmma_n(C, lc->cols);
  /* Wider than 128 columns the waiting form promotes column halves where
   * N / 2 is a wgmma width (tilec_wgmma.cuh, tc_fp8_part_cols): its
   * wgmmas are then N / 2 wide. */
  if (lc->cols > 128 && (lc->cols / 2) % 16 == 0) cuda_note_wgmma_n(C, lc->cols / 2);
  cuda_indent(C, depth);
  sb_printf(o, "tc_gemm_wgmma_fp8_ss<%s, %s, %d, %d, %lld, %d, %s, %s, ", fp8_tag(a->buf->dtype),
            fp8_tag(b->buf->dtype), lc->rows, lc->cols, (long long)K, lc->warps_m, cuda_swizzle_arg(a->buf),
            cuda_swizzle_arg(b->buf));
  const bool pend = fp8_in_flight(s);
  if (s->u.gemm.wgmma_issue_only) sb_puts(o, "TC_WGMMA_ISSUE_ONLY>(");
  else if (pend && C->fp8_gemm == s) sb_printf(o, "1, %d>(", C->fp8_part);
  else sb_printf(o, "%d>(", s->u.gemm.wgmma_async ? 1 : 0);
  cuda_tile_base(C, o, a);
  sb_puts(o, ", ");
  cuda_tile_base(C, o, b);
  if (pend) sb_printf(o, ", %s, tc_warp, tc_pend_%s);\n", c->buf->name, c->buf->name);
  else sb_printf(o, ", %s, tc_warp);\n", c->buf->name);
}

void cuda_emit_gemm(Cuda *C, const IrStmt *s, int depth) {
  const IrRegion *a = &s->u.gemm.a, *b = &s->u.gemm.b, *c = &s->u.gemm.c;
  const IrLayout *lc = &c->buf->layout;
  if (c->buf->scope != IR_SCOPE_FRAGMENT || lc->frag != IR_FRAG_MMA_C || c->buf->dtype != DTYPE_F32) {
    cuda_fail(C, s->loc, "gemm: the accumulator '%s' must be an f32 fragment with the mma layout", c->buf->name);
    return;
  }
  if (ir_gemm_reads_fp8(s)) {
    emit_gemm_fp8(C, s, depth);
    return;
  }
  if (!cuda_is_16bit(b->buf->dtype) || b->buf->scope != IR_SCOPE_SHARED) {
    cuda_fail(C, s->loc, "gemm: B '%s' must be an f16 or bf16 shared tile", b->buf->name);
    return;
  }
  int ad[IR_MAX_RANK];
  cuda_tile_dims(a, ad);
  /* transpose_A: A is the [K, M] shared tile (A_KM, read transposed). */
  const bool ta = s->u.gemm.trans_a;
  int64_t K = cuda_const(a->extent[ad[ta ? 0 : 1]]);
  if (ta && a->buf->scope != IR_SCOPE_SHARED) {
    cuda_fail(C, s->loc, "gemm: a transpose_A operand '%s' must be a shared tile", a->buf->name);
    return;
  }
  /* tc_half and tc_bf16 are both 16-bit storage; the tag picks the mma. */
  const char *T = b->buf->dtype == DTYPE_F16 ? "tc_f16_t" : "tc_bf16_t";
  StrBuf *o = C->out;
  /* Warpgroups splitting N: the tile templates take the warp order. */
  const bool wg_order = lc->warp_order == IR_WARP_ORDER_WARPGROUPS;
  if (wg_order && a->buf->scope == IR_SCOPE_FRAGMENT) {
    cuda_fail(C, s->loc, "gemm: A from registers ('%s') cannot feed an accumulator whose warpgroups split the columns "
              "('%s')", a->buf->name, c->buf->name);
    return;
  }
  if (s->u.gemm.wgmma) cuda_note_wgmma_n(C, ir_layout_wgmma_n(lc));
  cuda_indent(C, depth);
  if (a->buf->scope == IR_SCOPE_FRAGMENT) {
    /* A read as 32-bit pairs (the template's PAIRS) where it is also read
     * by an in-flight wgmma (cuda_frag_pairs): every reader of the
     * fragment then takes it the same way. */
    const bool pairs = s->u.gemm.wgmma && cuda_frag_pairs(C, a->buf);
    sb_printf(o, "%s<%s, %d, %d, %lld, %d, %s, %s%s%s>(%s, ", s->u.gemm.wgmma ? "tc_gemm_wgmma_rs" : "tc_gemm_rs", T,
              lc->rows, lc->cols, (long long)K, lc->warps_m, cuda_swizzle_arg(b->buf), s->u.gemm.trans_b ? "true" : "false",
              s->u.gemm.wgmma_issue_only ? ", TC_WGMMA_ISSUE_ONLY" : pairs ? ", 0" : "", pairs ? ", true" : "",
              a->buf->name);
  } else {
    if (a->buf->dtype != b->buf->dtype || a->buf->scope != IR_SCOPE_SHARED) {
      cuda_fail(C, s->loc, "gemm: A '%s' must be a shared tile of B's dtype", a->buf->name);
      return;
    }
    if (s->u.gemm.wgmma) {
      /* Same accumulator layout (one 16-row slice per warp), issued as
       * wgmma by each warpgroup (tilec_wgmma.cuh). */
      sb_printf(o, "tc_gemm_wgmma_ss<%s, %d, %d, %lld, %d, %s, %s, %s, ", T, lc->rows, lc->cols, (long long)K,
                lc->warps_m * lc->warps_n, cuda_swizzle_arg(a->buf), cuda_swizzle_arg(b->buf),
                s->u.gemm.trans_b ? "true" : "false");
      if (s->u.gemm.wgmma_issue_only) sb_puts(o, "TC_WGMMA_ISSUE_ONLY");
      else sb_printf(o, "%d", s->u.gemm.wgmma_async ? 1 : 0);
      if (wg_order) sb_printf(o, ", %s, %d>(", ta ? "true" : "false", lc->warps_n); /* A_KM, GN */
      else sb_printf(o, "%s>(", ta ? ", true" : "");
    } else {
      sb_printf(o, "tc_gemm_ss<%s, %d, %d, %lld, %d, %d, %s, %s, %s%s>(", T, lc->rows, lc->cols, (long long)K,
                lc->warps_m, lc->warps_n, cuda_swizzle_arg(a->buf), cuda_swizzle_arg(b->buf), s->u.gemm.trans_b ? "true" : "false",
                wg_order ? (ta ? ", true, true" : ", false, true") : ta ? ", true" : ""); /* A_KM, WG_ORDER */
    }
    cuda_tile_base(C, o, a);
    sb_puts(o, ", ");
  }
  cuda_tile_base(C, o, b);
  sb_printf(o, s->u.gemm.wgmma ? ", %s, tc_warp);\n" : ", %s, tc_warp, tc_lane);\n", c->buf->name);
}
