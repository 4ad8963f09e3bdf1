"""The product form of 1 x 1 convolutions (``Tile.flat``) on a CUDA device: the autotuner's
product tiles (plain, the second round's forms, padded rows of both, split-K) against a float64
reference computed here, outputs poisoned; the autotuner's pick on a convolution it times the
form for.  Skipped without CuPy or a GPU."""

import dataclasses
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from gpu_cases import device_module

from merit import workloads as W
from merit.gpu import _compile_all, prepare, run
from merit.gpu.flat import flat_spec
from merit.gpu.runtime import TileCache
from merit.gpu.spec import spec_of
from merit.gpu.tiling import check_tile, flat_variants, pad_variants, rank

cp, pytestmark = device_module()


def _direct(x, w):
    """float64 1 x 1 convolution, one output channel at a time (NCHW, MC11)."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    out = np.zeros((x.shape[0], w.shape[0]) + x.shape[2:])
    for f in range(w.shape[0]):
        out[:, f] = (x * w[f, :, 0, 0][None, :, None, None]).sum(axis=1)
    return out


#: (N, C, H, W, M): ragged sizes, one image, one channel, rows of a multiple of 4 words
SHAPES = [(4, 19, 13, 11, 23), (1, 37, 9, 17, 70), (2, 1, 8, 8, 5), (3, 40, 8, 6, 33)]


@pytest.mark.parametrize("shape", SHAPES)
def test_flat_tiles_against_float64(shape):
    N, C, H, Wd, M = shape
    prob = W.conv2d(N, C, H, Wd, M, 1)
    spec = spec_of(prob, "float32")
    rng = np.random.default_rng(zlib.crc32(repr(shape).encode()))
    x = rng.standard_normal((N, C, H, Wd)).astype(np.float32)
    w = rng.standard_normal((M, C, 1, 1)).astype(np.float32)
    ref = _direct(x, w)
    spec2 = flat_spec(spec)[0]
    tiles = flat_variants(spec)
    tiles += [check_tile(spec, dataclasses.replace(t, flat=True))
              for t in rank(spec2, count=12) if t.split > 1][:2]
    # the padded rows of the second round's forms (the autotuner's fourth round, pad_variants)
    tiles += [v for t in list(tiles) if t.lean or t.vread
              for v in pad_variants(spec, [(1.0, t)])][:3]
    assert tiles
    _compile_all(spec, tiles)   # concurrently; each launch below finds its kernel
    for tile in tiles:
        out = (cp.full(spec.pshape, np.nan, dtype=np.float32),)
        got = cp.asnumpy(run(prob, x, w, tile=tile, out=out))
        assert not np.isnan(cp.asnumpy(out[0])).any(), f"unwritten outputs with {tile.label()}"
        err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        assert err < 1e-5, f"relative error {err:.2e} with {tile.label()}"


def test_autotuner_times_the_form():
    """A fresh tuning of a 1 x 1 convolution, whose third round times the form: whatever it
    picks is right, and the tuning left its record."""
    import merit.gpu as gpu

    prob = W.conv2d(2, 45, 21, 19, 67, 1)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 45, 21, 19)).astype(np.float32)
    w = rng.standard_normal((67, 45, 1, 1)).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        plan, go, out = prepare(prob, cp.asarray(x), cp.asarray(w),
                                cache=TileCache(Path(d) / "tiles.json"))
        out[0].fill(np.nan)
        go()
    got = cp.asnumpy(out[0])
    err = np.linalg.norm(got - _direct(x, w)) / np.linalg.norm(_direct(x, w))
    assert err < 1e-5, f"relative error {err:.2e} with {plan.tile.label()}"
    assert gpu.finals and gpu.finals[-1]["spec"].startswith("conv2d")


#: (N, C, H, W, M, stride, padding): strided, padded, both; ragged sizes
GATHERED = [(4, 19, 13, 11, 23, 2, 0), (2, 37, 9, 17, 70, 1, 1), (3, 40, 15, 12, 33, 2, 1),
            (1, 7, 20, 9, 5, 3, 2)]


@pytest.mark.parametrize("shape", GATHERED)
def test_gathered_product_against_float64(shape):
    """A strided or padded 1 x 1 convolution's product form (its image gathered in the launch):
    the autotuner's product tiles, two split-K ones, the padded and ragged forms of the second
    round's forms, on NaN-poisoned outputs, against the golden model's convolution in float64,
    each launched twice (the gather filled again)."""
    N, C, H, Wd, M, s, p = shape
    prob = W.conv2d(N, C, H, Wd, M, 1, stride=s, padding=p)
    spec = spec_of(prob, "float32")
    rng = np.random.default_rng(zlib.crc32(repr(shape).encode()))
    x = rng.standard_normal((N, C, H, Wd)).astype(np.float32)
    w = rng.standard_normal((M, C, 1, 1)).astype(np.float32)
    ref = prob.run(x.astype(np.float64), w.astype(np.float64))
    spec2 = flat_spec(spec)[0]
    tiles = flat_variants(spec)
    tiles += [check_tile(spec, dataclasses.replace(t, flat=True))
              for t in rank(spec2, count=12) if t.split > 1][:2]
    tiles += [v for t in list(tiles) if t.lean or t.vread
              for v in pad_variants(spec, [(1.0, t)])][:4]
    assert tiles
    _compile_all(spec, tiles)
    for tile in tiles:
        for _ in range(2):
            out = (cp.full(spec.pshape, np.nan, dtype=np.float32),)
            got = cp.asnumpy(run(prob, x, w, tile=tile, out=out))
            assert not np.isnan(cp.asnumpy(out[0])).any(), f"unwritten outputs with {tile.label()}"
            err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
            assert err < 1e-5, f"relative error {err:.2e} with {tile.label()}"
