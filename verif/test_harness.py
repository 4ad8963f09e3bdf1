"""The Verilator/cocotb harness itself: build cache, pass, and a failure that names its test."""

import pytest
from amaranth import Module, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from harness import BenchFailure, build, run_bench

pytestmark = pytest.mark.sim


class PassThrough(wiring.Component):
    """A register stage: ``out`` takes the value of ``inp`` one cycle later."""

    def __init__(self, *, lanes):
        self._lanes = lanes
        layout = data.ArrayLayout(signed(16), lanes)
        super().__init__({"inp__payload": In(layout), "out__payload": Out(layout)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.out__payload.eq(self.inp__payload)
        return m


def test_bench_passes_and_build_is_cached(record_property):
    metrics = run_bench(PassThrough(lanes=4), bench="bench_harness_selftest",
                        config={"lanes": 4}, seed=1)
    assert metrics == {"vectors": 20}
    record_property("vectors", metrics["vectors"])
    first = build(PassThrough(lanes=4))[0]
    assert (first / "dut_passthrough").is_file()
    assert build(PassThrough(lanes=4))[0] == first


def test_failure_names_the_failed_test():
    with pytest.raises(BenchFailure, match="fails_on_purpose"):
        run_bench(PassThrough(lanes=4), bench="bench_harness_selftest",
                  config={"lanes": 4, "expect_fail": True}, seed=2)


def test_unknown_bench_is_refused():
    with pytest.raises(ValueError, match="bench must name a cocotb module"):
        run_bench(None, bench="no_such_bench")


def test_a_bench_that_runs_no_test_fails():
    with pytest.raises(BenchFailure, match="ran no cocotb test"):
        run_bench(PassThrough(lanes=4), bench="bench_harness_selftest",
                  config={"lanes": 4, "skip_all": True}, seed=3)
