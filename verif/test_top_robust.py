"""Robustness of meritz.top.Top on the Verilator model: random backpressure, latency and
read reordering, abort, reset in the middle of a kernel, AXI error responses, every configuration
check (``bench_top_robust``). CI runs them on the stand-in TAU (the model of ``test_top_top``);
the slow test runs the stopping scenarios, an illegal program and the fields that no check covers
on two real 8-lane TAUs with a compiled convolution."""

import pickle

import pytest

from harness import run_bench
from merit import workloads as W
from meritz.top import Top
from stubs import StubTau

#: The DRAM of the robustness runs: 30 % stalls on every channel, 1..60 cycles of read latency
#: per burst, 0..40 cycles before each write response, read bursts of different IDs reordered
#: and interleaved.
STRESS = {"backpressure": 0.3, "latency": [1, 60], "write_latency": [0, 40], "reorder": True}
#: The scenarios that stop a real kernel (the configuration checks are the top's, not the TAU's).
KERNEL_TESTS = ["kernels_complete_under_random_latency", "abort_at_a_random_point",
                "reset_in_the_middle_of_a_kernel", "axi_error_responses_stop_the_run",
                "illegal_instruction_stops_the_run", "unchecked_fields_never_hang"]


@pytest.mark.sim
def test_top_robust_stub():
    lanes, taus = 8, 2
    top = Top(lanes=lanes, taus=taus, tau=StubTau)
    config = {"lanes": lanes, "taus": taus, "rp0_rows": 16384 // (2 * lanes),
              "rp1_rows": 8192 // (2 * lanes), **STRESS}
    run_bench(top, bench="bench_top_robust", config=config)


@pytest.mark.sim
@pytest.mark.slow
def test_top_robust_real_tau(tmp_path):
    lanes, taus, rp_bytes, cp_bytes = 8, 2, (2048, 1024), 2048
    problem = tmp_path / "problem.pkl"
    problem.write_bytes(pickle.dumps(W.conv2d(1, 3, 9, 13, 4, 3, padding=1)))
    top = Top(lanes=lanes, taus=taus, rp0_bytes=rp_bytes[0], rp1_bytes=rp_bytes[1],
              cp_bytes=cp_bytes)
    config = {"problem": str(problem), "lanes": lanes, "taus": taus, "rp_bytes": list(rp_bytes),
              "cp_bytes": cp_bytes, "rp0_rows": rp_bytes[0] // (2 * lanes), "stops": 2, **STRESS}
    run_bench(top, bench="bench_top_robust", config=config, name=f"top_n{lanes}_t{taus}",
              testcase=KERNEL_TESTS)
