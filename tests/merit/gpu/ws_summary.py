"""The wgmma rows of a ``half_probe.py`` JSON file, one line each (not a test):
``python tests/merit/gpu/ws_summary.py DIR/half_probe.json``."""

import json
import sys

for r in json.load(open(sys.argv[1])):
    if "ms" in r and "_wg_" in r["tile"]:
        regs = r.get("ptxas", "").split("Used ")[-1].split(" registers")[0]
        log = r.get("ptxas", " 0 bytes spill stores")
        spill = "" if " 0 bytes spill stores" in log else "spills"
        print(f"{r['layer']:5} {r['prec']} {r['tile']:46} {r['ms']:.3f} ms {r['vs_peer']:.2f}x "
              f"ok={r['ok']} regs={regs} {spill}")
