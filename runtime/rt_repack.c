/* rt_repack.c - stages the tensors of an sm_90a launch that TMA cannot take
 * through aligned scratch copies, so the kernel's TMA build still runs.
 *
 * Why: a TMA tensor map needs every row pitch a multiple of 16 bytes and a
 * 16-byte aligned base, and a TMA store whole 16-byte chunks per row. A
 * bf16 GEMM with K = 4999 (9998-byte rows of A) has none of that, and the
 * runtime used to run the kernel's cp.async build for it (no TMA, no warp
 * specialization): 84 TFLOP/s on an H100 where aligned shapes of that size
 * run at 550-600. Copying such a tensor into a scratch buffer whose rows are
 * padded costs a pass over its bytes at copy-engine speed; the GEMM gets
 * its fast build back.
 *
 * How: rt_repack_plan picks the tensors to stage: those with a map that
 * does not fit (rt_tma_fits), each of which the compiler must have marked
 * tma_only (the kernel touches it through its maps alone, so it sees only
 * what the maps describe). The scratch has the tensor's logical shape,
 * rows of rt_repack_pitch bytes (the row rounded up to 128: rows start on
 * L2 lines, so the cluster build's reason to exist, rows that split lines,
 * is gone for it too) and a 256-byte aligned base (cuMemAlloc's). The
 * maps are encoded over the scratch with the logical dims: TMA loads still
 * fill zeros past the extents, and a store's chunks past the last column
 * land in the padding. On the launch's stream: cuMemcpy2DAsync of each
 * staged tensor into its scratch, the kernel, cuMemcpy2DAsync of each
 * written tensor back (rows of `width` bytes only: the caller's padding is
 * never touched).
 * A tensor the kernel only writes is copied in as well: a kernel may leave
 * parts of its output as they were (varlen attention's rows past the last
 * sequence; a GEMM tile past a bound edge), and the copy back would
 * otherwise hand the caller the scratch's old bytes there. For a GEMM's C
 * that costs one extra read and write of C (about 5 % of the launch at
 * 4001 x 3001 x 4999).
 * Rank > 2: outer dims that collapse into rows of one pitch make one 2-D
 * copy; otherwise one 2-D copy per outer index, up to RT_REPACK_MAX_COPIES
 * (past it the launch is not staged and the cp.async build runs it).
 * The scratch buffers live in the kernel's cache (TilertKernel.repack),
 * one per (stream, parameter): launches of one kernel on two streams never
 * share a buffer. A buffer that is too small is replaced by one at least
 * 1.5 times its size; the old one is kept until the module unloads (work
 * in flight, or a captured CUDA graph, may still use it), which keeps the
 * retired bytes below the live ones. The pointer is stable while its size
 * suffices, so the kernel's tensor-map cache (RtTmaSlot) keeps hitting.
 * $TILEC_TMA_STAGING=0 turns staging off (the cp.async build runs every
 * unfit launch, as before); =require makes a launch that cannot be staged
 * an error (the tests' way to know the TMA build ran). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_repack.h"
#include "rt_tma.h"

/* ---- the plan (pure host work) ---- */

RtRepackMode rt_repack_mode(void) {
  const char *v = getenv("TILEC_TMA_STAGING");
  if (v && strcmp(v, "0") == 0) return RT_REPACK_OFF;
  if (v && strcmp(v, "require") == 0) return RT_REPACK_REQUIRE;
  return RT_REPACK_ON;
}

size_t rt_repack_pitch(size_t row_bytes) {
  const size_t a = RT_REPACK_PITCH_ALIGN;
  return row_bytes <= a ? a : (row_bytes + a - 1) / a * a;
}

/* The element strides of t (DLPack strides, or compact when NULL). */
static void tensor_strides(const DLTensor *t, int64_t *out) {
  int64_t stride = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    out[d] = t->strides ? t->strides[d] : stride;
    stride *= t->shape[d] > 0 ? t->shape[d] : 1;
  }
}

/* The copies and scratch of tensor t (validated: positive, non-overlapping
 * strides, the innermost 1) into r; false (why) when it cannot be staged. */
static bool geometry(const DLTensor *t, RtRepackTensor *r, char *why, size_t cap) {
  const int rank = t->ndim;
  const size_t elem = (size_t)(t->dtype.bits * t->dtype.lanes + 7) / 8;
  int64_t st[TILEC_MAX_RANK];
  tensor_strides(t, st);
  if (rank < 1 || rank > TILEC_MAX_RANK || st[rank - 1] != 1) {
    snprintf(why, cap, "its innermost dim is not contiguous");
    return false;
  }
  size_t total_rows = 1;
  for (int d = 0; d < rank; d++) {
    if (t->shape[d] <= 0) {
      snprintf(why, cap, "it is empty");
      return false;
    }
    if (d < rank - 1) {
      if ((uint64_t)t->shape[d] > SIZE_MAX / total_rows) goto too_large;
      total_rows *= (size_t)t->shape[d];
    }
  }
  r->width = (size_t)t->shape[rank - 1] * elem;
  r->pitch = rt_repack_pitch(r->width);
  if (total_rows > SIZE_MAX / r->pitch) goto too_large;
  r->bytes = total_rows * r->pitch;
  /* The row dims: the outer dims of more than one element (a dim of one is
   * never stepped, whatever its stride). */
  int row_dims[TILEC_MAX_RANK], nr = 0;
  for (int d = 0; d < rank - 1; d++)
    if (t->shape[d] > 1) row_dims[nr++] = d;
  r->ncopies = 1;
  r->user_offset[0] = 0;
  if (nr == 0) {
    r->rows = 1;
    r->user_pitch = r->width;
    return true;
  }
  const int j = row_dims[nr - 1]; /* the innermost: its stride is the pitch */
  r->user_pitch = (size_t)st[j] * elem;
  bool collapses = true;
  for (int i = 0; i + 1 < nr; i++)
    collapses &= st[row_dims[i]] == st[row_dims[i + 1]] * t->shape[row_dims[i + 1]];
  if (collapses) {
    r->rows = total_rows;
    return true;
  }
  /* One copy per index of the dims outside j (those inside j are all 1). */
  const size_t outer = total_rows / (size_t)t->shape[j];
  if (outer > RT_REPACK_MAX_COPIES) {
    snprintf(why, cap, "its outer dims do not collapse into rows of one pitch, and it would take %zu 2-D copies "
             "(at most %d)", outer, (int)RT_REPACK_MAX_COPIES);
    return false;
  }
  r->rows = (size_t)t->shape[j];
  r->ncopies = (int)outer;
  for (size_t c = 0; c < outer; c++) {
    size_t rest = c, off = 0;
    for (int d = j - 1; d >= 0; d--) {
      off += rest % (size_t)t->shape[d] * (size_t)st[d] * elem;
      rest /= (size_t)t->shape[d];
    }
    r->user_offset[c] = off;
  }
  return true;
too_large:
  snprintf(why, cap, "its scratch copy would not fit in memory");
  return false;
}

void rt_repack_plan_free(RtRepackPlan *p) {
  if (!p) return;
  free(p->t);
  free(p->args);
  free(p->staged);
  free(p);
}

bool rt_repack_plan(const TilecKernelInfo *info, const TilertArg *args, int nargs, RtRepackPlan **out, char *why,
                    size_t cap) {
  *out = NULL;
  if (why && cap) why[0] = '\0';
  const int np = info->nparams;
  if (nargs != np || np <= 0) {
    snprintf(why, cap, "%s: %d arguments for %d parameters", info->name, nargs, np);
    return false;
  }
  RtRepackPlan *p = calloc(1, sizeof *p);
  bool *unfit = calloc((size_t)np, sizeof *unfit);
  if (!p || !unfit || !(p->staged = calloc((size_t)np, sizeof *p->staged)) ||
      !(p->args = malloc((size_t)np * sizeof *p->args)) || !(p->t = calloc((size_t)np, sizeof *p->t))) {
    snprintf(why, cap, "out of memory");
    goto fail;
  }
  p->nargs = np;
  memcpy(p->args, args, (size_t)np * sizeof *args);
  for (int i = 0; i < info->ntensor_maps; i++) {
    const TilecTensorMapInfo *m = &info->tensor_maps[i];
    if (!rt_tma_fits(m, args[m->param].tensor)) unfit[m->param] = true;
  }
  for (int q = 0; q < np; q++) {
    if (!unfit[q]) continue;
    const TilecParamInfo *pi = &info->params[q];
    if (!pi->tma_only) {
      snprintf(why, cap, "%s: tensor '%s' is also accessed other than through its tensor maps", info->name,
               pi->name);
      goto fail;
    }
    const DLTensor *t = args[q].tensor;
    RtRepackTensor *r = &p->t[p->n];
    char what[256];
    if (!geometry(t, r, what, sizeof what)) {
      snprintf(why, cap, "%s: tensor '%s' cannot be staged: %s", info->name, pi->name, what);
      goto fail;
    }
    r->param = q;
    for (int i = 0; i < info->ntensor_maps; i++) {
      if (info->tensor_maps[i].param != q) continue;
      if (info->tensor_maps[i].store) r->out = true;
    }
    /* Every staged tensor is copied in: a write-only one too (its elements
     * the kernel leaves alone must come back as they were). */
    r->in = true;
    r->user = (RtCuDevPtr)(uintptr_t)t->data + t->byte_offset;
    r->view = *t;
    r->view.data = NULL; /* rt_repack_alloc */
    r->view.byte_offset = 0;
    r->view.strides = r->strides;
    const int rank = t->ndim;
    const int64_t elem = (t->dtype.bits * t->dtype.lanes + 7) / 8;
    r->strides[rank - 1] = 1;
    if (rank >= 2) r->strides[rank - 2] = (int64_t)r->pitch / elem;
    for (int d = rank - 3; d >= 0; d--) r->strides[d] = r->strides[d + 1] * t->shape[d + 1];
    p->args[q].tensor = &r->view;
    p->staged[q] = true;
    p->n++;
  }
  free(unfit);
  if (p->n == 0) {
    rt_repack_plan_free(p);
    return true;
  }
  *out = p;
  return true;
fail:
  free(unfit);
  rt_repack_plan_free(p);
  return false;
}

/* ---- scratch buffers ---- */

typedef struct RtRepackBuf {
  RtCuStream stream;
  int param;
  RtCuDevPtr ptr;
  size_t bytes;
} RtRepackBuf;

struct RtRepack {
  RtRepackBuf *bufs;
  int nbufs, cap;
  RtCuDevPtr *retired; /* replaced buffers, freed with the cache */
  int nretired, retired_cap;
};

/* `items`, an array of *cap elements of `size` bytes with n in use, with room
 * for one more: itself while n < *cap, else reallocated to twice the
 * capacity (4 at first) and *cap updated. NULL when out of memory; the
 * array and *cap are then as they were. */
static void *room_for_one(void *items, int n, int *cap, size_t size) {
  if (n < *cap) return items;
  int grown = *cap ? *cap * 2 : 4;
  void *more = realloc(items, (size_t)grown * size);
  if (more) *cap = grown;
  return more;
}

/* The buffer of (stream, param), a new empty one if there is none. */
static RtRepackBuf *buf_of(RtRepack *c, RtCuStream stream, int param) {
  for (int i = 0; i < c->nbufs; i++)
    if (c->bufs[i].stream == stream && c->bufs[i].param == param) return &c->bufs[i];
  RtRepackBuf *bufs = room_for_one(c->bufs, c->nbufs, &c->cap, sizeof *bufs);
  if (!bufs) return NULL;
  c->bufs = bufs;
  RtRepackBuf *b = &c->bufs[c->nbufs++];
  *b = (RtRepackBuf){stream, param, 0, 0};
  return b;
}

bool rt_repack_alloc(RtCuda *cu, RtRepack **cache, RtCuStream stream, RtRepackPlan *p) {
  if (!*cache && !(*cache = calloc(1, sizeof **cache))) return false;
  RtRepack *c = *cache;
  for (int i = 0; i < p->n; i++) {
    RtRepackTensor *r = &p->t[i];
    RtRepackBuf *b = buf_of(c, stream, r->param);
    if (!b) return false;
    if (b->bytes < r->bytes) {
      RtCuDevPtr *retired = room_for_one(c->retired, c->nretired, &c->retired_cap, sizeof *retired);
      if (!retired) return false;
      c->retired = retired;
      size_t want = b->bytes + b->bytes / 2;
      if (want < r->bytes) want = r->bytes;
      RtCuDevPtr ptr = 0;
      if (!rt_cuda_malloc(cu, want, &ptr)) return false;
      if (ptr % RT_REPACK_BASE_ALIGN != 0) { /* cuMemAlloc aligns to 256 at least; never seen */
        rt_cuda_free(cu, ptr);
        return false;
      }
      if (b->ptr) c->retired[c->nretired++] = b->ptr;
      b->ptr = ptr;
      b->bytes = want;
    }
    r->scratch = b->ptr;
    r->view.data = (void *)(uintptr_t)b->ptr;
  }
  return true;
}

/* ---- copies ---- */

static bool copy_all(RtCuda *cu, const RtRepackPlan *p, RtCuStream stream, bool in) {
  for (int i = 0; i < p->n; i++) {
    const RtRepackTensor *r = &p->t[i];
    if (in ? !r->in : !r->out) continue;
    for (int c = 0; c < r->ncopies; c++) {
      const RtCuDevPtr user = r->user + r->user_offset[c];
      const RtCuDevPtr scratch = r->scratch + (RtCuDevPtr)c * r->rows * r->pitch;
      const bool ok = in ? rt_cuda_memcpy_2d_async(cu, scratch, r->pitch, user, r->user_pitch, r->width, r->rows, stream)
                         : rt_cuda_memcpy_2d_async(cu, user, r->user_pitch, scratch, r->pitch, r->width, r->rows, stream);
      if (!ok) return false;
    }
  }
  return true;
}

bool rt_repack_copy_in(RtCuda *cu, const RtRepackPlan *p, RtCuStream stream) { return copy_all(cu, p, stream, true); }

bool rt_repack_copy_out(RtCuda *cu, const RtRepackPlan *p, RtCuStream stream) {
  return copy_all(cu, p, stream, false);
}

void rt_repack_free(RtCuda *cu, RtRepack *c) {
  if (!c) return;
  for (int i = 0; i < c->nbufs; i++) rt_cuda_free(cu, c->bufs[i].ptr);
  for (int i = 0; i < c->nretired; i++) rt_cuda_free(cu, c->retired[i]);
  free(c->bufs);
  free(c->retired);
  free(c);
}
