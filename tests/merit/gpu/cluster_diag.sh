#!/bin/sh
# Why the persistent cluster tiles run slower (one call, from the repository root): GEMM 4096^3
# FP16 / BF16, the 128 x 256 persistent tiles (3 and 4 buffers, direct and staged stores, the
# L2 hints) and their cluster forms, the cluster forms also with each block copying all of B
# (no multicast, the buffers still released together) and the one-block tiles launched in
# clusters of two (placement alone), twice; then Nsight Compute of the 4-buffer FP16 tile with
# and without clusters: time, L2 bytes and read sectors, tensor pipe, warp states, launch and
# occupancy sections (the cluster occupancy).  Usage: sh tests/merit/gpu/cluster_diag.sh OUT
set -u
out=${1:-.}
mkdir -p "$out"
export PYTHONPATH=sw PYTHONUNBUFFERED=1
for run in 1 2; do
    timeout 150 python tests/merit/gpu/epi_probe.py --clusters --decompose --hints \
        --match "f1x32_k64+_h4_mn_ws_tma_g132,f1x32_k64+_h3_mn_ws_tma_g132" \
        --out "$out/run$run" >"$out/probe$run.txt" 2>&1
    grep -E "^(fp16|bf16) " "$out/probe$run.txt" | sed 's/_b128x256_w8x1_f1x32_k64//'
done
lab=fp16_b128x256_w8x1_f1x32_k64_wg_h4_mn_ws_tma_g132
clab=fp16_b128x256_w8x1_f1x32_k64_wgc2_h4_mn_ws_tma_g132
timeout 150 ncu --clock-control none --kernel-name regex:merit_ --section LaunchStats \
    --section Occupancy --section WarpStateStats --metrics \
    gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum \
    python tests/merit/gpu/tc_profile.py "gemm:fp16:$lab:half" "gemm:fp16:$clab:half" \
    >"$out/ncu.txt" 2>&1
grep -iE "merit_|cluster|duration|lts__|tensor_op|dram__|Stall|Warp Cycles|Achieved Occ" \
    "$out/ncu.txt" | sed 's/  */ /g' | cut -c1-150
