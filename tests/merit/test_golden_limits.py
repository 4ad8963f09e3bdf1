"""The golden model never wraps: integer runs that could leave int64 are refused, sizes are exact,
and a strategy without inputs runs."""

import re

import numpy as np
import pytest

import merit
from merit import strategies as S
from merit import workloads as w
from merit.execute import split_levels


def _full(problem, value, dtype):
    return [np.full(t.shape, value, dtype=dtype) for t in problem.tensors]


def test_gemm_of_int32_extremes_is_refused_not_wrapped():
    p = w.gemm(1, 1, 8)
    with pytest.raises(ValueError, match=r"Dot\(\): integer inputs of magnitude up to 2147483647 "
                                         r"over 8 accumulation step\(s\) can reach "
                                         r"36893488113059364872, beyond int64"):
        p.run(*_full(p, 2**31 - 1, np.int32))


def test_float64_computes_what_int64_refuses():
    p = w.gemm(1, 1, 8)
    out = p.run(*_full(p, 2**31 - 1, np.float64))
    assert out[0, 0] == float(8 * (2**31 - 1) ** 2)


def test_the_largest_run_that_fits_is_exact():
    # 2 steps of 2**31 * 2**30 = 2**62 each: 2**63 does not fit, 1 step does
    p = w.gemm(1, 1, 1)
    x = [np.array([[-(2**31)]], dtype=np.int64), np.array([[2**31 - 1]], dtype=np.int64)]
    assert int(p.run(*x)[0, 0]) == -(2**31) * (2**31 - 1)


def test_uint64_beyond_int64_is_refused():
    p = merit.Problem("copy", S.Copy(), (2,), (), [merit.Transform((2,), p=[merit.Index(0)],
                                                                   a=[])])
    with pytest.raises(ValueError, match=r"Copy\(\): an unsigned input holds 18446744073709551615, "
                                         r"beyond int64"):
        p.run(np.array([2**64 - 1, 0], dtype=np.uint64))


@pytest.mark.parametrize("strategy, peaks, a_size, bound", [
    (S.Dot(), [3, 5], 7, 105),
    (S.DotResidual(), [3, 5, 11], 7, 116),
    (S.Sum(), [9], 4, 36),
    (S.Mean(), [9], 4, 36),
    (S.Max(), [9], 4, 0),
    (S.Min(), [9], 4, 0),
    (S.Copy(), [9], 4, 0),
    (S.L1(), [3, 5], 4, 32),
    (S.BestMatch(), [3, 5], 4, 32),
    (S.SeparableDot(), [2, 3, 5], 4, 120),
    (S.Bilateral(1.0), [2, 30, 5], 4, 30),
])
def test_int_bounds(strategy, peaks, a_size, bound):
    assert strategy.int_bound(a_size, peaks) == bound


def test_max_of_int64_extremes_is_not_refused():
    p = w.max_pool2d(1, 1, 2, 2, 2)
    x = np.array([[[[2**63 - 1, -(2**63)], [0, 5]]]], dtype=np.int64)
    assert int(p.run(x).ravel()[0]) == 2**63 - 1


def test_steps_of_a_huge_layer_are_exact():
    p = w.conv2d(10**7, 1024, 1024, 1024, 1024, 3, padding=1)
    assert p.steps == 10**7 * 1024**4 * 3 * 3
    assert p.steps > 2**63


class Grid(S.Strategy):
    """No inputs: each lane writes its parallel coordinates."""

    inputs = ()
    outputs = ("row", "col")

    def pre(self, s, level):
        pass

    def loop(self, s):
        pass

    def post(self, s, level):
        s.out[0], s.out[1] = s.p


def test_a_problem_without_inputs_runs():
    rows, cols = merit.Problem("meshgrid", Grid(), (3, 4), (), []).run()
    ref_r, ref_c = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    assert (rows == ref_r).all() and (cols == ref_c).all()
    assert rows.dtype == np.int64


def test_uint64_of_exactly_int64_max_runs_exactly():
    # the largest unsigned value int64 holds is accepted, not refused one too early
    p = merit.Problem("copy", S.Copy(), (2,), (), [merit.Transform((2,), p=[merit.Index(0)],
                                                                   a=[])])
    out = p.run(np.array([2**63 - 1, 7], dtype=np.uint64))
    assert [int(v) for v in out] == [2**63 - 1, 7]


@pytest.mark.parametrize("levels", [(1, 0), (0, 1), (0, 0), (2, 1), (3, -1)])
def test_levels_must_count_every_accumulation_index(levels):
    with pytest.raises(ValueError, match=re.escape(
            f"levels {levels} must give 2 non-negative counts summing to the 2 accumulation "
            f"indices of a_shape (4, 4)")):
        split_levels(levels, (4, 4), 2)
    assert split_levels((1, 1), (4, 4), 2) == (1, 1)
    assert split_levels((2, 0), (4, 4), 2) == (2, 0)
