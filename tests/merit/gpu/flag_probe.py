"""Device probe of a generator switch (not a test): the bench's tiles of named ``bench.gpu`` rows
built with a module flag of ``merit.gpu`` off ("before") and on ("after"), each checked against
float64 and the two against each other bit for bit, then timed in turns beside the rows' peers
in one process. The flag is set while the tile is completed (padding, thread order) and while
its kernel is generated and compiled (the runtime's modules are forgotten at each switch, so the
two sides are two modules). ``--launch``: launch each tile once (before, after, in row order)
for Nsight Compute. ``--peers``: time each row's cuDNN peer in the calling thread and in
``--tries`` fresh threads (cuDNN's benchmark mode chooses an algorithm afresh in each thread),
no tile.

``PYTHONPATH=sw python tests/merit/gpu/flag_probe.py --flag MODULE.NAME --rows ROW=LABEL,...
[--rounds 3] [--out DIR] [--launch] [--peers]`` (``MODULE.NAME``: a boolean flag of a
``merit.gpu`` module, e.g. ``tiling.SPLIT_CHUNKS``)
"""

import argparse
import json
from pathlib import Path

import numpy as np
from probelib import bench_table, compare_sides, setup
from wordcopy_probe import parse


def flagged(name, value):
    """Set module flag ``name`` (``module.NAME`` of ``merit.gpu``) to ``value`` and forget the
    modules compiled before; returns the value it had."""
    import importlib

    from merit.gpu import runtime

    mod, attr = name.rsplit(".", 1)
    m = importlib.import_module(f"merit.gpu.{mod}")
    old = getattr(m, attr)
    setattr(m, attr, value)
    runtime.forget()
    return old


def peers_in_threads(peers, tries):
    """``{peer: [ms in the calling thread, ms in each fresh thread]}`` of the cuDNN peers
    (the fresh threads' as ``bench.gpu.time_peer`` times them)."""
    from bench.gpu import time_peer
    from merit.gpu.runtime import time_launch

    return {name: [round(ms, 4) for ms in [time_launch(fn)]
                   + time_peer(name, fn, time_launch, tries)[1]]
            for name, fn in peers.items() if name.startswith("cuDNN")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flag", default="")
    ap.add_argument("--rows", required=True)
    ap.add_argument("--seed", type=int, default=90417)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tries", type=int, default=4)
    ap.add_argument("--out", default=".")
    ap.add_argument("--launch", action="store_true")
    ap.add_argument("--peers", action="store_true")
    args = ap.parse_args()
    import cupy as cp

    from merit.gpu import tiling

    table = bench_table(args.seed)
    rng = np.random.default_rng(5)
    out = []
    for item in args.rows.split(","):
        key, label = item.split("=") if "=" in item else (item, "")
        made = setup(*table[key], rng)
        if args.peers:
            row = {"row": key, "peers_ms": peers_in_threads(made[4], args.tries)}
            print(key, row["peers_ms"], flush=True)
            out.append(row)
            Path(args.out, "peer_probe.json").write_text(json.dumps(out, indent=1))
            continue

        def side(value, label=label, spec=made[1]):
            def make(check):
                old = flagged(args.flag, value)
                try:
                    t = tiling.complete(spec, parse(label))
                    return (t, *check(t))   # compiled here
                finally:
                    flagged(args.flag, old)
            return make

        row = compare_sides(key, made, {"before": side(False), "after": side(True)},
                            rounds=args.rounds, launch_only=args.launch, label=label,
                            flag=args.flag)
        if args.launch:
            continue
        out.append(row)
        Path(args.out, "flag_probe.json").write_text(json.dumps(out, indent=1))
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
