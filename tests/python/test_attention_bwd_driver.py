"""test_attention_bwd_driver.py - examples/python/flash_attention_bwd.py: the
FlashAttention backward (examples/flash_attention_bwd.tile: forward with
LSE, preprocess, backward with atomic_add into dQ, dQ convert) driven
through the Python binding, checked against its float64 NumPy reference at
lengths that are not multiples of any block, causal and not, both head dims.
Also the script's argument parsing and its reference (against finite
differences of the attention's loss).

CPU (NumPy f16) by default; with TILEC_TEST_DEVICE=cuda the same driver on
torch CUDA tensors, f16 and bf16 (the device machine:
`ctest --test-dir build -R python.attention_bwd_driver.gpu`)."""

import importlib.util
import os

import harness
import numpy as np

DEVICE = harness.test_device()  # SKIP for a cuda run without PyTorch's GPU

_spec = importlib.util.spec_from_file_location(
    "flash_attention_bwd_example", os.path.join(harness.EXAMPLES, "python", "flash_attention_bwd.py"))
fab_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fab_mod)


def context():
    if DEVICE == "cuda":
        return harness.tilec.Context(device="cuda", cache_dir=harness.CACHE_DIR)
    return harness.cpu_context()


def run(dim, dtype, causal, lengths, batch, heads, defines=None):
    fab = fab_mod.FlashAttentionBackward(context(), dim, dtype, causal, defines)
    failed = []
    for S in lengths:
        failed += fab_mod.run_case(fab, batch, S, heads, harness.rng)
    assert not failed, "failed checks: " + ", ".join(failed)


def test_reference_matches_finite_differences():
    # The reference's dQ, dK, dV are the gradients of L = sum(O * dO).
    rng = np.random.default_rng(7)
    for causal in (False, True):
        q, k, v, do = (rng.uniform(-1, 1, (1, 5, 2, 4)) for _ in range(4))
        _, lse, dq, dk, dv = fab_mod.reference(q, k, v, do, causal)
        loss = lambda q, k, v: float((fab_mod.reference(q, k, v, do, causal)[0] * do).sum())
        eps = 1e-6
        for which, grad in ((0, dq), (1, dk), (2, dv)):
            args = [q, k, v]
            num = np.zeros_like(grad)
            for idx in np.ndindex(grad.shape):
                plus = [a.copy() for a in args]
                minus = [a.copy() for a in args]
                plus[which][idx] += eps
                minus[which][idx] -= eps
                num[idx] = (loss(*plus) - loss(*minus)) / (2 * eps)
            err = np.abs(num - grad).max()
            assert err < 1e-6, "gradient %d (causal %s): finite differences differ by %.3e" % (which, causal, err)
        # LSE: log of the softmax denominator of the scaled scores.
        s = np.einsum("bihd,bjhd->bhij", q, k) / 2.0
        if causal:
            s = np.where(np.tril(np.ones((5, 5), dtype=bool)), s, -np.inf)
        want = np.log(np.exp(s).sum(axis=-1))
        assert np.abs(want - lse).max() < 1e-12
    print("  reference gradients match finite differences (causal and not)")


def test_argument_parsing():
    a = fab_mod.parse_args(["--dim", "128", "--causal", "--lengths", "3,130", "--define", "bwd_block_N=16"])
    assert (a.dim, a.causal, a.lengths, a.define, a.device) == (128, True, [3, 130], {"bwd_block_N": "16"}, "cpu")
    for bad in (["--lengths", "1,x"], ["--lengths", "0"], ["--define", "nothing"], ["--dtype", "bf16"],
                ["--dim", "96"]):
        try:
            fab_mod.parse_args(bad)
        except SystemExit as e:
            assert e.code == 2, bad
        else:
            raise AssertionError("%s was accepted" % bad)
    print("  arguments parsed; bad ones refused with status 2")


if DEVICE == "cuda":
    def test_gpu_f16_d64():
        run(64, "f16", False, [1, 17, 100, 257, 1000], 2, 3)

    def test_gpu_f16_d64_causal():
        run(64, "f16", True, [17, 257, 1000], 2, 3)

    def test_gpu_bf16_d128():
        run(128, "bf16", False, [1, 100, 257], 2, 2)

    def test_gpu_bf16_d128_causal():
        run(128, "bf16", True, [17, 100, 1000], 1, 2)
else:
    def test_cpu_d64():
        run(64, "f16", False, [1, 17, 100], 2, 3)

    def test_cpu_d64_causal():
        run(64, "f16", True, [17, 100], 1, 2)

    def test_cpu_d128_causal_small_blocks():
        run(128, "f16", True, [33, 130], 1, 2, {"bwd_block_M": 32, "bwd_block_N": 16, "bwd_threads": 128})

    def test_script_main():
        # The script as the lead runs it, through main(): exit status 0.
        assert fab_mod.main(["--lengths", "5,70", "--batch", "1", "--heads", "1"]) == 0


harness.main(globals())
