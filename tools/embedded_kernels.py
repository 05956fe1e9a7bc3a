#!/usr/bin/env python3
"""embedded_kernels.py SRCDIR OUTDIR - writes every .tile source embedded in
the tests' C and Python files (a C string literal, adjacent literals joined,
or a Python triple-quoted string, that declares a kernel and has a body) to
OUTDIR/<file>-<n>.tile, for tools/codegen_snapshot.sh."""
import ast
import os
import re
import sys

C_LITERALS = re.compile(r'((?:"(?:[^"\\\n]|\\.)*"\s*)+)')
ONE_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
PY_LITERALS = re.compile(r'("""|\'\'\')(.*?)\1', re.S)


def c_strings(text):
    for m in C_LITERALS.finditer(text):
        parts = ONE_LITERAL.findall(m.group(1))
        try:  # C escapes (\n, \", \\, \0) read the same as Python's here
            yield "".join(ast.literal_eval('"' + p + '"') for p in parts)
        except (ValueError, SyntaxError):
            continue


def py_strings(text):
    for m in PY_LITERALS.finditer(text):
        yield m.group(2)


def is_kernel(s):
    return re.search(r"^\s*kernel\s+\w+\s*\(", s, re.M) and "{" in s and "}" in s


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if name.endswith((".c", ".h")):
                strings = c_strings
            elif name.endswith(".py"):
                strings = py_strings
            else:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            tag = os.path.relpath(path, src).replace(os.sep, "_")
            n = 0
            for s in strings(text):
                if is_kernel(s) and "\0" not in s:
                    n += 1
                    with open(os.path.join(out, "%s-%d.tile" % (tag, n)), "w") as f:
                        f.write(s)


if __name__ == "__main__":
    main()
