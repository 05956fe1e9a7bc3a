/* rt_repack.h - staging of tensors TMA cannot take through aligned scratch
 * copies (sm_90a launches; rt_repack.c says why and how).
 * Floor 2, GPU column (tests/runtime/check_layers.sh): rt_gpu.c calls it;
 * it calls rt_tma.c, runtime/cuda/ (cuda_driver.h) and libc. */
#ifndef RT_REPACK_H
#define RT_REPACK_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_driver.h"
#include "tilec.h"
#include "tilert.h"

/* A tensor whose outer dims do not collapse into rows of one pitch is
 * copied one 2-D copy per outer index, up to this many; past it the launch
 * is not staged (the cp.async build runs it). */
enum { RT_REPACK_MAX_COPIES = 64, RT_REPACK_PITCH_ALIGN = 128, RT_REPACK_BASE_ALIGN = 256 };

/* One staged tensor of a launch. */
typedef struct RtRepackTensor {
  int param;             /* its parameter */
  bool in, out;          /* copied into the scratch before the kernel / back after it */
  size_t width;          /* bytes of one row (the innermost dim) */
  size_t user_pitch;     /* bytes from row to row in the caller's tensor */
  size_t pitch;          /* bytes from row to row in the scratch (rt_repack_pitch) */
  size_t rows;           /* rows of each 2-D copy */
  int ncopies;           /* 2-D copies: 1, or one per outer index */
  size_t user_offset[RT_REPACK_MAX_COPIES]; /* bytes from the caller's base to copy c's first row */
  size_t bytes;          /* size of the scratch: every row at `pitch` */
  RtCuDevPtr user;       /* the caller's tensor (data + byte_offset) */
  RtCuDevPtr scratch;    /* set by rt_repack_alloc */
  DLTensor view;         /* the scratch as the kernel sees it: the caller's shape, compact
                            strides over rows of `pitch` bytes */
  int64_t strides[TILEC_MAX_RANK];
} RtRepackTensor;

/* What one launch stages. */
typedef struct RtRepackPlan {
  int n;                 /* staged tensors */
  RtRepackTensor *t;     /* n of them */
  int nargs;
  TilertArg *args;       /* the launch's arguments, staged tensors replaced by their views */
  bool *staged;          /* one per parameter (rt_tma_params's `staged`) */
} RtRepackPlan;

/* A kernel's scratch buffers, one per (stream, parameter), kept across
 * launches (rt_repack.c). */
typedef struct RtRepack RtRepack;

/* $TILEC_TMA_STAGING: "0" turns staging off (every unfit launch runs the
 * cp.async build, as before staging existed); "require" makes a launch
 * that cannot be staged an error instead of a cp.async launch (tests use it
 * to know the TMA build ran); anything else, or unset: on. */
typedef enum RtRepackMode { RT_REPACK_OFF, RT_REPACK_ON, RT_REPACK_REQUIRE } RtRepackMode;
RtRepackMode rt_repack_mode(void);

/* A scratch row pitch for rows of row_bytes bytes: rounded up to a
 * multiple of RT_REPACK_PITCH_ALIGN (rows start on 128-byte L2 lines; TMA
 * needs 16), at least one multiple. */
size_t rt_repack_pitch(size_t row_bytes);

/* The staging of a launch (args validated, nargs = info->nparams) whose
 * tensors TMA cannot all take as they are (rt_tma_fits): every tensor some
 * map of which does not fit is staged; it must be tma_only
 * (TilecParamInfo), non-empty and laid out so 2-D copies reach it. Pure
 * host work, no driver call. Returns true with *out NULL when no tensor
 * needs staging; false when some unfit tensor cannot be staged (why says
 * which and why; the caller runs the cp.async build) or out of memory.
 * *out: free with rt_repack_plan_free. */
bool rt_repack_plan(const TilecKernelInfo *info, const TilertArg *args, int nargs, RtRepackPlan **out, char *why,
                    size_t cap);
void rt_repack_plan_free(RtRepackPlan *p); /* accepts NULL */

/* Points every staged tensor of p at its scratch in *cache (allocated on
 * first use, one per stream and parameter, grown when too small) and fills
 * the views' data pointers. False when an allocation failed (the driver's
 * text in rt_cuda_last_error): the caller runs the cp.async build. */
bool rt_repack_alloc(RtCuda *cu, RtRepack **cache, RtCuStream stream, RtRepackPlan *p);

/* Enqueues on `stream` the 2-D copies of p's `in` tensors into their
 * scratch (before the kernel) / of its `out` tensors back into the
 * caller's (after it). False: a copy was refused (rt_cuda_last_error). */
bool rt_repack_copy_in(RtCuda *cu, const RtRepackPlan *p, RtCuStream stream);
bool rt_repack_copy_out(RtCuda *cu, const RtRepackPlan *p, RtCuStream stream);

/* Frees every scratch buffer of the cache (module unload). Accepts NULL. */
void rt_repack_free(RtCuda *cu, RtRepack *cache);

#endif
