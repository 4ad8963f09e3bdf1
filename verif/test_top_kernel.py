"""meritz.top.Top with real TAUs, one problem end to end through the control port
(``simulate(..., taus=T)``; slow: the model of two 8-lane TAUs is large to build)."""

import pytest

from merit import workloads as W
from merit.sim import simulate

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 2, 4, 8])
def test_top_conv3x3(taus):
    """On 2, 4 and 8 TAUs the compiler shares the weights (one fetch per group, multicast); the
    bench checks the whole output against the ISA model and every other DRAM byte."""
    problem = W.conv2d(1, 3, 9, 13, 4, 3, padding=1)
    metrics = simulate(problem, taus=taus, backpressure=0.2, **SMALL)
    assert 0 < metrics["utilization"] <= 1
    assert metrics["tiles"] > 0
    # the CYCLES register counts from START to done and the DRAM span lies inside it; outside
    # it are only the START check, the first dispatch and the DMA's first address, and the
    # last idle reaching done (about 10 cycles): no tile computes after its last write, since
    # edge tiles skip their warps outside the output (once 207 cycles here on 2 TAUs)
    assert metrics["cycles"] <= metrics["cycles_register"] <= metrics["cycles"] + 32
