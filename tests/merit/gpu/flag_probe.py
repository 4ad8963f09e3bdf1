"""Device probe of a generator switch (not a test): the bench's tiles of named ``bench.gpu``
rows built with a module flag of ``merit.gpu`` off ("before") and on ("after"), each checked
against float64 and the two against each other bit for bit, then timed in turns beside the
rows' peers in one process.  The flag is set while the tile is completed (padding, thread
order) and while its kernel is generated and compiled (the cubin's name carries the source's
digest, so the two sides are two modules).  ``--launch``: launch each tile once (before, after,
in row order) for Nsight Compute.  ``--peers``: time each row's cuDNN peer in the calling
thread and in ``--tries`` fresh threads (cuDNN's benchmark mode chooses an algorithm afresh
in each thread), no tile.

``PYTHONPATH=sw python tests/merit/gpu/flag_probe.py --flag MODULE.NAME --rows ROW=LABEL,...
[--rounds 3] [--out DIR] [--launch] [--peers]`` (``MODULE.NAME``: a boolean flag of a
``merit.gpu`` module, e.g. ``tiling.SPLIT_CHUNKS``)
"""

import argparse
import json
from pathlib import Path

import numpy as np
from probelib import bench_table, run_checked, setup, time_rounds
from wordcopy_probe import parse


def flagged(name, value):
    """Set module flag ``name`` (``module.NAME`` of ``merit.gpu``) to ``value``; returns the
    value it had."""
    import importlib

    mod, attr = name.rsplit(".", 1)
    m = importlib.import_module(f"merit.gpu.{mod}")
    old = getattr(m, attr)
    setattr(m, attr, value)
    return old


def peers_in_threads(peers, tries):
    """``{peer: [ms in the calling thread, ms in each fresh thread]}`` of the cuDNN peers."""
    import threading

    from merit.gpu.runtime import time_launch

    out = {}
    for name, fn in peers.items():
        if not name.startswith("cuDNN"):
            continue
        ms = [round(time_launch(fn), 4)]
        for _ in range(tries):
            got = []
            th = threading.Thread(target=lambda fn=fn, got=got: got.append(time_launch(fn)))
            th.start()
            th.join()
            ms.append(round(got[0], 4))
        out[name] = ms
    return out


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
        prob, spec, inputs, res, peers, refs = setup(*table[key], rng)
        if args.peers:
            row = {"row": key, "peers_ms": peers_in_threads(peers, args.tries)}
            print(key, row["peers_ms"], flush=True)
            out.append(row)
            Path(args.out, "peer_probe.json").write_text(json.dumps(out, indent=1))
            continue
        row, gos, got = {"row": key, "label": label, "flag": args.flag}, {}, {}
        for side, value in (("before", False), ("after", True)):
            old = flagged(args.flag, value)
            try:
                t = tiling.complete(spec, parse(label))
                go, err = run_checked(prob, spec, t, inputs, res, refs)   # compiled here
            finally:
                flagged(args.flag, old)
            got[side] = cp.asnumpy(res[0]).copy()
            gos[side] = go
            row[side] = {"pads": t.pads, "order": t.order, "err": err, "ms": [],
                         "conflicts": [tiling.conflicts(spec, t, k)
                                       for k in range(len(spec.inputs)) if t.shared[k]]}
        row["bit_equal"] = bool(np.array_equal(got["before"], got["after"]))
        print(key, {s: (row[s]["pads"], row[s]["order"], row[s]["err"]) for s in gos},
              "bit equal", row["bit_equal"], flush=True)
        if args.launch:
            continue
        ms, row["peers_ms"] = time_rounds(gos, peers, args.rounds)
        for side in gos:
            row[side]["ms"] = ms[side]
        print(key, {s: row[s]["ms"] for s in gos}, row["peers_ms"], flush=True)
        out.append(row)
        Path(args.out, "flag_probe.json").write_text(json.dumps(out, indent=1))
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
