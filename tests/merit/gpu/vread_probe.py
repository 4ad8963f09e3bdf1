"""Device probe of ``Tile.vread`` (not a test): the best SIMT tiles of a few fp32 rows, each with
and without explicit shared reads, checked against float64 and timed beside the peers; the SASS
instruction mix of the best tile of each row (nvcc + cuobjdump when present).

``PYTHONPATH=sw python tests/merit/gpu/vread_probe.py [--only gemm,vgg] [--count 3] [--out DIR]``
"""

import argparse
import collections
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from probelib import run_checked, setup

ROWS = {
    "gemm": ("gemm", dict(n=4096)),
    "vgg": ("conv", dict(n=16, c=128, h=56, w=56, m=256, k=3, stride=1, padding=1)),
    "alexnet1": ("conv", dict(n=32, c=3, h=227, w=227, m=96, k=11, stride=4, padding=0)),
    "conv1x1": ("conv", dict(n=16, c=159, h=55, w=111, m=165, k=1, stride=2, padding=0)),
    "gemm_odd": ("gemm", dict(n=827, cols=1615, k=1509)),
}

VARIANTS = [("base", {}), ("vread", {"vread": True}), ("lean", {"lean": True}),
            ("lean_vread", {"lean": True, "vread": True})]
#: tiles besides the ranked ones (fields of check_tile), per row
EXTRA = {
    "gemm": [dict(threads=(16, 16), regs=(8, 8), chunk=16, strided=(4, 4)),
             dict(threads=(16, 16), regs=(8, 16), chunk=16, strided=(4, 4)),
             dict(threads=(16, 16), regs=(16, 8), chunk=16, strided=(4, 4)),
             dict(threads=(16, 16), regs=(8, 16), chunk=32, strided=(4, 4)),
             dict(threads=(8, 16), regs=(16, 8), chunk=32, strided=(4, 4)),
             dict(threads=(16, 16), regs=(8, 8), chunk=32, strided=(4, 4), stages=3,
                  double=True)],
    "vgg": [dict(threads=(4, 4, 1, 14), regs=(1, 8, 4, 4), chunk=4),
            dict(threads=(2, 4, 1, 14), regs=(1, 8, 4, 4), chunk=8),
            dict(threads=(4, 8, 1, 7), regs=(1, 8, 4, 8), chunk=4)],
}


def sass_mix(code, name):
    """Opcode counts of the kernel's SASS (None without nvcc / cuobjdump)."""
    if not (shutil.which("nvcc") and shutil.which("cuobjdump")):
        return None
    with tempfile.TemporaryDirectory() as d:
        cu, cubin = Path(d) / "k.cu", Path(d) / "k.cubin"
        cu.write_text(code)
        res = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v",
                              "-o", str(cubin), str(cu)], capture_output=True, text=True)
        if res.returncode:
            return {"error": res.stderr[-500:]}
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True,
                              text=True).stdout
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            ops[m.group(1)] += 1
    regs = re.search(r"Used (\d+) registers", res.stderr)
    return {"ops": dict(ops.most_common(25)), "total": sum(ops.values()),
            "regs": int(regs.group(1)) if regs else None,
            "spills": "0 bytes spill stores" not in res.stderr}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(ROWS))
    ap.add_argument("--count", type=int, default=2)
    ap.add_argument("--out", default=".")
    ap.add_argument("--extra", action="store_true")
    args = ap.parse_args()
    import cupy as cp

    from merit.gpu import _compile_all
    from merit.gpu.runtime import time_launch
    from merit.gpu.tiling import _replace, check_tile, complete, rank

    rng = np.random.default_rng(5)
    out = []
    for key in args.only.split(","):
        prob, spec, inputs, res, peers, refs = setup(*ROWS[key], rng)
        row = {"row": key, "tiles": []}
        ranked = list(rank(spec, count=args.count))
        if args.extra:
            for d in EXTRA.get(key, []):
                try:
                    ranked.append(check_tile(spec, d))
                except Exception as exc:
                    print(key, d, "rejected:", exc, flush=True)
        tiles = []
        for t in ranked:
            for _vname, fields in VARIANTS:
                v = complete(spec, _replace(t, **fields)) if fields else t
                if (v.vread or not fields.get("vread")) and v not in tiles:
                    tiles.append(v)
        t0 = time.time()
        _compile_all(spec, tiles)
        row["compile_s"] = round(time.time() - t0, 1)
        for t in tiles:
            rec = {"tile": t.label()}
            try:
                go, rec["err"] = run_checked(prob, spec, t, inputs, res, refs)
                rec["ms"] = time_launch(go)
            except Exception as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            row["tiles"].append(rec)
            print(key, rec, flush=True)
        row["peers_ms"] = {n: time_launch(fn) for n, fn in peers.items()}
        print(key, row["peers_ms"], flush=True)
        out.append(row)
        Path(args.out, "vread_probe.json").write_text(json.dumps(out, indent=1))
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
