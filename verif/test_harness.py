"""Self-test of the harness: a registered pass-through stream, checked against itself, and a test
that fails on purpose when the configuration asks for it.

The pytest side. The Verilator/cocotb harness itself: build cache, pass, and a failure that names
its test.
"""

import cocotb
import pytest
from amaranth import Module, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from cocotb.triggers import ReadOnly, RisingEdge

from harness import BenchFailure, build, run_bench
from merit.sim.benchlib import bench_config, pack_lanes, record_metric, rng, setup, unpack_lanes
from merit.sim.build import build_time


@cocotb.test(skip=bench_config().get("skip_all", False))
async def passes_values_through(dut):
    cfg = bench_config()
    await setup(dut)
    rand = rng()
    lanes, width = cfg["lanes"], 16
    for _ in range(20):
        values = [rand.randrange(-32768, 32768) for _ in range(lanes)]
        dut.inp__payload.value = pack_lanes(values, width)
        await RisingEdge(dut.clk)
        await ReadOnly()
        got = unpack_lanes(dut.out__payload.value, lanes, width)
        assert got == values, f"{got} != {values}"
        await RisingEdge(dut.clk)
    record_metric("vectors", 20)


@cocotb.test(skip=not bench_config().get("expect_fail", False))
async def fails_on_purpose(dut):
    await setup(dut)
    raise AssertionError("this test fails on purpose")


# ---- pytest side: build the model and run the cocotb tests above ----


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
    metrics = run_bench(PassThrough(lanes=4), bench="test_harness",
                        config={"lanes": 4}, seed=1)
    built = metrics.pop("build")
    assert metrics == {"vectors": 20}
    record_property("vectors", metrics["vectors"])
    first = build(PassThrough(lanes=4))[0]
    assert (first / "dut_passthrough").is_file()
    assert build(PassThrough(lanes=4))[0] == first
    # the run names its model, and the model's build time when it was built with the record
    assert built["dir"] == str(first)
    recorded = build_time(first)
    assert built["time"] == recorded
    if recorded is not None:
        assert recorded["seconds"] >= 0 and recorded["cores"] >= 1


def test_failure_names_the_failed_test():
    with pytest.raises(BenchFailure, match="fails_on_purpose"):
        run_bench(PassThrough(lanes=4), bench="test_harness",
                  config={"lanes": 4, "expect_fail": True}, seed=2)


def test_unknown_bench_is_refused():
    with pytest.raises(ValueError, match="bench must name a cocotb module"):
        run_bench(None, bench="no_such_bench")


def test_a_bench_that_runs_no_test_fails():
    with pytest.raises(BenchFailure, match="ran no cocotb test"):
        run_bench(PassThrough(lanes=4), bench="test_harness",
                  config={"lanes": 4, "skip_all": True}, seed=3)


def test_only_the_top_ports_are_public_unless_asked():
    """Models are built without cocotb's ``--public-flat-rw`` (only the top's own signals are
    visible, through a generated ``public.vlt``); ``public=True`` builds one with every signal."""
    def command(build_dir):
        line = (build_dir / "Vtop__verFiles.dat").read_text().splitlines()[1]
        assert line.startswith("C "), line
        return line

    ports = build(PassThrough(lanes=4))[0]
    assert "--public-flat-rw" not in command(ports)
    assert 'public_flat_rw -module "dut_passthrough" -var "*"' in \
        (ports / "public.vlt").read_text()
    every = build(PassThrough(lanes=4), public=True)[0]
    assert every != ports and "--public-flat-rw" in command(every)
    assert not (every / "public.vlt").exists()
