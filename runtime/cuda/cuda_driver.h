/* cuda_driver.h - the runtime's CUDA seam (internal to libtilert).
 *
 * Opens libcuda and libnvrtc with dlopen at run time, so a build made on any
 * machine runs CPU-only where CUDA is missing: nothing here links against
 * CUDA, and no CUDA header is needed to compile it (the few types used are
 * declared in cuda_driver.c).
 *
 *   char why[256];
 *   RtCuda *cu = rt_cuda_open(RT_CUDA_DEVICE, 0, why, sizeof why);
 *   if (!cu) -> fall back to the CPU and report `why`
 *   char arch[16]; rt_cuda_target(rt_cuda_arch(cu), arch);       "sm_90a"
 *   rt_cuda_compile(cu, src, "fa.cu", arch, NULL, 0, &cubin, &n)  false: the
 *       full NVRTC log, each error followed by the offending source line, is
 *       in rt_cuda_last_error(cu)
 *   rt_cuda_module_load / rt_cuda_get_function / rt_cuda_set_max_dynamic_smem
 *   rt_cuda_launch_kernel(cu, fn, grid, block, smem, stream, params)
 *   rt_cuda_tensor_map_2d(cu, &map, ptr, 2, cols, rows, pitch, 64, 64, 128)
 *       a TMA descriptor for tilec_tma.cuh (sm_90)
 *
 * libnvrtc is opened lazily: RT_CUDA_DEVICE opens the driver and the device
 * only, and the first rt_cuda_compile* (or rt_cuda_nvrtc_load) opens
 * libnvrtc, so a process whose kernels all come from the cubin cache never
 * maps it. RT_CUDA_NVRTC_ONLY opens only libnvrtc, at once: compile checks
 * on machines with no GPU or driver (CI). RT_CUDA_NVRTC_LAZY opens nothing:
 * no device, libnvrtc at the first compile (ahead-of-time builds, whose
 * cache hits need no NVRTC). Device calls on those two fail with a clear
 * message.
 *
 * Every call that can fail returns bool; the failure's text (call, file,
 * line and the driver's own error string, or the NVRTC log) is kept in the
 * handle until the next failure and read with rt_cuda_last_error().
 * Not thread-safe: one RtCuda per thread, or lock around it.
 */
#ifndef TILERT_CUDA_DRIVER_H
#define TILERT_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtCuda RtCuda;
typedef uint64_t RtCuDevPtr; /* CUdeviceptr */
typedef void *RtCuModule;    /* CUmodule */
typedef void *RtCuFunction;  /* CUfunction */
typedef void *RtCuStream;    /* CUstream; NULL = the default stream */
typedef void *RtCuEvent;     /* CUevent */

typedef enum RtCudaMode {
  RT_CUDA_DEVICE,     /* libcuda + a GPU now, libnvrtc at the first compile */
  RT_CUDA_NVRTC_ONLY, /* libnvrtc only, now: rt_cuda_compile and nothing else */
  RT_CUDA_NVRTC_LAZY, /* nothing now; libnvrtc at the first compile; no device */
} RtCudaMode;

/* Opens what `mode` says (in RT_CUDA_DEVICE mode, device `ordinal` and its
 * primary context, made current on the calling thread). On failure returns
 * NULL and writes one sentence saying why into why[0..why_cap) (why may be
 * NULL), e.g. "libcuda.so.1 not found (no NVIDIA driver)", "no CUDA device".
 * libnvrtc is looked for as $TILEC_NVRTC_LIB, libnvrtc.so, libnvrtc.so.13,
 * libnvrtc.so.12, then under /usr/local/cuda/lib64. */
RtCuda *rt_cuda_open(RtCudaMode mode, int ordinal, char *why, size_t why_cap);

/* Opens libnvrtc now if it is not open yet (the compile calls do it
 * themselves). False when it cannot be opened: the reason ("libnvrtc not
 * found (...)") is in rt_cuda_last_error; a handle tries only once. */
bool rt_cuda_nvrtc_load(RtCuda *cu);
bool rt_cuda_nvrtc_loaded(const RtCuda *cu);
/* The libnvrtc file the dynamic loader opened (a path), "" before. */
const char *rt_cuda_nvrtc_path(const RtCuda *cu);
/* How many times this process opened libnvrtc successfully, over all handles
 * (a test's check that a cache hit opened none). */
unsigned rt_cuda_nvrtc_opens(void);
/* Unloads nothing the caller still owns; releases the primary context and
 * closes the libraries. Accepts NULL. */
void rt_cuda_close(RtCuda *cu);

const char *rt_cuda_last_error(const RtCuda *cu);
/* The log of the last rt_cuda_compile, success or not (warnings included),
 * annotated with source lines like the error text. "" when there was none. */
const char *rt_cuda_compile_log(const RtCuda *cu);

bool rt_cuda_has_device(const RtCuda *cu);
/* Compute capability as major*10+minor (80, 86, 90...), 0 without a device. */
int rt_cuda_arch(const RtCuda *cu);
/* The NVRTC target for a compute capability: 90 -> "sm_90a" (wgmma/TMA need
 * the arch-specific target), 100 -> "sm_100a", else "sm_<arch>". out must
 * hold 16 bytes. */
void rt_cuda_target(int arch, char out[16]);
const char *rt_cuda_device_name(const RtCuda *cu);
/* The device's SM count, 0 without a device. */
int rt_cuda_sm_count(const RtCuda *cu);
/* Largest dynamic shared memory a block may opt in to (bytes), 0 without a device. */
int rt_cuda_max_smem_optin(const RtCuda *cu);
/* NVRTC version as major*1000+minor*10 (13000 for 13.0); 0 while libnvrtc
 * is not open (rt_cuda_nvrtc_load). */
int rt_cuda_nvrtc_version(const RtCuda *cu);

/* The device headers embedded at build time: each .cuh of runtime/device/,
 * by file name ("tilec_device.cuh"), ending with {NULL, NULL}. NVRTC gets
 * all of them, so generated code #includes them by name. */
typedef struct RtCudaHeader {
  const char *name, *text;
} RtCudaHeader;
extern const RtCudaHeader rt_cuda_device_headers[];
/* The text of embedded header `name`, NULL if there is none. */
const char *rt_cuda_device_header(const char *name);

/* Compiles CUDA C++ `source` (its name, e.g. "gemm.cu", is the one NVRTC's
 * log uses) for `arch` ("sm_80", "sm_90a") to a cubin. The embedded device
 * headers (tilec_device.cuh, ...) are available to #include. Default options: -arch=<arch>, -std=c++17,
 * -default-device is NOT added (kernels are extern "C" __global__); `opts`
 * adds more (e.g. "-lineinfo", "-DTILE=64"). On success *cubin is a malloc'd
 * buffer the caller frees and *cubin_size > 0. On failure the error text is
 * the full NVRTC log with each `name(LINE): error` followed by that line of
 * the source. */
bool rt_cuda_compile(RtCuda *cu, const char *source, const char *name, const char *arch,
                     const char *const *opts, int nopts, void **cubin, size_t *cubin_size);

/* The same compile to PTX text for the virtual architecture of `arch`
 * ("sm_90a" -> -arch=compute_90a): ahead-of-time output (tilec --emit=ptx).
 * *ptx is malloc'd and NUL-terminated; *ptx_size counts the NUL. */
bool rt_cuda_compile_ptx(RtCuda *cu, const char *source, const char *name, const char *arch,
                         const char *const *opts, int nopts, char **ptx, size_t *ptx_size);

/* What rt_cuda_compile does to NVRTC's log (exposed for tests): after each
 * line "FILE(N): ..." naming `src_name` or an embedded header, adds
 * "  N | <line N of that file>" unless the log's next line already quotes
 * it. Returns a malloc'd string, NULL when out of memory. */
char *rt_cuda_annotate_log(const char *log, const char *src_name, const char *src);

bool rt_cuda_module_load(RtCuda *cu, const void *cubin, size_t size, RtCuModule *out);
void rt_cuda_module_unload(RtCuda *cu, RtCuModule mod); /* accepts NULL */
bool rt_cuda_get_function(RtCuda *cu, RtCuModule mod, const char *name, RtCuFunction *out);
/* Needed before a launch with more than 48 KB of dynamic shared memory; a
 * no-op for 48 KB or less. Fails (with the device's limit in the message)
 * when bytes exceeds what the device allows. */
bool rt_cuda_set_max_dynamic_smem(RtCuda *cu, RtCuFunction fn, size_t bytes);
/* How many blocks of fn (threads, dynamic smem_bytes) the whole GPU holds at
 * once: the occupancy calculator's blocks per SM times the SMs; 0 on error. */
int rt_cuda_resident_blocks(RtCuda *cu, RtCuFunction fn, int threads, size_t smem_bytes);
/* How many clusters of fn (compiled with __cluster_dims__(cluster, 1, 1))
 * the GPU runs at once: fewer than resident_blocks / cluster when the SMs of
 * a GPC do not pair up. 0 on error (rt_cuda_last_error). */
int rt_cuda_resident_clusters(RtCuda *cu, RtCuFunction fn, int cluster, int threads, size_t smem_bytes);
/* params: one pointer per kernel parameter, pointing at its value (CUDA's
 * kernelParams convention). Asynchronous; see rt_cuda_synchronize. */
bool rt_cuda_launch_kernel(RtCuda *cu, RtCuFunction fn, const unsigned grid[3], const unsigned block[3],
                    size_t smem_bytes, RtCuStream stream, void **params);
/* The same launch with programmatic stream serialization (CUDA 12+, sm_90):
 * the kernel may start before the kernel ahead of it in the stream has
 * finished, so it must wait for it (griddepcontrol.wait: a kernel whose
 * source says pdl_sync(), TilecKernelInfo.pdl_sync) before touching what
 * that kernel writes. A plain launch where the driver lacks cuLaunchKernelEx. */
bool rt_cuda_launch_kernel_pdl(RtCuda *cu, RtCuFunction fn, const unsigned grid[3], const unsigned block[3],
                               size_t smem_bytes, RtCuStream stream, void **params);
bool rt_cuda_synchronize(RtCuda *cu);

/* Ordering across streams: *event (created on first use, no timing) is
 * recorded at `stream`'s current end; a stream that waits on it runs its
 * later work after that point. */
bool rt_cuda_event_record(RtCuda *cu, RtCuEvent *event, RtCuStream stream);
bool rt_cuda_stream_wait_event(RtCuda *cu, RtCuStream stream, RtCuEvent event);
void rt_cuda_event_destroy(RtCuda *cu, RtCuEvent event); /* accepts NULL */

bool rt_cuda_malloc(RtCuda *cu, size_t bytes, RtCuDevPtr *out);
void rt_cuda_free(RtCuda *cu, RtCuDevPtr p); /* accepts 0 */
bool rt_cuda_memcpy_htod(RtCuda *cu, RtCuDevPtr dst, const void *src, size_t bytes);
bool rt_cuda_memcpy_dtoh(RtCuda *cu, void *dst, RtCuDevPtr src, size_t bytes);
bool rt_cuda_memset(RtCuda *cu, RtCuDevPtr dst, unsigned char byte, size_t bytes);
/* Enqueues on `stream` (NULL: the default stream) a copy of `rows` rows of
 * `width` bytes from device memory src (row r at src + r * src_pitch) to
 * device memory dst (row r at dst + r * dst_pitch): cuMemcpy2DAsync. Any
 * alignment; the pitches at least `width` when rows > 1. */
bool rt_cuda_memcpy_2d_async(RtCuda *cu, RtCuDevPtr dst, size_t dst_pitch, RtCuDevPtr src, size_t src_pitch,
                             size_t width, size_t rows, RtCuStream stream);

/* A TMA descriptor (the driver's CUtensorMap): 128 opaque bytes, 64-byte
 * aligned, filled by rt_cuda_tensor_map_2d and passed BY VALUE to a kernel
 * parameter `const __grid_constant__ tc_tensor_map map`
 * (runtime/device/tilec_tma.cuh), i.e. params[i] = &map. A heap copy must
 * keep the alignment (aligned_alloc(64, ...)). */
#ifdef __cplusplus
#define RT_CUDA_ALIGN64 alignas(64)
#else
#define RT_CUDA_ALIGN64 _Alignas(64)
#endif
typedef struct RtCuTensorMap {
  RT_CUDA_ALIGN64 uint64_t opaque[16];
} RtCuTensorMap;

/* Describes a row-major 2-D tensor in global memory for TMA loads of boxes
 * of box_outer rows x box_inner elements (cuTensorMapEncodeTiled, rank 2):
 * row r, element c is at base + r * outer_stride_bytes + c * elem_bytes,
 * for r < outer_elems and c < inner_elems. Elements are copied as raw bits
 * (unsigned integer types of elem_bytes = 1, 2, 4 or 8: f16 and bf16 are
 * 2); box elements outside the tensor, including at negative coordinates,
 * land in shared memory as zeros. swizzle_bytes is 0 (rows as they are),
 * 32, 64 or 128 (16-byte chunks of each box row XOR-permuted within
 * 32/64/128 bytes: tilec's tc_swizzle_offset for rows of 2/4/8 chunks).
 * L2 promotion 128 bytes ($TILEC_TMA_L2_PROMOTION may say otherwise), no
 * interleave, element strides 1.
 * Checked first, each failure naming the rule: out 64-byte aligned; base
 * 16-byte aligned; both extents in [1, 2^32]; outer_stride_bytes a multiple
 * of 16, at least one row (inner_elems * elem_bytes) and below 2^40; box
 * sides in [1, 256]; box_inner * elem_bytes a multiple of 16 and, when
 * swizzled, at most swizzle_bytes. Then it needs a device and a driver that
 * has cuTensorMapEncodeTiled (CUDA 12+); the driver's own refusal comes
 * through CU_CHECK. On failure *out (if usable) is zeroed. Pure host work: no GPU
 * access, no synchronisation. */
bool rt_cuda_tensor_map_2d(RtCuda *cu, RtCuTensorMap *out, RtCuDevPtr base, int elem_bytes,
                           unsigned long long inner_elems, unsigned long long outer_elems,
                           unsigned long long outer_stride_bytes, unsigned box_inner,
                           unsigned box_outer, int swizzle_bytes);

/* The same for a row-major tensor of rank 1 to 5 (what lower-tma's copies
 * need: a box with extent 1 along a head or batch index). dims[0] is the
 * innermost (contiguous) extent, stride_bytes[d - 1] the stride of
 * dimension d >= 1, box[d] the box's extent along d; the checks name the
 * dimension they refuse. */
bool rt_cuda_tensor_map(RtCuda *cu, RtCuTensorMap *out, RtCuDevPtr base, int elem_bytes, int rank,
                        const uint64_t *dims, const uint64_t *stride_bytes, const uint32_t *box,
                        int swizzle_bytes);

#ifdef __cplusplus
}
#endif
#endif
