"""Device probe (not a test): the padded-row copies of a launch, one launch a padded input
(``runtime.pad_rows``) against two to a launch (``runtime.pad_rows_all``), and the padded form
with one input padded, on the rows of seed 112826 whose page tiles pad: the 1x1 conv N4 C181
M229 61x77 (the product form's tile, its lean / vread form padded) and the GEMM 1735 x 1849 x
1873 (its page tile).

Per row: each padded input's copy alone, the copies a launch each, the copies as the launch
makes them (two to a launch, a block's pieces from one input), checked equal; the tile padded in
both inputs and in one (``pad_probe.keep_only``), launched whole, checked against float64; all in
turns with the peers.

``PYTHONPATH=sw python tests/merit/gpu/copies_probe.py [--rows conv1x1,gemm] [--rounds 7]``"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from padwords_probe import TILES  # noqa: E402
from probelib import bench_table, run_checked, setup, time_and_report  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="conv1x1,gemm")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    import cupy as cp
    import numpy as np
    from pad_probe import keep_only

    from merit.gpu import _compile_all, codegen, runtime, tiling
    from merit.gpu.flat import launch_parts

    table = bench_table(112826)
    out, gos, peers_all = {}, {}, {}
    full = codegen._padded_layout
    for row in args.rows.split(","):
        key, fields, _ = TILES[row]
        prob, spec, inputs, res, peers, refs = setup(*table[key], np.random.default_rng(11))
        for name, fn in peers.items():
            peers_all[f"{row} {name}"] = fn
        for keep in ((0, 1), (1,), (0,)):
            codegen._padded_layout = full
            if keep != (0, 1):
                codegen._padded_layout = keep_only(set(keep))
            codegen._PADDED.clear()
            runtime.forget()
            t = tiling.check_tile(spec, fields)
            _compile_all(spec, [t])
            name = f"{row} padded {keep}"
            gos[name], err = run_checked(prob, spec, t, inputs, res, refs)
            out[name] = dict(tile=t.label(), error=err)
            print(name, out[name], flush=True)
            if keep != (0, 1):
                continue
            s2, i2, _ = (launch_parts(spec, t, inputs, res) if t.flat else (spec, inputs, res))
            ins, fill = runtime._pad_inputs(s2, i2)
            _, moves = codegen.padded_layout(s2)
            jobs = []
            for k, (rows, C, Cp) in sorted(moves.items()):
                def one(src=i2[k], dst=ins[k], d=(rows, C, Cp)):
                    runtime.pad_rows(src, dst, *d)
                gos[f"{row} copy of input {k} ({rows} x {C} -> {Cp})"] = one
                jobs.append((i2[k], ins[k], rows, C, Cp))

            def each(jobs=tuple(jobs)):     # one launch a copy
                for job in jobs:
                    runtime.pad_rows(*job)
            gos[f"{row} copies, a launch each"] = each
            each()
            want = [cp.asnumpy(j[1]) for j in jobs]
            for j in jobs:
                j[1].fill(0)
            fill()                          # the launch's copies: two to a launch
            cp.cuda.Device().synchronize()
            out[f"{row} one launch"] = dict(
                same=all(np.array_equal(w, cp.asnumpy(j[1])) for w, j in zip(want, jobs,
                                                                             strict=True)),
                blocks=[runtime.pad_grid(*j[2:])[1] for j in jobs])
            print(f"{row} one launch", out[f"{row} one launch"], flush=True)
            gos[f"{row} copies in one launch"] = fill
    codegen._padded_layout = full
    codegen._PADDED.clear()
    time_and_report("copies_probe", out, gos, peers_all, args.rounds)


if __name__ == "__main__":
    main()
