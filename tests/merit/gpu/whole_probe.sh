#!/bin/sh
# The whole output tile staged (tiling.EPI_WHOLE) in one device call, from the repository root:
# the staged-epilogue device test, then GEMM 4096^3 FP16 / BF16 with the 128 x 256 persistent
# tiles (BK 64: direct stores, 2 staging buffers; BK 32: direct stores, the whole tile staged)
# beside cuBLAS, twice (the first run also with the direct stores switched off), Nsight Compute
# counters of the bench's tile, the new one and cuBLAS's kernel (where ncu exists), and the
# bench's two rows re-measured where the whole-tile form wins both runs of both precisions on
# an H100 (the bench page's card).
# Usage: sh tests/merit/gpu/whole_probe.sh OUT [BUDGET]
set -u
. tests/merit/gpu/probe_head.sh
device_test "test_wgmma_staged_epilogue" 150
m="f1x32_k64+_h4_mn_ws_tma_g132,f1x32_k32+_mn_ws_tma_g132_e8"
for run in 1 2; do
    ns=""; [ $run -eq 1 ] && ns="--nostore"
    timeout 120 python tests/merit/gpu/epi_probe.py --match "$m" --also "chunk=32,epi=0" $ns \
        --out "$out/run$run" >"$out/probe$run.txt" 2>&1
    grep -E "^(fp16|bf16) " "$out/probe$run.txt" | sed 's/_b128x256_w8x1_f1x32//'
done
rows=$(python tests/merit/gpu/epi_probe.py verdict "$out" epi=8)
left=$(( ${2:-560} - $(date +%s) + t0 ))
echo "bench rows: ${rows:-none}; ${left} s left"
if [ -n "$rows" ] && [ $left -gt 200 ] && [ $h100 -eq 1 ]; then
    bench_rows "$rows" 130
fi
left=$(( ${2:-560} - $(date +%s) + t0 ))
command -v ncu >/dev/null && [ $left -gt 60 ] || { echo "no ncu run ($left s left)"; exit 0; }
mt=$(sed -n 's/.*--metrics \([^ ]*\).*/\1/p' tests/merit/gpu/ncu_stalls.sh)
mt="$mt,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__cycles_active.avg"
mt="$mt,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
timeout $((left - 10)) ncu --clock-control none --kernel-name regex:'merit_|gemm|xmma|sm90|nvjet' \
    --metrics "$mt" python tests/merit/gpu/tc_profile.py \
    gemm:fp16:fp16_b128x256_w8x1_f1x32_k64_wg_h4_mn_ws_tma_g132_e2:half \
    gemm:fp16:fp16_b128x256_w8x1_f1x32_k32_wg_h4_mn_ws_tma_g132_e8:half gemm:fp16:peer \
    >"$out/ncu.txt" 2>&1
grep -E 'merit_|xmma|gemm|sm90|nvjet|__|==ERR' "$out/ncu.txt" | grep -v '^gemm:' | sed 's/  */ /g' | cut -c1-150
