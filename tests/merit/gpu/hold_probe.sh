#!/bin/sh
# Sums held in registers past the epilogue (Tile.hold) in one device call, from the repository
# root: the hold device test (bit for bit against the same tiles holding nothing), then GEMM
# 4096^3 FP16 / BF16 with the 128 x 256 BK 64 persistent tiles (direct stores; 4 buffers with 2
# staging buffers, 3 with 4; with and without evict-first stores; each staged one also holding
# 2 and 4 of its 8 chunks, as tiling.HOLD_TUNED lists them) beside cuBLAS, twice, the first run
# also with every block's or every other block's stores switched off; then the bench rows
# re-measured where a holding tile wins both runs of its precision on an H100 (the bench
# page's card).
# Usage: sh tests/merit/gpu/hold_probe.sh OUT [BUDGET]
set -u
. tests/merit/gpu/probe_head.sh
device_test "test_wgmma_hold" 200
m="f1x32_k64+_h4_mn_ws_tma_g132,f1x32_k64+_h3_mn_ws_tma_g132_e4"
for run in 1 2; do
    p=""; [ $run -eq 1 ] && p="--partial 0,2"
    timeout 150 python tests/merit/gpu/epi_probe.py --match "$m" --also "hold=2;hold=4" $p \
        --out "$out/run$run" >"$out/probe$run.txt" 2>&1
    grep -E "^(fp16|bf16) " "$out/probe$run.txt" | sed 's/_b128x256_w8x1_f1x32//'
    echo "run $run: $(( $(date +%s) - t0 )) s"
done
rows=$(python tests/merit/gpu/epi_probe.py verdict "$out" "hold>0" --each)
left=$(( ${2:-570} - $(date +%s) + t0 ))
echo "bench rows: ${rows:-none}; ${left} s left"
tuned=$(python -c "from merit.gpu import tiling; print(len(tiling.HOLD_TUNED))")
if [ -n "$rows" ] && [ $left -gt 150 ] && [ $h100 -eq 1 ] && [ "$tuned" -gt 0 ]; then
    bench_rows "$rows" $((left - 10))
fi
