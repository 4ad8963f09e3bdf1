#!/bin/sh
# The word copies by rows on the device (not a test): the SIMT device tests, then
# wordcopy_probe.py's timings of the bench's tiles before / after, then Nsight Compute's shared
# loads, stores and bank conflicts of the same kernels (before, after, in row order):
#   sh tests/merit/gpu/wordcopy_probe.sh OUTDIR [ROW=LABEL,...]
set -u
. tests/merit/gpu/probe_head.sh
rows=${2:-}
device_test "${TESTS:-word_copies or float32_matches or strided_registers or register_runs or split_k}" 240
python tests/merit/gpu/wordcopy_probe.py --out "$out" ${rows:+--rows $rows} 2>&1 | tee "$out/probe.log"
echo "timings: $(( $(date +%s) - t0 )) s"
ncu_probe 200 rows python tests/merit/gpu/wordcopy_probe.py --launch ${rows:+--rows $rows}
[ -n "$NCU" ] || exit 0
"$NCU" --query-metrics 2>/dev/null | grep -i "bank_conflict\|ldgsts" > "$out/ncu_metrics.txt"
echo "total: $(( $(date +%s) - t0 )) s"
[ "${LDGSTS:-1}" = 1 ] || exit 0
python tests/merit/gpu/ldgsts_probe.py 2>&1 | tee "$out/ldgsts.log"
L=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum,l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ldgsts_cache_access.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum,gpu__time_duration.sum
timeout 120 "$NCU" --clock-control none --kernel-name regex:ldg_ --metrics "$L" --csv \
    python tests/merit/gpu/ldgsts_probe.py --once > "$out/ncu_ldgsts.csv" 2> "$out/ncu_ldgsts.err"
tail -2 "$out/ncu_ldgsts.err"
echo "total: $(( $(date +%s) - t0 )) s"
