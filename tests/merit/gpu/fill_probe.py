"""Device probe of the SIMT candidates added for grids that fill the SMs (not a test): for the
random fp32 rows of a seed, the autotuner's candidates with the additions off
(``tiling.FILL_TUNED`` 0, ``SPLIT_CHUNKS`` off, ``HEDGE_VARIANTS`` ``lean`` only: the list of
before) and on, each checked against float64 and timed on the same device, then the best of
each list and the peers.

``PYTHONPATH=sw python tests/merit/gpu/fill_probe.py [--seed 90417] [--only rand5_gemm_skinny]
[--out DIR]``
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from probelib import run_checked, setup

ROWS = "rand1_conv_s2_dil,rand2_conv_1x1,rand4_gemm_odd,rand5_gemm_skinny,rand6_conv_batch1"


def candidate_lists(spec):
    """``(before, after)``: the autotuner's candidates without and with the additions."""
    from merit.gpu import TUNED, tiling

    saved = tiling.FILL_TUNED, tiling.SPLIT_CHUNKS, tiling.HEDGE_VARIANTS
    try:
        tiling.FILL_TUNED, tiling.SPLIT_CHUNKS = 0, False
        tiling.HEDGE_VARIANTS = ({"lean": True},)
        before = tiling.rank(spec, count=TUNED)
    finally:
        tiling.FILL_TUNED, tiling.SPLIT_CHUNKS, tiling.HEDGE_VARIANTS = saved
    return before, tiling.rank(spec, count=TUNED)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=90417)
    ap.add_argument("--only", default=ROWS)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import cupy as cp

    from bench.gpu import random_rows
    from merit.gpu import _compile_all
    from merit.gpu.runtime import time_launch
    from merit.gpu.tiling import fills, grid_blocks

    rows = {key: p for key, _, _, p in random_rows(args.seed)}
    rng = np.random.default_rng(5)
    out = []
    for key in args.only.split(","):
        prob, spec, inputs, res, peers, refs = setup(*rows[key], rng)
        before, after = candidate_lists(spec)
        tiles = before + [t for t in after if t not in before]
        t0 = time.time()
        _compile_all(spec, tiles)
        row = {"row": key, "compile_s": round(time.time() - t0, 1), "tiles": []}
        for t in tiles:
            rec = {"tile": t.label(), "before": t in before, "after": t in after,
                   "blocks": grid_blocks(spec, t), "fills": fills(spec, t)}
            try:
                go, rec["err"] = run_checked(prob, spec, t, inputs, res, refs)
                rec["ms"] = time_launch(go, min_ms=5.0, batches=5)
            except Exception as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            row["tiles"].append(rec)
            print(key, rec, flush=True)
        for side in ("before", "after"):
            timed = [r for r in row["tiles"] if r[side] and "ms" in r]
            row[f"best_{side}"] = min(timed, key=lambda r: r["ms"]) if timed else None
        row["peers_ms"] = {n: time_launch(fn) for n, fn in peers.items()}
        print(key, "best before", row["best_before"], "best after", row["best_after"],
              "peers", row["peers_ms"], flush=True)
        out.append(row)
        Path(args.out, "fill_probe.json").write_text(json.dumps(out, indent=1))
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
