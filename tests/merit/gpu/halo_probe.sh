#!/bin/sh
# Device check and timing of the row-of-taps tiles (Tile.halo) in one call, from the repository
# root: their device test, then the channels-last producer tiles of the k9 convolutions (Table
# V, stride 1 and 2; per-tap _cl and row-of-taps _cl_halo forms, the layout copies inside the
# timed launch) beside cuDNN; where a _cl_halo tile beats every per-tap _cl tile, the bench rows
# BENCH_ROWS (default: both layers in FP16 / BF16) are re-measured with --update (the autotuner
# picks among all candidates) and the page copied to OUTDIR.
# Usage: sh tests/merit/gpu/halo_probe.sh OUTDIR [LAYERS] [PRECISIONS] [TEST SECONDS]
# [BENCH_ROWS]
set -u
out=${1:-.}
layers=${2:-k9,k9s2}
precs=${3:-fp16}
bench=${5:-conv_9+1@fp16,conv_9+1@bf16,conv_9+2@fp16,conv_9+2@bf16}
mkdir -p "$out"
export PYTHONPATH=sw PYTHONUNBUFFERED=1
t0=$(date +%s)
timeout "${4:-200}" python -m pytest -q -x tests/merit/gpu/test_device.py -k "halo" \
    >"$out/device_tests.txt" 2>&1
rc=$?
tail -5 "$out/device_tests.txt"
echo "device test: $(( $(date +%s) - t0 )) s"
[ $rc -eq 0 ] || { tail -60 "$out/device_tests.txt"; echo "device tests failed: no timing"; exit 1; }
timeout 240 python tests/merit/gpu/persist_probe.py --only "$layers" --prec "$precs" \
    --match _cl --out "$out" >"$out/probe.txt" 2>&1
grep -E "^(k9|k3|vgg|BAD)|tiles timed" "$out/probe.txt"
echo "probe: $(( $(date +%s) - t0 )) s"
python - "$out" >"$out/decide.txt" <<'PY'
import json, sys
rows = json.load(open(f"{sys.argv[1]}/persist_probe.json"))
win = False
for layer in ("k9", "k9s2", "k3", "vgg"):
    for prec in ("fp16", "bf16", "tf32"):
        got = [r for r in rows if r["layer"] == layer and r["prec"] == prec and r.get("ok")]
        halo = min((r["ms"] for r in got if r["form"].endswith("cl halo")), default=None)
        cl = min((r["ms"] for r in got if r["form"].endswith(" cl")), default=None)
        if halo is None or cl is None:
            continue
        peer = got[0]["peer_ms"]
        print(f"{layer:5} {prec:5} halo {halo:.3f} ms, per-tap cl {cl:.3f}, peer {peer:.3f}: "
              f"{peer / halo:.2f}x")
        win = win or halo < cl
print("WIN" if win else "NO WIN")
PY
cat "$out/decide.txt"
if grep -q "^WIN" "$out/decide.txt"; then
    timeout 280 python -m bench.gpu --seed 90417 --update --only "$bench" >"$out/bench.txt" 2>&1
    echo "bench rc $?: $(( $(date +%s) - t0 )) s"
    cp docs/results/gpu.md docs/results/gpu.json "$out"/
    grep -E "128x128, k" "$out/bench.txt" | head -40
fi
