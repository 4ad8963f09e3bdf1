"""Launch a few named tiles once each (for a profiler such as ncu; not a test).

``PYTHONPATH=sw python tests/merit/gpu/tc_profile.py LAYER:PREC:TILE_LABEL[:half] ...``; the
label as ``Tile.label()`` prints it, looked up among the layer's ranked tiles (count 16, or with
``:half`` the tiles the autotuner times on float16 / bfloat16 arrays, which it is then given).
``LAYER:PREC:peer`` launches the library peer of ``bench.gpu`` in that precision on the same
half tensors (cuBLAS / cuDNN through torch).
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import LAYERS  # noqa: E402


def main():
    import cupy as cp
    import torch

    from merit.gpu import TUNED
    from merit.gpu.mma import roles
    from merit.gpu.runtime import launcher, to_device
    from merit.gpu.spec import OPERAND_DTYPES, spec_of
    from merit.gpu.tiling import WG_TUNED, rank

    rng = np.random.default_rng(1)
    for arg in sys.argv[1:]:
        key, prec, label, *form = arg.split(":")
        make, conv = LAYERS[key]
        prob = make()
        names = [t.name for t in prob.tensors]
        host = prob.random_inputs(rng, np.float32)
        if label == "peer":
            dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[prec]
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
            h = [torch.as_tensor(a, device="cuda").to(dt) for a in host]
            if conv is None:
                h[0] @ h[1]
            else:
                torch.nn.functional.conv2d(h[0], h[1], **conv)
            torch.cuda.synchronize()
            print(arg, "ran", flush=True)
            continue
        half = form == ["half"]
        if half:
            dt = torch.float16 if prec == "fp16" else torch.bfloat16
            spec = spec_of(prob, "float32", prec, operands=OPERAND_DTYPES[prec])
            r = roles(spec)
            by = {n: to_device(torch.as_tensor(a, device="cuda").to(dt), n)
                  for a, n in zip(host, names, strict=True)}
            inputs = [by[op.tensor] for op in prob.operands]
            assert all(k in (r.a, r.b) for k in range(len(inputs)))
            tiles = {t.label(): t for t in rank(spec, count=TUNED + WG_TUNED)}
        else:
            by = dict(zip(names, [cp.asarray(a) for a in host], strict=True))
            inputs = [by[op.tensor] for op in prob.operands]
            spec = spec_of(prob, "float32", prec)
            tiles = {t.label(): t for t in rank(spec, count=16)}
        if label not in tiles:   # the forms built but not timed by default (clusters, skew, hold)
            from merit.gpu import tiling

            tiling.CLUSTER_TUNED = True
            tiling.SKEW_TUNED, tiling.HOLD_TUNED = (1, 2, 3), (1, 2, 3, 4)
            tiles = {t.label(): t for t in rank(spec, count=TUNED + WG_TUNED)}
        out = (cp.empty(spec.pshape, dtype=cp.float32),)
        go = launcher(spec, tiles[label], inputs, out)
        go()
        cp.cuda.Device().synchronize()
        print(arg, "ran", flush=True)


if __name__ == "__main__":
    main()
