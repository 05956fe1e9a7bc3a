#!/usr/bin/env python3
"""select_corpus.py - picks a small fuzz corpus from a libFuzzer merge control file.

    tilec_fuzz -merge=1 -use_counters=0 -merge_control_file=CTL OUT IN...
    python3 tests/fuzz/select_corpus.py CTL tests/fuzz/corpus [MAX_FILES]

libFuzzer's merge keeps every input that adds an edge, in size order, which
leaves a few hundred files. This reads the control file's `COV <index>
<edges...>` lines and runs a greedy set cover instead (the input adding the
most new edges first, the smaller one on a tie), stopping when every edge is
covered or at MAX_FILES (default 195). The directory is emptied, then the
chosen inputs are written under their SHA-1, as libFuzzer names them.
"""
import hashlib
import os
import sys


def main():
    ctl, out = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 195
    lines = open(ctl).read().split("\n")
    n = int(lines[0])
    files = lines[2:2 + n]
    cov = {}
    for line in lines[2 + n:]:
        if line.startswith("COV "):
            parts = line.split()
            cov[int(parts[1])] = set(map(int, parts[2:]))
    universe = set().union(*cov.values()) if cov else set()
    sizes = {i: os.path.getsize(files[i]) for i in cov}
    chosen, covered = [], set()
    while len(chosen) < limit and cov:
        best = max(cov, key=lambda i: (len(cov[i] - covered), -sizes[i]))
        if not cov[best] - covered:
            break
        chosen.append(best)
        covered |= cov[best]
    os.makedirs(out, exist_ok=True)
    # Read every chosen input before clearing `out`: the merge's inputs
    # include the corpus directory itself.
    datas = [open(files[i], "rb").read() for i in chosen]
    for name in os.listdir(out):
        os.unlink(os.path.join(out, name))
    total = 0
    for data in datas:
        total += len(data)
        with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
    print(f"{len(chosen)} files, {total} bytes, {len(covered)}/{len(universe)} edges -> {out}")


if __name__ == "__main__":
    main()
