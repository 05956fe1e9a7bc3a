/* rt_validate.c - checks launch arguments against a kernel's signature
 * (TilecKernelInfo) before anything runs, and converts scalar arguments to
 * their parameter's dtype; both paths' launches use it (floor 1, rt_base.h).
 *
 * Per argument, in order: tensor vs scalar; for a tensor its device type and
 * ordinal (the CUDA path wants device 0, the context's), dtype, rank, each
 * dim (a constant must match; a dynamic symbol is bound by the first tensor
 * that mentions it and every later mention must agree), strides: compact
 * row-major (size-1 dims ignored), or for a parameter declared with
 * `strides (...)` any positive, non-overlapping strides with a unit
 * innermost one, which bind the declared strides as dims bind shapes
 * (DLPack strides are in elements; NULL means compact), non-NULL and aligned data (unless
 * it has no elements). For a scalar, that its kind converts to the dtype. The
 * first mismatch becomes a message that names the kernel, the argument's
 * position (1-based) and name, and what was expected. A valid scalar is then
 * converted to the bytes the generated code reads (rt_convert_scalar). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_base.h"

/* DLPack >= 0.8 has kDLBool = 6; our dlpack.h may predate it. */
enum { RT_DL_BOOL = 6 };
/* DLPack >= 1.1's FP8 codes (kDLFloat8_e4m3fn, kDLFloat8_e5m2). */
enum { RT_DL_F8E4M3FN = 10, RT_DL_F8E5M2 = 12 };

const char *rt_dtype_name(TilecDType t) {
  switch (t) {
  case TILEC_DTYPE_BOOL: return "bool";
  case TILEC_DTYPE_I32: return "i32";
  case TILEC_DTYPE_I64: return "i64";
  case TILEC_DTYPE_F16: return "f16";
  case TILEC_DTYPE_BF16: return "bf16";
  case TILEC_DTYPE_F32: return "f32";
  case TILEC_DTYPE_F64: return "f64";
  case TILEC_DTYPE_I8: return "i8";
  case TILEC_DTYPE_U8: return "u8";
  case TILEC_DTYPE_I16: return "i16";
  case TILEC_DTYPE_U16: return "u16";
  case TILEC_DTYPE_U32: return "u32";
  case TILEC_DTYPE_F8E4M3: return "f8e4m3";
  case TILEC_DTYPE_F8E5M2: return "f8e5m2";
  }
  return "?";
}

static bool dtype_is_float(TilecDType t) {
  return t == TILEC_DTYPE_F16 || t == TILEC_DTYPE_BF16 || t == TILEC_DTYPE_F32 ||
         t == TILEC_DTYPE_F64 || t == TILEC_DTYPE_F8E4M3 || t == TILEC_DTYPE_F8E5M2;
}

static int dtype_bytes(TilecDType t) {
  switch (t) {
  case TILEC_DTYPE_BOOL:
  case TILEC_DTYPE_I8:
  case TILEC_DTYPE_U8:
  case TILEC_DTYPE_F8E4M3:
  case TILEC_DTYPE_F8E5M2: return 1;
  case TILEC_DTYPE_F16:
  case TILEC_DTYPE_BF16:
  case TILEC_DTYPE_I16:
  case TILEC_DTYPE_U16: return 2;
  case TILEC_DTYPE_I32:
  case TILEC_DTYPE_U32:
  case TILEC_DTYPE_F32: return 4;
  case TILEC_DTYPE_I64:
  case TILEC_DTYPE_F64: return 8;
  }
  return 1;
}

static bool dl_dtype_matches(DLDataType d, TilecDType t) {
  if (d.lanes != 1) return false;
  switch (t) {
  case TILEC_DTYPE_BOOL: return d.bits == 8 && (d.code == RT_DL_BOOL || d.code == kDLUInt);
  case TILEC_DTYPE_I32: return d.code == kDLInt && d.bits == 32;
  case TILEC_DTYPE_I64: return d.code == kDLInt && d.bits == 64;
  case TILEC_DTYPE_F16: return d.code == kDLFloat && d.bits == 16;
  case TILEC_DTYPE_BF16: return d.code == kDLBfloat && d.bits == 16;
  case TILEC_DTYPE_F32: return d.code == kDLFloat && d.bits == 32;
  case TILEC_DTYPE_F64: return d.code == kDLFloat && d.bits == 64;
  case TILEC_DTYPE_I8: return d.code == kDLInt && d.bits == 8;
  case TILEC_DTYPE_U8: return d.code == kDLUInt && d.bits == 8;
  case TILEC_DTYPE_I16: return d.code == kDLInt && d.bits == 16;
  case TILEC_DTYPE_U16: return d.code == kDLUInt && d.bits == 16;
  case TILEC_DTYPE_U32: return d.code == kDLUInt && d.bits == 32;
  /* FP8: DLPack's FP8 codes, or raw bytes (uint8) holding the codes. */
  case TILEC_DTYPE_F8E4M3: return d.bits == 8 && (d.code == RT_DL_F8E4M3FN || d.code == kDLUInt);
  case TILEC_DTYPE_F8E5M2: return d.bits == 8 && (d.code == RT_DL_F8E5M2 || d.code == kDLUInt);
  }
  return false;
}

static void dl_dtype_str(DLDataType d, char *out, size_t size) {
  const char *code;
  switch (d.code) {
  case kDLInt: code = "int"; break;
  case kDLUInt: code = "uint"; break;
  case kDLFloat: code = "float"; break;
  case kDLBfloat: code = "bfloat"; break;
  case kDLComplex: code = "complex"; break;
  case kDLOpaqueHandle: code = "handle"; break;
  case RT_DL_BOOL: code = "bool"; break;
  default: snprintf(out, size, "(code %u, bits %u, lanes %u)", d.code, d.bits, d.lanes); return;
  }
  if (d.lanes == 1) snprintf(out, size, "%s%u", code, d.bits);
  else snprintf(out, size, "%s%ux%u", code, d.bits, d.lanes);
}

static const char *dl_device_name(DLDeviceType t) {
  switch ((int)t) {
  case kDLCPU: return "CPU";
  case kDLCUDA: return "CUDA";
  case kDLCUDAHost: return "CUDAHost";
  case kDLOpenCL: return "OpenCL";
  case kDLVulkan: return "Vulkan";
  case kDLMetal: return "Metal";
  case kDLVPI: return "VPI";
  case kDLROCM: return "ROCM";
  case kDLROCMHost: return "ROCMHost";
  case kDLExtDev: return "ExtDev";
  case kDLCUDAManaged: return "CUDAManaged";
  }
  return "unknown";
}

/* "f32[n, 64]" */
static void param_type_str(const TilecKernelInfo *info, const TilecParamInfo *p, char *out,
                           size_t size) {
  size_t len = (size_t)snprintf(out, size, "%s", rt_dtype_name(p->dtype));
  if (!p->is_tensor) return;
  for (int d = 0; d < p->rank && len < size; d++) {
    const TilecDim *dim = &p->dims[d];
    const char *sep = d ? ", " : "[";
    if (dim->is_dynamic)
      len += (size_t)snprintf(out + len, size - len, "%s%s", sep, info->dynamic_symbols[dim->symbol]);
    else
      len += (size_t)snprintf(out + len, size - len, "%s%lld", sep, (long long)dim->value);
  }
  if (len < size) snprintf(out + len, size - len, "]");
}

typedef struct Checker {
  const TilecKernelInfo *info;
  char *msg;
  size_t size;
} Checker;

/* "<kernel>: argument <i> '<name>': <what>"; returns false. */
static bool fail(const Checker *c, int arg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(const Checker *c, int arg, const char *fmt, ...) {
  int n = 0;
  if (arg >= 0)
    n = snprintf(c->msg, c->size, "%s: argument %d '%s': ", c->info->name, arg + 1,
                 c->info->params[arg].name);
  else
    n = snprintf(c->msg, c->size, "%s: ", c->info->name);
  if (n < 0 || (size_t)n >= c->size) return false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg + n, c->size - (size_t)n, fmt, ap);
  va_end(ap);
  return false;
}

static bool check_scalar(const Checker *c, int i, const TilertArg *a) {
  const TilecParamInfo *p = &c->info->params[i];
  if (a->kind == TILERT_ARG_TENSOR)
    return fail(c, i, "expected a scalar %s, got a tensor", rt_dtype_name(p->dtype));
  if (a->kind != TILERT_ARG_FLOAT && a->kind != TILERT_ARG_INT)
    return fail(c, i, "unknown argument kind %d", (int)a->kind);
  if (dtype_is_float(p->dtype)) return true; /* a float or an int converts */
  if (a->kind == TILERT_ARG_FLOAT)
    return fail(c, i, "expected an integer scalar (%s), got a float (%g); use tilert_arg_int",
                rt_dtype_name(p->dtype), a->f);
  if (p->dtype == TILEC_DTYPE_I32 && (a->i < INT32_MIN || a->i > INT32_MAX))
    return fail(c, i, "value %lld does not fit in i32", (long long)a->i);
  if (p->dtype == TILEC_DTYPE_BOOL && a->i != 0 && a->i != 1)
    return fail(c, i, "value %lld is not a bool (0 or 1)", (long long)a->i);
  return true;
}

/* Dim (or stride) d of argument i has value n; `want` is what the signature
 * says: a constant must match, a dynamic symbol is bound by its first
 * mention and every later one must agree. */
static bool bind_dim(const Checker *c, int i, const char *what, int d, int64_t n, const TilecDim *want,
                     int64_t *dyn, int *bound_by) {
  const TilecKernelInfo *info = c->info;
  if (!want->is_dynamic) {
    if (n == want->value) return true;
    if (want->name)
      return fail(c, i, "%s %d is %lld, expected %lld (%s)", what, d, (long long)n, (long long)want->value,
                  want->name);
    return fail(c, i, "%s %d is %lld, expected %lld", what, d, (long long)n, (long long)want->value);
  }
  int s = want->symbol;
  if (s < 0 || s >= info->ndynamic)
    return fail(c, i, "%s %d names dynamic symbol #%d of %d (bad kernel info)", what, d, s, info->ndynamic);
  if (bound_by[s] < 0) {
    bound_by[s] = i;
    dyn[s] = n;
  } else if (dyn[s] != n) {
    return fail(c, i, "%s %d is %lld but %s = %lld from argument %d '%s'", what, d, (long long)n,
                info->dynamic_symbols[s], (long long)dyn[s], bound_by[s] + 1, info->params[bound_by[s]].name);
  }
  return true;
}

/* A parameter declared with `strides (...)`: the tensor's element strides
 * (DLPack's, or compact when NULL) bind the declared ones. The innermost
 * must be 1, none negative or zero, and no two elements may share an
 * address (sorted by stride, each stride at least the span of the dims
 * inside it). A dim of size 1 is never stepped: its stride is free (not
 * checked against a symbol bound elsewhere; binds it only if nothing else
 * does). An empty tensor is not addressed at all. */
static bool check_declared_strides(const Checker *c, int i, const DLTensor *t, bool empty, int64_t *dyn,
                                   int *bound_by) {
  const TilecParamInfo *p = &c->info->params[i];
  const int rank = p->rank;
  int64_t st[TILEC_MAX_RANK], compact = 1;
  for (int d = rank - 1; d >= 0; d--) {
    st[d] = t->strides ? t->strides[d] : compact;
    compact *= t->shape[d];
  }
  if (empty) {
    /* Bind what the strides name so the symbols exist; nothing is checked. */
    for (int d = 0; d < rank; d++)
      if (p->strides[d].is_dynamic && bound_by[p->strides[d].symbol] < 0)
        (void)bind_dim(c, i, "stride", d, st[d], &p->strides[d], dyn, bound_by);
    return true;
  }
  for (int d = 0; d < rank; d++) {
    if (t->shape[d] == 1) continue;
    if (d == rank - 1 && st[d] != 1)
      return fail(c, i,
                  "the innermost dim %d has stride %lld; tensors need a contiguous last dim (stride 1); "
                  "copy it first (e.g. .contiguous())", d, (long long)st[d]);
    if (st[d] < 1)
      return fail(c, i, "dim %d has stride %lld; strides must be positive (no flipped or broadcast views)", d,
                  (long long)st[d]);
  }
  /* No overlap: sort the dims of size > 1 by stride (insertion sort, rank <= 8). */
  int order[TILEC_MAX_RANK], n = 0;
  for (int d = 0; d < rank; d++) {
    if (t->shape[d] == 1) continue;
    int k = n++;
    while (k > 0 && st[order[k - 1]] > st[d]) {
      order[k] = order[k - 1];
      k--;
    }
    order[k] = d;
  }
  for (int k = 1; k < n; k++) {
    const int in = order[k - 1], out = order[k];
    const int64_t span = st[in] * t->shape[in];
    if (st[out] < span)
      return fail(c, i,
                  "strides overlap: dim %d (stride %lld) steps inside dim %d (stride %lld x %lld elements), "
                  "so two indices name one element", out, (long long)st[out], in, (long long)st[in],
                  (long long)t->shape[in]);
  }
  for (int pass = 0; pass < 2; pass++) /* size-1 dims last: they bind only what nothing else does */
    for (int d = 0; d < rank; d++) {
      const TilecDim *want = &p->strides[d];
      if ((t->shape[d] == 1) != (pass == 1)) continue;
      if (t->shape[d] == 1 && (!want->is_dynamic || bound_by[want->symbol] >= 0)) continue;
      if (!bind_dim(c, i, "stride", d, st[d], want, dyn, bound_by)) return false;
    }
  return true;
}

static bool check_tensor(const Checker *c, int i, const TilertArg *a, DLDeviceType want_device,
                         int want_device_id, int64_t *dyn, int *bound_by) {
  const TilecKernelInfo *info = c->info;
  const TilecParamInfo *p = &info->params[i];
  char want[256], have[64];
  param_type_str(info, p, want, sizeof want);
  if (a->kind != TILERT_ARG_TENSOR)
    return fail(c, i, "expected a tensor %s, got a scalar", want);
  const DLTensor *t = a->tensor;
  if (!t) return fail(c, i, "the DLTensor pointer is NULL");
  if (t->device.device_type != want_device)
    return fail(c, i, "device is %s:%d, expected %s", dl_device_name(t->device.device_type),
                t->device.device_id, dl_device_name(want_device));
  if (want_device_id >= 0 && t->device.device_id != want_device_id)
    return fail(c, i, "device is %s:%d, expected %s:%d (the context's device)",
                dl_device_name(t->device.device_type), t->device.device_id,
                dl_device_name(want_device), want_device_id);
  if (!dl_dtype_matches(t->dtype, p->dtype)) {
    dl_dtype_str(t->dtype, have, sizeof have);
    return fail(c, i, "dtype is %s, expected %s", have, rt_dtype_name(p->dtype));
  }
  if (t->ndim != p->rank)
    return fail(c, i, "rank is %d, expected %d (%s)", t->ndim, p->rank, want);
  if (t->ndim > 0 && !t->shape) return fail(c, i, "shape is NULL");

  bool empty = false;
  for (int d = 0; d < p->rank; d++) {
    int64_t n = t->shape[d];
    if (n < 0) return fail(c, i, "dim %d is %lld (negative)", d, (long long)n);
    if (n == 0) empty = true;
    if (!bind_dim(c, i, "dim", d, n, &p->dims[d], dyn, bound_by)) return false;
  }

  if (p->has_strides) {
    if (!check_declared_strides(c, i, t, empty, dyn, bound_by)) return false;
  } else if (t->strides && !empty) {
    int64_t expect = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
      if (t->shape[d] != 1 && t->strides[d] != expect)
        return fail(c, i,
                    "strides are not compact row-major: dim %d has stride %lld, expected %lld "
                    "(a parameter declared with strides (...) takes views whose last dim has stride 1)",
                    d, (long long)t->strides[d], (long long)expect);
      expect *= t->shape[d];
    }
  }
  if (!empty) {
    if (!t->data) return fail(c, i, "data is NULL");
    uintptr_t addr = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    int align = dtype_bytes(p->dtype);
    if (addr % (uintptr_t)align != 0)
      return fail(c, i, "data + byte_offset (%p + %llu) is not aligned to %d bytes", t->data,
                  (unsigned long long)t->byte_offset, align);
  }
  return true;
}

bool rt_validate(const TilecKernelInfo *info, const TilertArg *args, int nargs,
                 DLDeviceType want_device, int want_device_id, int64_t *dyn, char *msg,
                 size_t msg_size) {
  Checker c = {info, msg, msg_size};
  msg[0] = '\0';
  if (nargs != info->nparams)
    return fail(&c, -1, "expected %d argument%s, got %d", info->nparams,
                info->nparams == 1 ? "" : "s", nargs);
  if (nargs > 0 && !args) return fail(&c, -1, "args is NULL");

  int stack_bound[64];
  int *bound_by = info->ndynamic <= 64 ? stack_bound : malloc((size_t)info->ndynamic * sizeof(int));
  if (!bound_by) return fail(&c, -1, "out of memory");
  for (int s = 0; s < info->ndynamic; s++) bound_by[s] = -1;

  bool ok = true;
  for (int i = 0; i < nargs && ok; i++)
    ok = info->params[i].is_tensor
             ? check_tensor(&c, i, &args[i], want_device, want_device_id, dyn, bound_by)
             : check_scalar(&c, i, &args[i]);
  for (int s = 0; s < info->ndynamic && ok; s++)
    if (bound_by[s] < 0)
      ok = fail(&c, -1, "dynamic symbol '%s' is not a dim of any tensor argument",
                info->dynamic_symbols[s]);
  if (bound_by != stack_bound) free(bound_by);
  return ok;
}

static bool same_text(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool same_dim(const TilecDim *a, const TilecDim *b) {
  return a->is_dynamic == b->is_dynamic &&
         (a->is_dynamic ? a->symbol == b->symbol : a->value == b->value && same_text(a->name, b->name));
}

bool rt_same_signature(const TilecKernelInfo *a, const TilecKernelInfo *b) {
  if (a == b) return true;
  if (!same_text(a->name, b->name) || a->nparams != b->nparams || a->ndynamic != b->ndynamic) return false;
  for (int s = 0; s < a->ndynamic; s++)
    if (!same_text(a->dynamic_symbols[s], b->dynamic_symbols[s])) return false;
  for (int i = 0; i < a->nparams; i++) {
    const TilecParamInfo *p = &a->params[i], *q = &b->params[i];
    if (!same_text(p->name, q->name) || p->is_tensor != q->is_tensor || p->dtype != q->dtype)
      return false;
    if (!p->is_tensor) continue;
    if (p->rank != q->rank || p->has_strides != q->has_strides) return false;
    for (int d = 0; d < p->rank; d++)
      if (!same_dim(&p->dims[d], &q->dims[d]) || (p->has_strides && !same_dim(&p->strides[d], &q->strides[d])))
        return false;
  }
  return true;
}

/* After validation, so an i32's range and the scalar's kind are known good. */
void rt_convert_scalar(const TilertArg *a, TilecDType t, RtScalar *out) {
  double f = a->kind == TILERT_ARG_FLOAT ? a->f : (double)a->i;
  switch (t) {
  case TILEC_DTYPE_F32: out->f32 = (float)f; break;
  case TILEC_DTYPE_F64: out->f64 = f; break;
  case TILEC_DTYPE_F16: out->bits16 = tilert_f32_to_f16((float)f); break;
  case TILEC_DTYPE_BF16: out->bits16 = tilert_f32_to_bf16((float)f); break;
  case TILEC_DTYPE_I32: out->i32 = (int32_t)a->i; break; /* range checked */
  case TILEC_DTYPE_I64: out->i64 = a->i; break;
  case TILEC_DTYPE_BOOL: out->b = a->i != 0; break;
  default: out->i64 = a->i; break; /* storage-only dtypes: sema refuses such scalars */
  }
}
