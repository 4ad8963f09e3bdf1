#!/bin/sh
# Device check and timing of the staged epilogue (Tile.epi) in one call, from the repository
# root: its device test and the persistent tiles' (the same loop with direct stores), then GEMM
# 4096^3 FP16 / BF16 with the persistent tiles with direct stores (_g132) and staged (_e2, _e4)
# (also with L2 evict-first bulk stores) beside cuBLAS, twice; then the bench's three GEMM 4096^3
# tensor-core rows re-measured (--update; the autotuner chooses among all candidates) and the
# staged tile's shared-memory bank conflicts counted.  Usage: sh tests/merit/gpu/epi_probe.sh OUT
set -u
out=${1:-.}
mkdir -p "$out"
export PYTHONPATH=sw PYTHONUNBUFFERED=1
timeout 240 python -m pytest -q -x tests/merit/gpu/test_device.py \
    -k "staged_epilogue or persistent_grid" >"$out/device_tests.txt" 2>&1
rc=$?
tail -3 "$out/device_tests.txt"
[ $rc -eq 0 ] || { tail -40 "$out/device_tests.txt"; echo "device tests failed: no timing"; exit 1; }
for run in 1 2; do
    timeout 150 python tests/merit/gpu/epi_probe.py --match _mn_ws_tma_g132 --evict \
        --out "$out/run$run" >"$out/probe$run.txt" 2>&1
    grep -E "^(fp16|bf16) " "$out/probe$run.txt"
done
rows=$(python - "$out" <<'PY'
import json, sys
best = {}
for run in (1, 2):
    for r in json.load(open(f"{sys.argv[1]}/run{run}/epi_probe.json")):
        if "ms" in r and r.get("rel_err", 1) < 1e-4 and r["form"] == "as generated":
            k = (run, r["prec"], "_e" in r["tile"])
            best[k] = min(best.get(k, 9e9), r["ms"])
wins = [p for p in ("fp16", "bf16")
        if all(best.get((r, p, True), 9e9) < best.get((r, p, False), 0) for r in (1, 2))]
print(",".join(f"gemm@{p}" for p in wins))
PY
)
echo "staged faster in both runs: ${rows:-none}"
timeout 200 python -m bench.gpu --seed 90417 --update --only gemm@fp16,gemm@bf16,gemm@tf32 \
    >"$out/bench.txt" 2>&1
tail -3 "$out/bench.txt"
grep -E "GEMM 4096|^- gemm" docs/results/gpu.md | cut -c1-200
cp docs/results/gpu.md docs/results/gpu.json "$out/"
lab=fp16_b128x256_w8x1_f1x32_k64_wg_h4_mn_ws_tma_g132
timeout 120 ncu --clock-control none --kernel-name regex:merit_ --metrics \
    gpu__time_duration.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum \
    python tests/merit/gpu/tc_profile.py "gemm:fp16:$lab:half" "gemm:fp16:${lab}_e2:half" \
    >"$out/ncu.txt" 2>&1
grep -E "merit_|__" "$out/ncu.txt" | sed 's/  */ /g' | cut -c1-120
