"""Self-test of the harness: a registered pass-through stream, checked against itself, and a test
that fails on purpose when the configuration asks for it."""

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from merit.sim.benchlib import bench_config, pack_lanes, record_metric, rng, setup, unpack_lanes


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
