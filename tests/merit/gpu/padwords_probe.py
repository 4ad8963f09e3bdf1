"""Device probe (not a test): the padded-row form (``Tile.padrows``) with its rows padded to a
multiple of 4, 8, 16 or 32 words (``codegen.PAD_WORDS``, a generator switch), on the rows of
seed 112826 whose page tiles are ragged: the GEMM 1735 x 1849 x 1873, the 1x1 conv N4 C181 M229
61x77 (its product form, plain and padded) and AlexNet CONV1 (its page tile).

Each tile launched on NaN-poisoned outputs, checked against float64 and bit for bit against the
4-word form; then, in turns with the rows' peers: the whole launch, the kernel alone on padded
copies made once (split-K: the zeroing too) and the copies alone.

``PYTHONPATH=sw python tests/merit/gpu/padwords_probe.py [--rows gemm,conv1x1,alexnet]
[--words 4,8,16,32] [--rounds 7]``"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import bench_table, run_checked, setup, time_and_report  # noqa: E402

TILES = {   # row -> (bench row key, tile fields, padded forms timed beside the plain one)
    "gemm": ("rand4_gemm_odd",
             dict(threads=(16, 16), regs=(8, 8), chunk=32, unroll=1, split=3, strided=(4, 4),
                  lean=True, vread=True, forder=1, ptxas=1, padrows=True), False),
    "conv1x1": ("rand2_conv_1x1",
                dict(threads=(2, 16, 8), regs=(1, 4, 4), chunk=32, unroll=1, lean=True,
                     vread=True, flat=True, padrows=True), True),
    "alexnet": ("alexnet_conv1",
                dict(threads=(1, 16, 4, 5), regs=(1, 3, 1, 11), chunk=1, unroll=1, lean=True,
                     vread=True, padrows=True), False),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="gemm,conv1x1,alexnet")
    ap.add_argument("--words", default="4,8,16,32")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    import cupy as cp
    import numpy as np
    from pad_probe import kernel_alone

    from merit.gpu import _compile_all, codegen, runtime, tiling
    from merit.gpu.flat import launch_parts

    table = bench_table(112826)
    out, gos, peers_all = {}, {}, {}
    for row in args.rows.split(","):
        key, fields, plain_too = TILES[row]
        prob, spec, inputs, res, peers, refs = setup(*table[key], np.random.default_rng(9))
        for name, fn in peers.items():
            peers_all[f"{row} {name}"] = fn
        if plain_too:
            t = tiling.check_tile(spec, dict(fields, padrows=False))
            gos[f"{row} plain"], err = run_checked(prob, spec, t, inputs, res, refs)
            out[f"{row} plain"] = dict(tile=t.label(), error=err)
        first = None
        for words in map(int, args.words.split(",")):
            codegen.PAD_WORDS = words
            codegen._PADDED.clear()
            runtime.forget()
            t = tiling.check_tile(spec, fields)
            _compile_all(spec, [t])
            name = f"{row} pad {words}"
            try:
                gos[name + " launch"], err = run_checked(prob, spec, t, inputs, res, refs)
            except Exception as exc:   # reported, not fatal
                print(f"{name}: FAILED {type(exc).__name__}: {exc}"[:300], flush=True)
                continue
            got = cp.asnumpy(res[0])
            first = got if first is None else first
            s2, i2, o2 = (launch_parts(spec, t, inputs, res) if t.flat
                          else (spec, inputs, res))
            gos[name + " kernel"], gos[name + " copies"] = kernel_alone(s2, t, i2, o2)
            moves = codegen.padded_layout(codegen.flat_spec(spec, t))[1]
            out[name] = dict(tile=t.label(), error=err, moves=moves,
                             bit_equal_4=bool(np.array_equal(got, first)),
                             blocks=runtime.compiled(spec, t)[1])
            print(name, out[name], flush=True)
    codegen.PAD_WORDS = 4
    time_and_report("padwords_probe", out, gos, peers_all, args.rounds)


if __name__ == "__main__":
    main()
