#!/bin/sh
# Clustered placement (Tile.place 2) and the elected producer warp (Tile.elect) in one device
# call, from the repository root: the placement's device test, then GEMM 4096^3 FP16 / BF16
# with the 4-buffer 128 x 256 persistent tiles (direct and staged stores, the evict-first hint)
# as generated and placed in clusters of two (--extra place=2: the candidates leave the placed
# forms out, tiling.PLACE_TUNED), beside cuBLAS, twice; the placement wins where its
# best tile beats the best plain one in both runs of both precisions.  Where it wins, time is
# left (under BUDGET seconds in all, default 540) and the card is an H100 (the bench page's),
# the bench's two rows are re-measured (--update; the autotuner chooses among all candidates).
# Then, time allowing, the elected producer's device test and one run of those tiles with and
# without Tile.elect.
# Usage: sh tests/merit/gpu/place_probe.sh OUT [BUDGET]
set -u
. tests/merit/gpu/probe_head.sh
device_test "test_wgmma_persistent_clustered_placement" 150
for run in 1 2; do
    timeout 100 python tests/merit/gpu/epi_probe.py --match "f1x32_k64+_h4_mn_ws_tma_g132" \
        --extra "place=2" --out "$out/run$run" >"$out/probe$run.txt" 2>&1
    grep -E "^(fp16|bf16) " "$out/probe$run.txt" | sed 's/_b128x256_w8x1_f1x32_k64//'
done
rows=$(python tests/merit/gpu/epi_probe.py verdict "$out" place\>1)
left=$(( ${2:-540} - $(date +%s) + t0 ))
echo "bench rows: ${rows:-none}; ${left} s left"
if [ -n "$rows" ] && [ $left -gt 150 ] && [ $h100 -eq 1 ]; then
    bench_rows "$rows" 100
fi
left=$(( ${2:-540} - $(date +%s) + t0 ))
[ $left -gt 130 ] || { echo "no time for the elected producer ($left s)"; exit 0; }
timeout 90 python -m pytest -q -x -rA tests/merit/gpu/test_device.py \
    -k "test_wgmma_elected_producer" >"$out/device_tests_elect.txt" 2>&1
rc=$?
tail -3 "$out/device_tests_elect.txt"
[ $rc -eq 0 ] || { tail -40 "$out/device_tests_elect.txt" | cut -c1-300; echo "elect test failed"; exit 1; }
left=$(( ${2:-540} - $(date +%s) + t0 ))
[ $left -gt 40 ] || exit 0
timeout $((left - 5)) python tests/merit/gpu/epi_probe.py --match "f1x32_k64+_h4_mn_ws_tma_g132" \
    --extra "place=2;elect=1" --out "$out/run3" >"$out/probe3.txt" 2>&1
grep -E "^(fp16|bf16) " "$out/probe3.txt" | sed 's/_b128x256_w8x1_f1x32_k64//'
