/* host_util.h - helpers shared by the example host programs and the numerics
 * tests: a seeded random generator, tensors that live on the host and, for the
 * GPU path, in device memory (through the runtime's tilert_device_alloc and
 * copies, so nothing here needs CUDA at build time), double-precision
 * references of the example kernels, error measurement, and a small option
 * parser.
 *
 * A HostTensor always keeps a host copy in `host` (elements stored in the
 * tensor's dtype; f16/bf16 as uint16_t bit patterns). `dl` is the DLTensor
 * handed to tilert_launch: it points at `host` on the CPU, at device memory on
 * CUDA. Upload/download copy between the two (no-ops on the CPU). */
#ifndef HOST_UTIL_H
#define HOST_UTIL_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilert.h"

/* ---- random numbers (splitmix64: tiny, good enough for test data) ---- */
typedef struct HostRng {
  uint64_t state;
} HostRng;

/* $TILEC_SEED when set (to reproduce a failure), else derived from the clock. */
uint64_t host_seed(void);
void host_rng_init(HostRng *r, uint64_t seed);
double host_rng_uniform(HostRng *r, double lo, double hi);

double host_now_ms(void);

/* ---- dtypes ---- */
/* DLPack >= 1.1's FP8 type codes (kDLFloat8_e4m3fn, kDLFloat8_e5m2). */
enum { HOST_DL_F8E4M3FN = 10, HOST_DL_F8E5M2 = 12 };
/* "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2", "i8", "u8", "i16", "u16",
 * "i32", "u32", "i64" -> DLDataType; false for anything else. */
bool host_dtype_parse(const char *name, DLDataType *out);
const char *host_dtype_name(DLDataType t);
/* FP8 reference conversions (host_util.c says how): exact decode, and
 * round-to-nearest-even with saturation found by brute force. */
double host_fp8_decode(uint8_t code, bool e5m2);
uint8_t host_fp8_encode(double v, bool e5m2);
/* Unit roundoff of a float dtype (half an ulp at 1.0): 2^-11 for f16. */
double host_dtype_eps(DLDataType t);

/* ---- tensors ---- */
enum { HOST_MAX_RANK = 8 };
typedef struct HostTensor {
  DLTensor dl;
  int64_t shape[HOST_MAX_RANK];
  void *host;      /* host copy, compact row-major */
  size_t numel;
  size_t nbytes;
  TilertContext *gpu; /* the CUDA context holding dl.data, or NULL */
} HostTensor;

/* Allocates (zeroed). When `ctx` is a CUDA context, dl describes a device
 * buffer of that context; when it is NULL or a CPU context, the host copy. */
bool host_tensor_init(HostTensor *t, DLDataType dtype, int ndim, const int64_t *shape,
                      TilertContext *ctx);
void host_tensor_free(HostTensor *t); /* accepts a zeroed struct */
/* Element i of the host copy, as a double / stored rounded to the dtype. */
double host_tensor_get(const HostTensor *t, size_t i);
void host_tensor_set(HostTensor *t, size_t i, double v);
/* The host copy as a malloc'ed array of doubles (exits when out of memory). */
double *host_tensor_to_double(const HostTensor *t);
void host_tensor_fill_uniform(HostTensor *t, HostRng *r, double lo, double hi);
/* Every element NaN (host copy); upload afterwards for the GPU. */
void host_tensor_poison(HostTensor *t);
bool host_tensor_upload(HostTensor *t);
bool host_tensor_download(HostTensor *t);

/* A strided view of a storage tensor (what a PyTorch slice or transpose is):
 * `dl` has the view's shape, element strides and byte offset over the
 * storage's data (host or device), for a kernel parameter declared with
 * strides (...). */
typedef struct HostView {
  DLTensor dl;
  int64_t shape[HOST_MAX_RANK];
  int64_t strides[HOST_MAX_RANK];
  int64_t offset; /* in elements */
} HostView;
void host_view_init(HostView *v, const HostTensor *storage, int ndim, const int64_t *shape,
                    const int64_t *strides, int64_t offset);
/* Copies the view's elements out of / into the storage's host copy, as the
 * compact tensor `t` (same dtype; t->shape must be the view's shape). */
void host_view_gather(const HostView *v, const HostTensor *storage, HostTensor *t);
void host_view_scatter(const HostView *v, HostTensor *storage, const HostTensor *t);

/* Uploads the `ntensors` tensors, launches kern `iters` (>= 1) times and
 * downloads `out`; *best_ms is the fastest launch (host wall clock around a
 * synchronous launch). The first launch is the one whose output is checked:
 * later ones recompute the same values. Prints what failed and returns
 * false. */
bool host_launch_timed(TilertContext *ctx, TilertKernel *kern, const TilertArg *args, int nargs,
                       HostTensor *const *tensors, int ntensors, HostTensor *out, long iters,
                       double *best_ms);

/* ---- references (double precision, on the host copies) ---- */
/* softmax(Q K^T * sm_scale [causal mask]) V per (batch, head), BSHD layout;
 * out has batch*seq*heads*dim doubles. */
void host_ref_attention(const HostTensor *q, const HostTensor *k, const HostTensor *v,
                        bool causal, double sm_scale, double *out);
/* The general form, for the attention variants: Q is [B, Sq, H, D], K and V
 * [B, Skv, Hkv, D] with H a multiple of Hkv (query head h reads KV head
 * h / (H / Hkv)); causal is aligned to the bottom right (query i sits at
 * position Skv - Sq + i and sees keys 0 .. that position; a row that sees no
 * key gets 0). lse, when not NULL, receives [B, H, Sq] natural-log
 * log-sum-exps of the scaled scores (-inf for a row that sees no key). */
void host_ref_attention_general(const HostTensor *q, const HostTensor *k, const HostTensor *v,
                                bool causal, double sm_scale, double *out, double *lse);
/* C[M,N] = A[M,K] @ B[K,N]. */
void host_ref_gemm(const HostTensor *a, const HostTensor *b, double *c);
/* Row softmax of X[M,N]. */
void host_ref_softmax(const HostTensor *x, double *y);
/* C[M,N] = gelu(A[M,K] @ B[K,N] + bias[N]), the exact (erf) GELU. */
void host_ref_gemm_bias_gelu(const HostTensor *a, const HostTensor *b, const HostTensor *bias, double *c);
/* Y[M,N] = X / sqrt(mean(X^2 along N) + eps) * w[N] (RMSNorm). */
void host_ref_rmsnorm(const HostTensor *x, const HostTensor *w, double eps, double *y);

/* ---- errors ---- */
typedef struct HostError {
  double max_abs;     /* max |out - ref| */
  double max_ref;     /* max |ref| */
  double rel_to_max;  /* max_abs / max_ref: the quantity the bounds use */
  double max_rel;     /* max |out - ref| / |ref| over elements with |ref| >= 1e-3 * max_ref */
  size_t nonfinite;   /* NaN or inf in the output (e.g. an element never written) */
  size_t worst;       /* index of the largest |out - ref| (or the first non-finite) */
} HostError;

HostError host_compare(const HostTensor *out, const double *ref);
/* Compares two tensors of the same shape (e.g. GPU output against CPU output). */
HostError host_compare_tensors(const HostTensor *out, const HostTensor *ref);
/* True when the output has no non-finite element and rel_to_max <= bound. */
bool host_error_ok(const HostError *e, double bound);

/* ---- where the example .tile files are ---- */
/* DIR/file, DIR being $TILEC_EXAMPLES_DIR when set (a moved source tree, or a
 * deliberately broken copy of a kernel to see a test fail), else the source
 * tree's examples/ (compiled in). Returns a static buffer. */
const char *host_example_path(const char *file);

/* ---- temporary directories (per-test cache dirs) ---- */
/* mkdtemp under $TMPDIR (or /tmp); returns a malloc'ed path or NULL. */
char *host_make_temp_dir(const char *prefix);
/* rm -r; returns false if something could not be removed. */
bool host_remove_tree(const char *path);

/* ---- options: --name VALUE or --name=VALUE ---- */
/* If argv[*i] is option `name`, stores its value, advances *i past it and
 * returns true. A missing value prints an error and exits with status 2. */
bool host_opt(int argc, char **argv, int *i, const char *name, const char **value);
/* Parses an integer option value; exits with status 2 on garbage. */
long host_parse_long(const char *name, const char *value, long min, long max);

/* --device auto|cpu|cuda: true when valid, else a message naming prog. */
bool host_device_valid(const char *prog, const char *device_name);
/* The last branch of an example's argument loop: argv[*i] is `--device
 * NAME` (checked, stored in *device_name: true) or not an argument the
 * example knows (message, false: exit with 2). */
bool host_device_arg(int argc, char **argv, int *i, const char **device_name);
/* A table-driven argument loop: each main lists its own options, and
 * host_parse_options handles the rest every example shares (--help/-h,
 * --device, "unknown argument"). */
typedef enum HostOptKind {
  HOST_OPT_LONG,      /* long *dest, in [min, max] */
  HOST_OPT_LONG_TEXT, /* const char **dest, checked as an integer in [min, max] (a -D value) */
  HOST_OPT_TEXT,      /* const char **dest, any text */
  HOST_OPT_CHOICE,    /* const char **dest, one of `choices` ("a|b|c") */
  HOST_OPT_FLAG,      /* bool *dest set true; takes no value */
  HOST_OPT_DEFINE,    /* const char **dest[*count], NAME=VALUE, at most max of them */
} HostOptKind;
typedef struct HostOption {
  const char *name; /* "--m" */
  HostOptKind kind;
  void *dest;
  long min, max;
  const char *choices; /* HOST_OPT_CHOICE */
  int *count;          /* HOST_OPT_DEFINE */
} HostOption;
/* Parses argv[1..] against opts. --help/-h prints "usage: PROG <usage>" to
 * stdout; --device NAME is checked and stored in *device_name. Returns -1
 * when the program goes on, else its exit status: 0 after --help, 2 after a
 * bad argument (message printed). */
int host_parse_options(int argc, char **argv, const char *usage, const HostOption *opts,
                       int nopts, const char **device_name);
#define HOST_NOPTS(opts) ((int)(sizeof(opts) / sizeof((opts)[0])))

/* Loads `path` with the -D bindings `defs` and returns its kernel `kernel`;
 * *mod receives the module (the caller destroys it). On failure prints
 * "error: <runtime error>", destroys the module (*mod = NULL) and returns
 * NULL. */
TilertKernel *host_load_kernel(TilertContext *ctx, const char *path, const TilecDefine *defs,
                               int ndefs, const char *kernel, TilertModule **mod);
/* A runtime context for --device; *cfg is filled (the CPU comparison of the
 * flagship reuses it). NULL after printing the runtime's error. */
TilertContext *host_context_open(const char *device_name, TilertConfig *cfg);

#endif
