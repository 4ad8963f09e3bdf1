"""Bad input: the exception type and a message naming the tensor, the index and the expectation."""

import numpy as np
import pytest

from merit import Index, Problem, Transform, execute
from merit import strategies as S
from merit import workloads as wl


@pytest.mark.parametrize("args,exc,msg", [
    ((0, 0), ValueError, r"Index stride must be non-zero, not 0 \(write None"),
    ((-1,), ValueError, r"Index axis must be >= 0, not -1"),
    ((1.5,), TypeError, r"Index axis must be an integer, not 1.5"),
    ((True,), TypeError, r"Index axis must be an integer, not True"),
    ((0, 1, "2"), TypeError, r"Index offset must be an integer, not '2'"),
])
def test_index(args, exc, msg):
    with pytest.raises(exc, match=msg):
        Index(*args)


@pytest.mark.parametrize("kwargs,exc,msg", [
    (dict(source_shape=(3, 0)), ValueError,
     r"tensor 'W': source_shape\[1\] must be positive, not 0"),
    (dict(source_shape=(3, 2.0)), TypeError, r"tensor 'W': source_shape\[1\] must be an integer"),
    (dict(p=[Index(2)]), ValueError,
     r"tensor 'W': p\[0\] moves along axis 2 but the source has 2 axes \(shape \(3, 4\)\)"),
    (dict(a=[None, Index(5)]), ValueError, r"tensor 'W': a\[1\] moves along axis 5"),
    (dict(p=[3]), TypeError, r"tensor 'W': p\[0\] must be an Index or None, not 3"),
    (dict(boundary="wrap"), ValueError,
     r"tensor 'W': boundary must be one of zero, clamp, error, not 'wrap'"),
    (dict(boundary=("zero",)), ValueError,
     r"tensor 'W': boundary has 1 modes but the source has 2"),
])
def test_transform(kwargs, exc, msg):
    args = dict(source_shape=(3, 4), p=[Index(0)], a=[Index(1)], name="W") | kwargs
    with pytest.raises(exc, match=msg):
        Transform(**args)


X = Transform((3, 4), p=[Index(0)], a=[Index(1, 1, -1)], boundary="error", name="W")


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: execute(S.Sum(), (3,), (4,), [(np.zeros((3, 4)), X)]), IndexError,
     r"tensor 'W': axis 1 is indexed over \[-1, 2\] but must stay in \[0, 3\] "
     r"\(boundary='error'\); moved by a\[0\] \(stride 1, offset -1\)"),
    (lambda: execute(S.Sum(), (3, 4), (4,), [(np.zeros((3, 4)), X)]), ValueError,
     r"tensor 'W': the transform has 1 parallel indices but p_shape \(3, 4\) has 2"),
    (lambda: execute(S.Sum(), (3,), (4, 1), [(np.zeros((3, 4)), X)]), ValueError,
     r"tensor 'W': the transform has 1 accumulation indices but a_shape \(4, 1\) has 2"),
    (lambda: execute(S.Sum(), (3,), (4,), [(np.zeros((3, 5)), X)]), ValueError,
     r"tensor 'W': array has shape \(3, 5\), expected \(3, 4\)"),
    (lambda: execute(S.Sum(), (3,), (4,), [(np.zeros((3, 4), bool), X)]), TypeError,
     r"tensor 'W': dtype bool is not supported; expected an integer or floating dtype"),
    (lambda: execute(S.Sum(), (3,), (4,), [(np.zeros((3, 4), complex), X)]), TypeError,
     r"tensor 'W': dtype complex128 is not supported"),
    (lambda: execute(S.Sum(), (3,), (0,), [(np.zeros((3, 4)), X)]), ValueError,
     r"a_shape\[0\] must be positive, not 0"),
    (lambda: execute(S.Sum(), (-3,), (4,), [(np.zeros((3, 4)), X)]), ValueError,
     r"p_shape\[0\] must be positive, not -3"),
    (lambda: execute(S.Dot(), (3,), (4,), [(np.zeros((3, 4)), X)]), ValueError,
     r"Dot\(\) reads 2 inputs \(x, w\), got 1"),
    (lambda: execute(S.Sum(), (3,), (4,), [np.zeros((3, 4))]), TypeError,
     r"input 0 must be an \(array, Transform\) pair"),
    (lambda: execute(S.SeparableDot(), (3,), (4,), [(np.zeros((3, 4)), X)] * 3), ValueError,
     r"the strategy has 2 accumulation levels: give levels="),
    (lambda: execute(S.SeparableDot(), (3,), (4,), [(np.zeros((3, 4)), X)] * 3, levels=(1, 1)),
     ValueError, r"levels \(1, 1\) must give 2 non-negative counts summing to the 1 "),
    (lambda: execute("Dot", (3,), (4,), []), TypeError, r"strategy must be a merit.strategies"),
])
def test_execute(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_gather_checks_error_boundary_too():
    with pytest.raises(IndexError, match=r"tensor 'W': axis 1 coordinate -1 is outside \[0, 3\]"):
        X.gather(np.zeros((3, 4)), (3,), [np.array([0])])


def test_problem_errors():
    A = Transform((2, 3), p=[Index(0)], a=[Index(1)], name="A")
    B = Transform((2, 4), p=[Index(0)], a=[Index(1)], name="A")
    with pytest.raises(ValueError,
                       match=r"problem 'p': tensor 'A' is read with shapes \(2, 3\) and \(2, 4\)"):
        Problem("p", S.Dot(), (2,), (3,), [A, B])
    with pytest.raises(ValueError, match=r"problem 'p': Dot\(\) reads 2 inputs \(x, w\), got 1"):
        Problem("p", S.Dot(), (2,), (3,), [A])
    prob = wl.gemm(2, 3, 4)
    with pytest.raises(ValueError, match=r"problem 'gemm' takes 2 arrays \(A, B\), got 1"):
        prob.run(np.zeros((2, 4)))
    with pytest.raises(ValueError,
                       match=r"tensor 'B': array has shape \(3, 4\), expected \(4, 3\)"):
        prob.run(np.zeros((2, 4)), np.zeros((3, 4)))


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: wl.conv2d(1, 3, 8, 8, 4, 3, groups=2), ValueError,
     r"groups=2 must divide the channels c=3 and m=4"),
    (lambda: wl.conv2d(1, 3, 2, 8, 4, 3), ValueError,
     r"kernel 3 \(dilation 1\) does not fit input size 2 with padding 0"),
    (lambda: wl.conv2d(1, 3, 8, 8, 4, 3, stride=0), ValueError, r"stride must be positive, not 0"),
    (lambda: wl.gemm(2, 2.5, 2), TypeError, r"n must be an integer, not 2.5"),
    (lambda: wl.motion_estimation(12, 16, block=8), ValueError,
     r"image 12x16 is not a whole number of 8x8 blocks"),
    (lambda: wl.separable_filter(8, 8, 0), ValueError, r"k must be positive, not 0"),
    (lambda: wl.bilateral(8, 8, sigma_s=0, sigma_r=1), ValueError,
     r"sigma_s must be positive, not 0"),
    (lambda: S.Bilateral(-1), ValueError, r"Bilateral sigma_r must be positive, not -1.0"),
])
def test_workload_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_unnamed_operands_read_tensors_of_their_own():
    t = Transform((2, 3), p=[Index(0)], a=[Index(1)])
    prob = Problem("p", S.L1(), (2,), (3,), [t, t])
    assert [x.name for x in prob.tensors] == ["in0", "in1"]
    a, b = np.arange(6).reshape(2, 3), np.zeros((2, 3))
    np.testing.assert_array_equal(prob.run(a, b), [3, 12])
