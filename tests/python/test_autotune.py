"""test_autotune.py - tilec.autotune on the CPU back end: examples/gemm.tile
(f16, 64x48x40, odd against the tiles) over a 3-point space where one point
(block_M = 0) does not compile.

What is asserted: the best config is one of the candidates that compiled
and it is the one with the smallest time (a timer hook makes the times
deterministic); the failing point is reported with the compiler's text and
never launched; every candidate's output is checked against the float64
product and against the first candidate's; the JSON cache is written
atomically (no temp file left) under the key; a second call is a cache hit
that compiles, launches and times nothing (ctx.load, make_args, check and
timer are counted); force=True and a different key retune; a corrupt cache
file is rebuilt; the default file is <context cache_dir>/autotune.json; a
space where nothing compiles raises AutotuneError and writes nothing.
"""
import json
import os
import tempfile

import harness
from harness import np, tilec

BASE = {"dtype": "f16", "block_N": 32, "block_K": 16, "num_stages": 2}
SPACE = {"block_M": [16, 32, 0]}      # 0: "dimension 0 of 'A_shared' is 0"
M, N, K = 64, 48, 40
BOUND = 4 * 2.0 ** -10


class Counted:
    """Wraps make_args / check / timer / ctx.load and counts the calls."""

    def __init__(self, ctx, times=None):
        self.calls = {"load": 0, "make_args": 0, "check": 0, "timer": 0}
        self.refs = []
        self.times = times
        load = ctx.load

        def counted_load(*a, **kw):
            self.calls["load"] += 1
            return load(*a, **kw)
        ctx.load = counted_load  # an instance attribute shadows the method

    def make_args(self):
        self.calls["make_args"] += 1
        r = np.random.default_rng(1234)  # the same inputs for every candidate
        a = r.standard_normal((M, K)).astype(np.float16)
        b = r.standard_normal((K, N)).astype(np.float16)
        return a, b, harness.poisoned((M, N), np.float16)

    def check(self, outputs, reference):
        self.calls["check"] += 1
        self.refs.append(reference)
        a, b, c = outputs
        ref = a.astype(np.float64) @ b.astype(np.float64)
        err, nonfinite = harness.rel_error(c, ref)
        assert nonfinite == 0 and err <= BOUND, "error %.3e, %d non-finite" % (err, nonfinite)
        if reference is not None:
            err2, _ = harness.rel_error(c, reference[2].astype(np.float64))
            assert err2 <= BOUND, "differs from the first candidate by %.3e" % err2

    def timer(self, launch):
        self.calls["timer"] += 1
        launch()
        return self.times[self.calls["timer"] - 1] if self.times else 1.0


def run(ctx, c, cache_file, key="gemm:f16:64x48x40", **kw):
    return tilec.autotune(ctx, harness.example("gemm.tile"), "gemm", BASE, SPACE, c.make_args,
                          key, warmup=1, reps=3, cache_file=cache_file, check=c.check,
                          timer=c.timer, log=lambda s: print("   ", s), **kw)


def test_tune_then_cache_hit():
    d = tempfile.mkdtemp(dir=harness.CACHE_DIR)
    cache_file = os.path.join(d, "sub", "tune.json")   # the folder is created
    with harness.cpu_context() as ctx:
        # block_M=32 gets the smaller time: it must win whatever the order.
        c = Counted(ctx, times=[3.0, 1.5])
        res = run(ctx, c, cache_file)
        print(res.table())
        assert not res.cache_hit and res.cached
        assert res.best_config == {"block_M": 32}, res.best_config
        assert res.best_ms == 1.5
        assert res.best_defines == dict(BASE, block_M=32), res.best_defines
        assert [r["config"]["block_M"] for r in res.results] == [16, 32, 0]
        assert [r["status"] for r in res.results] == ["ok", "ok", "compile_error"]
        bad = res.results[2]
        assert bad["ms"] is None
        assert "COMPILE_ERROR" in bad["error"] and "threads is 0" in bad["error"], bad["error"]
        assert "gemm.tile:" in bad["error"]          # file:line:col kept
        assert "compile_error" in res.table() and "threads is 0" in res.table()
        # Three loads, but only the two that compiled got arguments, a check and a timing.
        assert c.calls == {"load": 3, "make_args": 2, "check": 2, "timer": 2}, c.calls
        assert c.refs[0] is None and c.refs[1] is not None  # the 2nd compared with the 1st

        # The file: valid JSON, written atomically (no temp file left behind).
        with open(cache_file) as f:
            data = json.load(f)
        assert data["format"] == 1
        assert list(data["entries"]) == [res.cache_key]
        entry = data["entries"][res.cache_key]
        assert entry["best_config"] == {"block_M": 32} and entry["key"] == "gemm:f16:64x48x40"
        assert entry["device"].startswith("cpu:") and entry["tilec_version"] == tilec.version()
        assert len(entry["results"]) == 3
        assert res.cache_key.startswith("gemm:f16:64x48x40|gemm|src=")
        assert sorted(os.listdir(os.path.dirname(cache_file))) == ["tune.json", "tune.json.lock"]

        # Second call: a hit; nothing compiled, launched, checked or timed.
        c2 = Counted(ctx)
        hit = run(ctx, c2, cache_file)
        print(hit.table())
        assert hit.cache_hit and "cache hit" in hit.table()
        assert c2.calls == {"load": 0, "make_args": 0, "check": 0, "timer": 0}, c2.calls
        assert hit.best_config == res.best_config and hit.best_ms == res.best_ms
        assert hit.best_defines == res.best_defines
        assert [r["status"] for r in hit.results] == ["ok", "ok", "compile_error"]

        # force retunes and overwrites; now block_M=16 is faster.
        c3 = Counted(ctx, times=[0.5, 2.0])
        forced = run(ctx, c3, cache_file, force=True)
        assert not forced.cache_hit and forced.best_config == {"block_M": 16}
        assert c3.calls["timer"] == 2
        assert run(ctx, Counted(ctx), cache_file).best_config == {"block_M": 16}

        # Another key (another shape) is a miss and a second entry.
        c4 = Counted(ctx)
        other = run(ctx, c4, cache_file, key="gemm:f16:other")
        assert not other.cache_hit and c4.calls["timer"] == 2
        with open(cache_file) as f:
            assert len(json.load(f)["entries"]) == 2


def test_real_timing_and_default_file():
    d = tempfile.mkdtemp(dir=harness.CACHE_DIR)
    with harness.cpu_context(cache_dir=d) as ctx:
        c = Counted(ctx)
        space = {"threads": [64], "block_M": [16, 32]}
        res = tilec.autotune(ctx, harness.example("gemm.tile"), "gemm", BASE, space,
                             c.make_args, "gemm:real", warmup=1, reps=3, check=c.check)
        print(res.table())
        oks = [r for r in res.results if r["status"] == "ok"]
        assert len(oks) == 2 and all(r["ms"] > 0 for r in oks)
        assert res.best_ms == min(r["ms"] for r in oks)
        assert res.best_config in ({"block_M": 16, "threads": 64}, {"block_M": 32, "threads": 64})
        assert res.cache_file == os.path.join(d, "autotune.json"), res.cache_file
        assert os.path.isfile(res.cache_file)
        hit = tilec.autotune(ctx, harness.example("gemm.tile"), "gemm", BASE, space,
                             c.make_args, "gemm:real", check=c.check)
        assert hit.cache_hit and c.calls["make_args"] == 2
        assert list(hit.best_config) == ["threads", "block_M"]   # the space's order
        assert hit.config_str == res.config_str, (hit.config_str, res.config_str)
        # The winner really runs with its defines.
        k = ctx.load(harness.example("gemm.tile"), defines=res.best_defines).kernel("gemm")
        a, b, out = c.make_args()
        k(a, b, out)
        harness.check_close("best config", out, a.astype(np.float64) @ b.astype(np.float64), BOUND)


def test_check_rejects_and_corrupt_file():
    d = tempfile.mkdtemp(dir=harness.CACHE_DIR)
    cache_file = os.path.join(d, "autotune.json")
    with open(cache_file, "w") as f:
        f.write("{ not json")
    with harness.cpu_context() as ctx:
        c = Counted(ctx, times=[9.0, 1.0])
        n = [0]

        def picky(outputs, reference):
            n[0] += 1
            if n[0] == 1:
                raise AssertionError("wrong on purpose")
            return c.check(outputs, reference)
        res = tilec.autotune(ctx, harness.example("gemm.tile"), "gemm", BASE,
                             {"block_M": [32, 16]}, c.make_args, "gemm:picky",
                             warmup=0, reps=1, cache_file=cache_file, check=picky, timer=c.timer)
        print(res.table())
        assert [r["status"] for r in res.results] == ["check_failed", "ok"]
        assert "wrong on purpose" in res.results[0]["error"]
        # The rejected one is neither timed nor the reference: the next got None.
        assert c.calls["timer"] == 1 and c.refs == [None]
        assert res.best_config == {"block_M": 16}
        with open(cache_file) as f:
            assert res.cache_key in json.load(f)["entries"]   # rebuilt, not trusted


def test_nothing_compiles():
    d = tempfile.mkdtemp(dir=harness.CACHE_DIR)
    cache_file = os.path.join(d, "autotune.json")
    with harness.cpu_context() as ctx:
        c = Counted(ctx)
        try:
            tilec.autotune(ctx, harness.example("gemm.tile"), "gemm", BASE,
                           {"block_M": [0], "no_such_define": [1, 2]}, c.make_args, "gemm:none",
                           cache_file=cache_file)
        except tilec.AutotuneError as e:
            print("  raised as expected: %s" % str(e).splitlines()[0])
            assert [r["status"] for r in e.result.results] == ["compile_error"] * 2
            assert all(r["error"] for r in e.result.results)
            assert "no_such_define" in e.result.results[0]["error"]
        else:
            raise AssertionError("expected AutotuneError")
        assert c.calls["make_args"] == 0
        assert not os.path.exists(cache_file)
        for bad in ({}, {"block_M": []}, {"block_M": 16}):
            try:
                tilec.autotune(ctx, harness.example("gemm.tile"), "gemm", BASE, bad,
                               c.make_args, "gemm:bad", cache_file=cache_file)
            except ValueError as e:
                print("  %r: %s" % (bad, e))
            else:
                raise AssertionError("space %r was accepted" % (bad,))


def test_progress_on_stderr():
    """One progress line per configuration on stderr by default (start, each
    candidate in order with its time or its status, the end); nothing with
    quiet=True; a cache hit in one line."""
    import contextlib
    import io
    d = tempfile.mkdtemp(dir=harness.CACHE_DIR)
    cache_file = os.path.join(d, "autotune.json")
    with harness.cpu_context() as ctx:
        c = Counted(ctx, times=[3.0, 2.0])

        def run(**kw):
            err, out = io.StringIO(), io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                tilec.autotune(ctx, harness.example("gemm.tile"), "gemm", BASE, SPACE, c.make_args,
                               "gemm:progress", warmup=0, reps=1, cache_file=cache_file,
                               check=c.check, timer=c.timer, **kw)
            assert out.getvalue() == "", "progress went to stdout: %r" % out.getvalue()
            return err.getvalue().splitlines()

        lines = run()
        for l in lines:
            print("    stderr: " + l)
        assert len(lines) == 5, lines
        assert lines[0] == "autotune gemm:progress: 3 configurations of gemm on " + lines[0].split(" on ", 1)[1]
        assert lines[1].startswith("autotune gemm:progress [1/3] block_M=16: 3.0000 ms (best 3.0000)"), lines[1]
        assert lines[2].startswith("autotune gemm:progress [2/3] block_M=32: 2.0000 ms (best 2.0000)"), lines[2]
        assert lines[3].startswith("autotune gemm:progress [3/3] block_M=0: COMPILE_ERROR"), lines[3]
        assert lines[4].startswith("autotune gemm:progress: best block_M=32 (2.0000 ms) of 3"), lines[4]
        hit = run()
        assert len(hit) == 1 and "cache hit" in hit[0] and "block_M=32" in hit[0], hit
        assert run(quiet=True) == []
        c.times = [5.0, 4.0, 5.0, 4.0]
        c.calls["timer"] = 0
        assert run(force=True, quiet=True) == []                       # tuned again, silently
        assert c.calls["timer"] == 2
        assert run(force=True, quiet=True, log=print) == []            # quiet wins over log
        assert c.calls["timer"] == 4


harness.main(globals())
