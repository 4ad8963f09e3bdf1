"""The Winograd form (``Tile.wino``) on a CUDA device: F(2, 3) and F(4, 3) tiles of several
product tiles against a float64 direct sum, outputs poisoned; the autotuner's pick on a
convolution it times the form for.  Skipped without CuPy or a GPU."""

import dataclasses
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from gpu_cases import device_module

from merit import workloads as W
from merit.gpu import prepare, run
from merit.gpu.runtime import TileCache
from merit.gpu.spec import spec_of
from merit.gpu.tiling import rank
from merit.gpu.wino import wino_spec

cp, pytestmark = device_module()


def _direct(x, w, pad):
    N, C, H, Wd = x.shape
    M, _, r, _ = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    Ho, Wo = H + 2 * pad - r + 1, Wd + 2 * pad - r + 1
    out = np.zeros((N, M, Ho, Wo))
    for ky in range(r):
        for kx in range(r):
            out += np.einsum("nchw,mc->nmhw", xp[:, :, ky:ky + Ho, kx:kx + Wo],
                             w[:, :, ky, kx].astype(np.float64))
    return out


SHAPES = [(2, 5, 13, 11, 7, 1), (1, 16, 8, 9, 4, 0), (3, 4, 7, 6, 5, 2), (2, 33, 20, 18, 40, 1)]


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("shape", SHAPES)
def test_wino_tiles_against_float64(m, shape):
    N, C, H, Wd, M, pad = shape
    prob = W.conv2d(N, C, H, Wd, M, 3, padding=pad)
    spec = spec_of(prob, "float32")
    spec2, _ = wino_spec(spec, m)
    rng = np.random.default_rng(zlib.crc32(repr((m, shape)).encode()))
    x = rng.standard_normal((N, C, H, Wd)).astype(np.float32)
    w = rng.standard_normal((M, C, 3, 3)).astype(np.float32)
    ref = _direct(x, w, pad)
    tiles = rank(spec2, count=6)[:3] + [t for t in rank(spec2, count=12) if t.ptxas][:1]
    assert tiles
    for t in tiles:
        tile = dataclasses.replace(t, wino=m)
        out = (cp.full(spec.pshape, np.nan, dtype=np.float32),)
        got = cp.asnumpy(run(prob, x, w, tile=tile, out=out))
        assert not np.isnan(cp.asnumpy(out[0])).any(), f"unwritten outputs with {tile.label()}"
        err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        assert err < 1e-5, f"relative error {err:.2e} with {tile.label()}"


def test_autotuner_times_the_form():
    """A fresh tuning of a stride-1 3x3 convolution: whatever it picks is right, and the form's
    tiles were among those timed (the pick's record names its finalists)."""
    import merit.gpu as gpu

    prob = W.conv2d(4, 32, 24, 24, 64, 3, padding=1)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 32, 24, 24)).astype(np.float32)
    w = rng.standard_normal((64, 32, 3, 3)).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        plan, go, out = prepare(prob, cp.asarray(x), cp.asarray(w),
                                cache=TileCache(Path(d) / "tiles.json"))
        out[0].fill(np.nan)
        go()
    got = cp.asnumpy(out[0])
    err = np.linalg.norm(got - _direct(x, w, 1)) / np.linalg.norm(_direct(x, w, 1))
    assert err < 1e-5, f"relative error {err:.2e} with {plan.tile.label()}"
    assert gpu.finals and gpu.finals[-1]["spec"].startswith("conv2d")
