"""The ISA interpreter against the golden model (merit.isa.programs.check_golden), the leg of the
three-way check that catches a program computing something else than its strategy."""

import numpy as np
import pytest

import merit
from merit import isa
from merit import strategies as S
from merit import workloads as W
from merit.isa.programs import check_golden, fixed_values

WORKLOADS = {
    "conv": lambda: W.conv2d(1, 4, 8, 8, 4, 3, padding=1),
    "conv_relu_residual": lambda: W.conv2d(1, 4, 6, 6, 4, 3, relu=True, residual=True),
    "gemm": lambda: W.gemm(16, 8, 40),
    "max_pool": lambda: W.max_pool2d(1, 2, 8, 8, 2),
    "avg_pool": lambda: W.avg_pool2d(1, 2, 6, 6, 3),
    "sad": lambda: W.motion_estimation(16, 16, block=4, search=2),
    "separable": lambda: W.separable_filter(8, 8, 3),
    "bilateral": lambda: W.bilateral(12, 12, sigma_s=1.0, sigma_r=200.0),
    "conv_max_pool": lambda: W.conv_pool2d(1, 3, 12, 12, 4, 3, padding=1, pool=2),
    "conv_relu_avg_pool": lambda: W.conv_pool2d(2, 2, 9, 9, 3, 3, pool=2, pool_kind="avg",
                                                relu=True),
    "deconv_threshold": lambda: W.deconv2d(1, 3, 4, 5, 2, 5, stride=3, padding=1, threshold=4,
                                           high=255),
    "alpha_blend": lambda: W.alpha_blend(3, 6, 9, scale=3),
}


@pytest.mark.parametrize("name", ["conv_max_pool", "conv_relu_avg_pool", "deconv_threshold"])
def test_fused_programs_hold_with_a_shift(name):
    assert all(c.held and c.max_error == 0 for c in check_golden(WORKLOADS[name](), shift=4))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_built_in_programs_hold_on_every_data_set(name):
    checks = check_golden(WORKLOADS[name]())
    assert [c.data for c in checks] == ["small", "medium", "large"]
    assert all(c.held for c in checks), checks
    exact = name not in ("avg_pool", "bilateral")
    assert all((c.tolerance == 0) == exact for c in checks)
    assert all(c.max_error <= c.tolerance for c in checks)


def test_large_data_saturate_most_outputs_of_a_dot():
    large = check_golden(WORKLOADS["gemm"]())[2]
    assert large.saturated > large.outputs // 2 and large.max_error == 0


class SquaredDistance(S.Strategy):
    """sum (x - y)^2, registered below with the program of sum |x - y| (a wrong program)."""

    inputs = (S.Input("x", "loop"), S.Input("y", "loop"))

    def pre(self, s, level):
        s.acc = 0

    def loop(self, s, x, y):
        s.acc = s.acc + (x - y) ** 2

    def post(self, s, level):
        s.out[0] = s.acc


def test_a_program_computing_something_else_is_caught():
    isa.register_program(SquaredDistance, lambda p, s: isa.ProgramParts(
        [["add r0, 0, 0, 0"]], ["l1 r0, r0, i0, i1"], [["out r0, 0"]], ["i0", "i1"]),
        replace=True)
    t = merit.Transform((16, 4), p=[merit.Index(0)], a=[merit.Index(1)], name="x")
    u = merit.Transform((16, 4), p=[merit.Index(0)], a=[merit.Index(1)], name="y")
    checks = check_golden(merit.Problem("sqd", SquaredDistance(), (16,), (4,), [t, u]))
    assert not any(c.held for c in checks)
    assert checks[0].max_error > 0


def test_given_arrays_are_a_fourth_data_set():
    p = WORKLOADS["gemm"]()
    arrays = [np.full(t.shape, 3, np.int16) for t in p.tensors]
    given = check_golden(p, arrays=arrays)[-1]
    assert given.data == "given" and given.held and given.saturated == 0


def test_fixed_values_are_what_the_program_reads():
    p = WORKLOADS["bilateral"]()
    g = fixed_values(p)["G"]
    assert g.dtype == np.int16 and int(g.max()) == 4096      # Q12: the centre weight is 1.0
    assert fixed_values(WORKLOADS["gemm"]()) == {}
