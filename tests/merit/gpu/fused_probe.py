"""Device probe (not a test): the padded-row copies two to a launch (``runtime.pad_rows_all``)
against one launch a copy (``runtime.pad_rows``, as before), on the rows of seed 112826 whose
tiles pad: the 1x1 conv N4 C181 M229 61x77 (the product form's lean / vread tile, plain and
padded), the GEMM 1735 x 1849 x 1873 and AlexNet CONV1 (their page tiles).  Then the 1x1 conv's
autotuner from an empty tile cache (its fourth round times the fastest product tile's padded
rows) and its pick against the peers.

Each tile launched on NaN-poisoned outputs and checked against float64; in turns with the peers:
the launch (copies two to a launch), the same kernel after one launch a copy, the copies alone
both ways, the kernel alone.

``PYTHONPATH=sw python tests/merit/gpu/fused_probe.py [--rows conv1x1,gemm,alexnet]
[--rounds 7]``"""

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from padwords_probe import TILES  # noqa: E402
from probelib import bench_table, run_checked, setup, time_and_report  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="conv1x1,gemm,alexnet")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    import cupy as cp
    import numpy as np

    import merit.gpu as gpu
    from merit.gpu import _compile_all, codegen, runtime, tiling
    from merit.gpu.flat import launch_parts

    table = bench_table(112826)
    out, gos, peers_all = {}, {}, {}
    for row in args.rows.split(","):
        key, fields, plain_too = TILES[row]
        prob, spec, inputs, res, peers, refs = setup(*table[key], np.random.default_rng(13))
        for name, fn in peers.items():
            peers_all[f"{row} {name}"] = fn
        t = tiling.check_tile(spec, fields)
        tiles = [t] + ([tiling.check_tile(spec, dict(fields, padrows=False))] if plain_too
                       else [])
        _compile_all(spec, tiles)
        if plain_too:
            gos[f"{row} plain"], err = run_checked(prob, spec, tiles[1], inputs, res, refs)
            out[f"{row} plain"] = dict(tile=tiles[1].label(), error=err)
        gos[f"{row} padded"], err = run_checked(prob, spec, t, inputs, res, refs)
        out[f"{row} padded"] = dict(tile=t.label(), error=err)
        s2, i2, o2 = launch_parts(spec, t, inputs, res) if t.flat else (spec, inputs, res)
        ins, fill = runtime._pad_inputs(s2, i2)
        _, moves = codegen.padded_layout(codegen.flat_spec(s2, t))
        jobs = [(i2[k], ins[k], *m) for k, m in sorted(moves.items())]
        kern, nb, nt, smem = runtime.compiled(s2, t)
        args_ = tuple(ins) + tuple(o2)
        zero = [(o.data.ptr, o.nbytes) for o in o2] if t.split > 1 else []

        def kernel(kern=kern, nb=nb, nt=nt, smem=smem, args_=args_, zero=zero):
            for ptr, n in zero:
                cp.cuda.runtime.memsetAsync(ptr, 0, n, cp.cuda.get_current_stream().ptr)
            kern((nb,), (nt,), args_, shared_mem=smem)

        def separate(jobs=jobs):
            for j in jobs:
                runtime.pad_rows(*j)

        def sep_launch(separate=separate, kernel=kernel):
            separate()
            kernel()

        fill()
        want = [cp.asnumpy(b) for b in ins]
        for b in ins:
            b.fill(7)
        separate()
        out[f"{row} padded"]["copies_same"] = all(
            np.array_equal(w, cp.asnumpy(b)) for w, b in zip(want, ins, strict=True))
        gos[f"{row} padded, one launch a copy"] = sep_launch
        gos[f"{row} copies two to a launch"] = fill
        gos[f"{row} copies one launch each"] = separate
        gos[f"{row} kernel alone"] = kernel
        print(row, {k: v for k, v in out.items() if k.startswith(row)}, flush=True)
        if row == "conv1x1":
            with tempfile.TemporaryDirectory() as d:
                n0 = len(gpu.finals)
                pick = gpu.tune(prob, *inputs,
                                cache=runtime.TileCache(Path(d) / "tiles.json")).tile
            gos[f"{row} autotuner's pick"], err = run_checked(prob, spec, pick, inputs, res,
                                                              refs)
            out[f"{row} pick"] = dict(tile=pick.label(), error=err, finals=gpu.finals[n0:])
            print(row, "pick", out[f"{row} pick"], flush=True)
    time_and_report("fused_probe", out, gos, peers_all, args.rounds)


if __name__ == "__main__":
    main()
