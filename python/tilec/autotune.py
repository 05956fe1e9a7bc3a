"""autotune.py - pick a kernel's tile configuration by measuring it, and
remember the choice per shape.

    res = tilec.autotune(ctx, "examples/flash_attention.tile", "flash_attention",
                         {"dtype": "bf16", "dim": 128, "is_causal": False},
                         {"block_M": [64, 128], "block_N": [32, 64],
                          "threads": [128, 256], "num_stages": [1, 2]},
                         make_args, key="fa:bf16:d128:causal0:seq4096")
    print(res.table()); fa = ctx.load(path, defines=res.best_defines).kernel(...)

How it works: every point of the product of `space` (in the dict's order)
is merged over `base_defines` and loaded through the context (the
runtime's disk cache still applies). A configuration the compiler or NVRTC
rejects (fragments over 255 registers, too much shared memory, shape rules)
is recorded with its status and error text and skipped. Each survivor gets
fresh arguments from make_args(), one launch, the optional check, then
`warmup` launches and `reps` timed ones; the median is its time. Timing:
torch.cuda.Event around each launch on the current stream when the context
is on CUDA and torch imports, else time.perf_counter around a synchronous
launch (CPU, or CUDA's default stream, which the runtime waits for); a
`timer(launch) -> ms` callable replaces both.

The cache is one JSON file (default <context cache dir, else
$TILEC_CACHE_DIR, $XDG_CACHE_HOME/tilec, ~/.cache/tilec>/autotune.json),
one entry per (key, sha256 of the kernel source, tilec version, device
name, and a digest of the kernel name, base defines, space and the compiler
environment). A hit returns the stored best and table without compiling or
launching anything. The file is rewritten atomically (temp file in the same
folder + os.replace) under an advisory lock, merging with entries other
processes wrote meanwhile; a corrupt or unreadable file is treated as empty.
"""

import datetime
import hashlib
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time

from . import TilecError, version as _tilec_version

__all__ = ["autotune", "AutotuneResult", "AutotuneError", "default_cache_file"]

CACHE_FORMAT = 1

# Statuses of one candidate in the results table.
OK, COMPILE_ERROR, LAUNCH_ERROR, CHECK_FAILED, NOT_RUN = (
    "ok", "compile_error", "launch_error", "check_failed", "not_run")


class AutotuneError(Exception):
    """No configuration compiled, launched and passed the check. `result`
    is the AutotuneResult with every candidate's error."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class AutotuneResult:
    """What autotune() found.

    best_config:  the chosen point of the space, e.g. {"block_M": 128, ...}
    best_defines: base_defines updated with best_config (what to load with)
    best_ms:      its median time in ms
    results:      one dict per candidate, in the space's order: config,
                  status ("ok", "compile_error", "launch_error",
                  "check_failed", "not_run"), ms (None unless ok), error
                  (the full error text, None when ok), compile_s, from_cache
                  (the runtime's disk cache served the binary)
    cache_hit:    True when this came from the JSON cache: nothing was
                  compiled, launched or timed
    cache_file:   the JSON file (None when caching is off); cached: whether
                  this result is stored there
    key, cache_key: the caller's key and the full entry key in the file
    device, elapsed_s
    """

    def __init__(self, **kw):
        self.key = kw.get("key")
        self.cache_key = kw.get("cache_key")
        self.best_config = kw.get("best_config")
        self.best_defines = kw.get("best_defines")
        self.best_ms = kw.get("best_ms")
        self.results = kw.get("results") or []
        self.cache_hit = bool(kw.get("cache_hit"))
        self.cache_file = kw.get("cache_file")
        self.cached = bool(kw.get("cached"))
        self.device = kw.get("device")
        self.elapsed_s = kw.get("elapsed_s")

    @property
    def config_str(self):
        """The best config as "block_M=128 block_N=64 ..." (or "none")."""
        return _config_str(self.best_config) if self.best_config else "none"

    def table(self):
        """The results as aligned text, fastest first, failures last."""
        ok = sorted((r for r in self.results if r["status"] == OK), key=lambda r: r["ms"])
        bad = [r for r in self.results if r["status"] != OK]
        lines = [("config", "status", "ms", "note")]
        for r in ok + bad:
            note = "best" if r["config"] == self.best_config else ""
            if r.get("error"):
                note = _first_line(r["error"])
            lines.append((_config_str(r["config"]), r["status"],
                          "%.4f" % r["ms"] if r.get("ms") is not None else "-", note))
        w = [max(len(l[i]) for l in lines) for i in range(3)]
        out = ["%s  %s  %s  %s" % (l[0].ljust(w[0]), l[1].ljust(w[1]), l[2].rjust(w[2]), l[3])
               for l in lines]
        head = "autotune %s on %s: %s" % (self.key, self.device,
                                          "cache hit" if self.cache_hit else
                                          "%d candidates in %.2f s" % (len(self.results),
                                                                      self.elapsed_s or 0.0))
        return "\n".join([head] + [o.rstrip() for o in out])

    def __repr__(self):
        return "AutotuneResult(key=%r, best=%s, %s, cache_hit=%s)" % (
            self.key, self.config_str,
            "%.4f ms" % self.best_ms if self.best_ms is not None else "-", self.cache_hit)


def _config_str(cfg):
    return " ".join("%s=%s" % (k, _jsonable(v)) for k, v in cfg.items())


def _first_line(text):
    lines = [l.strip() for l in str(text).splitlines() if l.strip()]
    if not lines:
        return ""
    line = lines[0]
    # "NVRTC_FAILED: log:" introduces a log: show its first error instead.
    if line.endswith(":"):
        err = next((l for l in lines[1:] if "error" in l.lower()), None)
        if err:
            line += " " + err
    return line[:200]


def _jsonable(v):
    if isinstance(v, bool) or v is None or isinstance(v, (int, float, str)):
        return v
    return str(v)


# ---- where the cache lives and what it is keyed by ----

def default_cache_file(ctx=None):
    """<ctx's cache_dir, else $TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec,
    else ~/.cache/tilec>/autotune.json (the runtime's own search order)."""
    d = getattr(ctx, "_cache_dir", None) if ctx is not None else None
    if d is None:
        d = os.environ.get("TILEC_CACHE_DIR") or None
    if d is None:
        xdg = os.environ.get("XDG_CACHE_HOME")
        d = os.path.join(xdg, "tilec") if xdg else os.path.join(os.path.expanduser("~"), ".cache", "tilec")
    return os.path.join(os.fsdecode(d), "autotune.json")


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _cuda_name_from_driver():
    """Device 0's name through libcuda (no torch needed); None on failure."""
    import ctypes
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        if cu.cuInit(0) != 0:
            return None
        dev = ctypes.c_int()
        if cu.cuDeviceGet(ctypes.byref(dev), 0) != 0:
            return None
        buf = ctypes.create_string_buffer(256)
        if cu.cuDeviceGetName(buf, 256, dev) != 0:
            return None
        return buf.value.decode("utf-8", "replace")
    except (OSError, AttributeError):
        return None


def _device_name(device, torch):
    if device == "cuda":
        name = None
        if torch is not None:
            try:
                name = torch.cuda.get_device_name(0)
            except Exception:
                name = None
        return "cuda:" + (name or _cuda_name_from_driver() or "unknown")
    return "cpu:" + _cpu_name()


def _source_bytes(source):
    """The kernel text, read the way Context.load tells a path from text."""
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    if isinstance(source, str) and ("\n" in source or "{" in source):
        return source.encode("utf-8")
    with open(source, "rb") as f:
        return f.read()


def _digest(obj):
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- the JSON file ----

def _read_cache(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


class _FileLock:
    """An advisory lock on PATH.lock (fcntl where there is one; elsewhere a
    no-op: the write itself stays atomic, only a concurrent entry may be
    lost)."""

    def __init__(self, path):
        self.path = path + ".lock"
        self.fd = None

    def __enter__(self):
        try:
            import fcntl
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except (ImportError, OSError):
            if self.fd is not None:
                os.close(self.fd)
            self.fd = None
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock
            self.fd = None


def _write_entry(path, cache_key, entry):
    """Adds `entry` to the file: re-read under the lock (other processes may
    have added theirs), then temp file + fsync + os.replace."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with _FileLock(path):
        entries = _read_cache(path)
        entries[cache_key] = entry
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".autotune-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"format": CACHE_FORMAT, "entries": entries}, f, indent=1)  # configs keep the space's order
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def _entry_result(entry, key, cache_key, cache_file, device, base_defines):
    """An AutotuneResult from a stored entry, or None when it is malformed."""
    try:
        best = dict(entry["best_config"])
        results = [dict(r) for r in entry["results"]]
        best_ms = entry["best_ms"]
        for r in results:
            r["config"] = dict(r["config"])
            r["status"]
    except (KeyError, TypeError, ValueError):
        return None
    defines = dict(base_defines)
    defines.update(best)
    return AutotuneResult(key=key, cache_key=cache_key, best_config=best, best_defines=defines,
                          best_ms=best_ms, results=results, cache_hit=True, cache_file=cache_file,
                          cached=True, device=device, elapsed_s=0.0)


# ---- timing ----

def _event_timer(torch, warmup, reps):
    def time_it(launch):
        for _ in range(warmup):
            launch()
        torch.cuda.synchronize()
        evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(reps)]
        for start, end in evs:
            start.record()
            launch()
            end.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in evs)
    return time_it


def _host_timer(warmup, reps):
    # The launch is synchronous here (CPU; CUDA on the default stream).
    def time_it(launch):
        for _ in range(warmup):
            launch()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            launch()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    return time_it


def _sync(torch):
    if torch is not None:
        torch.cuda.synchronize()


# ---- the tuner ----

def _silent(line):
    pass


def _to_stderr(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _configs(space):
    if not isinstance(space, dict) or not space:
        raise ValueError("tilec.autotune: space must be a non-empty dict {name: [values]}")
    names = list(space)
    values = []
    for n in names:
        v = space[n]
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
            raise ValueError("tilec.autotune: space[%r] must be a list of values" % (n,))
        v = list(v)
        if not v:
            raise ValueError("tilec.autotune: space[%r] is empty" % (n,))
        values.append(v)
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def autotune(ctx, path, kernel_name, base_defines, space, make_args, key,
             warmup=2, reps=10, cache_file=None, check=None, timer=None, stream=None,
             force=False, log=None, quiet=False):
    """Compiles, checks and times `kernel_name` of `path` for every point of
    `space` over `base_defines`; returns an AutotuneResult (the best config,
    its defines, a table of every candidate) and caches it under `key`.

    ctx:          a tilec.Context (CPU or CUDA)
    path:         the .tile file (or its text, as Context.load takes it)
    base_defines: {name: value} that every candidate shares
    space:        {define: [values]}, e.g. {"block_M": [64, 128], ...}
    make_args():  the launch arguments (tensors and scalars, in order) of one
                  representative shape. Called once per candidate: return
                  the same inputs each time (seed it) and fresh outputs
                  (poisoned, e.g. NaN), so check sees only what this
                  candidate wrote.
    key:          the shape, as a string, e.g. "fa:bf16:d128:causal0:seq4096"
    warmup, reps: launches before timing, and timed launches (the median counts)
    cache_file:   the JSON file (None: default_cache_file(ctx); False: no cache)
    check(outputs, reference): optional; outputs is this candidate's
                  argument tuple after one launch, reference that of the
                  first candidate that passed (None for that first one). Return
                  False or raise to reject the candidate ("check_failed").
    timer(launch) -> ms: optional, replaces the built-in timing; `launch`
                  launches this candidate once on its arguments.
    stream:       the launch stream on CUDA (None: torch's current stream when
                  torch imports, else the default stream, synchronous)
    force:        retune even when the cache has the key (and overwrite it)
    log(line):    where progress lines go (default: stderr, flushed): one
                  line when tuning starts, one per configuration as it
                  finishes ("[3/16] block_M=64 ...: 0.1234 ms (best 0.1000)",
                  or its status and the first line of its error), one at the
                  end; a cache hit says so in one line
    quiet:        no progress output at all (log is then ignored)

    A cache hit compiles, launches and times nothing (result.cache_hit).
    Raises AutotuneError when no candidate passes (nothing is cached then).
    """
    t_start = time.perf_counter()
    configs = _configs(space)
    base_defines = dict(base_defines or {})
    device = ctx.device
    torch = None
    if device == "cuda":
        try:
            import torch as _torch
            if _torch.cuda.is_available():
                torch = _torch
        except Exception:
            torch = None
    dev_name = _device_name(device, torch)
    src_hash = hashlib.sha256(_source_bytes(path)).hexdigest()[:16]
    cfg_hash = _digest({"kernel": kernel_name, "base": {k: _jsonable(v) for k, v in base_defines.items()},
                        "space": {k: [_jsonable(x) for x in v] for k, v in space.items()},
                        "env": [os.environ.get("TILEC_NVRTC_FLAGS"), os.environ.get("TILEC_CC")]})
    tv = _tilec_version()
    cache_key = "%s|%s|src=%s|tilec=%s|dev=%s|cfg=%s" % (key, kernel_name, src_hash, tv, dev_name, cfg_hash)
    if cache_file is None:
        cache_file = default_cache_file(ctx)
    elif cache_file is False:
        cache_file = None
    if quiet:
        say = _silent
    elif log is not None:
        say = log
    else:
        say = _to_stderr

    if cache_file and not force:
        entry = _read_cache(cache_file).get(cache_key)
        if entry is not None:
            res = _entry_result(entry, key, cache_key, cache_file, dev_name, base_defines)
            if res is not None:
                say("autotune %s: cache hit (%s) -> %s" % (key, cache_file, res.config_str))
                return res

    if timer is None:
        timer = _event_timer(torch, warmup, reps) if torch is not None else _host_timer(warmup, reps)
    if stream is None and torch is not None:
        stream = torch.cuda.current_stream()

    results = []
    reference = None
    best = None
    sticky = False  # a CUDA error poisons the context: stop there
    say("autotune %s: %d configurations of %s on %s" % (key, len(configs), kernel_name, dev_name))
    for i, cfg in enumerate(configs):
        row = {"config": {k: _jsonable(v) for k, v in cfg.items()}, "status": NOT_RUN, "ms": None,
               "error": None, "compile_s": None, "from_cache": None}
        results.append(row)
        if sticky:
            row["error"] = "not run: an earlier candidate left a CUDA error"
            say("autotune %s [%d/%d] %s: not run (an earlier candidate left a CUDA error)"
                % (key, i + 1, len(configs), _config_str(cfg)))
            continue
        defines = dict(base_defines)
        defines.update(cfg)
        mod = None
        try:
            t0 = time.perf_counter()
            try:
                mod = ctx.load(path, defines=defines)
                kern = mod.kernel(kernel_name)
            except (TilecError, TypeError, ValueError) as e:
                row["status"] = COMPILE_ERROR
                row["error"] = str(e)
                say("autotune %s [%d/%d] %s: %s" % (key, i + 1, len(configs), _config_str(cfg),
                                                    _first_line(e)))
                continue
            row["compile_s"] = time.perf_counter() - t0
            row["from_cache"] = mod.from_cache
            args = tuple(make_args())
            try:
                kern(*args, stream=stream)
                _sync(torch)
            except TilecError as e:
                row["status"] = LAUNCH_ERROR
                row["error"] = str(e)
                sticky = e.status == "CUDA_ERROR"
                say("autotune %s [%d/%d] %s: %s" % (key, i + 1, len(configs), _config_str(cfg),
                                                    _first_line(e)))
                continue
            if check is not None:
                why = None
                try:
                    if check(args, reference) is False:
                        why = "check returned False"
                except Exception as e:  # the caller's verdict, with its reason
                    why = "%s: %s" % (type(e).__name__, e)
                if why is not None:
                    row["status"] = CHECK_FAILED
                    row["error"] = "check failed%s: %s" % (
                        " (compared with the first candidate)" if reference is not None else "", why)
                    say("autotune %s [%d/%d] %s: %s" % (key, i + 1, len(configs), _config_str(cfg),
                                                        row["error"]))
                    continue
                if reference is None:
                    reference = args
            try:
                ms = float(timer(kern.bind(*args, stream=stream)))
                _sync(torch)
            except TilecError as e:
                row["status"] = LAUNCH_ERROR
                row["error"] = str(e)
                sticky = e.status == "CUDA_ERROR"
                say("autotune %s [%d/%d] %s: %s" % (key, i + 1, len(configs), _config_str(cfg),
                                                    _first_line(e)))
                continue
            row["status"], row["ms"] = OK, ms
            if best is None or ms < best["ms"]:
                best = row
            say("autotune %s [%d/%d] %s: %.4f ms (best %.4f)" % (
                key, i + 1, len(configs), _config_str(cfg), ms, best["ms"]))
        finally:
            if mod is not None:
                mod.close()

    elapsed = time.perf_counter() - t_start
    res = AutotuneResult(key=key, cache_key=cache_key, results=results, cache_hit=False,
                         cache_file=cache_file, device=dev_name, elapsed_s=elapsed)
    if best is None:
        raise AutotuneError("tilec.autotune %s: none of the %d configurations compiled, launched and "
                            "passed the check:\n%s" % (key, len(configs), res.table()), res)
    res.best_config = dict(best["config"])
    res.best_ms = best["ms"]
    res.best_defines = dict(base_defines)
    res.best_defines.update(res.best_config)
    if cache_file and not sticky:
        _write_entry(cache_file, cache_key, {
            "key": key, "kernel": kernel_name, "device": dev_name, "tilec_version": tv,
            "source_sha256": src_hash, "best_config": res.best_config, "best_ms": res.best_ms,
            "results": results, "tuned_at": datetime.datetime.now().isoformat(timespec="seconds"),
            "elapsed_s": elapsed})
        res.cached = True
    say("autotune %s: best %s (%.4f ms) of %d in %.2f s" % (key, res.config_str, res.best_ms,
                                                            len(configs), elapsed))
    return res
