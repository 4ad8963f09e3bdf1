#!/bin/sh
# Where the persistent FP16 GEMM tile loses to cuBLAS (not a test), in one device call from the
# repository root: epi_probe.py (the tile as generated and with its output stores switched off,
# beside cuBLAS), Nsight Compute's counters of the tile and of cuBLAS's kernel (ncu_stalls.sh's
# metrics, the peer's kernel too), and the tile's warp-state samples per SASS line.
# Usage: sh tests/merit/gpu/epi_profile.sh OUTDIR [TILE_LABEL]
set -u
out=${1:-.}
lab=${2:-fp16_b128x256_w8x1_f1x32_k64_wg_h4_mn_ws_tma_g132}
mkdir -p "$out"
export PYTHONPATH=sw PYTHONUNBUFFERED=1
timeout 150 python tests/merit/gpu/epi_probe.py --nostore --out "$out" \
    --match _h4_mn_ws_tma_g132,_h3_mn_ws_tma_g132 >"$out/epi.txt" 2>&1
tail -8 "$out/epi.txt"
m=$(sed -n 's/.*--metrics \([^ ]*\).*/\1/p' tests/merit/gpu/ncu_stalls.sh)
m="$m,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__cycles_active.avg"
m="$m,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,smsp__warps_active.avg.per_cycle_active"
timeout 200 ncu --clock-control none --kernel-name regex:'merit_|gemm|xmma|sm90' --metrics "$m" \
    python tests/merit/gpu/tc_profile.py "gemm:fp16:$lab:half" gemm:fp16:peer >"$out/ncu.txt" 2>&1
grep -E 'merit_|xmma|gemm|sm90|__|==ERR' "$out/ncu.txt" | grep -v '^gemm:' | sed 's/  */ /g' | cut -c1-150
timeout 150 ncu --clock-control none --kernel-name regex:merit_ --section WarpStateStats \
    --section SourceCounters -f -o "$out/src" python tests/merit/gpu/tc_profile.py \
    "gemm:fp16:$lab:half" >"$out/src_run.txt" 2>&1
tail -3 "$out/src_run.txt"
ncu -i "$out/src.ncu-rep" --page source --csv --print-source sass >"$out/src.csv" 2>"$out/src_err.txt"
echo "source csv: $(wc -l <"$out/src.csv") lines"; head -c 600 "$out/src_err.txt"
