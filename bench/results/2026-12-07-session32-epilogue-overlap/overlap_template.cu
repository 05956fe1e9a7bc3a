  tc_setmaxnreg_inc<240>();  // consumer warpgroups
  // HAND EDIT (session 32 prototype): each tile's epilogue runs during the
  // next tile's first wgmma, from the accumulator packed to bf16 (tc_P).
  tc_pipe[((long long)(0LL))] = (long long)(0LL);
  tc_held[((long long)(0LL))] = (long long)(0LL);
  unsigned tc_P[64];
  long long tc_prev_bx = -1, tc_prev_by = 0, tc_prev_stage = 0;
  for (long long tile = blockIdx.x; tile < (tc_ceildiv(N, 256LL) * tc_ceildiv(M, 128LL)); tile += gridDim.x) {  // persistent: this block's tiles
    const int tc_tid_tile = tc_opaque_tid(tc_tid);
    const int tc_tid = tc_tid_tile, tc_warp = tc_tid / 32, tc_lane = tc_tid % 32;
    (void)tc_warp; (void)tc_lane;
    const long long tile_panel = tc_fastdiv_div(tile, tc_fd[0]);
    const long long tile_in_panel = tc_fastdiv_mod(tile, tc_fd[0], (tc_ceildiv(N, 256LL) * 8LL));
    const long long tile_panel_rows = min(8LL, (tc_ceildiv(M, 128LL) - (tile_panel * 8LL)));
    const long long bx = (tile_in_panel / tile_panel_rows);
    const long long by = ((tile_panel * 8LL) + (tile_in_panel % tile_panel_rows));
    const unsigned long long pipe_base = tc_pipe[((long long)(0LL))];
    #pragma unroll
    for (int tc_e = 0; tc_e < 128; ++tc_e) C_local[tc_e] = (float)(0.0f);
    for (long long k = 0; k < tc_ceildiv(K, 64LL); ++k) {  // pipelined, 4 stages
      tc_mbar_wait(tc_smem_addr(A_shared_full + (((pipe_base + k) % 4LL))), (unsigned)((((pipe_base + k) / 4LL) % 2LL)));
      tc_gemm_wgmma_ss<tc_bf16_t, 128, 256, 64, 8, true, 2, false, 1>((A_shared + (((pipe_base + k) % 4LL)) * 8192), (B_shared + (((pipe_base + k) % 4LL)) * 16384), C_local, tc_warp);
      if ((k >= 1LL)) {
        __syncwarp(); if (tc_lane == 0) tc_mbar_arrive(tc_smem_addr(A_shared_empty + (((pipe_base + (k - 1LL)) % 4LL))));
      }
      if (k == 0 && tc_prev_bx >= 0) {
EPI
        tc_held[((long long)(0LL))] = tc_prev_stage + 1LL;
      }
      if ((k == 1LL)) {
        if ((tc_held[((long long)(0LL))] > 0LL)) {
          if (tc_tid == 0) { tc_tma_store_wait_read(); tc_mbar_arrive_count(tc_smem_addr(A_shared_empty + ((tc_held[((long long)(0LL))] - 1LL))), 8); }
          tc_held[((long long)(0LL))] = (long long)(0LL);
        }
      }
    }
    tc_wgmma_drain<256>(C_local);
    if ((tc_held[((long long)(0LL))] > 0LL)) {
      if (tc_tid == 0) { tc_tma_store_wait_read(); tc_mbar_arrive_count(tc_smem_addr(A_shared_empty + ((tc_held[((long long)(0LL))] - 1LL))), 8); }
      tc_held[((long long)(0LL))] = (long long)(0LL);
    }
    #pragma unroll
    for (int tc_j = 0; tc_j < 64; ++tc_j) tc_P[tc_j] = tc_pack_bf16x2(C_local[2 * tc_j], C_local[2 * tc_j + 1]);
    tc_prev_bx = bx; tc_prev_by = by; tc_prev_stage = (long long)((pipe_base + tc_ceildiv(K, 64LL) - 1LL) % 4LL);
    tc_pipe[((long long)(0LL))] = (long long)((pipe_base + tc_ceildiv(K, 64LL)));
  }
  if (tc_prev_bx >= 0) {
    const int tc_tid_tile = tc_opaque_tid(tc_tid);
    const int tc_tid = tc_tid_tile, tc_warp = tc_tid / 32, tc_lane = tc_tid % 32;
    (void)tc_warp; (void)tc_lane;
EPI
  }
