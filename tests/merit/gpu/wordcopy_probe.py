"""Device probe of the word copies by rows (not a test): the bench's tiles of named
``bench.gpu`` rows without ``Tile.wrows`` (the kernels of before: four adjacent words a
thread) and with it (one column a thread), each checked against float64 and the two against
each other bit for bit, then timed in turns beside the rows' peers in one process.
``--launch``: launch each tile once (before, after, in row order) for Nsight Compute.

``PYTHONPATH=sw python tests/merit/gpu/wordcopy_probe.py [--rows ROW=LABEL,...] [--rounds 3]
[--out DIR] [--launch]``
"""

import argparse
import json
import re
from pathlib import Path

import numpy as np
from probelib import bench_table, compare_sides, setup

#: the bench page's fp32 rows below their peer and the tiles it gives them (2026-11-27 rows)
ROWS = ("rand4_gemm_odd=t16x8_r7x8_c32_u1_ss_db_s04_l_v_o1_x1,"
        "vgg_conv3_1=t4x2x1x28_r1x8x4x2_c4_u3_ss_db_s0400_l_v_o1_a_x1,"
        "rand2_conv_1x1=t1x8x4x8_r8x8x1x1_c8_u3_ss_db_s0400_l,"
        "gemm=t16x16_r16x8_c32_u1_ss_db_s44_l_v_o1_x1")


def parse(label):
    """A SIMT tile's fields from its label (those ``tiling.complete`` does not fill)."""
    from merit.gpu.tile import Tile

    m = re.match(r"t([\dx]+)_r([\dx]+)_c(\d+)_u(\d+)_([sg]+)(_db|_p\d)?(_k\d+)?(_s\d+)?(_l)?"
                 r"(_v)?(_o\d)?(_a)?(_x\d)?(_w)?(_pr)?$", label)
    kw = dict(threads=tuple(map(int, m[1].split("x"))), regs=tuple(map(int, m[2].split("x"))),
              chunk=int(m[3]), unroll=int(m[4]), double=bool(m[6]), lean=bool(m[9]),
              vread=bool(m[10]), vahead=bool(m[12]))
    if m[6] and m[6].startswith("_p"):
        kw["stages"] = int(m[6][2:])
    if m[7]:
        kw["split"] = int(m[7][2:])
    if m[8]:
        kw["strided"] = tuple(int(c) for c in m[8][2:])
    if m[11]:
        kw["forder"] = int(m[11][2:])
    if m[13]:
        kw["ptxas"] = int(m[13][2:])
    kw["wrows"], kw["padrows"] = bool(m[14]), bool(m[15])
    return Tile(**kw)


def tiles(spec, label):
    """``{side: tile}`` of ``label`` completed, without and with its word copies by rows."""
    import dataclasses

    from merit.gpu import tiling

    t = tiling.complete(spec, parse(label))
    return {"before": t, "after": dataclasses.replace(t, wrows=True)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS)
    ap.add_argument("--seed", type=int, default=90417)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=".")
    ap.add_argument("--launch", action="store_true")
    args = ap.parse_args()
    import cupy as cp


    table = bench_table(args.seed)
    rng = np.random.default_rng(5)
    out = []
    for item in args.rows.split(","):
        key, label = item.split("=")
        made = setup(*table[key], rng)
        row = compare_sides(key, made, tiles(made[1], label), rounds=args.rounds,
                            launch_only=args.launch, label=label)
        if args.launch:
            continue
        out.append(row)
        Path(args.out, "wordcopy_probe.json").write_text(json.dumps(out, indent=1))
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
