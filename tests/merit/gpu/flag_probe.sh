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
n=0
echo "${FLAGS:-}" | tr ';' '\n' | while IFS= read -r spec; do
    [ -n "$spec" ] || continue
    n=$((n + 1))
    flag=${spec%%=*}; rows=${spec#*=}
    python tests/merit/gpu/flag_probe.py --flag "$flag" --rows "$rows" --out "$out" \
        2>&1 | tee "$out/probe$n.log"
    cp "$out/flag_probe.json" "$out/flag_probe$n.json"
    echo "timings $flag: $(( $(date +%s) - t0 )) s"
    ncu_probe 240 "$n" python tests/merit/gpu/flag_probe.py --flag "$flag" --rows "$rows" \
        --launch
done
echo "total: $(( $(date +%s) - t0 )) s"
