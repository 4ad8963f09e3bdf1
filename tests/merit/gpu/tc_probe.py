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

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from probelib import TC_TOL, measure, tc_cases  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="gemm,vgg")
    ap.add_argument("--prec", default="tf32,fp16,bf16")
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    from merit.gpu import _compile_all
    from merit.gpu.tiling import rank

    rows = []
    for key, prec, prob, spec, inputs, ref, peer_ms in tc_cases(args.only, args.prec, 5):
        t0 = time.time()
        tiles = rank(spec, count=args.count)
        _compile_all(spec, tiles)
        comp = time.time() - t0
        for t in tiles:
            row = measure(prob, spec, t, inputs, ref, TC_TOL[prec], peer_ms, layer=key, prec=prec)
            rows.append(row)
            print(json.dumps(row), flush=True)
        print(f"# {key} {prec}: compile {comp:.1f} s", flush=True)
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
