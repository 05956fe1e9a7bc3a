"""test_softmax.py - examples/softmax.tile through the binding on NumPy f32
arrays, against a float64 NumPy softmax.

Bound 1e-4 of max|ref|: f32 rounding (~6e-8) amplified by exp2 with log2(e)
folded in (~1e-5 relative at |x| ~ 5), then an N-term sum and one division.
M is dynamic (one module for every row count), including counts that are not
multiples of block_M, so the partial last block is exercised.
"""
import harness
from harness import np, rng


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run(ctx, defines, n, rows):
    k = ctx.load(harness.example("softmax.tile"), defines=defines).kernel("softmax")
    assert k.info.param_names == ("X", "Y")
    assert k.info.params[0].dims == ("M", n), k.info.params[0].dims
    for m in rows:
        x = (rng.standard_normal((m, n)) * 3).astype(np.float32)
        y = harness.poisoned((m, n), np.float32)
        k(x, y)
        harness.check_close("M=%d N=%d" % (m, n), y, softmax_ref(x), 1e-4)


def test_softmax_default_n():
    with harness.cpu_context() as ctx:
        run(ctx, None, 256, (37, 8, 1))


def test_softmax_n100_block_m4():
    with harness.cpu_context() as ctx:
        run(ctx, {"N": 100, "block_M": 4}, 100, (5, 13))


harness.main(globals())
