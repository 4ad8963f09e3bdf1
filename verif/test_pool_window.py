"""The fused convolution and pooling with its pooling window inside the channel passes
(:func:`merit.compile.window_inside`, the sequencer's indexed register) on the Verilator models
of one TAU and of the processor with 1, 2 and 4 TAUs: max and average pooling, 3 x 3 / 2 and
2 x 2 / 2 windows, input channels split over several accumulation tiles, outputs that do not
divide the tiles; bit-exact (the benches check every output against the ISA model and every
other DRAM byte). All ``slow``: each configuration is one Verilator build."""

import pytest

from merit import workloads as W
from merit.compile import compile_problem, window_inside
from merit.sim import simulate

#: the 8-lane TAU of ``test_tau`` (one build for both modules)
TAU = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048, instructions=24)
#: the 8-lane processor of ``test_top_kernel``
TOP = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)

CASES = {
    # 3 x 3 / 2 max with ReLU: the window's column inside (one sum per column, r1..r3)
    "max_3x3_s2": (lambda: W.conv_pool2d(1, 16, 11, 13, 3, 3, pool=3, pool_stride=2,
                                         relu=True), 1),
    # 2 x 2 / 2 average: the whole window inside (r0..r3); 5 x 6 pooled outputs
    "avg_2x2": (lambda: W.conv_pool2d(1, 16, 10, 12, 3, 3, padding=1, pool=2,
                                      pool_kind="avg"), 2),
    # 2 x 2 / 2 max, the whole window inside
    "max_2x2": (lambda: W.conv_pool2d(1, 24, 9, 11, 4, 3, padding=1, pool=2), 2),
}


def _problem(name, **hardware):
    make, inside = CASES[name]
    problem = window_inside(make(), inside)
    kernel = compile_problem(problem, **hardware)
    channels = problem.a_shape[problem.levels[0]]
    assert kernel.tiling.a_tile[problem.levels[0]] < channels, kernel.tiling   # split channels
    return problem


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("name", ["max_3x3_s2", "avg_2x2"])
def test_tau_pool_window(name):
    metrics = simulate(_problem(name, **TAU), backpressure=0.3, **TAU)
    assert 0 < metrics["utilization"] <= 1


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus, name", [(1, "avg_2x2"), (2, "max_3x3_s2"), (4, "max_2x2")])
def test_top_pool_window(taus, name):
    metrics = simulate(_problem(name, taus=taus, **TOP), taus=taus, backpressure=0.2, **TOP)
    assert 0 < metrics["utilization"] <= 1
    assert metrics["tiles"] > 0
