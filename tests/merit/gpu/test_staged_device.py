"""The staged forms the autotuner times (``tiling.staged_variants``) on a CUDA device: each
against a float64 reference from the golden model on NaN-poisoned outputs, and bit for bit
against the tile it stages (split-K tiles: to rounding, their atomic adds having no fixed
order); sums along the contiguous axis, pools with a clamped or zero boundary, a correlation
with one input already staged, a whole reduction split K ways, the integral image's row totals.
Skipped without CuPy or a GPU."""

import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_cases import _total, device_module
from test_staged import row_sums

from merit import workloads as W
from merit.gpu import TUNED, _compile_all, run, tiling
from merit.gpu.spec import spec_of

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

cp, pytestmark = device_module()


def _integral_totals():
    from bench.gpu import integral_passes

    return integral_passes(64, 96, 16)[0][0]


CASES = {
    "row_sums": lambda: row_sums(),
    "row_sums_odd": lambda: row_sums(37, 11, 24),
    "max_pool": lambda: W.max_pool2d(2, 3, 13, 13, 3, stride=2, padding=1),
    "avg_pool": lambda: W.avg_pool2d(2, 3, 12, 12, 2),
    "correlation": lambda: W.correlation(8, 12, 12, 2),
    "total": _total,
    "integral_rows_totals": _integral_totals,
}


def _launch(prob, spec, tile, arrays):
    out = (cp.full(spec.pshape, np.nan, dtype=np.float32),)
    run(prob, *arrays, tile=tile, out=out)
    got = cp.asnumpy(out[0])
    assert not np.isnan(got).any(), f"unwritten outputs with {tile.label()}"
    return got


@pytest.mark.parametrize("name", list(CASES))
def test_staged_forms_equal_the_cached_tiles(name):
    prob = CASES[name]()
    spec = spec_of(prob, "float32")
    ranked = tiling.rank(spec, count=TUNED)
    times = [(1.0 + 0.01 * j, t) for j, t in enumerate(ranked)]
    forms = tiling.staged_variants(spec, times)
    assert forms, "a tile reading a loop input through the cache"
    _compile_all(spec, forms + ranked[:tiling.STAGED_TUNED])
    rng = np.random.default_rng(sum(map(ord, name)))
    arrays = prob.random_inputs(rng, np.float32)
    ref = np.asarray(prob.run(*[a.astype(np.float64) for a in arrays]))
    for v in forms:
        base = next(t for _, t in times if (t.threads, t.regs, t.chunk, t.split)
                    == (v.threads, v.regs, v.chunk, v.split))
        got_v = _launch(prob, spec, v, arrays)
        got_b = _launch(prob, spec, base, arrays)
        err = np.linalg.norm(got_v - ref) / max(np.linalg.norm(ref), 1e-30)
        assert err < 1e-5, (v.label(), err)
        if v.split > 1:
            np.testing.assert_allclose(got_v, got_b, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
        else:
            assert np.array_equal(got_v, got_b), (v.label(), base.label())
