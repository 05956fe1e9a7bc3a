// helpers_kernel.cu - test kernels that use every helper of tilec_device.cuh.
//
// Compiled with NVRTC for sm_80 and sm_90a by test_nvrtc_compile (no GPU),
// and run by test_gpu_helpers (label gpu), which checks every output against
// a CPU reference. Launch: one block of exactly 32 threads (one warp).
#include "tilec_device.cuh"

// One warp computes D = A (16x16) * B (16x8) with mma.sync five times, each
// time getting the fragments through a different ldmatrix form:
//   D[0]  A: x4 (swizzled, cp.async'd, partial)  B: x2.trans from B  ([k][n])
//   D[1]  A: x4                                   B: x1 twice from Bt ([n][k])
//   D[2]  A: x4                                   B: x2 from Bt
//   D[3]  A: x4.trans from At ([k][m])            B: x2.trans from B
//   D[4]  A: x4                                   B: x1.trans twice from B
// A exists in global memory only for rows < a_rows (row stride 16), and only
// columns < a_cols may be read: the rest of the tile must be zero-filled by
// cp.async (columns a_cols..15 hold poison in global memory). At is the
// transpose of the zero-padded A.
template <bool BF16>
__device__ void tc_test_mma_body(const tc_half *A, int a_rows, int a_cols, const tc_half *At,
                                 const tc_half *B, const tc_half *Bt, float *D, float *rowstat,
                                 float *total, unsigned *Dh, float *Dr, tc_half *smem_dump,
                                 tc_half *Bcopy) {
  __shared__ alignas(128) tc_half sA[16 * 16];  // 16 rows x 2 chunks, swizzled
  __shared__ alignas(128) tc_half sAt[16 * 16]; // 16 rows (k) x 2 chunks, swizzled
  __shared__ alignas(128) tc_half sB[16 * 8];   // 16 rows (k) x 1 chunk
  __shared__ alignas(128) tc_half sBt[8 * 16];  // 8 rows (n) x 2 chunks, swizzled
  // tc_opaque_tid returns its argument (every result below depends on lane).
  const unsigned lane = (unsigned)tc_opaque_tid((int)tc_lane_id());
  const unsigned a_s = tc_smem_addr(sA), at_s = tc_smem_addr(sAt);
  const unsigned b_s = tc_smem_addr(sB), bt_s = tc_smem_addr(sBt);

  // Poison sA so that a missing zero fill shows up in the results.
  tc_u32x4 poison = {0x7e007e00u, 0x7e007e00u, 0x7e007e00u, 0x7e007e00u};
  tc_st_shared_16(a_s + 16 * lane, poison);
  tc_syncthreads();

  // Group 1: A, one 16-byte chunk per lane, partial rows/columns zero-filled.
  {
    unsigned row = lane / 2, chunk = lane % 2;
    int cols = a_cols - 8 * (int)chunk;
    unsigned nbytes = (int)row < a_rows ? (cols >= 8 ? 16u : cols > 0 ? 2u * cols : 0u) : 0u;
    const tc_half *src = (int)row < a_rows ? A + row * 16 + chunk * 8 : A;
    unsigned dst = a_s + 16 * tc_swizzle_offset(row, chunk, 2);
    if (nbytes == 16 || nbytes == 0)
      tc_cp_async_16(dst, src, nbytes == 16);
    else
      tc_cp_async_16_bytes(dst, src, nbytes);
  }
  tc_cp_async_commit();
  // Group 2: B (lanes 0-15), Bt (lanes 16-31) and At (one chunk per lane).
  if (lane < 16) {
    tc_cp_async_16_ca(b_s + 16 * tc_swizzle_offset(lane, 0, 1), B + lane * 8, true);
  } else {
    unsigned i = lane - 16, row = i / 2, chunk = i % 2;
    tc_cp_async_16_ca_bytes(bt_s + 16 * tc_swizzle_offset(row, chunk, 2), Bt + row * 16 + chunk * 8,
                            16);
  }
  tc_cp_async_16_full(at_s + 16 * tc_swizzle_offset(lane / 2, lane % 2, 2), At + (lane / 2) * 16 + (lane % 2) * 8);
  tc_cp_async_commit();
  tc_cp_async_wait<1>(); // group 1 (A) has landed
  tc_cp_async_wait<0>(); // and group 2
  tc_syncthreads();

  // Programmatic dependent launch: no dependency here (a plain launch), so
  // the wait returns at once; sm_80 compiles both to nothing.
  tc_pdl_wait();
  tc_pdl_trigger();
  // The raw shared tile, for checking the swizzle and the zero fill.
  tc_st_global_16(smem_dump + 8 * lane, tc_ld_shared_16(a_s + 16 * lane));
  // 16-byte global loads/stores: copy B.
  // (tc_opaque, tc_opaque_ll: the branch must still select lanes 0-15; lanes 16-31 writing
  // would run past Bcopy's 128 elements, which memcheck reports.)
  if (tc_opaque(lane < tc_opaque_ll(16))) tc_st_global_16(Bcopy + 8 * lane, tc_ld_global_16(B + 8 * lane));

  // A fragment: lane supplies row (lane%8) of matrix lane/8.
  unsigned m = lane / 8, r = lane % 8;
  unsigned a[4], at[4], b[5][2];
  tc_ldmatrix_x4(a, a_s + 16 * tc_swizzle_offset(r + 8 * (m % 2), m / 2, 2));
  // Transposed A: matrix m is At rows k = r + 8*(m/2), column chunk m%2.
  tc_ldmatrix_x4_trans(at, at_s + 16 * tc_swizzle_offset(r + 8 * (m / 2), m % 2, 2));
  tc_ldmatrix_x2_trans(b[0], b_s + 16 * tc_swizzle_offset(lane % 16, 0, 1));
  tc_ldmatrix_x1(&b[1][0], bt_s + 16 * tc_swizzle_offset(r, 0, 2));
  tc_ldmatrix_x1(&b[1][1], bt_s + 16 * tc_swizzle_offset(r, 1, 2));
  tc_ldmatrix_x2(b[2], bt_s + 16 * tc_swizzle_offset(r, (lane / 8) % 2, 2));
  tc_ldmatrix_x1_trans(&b[4][0], b_s + 16 * tc_swizzle_offset(r, 0, 1));
  tc_ldmatrix_x1_trans(&b[4][1], b_s + 16 * tc_swizzle_offset(8 + r, 0, 1));
  b[3][0] = b[0][0];
  b[3][1] = b[0][1];

  float d[5][4];
  for (int v = 0; v < 5; v++) {
    for (int i = 0; i < 4; i++) d[v][i] = 0.0f;
    const unsigned *af = v == 3 ? at : a;
    if (BF16)
      tc_mma_m16n8k16_bf16f32(d[v], af, b[v]);
    else
      tc_mma_m16n8k16_f16f32(d[v], af, b[v]);
    for (int i = 0; i < 4; i++)
      D[v * 128 + tc_acc_row(lane, i) * 8 + tc_acc_col(lane, i)] = d[v][i];
  }

  // Row statistics of D[0] as softmax computes them: max, then sum of 2^(x-max).
  for (int h = 0; h < 2; h++) {
    float mx = tc_quad_max(tc_fmax(d[0][2 * h], d[0][2 * h + 1]));
    float s = tc_quad_sum(tc_exp2(d[0][2 * h] - mx) + tc_exp2(d[0][2 * h + 1] - mx));
    if (lane % 4 == 0) {
      rowstat[tc_acc_row(lane, 2 * h)] = mx;
      rowstat[16 + tc_acc_row(lane, 2 * h)] = s;
    }
  }
  float all_sum = tc_warp_sum(d[0][0] + d[0][1] + d[0][2] + d[0][3]);
  float all_max = tc_warp_max(tc_fmax(tc_fmax(d[0][0], d[0][1]), tc_fmax(d[0][2], d[0][3])));
  float neighbour = tc_shfl_xor((float)lane, 5); // lane ^ 5
  if (lane == 0) {
    total[0] = all_sum;
    total[1] = all_max;
    total[2] = neighbour;
  }
  if (lane == tc_warp_uniform(lane) + 6) total[3] = neighbour; // lane 0's value: 0 in every lane
  // tc_warp_all_one: 1.0 in every lane's two values, then one lane's 0.5.
  const float ones[2] = {1.0f, 1.0f}, one_off[2] = {1.0f, lane == 13 ? 0.5f : 1.0f};
  const bool all_one = tc_warp_all_one<2>(ones), not_all = tc_warp_all_one<2>(one_off);
  if (lane == 0) {
    total[4] = all_one ? 1.0f : 0.0f;
    total[5] = not_all ? 1.0f : 0.0f;
  }

  // D[0] back to 16 bits, packed pairs (low half = even column), and the
  // scalar conversion round-tripped to f32.
  for (int h = 0; h < 2; h++) {
    float lo = d[0][2 * h], hi = d[0][2 * h + 1];
    int idx = tc_acc_row(lane, 2 * h) * 8 + tc_acc_col(lane, 2 * h);
    Dh[idx / 2] = BF16 ? tc_pack_bf16x2(lo, hi) : tc_pack_f16x2(lo, hi);
    if (h == 0) { // the pair conversion (one packed cvt, two 16-bit results)
      unsigned short plo, phi, pair[2], back[2];
      if (BF16) tc_f32x2_to_bf16x2(lo, hi, plo, phi);
      else tc_f32x2_to_f16x2(lo, hi, plo, phi);
      // The pair forms (overlap-wgmma's P: converted and stored as one
      // 32-bit pair, read back as one by tc_gemm_wgmma_rs) must give the
      // packed pair's bits.
      if (BF16) tc_f32x2_to_bf16x2_at(lo, hi, pair);
      else tc_f32x2_to_f16x2_at(lo, hi, pair);
      tc_store_pair(back, tc_load_pair(pair));
      Dh[idx / 2] = tc_pack2(back[0], back[1]);
      Dr[idx] = BF16 ? tc_bf16_to_f32(plo) : tc_f16_to_f32(plo);
      Dr[idx + 1] = BF16 ? tc_bf16_to_f32(phi) : tc_f16_to_f32(phi);
    } else { // one at a time
      Dr[idx] = BF16 ? tc_bf16_to_f32(tc_f32_to_bf16(lo)) : tc_f16_to_f32(tc_f32_to_f16(lo));
      Dr[idx + 1] = BF16 ? tc_bf16_to_f32(tc_f32_to_bf16(hi)) : tc_f16_to_f32(tc_f32_to_f16(hi));
    }
  }
}

extern "C" __global__ void tc_test_mma_f16(const tc_half *A, int a_rows, int a_cols,
                                           const tc_half *At, const tc_half *B, const tc_half *Bt,
                                           float *D, float *rowstat, float *total, unsigned *Dh,
                                           float *Dr, tc_half *smem_dump, tc_half *Bcopy) {
  tc_test_mma_body<false>(A, a_rows, a_cols, At, B, Bt, D, rowstat, total, Dh, Dr, smem_dump,
                          Bcopy);
}

extern "C" __global__ void tc_test_mma_bf16(const tc_bf16 *A, int a_rows, int a_cols,
                                            const tc_bf16 *At, const tc_bf16 *B, const tc_bf16 *Bt,
                                            float *D, float *rowstat, float *total, unsigned *Dh,
                                            float *Dr, tc_bf16 *smem_dump, tc_bf16 *Bcopy) {
  tc_test_mma_body<true>(A, a_rows, a_cols, At, B, Bt, D, rowstat, total, Dh, Dr, smem_dump,
                         Bcopy);
}

// Scalar conversions with rounding edge cases, packing, and exp2; one
// element per thread, any launch shape.
//   out16[i] = pack2(f16(x), bf16(x));  back[2i] = f32(f16(x)), back[2i+1] = f32(bf16(x))
//   ex[i] = 2^x (via tc_fdiv(3 * 2^x, 3))
extern "C" __global__ void tc_test_convert(const float *in, int n, unsigned *out16, float *back,
                                           float *ex) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  unsigned p = tc_pack2(tc_f32_to_f16(x), tc_f32_to_bf16(x));
  out16[i] = p;
  back[2 * i] = tc_f16_to_f32(tc_unpack_lo(p));
  back[2 * i + 1] = tc_bf16_to_f32(tc_unpack_hi(p));
  ex[i] = tc_fdiv(3.0f * tc_exp2(x), 3.0f); /* exp2, through the 2-ulp division */
}

// Column-pair atomic adds: thread i adds (i + 1, 1000 * (i + 1)) at
// dst + start[i] (has_b = has[i]); 64 threads hit the same 8 pairs, so the
// sums depend on every reduction landing. Odd starts take the two-atomicAdd
// path, even ones the 8-byte vector reduction on sm_90.
extern "C" __global__ void tc_test_store_pairs(float *dst, tc_half *dst16, tc_bf16 *dst_bf16, const int *start,
                                               const int *has, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float a = (float)(i + 1) + 1.0f / 3.0f, b = -1000.0f * (float)(i + 1) - 1.0f / 7.0f; /* both round */
  tc_store_f32x2(dst + start[i], a, b, has[i] != 0);
  tc_store_f16x2(dst16 + start[i], a, b, has[i] != 0);
  tc_store_bf16x2(dst_bf16 + start[i], a, b, has[i] != 0);
}

extern "C" __global__ void tc_test_atomic_pairs(float *dst, const int *start, const int *has, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  tc_atomic_add_f32x2(dst + start[i], (float)(i + 1), 1000.0f * (float)(i + 1), has[i] != 0);
}

// stmatrix.x4 (sm_90; the staged epilogue's stores): one warp stores four
// 8 x 8 tiles of 16-bit codes; lane l's register i holds codes 8 l + 2 i and
// 8 l + 2 i + 1. Tile i's row j goes where lane 8 i + j points, rows in
// reverse order (row 7 - j of the tile's block), so a lane whose address
// was ignored or a swapped half shows in the raw dump out[256].
extern "C" __global__ void tc_test_stmatrix(unsigned short *out) {
  __shared__ alignas(128) unsigned short tiles[4 * 8 * 8];
  const unsigned lane = (unsigned)tc_opaque_tid((int)tc_lane_id());
  unsigned r[4];
  for (int i = 0; i < 4; i++) r[i] = (8u * lane + 2u * i) | ((8u * lane + 2u * i + 1u) << 16);
  tc_stmatrix_x4(&tiles[((lane / 8) * 8 + (7 - lane % 8)) * 8], r[0], r[1], r[2], r[3]);
  __syncwarp();
  for (unsigned k = lane; k < 4 * 8 * 8; k += 32) out[k] = tiles[k];
}
