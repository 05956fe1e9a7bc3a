"""test_torch.py - tilec.torch on one device: TILEC_TEST_DEVICE=cpu (CPU
tensors, the C back end) or cuda (device 0, NVRTC). Needs only torch (no
NumPy); exits 77 (skipped) without torch, or for cuda without a CUDA GPU.

Checks, each against a reference computed by torch in float32/float64 on the
same inputs (outputs are fresh torch.empty tensors, so a kernel that writes
nothing shows up as garbage, not as a pass):
  - tilec.torch.kernel with out_idx: softmax (one output, dynamic M), GEMM
    (f16; M from A, N from B), rowstats (two outputs, a tuple); outputs on the
    inputs' device with the declared dtype; argument errors;
  - torch.library.opcheck on the ops (schema, fake vs real, dispatch);
  - torch.compile(fullgraph=True) of functions calling them, against eager;
  - flash_attention(q, k, v, causal, scale) against
    torch.nn.functional.scaled_dot_product_attention: f16 and bf16, causal
    and not, dim 64 and 128, default and explicit scale, both layouts, and
    packed-QKV slices passed as views;
  - cuda only: a launch on a side stream; CUDA graph capture and replay with
    new inputs (flash_attention and a kernel()); torch.compile with
    mode="reduce-overhead" (CUDA graphs under Inductor).
Run: ctest --test-dir build -L gpu -R torch --output-on-failure
"""
import atexit
import os
import shutil
import sys
import tempfile
import time
import traceback

SKIP = 77
DEVICE = os.environ.get("TILEC_TEST_DEVICE", "cpu")
try:
    import torch
except ImportError:
    print("SKIP: torch is not installed")
    sys.exit(SKIP)
if DEVICE == "cuda" and not torch.cuda.is_available():
    print("SKIP: TILEC_TEST_DEVICE=cuda needs a CUDA GPU visible to torch")
    sys.exit(SKIP)

CACHE_DIR = tempfile.mkdtemp(prefix="tilec-torchtest-")
os.environ["TILEC_CACHE_DIR"] = CACHE_DIR
atexit.register(shutil.rmtree, CACHE_DIR, True)
import tilec  # noqa: E402
import tilec.torch as tt  # noqa: E402

SRC = os.environ.get("TILEC_SOURCE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
EXAMPLES = os.path.join(SRC, "examples")
ROWSTATS = os.path.join(SRC, "tests", "python", "kernels", "rowstats.tile")
SEED = int(os.environ.get("TILEC_SEED") or (time.time_ns() % (1 << 31)))
torch.manual_seed(SEED)
dev = torch.device(DEVICE)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=torch.float32).to(dtype).to(dev)


def close(what, out, ref, bound):
    """max|out - ref| <= bound * max|ref|, every output finite."""
    out = out.detach().to("cpu", torch.float64)
    ref = ref.detach().to("cpu", torch.float64)
    assert out.shape == ref.shape, "%s: shape %s, expected %s" % (what, tuple(out.shape), tuple(ref.shape))
    nonfinite = int((~torch.isfinite(out)).sum())
    scale = float(ref.abs().max()) if ref.numel() else 1.0
    err = float((out - ref).abs().max()) / (scale or 1.0) if out.numel() else 0.0
    print("  %s: error %.3e of max|ref| (bound %.1e), %d non-finite" % (what, err, bound, nonfinite))
    assert nonfinite == 0, "%s: %d non-finite outputs" % (what, nonfinite)
    assert err <= bound, "%s: error %.3e exceeds %.1e" % (what, err, bound)


def raises(exc, fn, text):
    try:
        fn()
    except exc as e:
        print("  raised as expected: %s: %s" % (type(e).__name__, str(e).splitlines()[0]))
        assert text in str(e), "%r lacks %r" % (str(e), text)
        return
    raise AssertionError("expected %s" % exc.__name__)


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


_softmax = None


def softmax_kernel():
    global _softmax
    if _softmax is None:
        _softmax = tt.kernel(os.path.join(EXAMPLES, "softmax.tile"), "softmax", out_idx=[1])
    return _softmax


def gemm_kernel():
    # The default tiles: what tests/numerics runs on the GPU at 100x70x45.
    return tt.kernel(os.path.join(EXAMPLES, "gemm.tile"), "gemm", out_idx=-1, defines={"dtype": "f16"})


def sdpa_ref(q, k, v, causal, scale, layout="bshd"):
    """SDPA in float32 on the same inputs, in `layout`."""
    if layout == "bshd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    o = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                         is_causal=causal, scale=scale)
    return o.transpose(1, 2) if layout == "bshd" else o


# ---- tilec.torch.kernel ----

def test_softmax_returns_its_output():
    sm = softmax_kernel()
    print("  %r" % sm)
    assert sm.in_idx == (0,) and sm.out_idx == (1,)
    for m in (37, 8, 1):
        x = randn(m, 256)
        y = sm(x)
        assert y.device == x.device and y.dtype == torch.float32, (y.device, y.dtype)
        close("softmax M=%d" % m, y, torch.softmax(x.double(), dim=1), 1e-5)
    # The op itself, by name.
    y = getattr(torch.ops.tilec, sm.op_name)(x)
    close("torch.ops.tilec.%s" % sm.op_name, y, torch.softmax(x.double(), dim=1), 1e-5)


def test_gemm_out_shape_from_two_inputs():
    g = gemm_kernel()
    a, b = randn(100, 45, dtype=torch.float16), randn(45, 70, dtype=torch.float16)
    c = g(a, b)
    assert c.shape == (100, 70) and c.dtype == torch.float16 and c.device == a.device
    close("gemm 100x45x70", c, a.double() @ b.double(), 2e-3)
    # Non-contiguous inputs are made contiguous first.
    at = randn(45, 100, dtype=torch.float16).t()
    close("gemm on a transposed view", g(at, b), at.double() @ b.double(), 2e-3)


def test_two_outputs_tuple():
    rs = tt.kernel(ROWSTATS, "rowstats", out_idx=[2, 3])
    a, b = randn(100, 64, dtype=torch.float16), randn(64, 128, dtype=torch.float16)
    mx, sm = rs(a, b)
    c = a.double() @ b.double()
    assert mx.shape == (100,) and sm.dtype == torch.float32
    close("rowstats max", mx, c.max(dim=1).values, 1e-4)
    close("rowstats sum", sm, c.sum(dim=1), 1e-4)


def test_argument_errors():
    path = os.path.join(EXAMPLES, "softmax.tile")
    raises(ValueError, lambda: tt.kernel(path, "softmax"), "out_idx")
    raises(ValueError, lambda: tt.kernel(path, "softmax", out_idx=5), "out of range")
    sm = softmax_kernel()
    raises(TypeError, lambda: sm(randn(4, 256, dtype=torch.float16)), "f32")
    raises(TypeError, lambda: sm(randn(4, 256), randn(4, 256)), "takes 1 arguments (X)")
    # A shape the kernel refuses: the runtime's own check, naming the argument.
    raises(tilec.TilecError, lambda: sm(randn(4, 100)), "LAUNCH_MISMATCH")
    raises(ValueError, lambda: tt.flash_attention(*(randn(1, 16, 2, 64, dtype=torch.float16),) * 3,
                                                  layout="sbhd"), "layout")


def test_opcheck():
    if not hasattr(torch.library, "opcheck"):
        print("  torch %s has no torch.library.opcheck; not checked" % torch.__version__)
        return
    x = randn(16, 256)
    torch.library.opcheck(softmax_kernel().op, (x,))
    q, k, v = (randn(1, 40, 2, 64, dtype=torch.float16) for _ in range(3))
    torch.library.opcheck(torch.ops.tilec.flash_attention.default, (q, k, v, True, 0.125))
    print("  opcheck passed for %s and flash_attention" % softmax_kernel().op_name)


# ---- flash attention against SDPA ----

def test_flash_attention_matches_sdpa():
    seqs = (100, 63, 1) if DEVICE == "cpu" else (1, 63, 1000, 4096)
    cases = [(torch.float16, 64, False), (torch.float16, 64, True),
             (torch.bfloat16, 64, True), (torch.float16, 128, False)]
    if DEVICE == "cuda":
        cases += [(torch.bfloat16, 128, False), (torch.bfloat16, 128, True)]
    for dtype, dim, causal in cases:
        bound = 5e-3 if dtype == torch.float16 else 2e-2
        for n in seqs:
            q, k, v = (randn(2, n, 2, dim, dtype=dtype) for _ in range(3))
            o = tt.flash_attention(q, k, v, causal=causal)
            assert o.dtype == dtype and o.device == q.device and o.shape == q.shape
            close("%s d%d %s seq %d" % (str(dtype)[6:], dim, "causal" if causal else "full", n),
                  o, sdpa_ref(q, k, v, causal, None), bound)
    # Inputs that require grad (e.g. a layer's activations outside no_grad):
    # the forward still runs (DLPack itself refuses such tensors).
    q, k, v = (randn(1, 33, 2, 64, dtype=torch.float16).requires_grad_() for _ in range(3))
    close("inputs requiring grad", tt.flash_attention(q, k, v), sdpa_ref(q, k, v, False, None), 5e-3)
    x = randn(5, 256).requires_grad_()
    close("softmax of an input requiring grad", softmax_kernel()(x), torch.softmax(x.double(), 1), 1e-5)
    # An explicit scale, and SDPA's own layout.
    q, k, v = (randn(1, 2, 77, 64, dtype=torch.float16) for _ in range(3))
    o = tt.flash_attention(q, k, v, causal=True, scale=0.3, layout="bhsd")
    assert o.shape == q.shape
    close("bhsd, scale 0.3, causal", o, sdpa_ref(q, k, v, True, 0.3, layout="bhsd"), 5e-3)
    # Packed QKV: the unbind(2) slices of one (batch, seq, 3, heads, dim)
    # tensor go to the kernel as views (the flagship declares strides (...)).
    qkv = randn(2, 45, 3, 2, 64, dtype=torch.float16)
    q, k, v = qkv.unbind(2)
    assert not q.is_contiguous() and tt._view_ok(q)
    close("packed qkv slices", tt.flash_attention(q, k, v), sdpa_ref(q, k, v, False, None), 5e-3)


# ---- torch.compile ----

def test_torch_compile_fullgraph():
    torch._dynamo.reset()
    sm = softmax_kernel()

    def f(x, q, k, v):
        y = sm(x * 2.0) + 1.0
        o = tt.flash_attention(q, k, v, causal=True)
        return y, o.float().sum(dim=-1)

    cf = torch.compile(f, fullgraph=True)
    x = randn(24, 256)
    q, k, v = (randn(1, 50, 2, 64, dtype=torch.float16) for _ in range(3))
    y1, s1 = cf(x, q, k, v)
    y0, s0 = f(x, q, k, v)
    close("compiled softmax part vs eager", y1, y0, 1e-6)
    close("compiled attention part vs eager", s1, s0, 1e-3)
    close("compiled softmax part vs torch", y1, torch.softmax(2.0 * x.double(), 1) + 1.0, 1e-5)
    # Another row count: the op's fake implementation gives the new shape.
    x2 = randn(40, 256)
    close("compiled, M=40", cf(x2, q, k, v)[0], torch.softmax(2.0 * x2.double(), 1) + 1.0, 1e-5)


# ---- CUDA only: streams and graphs ----

def test_side_stream():
    if DEVICE != "cuda":
        print("  cuda only")
        return
    s = torch.cuda.Stream()
    q, k, v = (randn(2, 1000, 4, 128, dtype=torch.bfloat16) for _ in range(3))
    x = randn(1000, 256)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        o = tt.flash_attention(q, k, v)
        y = softmax_kernel()(x)
    s.synchronize()
    close("flash_attention on a side stream", o, sdpa_ref(q, k, v, False, None), 2e-2)
    close("softmax on a side stream", y, torch.softmax(x.double(), 1), 1e-5)


def test_cuda_graph_capture():
    if DEVICE != "cuda":
        print("  cuda only")
        return
    sm = softmax_kernel()
    q, k, v = (randn(2, 512, 4, 64, dtype=torch.float16) for _ in range(3))
    x = randn(64, 256)
    # Warm up (compiles, loads the modules) on a side stream, as torch's docs ask.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        tt.flash_attention(q, k, v, causal=True)
        sm(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o = tt.flash_attention(q, k, v, causal=True)
        y = sm(x)
    for rep in range(3):  # new inputs in place, replay, check against the new inputs
        for t in (q, k, v):
            t.copy_(torch.randn(t.shape, device=dev).to(t.dtype))
        x.copy_(torch.randn(x.shape, device=dev))
        o.fill_(float("nan"))
        y.fill_(float("nan"))
        g.replay()
        sync()
        close("graph replay %d: flash_attention" % rep, o, sdpa_ref(q, k, v, True, None), 5e-3)
        close("graph replay %d: softmax" % rep, y, torch.softmax(x.double(), 1), 1e-5)


def test_compile_reduce_overhead():
    if DEVICE != "cuda":
        print("  cuda only")
        return
    torch._dynamo.reset()
    f = torch.compile(lambda q, k, v: tt.flash_attention(q, k, v, causal=False) * 0.5,
                      mode="reduce-overhead", fullgraph=True)
    for i in range(4):  # the first calls record, later ones replay the CUDA graph
        q, k, v = (randn(1, 256, 2, 64, dtype=torch.float16) for _ in range(3))
        o = f(q, k, v).clone()
        close("reduce-overhead call %d" % i, o, 0.5 * sdpa_ref(q, k, v, False, None), 5e-3)


def main():
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    print("tilec.torch tests on %s: torch %s, tilec %s (%s), seed %d (TILEC_SEED)"
          % (DEVICE, torch.__version__, tilec.version(), tilec.library_path(), SEED))
    failed = 0
    for name, fn in tests:
        print("%s:" % name)
        t0 = time.perf_counter()
        try:
            fn()
            print("  ok (%.2f s)" % (time.perf_counter() - t0))
        except Exception:
            failed += 1
            traceback.print_exc(file=sys.stdout)
            print("  FAILED")
    print("%d passed, %d failed" % (len(tests) - failed, failed))
    sys.exit(1 if failed else 0)


main()
