"""Device probe of the autotuner's other-grid extras and second round (not a test): for
``bench.gpu`` random rows, the autotuner run from an empty tile cache with the two off
(``tiling.GRID_TUNED`` 0, ``tiling.TIMED_VARIANTS`` 0: the list of before) and on, each winner
checked against float64 and timed beside the peers in the same process.

``PYTHONPATH=sw python tests/merit/gpu/grid_probe.py [--seed 90417]
[--only rand2_conv_1x1,rand4_gemm_odd] [--out DIR]``
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from probelib import run_checked, setup

ROWS = "rand2_conv_1x1,rand4_gemm_odd"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=90417)
    ap.add_argument("--only", default=ROWS)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import cupy as cp

    from bench.gpu import random_rows
    from merit.gpu import _choose, tiling
    from merit.gpu.runtime import TileCache, time_launch

    rows = {key: p for key, _, _, p in random_rows(args.seed)}
    rng = np.random.default_rng(5)
    out = []
    for key in args.only.split(","):
        prob, spec, inputs, res, peers, refs = setup(*rows[key], rng)
        row, gos = {"row": key}, {}
        for side, on in (("before", False), ("after", True)):
            saved = tiling.GRID_TUNED, tiling.TIMED_VARIANTS
            t0 = time.time()
            try:
                if not on:
                    tiling.GRID_TUNED = tiling.TIMED_VARIANTS = 0
                with tempfile.TemporaryDirectory() as d:
                    tile = _choose(spec, inputs, res, None, True, TileCache(Path(d, "c.json")))
            finally:
                tiling.GRID_TUNED, tiling.TIMED_VARIANTS = saved
            go, err = run_checked(prob, spec, tile, inputs, res, refs)
            gos[side] = go
            row[side] = {"tile": tile.label(), "err": err, "tune_s": round(time.time() - t0, 1),
                         "ms": round(time_launch(go), 4)}
            print(key, side, row[side], flush=True)
        row["peers_ms"] = {n: round(time_launch(fn), 4) for n, fn in peers.items()}
        for side in ("before", "after"):   # once more, after the peers: the spread of one tile
            row[side]["ms2"] = round(time_launch(gos[side]), 4)
        print(key, "peers", row["peers_ms"], flush=True)
        out.append(row)
        Path(args.out, "grid_probe.json").write_text(json.dumps(out, indent=1))
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
