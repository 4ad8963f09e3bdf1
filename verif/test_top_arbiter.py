"""The DRAM-port arbiter on the Verilator model: random managers, backpressure, drain."""

import pytest

from harness import run_bench
from meritz.arbiter import Arbiter


@pytest.mark.sim
@pytest.mark.parametrize("managers", [1, 3])
def test_arbiter(managers):
    metrics = run_bench(Arbiter(managers=managers), bench="bench_arbiter",
                        config={"managers": managers, "backpressure": 0.3})
    assert metrics["arbiter_max_wait_ar"] <= managers - 1
