"""test_binding.py - the binding itself: its declarations agree with the C
headers, kernel signatures read back right, scalars convert, the disk cache
is hit on a second load, a module's compile log, modules and contexts close
cleanly.
"""
import math
import os
import re
import sys

import harness
from harness import np, tilec
from tilec import _ffi

SCALE_ADD = """
kernel scale_add(A: f32[n], B: f32[n], C: f32[n], alpha: f32)
  const (block = 64)
  grid (ceildiv(n, block)) threads (block) as (bx)
{
    a = alloc_fragment([block], f32);
    b = alloc_fragment([block], f32);
    copy(A[bx*block : (bx+1)*block], a);
    copy(B[bx*block : (bx+1)*block], b);
    for i in parallel(block) a[i] = a[i] * alpha + b[i];
    copy(a, C[bx*block : (bx+1)*block]);
}
"""


def read(rel):
    with open(os.path.join(harness.SOURCE_DIR, rel)) as f:
        return f.read()


def test_declarations_match_headers():
    rt = read("runtime/include/tilert.h")
    block = rt[rt.index("#define TILERT_STATUSES"):rt.index("typedef enum TilertStatus")]
    names = tuple(re.findall(r"X\((\w+),", block))
    assert names == _ffi.STATUS_NAMES, "tilert.h has %s, _ffi.py %s" % (names, _ffi.STATUS_NAMES)
    lib = _ffi.lib()
    for i, _ in enumerate(names):
        assert lib.tilert_strerror(i), i
    tc = read("compiler/include/tilec.h")
    dtypes = re.search(r"typedef enum TilecDType \{([^}]*)\}", tc).group(1)
    order = [m.lower() for m in re.findall(r"TILEC_DTYPE_(\w+)", dtypes)]
    assert tuple(order) == _ffi.DTYPE_NAMES, order
    assert "TILEC_MAX_RANK = %d" % _ffi.TILEC_MAX_RANK in tc
    assert tilec.version() == re.search(r'TILEC_VERSION_STRING "([^"]+)"', tc).group(1)


def test_flash_attention_info():
    with harness.cpu_context() as ctx:
        k = ctx.load(harness.example("flash_attention.tile"),
                     defines={"dim": 64, "dtype": "f16", "is_causal": True, "block_M": 32,
                              "threads": 64}).kernel("flash_attention")
        info = k.info
        assert info.name == "flash_attention" and info.entry == "tilec_flash_attention"
        assert info.param_names == ("Q", "K", "V", "Output", "scale")
        q = info.params[0]
        assert q.is_tensor and q.dtype == "f16" and q.rank == 4
        assert q.dims == ("batch", "seq_len", "heads", 64), q.dims
        assert q.dim_names == (None, None, None, "dim"), q.dim_names
        assert q.type_str == "f16[batch, seq_len, heads, 64]"
        s = info.params[4]
        assert not s.is_tensor and s.rank == 0 and s.dims == () and s.dtype == "f32"
        # The shapes' symbols, then the strides' (the flagship declares strides (...)).
        assert set(info.dynamic_symbols) == {"batch", "seq_len", "heads"} | {
            t + "_s" + d for t in "qkvo" for d in "bsh"}, info.dynamic_symbols
        assert q.strides == ("q_sb", "q_ss", "q_sh", 1), q.strides
        assert info.threads == 64, info.threads
        assert info.shared_bytes >= 0
        assert info.persistent is False  # the C backend: one call runs the grid
        assert info.stream_k is False and info.stream_k_able is False  # sm_90a GEMMs only
        assert "flash_attention(Q: f16[batch, seq_len, heads, 64]" in repr(info)
        # seq_len bound: no longer dynamic
        k2 = ctx.load(harness.example("flash_attention.tile"),
                      defines={"dim": 64, "seq_len": 100}).kernel("flash_attention")
        assert k2.info.params[1].dims == ("batch", 100, "heads", 64)
        assert "seq_len" not in k2.info.dynamic_symbols


def test_scalars_and_source_text():
    with harness.cpu_context() as ctx:
        mod = ctx.load(SCALE_ADD, name="scale_add.tile")
        k = mod["scale_add"]
        n = 100
        a = np.arange(n, dtype=np.float32)
        b = np.ones(n, np.float32)
        for alpha in (2, 0.5, np.float32(-1.25), np.int64(3), True):
            c = harness.poisoned(n, np.float32)
            k(a, b, c, alpha)
            ref = a.astype(np.float64) * float(alpha) + 1
            assert np.array_equal(c, ref.astype(np.float32)), (alpha, c[:4])
        # an int too large for int64 is refused by the binding
        c = harness.poisoned(n, np.float32)
        harness.expect_error("LAUNCH_MISMATCH", lambda: k(a, b, c, 1 << 70), "argument 4 'alpha'")
        # zero-length tensors launch and write nothing
        e = np.zeros(0, np.float32)
        k(e, e, e, 1.0)
        # a bound launch reuses the exported arguments
        c = harness.poisoned(n, np.float32)
        run = k.bind(a, b, c, 3.0)
        run()
        assert np.array_equal(c, a * 3 + 1)
        a += 1  # same memory: the next launch sees it
        run()
        assert np.array_equal(c, a * 3 + 1)


def test_defines_of_every_type():
    src = SCALE_ADD.replace("const (block = 64)", "const (block = 64, twice = false, bias = 0.0)") \
                   .replace("a[i] * alpha + b[i]", "a[i] * alpha + b[i] + bias")
    with harness.cpu_context() as ctx:
        k = ctx.load(src, defines={"block": 32, "twice": True, "bias": 0.25, "n": 40}).kernel("scale_add")
        assert k.info.params[0].dims == (40,)
        assert k.info.threads == 32
        a = np.ones(40, np.float32)
        c = harness.poisoned(40, np.float32)
        k(a, a, c, 1)
        assert np.allclose(c, 2.25), c[:3]
    try:
        tilec.Context._defines({"x": object()})
    except TypeError:
        pass
    else:
        raise AssertionError("a define of type object was accepted")


def test_cache_hit_on_second_load():
    path = harness.example("softmax.tile")
    defs = {"N": 64, "block_M": 2}
    with harness.cpu_context() as ctx:
        first = ctx.load(path, defines=defs)
        assert not first.from_cache, "fresh cache but the first load came from it"
    with harness.cpu_context() as ctx:
        second = ctx.load(path, defines=defs)
        assert second.from_cache, "second load compiled again"
        x = np.zeros((3, 64), np.float32)
        y = harness.poisoned((3, 64), np.float32)
        second.kernel("softmax")(x, y)
        assert np.allclose(y, 1 / 64)
    # disable_cache compiles every time
    with harness.cpu_context(disable_cache=True) as ctx:
        assert not ctx.load(path, defines=defs).from_cache


def test_compile_log():
    # The CPU path runs no NVRTC: "" (a str, never None), built or from the
    # cache. NVRTC's text itself is checked by runtime_compile_log (C).
    for expect_cached in (False, True):
        with harness.cpu_context() as ctx:
            mod = ctx.load(SCALE_ADD, defines={"block": 32})
            assert mod.from_cache == expect_cached
            assert mod.compile_log == "", repr(mod.compile_log)
            mod.close()
            harness.expect_error("INVALID_ARGUMENT", lambda: mod.compile_log, "the module is closed")


def test_warnings():
    # tilec's own warnings (all of them sm_90a-only today): "" for a CPU
    # module, and no TilecWarning issued at its load. The text on a GPU is
    # checked by runtime_compile_log (C, on an sm_90 GPU).
    import warnings
    with harness.cpu_context() as ctx:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            mod = ctx.load(SCALE_ADD, defines={"block": 32})
        assert mod.warnings == "", repr(mod.warnings)
        assert not [w for w in seen if issubclass(w.category, tilec.TilecWarning)], [str(w.message) for w in seen]
        assert issubclass(tilec.TilecWarning, UserWarning)
        mod.close()
        harness.expect_error("INVALID_ARGUMENT", lambda: mod.warnings, "the module is closed")

    # The issuing side, with the text a GPU load would have: one
    # TilecWarning, its message tilec's text, attributed to this file's line.
    class Warned(tilec.Module):
        def __init__(self):
            pass

        @property
        def warnings(self):
            return "w.tile:10:5: warning: gemm: runs as mma.sync, not wgmma\n"

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        Warned()._warn()
        line = sys._getframe().f_lineno - 1
    got = [w for w in seen if issubclass(w.category, tilec.TilecWarning)]
    assert len(got) == 1, [str(w.message) for w in seen]
    assert str(got[0].message) == "tilec: w.tile:10:5: warning: gemm: runs as mma.sync, not wgmma", str(got[0].message)
    assert os.path.abspath(got[0].filename) == os.path.abspath(__file__) and got[0].lineno == line, \
        (got[0].filename, got[0].lineno, line)


def test_close_and_lifetimes():
    ctx = harness.cpu_context()
    assert ctx.device == "cpu" and "cpu" in repr(ctx).lower()
    k = ctx.load(SCALE_ADD).kernel("scale_add")
    del ctx  # the kernel keeps its module and context alive
    a = np.ones(3, np.float32)
    c = harness.poisoned(3, np.float32)
    k(a, a, c, 2.0)
    assert np.array_equal(c, [3, 3, 3])
    k.module.context.close()  # closes the module too
    harness.expect_error("INVALID_ARGUMENT", lambda: k(a, a, c, 2.0), "closed")
    k.module.close()  # twice is fine
    assert math.isfinite(c[0])


def test_stream_handles():
    """None and the int 0 mean the default stream, waited for; a stream
    object passes its handle, and one whose handle is 0 (torch's default
    stream) passes CU_STREAM_LEGACY: the same stream, asynchronous, as the
    Kernel docstring promises for stream objects."""
    class FakeStream:
        def __init__(self, handle):
            self.cuda_stream = handle
    sh = tilec._stream_handle
    assert sh(None) == 0 and sh(0) == 0 and sh(12345) == 12345
    assert sh(FakeStream(777)) == 777
    assert sh(FakeStream(0)) == tilec.CU_STREAM_LEGACY == 1
    try:
        sh("stream")
    except TypeError:
        pass
    else:
        raise AssertionError("a string was taken as a stream")


harness.main(globals())
