"""Launch a few named tiles once each (for a profiler such as ncu; not a test).

``PYTHONPATH=sw python tests/merit/gpu/tc_profile.py LAYER:PREC:TILE_LABEL ...``; the label as
``Tile.label()`` prints it, looked up among the layer's ranked tiles (count 16).
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probelib import LAYERS  # noqa: E402


def main():
    import cupy as cp

    from merit.gpu.runtime import launcher
    from merit.gpu.spec import spec_of
    from merit.gpu.tiling import rank

    rng = np.random.default_rng(1)
    for arg in sys.argv[1:]:
        key, prec, label = arg.split(":")
        prob = LAYERS[key][0]()
        arrays = [cp.asarray(a) for a in prob.random_inputs(rng, np.float32)]
        by = dict(zip([t.name for t in prob.tensors], arrays, strict=True))
        inputs = [by[op.tensor] for op in prob.operands]
        spec = spec_of(prob, "float32", prec)
        tiles = {t.label(): t for t in rank(spec, count=16)}
        out = (cp.empty(spec.pshape, dtype=cp.float32),)
        go = launcher(spec, tiles[label], inputs, out)
        go()
        cp.cuda.Device().synchronize()
        print(arg, "ran", flush=True)


if __name__ == "__main__":
    main()
