"""The fused convolution and pooling with its window inside the channel passes
(:func:`merit.compile.window_inside`) on the whole TAU in Amaranth's simulator: the channels in
several accumulation tiles, one running sum per window position kept in the partial-result
store between them (the sequencer's indexed register), bit-exact against the ISA model of the
fused kernel with its window outside."""

import numpy as np
import pytest
from tau_pysim import run_tau

from merit import workloads as W
from merit.compile import window_inside
from merit.isa.programs import run as isa_run

CASES = {
    # 2 x 2 / 2 max, the whole window inside (r0..r3), 4 x 3 pooled outputs on 8-lane tiles
    "max_2x2": (lambda: W.conv_pool2d(1, 16, 8, 7, 3, 3, padding=1, pool=2), 2, False),
    # 3 x 3 / 2 max with ReLU, the window's column inside (r1..r3), its row outside
    "max_3x3_s2": (lambda: W.conv_pool2d(1, 16, 11, 13, 2, 3, pool=3, pool_stride=2,
                                         relu=True), 1, True),
    # 2 x 2 / 2 average with ReLU
    "avg_2x2": (lambda: W.conv_pool2d(1, 16, 9, 10, 2, 3, pool=2, pool_kind="avg",
                                      relu=True), 2, True),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow if CASES[n][2] else ())
                                  for n in CASES])
def test_tau_pool_window_inside(name):
    make, inside, _ = CASES[name]
    problem = make()
    other = window_inside(problem, inside)
    state, kernel, outs, expected, mem, initial = run_tau(other, max_cycles=60000,
                                                          instructions=24, backpressure=0.2)
    assert kernel.problem.strategy.inside == inside
    channels = problem.a_shape[problem.levels[0]]
    assert kernel.tiling.a_tile[problem.levels[0] - inside] < channels, kernel.tiling
    assert state["done"], f"the TAU did not finish in {state['cycles']} cycles"
    assert state["errors"] == 0
    for got, want in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    # the tensors as the TAU read them, run through the window-outside kernel's program
    data = []
    for t in problem.tensors:
        at, n = kernel.tensors[t.name], int(np.prod(t.shape))
        data.append(initial[at:at + 2 * n].view("<i2").reshape(t.shape).astype(np.int16))
    np.testing.assert_array_equal(outs[0], isa_run(problem, *data))
