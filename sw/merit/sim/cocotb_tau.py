"""cocotb bench of :class:`meritz.tau.Tau`: one MERIT problem end to end, DRAM to DRAM.

The bench is the dispatcher and the DRAM: it compiles the problem (``merit.compile``), writes the
configuration, fills the whole DRAM with random bytes and the input tensors with random int16
data, hands the TAU every parallel tile, and waits until the TAU is idle (every write answered).
The reference is the golden ISA model (``merit.isa.programs.run``), never re-implemented here:
every output must equal it bit for bit and **every other DRAM byte must be unchanged**. Records
``cycles`` (first DRAM request to last write response) and ``utilization`` (useful ALU operations /
(cycles x lanes), ``docs/perf.md``), the DRAM traffic and the tiling, and prints a progress line
every ~2 s of wall time (``simulate.report_progress``).
"""

import time

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge

from merit.isa.programs import run as isa_run
from merit.sim.benchlib import bench_config, rng, setup
from merit.sim.dram import Dram, check_outputs, fill_dram
from merit.sim.run import bench_kernel, cycle_limit, expected_cycles, record_run, report_progress
from meritz import kernelcfg


@cocotb.test()
async def tau_matches_the_isa_model(dut):
    cfg = bench_config()
    rand = rng()
    problem, kernel = bench_kernel(cfg)
    lanes = cfg["lanes"]
    layout = kernelcfg.layout(instructions=cfg.get("instructions", 16))
    dut.config.value = kernelcfg.pack(kernel.config, layout)
    luts = list(kernel.program.luts) + [[0] * 33] * (2 - len(kernel.program.luts))
    dut.luts.value = kernelcfg.lut_layout().const([list(t) for t in luts]).as_bits()
    dut.tiles__valid.value = 0
    await setup(dut)
    dram = Dram(dut, "m_axi_", dut.clk, dut.rst, size=kernel.dram_bytes,
                latency=cfg.get("latency", 20), bytes_per_cycle=cfg.get("bytes_per_cycle", 8),
                rand=rand, backpressure=cfg.get("backpressure", 0.0))
    nrng = np.random.default_rng(rand.randrange(1 << 30))
    image, arrays = fill_dram(dram, kernel, problem, nrng)

    pending = list(kernel.tiles)
    total = len(kernel.tiles)
    expected = expected_cycles(kernel, cfg)
    cocotb.start_soon(report_progress(total, lambda: total - len(pending), expected=expected,
                                      path=cfg.get("progress_file")))
    started, cpu_started = time.monotonic(), time.process_time()
    cycles = 0
    limit = cycle_limit(cfg, expected)
    while cycles < limit:
        dut.tiles__valid.value = int(bool(pending))
        if pending:
            origin = list(pending[0]) + [0] * (6 - len(pending[0]))
            dut.tiles__payload.value = sum(v << (16 * j) for j, v in enumerate(origin))
        await ReadOnly()
        took = pending and int(dut.tiles__ready.value)
        done = not pending and int(dut.idle.value)
        await RisingEdge(dut.clk)
        cycles += 1
        if took:
            pending.pop(0)
        if done:
            break
    assert not pending and int(dut.idle.value), f"the TAU did not finish in {limit} cycles"
    seconds, cpu_seconds = time.monotonic() - started, time.process_time() - cpu_started
    errors = int(dut.errors.value)
    assert errors == 0, f"TAU error flags {errors:#x}"

    assert not dram.outside, f"DRAM accesses outside the memory: {dram.outside[:4]}"
    check_outputs(dram, kernel, problem, image,
                  isa_run(problem, *arrays, shift=cfg.get("shift", 0)))
    record_run(dram, kernel, cfg, alus=lanes, seconds=seconds,
               cpu_seconds=cpu_seconds)
