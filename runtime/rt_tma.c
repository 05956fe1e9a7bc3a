/* rt_tma.c - encodes the TMA descriptors of a launch (sm_90a kernels whose
 * copies lower-tma turned into tensor-map copies).
 *
 * The compiler says which tensor parameter each descriptor describes and
 * the box it loads (TilecKernelInfo.tensor_maps); the tensor's extents come
 * from the DLTensor at launch, so dynamic shapes need nothing special.
 * The global strides are the tensor's own (DLPack strides in elements, NULL
 * meaning compact; a parameter declared with `strides (...)` may be a view),
 * converted to bytes; TMA wants each a multiple of 16 bytes and the base
 * address 16-byte aligned. A tensor that is not is UNFIT: rt_gpu.c then
 * stages it through an aligned scratch copy where it can (rt_repack.c) and
 * otherwise launches the kernel's cp.async build (compiled on first need).
 * Encoding is pure host work but not free (a driver call per map), so each
 * kernel keeps the last descriptor per map and reuses it while the tensor's
 * data pointer, shape and strides stay the same (the common case: the same buffers
 * launched again and again). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_tma.h"

/* The element strides of t (DLPack strides, or compact when NULL). */
static void tensor_strides(const DLTensor *t, int64_t *out) {
  int64_t stride = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    out[d] = t->strides ? t->strides[d] : stride;
    stride *= t->shape[d] > 0 ? t->shape[d] : 1;
  }
}

static bool slot_matches(const RtTmaSlot *s, RtCuDevPtr base, const DLTensor *t, const int64_t *strides) {
  if (!s->valid || s->base != base) return false;
  for (int d = 0; d < t->ndim; d++)
    if (s->shape[d] != t->shape[d] || s->strides[d] != strides[d]) return false;
  return true;
}

/* Whether TMA can take tensor t (element strides `st`, innermost 1) for
 * map m: TMA takes the global strides of all but the innermost dim in
 * bytes, each a multiple of 16, and a 16-byte aligned base; a store's rows
 * must be whole 16-byte chunks unless the tensor is `staged` (a scratch
 * whose row pitch holds them). Checked here so the message can say which
 * dim (the driver's own error would not). */
static bool fits(const TilecTensorMapInfo *m, const DLTensor *t, const int64_t *st, RtCuDevPtr base, bool staged,
                 char *why, size_t cap) {
  const int rank = t->ndim, elem = (t->dtype.bits * t->dtype.lanes + 7) / 8;
  if (m->store && !staged && (uint64_t)t->shape[rank - 1] * (uint64_t)elem % 16 != 0) {
    /* TMA stores whole 16-byte chunks: it would write past the last column. */
    snprintf(why, cap, "its rows of %lld elements (%llu bytes) are not a multiple of 16 bytes, and a TMA store "
             "writes whole 16-byte chunks", (long long)t->shape[rank - 1],
             (unsigned long long)t->shape[rank - 1] * (unsigned long long)elem);
    return false;
  }
  if (base % 16 != 0) {
    snprintf(why, cap, "its address 0x%llx is not a multiple of 16 bytes", (unsigned long long)base);
    return false;
  }
  for (int d = rank - 2; d >= 0; d--) { /* innermost first */
    const uint64_t bytes = (uint64_t)st[d] * (uint64_t)elem;
    if (bytes % 16 != 0 && t->shape[d] > 1) {
      snprintf(why, cap,
               "dim %d has stride %lld elements (%llu bytes), and TMA needs strides that are "
               "multiples of 16 bytes (pass a tensor whose row pitch is a multiple of %d elements, "
               "or compile for sm_80, whose cp.async copies take any stride)",
               d, (long long)st[d], (unsigned long long)bytes, 16 / elem);
      return false;
    }
  }
  return true;
}

/* Encodes slot s for tensor t (element strides `st`, innermost 1) with map
 * m's box, once fits() said yes. */
static RtTmaStatus encode(RtCuda *cu, const TilecTensorMapInfo *m, const DLTensor *t, const int64_t *st,
                          RtCuDevPtr base, bool staged, RtTmaSlot *s, char *why, size_t cap) {
  const int rank = t->ndim, elem = (t->dtype.bits * t->dtype.lanes + 7) / 8;
  uint64_t dims[TILEC_MAX_RANK], strides[TILEC_MAX_RANK];
  uint32_t box[TILEC_MAX_RANK];
  s->valid = false;
  if (!fits(m, t, st, base, staged, why, cap)) return RT_TMA_UNFIT;
  for (int i = 0; i < rank; i++) { /* innermost first */
    const int d = rank - 1 - i;
    dims[i] = (uint64_t)t->shape[d];
    box[i] = (uint32_t)m->box[d];
    if (i == 0) continue;
    const uint64_t bytes = (uint64_t)st[d] * (uint64_t)elem;
    /* A size-1 dim's stride is never stepped: give TMA a valid one. */
    strides[i - 1] = bytes % 16 == 0 ? bytes : (uint64_t)16;
  }
  s->valid = rt_cuda_tensor_map(cu, &s->map, base, elem, rank, dims, strides, box, m->swizzle_bytes);
  s->base = base;
  for (int d = 0; d < rank; d++) {
    s->shape[d] = t->shape[d];
    s->strides[d] = st[d];
  }
  if (!s->valid) snprintf(why, cap, "%s", rt_cuda_last_error(cu));
  return s->valid ? RT_TMA_OK : RT_TMA_FAILED;
}

RtTmaStatus rt_tma_params(RtCuda *cu, const TilecKernelInfo *info, const TilertArg *args, const bool *staged,
                          RtTmaSlot **slots, void **params, char *msg, size_t cap) {
  const int n = info->ntensor_maps;
  if (n == 0) return RT_TMA_OK;
  if (!*slots) {
    *slots = aligned_alloc(64, (size_t)n * sizeof **slots);
    if (!*slots) {
      snprintf(msg, cap, "%s: out of memory for its tensor maps", info->name);
      return RT_TMA_FAILED;
    }
    memset(*slots, 0, (size_t)n * sizeof **slots);
  }
  for (int i = 0; i < n; i++) {
    const TilecTensorMapInfo *m = &info->tensor_maps[i];
    const DLTensor *t = args[m->param].tensor;
    const RtCuDevPtr base = (RtCuDevPtr)(uintptr_t)t->data + t->byte_offset;
    RtTmaSlot *s = &(*slots)[i];
    int64_t strides[TILEC_MAX_RANK];
    char why[384];
    tensor_strides(t, strides);
    const bool padded = staged && staged[m->param];
    RtTmaStatus st = slot_matches(s, base, t, strides)
                         ? RT_TMA_OK
                         : encode(cu, m, t, strides, base, padded, s, why, sizeof why);
    if (st != RT_TMA_OK) {
      snprintf(msg, cap, "%s: tensor '%s' cannot be loaded by TMA: %s", info->name,
               info->params[m->param].name, why);
      return st;
    }
    params[i] = &s->map;
  }
  return RT_TMA_OK;
}

bool rt_tma_fits(const TilecTensorMapInfo *m, const DLTensor *t) {
  int64_t strides[TILEC_MAX_RANK];
  char why[384];
  tensor_strides(t, strides);
  return fits(m, t, strides, (RtCuDevPtr)(uintptr_t)t->data + t->byte_offset, false, why, sizeof why);
}

bool rt_tma_rows_split_lines(const TilecKernelInfo *info, const TilertArg *args) {
  for (int i = 0; i < info->ntensor_maps; i++) {
    const TilecTensorMapInfo *m = &info->tensor_maps[i];
    const DLTensor *t = args[m->param].tensor;
    if (m->store || t->ndim < 2) continue;
    int64_t strides[TILEC_MAX_RANK];
    tensor_strides(t, strides);
    const int elem = (t->dtype.bits * t->dtype.lanes + 7) / 8;
    const uint64_t pitch = (uint64_t)strides[t->ndim - 2] * (uint64_t)elem;
    const RtCuDevPtr base = (RtCuDevPtr)(uintptr_t)t->data + t->byte_offset;
    if (t->shape[t->ndim - 2] > 1 && (pitch % 128 != 0 || base % 128 != 0)) return true;
  }
  return false;
}

void rt_tma_free(RtTmaSlot *slots) { free(slots); }
