// emu_driver.cpp - the tile_emulated test: test_tile_gpu.c, unchanged, linked
// against this host stand-in for runtime/cuda/cuda_driver.c.
//
// The kernels of tile_kernels.cu (with the GPU test's instantiations, written
// by emu_gen) are compiled here by the host C++ compiler on top of
// emu_device.h; "device memory" is host memory; a launch runs one block as
// 128 threads. Only the rt_cuda_* calls test_tile_gpu.c makes exist.
#include "emu_device.h" // first: stands in for tilec_device.cuh

#include <functional>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "cuda_driver.h"
}

struct EmuKernel {
  const char *name;
  void *fn;
};

thread_local EmuIdx emu_thread_idx;
pthread_barrier_t emu_block_barrier;
alignas(128) unsigned char emu_shared[232448]; // an H100's opt-in maximum
const unsigned emu_shared_bytes = sizeof emu_shared;
unsigned emu_addr_table[4][32];
unsigned emu_frag_table[4][32][6];

// tile_kernels.cu declares its dynamic shared memory `extern tile_smem[]`.
#define tile_smem emu_shared
#include "emu_kernels_gen.cu"
#undef tile_smem

typedef unsigned short u16;
typedef long long i64;

struct RtCuda {
  std::string error;
};

// Which kernel rt_cuda_set_max_dynamic_smem / launch refer to: the test
// always calls get_function right before launching.
static const EmuKernel *emu_current;

extern "C" {

RtCuda *rt_cuda_open(RtCudaMode, int, char *, size_t) { return new RtCuda; }
void rt_cuda_close(RtCuda *cu) { delete cu; }
const char *rt_cuda_last_error(const RtCuda *cu) { return cu->error.c_str(); }
int rt_cuda_arch(const RtCuda *) { return 80; }
void rt_cuda_target(int, char out[16]) { snprintf(out, 16, "sm_80"); }
const char *rt_cuda_device_name(const RtCuda *) { return "host emulation (emu_device.h)"; }
int rt_cuda_nvrtc_version(const RtCuda *) { return 0; }
bool rt_cuda_nvrtc_load(RtCuda *) { return true; } // nothing to open: no NVRTC here

bool rt_cuda_compile(RtCuda *, const char *, const char *, const char *, const char *const *, int,
                     void **cubin, size_t *size) {
  *cubin = malloc(1); // the kernels are already compiled in
  *size = 1;
  return *cubin != NULL;
}
bool rt_cuda_module_load(RtCuda *, const void *, size_t, RtCuModule *out) {
  *out = (void *)emu_kernels;
  return true;
}
void rt_cuda_module_unload(RtCuda *, RtCuModule) {}

bool rt_cuda_get_function(RtCuda *cu, RtCuModule, const char *name, RtCuFunction *out) {
  for (const EmuKernel *k = emu_kernels; k->name; k++)
    if (strcmp(k->name, name) == 0) {
      emu_current = k;
      *out = (void *)k;
      return true;
    }
  cu->error = std::string("no kernel named ") + name;
  return false;
}

bool rt_cuda_set_max_dynamic_smem(RtCuda *cu, RtCuFunction, size_t bytes) {
  if (bytes <= sizeof emu_shared) return true;
  cu->error = "more dynamic shared memory than a device has";
  return false;
}

static bool starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

bool rt_cuda_launch_kernel(RtCuda *cu, RtCuFunction fn, const unsigned *, const unsigned *block,
                           size_t, RtCuStream, void **p) {
  const EmuKernel *k = (const EmuKernel *)fn;
  if (block[0] != 128 || block[1] != 1 || block[2] != 1) {
    cu->error = "the emulation runs blocks of 128 threads";
    return false;
  }
// Parameter i of type T, and a device pointer parameter as T.
#define ARG(i, T) (*(T *)p[i])
#define PTR(i, T) ((T)(uintptr_t)ARG(i, RtCuDevPtr))
  std::function<void()> body;
  if (strcmp(k->name, "tile_misc") == 0) {
    auto f = (void (*)(int *, const i64 *, const i64 *, int, i64 *))k->fn;
    body = [=] { f(PTR(0, int *), PTR(1, const i64 *), PTR(2, const i64 *), ARG(3, int), PTR(4, i64 *)); };
  } else if (starts(k->name, "tile_copy_")) {
    auto f = (void (*)(const u16 *, i64, int, int, int, int, u16 *))k->fn;
    body = [=] {
      f(PTR(0, const u16 *), ARG(1, i64), ARG(2, int), ARG(3, int), ARG(4, int), ARG(5, int), PTR(6, u16 *));
    };
  } else if (starts(k->name, "tile_copy8_")) {
    auto f = (void (*)(const unsigned char *, i64, int, int, unsigned char *))k->fn;
    body = [=] { f(PTR(0, const unsigned char *), ARG(1, i64), ARG(2, int), ARG(3, int), PTR(4, unsigned char *)); };
  } else if (starts(k->name, "tile_ss_")) {
    auto f = (void (*)(const u16 *, i64, int, int, const u16 *, i64, int, int, float *, u16 *))k->fn;
    body = [=] {
      f(PTR(0, const u16 *), ARG(1, i64), ARG(2, int), ARG(3, int), PTR(4, const u16 *), ARG(5, i64),
        ARG(6, int), ARG(7, int), PTR(8, float *), PTR(9, u16 *));
    };
  } else if (starts(k->name, "tile_rs_")) {
    auto f = (void (*)(const u16 *, const u16 *, const u16 *, int, int, float *, float *))k->fn;
    body = [=] {
      f(PTR(0, const u16 *), PTR(1, const u16 *), PTR(2, const u16 *), ARG(3, int), ARG(4, int),
        PTR(5, float *), PTR(6, float *));
    };
  } else {
    cu->error = std::string("no parameter list known for ") + k->name;
    return false;
  }
#undef ARG
#undef PTR
  memset(emu_shared, 0xcd, sizeof emu_shared); // fresh, garbage shared memory
  pthread_barrier_init(&emu_block_barrier, NULL, 128);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 128; t++)
    threads.emplace_back([=] {
      emu_thread_idx = EmuIdx{t, 0, 0};
      body();
    });
  for (std::thread &t : threads) t.join();
  pthread_barrier_destroy(&emu_block_barrier);
  return true;
}

bool rt_cuda_synchronize(RtCuda *) { return true; }

// Exact-size allocations (16-byte aligned, as cp.async needs), so a
// sanitizer build catches reads past the end.
bool rt_cuda_malloc(RtCuda *cu, size_t bytes, RtCuDevPtr *out) {
  void *m = malloc(bytes);
  if (!m) cu->error = "out of memory";
  *out = (RtCuDevPtr)(uintptr_t)m;
  return m != NULL;
}
void rt_cuda_free(RtCuda *, RtCuDevPtr p) { free((void *)(uintptr_t)p); }
bool rt_cuda_memcpy_htod(RtCuda *, RtCuDevPtr dst, const void *src, size_t bytes) {
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return true;
}
bool rt_cuda_memcpy_dtoh(RtCuda *, void *dst, RtCuDevPtr src, size_t bytes) {
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return true;
}
bool rt_cuda_memset(RtCuda *, RtCuDevPtr dst, unsigned char byte, size_t bytes) {
  memset((void *)(uintptr_t)dst, byte, bytes);
  return true;
}

} // extern "C"
