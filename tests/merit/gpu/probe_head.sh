# The start of a device probe script, sourced from the repository root by the *_probe.sh
# scripts (`. tests/merit/gpu/probe_head.sh` after `set -u`): the output folder (the script's
# first argument, default .), the clock the script's budget runs from (`t0`), the environment
# (the sources on PYTHONPATH, unbuffered output) and the card's name (`card`, printed).
# `device_test PATTERN SECONDS` runs the device tests PATTERN selects, their log in
# OUT/device_tests.txt, and ends the script where one fails: no timing of a wrong kernel.
t0=$(date +%s)
out=${1:-.}
mkdir -p "$out"
export PYTHONPATH=sw PYTHONUNBUFFERED=1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $card"

device_test() {
    timeout "$2" python -m pytest -q -x -rA tests/merit/gpu/test_device.py \
        -k "$1" >"$out/device_tests.txt" 2>&1
    rc=$?
    tail -3 "$out/device_tests.txt"
    [ $rc -eq 0 ] || { tail -60 "$out/device_tests.txt" | cut -c1-300
                       echo "device test failed: no timing"; exit 1; }
    echo "device test: $(( $(date +%s) - t0 )) s"
}
