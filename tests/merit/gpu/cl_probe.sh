#!/bin/sh
# Device check and timing of the channels-last tiles (Tile.cl) in one call, from the repository
# root: their device test, then every producer tile of VGG conv3_1 and the k9 convolutions
# (Table V, stride 1 and 2) in FP16 / BF16 / TF32, the channels-last forms (_cl, their layout
# copies inside the timed launch) beside the others and cuDNN; the rows where a channels-last
# tile beat cuDNN's time printed for a bench update.  Usage: sh tests/merit/gpu/cl_probe.sh OUTDIR
# [LAYERS] [PRECISIONS] [TEST SECONDS]
set -u
out=${1:-.}
layers=${2:-vgg,k9,k9s2}
precs=${3:-fp16,bf16,tf32}
mkdir -p "$out"
export PYTHONPATH=sw
timeout "${4:-200}" python -m pytest -q -x tests/merit/gpu/test_device.py -k "channels_last or cl_relayout" \
    >"$out/device_tests.txt" 2>&1
rc=$?
tail -5 "$out/device_tests.txt"
[ $rc -eq 0 ] || { echo "device tests failed: no timing"; exit 1; }
timeout 330 python tests/merit/gpu/persist_probe.py --only "$layers" --prec "$precs" \
    --out "$out" >"$out/probe.txt" 2>&1
grep -E "^(vgg|k9|BAD)|tiles timed" "$out/probe.txt"
python - "$out" <<'PY'
import json, sys
rows = json.load(open(f"{sys.argv[1]}/persist_probe.json"))
key = {"vgg": "vgg_conv3_1", "k9": "conv_9+1", "k9s2": "conv_9+2"}
wins = []
for layer in key:
    for prec in ("fp16", "bf16", "tf32"):
        got = [r for r in rows if r["layer"] == layer and r["prec"] == prec and r.get("ok")]
        cl = min((r["ms"] for r in got if r["form"].endswith(" cl")), default=None)
        other = min((r["ms"] for r in got if not r["form"].endswith(" cl")), default=None)
        if cl is None:
            continue
        peer = min(got[0]["peer_ms"].values()) if isinstance(got[0]["peer_ms"], dict) \
            else got[0]["peer_ms"]
        print(f"{layer:5} {prec:5} cl {cl:.3f} ms, other producer tiles {other or 0:.3f}, "
              f"peer {peer:.3f}: {peer / cl:.2f}x")
        if cl < (other or 9e9):
            wins.append(f"{key[layer]}@{prec}")
print("channels-last fastest producer form:", ",".join(wins) or "none")
PY
