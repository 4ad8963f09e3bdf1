#!/bin/sh
# The GEMM-shaped fp32 rows on the device (not a test): gemm_probe.py's table, then Nsight Compute
# counters of the named tiles and the rows' peers:
#   PYTHONPATH=sw sh tests/merit/gpu/gemm_probe.sh OUTDIR ROW:LABEL|ROW:peer ...
out=$1; shift
export PYTHONUNBUFFERED=1
python tests/merit/gpu/gemm_probe.py --out "$out" ${PROBE_ONLY:+--only $PROBE_ONLY} 2>&1 | tee "$out/probe.log"
[ $# -gt 0 ] || exit 0
NCU=${NCU:-$(command -v ncu)}
[ -n "$NCU" ] || { echo "Nsight Compute (ncu) is not on PATH: set NCU to its executable" >&2; exit 2; }
S=smsp__average_warps_issue_stalled
M=launch__registers_per_thread,launch__grid_size,launch__block_size,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum
for s in long_scoreboard barrier math_pipe_throttle mio_throttle short_scoreboard wait lg_throttle not_selected selected dispatch_stall no_instruction; do
    M=$M,${S}_${s}_per_issue_active.ratio
done
"$NCU" --profile-from-start off --clock-control none --metrics "$M" --csv \
    python tests/merit/gpu/gemm_probe.py --out "$out" --launch "$@" > "$out/ncu.csv" 2> "$out/ncu.err"
tail -3 "$out/ncu.err"
python tests/merit/gpu/ncu_table.py "$out/ncu.csv"
