"""meritz.top.Top on the Verilator model with the stand-in TAU: control port, dispatcher,
arbiter, done / irq, a TAU error (the robustness scenarios are in test_top_robust, the real TAU's
end-to-end kernels in test_top_kernel)."""

import pytest

from harness import run_bench
from meritz.top import Top
from stubs import StubTau

# bad_configuration_is_refused runs on the top in test_top_robust (with DRAM checks)
REGISTER_TESTS = ["registers_read_back", "unmapped_addresses_answer_slverr"]


def _run(taus):
    lanes = 8
    top = Top(lanes=lanes, taus=taus, tau=StubTau)
    config = {"lanes": lanes, "taus": taus, "backpressure": 0.3}
    metrics = run_bench(top, bench="bench_top", config=config)
    # the register bench through the top's control port (same model, no second build)
    run_bench(top, bench="bench_regs", config=config, testcase=REGISTER_TESTS)
    return metrics


@pytest.mark.sim
def test_top_two_taus():
    metrics = _run(2)
    assert metrics


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 4, 8])
def test_top_taus(taus):
    _run(taus)
