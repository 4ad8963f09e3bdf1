"""meritz.top.Top on the Verilator model with the stand-in TAU: control port, dispatcher,
arbiter, done / irq, abort, errors (the real TAU's end-to-end kernels are in test_top_kernel)."""

import pytest

from harness import run_bench
from meritz.top import StubTau, Top


def _run(taus):
    lanes = 8
    return run_bench(Top(lanes=lanes, taus=taus, tau=StubTau), bench="bench_top",
                     config={"lanes": lanes, "taus": taus, "backpressure": 0.3})


@pytest.mark.sim
def test_top_two_taus():
    metrics = _run(2)
    assert metrics


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 4])
def test_top_taus(taus):
    _run(taus)
