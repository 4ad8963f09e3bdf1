"""cocotb bench of meritz.top.Top with the real TAUs: one MERIT problem end to end, the way
software runs it.

The bench compiles the problem (``merit.compile``), writes the configuration registers and the LUT
window through the AXI4-Lite port (``merit.regmap``), fills DRAM with random bytes and the inputs
with random int16, writes CTRL.start and waits for the interrupt. Then STATUS must say done
without error, every output must equal the golden ISA model (``merit.isa.programs.run``) bit for
bit, and every other DRAM byte must be unchanged, whatever the number of TAUs. With
``register_writes`` in the configuration, the register stream of another driver (the C driver's
log, ``merit.flow.driver``) is replayed instead of the Python one. Records the same
metrics as :mod:`merit.sim.cocotb_tau` (utilization over all TAUs' ALUs) plus the CYCLES register,
and prints a progress line every ~2 s of wall time; tiles done = the dispatcher's count of tiles
handed over, read from the model's hierarchy (the control port is not touched while the kernel
runs).
"""

import time

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge, with_timeout
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from merit.isa.programs import run as isa_run
from merit.regmap import Error, register_map
from merit.sim.benchlib import bench_config, pause_generator, record_metric, rng, setup
from merit.sim.dram import Dram, check_outputs, fill_dram
from merit.sim.run import bench_kernel, cycle_limit, expected_cycles, record_run, report_progress


@cocotb.test()
async def kernel_matches_the_isa_model(dut):
    cfg = bench_config()
    rand = rng()
    nrng = np.random.default_rng(rand.randrange(1 << 30))     # first: the fast bench's image
    lanes, taus = cfg["lanes"], cfg["taus"]
    shift = cfg.get("shift", 0)
    instructions = cfg.get("instructions", 16)
    problem, kernel = bench_kernel(cfg)
    rmap = register_map(instructions=instructions)
    bus = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
    p = cfg.get("backpressure", 0.0)
    for ch in (bus.write_if.aw_channel, bus.write_if.w_channel, bus.write_if.b_channel,
               bus.read_if.ar_channel, bus.read_if.r_channel):
        ch.set_pause_generator(pause_generator(rand, p))
    await setup(dut)
    dram = Dram(dut, "m_axi_", dut.clk, dut.rst, size=kernel.dram_bytes,
                latency=cfg.get("latency", 20), bytes_per_cycle=cfg.get("bytes_per_cycle", 8),
                rand=rand, backpressure=p)
    image, arrays = fill_dram(dram, kernel, problem, nrng)

    ctrl = rmap["CTRL"].offset
    if cfg.get("register_writes"):      # a stream from another driver (the C driver's log)
        stream = replayed_writes(cfg["register_writes"])
        cut = next(i for i, (offset, _) in enumerate(stream) if offset == ctrl) + 1
        writes, start, after = stream[:cut - 1], stream[cut - 1][1], stream[cut:]
    else:
        writes = rmap.config_words(kernel.config) + rmap.lut_words_for(kernel.program.luts)
        start, after = 0b101, []
    for offset, word in writes:
        resp = await bus.write(offset, word.to_bytes(4, "little"))
        assert resp.resp == 0, f"register {offset:#x} refused"
    count = dut.dispatcher.count
    expected = expected_cycles(kernel, cfg, taus)
    progress = cocotb.start_soon(report_progress(len(kernel.tiles), lambda: int(count.value),
                                                 expected=expected, in_flight=2 * taus,
                                                 path=cfg.get("progress_file")))
    started, cpu_started = time.monotonic(), time.process_time()
    await bus.write(ctrl, start.to_bytes(4, "little"))
    await with_timeout(RisingEdge(dut.irq), cycle_limit(cfg, expected) * 10, "ns")
    seconds, cpu_seconds = time.monotonic() - started, time.process_time() - cpu_started
    progress.cancel()

    async def read(name):
        return int.from_bytes((await bus.read(rmap[name].offset, 4)).data, "little")

    status = await read("STATUS")
    assert status & 2, "no interrupt"
    assert status >> 4 & 15 == Error.NONE, f"STATUS {status:#x}"
    tiles = await read("TILES")
    assert tiles == len(kernel.tiles), f"TILES {tiles}, expected {len(kernel.tiles)}"
    assert not dram.outside, f"DRAM accesses outside the memory: {dram.outside[:4]}"
    check_outputs(dram, kernel, problem, image, isa_run(problem, *arrays, shift=shift))
    record_run(dram, kernel, cfg, alus=lanes * taus, seconds=seconds,
               cpu_seconds=cpu_seconds)
    record_metric("cycles_register", await read("CYCLES"))
    for offset, word in after:          # the driver's writes after done (clearing STATUS.done)
        await bus.write(offset, word.to_bytes(4, "little"))
    if after:
        await RisingEdge(dut.clk)
        assert not await read("STATUS") & 2 and not int(dut.irq.value), "done not cleared"


def replayed_writes(path):
    """``[(offset, value)]`` of the ``W OFFSET VALUE`` lines (hexadecimal) of a driver's log."""
    writes = []
    for line in open(path).read().splitlines():
        if line.startswith("W "):
            _, offset, value = line.split()
            writes.append((int(offset, 16), int(value, 16)))
    return writes
