#!/bin/bash
# Session 31, call 7 (build/ carried; about 90 s): where the stream-K
# fix-up's time goes, by PC sampling. ncu's SourceCounters on the stream-K
# build at 2304 x 2048 x 8192 (every tile split in two), then the per-SASS
# page as CSV: the stall samples on the fix-up's loads, barrier and fence.
set -u
TILEC_STREAM_K=1 timeout 200 ncu --clock-control none -k regex:tilec_gemm --launch-skip 2 --launch-count 1 \
  --section SourceCounters --section WarpStateStats -o $OUT/sk -f \
  python3 bench/profile_gemm.py --shape 2304x2048x8192 --dtype bf16 --iters 4 > $OUT/ncu.log 2>&1
echo "ncu rc $?"; tail -3 $OUT/ncu.log
ncu -i $OUT/sk.ncu-rep --page source --print-source sass --csv > $OUT/sk-sass.csv 2> $OUT/sk-sass.err
echo "source page rc $?"; wc -l $OUT/sk-sass.csv; head -2 $OUT/sk-sass.csv | cut -c1-400
ncu -i $OUT/sk.ncu-rep --page details > $OUT/sk-details.txt 2>&1; grep -E "Stall|Warp Cycles|Duration" $OUT/sk-details.txt | head -20
