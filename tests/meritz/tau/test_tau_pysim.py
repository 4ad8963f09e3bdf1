"""The whole TAU in Amaranth's simulator (no Verilator build): nine workloads bit-exact against
the golden ISA model, odd sizes that do not divide the tiles, random stalls on every AXI channel,
the whole DRAM image checked."""

import numpy as np
import pytest
from tau_pysim import run_tau

from merit import workloads as W

CASES = {
    "conv3x3": (lambda: W.conv2d(1, 2, 5, 9, 2, 3, padding=1), False),
    "gemm": (lambda: W.gemm(12, 10, 7), False),
    "max_pool": (lambda: W.max_pool2d(1, 2, 8, 10, 2), True),
    "strided_conv": (lambda: W.conv2d(1, 2, 9, 11, 2, 3, stride=2, padding=1), True),
    "dilated_conv": (lambda: W.conv2d(1, 2, 9, 11, 2, 3, dilation=2, padding=2), True),
    "depthwise": (lambda: W.depthwise(1, 4, 7, 9, 3, padding=1), True),
    "motion_sad": (lambda: W.motion_estimation(16, 16, block=4, search=2), True),
    "bilateral": (lambda: W.bilateral(8, 10, sigma_s=1.5, sigma_r=20.0, radius=1), True),
    "correlation": (lambda: W.correlation(3, 6, 7, 1), True),
}


def _cases():
    """CI runs conv 3x3 with stalls and GEMM without; the rest is ``slow``."""
    for name, (_, slow) in CASES.items():
        for bp in (0.0, 0.3):
            quick = not slow and (bp > 0) == (name == "conv3x3")
            yield pytest.param(name, bp, marks=() if quick else pytest.mark.slow,
                               id=f"{name}-bp{bp}")


@pytest.mark.parametrize("name, backpressure", list(_cases()))
def test_tau_end_to_end(name, backpressure):
    problem = CASES[name][0]()
    instructions = 24 if name == "bilateral" else 16
    state, kernel, outs, expected, mem, initial = run_tau(problem, max_cycles=12000,
                                                          instructions=instructions,
                                                          backpressure=backpressure)
    assert state["done"], f"the TAU did not finish in {state['cycles']} cycles"
    assert state["errors"] == 0
    for got, want in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    outside = np.ones(len(mem), dtype=bool)
    n_out = 2 * int(np.prod(problem.p_shape))
    for _, address in kernel.outputs:
        outside[address:address + n_out] = False
    assert np.array_equal(mem[outside], initial[outside]), "DRAM outside the outputs changed"
