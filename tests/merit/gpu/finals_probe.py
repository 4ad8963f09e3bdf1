"""Device probe (not a test): GEMM 4096^3 on half arrays (FP16 / BF16, as the bench's rows give
them) tuned ``--times`` times, each from an empty tile cache, in one process (the kernels compiled
once): per tuning the first rounds' fastest tile, the finalists' round (each finalist's one
timing and its median in turns) and the pick, so that one can see whether the pick holds.

``PYTHONPATH=sw python tests/merit/gpu/finals_probe.py [--prec fp16,bf16] [--times 2]``"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import LAYERS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prec", default="fp16,bf16")
    ap.add_argument("--times", type=int, default=2)
    args = ap.parse_args()
    import torch

    import merit.gpu as gpu
    from merit.gpu.runtime import TileCache

    make, _ = LAYERS["gemm"]
    prob = make()
    arrays = [torch.as_tensor(a, device="cuda")
              for a in prob.random_inputs(np.random.default_rng(29), np.float32)]
    picks = {}
    for prec in args.prec.split(","):
        dt = torch.float16 if prec == "fp16" else torch.bfloat16
        ours = [a.to(dt) for a in arrays]
        for n in range(args.times):
            with tempfile.TemporaryDirectory() as d:
                t0 = time.time()
                n0 = len(gpu.finals)
                plan = gpu.tune(prob, *ours, cache=TileCache(Path(d) / "tiles.json"),
                                precision=prec)
                took = time.time() - t0
            (rec,) = gpu.finals[n0:]
            print(f"{prec} tuning {n + 1}: {took:.1f} s, first rounds' fastest "
                  f"{rec['first_pick']}, pick {plan.tile.label()} (turns {rec.get('turns_s')} s)")
            for lab, once, med in rec["finalists"]:
                print(f"    {lab}: {once:.4f} ms once, {med:.4f} median in turns")
            picks.setdefault(prec, []).append(plan.tile.label())
    for prec, labs in picks.items():
        print(f"{prec}: {'the same pick' if len(set(labs)) == 1 else 'DIFFERENT picks'} in "
              f"{len(labs)} tunings: {', '.join(labs)}")


if __name__ == "__main__":
    main()
