"""Device probe (not a test): the streaming form (``Tile.gemv``) on one-row and few-row GEMMs.

Checks every form tile on a few shapes against a float64 reference (outputs poisoned with NaN),
then on the one-row GEMM 1 x 4065 x 5543 times a sweep of form tiles (threads, rows per step,
blocks per SM) once, and the fastest few with the tiled kernel's best tile and cuBLAS in turns,
``--rounds`` times each: per tile the median and range of its rounds.

``PYTHONPATH=sw python tests/merit/gpu/gemv_probe.py [--rounds 9] [--out DIR]``"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sw"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--out", default=".")
    ap.add_argument("--shape", default="1,4065,5543")
    ap.add_argument("--base", default="t1x32_r1x1_c32_u1_sg_db_k16_l")
    args = ap.parse_args()
    import cupy as cp
    import torch

    from merit import workloads as W
    from merit.gpu import TUNED, _compile_all, gemv
    from merit.gpu.runtime import launcher, time_launch
    from merit.gpu.spec import spec_of
    from merit.gpu.tiling import H100, rank

    rng = np.random.default_rng(17)
    m, n, k = map(int, args.shape.split(","))
    prob = W.gemm(m, n, k)
    spec = spec_of(prob, "float32")
    r = gemv.roles(spec)
    sweep = {}
    for c, g, u, per_sm in ((128, 8, 8, 1792), (64, 8, 8, 1792), (32, 8, 8, 1792),
                            (64, 4, 8, 1792), (128, 8, 8, 896), (32, 16, 8, 1792),
                            (32, 32, 8, 1792), (64, 16, 8, 1792), (128, 8, 16, 1792),
                            (64, 8, 8, 3584), (128, 4, 8, 1792)):
        nbx = -(-gemv.slots(r) // c)
        tile = gemv.tile_for(spec, c * g, u, max(1, round(per_sm * H100.sms / (c * g) / nbx)),
                             g)
        sweep[f"C{c}_G{g}_U{u}_T{per_sm}"] = tile
    for c, g, u, cl in ((32, 32, 8, 4), (32, 16, 16, 8), (32, 16, 8, 8)):
        tile = gemv.tile_for(spec, c * g, u, cl, g, cluster=True)
        sweep[f"C{c}_G{g}_U{u}_S{cl}"] = tile
    for t in gemv.candidates(spec, H100):
        sweep.setdefault("cand " + t.label(), t)
    _compile_all(spec, list(sweep.values()))
    arrays = [cp.asarray(x) for x in prob.random_inputs(rng, np.float32)]
    ta = [torch.as_tensor(x, device="cuda") for x in arrays]
    ref = cp.asnumpy(arrays[0]).astype(np.float64) @ cp.asnumpy(arrays[1]).astype(np.float64)
    out = (cp.zeros(spec.pshape, dtype=cp.float32),)
    once = {}
    for key, tile in sweep.items():
        out[0].fill(cp.nan)
        go = launcher(spec, tile, arrays, out)
        go()
        got = cp.asnumpy(out[0]).astype(np.float64)
        err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        assert not np.isnan(got).any() and err < 1e-5, (tile.label(), err)
        once[key] = time_launch(go)
    for key in sorted(once, key=once.get):
        tile = sweep[key]
        print(f"sweep {key:40} {tile.label():36} blocks "
              f"{gemv.geometry(spec, tile)[0] * tile.split:5}  {once[key]:.4f} ms", flush=True)
    best = sorted(once, key=once.get)[:args.top]
    listed = rank(spec, count=TUNED)
    base = next((t for t in listed if t.label() == args.base), listed[0])
    gos = {"tiled " + base.label(): launcher(spec, base, arrays, out)}
    for key in best:
        gos[key] = launcher(spec, sweep[key], arrays, out)
    gos["cuBLAS (torch)"] = lambda: ta[0] @ ta[1]
    for go in gos.values():
        go()
    times = {key: [] for key in gos}
    for _ in range(args.rounds):
        for key, go in gos.items():
            times[key].append(time_launch(go))
    for key, go in gos.items():   # the launchers' workspaces left zeroed by the timed launches
        if key.startswith("cuBLAS"):
            continue
        out[0].fill(cp.nan)
        go()
        got = cp.asnumpy(out[0]).astype(np.float64)
        err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        assert err < 1e-5, (key, err)
    rows = {}
    floor = 4 * (m * k + k * n + m * n) / 3.0e12 * 1e3
    for key, ts in times.items():
        rows[key] = dict(median=float(np.median(ts)), lo=min(ts), hi=max(ts))
        print(f"{key:44} median {np.median(ts):.4f} ms  range {min(ts):.4f}-{max(ts):.4f}"
              f"  {4 * k * n / np.median(ts) / 1e9:.2f} TB/s of the matrix", flush=True)
    print(f"floor at 3.0 TB/s {floor:.4f} ms")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "gemv_probe.json").write_text(json.dumps(
        dict(sweep=once, rounds=rows), indent=1))


if __name__ == "__main__":
    main()
