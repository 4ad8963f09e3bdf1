"""Device probe of the half-precision operand route (not a test): for a few layers and FP16 /
BF16, every tile the autotuner would time when given float16 / bfloat16 arrays (the ``half``
tiles, operands read as 2-byte elements with ``cp.async``, and the float32-reading tiles on
float32 copies), each checked against float64 on the rounded operands (only the fp32 summation
differs: a wrong index cannot hide in rounding noise) and timed beside the library in the same
precision on the same half tensors.

``PYTHONPATH=sw python tests/merit/gpu/half_probe.py [--only gemm,vgg,k9,k9s2,odd,oddconv]
[--prec fp16,bf16] [--half-only] [--out DIR]`` (``--half-only``: the ``half`` tiles alone, among
them the wgmma tiles with MN-major operands, ``_mn``): one line per tile, a table of the best of
each form last, a JSON file under ``--out``.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from probelib import LAYERS, measure  # noqa: E402

#: relative error against float64 on the rounded operands: fp32 sums only
TOL = 1e-5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="odd,oddconv,gemm,vgg,k9s2,k9")
    ap.add_argument("--prec", default="fp16,bf16")
    ap.add_argument("--half-only", action="store_true")
    ap.add_argument("--extra", default="[]",
                    help="JSON list of half wgmma tile fields timed besides (MN-major unless "
                         "they say otherwise), e.g. "
                         "'[{\"regs\": [128, 128], \"warps\": [8, 1], \"frags\": [1, 16], "
                         "\"chunk\": 64, \"stages\": 3}]'")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import cupy as cp
    import torch

    import merit.gpu as mg
    from merit.gpu import TUNED, _compile_all
    from merit.gpu.mma import roles
    from merit.gpu.runtime import time_launch, to_device, widen
    from merit.gpu.spec import OPERAND_DTYPES, spec_of
    from merit.gpu.tiling import H100, WG_TUNED, check_tile, rank

    rng = np.random.default_rng(11)
    rows, best = [], []
    for key in args.only.split(","):
        make, conv = LAYERS[key]
        prob = make()
        arrays = [torch.as_tensor(a, device="cuda") for a in prob.random_inputs(rng, np.float32)]
        names = [t.name for t in prob.tensors]
        for prec in args.prec.split(","):
            od = OPERAND_DTYPES[prec]
            dt = torch.float16 if prec == "fp16" else torch.bfloat16
            half = [a.to(dt) for a in arrays]
            wide = [h.double() for h in half]
            if conv is None:
                ref = wide[0] @ wide[1]

                def peer(h=half):
                    return h[0] @ h[1]
            else:
                ref = torch.nn.functional.conv2d(wide[0], wide[1], **conv)

                def peer(h=half, c=conv):
                    return torch.nn.functional.conv2d(h[0], h[1], **c)
            ref = cp.asarray(ref)
            peer_ms = time_launch(peer)
            spec = spec_of(prob, "float32", prec, operands=od)
            r = roles(spec)
            dev = [to_device(h, n) for h, n in zip(half, names, strict=True)]
            by16 = dict(zip(names, dev, strict=True))
            by32 = {n: widen(a, od) for n, a in by16.items()}
            in32 = [by32[op.tensor] for op in prob.operands]
            in16 = [by16[op.tensor] if k in (r.a, r.b) else in32[k]
                    for k, op in enumerate(prob.operands)]
            tiles = rank(spec, count=TUNED + WG_TUNED, device=H100)
            if args.half_only:
                tiles = [t for t in tiles if t.half]
            for fields in json.loads(args.extra):
                try:
                    tiles.append(check_tile(spec, {"mma": prec, "ldsm": True, "wgmma": True,
                                                   "half": True, "mn": True, **fields}))
                except ValueError as exc:
                    print(json.dumps({"layer": key, "extra": fields, "error": str(exc)}))
            _compile_all(spec, tiles)
            for t in tiles:
                row = measure(prob, spec, t, in16 if t.half else in32, ref, TOL, peer_ms,
                              layer=key, prec=prec, half=t.half)
                rows.append(row)
                print(json.dumps(row), flush=True)
            # end to end: run() with the torch half tensors (DLPack, bfloat16 as bits)
            try:
                got = mg.run(prob, *half, precision=prec, cache=_NoCache())
                err = float(cp.linalg.norm(got.astype(cp.float64) - ref) / cp.linalg.norm(ref))
                e2e = {"layer": key, "prec": prec, "run_rel_err": err, "run_ok": err < TOL}
            except Exception as exc:   # noqa: BLE001 - reported
                e2e = {"layer": key, "prec": prec, "run_error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps(e2e), flush=True)
            rows.append(e2e)
            done = [x for x in rows if x.get("layer") == key and x.get("prec") == prec
                    and "ms" in x]
            for form in (False, True):
                got = [x for x in done if x["half"] == form and x["ok"]]
                if got:
                    b = min(got, key=lambda x: x["ms"])
                    best.append((key, prec, "half" if form else "fp32 arrays", b))
            cp.get_default_memory_pool().free_all_blocks()
            torch.cuda.empty_cache()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "half_probe.json").write_text(json.dumps(rows, indent=1))
    bad = [x for x in rows if ("ok" in x and not x["ok"]) or "error" in x or "run_error" in x
           or x.get("run_ok") is False]
    for x in bad:
        print("BAD", json.dumps(x)[:400])
    print(f"{len([x for x in rows if 'ms' in x])} tiles timed, {len(bad)} bad")
    for key, prec, form, b in best:
        print(f"{key:8} {prec:5} {form:12} {b['tile']:44} {b['ms']:.3f} ms  peer "
              f"{b['peer_ms']:.3f}  {b['vs_peer']:.2f}x  err {b['rel_err']:.1e} "
              f"{b.get('ptxas', '')[-50:]}")


class _NoCache:
    def get(self, device, spec):
        return None

    def put(self, device, spec, tile):
        pass


if __name__ == "__main__":
    main()
