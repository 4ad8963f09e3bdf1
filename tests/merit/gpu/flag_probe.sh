#!/bin/sh
# A generator switch on the device (not a test): the device tests TESTS selects, then
# flag_probe.py's timings of the bench's tiles with each FLAGS entry off / on (one process per
# flag), the rows' cuDNN peers in fresh threads (PEERS), then Nsight Compute's shared loads,
# bank conflicts, instructions and issue rate of the same kernels (before, after, in row order):
#   FLAGS="tiling.SPLIT_CHUNKS=ROW=LABEL,...;MODULE.FLAG=ROW=LABEL,..." PEERS=ROW,... \
#       sh tests/merit/gpu/flag_probe.sh OUTDIR
set -u
. tests/merit/gpu/probe_head.sh
[ -z "${TESTS:-}" ] || device_test "$TESTS" 300
[ -z "${PEERS:-}" ] || python tests/merit/gpu/flag_probe.py --peers --rows "$PEERS" \
    --out "$out" 2>&1 | tee "$out/peers.log"
echo "peers: $(( $(date +%s) - t0 )) s"
B=l1tex__data_bank_conflicts_pipe_lsu_mem_shared
S=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,${B}_op_ld.sum,${B}_op_ldgsts.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_ldgsts.sum,${S}_short_scoreboard_per_issue_active.ratio,${S}_dispatch_stall_per_issue_active.ratio,${S}_long_scoreboard_per_issue_active.ratio,${S}_mio_throttle_per_issue_active.ratio,${S}_barrier_per_issue_active.ratio
NCU=${NCU:-$(command -v ncu)}
n=0
echo "${FLAGS:-}" | tr ';' '\n' | while IFS= read -r spec; do
    [ -n "$spec" ] || continue
    n=$((n + 1))
    flag=${spec%%=*}; rows=${spec#*=}
    python tests/merit/gpu/flag_probe.py --flag "$flag" --rows "$rows" --out "$out" \
        2>&1 | tee "$out/probe$n.log"
    cp "$out/flag_probe.json" "$out/flag_probe$n.json"
    echo "timings $flag: $(( $(date +%s) - t0 )) s"
    [ -n "$NCU" ] || continue
    timeout 240 "$NCU" --clock-control none --kernel-name regex:merit_ --metrics "$M" --csv \
        python tests/merit/gpu/flag_probe.py --flag "$flag" --rows "$rows" --launch \
        > "$out/ncu$n.csv" 2> "$out/ncu$n.err"
    tail -2 "$out/ncu$n.err"
    python3 tests/merit/gpu/ncu_table.py "$out/ncu$n.csv"
    echo "ncu $flag: $(( $(date +%s) - t0 )) s"
done
echo "total: $(( $(date +%s) - t0 )) s"
