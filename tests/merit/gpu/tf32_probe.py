"""Device probe of the TF32 tiles (not a test): for a few layers, every tile the autotuner would
time on float32 arrays (among them the warp-specialized wgmma tiles whose producer copies one
operand by bulk tensor copies and gathers the other, ``_ws<S>_tma``), each checked against
float64 and timed beside cuBLAS / cuDNN in TF32 on the same tensors.

``PYTHONPATH=sw python tests/merit/gpu/tf32_probe.py [--only gemm,vgg,odd,oddconv] [--producer]
[--match _ws,_ra] [--areg-scalar] [--out DIR]``:
one line per tile, the best of each form last, a JSON file under ``--out``.  ``--match``: only
the tiles whose label contains one of these strings.  Forms: ``ra`` (wgmma's A from registers,
``Tile.areg``), ``ws`` (other producer tiles), ``wg``, ``other``.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from probelib import TC_TOL, measure, tc_cases  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="gemm,vgg,odd,oddconv")
    ap.add_argument("--out", default=".")
    ap.add_argument("--match", default="")
    ap.add_argument("--areg-scalar", action="store_true",
                    help="persistent _ra tiles store one output at a time "
                         "(ldsm.AREG_VECTOR_ROWS off)")
    ap.add_argument("--producer", action="store_true",
                    help="time the warp-specialized TMA tiles too (tiling.TF32_PRODUCER_TUNED)")
    args = ap.parse_args()
    from merit.gpu import TUNED, _compile_all, tiling
    from merit.gpu.tiling import H100, WG_TUNED, rank

    tiling.TF32_PRODUCER_TUNED = args.producer or tiling.TF32_PRODUCER_TUNED
    if args.areg_scalar:
        from merit.gpu import ldsm

        ldsm.AREG_VECTOR_ROWS = False

    rows, best = [], []
    for key, prec, prob, spec, inputs, ref, peer_ms in tc_cases(args.only, "tf32", 5):
        tiles = rank(spec, count=TUNED + WG_TUNED, device=H100)
        if args.match:
            tiles = [t for t in tiles if any(m in t.label() for m in args.match.split(","))]
        _compile_all(spec, tiles)
        for t in tiles:
            form = ("ra" if t.areg else "ws" if t.producer else "wg" if t.wgmma else "other")
            row = measure(prob, spec, t, inputs, ref, TC_TOL[prec], peer_ms, layer=key,
                          prec=prec, form=form)
            rows.append(row)
            print(json.dumps(row), flush=True)
        for form in ("ra", "ws", "wg", "other"):
            got = [x for x in rows if x["layer"] == key and x.get("form") == form
                   and x.get("ok")]
            if got:
                best.append((key, form, min(got, key=lambda x: x["ms"])))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "tf32_probe.json").write_text(json.dumps(rows, indent=1))
    bad = [x for x in rows if not x.get("ok")]
    for x in bad:
        print("BAD", json.dumps(x)[:400])
    print(f"{len([x for x in rows if 'ms' in x])} tiles timed, {len(bad)} bad")
    for key, form, b in best:
        peer = min(b["peer_ms"].values())
        print(f"{key:8} {form:6} {b['tile']:44} {b['ms']:.3f} ms  peer {peer:.3f}  "
              f"{b['vs_peer']:.2f}x  err {b['rel_err']:.1e} {b.get('ptxas', '')[-50:]}")


if __name__ == "__main__":
    main()
