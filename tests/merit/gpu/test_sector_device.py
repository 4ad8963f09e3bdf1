"""The sector forms the autotuner times (``tiling.sector_variants``, ``Tile.sector``) on a CUDA
device: each against a float64 reference from the golden model on NaN-poisoned outputs, and bit
for bit against the tile it lays out again (split-K tiles: to rounding, their atomic adds having
no fixed order), at 8, 16 and 32 words; filters whose boxes start a word or two before the
block, padded and strided convolutions, a depthwise one, a correlation, motion estimation and
the bilateral filter.  Skipped without CuPy or a GPU."""

import numpy as np
import pytest
from gpu_cases import device_module

from merit import workloads as W
from merit.gpu import TUNED, _compile_all, run, tiling
from merit.gpu.spec import spec_of
from merit.gpu.tiling import _replace

cp, pytestmark = device_module()

CASES = {
    "separable_3": lambda: W.separable_filter(64, 256, 3),
    "separable_7": lambda: W.separable_filter(40, 96, 7),
    "filter3x3": lambda: W.filter3x3(48, 128),
    "conv_pad": lambda: W.conv2d(2, 8, 20, 32, 8, 3, padding=1),
    "conv_s2": lambda: W.conv2d(2, 4, 24, 32, 6, 5, stride=2, padding=2),
    "depthwise": lambda: W.depthwise(2, 4, 16, 24, 3, padding=1),
    "correlation": lambda: W.correlation(8, 12, 16, 2),
    "motion": lambda: W.motion_estimation(32, 48, block=8, search=3),
    "bilateral": lambda: W.bilateral(20, 24, sigma_s=1.5, sigma_r=0.5),
}


def _launch(prob, spec, tile, arrays):
    out = (cp.full(spec.pshape, np.nan, dtype=np.float32),)
    run(prob, *arrays, tile=tile, out=out)
    got = cp.asnumpy(out[0])
    assert not np.isnan(got).any(), f"unwritten outputs with {tile.label()}"
    return got


@pytest.mark.parametrize("name", list(CASES))
def test_sector_forms_equal_the_tiles_they_lay_out_again(name):
    prob = CASES[name]()
    spec = spec_of(prob, "float32")
    ranked = tiling.rank(spec, count=TUNED)
    times = [(1.0 + 0.01 * j, t) for j, t in enumerate(ranked)]
    forms = tiling.sector_variants(spec, times)
    assert forms, "a tile copying from a box misaligned at run time"
    wider = [tiling.complete(spec, _replace(forms[0], sector=s, pads=())) for s in (16, 32)]
    forms += [v for v in wider if tiling._sector_moves(spec, v)]   # still a vector copy
    bases = [next(t for _, t in times if _replace(t, pads=()) == _replace(v, sector=0, pads=()))
             for v in forms]
    _compile_all(spec, forms + bases)
    rng = np.random.default_rng(sum(map(ord, name)))
    arrays = prob.random_inputs(rng, np.float32)
    ref = np.asarray(prob.run(*[a.astype(np.float64) for a in arrays]))
    for v, base in zip(forms, bases, strict=True):
        got_v = _launch(prob, spec, v, arrays)
        got_b = _launch(prob, spec, base, arrays)
        err = np.linalg.norm(got_v.reshape(ref.shape) - ref) / max(np.linalg.norm(ref), 1e-30)
        assert err < 1e-5, (v.label(), err)
        if v.split > 1:
            np.testing.assert_allclose(got_v, got_b, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
        else:
            assert np.array_equal(got_v, got_b), (v.label(), base.label())
