/* tilec.h - the compiler as a library: .tile text in, C or CUDA source out,
 * plus the signature of every kernel so a runtime can check and launch it.
 *
 * Used by the tilec CLI (compiler/main.c) and by the runtime (runtime/).
 *
 * Generated code ABI
 * ------------------
 * C backend (--emit=c): for each kernel K the output defines
 *     void tilec_K(void **args, const int64_t *dyn);
 * args[i] is the i-th parameter: for a tensor, a pointer to its first element
 * (compact row-major, or with the strides its `strides (...)` clause names,
 * whose dynamic symbols are in dyn[] like shape symbols); for a scalar, a pointer to a value of its dtype (float
 * for f32, double for f64, int32_t for i32, int64_t for i64, unsigned char for
 * bool). dyn[j] is the value of the j-th dynamic symbol (TilecKernelInfo).
 * The function runs the whole grid. f16/bf16 elements are uint16_t bit
 * patterns. The output is self-contained C11 (it includes only libc headers).
 *
 * CUDA backend (--emit=cuda): see docs/runtime.md (issue 3). */
#ifndef TILEC_H
#define TILEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_VERSION_STRING "0.1.0"

typedef enum TilecEmit { TILEC_EMIT_CUDA, TILEC_EMIT_C, TILEC_EMIT_IR } TilecEmit;
typedef enum TilecTarget { TILEC_TARGET_SM80, TILEC_TARGET_SM90A, TILEC_TARGET_CPU } TilecTarget;

/* Element types of parameters, matching the IR's dtype order. */
typedef enum TilecDType {
  TILEC_DTYPE_BOOL, TILEC_DTYPE_I32, TILEC_DTYPE_I64, TILEC_DTYPE_F16,
  TILEC_DTYPE_BF16, TILEC_DTYPE_F32, TILEC_DTYPE_F64, TILEC_DTYPE_I8, TILEC_DTYPE_U8,
  TILEC_DTYPE_I16, TILEC_DTYPE_U16, TILEC_DTYPE_U32, TILEC_DTYPE_F8E4M3, TILEC_DTYPE_F8E5M2
} TilecDType;

typedef struct TilecDefine {
  const char *name;
  const char *value; /* integer, true/false, or a float literal */
} TilecDefine;

typedef struct TilecOptions {
  TilecEmit emit;
  TilecTarget target;
  const TilecDefine *defines;
  int ndefines;
  const char *dump_dir;     /* write NN-<pass>.tir after every pass, or NULL */
  const char *print_after;  /* "all" or a pass name: same text to diag_echo */
  FILE *diag_echo;          /* diagnostics echoed here as they come (or NULL) */
  FILE *print_stream;       /* where print_after goes (NULL: stderr) */
  bool no_tma;              /* sm_90a: no TMA copies (so no warp specialization either):
                               the build the runtime launches for tensors whose strides
                               or address TMA cannot take */
  bool cluster_multicast;   /* sm_90a, experimental: persistent GEMMs pair their tiles in
                               2-block clusters sharing B by multicast TMA (pass
                               persistent; measured slower on an H100, so off by default;
                               the runtime sets it from $TILEC_CLUSTER_MULTICAST=1) */
  bool fast_division;       /* CUDA (on by tilec_options_init): a persistent kernel's
                               tile index split over the grid's extents (its / and %)
                               through multipliers computed once per block
                               (runtime/device/tilec_fastdiv.cuh; dim 64 causal 4096
                               0.988 -> 1.009x cuDNN on an H100); the runtime turns it
                               off for $TILEC_FAST_DIVISION=0 */
  bool stream_k;            /* sm_90a: a persistent GEMM splits the k-iterations of its
                               last partial wave of tiles evenly over the blocks (pass
                               stream-k) where that pays (decided per launch on the
                               device). Off by default in the compiler: whole tiles are
                               faster where the last wave is full. The runtime builds a
                               second module with it for launches with a thin last wave
                               (TilecKernelInfo.stream_k_able; $TILEC_STREAM_K=0 never,
                               =1 every build): docs/gpu-codegen.md, "Stream-K" */
  unsigned shape_class;     /* which way each shape choice goes in this build: bit i
                               set = condition i holds (docs/language.md, "Shape
                               choices"); 0, every condition false, by default */
} TilecOptions;

void tilec_options_init(TilecOptions *o); /* emit C, target cpu, fast_division on, nothing else */

/* One dimension of a tensor parameter: a constant or a dynamic symbol. */
typedef struct TilecDim {
  bool is_dynamic;
  int64_t value;       /* when !is_dynamic */
  int symbol;          /* index into TilecKernelInfo.dynamic_symbols */
  const char *name;    /* when !is_dynamic: the constant it was written as
                          (e.g. "dim"), for launch messages; NULL if a literal */
} TilecDim;

enum { TILEC_MAX_RANK = 8 };

typedef struct TilecParamInfo {
  const char *name;
  bool is_tensor;
  TilecDType dtype;
  int rank;                       /* 0 for scalars */
  TilecDim dims[TILEC_MAX_RANK];
  /* Declared with `strides (...)`: the element stride of each dim, a
   * constant or a dynamic symbol the launcher reads from the DLTensor's
   * strides (the last is the constant 1). Otherwise the tensor must be
   * compact row-major. */
  bool has_strides;
  TilecDim strides[TILEC_MAX_RANK];
  /* CUDA sm_90a: the kernel reaches this tensor only through its TMA
   * tensor maps (every access a TMA load or store; no element load or
   * store, no cp.async or cooperative copy left after lower-tma and
   * stage-stores). The runtime may then hand the maps a copy of the tensor
   * with another row pitch (runtime/rt_repack.c). False otherwise, and for
   * scalars. */
  bool tma_only;
} TilecParamInfo;

/* A TMA tensor map the CUDA kernel takes (sm_90a, pass lower-tma): the
 * launcher encodes it from tensor parameter `param` (a box of box[d]
 * elements along dimension d, outermost first; swizzle_bytes 0, 32, 64 or
 * 128) and passes it by value after the dynamic symbols, in this order. */
typedef struct TilecTensorMapInfo {
  int param;
  int box[TILEC_MAX_RANK];
  int swizzle_bytes;
  bool store; /* a TMA store's map: TMA writes whole 16-byte chunks of a row, so the
                 runtime needs the tensor's row length to be a multiple of 16 bytes */
} TilecTensorMapInfo;

typedef struct TilecKernelInfo {
  const char *name;
  const char *entry;              /* symbol in the generated code: tilec_<name> */
  int nparams;
  const TilecParamInfo *params;
  int ndynamic;
  const char *const *dynamic_symbols; /* names, in dyn[] order */
  int threads;                    /* threads per block (constant after specialization) */
  int shared_bytes;               /* static shared memory (CUDA), 0 for C */
  int ntensor_maps;               /* CUDA sm_90a: TMA descriptors to pass, in order */
  const TilecTensorMapInfo *tensor_maps;
  /* CUDA sm_90a (pass persistent): the kernel loops over the tiles of its
   * grid (tilec_result_grid: x * y * z tiles); launch it as a 1-D grid of
   * min(tiles, blocks the GPU holds at once) blocks. */
  int persistent;
  /* Blocks per cluster (compiled in with __cluster_dims__): 2 when the
   * persistent kernel pairs its tiles, 0 otherwise. The 1-D grid must then
   * be a multiple of it; the tile loop runs over x * 2 ceil(y / 2) * z. */
  int cluster;
  /* CUDA sm_90a: the kernel says pdl_sync() (it waits at its start for the
   * kernel before it in the stream): launch it with programmatic stream
   * serialization so it can start under that kernel's tail. */
  int pdl_sync;
  /* CUDA (TilecOptions.fast_division): the persistent kernel splits its tile
   * index with multipliers that hold only below TILEC_MAX_PERSISTENT_TILES
   * tiles; the runtime refuses a launch of more. */
  int fast_division;
  /* CUDA sm_90a (pass stream-k, TilecOptions.stream_k): the persistent
   * kernel splits its last wave's k-iterations over its blocks through a
   * workspace of its module (runtime/device/tilec_stream_k.cuh), so two
   * launches of it must not run at the same time (tilert orders launches
   * on different streams one after the other). */
  int stream_k;
  /* CUDA sm_90a: a persistent GEMM that pass stream-k splits, or would
   * split with TilecOptions.stream_k: the runtime's stream-K build serves
   * its launches with a thin last wave ($TILEC_STREAM_K, tilert). */
  int stream_k_able;
} TilecKernelInfo;

/* The tiles a persistent kernel built with fast_division may walk
 * (IrExpr.tile_split's range: dividends below twice this, divisors up to 16
 * times it, both under 2^31). */
enum { TILEC_MAX_PERSISTENT_TILES = 1 << 26 };

typedef struct TilecResult TilecResult;

/* Compiles `len` bytes of `text` (named `file` in diagnostics). Always sets
 * *out (even on failure, so diagnostics can be read). Returns 0 on success,
 * 1 when the input has errors, 2 for bad options (unknown -D name, bad pass
 * name in print_after...). */
int tilec_compile(const char *file, const char *text, size_t len,
                  const TilecOptions *options, TilecResult **out);

const char *tilec_result_output(const TilecResult *r);      /* emitted text */
size_t tilec_result_output_size(const TilecResult *r);
const char *tilec_result_diagnostics(const TilecResult *r); /* all messages */
/* The IR after specialization and folding, as text: what the runtime hashes
 * into its cache key (with version, target and options). */
const char *tilec_result_specialized_ir(const TilecResult *r);
int tilec_result_num_kernels(const TilecResult *r);
const TilecKernelInfo *tilec_result_kernel(const TilecResult *r, int i);
/* Evaluates the kernel's launch grid for the given dynamic symbol values
 * (a dimension it cannot evaluate comes back 0). */
void tilec_result_grid(const TilecResult *r, int kernel, const int64_t *dyn, int64_t grid[3]);
/* The same where the grid may also name integer scalar parameters
 * (`grid (ceildiv(max_seqlen, block_M), ...)`): params[i] is the value of
 * parameter i when it is a scalar (ignored otherwise; NULL: none given).
 * False when some dimension names a value it was not given. */
bool tilec_result_grid_of(const TilecResult *r, int kernel, const int64_t *dyn, const int64_t *params,
                          int64_t grid[3]);
/* A persistent GEMM's k-iterations per tile for these values (as
 * tilec_result_grid_of), the same for every tile; kernels pass stream-k
 * could split have them (stream_k_able ones and FP8 GEMMs). What the
 * device's split rule needs (runtime/device/tilec_stream_k.cuh), so the
 * runtime can tell before a launch whether its stream-K build would split,
 * and what sizes its persistent grid. False for another kernel or a count
 * it cannot evaluate. */
bool tilec_result_stream_k_iters_of(const TilecResult *r, int kernel, const int64_t *dyn, const int64_t *params,
                                    int64_t *iters);
/* Shape choices (docs/language.md): the conditions on launch-time shapes
 * that kernel `kernel`'s const defaults test. *owned gets the bits of the
 * module's shape class its conditions own, *holds those whose condition
 * holds for these dynamic symbols (and scalar parameters, as for the grid)
 * and the builtin sm_count = `sm_count` (the launching GPU's SMs; the
 * runtime gives 1 on the CPU). A build whose tilec_result_shape_class agrees with *holds on *owned
 * is the one to launch. False when a condition names a value it was not
 * given, or divides by zero. */
bool tilec_result_shape_class_of(const TilecResult *r, int kernel, const int64_t *dyn, const int64_t *params,
                                 int64_t sm_count, unsigned *holds, unsigned *owned);
/* The shape-class bits the module's choices use, over all its kernels. */
unsigned tilec_result_shape_class_bits(const TilecResult *r);
/* How many shape choices kernel `kernel` has (0: one build serves every shape). */
int tilec_result_num_shape_choices(const TilecResult *r, int kernel);
/* The shape class this result was compiled for (TilecOptions.shape_class). */
unsigned tilec_result_shape_class(const TilecResult *r);
void tilec_result_destroy(TilecResult *r); /* accepts NULL */

/* Pass pipeline introspection (for --list-passes and docs). */
int tilec_num_passes(void);
const char *tilec_pass_name(int i);
const char *tilec_pass_summary(int i);
const char *tilec_pass_targets(int i); /* "all", "cpu" or "gpu" */

const char *tilec_version(void);

#ifdef __cplusplus
}
#endif
#endif
