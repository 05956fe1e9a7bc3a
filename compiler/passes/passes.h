/* passes.h - the pass signature, the pipeline runner and helpers every pass
 * shares (walking all expressions of a kernel). */
#ifndef TILEC_PASSES_H
#define TILEC_PASSES_H

#include "../include/tilec.h"
#include "../ir.h"

typedef struct PassOptions {
  TilecTarget target;
  const TilecDefine *defines;
  int ndefines;
  bool no_tma; /* TilecOptions.no_tma: lower-tma leaves every copy on cp.async */
  bool cluster_multicast; /* TilecOptions.cluster_multicast: pass persistent may pair tiles */
  bool stream_k;          /* TilecOptions.stream_k: pass stream-k may split the last wave */
} PassOptions;

typedef bool (*PassFn)(IrModule *m, const PassOptions *opts, Diag *diag);

enum { PASS_ALL, PASS_CPU, PASS_GPU };

#define PASS(c_name, name, targets, summary) \
  bool pass_##c_name(IrModule *m, const PassOptions *opts, Diag *diag);
#include "pipeline.def"
#undef PASS

typedef struct PassInfo {
  const char *name;
  PassFn run;
  int targets;
  const char *summary;
} PassInfo;

/* The whole table, in order. */
extern const PassInfo pass_table[];
extern const int pass_count;
bool pass_runs_on(const PassInfo *p, TilecTarget target);

/* Hooks the driver gives the runner to dump the IR after every pass. */
typedef void (*PassObserver)(const IrModule *m, int index, const char *pass_name, void *ctx);

/* Runs every pass for opts->target, verifying the IR after each and calling
 * observe (if any) with the dump index (1-based) and the pass name. Stops at
 * the first pass that fails. */
bool pass_run_pipeline(IrModule *m, const PassOptions *opts, Diag *diag, PassObserver observe, void *ctx);

/* Rewrites every expression of the kernel in place: parameter shapes, grid,
 * threads, buffer shapes at ALLOCs and every expression slot of every
 * statement. */
void pass_rewrite_kernel(IrModule *m, IrKernel *k, IrExprRewriter fn, void *ctx);

/* The same for one statement tree. */
void pass_rewrite_stmt(IrModule *m, IrStmt *s, IrExprRewriter fn, void *ctx);

/* References to b under s that read it: TMA copies into b (they write it)
 * and mbarrier operations do not count. */
int pass_count_reads(IrStmt *s, const IrBuffer *b);

/* Removes b's allocation from k's top level (a buffer no statement names any more). */
void pass_drop_alloc(IrKernel *k, const IrBuffer *b);
/* Where b's ALLOC sits in k's top level, or -1. */
int pass_alloc_index(const IrKernel *k, const IrBuffer *b);
/* Allocates b at k's top level right after after's ALLOC (which must be there). */
void pass_alloc_after(IrModule *m, IrKernel *k, const IrBuffer *after, IrBuffer *b);
/* A deep copy of a statement tree of the kinds a loop body holds before
 * overlap-wgmma (SEQ, LET, STORE, FOR, IF, COPY, FILL, GEMM, REDUCE,
 * MBAR_WAIT/ARRIVE; its lets and loops get fresh variables), sharing no
 * expression with s; NULL when the tree holds any other kind (or an
 * atomic or guarded store). */
IrStmt *pass_clone_stmt(IrModule *m, const IrStmt *s);

/* Drops every LET in s that nothing reads, and then the lets only those
 * read (a value only a folded-away branch used; a role's copy of a value
 * only the other role reads). Lets are pure: dropping one changes nothing
 * else. */
void pass_drop_unread_lets(IrModule *m, IrStmt *s);
/* A new mbarrier buffer `name` of `stages` barriers, `count` arrivals per
 * phase, allocated at the kernel's top level right after `after` (whose
 * ALLOC must be there: NULL otherwise). Its storage is in the barrier area
 * after the data buffers (ir_shared_bytes), 8 bytes per barrier. */
IrBuffer *pass_add_mbarriers(IrModule *m, IrKernel *k, const IrBuffer *after, const char *name, int stages,
                             int count);

/* The TMA tensor map of a copy between the global region g and the whole
 * shared tile sh (lower-tma's loads, stage-stores' stores), or false when it
 * is not a TMA box (lower_tma.c says what is). */
bool pass_tma_box(const IrKernel *k, const IrRegion *g, const IrRegion *sh, IrTensorMap *map);

/* Would pass persistent loop k's blocks over its tiles and stream the
 * epilogue's one staging buffer, in storage of its own, behind the next
 * tile (its plan, made without changing k)? stage-stores asks, before
 * persistent runs, whether a TMA store would drain asynchronously there. */
bool pass_persistent_plans(IrModule *m, IrKernel *k);

/* Index of map in k's tensor maps (added if new); -1 when the table is full. */
int pass_tensor_map_index(IrKernel *k, const IrTensorMap *map);

/* The panel width (in elements of es bytes) that lets a descriptor start at
 * every `slice` columns of a [K, cols] tile read N-major by wgmma (a gemm
 * whose warpgroups split N, each reading `slice` columns of B): the widest
 * of 128, 64, 32 bytes dividing both rows and slices; 0 when none does.
 * infer-layout asks it before splitting N, swizzle-layout stores the tile
 * so (swizzle_layout.c). */
int pass_nsplit_panel_cols(int cols, int slice, int es);

/* The setmaxnreg count of `consumers` consumer threads beside a 128-thread
 * producer warpgroup that keeps producer_regs (warp_specialize.c). */
int pass_consumer_registers(int consumers, int producer_regs);

/* `let var = value` (value taken as is). */
IrStmt *pass_let(IrModule *m, IrVar *var, IrExpr *value, SrcLoc loc);

/* Replaces var by `at` in every expression of s, simplifying each. */
void pass_subst_var(IrModule *m, IrStmt *s, IrVar *var, const IrExpr *at);

/* An MBAR_WAIT (parity given) or MBAR_ARRIVE (parity NULL) on stage `stage`
 * of the mbarrier buffer bar. */
IrStmt *pass_mbar_stmt(IrModule *m, IrStmtKind kind, IrBuffer *bar, IrExpr *stage, IrExpr *parity, SrcLoc loc);


/* What a statement tree reads and writes (stmt_effects.c says how each
 * statement counts): for the passes that move statements or waits. */
enum { PASS_MAX_EFFECTS = 32 };
typedef struct PassEffects {
  const IrBuffer *reads[PASS_MAX_EFFECTS], *writes[PASS_MAX_EFFECTS];
  int nreads, nwrites;
  bool overflow; /* more buffers than the sets hold */
  bool barrier;  /* holds a barrier (an atomic_fetch_add's included) */
  bool scope;    /* is a let or an alloc (one nested in s is local to s) */
  bool gemm;     /* holds a gemm */
} PassEffects;
PassEffects pass_effects(IrStmt *s);
bool pass_effects_writes(const PassEffects *e, const IrBuffer *b);
bool pass_effects_references(const PassEffects *e, const IrBuffer *b);
/* One writes what the other reads or writes: they may not swap. */
bool pass_effects_conflict(const PassEffects *a, const PassEffects *b);

/* `wgmma_wait acc pending(pending)`: at most `pending` of the warpgroup's
 * wgmma groups still in flight, acc's registers ready. */
IrStmt *pass_wgmma_wait(IrModule *m, IrBuffer *acc, int pending, SrcLoc loc);
/* Keeps float fragment b computed before the wait (the CUDA backend pins
 * its registers there; up to 8 fragments, others are ignored). */
void pass_wgmma_wait_pin(IrStmt *wait, const IrBuffer *b);

#endif
