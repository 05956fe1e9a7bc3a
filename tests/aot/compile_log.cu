// compile_log.cu - CUDA whose NVRTC log holds a warning of each kind, for the
// compile-log tests (CMakeLists.txt): compiled in place of the generated text
// of compile_log.tile through $TILEC_CUDA_OVERRIDE.
//   - NVRTC: warning #177-D, `unused_probe` is never read;
//   - ptxas: "Potential Performance Loss" (C7511 with NVRTC 13.0): the
//     accumulator is redefined by a plain load between two wgmmas of one
//     stage, so ptxas serializes them; and the info line C7519
//     ("warpgroup.arrive is injected"), which tilec does not print.
// The entry is compile_log.tile's kernel, so a GPU can load the cubin (it is
// never launched).
#define PROBE_WGMMA(d0, d1, d2, d3, da, db)                                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"                                \
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, " \
               "p, 1, 1, 0, 0;\n}\n"                                                      \
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)                                   \
               : "l"(da), "l"(db), "r"(1))

extern "C" __global__ void tilec_probe(float *out, long long n) {
  int unused_probe = 1;
  unsigned long long da = (unsigned long long)n, db = da + 64;
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  PROBE_WGMMA(d0, d1, d2, d3, da, db);
  d0 = out[1];
  PROBE_WGMMA(d0, d1, d2, d3, da + 2, db + 2);
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}
