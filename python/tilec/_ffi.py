"""_ffi.py - ctypes declarations of libtilert (runtime/include/tilert.h and
compiler/include/tilec.h) and the code that finds and opens the library.

Only the standard library is used. The structures below mirror the C ones
field by field (ctypes applies the same alignment rules as the C compiler on
the platforms we build for); the status names mirror TILERT_STATUSES in
tilert.h, in the same order (tests/python checks both against the header).

Where the library is looked for, first hit wins:
  1. tilec/lib/libtilert.so inside this package: the copy an installed
     package carries (pip install . / a wheel; pyproject.toml). A source
     checkout has none, so there the dev-tree lookup below applies as before;
  2. $TILEC_LIBRARY: a path to libtilert.so (or a directory holding it);
  3. $TILEC_BUILD_DIR/lib/libtilert.so;
  4. <repo>/build/lib/libtilert.so, the repository this package sits in
     (python/tilec/../../build/lib);
  5. the system's search path (ctypes.util.find_library("tilert")).
"""

import ctypes
import ctypes.util
import os

# ---- status codes (TILERT_STATUSES order) ----

STATUS_NAMES = (
    "OK",
    "INVALID_ARGUMENT",
    "IO_ERROR",
    "COMPILE_ERROR",
    "CC_FAILED",
    "LOAD_FAILED",
    "NOT_FOUND",
    "LAUNCH_MISMATCH",
    "NO_GPU",
    "NVRTC_FAILED",
    "CUDA_ERROR",
    "OUT_OF_MEMORY",
)
TILERT_OK = 0

# TilertDevice
DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA = 0, 1, 2
DEVICE_NAMES = {DEVICE_AUTO: "auto", DEVICE_CPU: "cpu", DEVICE_CUDA: "cuda"}

# TilertArgKind
ARG_TENSOR, ARG_FLOAT, ARG_INT = 0, 1, 2

# TilecDType, in the enum's order.
DTYPE_NAMES = ("bool", "i32", "i64", "f16", "bf16", "f32", "f64", "i8", "u8", "i16", "u16", "u32",
               "f8e4m3", "f8e5m2")

TILEC_MAX_RANK = 8

# DLPack device types this package cares about (dlpack.h DLDeviceType).
DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 1, 2, 3, 13


# ---- structures ----

class TilecDefine(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class TilecDim(ctypes.Structure):
    _fields_ = [
        ("is_dynamic", ctypes.c_bool),
        ("value", ctypes.c_int64),
        ("symbol", ctypes.c_int),
        ("name", ctypes.c_char_p),
    ]


class TilecParamInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("is_tensor", ctypes.c_bool),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("dims", TilecDim * TILEC_MAX_RANK),
        ("has_strides", ctypes.c_bool),
        ("strides", TilecDim * TILEC_MAX_RANK),
        ("tma_only", ctypes.c_bool),
    ]


class TilecKernelInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("entry", ctypes.c_char_p),
        ("nparams", ctypes.c_int),
        ("params", ctypes.POINTER(TilecParamInfo)),
        ("ndynamic", ctypes.c_int),
        ("dynamic_symbols", ctypes.POINTER(ctypes.c_char_p)),
        ("threads", ctypes.c_int),
        ("shared_bytes", ctypes.c_int),
        ("ntensor_maps", ctypes.c_int),
        ("tensor_maps", ctypes.c_void_p),
        ("persistent", ctypes.c_int),
        ("cluster", ctypes.c_int),
        ("pdl_sync", ctypes.c_int),
        ("fast_division", ctypes.c_int),
        ("stream_k", ctypes.c_int),
        ("stream_k_able", ctypes.c_int),
    ]


class TilertConfig(ctypes.Structure):
    _fields_ = [
        ("device", ctypes.c_int),
        ("cache_dir", ctypes.c_char_p),
        ("disable_cache", ctypes.c_bool),
        ("cc", ctypes.c_char_p),
    ]


class TilertArg(ctypes.Structure):
    # `tensor` is a const DLTensor *: kept as a plain address, since the
    # binding never reads the tensor itself (the runtime validates it).
    _fields_ = [
        ("kind", ctypes.c_int),
        ("tensor", ctypes.c_void_p),
        ("f", ctypes.c_double),
        ("i", ctypes.c_int64),
    ]


# DLManagedTensorVersioned (DLPack >= 1.0) starts with a DLPackVersion (two
# uint32), manager_ctx, deleter and uint64 flags; its DLTensor follows.
DL_VERSIONED_TENSOR_OFFSET = 8 + ctypes.sizeof(ctypes.c_void_p) * 2 + 8
DL_FLAG_READ_ONLY = 1 << 0


# ---- finding and opening the library ----

_LIB_NAME = "libtilert.so"


_HERE = os.path.dirname(os.path.abspath(__file__))


def bundled_path(*parts):
    """A file the installed package carries (tilec/lib/libtilert.so,
    tilec/bin/tilec); None in a source checkout, which carries none."""
    path = os.path.join(_HERE, *parts)
    return path if os.path.exists(path) else None


def _candidates():
    bundled = bundled_path("lib", _LIB_NAME)
    if bundled:
        yield bundled
        return  # the package and its own library always go together
    env = os.environ.get("TILEC_LIBRARY")
    if env:
        yield os.path.join(env, _LIB_NAME) if os.path.isdir(env) else env
        return  # an explicit choice is not second-guessed
    build = os.environ.get("TILEC_BUILD_DIR")
    if build:
        yield os.path.join(build, "lib", _LIB_NAME)
    yield os.path.join(_HERE, "..", "..", "build", "lib", _LIB_NAME)
    found = ctypes.util.find_library("tilert")
    if found:
        yield found


def library_path():
    """The path the library is (or would be) loaded from, or None."""
    for path in _candidates():
        if os.path.sep not in path or os.path.exists(path):
            return os.path.normpath(path) if os.path.sep in path else path
    return None


def _declare(lib):
    c_int, c_char_p, c_void_p, c_size_t = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t
    pp = ctypes.POINTER(c_void_p)
    sigs = {
        "tilert_strerror": (c_char_p, [c_int]),
        "tilert_version": (c_char_p, []),
        "tilec_version": (c_char_p, []),
        "tilert_context_create": (c_int, [ctypes.POINTER(TilertConfig), pp]),
        "tilert_context_destroy": (None, [c_void_p]),
        "tilert_last_error": (c_char_p, [c_void_p]),
        "tilert_context_device": (c_int, [c_void_p]),
        "tilert_context_device_note": (c_char_p, [c_void_p]),
        "tilert_module_load_file": (
            c_int, [c_void_p, c_char_p, ctypes.POINTER(TilecDefine), c_int, pp]),
        "tilert_module_load_string": (
            c_int, [c_void_p, c_char_p, c_char_p, c_size_t, ctypes.POINTER(TilecDefine), c_int, pp]),
        "tilert_module_destroy": (None, [c_void_p]),
        "tilert_module_from_cache": (ctypes.c_bool, [c_void_p]),
        "tilert_module_compile_log": (c_char_p, [c_void_p]),
        "tilert_module_warnings": (c_char_p, [c_void_p]),
        "tilert_module_get_kernel": (c_int, [c_void_p, c_char_p, pp]),
        "tilert_kernel_info": (ctypes.POINTER(TilecKernelInfo), [c_void_p]),
        "tilert_launch": (c_int, [c_void_p, ctypes.POINTER(TilertArg), c_int, c_void_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


_lib = None


def lib():
    """Opens libtilert once; raises OSError naming every place looked at."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        tried.append(path)
        if os.path.sep in path and not os.path.exists(path):
            continue
        try:
            _lib = _declare(ctypes.CDLL(path))
            return _lib
        except OSError as e:
            tried[-1] = "%s (%s)" % (path, e)
    raise OSError(
        "tilec: cannot find libtilert.so; build the `tilert` target "
        "(cmake --build build --target tilert) or set $TILEC_LIBRARY. Looked at: "
        + ", ".join(tried))


# ---- PyCapsule access (DLPack) ----

_pyapi = ctypes.pythonapi
_pyapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_pyapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_pyapi.PyCapsule_IsValid.restype = ctypes.c_int
_pyapi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def capsule_pointer(capsule, name):
    """The pointer stored in `capsule` when its name is `name` (bytes), else None."""
    if not _pyapi.PyCapsule_IsValid(capsule, name):
        return None
    return _pyapi.PyCapsule_GetPointer(capsule, name)
