"""Workloads over random shapes and options (seeded) against the independent references."""

import numpy as np
import pytest
from golden_refs import conv2d, correlation, deconv2d, pool2d

from merit import workloads as wl

TOL = dict(rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", range(25))
def test_conv2d_random(seed):
    rng = np.random.default_rng(1000 + seed)
    groups = int(rng.choice([1, 1, 2, 3]))
    c, m = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
    k, stride, dilation = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
    padding = int(rng.integers(0, k))
    span = dilation * (k - 1) + 1
    h = int(rng.integers(max(1, span - 2 * padding), 14))
    w = int(rng.integers(max(1, span - 2 * padding), 14))
    n = int(rng.integers(1, 3))
    prob = wl.conv2d(n, c, h, w, m, k, stride=stride, padding=padding, dilation=dilation,
                     groups=groups, relu=bool(rng.integers(2)))
    img, wgt = prob.random_inputs(rng, np.float64)
    ref = conv2d(img, wgt, stride, padding, dilation, groups)
    if prob.strategy.__class__.__name__ == "DotReLU":
        ref = np.maximum(ref, 0)
    np.testing.assert_allclose(prob.run(img, wgt), ref, **TOL)


@pytest.mark.parametrize("seed", range(15))
def test_deconv2d_random(seed):
    rng = np.random.default_rng(2000 + seed)
    k, stride = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    padding = int(rng.integers(0, k))
    h, w = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    if (h - 1) * stride - 2 * padding + k <= 0 or (w - 1) * stride - 2 * padding + k <= 0:
        padding = 0
    prob = wl.deconv2d(int(rng.integers(1, 3)), int(rng.integers(1, 4)), h, w,
                       int(rng.integers(1, 4)), k, stride=stride, padding=padding)
    img, wgt = prob.random_inputs(rng, np.float64)
    np.testing.assert_allclose(prob.run(img, wgt), deconv2d(img, wgt, stride, padding), **TOL)


@pytest.mark.parametrize("seed", range(15))
def test_pooling_random(seed):
    rng = np.random.default_rng(3000 + seed)
    k = int(rng.integers(1, 5))
    stride, padding = int(rng.integers(1, 4)), int(rng.integers(0, k // 2 + 1))
    h, w = int(rng.integers(k, 12)), int(rng.integers(k, 12))
    op = str(rng.choice(["max", "avg"]))
    build = wl.max_pool2d if op == "max" else wl.avg_pool2d
    prob = build(1, 2, h, w, k, stride=stride, padding=padding)
    (img,) = prob.random_inputs(rng, np.float64)
    np.testing.assert_allclose(prob.run(img), pool2d(img, k, stride, padding, op), **TOL)


@pytest.mark.parametrize("seed", range(8))
def test_correlation_random(seed):
    rng = np.random.default_rng(4000 + seed)
    c, h, w, d = (int(v) for v in rng.integers(1, 6, 4))
    prob = wl.correlation(c, h + 2, w + 2, d)
    i1, i2 = prob.random_inputs(rng, np.float64)
    np.testing.assert_allclose(prob.run(i1, i2), correlation(i1, i2, d), **TOL)
