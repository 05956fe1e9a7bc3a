/* rt_tma.h - the TMA tensor maps a kernel takes, encoded at launch.
 * Floor 2, GPU column (tests/runtime/check_layers.sh): rt_gpu.c calls it;
 * it calls only runtime/cuda/ (cuda_driver.h) and libc. */
#ifndef RT_TMA_H
#define RT_TMA_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_driver.h"
#include "tilec.h"
#include "tilert.h"

/* One encoded descriptor and what it was encoded from. */
typedef struct RtTmaSlot {
  RtCuTensorMap map; /* first: 64-byte aligned in an aligned array */
  bool valid;
  RtCuDevPtr base;
  int64_t shape[TILEC_MAX_RANK];
  int64_t strides[TILEC_MAX_RANK]; /* in elements, compact ones filled in */
} RtTmaSlot;

/* What rt_tma_params made of a launch's tensors. */
typedef enum RtTmaStatus {
  RT_TMA_OK,      /* every params[i] points at its descriptor */
  RT_TMA_UNFIT,   /* a tensor TMA cannot describe: a stride not a multiple of 16
                     bytes, or a base address not 16-byte aligned; the kernel's
                     cp.async build (TilecOptions.no_tma) takes it */
  RT_TMA_FAILED   /* the driver refused to encode a descriptor, or out of memory */
} RtTmaStatus;

/* Points params[i] at the descriptor of info->tensor_maps[i] for this
 * launch's tensors (args, already validated: compact row-major, or strided
 * with a unit innermost stride where the parameter declares strides). The
 * descriptor's global strides are the tensor's real ones, in bytes. *slots
 * is the kernel's cache (allocated on first use, one per map; free with
 * rt_tma_free): a descriptor is encoded again only when its tensor's data
 * pointer, shape or strides changed since the kernel's last launch.
 * staged: NULL, or one flag per parameter: that tensor is a scratch copy
 * (rt_repack.h) whose row pitch holds its rows rounded up to 16 bytes, so
 * a TMA store may write whole chunks past its last column. Not
 * RT_TMA_OK: msg names the tensor and says why (UNFIT is decided here,
 * before the driver is asked). */
RtTmaStatus rt_tma_params(RtCuda *cu, const TilecKernelInfo *info, const TilertArg *args, const bool *staged,
                          RtTmaSlot **slots, void **params, char *msg, size_t cap);

/* Whether map m can be encoded over tensor t as it is (its strides, base
 * and, for a store, its row length): rt_tma_params's UNFIT test for one
 * map, with no driver call. */
bool rt_tma_fits(const TilecTensorMapInfo *m, const DLTensor *t);

/* Whether a tensor that one of info's TMA loads reads has rows that do not
 * start on 128-byte lines (a row pitch or base address not a multiple of
 * 128 bytes): each box row then spans two L2 lines. args: as above. */
bool rt_tma_rows_split_lines(const TilecKernelInfo *info, const TilertArg *args);

void rt_tma_free(RtTmaSlot *slots); /* accepts NULL */

#endif
