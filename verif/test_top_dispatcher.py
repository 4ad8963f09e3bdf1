"""The dispatcher on the Verilator model: every tile exactly once for 1, 2 and 4 TAUs."""

import pytest

from harness import run_bench
from meritz.dispatcher import Dispatcher


@pytest.mark.sim
@pytest.mark.parametrize("taus", [1, 2, 4, 8])
def test_dispatcher(taus):
    run_bench(Dispatcher(taus=taus), bench="bench_dispatcher", config={"taus": taus})
