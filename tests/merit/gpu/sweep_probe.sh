#!/bin/sh
# The fp32 rows below their peer on the device (not a test): sweep_probe.py's table, then Nsight
# Compute counters of the named tiles and the rows' peers:
#   PYTHONPATH=sw sh tests/merit/gpu/sweep_probe.sh OUTDIR ROW:LABEL|ROW:best|ROW:peer ...
# SWEEP_JSON=FILE: no sweep; FILE (an earlier run's sweep_probe.json) names the tiles.
out=$1; shift
export PYTHONUNBUFFERED=1
if [ -n "$SWEEP_JSON" ]; then
    [ "$SWEEP_JSON" -ef "$out/sweep_probe.json" ] || cp "$SWEEP_JSON" "$out/sweep_probe.json" || exit 2
else
    python3 tests/merit/gpu/sweep_probe.py --out "$out" ${PROBE_ONLY:+--only $PROBE_ONLY} \
        ${PROBE_TOP:+--top $PROBE_TOP} 2>&1 | tee "$out/sweep.log"
fi
[ $# -gt 0 ] || exit 0
NCU=${NCU:-$(command -v ncu)}
[ -n "$NCU" ] || { echo "Nsight Compute (ncu) is not on PATH: set NCU to its executable" >&2; exit 2; }
S=smsp__average_warps_issue_stalled
M=launch__registers_per_thread,launch__grid_size,launch__block_size,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,lts__t_sectors_op_red.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_global_ld.sum
for s in long_scoreboard barrier math_pipe_throttle mio_throttle short_scoreboard wait lg_throttle not_selected selected dispatch_stall no_instruction; do
    M=$M,${S}_${s}_per_issue_active.ratio
done
"$NCU" --profile-from-start off --clock-control none --metrics "$M" --csv \
    python3 tests/merit/gpu/sweep_probe.py --out "$out" --launch "$@" > "$out/ncu.csv" 2> "$out/ncu.err"
tail -5 "$out/ncu.err"
python3 tests/merit/gpu/ncu_table.py "$out/ncu.csv"
