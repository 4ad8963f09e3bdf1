"""Device probe (not a test): the integral image's six blocked-scan passes (``bench.gpu``'s
``integral_passes``, scan block 16), each on its page tile and on other tiles: the row totals
with their input staged through shared memory (the page's tiles read it through the read-only
cache, 16 words a thread, 64 bytes apart), the row scans with register tiles along the scanned
axis (a window slid across a thread's outputs).  Each tile checked against the pass computed in
float64 on NaN-poisoned outputs and bit for bit against the page tile, then the fastest timed
in turns with the page tiles, the six-pass chains and ``cupy.cumsum`` x2.  ``--dry``: the
tiles' sources only (no GPU).

``PYTHONPATH=sw python tests/merit/gpu/scan_probe.py [--rounds 5] [--passes 0,2,3] [--tune]
[--dry]``"""

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from wordcopy_probe import parse  # noqa: E402

#: the page's picks (seed 112826, 2026-11-28 21:16), scan block 16, pass by pass
PAGE = ("t1x256_r2x1_c16_u1_g", "t8x32_r4x4_c32_u1_s_db_l_v_o1_x1",
        "t2x8x16_r1x16x1_c16_u1_ssg_s040", "t2x32_r1x1_c16_u1_g",
        "t16x16_r8x2_c32_u1_s_db_l_v", "t4x1x64_r1x16x1_c16_u1_ssg")


def variants(k, spec):
    """Tiles other than the page's for pass ``k`` (0: row totals, 2: row scan)."""
    from merit.gpu import TUNED, tiling
    from merit.gpu.tile import Tile

    out = []
    if k in (0, 3):   # totals: the ranked tiles, their input staged
        for t in tiling.rank(spec, count=TUNED):
            s = tiling.complete(spec, Tile(t.threads, t.regs, t.chunk, shared=(True,)))
            out += [s, dataclasses.replace(s, vread=True) if tiling.vread_ok(spec, s) else None]
    if k == 2:   # row scan: register tiles along the scanned axis
        for th in ((16, 16, 1), (8, 32, 1), (4, 64, 1), (32, 8, 1), (2, 128, 1), (1, 256, 1),
                   (8, 16, 1), (4, 32, 1)):
            for r0, r1 in ((1, 1), (2, 1), (1, 2)):
                t = tiling.complete(spec, Tile(th, (r0, r1, 16), 16))
                out += [t]
                if tiling.vread_ok(spec, t):
                    out += [tiling.complete(spec, Tile(th, (r0, r1, 16), 16, vread=True))]
        for th in ((8, 16, 2), (16, 8, 2), (4, 32, 2)):
            out += [tiling.complete(spec, Tile(th, (1, 1, 8), 16))]
    seen, keep = set(), []
    for t in out:
        if t is not None and t.label() not in seen:
            seen.add(t.label())
            keep.append(t)
    return keep


def refs64(img, n, b):
    """The six passes' outputs in float64 (cupy)."""
    import cupy as cp

    nb = n // b
    x = img.astype(cp.float64).reshape(n, nb, b)
    t1 = x.sum(-1)
    c1 = cp.cumsum(t1, 1) - t1
    r1 = cp.cumsum(x, -1) + c1[:, :, None]
    rv = r1.reshape(nb, b, n)
    t2 = rv.sum(1)
    c2 = cp.cumsum(t2, 0) - t2
    r2 = cp.cumsum(rv, 1) + c2[:, None, :]
    return [t1, c1, r1, t2, c2, r2]


def levels(args):
    """Chains of the integral image in one or two levels of blocked scans, each tuned from one
    empty tile cache (a specialization two chains share is tuned once), checked against float64
    on NaN-poisoned outputs, timed in turns with ``cupy.cumsum`` x2."""
    import tempfile
    import time

    import cupy as cp
    from probelib import time_and_report

    import merit.gpu as gpu
    from bench.gpu import integral_chain
    from merit.gpu.runtime import TileCache

    n = 4096
    img = cp.asarray(np.random.default_rng(11).standard_normal((n, n), dtype=np.float32))
    ref = cp.cumsum(cp.cumsum(img.astype(cp.float64), 0), 1)
    rows, launches = [], {}
    with tempfile.TemporaryDirectory() as d:
        cache = TileCache(Path(d) / "t.json")
        for cfg in args.levels.split(","):
            b, b2 = (int(cfg), None) if "x" not in cfg else map(int, cfg.split("x"))
            t0, n0 = time.time(), len(gpu.finals)
            go, res, gos = integral_chain(n, n, img, cache, b, b2)
            res.fill(cp.nan)
            go()
            e = float(cp.linalg.norm(res.astype(cp.float64) - ref) / cp.linalg.norm(ref))
            picks = [f["pick"] for f in gpu.finals[n0:]]
            print(f"{cfg}: {len(gos)} launches, tuned in {time.time() - t0:.1f} s, err {e:.2e}, "
                  f"picks {picks}", flush=True)
            assert e < 1e-5, (cfg, e)
            rows.append({"levels": cfg, "launches": len(gos), "err": e, "picks": picks})
            launches[f"chain {cfg} ({len(gos)} launches)"] = go
            for k, g in enumerate(gos):
                launches[f"  {cfg} pass {k}"] = g
    peers = {"cupy.cumsum x2": lambda: cp.cumsum(cp.cumsum(img, 0), 1)}
    time_and_report("scan_levels", rows, launches, peers, args.rounds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", type=int, default=3, help="fastest new tiles a pass timed in turns")
    ap.add_argument("--passes", type=lambda v: tuple(map(int, v.split(","))), default=(0, 2, 3),
                    help="the passes whose other tiles are tried (0 row totals, 2 row scan, "
                         "3 column totals)")
    ap.add_argument("--levels", default="",
                    help="instead: chains of integral_passes(block, block2) tuned from one empty "
                         "tile cache, e.g. 16,8x16,8x32 (B or BxB2), timed in turns")
    ap.add_argument("--dry", action="store_true")
    ap.add_argument("--tune", action="store_true", help="also the six passes tuned from an empty "
                    "tile cache (the autotuner's picks), that chain timed in turns too")
    args = ap.parse_args()
    from bench.gpu import integral_passes
    from merit.gpu import codegen, tiling
    from merit.gpu.spec import spec_of

    if args.levels:
        return levels(args)
    n, b = 4096, 16
    probs, (nb, _) = integral_passes(n, n, b)
    specs = [spec_of(p, "float32", "fp32") for p in probs]
    page = [tiling.complete(s, parse(lab)) for s, lab in zip(specs, PAGE, strict=True)]
    cands = {k: variants(k, specs[k]) for k in args.passes}
    for k, ts in cands.items():
        print(probs[k].name, len(ts), "tiles:", " ".join(t.label() for t in ts), flush=True)
    if args.dry:
        for k, ts in cands.items():
            for t in [page[k]] + ts:
                codegen.source(specs[k], t)
                print(t.label(), t.pads, [tiling.conflicts(specs[k], t, i)
                                          for i in range(len(specs[k].inputs)) if t.shared[i]])
        return

    import cupy as cp
    from probelib import time_and_report

    from merit.gpu import _compile_all
    from merit.gpu.runtime import launcher, time_launch

    img = cp.asarray(np.random.default_rng(11).standard_normal((n, n), dtype=np.float32))
    one = cp.ones((1,), dtype=cp.float32)
    ref = refs64(img, n, b)
    # the passes' inputs: the float32 results of the page tiles before them
    outs = [cp.empty(s.pshape, dtype=cp.float32) for s in specs]
    ins = [lambda: [img.reshape(n, nb, b)], lambda: [outs[0]],
           lambda: [img.reshape(n, nb, b), one, outs[1]],
           lambda: [outs[2].reshape(nb, b, n)], lambda: [outs[3]],
           lambda: [outs[2].reshape(nb, b, n), one, outs[4]]]
    chain = []
    for k in range(6):
        go = launcher(specs[k], page[k], ins[k](), (outs[k],))
        outs[k].fill(cp.nan)
        go()
        chain.append(go)
    cp.cuda.Device().synchronize()

    def err(got, r):
        return float(cp.linalg.norm(got.astype(cp.float64) - r) / cp.linalg.norm(r))

    rows = [{"pass": probs[k].name, "page": page[k].label(), "err": err(outs[k], ref[k])}
            for k in range(6)]
    print("page tiles:", [(r["pass"], f"{r['err']:.2e}") for r in rows], flush=True)
    launches = {}
    for k, ts in cands.items():
        _compile_all(specs[k], ts)
        once = []
        for t in ts:
            o = cp.full(specs[k].pshape, cp.nan, dtype=cp.float32)
            try:
                go = launcher(specs[k], t, ins[k](), (o,))
                go()
                cp.cuda.Device().synchronize()
            except Exception as exc:  # noqa: BLE001 - reported
                print("  failed", t.label(), type(exc).__name__, str(exc)[:200], flush=True)
                continue
            e, same = err(o, ref[k]), bool(cp.array_equal(o, outs[k]))
            ms = time_launch(go, min_ms=5.0, batches=3)
            once.append((ms, t, go))
            rows.append({"pass": probs[k].name, "tile": t.label(), "err": e, "bit_equal": same,
                         "once_ms": ms, "pads": t.pads})
            print(f"  {probs[k].name} {t.label()} {ms:.4f} ms err {e:.2e} bit-equal {same}",
                  f"pads {t.pads}", flush=True)
            assert e < 1e-5, (t.label(), e)
        once.sort(key=lambda x: x[0])
        launches[f"{k} page {page[k].label()}"] = chain[k]
        for _ms, t, go in once[:args.keep]:
            launches[f"{k} {t.label()}"] = go
        if once:
            rows.append({"pass": probs[k].name, "best_once": once[0][1].label()})
            # the chain with this pass's fastest new tile
            new = list(chain)
            new[k] = once[0][2]
            launches[f"chain with {k} {once[0][1].label()}"] = (
                lambda gos=new: [g() for g in gos])
    launches["chain page"] = lambda: [g() for g in chain]
    # every pass's fastest new tile at once
    allnew = list(chain)
    for k in cands:
        cand = [(v, name) for name, v in launches.items() if name.startswith(f"{k} t")]
        if cand:
            allnew[k] = cand[0][0]
    launches["chain all new"] = lambda: [g() for g in allnew]
    if args.tune:
        import tempfile

        import merit.gpu as gpu
        from bench.gpu import integral_chain
        from merit.gpu.runtime import TileCache

        n0 = len(gpu.finals)
        with tempfile.TemporaryDirectory() as d:
            go_t, res_t, _ = integral_chain(n, n, img, TileCache(Path(d) / "t.json"), b)
        picks = [f["pick"] for f in gpu.finals[n0:]]
        res_t.fill(cp.nan)
        go_t()
        e = err(res_t, ref[5].reshape(n, n))
        print("tuned picks:", picks, f"err {e:.2e}", flush=True)
        rows.append({"tuned_picks": picks, "err": e})
        assert e < 1e-5
        launches["chain tuned"] = go_t
    peers = {"cupy.cumsum x2": lambda: cp.cumsum(cp.cumsum(img, 0), 1)}
    time_and_report("scan_probe", rows, launches, peers, args.rounds)


if __name__ == "__main__":
    main()
