#!/bin/sh
# Named tiles of bench rows on the device (not a test): for each ROW=TILES entry of PROBES
# ('|'-separated; TILES as tiles_probe.py takes them), the tiles checked and timed in turns,
# then Nsight Compute's instructions, issue rate, stalls and shared-memory bank conflicts of
# the same kernels; then, where BENCH names rows, those rows re-measured on the bench page:
#   PROBES="ROW=LABEL;LABEL+p0=24,0,0,0|ROW=..." BENCH=ROW,... sh tests/merit/gpu/tiles_probe.sh OUT
set -u
. tests/merit/gpu/probe_head.sh
B=l1tex__data_bank_conflicts_pipe_lsu_mem_shared
S=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,${B}_op_ld.sum,${B}_op_ldgsts.sum,smsp__inst_executed_op_shared_ld.sum,${S}_short_scoreboard_per_issue_active.ratio,${S}_dispatch_stall_per_issue_active.ratio,${S}_long_scoreboard_per_issue_active.ratio,${S}_barrier_per_issue_active.ratio,${S}_not_selected_per_issue_active.ratio
NCU=${NCU:-$(command -v ncu)}
echo "${PROBES:-}" | tr '|' '\n' | while IFS= read -r p; do
    [ -n "$p" ] || continue
    row=${p%%=*}; tiles=${p#*=}
    python tests/merit/gpu/tiles_probe.py --row "$row" --tiles "$tiles" --out "$out" 2>&1 \
        | tee "$out/tiles_$row.log" | cut -c1-400
    echo "timings $row: $(( $(date +%s) - t0 )) s"
    [ -n "$NCU" ] || continue
    timeout 150 "$NCU" --clock-control none --kernel-name regex:merit_ --metrics "$M" --csv \
        python tests/merit/gpu/tiles_probe.py --row "$row" --tiles "$tiles" --launch \
        > "$out/ncu_$row.csv" 2> "$out/ncu_$row.err"
    tail -1 "$out/ncu_$row.err"
    python3 tests/merit/gpu/ncu_table.py "$out/ncu_$row.csv"
    echo "ncu $row: $(( $(date +%s) - t0 )) s"
done
[ -z "${BENCH:-}" ] || bench_rows "$BENCH" "${BENCH_S:-400}"
echo "total: $(( $(date +%s) - t0 )) s"
