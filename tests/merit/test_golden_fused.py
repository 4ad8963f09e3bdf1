"""CONV+Pool in one kernel, deconvolution with a threshold, alpha blending, and the standard
arithmetic counts of the workloads (hand-computed), against references that do not use MERIT."""

import zlib

import numpy as np
import pytest
from golden_refs import conv2d, deconv2d, pool2d

from merit import workloads as wl
from merit.problem import Ops

TOL = dict(rtol=1e-4, atol=1e-4)


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


POOL_CASES = [
    # n, c, h, w, m, k, stride, padding, pool, pool_stride, kind, relu
    (1, 3, 12, 12, 4, 3, 1, 1, 2, None, "max", False),
    (2, 2, 15, 13, 3, 3, 2, 0, 3, 2, "max", True),
    (1, 4, 10, 11, 2, 5, 1, 2, 2, None, "avg", False),
    (1, 2, 9, 9, 3, 3, 1, 1, 3, None, "avg", True),
]


@pytest.mark.parametrize("n,c,h,w,m,k,stride,padding,pool,pool_stride,kind,relu", POOL_CASES)
def test_conv_pool_is_the_convolution_then_the_pooling(rng, n, c, h, w, m, k, stride, padding,
                                                       pool, pool_stride, kind, relu):
    prob = wl.conv_pool2d(n, c, h, w, m, k, stride=stride, padding=padding, pool=pool,
                          pool_stride=pool_stride, pool_kind=kind, relu=relu)
    img, W = prob.random_inputs(rng)
    conv = conv2d(img, W, stride, padding)
    if relu:
        conv = np.maximum(conv, 0)
    ref = pool2d(conv, pool, pool_stride or pool, 0, kind)
    assert prob.levels == (2, 3)
    np.testing.assert_allclose(prob.run(img, W), ref, **TOL)


def test_deconv_threshold_is_a_mask_of_the_deconvolution(rng):
    prob = wl.deconv2d(1, 3, 4, 5, 2, 5, stride=3, padding=1, threshold=3, high=255)
    img, W = prob.random_inputs(rng, np.int16, -4, 4)
    ref = np.where(deconv2d(img, W, 3, 1) >= 3, 255, 0)
    out = prob.run(img, W)
    np.testing.assert_array_equal(out, ref)
    assert 0 < (out == 255).mean() < 1


@pytest.mark.parametrize("c, h, w, scale", [(3, 5, 7, 1), (2, 6, 9, 3)])
def test_alpha_blend(rng, c, h, w, scale):
    prob = wl.alpha_blend(c, h, w, scale=scale)
    X, A = prob.random_inputs(rng)
    big = np.repeat(np.repeat(A, scale, axis=1), scale, axis=2)
    ref = big[0][None] * X[0] + big[1][None] * X[1]
    np.testing.assert_allclose(prob.run(X, A), ref, **TOL)


# ---- standard counts, by hand --------------------------------------------------------------

@pytest.mark.parametrize("problem, count, unit", [
    # a 3x3 'same' convolution of one channel over 40x30: 1,200 outputs x 9 taps
    (lambda: wl.conv2d(1, 1, 30, 40, 1, 3, padding=1), 10_800, "MAC"),
    (lambda: wl.filter3x3(30, 40), 10_800, "MAC"),
    # depthwise 3x3: 9 MACs per output, 32 x 64 x 64 outputs
    (lambda: wl.depthwise(1, 32, 64, 64, 3, padding=1), 9 * 32 * 64 * 64, "MAC"),
    # the integral image of one 100-wide row is its prefix sum: 1 + 2 + ... + 100 adds
    (lambda: wl.integral_image(1, 100), 5_050, "add"),
    # 2 x 3: terms (y + 1)(x + 1) = 1 + 2 + 3 + 2 + 4 + 6
    (lambda: wl.integral_image(2, 3), 18, "add"),
    (lambda: wl.gemm(256, 128, 256), 256 * 128 * 256, "MAC"),
    (lambda: wl.fc(32, 9216, 4096), 32 * 9216 * 4096, "MAC"),
    # AlexNet CONV1: 96 x 55 x 55 outputs x 3 x 11 x 11
    (lambda: wl.conv2d(1, 3, 227, 227, 96, 11, stride=4), 105_415_200, "MAC"),
    # grouped: 2 groups of 48 -> 128, 27 x 27, 5 x 5
    (lambda: wl.conv2d(1, 96, 27, 27, 256, 5, padding=2, groups=2), 256 * 729 * 48 * 25, "MAC"),
    (lambda: wl.correlation(64, 64, 64, 5), 64 * 64 * 121 * 64, "MAC"),
    (lambda: wl.motion_estimation(720, 1280), 720 * 1280 * 225, "absolute difference"),
    (lambda: wl.max_pool2d(1, 2, 8, 8, 2), 2 * 16 * 4, "compare"),
    # VGG CONV2 + 2x2 pooling: 64 x 224 x 224 conv outputs x 576 MACs + one compare each
    (lambda: wl.conv_pool2d(1, 64, 224, 224, 64, 3, padding=1, pool=2),
     64 * 224 * 224 * 576 + 64 * 224 * 224, "MAC + compare"),
    # 3x3 stride 2 pooling of 13 x 13 conv outputs reads all 13 x 13 once (counted once)
    (lambda: wl.conv_pool2d(1, 1, 13, 13, 1, 1, pool=3, pool_stride=2), 169 + 36 * 9,
     "MAC + compare"),
    # a 1-D deconvolution axis of 2 inputs, kernel 3, stride 2 -> 5 outputs: all 6 pairs land
    (lambda: wl.deconv2d(1, 1, 2, 2, 1, 3, stride=2), 36, "MAC"),
    # padding 1 crops the first and last output: pairs (0,0) and (1,2) fall outside, 4 per axis
    (lambda: wl.deconv2d(1, 1, 2, 2, 1, 3, stride=2, padding=1), 16, "MAC"),
    (lambda: wl.alpha_blend(3, 216, 324), 2 * 3 * 216 * 324, "MAC"),
    (lambda: wl.subpixel_conv(1, 32, 16, 16, 32, 3, 2), 32 * 32 * 32 * 32 * 9, "MAC"),
])
def test_standard_counts(problem, count, unit):
    assert problem().ops == Ops(count, unit)


def test_ops_checks_its_count():
    with pytest.raises(TypeError, match=r"Ops count must be an integer, not 1\.5"):
        Ops(1.5, "MAC")
    with pytest.raises(ValueError, match="Ops count must be >= 0, not -1"):
        Ops(-1, "MAC")
