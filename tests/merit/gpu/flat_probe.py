"""Device probe (not a test): the product form of 1 x 1 convolutions (``Tile.flat``) and the
ragged GEMM's splits, on the bench's rows of seed 112826.

Per convolution row: cuDNN's fastest of three choices and im2col + cuBLAS (as the bench times
them); the page's tile (rebuilt from its label) and every tile :func:`merit.gpu.tiling.
flat_variants` gives, timed once, with its relative error against float64 (outputs poisoned);
then the autotuner from an empty tile cache (the bench's path: every tile it timed is logged),
and the page's tile, the pick and the peers in turns.  The GEMM row: the autotuner likewise,
the page's tile at splits 1-6 (blocks per wave of the 132 SMs) and cuBLAS in turns.

``PYTHONPATH=sw python tests/merit/gpu/flat_probe.py [--rows conv1x1,r50,gemm] [--rounds 7]``"""

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import run_checked, setup  # noqa: E402

CONV = {
    # the page's row (seed 112826) and its tile there
    "conv1x1": (dict(n=4, c=181, h=61, w=77, m=229, k=1, stride=1, padding=0, dilation=1,
                     groups=1),
                dict(threads=(1, 4, 4, 16), regs=(1, 8, 8, 1), chunk=16, unroll=3, lean=True,
                     padrows=True)),
    # a ResNet-50 bottleneck's 1x1 reduction (sizes that tiles divide), no page tile
    "r50": (dict(n=16, c=256, h=56, w=56, m=64, k=1, stride=1, padding=0, dilation=1, groups=1),
            None),
}
GEMM = (dict(n=1735, cols=1849, k=1873),
        dict(threads=(16, 16), regs=(8, 8), chunk=32, unroll=1, split=3, strided=(4, 4),
             lean=True, vread=True, forder=1, ptxas=1, padrows=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="conv1x1,r50,gemm")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()

    import merit.gpu as gpu
    from bench.gpu import row_rng, time_peer
    from merit.gpu import runtime, tiling
    from merit.gpu.runtime import TileCache, batch_timer, launcher, time_launch

    log = []   # every (label, ms) the autotuner timed
    real_launcher, real_time = runtime.launcher, runtime.time_launch

    def tagged(spec, tile, inputs, out):
        fn = real_launcher(spec, tile, inputs, out)

        def go():
            fn()
        go.tile = tile
        return go

    def logged(fn, **kw):
        ms = real_time(fn, **kw)
        if hasattr(fn, "tile"):
            log.append((fn.tile.label(), round(ms, 5)))
        return ms

    def tune(prob, inputs):
        runtime.launcher, runtime.time_launch = tagged, logged
        del log[:]
        try:
            with tempfile.TemporaryDirectory() as dd:
                t0 = time.time()
                n0 = len(gpu.finals)
                plan = gpu.tune(prob, *inputs, cache=TileCache(Path(dd) / "tiles.json"))
                took = time.time() - t0
        finally:
            runtime.launcher, runtime.time_launch = real_launcher, real_time
        return plan.tile, took, gpu.finals[n0:], sorted(log, key=lambda x: x[1])

    def turns(rec, cands, rounds):
        timers = [batch_timer(fn, min_ms=10.0) for _, fn in cands]
        med = gpu.in_turns(len(timers), lambda k: timers[k](), rounds)
        rec["turns"] = [(c, m) for (c, _), m in zip(cands, med, strict=True)]
        for c, v in rec["turns"]:
            print(f"  in turns: {c}: {v:.4f} ms", flush=True)

    def save(out):
        o = os.environ.get("OUT")
        if o:   # after each row: a run stopped at its limit keeps the rows done
            Path(o, "flat_probe.json").write_text(json.dumps(out, indent=1, default=str))

    out = {}
    for row in args.rows.split(","):
        if row == "gemm":
            continue
        params, page = CONV[row]
        prob, spec, inputs, res, peers, refs = setup("conv", params, row_rng(f"flat {row}"))
        rec = out[row] = {}
        for name, fn in peers.items():
            rec[name], _ = time_peer(name, fn, time_launch)
            print(f"{row}: {name} {rec[name]:.4f} ms", flush=True)
        tiles = []
        if page is not None:
            tiles.append(("page", tiling.check_tile(spec, page)))
        tiles += [(t.label(), t) for t in tiling.flat_variants(spec)]
        gpu._compile_all(spec, [t for _, t in tiles])
        best = None
        for what, t in tiles:
            try:
                go, err = run_checked(prob, spec, t, inputs, res, refs)
                ms = time_launch(go, min_ms=5.0, batches=3)
            except Exception as exc:   # reported, not fatal
                print(f"  {t.label()}: FAILED {type(exc).__name__}: {exc}"[:300], flush=True)
                continue
            rec.setdefault("tiles", []).append((what, t.label(), ms, err))
            print(f"  {what} {t.label()}: {ms:.4f} ms, error {err:.2e}", flush=True)
            if t.flat and (best is None or ms < best[0]):
                best = (ms, t)
        pick, took, fin, timed = tune(prob, inputs)
        _, err = run_checked(prob, spec, pick, inputs, res, refs)
        rec.update(pick=pick.label(), tune_s=took, error_pick=err, finals=fin, timed=timed)
        print(f"  autotuner ({took:.1f} s, {len(timed)} timed): pick {pick.label()}, error "
              f"{err:.1e}; fastest timed {timed[:6]}", flush=True)
        cands = [("pick", launcher(spec, pick, inputs, res))]
        if page is not None:
            cands.insert(0, ("page", launcher(spec, tiles[0][1], inputs, res)))
        if best is not None and best[1] != pick:
            cands.append(("best flat once", launcher(spec, best[1], inputs, res)))
        cands += list(peers.items())
        turns(rec, cands, args.rounds)
        save(out)
    if "gemm" in args.rows.split(","):
        prob, spec, inputs, res, peers, refs = setup("gemm", GEMM[0], row_rng("flat gemm"))
        rec = out["gemm"] = {}
        pick, took, fin, timed = tune(prob, inputs)
        rec.update(pick=pick.label(), tune_s=took, finals=fin, timed=timed)
        print(f"gemm: autotuner ({took:.1f} s, {len(timed)} timed): pick {pick.label()}; "
              f"fastest timed {timed[:8]}", flush=True)
        page = tiling.check_tile(spec, GEMM[1])
        cands = []
        for s in range(1, 7):
            try:
                t = tiling.check_tile(spec, dataclasses.replace(page, split=s))
                go, err = run_checked(prob, spec, t, inputs, res, refs)
            except Exception as exc:   # reported, not fatal
                print(f"  split {s}: {type(exc).__name__}: {exc}"[:200], flush=True)
                continue
            nb = runtime.compiled(spec, t)[1]
            cands.append((f"{t.label()} ({nb} blocks, error {err:.1e})", go))
        if pick not in [tiling.check_tile(spec, dataclasses.replace(page, split=s))
                        for s in range(1, 7)]:
            cands.append((f"pick {pick.label()}", launcher(spec, pick, inputs, res)))
        cands += list(peers.items())
        turns(rec, cands, args.rounds)
        save(out)
    print("\nrow: pick; in turns")
    for row, rec in out.items():
        print(f"{row}: {rec['pick']}; " + "; ".join(f"{c} {v:.4f}" for c, v in rec["turns"]))


if __name__ == "__main__":
    main()
