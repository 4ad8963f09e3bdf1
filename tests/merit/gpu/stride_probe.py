"""Device probe of compact strided footprints (not a test): strided convolutions checked against
float64 on every ranked tile (SIMT and tensor-core), and the strided bench rows autotuned as
``bench.gpu`` does (min over the ranked candidates) and timed beside cuDNN.

``PYTHONPATH=sw python tests/merit/gpu/stride_probe.py [--tag new] [--out DIR] [--time-only]``
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from probelib import run_checked, setup

CHECK = {
    "1x1_s2": dict(n=2, c=19, h=23, w=37, m=13, k=1, stride=2, padding=0),
    "1x1_s3": dict(n=2, c=8, h=20, w=31, m=9, k=1, stride=3, padding=0),
    "dw_k3_s2": dict(n=2, c=12, h=21, w=27, m=12, k=3, stride=2, padding=1, groups=12),
    "k3_s2": dict(n=2, c=7, h=19, w=25, m=10, k=3, stride=2, padding=1),
    "k3_s2_d2": dict(n=2, c=9, h=23, w=29, m=11, k=3, stride=2, padding=2, dilation=2),
    "k3_s2_d2_g": dict(n=2, c=8, h=16, w=16, m=6, k=3, stride=2, padding=1, dilation=2,
                       groups=2),
    "rand3_dw_s2": dict(n=8, c=137, h=57, w=69, m=137, k=7, stride=2, padding=2, groups=137),
}
TIME = {
    "rand2_conv_1x1": dict(n=16, c=159, h=55, w=111, m=165, k=1, stride=2, padding=0),
    "rand1_conv_s2_dil": dict(n=4, c=115, h=27, w=85, m=85, k=3, stride=2, padding=0,
                              dilation=2),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="new")
    ap.add_argument("--out", default=".")
    ap.add_argument("--time-only", action="store_true")
    ap.add_argument("--count", type=int, default=12)
    args = ap.parse_args()
    import cupy as cp

    from merit.gpu import _compile_all
    from merit.gpu.runtime import time_launch
    from merit.gpu.tiling import rank

    rng = np.random.default_rng(11)
    out = {"tag": args.tag, "check": [], "time": []}
    worst = 0.0

    if not args.time_only:
        for key, params in CHECK.items():
            for prec, count, tol in (("fp32", 6, 1e-5), ("tf32", 4, 2e-3)):
                prob, spec, inputs, res, _, refs = setup("conv", params, rng, prec)
                try:
                    tiles = rank(spec, count=count)
                except ValueError:
                    continue
                _compile_all(spec, tiles)
                for t in tiles:
                    _, err = run_checked(prob, spec, t, inputs, res, refs)
                    ok = bool(err < tol)
                    worst = max(worst, err / tol)
                    out["check"].append({"row": key, "prec": prec, "tile": t.label(),
                                         "err": err, "ok": ok})
                    print("check", key, prec, t.label(), f"{err:.2e}", "ok" if ok else "FAIL",
                          flush=True)
    for key, params in TIME.items():
        prob, spec, inputs, res, peers, refs = setup("conv", params, rng)
        tiles = rank(spec, count=args.count)
        t0 = time.time()
        _compile_all(spec, tiles)
        recs = []
        for t in tiles:
            go, err = run_checked(prob, spec, t, inputs, res, refs)
            worst = max(worst, err / 1e-5)
            recs.append({"tile": t.label(), "err": err, "ms": time_launch(go)})
            print("time", args.tag, key, recs[-1], flush=True)
        peer = {n: time_launch(f) for n, f in peers.items()}
        best = min(recs, key=lambda r: r["ms"])
        out["time"].append({"row": key, "tiles": recs, "best": best, "peers_ms": peer,
                            "compile_s": round(time.time() - t0, 1)})
        cudnn = peer.get("cuDNN fp32 (torch)")
        print(f"SUMMARY {args.tag} {key}: best {best['ms']:.4f} ms {best['tile']} "
              f"cuDNN {cudnn:.4f} ms ({cudnn / best['ms']:.2f}x)", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    out["worst_err_over_tol"] = worst
    Path(args.out, f"stride_probe_{args.tag}.json").write_text(json.dumps(out, indent=1))
    print("WORST err/tol", args.tag, worst, flush=True)


if __name__ == "__main__":
    main()
