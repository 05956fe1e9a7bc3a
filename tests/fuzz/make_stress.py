#!/usr/bin/env python3
"""make_stress.py - writes the large malformed inputs the fuzzer cannot reach.

    python3 tests/fuzz/make_stress.py OUTDIR

libFuzzer runs with -max_len=4096, so the cases the robustness issue names
that need size -- 1 MB lines, huge literals, deep nesting, long runs of
invalid UTF-8 or NULs, an unterminated comment over a megabyte, thousands of
declarations -- are generated here instead (too big to commit) and run by
the ctest fuzz/stress through fuzz_replay, with its time and memory limits.
Each file starts with the 11-byte harness header (fuzz_tilec.c): mode, no -D.
Known bugs that would fail here have their own small file in regressions/
(deep `1+1+...` chains, thousands of consts) and are not repeated.
"""
import pathlib
import sys

MB = 1 << 20
HEAD = (b"kernel k(A: f32[M, N]) const (block_M = 64, threads = 128)\n"
        b"  grid (ceildiv(M, block_M), 1, 1) threads (threads) as (bx, by, bz) {\n")
TAIL = b"\n}\n"


def header(mode):
    return bytes([mode]) + bytes(10)


def cases():
    body = lambda text: HEAD + text + TAIL
    # Lexer: one token or one line of a megabyte.
    yield "long-identifier", 0, body(b"x" * MB + b" = 1;")
    yield "long-line-comment", 0, b"//" + b"a" * MB + b"\n" + body(b"")
    yield "unterminated-comment", 0, body(b"/*" + b"x" * MB)
    yield "unterminated-comment-stars", 1, body(b"/*" + b"*" * MB)
    yield "huge-int-literal", 0, body(b"x = " + b"9" * MB + b";")
    yield "huge-hex-literal", 0, body(b"x = 0x" + b"f" * MB + b";")
    yield "huge-float-literal", 3, body(b"x = " + b"9" * MB + b".5e99999;")
    yield "tiny-float-literal", 0, body(b"x = 0." + b"0" * MB + b"1e-99999;")
    yield "nul-bytes", 0, b"\0" * MB
    yield "invalid-utf8", 0, body(bytes(range(0x80, 0x100)) * 4096 + b"\xc3\x28\xe2\x82\xf0\x28\x8c")
    yield "stray-bytes-spaced", 0, b"@ " + b"$ " * (MB // 2)
    yield "one-line-program", 1, (HEAD + b"x = 1; " * (MB // 8) + TAIL).replace(b"\n", b" ")
    # Parser: nesting bison's stack must bound (reported, not a crash).
    yield "deep-parens", 0, body(b"x = " + b"(" * 100000 + b"1" + b")" * 100000 + b";")
    yield "deep-unary-minus", 0, body(b"x = " + b"-" * 100000 + b"1;")
    yield "deep-not", 0, body(b"x = " + b"!" * 100000 + b"true;")
    yield "deep-ternary", 0, body(b"x = " + b"true ? 1 : " * 50000 + b"0;")
    yield "deep-if", 1, body(b"if (true) {" * 50000 + b"x = 1;" + b"}" * 50000)
    yield "deep-for", 2, body(b"for i in serial(2) " * 20000 + b"x = 1;")
    yield "deep-index", 0, body(b"x = A[" * 50000 + b"0" + b"]" * 50000 + b";")
    yield "unclosed-brackets", 0, body(b"x = " + b"([{" * 30000)
    # Many of everything (kept small enough for sanitizer builds; see F6 in
    # docs/robustness.md for the quadratic name lookup).
    yield "many-statements", 0, body(b"x = 1;\n" * 100000)
    yield "many-errors", 0, body(b"x = ;\n" * 100000)
    yield "many-kernels", 0, (HEAD + TAIL) * 3000
    yield "many-params", 0, (b"kernel k(" + b",".join(b"A%d: f32[M]" % i for i in range(3000)) +
                             b") const (threads = 128) grid (1, 1, 1) threads (threads) as (bx, by, bz) {}\n")
    yield "many-dims", 0, (b"kernel k(A: f32[" + b",".join(b"M%d" % i for i in range(10000)) +
                           b"]) const (threads = 128) grid (1, 1, 1) threads (threads) as (bx, by, bz) {}\n")
    yield "many-loop-vars", 0, body(b"for " + b",".join(b"i%d" % i for i in range(10000)) +
                                    b" in parallel(" + b",".join(b"2" for _ in range(10000)) + b") x = 1;")
    yield "many-allocs", 1, body(b"".join(b"a%d = alloc_shared([block_M, 64], f32);\n" % i for i in range(3000)))
    yield "many-call-args", 0, body(b"x = min(" + b"1, " * 100000 + b"1);")
    # Semantics: values at the edges of int64 (no folding overflow involved).
    yield "huge-parallel-extent", 0, body(b"a = alloc_fragment([block_M], f32);"
                                          b" for i in parallel(9223372036854775807) a[i] = 1;")
    yield "huge-threads", 1, (b"kernel k(A: f32[M]) const (threads = 9223372036854775807) grid (1, 1, 1)"
                              b" threads (threads) as (bx, by, bz) { a = alloc_fragment([64], f32); }\n")
    yield "huge-local-array", 0, body(b"a = alloc_fragment([4611686018427387904, 4], f64); fill(a, 0);")


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    n = 0
    for name, mode, text in cases():
        (out / name).write_bytes(header(mode) + text)
        n += 1
    print(f"{n} stress inputs in {out}")


if __name__ == "__main__":
    main()
