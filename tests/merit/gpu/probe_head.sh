# The start of a device probe script, sourced from the repository root by the *_probe.sh
# scripts (`. tests/merit/gpu/probe_head.sh` after `set -u`): the output folder (the script's
# first argument, default .), the clock the script's budget runs from (`t0`), the environment
# (the sources on PYTHONPATH, unbuffered output) and the card's name (`card`, printed).
# `device_test PATTERN SECONDS` runs the device tests PATTERN selects, their log in
# OUT/device_tests.txt, and ends the script where one fails: no timing of a wrong kernel.
# `h100` is 1 on an H100 (the bench page's card), else 0; `bench_rows ROWS SECONDS` re-measures
# the bench's rows ROWS and writes them to its page (log in OUT/bench.txt, the GEMM 4096^3 rows
# printed, the page copied into OUT).
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
