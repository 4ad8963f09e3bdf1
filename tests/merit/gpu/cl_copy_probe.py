"""Device probe of the channels-last tiles' layout copies (not a test): for VGG conv3_1 and the k9
convolutions in FP16 and TF32, the best ``Tile.cl`` tile the autotuner would time, its whole
launch (copies + kernel) and its copies alone (``runtime._cl_inputs``' fill), timed with the
same events, so the copies' share of the time is known.

Each copy is timed alone too.

``PYTHONPATH=sw python tests/merit/gpu/cl_copy_probe.py [--only vgg,k9,k9s2] [--prec fp16,tf32]``
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from probelib import LAYERS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="vgg,k9,k9s2")
    ap.add_argument("--prec", default="fp16,tf32")
    args = ap.parse_args()
    import cupy as cp

    from merit.gpu import TUNED, _compile_all
    from merit.gpu.ldsm import cl_layout
    from merit.gpu.runtime import _cl_inputs, launcher, relayout, time_launch, to_device
    from merit.gpu.spec import OPERAND_DTYPES, spec_of
    from merit.gpu.tiling import H100, WG_TUNED, rank

    rng = np.random.default_rng(23)
    for key in args.only.split(","):
        prob = LAYERS[key][0]()
        arrays = prob.random_inputs(rng, np.float32)
        names = [t.name for t in prob.tensors]
        for prec in args.prec.split(","):
            od = OPERAND_DTYPES.get(prec, "float32")
            spec = spec_of(prob, "float32", prec, operands=od)
            dev = [to_device(a.astype(od) if od == "float16" else a, n)
                   for a, n in zip(arrays, names, strict=True)] if od != "bfloat16" else None
            if dev is None:
                continue
            by = dict(zip(names, dev, strict=True))
            inputs = [by[op.tensor] for op in prob.operands]
            out = (cp.empty(spec.pshape, dtype=cp.float32),)
            tiles = [t for t in rank(spec, count=TUNED + WG_TUNED, device=H100) if t.cl]
            _compile_all(spec, tiles)
            best = min(tiles, key=lambda t: time_launch(launcher(spec, t, inputs, out)))
            whole = time_launch(launcher(spec, best, inputs, out))
            fill = _cl_inputs(spec, best, inputs)[2]
            copies = time_launch(fill)
            mb = sum(a.nbytes for a in inputs[:2]) / 1e6
            each = []
            for k, mv in sorted(cl_layout(spec, best.chunk)[1].items()):
                buf = cp.empty(mv[0] * mv[2] * mv[3], dtype=inputs[k].dtype)
                ms = time_launch(lambda a=inputs[k], b=buf, m=mv: relayout(a, b, *m))
                each.append(f"input {k} {mv}: {ms:.4f} ms")
            print(f"{key:5} {prec:5} {best.label():55} whole {whole:.4f} ms, copies "
                  f"{copies:.4f} ms ({100 * copies / whole:.0f} %, {mb:.1f} MB in), kernel "
                  f"about {whole - copies:.4f} ms; {'; '.join(each)}", flush=True)


if __name__ == "__main__":
    main()
