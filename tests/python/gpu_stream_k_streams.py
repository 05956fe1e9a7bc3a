"""gpu_stream_k_streams.py - launches of one loaded stream-K GEMM on two
CUDA streams at once (label gpu; exit 77 without PyTorch and a GPU).

A stream-K kernel keeps its partial sums in a workspace of its module
(runtime/device/tilec_stream_k.cuh), so two launches must not overlap; the
runtime makes a launch on another stream wait for the last one (rt_gpu.c,
TilertKernel.stream_k_done). Here gemm.tile is built with stream-K on a
grid capped at 7 blocks (1000 x 1000 x 1000: 32 tiles, the last 4 split),
launched eight times on each of two streams with different operands and no
synchronisation between; every output must be the float64 product within
4 bf16 ulps of max|ref|, and all eight of a stream the same bits.
"""
import os
import sys

os.environ["TILEC_STREAM_K"] = "1"          # read when the context is made
os.environ["TILEC_PERSISTENT_BLOCKS"] = "7"
# the split rule of any saving of 4 iterations (tests/CMakeLists.txt, TILEC_SK_SMALL_SPLITS)
os.environ["TILEC_NVRTC_FLAGS"] = "-DTC_SK_MIN_SAVED=4 -DTC_SK_SLOW_DIV=0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
try:
    import torch
except ImportError:
    torch = None
if getattr(torch, "__file__", None) is None:  # none, or tests/python/torch/ taken for it
    print("skipped: no PyTorch")
    sys.exit(77)
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
    print("skipped: needs an sm_90 GPU (stream-K is an sm_90a pass)")
    sys.exit(77)
import tilec  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
N, RUNS = 1000, 8


def main():
    torch.manual_seed(23)
    with tilec.Context(device="cuda") as ctx:
        kern = ctx.load(os.path.join(HERE, "..", "..", "examples", "gemm.tile"), defines={"dtype": "bf16"}).kernel("gemm")
        assert kern.info.stream_k, "gemm.tile was not built with stream-K"
        streams = (torch.cuda.Stream(), torch.cuda.Stream())
        ops = [(torch.randn(N, N, device="cuda", dtype=torch.bfloat16),
                torch.randn(N, N, device="cuda", dtype=torch.bfloat16)) for _ in streams]
        outs = [[torch.full((N, N), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(RUNS)]
                for _ in streams]
        torch.cuda.synchronize()
        for r in range(RUNS):
            for s, stream in enumerate(streams):
                a, b = ops[s]
                kern(a, b, outs[s][r], stream=stream)
        torch.cuda.synchronize()
        for s in range(len(streams)):
            a, b = ops[s]
            ref = a.double() @ b.double()
            bound = 4 * 2.0 ** -7 * ref.abs().max().item()
            for r in range(RUNS):
                err = (outs[s][r].double() - ref).abs().max().item()
                assert err <= bound, "stream %d run %d: error %.3e > %.3e" % (s, r, err, bound)
                assert torch.equal(outs[s][r].view(torch.int16), outs[s][0].view(torch.int16)), \
                    "stream %d run %d differs from run 0" % (s, r)
            print("stream %d: %d runs within %.1e, bit-equal" % (s, RUNS, bound))
    print("ok")


if __name__ == "__main__":
    main()
