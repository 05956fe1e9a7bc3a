/* backend.h - code generators: lowered tile IR in, source text out.
 *
 * emit_c: the CPU backend. Its input is lowered IR (after lower-tile-ops):
 * only SEQ, ALLOC, LET, STORE, FOR (every kind runs sequentially), IF and the
 * no-ops BARRIER, ANNOTATE_LAYOUT, USE_SWIZZLE. A COPY/FILL/GEMM/REDUCE left
 * in the IR is reported through diag as an internal error. The output follows
 * the C ABI of compiler/include/tilec.h: one
 *     void tilec_<kernel>(void **args, const int64_t *dyn);
 * per kernel, running the whole grid. It is self-contained C11 (libc headers
 * only, link with -lm) and compiles warning-free with -std=c11 -O2 -Wall.
 * Tensor arguments are declared `restrict`: distinct tensor arguments of one
 * launch must not overlap in memory. */
#ifndef TILEC_BACKEND_H
#define TILEC_BACKEND_H

#include <stdbool.h>

#include "ir.h"
#include "strbuf.h"

/* Appends the C translation of m to out. Returns false (with a diagnostic)
 * when the IR is not lowered or not specialized (a local buffer whose shape
 * is not a constant, a symbol that is neither bound nor dynamic). */
bool emit_c_module(const IrModule *m, StrBuf *out, Diag *diag);

/* Appends the prelude every emit_c output starts with (after its includes):
 * static inline helpers named tc_*: f16/bf16 <-> f32 conversions
 * (round-to-nearest-even, inf/nan/subnormals kept), tc_round_f16/bf16,
 * max/min/abs/ceildiv and saturating float -> int conversions. Exposed so
 * tests can exercise the helpers on their own. */
void emit_c_prelude(StrBuf *out);
/* The FP8 conversion helpers, emitted only into modules that use FP8. */
void emit_c_fp8_prelude(StrBuf *out);

/* The CUDA backend (compiler/backend/cuda/, cuda_emit.h lists its files): IR after the GPU passes (layouts,
 * swizzles, pipeline stages and barriers decided) in, CUDA C++ for NVRTC out.
 * One `extern "C" __global__ void tilec_<kernel>(...)` per kernel taking the
 * tensors (device pointers), the scalars, then every dynamic symbol as
 * long long, launched with TilecKernelInfo.threads threads and
 * TilecKernelInfo.shared_bytes of dynamic shared memory. Includes only
 * "tilec_tile.cuh" (runtime/device/). fast_division: TilecOptions'. */
bool emit_cuda_module(const IrModule *m, StrBuf *out, Diag *diag, bool fast_division);

/* With fast division (compiler/backend/cuda/fastdiv.c), the byte offset in
 * kernel k's dynamic shared memory of its divisor table
 * (CUDA_FASTDIV_TABLE_BYTES, after the kernel's own buffers), or -1 when k
 * has none: the driver launches such a kernel with offset + table bytes. */
enum { CUDA_FASTDIV_TABLE_BYTES = 64 };
int cuda_fastdiv_table_offset(const IrKernel *k);

/* Kernel k's stream-K fix-up (pass stream-k), or NULL when the pass left k
 * alone: the backend declares its workspace, the driver sets
 * TilecKernelInfo.stream_k (compiler/backend/cuda/stream_k.c). */
const IrStmt *cuda_stream_k_fixup(const IrKernel *k);

#endif
