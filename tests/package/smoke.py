"""smoke.py - run by check_wheel.sh with the fresh venv's python, from a
folder outside the repository, with no PYTHONPATH, TILEC_LIBRARY or
TILEC_BUILD_DIR: the installed package must find its own libtilert, compile a
kernel on the CPU and compute the right values; its CLI must be the bundled
one. Exits non-zero (an AssertionError) on any difference."""
import os
import subprocess
import sys
import sysconfig

import numpy as np
import tilec
from tilec import _cli

site = os.path.realpath(sysconfig.get_paths()["purelib"])
lib = os.path.realpath(tilec.library_path())
print("tilec %s from %s" % (tilec.version(), os.path.dirname(tilec.__file__)))
print("libtilert:", lib)
assert lib.startswith(site + os.sep), "libtilert is not the package's own: %s (site %s)" % (lib, site)
assert os.path.realpath(_cli.binary_path()).startswith(site + os.sep), _cli.binary_path()

SRC = """
kernel axpby(X: f32[n], Y: f32[n], Out: f32[n], a: f32, b: f32)
  const (block = 128)
  grid (ceildiv(n, block)) threads (block) as (bx)
{
    x = alloc_fragment([block], f32);
    y = alloc_fragment([block], f32);
    copy(X[bx * block : (bx + 1) * block], x);
    copy(Y[bx * block : (bx + 1) * block], y);
    for i in parallel(block) x[i] = a * x[i] + b * y[i];
    copy(x, Out[bx * block : (bx + 1) * block]);
}
"""

with tilec.Context(device="cpu", disable_cache=True) as ctx:
    k = ctx.load(SRC).kernel("axpby")
    assert k.info.param_names == ("X", "Y", "Out", "a", "b"), k.info
    n = 1000  # not a multiple of the block: the last block is partial
    x = np.linspace(-3.0, 5.0, n, dtype=np.float32)
    y = np.arange(n, dtype=np.float32) % 13
    out = np.full(n, np.nan, np.float32)
    k(x, y, out, 2.5, -0.5)
    want = 2.5 * x.astype(np.float64) - 0.5 * y
    err = float(np.max(np.abs(out - want)))
    print("axpby on %s: out[999] = %r (want %r), max error %.2e" % (ctx.device, float(out[-1]), float(want[-1]), err))
    assert np.all(np.isfinite(out)), "outputs left unwritten"
    assert err <= 1e-5 * float(np.max(np.abs(want))), err

# The flagship the package carries (tilec.torch.flash_attention's kernel), on
# the CPU in f16 against float64 attention: O = softmax(Q K^T / sqrt(d)) V.
fa_path = os.path.join(os.path.dirname(tilec.__file__), "kernels", "flash_attention.tile")
assert os.path.exists(fa_path), fa_path
rng = np.random.default_rng(0)
b, n, h, d = 1, 70, 2, 64
q, k, v = (rng.standard_normal((b, n, h, d)).astype(np.float16) for _ in range(3))
o = np.full(q.shape, np.nan, np.float16)
with tilec.Context(device="cpu") as ctx:
    fa = ctx.load(fa_path, defines={"dtype": "f16", "dim": d}).kernel("flash_attention")
    fa(q, k, v, o, np.log2(np.e) / np.sqrt(d))
s = np.einsum("bihd,bjhd->bhij", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(d)
p = np.exp(s - s.max(-1, keepdims=True))
ref = np.einsum("bhij,bjhd->bihd", p / p.sum(-1, keepdims=True), v.astype(np.float64))
err = float(np.max(np.abs(o - ref))) / float(np.max(np.abs(ref)))
print("bundled flash_attention.tile, f16 seq 70: error %.2e of max|ref|" % err)
assert np.all(np.isfinite(o)) and err <= 5e-3, err

# The console script, through PATH (check_wheel.sh puts the venv's bin first).
ver = subprocess.run(["tilec", "--version"], capture_output=True, text=True, check=True).stdout.strip()
print("tilec --version:", ver)
assert ver == "tilec " + tilec.version(), ver
with open("axpby.tile", "w") as f:
    f.write(SRC)
c = subprocess.run(["tilec", "axpby.tile", "--emit=c"], capture_output=True, text=True, check=True).stdout
assert "void tilec_axpby(" in c, c[:400]
print("tilec --emit=c: %d lines of C" % len(c.splitlines()))
print("smoke: ok (python %s)" % sys.version.split()[0])
