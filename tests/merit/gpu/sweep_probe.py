"""Device probe of the fp32 rows still below their peer (not a test): for a ``bench.gpu`` random
row, the autotuner's list and a wider sweep of the cost models' candidates (the best
``--top`` of each tail model, each also in the ``lean`` and the snake ``-O1`` forms), every tile
checked against float64 and timed beside the peers; ``--launch ROW:LABEL|ROW:peer ...`` runs
named tiles once each for a profiler such as ncu.

``PYTHONPATH=sw python tests/merit/gpu/sweep_probe.py [--seed 90417]
[--only rand2_conv_1x1,rand4_gemm_odd] [--top 40] [--out DIR]``
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from probelib import run_checked, setup

ROWS = "rand2_conv_1x1,rand4_gemm_odd"


def sweep(spec, top):
    """The autotuner's list, then the best ``top`` of each tail model not in it (with their
    ``lean`` and snake ``-O1`` copies)."""
    from merit.gpu import TUNED, tiling
    from merit.gpu.tiling import PTXAS_VARIANTS, SMEM_CAP, _candidates, _replace, complete, estimate

    listed = tiling.rank(spec, count=TUNED)
    seen = set(listed)
    extra = []
    for tail in ("wave", "sm"):
        first = []
        for t in _candidates(spec, extended=True):
            c = estimate(spec, t, detail=False, tail=tail)
            if c is not None:
                first.append((c, t))
        first.sort(key=lambda ct: (ct[0], -ct[1].nthreads))
        scored = []
        for _, t in first[:4 * top]:
            full = complete(spec, t)
            if tiling._smem_bytes(spec, full) > SMEM_CAP:
                continue
            c = estimate(spec, full, tail=tail)
            if c is not None:
                scored.append((c, full))
        scored.sort(key=lambda ct: ct[0])
        n = 0
        for _, t in scored:
            if n >= top:
                break
            if t in seen:
                continue
            n += 1
            for fields in ({}, {"lean": True}, PTXAS_VARIANTS[-1]):
                v = complete(spec, _replace(t, **fields)) if fields else t
                if v not in seen:
                    seen.add(v)
                    extra.append(v)
    return listed, extra


def _row(key, seed):
    from bench.gpu import random_rows, rows

    table = {k: p for k, _, _, p in random_rows(seed)}
    table.update({k: p for k, _, _, p in rows() if not callable(p)})
    return table[key]


def launch(args, seed, out):
    import cupy as cp

    from merit.gpu.runtime import launcher
    from merit.gpu.tile import Tile

    def tup(v):
        return tuple(tup(x) for x in v) if isinstance(v, list) else v

    def profiled(fn):
        fn()
        cp.cuda.Device().synchronize()
        cp.cuda.profiler.start()
        fn()
        cp.cuda.Device().synchronize()
        cp.cuda.profiler.stop()

    rng = np.random.default_rng(1)
    recs = json.loads(Path(out, "sweep_probe.json").read_text())
    for arg in args:
        key, label = arg.split(":", 1)
        prob, spec, inputs, res, peers, _ = setup(*_row(key, seed), rng)
        if label == "peer":
            for name, fn in peers.items():
                profiled(fn)
                print(arg, name, "ran", flush=True)
            continue
        row = next(r for r in recs if r["row"] == key)
        timed = sorted((r for r in row["tiles"] if "ms" in r), key=lambda r: r["ms"])
        if label.startswith("best"):
            rec = timed[int(label[4:] or 1) - 1]
        else:
            rec = next(r for r in row["tiles"] if r["tile"] == label)
        print(arg, "=", rec["tile"], rec.get("ms"), flush=True)
        t = Tile(**{k: tup(v) for k, v in rec["fields"].items()})
        profiled(launcher(spec, t, inputs, res))
        print(arg, "ran", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=90417)
    ap.add_argument("--only", default=ROWS)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--out", default=".")
    ap.add_argument("--launch", nargs="*")
    ap.add_argument("--show", type=int, default=16)
    args = ap.parse_args()
    if args.launch:
        return launch(args.launch, args.seed, args.out)
    import dataclasses

    import cupy as cp

    from merit.gpu import _compile_all
    from merit.gpu.runtime import compiled, time_launch
    from merit.gpu.tiling import estimate, grid_blocks

    rng = np.random.default_rng(5)
    out = []
    for key in args.only.split(","):
        prob, spec, inputs, res, peers, refs = setup(*_row(key, args.seed), rng)
        t0 = time.time()
        listed, extra = sweep(spec, args.top)
        row = {"row": key, "rank_s": round(time.time() - t0, 1), "tiles": []}
        t0 = time.time()
        _compile_all(spec, listed + extra)
        row["compile_s"] = round(time.time() - t0, 1)
        for t in listed + extra:
            rec = {"tile": t.label(), "listed": t in listed, "blocks": grid_blocks(spec, t),
                   "threads": t.nthreads, "wave": estimate(spec, t, tail="wave"),
                   "sm": estimate(spec, t, tail="sm"),
                   "fields": {k: v for k, v in dataclasses.asdict(t).items()}}
            try:
                kern = compiled(spec, t)[0]
                rec["regs"] = kern.num_regs
                go, rec["err"] = run_checked(prob, spec, t, inputs, res, refs)
                rec["ms"] = round(time_launch(go, min_ms=5.0, batches=5), 4)
            except Exception as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            row["tiles"].append(rec)
        row["peers_ms"] = {n: round(time_launch(fn), 4) for n, fn in peers.items()}
        out.append(row)
        Path(args.out, "sweep_probe.json").write_text(json.dumps(out, indent=1))
        cp.get_default_memory_pool().free_all_blocks()
        print(f"== {key}: peers {row['peers_ms']} (rank {row['rank_s']} s, compile "
              f"{row['compile_s']} s, {len(row['tiles'])} tiles)")
        timed = sorted(row["tiles"], key=lambda r: r.get("ms", 1e9))
        best_listed = next((r for r in timed if r["listed"] and "ms" in r), None)
        print("  best listed:", best_listed and (best_listed["ms"], best_listed["tile"]))
        for rec in timed[:args.show]:
            print(f"  {rec.get('ms', '-'):>8} ms regs {rec.get('regs', '-'):>3} blocks "
                  f"{rec['blocks']:>5} thr {rec['threads']:>3} L{int(rec['listed'])} "
                  f"err {rec.get('err', 0):.1e} wave {rec['wave']} sm {rec['sm']} "
                  f"{rec['tile']} {rec.get('error', '')}", flush=True)


if __name__ == "__main__":
    main()
