"""Device probe of the padded-row copies (``Tile.padrows``) of one ``bench.gpu`` row (not a test):
each named tile launched on NaN-poisoned outputs, checked against float64 and, where it is
padded, bit for bit against its plain form, both with ``runtime.pad_rows`` and with the CuPy
copies it replaced (``copyto`` into the padded array's strided view); then timed in turns beside
the row's peers: the whole launch with each copy, the kernel alone on copies made once, and the
copies alone.  ``--keep K,K``: pad only those loop inputs (a probe switch on the padded layout).

``PYTHONPATH=sw python tests/merit/gpu/pad_probe.py --row rand4_gemm_odd --tiles LABEL;LABEL_pr
[--keep 0] [--rounds 7] [--out DIR]``
"""

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
from probelib import bench_table, run_checked, setup, time_rounds
from wordcopy_probe import parse


def cupy_copies(spec, inputs):
    """``runtime._pad_inputs`` as it was: zeroed copies filled by ``cupy.copyto``."""
    import cupy as cp

    from merit.gpu.codegen import padded_layout

    _, moves = padded_layout(spec)
    inputs, jobs = list(inputs), []
    for k, (rows, C, Cp) in sorted(moves.items()):
        buf = cp.zeros((rows, Cp), dtype=inputs[k].dtype)
        jobs.append((inputs[k].reshape(rows, C), buf[:, :C]))
        inputs[k] = buf

    def fill():
        for src, dst in jobs:
            cp.copyto(dst, src)

    return inputs, fill


def keep_only(keep):
    """A ``codegen._padded_layout`` that pads the loop inputs ``keep`` only."""
    from merit.gpu import codegen

    full = codegen._padded_layout

    def layout(spec):
        got = full(spec)
        if got is None:
            return None
        spec2, moves = got
        ins = tuple(op2 if k in keep else op
                    for k, (op, op2) in enumerate(zip(spec.inputs, spec2.inputs, strict=True)))
        moves = {k: m for k, m in moves.items() if k in keep}
        return (dataclasses.replace(spec2, inputs=ins), moves) if moves else None

    return layout


def kernel_alone(spec, tile, inputs, res):
    """The launch of ``tile``'s kernel on padded copies made once (split-K: the zeroing too)."""
    import cupy as cp

    from merit.gpu import runtime

    ins, fill = runtime._pad_inputs(spec, inputs)
    fill()
    kern, nb, nt, smem = runtime.compiled(spec, tile)
    args = tuple(ins) + tuple(res)
    zero = [(o.data.ptr, o.nbytes) for o in res] if tile.split > 1 else []

    def go():
        for ptr, n in zero:
            cp.cuda.runtime.memsetAsync(ptr, 0, n, cp.cuda.get_current_stream().ptr)
        kern((nb,), (nt,), args, shared_mem=smem)

    return go, fill


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--row", required=True)
    ap.add_argument("--tiles", required=True, help="';'-separated labels")
    ap.add_argument("--keep", default="", help="pad only these loop inputs (K,K)")
    ap.add_argument("--seed", type=int, default=90417)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import cupy as cp

    from merit.gpu import _compile_all, codegen, runtime, tiling

    if args.keep:
        codegen._padded_layout = keep_only({int(k) for k in args.keep.split(",")})
    prob, spec, inputs, res, peers, refs = setup(*bench_table(args.seed)[args.row],
                                                 np.random.default_rng(5))
    tiles = {lab: tiling.complete(spec, parse(lab)) for lab in args.tiles.split(";")}
    _compile_all(spec, list(tiles.values()))
    gos, rows, outs = {}, {}, {}
    own = runtime._pad_inputs
    for lab, t in tiles.items():
        for side, copies in (("", own), (" cupy copies", cupy_copies)):
            if side and not t.padrows:
                continue
            runtime._pad_inputs = copies   # the launcher takes its copies from it
            gos[lab + side], err = run_checked(prob, spec, t, inputs, res, refs)
            runtime._pad_inputs = own
            outs[lab + side] = cp.asnumpy(res[0]).copy()
            rows[lab + side] = {"rel_err": err}
        if t.padrows:
            gos[lab + " kernel"], gos[lab + " pad_rows"] = kernel_alone(spec, t, inputs, res)
            gos[lab + " cupy copies alone"] = cupy_copies(spec, inputs)[1]
    for name, row in rows.items():
        plain = name.split(" ")[0].removesuffix("_pr")
        if plain != name and plain in outs:
            row["bit_equal_plain"] = bool(np.array_equal(outs[name], outs[plain]))
        print(name, row, flush=True)
    ms, peer_ms = time_rounds(gos, peers, args.rounds)
    for name, v in ms.items():
        print(f"{sorted(v)[len(v) // 2]:.4f} ms (min {min(v):.4f})  {name}", flush=True)
    print("peers", {n: sorted(v)[len(v) // 2] for n, v in peer_ms.items()}, flush=True)
    Path(args.out, f"pad_{args.row}.json").write_text(json.dumps(
        {"row": args.row, "keep": args.keep, "checks": rows, "ms": ms, "peers_ms": peer_ms},
        indent=1))


if __name__ == "__main__":
    main()
