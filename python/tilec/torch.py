"""tilec.torch - tilec kernels as PyTorch functions and custom operators.

    import torch, tilec.torch as tt
    o = tt.flash_attention(q, k, v, causal=True)          # q, k, v: (batch, seq, heads, dim)
    softmax = tt.kernel("examples/softmax.tile", "softmax", out_idx=[1])
    y = softmax(x)                                         # Y allocated on x's device
    f = torch.compile(lambda x: softmax(x) * 2, fullgraph=True)

This is the only module of the package that imports torch.

How it works. tilec.torch.kernel() loads a .tile kernel and reads its
signature (KernelInfo). The parameters named by `out_idx` (as TileLang's
`out_idx`) become the function's results: the call takes the other
parameters, in order, and allocates the outputs on the inputs' device, with
their declared dtype and a shape read from the signature (a dim is a
constant, or a dynamic symbol such as `M` that some input's dim binds). The
function is registered as a torch.library custom operator
`torch.ops.tilec.<kernel>_<hash>` with

  - a real implementation for CPU and CUDA tensors: the inputs made
    contiguous (except, for a parameter declared with strides (...), a
    view the kernel takes as it is: last dim contiguous, other strides
    positive), fresh outputs from torch's allocator, and one launch through
    libtilert on torch's current CUDA stream (asynchronous, nothing
    synchronizes; the default stream is passed as CU_STREAM_LEGACY), so it
    can be captured in a CUDA graph;
  - a fake ("meta") implementation that only computes the output shapes and
    dtypes, which is what torch.compile traces (fullgraph=True works: the op
    is one node of the graph; Inductor calls the real implementation).

Each device type gets its own compiled module (C back end for CPU tensors,
NVRTC for CUDA tensors), compiled on first use and kept; CUDA means device 0
(the runtime's device). Compile before capturing a CUDA graph (call the
function once: NVRTC and module loading are not capturable), as with any
lazily compiled kernel. The ops are forward-only (no autograd formula).

flash_attention(q, k, v, causal=False, scale=None, layout="bshd") is the
ready-made entry point for examples/flash_attention.tile, with SDPA's
conventions: scale=None means 1/sqrt(head_dim), and `scale` is the factor on
QK^T itself (the kernel wants log2(e) folded in, since it uses exp2; that is
done here). layout="bhsd" takes and returns (batch, heads, seq, dim) tensors,
SDPA's layout (transposed views: the flagship declares strides (...), so no
copy is made; neither for a packed-QKV slice).
"""

import hashlib
import math
import os
import re
import threading

import torch

import tilec
from . import _ffi

__all__ = ["kernel", "TorchKernel", "flash_attention", "context", "LOG2E"]

LOG2E = math.log2(math.e)

_TORCH_DTYPES = {
    "bool": torch.bool, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
    "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
    "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16,
}
# The newer dtypes exist only in recent torch releases.
for _name, _attr in (("u16", "uint16"), ("u32", "uint32"), ("f8e4m3", "float8_e4m3fn"),
                     ("f8e5m2", "float8_e5m2")):
    if hasattr(torch, _attr):
        _TORCH_DTYPES[_name] = getattr(torch, _attr)
# Scalar parameters in an operator schema.
_SCHEMA_SCALARS = {"bool": "bool", "i32": "int", "i64": "int",
                   "f16": "float", "bf16": "float", "f32": "float", "f64": "float"}

# The operator library: every op is torch.ops.tilec.<name>. FRAGMENT, so
# that other code may add ops to the same namespace.
_LIB = torch.library.Library("tilec", "FRAGMENT")
_lock = threading.RLock()
_contexts = {}   # "cpu" / "cuda" -> tilec.Context
_ops = {}        # op name -> TorchKernel (the first one built with that name)


def _register_fake(qualname, fn):
    if hasattr(torch.library, "register_fake"):         # torch >= 2.4
        torch.library.register_fake(qualname, lib=_LIB)(fn)
    else:                                                # torch 2.2, 2.3
        torch.library.impl_abstract(qualname, lib=_LIB)(fn)


def context(device_type):
    """The shared tilec.Context for "cpu" or "cuda" tensors (created on first use)."""
    with _lock:
        ctx = _contexts.get(device_type)
        if ctx is None:
            if device_type not in ("cpu", "cuda"):
                raise ValueError("tilec.torch: tensors on %r are not supported (cpu or cuda)"
                                 % (device_type,))
            ctx = _contexts[device_type] = tilec.Context(device=device_type)
        return ctx


def _device_type(device):
    if device.type == "cuda" and (device.index or 0) != 0:
        raise ValueError("tilec.torch: the runtime launches on CUDA device 0; got a tensor on %s"
                         % (device,))
    return device.type


def _stream_for(device_type):
    """The CUstream to launch on: torch's current stream. When that is the
    default stream (handle 0), CU_STREAM_LEGACY names the same stream: a NULL
    stream would make the runtime wait for the kernel (tilert_launch's
    contract), and torch ops never wait."""
    if device_type != "cuda":
        return None
    return torch.cuda.current_stream().cuda_stream or tilec.CU_STREAM_LEGACY


def _source_key(source):
    """(what to hand Context.load, bytes to hash): a path stays a path, so
    diagnostics name the file."""
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), bytes(source)
    if isinstance(source, str) and ("\n" in source or "{" in source):
        return source, source.encode()
    path = os.fspath(source)
    with open(path, "rb") as f:
        return path, f.read()


def _ident(name):
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return s if s and not s[0].isdigit() else "k_" + s


class TorchKernel:
    """A tilec kernel as a PyTorch function (see tilec.torch.kernel)."""

    def __init__(self, source, kernel_name, defines=None, out_idx=None, name=None):
        self._source, text = _source_key(source)
        self.kernel_name = kernel_name
        self.defines = dict(defines or {})
        # The signature is the same for every back end: read it from the
        # device the kernel will most likely run on, compiling that module now.
        first = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            k = self._load(first)
        except tilec.TilecError as e:
            if first != "cuda" or e.status not in ("NO_GPU", "CUDA_ERROR"):
                raise
            first = "cpu"
            k = self._load(first)
        self._kernels = {first: k}
        self.info = info = k.info
        n = len(info.params)
        if out_idx is None:
            raise ValueError("tilec.torch.kernel: say which parameters are outputs with out_idx "
                             "(%s)" % ", ".join("%d=%s" % (i, p.name) for i, p in enumerate(info.params)))
        outs = [out_idx] if isinstance(out_idx, int) else list(out_idx)
        norm = []
        for i in outs:
            j = i + n if i < 0 else i
            if not 0 <= j < n:
                raise ValueError("tilec.torch.kernel: out_idx %d is out of range for %s" % (i, info))
            if not info.params[j].is_tensor:
                raise ValueError("tilec.torch.kernel: out_idx %d is the scalar '%s'; outputs must be "
                                 "tensors" % (i, info.params[j].name))
            if j in norm:
                raise ValueError("tilec.torch.kernel: out_idx names '%s' twice" % info.params[j].name)
            norm.append(j)
        self.out_idx = tuple(norm)
        self.in_idx = tuple(i for i in range(n) if i not in self.out_idx)
        # Where each dynamic symbol can be read: (input position, dim).
        self._symbol_at = {}
        for pos, i in enumerate(self.in_idx):
            p = info.params[i]
            if p.is_tensor:
                for d, dim in enumerate(p.dims):
                    if isinstance(dim, str):
                        self._symbol_at.setdefault(dim, (pos, d))
        for j in self.out_idx:
            p = info.params[j]
            for dim in p.dims:
                if isinstance(dim, str) and dim not in self._symbol_at:
                    raise ValueError(
                        "tilec.torch.kernel: output '%s' has dim '%s', which no input tensor has; "
                        "bind it with defines={'%s': ...}" % (p.name, dim, dim))
        digest = hashlib.sha256(repr((text, sorted((k, str(v)) for k, v in self.defines.items()),
                                      kernel_name, self.out_idx)).encode()).hexdigest()[:12]
        self.op_name = name or "%s_%s" % (_ident(kernel_name), digest)
        self._register()

    # -- loading --

    def _load(self, device_type):
        return context(device_type).load(self._source, defines=self.defines).kernel(self.kernel_name)

    def _kernel_for(self, device_type):
        k = self._kernels.get(device_type)
        if k is None:
            with _lock:
                k = self._kernels.get(device_type)
                if k is None:
                    k = self._kernels[device_type] = self._load(device_type)
        return k

    # -- the operator --

    def _schema(self):
        args = []
        used = set()
        for i in self.in_idx:
            p = self.info.params[i]
            t = "Tensor" if p.is_tensor else _SCHEMA_SCALARS[p.dtype]
            nm = _ident(p.name)
            if nm in ("self", "out") or nm in used:
                nm = "%s_%d" % (nm, i)
            used.add(nm)
            args.append("%s %s" % (t, nm))
        ret = "Tensor" if len(self.out_idx) == 1 else "(%s)" % ", ".join(["Tensor"] * len(self.out_idx))
        return "%s(%s) -> %s" % (self.op_name, ", ".join(args), ret)

    def _register(self):
        with _lock:
            if self.op_name in _ops:
                # The same kernel built again (same hash), or a name given twice:
                # the op stays the first one's; its signature must match.
                if _ops[self.op_name]._schema() != self._schema():
                    raise ValueError("tilec.torch: an op named %r already exists with another "
                                     "signature" % self.op_name)
            else:
                _LIB.define(self._schema())
                qual = "tilec::" + self.op_name
                _LIB.impl(self.op_name, self._real, "CPU")
                _LIB.impl(self.op_name, self._real, "CUDA")
                _register_fake(qual, self._fake)
                _ops[self.op_name] = self
        self.op = getattr(torch.ops.tilec, self.op_name).default

    def _check(self, args):
        info = self.info
        if len(args) != len(self.in_idx):
            raise TypeError("%s takes %d arguments (%s), got %d" % (
                self.op_name, len(self.in_idx),
                ", ".join(info.params[i].name for i in self.in_idx), len(args)))
        device = None
        for a, i in zip(args, self.in_idx):
            p = info.params[i]
            if p.is_tensor:
                if not isinstance(a, torch.Tensor):
                    raise TypeError("%s: '%s' must be a tensor" % (info.name, p.name))
                if a.dtype != _TORCH_DTYPES[p.dtype]:
                    raise TypeError("%s: '%s' is %s; the kernel takes %s" % (info.name, p.name, a.dtype, p.dtype))
                if a.dim() != p.rank:
                    raise ValueError("%s: '%s' has %d dims; the kernel takes %s" % (
                        info.name, p.name, a.dim(), p.type_str))
                if device is None:
                    device = a.device
                elif a.device != device:
                    raise ValueError("%s: '%s' is on %s, an earlier input on %s" % (
                        info.name, p.name, a.device, device))
        if device is None:
            raise ValueError("%s: no input tensor says which device to run on" % info.name)
        return device

    def _out_shapes(self, args):
        shapes = []
        for j in self.out_idx:
            shape = []
            for dim in self.info.params[j].dims:
                if isinstance(dim, str):
                    pos, d = self._symbol_at[dim]
                    shape.append(args[pos].shape[d])
                else:
                    shape.append(dim)
            shapes.append((shape, _TORCH_DTYPES[self.info.params[j].dtype]))
        return shapes

    def _fake(self, *args):
        device = self._check(args)
        outs = [torch.empty(s, dtype=dt, device=device) for s, dt in self._out_shapes(args)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _real(self, *args):
        device = self._check(args)
        dtype = _device_type(device)
        k = self._kernel_for(dtype)
        # detach: DLPack refuses tensors that require grad (the op is forward-only).
        args = [_for_param(a.detach(), self.info.params[i].strides is not None)
                if isinstance(a, torch.Tensor) else a for a, i in zip(args, self.in_idx)]
        outs = [torch.empty(s, dtype=dt, device=device) for s, dt in self._out_shapes(args)]
        full = [None] * len(self.info.params)
        for a, i in zip(args, self.in_idx):
            full[i] = a
        for o, j in zip(outs, self.out_idx):
            full[j] = o
        k(*full, stream=_stream_for(dtype))
        return outs[0] if len(outs) == 1 else tuple(outs)

    # -- calling --

    def __call__(self, *args):
        """The kernel on `args` (its non-output parameters, in order); returns
        the output tensor, or a tuple of them (out_idx's order)."""
        if len(args) != len(self.in_idx):
            raise TypeError("%s takes %d arguments (%s), got %d" % (
                self.info.name, len(self.in_idx),
                ", ".join(self.info.params[i].name for i in self.in_idx), len(args)))
        return self.op(*args)

    def __repr__(self):
        return "tilec.torch.TorchKernel(%s, out_idx=%s, op=torch.ops.tilec.%s)" % (
            self.info, list(self.out_idx), self.op_name)


def kernel(source, kernel_name, defines=None, out_idx=None, name=None):
    """A tilec kernel as a PyTorch function that returns its outputs.

    source:   a .tile path or its text (as tilec.Context.load takes it)
    defines:  {name: value} constant bindings (like `tilec -D`)
    out_idx:  the output parameters: an index or a list of them (negative
              counts from the end), as TileLang's out_idx. The function takes
              the other parameters in order and returns the outputs (one
              tensor, or a tuple in out_idx's order), allocated on the
              inputs' device with the declared dtype and shape.
    name:     the operator's name (default <kernel>_<hash of source, defines,
              out_idx>): torch.ops.tilec.<name>

    Compiles for CUDA now when torch sees a GPU, else for the CPU; the other
    device compiles on first use.
    """
    return TorchKernel(source, kernel_name, defines=defines, out_idx=out_idx, name=name)


# ---- flash attention ----

def _flash_attention_source():
    """examples/flash_attention.tile: the copy an installed package carries
    (tilec/kernels/), else the repository's."""
    found = _ffi.bundled_path("kernels", "flash_attention.tile")
    if found:
        return found
    path = os.path.normpath(os.path.join(_ffi._HERE, "..", "..", "examples", "flash_attention.tile"))
    if os.environ.get("TILEC_SOURCE_DIR"):
        path = os.path.join(os.environ["TILEC_SOURCE_DIR"], "examples", "flash_attention.tile")
    if not os.path.exists(path):
        raise FileNotFoundError("tilec.torch: flash_attention.tile is neither in the package "
                                "(tilec/kernels) nor at %s" % path)
    return path


_fa_kernels = {}  # (device type, dtype, dim, causal) -> tilec.Kernel

_LIB.define("flash_attention(Tensor q, Tensor k, Tensor v, bool causal, float scale) -> Tensor")


def _fa_check(q, k, v):
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError("tilec.torch.flash_attention: q, k, v must have one shape (batch, seq, heads, "
                         "dim); got %s, %s, %s" % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    if q.dtype not in (torch.float16, torch.bfloat16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError("tilec.torch.flash_attention: q, k, v must all be float16 or all bfloat16; "
                        "got %s, %s, %s" % (q.dtype, k.dtype, v.dtype))
    if not (q.device == k.device == v.device):
        raise ValueError("tilec.torch.flash_attention: q, k, v are on different devices")


def _view_ok(t):
    """Whether a kernel parameter declared with strides (...) takes t as it
    is: last dim contiguous, every other stride positive (the runtime's
    rules; an overlapping as_strided view would still be refused there)."""
    if t.dim() == 0:
        return True
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        return False
    return all(st > 0 for n, st in zip(t.shape, t.stride()) if n > 1)


def _for_param(t, strided):
    """t as the runtime should see it: itself when the parameter takes
    views and t is one it accepts, else a contiguous copy."""
    return t if strided and _view_ok(t) else t.contiguous()


def _fa_fake(q, k, v, causal, scale):
    _fa_check(q, k, v)
    return torch.empty_like(q, memory_format=torch.contiguous_format)


def _fa_real(q, k, v, causal, scale):
    _fa_check(q, k, v)
    dev = _device_type(q.device)
    dim = int(q.shape[-1])
    dt = "f16" if q.dtype == torch.float16 else "bf16"
    key = (dev, dt, dim, bool(causal))
    kern = _fa_kernels.get(key)
    if kern is None:
        with _lock:
            kern = _fa_kernels.get(key)
            if kern is None:
                mod = context(dev).load(_flash_attention_source(),
                                        defines={"dtype": dt, "dim": dim, "is_causal": bool(causal)})
                kern = _fa_kernels[key] = mod.kernel("flash_attention")
    q, k, v = (_for_param(t.detach(), True) for t in (q, k, v))
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    kern(q, k, v, out, float(scale) * LOG2E, stream=_stream_for(dev))
    return out


_LIB.impl("flash_attention", _fa_real, "CPU")
_LIB.impl("flash_attention", _fa_real, "CUDA")
_register_fake("tilec::flash_attention", _fa_fake)


def flash_attention(q, k, v, causal=False, scale=None, layout="bshd"):
    """Attention softmax(scale * Q K^T [+ causal mask]) V with
    examples/flash_attention.tile, as torch.ops.tilec.flash_attention.

    q, k, v:  float16 or bfloat16, one shape, on the CPU or CUDA device 0.
              layout="bshd" (default, the kernel's own): (batch, seq, heads,
              dim), and the result is too; layout="bhsd": SDPA's (batch,
              heads, seq, dim), in and out (passed as transposed views,
              without a copy; the result is a transposed view too).
    causal:   query i sees keys j <= i (as SDPA's is_causal=True).
    scale:    as SDPA's: the factor on Q K^T; None means 1/sqrt(dim). (The
              kernel uses exp2, so log2(e) is folded in here.)

    Works under torch.compile(fullgraph=True) and in CUDA graph capture
    (compile first: call it once outside the capture). Forward only.
    """
    if layout == "bhsd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    elif layout != "bshd":
        raise ValueError("tilec.torch.flash_attention: layout must be 'bshd' or 'bhsd', not %r" % (layout,))
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    out = torch.ops.tilec.flash_attention(q, k, v, bool(causal), float(scale))
    return out.transpose(1, 2) if layout == "bhsd" else out
