"""Device probe (not a test): the padded-row copies of one launch (``runtime.pad_rows``, one
launch a padded input) against one launch for all of them, and the padded form with one input
padded, on the rows of seed 112826 whose page tiles pad: the 1x1 conv N4 C181 M229 61x77 (the
product form's tile, its lean / vread form padded) and the GEMM 1735 x 1849 x 1873 (its page tile).

Per row: each padded input's copy alone, the copies as the launch makes them, one launch doing
every copy (a grid over the pieces of all, a block's pieces from one input); the tile padded in
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

_FUSED = r"""
extern "C" __global__ void merit_pad_rows2(const unsigned int* __restrict__ s0,
        uint4* __restrict__ d0, unsigned int n0, unsigned int q0, int C0,
        const unsigned int* __restrict__ s1, uint4* __restrict__ d1, unsigned int n1,
        unsigned int q1, int C1, unsigned int b0) {
    // blocks below b0 copy input 0, the others input 1 (pad_rows's pieces, grid-stride)
    const bool one = blockIdx.x >= b0;
    const unsigned int* src = one ? s1 : s0;
    uint4* dst = one ? d1 : d0;
    const unsigned int n = one ? n1 : n0, q = one ? q1 : q0;
    const int C = one ? C1 : C0;
    const unsigned int nb = one ? gridDim.x - b0 : b0;
    for (unsigned int x = (blockIdx.x - (one ? b0 : 0)) * blockDim.x + threadIdx.x; x < n;
         x += nb * blockDim.x) {
        const unsigned int r = x / q;
        const int c = (int)(x - r * q) * 4;
        const unsigned int* s = src + (long long)r * C + c;
        uint4 v;
        v.x = c < C ? s[0] : 0u;
        v.y = c + 1 < C ? s[1] : 0u;
        v.z = c + 2 < C ? s[2] : 0u;
        v.w = c + 3 < C ? s[3] : 0u;
        dst[x] = v;
    }
}
"""


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

    fused = cp.RawKernel(_FUSED, "merit_pad_rows2")
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
            gos[f"{row} copies"] = fill
            _, moves = codegen.padded_layout(s2)
            jobs = []
            for k, (rows, C, Cp) in sorted(moves.items()):
                def one(src=i2[k], dst=ins[k], d=(rows, C, Cp)):
                    runtime.pad_rows(src, dst, *d)
                gos[f"{row} copy of input {k} ({rows} x {C} -> {Cp})"] = one
                n, blocks = runtime.pad_grid(rows, C, Cp)
                jobs.append((i2[k], ins[k], n, Cp // 4, C, blocks))
            (a0, b0, n0, q0, c0, k0), (a1, b1, n1, q1, c1, k1) = jobs
            want = [cp.asnumpy(b) for b in (b0, b1)]
            b0.fill(0)
            b1.fill(0)

            def both(j=(a0, b0, n0, q0, c0, a1, b1, n1, q1, c1), k0=k0, k1=k1):
                s0, d0, n0, q0, c0, s1, d1, n1, q1, c1 = j
                fused((k0 + k1,), (runtime.PAD_THREADS,),
                      (s0, d0, np.uint32(n0), np.uint32(q0), np.int32(c0), s1, d1,
                       np.uint32(n1), np.uint32(q1), np.int32(c1), np.uint32(k0)))
            both()
            cp.cuda.Device().synchronize()
            out[f"{row} one launch"] = dict(
                same=all(np.array_equal(w, cp.asnumpy(b)) for w, b in zip(want, (b0, b1),
                                                                            strict=True)),
                blocks=(k0, k1))
            print(f"{row} one launch", out[f"{row} one launch"], flush=True)
            gos[f"{row} copies in one launch"] = both
    codegen._padded_layout = full
    codegen._PADDED.clear()
    time_and_report("copies_probe", out, gos, peers_all, args.rounds)


if __name__ == "__main__":
    main()
