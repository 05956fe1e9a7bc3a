"""tilec - a thin ctypes binding of libtilert, the tilec runtime.

    import numpy as np, tilec
    ctx = tilec.Context()                                  # "auto": CUDA if usable, else CPU
    mod = ctx.load("examples/gemm.tile", defines={"dtype": "f16", "block_M": 32})
    gemm = mod.kernel("gemm")
    print(gemm.info)                                       # names, dtypes, dims, threads...
    a = np.ones((100, 45), np.float16); b = np.ones((45, 70), np.float16)
    c = np.empty((100, 70), np.float16)
    gemm(a, b, c)                                          # c = a @ b

How it works: Context, Module and Kernel wrap the runtime's opaque handles
(tilert.h) one to one. A launch argument is either a tensor, meaning any
object with `__dlpack__` (NumPy, PyTorch, CuPy, JAX arrays), or a Python
number (a scalar argument). For a tensor the binding asks the object for a
DLPack capsule, reads the DLManagedTensor* out of it with
PyCapsule_GetPointer and hands the runtime a pointer to its DLTensor, which
the runtime checks against the kernel's signature (dtype, shape, strides,
device) before anything runs.

Capsule ownership, on purpose: the binding never consumes a capsule. It does
not rename it to "used_dltensor" and never calls the deleter; it only keeps
the capsule referenced until tilert_launch returns. When the last reference
goes, the capsule's own destructor (the producer's) sees an unconsumed
capsule and calls the DLManagedTensor's deleter exactly once, which is the
DLPack protocol's rule for capsules nobody took. So no leak and no double
free, and the producer's array is never marked as exported elsewhere.

On CUDA (tilert_launch's contract): with stream=None the launch goes to
the default stream and is waited for, so a kernel fault raises TilecError
CUDA_ERROR right there; on a stream of the caller's it is asynchronous, and,
as with any CUDA library, the tensors must stay alive until the stream is
done with them.

Errors from the runtime raise TilecError with the status name (e.g.
"LAUNCH_MISMATCH") and the full text of tilert_last_error() (compiler
diagnostics, C compiler or NVRTC log, the launch mismatch naming the
argument). Only the standard library is used.
"""

import numbers
import os
import sys
import threading
import warnings
import weakref

from . import _ffi

__all__ = [
    "Context", "Module", "Kernel", "KernelInfo", "ParamInfo", "BoundLaunch",
    "TilecError", "TilecWarning", "version", "library_path", "STATUS_NAMES",
    "autotune", "AutotuneResult", "AutotuneError", "gemm", "splitk",
]

STATUS_NAMES = _ffi.STATUS_NAMES
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class TilecWarning(UserWarning):
    """tilec's own warning about a loaded module (Module.warnings): a
    performance trap the compiler saw, issued through Python's warnings
    module when the module loads (shown once per call site by default;
    `warnings.simplefilter("error", tilec.TilecWarning)` makes it raise)."""


class TilecError(Exception):
    """An error from the runtime (or found by the binding before calling it).

    status:  the TilertStatus name, e.g. "COMPILE_ERROR", "LAUNCH_MISMATCH"
    code:    its integer value in tilert.h
    message: the full text (tilert_last_error() for runtime errors)
    """

    def __init__(self, status, message):
        if isinstance(status, int):
            code = status
            status = STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else "UNKNOWN_%d" % code
        else:
            code = STATUS_NAMES.index(status) if status in STATUS_NAMES else -1
        self.status = status
        self.code = code
        self.message = message
        super().__init__("%s: %s" % (status, message))


def version():
    """The runtime's version string (tilert_version())."""
    return _ffi.lib().tilert_version().decode()


def library_path():
    """Where libtilert.so is (or would be) loaded from."""
    return _ffi.library_path()


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _define_value(v):
    # bool before int: True is an int in Python, but the language spells it "true".
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))
    if isinstance(v, str):
        return v
    raise TypeError("tilec: a define's value must be a bool, int, float or str, not %r" % (v,))


# ---- signatures ----

class ParamInfo:
    """One kernel parameter.

    name, is_tensor, dtype ("f16", "f32", ...), rank (0 for scalars),
    dims: a tuple with, per dim, an int (a constant) or a str (the name of a
    dynamic symbol, bound by the tensors at launch); dim_names: per dim, the
    constant's name when it was written as one (e.g. "dim"), else None;
    strides: None for a tensor that must be compact row-major, or, for one
    declared with strides (...), a tuple like dims (element strides, the
    last 1): such a parameter takes views (a transpose, a slice) as they
    are, without a copy.
    """

    __slots__ = ("name", "is_tensor", "dtype", "rank", "dims", "dim_names", "strides")

    def __init__(self, name, is_tensor, dtype, rank, dims, dim_names, strides=None):
        self.name, self.is_tensor, self.dtype = name, is_tensor, dtype
        self.rank, self.dims, self.dim_names = rank, dims, dim_names
        self.strides = strides

    @property
    def type_str(self):
        """e.g. "f16[batch, seq_len, heads, 64]" or "f32"."""
        if not self.is_tensor:
            return self.dtype
        return "%s[%s]" % (self.dtype, ", ".join(str(d) for d in self.dims))

    def __repr__(self):
        return "ParamInfo(%s: %s)" % (self.name, self.type_str)


class KernelInfo:
    """A kernel's signature (TilecKernelInfo), copied into Python objects.

    name, entry, params (tuple of ParamInfo), dynamic_symbols (names, in the
    runtime's order), threads (per block), shared_bytes (static shared memory
    on CUDA, 0 for the C backend), persistent (sm_90a: the kernel loops over
    its grid's tiles and is launched with one block per resident slot),
    cluster (blocks per cluster: 2 when the persistent kernel runs its tiles
    in pairs that share multicast TMA loads, else 0), pdl_sync (sm_90a: the
    kernel says pdl_sync(), so the runtime launches it with programmatic
    stream serialization), stream_k (sm_90a, a stream-K build: the kernel
    splits its last wave over its blocks through its module's workspace; the
    runtime orders its launches on different streams one after another),
    stream_k_able (sm_90a: a GEMM the runtime serves with its stream-K build
    where the last wave is thin, unless $TILEC_STREAM_K=0).
    """

    __slots__ = ("name", "entry", "params", "dynamic_symbols", "threads", "shared_bytes", "persistent", "cluster",
                 "pdl_sync", "stream_k", "stream_k_able")

    def __init__(self, raw):
        self.name = _s(raw.name)
        self.entry = _s(raw.entry)
        self.dynamic_symbols = tuple(_s(raw.dynamic_symbols[j]) for j in range(raw.ndynamic))
        params = []
        for i in range(raw.nparams):
            p = raw.params[i]
            dtype = _ffi.DTYPE_NAMES[p.dtype] if 0 <= p.dtype < len(_ffi.DTYPE_NAMES) else "?%d" % p.dtype
            dims, names, strides = [], [], []
            for d in range(p.rank if p.is_tensor else 0):
                dim = p.dims[d]
                if dim.is_dynamic:
                    dims.append(self.dynamic_symbols[dim.symbol])
                    names.append(None)
                else:
                    dims.append(int(dim.value))
                    names.append(_s(dim.name))
                st = p.strides[d]
                strides.append(self.dynamic_symbols[st.symbol] if st.is_dynamic else int(st.value))
            params.append(ParamInfo(_s(p.name), bool(p.is_tensor), dtype, int(p.rank),
                                    tuple(dims), tuple(names),
                                    tuple(strides) if p.is_tensor and p.has_strides else None))
        self.params = tuple(params)
        self.threads = int(raw.threads)
        self.shared_bytes = int(raw.shared_bytes)
        self.persistent = bool(raw.persistent)
        self.cluster = int(raw.cluster)
        self.pdl_sync = bool(raw.pdl_sync)
        self.stream_k = bool(raw.stream_k)
        self.stream_k_able = bool(raw.stream_k_able)

    @property
    def param_names(self):
        return tuple(p.name for p in self.params)

    def __repr__(self):
        sig = ", ".join("%s: %s" % (p.name, p.type_str) for p in self.params)
        return "KernelInfo(%s(%s), threads=%d, shared_bytes=%d)" % (
            self.name, sig, self.threads, self.shared_bytes)


# ---- context ----

class Context:
    """A runtime context (tilert_context_create).

    device: "auto" (CUDA when a GPU and the CUDA libraries are usable, else
    the CPU), "cpu" or "cuda" (TilecError NO_GPU when not usable).
    cache_dir: the disk cache (None: $TILEC_CACHE_DIR, else the user's cache
    directory); disable_cache; cc: the C compiler for the CPU path.

    A context and its modules may be shared between threads: the binding
    serializes calls into one context with a lock (the runtime keeps one
    last-error text per context).
    """

    _DEVICES = {"auto": _ffi.DEVICE_AUTO, "cpu": _ffi.DEVICE_CPU, "cuda": _ffi.DEVICE_CUDA}

    def __init__(self, device="auto", cache_dir=None, disable_cache=False, cc=None):
        if device not in self._DEVICES:
            raise ValueError("tilec: device must be 'auto', 'cpu' or 'cuda', not %r" % (device,))
        self._lib = _ffi.lib()
        self._lock = threading.RLock()
        self._modules = weakref.WeakSet()
        self._handle = None
        self._cache_dir = cache_dir  # tilec.autotune puts its JSON file beside the binaries
        cfg = _ffi.TilertConfig(
            self._DEVICES[device],
            os.fsencode(cache_dir) if cache_dir is not None else None,
            bool(disable_cache),
            os.fsencode(cc) if cc is not None else None)
        handle = _ffi.ctypes.c_void_p()
        st = self._lib.tilert_context_create(_ffi.ctypes.byref(cfg), _ffi.ctypes.byref(handle))
        if st != _ffi.TILERT_OK:
            # On NO_GPU the runtime still returns a context so the reason can be read.
            text = _s(self._lib.tilert_last_error(handle)) if handle.value else ""
            self._lib.tilert_context_destroy(handle)
            raise TilecError(st, text or _s(self._lib.tilert_strerror(st)))
        self._handle = handle

    # -- plumbing --

    def _h(self):
        if self._handle is None:
            raise TilecError("INVALID_ARGUMENT", "the context is closed")
        return self._handle

    def _error(self, st):
        """The TilecError for status `st` (call with the lock held)."""
        text = _s(self._lib.tilert_last_error(self._handle)) if self._handle else ""
        return TilecError(st, text or _s(self._lib.tilert_strerror(st)))

    # -- public --

    @property
    def device(self):
        """"cpu" or "cuda": where this context's modules run ("auto" resolved)."""
        return _ffi.DEVICE_NAMES[self._lib.tilert_context_device(self._h())]

    @property
    def device_note(self):
        """When the GPU path is off, a sentence saying why."""
        return _s(self._lib.tilert_context_device_note(self._h()))

    def load(self, source, defines=None, name=None):
        """Loads a .tile file or source text with constant bindings (like
        `tilec -D`) and compiles every kernel (or fetches it from the cache).

        source: a path (str or os.PathLike) or the text of a .tile file; a str
        holding a newline or a '{' is taken as text, anything else as a path.
        defines: {name: value}, value a bool, int, float or str ("f16").
        name: the file name diagnostics use for text (default "<string>").
        """
        if isinstance(source, (bytes, bytearray)):
            return self.load_string(bytes(source), defines, name)
        if isinstance(source, str) and ("\n" in source or "{" in source):
            return self.load_string(source, defines, name)
        return self.load_file(source, defines)

    def load_file(self, path, defines=None):
        defs, keep = self._defines(defines)
        out = _ffi.ctypes.c_void_p()
        with self._lock:
            st = self._lib.tilert_module_load_file(self._h(), os.fsencode(path), defs, len(keep),
                                                   _ffi.ctypes.byref(out))
            if st != _ffi.TILERT_OK:
                raise self._error(st)
        return Module(self, out)._warn()

    def load_string(self, text, defines=None, name=None):
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        defs, keep = self._defines(defines)
        out = _ffi.ctypes.c_void_p()
        with self._lock:
            st = self._lib.tilert_module_load_string(
                self._h(), (name or "<string>").encode(), data, len(data), defs, len(keep),
                _ffi.ctypes.byref(out))
            if st != _ffi.TILERT_OK:
                raise self._error(st)
        return Module(self, out)._warn()

    @staticmethod
    def _defines(defines):
        items = list((defines or {}).items())
        keep = [(str(k).encode(), _define_value(v).encode()) for k, v in items]
        if not keep:
            return None, keep
        arr = (_ffi.TilecDefine * len(keep))(*[_ffi.TilecDefine(k, v) for k, v in keep])
        return arr, keep

    def close(self):
        """Destroys the context and every module still open in it."""
        with self._lock:
            for m in list(self._modules):
                m.close()
            if self._handle is not None:
                self._lib.tilert_context_destroy(self._handle)
                self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        if self._handle is None:
            return "tilec.Context(closed)"
        return "tilec.Context(device=%r)" % self.device


class Module:
    """A loaded .tile file (tilert_module_load_*): its kernels, compiled."""

    def __init__(self, ctx, handle):
        self.context = ctx  # keeps the context alive while the module is
        self._handle = handle
        self._kernels = {}
        ctx._modules.add(self)

    def _h(self):
        if self._handle is None:
            raise TilecError("INVALID_ARGUMENT", "the module is closed")
        return self._handle

    @property
    def from_cache(self):
        """True when the binary came from the disk cache (no compiler ran)."""
        return bool(self.context._lib.tilert_module_from_cache(self._h()))

    @property
    def warnings(self):
        """tilec's own warnings for the module's text, as the `tilec` CLI
        prints them (tilert_module_warnings): e.g. a gemm that runs as
        mma.sync where wgmma was one define away. "" when there are none.
        Also issued as a TilecWarning when the module loads."""
        ctx = self.context
        with ctx._lock:
            return _s(ctx._lib.tilert_module_warnings(self._h()))

    def _warn(self):
        text = self.warnings
        if text:
            # Attributed to the first line outside this package (the user's
            # load, or tilec.gemm's caller), not to the binding.
            level, frame = 1, sys._getframe(0)
            while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
                level, frame = level + 1, frame.f_back
            warnings.warn("tilec: " + text.rstrip("\n"), TilecWarning, stacklevel=level)
        return self

    @property
    def compile_log(self):
        """NVRTC's log of the compiles that built the module
        (tilert_module_compile_log): warnings and ptxas advisories such as
        "Potential Performance Loss: wgmma.mma_async instructions are
        serialized" (right results, slow kernel); for a cubin from the disk
        cache, the log its build stored there. "" for a CPU module, when
        NVRTC wrote nothing or a cached cubin has no stored log. Builds
        made at later launches (other shape classes) append theirs."""
        ctx = self.context
        with ctx._lock:
            return _s(ctx._lib.tilert_module_compile_log(self._h()))

    def kernel(self, name):
        """The kernel `name` (TilecError NOT_FOUND lists the module's kernels)."""
        k = self._kernels.get(name)
        if k is not None:
            return k
        ctx = self.context
        out = _ffi.ctypes.c_void_p()
        with ctx._lock:
            st = ctx._lib.tilert_module_get_kernel(self._h(), name.encode(), _ffi.ctypes.byref(out))
            if st != _ffi.TILERT_OK:
                raise ctx._error(st)
            info = KernelInfo(ctx._lib.tilert_kernel_info(out).contents)
        k = self._kernels[name] = Kernel(self, out, info)
        return k

    __getitem__ = kernel

    def close(self):
        ctx = self.context
        with ctx._lock:
            if self._handle is not None:
                ctx._lib.tilert_module_destroy(self._handle)
                self._handle = None
                self._kernels.clear()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# ---- launches ----

# CU_STREAM_LEGACY: the legacy default stream as an explicit CUstream, which
# tilert_launch treats like any caller's stream (asynchronous).
CU_STREAM_LEGACY = 1


def _stream_handle(stream):
    """A launch stream as an integer CUstream: None/0 is the default stream
    (the launch waits for the kernel); an int is taken as the raw handle;
    objects with .cuda_stream (PyTorch) or .ptr (CuPy) give theirs. A stream
    OBJECT for the default stream (torch.cuda.current_stream() when nothing
    set another, handle 0) becomes CU_STREAM_LEGACY: the same stream, and
    asynchronous like any stream object (as the docstring of Kernel says),
    instead of a launch that silently waits and leaves the GPU idle between
    kernels."""
    if stream is None:
        return 0
    if isinstance(stream, numbers.Integral):
        return int(stream)
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, numbers.Integral):
            return int(v) or CU_STREAM_LEGACY
    raise TypeError("tilec: stream must be None, an int (CUstream) or a stream object with "
                    ".cuda_stream / .ptr, not %r" % (stream,))


def _arg_error(info, i, text):
    pname = info.params[i].name if i < len(info.params) else "?"
    return TilecError("LAUNCH_MISMATCH", "%s: argument %d '%s': %s" % (info.name, i + 1, pname, text))


def _same_torch_stream(obj, dev, dl_stream, seen):
    """Whether obj is a torch tensor on CUDA device dev whose current stream
    is dl_stream (seen caches the answer per device within one call). Then
    the export needs no stream handshake: torch's __dlpack__(stream=S)
    wraps S in an ExternalStream and compares it with the current stream
    on every call (17 us per tensor on an H100 host, against 3 us for
    stream=-1, which DLPack defines as "no synchronization")."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return False
    idx = int(dev[1])
    if idx not in seen:
        seen[idx] = torch.cuda.current_stream(idx).cuda_stream
    return seen[idx] == dl_stream or (seen[idx] == 0 and dl_stream == CU_STREAM_LEGACY)


def _tensor_arg(info, i, obj, dl_stream, seen=None):
    """(TilertArg, capsule) for an object with __dlpack__."""
    dev = None
    if hasattr(obj, "__dlpack_device__"):
        try:
            dev = obj.__dlpack_device__()
        except Exception:  # the export below will say what is wrong
            dev = None
    try:
        if dev is not None and int(dev[0]) in (_ffi.DL_CUDA, _ffi.DL_CUDA_MANAGED):
            # DLPack's stream rule: the producer makes its pending work
            # visible to the consumer's stream. 1 = the legacy default stream
            # (0 is not allowed there).
            same = seen is not None and _same_torch_stream(obj, dev, dl_stream, seen)
            try:
                capsule = obj.__dlpack__(stream=-1 if same else (dl_stream or 1))
            except TypeError:  # an older producer without the keyword
                capsule = obj.__dlpack__()
        else:
            capsule = obj.__dlpack__()
    except Exception as e:
        raise _arg_error(info, i, "cannot export %s through DLPack: %s: %s"
                         % (type(obj).__name__, type(e).__name__, e)) from None
    ptr = _ffi.capsule_pointer(capsule, b"dltensor")
    if ptr is None:
        vptr = _ffi.capsule_pointer(capsule, b"dltensor_versioned")
        if vptr is None:
            raise _arg_error(info, i, "__dlpack__() did not return an unused DLPack capsule")
        ptr = vptr + _ffi.DL_VERSIONED_TENSOR_OFFSET
    return _ffi.TilertArg(_ffi.ARG_TENSOR, ptr, 0.0, 0), capsule


def _build_args(info, args, stream):
    """The TilertArg array for `args`, and what must stay alive with it."""
    dl_stream = _stream_handle(stream)
    n = len(args)
    arr = (_ffi.TilertArg * max(n, 1))()
    keep = [args]
    seen = {}  # device -> torch's current stream there (_same_torch_stream)
    for i, a in enumerate(args):
        # Numbers first: NumPy scalars are numbers.Number (and may have __dlpack__).
        if isinstance(a, numbers.Number):
            if isinstance(a, (bool, numbers.Integral)):
                v = int(a)
                if not -(1 << 63) <= v < (1 << 63):
                    raise _arg_error(info, i, "integer %d does not fit in 64 bits" % v)
                arr[i] = _ffi.TilertArg(_ffi.ARG_INT, None, 0.0, v)
            elif isinstance(a, numbers.Real):
                arr[i] = _ffi.TilertArg(_ffi.ARG_FLOAT, None, float(a), 0)
            else:
                raise _arg_error(info, i, "a %s is not a supported scalar (int or float)"
                                 % type(a).__name__)
        elif hasattr(a, "__dlpack__"):
            arr[i], capsule = _tensor_arg(info, i, a, dl_stream, seen)
            keep.append(capsule)
        else:
            raise _arg_error(info, i, "a %s is neither a tensor (an object with __dlpack__) nor "
                             "a Python int/float" % type(a).__name__)
    return arr, n, dl_stream, keep


class Kernel:
    """One kernel of a module. Call it with its arguments, in order:

        kernel(q, k, v, out, 0.18, stream=None)

    tensors: objects with __dlpack__ (compact row-major; for a parameter
    declared with strides (...), any view whose last dim is contiguous; on
    the context's device); scalars: Python ints and floats (an int also passes for a float
    parameter). stream: the CUDA stream to launch on (None: the default
    stream, and the call waits for the kernel; an int CUstream, a
    torch.cuda.Stream or a CuPy stream: asynchronous); ignored on the CPU,
    where the call returns when the kernel is done.
    """

    def __init__(self, module, handle, info):
        self.module = module  # keeps the module (and its context) alive
        self._handle = handle
        self.info = info

    @property
    def name(self):
        return self.info.name

    def _launch(self, arr, n, stream):
        mod = self.module
        ctx = mod.context
        with ctx._lock:
            mod._h()
            st = ctx._lib.tilert_launch(self._handle, arr, n, stream or None)
            if st != _ffi.TILERT_OK:
                raise ctx._error(st)

    def __call__(self, *args, stream=None):
        arr, n, s, keep = _build_args(self.info, args, stream)
        self._launch(arr, n, s)
        del keep  # the capsules live until here: the launch has returned

    def bind(self, *args, stream=None):
        """Exports the arguments once and returns a BoundLaunch that launches
        the kernel on them with no per-call Python work beyond the FFI call
        (for timing loops). The capsules stay alive as long as it does."""
        return BoundLaunch(self, args, stream)

    def __repr__(self):
        return "tilec.Kernel(%r)" % (self.info,)


class BoundLaunch:
    """A kernel with its arguments exported (Kernel.bind); call it to launch."""

    def __init__(self, kernel, args, stream):
        self.kernel = kernel
        self._arr, self._n, self._stream, self._keep = _build_args(kernel.info, args, stream)

    def __call__(self):
        self.kernel._launch(self._arr, self._n, self._stream)


# Last: autotune.py imports TilecError and version from this module.
from .autotune import autotune, AutotuneResult, AutotuneError  # noqa: E402
# C = A @ B choosing gemm.tile or split-K (gemm_splitk.tile) from the shape.
from . import splitk  # noqa: E402
from . import reference  # noqa: E402
from .splitk import gemm  # noqa: E402
