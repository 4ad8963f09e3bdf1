#!/bin/sh
# The skewed consumer warpgroups (Tile.skew) in one device call, from the repository root: the
# skew device test (bit for bit against the same tiles without the skew), then GEMM 4096^3
# FP16 / BF16 with the 128 x 256 BK 64 persistent tiles (direct stores, 2 staging buffers, with
# and without evict-first stores; 4 buffers, and 3 with 4 staging buffers) each also with the
# second warpgroup 1, 2 and 3 k tiles behind, beside cuBLAS, twice; then the bench's two rows
# re-measured where a skewed tile wins both runs of both precisions on an H100 (the bench page's
# card) and tiling.SKEW_TUNED lets the autotuner time it.
# Usage: sh tests/merit/gpu/skew_probe.sh OUT [BUDGET]
set -u
. tests/merit/gpu/probe_head.sh
device_test "test_wgmma_skew" 200
m="f1x32_k64+_h4_mn_ws_tma_g132,f1x32_k64+_h3_mn_ws_tma_g132_e4"
for run in 1 2; do
    timeout 150 python tests/merit/gpu/epi_probe.py --match "$m" --also "skew=1;skew=2;skew=3" \
        --out "$out/run$run" >"$out/probe$run.txt" 2>&1
    grep -E "^(fp16|bf16) " "$out/probe$run.txt" | sed 's/_b128x256_w8x1_f1x32//'
    echo "run $run: $(( $(date +%s) - t0 )) s"
done
rows=$(python tests/merit/gpu/epi_probe.py verdict "$out" "skew>0")
left=$(( ${2:-570} - $(date +%s) + t0 ))
echo "bench rows: ${rows:-none}; ${left} s left"
tuned=$(python -c "from merit.gpu import tiling; print(len(tiling.SKEW_TUNED))")
if [ -n "$rows" ] && [ $left -gt 150 ] && [ $h100 -eq 1 ] && [ "$tuned" -gt 0 ]; then
    bench_rows "$rows" $((left - 10))
fi
