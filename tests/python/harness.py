"""harness.py - what the Python binding's tests share.

Each test_*.py file is a script: it imports this module, defines test_*
functions, and ends with `harness.main(globals())`, which runs them in
order and exits 0 (all passed), 1 (one failed) or 77 (skipped: NumPy or
the binding missing; ctest's SKIP_RETURN_CODE). Every run compiles into a
fresh temporary cache directory ($TILEC_CACHE_DIR, removed at exit), draws
fresh random inputs (the seed is printed; TILEC_SEED repeats a run) and
poisons outputs with NaN before each launch.

Environment (set by tests/python/CMakeLists.txt): PYTHONPATH (the package),
TILEC_LIBRARY (libtilert.so), TILEC_SOURCE_DIR (the repository).
"""

import os
import shutil
import sys
import tempfile
import time
import traceback

SKIP = 77

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed (pip install numpy / apt-get install python3-numpy)")
    sys.exit(SKIP)

try:
    import tilec
except ImportError as e:
    print("SKIP: cannot import the tilec package (%s); set PYTHONPATH to python/" % e)
    sys.exit(SKIP)

SOURCE_DIR = os.environ.get("TILEC_SOURCE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLES = os.path.join(SOURCE_DIR, "examples")

CACHE_DIR = tempfile.mkdtemp(prefix="tilec-pytest-")
os.environ["TILEC_CACHE_DIR"] = CACHE_DIR
os.environ.pop("TILEC_CACHE_DISABLE", None)

SEED = int(os.environ.get("TILEC_SEED") or (time.time_ns() % (1 << 31)))
rng = np.random.default_rng(SEED)


def test_device():
    """$TILEC_TEST_DEVICE ("cpu" when unset). "cuda" without PyTorch and a
    CUDA GPU exits with SKIP (the gpu-labelled variants of CPU tests)."""
    device = os.environ.get("TILEC_TEST_DEVICE", "cpu")
    if device == "cuda":
        try:
            import torch
            gpu = torch.cuda.is_available()
        except ImportError:
            gpu = False
        if not gpu:
            print("SKIP: TILEC_TEST_DEVICE=cuda needs PyTorch with a CUDA GPU")
            raise SystemExit(SKIP)
    return device


def example(name):
    return os.path.join(EXAMPLES, name)


def cpu_context(**kw):
    """A CPU context on this run's temporary cache."""
    return tilec.Context(device="cpu", **kw)


_loaded = {}


def run_in_place(path, name, *arrays):
    """Runs kernel `name` of the .tile file at `path` on numpy arrays, which
    it updates in place: on $TILEC_TEST_DEVICE (the CPU back end, or the GPU
    through torch copies that are copied back). The file is loaded once per
    process."""
    device = os.environ.get("TILEC_TEST_DEVICE", "cpu")
    if path not in _loaded:
        ctx = (tilec.Context(device="cuda", cache_dir=CACHE_DIR) if device == "cuda" else cpu_context())
        _loaded[path] = ctx.load_file(path)
    k = _loaded[path].kernel(name)
    if device != "cuda":
        k(*arrays)
        return
    import torch
    ts = [torch.from_numpy(a).cuda() for a in arrays]
    k(*ts)
    torch.cuda.synchronize()
    for a, t in zip(arrays, ts):
        a[...] = t.cpu().numpy()


def poisoned(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


def rel_error(out, ref):
    """max|out - ref| / max|ref| in float64, and the count of non-finite outputs."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    nonfinite = int(np.count_nonzero(~np.isfinite(out)))
    scale = float(np.max(np.abs(ref))) if ref.size else 1.0
    err = float(np.max(np.abs(out - ref))) / (scale if scale > 0 else 1.0) if out.size else 0.0
    return err, nonfinite


def check_close(what, out, ref, bound):
    err, nonfinite = rel_error(out, ref)
    print("  %s: error %.3e of max|ref| (bound %.1e), %d non-finite" % (what, err, bound, nonfinite))
    assert nonfinite == 0, "%s: %d non-finite outputs" % (what, nonfinite)
    assert err <= bound, "%s: error %.3e exceeds %.1e" % (what, err, bound)


def expect_error(status, fn, *must_contain):
    """Runs fn(); it must raise TilecError with `status` and a message that
    contains every string of must_contain. Returns the error."""
    try:
        fn()
    except tilec.TilecError as e:
        print("  raised as expected: %s" % str(e).splitlines()[0])
        assert e.status == status, "status %s, expected %s (%s)" % (e.status, status, e)
        assert e.code == tilec.STATUS_NAMES.index(status)
        for s in must_contain:
            assert s in e.message, "message %r lacks %r" % (e.message, s)
        return e
    raise AssertionError("expected TilecError %s, nothing was raised" % status)


def main(namespace):
    tests = [(n, f) for n, f in namespace.items() if n.startswith("test_") and callable(f)]
    print("tilec binding tests: library %s, seed %d (TILEC_SEED), cache %s"
          % (tilec.library_path(), SEED, CACHE_DIR))
    failed = 0
    try:
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
    finally:
        shutil.rmtree(CACHE_DIR, ignore_errors=True)
    print("%d passed, %d failed" % (len(tests) - failed, failed))
    sys.exit(1 if failed else 0)
