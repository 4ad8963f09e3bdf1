"""One TAU end to end on the Verilator model (cocotb, AXI RAM at 8 bytes/cycle), bit-exact
against the golden ISA model, the whole DRAM image checked; each workload once without and once
with random stalls on every AXI channel. All ``slow`` (one 8-lane build takes minutes); CI runs
the same TAU in Amaranth's simulator (``tests/meritz/tau/test_tau_pysim.py``)."""

import pytest

from merit import workloads as W
from merit.sim import simulate

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048, instructions=24)

WORKLOADS = {
    "conv3x3": lambda: W.conv2d(1, 3, 9, 13, 4, 3, padding=1),
    "strided_conv": lambda: W.conv2d(1, 2, 9, 11, 2, 3, stride=2, padding=1),
    "dilated_conv": lambda: W.conv2d(1, 2, 9, 11, 2, 3, dilation=2, padding=2),
    "depthwise": lambda: W.depthwise(1, 4, 7, 9, 3, padding=1),
    "gemm": lambda: W.gemm(12, 10, 7),
    "max_pool": lambda: W.max_pool2d(1, 2, 8, 10, 2),
    "motion_sad": lambda: W.motion_estimation(16, 16, block=4, search=2),
    "bilateral": lambda: W.bilateral(8, 10, sigma_s=1.5, sigma_r=20.0, radius=1),
    "correlation": lambda: W.correlation(3, 6, 7, 1),
    # two levels (pooling window, then MACs); the accumulation tile splits the window and the
    # input channels, so the running maximum lives in the CP across accumulation tiles
    "conv_pool": lambda: W.conv_pool2d(1, 8, 12, 12, 8, 3, padding=1, pool=2),
    "conv_relu_pool_overlap": lambda: W.conv_pool2d(1, 4, 13, 13, 8, 3, stride=2, pool=3,
                                                    pool_stride=2, relu=True),
    "deconv_threshold": lambda: W.deconv2d(1, 3, 4, 5, 2, 5, stride=3, padding=1, threshold=4,
                                           high=255),
    "alpha_blend": lambda: W.alpha_blend(3, 8, 16),
}


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("backpressure", [0.0, 0.3])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_tau(name, backpressure, record_property):
    metrics = simulate(WORKLOADS[name](), backpressure=backpressure, **SMALL)
    assert 0 < metrics["utilization"] <= 1
    record_property("cycles", metrics["cycles"])
    record_property("utilization", round(metrics["utilization"], 3))
