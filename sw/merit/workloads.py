"""The workload library (the kernels of §VI of the MERIT paper): one ``Problem`` per function.

Layouts: images NCHW, convolution weights MCKK (``(M, C / groups, K, K)``), transposed-convolution
weights CMKK (as PyTorch's ``ConvTranspose2d``).  Every problem is checked in ``tests/merit``
against a numpy/scipy reference that does not use MERIT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import strategies as S
from .problem import Ops, Output, Problem
from .transform import Index, Transform

__all__ = [
    "gemm", "fc", "conv2d", "conv_relu", "residual", "depthwise", "deconv2d", "max_pool2d",
    "avg_pool2d", "pixel_shuffle", "subpixel_conv", "correlation", "motion_estimation", "bilateral",
    "integral_image", "separable_filter", "filter3x3", "ece408", "conv_out", "conv_pool2d",
    "alpha_blend", "deconv2d_phases", "deconv_phase_groups", "deconv_phase_weights", "PhaseGroup",
    "conv_nd", "conv_transpose_nd", "pool_nd", "elementwise", "transpose", "depth_to_space",
    "softmax", "lrn", "matmul", "gemm_t",
]


def _pos(**sizes):
    for key, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{key} must be an integer, not {v!r}")
        if v <= 0:
            raise ValueError(f"{key} must be positive, not {v}")


def _nonneg(**sizes):
    for key, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{key} must be an integer, not {v!r}")
        if v < 0:
            raise ValueError(f"{key} must be >= 0, not {v}")


def conv_out(size, k, stride=1, padding=0, dilation=1):
    """Output size of a convolution along one axis; ValueError if the kernel does not fit."""
    out = (size + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    if out <= 0:
        raise ValueError(f"kernel {k} (dilation {dilation}) does not fit input size {size} with "
                         f"padding {padding}")
    return out


def gemm(m, n, k):
    """``C = A @ B`` (Fig. 2): ``A`` (m, k), ``B`` (k, n); p = (m, n), a = (k,)."""
    _pos(m=m, n=n, k=k)
    A = Transform((m, k), p=[Index(0), None], a=[Index(1)], name="A")
    B = Transform((k, n), p=[None, Index(1)], a=[Index(0)], name="B")
    return Problem("gemm", S.Dot(), (m, n), (k,), [A, B], ops=Ops(m * n * k, "MAC"))


def fc(batch, in_features, out_features):
    """Fully connected layer ``y = x @ W.T``: ``x`` (batch, in), ``W`` (out, in)."""
    _pos(batch=batch, in_features=in_features, out_features=out_features)
    x = Transform((batch, in_features), p=[Index(0), None], a=[Index(1)], name="x")
    W = Transform((out_features, in_features), p=[None, Index(0)], a=[Index(1)], name="W")
    return Problem("fc", S.Dot(), (batch, out_features), (in_features,), [x, W],
                   ops=Ops(batch * out_features * in_features, "MAC"))


def conv2d(n, c, h, w, m, k, *, stride=1, padding=0, dilation=1, groups=1, relu=False,
           residual=False):
    """2-D convolution (cross-correlation, as DNN frameworks define it), NCHW / MCKK.

    ``I`` (n, c, h, w), ``W`` (m, c / groups, k, k), optional residual ``R`` (n, m, ho, wo) added
    in PostLoop.  p = (n, m, ho, wo), or (n, groups, m / groups, ho, wo) when ``groups > 1``;
    a = (c / groups, k, k).  Zero padding.
    """
    _pos(n=n, c=c, h=h, w=w, m=m, k=k, stride=stride, dilation=dilation, groups=groups)
    _nonneg(padding=padding)
    if c % groups or m % groups:
        raise ValueError(f"groups={groups} must divide the channels c={c} and m={m}")
    ho = conv_out(h, k, stride, padding, dilation)
    wo = conv_out(w, k, stride, padding, dilation)
    cg, mg = c // groups, m // groups
    gp = [Index(1, cg)] if groups > 1 else []
    image = Transform(
        (n, c, h, w),
        p=[Index(0)] + gp + [None, Index(2, stride), Index(3, stride)],
        a=[Index(1), Index(2, dilation, -padding), Index(3, dilation, -padding)], name="I")
    gw = [Index(0, mg)] if groups > 1 else []
    weights = Transform(
        (m, cg, k, k), p=[None] + gw + [Index(0), None, None],
        a=[Index(1), Index(2), Index(3)], name="W")
    p_shape = (n,) + ((groups, mg) if groups > 1 else (m,)) + (ho, wo)
    operands = [image, weights]
    if residual:
        operands.append(Transform((n, m, ho, wo), p=[Index(0)] + gw + [Index(1), Index(2),
                                                                         Index(3)],
                                  a=[None, None, None], name="R"))
        strategy = S.DotResidual(relu=relu)
    else:
        strategy = S.DotReLU() if relu else S.Dot()
    out = Output("out", (n, m, ho, wo), reshape=(n, m, ho, wo))
    macs = n * m * ho * wo * cg * k * k
    ops = Ops(macs + n * m * ho * wo, "MAC + add") if residual else Ops(macs, "MAC")
    return Problem("conv2d", strategy, p_shape, (cg, k, k), operands, outputs=[out], ops=ops)


def conv_pool2d(n, c, h, w, m, k, *, stride=1, padding=0, dilation=1, pool=2, pool_stride=None,
                pool_kind="max", relu=False):
    """Convolution followed by ``pool`` x ``pool`` pooling, fused in one kernel with two
    accumulation levels (§III-B): level 0 walks the pooling window, level 1 the MACs of one
    convolution output (:class:`~merit.strategies.DotPool`).

    ``I`` (n, c, h, w), ``W`` (m, c, k, k); the convolution as :func:`conv2d` (output
    ``ho x wo``), then pooling without padding (stride ``pool_stride``, default ``pool``):
    out (n, m, hp, wp). p = (n, m, hp, wp), a = (pool, pool, c, k, k), levels (2, 3).
    ``relu=True`` applies ReLU to the convolution first. Standard count: the MACs of the
    convolution outputs the pooling reads (once each when windows do not overlap) plus one
    compare (max) or add (avg) per pooled element.
    """
    _pos(n=n, c=c, h=h, w=w, m=m, k=k, stride=stride, dilation=dilation, pool=pool)
    _nonneg(padding=padding)
    ps = pool if pool_stride is None else pool_stride
    _pos(pool_stride=ps)
    ho = conv_out(h, k, stride, padding, dilation)
    wo = conv_out(w, k, stride, padding, dilation)
    hp, wp = conv_out(ho, pool, ps), conv_out(wo, pool, ps)
    image = Transform(
        (n, c, h, w),
        p=[Index(0), None, Index(2, ps * stride), Index(3, ps * stride)],
        a=[Index(2, stride), Index(3, stride), Index(1), Index(2, dilation, -padding),
           Index(3, dilation, -padding)], name="I")
    weights = Transform((m, c, k, k), p=[None, Index(0), None, None],
                        a=[None, None, Index(1), Index(2), Index(3)], name="W")
    read_y = min(ho, (hp - 1) * ps + pool) if ps < pool else hp * pool
    read_x = min(wo, (wp - 1) * ps + pool) if ps < pool else wp * pool
    macs = n * m * read_y * read_x * c * k * k
    pooled = n * m * hp * wp * pool * pool
    unit = "MAC + compare" if pool_kind == "max" else "MAC + add"
    return Problem("conv_pool2d", S.DotPool(pool_kind, relu=relu), (n, m, hp, wp),
                   (pool, pool, c, k, k), [image, weights], levels=(2, 3),
                   ops=Ops(macs + pooled, unit))


def alpha_blend(c, h, w, *, scale=1):
    """Alpha blending ``out = alpha I + (1 - alpha) B`` of a ``c``-channel image ``I`` over a
    background ``B`` with a per-pixel ``alpha``, as one dot product over the two sources.

    ``X`` (2, c, h, w) holds ``I`` and ``B``; ``A`` (2, h / scale, w / scale) holds ``alpha`` and
    ``1 - alpha`` (the stage that makes the matte writes both), each matte pixel covering
    ``scale x scale`` image pixels (nearest-neighbour enlargement, free in the transform).
    p = (c, h / scale, scale, w / scale, scale), a = (2,); out (c, h, w). Standard count: two
    MACs per output element.
    """
    _pos(c=c, h=h, w=w, scale=scale)
    if h % scale or w % scale:
        raise ValueError(f"image {h}x{w} is not a whole number of {scale}x{scale} matte pixels")
    hs, ws = h // scale, w // scale
    x = Transform((2, c, h, w), p=[Index(1), Index(2, scale), Index(2), Index(3, scale), Index(3)],
                  a=[Index(0)], name="X")
    a = Transform((2, hs, ws), p=[None, Index(1), None, Index(2), None], a=[Index(0)], name="A")
    out = Output("out", (c, h, w), reshape=(c, h, w))
    return Problem("alpha_blend", S.Dot(), (c, hs, scale, ws, scale), (2,), [x, a],
                   outputs=[out], ops=Ops(2 * c * h * w, "MAC"))


def conv_relu(n, c, h, w, m, k, **kw):
    """CONV + ReLU fused (Listing 1); arguments as :func:`conv2d`."""
    return conv2d(n, c, h, w, m, k, relu=True, **kw)


def residual(n, c, h, w, m, k, *, relu=True, **kw):
    """Residual layer: ``relu(conv(I, W) + R)`` with ``R`` read in PostLoop (§III-B)."""
    return conv2d(n, c, h, w, m, k, residual=True, relu=relu, **kw)


def depthwise(n, c, h, w, k, *, stride=1, padding=0, multiplier=1):
    """Depthwise convolution (MobileNet): ``groups = c``, ``W`` (c * multiplier, 1, k, k)."""
    _pos(multiplier=multiplier)
    return conv2d(n, c, h, w, c * multiplier, k, stride=stride, padding=padding, groups=c)


def _deconv_taps(size, k, stride, padding, out):
    """Pairs (input position, kernel tap) of one axis of a transposed convolution whose output
    lands inside the cropped output: the MACs along that axis."""
    pos = np.arange(size)[:, None] * stride + np.arange(k)[None, :] - padding
    return int(((pos >= 0) & (pos < out)).sum())


def deconv2d(n, c, h, w, m, k, *, stride=1, padding=0, threshold=None, high=1):
    """Transposed convolution (deconvolution), ``W`` (c, m, k, k) as PyTorch's ConvTranspose2d.

    Output size ``(h - 1) * stride - 2 * padding + k``.  The stride-s zero insertion is not
    affine, so the output row is split into a phase: ``y + padding = q * stride + r``; the taps of
    phase ``r`` are ``ky = r + stride * t`` reading input row ``q - t``.  p = (n, m, q_y, r_y, q_x,
    r_x), a = (c, t_y, t_x); the phase-major result is reshaped and cropped to the output.

    ``threshold``: the output is ``high`` where the deconvolution is ``>= threshold``, else 0 (a
    binary mask, :class:`~merit.strategies.DotThreshold`). Standard count: the MACs of every
    (input pixel, kernel tap) pair that lands in the output (+ one compare per output).
    """
    _pos(n=n, c=c, h=h, w=w, m=m, k=k, stride=stride)
    _nonneg(padding=padding)
    ho, wo = (h - 1) * stride - 2 * padding + k, (w - 1) * stride - 2 * padding + k
    if ho <= 0 or wo <= 0:
        raise ValueError(f"padding {padding} leaves no output for input {h}x{w}, kernel {k}")
    qy, qx = -(-(ho + padding) // stride), -(-(wo + padding) // stride)
    taps = -(-k // stride)
    image = Transform(
        (n, c, h, w), p=[Index(0), None, Index(2), None, Index(3), None],
        a=[Index(1), Index(2, -1), Index(3, -1)], name="I")
    weights = Transform(
        (c, m, k, k), p=[None, Index(1), None, Index(2), None, Index(3)],
        a=[Index(0), Index(2, stride), Index(3, stride)], name="W")
    s = stride
    out = Output("out", (n, m, ho, wo), reshape=(n, m, qy * s, qx * s),
                 crop=(slice(None), slice(None), slice(padding, padding + ho),
                       slice(padding, padding + wo)))
    macs = n * c * m * _deconv_taps(h, k, stride, padding, ho) * _deconv_taps(w, k, stride,
                                                                             padding, wo)
    strategy, ops = S.Dot(), Ops(macs, "MAC")
    if threshold is not None:
        strategy, ops = S.DotThreshold(threshold, high), Ops(macs + n * m * ho * wo,
                                                              "MAC + compare")
    return Problem("deconv2d", strategy, (n, m, qy, s, qx, s), (c, taps, taps), [image, weights],
                   outputs=[out], ops=ops)


@dataclass(frozen=True)
class PhaseGroup:
    """Phases ``r + i * dr`` (``i < phases``) of one axis of a transposed convolution, each
    with ``taps`` taps, phase ``i`` computing the outputs ``q + i * dq .. q + i * dq + count -
    1`` (:func:`deconv_phase_groups`)."""

    r: int
    dr: int
    phases: int
    taps: int
    q: int
    dq: int
    count: int

    def pitch(self, stride):
        """Output positions between phases ``i`` and ``i + 1`` of one ``q``."""
        return stride * self.dq + self.dr


def deconv_phase_groups(size, k, stride, padding):
    """The phases of one axis of a transposed convolution, grouped so that each group is one
    rectangular problem with exact taps and outputs.

    Output position ``y = q * stride + r - padding`` (phase ``r``) sums the taps ``ky = r +
    stride * t``, ``t < T_r = ceil((k - r) / stride)`` (``ceil(k / stride)`` taps for ``r <
    k mod stride``, ``floor`` for the others, none for ``r >= k``), reading input ``q - t``;
    ``q`` runs over the ``count_r`` outputs that land inside ``[0, out)``, from ``q0_r =
    ceil((padding - r) / stride)``. Consecutive phases with the same tap count and output count
    form a group when ``q0`` is affine in the phase: equal (ascending phases, ``dq = 0``), or
    one lower for the higher phase (``q0`` steps once over the phases): the group lists that
    pair from the higher phase down (``dr = -1``, ``dq = 1``), so its output pitch ``stride *
    dq + dr`` stays positive.

    Returns a list of :class:`PhaseGroup`, every phase with an output in exactly one.
    """
    _pos(size=size, k=k, stride=stride)
    _nonneg(padding=padding)
    out = (size - 1) * stride - 2 * padding + k
    if out <= 0:
        raise ValueError(f"padding {padding} leaves no output for input size {size}, kernel {k}, "
                         f"stride {stride}: expected 2 * padding < (size - 1) * stride + k = "
                         f"{(size - 1) * stride + k}")
    phases = []
    for r in range(stride):
        taps = max(0, -(-(k - r) // stride))
        q0 = -(-(padding - r) // stride)
        count = (out - 1 + padding - r) // stride - q0 + 1
        if count > 0:
            phases.append((r, taps, q0, count))
    groups = []                     # [r0, n, taps, q0 of r0, dq (per ascending phase), count]
    for r, taps, q0, count in phases:
        g = groups[-1] if groups else None
        if g and g[0] + g[1] == r and g[2] == taps and g[5] == count:
            step = q0 - (g[3] + g[4] * (g[1] - 1))
            if (g[1] == 1 and step in (0, -1)) or (g[1] > 1 and step == g[4] == 0):
                g[1] += 1
                g[4] = step
                continue
        groups.append([r, 1, taps, q0, 0, count])
    result = []
    for r0, n, taps, q0, dq, count in groups:
        if dq == 0:
            result.append(PhaseGroup(r0, 1, n, taps, q0, 0, count))
        else:                       # two phases, q0 one lower for the higher: high one first
            result.append(PhaseGroup(r0 + 1, -1, 2, taps, q0 - 1, 1, count))
    return result


def _phase_macs(size, k, stride, group):
    """(input position, tap) pairs of one axis group that land in the output (see
    :func:`deconv_phase_groups`)."""
    total = 0
    for i in range(group.phases):
        q = group.q + i * group.dq + np.arange(group.count)[:, None] \
            - np.arange(group.taps)[None, :]
        total += int(((q >= 0) & (q < size)).sum())
    return total


def _phase_weight_name(gy, gx):
    def part(g):
        return f"{g.r}{'d' if g.dr < 0 else 'u'}{g.phases}"
    return f"W_r{part(gy)}_c{part(gx)}"


def deconv2d_phases(n, c, h, w, m, k, *, stride=1, padding=0, threshold=None, high=1):
    """:func:`deconv2d` as one problem per phase group, each with exact taps and outputs.

    :func:`deconv2d` gives every phase ``ceil(k / stride)`` taps per axis and computes the
    whole ``ceil((out + padding) / stride) * stride`` grid: with ``k`` = 5, stride 3 the third
    phase's second tap (``ky = 5``) does not exist and the cropped rows are computed too. Here
    the phases of each axis are grouped (:func:`deconv_phase_groups`: same tap count, same
    output range) and every pair (row group, column group) is one problem: p = (n, m, q_y,
    r_y, q_x, r_x) over the group's outputs only, a = (c, T_y, T_x) its taps only, writing
    its strided subset of the one output ``out`` (n, m, ho, wo) through an affine output map
    (:class:`~merit.problem.Output` ``pitch`` / ``offset``; on MERIT-z the WP's ``out_pitch``
    and ``out_base``).

    Each problem reads the image ``I`` (n, c, h, w) and its own dense block of the weights,
    ``W_r<r><u|d><phases>_c<r><u|d><phases>`` (phases_y x T_y, phases_x x T_x, m, c), phases
    up or down from ``r``, the input channel innermost: the group's taps
    only, so a tile's footprint holds no weight it does not use (the strided taps of the
    PyTorch layout, every ``stride``-th row, would be read as a dense box).
    :func:`deconv_phase_weights` cuts them from the PyTorch weights (c, m, k, k), once, as
    constant weights are laid out for any accelerator. Phases past the kernel (``k <
    stride``) have no tap: they run one tap whose weights :func:`deconv_phase_weights` sets to
    zero, writing their zero outputs.

    Returns a tuple of problems; :func:`merit.problem.run_problems` runs them into ``out``.
    Each problem's standard count (``ops``) counts the (input pixel, tap) pairs of its outputs,
    so the problems sum to :func:`deconv2d`'s.
    """
    _pos(n=n, c=c, h=h, w=w, m=m, k=k, stride=stride)
    _nonneg(padding=padding)
    rows = deconv_phase_groups(h, k, stride, padding)
    cols = deconv_phase_groups(w, k, stride, padding)
    ho, wo = (h - 1) * stride - 2 * padding + k, (w - 1) * stride - 2 * padding + k
    s = stride
    problems = []
    for gy in rows:
        for gx in cols:
            ty, tx = max(gy.taps, 1), max(gx.taps, 1)
            image = Transform(
                (n, c, h, w),
                p=[Index(0), None, Index(2, 1, gy.q), Index(2, gy.dq) if gy.dq else None,
                   Index(3, 1, gx.q), Index(3, gx.dq) if gx.dq else None],
                a=[Index(1), Index(2, -1), Index(3, -1)], name="I")
            weights = Transform(
                (gy.phases * ty, gx.phases * tx, m, c),
                p=[None, Index(2), None, Index(0, ty), None, Index(1, tx)],
                a=[Index(3), Index(0), Index(1)], name=_phase_weight_name(gy, gx))
            out = Output("out", (n, m, ho, wo),
                         pitch=(m * ho * wo, ho * wo, s * wo, gy.pitch(s) * wo, s, gx.pitch(s)),
                         offset=(s * gy.q + gy.r - padding) * wo + s * gx.q + gx.r - padding)
            macs = n * c * m * _phase_macs(h, k, s, gy) * _phase_macs(w, k, s, gx)
            outs = n * m * gy.count * gy.phases * gx.count * gx.phases
            strategy, ops = S.Dot(), Ops(macs, "MAC")
            if threshold is not None:
                strategy = S.DotThreshold(threshold, high)
                ops = Ops(macs + outs, "MAC + compare")
            problems.append(Problem(
                f"deconv2d_{_phase_weight_name(gy, gx)[2:]}", strategy,
                (n, m, gy.count, gy.phases, gx.count, gx.phases), (c, ty, tx), [image, weights],
                outputs=[out], ops=ops))
    return tuple(problems)


def deconv_phase_weights(weights, h, w, *, stride=1, padding=0):
    """The weight blocks that :func:`deconv2d_phases` reads, cut from PyTorch's ConvTranspose2d
    weights ``(c, m, k, k)`` for an input of ``h`` x ``w``: name -> array ``(phases_y x T_y,
    phases_x x T_x, m, c)``, element ``[i T_y + t_y, j T_x + t_x, o, ci]`` = ``weights[ci, o,
    r_y + i dr_y + stride t_y, r_x + j dr_x + stride t_x]`` (zero past the kernel)."""
    weights = np.asarray(weights)
    if weights.ndim != 4 or weights.shape[2] != weights.shape[3]:
        raise ValueError(f"weights must be (c, m, k, k), not of shape {weights.shape}")
    k = weights.shape[2]
    out = {}
    for gy in deconv_phase_groups(h, k, stride, padding):
        for gx in deconv_phase_groups(w, k, stride, padding):
            blocks = []
            for g in (gy, gx):
                taps = max(g.taps, 1)
                blocks.append((g.r + g.dr * np.arange(g.phases)[:, None]
                               + stride * np.arange(taps)[None, :]).reshape(-1))
            ky, kx = blocks
            padded = np.zeros(weights.shape[:2] + (max(k, ky.max() + 1), max(k, kx.max() + 1)),
                              dtype=weights.dtype)
            padded[:, :, :k, :k] = weights
            out[_phase_weight_name(gy, gx)] = np.ascontiguousarray(
                padded[:, :, ky][:, :, :, kx].transpose(2, 3, 1, 0))
    return out


def _pool(name, strategy, boundary, n, c, h, w, k, stride, padding):
    stride = k if stride is None else stride
    _pos(n=n, c=c, h=h, w=w, k=k, stride=stride)
    _nonneg(padding=padding)
    ho, wo = conv_out(h, k, stride, padding), conv_out(w, k, stride, padding)
    image = Transform(
        (n, c, h, w), p=[Index(0), Index(1), Index(2, stride), Index(3, stride)],
        a=[Index(2, 1, -padding), Index(3, 1, -padding)], boundary=boundary, name="I")
    unit = "compare" if name == "max_pool2d" else "add"
    return Problem(name, strategy, (n, c, ho, wo), (k, k), [image],
                   ops=Ops(n * c * ho * wo * k * k, unit))


def max_pool2d(n, c, h, w, k, *, stride=None, padding=0):
    """Max pooling (stride defaults to ``k``); padded taps take the clamped edge value, which
    gives the same maximum as padding with -inf."""
    return _pool("max_pool2d", S.Max(), "clamp", n, c, h, w, k, stride, padding)


def avg_pool2d(n, c, h, w, k, *, stride=None, padding=0):
    """Average pooling with zero padding counted in the divisor (``count_include_pad``)."""
    return _pool("avg_pool2d", S.Mean(), "zero", n, c, h, w, k, stride, padding)


def pixel_shuffle(n, c, h, w, r):
    """ESPCN sub-pixel shuffle: ``I`` (n, c r^2, h, w) -> (n, c, h r, w r); a copy, a = ().

    p = (n, c, y, i, x, j): ``out[n, c, y r + i, x r + j] = I[n, c r^2 + i r + j, y, x]``.
    """
    _pos(n=n, c=c, h=h, w=w, r=r)
    image = Transform(
        (n, c * r * r, h, w),
        p=[Index(0), Index(1, r * r), Index(2), Index(1, r), Index(3), Index(1)], a=[], name="I")
    out = Output("out", (n, c, h * r, w * r), reshape=(n, c, h * r, w * r))
    return Problem("pixel_shuffle", S.Copy(), (n, c, h, r, w, r), (), [image], outputs=[out],
                   ops=Ops(n * c * h * r * w * r, "copy"))


def subpixel_conv(n, c, h, w, m, k, r, *, padding=None):
    """ESPCN's sub-pixel convolution layer: a ``k`` x ``k`` convolution to ``m r^2`` channels
    followed by the pixel shuffle, in one kernel: out (n, m, h r, w r).

    The shuffle costs nothing: it is the output's layout. p = (n, m, y, i, x, j) (the output
    (n, m, h r, w r) read as (n, m, h, r, w, r)); the weights of output channel ``m r^2 + i r + j``
    are ``W[m r^2 + i r + j]``, i.e. the weight transform gives p indices m, i, j the strides
    ``r^2, r, 1`` on the weights' first axis.  ``I`` (n, c, h, w), ``W`` (m r^2, c, k, k), zero
    padding ``(k - 1) / 2`` by default (same size).
    """
    padding = (k - 1) // 2 if padding is None else padding
    _pos(n=n, c=c, h=h, w=w, m=m, k=k, r=r)
    _nonneg(padding=padding)
    ho, wo = conv_out(h, k, 1, padding), conv_out(w, k, 1, padding)
    image = Transform(
        (n, c, h, w), p=[Index(0), None, Index(2), None, Index(3), None],
        a=[Index(1), Index(2, 1, -padding), Index(3, 1, -padding)], name="I")
    weights = Transform(
        (m * r * r, c, k, k), p=[None, Index(0, r * r), None, Index(0, r), None, Index(0)],
        a=[Index(1), Index(2), Index(3)], name="W")
    out = Output("out", (n, m, ho * r, wo * r), reshape=(n, m, ho * r, wo * r))
    return Problem("subpixel_conv", S.Dot(), (n, m, ho, r, wo, r), (c, k, k), [image, weights],
                   outputs=[out], ops=Ops(n * m * ho * r * wo * r * c * k * k, "MAC"))


def correlation(c, h, w, max_disp):
    """FlowNet correlation layer (Eq. 8) with displacements in ``[-max_disp, max_disp]``.

    ``out[y, x, dy + D, dx + D] = sum_c I1[c, y, x] * I2[c, y + dy, x + dx]``; zero outside I2.
    """
    _pos(c=c, h=h, w=w)
    _nonneg(max_disp=max_disp)
    d = 2 * max_disp + 1
    i1 = Transform((c, h, w), p=[Index(1), Index(2), None, None], a=[Index(0)], name="I1")
    i2 = Transform((c, h, w), p=[Index(1), Index(2), Index(1, 1, -max_disp),
                                 Index(2, 1, -max_disp)], a=[Index(0)], name="I2")
    return Problem("correlation", S.Dot(), (h, w, d, d), (c,), [i1, i2],
                   ops=Ops(h * w * d * d * c, "MAC"))


def motion_estimation(h, w, *, block=8, search=7, best=False):
    """Full-search block motion estimation with SAD, edges clamped (as UMI's ``full_me``).

    ``best=False``: the SAD of every candidate, shape (h / block, w / block, 2 search + 1,
    2 search + 1), candidate ``(u, v)`` = displacement ``(u - search, v - search)``.
    ``best=True``: two levels (candidates, then pixels); outputs the smallest SAD and the candidate
    indices ``(u, v)`` of the first candidate in raster order that reaches it.
    """
    _pos(h=h, w=w, block=block)
    _nonneg(search=search)
    if h % block or w % block:
        raise ValueError(f"image {h}x{w} is not a whole number of {block}x{block} blocks")
    by, bx, d = h // block, w // block, 2 * search + 1
    if best:
        cur = Transform((h, w), p=[Index(0, block), Index(1, block)],
                        a=[None, None, Index(0), Index(1)], name="cur")
        ref = Transform((h, w), p=[Index(0, block), Index(1, block)],
                        a=[Index(0, 1, -search), Index(1, 1, -search), Index(0), Index(1)],
                        boundary="clamp", name="ref")
        return Problem("motion_estimation", S.BestMatch(), (by, bx), (d, d, block, block),
                       [cur, ref], levels=(2, 2), ops=Ops(h * w * d * d, "absolute difference"))
    cur = Transform((h, w), p=[Index(0, block), Index(1, block), None, None],
                    a=[Index(0), Index(1)], name="cur")
    ref = Transform((h, w), p=[Index(0, block), Index(1, block), Index(0, 1, -search),
                               Index(1, 1, -search)], a=[Index(0), Index(1)],
                    boundary="clamp", name="ref")
    return Problem("motion_estimation", S.L1(), (by, bx, d, d), (block, block), [cur, ref],
                   ops=Ops(h * w * d * d, "absolute difference"))


def bilateral(h, w, *, sigma_s, sigma_r, radius=None):
    """Bilateral filter (Listing 2) of one channel, edges clamped.

    Window ``2 radius + 1`` (default ``ceil(2 sigma_s)``); spatial weights
    ``G[i, j] = exp(-((i - r)^2 + (j - r)^2) / (2 sigma_s^2))`` are a fixed tensor.
    """
    if not sigma_s > 0:
        raise ValueError(f"sigma_s must be positive, not {sigma_s}")
    r = int(np.ceil(2 * sigma_s)) if radius is None else radius
    _pos(h=h, w=w)
    _nonneg(radius=r)
    k = 2 * r + 1
    t = np.arange(k) - r
    g = np.exp(-(t[:, None] ** 2 + t[None, :] ** 2) / (2.0 * sigma_s * sigma_s))
    centre = Transform((h, w), p=[Index(0), Index(1)], a=[None, None], name="I")
    window = Transform((h, w), p=[Index(0), Index(1)], a=[Index(0, 1, -r), Index(1, 1, -r)],
                       boundary="clamp", name="I")
    weights = Transform((k, k), p=[None, None], a=[Index(0), Index(1)], name="G")
    return Problem("bilateral", S.Bilateral(sigma_r), (h, w), (k, k), [centre, window, weights],
                   values={"G": g}, ops=Ops(h * w * k * k, "weighted tap"))


def integral_image(h, w):
    """Integral image ``out[y, x] = sum_{i <= y, j <= x} I[i, j]`` as one MERIT sum.

    a = (h, w) walks the source backwards (stride -1) from ``(y, x)``; the zero boundary cuts the
    sum at the image edge.  O((h w)^2) work: a definition, not a fast algorithm.
    """
    _pos(h=h, w=w)
    image = Transform((h, w), p=[Index(0), Index(1)], a=[Index(0, -1), Index(1, -1)], name="I")
    terms = (h * (h + 1) // 2) * (w * (w + 1) // 2)     # (y + 1)(x + 1) terms per output
    return Problem("integral_image", S.Sum(), (h, w), (h, w), [image], ops=Ops(terms, "add"))


def separable_filter(h, w, k):
    """Separable 'same' filter ``out = sum_i v[i] sum_j hk[j] I[y + i - r, x + j - r]``, one
    problem with two levels (Fig. 4a): level 0 = vertical taps, level 1 = horizontal taps.
    Zero padding, ``r = (k - 1) // 2`` (an even ``k`` is centred like
    ``scipy.signal.correlate2d(mode="same")``).
    """
    _pos(h=h, w=w, k=k)
    r = (k - 1) // 2
    image = Transform((h, w), p=[Index(0), Index(1)], a=[Index(0, 1, -r), Index(1, 1, -r)],
                      name="I")
    hk = Transform((k,), p=[None, None], a=[None, Index(0)], name="hk")
    v = Transform((k,), p=[None, None], a=[Index(0), None], name="v")
    return Problem("separable_filter", S.SeparableDot(), (h, w), (k, k), [image, hk, v],
                   levels=(1, 1), ops=Ops(h * w * 2 * k, "MAC"))


def filter3x3(h, w):
    """3x3 'same' filter of one channel with zero padding (the Futhark thesis benchmark)."""
    _pos(h=h, w=w)
    image = Transform((h, w), p=[Index(0), Index(1)], a=[Index(0, 1, -1), Index(1, 1, -1)],
                      name="I")
    weights = Transform((3, 3), p=[None, None], a=[Index(0), Index(1)], name="W")
    return Problem("filter3x3", S.Dot(), (h, w), (3, 3), [image, weights],
                   ops=Ops(h * w * 9, "MAC"))


def ece408(b=10000, c=1, m=50, h=28, w=28, k=5):
    """The ECE408 forward convolution layer: valid convolution, B x C x H x W -> B x M."""
    return conv2d(b, c, h, w, m, k)


# ---- N-dimensional layers (the ONNX front end, ``merit.onnx``) --------------------------------

def _shape(name, shape, ndim=None):
    shape = tuple(shape)
    _pos(**{f"{name}[{i}]": v for i, v in enumerate(shape)})
    if ndim is not None and len(shape) < ndim:
        raise ValueError(f"{name} must have at least {ndim} axes, not shape {shape}")
    return shape


def _per_axis(name, values, d, default):
    values = (default,) * d if values is None else tuple(values)
    if len(values) != d:
        raise ValueError(f"{name} must have {d} values (one per spatial axis), not {values}")
    return values


def _pads(pads, d):
    pads = (0,) * (2 * d) if pads is None else tuple(pads)
    if len(pads) != 2 * d:
        raise ValueError(f"pads must have {2 * d} values (begin of each spatial axis, then end), "
                         f"not {pads}")
    _nonneg(**{f"pads[{i}]": v for i, v in enumerate(pads)})
    return pads[:d], pads[d:]


def conv_nd(x_shape, w_shape, *, strides=None, pads=None, dilations=None, groups=1, bias=False,
            relu=False):
    """Convolution over any number of spatial axes (ONNX ``Conv``): ``I`` (n, c, d1, ...),
    ``W`` (m, c / groups, k1, ...), optional bias ``B`` (m,) added in PostLoop (``DotResidual``).

    ``pads`` = begin of each spatial axis, then end (ONNX order; asymmetric pads allowed).
    p = (n, m, o1, ...), or (n, groups, m / groups, o1, ...); a = (c / groups, k1, ...).
    """
    x_shape, w_shape = _shape("x_shape", x_shape, 3), _shape("w_shape", w_shape, 3)
    d = len(x_shape) - 2
    if len(w_shape) != d + 2:
        raise ValueError(f"w_shape {w_shape} must have {d + 2} axes like x_shape {x_shape}")
    n, c, *size = x_shape
    m, cg, *k = w_shape
    strides, dilations = _per_axis("strides", strides, d, 1), _per_axis("dilations", dilations,
                                                                        d, 1)
    _pos(groups=groups, **{f"strides[{i}]": v for i, v in enumerate(strides)},
         **{f"dilations[{i}]": v for i, v in enumerate(dilations)})
    begin, end = _pads(pads, d)
    if c != cg * groups or m % groups:
        raise ValueError(f"groups={groups}: x has {c} channels and W {w_shape} (expected "
                         f"{c // groups} input channels per group and m divisible by {groups})")
    out = tuple(conv_out(size[i] + begin[i] + end[i], k[i], strides[i], 0, dilations[i])
                for i in range(d))
    mg = m // groups
    gp = [Index(1, cg)] if groups > 1 else []
    image = Transform(x_shape, p=[Index(0)] + gp + [None] + [Index(2 + i, strides[i])
                                                          for i in range(d)],
                      a=[Index(1)] + [Index(2 + i, dilations[i], -begin[i]) for i in range(d)],
                      name="I")
    gw = [Index(0, mg)] if groups > 1 else []
    weights = Transform(w_shape, p=[None] + gw + [Index(0)] + [None] * d,
                        a=[Index(1)] + [Index(2 + i) for i in range(d)], name="W")
    p_shape = (n,) + ((groups, mg) if groups > 1 else (m,)) + out
    operands = [image, weights]
    if bias:
        operands.append(Transform((m,), p=[None] + gw + [Index(0)] + [None] * d,
                                  a=[None] * (d + 1), name="B"))
        strategy = S.DotResidual(relu=relu)
    else:
        strategy = S.DotReLU() if relu else S.Dot()
    o = Output("out", (n, m) + out, reshape=(n, m) + out)
    return Problem("conv", strategy, p_shape, (cg,) + tuple(k), operands, outputs=[o])


def conv_transpose_nd(x_shape, w_shape, *, strides=None, pads=None, dilations=None, groups=1,
                      output_padding=None, bias=False):
    """Transposed convolution over any number of spatial axes (ONNX ``ConvTranspose``):
    ``I`` (n, c, d1, ...), ``W`` (c, m / groups, k1, ...), optional bias ``B`` (m,).

    Output size ``s (d - 1) + output_padding + (k - 1) dilation + 1 - pad_begin - pad_end``.
    Per spatial axis, the output coordinate is split into a phase as in :func:`deconv2d`
    (``y + pad_begin = q s + r``, taps ``k = r + s t`` read input ``q - t``); with a dilation
    (which needs stride 1 on that axis) the taps read ``q - t dilation``.
    p = (n, [groups,] m / groups, q1, r1, q2, r2, ...), a = (c / groups, t1, ...).
    """
    x_shape, w_shape = _shape("x_shape", x_shape, 3), _shape("w_shape", w_shape, 3)
    d = len(x_shape) - 2
    if len(w_shape) != d + 2:
        raise ValueError(f"w_shape {w_shape} must have {d + 2} axes like x_shape {x_shape}")
    n, c, *size = x_shape
    cw, mg, *k = w_shape
    strides, dilations = _per_axis("strides", strides, d, 1), _per_axis("dilations", dilations,
                                                                        d, 1)
    output_padding = _per_axis("output_padding", output_padding, d, 0)
    _pos(groups=groups)
    begin, end = _pads(pads, d)
    if cw != c or c % groups:
        raise ValueError(f"groups={groups}: x has {c} channels, W {w_shape} (expected {c} "
                         f"input channels divisible by {groups})")
    cg, m = c // groups, mg * groups
    out, taps, phases = [], [], []
    for i in range(d):
        if strides[i] > 1 and dilations[i] > 1:
            raise ValueError(f"axis {i}: stride {strides[i]} and dilation {dilations[i]} both "
                             f"above 1 are not affine in one problem")
        o = (strides[i] * (size[i] - 1) + output_padding[i] + (k[i] - 1) * dilations[i] + 1
             - begin[i] - end[i])
        if o <= 0:
            raise ValueError(f"axis {i}: pads {begin[i]}, {end[i]} leave no output")
        out.append(o)
        phases.append(strides[i])
        taps.append(-(-k[i] // strides[i]))
    q = [-(-(out[i] + begin[i]) // strides[i]) for i in range(d)]
    gp = [Index(1, cg)] if groups > 1 else []
    gw = [Index(0, cg)] if groups > 1 else []
    ip, wp, bp = [Index(0)] + gp + [None], [None] + gw + [Index(1)], [None] + (
        [Index(0, mg)] if groups > 1 else []) + [Index(0)]
    for i in range(d):
        ip += [Index(2 + i), None]
        wp += [None, Index(2 + i)]
        bp += [None, None]
    image = Transform(x_shape, p=ip, a=[Index(1)] + [Index(2 + i, -dilations[i])
                                                      for i in range(d)], name="I")
    weights = Transform(w_shape, p=wp, a=[Index(0)] + [Index(2 + i, strides[i])
                                                        for i in range(d)], name="W")
    operands = [image, weights]
    strategy = S.Dot()
    if bias:
        operands.append(Transform((m,), p=bp, a=[None] * (d + 1), name="B"))
        strategy = S.DotResidual()
    p_shape = (n,) + ((groups, mg) if groups > 1 else (m,))
    for i in range(d):
        p_shape += (q[i], phases[i])
    o = Output("out", (n, m) + tuple(out),
               reshape=(n, m) + tuple(q[i] * phases[i] for i in range(d)),
               crop=(slice(None), slice(None)) + tuple(slice(begin[i], begin[i] + out[i])
                                                       for i in range(d)))
    return Problem("conv_transpose", strategy, p_shape, (cg,) + tuple(taps), operands,
                   outputs=[o])


def _pool_size(size, k, stride, begin, end, dilation, ceil_mode):
    span = dilation * (k - 1) + 1
    total = size + begin + end - span
    if total < 0:
        raise ValueError(f"pooling window {k} (dilation {dilation}) does not fit input size "
                         f"{size} with pads {begin}, {end}")
    o = (-(-total // stride) if ceil_mode else total // stride) + 1
    if ceil_mode and (o - 1) * stride >= size + begin:
        o -= 1          # the last window must start inside the input or the begin padding
    return o


def pool_nd(x_shape, kernel, *, kind="max", strides=None, pads=None, dilations=None,
            ceil_mode=False, count_include_pad=False):
    """Max or average pooling over any number of spatial axes (ONNX ``MaxPool`` /
    ``AveragePool`` / ``GlobalAveragePool``), ``I`` (n, c, d1, ...); p = (n, c, o1, ...),
    a = the window.

    ``kind="max"``: ``Max`` with clamped edges, which equals -inf padding when every window
    holds an input element next to the edge (no dilation); with a dilation and pads the window
    may skip the edge: that case raises ValueError (pad the input with the lowest value first).
    ``kind="avg"``: ``Mean`` when every window has the same divisor, else ``Dot`` with a fixed
    tensor ``R`` of reciprocal counts (``count_include_pad``: pads count, the part past the end
    padding that ``ceil_mode`` adds never does).
    """
    x_shape = _shape("x_shape", x_shape, 3)
    d = len(x_shape) - 2
    kernel = _per_axis("kernel", kernel, d, 1)
    strides = _per_axis("strides", strides, d, 1)
    dilations = _per_axis("dilations", dilations, d, 1)
    _pos(**{f"kernel[{i}]": v for i, v in enumerate(kernel)},
         **{f"strides[{i}]": v for i, v in enumerate(strides)},
         **{f"dilations[{i}]": v for i, v in enumerate(dilations)})
    begin, end = _pads(pads, d)
    if kind not in ("max", "avg"):
        raise ValueError(f"kind must be 'max' or 'avg', not {kind!r}")
    size = x_shape[2:]
    out = tuple(_pool_size(size[i], kernel[i], strides[i], begin[i], end[i], dilations[i],
                           ceil_mode) for i in range(d))
    over = [((out[i] - 1) * strides[i] - begin[i], (out[i] - 1) * strides[i] - begin[i]
             + dilations[i] * (kernel[i] - 1)) for i in range(d)]
    reaches_out = [begin[i] > 0 or over[i][1] >= size[i] for i in range(d)]
    if kind == "max" and any(reaches_out[i] and dilations[i] > 1 for i in range(d)):
        raise ValueError(f"max pooling with dilations {dilations} and windows past the edge "
                         f"(pads {begin + end}, ceil_mode {ceil_mode}): clamped edges differ "
                         f"from -inf padding; pad the input with its lowest value first")
    image = Transform(x_shape, p=[Index(0), Index(1)] + [Index(2 + i, strides[i])
                                                        for i in range(d)],
                      a=[Index(2 + i, dilations[i], -begin[i]) for i in range(d)],
                      boundary="clamp" if kind == "max" else "zero", name="I")
    p_shape = tuple(x_shape[:2]) + out
    if kind == "max":
        return Problem("max_pool", S.Max(), p_shape, kernel, [image])
    counts = np.ones((), dtype=np.float64)
    for i in range(d):
        lo, hi = (-begin[i], size[i] + end[i]) if count_include_pad else (0, size[i])
        start = np.arange(out[i]) * strides[i] - begin[i]
        pos = start[:, None] + np.arange(kernel[i])[None, :] * dilations[i]
        counts = np.multiply.outer(counts, ((pos >= lo) & (pos < hi)).sum(axis=1))
    if (counts == np.prod(kernel)).all():
        return Problem("avg_pool", S.Mean(), p_shape, kernel, [image])
    recip = Transform(out, p=[None, None] + [Index(i) for i in range(d)], a=[None] * d, name="R")
    return Problem("avg_pool", S.Dot(), p_shape, kernel, [image, recip],
                   values={"R": 1.0 / counts})


def _broadcast_transform(shape, out_shape, name):
    """A transform reading ``shape`` broadcast (numpy rules) over a parallel space ``out_shape``."""
    lead = len(out_shape) - len(shape)
    if lead < 0 or any(s not in (1, o) for s, o in zip(shape, out_shape[lead:], strict=True)):
        raise ValueError(f"tensor {name!r} of shape {shape} does not broadcast to {out_shape}")
    p = [None] * lead + [Index(i) if s > 1 else None for i, s in enumerate(shape)]
    return Transform(shape or (1,), p=p, a=[], name=name)


def elementwise(op, shapes, *, names=None, **params):
    """An elementwise operation (:class:`merit.strategies.Elementwise`) of inputs of ``shapes``
    broadcast together (numpy rules): p = the broadcast shape, a = () (one step).

    ``names``: the tensors' names (default ``X0, X1, ...``); a scalar (shape ``()``) is read as
    shape (1,).
    """
    shapes = [tuple(int(v) for v in sh) for sh in shapes]
    names = [f"X{i}" for i in range(len(shapes))] if names is None else list(names)
    if len(names) != len(shapes):
        raise ValueError(f"{len(names)} names for {len(shapes)} shapes")
    strategy = S.Elementwise(op, len(shapes), **params)
    try:
        out = tuple(np.broadcast_shapes(*shapes)) or (1,)
    except ValueError:
        raise ValueError(f"elementwise {op!r}: shapes {shapes} do not broadcast together "
                         f"(numpy rules)") from None
    _pos(**{f"output[{i}]": v for i, v in enumerate(out)})
    operands = [_broadcast_transform(sh, out, nm) for sh, nm in zip(shapes, names, strict=True)]
    return Problem(op, strategy, out, (), operands)


def transpose(shape, perm):
    """``out = I.transpose(perm)`` as a copy (a = ()): output axis ``j`` moves along ``perm[j]``."""
    shape = _shape("shape", shape)
    perm = tuple(int(v) for v in perm)
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"perm {perm} is not a permutation of the {len(shape)} axes")
    image = Transform(shape, p=[Index(j) for j in perm], a=[], name="I")
    return Problem("transpose", S.Copy(), tuple(shape[j] for j in perm), (), [image])


def depth_to_space(n, c, h, w, r, *, mode="DCR"):
    """ONNX ``DepthToSpace``: ``I`` (n, c r^2, h, w) -> (n, c, h r, w r), a copy.

    ``"CRD"`` is :func:`pixel_shuffle` (channel ``c r^2 + i r + j``); ``"DCR"`` reads channel
    ``(i r + j) c + c'``.
    """
    if mode == "CRD":
        return pixel_shuffle(n, c, h, w, r)
    if mode != "DCR":
        raise ValueError(f"mode must be 'DCR' or 'CRD', not {mode!r}")
    _pos(n=n, c=c, h=h, w=w, r=r)
    image = Transform(
        (n, c * r * r, h, w),
        p=[Index(0), Index(1), Index(2), Index(1, r * c), Index(3), Index(1, c)], a=[], name="I")
    out = Output("out", (n, c, h * r, w * r), reshape=(n, c, h * r, w * r))
    return Problem("depth_to_space", S.Copy(), (n, c, h, r, w, r), (), [image], outputs=[out])


def softmax(shape, axes):
    """Softmax over ``axes`` of a tensor (:class:`merit.strategies.Softmax`): p = ``shape``,
    a = the sizes of ``axes``; each lane reads its own element (PreLoop) and its row (Loop)."""
    shape = _shape("shape", shape)
    axes = tuple(int(v) for v in axes)
    if not axes or any(not 0 <= v < len(shape) for v in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"axes {axes} must be distinct axes of shape {shape}")
    centre = Transform(shape, p=[Index(i) for i in range(len(shape))], a=[None] * len(axes),
                       name="X")
    row = Transform(shape, p=[None if i in axes else Index(i) for i in range(len(shape))],
                    a=[Index(v) for v in axes], name="X")
    return Problem("softmax", S.Softmax(), shape, tuple(shape[v] for v in axes), [centre, row])


def lrn(shape, size, *, alpha=1e-4, beta=0.75, bias=1.0):
    """Local response normalization across channels (ONNX ``LRN``, axis 1): the window of
    channel ``c`` runs from ``c - floor((size - 1) / 2)`` to ``c + ceil((size - 1) / 2)``."""
    shape = _shape("shape", shape, 2)
    _pos(size=size)
    nd = len(shape)
    centre = Transform(shape, p=[Index(i) for i in range(nd)], a=[None], name="X")
    window = Transform(shape, p=[Index(i) for i in range(nd)], a=[Index(1, 1, -((size - 1) // 2))],
                       name="X")
    return Problem("lrn", S.LRN(size, alpha, beta, bias), shape, (size,), [centre, window])


def matmul(a_shape, b_shape):
    """``A @ B`` with numpy's rules (batch axes broadcast, 1-D operands promoted):
    p = batch + (m, n), a = (k,); the output drops the promoted axes."""
    a_shape, b_shape = _shape("a_shape", a_shape), _shape("b_shape", b_shape)
    a2 = (1,) + a_shape if len(a_shape) == 1 else a_shape
    b2 = b_shape + (1,) if len(b_shape) == 1 else b_shape
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: inner sizes differ, {a_shape} @ {b_shape}")
    batch = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    m, k, n = a2[-2], a2[-1], b2[-1]
    p_shape = batch + (m, n)

    def side(shape2, name, rows):
        lead = len(batch) - (len(shape2) - 2)
        p = [None] * lead + [Index(i) if s > 1 else None for i, s in enumerate(shape2[:-2])]
        base = len(shape2) - 2
        if rows:                       # A: p (m) on axis -2, a (k) on axis -1
            p += [Index(base) if m > 1 else None, None]
            a = [Index(base + 1)]
        else:                          # B: a (k) on axis -2, p (n) on axis -1
            p += [None, Index(base + 1) if n > 1 else None]
            a = [Index(base)]
        return Transform(shape2, p=p, a=a, name=name)

    A, B = side(a2, "A", True), side(b2, "B", False)
    shown = batch + ((m,) if len(a_shape) > 1 else ()) + ((n,) if len(b_shape) > 1 else ())
    out = Output("out", shown, reshape=shown or (1,))
    return Problem("matmul", S.Dot(), p_shape, (k,), [A, B], outputs=[out])


def gemm_t(m, n, k, *, trans_a=False, trans_b=False, bias_shape=None, relu=False):
    """ONNX ``Gemm`` without scaling: ``A' @ B' (+ C)``, ``A`` (m, k) or (k, m) when
    ``trans_a``, ``B`` (k, n) or (n, k) when ``trans_b``, ``C`` broadcast to (m, n) and added in
    PostLoop (``DotResidual``, optionally with ReLU)."""
    _pos(m=m, n=n, k=k)
    A = Transform((k, m) if trans_a else (m, k),
                  p=[Index(1 if trans_a else 0), None], a=[Index(0 if trans_a else 1)], name="A")
    B = Transform((n, k) if trans_b else (k, n),
                  p=[None, Index(0 if trans_b else 1)], a=[Index(1 if trans_b else 0)], name="B")
    if bias_shape is None:
        return Problem("gemm", S.DotReLU() if relu else S.Dot(), (m, n), (k,), [A, B])
    C = _broadcast_transform(tuple(bias_shape), (m, n), "C")
    C = Transform(C.source_shape, p=C.p, a=[None], name="C")
    return Problem("gemm", S.DotResidual(relu=relu), (m, n), (k,), [A, B, C])
