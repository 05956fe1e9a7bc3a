/* cuda_driver.c - libcuda + libnvrtc through dlopen/dlsym (see cuda_driver.h).
 *
 * How: rt_cuda_open dlopens the libraries and fills a table of function
 * pointers, declared here with our own minimal types so no CUDA header or
 * import library is needed at build time. Driver calls go through CU_CHECK,
 * which on failure records the call's text, file:line and the driver's error
 * name and string in the handle (Triton's gpuAssert idea). rt_cuda_compile
 * keeps NVRTC's log and annotates every `name(LINE): ...` message with that
 * line of the source (or of the embedded device header).
 * The libraries are opened RTLD_NODELETE: the driver keeps threads and
 * static state alive after close, so unloading them is never safe (and
 * LeakSanitizer then sees their static buffers as still reachable).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "cuda_driver.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the few CUDA driver / NVRTC types we need (ABI-stable C types) ---- */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef int nvrtcResult;
typedef void *nvrtcProgram;

enum {
  RT_CUDA_SUCCESS = 0,
  RT_CUDA_ERROR_NO_DEVICE = 100,
  RT_CU_ATTR_MAJOR = 75,       /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
  RT_CU_ATTR_MINOR = 76,       /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
  RT_CU_ATTR_SMEM_OPTIN = 97,  /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  RT_CU_ATTR_SM_COUNT = 16,    /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
  RT_CU_FUNC_MAX_DYN_SMEM = 8, /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  RT_CUDA_DEFAULT_SMEM = 48 * 1024,
};

/* cuTensorMapEncodeTiled's enums (CUtensorMapDataType, ...), by value. */
enum {
  RT_CU_TMAP_UINT8 = 0,
  RT_CU_TMAP_UINT16 = 1,
  RT_CU_TMAP_UINT32 = 2,
  RT_CU_TMAP_UINT64 = 4,
  RT_CU_TMAP_INTERLEAVE_NONE = 0,
  RT_CU_TMAP_SWIZZLE_NONE = 0, /* 32B = 1, 64B = 2, 128B = 3 */
  RT_CU_TMAP_L2_PROMOTION_NONE = 0, /* 64B = 1, 128B = 2, 256B = 3 */
  RT_CU_TMAP_L2_PROMOTION_128B = 2,
  RT_CU_TMAP_OOB_FILL_NONE = 0, /* out-of-bounds elements read as zero */
};
/* CUlaunchConfig (cuda.h), for cuOccupancyMaxActiveClusters and cuLaunchKernelEx. */
typedef struct RtCuLaunchConfig {
  unsigned grid[3], block[3], smem;
  RtCuStream stream;
  void *attrs;
  unsigned nattrs;
} RtCuLaunchConfig;
typedef CUresult (*RtCuOccupancyMaxActiveClustersFn)(int *n, RtCuFunction f, const RtCuLaunchConfig *config);
/* CUlaunchAttribute (cuda.h): the id, padding to 8 bytes, a 64-byte union
 * of values; CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION is 6 and
 * takes an int (programmaticStreamSerializationAllowed). */
typedef struct RtCuLaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic_stream_serialization;
  } value;
} RtCuLaunchAttribute;
enum { RT_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6 };
typedef CUresult (*RtCuLaunchKernelExFn)(const RtCuLaunchConfig *config, RtCuFunction f, void **params,
                                         void **extra);
typedef CUresult (*RtCuTensorMapEncodeTiledFn)(void *map, int data_type, unsigned rank, void *base,
                                               const uint64_t *dims, const uint64_t *strides,
                                               const uint32_t *box, const uint32_t *elem_strides,
                                               int interleave, int swizzle, int l2_promotion,
                                               int oob_fill);

/* CUDA_MEMCPY2D (cuda.h, CUDA_MEMCPY2D_v2 since CUDA 3.2: size_t extents and
 * pitches), for cuMemcpy2DAsync_v2. Field for field as cuda.h declares it;
 * CUmemorytype is an enum (int), CUarray a pointer, CUdeviceptr 64 bits. */
typedef struct RtCuMemcpy2D {
  size_t srcXInBytes, srcY;
  int srcMemoryType; /* CUmemorytype */
  const void *srcHost;
  RtCuDevPtr srcDevice;
  void *srcArray; /* CUarray */
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  RtCuDevPtr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} RtCuMemcpy2D;
enum { RT_CU_MEMORYTYPE_DEVICE = 2 }; /* CU_MEMORYTYPE_DEVICE */

/* X(return type, name as called here, symbol in the library, parameters) */
#define RT_CUDA_DRIVER_FNS(X)                                                                    \
  X(CUresult, cuInit, "cuInit", (unsigned flags))                                                \
  X(CUresult, cuDriverGetVersion, "cuDriverGetVersion", (int *v))                                \
  X(CUresult, cuGetErrorName, "cuGetErrorName", (CUresult e, const char **s))                    \
  X(CUresult, cuGetErrorString, "cuGetErrorString", (CUresult e, const char **s))                \
  X(CUresult, cuDeviceGetCount, "cuDeviceGetCount", (int *n))                                    \
  X(CUresult, cuDeviceGet, "cuDeviceGet", (CUdevice * d, int ordinal))                           \
  X(CUresult, cuDeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice d))             \
  X(CUresult, cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *v, int attr, CUdevice d))      \
  X(CUresult, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext * c, CUdevice d)) \
  X(CUresult, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice d))           \
  X(CUresult, cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext c))                                 \
  X(CUresult, cuCtxSynchronize, "cuCtxSynchronize", (void))                                      \
  X(CUresult, cuModuleLoadData, "cuModuleLoadData", (RtCuModule * m, const void *image))         \
  X(CUresult, cuModuleUnload, "cuModuleUnload", (RtCuModule m))                                  \
  X(CUresult, cuModuleGetFunction, "cuModuleGetFunction",                                        \
    (RtCuFunction * f, RtCuModule m, const char *name))                                          \
  X(CUresult, cuFuncSetAttribute, "cuFuncSetAttribute", (RtCuFunction f, int attr, int value))   \
  X(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor,                                       \
    "cuOccupancyMaxActiveBlocksPerMultiprocessor", (int *n, RtCuFunction f, int threads, size_t smem)) \
  X(CUresult, cuLaunchKernel, "cuLaunchKernel",                                                  \
    (RtCuFunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,            \
     unsigned bz, unsigned smem, RtCuStream s, void **params, void **extra))                     \
  X(CUresult, cuMemAlloc, "cuMemAlloc_v2", (RtCuDevPtr * p, size_t n))                           \
  X(CUresult, cuMemFree, "cuMemFree_v2", (RtCuDevPtr p))                                         \
  X(CUresult, cuMemcpyHtoD, "cuMemcpyHtoD_v2", (RtCuDevPtr dst, const void *src, size_t n))      \
  X(CUresult, cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *dst, RtCuDevPtr src, size_t n))            \
  X(CUresult, cuMemsetD8, "cuMemsetD8_v2", (RtCuDevPtr dst, unsigned char v, size_t n))          \
  X(CUresult, cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", (const RtCuMemcpy2D *p, RtCuStream s))      \
  X(CUresult, cuEventCreate, "cuEventCreate", (RtCuEvent * e, unsigned flags))                    \
  X(CUresult, cuEventDestroy, "cuEventDestroy_v2", (RtCuEvent e))                                 \
  X(CUresult, cuEventRecord, "cuEventRecord", (RtCuEvent e, RtCuStream s))                        \
  X(CUresult, cuStreamWaitEvent, "cuStreamWaitEvent", (RtCuStream s, RtCuEvent e, unsigned flags))

#define RT_NVRTC_FNS(X)                                                                          \
  X(nvrtcResult, nvrtcVersion, "nvrtcVersion", (int *major, int *minor))                         \
  X(const char *, nvrtcGetErrorString, "nvrtcGetErrorString", (nvrtcResult r))                   \
  X(nvrtcResult, nvrtcCreateProgram, "nvrtcCreateProgram",                                       \
    (nvrtcProgram * p, const char *src, const char *name, int nheaders, const char *const *hdrs, \
     const char *const *hdr_names))                                                              \
  X(nvrtcResult, nvrtcDestroyProgram, "nvrtcDestroyProgram", (nvrtcProgram * p))                 \
  X(nvrtcResult, nvrtcCompileProgram, "nvrtcCompileProgram",                                     \
    (nvrtcProgram p, int nopts, const char *const *opts))                                        \
  X(nvrtcResult, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", (nvrtcProgram p, size_t *n))  \
  X(nvrtcResult, nvrtcGetProgramLog, "nvrtcGetProgramLog", (nvrtcProgram p, char *log))          \
  X(nvrtcResult, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", (nvrtcProgram p, size_t *n))            \
  X(nvrtcResult, nvrtcGetCUBIN, "nvrtcGetCUBIN", (nvrtcProgram p, char *cubin))          \
  X(nvrtcResult, nvrtcGetPTXSize, "nvrtcGetPTXSize", (nvrtcProgram p, size_t *n))              \
  X(nvrtcResult, nvrtcGetPTX, "nvrtcGetPTX", (nvrtcProgram p, char *ptx))

struct RtCuda {
  void *libcuda, *libnvrtc;
#define X(ret, name, sym, params) ret(*name) params;
  RT_CUDA_DRIVER_FNS(X)
  RT_NVRTC_FNS(X)
#undef X
  /* Optional (CUDA 12+ drivers): NULL when the driver lacks it. */
  RtCuTensorMapEncodeTiledFn cuTensorMapEncodeTiled;
  RtCuOccupancyMaxActiveClustersFn cuOccupancyMaxActiveClusters;
  RtCuLaunchKernelExFn cuLaunchKernelEx; /* CUDA 12: programmatic dependent launch */
  bool has_device, ctx_retained;
  CUdevice dev;
  CUcontext ctx;
  int arch, smem_optin, sm_count, nvrtc_version;
  int tma_l2_promotion; /* CUtensorMapL2promotion of every tensor map ($TILEC_TMA_L2_PROMOTION) */
  bool nvrtc_tried; /* rt_cuda_nvrtc_load ran (and failed, when !libnvrtc) */
  char *nvrtc_path; /* the file the loader opened (dladdr), malloc'd */
  char nvrtc_why[256]; /* why libnvrtc could not be opened */
  char device_name[128];
  char *err; /* last error text, malloc'd; "" when none */
  char *log; /* last NVRTC log, annotated */
};

/* rt_cuda_device_headers[] is generated by runtime/cuda/CMakeLists.txt. */
static int rt_cuda_header_count(void) {
  int n = 0;
  while (rt_cuda_device_headers[n].name) n++;
  return n;
}

const char *rt_cuda_device_header(const char *name) {
  for (const RtCudaHeader *h = rt_cuda_device_headers; h->name; h++)
    if (strcmp(h->name, name) == 0) return h->text;
  return NULL;
}

/* ---------------------------------------------------------------- errors */

static char *rt_cuda_vformat(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) n = 0;
  char *s = malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void rt_cuda_seterr(RtCuda *cu, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = rt_cuda_vformat(fmt, ap);
  va_end(ap);
  if (!s) return; /* keep the old text rather than lose everything */
  free(cu->err);
  cu->err = s;
}

static const char *rt_cuda_basename(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* CU_CHECK(cu, cuMemAlloc(&p, n)): calls cu->cuMemAlloc(&p, n); on failure
 * records "cuMemAlloc(&p, n) failed at cuda_driver.c:123: CUDA_ERROR_... (text)". */
#define CU_CHECK(cu, call) rt_cuda_check((cu), (cu)->call, #call, __FILE__, __LINE__)

static bool rt_cuda_check(RtCuda *cu, CUresult r, const char *call, const char *file, int line) {
  if (r == RT_CUDA_SUCCESS) return true;
  const char *name = NULL, *text = NULL;
  if (cu->cuGetErrorName) cu->cuGetErrorName(r, &name);
  if (cu->cuGetErrorString) cu->cuGetErrorString(r, &text);
  rt_cuda_seterr(cu, "%s failed at %s:%d: %s (%s)", call, rt_cuda_basename(file), line,
                 name ? name : "CUDA_ERROR_UNKNOWN", text ? text : "no description");
  return false;
}

#define NVRTC_CHECK(cu, call) rt_nvrtc_check((cu), (cu)->call, #call, __FILE__, __LINE__)

static bool rt_nvrtc_check(RtCuda *cu, nvrtcResult r, const char *call, const char *file,
                           int line) {
  if (r == 0) return true;
  rt_cuda_seterr(cu, "%s failed at %s:%d: %s", call, rt_cuda_basename(file), line,
                 cu->nvrtcGetErrorString ? cu->nvrtcGetErrorString(r) : "NVRTC error");
  return false;
}

/* Calls that need the driver fail cleanly in NVRTC-only mode. */
static bool rt_cuda_need_device(RtCuda *cu, const char *what) {
  if (cu->has_device) return true;
  rt_cuda_seterr(cu, "%s needs a CUDA device, but this handle was opened for NVRTC only", what);
  return false;
}

const char *rt_cuda_last_error(const RtCuda *cu) {
  return cu && cu->err ? cu->err : "";
}

const char *rt_cuda_compile_log(const RtCuda *cu) {
  return cu && cu->log ? cu->log : "";
}

/* ---------------------------------------------------------- open / close */

static void rt_cuda_why(char *why, size_t cap, const char *fmt, ...) {
  if (!why || cap == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
}

/* Process-wide count of successful libnvrtc opens (rt_cuda_nvrtc_opens). */
static unsigned rt_cuda_nvrtc_open_count;

static bool rt_cuda_open_nvrtc(RtCuda *cu, char *why, size_t cap) {
  static const char *const candidates[] = {
      "libnvrtc.so",
      "libnvrtc.so.13",
      "libnvrtc.so.12",
      "/usr/local/cuda/lib64/libnvrtc.so",
      "/usr/local/cuda/lib64/libnvrtc.so.13",
      "/usr/local/cuda/lib64/libnvrtc.so.12",
  };
  const char *env = getenv("TILEC_NVRTC_LIB");
  if (env && *env) {
    cu->libnvrtc = dlopen(env, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!cu->libnvrtc) {
      rt_cuda_why(why, cap, "libnvrtc not found at $TILEC_NVRTC_LIB=%s (%s)", env, dlerror());
      return false;
    }
  }
  for (size_t i = 0; !cu->libnvrtc && i < sizeof candidates / sizeof *candidates; i++)
    cu->libnvrtc = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!cu->libnvrtc) {
    rt_cuda_why(why, cap,
                "libnvrtc not found (tried libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12 and "
                "/usr/local/cuda/lib64; set TILEC_NVRTC_LIB to its path)");
    return false;
  }
#define X(ret, name, sym, params)                                                     \
  *(void **)&cu->name = dlsym(cu->libnvrtc, sym);                                     \
  if (!cu->name) {                                                                    \
    rt_cuda_why(why, cap, "libnvrtc is too old or broken: it has no %s", sym);        \
    return false;                                                                     \
  }
  RT_NVRTC_FNS(X)
#undef X
  int major = 0, minor = 0;
  if (cu->nvrtcVersion(&major, &minor) != 0) {
    rt_cuda_why(why, cap, "nvrtcVersion failed: libnvrtc is unusable");
    return false;
  }
  cu->nvrtc_version = major * 1000 + minor * 10;
  /* Which file the loader picked (a bare name resolves through its search
   * path): the cache's NVRTC stamp records it (rt_gpu_nvrtc.c). */
  Dl_info info;
  if (dladdr(*(void **)&cu->nvrtcVersion, &info) && info.dli_fname) cu->nvrtc_path = strdup(info.dli_fname);
  __atomic_add_fetch(&rt_cuda_nvrtc_open_count, 1, __ATOMIC_RELAXED);
  return true;
}

bool rt_cuda_nvrtc_load(RtCuda *cu) {
  if (!cu) return false;
  if (cu->libnvrtc) return true;
  if (!cu->nvrtc_tried) {
    cu->nvrtc_tried = true;
    if (rt_cuda_open_nvrtc(cu, cu->nvrtc_why, sizeof cu->nvrtc_why)) return true;
    /* A half-open library (a symbol missing) is not kept. */
    if (cu->libnvrtc) dlclose(cu->libnvrtc);
    cu->libnvrtc = NULL;
  }
  rt_cuda_seterr(cu, "%s", cu->nvrtc_why);
  return false;
}

bool rt_cuda_nvrtc_loaded(const RtCuda *cu) { return cu && cu->libnvrtc; }

const char *rt_cuda_nvrtc_path(const RtCuda *cu) {
  return cu && cu->libnvrtc && cu->nvrtc_path ? cu->nvrtc_path : "";
}

unsigned rt_cuda_nvrtc_opens(void) {
  return __atomic_load_n(&rt_cuda_nvrtc_open_count, __ATOMIC_RELAXED);
}

/* $TILEC_TMA_L2_PROMOTION: how far the L2 widens each TMA load's fetch
 * from memory ("none", "64", "128" or "256" bytes; unset or empty: 128,
 * what every tensor map used before there was a choice). An experiment
 * knob: whether wider fetches help thin products streaming 128-byte box
 * rows of B (docs/runtime.md). Anything else refuses the device. */
static bool tma_l2_promotion_from_env(int *out, char *why, size_t cap) {
  static const struct {
    const char *text;
    int value;
  } choices[] = {{"none", RT_CU_TMAP_L2_PROMOTION_NONE}, {"64", 1}, {"128", RT_CU_TMAP_L2_PROMOTION_128B}, {"256", 3}};
  const char *env = getenv("TILEC_TMA_L2_PROMOTION");
  *out = RT_CU_TMAP_L2_PROMOTION_128B;
  if (!env || !*env) return true;
  for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++)
    if (strcmp(env, choices[i].text) == 0) {
      *out = choices[i].value;
      return true;
    }
  rt_cuda_why(why, cap, "$TILEC_TMA_L2_PROMOTION=%s: expected none, 64, 128 or 256 (bytes)", env);
  return false;
}

static bool rt_cuda_open_device(RtCuda *cu, int ordinal, char *why, size_t cap) {
  if (!tma_l2_promotion_from_env(&cu->tma_l2_promotion, why, cap)) return false;
  cu->libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!cu->libcuda) {
    rt_cuda_why(why, cap, "libcuda.so.1 not found (no NVIDIA driver)");
    return false;
  }
#define X(ret, name, sym, params)                                                          \
  *(void **)&cu->name = dlsym(cu->libcuda, sym);                                           \
  if (!cu->name) {                                                                         \
    rt_cuda_why(why, cap, "the NVIDIA driver is too old: libcuda.so.1 has no %s", sym);    \
    return false;                                                                          \
  }
  RT_CUDA_DRIVER_FNS(X)
#undef X
  /* TMA only: an older driver still runs everything else. */
  *(void **)&cu->cuTensorMapEncodeTiled = dlsym(cu->libcuda, "cuTensorMapEncodeTiled");
  *(void **)&cu->cuOccupancyMaxActiveClusters = dlsym(cu->libcuda, "cuOccupancyMaxActiveClusters");
  *(void **)&cu->cuLaunchKernelEx = dlsym(cu->libcuda, "cuLaunchKernelEx");
  CUresult r = cu->cuInit(0);
  int count = 0;
  if (r == RT_CUDA_ERROR_NO_DEVICE || (r == RT_CUDA_SUCCESS && cu->cuDeviceGetCount(&count) == 0 &&
                                       count == 0)) {
    rt_cuda_why(why, cap, "no CUDA device");
    return false;
  }
  if (r != RT_CUDA_SUCCESS) {
    const char *text = NULL;
    cu->cuGetErrorString(r, &text);
    rt_cuda_why(why, cap, "the CUDA driver failed to start: %s", text ? text : "unknown error");
    return false;
  }
  if (ordinal < 0 || ordinal >= count) {
    rt_cuda_why(why, cap, "CUDA device %d requested, but there are only %d", ordinal, count);
    return false;
  }
  int major = 0, minor = 0;
  if (!CU_CHECK(cu, cuDeviceGet(&cu->dev, ordinal)) ||
      !CU_CHECK(cu, cuDeviceGetAttribute(&major, RT_CU_ATTR_MAJOR, cu->dev)) ||
      !CU_CHECK(cu, cuDeviceGetAttribute(&minor, RT_CU_ATTR_MINOR, cu->dev)) ||
      !CU_CHECK(cu, cuDeviceGetAttribute(&cu->smem_optin, RT_CU_ATTR_SMEM_OPTIN, cu->dev)) ||
      !CU_CHECK(cu, cuDeviceGetAttribute(&cu->sm_count, RT_CU_ATTR_SM_COUNT, cu->dev)) ||
      !CU_CHECK(cu, cuDeviceGetName(cu->device_name, (int)sizeof cu->device_name, cu->dev))) {
    rt_cuda_why(why, cap, "cannot query CUDA device %d: %s", ordinal, cu->err);
    return false;
  }
  cu->arch = major * 10 + minor;
  if (cu->arch < 80) {
    rt_cuda_why(why, cap, "CUDA device %d (%s) is sm_%d; tilec needs sm_80 or newer", ordinal,
                cu->device_name, cu->arch);
    return false;
  }
  if (!CU_CHECK(cu, cuDevicePrimaryCtxRetain(&cu->ctx, cu->dev))) {
    rt_cuda_why(why, cap, "cannot create a CUDA context: %s", cu->err);
    return false;
  }
  cu->ctx_retained = true;
  if (!CU_CHECK(cu, cuCtxSetCurrent(cu->ctx))) {
    rt_cuda_why(why, cap, "cannot make the CUDA context current: %s", cu->err);
    return false;
  }
  cu->has_device = true;
  return true;
}

RtCuda *rt_cuda_open(RtCudaMode mode, int ordinal, char *why, size_t why_cap) {
  RtCuda *cu = calloc(1, sizeof *cu);
  if (!cu) {
    rt_cuda_why(why, why_cap, "out of memory");
    return NULL;
  }
  /* The device mode leaves libnvrtc (~100 MB to map and relocate) to the
   * first compile: a process whose kernels all come from the cache never
   * opens it. RT_CUDA_NVRTC_ONLY opens it now, as its whole purpose. */
  if ((mode == RT_CUDA_DEVICE && !rt_cuda_open_device(cu, ordinal, why, why_cap)) ||
      (mode == RT_CUDA_NVRTC_ONLY && !rt_cuda_nvrtc_load(cu))) {
    if (mode == RT_CUDA_NVRTC_ONLY) rt_cuda_why(why, why_cap, "%s", cu->nvrtc_why);
    rt_cuda_close(cu);
    return NULL;
  }
  return cu;
}

void rt_cuda_close(RtCuda *cu) {
  if (!cu) return;
  if (cu->ctx_retained) cu->cuDevicePrimaryCtxRelease(cu->dev);
  if (cu->libnvrtc) dlclose(cu->libnvrtc);
  if (cu->libcuda) dlclose(cu->libcuda);
  free(cu->nvrtc_path);
  free(cu->err);
  free(cu->log);
  free(cu);
}

bool rt_cuda_has_device(const RtCuda *cu) { return cu && cu->has_device; }
int rt_cuda_arch(const RtCuda *cu) { return cu && cu->has_device ? cu->arch : 0; }
int rt_cuda_max_smem_optin(const RtCuda *cu) { return cu && cu->has_device ? cu->smem_optin : 0; }
int rt_cuda_sm_count(const RtCuda *cu) { return cu && cu->has_device ? cu->sm_count : 0; }
int rt_cuda_nvrtc_version(const RtCuda *cu) { return cu ? cu->nvrtc_version : 0; }
const char *rt_cuda_device_name(const RtCuda *cu) {
  return cu && cu->has_device ? cu->device_name : "";
}

void rt_cuda_target(int arch, char out[16]) {
  /* wgmma and TMA exist only in the arch-specific ("a") targets. */
  if (arch == 90 || arch == 100)
    snprintf(out, 16, "sm_%da", arch);
  else
    snprintf(out, 16, "sm_%d", arch);
}

/* --------------------------------------------------------------- compile */

/* A growable string for building logs. */
typedef struct RtBuf {
  char *p;
  size_t len, cap;
  bool oom;
} RtBuf;

static void rt_buf_put(RtBuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void rt_buf_puts(RtBuf *b, const char *s) { rt_buf_put(b, s, strlen(s)); }

/* Line `lineno` (1-based) of text, as [start, start+len); false if absent. */
static bool rt_cuda_find_line(const char *text, long lineno, const char **start, size_t *len) {
  if (lineno < 1) return false;
  const char *p = text;
  for (long i = 1; i < lineno; i++) {
    p = strchr(p, '\n');
    if (!p) return false;
    p++;
  }
  if (!*p) return false;
  const char *e = strchr(p, '\n');
  *start = p;
  *len = e ? (size_t)(e - p) : strlen(p);
  return true;
}

/* [s, s+n) without leading and trailing blanks. */
static void rt_cuda_trim(const char **s, size_t *n) {
  while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
  while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r')) (*n)--;
}

/* If log line [s, s+n) starts "FILE(LINE): " with FILE the source or the
 * embedded header, append "  LINE | <that line>" below it, unless NVRTC
 * already quoted that line itself on the next log line (it does from 12.x;
 * then only the line number is missing, and it is in the message). */
static void rt_cuda_annotate(RtBuf *out, const char *s, size_t n, const char *next,
                             const char *src_name, const char *src) {
  const char *paren = memchr(s, '(', n);
  if (!paren) return;
  size_t fn = (size_t)(paren - s);
  const char *text = NULL;
  if (fn == strlen(src_name) && memcmp(s, src_name, fn) == 0)
    text = src;
  for (const RtCudaHeader *h = rt_cuda_device_headers; !text && h->name; h++)
    if (fn == strlen(h->name) && memcmp(s, h->name, fn) == 0) text = h->text;
  if (!text) return;
  char *end = NULL;
  long lineno = strtol(paren + 1, &end, 10);
  if (end == paren + 1 || (size_t)(end - s) >= n || *end != ')') return;
  const char *ls;
  size_t ll;
  if (!rt_cuda_find_line(text, lineno, &ls, &ll)) return;
  if (next) {
    const char *ne = strchr(next, '\n');
    size_t nn = ne ? (size_t)(ne - next) : strlen(next), tl = ll;
    const char *ts = ls;
    rt_cuda_trim(&next, &nn);
    rt_cuda_trim(&ts, &tl);
    if (tl > 0 && nn == tl && memcmp(next, ts, tl) == 0) return;
  }
  char gutter[32];
  snprintf(gutter, sizeof gutter, "  %5ld | ", lineno);
  rt_buf_puts(out, gutter);
  rt_buf_put(out, ls, ll);
  rt_buf_puts(out, "\n");
}

char *rt_cuda_annotate_log(const char *log, const char *src_name, const char *src) {
  RtBuf out = {0};
  rt_buf_puts(&out, "");
  const char *p = log;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    rt_buf_put(&out, p, n);
    rt_buf_puts(&out, "\n");
    rt_cuda_annotate(&out, p, n, e ? e + 1 : NULL, src_name, src);
    p += n + (e ? 1 : 0);
  }
  if (out.oom) {
    free(out.p);
    return NULL;
  }
  return out.p;
}

/* "sm_80", "sm_90a", "sm_100f": anything else is refused rather than passed
 * to NVRTC as an option string. */
static bool rt_cuda_valid_arch(const char *arch) {
  if (strncmp(arch, "sm_", 3) != 0) return false;
  const char *p = arch + 3;
  if (*p < '1' || *p > '9') return false;
  while (*p >= '0' && *p <= '9') p++;
  if (*p == 'a' || *p == 'f') p++;
  return *p == '\0' && p - arch < 12;
}

/* rt_cuda_compile and rt_cuda_compile_ptx: one NVRTC run; ptx selects
 * -arch=compute_<N> and nvrtcGetPTX (the text, NUL included in the size)
 * instead of -arch=sm_<N> and nvrtcGetCUBIN. */
static bool rt_cuda_compile_to(RtCuda *cu, const char *source, const char *name, const char *arch,
                               const char *const *opts, int nopts, bool ptx, void **cubin,
                               size_t *cubin_size);

bool rt_cuda_compile(RtCuda *cu, const char *source, const char *name, const char *arch,
                     const char *const *opts, int nopts, void **cubin, size_t *cubin_size) {
  return rt_cuda_compile_to(cu, source, name, arch, opts, nopts, false, cubin, cubin_size);
}

bool rt_cuda_compile_ptx(RtCuda *cu, const char *source, const char *name, const char *arch,
                         const char *const *opts, int nopts, char **ptx, size_t *ptx_size) {
  void *out = NULL;
  bool ok = rt_cuda_compile_to(cu, source, name, arch, opts, nopts, true, &out, ptx_size);
  *ptx = out;
  return ok;
}

static bool rt_cuda_compile_to(RtCuda *cu, const char *source, const char *name, const char *arch,
                               const char *const *opts, int nopts, bool ptx, void **cubin,
                               size_t *cubin_size) {
  *cubin = NULL;
  *cubin_size = 0;
  free(cu->log);
  cu->log = NULL;
  if (!rt_cuda_nvrtc_load(cu)) return false; /* the first compile opens libnvrtc */
  if (!source || !name || !arch || nopts < 0 || (nopts > 0 && !opts)) {
    rt_cuda_seterr(cu, "rt_cuda_compile: missing source, name, arch or options");
    return false;
  }
  if (!rt_cuda_valid_arch(arch)) {
    rt_cuda_seterr(cu, "rt_cuda_compile: '%s' is not a real GPU target (want e.g. sm_80, sm_90a)",
                   arch);
    return false;
  }
  char arch_opt[32];
  if (ptx) snprintf(arch_opt, sizeof arch_opt, "-arch=compute_%s", arch + 3);
  else snprintf(arch_opt, sizeof arch_opt, "-arch=%s", arch);
  const char **all = malloc(sizeof *all * (size_t)(nopts + 2));
  if (!all) {
    rt_cuda_seterr(cu, "out of memory");
    return false;
  }
  all[0] = arch_opt;
  all[1] = "-std=c++17";
  for (int i = 0; i < nopts; i++) all[2 + i] = opts[i];

  int nhdr = rt_cuda_header_count();
  const char **hdrs = malloc(sizeof *hdrs * (size_t)(2 * nhdr + 1));
  if (!hdrs) {
    free(all);
    rt_cuda_seterr(cu, "out of memory");
    return false;
  }
  for (int i = 0; i < nhdr; i++) {
    hdrs[i] = rt_cuda_device_headers[i].text;
    hdrs[nhdr + i] = rt_cuda_device_headers[i].name;
  }
  nvrtcProgram prog = NULL;
  bool ok = false;
  bool created =
      NVRTC_CHECK(cu, nvrtcCreateProgram(&prog, source, name, nhdr, hdrs, hdrs + nhdr));
  free(hdrs);
  if (!created) {
    free(all);
    return false;
  }
  nvrtcResult cr = cu->nvrtcCompileProgram(prog, nopts + 2, all);
  free(all);

  /* The log, always: warnings matter on success too. */
  size_t log_size = 0;
  char *raw = NULL;
  if (cu->nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 0 &&
      (raw = malloc(log_size + 1)) != NULL) {
    if (cu->nvrtcGetProgramLog(prog, raw) != 0) raw[0] = '\0';
    raw[log_size] = '\0';
    cu->log = rt_cuda_annotate_log(raw, name, source);
  }
  if (cr != 0) {
    rt_cuda_seterr(cu, "NVRTC failed to compile %s for %s (%s):\n%s", name, arch,
                   cu->nvrtcGetErrorString(cr), cu->log ? cu->log : (raw ? raw : ""));
    goto done;
  }
  size_t n = 0;
  const char *what = ptx ? "PTX" : "cubin";
  if (!(ptx ? NVRTC_CHECK(cu, nvrtcGetPTXSize(prog, &n)) : NVRTC_CHECK(cu, nvrtcGetCUBINSize(prog, &n))))
    goto done;
  if (n == 0) {
    rt_cuda_seterr(cu, "NVRTC produced no %s for %s (%s)", what, name, arch);
    goto done;
  }
  *cubin = malloc(n);
  if (!*cubin) {
    rt_cuda_seterr(cu, "out of memory for a %zu-byte %s", n, what);
    goto done;
  }
  if (!(ptx ? NVRTC_CHECK(cu, nvrtcGetPTX(prog, (char *)*cubin))
            : NVRTC_CHECK(cu, nvrtcGetCUBIN(prog, (char *)*cubin)))) {
    free(*cubin);
    *cubin = NULL;
    goto done;
  }
  *cubin_size = n;
  ok = true;
done:
  free(raw);
  cu->nvrtcDestroyProgram(&prog);
  return ok;
}

/* ------------------------------------------------- modules and launches */

bool rt_cuda_module_load(RtCuda *cu, const void *cubin, size_t size, RtCuModule *out) {
  *out = NULL;
  if (!rt_cuda_need_device(cu, "loading a module")) return false;
  if (!cubin || size == 0) {
    rt_cuda_seterr(cu, "rt_cuda_module_load: empty cubin");
    return false;
  }
  return CU_CHECK(cu, cuModuleLoadData(out, cubin));
}

void rt_cuda_module_unload(RtCuda *cu, RtCuModule mod) {
  if (mod && cu && cu->has_device) CU_CHECK(cu, cuModuleUnload(mod));
}

bool rt_cuda_get_function(RtCuda *cu, RtCuModule mod, const char *name, RtCuFunction *out) {
  *out = NULL;
  if (!rt_cuda_need_device(cu, "looking up a kernel")) return false;
  if (!CU_CHECK(cu, cuModuleGetFunction(out, mod, name))) {
    /* Say which kernel: the driver's text only says "named symbol not found". */
    char *prev = cu->err;
    cu->err = NULL;
    rt_cuda_seterr(cu, "kernel '%s' not found in the module: %s", name, prev ? prev : "");
    free(prev);
    return false;
  }
  return true;
}

bool rt_cuda_set_max_dynamic_smem(RtCuda *cu, RtCuFunction fn, size_t bytes) {
  if (bytes <= RT_CUDA_DEFAULT_SMEM) return true;
  if (!rt_cuda_need_device(cu, "setting shared memory")) return false;
  if (bytes > (size_t)cu->smem_optin) {
    rt_cuda_seterr(cu, "kernel needs %zu bytes of shared memory; %s allows at most %d", bytes,
                   cu->device_name, cu->smem_optin);
    return false;
  }
  return CU_CHECK(cu, cuFuncSetAttribute(fn, RT_CU_FUNC_MAX_DYN_SMEM, (int)bytes));
}

int rt_cuda_resident_blocks(RtCuda *cu, RtCuFunction fn, int threads, size_t smem_bytes) {
  int per_sm = 0;
  if (!rt_cuda_need_device(cu, "querying occupancy") ||
      !CU_CHECK(cu, cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, smem_bytes)))
    return 0;
  return per_sm * cu->sm_count;
}

int rt_cuda_resident_clusters(RtCuda *cu, RtCuFunction fn, int cluster, int threads, size_t smem_bytes) {
  if (!rt_cuda_need_device(cu, "querying occupancy")) return 0;
  if (!cu->cuOccupancyMaxActiveClusters) {
    rt_cuda_seterr(cu, "the CUDA driver has no cuOccupancyMaxActiveClusters (clusters need a CUDA 12 driver)");
    return 0;
  }
  /* The kernel's cluster shape is compiled in (__cluster_dims__); the
   * query wants a grid that is a whole number of clusters. */
  RtCuLaunchConfig config = {{(unsigned)(cluster * cu->sm_count), 1, 1}, {(unsigned)threads, 1, 1},
                             (unsigned)smem_bytes, NULL, NULL, 0};
  int n = 0;
  if (!CU_CHECK(cu, cuOccupancyMaxActiveClusters(&n, fn, &config))) return 0;
  return n;
}

bool rt_cuda_launch_kernel(RtCuda *cu, RtCuFunction fn, const unsigned grid[3], const unsigned block[3],
                    size_t smem_bytes, RtCuStream stream, void **params) {
  if (!rt_cuda_need_device(cu, "launching a kernel")) return false;
  if (smem_bytes > 0xffffffffu) {
    rt_cuda_seterr(cu, "rt_cuda_launch_kernel: %zu bytes of shared memory is out of range", smem_bytes);
    return false;
  }
  return CU_CHECK(cu, cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                     (unsigned)smem_bytes, stream, params, NULL));
}

bool rt_cuda_launch_kernel_pdl(RtCuda *cu, RtCuFunction fn, const unsigned grid[3], const unsigned block[3],
                               size_t smem_bytes, RtCuStream stream, void **params) {
  /* Without cuLaunchKernelEx (a pre-12 driver) the plain launch is still
   * correct: the kernel's griddepcontrol.wait then finds no dependency, and
   * stream order alone makes it wait. */
  if (!cu || !cu->cuLaunchKernelEx || smem_bytes > 0xffffffffu)
    return rt_cuda_launch_kernel(cu, fn, grid, block, smem_bytes, stream, params);
  if (!rt_cuda_need_device(cu, "launching a kernel")) return false;
  RtCuLaunchAttribute attr = {0};
  attr.id = RT_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmatic_stream_serialization = 1;
  RtCuLaunchConfig config = {{grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, (unsigned)smem_bytes,
                             stream, &attr, 1};
  return CU_CHECK(cu, cuLaunchKernelEx(&config, fn, params, NULL));
}

bool rt_cuda_synchronize(RtCuda *cu) {
  if (!rt_cuda_need_device(cu, "synchronizing")) return false;
  return CU_CHECK(cu, cuCtxSynchronize());
}

enum { RT_CU_EVENT_DISABLE_TIMING = 0x2 }; /* CU_EVENT_DISABLE_TIMING (cuda.h) */

bool rt_cuda_event_record(RtCuda *cu, RtCuEvent *event, RtCuStream stream) {
  if (!rt_cuda_need_device(cu, "recording an event")) return false;
  if (!*event && !CU_CHECK(cu, cuEventCreate(event, RT_CU_EVENT_DISABLE_TIMING))) return false;
  return CU_CHECK(cu, cuEventRecord(*event, stream));
}

bool rt_cuda_stream_wait_event(RtCuda *cu, RtCuStream stream, RtCuEvent event) {
  if (!rt_cuda_need_device(cu, "ordering streams")) return false;
  return CU_CHECK(cu, cuStreamWaitEvent(stream, event, 0));
}

void rt_cuda_event_destroy(RtCuda *cu, RtCuEvent event) {
  if (cu && cu->has_device && event) (void)cu->cuEventDestroy(event);
}

/* ---------------------------------------------------------------- memory */

bool rt_cuda_malloc(RtCuda *cu, size_t bytes, RtCuDevPtr *out) {
  *out = 0;
  if (!rt_cuda_need_device(cu, "allocating device memory")) return false;
  return CU_CHECK(cu, cuMemAlloc(out, bytes));
}

void rt_cuda_free(RtCuda *cu, RtCuDevPtr p) {
  if (p && cu && cu->has_device) CU_CHECK(cu, cuMemFree(p));
}

bool rt_cuda_memcpy_htod(RtCuda *cu, RtCuDevPtr dst, const void *src, size_t bytes) {
  if (!rt_cuda_need_device(cu, "copying to the device")) return false;
  return CU_CHECK(cu, cuMemcpyHtoD(dst, src, bytes));
}

bool rt_cuda_memcpy_dtoh(RtCuda *cu, void *dst, RtCuDevPtr src, size_t bytes) {
  if (!rt_cuda_need_device(cu, "copying from the device")) return false;
  return CU_CHECK(cu, cuMemcpyDtoH(dst, src, bytes));
}

bool rt_cuda_memset(RtCuda *cu, RtCuDevPtr dst, unsigned char byte, size_t bytes) {
  if (!rt_cuda_need_device(cu, "memset on the device")) return false;
  return CU_CHECK(cu, cuMemsetD8(dst, byte, bytes));
}

bool rt_cuda_memcpy_2d_async(RtCuda *cu, RtCuDevPtr dst, size_t dst_pitch, RtCuDevPtr src, size_t src_pitch,
                             size_t width, size_t rows, RtCuStream stream) {
  if (!rt_cuda_need_device(cu, "a 2-D copy on the device")) return false;
  RtCuMemcpy2D p;
  memset(&p, 0, sizeof p);
  p.srcMemoryType = RT_CU_MEMORYTYPE_DEVICE;
  p.srcDevice = src;
  p.srcPitch = src_pitch;
  p.dstMemoryType = RT_CU_MEMORYTYPE_DEVICE;
  p.dstDevice = dst;
  p.dstPitch = dst_pitch;
  p.WidthInBytes = width;
  p.Height = rows;
  return CU_CHECK(cu, cuMemcpy2DAsync(&p, stream));
}

/* ------------------------------------------------------------------- TMA */

/* The driver's enums for an element size / a swizzle span, or -1. */
static int tmap_type_of(int elem_bytes) {
  return elem_bytes == 1   ? RT_CU_TMAP_UINT8
         : elem_bytes == 2 ? RT_CU_TMAP_UINT16
         : elem_bytes == 4 ? RT_CU_TMAP_UINT32
         : elem_bytes == 8 ? RT_CU_TMAP_UINT64
                           : -1;
}

static int tmap_swizzle_of(int swizzle_bytes) {
  return swizzle_bytes == 0     ? RT_CU_TMAP_SWIZZLE_NONE
         : swizzle_bytes == 32  ? 1
         : swizzle_bytes == 64  ? 2
         : swizzle_bytes == 128 ? 3
                                : -1;
}

/* The checked descriptor, encoded by the driver (element strides 1, no
 * interleave, the device's L2 promotion (128 bytes unless
 * $TILEC_TMA_L2_PROMOTION says), zero fill outside the tensor). */
static bool encode_tiled(RtCuda *cu, const char *fn, RtCuTensorMap *out, int type, int rank,
                         RtCuDevPtr base, const uint64_t *dims, const uint64_t *strides,
                         const uint32_t *box, int swizzle) {
  if (!rt_cuda_need_device(cu, "encoding a tensor map")) return false;
  if (!cu->cuTensorMapEncodeTiled) {
    rt_cuda_seterr(cu, "%s: the NVIDIA driver is too old: libcuda.so.1 has no "
                       "cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)", fn);
    return false;
  }
  const uint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  if (!CU_CHECK(cu, cuTensorMapEncodeTiled(out, type, (unsigned)rank, (void *)(uintptr_t)base, dims,
                                           strides, box, elem_strides, RT_CU_TMAP_INTERLEAVE_NONE,
                                           swizzle, cu->tma_l2_promotion,
                                           RT_CU_TMAP_OOB_FILL_NONE))) {
    memset(out, 0, sizeof *out);
    return false;
  }
  return true;
}

bool rt_cuda_tensor_map_2d(RtCuda *cu, RtCuTensorMap *out, RtCuDevPtr base, int elem_bytes,
                           unsigned long long inner_elems, unsigned long long outer_elems,
                           unsigned long long outer_stride_bytes, unsigned box_inner,
                           unsigned box_outer, int swizzle_bytes) {
  const char *fn = "rt_cuda_tensor_map_2d";
  if (!out || (uintptr_t)out % 64 != 0) {
    rt_cuda_seterr(cu, "%s: the descriptor %p must be 64-byte aligned (and not NULL)", fn,
                   (void *)out);
    return false;
  }
  memset(out, 0, sizeof *out);
  const int type = tmap_type_of(elem_bytes);
  if (type < 0) {
    rt_cuda_seterr(cu, "%s: element size %d bytes; TMA copies elements of 1, 2, 4 or 8 bytes", fn,
                   elem_bytes);
    return false;
  }
  const unsigned long long max_dim = 1ull << 32, row_bytes = inner_elems * (unsigned)elem_bytes;
  if (base % 16 != 0) {
    rt_cuda_seterr(cu, "%s: base address 0x%llx is not 16-byte aligned", fn,
                   (unsigned long long)base);
    return false;
  }
  if (inner_elems < 1 || inner_elems > max_dim || outer_elems < 1 || outer_elems > max_dim) {
    rt_cuda_seterr(cu, "%s: tensor extents %llu x %llu (inner x outer) must each be in [1, 2^32]",
                   fn, inner_elems, outer_elems);
    return false;
  }
  if (outer_stride_bytes % 16 != 0) {
    rt_cuda_seterr(cu, "%s: row stride %llu bytes is not a multiple of 16", fn, outer_stride_bytes);
    return false;
  }
  if (outer_stride_bytes < row_bytes || outer_stride_bytes >= (1ull << 40)) {
    rt_cuda_seterr(cu,
                   "%s: row stride %llu bytes must be at least one row (%llu elements x %d bytes "
                   "= %llu) and below 2^40",
                   fn, outer_stride_bytes, inner_elems, elem_bytes, row_bytes);
    return false;
  }
  if (box_inner < 1 || box_inner > 256 || box_outer < 1 || box_outer > 256) {
    rt_cuda_seterr(cu, "%s: box %u x %u (inner x outer): each side must be in [1, 256]", fn,
                   box_inner, box_outer);
    return false;
  }
  const unsigned box_row = box_inner * (unsigned)elem_bytes;
  if (box_row % 16 != 0) {
    rt_cuda_seterr(cu, "%s: a box row is %u elements x %d bytes = %u bytes, not a multiple of 16",
                   fn, box_inner, elem_bytes, box_row);
    return false;
  }
  const int swizzle = tmap_swizzle_of(swizzle_bytes);
  if (swizzle < 0) {
    rt_cuda_seterr(cu, "%s: swizzle %d bytes; want 0, 32, 64 or 128", fn, swizzle_bytes);
    return false;
  }
  if (swizzle_bytes > 0 && box_row > (unsigned)swizzle_bytes) {
    rt_cuda_seterr(cu,
                   "%s: a box row of %u bytes is wider than the %d-byte swizzle span (load it as "
                   "several boxes of at most %d bytes)",
                   fn, box_row, swizzle_bytes, swizzle_bytes);
    return false;
  }
  const uint64_t dims[2] = {inner_elems, outer_elems}, strides[1] = {outer_stride_bytes};
  const uint32_t box[2] = {box_inner, box_outer};
  return encode_tiled(cu, fn, out, type, 2, base, dims, strides, box, swizzle);
}

bool rt_cuda_tensor_map(RtCuda *cu, RtCuTensorMap *out, RtCuDevPtr base, int elem_bytes, int rank,
                        const uint64_t *dims, const uint64_t *stride_bytes, const uint32_t *box,
                        int swizzle_bytes) {
  const char *fn = "rt_cuda_tensor_map";
  if (!out || (uintptr_t)out % 64 != 0) {
    rt_cuda_seterr(cu, "%s: the descriptor %p must be 64-byte aligned (and not NULL)", fn,
                   (void *)out);
    return false;
  }
  memset(out, 0, sizeof *out);
  const int type = tmap_type_of(elem_bytes), swizzle = tmap_swizzle_of(swizzle_bytes);
  if (type < 0 || swizzle < 0 || rank < 1 || rank > 5) {
    rt_cuda_seterr(cu, "%s: rank %d (1 to 5), element size %d bytes (1, 2, 4 or 8), swizzle %d "
                       "bytes (0, 32, 64 or 128)", fn, rank, elem_bytes, swizzle_bytes);
    return false;
  }
  if (base % 16 != 0) {
    rt_cuda_seterr(cu, "%s: base address 0x%llx is not 16-byte aligned (TMA needs it)", fn,
                   (unsigned long long)base);
    return false;
  }
  for (int d = 0; d < rank; d++) {
    if (dims[d] < 1 || dims[d] > (1ull << 32) || box[d] < 1 || box[d] > 256) {
      rt_cuda_seterr(cu, "%s: dimension %d has %llu elements (1 to 2^32) and a box of %u (1 to 256)",
                     fn, d, (unsigned long long)dims[d], (unsigned)box[d]);
      return false;
    }
    if (d > 0 && (stride_bytes[d - 1] % 16 != 0 || stride_bytes[d - 1] >= (1ull << 40))) {
      rt_cuda_seterr(cu, "%s: the stride of dimension %d, %llu bytes, is not a multiple of 16 below 2^40",
                     fn, d, (unsigned long long)stride_bytes[d - 1]);
      return false;
    }
  }
  const unsigned box_row = box[0] * (unsigned)elem_bytes;
  if (box_row % 16 != 0 || (swizzle_bytes > 0 && box_row > (unsigned)swizzle_bytes)) {
    rt_cuda_seterr(cu, "%s: a box row of %u bytes must be a multiple of 16 and, swizzled, at most %d",
                   fn, box_row, swizzle_bytes);
    return false;
  }
  return encode_tiled(cu, fn, out, type, rank, base, dims, stride_bytes, box, swizzle);
}
