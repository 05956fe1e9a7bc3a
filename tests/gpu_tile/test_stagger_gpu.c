/* test_stagger_gpu.c - tc_stagger_wait / go / end (runtime/device/
 * tilec_warp_roles.cuh) when warpgroup 1 arrives late, the order that
 * deadlocked them while the end link shared the start's named barrier
 * (stagger_kernels.cu says how). Runs 3 rounds with warpgroup 1 asleep for
 * 2 ms before each start link, and 50 rounds without the sleep; every one
 * of the 256 threads must finish. A deadlock hangs the launch: the test's
 * ctest TIMEOUT (60 s) fails it.
 *   test_stagger_gpu            (label gpu) on an sm_90 GPU
 *   test_stagger_gpu --nvrtc    (CI) only compiles the kernel for sm_90a
 * Exit 77 (skip) without libnvrtc or an sm_90 GPU. */
#include <stdint.h>

#include "cuda_driver.h"
#include "tile_test.h"

extern const char stagger_kernels_name[];
extern const char stagger_kernels_text[];

static void run(RtCuda *cu, RtCuModule mod, int rounds, int sleep_us) {
  RtCuFunction fn = NULL;
  RtCuDevPtr done = 0;
  int host = 0;
  bool ok = rt_cuda_get_function(cu, mod, "tc_test_stagger", &fn) && rt_cuda_malloc(cu, sizeof host, &done) &&
            rt_cuda_memcpy_htod(cu, done, &host, sizeof host);
  void *params[] = {&rounds, &sleep_us, &done};
  unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
  ok = ok && rt_cuda_launch_kernel(cu, fn, grid, block, 0, NULL, params) && rt_cuda_synchronize(cu) &&
       rt_cuda_memcpy_dtoh(cu, &host, done, sizeof host);
  CHECK_MSG(ok, "stagger, %d rounds, %d us: %s", rounds, sleep_us, rt_cuda_last_error(cu));
  CHECK_MSG(!ok || host == 256, "stagger, %d rounds, %d us: %d of 256 threads finished", rounds, sleep_us, host);
  rt_cuda_free(cu, done);
}

int main(int argc, char **argv) {
  bool nvrtc_only = argc > 1 && strcmp(argv[1], "--nvrtc") == 0;
  RtCuda *cu = tile_open_sm90(nvrtc_only, true, "the stagger links");
  if (!cu) return TEST_SKIP;
  void *cubin = NULL;
  size_t size = 0;
  RtCuModule mod = NULL;
  bool ok = tile_compile_clean(cu, stagger_kernels_text, stagger_kernels_name, "sm_90a", &cubin, &size);
  if (ok && !nvrtc_only) {
    ok = rt_cuda_module_load(cu, cubin, size, &mod);
    CHECK_MSG(ok, "load: %s", rt_cuda_last_error(cu));
    if (ok) {
      run(cu, mod, 3, 2000);
      run(cu, mod, 50, 0);
      rt_cuda_module_unload(cu, mod);
    }
  }
  free(cubin);
  rt_cuda_close(cu);
  printf("%s\n", test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
