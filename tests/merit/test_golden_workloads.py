"""Every workload against an independent numpy/scipy reference, over a product of parameters."""

import zlib

import numpy as np
import pytest
from golden_refs import (
    bilateral,
    conv2d,
    conv2d_scipy,
    correlation,
    deconv2d,
    pixel_shuffle,
    pool2d,
    sad_volume,
    same_filter,
)

from merit import workloads as wl

TOL = dict(rtol=1e-4, atol=1e-4)


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (5, 3, 7), (16, 9, 33)])
def test_gemm(rng, m, n, k):
    prob = wl.gemm(m, n, k)
    A, B = prob.random_inputs(rng)
    np.testing.assert_allclose(prob.run(A, B), A.astype(np.float64) @ B, **TOL)


def test_fc_batch(rng):
    prob = wl.fc(4, 20, 7)
    x, W = prob.random_inputs(rng)
    np.testing.assert_allclose(prob.run(x, W), x.astype(np.float64) @ W.T, **TOL)


CONV_CASES = [
    # n, c, h, w, m, k, stride, padding, dilation, groups
    (1, 1, 6, 7, 1, 3, 1, 0, 1, 1),
    (2, 3, 9, 8, 4, 3, 2, 1, 1, 1),
    (1, 4, 11, 10, 6, 3, 1, 2, 2, 2),
    (2, 6, 7, 9, 6, 5, 3, 2, 1, 3),
    (1, 2, 5, 5, 2, 1, 1, 0, 1, 1),
]


@pytest.mark.parametrize("n,c,h,w,m,k,stride,padding,dilation,groups", CONV_CASES)
def test_conv2d(rng, n, c, h, w, m, k, stride, padding, dilation, groups):
    prob = wl.conv2d(n, c, h, w, m, k, stride=stride, padding=padding, dilation=dilation,
                     groups=groups)
    img, W = prob.random_inputs(rng)
    assert W.shape == (m, c // groups, k, k)
    ref = conv2d(img, W, stride, padding, dilation, groups)
    np.testing.assert_allclose(prob.run(img, W), ref, **TOL)


def test_conv2d_against_scipy_integers(rng):
    prob = wl.conv2d(2, 3, 8, 7, 4, 3)
    img, W = prob.random_inputs(rng, np.int16)
    out = prob.run(img, W)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, conv2d_scipy(img, W).astype(np.int64))


def test_conv_relu(rng):
    prob = wl.conv_relu(1, 3, 8, 8, 5, 3, padding=1)
    img, W = prob.random_inputs(rng)
    ref = np.maximum(conv2d(img, W, padding=1), 0)
    out = prob.run(img, W)
    np.testing.assert_allclose(out, ref, **TOL)
    assert (out == 0).any() and (out > 0).any()


@pytest.mark.parametrize("relu", [False, True])
def test_residual(rng, relu):
    prob = wl.residual(2, 4, 6, 6, 4, 3, padding=1, relu=relu)
    assert [op.stage for op in prob.operands] == ["loop", "loop", "post"]
    img, W, R = prob.random_inputs(rng)
    ref = conv2d(img, W, padding=1) + R
    np.testing.assert_allclose(prob.run(img, W, R), np.maximum(ref, 0) if relu else ref, **TOL)


@pytest.mark.parametrize("stride,padding,multiplier", [(1, 1, 1), (2, 1, 2), (1, 0, 1)])
def test_depthwise(rng, stride, padding, multiplier):
    prob = wl.depthwise(2, 5, 9, 8, 3, stride=stride, padding=padding, multiplier=multiplier)
    img, W = prob.random_inputs(rng)
    ref = conv2d(img, W, stride, padding, groups=5)
    np.testing.assert_allclose(prob.run(img, W), ref, **TOL)


@pytest.mark.parametrize("k,stride,padding", [(3, 1, 0), (3, 2, 1), (4, 2, 1), (5, 3, 2),
                                              (2, 3, 0)])
def test_deconv2d(rng, k, stride, padding):
    prob = wl.deconv2d(2, 3, 5, 4, 2, k, stride=stride, padding=padding)
    img, W = prob.random_inputs(rng)
    ref = deconv2d(img, W, stride, padding)
    out = prob.run(img, W)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, **TOL)


@pytest.mark.parametrize("k,stride,padding", [(2, None, 0), (3, 2, 1), (3, 1, 1), (5, 2, 2)])
@pytest.mark.parametrize("op", ["max", "avg"])
def test_pooling(rng, op, k, stride, padding):
    build = wl.max_pool2d if op == "max" else wl.avg_pool2d
    prob = build(2, 3, 10, 9, k, stride=stride, padding=padding)
    (img,) = prob.random_inputs(rng)
    ref = pool2d(img - 5.0, k, k if stride is None else stride, padding, op)
    np.testing.assert_allclose(prob.run(img - 5.0), ref, **TOL)


@pytest.mark.parametrize("r", [1, 2, 3])
def test_pixel_shuffle(rng, r):
    prob = wl.pixel_shuffle(2, 3, 4, 5, r)
    (img,) = prob.random_inputs(rng)
    np.testing.assert_array_equal(prob.run(img), pixel_shuffle(img, r))


@pytest.mark.parametrize("k,r", [(3, 2), (1, 3), (5, 2)])
def test_subpixel_conv(rng, k, r):
    """ESPCN layer = convolution to m r^2 channels, then the pixel shuffle (two references)."""
    prob = wl.subpixel_conv(2, 3, 5, 6, 4, k, r)
    img, weights = prob.random_inputs(rng)
    ref = pixel_shuffle(conv2d(img, weights, padding=(k - 1) // 2), r)
    assert ref.shape == (2, 4, 5 * r, 6 * r)
    np.testing.assert_allclose(prob.run(img, weights), ref, **TOL)


@pytest.mark.parametrize("d", [0, 1, 3])
def test_correlation(rng, d):
    prob = wl.correlation(4, 7, 9, d)
    I1, I2 = prob.random_inputs(rng)
    np.testing.assert_allclose(prob.run(I1, I2), correlation(I1, I2, d), **TOL)


@pytest.mark.parametrize("h,w,block,search", [(16, 24, 8, 2), (16, 16, 8, 7), (12, 8, 4, 1)])
def test_motion_estimation_sad(rng, h, w, block, search):
    prob = wl.motion_estimation(h, w, block=block, search=search)
    cur, ref = prob.random_inputs(rng, np.uint8, 0, 256)
    np.testing.assert_array_equal(prob.run(cur, ref), sad_volume(cur, ref, block, search))


def test_motion_estimation_best(rng):
    prob = wl.motion_estimation(16, 24, block=8, search=3, best=True)
    assert prob.levels == (2, 2)
    cur, ref = prob.random_inputs(rng, np.int32, 0, 4)
    cur[:8, :8] = 0
    ref[:8, :16] = 0  # block (0, 0) matches many candidates exactly: the tie break matters
    vol = sad_volume(cur, ref, 8, 3).reshape(2, 3, -1)
    first = vol.argmin(axis=-1)
    sad, u, v = prob.run(cur, ref)
    np.testing.assert_array_equal(sad, vol.min(axis=-1))
    np.testing.assert_array_equal(u * 7 + v, first)
    assert ((vol == vol.min(axis=-1, keepdims=True)).sum(axis=-1) > 1).any()


@pytest.mark.parametrize("sigma_s,sigma_r", [(1.0, 0.5), (1.5, 2.0)])
def test_bilateral(rng, sigma_s, sigma_r):
    prob = wl.bilateral(9, 11, sigma_s=sigma_s, sigma_r=sigma_r)
    r = prob.a_shape[0] // 2
    img, G = prob.random_inputs(rng, np.float64)
    assert [t.name for t in prob.tensors] == ["I", "G"]
    np.testing.assert_allclose(prob.run(img, G), bilateral(img, sigma_s, sigma_r, r), **TOL)


def test_integral_image(rng):
    prob = wl.integral_image(6, 9)
    (img,) = prob.random_inputs(rng, np.int32)
    np.testing.assert_array_equal(prob.run(img), img.cumsum(axis=0).cumsum(axis=1))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_separable_filter(rng, k):
    prob = wl.separable_filter(8, 10, k)
    img, hk, v = prob.random_inputs(rng)
    ref = same_filter(img, np.outer(v, hk))
    np.testing.assert_allclose(prob.run(img, hk, v), ref, **TOL)


def test_filter3x3(rng):
    prob = wl.filter3x3(7, 12)
    img, W = prob.random_inputs(rng)
    np.testing.assert_allclose(prob.run(img, W), same_filter(img, W), **TOL)


def test_ece408(rng):
    prob = wl.ece408(b=3)
    assert prob.p_shape == (3, 50, 24, 24) and prob.a_shape == (1, 5, 5)
    img, W = prob.random_inputs(rng)
    np.testing.assert_allclose(prob.run(img, W), conv2d_scipy(img, W), **TOL)
