#!/bin/sh
# Named tiles of bench rows on the device (not a test): for each ROW=TILES entry of PROBES
# ('|'-separated; TILES as tiles_probe.py takes them), the tiles checked and timed in turns,
# then Nsight Compute's instructions, issue rate, stalls and shared-memory bank conflicts of
# the same kernels; then, where BENCH names rows, those rows re-measured on the bench page:
#   PROBES="ROW=LABEL;LABEL+p0=24,0,0,0|ROW=..." BENCH=ROW,... sh tests/merit/gpu/tiles_probe.sh OUT
set -u
. tests/merit/gpu/probe_head.sh
echo "${PROBES:-}" | tr '|' '\n' | while IFS= read -r p; do
    [ -n "$p" ] || continue
    row=${p%%=*}; tiles=${p#*=}
    python tests/merit/gpu/tiles_probe.py --row "$row" --tiles "$tiles" --out "$out" 2>&1 \
        | tee "$out/tiles_$row.log" | cut -c1-400
    echo "timings $row: $(( $(date +%s) - t0 )) s"
    ncu_probe 150 "$row" python tests/merit/gpu/tiles_probe.py --row "$row" --tiles "$tiles" \
        --launch
done
[ -z "${BENCH:-}" ] || bench_rows "$BENCH" "${BENCH_S:-400}"
echo "total: $(( $(date +%s) - t0 )) s"
