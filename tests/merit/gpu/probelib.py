"""What the device probes of this folder share (not a test): a ``bench.gpu`` row set up for
``merit.gpu``, and one tile launched on NaN-poisoned outputs and checked against float64."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.gpu import _relerr, build  # noqa: E402


def setup(kind, params, rng, precision="fp32"):
    """``(problem, spec, inputs, outputs, peers, references)`` of a ``bench.gpu`` row."""
    import cupy as cp

    from merit.gpu.spec import spec_of

    prob, arrays, peers, refs, *_ = build(kind, dict(params, precision=precision), rng)
    by = dict(zip([t.name for t in prob.tensors], arrays, strict=True))
    inputs = [by[op.tensor] for op in prob.operands]
    spec = spec_of(prob, "float32", precision)
    res = (cp.empty(spec.pshape, dtype=cp.float32),)
    return prob, spec, inputs, res, peers, refs


def run_checked(prob, spec, tile, inputs, res, refs):
    """Launch ``tile`` once on NaN-poisoned outputs: ``(its launcher, relative error)``."""
    import cupy as cp

    from merit.gpu.runtime import launcher

    go = launcher(spec, tile, inputs, res)
    res[0].fill(cp.nan)
    go()
    cp.cuda.Device().synchronize()
    return go, _relerr(prob.outputs[0].finish(res[0]), refs[0])
