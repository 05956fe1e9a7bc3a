/* rt_tma.c - encodes the TMA descriptors of a launch (sm_90a kernels whose
 * copies lower-tma turned into tensor-map copies).
 *
 * The compiler says which tensor parameter each descriptor describes and
 * the box it loads (TilecKernelInfo.tensor_maps); the tensor's extents come
 * from the DLTensor at launch, so dynamic shapes need nothing special.
 * Encoding is pure host work but not free (a driver call per map), so each
 * kernel keeps the last descriptor per map and reuses it while the tensor's
 * data pointer and shape stay the same (the common case: the same buffers
 * launched again and again). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_tma.h"

static bool slot_matches(const RtTmaSlot *s, RtCuDevPtr base, const DLTensor *t) {
  if (!s->valid || s->base != base) return false;
  for (int d = 0; d < t->ndim; d++)
    if (s->shape[d] != t->shape[d]) return false;
  return true;
}

/* Encodes slot s for tensor t (compact row-major) with map m's box. */
static bool encode(RtCuda *cu, const TilecTensorMapInfo *m, const DLTensor *t, RtCuDevPtr base,
                   RtTmaSlot *s) {
  const int rank = t->ndim, elem = (t->dtype.bits * t->dtype.lanes + 7) / 8;
  uint64_t dims[TILEC_MAX_RANK], strides[TILEC_MAX_RANK];
  uint32_t box[TILEC_MAX_RANK];
  uint64_t stride = (uint64_t)elem;
  for (int i = 0; i < rank; i++) { /* innermost first */
    const int d = rank - 1 - i;
    dims[i] = (uint64_t)t->shape[d];
    box[i] = (uint32_t)m->box[d];
    if (i > 0) strides[i - 1] = stride;
    stride *= (uint64_t)(t->shape[d] > 0 ? t->shape[d] : 1);
  }
  s->valid = rt_cuda_tensor_map(cu, &s->map, base, elem, rank, dims, strides, box, m->swizzle_bytes);
  s->base = base;
  for (int d = 0; d < rank; d++) s->shape[d] = t->shape[d];
  return s->valid;
}

bool rt_tma_params(RtCuda *cu, const TilecKernelInfo *info, const TilertArg *args, RtTmaSlot **slots,
                   void **params, char *msg, size_t cap) {
  const int n = info->ntensor_maps;
  if (n == 0) return true;
  if (!*slots) {
    *slots = aligned_alloc(64, (size_t)n * sizeof **slots);
    if (!*slots) {
      snprintf(msg, cap, "%s: out of memory for its tensor maps", info->name);
      return false;
    }
    memset(*slots, 0, (size_t)n * sizeof **slots);
  }
  for (int i = 0; i < n; i++) {
    const TilecTensorMapInfo *m = &info->tensor_maps[i];
    const DLTensor *t = args[m->param].tensor;
    const RtCuDevPtr base = (RtCuDevPtr)(uintptr_t)t->data + t->byte_offset;
    RtTmaSlot *s = &(*slots)[i];
    if (!slot_matches(s, base, t) && !encode(cu, m, t, base, s)) {
      snprintf(msg, cap, "%s: tensor '%s' cannot be loaded by TMA: %s", info->name,
               info->params[m->param].name, rt_cuda_last_error(cu));
      return false;
    }
    params[i] = &s->map;
  }
  return true;
}

void rt_tma_free(RtTmaSlot *slots) { free(slots); }
