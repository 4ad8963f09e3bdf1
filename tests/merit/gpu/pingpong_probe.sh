#!/bin/sh
# Device check and timing of the ping-pong tiles (Tile.pingpong) in one call, from the
# repository root: their device tests, then GEMM 4096^3 FP16 / BF16
# with the persistent tiles before (_g132) and after (_g132_pp) beside cuBLAS, twice; the bench
# rows re-measured (--update) only for the precisions where a ping-pong tile was faster in both
# runs.  Usage: sh tests/merit/gpu/pingpong_probe.sh OUTDIR
set -u
out=${1:-.}
mkdir -p "$out"
export PYTHONPATH=sw
timeout 140 python -m pytest -q -x tests/merit/gpu/test_device.py -k pingpong \
    >"$out/device_tests.txt" 2>&1
rc=$?
tail -3 "$out/device_tests.txt"
[ $rc -eq 0 ] || { echo "device tests failed: no timing"; exit 1; }
for run in 1 2; do   # (a step past its limit is cut off: timeout)
    timeout 75 python tests/merit/gpu/persist_probe.py --only gemm --prec fp16,bf16 \
        --match _mn_ws_tma_g132 --pingpong --out "$out/run$run" >"$out/probe$run.txt" 2>&1
    grep -E "^(gemm|BAD)|tiles timed" "$out/probe$run.txt"
done
rows=$(python - "$out" <<'PY'
import json, sys
best = {}
for run in (1, 2):
    for r in json.load(open(f"{sys.argv[1]}/run{run}/persist_probe.json")):
        if r.get("ok"):
            k = (run, r["prec"], r["form"])
            best[k] = min(best.get(k, 9e9), r["ms"])
wins = [p for p in ("fp16", "bf16")
        if all(best.get((r, p, "pingpong"), 9e9) < best.get((r, p, "persistent"), 0)
               for r in (1, 2))]
print(",".join(f"gemm@{p}" for p in wins))
PY
)
echo "ping-pong faster in both runs: ${rows:-none}"
if [ -n "$rows" ]; then
    timeout 130 python -m bench.gpu --seed 90417 --update --only "$rows" >"$out/bench.txt" 2>&1
    tail -5 "$out/bench.txt"
    cp docs/results/gpu.md docs/results/gpu.json "$out/"
fi
