"""Device probe (not a test): the Winograd form (``Tile.wino``) on the bench's stride-1 3x3 fp32
convolutions.  Per row: cuDNN's fastest of three choices (as the bench times it); every F(2, 3)
and F(4, 3) tile :func:`merit.gpu.tiling.wino_variants` gives, timed once, with its relative
error against float64; the best tile's stages alone (the transforms, the product); then the
autotuner's pick from an empty tile cache (the bench's path), and that pick, the fastest direct
tile it timed and cuDNN in turns.

``PYTHONPATH=sw python tests/merit/gpu/wino_probe.py [--rows vgg,k3,batch1] [--rounds 7]``"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import run_checked, setup  # noqa: E402

ROWS = {
    "vgg": dict(n=16, c=128, h=56, w=56, m=256, k=3, stride=1, padding=1),
    "k3": dict(n=16, c=32, h=128, w=128, m=32, k=3, stride=1, padding=1),
    "batch1": dict(n=1, c=29, h=77, w=79, m=205, k=3, stride=1, padding=1),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="vgg,k3,batch1")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ms", default="2,4")
    args = ap.parse_args()

    import merit.gpu as gpu
    from bench.gpu import row_rng, time_peer
    from merit.gpu import runtime, tiling, wino
    from merit.gpu.runtime import TileCache, batch_timer, launcher, time_launch

    out = {}
    for row in args.rows.split(","):
        prob, spec, inputs, res, peers, refs = setup("conv", ROWS[row], row_rng(f"wino {row}"))
        rec = out[row] = {}
        name = "cuDNN fp32 (torch)"
        rec["cudnn"], rec["cudnn_tries"] = time_peer(name, peers[name], time_launch)
        print(f"{row}: cuDNN {rec['cudnn']:.4f} ms (tries {rec['cudnn_tries']})", flush=True)
        best = {}
        for m in map(int, args.ms.split(",")):
            saved = tiling.WINO_TUNED
            tiling.WINO_TUNED = (m,)
            try:
                tiles = tiling.wino_variants(spec)
            finally:
                tiling.WINO_TUNED = saved
            gpu._compile_all(spec, tiles)
            for t in tiles:
                try:
                    go, err = run_checked(prob, spec, t, inputs, res, refs)
                    ms = time_launch(go, min_ms=5.0, batches=3)
                except Exception as exc:   # reported, not fatal
                    print(f"  {t.label()}: FAILED {type(exc).__name__}: {exc}"[:300], flush=True)
                    continue
                rec.setdefault("tiles", []).append((t.label(), ms, err))
                print(f"  {t.label()}: {ms:.4f} ms, error {err:.2e}", flush=True)
                if m not in best or ms < best[m][0]:
                    best[m] = (ms, t, err)
        for m, (ms, t, err) in best.items():   # the stages of the best tile alone
            _, d = wino.wino_spec(spec, m)
            ins, outs, before, after = wino.launch_parts(spec, t, inputs, res)
            prod = runtime._launcher(wino.wino_spec(spec, m)[0], t, ins, outs)
            st = {"before": time_launch(before), "product": time_launch(prod),
                  "after": time_launch(after), "whole": ms, "error": err,
                  "bytes_MB": wino.bytes_moved(d) / 1e6,
                  "product_TFLOPs": 2 * wino.macs(d) / 1e9 / time_launch(prod)}
            rec[f"stages_m{m}"] = st
            print(f"  best F({m},3) {t.label()}: " + ", ".join(
                f"{k} {v:.4g}" for k, v in st.items()), flush=True)
        picks = {}
        for form, tuned in (("direct", ()), ("wino", (2,))):   # the autotuner without / with
            saved = tiling.WINO_TUNED
            tiling.WINO_TUNED = tuned
            try:
                with tempfile.TemporaryDirectory() as dd:
                    t0 = time.time()
                    n0 = len(gpu.finals)
                    plan = gpu.tune(prob, *inputs,
                                    cache=TileCache(Path(dd) / "tiles.json"))
                    took = time.time() - t0
            finally:
                tiling.WINO_TUNED = saved
            fin = gpu.finals[n0:]
            picks[form] = plan.tile
            rec[f"pick_{form}"], rec[f"tune_s_{form}"] = plan.tile.label(), took
            rec[f"finals_{form}"] = fin
            _, err = run_checked(prob, spec, plan.tile, inputs, res, refs)
            rec[f"error_{form}"] = err
            print(f"  autotuner {form} ({took:.1f} s): pick {plan.tile.label()}, error "
                  f"{err:.1e}; finalists {fin[-1]['finalists'] if fin else None}", flush=True)
        cands = [("direct", picks["direct"])]
        if picks["wino"] != picks["direct"]:
            cands.append(("pick", picks["wino"]))
        fns = [launcher(spec, t, inputs, res) for _, t in cands] + [peers[name]]
        labels = [c for c, _ in cands] + ["cuDNN"]
        timers = [batch_timer(fn, min_ms=10.0) for fn in fns]
        med = gpu.in_turns(len(timers), lambda k, timers=timers: timers[k](), args.rounds)
        rec["turns"] = list(zip(labels, med, strict=True))
        for c, v in rec["turns"]:
            print(f"  in turns: {c}: {v:.4f} ms", flush=True)
        o = os.environ.get("OUT")
        if o:   # after each row: a run stopped at its limit keeps the rows done
            Path(o, "wino_probe.json").write_text(json.dumps(out, indent=1, default=str))
    print("\nrow: cuDNN once; picks without / with the form; in turns")
    for row, rec in out.items():
        print(f"{row}: {rec['cudnn']:.4f}; {rec['pick_direct']} / {rec['pick_wino']} "
              f"({rec['error_wino']:.1e}); " + "; ".join(f"{c} {v:.4f}" for c, v in rec["turns"]))


if __name__ == "__main__":
    main()
