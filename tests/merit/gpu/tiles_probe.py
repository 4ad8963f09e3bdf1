"""Device probe of named tiles of one ``bench.gpu`` row (not a test): each label completed by
``tiling.complete`` (``LABEL+pK=P,P,..`` then sets input K's padding, ``LABEL+order=J,J,..``
the thread order), checked against float64 and bit for bit against the first tile, then
timed in turns beside the row's peers in one process.  ``--launch``: launch each tile once,
in order, for Nsight Compute.

``PYTHONPATH=sw python tests/merit/gpu/tiles_probe.py --row ROW --tiles LABEL;LABEL+p0=24,0,0,0
[--rounds 3] [--out DIR] [--launch]``
"""

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
from probelib import bench_table, compare_sides, setup
from wordcopy_probe import parse


def tile_of(spec, item):
    """The tile ``item`` names: a label completed, then the ``+`` overrides."""
    from merit.gpu import tiling

    label, *edits = item.split("+")
    t = tiling.complete(spec, parse(label))
    for e in edits:
        what, vals = e.split("=")
        vals = tuple(int(v) for v in vals.split(","))
        if what == "order":
            t = dataclasses.replace(t, order=vals)
        else:
            t = tiling._with_pad(t, int(what[1:]), vals)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--row", required=True)
    ap.add_argument("--tiles", required=True, help="';'-separated labels with overrides")
    ap.add_argument("--seed", type=int, default=90417)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=".")
    ap.add_argument("--launch", action="store_true")
    args = ap.parse_args()
    table = bench_table(args.seed)
    made = setup(*table[args.row], np.random.default_rng(5))
    from merit.gpu import _compile_all

    spec = made[1]
    named = {item: tile_of(spec, item) for item in args.tiles.split(";")}
    _compile_all(spec, list(named.values()))   # in parallel: NVRTC outside the interpreter lock
    row = compare_sides(args.row, made, named, rounds=args.rounds, launch_only=args.launch)
    if not args.launch:
        Path(args.out, f"tiles_{args.row}.json").write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
