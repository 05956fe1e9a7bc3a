/* ir.h - the tile IR: one tree-shaped IR from sema to emission.
 *
 * A module holds kernels; a kernel holds typed parameters, shape symbols, the
 * launch grid and a body of statements. Statements are structured (SEQ, FOR,
 * IF, ...) and include block-level tile ops (COPY, FILL, GEMM, REDUCE) that
 * later passes lower to thread-level code. Expressions are scalar trees.
 *
 * Every node carries the SrcLoc of the .tile text it came from, through every
 * pass, so any stage can point at a line and column.
 *
 * Ownership: every node is allocated in IrModule.arena. Passes rewrite the
 * tree in place or build new nodes; nothing is freed until the module is. */
#ifndef TILEC_IR_H
#define TILEC_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"
#include "diag.h"
#include "ir_ops.def"

enum { IR_MAX_RANK = 8, IR_MAX_GRID = 3 };
/* The deepest software pipeline: small-tile GEMMs that stream memory keep
 * 12-13 stages in flight (64 x 64 tiles of 16 KB each on sm_90a). */
enum { IR_MAX_STAGES = 16 };

typedef enum DType {
#define X(name, spelling, size, is_float) DTYPE_##name,
  IR_DTYPES(X)
#undef X
  DTYPE_COUNT
} DType;

typedef enum IrOp {
#define X(name, spelling, arity, prec) IR_OP_##name,
  IR_OPS(X)
#undef X
  IR_OP_COUNT
} IrOp;

/* C's operator precedence levels (the IR_OPS column): higher binds tighter. */
typedef enum IrPrec {
  IR_PREC_NONE, IR_PREC_OR, IR_PREC_AND, IR_PREC_BOR, IR_PREC_XOR, IR_PREC_BAND, IR_PREC_EQ,
  IR_PREC_REL, IR_PREC_SHIFT, IR_PREC_ADD, IR_PREC_MUL,
  IR_PREC_UNARY, IR_PREC_PRIMARY
} IrPrec;

typedef enum IrIntrinsic {
#define X(name, spelling, arity, result, fold, c_int, c_f32, c_f64, cuda_int, cuda_f32, cuda_f64) \
  IR_INTRINSIC_##name,
  IR_INTRINSICS(X)
#undef X
  IR_INTRINSIC_COUNT
} IrIntrinsic;

/* How an intrinsic's result dtype follows from its arguments (the IR_INTRINSICS
 * result column; ir_call_dtype). */
typedef enum IrIntrinsicResult {
  IR_RESULT_MATH, IR_RESULT_SAME, IR_RESULT_COMMON, IR_RESULT_INDEX
} IrIntrinsicResult;

enum { IR_MAX_CALL_ARGS = 3 }; /* the largest intrinsic arity */

typedef enum IrExprKind {
#define X(name, spelling) IR_EXPR_##name,
  IR_EXPR_KINDS(X)
#undef X
  IR_EXPR_COUNT
} IrExprKind;

typedef enum IrStmtKind {
#define X(name, spelling) IR_STMT_##name,
  IR_STMT_KINDS(X)
#undef X
  IR_STMT_COUNT
} IrStmtKind;

typedef enum IrForKind {
#define X(name, spelling) IR_FOR_##name,
  IR_FOR_KINDS(X)
#undef X
  IR_FOR_COUNT
} IrForKind;

typedef enum IrScope {
#define X(name, spelling) IR_SCOPE_##name,
  IR_SCOPES(X)
#undef X
  IR_SCOPE_COUNT
} IrScope;

typedef enum IrLayoutKind {
#define X(name, spelling) IR_LAYOUT_##name,
  IR_LAYOUTS(X)
#undef X
  IR_LAYOUT_COUNT
} IrLayoutKind;

typedef enum IrFragKind {
#define X(name, spelling) IR_FRAG_##name,
  IR_FRAG_KINDS(X)
#undef X
  IR_FRAG_COUNT
} IrFragKind;

typedef enum IrWarpOrder {
#define X(name, spelling) IR_WARP_ORDER_##name,
  IR_WARP_ORDERS(X)
#undef X
  IR_WARP_ORDER_COUNT
} IrWarpOrder;

typedef enum IrReduceKind {
#define X(name, spelling) IR_REDUCE_##name,
  IR_REDUCE_KINDS(X)
#undef X
  IR_REDUCE_COUNT
} IrReduceKind;

typedef enum IrGemmPolicy {
#define X(name, spelling) IR_GEMM_POLICY_##name,
  IR_GEMM_POLICIES(X)
#undef X
  IR_GEMM_POLICY_COUNT
} IrGemmPolicy;

/* Spellings, from the tables. */
const char *dtype_name(DType t);
int dtype_size(DType t);
bool dtype_is_float(DType t);
/* i32, i64 and the narrow integers (not bool). */
bool dtype_is_int(DType t);
/* f16, bf16 and the FP8 types: stored as bits, computed in f32. */
bool dtype_is_low_float(DType t);
bool dtype_is_fp8(DType t);
/* v converted to integer dtype t the way a store does: wrapped to t's width
 * (two's complement), unchanged for i64; bool gives v != 0. */
int64_t dtype_wrap_int(DType t, int64_t v);
/* The bit operators on i64 (IR_OP_BAND..IR_OP_SHR, IR_OP_BNOT with b unused):
 * shift counts modulo 64, << on the unsigned bits, >> arithmetic. */
int64_t ir_int_bitop(IrOp op, int64_t a, int64_t b);
bool ir_op_is_bitop(IrOp op);
bool dtype_from_name(const char *name, DType *out);
const char *ir_op_name(IrOp op);
int ir_op_arity(IrOp op);
IrPrec ir_op_prec(IrOp op);
const char *ir_intrinsic_name(IrIntrinsic fn);
int ir_intrinsic_arity(IrIntrinsic fn);
IrIntrinsicResult ir_intrinsic_result(IrIntrinsic fn);
const char *ir_stmt_kind_name(IrStmtKind k);
const char *ir_for_kind_name(IrForKind k);
const char *ir_scope_name(IrScope s);
const char *ir_layout_name(IrLayoutKind k);
const char *ir_reduce_name(IrReduceKind k);
const char *ir_gemm_policy_name(IrGemmPolicy p);

/* ---- Variables -------------------------------------------------------- */

typedef enum IrVarKind {
  IR_VAR_SYMBOL,       /* shape symbol or const (seq_len, block_M): integer/bool */
  IR_VAR_SCALAR_PARAM, /* a scalar kernel parameter (scale: f32) */
  IR_VAR_BLOCK_INDEX,  /* bx, by, bz */
  IR_VAR_GRID_SIZE,    /* gridDim.x of a persistent kernel: its tile loops' step (pass persistent) */
  IR_VAR_LOOP,         /* a for-loop variable */
  IR_VAR_LET,          /* `loop_range = ...;` a scalar bound once */
  IR_VAR_WARPGROUP,    /* the consumer warpgroup's index, 0.. (WARP_ROLES' warpgroup) */
} IrVarKind;

typedef struct IrExpr IrExpr;

typedef struct IrVar {
  const char *name;
  IrVarKind kind;
  DType dtype;
  int id;             /* unique in the module; printers disambiguate with it */
  SrcLoc loc;
  /* SYMBOL only. default_value: the `const (...)` initializer or NULL.
   * After specialize: bound == true and value is a constant when a -D or a
   * default gave one; otherwise the symbol is dynamic (a launch argument
   * taken from the tensor shapes). */
  IrExpr *default_value;
  bool is_const_decl; /* declared in const (...) rather than only in a shape */
  bool bound;
  IrExpr *value;
  int dynamic_index;  /* index among the kernel's dynamic symbols, or -1 */
  /* SCALAR_PARAM only: position in the parameter list. */
  int param_index;
  /* BLOCK_INDEX only: 0 for x, 1 for y, 2 for z. */
  int grid_dim;
  /* LET only: a ring counter that is never negative (pass persistent's
   * pipe_base and tile_iter). The CUDA back end declares it unsigned, so the
   * stage and parity arithmetic built on it (% S, / S) needs no sign fix-ups. */
  bool counter;
} IrVar;

/* ---- Expressions ------------------------------------------------------ */

typedef struct IrBuffer IrBuffer;

struct IrExpr {
  IrExprKind kind;
  DType dtype;         /* integer expressions are i64; conditions are bool */
  SrcLoc loc;
  /* BINARY DIV or MOD that pass persistent built to split a tile index over
   * the grid's extents: the dividend lies in [0, 2 * tiles), the divisor in
   * [1, 16 * tiles] and is fixed for the launch, and the runtime launches
   * no such kernel of TILEC_MAX_PERSISTENT_TILES (2^26) tiles or more, so
   * both are below 2^31: what the CUDA backend's fast division
   * (TilecOptions.fast_division) needs. Copies and ir_simplify keep it. */
  bool tile_split;
  union {
    int64_t int_value;   /* INT (also BOOL constants: 0/1) */
    double float_value;  /* FLOAT (may be +-INFINITY) */
    IrVar *var;          /* VAR */
    struct {
      IrOp op;
      IrExpr *a, *b;     /* UNARY: a only */
    } op;
    struct {
      IrExpr *cond, *then_, *else_;
    } select;
    struct {
      IrIntrinsic fn;
      IrExpr *args[IR_MAX_CALL_ARGS];
      int nargs;
    } call;
    struct {
      IrBuffer *buf;
      IrExpr *idx[IR_MAX_RANK];
      int nidx;          /* == buf->rank */
    } load;
    IrExpr *cast_src;    /* CAST: converts to this node's dtype */
  } u;
};

/* ---- Buffers and regions ---------------------------------------------- */

typedef struct IrLayout {
  IrLayoutKind kind;
  /* SWIZZLED: XOR swizzle of 16-byte chunks within rows of `swizzle_bytes`
   * (e.g. 128). Set by the swizzle-layout pass; 0 until then. */
  int swizzle_bytes;
  /* SWIZZLED, sm_90a wgmma operands whose rows exceed 128 bytes: the tile is
   * stored as [cols / panel_cols] panels of [rows][panel_cols], each one
   * swizzled with 128-byte rows (the layout wgmma reads). 0: plain rows. */
  int panel_cols;
  /* FRAGMENT (set by infer-layout; formulas in docs/gpu-codegen.md). A 2-D
   * fragment [rows, cols] spreads over threads by `frag`; a 1-D fragment is a
   * row vector (cols == 0) that follows the row mapping of a 2-D layout with
   * the same frag/rows/warps/group, or a column vector (rows == 0,
   * rows_local == 1) that follows its column mapping. Each thread holds
   * rows_local x cols_local elements (cols_local == 1 for row vectors). */
  IrFragKind frag;
  int rows, cols;
  int warps_m, warps_n; /* MMA_C */
  /* MMA_C: how warps map to the warps_m x warps_n grid (ir_layout_warp_pos;
   * ROWS, the zero value, unless infer-layout let a wgmma's warpgroups
   * split the columns). */
  IrWarpOrder warp_order;
  int group;            /* ROWGROUP: consecutive threads sharing a row */
  int rows_local, cols_local;
} IrLayout;

struct IrBuffer {
  const char *name;
  DType dtype;
  IrScope scope;
  int rank;
  IrExpr *shape[IR_MAX_RANK]; /* constants after specialization for non-global */
  /* GLOBAL tensors declared with `strides (...)`: the element stride of each
   * dim (the last is the constant 1). NULL when not declared: compact
   * row-major, addressed by the Horner index over shape (docs/language.md). */
  IrExpr **strides;
  IrLayout layout;
  int param_index;           /* GLOBAL params: position in the parameter list; else -1 */
  struct IrBuffer *alias_of; /* SHARED: lives in the storage of this (dead) buffer; set by stage-stores */
  int smem_align;            /* SHARED: byte alignment of its offset, 0 = 128 (1024 in kernels with wgmma) */
  /* SHARED, set by lower-tma. A TMA destination points at its mbarriers
   * (`tma_bar`: one per pipeline stage, signalled when a stage's bytes have
   * landed); the mbarrier buffer itself (i64, one element per barrier) has
   * is_mbarrier set. */
  struct IrBuffer *tma_bar;
  struct IrBuffer *empty_bar; /* warp-specialize: its readers release a stage here */
  bool is_mbarrier;
  int mbar_count;             /* is_mbarrier: arrivals per phase (0 means 1) */
  /* pass persistent, 2-CTA clusters: a ring whose tile both blocks of a
   * cluster read (`multicast`: each block loads half of it into both), and
   * the empty barrier both blocks' consumers release (`mbar_cluster`). */
  bool multicast;
  bool mbar_cluster;
  int id;
  SrcLoc loc;
};

/* The edges of a region's dimension that need a check (IrRegion.guard). */
enum IrGuard {
  IR_GUARD_UPPER = 1, /* the range may run past shape[d] */
  IR_GUARD_LOWER = 2, /* ... and its start may be negative (a start read from
                         a tensor); only with IR_GUARD_UPPER, except on a
                         TMA load's global side, where it stays alone: the
                         hardware fills both edges, but the coordinate is
                         clamped before its cast to 32 bits (lower-tma) */
};

/* A rectangular piece of a buffer: the operand of COPY/FILL/GEMM.
 * Dimension d covers [start[d], start[d] + extent[d]). A dimension written as
 * a plain index (`Q[bz, ...]`) has is_index[d] set and extent 1; it is dropped
 * from the region's tile shape. guard[d] is set by guard-bounds when the
 * range may leave [0, shape[d]) at run time: IR_GUARD_UPPER, with
 * IR_GUARD_LOWER added where the start is not proven non-negative. Zero
 * means no check; a pass that drops the checks sets it to 0. */
typedef struct IrRegion {
  IrBuffer *buf;
  int rank;
  IrExpr *start[IR_MAX_RANK];
  IrExpr *extent[IR_MAX_RANK];
  bool is_index[IR_MAX_RANK];
  uint8_t guard[IR_MAX_RANK];
  SrcLoc loc;
} IrRegion;

/* ---- Statements -------------------------------------------------------- */

typedef struct IrStmt IrStmt;

/* WG_TURN: START (before the loop: the last warpgroup hands the first
 * one its turn), WAIT (for this warpgroup's turn), PASS (to the next
 * warpgroup), END (after the loop: the first warpgroup takes back the last
 * hand-over): ping-pong. STAGGER_WAIT (warpgroup w > 0 waits for w - 1's
 * STAGGER_GO) and STAGGER_GO (after this warpgroup's first gemm of the loop
 * completed), both on the loop's first iteration: warpgroups sharing the
 * ring start apart instead of in lockstep; STAGGER_END (after a loop that
 * ran) the same barriers the other way, so each warpgroup syncs and
 * arrives equally often. */
typedef enum IrTurn {
  IR_TURN_START, IR_TURN_WAIT, IR_TURN_PASS, IR_TURN_END, IR_TURN_STAGGER_WAIT, IR_TURN_STAGGER_GO, IR_TURN_STAGGER_END
} IrTurn;

struct IrStmt {
  IrStmtKind kind;
  SrcLoc loc;
  union {
    struct {             /* SEQ: statements in order; LETs scope to the end */
      IrStmt **items;
      int n, cap;
    } seq;
    IrBuffer *alloc;     /* ALLOC: a SHARED/FRAGMENT/LOCAL buffer comes alive */
    struct {             /* LET */
      IrVar *var;
      IrExpr *value;
    } let;
    struct {             /* STORE: buf[idx...] = value; atomic (the element
                            form of atomic_add): buf[idx...] += value, one
                            atomic addition, buf a global f32 tensor and value
                            f32.
                            ATOMIC_FETCH_ADD (`result = atomic_add(buf[idx], value)`):
                            result (a LET variable of buf's dtype, in scope
                            after the statement) = the element's old value;
                            buf[idx] += value, atomically, once per block (it
                            is never inside a parallel loop); buf a global i32
                            or f32 tensor, value of buf's dtype. On the GPU
                            thread 0 does it between a block barrier and
                            device-scope fences (acquire-release) and hands the
                            old value to the block through `slot` (a shared
                            1-element buffer of buf's dtype) and a second
                            barrier. guard (guard-elements; NULL: none): when
                            false the index is outside buf: nothing is added,
                            result is 0. */
      IrBuffer *buf;
      IrExpr *idx[IR_MAX_RANK];
      int nidx;
      IrExpr *value;
      bool atomic;
      IrVar *result;
      IrBuffer *slot;
      IrExpr *guard;
    } store;
    struct {             /* FOR var in [0, extent) */
      IrForKind kind;
      IrVar *var;
      IrExpr *extent;
      int num_stages;    /* PIPELINED only (>= 1) */
      IrStmt *body;      /* a SEQ */
      /* STREAM_K only (pass stream-k): each unit of the loop is tile `var`'s
       * k-iterations [k_begin, k_begin + k_len) of k_iters; both are LOOP
       * variables bound with var. */
      IrExpr *k_iters;
      IrVar *k_begin, *k_len;
    } for_;
    struct {             /* IF */
      IrExpr *cond;
      IrStmt *then_, *else_; /* SEQs; else_ may be NULL */
      bool opaque;           /* the CUDA backend hides cond from nvcc (tc_opaque),
                                so the branch stays even where cond is constant:
                                ptxas's wgmma analysis needs it (warp-specialize) */
    } if_;
    struct {             /* EXIT: the block ends here when cond holds */
      IrExpr *cond;
    } exit_;
    struct {             /* COPY src -> dst (converting dtype if they differ);
                            ATOMIC_ADD: dst += src, element by element, dst a
                            global f32 slice, each element added atomically
                            (async, tma unused) */
      IrRegion src, dst;
      bool async;        /* GPU: issued as cp.async by software-pipeline; the
                            loop's ASYNC_COMMIT/ASYNC_WAIT/BARRIER complete it */
      bool tma;          /* a TMA bulk tensor copy (lower-tma, sm_90a) through the
                            kernel's tma_maps[tma_map], issued by one thread and
                            completing on dst.buf->tma_bar; a TMA_WAIT makes it
                            visible. Also `async`: no thread waits in place. */
      int tma_map;
      bool prefetch_l2;  /* with tma: only pull the source boxes into L2 (pass
                            persistent: the next tile's per-tile boxes under
                            this tile's work); dst names the tile the boxes
                            will land in later, which this copy does not write */
      IrBuffer *via;     /* a TMA store of a fragment (pass persistent): the tile
                            leaves in rounds of via's columns through via's
                            slots (via: [slots, rows, w] shared, laid out as TMA
                            reads a box), each round written by every thread,
                            fenced, a barrier, then stored by one thread; the
                            statement orders its own reuse of via (docs/
                            gpu-codegen.md, "Epilogue in rounds") */
      IrBuffer *hold[2]; /* with via: TMA rings whose stage hold_stage the first
                            rounds use as more slots (pass persistent: the k-loop's
                            last stage, kept from its producer until the store has
                            read it); nhold of them, NULL hold_stage: none */
      int nhold;
      IrExpr *hold_stage;
    } copy;
    struct {             /* MBAR_WAIT: the threads wait until the phase of mbarrier
                            bar[stage] with this parity has completed: for a full
                            barrier, the TMA copies into that stage have landed
                            (parity = how many times the stage was filled before,
                            mod 2); for an empty one, its readers released it.
                            MBAR_ARRIVE: one arrival on bar[stage] per warp (lane 0)
                            (parity unused); after_stores: thread 0 alone, once its
                            TMA stores have read their shared memory, arrives for
                            all of bar's mbar_count warps (pass persistent: the
                            release of a stage an epilogue held) */
      IrBuffer *bar;
      IrExpr *stage, *parity;
      bool after_stores;
    } mbar_wait;
    struct {             /* STREAM_K_FIXUP (pass stream-k), in the consumers'
                            unit loop `loop` (a STREAM_K FOR), after acc's
                            k-loop: a unit that does not end its tile
                            publishes acc as its block's partial sum; the
                            unit that ends a split tile adds the earlier
                            units' partials to acc, in descending block
                            order (deterministic) */
      IrBuffer *acc;
      const IrStmt *loop;
    } stream_k;
    IrTurn turn;         /* WG_TURN (overlap-wgmma): the consumer warpgroups take
                            turns issuing their gemms (ping-pong) or start staggered */
    struct {             /* WARP_ROLES (warp-specialize): the warpgroup of warps
                            [producer_warp, producer_warp + 4) gives up registers and
                            runs `producer` on one thread, then exits; the other
                            (consumer) warps take the registers and run `consumer`.
                            Every statement after this one runs on consumers only. */
      IrStmt *producer, *consumer; /* SEQs */
      int producer_warp;
      int producer_regs, consumer_regs; /* setmaxnreg counts */
      bool inline_producer; /* one consumer warpgroup: inline-producer folds the
                               producer back in after overlap-wgmma */
      IrVar *warpgroup;     /* NULL, or the IR_VAR_WARPGROUP the consumer
                               statements name (trim-masked-iterations): which
                               warpgroup of consumers runs them, 0 first */
    } roles;
    int async_pending;   /* ASYNC_WAIT: wait until at most this many groups are in flight */
    struct {             /* WGMMA_WAIT: wait until at most `pending` of this warpgroup's
                            wgmma groups are in flight (they complete in issue order);
                            acc's registers are then ready (after a loop whose gemm
                            is wgmma_async: pending 0; overlap-wgmma: 1 or 0) */
      IrBuffer *acc;
      int pending;
      /* fragments whose values are computed before the wait and must stay
       * there (the work that overlaps the wgmmas): the CUDA backend pins
       * their registers, or nvcc would sink that arithmetic past the wait */
      IrBuffer *pinned[8];
      int npinned;
    } wgmma_wait;
    struct {             /* FILL dst with value (clear(x) is fill(x, 0)) */
      IrRegion dst;
      IrExpr *value;
    } fill;
    struct {             /* GEMM c += op(a) @ op(b) */
      IrRegion a, b, c;
      bool trans_a, trans_b;
      IrGemmPolicy policy;
      bool wgmma;        /* sm_90a: issued as wgmma (set by infer-layout) */
      bool wgmma_async;  /* returns with its wgmmas in flight; the pipelined
                            loop around it waits at exit (software-pipeline) */
      bool wgmma_issue_only; /* issues and commits its wgmmas and returns at
                            once; a later WGMMA_WAIT completes them (overlap-wgmma) */
    } gemm;
    struct {             /* REDUCE src along dim into dst */
      IrReduceKind kind;
      IrBuffer *src, *dst;
      int dim;
      bool clear;        /* true: dst starts from the identity; false: folds in */
      IrBuffer *scratch; /* GPU, set by infer-layout when the rows of src are
                            split across warps: shared f32 [warps_n, rows]
                            where the warps combine their partial results */
    } reduce;
    struct {             /* ANNOTATE_LAYOUT buf -> layout */
      IrBuffer *buf;
      IrLayoutKind layout;
    } annotate;
    struct {             /* USE_SWIZZLE: block rasterization request */
      IrExpr *panel_size;
      bool column_major; /* order = col */
    } swizzle;
  } u;
};

/* ---- Kernels and modules ---------------------------------------------- */

typedef struct IrParam {
  const char *name;
  bool is_tensor;
  IrBuffer *buffer;    /* tensor: a GLOBAL buffer */
  IrVar *scalar;       /* scalar: an IR_VAR_SCALAR_PARAM */
  const char *dim_names[IR_MAX_RANK]; /* tensor: the symbol each dim was written as, or NULL */
  const char *stride_names[IR_MAX_RANK]; /* the same for a `strides (...)` clause */
  SrcLoc loc;
} IrParam;

/* A TMA tensor map the runtime encodes at launch from tensor parameter
 * `param` (set by lower-tma). box[d] is the box's extent along the tensor's
 * dimension d (outermost first, 1 for an indexed dimension); swizzle_bytes
 * 0 (rows as they are), 32, 64 or 128 (tilec's XOR swizzle of 16-byte
 * chunks, which is the hardware's). */
typedef struct IrTensorMap {
  int param;
  int box[IR_MAX_RANK];
  int swizzle_bytes;
  bool store; /* used by a TMA store (stage-stores): see TilecTensorMapInfo.store */
} IrTensorMap;

enum { IR_MAX_TENSOR_MAPS = 8, IR_MAX_SHAPE_CHOICES = 8 };

typedef struct IrKernel {
  const char *name;
  SrcLoc loc;
  IrParam *params;
  int nparams;
  IrVar **symbols;      /* every shape symbol and const, declaration order */
  int nsymbols;
  IrExpr *grid[IR_MAX_GRID]; /* missing dimensions are the constant 1 */
  int ngrid;
  IrExpr *threads;
  IrVar *block_vars[IR_MAX_GRID];
  IrVar *grid_size;    /* IR_VAR_GRID_SIZE, when pass persistent names it */
  IrStmt *body;         /* a SEQ */
  IrVar *target_sm;     /* the builtin const target_sm when the kernel names it
                           (also in symbols), else NULL */
  IrVar *sm_count;      /* the builtin sm_count when a const default's condition
                           names it (not in symbols: no kernel parameter), else
                           NULL; its value is the launching GPU's SM count,
                           given to tilec_result_shape_class_of */
  /* Programmatic dependent launch (sema, sm_90a only; the statements are
   * no-ops elsewhere): pdl_sync() -- the kernel waits at its start for the
   * kernel before it in the stream to finish and its writes to be visible,
   * so the runtime may launch it before that kernel ends; pdl_trigger() --
   * the kernel lets the next one start at its own start. */
  bool pdl_sync, pdl_trigger;
  /* Set by passes. */
  int raster_panel;     /* use_swizzle panel size; 0 = no rasterization */
  bool wgmma;           /* some gemm runs as wgmma (set by swizzle-layout) */
  bool raster_column_major;
  IrTensorMap tma_maps[IR_MAX_TENSOR_MAPS]; /* lower-tma; kernel parameters after the dynamic symbols */
  int producer_warp;    /* warp-specialize: first warp of the producer warpgroup
                           (= consumer warps; threads includes it); 0 = none */
  bool persistent;      /* pass persistent: the body loops over the grid's tiles
                           (block_vars unused); launched with one block per
                           resident slot (TilecKernelInfo.persistent) */
  int cluster;          /* pass persistent: blocks per cluster (2: pairs of tiles
                           along grid y sharing their multicast rings); 0 = none */
  IrExpr *stream_k_iters; /* pass stream-k: set on a persistent GEMM it splits (or,
                             without TilecOptions.stream_k, would split), FP8
                             included: its tiles' k-iterations (the k-loop's
                             trip count, over shape symbols, the same for
                             every tile); NULL otherwise */
  bool stream_k_able;   /* pass stream-k: stream_k_iters set and not an FP8 GEMM
                           (TilecKernelInfo.stream_k_able) */
  int ntma_maps;
  /* Shape choices (sema): conditions on dynamic shape symbols that const
   * defaults test, e.g. seq_len >= 8192 in block_M's default. This build
   * took condition i as bit shape_choice_bit[i] of IrModule.shape_class;
   * the runtime evaluates the conditions at launch and runs the build whose
   * bits match (docs/language.md, "Shape choices"). */
  IrExpr *shape_choice[IR_MAX_SHAPE_CHOICES];
  int shape_choice_bit[IR_MAX_SHAPE_CHOICES];
  int nshape_choices;
  unsigned shape_class; /* = IrModule.shape_class, for the printers */
} IrKernel;

typedef struct IrModule {
  Arena *arena;
  const char *file;
  IrKernel **kernels;
  int nkernels;
  int next_id;          /* for IrVar.id and IrBuffer.id */
  unsigned shape_class; /* the shape-choice bits this build took (TilecOptions.shape_class) */
  int nshape_choices;   /* bits in use, over all kernels */
} IrModule;

/* ---- Construction (ir.c) ------------------------------------------------ */

IrModule *ir_module_new(Arena *arena, const char *file);
IrVar *ir_var_new(IrModule *m, const char *name, IrVarKind kind, DType dtype, SrcLoc loc);
IrBuffer *ir_buffer_new(IrModule *m, const char *name, DType dtype, IrScope scope,
                        int rank, IrExpr *const *shape, SrcLoc loc);

IrExpr *ir_int(IrModule *m, int64_t v, SrcLoc loc);          /* i64 */
IrExpr *ir_bool(IrModule *m, bool v, SrcLoc loc);
IrExpr *ir_float(IrModule *m, double v, DType t, SrcLoc loc);
IrExpr *ir_var_ref(IrModule *m, IrVar *v, SrcLoc loc);
IrExpr *ir_unary(IrModule *m, IrOp op, IrExpr *a, SrcLoc loc);
/* Result dtype: bool for comparisons and logic, else the wider operand type
 * (float beats int). */
IrExpr *ir_binary(IrModule *m, IrOp op, IrExpr *a, IrExpr *b, SrcLoc loc);
/* The result dtypes the constructors compute (the verifier checks the same):
 * binary: bool for comparisons/logic; else float beats int, the wider float
 * wins (f64 > f32 > f16/bf16; f16 with bf16 -> f32), integers give i64.
 * unary: NOT -> bool; NEG keeps the operand's dtype (bool -> i64).
 * select: the common dtype if equal, else the binary rule.
 * call, by the intrinsic's result column (ir_ops.def): COMMON (max, min) as
 * select; INDEX (ceildiv) i64; SAME (abs) keeps its operand's dtype; MATH
 * (exp2, exp, ...) keeps a float operand's dtype and gives f32 for an
 * integer one. b is the second argument's dtype (a for unary calls). */
DType ir_binary_dtype(IrOp op, DType a, DType b);
DType ir_unary_dtype(IrOp op, DType a);
DType ir_select_dtype(DType then_, DType else_);
DType ir_call_dtype(IrIntrinsic fn, DType a, DType b);
IrExpr *ir_select(IrModule *m, IrExpr *cond, IrExpr *then_, IrExpr *else_, SrcLoc loc);
/* A call of fn with its arity's arguments from args (ir_call: up to two). */
IrExpr *ir_call_n(IrModule *m, IrIntrinsic fn, IrExpr *const *args, SrcLoc loc);
IrExpr *ir_call(IrModule *m, IrIntrinsic fn, IrExpr *a, IrExpr *b, SrcLoc loc);
IrExpr *ir_load(IrModule *m, IrBuffer *buf, IrExpr *const *idx, SrcLoc loc);
IrExpr *ir_cast(IrModule *m, DType t, IrExpr *src, SrcLoc loc);

IrStmt *ir_stmt_new(IrModule *m, IrStmtKind kind, SrcLoc loc);
/* Layout helpers (layout.c): spelling of a layout for the printer, e.g.
 * "mma_c(64x64, warps 4x1, local 2x16)"; and whether two fragment layouts
 * map rows to threads the same way (row vectors may then be shared). */
const char *ir_layout_str(Arena *arena, const IrLayout *l);
bool ir_layout_same_rows(const IrLayout *a, const IrLayout *b);
/* A column vector (rows == 0, cols > 0): a 1-D fragment read as v[j] beside
 * x[i, j]; each thread holds the columns of x's layout it holds (cols_local
 * values, replicated over the threads that share those columns). */
bool ir_layout_is_col_vector(const IrLayout *l);
bool ir_layout_same_cols(const IrLayout *a, const IrLayout *b);
/* Where warp `warp` sits in an MMA_C layout's warps_m x warps_n grid: its
 * warp row *wm (rows [wm * rows / warps_m, ...)) and warp column *wn
 * (columns [wn * cols / warps_n, ...)), by the layout's warp_order. Every
 * mapping of a warp to its slice follows this one (the CUDA backend's
 * expressions: cuda_warp_m / cuda_warp_n in backend/cuda/fragment.c). */
void ir_layout_warp_pos(const IrLayout *l, int warp, int *wm, int *wn);
/* The width of one warpgroup's wgmma (m64nNk16) on an MMA_C accumulator
 * that wgmma writes: its columns over the warp columns (all of them when
 * the warps split only the rows). */
int ir_layout_wgmma_n(const IrLayout *l);
/* The m64 blocks each warpgroup of a wgmma accumulator owns: 2 with 32 rows
 * per warp (tc_gemm_wgmma_ss_2blocks), else 1. */
int ir_layout_wgmma_blocks(const IrLayout *l);
/* A ROWGROUP whose columns do not divide by its group: the last column slot
 * of some threads lies past `cols` and is skipped (docs/gpu-codegen.md). */
bool ir_layout_cols_padded(const IrLayout *l);
/* Bytes of a buffer with constant shape, rounded up to its shared-memory
 * alignment (128, or smem_align; 8 for mbarriers: the CUDA backend places
 * shared buffers one after the other, so sizes keep every offset aligned); saturates instead of overflowing, and
 * counts a non-constant dimension as 0. 0 for a buffer that aliases another. */
int64_t ir_buffer_bytes_aligned(const IrBuffer *b);
/* Shared memory a kernel body allocates, as the CUDA backend lays it out
 * (backend/cuda/frame.c): the data buffers one after the other from offset
 * 0, then the barrier area (every mbarrier array, 8-byte aligned).
 * Saturates at INT32_MAX. */
typedef enum IrSharedPart { IR_SHARED_ALL, IR_SHARED_DATA, IR_SHARED_MBARRIERS } IrSharedPart;
int64_t ir_shared_bytes(const IrStmt *s, IrSharedPart part);
IrStmt *ir_seq_new(IrModule *m, SrcLoc loc);
void ir_seq_push(IrModule *m, IrStmt *seq, IrStmt *item);
void ir_seq_insert(IrModule *m, IrStmt *seq, int at, IrStmt *item); /* before position at */
void ir_seq_remove(IrStmt *seq, int at);                              /* the item at position at */
IrStmt *ir_for_new(IrModule *m, IrForKind kind, IrVar *var, IrExpr *extent, IrStmt *body, SrcLoc loc);
IrStmt *ir_store_new(IrModule *m, IrBuffer *buf, IrExpr *const *idx, IrExpr *value, SrcLoc loc);
IrStmt *ir_if_new(IrModule *m, IrExpr *cond, IrStmt *then_, IrStmt *else_, SrcLoc loc);

/* A region covering the whole buffer. */
IrRegion ir_region_whole(IrModule *m, IrBuffer *buf, SrcLoc loc);
/* A copy of a COPY, FILL or GEMM statement that shares no expression node
 * with the original (its regions' starts and extents are cloned). */
IrStmt *ir_stmt_clone_tile_op(IrModule *m, const IrStmt *s);
/* The region's tile shape (non-index dims): returns the number of dims. */
int ir_region_tile_shape(const IrRegion *r, IrExpr **out_extents);

/* Deep copy of an expression (vars and buffers are shared, not copied). */
IrExpr *ir_expr_clone(IrModule *m, const IrExpr *e);
/* Replaces every reference to `var` in e by a clone of `with`; returns the
 * new tree (e itself is not modified). */
IrExpr *ir_expr_subst(IrModule *m, const IrExpr *e, const IrVar *var, const IrExpr *with);
/* The same for every subtree equal to `what` (ir_expr_equal). */
IrExpr *ir_expr_replace(IrModule *m, const IrExpr *e, const IrExpr *what, const IrExpr *with);

bool ir_expr_is_int_const(const IrExpr *e, int64_t *out);
bool ir_expr_equal(const IrExpr *a, const IrExpr *b);

/* Calls fn on every expression slot of a statement (not recursing into child
 * statements), letting fn replace it. The same walker serves every pass that
 * rewrites expressions. */
typedef IrExpr *(*IrExprRewriter)(IrModule *m, IrExpr *e, void *ctx);
void ir_stmt_rewrite_exprs(IrModule *m, IrStmt *s, IrExprRewriter fn, void *ctx);

/* Read-only pre-order visits (ir_walk.c): every node of e, and every node of
 * every expression slot of one statement (not of its child statements). */
typedef void (*IrExprVisitor)(const IrExpr *e, void *ctx);
void ir_expr_visit(const IrExpr *e, IrExprVisitor fn, void *ctx);
void ir_stmt_visit_exprs(IrStmt *s, IrExprVisitor fn, void *ctx);
/* Whether some node of e equals sub (ir_expr_equal). */
bool ir_expr_contains(const IrExpr *e, const IrExpr *sub);
/* Pre-order visit of every statement under s (s included): the children of
 * SEQ, FOR, IF and WARP_ROLES. */
typedef void (*IrStmtVisitor)(IrStmt *s, void *ctx);
void ir_visit_stmts(IrStmt *s, IrStmtVisitor fn, void *ctx);
/* How many times one statement (not its children) names buffer b: tile-op
 * operands, the store target and loads in its expressions. */
int ir_stmt_buffer_refs(IrStmt *s, const IrBuffer *b);
/* How many of those are element loads in its expressions. */
int ir_stmt_buffer_loads(IrStmt *s, const IrBuffer *b);
/* Whether a GEMM statement multiplies FP8 codes (either operand). */
bool ir_gemm_reads_fp8(const IrStmt *gemm);
/* How many element loads of b the expression e holds. */
int ir_expr_buffer_loads(const IrExpr *e, const IrBuffer *b);

/* ---- Printing and verification (ir_print.c, ir_verify.c) ---------------- */

/* Prints the module in the IR text format (docs/ir.md). The same format after
 * every pass, so dumps diff cleanly. */
void ir_print_module(FILE *out, const IrModule *m);
char *ir_module_to_string(const IrModule *m); /* malloc'd; caller frees */
void ir_print_expr(FILE *out, const IrExpr *e);
char *ir_expr_to_string(Arena *arena, const IrExpr *e);
/* For a kernel that names target_sm: one line "<comment> K: configuration
 * for target_sm = 90: block_M = 128, ..." (every bound const), which the
 * backends write above the kernel; nothing for other kernels. */
struct StrBuf;
void ir_print_kernel_config(struct StrBuf *sb, const char *comment, const IrKernel *k);

/* Structural checks run between passes: dtypes consistent, ranks match,
 * every var in scope, regions inside rank. Reports through diag as internal
 * errors naming the pass that broke the invariant; returns false then. */
bool ir_verify_module(const IrModule *m, const char *after_pass, Diag *diag);

#endif
