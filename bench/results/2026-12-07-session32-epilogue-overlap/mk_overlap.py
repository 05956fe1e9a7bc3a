"""mk_overlap.py GENERATED.cu TEMPLATE.cu OUT.cu - session 32's hand edit of
gemm.tile's sm_90a CUDA (bf16, default defines, as tilec generates it at
commit 6dadd80; the line numbers below are that file's): the consumers pack
each tile's accumulator to bf16 (64 registers) after its k-loop and run its
held-stage epilogue (stmatrix rounds, TMA store) during the next tile's
first wgmma (overlap_template.cu). For $TILEC_CUDA_OVERRIDE=GENERATED:OUT.
Measured slower (notes, call 10); kept as the record of what was tried."""
import re, sys
src=open(sys.argv[1]).read().split('\n')
head=src[:80]
tail_close=src[243:]
epi='\n'.join(src[117:167])
epi=epi.replace("((((pipe_base + tc_ceildiv(K, 64LL)) - 1LL) % 4LL) * 2LL)", "(tc_prev_stage * 2LL)")
epi=epi.replace("(((pipe_base + tc_ceildiv(K, 64LL)) - 1LL) % 4LL)", "tc_prev_stage")
epi=epi.replace("(bx * 256LL)", "(tc_prev_bx * 256LL)").replace("(by * 128LL)", "(tc_prev_by * 128LL)")
def rep(m):
    return "tc_P[((%s) + %d) / 2]" % (m.group(1), int(m.group(2)))
epi=re.sub(r"tc_pack_bf16x2\(C_local\[(\(2 \* tc_q \+ [01]\) \* 64 \+ tc_cs) \+ ([02])\], C_local\[\(2 \* tc_q \+ [01]\) \* 64 \+ tc_cs \+ [13]\]\)", rep, epi)
assert "C_local[" not in epi
assert "pipe_base" not in epi and "(bx" not in epi and "(by" not in epi
cons=open(sys.argv[2]).read().replace("EPI", epi)
open(sys.argv[3],'w').write('\n'.join(head)+'\n'+cons+'\n'+'\n'.join(tail_close))
