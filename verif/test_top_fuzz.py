"""Fault and fuzz regression of meritz.top.Top (``bench_top_fuzz``) on the stand-in TAU, 8 lanes,
2 TAUs, the robustness DRAM (stalls, random latency, reordered reads and write responses), an
AXI protocol checker on both ports. Every run starts from random initial values
(``--x-initial unique`` with ``+verilator+rand+reset+2`` and a per-run seed, printed).

The default test runs a few hundred randomized runs with one random seed; the slow one
(``make regress``) several seeds of thousands of runs each, over the same Verilator build."""

import random

import pytest

from harness import run_bench
from meritz.top import Top
from stubs import StubTau
from test_top_robust import STRESS

LANES, TAUS = 8, 2


def fuzz(seed, *, fuzz_runs, storm_runs, error_runs):
    top = Top(lanes=LANES, taus=TAUS, tau=StubTau)
    config = {"lanes": LANES, "taus": TAUS, "rp0_rows": 16384 // (2 * LANES),
              "rp1_rows": 8192 // (2 * LANES), "fuzz_runs": fuzz_runs, "storm_runs": storm_runs,
              "error_runs": error_runs, **STRESS}
    print(f"[merit] fuzz seed {seed} (replay with seed={seed})")
    return run_bench(top, bench="bench_top_fuzz", config=config, seed=seed,
                     plusargs=["+verilator+rand+reset+2", f"+verilator+seed+{seed % 2**31 + 1}"])


@pytest.mark.sim
def test_top_fuzz():
    metrics = fuzz(random.randrange(2**31), fuzz_runs=150, storm_runs=6, error_runs=2)
    assert metrics["fuzz_runs"] == 150 and metrics["storm_runs"] == 6
    assert metrics["error_runs"] == 2


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 22, 33, 44, 55])
def test_top_fuzz_regression(seed):
    metrics = fuzz(seed, fuzz_runs=2000, storm_runs=30, error_runs=8)
    print(f"[merit] fuzz regression seed {seed}: {metrics}")
