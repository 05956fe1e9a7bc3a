#!/usr/bin/env python3
"""sass_loop_profile.py - static SASS instruction mix of a kernel's wgmma loop.

Finds the innermost loop of a cubin's SASS that issues HGMMA (wgmma; QGMMA
for FP8 operands): the
consumer warpgroups' main loop of the flagship on sm_90a (on targets without
wgmma, --arch sm_80: the innermost loop with HMMA, mma.sync). Prints, per
instruction class (the opcode's first word, IMAD.MOV kept apart from IMAD;
uniform-datapath U* opcodes also summed as one group), the static counts of:

  steady  the path through one iteration that issues the most HGMMA with the
          fewest instructions (flash attention: the full key block, k > 0;
          a block that needs a mask or the first iteration costs more)
  heavy   the path with the most HGMMA and the most instructions (the masked
          key block)
  loop    every instruction between the loop's head and its back edge

A path is taken over the loop's basic blocks in address order (forward
branches inside the loop; branches leaving it, such as mbarrier retry code
placed after the kernel, are not followed).

Input: a .tile file (compiled with build/bin/tilec and nvcc), a .cu, a
.cubin, or a SASS listing (.sass, cuobjdump -sass or nvdisasm output).

  tools/sass_loop_profile.py examples/flash_attention.tile -D dtype=bf16
  tools/sass_loop_profile.py x.cubin --json out.json
  tools/sass_loop_profile.py --diff before.json after.json   # a markdown table

Tools: tilec from --tilec (default build/bin/tilec), nvcc from PATH or
/usr/local/cuda/bin, cuobjdump / nvdisasm from PATH, $CUDA_HOME/bin,
/usr/local/cuda/bin or the wheels `pip download nvidia-cuda-cuobjdump
nvidia-cuda-nvdisasm` unpacked under /tmp/nvd* (set CUOBJDUMP / NVDISASM to
point at others). ptxas -v's register and spill line is printed as well.
"""
import argparse
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE = re.compile(r'/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);')


def find_tool(name, env):
    if os.environ.get(env):
        return os.environ[env]
    p = shutil.which(name)
    if p:
        return p
    cands = []
    if os.environ.get('CUDA_HOME'):
        cands.append(os.path.join(os.environ['CUDA_HOME'], 'bin', name))
    cands.append('/usr/local/cuda/bin/' + name)
    cands += sorted(glob.glob('/tmp/nvd*/nvidia/cu*/bin/' + name))
    cands += sorted(glob.glob(os.path.expanduser('~/.local/lib/python3*/site-packages/nvidia/cu*/bin/' + name)))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    sys.exit('sass_loop_profile: %s not found (set %s, or pip download the nvidia-cuda-%s wheel '
             'and unzip it under /tmp/nvd)' % (name, env, name))


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.exit('sass_loop_profile: %s failed:\n%s' % (' '.join(cmd), r.stdout))
    return r.stdout


def sass_of(args, tmp):
    """Returns (sass text, ptxas -v summary or '')."""
    src = args.input
    ptxas = ''
    if src.endswith('.tile'):
        cu = os.path.join(tmp, 'k.cu')
        cmd = [args.tilec, src, '--target=' + args.arch, '-o', cu]
        for d in args.D or []:
            cmd += ['-D', d]
        run(cmd)
        src = cu
    if src.endswith('.cu'):
        cubin = os.path.join(tmp, 'k.cubin')
        nvcc = find_tool('nvcc', 'NVCC')
        out = run([nvcc, '-gencode=arch=compute_%s,code=%s' % (args.arch[3:], args.arch), '-cubin',
                   '-Xptxas', '-v', '-I', os.path.join(TOP, 'runtime', 'device'), src, '-o', cubin])
        ptxas = ' '.join(l.strip() for l in out.splitlines()
                         if 'registers' in l or 'spill' in l)
        src = cubin
    if src.endswith('.cubin'):
        nvdisasm = find_tool('nvdisasm', 'NVDISASM')
        env = dict(os.environ, PATH=os.path.dirname(nvdisasm) + os.pathsep + os.environ.get('PATH', ''))
        cuobjdump = find_tool('cuobjdump', 'CUOBJDUMP')
        r = subprocess.run([cuobjdump, '-sass', src], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env)
        if r.returncode != 0:
            sys.exit('sass_loop_profile: cuobjdump -sass failed:\n' + r.stdout)
        return r.stdout, ptxas
    with open(src) as f:
        return f.read(), ptxas


def parse(text, kernel=None):
    """[(addr, pred, opcode, operands)] of the first function in the listing
    whose name contains kernel, else the first that has an HGMMA or HMMA."""
    funcs, names, cur = [], [], None
    for line in text.splitlines():
        if 'Function :' in line or line.strip().startswith('.text.'):
            cur = []
            funcs.append(cur)
            names.append(line.split(':')[-1].strip())
            continue
        m = LINE.search(line)
        if m:
            if cur is None:
                cur = []
                funcs.append(cur)
                names.append('')
            cur.append((int(m.group(1), 16), (m.group(2) or '').strip(), m.group(3), m.group(4).strip()))
    if kernel:
        for exact in (True, False):
            for f, n in zip(funcs, names):
                if (n in (kernel, 'tilec_' + kernel)) if exact else kernel in n:
                    return f
        sys.exit('sass_loop_profile: no kernel named like %s (%s)' % (kernel, ', '.join(names)))
    for f in funcs:
        if any(i[2].startswith(('HGMMA', 'QGMMA', 'HMMA')) for i in f):
            return f
    return funcs[0] if funcs else []


def opclass(op):
    parts = op.split('.')
    if parts[0] == 'IMAD' and len(parts) > 1 and parts[1] in ('MOV', 'SHL', 'IADD', 'U32', 'WIDE'):
        return 'IMAD.' + parts[1]
    return parts[0]


def branch_target(ins):
    if ins[2].split('.')[0] not in ('BRA', 'BRX'):
        return None
    m = re.match(r'(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))', ins[3])
    if m and m.group(1):
        return int(m.group(1), 16)
    return None


def find_loop(ins, mma):
    """(start index, end index inclusive) of the innermost back edge whose range holds mma."""
    index = {a: i for i, (a, _, _, _) in enumerate(ins)}
    best = None
    for i, x in enumerate(ins):
        t = branch_target(x)
        if t is None or t > x[0] or t not in index:
            continue
        s = index[t]
        body = ins[s:i + 1]
        if not any(y[2].startswith(mma) for y in body):
            continue
        # An mbarrier retry stub after the kernel's end jumps back into the
        # loop: its range holds the kernel's EXIT, a real loop's does not.
        if any(y[2] in ('EXIT', 'RET') for y in body):
            continue
        if best is None or i - s < best[1] - best[0]:
            best = (s, i)
    return best


def paths(ins, s, e, mma):
    """Per-block DP over the loop body [s, e]: for each of 'steady' (max HGMMA,
    then min instructions) and 'heavy' (max HGMMA, then max instructions),
    the list of instruction indices on the chosen path."""
    addr = {ins[i][0]: i for i in range(s, e + 1)}
    leaders = {s}
    for i in range(s, e + 1):
        t = branch_target(ins[i])
        if t is not None:
            if t in addr:
                leaders.add(addr[t])
            if i + 1 <= e:
                leaders.add(i + 1)
        elif ins[i][2] in ('EXIT', 'RET') and i + 1 <= e:
            leaders.add(i + 1)
    starts = sorted(leaders)
    blocks = []  # (first, last)
    for k, b in enumerate(starts):
        blocks.append((b, (starts[k + 1] - 1) if k + 1 < len(starts) else e))
    bidx = {b[0]: k for k, b in enumerate(blocks)}
    succ = []
    for k, (b0, b1) in enumerate(blocks):
        last = ins[b1]
        t = branch_target(last)
        out = []
        if t is not None and t in addr and addr[t] > b1:
            out.append(bidx[addr[t]])
        uncond = t is not None and last[1] == '' or last[2] in ('EXIT', 'RET')
        if not uncond and k + 1 < len(blocks):
            out.append(k + 1)
        succ.append(out)
    res = {}
    for name, sign in (('steady', -1), ('heavy', 1)):
        best = [None] * len(blocks)  # (hgmma, sign*count, path)
        best[0] = None
        for k in range(len(blocks) - 1, -1, -1):
            b0, b1 = blocks[k]
            h = sum(1 for i in range(b0, b1 + 1) if ins[i][2].startswith(mma))
            n = b1 - b0 + 1
            if k == len(blocks) - 1:
                cand = [(0, 0, [])]
            else:
                cand = [best[j] for j in succ[k] if best[j] is not None]
            if not cand:
                continue
            tail = max(cand, key=lambda c: (c[0], c[1]))
            best[k] = (tail[0] + h, tail[1] + sign * n, [k] + tail[2])
        res[name] = [i for k in best[0][2] for i in range(blocks[k][0], blocks[k][1] + 1)]
    res['loop'] = list(range(s, e + 1))
    return res


def count(ins, idx):
    c = collections.Counter(opclass(ins[i][2]) for i in idx)
    c['TOTAL'] = len(idx)
    c['U* (uniform)'] = sum(v for k, v in c.items() if k.startswith('U') and k != 'U* (uniform)')
    return c


ORDER = ['TOTAL', 'HGMMA', 'QGMMA', 'HMMA', 'FFMA', 'FMUL', 'FADD', 'FMNMX', 'MUFU', 'FSEL', 'F2FP', 'SHFL',
         'IMAD', 'IMAD.MOV', 'IMAD.SHL', 'IMAD.IADD', 'IMAD.U32', 'IMAD.WIDE', 'IADD3', 'VIADD', 'MOV',
         'LEA', 'SHF', 'LOP3', 'ISETP', 'SEL', 'R2UR', 'U* (uniform)']


def table(cols, names):
    keys = [k for k in ORDER if any(c.get(k) for c in cols)]
    keys += sorted({k for c in cols for k in c if c.get(k)} - set(keys))
    w = max(len(k) for k in keys)
    lines = ['| %-*s | %s |' % (w, 'class', ' | '.join(names)),
             '|%s|%s' % ('-' * (w + 2), '|'.join('-' * (len(n) + 2) for n in names) + '|')]
    for k in keys:
        lines.append('| %-*s | %s |' % (w, k, ' | '.join('%*d' % (len(n), c.get(k, 0))
                                                       for c, n in zip(cols, names))))
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('input', nargs='?')
    ap.add_argument('-D', action='append', help='tilec define (repeatable)')
    ap.add_argument('--arch', default='sm_90a')
    ap.add_argument('--tilec', default=os.path.join(TOP, 'build', 'bin', 'tilec'))
    ap.add_argument('--kernel', help='the kernel whose name contains this (default: the first with HGMMA/HMMA)')
    ap.add_argument('--json', help='also write the counts here')
    ap.add_argument('--diff', nargs=2, metavar=('BEFORE', 'AFTER'),
                    help='compare two --json files (steady path, then loop)')
    ap.add_argument('--list', choices=['steady', 'heavy', 'loop'],
                    help='also print the instructions of that path')
    args = ap.parse_args()
    if args.diff:
        a, b = (json.load(open(p)) for p in args.diff)
        for part in ('steady', 'heavy', 'loop'):
            print('%s path:' % part)
            ca, cb = a[part], b[part]
            d = {k: cb.get(k, 0) - ca.get(k, 0) for k in set(ca) | set(cb)}
            print(table([ca, cb, d], ['before', 'after', 'change']))
            print()
        return
    if not args.input:
        ap.error('an input file is needed')
    with tempfile.TemporaryDirectory() as tmp:
        text, ptxas = sass_of(args, tmp)
    ins = parse(text, args.kernel)
    mma = next((m for m in ('HGMMA', 'QGMMA') if any(i[2].startswith(m) for i in ins)), 'HMMA')
    loop = find_loop(ins, mma)
    if loop is None:
        sys.exit('sass_loop_profile: no loop with HGMMA, QGMMA or HMMA in %s' % args.input)
    s, e = loop
    p = paths(ins, s, e, mma)
    counts = {k: count(ins, v) for k, v in p.items()}
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(dict(counts, ptxas=ptxas, input=args.input, defines=args.D or []), f, indent=1)
    print('loop 0x%04x..0x%04x of %d instructions%s' % (ins[s][0], ins[e][0], len(ins),
                                                         (' (' + ptxas + ')') if ptxas else ''))
    print(table([counts['steady'], counts['heavy'], counts['loop']], ['steady', 'heavy', 'loop']))
    if args.list:
        for i in p[args.list]:
            a, pr, op, rest = ins[i]
            print('  %04x  %-6s %s %s' % (a, pr, op, rest))


if __name__ == '__main__':
    main()
