"""Device probe (not a test): the product form of strided and padded 1 x 1 convolutions (their
image gathered in the launch, ``merit.gpu.flat.launch_fill``), on the 1x1 stride-2 conv of seed
90417 (N8 C155 M127 69x111), a ResNet-50 shortcut (N32 C256 M512 56x56, stride 2) and a padded
one (N8 C64 M96 30x30, padding 1).  For each, the autotuner from an empty tile cache without
the product form (``tiling.FLAT_TUNED`` off) and with it, each pick launched on NaN-poisoned
outputs and checked against float64, then the two picks and the row's peers in turns.

``PYTHONPATH=sw python tests/merit/gpu/gather_probe.py [--rounds 7]``"""

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import bench_table, run_checked, setup, time_and_report  # noqa: E402

ROWS = {
    "s2_90417": bench_table(90417)["rand2_conv_1x1"],
    "resnet_s2": ("conv", dict(n=32, c=256, h=56, w=56, m=512, k=1, stride=2, padding=0,
                               dilation=1, groups=1)),
    "pad1": ("conv", dict(n=8, c=64, h=30, w=30, m=96, k=1, stride=1, padding=1, dilation=1,
                          groups=1)),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    import numpy as np

    import merit.gpu as gpu
    from merit.gpu import runtime, tiling

    out, gos, peers_all = {}, {}, {}
    for row in args.rows.split(","):
        prob, spec, inputs, res, peers, refs = setup(*ROWS[row], np.random.default_rng(5))
        for name, fn in peers.items():
            peers_all[f"{row} {name}"] = fn
        for on in (False, True):
            tiling.FLAT_TUNED = on
            n0 = len(gpu.finals)
            with tempfile.TemporaryDirectory() as d:
                pick = gpu.tune(prob, *inputs,
                                cache=runtime.TileCache(Path(d) / "tiles.json")).tile
            name = f"{row} pick {'with' if on else 'without'} the form"
            gos[name], err = run_checked(prob, spec, pick, inputs, res, refs)
            out[name] = dict(tile=pick.label(), error=err, finals=gpu.finals[n0:])
            print(name, out[name]["tile"], err, flush=True)
        tiling.FLAT_TUNED = True
    time_and_report("gather_probe", out, gos, peers_all, args.rounds)


if __name__ == "__main__":
    main()
