/* tilec_device.cuh - the only header tilec's generated CUDA code includes.
 *
 * Self-contained device helpers for sm_80 and sm_90a, written with inline PTX:
 * 16-bit float storage types and conversions, tensor-core mma.sync
 * m16n8k16 (f16 and bf16 in, f32 accumulate), ldmatrix, cp.async with
 * zero fill, the shared-memory XOR swizzle, fast exp2, quad/warp reductions
 * over the accumulator layout and 16-byte vector loads/stores.
 *
 * It includes nothing (no cuda_fp16.h, no CUTLASS): the runtime hands this
 * text to NVRTC as an in-memory header named "tilec_device.cuh", so it must
 * compile with no include path at all. Only NVRTC built-ins are used
 * (threadIdx, __syncthreads); everything else is our own.
 *
 * Conventions used in the comments below:
 *   lane  = thread index within the warp (0..31)
 *   g     = lane / 4   ("groupID": which quad the lane is in, 0..7)
 *   t     = lane % 4   (position of the lane inside its quad, 0..3)
 *   A 16-bit pair packed in one 32-bit register keeps the element with the
 *   lower column (or k) index in the LOW 16 bits.
 *   Shared-memory addresses are 32-bit .shared-window addresses (what
 *   tc_smem_addr returns), not generic pointers: they are cheap to offset and
 *   are what ldmatrix / cp.async take.
 */
#ifndef TILEC_DEVICE_CUH
#define TILEC_DEVICE_CUH

#define TC_DEVICE static __device__ __forceinline__

/* ---------------------------------------------------------------------------
 * Storage types. The 16-bit float types are raw bit patterns; arithmetic is
 * done in f32 after conversion (tensor cores take them packed in pairs).
 * ------------------------------------------------------------------------- */
typedef unsigned short tc_half; /* IEEE binary16 bits */
typedef unsigned short tc_bf16; /* bfloat16 bits (upper half of an f32) */

/* 16 bytes, 16-byte aligned: one ldmatrix row, one cp.async chunk, one
 * vectorized global access (8 halves or 4 floats). */
struct alignas(16) tc_u32x4 {
  unsigned x, y, z, w;
};

/* ---------------------------------------------------------------------------
 * Thread / address helpers
 * ------------------------------------------------------------------------- */

/* Lane index within the warp, read from the %laneid register. */
TC_DEVICE unsigned tc_lane_id() {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

/* Generic pointer into __shared__ memory -> 32-bit .shared address.
 * Contract: p must point into shared memory (undefined otherwise). */
TC_DEVICE unsigned tc_smem_addr(const void *p) {
  unsigned addr;
  asm("{ .reg .u64 tc_tmp;\n\t"
      "  cvta.to.shared.u64 tc_tmp, %1;\n\t"
      "  cvt.u32.u64 %0, tc_tmp; }"
      : "=r"(addr)
      : "l"(p));
  return addr;
}

/* Block-wide barrier (bar.sync 0). Every thread of the block must reach it. */
TC_DEVICE void tc_syncthreads() { __syncthreads(); }

/* Programmatic dependent launch (sm_90; the generated code calls these only
 * in sm_90a kernels whose source says pdl_sync() / pdl_trigger()).
 * tc_pdl_wait: wait until the grids this one depends on (the kernel before
 * it in the stream, when the runtime launched this one with programmatic
 * stream serialization) have completed and their memory is visible; returns
 * at once without such a dependency. tc_pdl_trigger: the next kernel in the
 * stream may start launching its blocks (it still waits in tc_pdl_wait for
 * this one to finish). */
TC_DEVICE void tc_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
TC_DEVICE void tc_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* b, with nvcc unable to see its value: a branch on it stays a branch even
 * where b is a constant (an `if opaque(...)` of the IR). */
TC_DEVICE bool tc_opaque(bool b) {
  unsigned v = b;
  asm volatile("" : "+r"(v));
  return v != 0;
}

/* v, with nvcc unable to see its value (a loop bound it must not fold). */
TC_DEVICE long long tc_opaque_ll(long long v) {
  asm volatile("" : "+l"(v));
  return v;
}

/* Whether v[0..N) is 1.0f in every lane of the warp (all lanes must call
 * it): a row scale of ones can be skipped. */
template <int N>
TC_DEVICE bool tc_warp_all_one(const float *v) {
  bool one = true;
#pragma unroll
  for (int r = 0; r < N; ++r) one = one && v[r] == 1.0f;
  return __all_sync(0xffffffffu, one);
}

/* The thread index, recomputed where it is called: nvcc cannot hoist what
 * derives from it out of the loop around the call. A persistent kernel's tile
 * loop starts with it, so the per-thread addresses of the epilogue are not
 * computed once before the loop and kept (spilled) across the main loop. */
TC_DEVICE int tc_opaque_tid(int tid) {
  asm volatile("" : "+r"(tid));
  return tid;
}

/* ---------------------------------------------------------------------------
 * f32 <-> f16 / bf16 conversions (round to nearest even, cvt.rn)
 * ------------------------------------------------------------------------- */

TC_DEVICE tc_half tc_f32_to_f16(float x) {
  tc_half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}

TC_DEVICE float tc_f16_to_f32(tc_half h) {
  float x;
  asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h));
  return x;
}

/* cvt.rn.bf16.f32 needs sm_80 (this header's floor). */
TC_DEVICE tc_bf16 tc_f32_to_bf16(float x) {
  tc_bf16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}

/* bf16 -> f32 is exact: the bf16 bits become the upper half of the f32.
 * (cvt.f32.bf16 would need sm_90; a move works everywhere.) */
TC_DEVICE float tc_bf16_to_f32(tc_bf16 h) {
  float x;
  asm("{ .reg .b16 tc_zero;\n\t"
      "  mov.b16 tc_zero, 0;\n\t"
      "  mov.b32 %0, {tc_zero, %1}; }"
      : "=f"(x)
      : "h"(h));
  return x;
}

/* Two 16-bit values -> one 32-bit register: lo in bits 0..15, hi in 16..31.
 * This is the element order of every mma / ldmatrix register. */
TC_DEVICE unsigned tc_pack2(unsigned short lo, unsigned short hi) {
  unsigned r;
  asm("mov.b32 %0, {%1, %2};" : "=r"(r) : "h"(lo), "h"(hi));
  return r;
}

/* x, as a value ptxas knows to be the same in every lane of the warp (a
 * shuffle from lane 0), so what is computed from it can live in uniform
 * registers: for a warp or warpgroup index, which is warp-uniform but not
 * provably so from threadIdx. Not volatile: the compiler hoists it out of
 * loops (one SHFL per kernel, not per call). Every lane of the warp must
 * call it with the same x, from converged code (all 32 lanes). */
TC_DEVICE int tc_warp_uniform(int x) {
  int r;
  asm("shfl.sync.idx.b32 %0, %1, 0, 0x1f, -1;" : "=r"(r) : "r"(x));
  return r;
}

/* The same pair read from / written to two adjacent elements of a 16-bit
 * array (p[0] low, p[1] high) as one 32-bit value. For a wgmma's register-A fragment that
 * lives across a loop iteration (P of flash attention, issued one iteration
 * late), ptxas keeps whole registers this way, where re-packing 16-bit
 * halves with tc_pack2 made it copy every register twice (48 moves per
 * iteration at dim 128). A memcpy, not a cast: the array is 16-bit. */
TC_DEVICE unsigned tc_load_pair(const unsigned short *p) {
  unsigned r;
  memcpy(&r, p, 4);
  return r;
}
TC_DEVICE void tc_store_pair(unsigned short *p, unsigned r) { memcpy(p, &r, 4); }

TC_DEVICE unsigned short tc_unpack_lo(unsigned r) { return (unsigned short)(r & 0xffffu); }
TC_DEVICE unsigned short tc_unpack_hi(unsigned r) { return (unsigned short)(r >> 16); }

/* Two f32 -> packed f16x2 / bf16x2 in one instruction. PTX puts its FIRST
 * source in the UPPER half, hence the swapped operands. */
TC_DEVICE unsigned tc_pack_f16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

TC_DEVICE unsigned tc_pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/* Two f32 -> two 16-bit values through one packed conversion. Written per
 * element, ptxas packs adjacent conversions itself, but not when the pair is
 * next read in another loop iteration (a wgmma issued one iteration late):
 * then it converts one at a time and re-packs. */
TC_DEVICE void tc_f32x2_to_f16x2(float lo, float hi, tc_half &out_lo, tc_half &out_hi) {
  asm("{ .reg .b32 tc_t;\n\t cvt.rn.f16x2.f32 tc_t, %3, %2;\n\t mov.b32 {%0, %1}, tc_t; }"
      : "=h"(out_lo), "=h"(out_hi)
      : "f"(lo), "f"(hi));
}

TC_DEVICE void tc_f32x2_to_bf16x2(float lo, float hi, tc_bf16 &out_lo, tc_bf16 &out_hi) {
  asm("{ .reg .b32 tc_t;\n\t cvt.rn.bf16x2.f32 tc_t, %3, %2;\n\t mov.b32 {%0, %1}, tc_t; }"
      : "=h"(out_lo), "=h"(out_hi)
      : "f"(lo), "f"(hi));
}

/* The same into out[0] (lo) and out[1] (hi) as one 32-bit store
 * (tc_store_pair): the CUDA backend's f32 -> 16-bit fragment copy when a
 * wgmma reads the result as pairs (tc_gemm_wgmma_rs's PAIRS). */
TC_DEVICE void tc_f32x2_to_f16x2_at(float lo, float hi, tc_half *out) { tc_store_pair(out, tc_pack_f16x2(lo, hi)); }
TC_DEVICE void tc_f32x2_to_bf16x2_at(float lo, float hi, tc_bf16 *out) { tc_store_pair(out, tc_pack_bf16x2(lo, hi)); }

/* Four 8 x 8 tiles of 16-bit pairs into shared memory with one warp
 * instruction (stmatrix.x4, sm_90): tile i takes register ri of every lane
 * (lane l: row l / 4, columns 2 (l % 4), +1 -- an MMA_C fragment's 8 x 8
 * block), its 8 rows at the addresses lanes 8 i .. 8 i + 7 pass as `row`
 * (16 bytes each). The staged epilogue's stores (tma.c): a quarter of the
 * instructions of 4-byte pair stores. */
TC_DEVICE void tc_stmatrix_x4(void *row, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(tc_smem_addr(row)), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
#else
  (void)row, (void)r0, (void)r1, (void)r2, (void)r3;
  __trap(); /* the compiler emits it for sm_90 targets only */
#endif
}

/* dst[0] = a and, when has_b, dst[1] = b (a fragment's two adjacent
 * columns stored into a global f32 tile): one 8-byte store where
 * the pair is 8-byte aligned, otherwise two 4-byte ones. Element by
 * element, each store instruction of a warp wrote half of every 32-byte
 * sector it touched (gemm_splitk's partial sums: 14 % of its stall samples
 * in those stores on an H100; with pairs 512 x 512 x 65536 went from 0.89
 * to 0.97x cuBLAS). */
TC_DEVICE void tc_store_f32x2(float *dst, float a, float b, bool has_b) {
  if (has_b && ((unsigned long long)dst & 7ull) == 0) {
    /* As asm: NVVM split a float2 store here into two 4-byte ones. */
    asm volatile("{ .reg .b64 tc_g;\n\t cvta.to.global.u64 tc_g, %0;\n\t st.global.v2.f32 [tc_g], {%1, %2}; }" ::"l"(dst),
                 "f"(a), "f"(b)
                 : "memory");
    return;
  }
  dst[0] = a;
  if (has_b) dst[1] = b;
}

/* The same into a global 16-bit tile: the pair converted at once (the
 * bits of two scalar round-to-nearest conversions) and stored as 4 bytes
 * where 4-byte aligned. */
#define TC_ST_GLOBAL_B32 "{ .reg .b64 tc_g;\n\t cvta.to.global.u64 tc_g, %0;\n\t st.global.b32 [tc_g], %1; }"
TC_DEVICE void tc_store_f16x2(tc_half *dst, float a, float b, bool has_b) {
  if (has_b && ((unsigned long long)dst & 3ull) == 0) {
    asm volatile(TC_ST_GLOBAL_B32 ::"l"(dst), "r"(tc_pack_f16x2(a, b)) : "memory");
    return;
  }
  dst[0] = tc_f32_to_f16(a);
  if (has_b) dst[1] = tc_f32_to_f16(b);
}
TC_DEVICE void tc_store_bf16x2(tc_bf16 *dst, float a, float b, bool has_b) {
  if (has_b && ((unsigned long long)dst & 3ull) == 0) {
    asm volatile(TC_ST_GLOBAL_B32 ::"l"(dst), "r"(tc_pack_bf16x2(a, b)) : "memory");
    return;
  }
  dst[0] = tc_f32_to_bf16(a);
  if (has_b) dst[1] = tc_f32_to_bf16(b);
}
#undef TC_ST_GLOBAL_B32

/* dst[0] += a and, when has_b, dst[1] += b, atomically (atomic_add of a
 * fragment's two adjacent columns): one 8-byte vector reduction on sm_90
 * where the pair is 8-byte aligned, otherwise two atomicAdds. */
TC_DEVICE void tc_atomic_add_f32x2(float *dst, float a, float b, bool has_b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (has_b && ((unsigned long long)dst & 7ull) == 0) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
    return;
  }
#endif
  atomicAdd(dst, a);
  if (has_b) atomicAdd(dst + 1, b);
}

/* ---------------------------------------------------------------------------
 * Tensor cores: mma.sync.aligned.m16n8k16.row.col, f32 accumulate.
 *
 * D (16x8, f32) += A (16x16, row) * B (16x8, col). All 32 lanes of the warp
 * must execute it together (no divergence around the call).
 *
 * A fragment, a[4] (each register = two 16-bit values along k):
 *   a[0] = A[g    ][2t .. 2t+1]      a[2] = A[g    ][2t+8 .. 2t+9]
 *   a[1] = A[g + 8][2t .. 2t+1]      a[3] = A[g + 8][2t+8 .. 2t+9]
 * B fragment, b[2] (B is k x n; each register = two values along k):
 *   b[0] = B[2t .. 2t+1  ][g]        b[1] = B[2t+8 .. 2t+9][g]
 * C/D accumulator, d[4] (f32):
 *   d[0] = D[g][2t]    d[1] = D[g][2t+1]
 *   d[2] = D[g+8][2t]  d[3] = D[g+8][2t+1]
 * i.e. d[i] sits at row g + 8*(i/2), column 2t + (i%2) (tc_acc_row/col).
 * A row of D is spread over the 4 lanes of one quad (2 columns each), which
 * is why row reductions need only tc_quad_max / tc_quad_sum.
 * ------------------------------------------------------------------------- */

TC_DEVICE void tc_mma_m16n8k16_f16f32(float d[4], const unsigned a[4], const unsigned b[2]) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

TC_DEVICE void tc_mma_m16n8k16_bf16f32(float d[4], const unsigned a[4], const unsigned b[2]) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Coordinates of accumulator element d[i] held by `lane` (see above). */
TC_DEVICE int tc_acc_row(unsigned lane, int i) { return (int)(lane >> 2) + 8 * (i >> 1); }
TC_DEVICE int tc_acc_col(unsigned lane, int i) { return 2 * (int)(lane & 3) + (i & 1); }

/* ---------------------------------------------------------------------------
 * ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{,.trans}.shared.b16
 *
 * Loads 8x8 matrices of 16-bit elements from shared memory. Each matrix row
 * is 16 contiguous bytes at a 16-byte aligned address; rows may be anywhere
 * (padded or swizzled). Lane 8*m + r supplies the address of row r of matrix
 * m: lanes 0-7 for .x1, 0-15 for .x2, 0-31 for .x4 (the other lanes' addresses
 * are ignored, but pass a valid one anyway). All 32 lanes must execute it.
 *
 * Result: register m of every lane holds two elements of matrix m:
 *   no .trans: M[g][2t], M[g][2t+1]         (a row pair, low = 2t)
 *   .trans   : M[2t][g], M[2t+1][g]         (a column pair, low = row 2t)
 * With matrices ordered (rows 0-7,k 0-7), (rows 8-15,k 0-7), (rows 0-7,k 8-15),
 * (rows 8-15,k 8-15) one .x4 yields exactly the mma A fragment a[0..3].
 * For B stored k-major ([k][n], rows along k) use .trans with matrices
 * (k 0-7), (k 8-15) to get b[0], b[1]; for B stored n-major ([n][k]) use the
 * plain form with matrices (k 0-7), (k 8-15) of the n x k tile.
 * ------------------------------------------------------------------------- */

TC_DEVICE void tc_ldmatrix_x4(unsigned r[4], unsigned smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem)
               : "memory");
}

TC_DEVICE void tc_ldmatrix_x4_trans(unsigned r[4], unsigned smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem)
               : "memory");
}

TC_DEVICE void tc_ldmatrix_x2(unsigned r[2], unsigned smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem)
               : "memory");
}

TC_DEVICE void tc_ldmatrix_x2_trans(unsigned r[2], unsigned smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem)
               : "memory");
}

TC_DEVICE void tc_ldmatrix_x1(unsigned r[1], unsigned smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(smem)
               : "memory");
}

TC_DEVICE void tc_ldmatrix_x1_trans(unsigned r[1], unsigned smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(smem)
               : "memory");
}

/* ---------------------------------------------------------------------------
 * cp.async: global -> shared copies that do not go through registers.
 *
 * tc_cp_async_16(smem, gmem, valid): copies 16 bytes (.cg: caches in L2 only,
 * right for tiles streamed once per block). When !valid, nothing is read from
 * gmem and the 16 shared bytes are zero-filled (the src-size operand is 0):
 * this is how partial tiles at the matrix edges are padded. gmem must still
 * be a valid-looking pointer (pass the tensor's base for out-of-range rows).
 * Both addresses must be 16-byte aligned.
 *
 * tc_cp_async_16_bytes(smem, gmem, n): reads only the first n (0..16) bytes
 * and zero-fills the rest (a chunk straddling the right edge).
 * tc_cp_async_16_full(smem, gmem): all 16 bytes (no zero-fill operand).
 * The _ca variants cache in L1 too (.ca; data re-read by the block).
 *
 * Copies issued by a thread are grouped with tc_cp_async_commit(); then
 * tc_cp_async_wait<N>() blocks until at most N of this thread's most recent
 * groups are still in flight (N = 0: all done). The data is visible to the
 * other threads only after a following tc_syncthreads().
 * ------------------------------------------------------------------------- */

TC_DEVICE void tc_cp_async_16(unsigned smem, const void *gmem, bool valid) {
  unsigned n = valid ? 16u : 0u;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(gmem), "r"(n)
               : "memory");
}

TC_DEVICE void tc_cp_async_16_bytes(unsigned smem, const void *gmem, unsigned nbytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(gmem), "r"(nbytes)
               : "memory");
}

/* All 16 bytes, no source-size operand: the common interior-tile case. */
TC_DEVICE void tc_cp_async_16_full(unsigned smem, const void *gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem) : "memory");
}

TC_DEVICE void tc_cp_async_16_ca(unsigned smem, const void *gmem, bool valid) {
  unsigned n = valid ? 16u : 0u;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(gmem), "r"(n)
               : "memory");
}

TC_DEVICE void tc_cp_async_16_ca_bytes(unsigned smem, const void *gmem, unsigned nbytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(gmem), "r"(nbytes)
               : "memory");
}

TC_DEVICE void tc_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int N>
TC_DEVICE void tc_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/* ---------------------------------------------------------------------------
 * Shared-memory swizzle for tiles of 16-bit elements moved in 16-byte chunks.
 *
 * Shared memory has 32 banks of 4 bytes, so one 128-byte line covers every
 * bank once and holds 8 chunks; a chunk's "bank group" is (chunk index mod 8).
 * ldmatrix reads each 8x8 matrix as 8 rows x 1 chunk in one phase: if those 8
 * chunks fall in 8 different bank groups the read is conflict free. In a plain
 * row-major tile with 8 chunks per row (64 halves), the same column chunk of 8
 * consecutive rows is always the same bank group: an 8-way conflict.
 * XOR-ing the chunk index with bits of the row index permutes the chunks of
 * each row differently, so rows r..r+7 of a column land in 8 distinct bank
 * groups; the permutation stays within the row, so no space is wasted and
 * cp.async (one chunk per thread) writes conflict free too.
 *
 * tc_swizzle_offset(row, col_chunk, chunks_per_row) returns the position, in
 * 16-byte chunks from the tile's start, where logical chunk (row, col_chunk)
 * is stored. Byte offset = 16 * result; element (row, col) of a 16-bit tile
 * is chunk col/8, element col%8 within it. A row of cpr chunks is cut into
 * whole groups of 8 chunks and a tail of cpr % 8 chunks:
 *   a chunk of a whole group: chunk ^= row % 8   (stays in its group)
 *   a chunk of the tail (tail = 1, 2 or 4 chunks): tail-local chunk ^=
 *        (row / (8/tail)) mod tail. The tail of row r starts at bank group
 *        (r * cpr) % 8 = (r * tail) % 8, so the rows of a tail that fall on
 *        the same bank groups are those r apart by a multiple of 8/tail;
 *        the XOR with row / (8/tail) separates exactly those.
 *   a tail of 6 chunks: tail-local chunk ^= (row / 4) mod 2. Rows r and
 *        r + 4 start on the same bank group ((6 * 4) % 8 == 0); flipping the
 *        chunk's low bit for the second half puts it on the other parity.
 * Power-of-two rows are the two cases of old (>= 8 chunks: chunk ^= row % 8;
 * fewer: only a tail). With any even cpr (dim 48, 80, 96, 112, 160, 192 in
 * f16: 96 halves = 192-byte rows = 12 chunks) the same chunk of 8
 * consecutive rows (what one ldmatrix reads) lands in 8 distinct bank groups:
 * conflict free (checked for every cpr by tests/unit/test_swizzle.c). Odd
 * cpr: not swizzled (TC_SWIZZLE_ROWS_OK), rows already conflict free.
 * Writers and readers must use the same function with the same cpr.
 * ------------------------------------------------------------------------- */
#define TC_SWIZZLE_ROWS_OK(cpr) ((cpr) == 1 || (cpr) % 2 == 0)
TC_DEVICE unsigned tc_swizzle_offset(unsigned row, unsigned col_chunk, unsigned chunks_per_row) {
  const unsigned whole = chunks_per_row & ~7u; /* chunks in whole groups of 8 */
  unsigned x;
  if (chunks_per_row % 8u == 0u || col_chunk < whole) { /* the first test folds for constant cpr */
    x = row & 7u;
  } else {
    const unsigned tail = chunks_per_row - whole; /* 1, 2, 4 or 6 */
    x = tail == 6u ? (row >> 2) & 1u : (row / (8u / tail)) & (tail - 1u);
  }
  return row * chunks_per_row + (col_chunk ^ x);
}

/* ---------------------------------------------------------------------------
 * Math
 * ------------------------------------------------------------------------- */

/* 2^x with the SFU (ex2.approx.ftz): ~2 ulp, denormals flushed; exp(x) is
 * tc_exp2(x * 1.4426950408889634f). tc_exp2(-inf) = +0. */
TC_DEVICE float tc_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/* x / y for f32 within 2 ulp (div.full.f32), as Triton's default division:
 * the IEEE-exact `/` costs a range check and a slow-path call per element,
 * which showed in the flash-attention epilogue (acc_o / logsum). */
TC_DEVICE float tc_fdiv(float x, float y) {
  float r;
  asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
  return r;
}

TC_DEVICE float tc_fmax(float a, float b) {
  float r;
  asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

/* Butterfly shuffle: the value of lane (lane ^ mask), full-warp mask. Every
 * lane of the warp must call it. */
TC_DEVICE float tc_shfl_xor(float v, int mask) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(mask));
  return r;
}

/* Reductions over the 4 lanes of a quad (lanes 4g..4g+3): with the mma
 * accumulator layout these lanes hold one row of D, so after reducing a lane's
 * own two columns, tc_quad_max/sum give the full row result in every lane of
 * the quad. Whole-warp versions reduce across all 32 lanes. */
TC_DEVICE float tc_quad_max(float v) {
  v = tc_fmax(v, tc_shfl_xor(v, 1));
  v = tc_fmax(v, tc_shfl_xor(v, 2));
  return v;
}

TC_DEVICE float tc_quad_sum(float v) {
  v += tc_shfl_xor(v, 1);
  v += tc_shfl_xor(v, 2);
  return v;
}

TC_DEVICE float tc_warp_max(float v) {
  for (int m = 16; m >= 1; m >>= 1) v = tc_fmax(v, tc_shfl_xor(v, m));
  return v;
}

TC_DEVICE float tc_warp_sum(float v) {
  for (int m = 16; m >= 1; m >>= 1) v += tc_shfl_xor(v, m);
  return v;
}

/* ---------------------------------------------------------------------------
 * 16-byte vector loads / stores (one instruction each). Addresses must be
 * 16-byte aligned. Global versions take generic pointers to global memory,
 * shared versions take .shared addresses (tc_smem_addr).
 * ------------------------------------------------------------------------- */

TC_DEVICE tc_u32x4 tc_ld_global_16(const void *p) {
  tc_u32x4 v;
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

TC_DEVICE void tc_st_global_16(void *p, tc_u32x4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

TC_DEVICE tc_u32x4 tc_ld_shared_16(unsigned smem) {
  tc_u32x4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(smem));
  return v;
}

TC_DEVICE void tc_st_shared_16(unsigned smem, tc_u32x4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(smem), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

#endif /* TILEC_DEVICE_CUH */
