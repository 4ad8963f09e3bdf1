"""Device probe of the wgmma tiles (not a test): every wgmma candidate of a few layers checked
against float64 and timed, beside the best tiles the generator ranked before and the library in
the same precision.

``PYTHONPATH=sw python tests/merit/gpu/wg_probe.py [--only gemm,vgg,odd] [--prec fp16,bf16,tf32]
[--base 2] [--match _m2,k32] [--out DIR]``: one line per tile, a table last, a JSON file
under ``--out``.
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
    # ragged: rows, columns and k that no tile divides
    "odd": (lambda: W.gemm(333, 200, 1000), "gemm", {}),
    "oddconv": (lambda: W.conv2d(3, 19, 23, 29, 40, 3, stride=2, padding=1), "conv",
                dict(stride=2, padding=1)),
}
TOL = {"tf32": 3e-3, "fp16": 3e-3, "bf16": 2e-2}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="odd,oddconv,gemm,vgg")
    ap.add_argument("--prec", default="fp16,bf16,tf32")
    ap.add_argument("--base", type=int, default=2)
    ap.add_argument("--match", default="", help="only wgmma tiles whose label holds one of "
                                                "these comma-separated pieces")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import cupy as cp

    from merit.gpu import ldsm
    from merit.gpu.runtime import launcher, ptxas_logs, time_launch
    from merit.gpu.spec import spec_of
    from merit.gpu.tiling import H100, rank

    rng = np.random.default_rng(7)
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
            big = H100.smem_block - 1024
            pieces = [m for m in args.match.split(",") if m]
            wg = [t for t in ldsm.candidates(spec, prec, big, wgmma=True)
                  if ldsm.estimate(spec, t, H100, big) is not None
                  and (not pieces or any(m in t.label() for m in pieces))]
            base = [t for t in rank(spec, count=max(args.base, 1)) if not t.wgmma][:args.base]
            inputs = [dict(zip([t.name for t in prob.tensors], arrays, strict=True))[op.tensor]
                      for op in prob.operands]
            for t in base + wg:
                out = (cp.full(spec.pshape, cp.nan, dtype=cp.float32),)
                row = {"layer": key, "prec": prec, "tile": t.label(), "peer_ms": peer_ms}
                try:
                    t0 = time.time()
                    go = launcher(spec, t, inputs, out)
                    row["compile_s"] = round(time.time() - t0, 2)
                    go()
                    cp.cuda.Device().synchronize()
                    got = prob.outputs[0].finish(out[0]).astype(cp.float64)
                    err = float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref))
                    row["rel_err"] = err
                    row["ok"] = bool(err < TOL[prec])
                    row["ms"] = time_launch(go)
                    row["vs_peer"] = min(peer_ms.values()) / row["ms"]
                    for name, log in ptxas_logs.items():
                        if t.label() in name:
                            row["ptxas"] = " | ".join(ln.strip() for ln in log.splitlines()
                                                      if "registers" in ln or "spill" in ln)
                except Exception as exc:   # noqa: BLE001 - reported
                    row["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
                rows.append(row)
                print(json.dumps(row), flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "wg_probe.json").write_text(json.dumps(rows, indent=1))
    for r in rows:
        if "ms" in r:
            print(f"{r['layer']:7} {r['prec']:5} {r['tile']:40} {r['ms']:.3f} ms  "
                  f"{r['vs_peer']:.2f}x  err {r['rel_err']:.1e} {'ok' if r['ok'] else 'BAD'}  "
                  f"{r.get('ptxas', '')[-60:]}")
        else:
            print(f"{r['layer']:7} {r['prec']:5} {r['tile']:40} {r.get('error', '')[:300]}")


if __name__ == "__main__":
    main()
