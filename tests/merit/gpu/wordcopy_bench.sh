#!/bin/sh
# Word copies by rows (Tile.wrows), the bench rows whose autotuning can take them: the device
# test, then `bench.gpu --update` of those rows into OUTDIR/res (a copy of the page):
#   sh tests/merit/gpu/wordcopy_bench.sh OUTDIR [ROWS]
set -u
. tests/merit/gpu/probe_head.sh
device_test word_copies 60
mkdir -p "$out/res" && cp docs/results/gpu.json docs/results/gpu.md "$out/res/"
timeout 200 python -m bench.gpu --seed 90417 --update --only "${2:-rand4_gemm_odd,rand2_conv_1x1}" \
    --out "$out/res" > "$out/bench.log" 2>&1
grep '^{"key"' "$out/bench.log" | cut -c1-400
echo "total: $(( $(date +%s) - t0 )) s"
