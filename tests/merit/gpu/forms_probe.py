"""Device probe (not a test): the second round's ``lean`` and ptxas ``-O1`` forms
(``tiling.LEAN_VARIANTS``, ``tiling.PTXAS_VARIANTS``) on tiles of strategies that are no plain
sum, which that round skips (``tiling.timed_variants`` takes split-K sums only): the bench
page's motion estimation (SAD), bilateral filter and the integral image's two in-block scans
(``DotResidual``).  Each form checked against float64 on NaN-poisoned outputs and bit for bit
against its page tile, then timed in turns with the page tiles and the rows' peers.

``PYTHONPATH=sw python tests/merit/gpu/forms_probe.py [--rounds 5] [--dry]``"""

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from wordcopy_probe import parse  # noqa: E402

#: the page's picks (seed 112826, 2026-11-29 00:24)
ROWS = {"motion": "t2x8x1x11_r1x1x11x3_c8_u2_ss", "bilateral": "t32x2_r1x16_c9_u1_gss_pr_rg1"}
SCANS = {2: "t2x8x16_r1x16x1_c16_u1_ssg_s040", 5: "t4x1x64_r1x16x1_c16_u1_ssg"}


def tile_of(spec, label):
    from merit.gpu import tiling
    from merit.gpu.tiling import _replace

    m = re.match(r"(.*?)(?:_rg(\d))?$", label)
    t = tiling.complete(spec, parse(m[1]))
    return _replace(t, ragged=int(m[2])) if m[2] else t


def forms(spec, t):
    from merit.gpu import tiling

    return [v for _, v in tiling._lean_variants(spec, [(1.0, t)], tiling.H100,
                                                tiling.LEAN_VARIANTS + tiling._ptxas_forms())]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=112826)
    ap.add_argument("--dry", action="store_true")
    args = ap.parse_args()
    from probelib import bench_table

    from bench.gpu import integral_passes
    from merit.gpu import codegen
    from merit.gpu.spec import spec_of

    table = bench_table(args.seed)
    n, b = 4096, 16
    probs = integral_passes(n, n, b)[0]
    cases = {}
    for key, label in ROWS.items():
        kind, params = table[key]
        cases[key] = (kind, params, label)
    scan_specs = {k: spec_of(probs[k], "float32", "fp32") for k in SCANS}
    if args.dry:   # the scans' forms and their sources, on the CPU (the rows need CuPy)
        for k, spec in scan_specs.items():
            for t in [tile_of(spec, SCANS[k])] + forms(spec, tile_of(spec, SCANS[k])):
                codegen.source(spec, t)
                print(probs[k].name, t.label())
        return
    import cupy as cp
    from probelib import run_checked, setup, time_and_report

    from merit.gpu import _compile_all
    from merit.gpu.runtime import launcher

    rng = np.random.default_rng(5)
    launches, peers, out = {}, {}, []
    for key, (kind, params, label) in cases.items():
        prob, spec, inputs, res, row_peers, refs = setup(kind, params, rng)
        page = tile_of(spec, label)
        vs = forms(spec, page)
        _compile_all(spec, [page] + vs)
        go, err = run_checked(prob, spec, page, inputs, res, refs)
        first = cp.asnumpy(res[0]).copy()
        launches[f"{key} page {page.label()}"] = go
        out.append({"row": key, "tile": page.label(), "err": err})
        for v in vs:
            go, err = run_checked(prob, spec, v, inputs, res, refs)
            same = bool(np.array_equal(cp.asnumpy(res[0]), first))
            print(key, v.label(), f"err {err:.2e}", "bit-equal", same, flush=True)
            out.append({"row": key, "tile": v.label(), "err": err, "bit_equal": same})
            assert err < 1e-5
            launches[f"{key} {v.label()}"] = go
        peers.update({f"{key}: {p}": f for p, f in row_peers.items()})
    # the integral image's scans, on their page inputs (the float32 passes before them)
    img = cp.asarray(np.random.default_rng(11).standard_normal((n, n), dtype=np.float32))
    one = cp.ones((1,), dtype=cp.float32)
    nb = n // b
    x = img.astype(cp.float64).reshape(n, nb, b)
    c1 = cp.cumsum(x.sum(-1), 1) - x.sum(-1)
    r1 = cp.cumsum(x, -1) + c1[:, :, None]
    rv = r1.reshape(nb, b, n)
    c2 = cp.cumsum(rv.sum(1), 0) - rv.sum(1)
    r2 = cp.cumsum(rv, 1) + c2[:, None, :]
    ins = {2: ([img.reshape(n, nb, b), one, c1.astype(cp.float32)], r1),
           5: ([r1.astype(cp.float32).reshape(nb, b, n), one, c2.astype(cp.float32)], r2)}
    for k, label in SCANS.items():
        spec = scan_specs[k]
        page = tile_of(spec, label)
        vs = forms(spec, page)
        _compile_all(spec, [page] + vs)
        first = None
        for t in [page] + vs:
            o = cp.full(spec.pshape, cp.nan, dtype=cp.float32)
            go = launcher(spec, t, ins[k][0], (o,))
            go()
            cp.cuda.Device().synchronize()
            ref = ins[k][1]
            err = float(cp.linalg.norm(o.astype(cp.float64) - ref) / cp.linalg.norm(ref))
            got = cp.asnumpy(o)
            first = got if first is None else first
            same = bool(np.array_equal(got, first))
            print(probs[k].name, t.label(), f"err {err:.2e}", "bit-equal", same, flush=True)
            out.append({"row": probs[k].name, "tile": t.label(), "err": err, "bit_equal": same})
            assert err < 1e-5
            launches[f"{probs[k].name} {'page ' if t is page else ''}{t.label()}"] = go
    time_and_report("forms_probe", out, launches, peers, args.rounds)


if __name__ == "__main__":
    main()
