# The start of a device probe script, sourced from the repository root by the *_probe.sh
# scripts (`. tests/merit/gpu/probe_head.sh` after `set -u`): the output folder (the script's
# first argument, default .), the clock the script's budget runs from (`t0`), the environment
# (the sources on PYTHONPATH, unbuffered output) and the card's name (`card`, printed).
# `device_test PATTERN SECONDS` runs the device tests PATTERN selects, their log in
# OUT/device_tests.txt, and ends the script where one fails: no timing of a wrong kernel.
# `h100` is 1 on an H100 (the bench page's card), else 0; `bench_rows ROWS SECONDS` re-measures
# the bench's rows ROWS and writes them to its page (log in OUT/bench.txt, the GEMM 4096^3 rows
# printed, the page copied into OUT).  `ncu_probe SECONDS NAME COMMAND...` runs COMMAND (a
# probe's `--launch` form) under Nsight Compute ($NCU, else `ncu` on PATH; nothing without one)
# with the probes' metrics ($NCU_METRICS: time, registers, instructions, issue rate, shared
# loads / stores and their bank conflicts, stalls) of the kernels named merit_*, its CSV in
# OUT/ncu_NAME.csv, and prints one line per kernel (ncu_table.py).
t0=$(date +%s)
out=${1:-.}
mkdir -p "$out"
export PYTHONPATH=sw PYTHONUNBUFFERED=1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $card"
case "$card" in *H100*) h100=1 ;; *) h100=0 ;; esac

device_test() {
    timeout "$2" python -m pytest -q -x -rA tests/merit/gpu/test_device.py \
        -k "$1" >"$out/device_tests.txt" 2>&1
    rc=$?
    tail -3 "$out/device_tests.txt"
    [ $rc -eq 0 ] || { tail -60 "$out/device_tests.txt" | cut -c1-300
                       echo "device test failed: no timing"; exit 1; }
    echo "device test: $(( $(date +%s) - t0 )) s"
}

bench_rows() {
    timeout "$2" python -m bench.gpu --seed 90417 --update --only "$1" >"$out/bench.txt" 2>&1
    tail -3 "$out/bench.txt"
    grep -E "GEMM 4096|gemm@" docs/results/gpu.md | cut -c1-240
    cp docs/results/gpu.md docs/results/gpu.json "$out/"
}

NCU=${NCU:-$(command -v ncu)}
B=l1tex__data_bank_conflicts_pipe_lsu_mem_shared
W=l1tex__data_pipe_lsu_wavefronts_mem_shared
S=smsp__average_warps_issue_stalled
NCU_METRICS=${NCU_METRICS:-gpu__time_duration.sum,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,${B}.sum,${B}_op_ld.sum,${B}_op_st.sum,${B}_op_ldgsts.sum,${W}.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_ldgsts.sum,${S}_short_scoreboard_per_issue_active.ratio,${S}_dispatch_stall_per_issue_active.ratio,${S}_long_scoreboard_per_issue_active.ratio,${S}_mio_throttle_per_issue_active.ratio,${S}_barrier_per_issue_active.ratio,${S}_not_selected_per_issue_active.ratio}

ncu_probe() {
    [ -n "$NCU" ] || { echo "no ncu: $2 not profiled"; return 0; }
    secs=$1; name=$2; shift 2
    timeout "$secs" "$NCU" --clock-control none --kernel-name regex:merit_ \
        --metrics "$NCU_METRICS" --csv "$@" > "$out/ncu_$name.csv" 2> "$out/ncu_$name.err"
    tail -2 "$out/ncu_$name.err"
    python3 tests/merit/gpu/ncu_table.py "$out/ncu_$name.csv"
    echo "ncu $name: $(( $(date +%s) - t0 )) s"
}
