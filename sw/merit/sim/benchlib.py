"""Helpers for the cocotb side of the benches: configuration, clock/reset, lane packing,
random backpressure."""

import itertools
import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

__all__ = ["bench_config", "setup", "pack_lanes", "unpack_lanes", "pause_generator", "rng",
           "record_metric"]


def bench_config():
    """The configuration dict that the pytest side passed to ``run_bench`` (with ``seed``)."""
    return json.loads(os.environ.get("MERIT_BENCH_CONFIG", "{}"))


def rng():
    """A ``random.Random`` seeded with the bench seed (logged by the harness)."""
    return random.Random(bench_config().get("seed", 0))


async def setup(dut, period_ns=10, reset_cycles=2):
    """Start the clock on ``dut.clk`` and hold ``dut.rst`` for ``reset_cycles`` cycles."""
    cocotb.start_soon(Clock(dut.clk, period_ns, unit="ns").start())
    dut.rst.value = 1
    await ClockCycles(dut.clk, reset_cycles)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


def pack_lanes(values, width):
    """Pack integers (lane 0 first) into one unsigned word, lane 0 in the LSBs."""
    mask = (1 << width) - 1
    word = 0
    for lane, value in enumerate(values):
        word |= (int(value) & mask) << (lane * width)
    return word


def unpack_lanes(value, lanes, width, signed=True):
    """Split a packed word into ``lanes`` integers of ``width`` bits (lane 0 = LSBs)."""
    value = int(value)
    mask = (1 << width) - 1
    out = []
    for lane in range(lanes):
        field = (value >> (lane * width)) & mask
        if signed and field >> (width - 1):
            field -= 1 << width
        out.append(field)
    return out


def pause_generator(rand, probability=0.3):
    """An endless iterator of 0/1 pauses (1 = stall this cycle), in the style of cocotbext-axi's
    ``set_pause_generator``; ``probability`` of 0 gives no backpressure."""
    return (int(rand.random() < probability) for _ in itertools.count())


def record_metric(name, value):
    """Record a measurement of this bench run (cycles, utilization...): ``run_bench`` returns
    it and ``make sim`` prints it in its summary table."""
    path = Path("metrics.json")
    metrics = json.loads(path.read_text()) if path.is_file() else {}
    metrics[name] = value
    path.write_text(json.dumps(metrics, indent=2, sort_keys=True))
