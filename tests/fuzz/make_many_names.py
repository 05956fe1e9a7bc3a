#!/usr/bin/env python3
"""make_many_names.py - writes a kernel with N parameters, locals or buffers.

    python3 tests/fuzz/make_many_names.py MODE N OUT.tile

Finding F6 in docs/robustness.md: name lookups that scan a list made
compile time quadratic in the number of names. The ctest fuzz/many_names_*
compiles these with every emitter (a no-hang guard, not a timing test);
by hand, time `tilec OUT.tile --emit=c` at N = 10000, 20000, 40000: the
time should roughly double, not quadruple.

  params   N parameters, tensors A<i>: f32[M] and scalars s<i>: f32 in
           turn; the body reads the last scalar and writes the last tensor
  locals   N scalar lets, each from the one before, the first from a
           scalar parameter, so all N reach the emitters; the last is stored
  consts   the same chain from a constant: fold-constants folds it away
  buffers  N local buffers b<i> = alloc_local([1], f32), filled in turn
           and stored through one chain of reads
"""
import pathlib
import sys

HEAD_TAIL = (" const (block = 128, threads = 128)\n"
             "  grid (ceildiv(M, block), 1, 1) threads (threads) as (bx, by, bz)\n{\n")
STORE = "    for i in parallel(block) {}[bx * block + i] = {};\n"


def params(n):
    names = []
    for i in range(n):
        names.append("A%d: f32[M]" % i if i % 2 == 0 else "s%d: f32" % i)
    last_t = max(i for i in range(n) if i % 2 == 0)
    last_s = max((i for i in range(n) if i % 2 == 1), default=None)
    value = "s%d" % last_s if last_s is not None else "1.0"
    return ("kernel many_params(\n    " + ",\n    ".join(names) + ")\n" + HEAD_TAIL +
            STORE.format("A%d" % last_t, value) + "}\n")


def chain(kernel, first, n):
    body = ["    x0 = %s;\n" % first]
    body += ["    x%d = x%d + 1.0;\n" % (i, i - 1) for i in range(1, n)]
    return ("kernel %s(A: f32[M], s: f32)" % kernel + HEAD_TAIL + "".join(body) +
            STORE.format("A", "x%d" % (n - 1)) + "}\n")


def buffers(n):
    body = ["    b%d = alloc_local([1], f32);\n" % i for i in range(n)]
    body += ["    fill(b%d, %d.0);\n" % (i, i) for i in range(n)]
    return ("kernel many_buffers(A: f32[M])" + HEAD_TAIL + "".join(body) +
            STORE.format("A", "b%d[0]" % (n - 1)) + "}\n")


MODES = {
    "params": params,
    "locals": lambda n: chain("many_locals", "s", n),
    "consts": lambda n: chain("many_consts", "1.0", n),
    "buffers": buffers,
}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in MODES:
        sys.exit("usage: make_many_names.py %s N OUT.tile" % "|".join(MODES))
    n = int(sys.argv[2])
    if n < 1:
        sys.exit("make_many_names.py: N must be positive")
    text = MODES[sys.argv[1]](n)
    out = pathlib.Path(sys.argv[3])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


if __name__ == "__main__":
    main()
