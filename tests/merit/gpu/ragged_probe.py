"""Device probe (not a test): where a ragged shape's time goes, the ragged GEMM 1735 x 1849 x 1873
and the 1x1 conv N4 C181 M229 61x77 of seed 112826 (their page tiles).

Each tile runs, checked against float64 on NaN-poisoned outputs, on three shapes: the row's own
(ragged), the nearest one whose rows are multiples of 4 words (no padded copies needed; the
edge blocks still partly outside), and the one rounded up to whole tiles (every block full).
The ragged GEMM's launch is split into its parts: the whole launch, the kernel alone on padded
copies made once (with the split-K zeroing), the copies alone (``runtime.pad_rows``), the zeroing
alone; the same tile with word copies (no ``padrows``).  Every launch and every shape's peers
are timed in turns.

``PYTHONPATH=sw python tests/merit/gpu/ragged_probe.py [--rows gemm,conv1x1] [--rounds 7]``"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import run_checked, setup, time_and_report  # noqa: E402

GEMM_TILE = dict(threads=(16, 16), regs=(8, 8), chunk=32, unroll=1, split=3, strided=(4, 4),
                 lean=True, vread=True, forder=1, ptxas=1, padrows=True)
GEMM_SHAPES = {   # (rows, columns, k)
    "ragged": (1735, 1849, 1873),
    "rows4": (1736, 1852, 1876),
    "whole": (1792, 1920, 1888),
    "kchunks": (1735, 1849, 1888),   # k a whole number of 32-step chunks, rows ragged
}
FLAT_TILE = dict(threads=(2, 16, 8), regs=(1, 4, 4), chunk=32, unroll=1, lean=True, vread=True,
                 flat=True)
CONV_SHAPES = {   # (channels, filters, height, width); N4, 1 x 1, stride 1
    "ragged": (181, 229, 61, 77),     # 4697 pixels
    "rows4": (184, 232, 47, 100),     # 4700 pixels
    "whole": (192, 256, 64, 74),      # 4736 pixels: 148 x 32
    "kchunks": (192, 229, 61, 77),    # channels a whole number of 32-step chunks
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="gemm,conv1x1")
    ap.add_argument("--shapes", default="ragged,rows4,whole,kchunks")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    shapes = args.shapes.split(",")
    import cupy as cp
    import numpy as np
    from pad_probe import kernel_alone

    from merit.gpu import _compile_all, runtime, tiling

    out, gos, peers_all = {}, {}, {}
    rows = args.rows.split(",")
    if "gemm" in rows:
        for shape, (n, cols, k) in GEMM_SHAPES.items():
            if shape not in shapes:
                continue
            prob, spec, inputs, res, peers, refs = setup(
                "gemm", dict(n=n, cols=cols, k=k), np.random.default_rng(7))
            tile = dict(GEMM_TILE)
            if cols % 4 == 0 and k % 4 == 0:
                tile["padrows"] = False
            t = tiling.check_tile(spec, tile)
            plain = tiling.check_tile(spec, dict(tile, padrows=False))
            _compile_all(spec, [t, plain])
            go, err = run_checked(prob, spec, t, inputs, res, refs)
            nb = runtime.compiled(spec, t)[1]
            out[f"gemm {shape}"] = dict(tile=t.label(), blocks=nb, error=err,
                                        gflop=2 * n * cols * k / 1e9,
                                        regs=runtime.compiled(spec, t)[0].num_regs)
            print(f"gemm {shape} {n}x{cols}x{k}: {t.label()}, {nb} blocks, error {err:.1e}",
                  flush=True)
            gos[f"gemm {shape} launch"] = go
            if t.padrows:
                gos[f"gemm {shape} kernel alone"], gos[f"gemm {shape} pad_rows"] = \
                    kernel_alone(spec, t, inputs, res)
                ptr, nbytes = res[0].data.ptr, res[0].nbytes

                def zero(ptr=ptr, nbytes=nbytes):
                    cp.cuda.runtime.memsetAsync(ptr, 0, nbytes,
                                                cp.cuda.get_current_stream().ptr)
                gos[f"gemm {shape} zeroing"] = zero
                gop, errp = run_checked(prob, spec, plain, inputs, res, refs)
                out[f"gemm {shape}"]["error_word_copies"] = errp
                gos[f"gemm {shape} word copies"] = gop
                t1 = tiling.check_tile(spec, dict(tile, split=1))
                _compile_all(spec, [t1])
                go1, err1 = run_checked(prob, spec, t1, inputs, res, refs)
                gos[f"gemm {shape} split 1 launch"] = go1
                gos[f"gemm {shape} split 1 kernel alone"] = kernel_alone(spec, t1, inputs,
                                                                         res)[0]
                out[f"gemm {shape}"]["error_split1"] = err1
            for name, fn in peers.items():
                peers_all[f"gemm {shape} {name}"] = fn
    if "conv1x1" in rows:
        for shape, (c, m, h, w) in CONV_SHAPES.items():
            if shape not in shapes:
                continue
            params = dict(n=4, c=c, h=h, w=w, m=m, k=1, stride=1, padding=0, dilation=1,
                          groups=1)
            prob, spec, inputs, res, peers, refs = setup("conv", params,
                                                         np.random.default_rng(8))
            t = tiling.check_tile(spec, FLAT_TILE)
            _compile_all(spec, [t])
            go, err = run_checked(prob, spec, t, inputs, res, refs)
            out[f"conv1x1 {shape}"] = dict(tile=t.label(), error=err,
                                           gflop=2 * 4 * c * m * h * w / 1e9,
                                           regs=runtime.compiled(spec, t)[0].num_regs)
            print(f"conv1x1 {shape} C{c} M{m} {h}x{w}: {t.label()}, error {err:.1e}",
                  flush=True)
            gos[f"conv1x1 {shape} launch"] = go
            for name, fn in peers.items():
                peers_all[f"conv1x1 {shape} {name}"] = fn
    time_and_report("ragged_probe", out, gos, peers_all, args.rounds)
    for key, rec in out.items():
        print(key, {k: v for k, v in rec.items() if k != "tile"}, rec["tile"])


if __name__ == "__main__":
    main()
