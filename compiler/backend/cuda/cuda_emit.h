/* cuda_emit.h - what the files of the CUDA backend share (internal).
 *
 * The backend (entry point emit_cuda_module in backend.h) is split by
 * concern, one file each, so a new GPU feature (TMA, mbarriers, warp
 * specialization, FP8) lands as a file of its own beside its device header:
 *   frame.c     the module and kernel frame: parameters, block indices,
 *               allocations, and the statement dispatcher (cuda_emit_stmt);
 *   expr.c      scalar expressions, element addressing (global, shared with
 *               swizzle) and the conversion of a value being stored;
 *   fragment.c  fragment layouts: register slots, parallel loops over a
 *               fragment, row reductions;
 *   copy.c      tile copies (16-byte/cp.async transfers, fragment copies,
 *               strided element copies) and fills;
 *   gemm.c      gemms: mma.sync (tc_gemm_ss/_rs) and wgmma (sm_90a);
 *   tma.c       TMA copies, their mbarriers and waits (sm_90a, lower-tma);
 *   warp_roles.c  producer/consumer warpgroups (sm_90a, warp-specialize);
 *   stream_k.c  stream-K units and their partial-sum fix-up (sm_90a, stream-k).
 * Every function here writes CUDA C++ text to C->out (statements) or to the
 * StrBuf it is given (expressions) and reports what it cannot map through
 * cuda_fail, which keeps the first error only. */
#ifndef TILEC_CUDA_EMIT_H
#define TILEC_CUDA_EMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

/* A parallel loop nest being emitted (fragment.c). */
typedef struct Nest {
  const IrVar *i, *j;     /* the loop variables of the parallel nest (j may be NULL) */
  const IrLayout *layout; /* the driving fragment layout, NULL when strided */
} Nest;

enum { CUDA_MAX_FASTDIV = 8 }; /* slots per kernel (fastdiv.c) */

/* The state of one emit_cuda_module call. */
typedef struct Cuda {
  const IrModule *m;
  const IrKernel *k;
  StrBuf *out;
  Diag *diag;
  bool failed;
  int threads;
  int smem_offset; /* next data buffer's offset in tc_smem */
  int mbar_offset; /* next mbarrier array's: the barrier area follows the data */
  /* The block barrier that the kernel's set-up (mbarrier inits, fast
   * division's divisors) still owes: 0 none, 1 __syncthreads, 2 the cluster
   * barrier. One is emitted before the first statement that is not an
   * allocation (cuda_emit_setup_sync), instead of one per set-up step. */
  int setup_sync;
  const Nest *nest; /* innermost parallel nest being emitted, or NULL */
  bool in_producer;    /* emitting the producer role (one elected thread) */
  bool consumers_only; /* after the warp roles split: barriers are named, among consumers */
  int tmp;
  unsigned wgmma_ns; /* bit N/16 - 1 for each wgmma N the kernels use (cuda_note_wgmma_n) */
  const IrStmt *fp8_gemm; /* the in-flight FP8 gemm of the doubled loop body being emitted, or NULL */
  int fp8_part;           /* the part it starts in there (0 / 1) */
  /* fastdiv.c: TilecOptions.fast_division, and the kernel's slots (a tile
   * split's divisor, and the calls that read its entry tc_fd[N]). */
  bool fast_division;
  bool fastdiv_used; /* some kernel of the module declared a slot */
  bool stream_k_used; /* some kernel has a stream-K workspace (stream_k.c) */
  int nfastdiv;
  struct {
    char divisor[256];
    char div_call[48], mod_call[48];
  } fastdiv[CUDA_MAX_FASTDIV];
} Cuda;

/* ---- fastdiv.c: / and % by divisors fixed for the launch ---- */
/* At the kernel's start (C->fast_division): finds its tile splits to serve
 * and writes their slots' table (in dynamic shared memory at
 * cuda_fastdiv_table_offset), filled by thread 0 behind a barrier;
 * nothing when there are none or the table would not fit beside the
 * kernel's shared memory. */
void cuda_fastdiv_declare(Cuda *C, const IrKernel *k);
/* The call template for a DIV/MOD node a slot serves, else NULL. */
const char *cuda_fastdiv_call(Cuda *C, const IrExpr *e);

/* ---- frame.c: diagnostics, types, statements ---- */
void cuda_fail(Cuda *C, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cuda_indent(Cuda *C, int depth); /* kernel bodies start one level in */
/* `#pragma unroll` and `for (int VAR = BEGIN; VAR < END; VAR += STEP) {  // COMMENT` */
void cuda_open_unrolled_for(Cuda *C, int depth, const char *var, int begin, int end, int step, const char *comment);
const char *cuda_storage_type(DType t); /* the C++ type an element is stored as */
const char *cuda_value_type(DType t);   /* the type arithmetic on it happens in */
bool cuda_is_16bit(DType t);            /* f16 or bf16 */
bool cuda_is_low_float(DType t);        /* f16, bf16 or FP8: stored as bits, computed in float */
const char *cuda_to_f32(DType t);       /* widening function of a low float: tc_f16_to_f32, ... */
const char *cuda_from_f32(DType t);     /* its rounding function: tc_f32_to_f16, ... */
int64_t cuda_const(const IrExpr *e);    /* an integer constant (0 if it is not one) */
/* Records a wgmma N (instruction width) the emitted code uses: the module
 * then lists its N's for tilec_wgmma.cuh (TC_WGMMA_NS_LISTED). */
void cuda_note_wgmma_n(Cuda *C, int n);
void cuda_emit_stmt(Cuda *C, const IrStmt *s, int depth);
void cuda_emit_setup_sync(Cuda *C, int depth);
void cuda_emit_seq(Cuda *C, const IrStmt *seq, int depth);
/* At the top of a tile loop's body: thread indices computed afresh per tile
 * (tc_opaque_tid), so what derives from them stays inside the loop. */
void cuda_emit_tile_thread_ids(Cuda *C, int depth);

/* ---- expr.c: expressions and element access ---- */
void cuda_emit_expr(Cuda *C, StrBuf *sb, const IrExpr *e);
/* v converted for storing into a buffer of dtype t. */
void cuda_emit_stored_value(Cuda *C, StrBuf *sb, DType t, const IrExpr *v);
/* The lvalue buf[idx...] (a register slot for fragments). */
void cuda_emit_element(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx, int nidx, SrcLoc loc);
/* copy.c: an f32 MMA_C fragment stored as 32-bit pairs of 16-bit values
 * into dst at idx (expressions over tc_r, tc_c): every row slot, column
 * slots [cs_begin, cs_end) two at a time, tc_c less col_offset; the loop
 * over rows carries `comment` (or none). The caller binds tc_lane. */
void cuda_emit_pair_nest(Cuda *C, const IrBuffer *frag, const IrBuffer *dst, IrExpr *const *idx, int cs_begin,
                         int cs_end, long long col_offset, const char *comment, SrcLoc loc, int depth);
void cuda_linear_index(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx);
const char *cuda_swizzle_arg(const IrBuffer *b);

/* ---- fragment.c: fragments, parallel loops, reductions ---- */
bool cuda_fragment_slot(Cuda *C, StrBuf *sb, const IrBuffer *b, IrExpr *const *idx, int nidx, SrcLoc loc);
/* An MMA_C warp's row / column in the layout's warp grid (tc_warp
 * expressions of ir_layout_warp_pos; every warp-to-slice formula uses
 * them); cuda_warp_first: the condition of warp row 0 (first_m) or warp
 * column 0. */
void cuda_warp_m(StrBuf *sb, const IrLayout *l);
void cuda_warp_n(StrBuf *sb, const IrLayout *l);
void cuda_warp_first(StrBuf *sb, const IrLayout *l, bool first_m);
void cuda_row_of(Cuda *C, StrBuf *sb, const IrLayout *l, const char *rs);
void cuda_col_of(Cuda *C, StrBuf *sb, const IrLayout *l, const char *cs);
bool cuda_rows_padded(const Cuda *C, const IrLayout *l);
int cuda_open_slots(Cuda *C, const IrLayout *l, const char *row_name, const char *col_name, int depth);
void cuda_close_slots(Cuda *C, const IrLayout *l, int depth);
void cuda_emit_parallel(Cuda *C, const IrStmt *s, int depth);
void cuda_emit_reduce(Cuda *C, const IrStmt *s, int depth);

/* ---- copy.c: copies, fills, tile helpers ---- */
int cuda_tile_dims(const IrRegion *r, int *dims);
void cuda_tile_base(Cuda *C, StrBuf *sb, const IrRegion *r);
void cuda_emit_copy(Cuda *C, const IrStmt *s, int depth);
void cuda_emit_fill(Cuda *C, const IrStmt *s, int depth);
void cuda_emit_atomic_add(Cuda *C, const IrStmt *s, int depth);
/* The element form, atomic_add(G[i, j], v): a STORE marked atomic. */
void cuda_emit_atomic_store(Cuda *C, const IrStmt *s, int depth);
/* result = atomic_add(G[i], v), the returning form: thread 0 between a
 * barrier and fences, the old value broadcast through the shared slot. */
void cuda_emit_atomic_fetch(Cuda *C, const IrStmt *s, int depth);

/* ---- gemm.c ---- */
void cuda_emit_gemm(Cuda *C, const IrStmt *s, int depth);
/* b is a 16-bit fragment that an issue-only wgmma reads: it is stored and
 * read as 32-bit pairs (tc_f32x2_to_*_at, tc_load_pair). */
bool cuda_frag_pairs(const Cuda *C, const IrBuffer *b);
/* acc is the accumulator of an in-flight FP8 gemm: it has a promotion
 * state, tc_pend_<acc> (tc_fp8_pending, tilec_wgmma.cuh). */
bool cuda_fp8_pending(const Cuda *C, const IrBuffer *acc);
/* The in-flight FP8 gemm among body's statements (a SEQ) whose tile is an
 * odd number of promotion chunks, or NULL: its part alternates between
 * iterations, so the loop is written with two bodies per trip. */
const IrStmt *cuda_fp8_alternating(const IrStmt *body);

/* tma.c */
void cuda_emit_mbarrier_init(Cuda *C, const IrBuffer *bar, int depth); /* after its ALLOC */
void cuda_emit_tma_copy(Cuda *C, const IrStmt *s, int depth);          /* a copy.tma */
bool cuda_has_staged_store(const IrStmt *s); /* a copy.tma ... via(S) in s (tma.c) */
void cuda_emit_mbar_wait(Cuda *C, const IrStmt *s, int depth);
void cuda_emit_mbar_arrive(Cuda *C, const IrStmt *s, int depth);

/* stream_k.c */
/* Before the kernel: its stream-K workspace, when it has a fix-up. */
void cuda_stream_k_declare(Cuda *C, const IrKernel *k);
void cuda_emit_stream_k_loop(Cuda *C, const IrStmt *s, int depth);  /* a STREAM_K FOR */
void cuda_emit_stream_k_fixup(Cuda *C, const IrStmt *s, int depth); /* a STREAM_K_FIXUP */

/* warp_roles.c */
void cuda_emit_warp_roles(Cuda *C, const IrStmt *s, int depth);
void cuda_emit_barrier(Cuda *C, int depth);
void cuda_emit_turn(Cuda *C, const IrStmt *s, int depth);

#endif
