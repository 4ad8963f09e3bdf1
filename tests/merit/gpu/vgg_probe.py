"""Device probe of VGG conv3_1 fp32 and the 1x1 stride-2 conv's peer (not a test).

``--sweep FILE`` (a ``sweep_probe.py`` output holding the ``vgg_conv3_1`` row): its fastest
``--top`` tiles and the named ``--tiles`` timed twice each beside cuDNN, each also with
``minblocks`` 2 (``__launch_bounds__`` for two blocks per SM), registers and spilled bytes
printed.  ``--peer N``: cuDNN's time on ``rand2_conv_1x1`` timed 12 times in each of N fresh
processes, with the kernel its benchmark mode picked there (torch profiler).

``--forms`` (with ``--sweep``): instead, the named ``--tiles`` in the ``lean`` ``-O1`` form and in
the ``vread`` ``-O1`` forms with each product order (``forder`` 0-3) and with the loads a group
ahead (``vahead``), timed twice each.

``PYTHONPATH=sw python tests/merit/gpu/vgg_probe.py --sweep sweep_probe.json [--top 14]``
``PYTHONPATH=sw python tests/merit/gpu/vgg_probe.py --sweep sweep_probe.json --forms --tiles A,B``
``PYTHONPATH=sw python tests/merit/gpu/vgg_probe.py --peer 5``
"""

import argparse
import json
import subprocess
import sys

import numpy as np
from probelib import run_checked, setup
from sweep_probe import _row


def _tup(v):
    return tuple(_tup(x) for x in v) if isinstance(v, list) else v


FORMS = ({"lean": True, "ptxas": 1},) + tuple(
    {"lean": True, "vread": True, "ptxas": 1, "forder": o} for o in range(4)) + (
    {"lean": True, "vread": True, "ptxas": 1, "forder": 1, "vahead": True},)


def vgg(path, top, names, forms=False):
    from merit.gpu import _compile_all
    from merit.gpu.runtime import compiled, time_launch
    from merit.gpu.tile import Tile
    from merit.gpu.tiling import _replace, complete

    row = next(r for r in json.loads(open(path).read()) if r["row"] == "vgg_conv3_1")
    timed = sorted((r for r in row["tiles"] if "ms" in r), key=lambda r: r["ms"])
    recs = [] if forms else timed[:top]
    recs += [r for r in row["tiles"] if r["tile"] in names and r not in recs]
    base = [Tile(**{k: _tup(v) for k, v in r["fields"].items()}) for r in recs]
    prob, spec, inputs, res, peers, refs = setup(*_row("vgg_conv3_1", 90417),
                                                 np.random.default_rng(11))
    if forms:
        tiles = list(dict.fromkeys(complete(spec, _replace(t, **f)) for t in base for f in FORMS))
    else:
        tiles = [v for t in base for v in (t, _replace(t, minblocks=2))]
    _compile_all(spec, tiles)
    out = {}
    for _ in range(2):
        for t in tiles:
            kern = compiled(spec, t)[0]
            go, err = run_checked(prob, spec, t, inputs, res, refs)
            rec = out.setdefault(t.label(), {"regs": kern.num_regs, "err": err, "ms": [],
                                             "spill": getattr(kern, "local_size_bytes", -1)})
            rec["ms"].append(round(time_launch(go, min_ms=5.0, batches=5), 4))
        for name, fn in peers.items():
            out.setdefault(name, {"ms": []})["ms"].append(round(time_launch(fn), 4))
    for label, rec in out.items():
        extra = f"regs {rec['regs']:3d} spill {rec['spill']:3d} err {rec['err']:.1e}" \
            if "regs" in rec else ""
        print(f"{rec['ms']} {extra} {label}", flush=True)


def peer(runs):
    if runs < 0:   # one process's share
        import torch
        from torch.profiler import ProfilerActivity, profile

        from merit.gpu.runtime import time_launch

        *_, peers, _ = setup(*_row("rand2_conv_1x1", 90417), np.random.default_rng(-runs))
        fn = peers["cuDNN fp32 (torch)"]
        fn()
        ms = [round(time_launch(fn), 4) for _ in range(12)]
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            fn()
            torch.cuda.synchronize()
        names = sorted({e.name[:100] for e in p.events()
                        if e.device_type == torch.autograd.DeviceType.CUDA})
        print(f"process {-runs}: cuDNN ms {ms} median {np.median(ms):.4f} {names}", flush=True)
        return
    for i in range(1, runs + 1):
        subprocess.run([sys.executable, __file__, "--peer", str(-i)], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweep")
    ap.add_argument("--top", type=int, default=14)
    ap.add_argument("--tiles", default="t8x8x1x4_r1x4x8x2_c8_u2_ss_db")
    ap.add_argument("--forms", action="store_true")
    ap.add_argument("--peer", type=int)
    args = ap.parse_args()
    if args.peer is not None:
        return peer(args.peer)
    vgg(args.sweep, args.top, args.tiles.split(","), args.forms)


if __name__ == "__main__":
    main()
