#!/bin/sh
# Device check and timing of the persistent cluster tiles (Tile.cluster 2 with Tile.persist) and
# the staged epilogue's L2 hints (Tile.evict) in one call, from the repository root: their device
# test and the earlier persistent / staged / cluster tests, then GEMM 4096^3 FP16 / BF16 with
# every persistent producer tile of the autotuner's list (_g132: direct and staged stores, one
# block or clusters of two, with and without hints, and Tile.evict 2) beside cuBLAS, twice; the
# rows where a new form (cluster or hint) beats every earlier one in both runs are printed.
# Where one wins and time is left (under BUDGET seconds in all, default 560), the bench's rows
# of those precisions are re-measured (--update; the autotuner chooses among all candidates).
# Usage: sh tests/merit/gpu/cluster_probe.sh OUT [BUDGET]
set -u
t0=$(date +%s)
out=${1:-.}
mkdir -p "$out"
export PYTHONPATH=sw PYTHONUNBUFFERED=1
timeout 260 python -m pytest -q -x tests/merit/gpu/test_device.py \
    -k "persistent_clusters or staged_epilogue or persistent_grid or producer_clusters" \
    >"$out/device_tests.txt" 2>&1
rc=$?
tail -3 "$out/device_tests.txt"
[ $rc -eq 0 ] || { tail -60 "$out/device_tests.txt" | cut -c1-300; echo "device tests failed: no timing"; exit 1; }
for run in 1 2; do
    timeout 140 python tests/merit/gpu/epi_probe.py --match "f1x32_k64+_g132" --hints \
        --out "$out/run$run" >"$out/probe$run.txt" 2>&1
    grep -E "^(fp16|bf16) " "$out/probe$run.txt" | sort -k4 -n | head -14
done
rows=$(python tests/merit/gpu/epi_probe.py verdict "$out" cluster\>1 evict\>0 --each)
left=$(( ${2:-560} - $(date +%s) + t0 ))
echo "bench rows: ${rows:-none}; ${left} s left"
if [ -n "$rows" ] && [ $left -gt 100 ]; then
    timeout $((left - 10)) python -m bench.gpu --seed 90417 --update --only "$rows" \
        >"$out/bench.txt" 2>&1
    tail -3 "$out/bench.txt"
    grep -E "GEMM 4096" docs/results/gpu.md | cut -c1-220
    cp docs/results/gpu.md docs/results/gpu.json "$out/"
fi
