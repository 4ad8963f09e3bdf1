"""Device probe of the tensor-core kernels (not a test): every ranked tile of a few large layers
checked against float64 and timed, beside the library in the same precision.

``PYTHONPATH=sw python tests/merit/gpu/tc_probe.py [--only gemm,vgg] [--prec tf32,fp16,bf16]
[--count 8] [--out DIR]``: prints one line per tile and a JSON file under ``--out``.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.gpu import _tc_conv_peers, _tc_gemm_peers  # noqa: E402
from merit import workloads as W  # noqa: E402

LAYERS = {
    "gemm": (lambda: W.gemm(4096, 4096, 4096), "gemm", {}),
    "vgg": (lambda: W.conv2d(16, 128, 56, 56, 256, 3, padding=1), "conv",
            dict(stride=1, padding=1)),
    "k9": (lambda: W.conv2d(16, 32, 128, 128, 32, 9, padding=4), "conv",
           dict(stride=1, padding=4)),
    "k9s2": (lambda: W.conv2d(16, 32, 128, 128, 32, 9, stride=2, padding=4), "conv",
             dict(stride=2, padding=4)),
}
TOL = {"tf32": 3e-3, "fp16": 3e-3, "bf16": 2e-2}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="gemm,vgg")
    ap.add_argument("--prec", default="tf32,fp16,bf16")
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import cupy as cp

    from merit.gpu import _compile_all
    from merit.gpu.runtime import launcher, time_launch
    from merit.gpu.spec import spec_of
    from merit.gpu.tiling import rank

    rng = np.random.default_rng(5)
    rows = []
    for key in args.only.split(","):
        make, kind, kw = LAYERS[key]
        prob = make()
        arrays = [cp.asarray(a) for a in prob.random_inputs(rng, np.float32)]
        for prec in args.prec.split(","):
            if kind == "gemm":
                peers, refs = _tc_gemm_peers(prob, arrays, prec)
            else:
                peers, refs = _tc_conv_peers(prob, arrays, prec, kw["stride"], kw["padding"])
            ref = refs[0]
            peer_ms = {n: time_launch(f) for n, f in peers.items()}
            spec = spec_of(prob, "float32", prec)
            t0 = time.time()
            tiles = rank(spec, count=args.count)
            _compile_all(spec, tiles)
            comp = time.time() - t0
            inputs = [dict(zip([t.name for t in prob.tensors], arrays, strict=True))[op.tensor]
                      for op in prob.operands]
            for t in tiles:
                out = (cp.full(spec.pshape, cp.nan, dtype=cp.float32),)
                row = {"layer": key, "prec": prec, "tile": t.label(), "peer_ms": peer_ms}
                try:
                    go = launcher(spec, t, inputs, out)
                    go()
                    cp.cuda.Device().synchronize()
                    got = prob.outputs[0].finish(out[0]).astype(cp.float64)
                    err = float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref))
                    row["rel_err"] = err
                    row["ok"] = bool(err < TOL[prec])
                    row["ms"] = time_launch(go)
                    row["vs_peer"] = min(peer_ms.values()) / row["ms"]
                except Exception as exc:   # noqa: BLE001 - reported
                    row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                rows.append(row)
                print(json.dumps(row), flush=True)
            print(f"# {key} {prec}: compile {comp:.1f} s", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "tc_probe.json").write_text(json.dumps(rows, indent=1))
    for r in rows:
        if "ms" in r:
            print(f"{r['layer']:5} {r['prec']:5} {r['tile']:42} {r['ms']:.3f} ms  "
                  f"{r['vs_peer']:.2f}x  err {r['rel_err']:.1e} {'ok' if r['ok'] else 'BAD'}")
        else:
            print(f"{r['layer']:5} {r['prec']:5} {r['tile']:42} {r.get('error')}")


if __name__ == "__main__":
    main()
