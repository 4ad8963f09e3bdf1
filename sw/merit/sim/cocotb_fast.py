"""cocotb bench of the fast path (:mod:`merit.sim.fast`): one MERIT problem on a TAU or on the
processor with the DRAM inside the Verilator model.

The same checks as the Python-DRAM benches (:mod:`merit.sim.cocotb_tau`,
:mod:`merit.sim.cocotb_top`): the problem is compiled, the DRAM filled with random bytes and the
inputs (one image file, loaded in one clock edge), and after the run every output must equal the
golden ISA model bit for bit and every other DRAM byte must be unchanged (the image dumped in one
clock edge). A TAU gets its tiles from the wrapper's feeder (the tile list as one file); the
processor is driven like software through its AXI4-Lite port (configuration and LUT words,
``CTRL.start``; or the writes of another driver's log, ``register_writes``, as in
:mod:`merit.sim.cocotb_top`), then the bench only waits for ``done`` / ``irq`` under a watchdog:
no Python runs per clock cycle, except a progress line every ~2 s of wall time.
"""

import time

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout

from merit.isa.programs import run as isa_run
from merit.sim.benchlib import bench_config, record_metric, rng
from merit.sim.dram import check_outputs, fill_dram
from merit.sim.fast import FastDram
from merit.sim.run import bench_kernel, cycle_limit, expected_cycles, record_run, report_progress

#: Cycles between two looks at the wall clock for the progress line.
CHECK_CYCLES = 20_000


async def _axil_write(dut, address, word):
    """One AXI4-Lite write, awaiting clock edges only while it lasts; returns BRESP."""
    dut.s_axil__awaddr.value = address
    dut.s_axil__awvalid.value = 1
    dut.s_axil__wdata.value = word
    dut.s_axil__wstrb.value = 0xF
    dut.s_axil__wvalid.value = 1
    dut.s_axil__bready.value = 1
    aw = w = True
    while True:
        await RisingEdge(dut.clk)
        if aw and int(dut.s_axil__awready.value):
            aw = False
            dut.s_axil__awvalid.value = 0
        if w and int(dut.s_axil__wready.value):
            w = False
            dut.s_axil__wvalid.value = 0
        if int(dut.s_axil__bvalid.value):
            dut.s_axil__bready.value = 0
            return int(dut.s_axil__bresp.value)


async def _axil_read(dut, address):
    """One AXI4-Lite read; returns the data word."""
    dut.s_axil__araddr.value = address
    dut.s_axil__arvalid.value = 1
    dut.s_axil__rready.value = 1
    ar = True
    while True:
        await RisingEdge(dut.clk)
        if ar and int(dut.s_axil__arready.value):
            ar = False
            dut.s_axil__arvalid.value = 0
        if int(dut.s_axil__rvalid.value):
            dut.s_axil__rready.value = 0
            return int(dut.s_axil__rdata.value)


def _idle_control_port(dut):
    for name in ("awvalid", "wvalid", "bready", "arvalid", "rready", "awaddr", "awprot",
                 "wdata", "wstrb", "araddr", "arprot"):
        getattr(dut, f"s_axil__{name}").value = 0


@cocotb.test()
async def fast_run_matches_the_isa_model(dut):
    cfg = bench_config()
    rand = rng()
    nrng = np.random.default_rng(rand.randrange(1 << 30))
    lanes, taus = cfg["lanes"], cfg.get("taus")
    shift = cfg.get("shift", 0)
    instructions = cfg.get("instructions", 16)
    problem, kernel = bench_kernel(cfg)
    dram = FastDram(dut, bytes_per_cycle=cfg.get("bytes_per_cycle", 8),
                    latency=cfg.get("latency", 20))
    image, arrays = fill_dram(dram, kernel, problem, nrng)
    if cfg.get("dram_bytes") is not None:       # a memory smaller than the kernel's (SLVERR)
        dram.write(0, image[:cfg["dram_bytes"]].tobytes())
    expected = expected_cycles(kernel, cfg, taus or 1)
    limit = cycle_limit(cfg, expected)

    from cocotb.clock import Clock
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    if taus is None:
        from meritz import kernelcfg
        layout = kernelcfg.layout(instructions=instructions)
        dut.config.value = kernelcfg.pack(kernel.config, layout)
        luts = list(kernel.program.luts) + [[0] * 33] * (2 - len(kernel.program.luts))
        dut.luts.value = kernelcfg.lut_layout().const([list(t) for t in luts]).as_bits()
        origins = np.zeros((len(kernel.tiles), 6), dtype="<u2")
        for i, tile in enumerate(kernel.tiles):
            origins[i, :len(tile)] = tile
        open("tiles.bin", "wb").write(origins.tobytes())
        dut.tiles_start.value = 0
    else:
        _idle_control_port(dut)
    await dram.load()
    await ClockCycles(dut.clk, 1)
    dut.rst.value = 0
    await RisingEdge(dut.clk)

    if taus is None:
        finished, total = dut.done, len(kernel.tiles)
        dut.tiles_start.value = 1
        await RisingEdge(dut.clk)
        dut.tiles_start.value = 0
    else:
        from merit.regmap import Error, register_map
        rmap = register_map(instructions=instructions)
        ctrl = rmap["CTRL"].offset
        if cfg.get("register_writes"):      # a stream from another driver (the C driver's log)
            from merit.sim.cocotb_top import replayed_writes
            stream = replayed_writes(cfg["register_writes"])
            cut = next(i for i, (offset, _) in enumerate(stream) if offset == ctrl) + 1
            writes, start, after = stream[:cut - 1], stream[cut - 1][1], stream[cut:]
        else:
            writes = rmap.config_words(kernel.config) + rmap.lut_words_for(kernel.program.luts)
            start, after = 0b101, []
        for offset, word in writes:
            assert await _axil_write(dut, offset, word) == 0, f"register {offset:#x} refused"
        finished, total = dut.irq, len(kernel.tiles)
    taken = dut.tiles_taken
    progress = cocotb.start_soon(report_progress(total, lambda: int(taken.value),
                                                 expected=expected,
                                                 in_flight=2 * (taus or 1),
                                                 path=cfg.get("progress_file"),
                                                 check_cycles=CHECK_CYCLES))
    started, cpu_started = time.monotonic(), time.process_time()
    if taus is not None:
        await _axil_write(dut, ctrl, start)
    if not int(finished.value):
        try:
            await with_timeout(RisingEdge(finished), limit * 10, "ns")
        except cocotb.triggers.SimTimeoutError:
            raise AssertionError(f"no {'irq' if taus else 'done'} in {limit} cycles; "
                                 f"{dram.describe()}") from None
    seconds, cpu_seconds = time.monotonic() - started, time.process_time() - cpu_started
    progress.cancel()

    assert not dram.outside, f"DRAM accesses outside the memory: {dram.outside[:4]}"
    if taus is None:
        errors = int(dut.errors.value)
        assert errors == 0, f"TAU error flags {errors:#x}"
    else:
        status = await _axil_read(dut, rmap["STATUS"].offset)
        assert status & 2, "no interrupt"
        assert status >> 4 & 15 == Error.NONE, f"STATUS {status:#x}"
        tiles = await _axil_read(dut, rmap["TILES"].offset)
        assert tiles == len(kernel.tiles), f"TILES {tiles}, expected {len(kernel.tiles)}"
    await dram.dump()
    check_outputs(dram, kernel, problem, image, isa_run(problem, *arrays, shift=shift))
    record_run(dram, kernel, cfg, alus=lanes * (taus or 1), seconds=seconds,
               cpu_seconds=cpu_seconds)
    if taus is not None:
        record_metric("cycles_register", await _axil_read(dut, rmap["CYCLES"].offset))
        for offset, word in after:      # the driver's writes after done (clearing STATUS.done)
            await _axil_write(dut, offset, word)
        if after:
            await RisingEdge(dut.clk)
            status = await _axil_read(dut, rmap["STATUS"].offset)
            assert not status & 2 and not int(dut.irq.value), "done not cleared"
