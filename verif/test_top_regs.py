"""The bare register bank on the Verilator model, through an AXI4-Lite master with backpressure,
its run-control pins driven by the bench (slow: CI runs the register tests on the top instead,
``test_top_top``)."""

import pytest

from harness import run_bench
from meritz.regs import Regs


@pytest.mark.sim
@pytest.mark.slow
def test_regs():
    lanes, taus, rp0_rows = 8, 2, 1024
    run_bench(Regs(lanes=lanes, taus=taus, rp0_rows=rp0_rows, rp1_rows=512), bench="bench_regs",
              config={"lanes": lanes, "taus": taus, "rp0_rows": rp0_rows, "rp1_rows": 512,
                      "backpressure": 0.3})
