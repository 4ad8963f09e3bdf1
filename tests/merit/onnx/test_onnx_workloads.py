"""The workloads and strategies added for the ONNX front end, against numpy references that do
not use merit.Transform (sliding windows, explicit loops)."""

import itertools
import zlib

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from merit import strategies as S
from merit import workloads as W

TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def conv_ref(x, w, strides, pads, dilations, groups):
    """N-d grouped convolution: pad, take dilated strided windows, einsum per group."""
    d = x.ndim - 2
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[i], pads[d + i]) for i in range(d)])
    k = w.shape[2:]
    span = [dilations[i] * (k[i] - 1) + 1 for i in range(d)]
    win = sliding_window_view(x, span, axis=tuple(range(2, 2 + d)))
    win = win[(Ellipsis,) + tuple(slice(None, None, dl) for dl in dilations)]
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    cg, mg = x.shape[1] // groups, w.shape[0] // groups
    letters = "uvw"[:d]
    outs = [np.einsum(f"nc{letters}{letters.upper()},mc{letters.upper()}->nm{letters}",
                      win[:, g * cg:(g + 1) * cg], w[g * mg:(g + 1) * mg].astype(np.float64))
            for g in range(groups)]
    return np.concatenate(outs, axis=1)


@pytest.mark.parametrize("x_shape,w_shape,strides,pads,dilations,groups", [
    ((2, 3, 11), (4, 3, 3), (2,), (1, 2), (1,), 1),
    ((1, 4, 9, 8), (6, 2, 3, 2), (1, 2), (2, 0, 1, 1), (2, 1), 2),
    ((1, 2, 5, 6, 4), (2, 2, 3, 3, 2), (1, 2, 1), (1, 0, 1, 1, 1, 0), (1, 1, 2), 1),
])
@pytest.mark.parametrize("bias", [False, True])
def test_conv_nd(rng, x_shape, w_shape, strides, pads, dilations, groups, bias):
    prob = W.conv_nd(x_shape, w_shape, strides=strides, pads=pads, dilations=dilations,
                     groups=groups, bias=bias, relu=bias)
    arrays = prob.random_inputs(rng)
    ref = conv_ref(arrays[0], arrays[1], strides, pads, dilations, groups)
    if bias:
        ref = np.maximum(ref + arrays[2].reshape((1, -1) + (1,) * (len(x_shape) - 2)), 0)
    np.testing.assert_allclose(prob.run(*arrays), ref, **TOL)


def conv_transpose_ref(x, w, strides, pads, dilations, groups, output_padding):
    """Scatter every input element times its kernel into the full output, then crop."""
    n, c, *size = x.shape
    _, mg, *k = w.shape
    d = len(size)
    full = [strides[i] * (size[i] - 1) + output_padding[i] + (k[i] - 1) * dilations[i] + 1
            for i in range(d)]
    out = np.zeros([n, mg * groups] + full)
    cg = c // groups
    for ci in range(c):
        g = ci // cg
        for pos in itertools.product(*[range(s) for s in size]):
            for kk in itertools.product(*[range(v) for v in k]):
                y = tuple(pos[i] * strides[i] + kk[i] * dilations[i] for i in range(d))
                out[(slice(None), slice(g * mg, (g + 1) * mg)) + y] += (
                    x[(slice(None), ci) + pos][:, None] * w[(ci, slice(None)) + kk][None])
    crop = tuple(slice(pads[i], full[i] - pads[d + i]) for i in range(d))
    return out[(slice(None), slice(None)) + crop]


@pytest.mark.parametrize("x_shape,w_shape,strides,pads,dilations,groups,op", [
    ((1, 2, 5), (2, 3, 4), (3,), (1, 2), (1,), 1, (1,)),
    ((2, 4, 3, 4), (4, 1, 3, 2), (2, 1), (0, 1, 1, 0), (1, 2), 2, (1, 0)),
    ((1, 1, 3, 2, 2), (1, 2, 2, 3, 2), (1, 2, 2), (0, 0, 0, 0, 1, 0), (2, 1, 1), 1, (0, 0, 1)),
])
def test_conv_transpose_nd(rng, x_shape, w_shape, strides, pads, dilations, groups, op):
    prob = W.conv_transpose_nd(x_shape, w_shape, strides=strides, pads=pads, dilations=dilations,
                               groups=groups, output_padding=op, bias=True)
    x, w, b = prob.random_inputs(rng)
    ref = conv_transpose_ref(x, w, strides, pads, dilations, groups, op)
    ref = ref + b.reshape((1, -1) + (1,) * (len(x_shape) - 2))
    np.testing.assert_allclose(prob.run(x, w, b), ref, **TOL)


def test_conv_transpose_refuses_stride_and_dilation():
    with pytest.raises(ValueError, match="axis 0: stride 2 and dilation 2 both above 1"):
        W.conv_transpose_nd((1, 1, 4), (1, 1, 3), strides=(2,), dilations=(2,))


def pool_ref(x, kernel, strides, pads, dilations, out, kind, include):
    """Explicit loops over output positions; pads and the ceil overhang are excluded or counted
    as ONNX says."""
    d = x.ndim - 2
    size = x.shape[2:]
    res = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*[range(v) for v in out]):
        vals, count = [], 0
        for kk in itertools.product(*[range(v) for v in kernel]):
            y = [o[i] * strides[i] - pads[i] + kk[i] * dilations[i] for i in range(d)]
            if all(0 <= y[i] < size[i] for i in range(d)):
                vals.append(x[(slice(None), slice(None)) + tuple(y)])
                count += 1
            elif include and all(-pads[i] <= y[i] < size[i] + pads[d + i] for i in range(d)):
                count += 1
        stack = np.stack(vals)
        res[(slice(None), slice(None)) + o] = stack.max(0) if kind == "max" else \
            stack.sum(0) / count
    return res


@pytest.mark.parametrize("x_shape,kernel,strides,pads,dilations,ceil", [
    ((1, 2, 7, 6), (3, 2), (2, 2), (1, 0, 1, 1), (1, 1), True),
    ((2, 1, 9), (3,), (2,), (1, 1), (2,), False),
    ((1, 1, 5, 5, 4), (2, 3, 2), (2, 1, 2), (0, 1, 1, 1, 1, 0), (1, 1, 1), True),
])
@pytest.mark.parametrize("kind,include", [("max", False), ("avg", False), ("avg", True)])
def test_pool_nd(rng, x_shape, kernel, strides, pads, dilations, ceil, kind, include):
    if kind == "max" and dilations[0] > 1:
        with pytest.raises(ValueError, match="clamped edges differ from -inf padding"):
            W.pool_nd(x_shape, kernel, kind=kind, strides=strides, pads=pads,
                      dilations=dilations, ceil_mode=ceil)
        return
    prob = W.pool_nd(x_shape, kernel, kind=kind, strides=strides, pads=pads, dilations=dilations,
                     ceil_mode=ceil, count_include_pad=include)
    (x,) = [a for a, t in zip(prob.random_inputs(rng), prob.tensors, strict=True)
            if t.value is None]
    extra = [a for a, t in zip(prob.random_inputs(rng), prob.tensors, strict=True)
             if t.value is not None]
    out = prob.run(x, *extra)
    ref = pool_ref(x, kernel, strides, pads, dilations, out.shape[2:], kind, include)
    np.testing.assert_allclose(out, ref, **TOL)


def test_global_average_pool_is_mean(rng):
    prob = W.pool_nd((2, 3, 4, 5), (4, 5), kind="avg")
    assert isinstance(prob.strategy, S.Mean)
    (x,) = prob.random_inputs(rng)
    np.testing.assert_allclose(prob.run(x)[..., 0, 0], x.mean(axis=(2, 3)), **TOL)


@pytest.mark.parametrize("op,params,ref", [
    ("relu", {}, lambda x: np.maximum(x, 0)),
    ("leaky_relu", {"alpha": 0.1}, lambda x: np.where(x > 0, x, 0.1 * x)),
    ("clip", {"low": -0.5, "high": 0.25}, lambda x: np.clip(x, -0.5, 0.25)),
    ("sigmoid", {}, lambda x: 1 / (1 + np.exp(-x.astype(np.float64)))),
    ("scale", {"alpha": 3.0}, lambda x: 3 * x),
])
def test_elementwise_unary(rng, op, params, ref):
    prob = W.elementwise(op, [(3, 4, 5)], **params)
    (x,) = prob.random_inputs(rng)
    np.testing.assert_allclose(prob.run(x), ref(x), **TOL)


def test_elementwise_broadcast(rng):
    prob = W.elementwise("add", [(2, 1, 4), (3, 1), ()])
    a, b, c = prob.random_inputs(rng)
    np.testing.assert_allclose(prob.run(a, b, c), a + b + c[0], **TOL)
    prob = W.elementwise("batchnorm", [(2, 3, 4), (3, 1), (3, 1), (3, 1), (3, 1)], epsilon=0.1)
    x, s, b, m, v = prob.random_inputs(rng)
    v = np.abs(v)
    np.testing.assert_allclose(prob.run(x, s, b, m, v), (x - m) / np.sqrt(v + 0.1) * s + b,
                               **TOL)


def test_elementwise_errors():
    with pytest.raises(ValueError, match="Elementwise op must be one of relu, .*, not 'tanh'"):
        S.Elementwise("tanh")
    with pytest.raises(ValueError, match=r"'clip' takes parameters \(low, high\), got \(low\)"):
        S.Elementwise("clip", low=0)
    with pytest.raises(ValueError, match=r"'add': shapes \[\(2, 3\), \(4,\)\] do not broadcast"):
        W.elementwise("add", [(2, 3), (4,)])


def test_transpose_and_depth_to_space(rng):
    prob = W.transpose((2, 3, 4), (2, 0, 1))
    (x,) = prob.random_inputs(rng)
    np.testing.assert_array_equal(prob.run(x), x.transpose(2, 0, 1))
    prob = W.depth_to_space(1, 2, 3, 4, 2, mode="DCR")
    (x,) = prob.random_inputs(rng)
    ref = x.reshape(1, 2, 2, 2, 3, 4).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 6, 8)
    np.testing.assert_array_equal(prob.run(x), ref)


@pytest.mark.parametrize("axes", [(1,), (0, 2)])
def test_softmax(rng, axes):
    prob = W.softmax((3, 5, 4), axes)
    (x,) = prob.random_inputs(rng)
    x = x * 30          # large values: the running maximum must keep exp() finite
    e = np.exp(x - x.max(axis=axes, keepdims=True))
    np.testing.assert_allclose(prob.run(x), e / e.sum(axis=axes, keepdims=True), **TOL)


def test_lrn(rng):
    prob = W.lrn((2, 7, 3, 3), 4, alpha=0.2, beta=0.6, bias=2.0)
    (x,) = prob.random_inputs(rng)
    sq = np.pad(x.astype(np.float64) ** 2, ((0, 0), (1, 2), (0, 0), (0, 0)))
    window = sum(sq[:, i:i + 7] for i in range(4))
    np.testing.assert_allclose(prob.run(x), x / (2.0 + 0.2 / 4 * window) ** 0.6, **TOL)


@pytest.mark.parametrize("a_shape,b_shape", [((3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)),
                                             ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((4,), (4,))])
def test_matmul(rng, a_shape, b_shape):
    prob = W.matmul(a_shape, b_shape)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    arrays = [a.reshape(t.shape) for t in prob.tensors[:1]] + [b.reshape(prob.tensors[1].shape)]
    out = prob.run(*arrays)
    np.testing.assert_allclose(out.reshape(np.shape(a @ b)), a @ b, **TOL)
    assert out.shape == (np.shape(a @ b) or (1,))


@pytest.mark.parametrize("ta,tb,bias", [(False, False, None), (True, False, (5,)),
                                        (False, True, (3, 1)), (True, True, ())])
def test_gemm_t(rng, ta, tb, bias):
    prob = W.gemm_t(3, 5, 4, trans_a=ta, trans_b=tb, bias_shape=bias, relu=bias is not None)
    arrays = prob.random_inputs(rng)
    a = arrays[0].T if ta else arrays[0]
    b = arrays[1].T if tb else arrays[1]
    ref = a @ b
    if bias is not None:
        ref = np.maximum(ref + arrays[2].reshape(bias), 0)
    np.testing.assert_allclose(prob.run(*arrays), ref, **TOL)
