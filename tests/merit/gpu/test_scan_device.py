"""The bench's integral image in one and two levels of blocked scans (``bench.gpu.integral_chain``)
on a CUDA device: the chain's result against cumulative sums in float64 on a NaN-poisoned
output, each pass tuned by the autotuner (an empty tile cache).  Skipped without CuPy or a GPU."""

import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_cases import device_module

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

cp, pytestmark = device_module()


@pytest.mark.parametrize("h, w, b, b2", [(256, 384, 16, None), (256, 384, 8, 2),
                                         (128, 512, 4, 4), (512, 256, 8, 16)])
def test_integral_chain_against_float64(h, w, b, b2, tmp_path):
    from bench.gpu import integral_chain
    from merit.gpu.runtime import TileCache

    image = cp.asarray(np.random.default_rng(h + w + b).standard_normal((h, w),
                                                                       dtype=np.float32))
    go, out, gos = integral_chain(h, w, image, TileCache(tmp_path / "t.json"), b, b2)
    assert len(gos) == (10 if b2 else 6)
    out.fill(cp.nan)
    go()
    got = cp.asnumpy(out).astype(np.float64)
    want = cp.asnumpy(image).astype(np.float64).cumsum(0).cumsum(1)
    assert not np.isnan(got).any()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5
