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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from probelib import TC_TOL, measure, tc_cases  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="odd,oddconv,gemm,vgg")
    ap.add_argument("--prec", default="fp16,bf16,tf32")
    ap.add_argument("--base", type=int, default=2)
    ap.add_argument("--match", default="", help="only wgmma tiles whose label holds one of "
                                                "these comma-separated pieces")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    from merit.gpu import ldsm
    from merit.gpu.tiling import H100, rank

    rows = []
    pieces = [m for m in args.match.split(",") if m]
    big = H100.smem_block - 1024
    for key, prec, prob, spec, inputs, ref, peer_ms in tc_cases(args.only, args.prec, 7):
        wg = [t for t in ldsm.candidates(spec, prec, big, wgmma=True)
              if ldsm.estimate(spec, t, H100, big) is not None
              and (not pieces or any(m in t.label() for m in pieces))]
        base = [t for t in rank(spec, count=max(args.base, 1)) if not t.wgmma][:args.base]
        for t in base + wg:
            row = measure(prob, spec, t, inputs, ref, TC_TOL[prec], peer_ms, layer=key, prec=prec)
            rows.append(row)
            print(json.dumps(row), flush=True)
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
