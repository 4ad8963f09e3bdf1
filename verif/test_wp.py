"""The Write Pipeline on the Verilator model, against the whole DRAM image."""

import pytest

from harness import run_bench
from meritz.tau.wp import WritePipeline

CASES = {
    # odd 2-D output, 4x2 lanes per warp, unaligned base
    "conv_5x13": dict(p_size=[5, 13], p_tile=[4, 8], lane_index=[1, 1, 0], pitch=[13, 1],
                      base=0x102),
    # 3-D output with a padded row pitch, lanes spread over two indices, 8 in a row
    "pitched_3d": dict(p_size=[3, 6, 9], p_tile=[1, 2, 8], lane_index=[2, 2, 2], pitch=[80, 11, 1],
                       base=0x40),
}


def _cases():
    for case in sorted(CASES):
        for bp in (0.0, 0.3):
            quick = (bp > 0) == (case == "conv_5x13")
            yield pytest.param(case, bp, marks=() if quick else pytest.mark.slow,
                               id=f"{case}-bp{bp}")


@pytest.mark.sim
@pytest.mark.parametrize("case, backpressure", list(_cases()))
def test_wp(case, backpressure):
    cfg = dict(CASES[case], lanes=8, dram_bytes=1024, backpressure=backpressure,
               gaps=0.2 if backpressure else 0.0)
    metrics = run_bench(WritePipeline(lanes=8), bench="bench_wp", config=cfg)
    assert metrics["wp_write_beats"] > 0
