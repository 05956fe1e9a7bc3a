"""Pieces the bench scripts share (imported by bench_attention.py,
bench_gemm.py, bench_attention_bwd.py and bench_attention_variants.py; each
script puts bench/ first on sys.path by being run as `python3 bench/X.py`).

- rel_error: max |out - ref| / max |ref|, inf when out has a non-finite value.
- run_worker_rows: rows run in worker processes that print START/RESULT/LOG
  lines; a crash or a per-row timeout fails that row and a fresh worker
  resumes after it. worker_start and worker_loop: that worker's side.
- The two-part scripts (bench_attention_bwd.py, bench_attention_variants.py):
  a child process per part (peers, then tilec) appending JSON lines to one
  file (run_parts, child_setup, json_emitter), then a report named after the
  date and the GPU (gpu_name, result_stem, write_report).
- load_variant: a .tile's kernel with a variant's defines, and its env.NAME
  keys set for a context of its own (bench_alternating.py, gemm_energy.py).
"""

import datetime
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rel_error(torch, out, ref):
    out = out.float()
    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def run_worker_rows(rows, command, spec, row_timeout, log, progress, cache_prefix, died):
    """Runs rows in worker processes; returns {row id: result}.

    command: the worker's argv, the spec file's path appended. spec: what the
    worker reads besides "rows" and "cache_dir" (one cache directory serves
    every worker). The worker prints "START id" as a row begins, "RESULT
    {json with id}" as it ends and "LOG text" for a progress line; other
    output is kept as the tail shown when it dies. row_timeout: seconds per
    row (+ 60 for the start-up). progress(result): the text after a row's
    id in its progress line. died: the message (with %s for the exit status
    and the tail) of a row the worker died in."""
    results = {}
    pending = list(rows)
    total = len(rows)
    cache = tempfile.mkdtemp(prefix=cache_prefix)
    while pending:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dict(spec, rows=pending, cache_dir=cache), f)
            spec_path = f.name
        proc = subprocess.Popen(list(command) + [spec_path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=dict(os.environ))
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout] + [lines.put(None)],
                         daemon=True).start()
        current, tail = None, []
        deadline = time.monotonic() + row_timeout + 60  # + start-up
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                log("tilec worker: row %s timed out after %d s; killing it" % (current, row_timeout))
                proc.kill()
                if current is not None:
                    results[current] = {"error": "timed out (> %d s)" % row_timeout}
                break
            if line is None:
                break
            if line.startswith("START "):
                current = line.split()[1]
                deadline = time.monotonic() + row_timeout
                log("tilec [%d/%d] %s: started" % (len(results) + 1, total, current))
            elif line.startswith("RESULT "):
                r = json.loads(line[7:])
                rid = r.pop("id")
                results[rid] = r
                current = None
                log("tilec [%d/%d] %s: %s" % (len(results), total, rid, progress(r)))
            elif line.startswith("LOG "):
                log("tilec worker: " + line[4:].rstrip())
            else:
                tail = (tail + [line.rstrip()])[-20:]
        proc.wait()
        os.unlink(spec_path)
        if current is not None and current not in results:
            results[current] = {"error": died % (proc.returncode, " | ".join(tail[-3:])[:300])}
        done_before = len(pending)
        pending = [r for r in pending if r["id"] not in results]
        if pending and len(pending) == done_before:  # died before any row started
            for r in pending:
                results[r["id"]] = {"error": "tilec worker exited %s before running: %s"
                                    % (proc.returncode, " | ".join(tail[-3:])[:300])}
            pending = []
    shutil.rmtree(cache, ignore_errors=True)
    return results


def worker_start(spec_path, timer_cls, short):
    """A tilec worker's start: the spec (JSON file spec_path), torch, the
    tilec binding, a CUDA context on the spec's cache directory, a
    timer_cls(torch, min_runs, rep_ms), a stream of its own and emit(row id,
    **fields) ("RESULT <json>" lines), as attributes of one object. None when
    the context cannot be made: each row's result then says why (short(e))."""
    with open(spec_path) as f:
        spec = json.load(f)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import torch

    def emit(row_id, **kw):
        kw["id"] = row_id
        sys.stdout.write("RESULT " + json.dumps(kw) + "\n")
        sys.stdout.flush()

    try:
        import tilec
        ctx = tilec.Context(device="cuda", cache_dir=spec["cache_dir"])
    except Exception as e:  # no binding / no GPU path: every row says why
        for row in spec["rows"]:
            emit(row["id"], error="context: " + short(e))
        return None
    torch.manual_seed(spec["seed"])
    timer = timer_cls(torch, min_runs=spec["min_runs"], rep_ms=spec["rep_ms"])
    # A stream of our own: on the default (NULL) stream the runtime waits for
    # each launch, which would add a host round trip to every timed run.
    torch.cuda.set_stream(torch.cuda.Stream())
    stream = torch.cuda.current_stream().cuda_stream
    return types.SimpleNamespace(spec=spec, torch=torch, tilec=tilec, ctx=ctx, timer=timer, stream=stream,
                                 emit=emit)


def worker_loop(w, run_row, short, detail=False, empty_cache=False):
    """Runs w.spec's rows: "START id", then run_row(row)'s fields (None: no
    result line) or the error (short(e), with detail: the message's first
    6000 characters, and the traceback's end). Returns the worker's exit
    status: 3 after a sticky CUDA error (a fresh worker takes the next rows),
    else 0."""
    torch = w.torch
    for row in w.spec["rows"]:
        sys.stdout.write("START %s\n" % row["id"])
        sys.stdout.flush()
        try:
            res = run_row(row)
            if res is not None:
                w.emit(row["id"], **res)
        except Exception as e:
            more = {"detail": str(e)[:6000]} if detail else {}
            w.emit(row["id"], error=short(e), **more, trace=traceback.format_exc()[-2000:])
            if "CUDA_ERROR" in str(e) or "CUDA error" in str(e):
                return 3
        torch.cuda.synchronize()
        if empty_cache:
            torch.cuda.empty_cache()
    return 0


# ------------------------------------------------- the two-part scripts ---

def run_parts(script, jpath, name, parts=("peers", "tilec")):
    """Runs `script --part P --json-out jpath` + this process's arguments for
    each P of parts (default: peers, then tilec; a fresh process each,
    appending to jpath, emptied first); returns {row id: [entries]}."""
    open(jpath, "w").close()
    for part in parts:
        rc = subprocess.call([sys.executable, os.path.abspath(script), "--part", part, "--json-out", jpath]
                             + sys.argv[1:])
        if rc != 0:
            print("%s: the %s part exited %d (rows it did not reach are missing)" % (name, part, rc))
    results = {}
    with open(jpath) as f:
        for line in f:
            e = json.loads(line)
            results.setdefault(e.pop("id"), []).append(e)
    return results


def child_setup(min_runs):
    """(torch, bench_attention.Timer) for a part's process; TF32 off."""
    sys.path.insert(0, HERE)
    import torch
    from bench_attention import Timer
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch, Timer(torch, min_runs=min_runs)


def check_then_time(torch, timer, run, out, ref, bound, impl):
    """The row of one implementation whose output `out` (a tensor, or a
    callable returning it) run() has just computed: an error row when it is
    off ref by more than `bound` (relative to max|ref|), else run timed."""
    got = out() if callable(out) else out
    torch.cuda.synchronize()
    err = rel_error(torch, got, ref)
    if not err <= bound:
        return {"impl": impl, "error": "wrong result: rel error %.3e > %.0e" % (err, bound)}
    ms, runs = timer(run)
    return {"impl": impl, "ms": ms, "runs": runs, "err": err}


def error_result(impl, e, width):
    """A failed implementation's entry: the exception's type and the first
    line of its message, cut to width characters."""
    return {"impl": impl, "error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:width])}


def json_emitter(f, part):
    """emit(row id, result): one JSON line in f and a progress line."""
    def emit(rid, res):
        res["id"] = rid
        f.write(json.dumps(res) + "\n")
        f.flush()
        print("%s %s: %s" % (part, rid, res.get("error") or "%.4f ms" % res["ms"]), flush=True)
    return emit


def rounds_collector(emit):
    """(collect, flush) for a part that times every implementation several
    times in turn: collect(row id, result) keeps each round's result; flush()
    emits one entry per (row, implementation): the median time of its rounds
    (all of them in ms_rounds), or its first error."""
    seen = {}

    def collect(rid, res):
        seen.setdefault((rid, res.get("impl")), []).append(res)

    def flush():
        for (rid, _), rs in seen.items():
            good = [r for r in rs if "ms" in r]
            if len(good) < len(rs):
                emit(rid, next(r for r in rs if "ms" not in r))
                continue
            res = dict(good[0])
            res["ms_rounds"] = [r["ms"] for r in good]
            res["ms"] = statistics.median(res["ms_rounds"])
            emit(rid, res)
    return collect, flush


def gpu_name():
    try:
        return subprocess.check_output(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                       text=True).splitlines()[0].strip()
    except Exception:  # noqa: BLE001
        return "unknown GPU"


def result_stem(gpu, what):
    """<date>-<gpu>-<what>, the results' file name without its suffix."""
    return "%s-%s-%s" % (datetime.date.today().isoformat(), gpu.lower().replace(" ", "-"), what)


def write_report(out_dir, stem, text, args, rows, results):
    """stem.md (the report) and stem.json (args, rows, results); prints the report."""
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out_dir, stem + ".json"), "w") as f:
        json.dump({"args": vars(args), "rows": rows, "results": results}, f, indent=1)
    print(text)


def load_variant(ctx, path, kernel, defines, extra, first_launch):
    """The kernel of PATH with defines plus the variant's, after
    first_launch(kern) has run it once. A key env.NAME:V sets $NAME for a
    context of the variant's own (the runtime reads some variables when a
    context is made, $TILEC_STREAM_K among them, and others when a build
    is compiled, which is at a launch: $TILEC_CLUSTER_MULTICAST) and keeps
    it set through that first launch (the kernel keeps its context
    alive)."""
    defines = dict(defines)
    defines.update({kk: v for kk, v in extra.items() if not kk.startswith("env.")})
    env = {kk[4:]: v for kk, v in extra.items() if kk.startswith("env.")}
    saved = {e: os.environ.get(e) for e in env}
    os.environ.update(env)
    try:
        if env:
            import tilec
            ctx = tilec.Context(device="cuda")
        kern = ctx.load(path, defines=defines).kernel(kernel)
        first_launch(kern)
        return kern
    finally:
        for e, v in saved.items():
            if v is None:
                os.environ.pop(e, None)
            else:
                os.environ[e] = v
