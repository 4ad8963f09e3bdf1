"""Transposed convolution split into phase groups with exact taps
(``merit.workloads.deconv2d_phases``) and the affine output map that lets each group write its
strided part of the output (``merit.problem.Output`` ``pitch`` / ``offset``)."""

import math

import numpy as np
import pytest

from merit import workloads as W
from merit.problem import Output, Problem, run_problems
from merit.strategies import Dot
from merit.transform import Index, Transform


def reference(image, weights, stride, padding):
    """ConvTranspose2d written as its definition: every input pixel scatters ``k x k`` taps
    into a zero output, which is then cropped by ``padding`` (shares no code with merit)."""
    n, c, h, w = image.shape
    _, m, k, _ = weights.shape
    full = np.zeros((n, m, (h - 1) * stride + k, (w - 1) * stride + k), dtype=np.int64)
    for b in range(n):
        for ci in range(c):
            for i in range(h):
                for j in range(w):
                    for mo in range(m):
                        for ky in range(k):
                            for kx in range(k):
                                full[b, mo, i * stride + ky, j * stride + kx] += (
                                    int(image[b, ci, i, j]) * int(weights[ci, mo, ky, kx]))
    ho, wo = (h - 1) * stride - 2 * padding + k, (w - 1) * stride - 2 * padding + k
    return full[:, :, padding:padding + ho, padding:padding + wo]


def landing_pairs(size, k, stride, padding):
    """(input position, tap) pairs of one axis whose output lies inside the cropped output."""
    out = (size - 1) * stride - 2 * padding + k
    return sum(1 for i in range(size) for t in range(k) if 0 <= i * stride + t - padding < out)


#: (k, stride, padding, h, w): k > stride, k < stride, k a multiple of stride, stride 1,
#: a 1x1 kernel, padding as large as the kernel allows, odd sizes
CASES = [(5, 3, 1, 4, 5), (2, 3, 0, 3, 4), (1, 2, 0, 3, 2), (6, 3, 2, 3, 5), (4, 2, 1, 3, 3),
         (3, 1, 1, 4, 3), (3, 3, 2, 3, 3), (5, 3, 4, 4, 3), (7, 2, 3, 2, 4), (4, 4, 0, 2, 3)]


@pytest.mark.parametrize("k, stride, padding, h, w", CASES)
def test_phase_groups_match_the_definition(k, stride, padding, h, w):
    rng = np.random.default_rng(k * 100 + stride * 10 + padding)
    n, c, m = 2, 3, 2
    image = rng.integers(-8, 8, (n, c, h, w))
    weights = rng.integers(-8, 8, (c, m, k, k))
    problems = W.deconv2d_phases(n, c, h, w, m, k, stride=stride, padding=padding)
    tensors = {"I": image, **W.deconv_phase_weights(weights, h, w, stride=stride,
                                                     padding=padding)}
    got = run_problems(problems, tensors)["out"]
    want = reference(image, weights, stride, padding)
    np.testing.assert_array_equal(got, want)
    # every output element is written by exactly one problem (run_problems refuses a second
    # write; here: none is left out)
    written = np.zeros(want.size, dtype=np.int64)
    for p in problems:
        np.add.at(written, p.outputs[0].indices(p.p_shape).reshape(-1), 1)
    assert (written == 1).all()
    # the one polyphase problem agrees, and both count the same standard MACs
    fused = W.deconv2d(n, c, h, w, m, k, stride=stride, padding=padding)
    np.testing.assert_array_equal(fused.run(image, weights), want)
    macs = n * c * m * landing_pairs(h, k, stride, padding) * landing_pairs(w, k, stride, padding)
    assert sum(p.ops.count for p in problems) == fused.ops.count == macs


@pytest.mark.parametrize("k, stride, padding, h, w", CASES)
def test_phase_groups_compute_only_taps_of_the_kernel(k, stride, padding, h, w):
    """The problems' steps are the taps inside the kernel of every output (border taps that
    read outside the input remain, as a convolution's padding); phases past the kernel
    (k < stride) cost one tap each."""
    n, c, m = 1, 2, 3
    problems = W.deconv2d_phases(n, c, h, w, m, k, stride=stride, padding=padding)
    ho, wo = (h - 1) * stride - 2 * padding + k, (w - 1) * stride - 2 * padding + k

    def taps(y):
        return max(1, len(range((y + padding) % stride, k, stride)))

    exact = n * c * m * sum(taps(y) for y in range(ho)) * sum(taps(x) for x in range(wo))
    assert sum(p.steps for p in problems) == exact
    assert sum(p.steps for p in problems) <= W.deconv2d(n, c, h, w, m, k, stride=stride,
                                                         padding=padding).steps


def test_saliency_deconv_is_four_problems_with_the_taps_of_its_phases():
    problems = W.deconv2d_phases(1, 128, 8, 12, 64, 5, stride=3, padding=1)
    assert [p.a_shape for p in problems] == [(128, 2, 2), (128, 2, 1), (128, 1, 2),
                                             (128, 1, 1)]
    assert sum(math.prod(p.p_shape) for p in problems) == 64 * 24 * 36
    # 25 taps per output pixel block of 3 x 3 phases instead of 36
    fused = W.deconv2d(1, 128, 8, 12, 64, 5, stride=3, padding=1)
    assert sum(p.steps for p in problems) == 128 * 64 * (8 * 2 * 2 + 8) * (12 * 2 * 2 + 12)
    assert fused.steps == 128 * 64 * 27 * 39 * 4


def test_phase_groups_of_one_axis():
    g = W.deconv_phase_groups(8, 5, 3, 1)
    # phases 0 and 1 (2 taps) form one group, listed from phase 1 down: phase 0's outputs
    # start one q later (y = 3 q - 1 >= 0)
    assert [(x.r, x.dr, x.phases, x.taps, x.q, x.dq, x.count) for x in g] == [
        (1, -1, 2, 2, 0, 1, 8), (2, 1, 1, 1, 0, 0, 8)]
    assert g[0].pitch(3) == 2
    # k < stride: phase 2 has no tap
    assert [x.taps for x in W.deconv_phase_groups(3, 2, 3, 0)] == [1, 0]
    # k a multiple of stride: every phase has k / stride taps, one group
    assert [(x.phases, x.taps) for x in W.deconv_phase_groups(5, 4, 2, 1)] == [(2, 2)]


@pytest.mark.parametrize("args, kwargs, match", [
    ((8, 5, 0, 1), {}, "stride must be positive, not 0"),
    ((8, 0, 3, 1), {}, "k must be positive, not 0"),
    ((8, 5, 3, -1), {}, "padding must be >= 0, not -1"),
    ((1, 3, 2, 2), {}, r"padding 2 leaves no output for input size 1, kernel 3, stride 2: "
                       r"expected 2 \* padding < \(size - 1\) \* stride \+ k = 3"),
])
def test_phase_groups_refuse_bad_parameters(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        W.deconv_phase_groups(*args, **kwargs)


def test_deconv2d_phases_refuses_bad_parameters():
    with pytest.raises(ValueError, match="stride must be positive, not 0"):
        W.deconv2d_phases(1, 2, 3, 3, 2, 3, stride=0)
    with pytest.raises(TypeError, match="padding must be an integer, not 1.5"):
        W.deconv2d_phases(1, 2, 3, 3, 2, 3, stride=2, padding=1.5)
    with pytest.raises(ValueError, match="padding 3 leaves no output for input size 2"):
        W.deconv2d_phases(1, 2, 2, 2, 2, 3, stride=1, padding=3)
    with pytest.raises(ValueError, match=r"weights must be \(c, m, k, k\), not of shape "
                                         r"\(2, 3, 4\)"):
        W.deconv_phase_weights(np.zeros((2, 3, 4)), 3, 3, stride=2)


def _copy_problem(p_shape, out):
    src = Transform(p_shape, p=[Index(j) for j in range(len(p_shape))], a=[Index(0)], name="X")
    ones = Transform((1,), p=[None] * len(p_shape), a=[Index(0)], name="one")
    return Problem("copy", Dot(), p_shape, (1,), [src, ones], outputs=[out])


def test_affine_output_places_a_strided_part():
    out = Output("out", (4, 6), pitch=(6, 2), offset=1)        # odd columns
    problem = _copy_problem((4, 3), out)
    x = np.arange(12).reshape(4, 3)
    got = problem.run(x, np.ones(1, dtype=np.int64))
    np.testing.assert_array_equal(got, x)                         # the problem's own part
    whole = out.place(got, np.zeros((4, 6), dtype=np.int64))
    np.testing.assert_array_equal(whole[:, 1::2], x)
    assert not whole[:, 0::2].any()
    assert problem.out_pitch == (6, 2) and problem.out_elements() == 24
    assert problem.out_offset() == 1


@pytest.mark.parametrize("kwargs, p_shape, error, match", [
    (dict(pitch=(6, 1), offset=0), (3, 7), ValueError,
     r"pitches \(6, 1\) over p_shape \(3, 7\) overlap: pitch 6 must exceed 6"),
    (dict(pitch=(6, 2), offset=1), (4, 4), ValueError,
     r"the map reaches element 25 of tensor \(4, 6\) \(24 elements\); expected below 24"),
    (dict(pitch=(6,), offset=0), (4, 3), ValueError,
     r"pitch has 1 entries, the parallel space 2 \(\(4, 3\)\)"),
])
def test_affine_output_refuses_bad_maps(kwargs, p_shape, error, match):
    with pytest.raises(error, match=match):
        _copy_problem(p_shape, Output("out", (4, 6), **kwargs))


def test_affine_output_refuses_bad_fields():
    with pytest.raises(ValueError, match=r"pitch\[1\] must be an integer >= 0, not -2"):
        Output("out", (4, 6), pitch=(6, -2))
    with pytest.raises(ValueError, match="offset must be an integer >= 0, not -1"):
        Output("out", (4, 6), pitch=(6, 2), offset=-1)
    with pytest.raises(ValueError, match="offset 3 needs a pitch"):
        Output("out", (4, 6), offset=3)
    with pytest.raises(ValueError, match="takes no reshape or crop"):
        Output("out", (4, 6), reshape=(4, 6), pitch=(6, 1))
    out = Output("out", (4, 6), pitch=(6, 2))
    with pytest.raises(ValueError, match=r"tensor of shape \(4, 5\), expected \(4, 6\)"):
        out.place(np.zeros((4, 3)), np.zeros((4, 5)))


def test_run_problems_refuses_overlapping_writes_and_missing_tensors():
    a = _copy_problem((4, 3), Output("out", (4, 6), pitch=(6, 2), offset=0))
    b = _copy_problem((4, 3), Output("out", (4, 6), pitch=(6, 2), offset=0))
    x, one = np.arange(12).reshape(4, 3), np.ones(1, dtype=np.int64)
    with pytest.raises(ValueError, match="writes elements another problem wrote"):
        run_problems([a, b], {"X": x, "one": one})
    with pytest.raises(ValueError, match=r"reads \['one'\], not among the tensors given"):
        run_problems([a], {"X": x})


def test_compiled_phase_problem_writes_through_the_affine_map():
    """The kernel's out_pitch / out_base are the map (the WP's Eq. 10 with the output
    pitches); the DRAM tensor is the whole output, and the model counts the strided lines."""
    from merit.compile import compile_problem
    from merit.mapping.search import vector_lines
    problems = W.deconv2d_phases(1, 4, 4, 5, 8, 5, stride=3, padding=1)
    for p in problems:
        kernel = compile_problem(p, lanes=8)
        out = p.outputs[0]
        assert kernel.config["out_pitch"][:6] == list(out.pitch)
        (name, address), = kernel.outputs
        assert kernel.config["out_base"][0] == address + 2 * out.offset
        assert kernel.dram_bytes >= address + 2 * math.prod(out.shape)
    # one vector of 8 lanes along x of a one-phase group (pitch 3): 8 words over 22 -> 6 lines
    from merit.mapping.analysis import LaneGrouping
    grouping = LaneGrouping(((4, 0), (4, 1), (4, 2)))
    assert vector_lines(grouping, (1, 1, 1, 1, 8, 1)) == 2
    assert vector_lines(grouping, (1, 1, 1, 1, 8, 1), pitch=(0, 0, 0, 0, 3, 1)) == 6
