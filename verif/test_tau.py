"""One TAU end to end on the Verilator model, bit-exact against the golden ISA model."""

import pytest

from merit import workloads as W
from simulate import simulate

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


@pytest.mark.sim
@pytest.mark.slow
def test_tau_conv3x3_multichannel_odd_sizes():
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    metrics = simulate(problem, **SMALL)
    assert 0 < metrics["utilization"] <= 1
