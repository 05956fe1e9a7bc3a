"""test_errors.py - what the binding raises, and that a refused launch
touches nothing. Every runtime error is a TilecError carrying the status
name and tilert_last_error()'s text; launch mismatches name the argument.
"""
import harness
from harness import np, tilec

GEMM = {"dtype": "f16", "block_M": 32, "block_N": 32, "block_K": 16}


def gemm_kernel(ctx):
    return ctx.load(harness.example("gemm.tile"), defines=GEMM).kernel("gemm")


def operands(m=10, n=7, k=5):
    return (np.ones((m, k), np.float16), np.ones((k, n), np.float16),
            harness.poisoned((m, n), np.float16))


def test_wrong_shape_names_the_argument():
    with harness.cpu_context() as ctx:
        g = gemm_kernel(ctx)
        a, b, c = operands()
        bad_c = harness.poisoned((10, 8), np.float16)
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, b, bad_c),
                             "argument 3 'C'", "dim 1 is 8", "N = 7")
        assert np.isnan(bad_c).all(), "a refused launch wrote its output"
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, np.ones((5, 7, 1), np.float16), c),
                             "argument 2 'B'", "rank is 3, expected 2")


def test_wrong_dtype_names_the_argument():
    with harness.cpu_context() as ctx:
        g = gemm_kernel(ctx)
        a, b, c = operands()
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, b.astype(np.float32), c),
                             "argument 2 'B'", "float32", "expected f16")
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a.astype(np.int32), b, c),
                             "argument 1 'A'", "int32")
        assert np.isnan(c).all()


def test_non_contiguous_is_refused():
    with harness.cpu_context() as ctx:
        g = gemm_kernel(ctx)
        a, b, c = operands()
        big = np.ones((20, 5), np.float16)
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(big[::2], b, c),
                             "argument 1 'A'", "not compact row-major")
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, b, np.asfortranarray(c)),
                             "argument 3 'C'", "not compact row-major")
        wide = harness.poisoned((10, 14), np.float16)
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, b, wide[:, :7]),
                             "argument 3 'C'", "not compact row-major")
        assert np.isnan(wide).all()


def test_argument_kinds_and_count():
    with harness.cpu_context() as ctx:
        g = gemm_kernel(ctx)
        a, b, c = operands()
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, b), "expected 3 arguments, got 2")
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, b, 1.5), "argument 3 'C'", "scalar")
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, b, [1, 2]),
                             "argument 3 'C'", "neither a tensor")
        fa = ctx.load(harness.example("flash_attention.tile"),
                      defines={"dim": 64}).kernel("flash_attention")
        t = np.zeros((1, 3, 1, 64), np.float16)
        harness.expect_error("LAUNCH_MISMATCH", lambda: fa(t, t, t, t, np.zeros(1, np.float32)),
                             "argument 5 'scale'", "expected a scalar f32, got a tensor")
        harness.expect_error("LAUNCH_MISMATCH", lambda: fa(t, t, t, t, 1j),
                             "argument 5 'scale'", "not a supported scalar")


def test_read_only_array():
    # NumPy refuses to export a read-only array as a legacy (unversioned)
    # capsule; the binding must turn that into a TilecError, not a crash.
    a, b, c = operands()
    a.flags.writeable = False
    try:
        a.__dlpack__()
    except BufferError:
        pass
    else:
        print("  this NumPy exports read-only arrays; nothing to check")
        return
    with harness.cpu_context() as ctx:
        g = gemm_kernel(ctx)
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a, b, c), "argument 1 'A'", "DLPack")


def test_load_errors():
    with harness.cpu_context() as ctx:
        e = harness.expect_error("COMPILE_ERROR",
                                 lambda: ctx.load("kernel k(A: f32[n])\n{ oops }\n", name="bad.tile"),
                                 "bad.tile:")
        assert "error" in e.message
        harness.expect_error("IO_ERROR", lambda: ctx.load("/nonexistent/x.tile"), "/nonexistent/x.tile")
        mod = ctx.load(harness.example("gemm.tile"), defines=GEMM)
        harness.expect_error("NOT_FOUND", lambda: mod.kernel("gemmm"), "gemmm", "gemm")
        harness.expect_error("INVALID_ARGUMENT",
                             lambda: ctx.load(harness.example("gemm.tile"), defines={"no_such": 1}))
    try:
        ctx.load(harness.example("gemm.tile"))
    except tilec.TilecError as e:
        assert e.status == "INVALID_ARGUMENT" and "closed" in e.message
    else:
        raise AssertionError("a closed context loaded a module")


def test_bad_context_arguments():
    try:
        tilec.Context(device="tpu")
    except ValueError:
        pass
    else:
        raise AssertionError("device='tpu' accepted")
    try:
        ctx = tilec.Context(device="cuda")
    except tilec.TilecError as e:
        print("  no GPU here: %s" % e)
        assert e.status == "NO_GPU" and e.message
    else:
        assert ctx.device == "cuda"
        ctx.close()


harness.main(globals())
