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
NCU=${NCU:-$(command -v ncu)}
[ -n "$NCU" ] || { echo "no ncu"; exit 0; }
B=l1tex__data_bank_conflicts_pipe_lsu_mem_shared
W=l1tex__data_pipe_lsu_wavefronts_mem_shared
S=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,${B}.sum,${B}_op_ld.sum,${B}_op_st.sum,${B}_op_ldgsts.sum,${W}.sum,${W}_op_ld.sum,${W}_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,${S}_mio_throttle_per_issue_active.ratio,${S}_short_scoreboard_per_issue_active.ratio,${S}_dispatch_stall_per_issue_active.ratio,${S}_barrier_per_issue_active.ratio,${S}_long_scoreboard_per_issue_active.ratio
"$NCU" --query-metrics 2>/dev/null | grep -i "bank_conflict\|ldgsts" > "$out/ncu_metrics.txt"
timeout 200 "$NCU" --clock-control none --kernel-name regex:merit_ --metrics "$M" --csv \
    python tests/merit/gpu/wordcopy_probe.py --launch ${rows:+--rows $rows} \
    > "$out/ncu.csv" 2> "$out/ncu.err"
tail -3 "$out/ncu.err"
python3 - "$out/ncu.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
i = [n for n, r in enumerate(rows) if r[0] == "ID"][0]
hdr = rows[i]; data = rows[i + 1:]
ki, mi, vi = hdr.index("ID"), hdr.index("Metric Name"), hdr.index("Metric Value")
by = {}
for r in data:
    by.setdefault(r[ki], {})[r[mi]] = r[vi]
for k, m in by.items():
    print(k, " ".join(f"{n.replace('l1tex__data_', '').replace('pipe_lsu_mem_shared', 'sh')[-44:]}={v}"
                      for n, v in m.items()))
PY
echo "total: $(( $(date +%s) - t0 )) s"
[ "${LDGSTS:-1}" = 1 ] || exit 0
python tests/merit/gpu/ldgsts_probe.py 2>&1 | tee "$out/ldgsts.log"
L=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum,l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ldgsts_cache_access.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum,gpu__time_duration.sum
timeout 120 "$NCU" --clock-control none --kernel-name regex:ldg_ --metrics "$L" --csv \
    python tests/merit/gpu/ldgsts_probe.py --once > "$out/ncu_ldgsts.csv" 2> "$out/ncu_ldgsts.err"
tail -2 "$out/ncu_ldgsts.err"
echo "total: $(( $(date +%s) - t0 )) s"
